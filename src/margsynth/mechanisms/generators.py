"""The GENERATE step as a pluggable object: noisy marginals in, a synthetic dataset out.

Every mechanism's MEASURE step releases one :class:`~margsynth.privacy.NoisyMarginals`
(cliques, noisy answers, noise scales, optionally the query matrices); a *generator*
turns it into records. Generation is post-processing: it spends no budget, and only
its own randomness (from the ``rng`` passed in) differs between generators. Mechanisms
take a generator as a hyperparameter, e.g. ``MST(generator=GUMGenerator())``
(the registry's ``mst-gum``) or ``PrivSyn(generator=PGMGenerator(iters=1000))``
(``privsyn-pgm``); the generator's fields are its hyperparameters.

- :class:`PGMGenerator` — Private-PGM (McKenna, Sheldon & Miklau, "Graphical-model
  based estimation and inference for differential privacy", ICML 2019, arXiv:1901.09136;
  Eq. 4.1–4.2 of McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and
  general approach to differentially private synthetic data", JPC 2021,
  arXiv:2108.04978), records by that paper's Algorithms 7–8.
- :class:`GUMGenerator` — PrivSyn's consistency post-processing (§4.3) and GUM (§5.2)
  (Zhang, Wang, Li, Honorio, Backes, He, Chen, Zhang, "PrivSyn: Differentially Private
  Data Synthesis", USENIX Security 2021, arXiv:2012.15128).
- :class:`~margsynth.inference.privpgd.generator.PrivPGDGenerator` — particle gradient
  descent on sliced Wasserstein distances (Donhauser, Abad, Hulkund, Yang, ICML 2024,
  arXiv:2401.17823), in :mod:`margsynth.inference.privpgd` (it needs torch).

Rules (:mod:`margsynth.rules`): ``generate(..., rules=...)`` returns records that obey
every rule, as many as asked, and reports how in ``extras["rules"]``. Private-PGM makes the
rules it can hold structural zeros of its model (probability exactly 0,
:func:`~margsynth.inference.pgm.estimate`) and enforces the rest by redrawing the attribute
each broken rule determines from the model's conditional, then conditional repair
(:func:`pgm_enforce`); GUM projects its targets onto the
allowed cells and repairs (:meth:`~margsynth.inference.gum.GUM.synthesize`). Rules are
public: enforcing them costs no budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from ..domain import Domain
from ..inference.consistency import make_consistent
from ..inference.generated import Generated
from ..inference.gum import GUM
from ..inference.pgm import (
    METHODS,
    GraphicalModel,
    ModelTooLargeError,
    estimate,
    estimation_summary,
    from_noisy_marginals,
    junction_tree_size,
)
from ..inference.repair import enforce
from ..privacy import NoisyMarginals
from ..rules import RuleSet, as_rules
from .base import bounded_records, check_records

__all__ = ["GUMGenerator", "Generated", "Generator", "PGMGenerator", "consistent_targets", "pgm_enforce"]


class Generator(Protocol):
    """A frozen dataclass of generator hyperparameters with one method."""

    name: ClassVar[str]

    def generate(
        self,
        domain: Domain,
        marginals: NoisyMarginals,
        rng: np.random.Generator,
        *,
        records: int | None = None,
        rules: RuleSet | None = None,
        **hints: Any,
    ) -> Generated:
        """``records`` synthetic records over ``domain`` (``None``: as many as the noisy
        marginals suggest) from ``marginals``, every one obeying ``rules`` (reported in
        ``extras["rules"]``); ``hints`` are generator-specific (e.g. Private-PGM's
        ``warm_start``) and ignored by generators that have no use for them."""
        ...


@dataclass(frozen=True)
class PGMGenerator:
    """Private-PGM: fit a graphical model to the noisy marginals (Eq. 4.2, ``iters``
    mirror-descent steps), then Algorithms 7–8. A junction tree larger than
    ``memory_limit_mb`` MiB is refused (:class:`~margsynth.inference.pgm.ModelTooLargeError`,
    a ``ValueError``) before it is allocated; ``None``: no limit. ``gap_tol``: stop the fit
    as soon as its certified gap is at most ``gap_tol`` times its loss (a certified stop);
    ``rtol``: once its loss stalls (an uncertified one); see
    :func:`~margsynth.inference.pgm.estimate`. ``None``: all ``iters``. ``method``: the
    estimator's algorithm (``"accelerated"``, the default; ``"mirror_descent"``; or
    ``"interior_point"``: the optimal face found by an interior-point solver, then the
    descent on it until certified within ``gap_tol`` (default 1e-6) of the loss or as far as
    the arithmetic allows — the optimum, certified, but far slower on large models; ``iters``
    then caps the solver's iterations and ``rtol`` must be ``None``). ``rule_slack_cells``:
    the cells the rules' cliques may add beyond ``RULE_GROWTH`` times the model's
    (:func:`~margsynth.inference.pgm.estimate`; ``None``: its ``RULE_SLACK_CELLS``)."""

    iters: int = 1000
    memory_limit_mb: float | None = None
    rtol: float | None = None
    gap_tol: float | None = None
    method: str = "accelerated"
    rule_slack_cells: int | None = None

    name: ClassVar[str] = "pgm"

    def __post_init__(self) -> None:
        it = self.iters
        if isinstance(it, bool) or not isinstance(it, (int, np.integer)) or it < 0:
            raise ValueError(f"iters must be a non-negative integer, got {it!r}")
        mb = self.memory_limit_mb
        if mb is not None and (
            isinstance(mb, bool) or not isinstance(mb, (int, float)) or not mb > 0 or not math.isfinite(mb)
        ):
            raise ValueError(f"memory_limit_mb must be a finite number > 0 or None, got {mb!r}")
        for field in ("rtol", "gap_tol"):
            r = getattr(self, field)
            if r is not None and (
                isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r < 0
            ):
                raise ValueError(f"{field} must be a finite number >= 0 or None, got {r!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        sc = self.rule_slack_cells
        if sc is not None and (isinstance(sc, bool) or not isinstance(sc, (int, np.integer)) or sc < 0):
            raise ValueError(f"rule_slack_cells must be a non-negative integer or None, got {sc!r}")
        if self.method == "interior_point":
            if self.rtol is not None:
                raise ValueError(
                    f"rtol={self.rtol!r} is an uncertified stop of the descent; method='interior_point' stops at a "
                    "certified gap (gap_tol; set rtol=None)"
                )
            if self.iters < 1:
                raise ValueError(f"iters (the interior point's iteration cap) must be >= 1, got {self.iters!r}")

    def check_size(self, domain: Domain, cliques: Sequence[Sequence[str]]) -> float:
        """The junction tree's size in MiB; ``ModelTooLargeError`` over ``memory_limit_mb``
        (carrying ``size_mb``, ``cells`` and ``cliques`` for callers that tabulate it)."""
        cells, mb = junction_tree_size(domain, list(cliques))
        if self.memory_limit_mb is not None and mb > self.memory_limit_mb:
            err = ModelTooLargeError(
                f"Private-PGM: the {len(cliques)} measured marginals triangulate into a junction tree of "
                f"{mb:,.1f} MiB ({cells:,} cells) > memory_limit_mb={self.memory_limit_mb:,.1f}; the graph is too "
                "dense for Private-PGM (PrivSyn §5) -- use GUMGenerator() or raise the limit"
            )
            err.size_mb, err.cells, err.cliques = mb, cells, [tuple(c) for c in cliques]
            raise err
        return mb

    def fit(
        self,
        domain: Domain,
        marginals: NoisyMarginals,
        *,
        warm_start: GraphicalModel | None = None,
        sep: str = "/",
        extra_cliques: Sequence[Sequence[str]] = (),
        rules: RuleSet | None = None,
    ) -> GraphicalModel:
        """The Private-PGM model (Eq. 4.2) of ``marginals`` (each its own Eq. 4.1 term);
        ``extra_cliques``: unmeasured attribute sets the model's structure includes
        (e.g. AIM's last junction tree, so a warm start carries over exactly); ``rules``:
        structural zeros (:func:`~margsynth.inference.pgm.estimate`)."""
        kw: dict[str, Any] = {"iters": int(self.iters), "method": self.method}
        if rules is not None:
            kw["rules"] = rules
            if self.rule_slack_cells is not None:
                kw["rule_slack_cells"] = int(self.rule_slack_cells)
        if warm_start is not None:
            kw["warm_start"] = warm_start
        if extra_cliques:
            kw["extra_cliques"] = [tuple(c) for c in extra_cliques]
        if self.rtol is not None:
            kw["rtol"] = float(self.rtol)
        if self.gap_tol is not None:
            kw["gap_tol"] = float(self.gap_tol)
        if self.memory_limit_mb is not None:
            self.check_size(domain, marginals.cliques)
            kw["memory_limit_mb"] = self.memory_limit_mb
        return estimate(domain, from_noisy_marginals(marginals, sep), **kw)

    def generate(
        self,
        domain: Domain,
        marginals: NoisyMarginals,
        rng: np.random.Generator,
        *,
        records: int | None = None,
        warm_start: GraphicalModel | None = None,
        sep: str = "/",
        extra_cliques: Sequence[Sequence[str]] = (),
        rules: RuleSet | None = None,
        **_: Any,
    ) -> Generated:
        """Fit (:meth:`fit`), then ``records`` records (default: the model's total) by
        Algorithms 7–8. ``extras``: ``model``, ``model_stats``, ``estimation`` (the fit's
        optimality certificate, :func:`~margsynth.inference.pgm.estimation_summary`: loss,
        certified gap, iterations, method) and, under a memory limit, ``junction_tree_mb``.

        ``rules``: the fit makes structural zeros of those it can hold
        (``extras["rules"]["model"]``: ``in_model``, ``added_cliques``, ``left``); the records
        are then made to obey all of them by :func:`pgm_enforce` (the rest of
        ``extras["rules"]``: records redrawn, records repaired, per-attribute counts,
        per-rule violations, 0)."""
        n = check_records(records, columns=len(domain))
        rules = as_rules(rules, domain)
        model = self.fit(domain, marginals, warm_start=warm_start, sep=sep, extra_cliques=extra_cliques, rules=rules)
        note: dict[str, Any] = {}
        if n is None:  # the model's noisy total, within the bound decided before any noise
            n, note = bounded_records(model.total, len(domain))
        synth = model.synthetic_data(n, rng=rng)
        extras: dict[str, Any] = {"model": model, **note}
        if rules is not None:
            synth, extras["rules"] = pgm_enforce(model, synth, rules, rng)
        extras.update(self._about(model, domain, marginals))
        return Generated(synth, extras)

    def fitted(
        self,
        domain: Domain,
        marginals: NoisyMarginals,
        *,
        warm_start: GraphicalModel | None = None,
        sep: str = "/",
        extra_cliques: Sequence[Sequence[str]] = (),
        **_: Any,
    ) -> tuple[GraphicalModel, dict[str, Any]]:
        """:meth:`fit` and the extras :meth:`generate` reports about it (``model`` first),
        no record drawn: for a caller that draws them itself, in blocks
        (:mod:`margsynth.tabular.stream`). No rules (their enforcement is :meth:`generate`'s)."""
        model = self.fit(domain, marginals, warm_start=warm_start, sep=sep, extra_cliques=extra_cliques)
        return model, {"model": model, **self._about(model, domain, marginals)}

    def _about(self, model: GraphicalModel, domain: Domain, marginals: NoisyMarginals) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if self.memory_limit_mb is not None:
            extras["junction_tree_mb"] = junction_tree_size(domain, list(marginals.cliques))[1]
        extras["model_stats"] = {k: v for k, v in model.stats.items() if k != "loss_history"}
        extras["estimation"] = estimation_summary(model)
        return extras


def pgm_enforce(model: GraphicalModel, synth, rules: RuleSet | None, rng: np.random.Generator) -> tuple[Any, Any]:
    """Records drawn from ``model`` made to obey ``rules`` (both over the model's domain):
    the rules the fit made structural zeros (``model.stats["rules"]["in_model"]``) hold
    already; for the others, an offending record gets the attribute each broken rule
    determines drawn again from the model's full conditional given the record's other
    attributes, among the values every rule allows (one Gibbs step of the model
    conditioned on the rules: :func:`~margsynth.inference.repair.redraw` with
    :meth:`~margsynth.inference.pgm.GraphicalModel.log_conditional`), and any record that
    leaves unfixed gets the attributes of its broken rules redrawn, weighted by the model's
    one-way marginals (:func:`~margsynth.inference.repair.enforce`; no draw at all when no
    record breaks a rule). Not rejection: redrawing whole records conditions the model on
    the rule, which thins out the rare values the rule pairs (children and "no schooling")
    where the model keeps their attributes nearly independent (docs/notes/rules.md). Returns the records and the report (``model``: the fit's placement of the rules,
    when the model has it). :class:`~.sampler.PGMSampler` draws more records the same way."""
    if rules is None:
        return synth, None
    synth, report = enforce(
        synth, rules, rng, conditional=model.log_conditional,
        weights=lambda: {a: model.project((a,)) for a in rules.attributes},
    )  # fmt: skip
    placed = model.stats.get("rules")
    return synth, report if placed is None else {"model": dict(placed), **report}


def consistent_targets(
    domain: Domain,
    items: Sequence[tuple[Sequence[str], np.ndarray, float]],
    *,
    max_iterations: int = 100,
    nonnegativity: str = "project",
) -> tuple[list[tuple[tuple[str, ...], np.ndarray]], int]:
    """Noisy marginals ``(clique, counts, per-cell variance)`` (e.g.
    :meth:`~margsynth.privacy.NoisyMarginals.targets`) → consistent, non-negative
    marginals (PrivSyn §4.3, :func:`~margsynth.inference.consistency.make_consistent`,
    weights ``∝ 1/(v_i g_i)``). Repeated attribute sets are first merged by
    inverse-variance averaging (axes in domain order). Returns ``([(clique, table)], passes)``."""
    merged: dict[tuple[str, ...], list[float | np.ndarray]] = {}
    for clique, counts, var in items:
        c = tuple(clique)
        can = domain.canonical(c)
        tab = np.asarray(counts, dtype=np.float64).reshape(domain.project(c).shape)
        if can != c:
            tab = np.transpose(tab, [c.index(a) for a in can])
        if can in merged:
            t0, v0 = merged[can]
            w0, w1 = 1.0 / v0, 1.0 / float(var)
            merged[can] = [(w0 * t0 + w1 * tab) / (w0 + w1), 1.0 / (w0 + w1)]
        else:
            merged[can] = [tab, float(var)]
    cliques = list(merged)
    cons = make_consistent(
        cliques,
        [merged[c][0] for c in cliques],
        domain,
        variances=[merged[c][1] for c in cliques],
        max_iterations=max_iterations,
        nonnegativity=nonnegativity,
    )
    return list(zip(cons.cliques, cons.marginals)), cons.iterations


@dataclass(frozen=True)
class GUMGenerator(GUM):
    """PrivSyn's generator: the noisy marginals made consistent and non-negative (§4.3,
    :func:`consistent_targets`, at most ``consistency_iterations`` passes,
    ``nonnegativity`` as in :func:`~margsynth.inference.consistency.make_consistent`),
    then GUM (§5.2) with the inherited :class:`~margsynth.inference.gum.GUM`
    hyperparameters edits a random dataset until its marginals match them. Default
    number of records: the mean total of the consistent marginals."""

    consistency_iterations: int = 100
    nonnegativity: str = "project"

    name: ClassVar[str] = "gum"

    def __post_init__(self) -> None:
        super().__post_init__()
        it = self.consistency_iterations
        if isinstance(it, bool) or not isinstance(it, int) or it < 1:
            raise ValueError(f"consistency_iterations must be a positive integer, got {it!r}")
        if self.nonnegativity not in ("project", "cut"):
            raise ValueError(f"nonnegativity must be 'project' or 'cut', got {self.nonnegativity!r}")

    def generate(
        self,
        domain: Domain,
        marginals: NoisyMarginals,
        rng: np.random.Generator,
        *,
        records: int | None = None,
        consistent: tuple[list[tuple[tuple[str, ...], np.ndarray]], int] | None = None,
        rules: RuleSet | None = None,
        **_: Any,
    ) -> Generated:
        """§4.3 then §5.2. ``consistent``: ``(targets, passes)`` already made consistent by
        the mechanism (PrivSyn does it in its MEASURE post-processing), used as given.
        ``extras``: ``consistency_iterations``, ``n_estimate``, ``gum_trace``, ``gum_converged``;
        with ``rules``, ``rules`` (GUM's targets projected onto the allowed cells; lawful GUM
        by default — the start fixed, moves that would break a rule undone — else the
        records fixed at the end: :meth:`~margsynth.inference.gum.GUM.synthesize`)."""
        n = check_records(records, columns=len(domain))
        note: dict[str, Any] = {}
        if consistent is None:
            consistent = consistent_targets(
                domain, marginals.targets(), max_iterations=self.consistency_iterations,
                nonnegativity=self.nonnegativity,
            )  # fmt: skip
        targets, passes = consistent
        if n is None:  # the consistent total, within the bound decided before any noise
            n, note = bounded_records(float(np.mean([t.sum() for _, t in targets])), len(domain))
            n = max(n, 1)
        res = self.synthesize(domain, targets, int(n), rng, rules=rules)
        extras = {"consistency_iterations": passes, "n_estimate": int(n), "gum_trace": res.trace}
        if res.rules is not None:
            extras["rules"] = res.rules
        return Generated(res.synthetic, {**extras, "gum_converged": res.converged, **note})
