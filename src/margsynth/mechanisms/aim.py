"""AIM — the adaptive, workload-aware mechanism (McKenna, Mullins, Sheldon & Miklau,
"AIM: An Adaptive and Iterative Mechanism for Differentially Private Synthetic Data",
PVLDB 15(11), 2022, arXiv:2201.12677; see docs/notes/aim.md), on our Private-PGM engine
and ledger.

Workload ``W`` (default: every 3-way marginal, weight 1). Candidates are the downward
closure of ``W``; candidate ``r`` has weight ``w_r = Σ_{s∈W} |r ∩ s|`` (AIM §4,
"workload-aware candidate scoring").

1. **Calibrate**: ρ = largest zCDP budget that is (ε, δ)-DP (CKS conversion, as the
   authors' ``cdp_rho``); ``T = rounds`` (default ``16 d``); initial noise
   ``σ = sqrt(T / (2 · 0.9 · ρ))`` and selection budget ``ε = sqrt(8 · 0.1 · ρ / T)``
   (AIM Alg. 2 lines 1–3, ``alpha = 0.9``).
2. **MEASURE** every one-way marginal with Gaussian noise σ (Prop. 1, ``1/(2σ²)`` each);
   fit Private-PGM (Eq. 4.2).
3. **Repeat** until the budget is spent (AIM Alg. 2 lines 5–19):

   - if what remains is less than two rounds' worth, spend all of it in this last
     round (``σ = sqrt(1/(2·0.9·rem))``, ``ε = sqrt(8·0.1·rem)``);
   - **SELECT** with the exponential mechanism (Definition 4, Prop. 2, ``ε²/8``) among
     candidates whose addition keeps the junction tree under
     ``max_model_size · (ρ spent / ρ)`` MB (or that already fit in the model), quality
     ``q_r = w_r (||M_r(D) − M_r(p̂)||_1 − sqrt(2/π) σ n_r)`` with sensitivity ``max w_r``;
   - **MEASURE** it with σ (Prop. 1);
   - re-fit Private-PGM, warm-started from the last model;
   - **anneal**: if the model's answer on the new marginal moved by less than the
     expected noise ``sqrt(2/π) σ n_r`` in L1, halve σ and double ε.
4. **GENERATE**: a final fit (its ``generator``, 500 iterations by default) and Algorithms 7–8 of the NIST-MST paper.

Every selection and measurement is charged to the ledger before its noise is drawn.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..inference.pgm import (
    GraphicalModel,
    estimate,
    from_noisy_marginals,
    junction_tree_size,
    kernels,
    single_threaded_blas,
    splice_clique,
)
from ..inference.pgm.factor import align
from ..inference.pgm.junction_tree import BYTES_PER_CELL
from ..privacy import BudgetLedger, NoisyMarginal, NoisyMarginals, exponential_mechanism, gaussian_mechanism
from ..privacy.accounting import exponential_epsilon, gaussian_sigma
from ..rules import RuleSet
from ..timing import Stopwatch, timed
from .base import (
    Mechanism,
    SynthesisResult,
    check_conversion,
    check_generator,
    check_marginals_fit,
    check_positive_int,
    check_records,
    preset_of,
)
from .generators import Generator, PGMGenerator
from .sampler import pgm_sampler

__all__ = ["AIM", "PRESETS", "all_kway", "workload_candidates"]

ALPHA = 0.9  # share of each round's budget spent on measurement (AIM paper, Alg. 2)


def all_kway(domain: Domain, k: int = 3) -> list[tuple[str, ...]]:
    """Every ``k``-way attribute set of ``domain`` (the default workload is ``k = 3``)."""
    if not 1 <= k <= len(domain):
        raise ValueError(f"k must be in 1..{len(domain)}, got {k}")
    return list(itertools.combinations(domain.names, k))


def _downward_closure(cliques: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    out: dict[tuple[str, ...], None] = {}
    for c in cliques:
        for r in range(1, len(c) + 1):
            for s in itertools.combinations(c, r):
                out[s] = None
    return sorted(out, key=len)


def workload_candidates(
    domain: Domain, workload: Sequence[tuple[tuple[str, ...], float]]
) -> dict[tuple[str, ...], float]:
    """AIM's candidate set: the downward closure of the workload, candidate ``r`` weighted
    ``Σ_{(s, c_s) ∈ W} c_s |r ∩ s|`` (the authors' ``compile_workload`` with weights)."""
    canon = [(domain.canonical(s), float(c)) for s, c in workload]
    cands = _downward_closure([s for s, _ in canon])
    # sum_s c_s |r ∩ s| = sum_{a in r} W_a with W_a = sum_{s ∋ a} c_s (exact sums, so integer
    # weights give the same numbers as the sum over the workload)
    per: dict[str, list[float]] = {}
    for s, c in canon:
        for a in s:
            per.setdefault(a, []).append(c)
    w = {a: math.fsum(cs) for a, cs in per.items()}
    return {r: math.fsum(w[a] for a in r) for r in cands}


def _final_pgm() -> Generator:
    """AIM's GENERATE: a final Private-PGM fit of 500 accelerated iterations (class docstring)."""
    return PGMGenerator(iters=500)


@dataclass(frozen=True)
class AIM(Mechanism):
    """AIM with the published defaults (:data:`PRESETS`: ``AIM.preset("fast")``, CLI
    ``--preset fast``, bounds the cost at high ε with a smaller model-size cap and fewer
    iterations).

    Parameters
    ----------
    workload:
        Attribute sets (default ``None``: all 3-way marginals), optionally with weights
        as ``((clique, weight), ...)``.
    rounds:
        ``T`` (default ``16 · d``).
    max_model_size:
        Junction-tree size cap in MB (default 80).
    iters, generator.iters:
        Private-PGM iterations per round (250) and of the final fit (500, the default
        generator's; CLI ``-p generator.iters=N``), of the
        accelerated descent (:func:`~margsynth.inference.pgm.estimate`). The authors' code
        runs 1,000 and 2,500 iterations of *plain* mirror descent (Private-PGM's default
        engine); from the same warm start our descent reaches the loss of those 1,000 in
        99–203 iterations and of those 2,500 in 179–242 (adult, ε = 1, seeds 0–2, all 88
        rounds; ``benchmarks/bench_aim.py --convergence``), so these defaults fit at least
        as closely as the published ones (``tests/test_aim.py`` checks it round by round
        on a small problem; docs/notes/aim.md).
    conversion:
        zCDP → (ε, δ) conversion for ρ (``"cks"``, as the authors; or ``"prop4"``).
    generator:
        The GENERATE step (:mod:`.generators`); default ``PGMGenerator(iters=500)``,
        warm-started from the last round's model, as AIM. A certified final fit:
        ``create("aim", method="interior_point")`` (CLI: ``-p method=interior_point``) fits
        the final model to its optimum (:func:`~margsynth.inference.pgm.estimate`), gap/loss
        3-7e-4 instead of ~0.8 on adult, the same tv-3way, at 6-45 s more
        (docs/notes/aim.md).
    alpha:
        The budget split of every round: share ``alpha`` of it measures (Gaussian), the
        rest ``1 - alpha`` selects (exponential mechanism); 0.9 in AIM Alg. 2.
    incremental:
        ``True`` (default): the fast path. The candidate filter sizes the model with one
        clique added by re-triangulating only the part of the current junction tree the
        clique touches (:func:`~margsynth.inference.pgm.splice_clique`, its results
        kept across rounds) and the next model uses that structure when it is the
        smaller one; the current model's marginals are computed once per round (a
        candidate's marginal is summed from a cached superset's where possible, and one
        spanning independent components of the model is scored against the product of
        its parts without forming it). The fits take the same iterates as on the
        reference path. ``False``: the reference
        path (a full re-triangulation per candidate, variable elimination per
        candidate), kept for the side-by-side benchmark (``benchmarks/bench_aim.py``,
        which runs it with the previous defaults, 1,000 and 2,500 iterations).
    round_gap_tol, round_rtol:
        Optional stopping rules of the per-round fits on the fast path: the certified
        relative gap, or the relative loss decrease over 10 iterations
        (see :func:`~margsynth.inference.pgm.estimate`); ``None`` (default): all
        ``iters``, as AIM. Both change the fits, hence the annealing decisions and the
        selections (docs/notes/aim.md).
        The final fit's stopping rules are its generator's (``-p rtol=...``,
        ``-p gap_tol=...``).
    """

    workload: tuple | None = None
    rounds: int | None = None
    max_model_size: float = 80.0
    iters: int = 250
    conversion: str = "cks"
    synthetic_records: int | None = None
    verbose: bool = False
    alpha: float = ALPHA
    generator: Generator = field(default_factory=_final_pgm)
    incremental: bool = True
    round_gap_tol: float | None = None
    round_rtol: float | None = None

    name = "aim"

    def __post_init__(self) -> None:
        if self.workload is not None:
            object.__setattr__(self, "workload", tuple(self.workload))
        if self.rounds is not None and (
            isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1
        ):
            raise ValueError(f"rounds must be a positive integer, got {self.rounds!r}")
        if not (math.isfinite(self.max_model_size) and self.max_model_size > 0):
            raise ValueError(f"max_model_size must be > 0 (MB), got {self.max_model_size!r}")
        check_positive_int("iters", self.iters)
        check_conversion(self.conversion)
        check_records(self.synthetic_records)
        check_generator(self.generator, allow_none=False)
        a = self.alpha
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 < a < 1:
            raise ValueError(f"alpha (measurement share of each round) must be in (0, 1), got {a!r}")
        if not isinstance(self.incremental, bool):
            raise ValueError(f"incremental must be True or False, got {self.incremental!r}")
        for f in ("round_gap_tol", "round_rtol"):
            g = getattr(self, f)
            if g is not None and (
                isinstance(g, bool) or not isinstance(g, (int, float)) or not math.isfinite(g) or g < 0
            ):
                raise ValueError(f"{f} must be a finite number >= 0 or None, got {g!r}")

    @classmethod
    def preset(cls, preset: str = "default", **overrides: Any) -> AIM:
        """``"default"`` (the published settings) or ``"fast"`` (a bounded cost at high ε),
        see :data:`PRESETS`, with ``overrides`` replacing fields (the registry's ``aim``
        factory; ``margsynth synth aim --preset NAME``)."""
        return preset_of(cls, PRESETS, preset, overrides)

    def parameters(self) -> dict:
        return {
            "workload": None
            if self.workload is None
            else [list(c) if not _weighted(c) else [list(c[0]), c[1]] for c in self.workload],
            "rounds": self.rounds,
            "max_model_size": self.max_model_size,
            "iters": self.iters,
            "conversion": self.conversion,
            "synthetic_records": self.synthetic_records,
            "alpha": self.alpha,
            "generator": {"name": self.generator.name, **asdict(self.generator)},
            "incremental": self.incremental,
            "round_gap_tol": self.round_gap_tol,
            "round_rtol": self.round_rtol,
        }

    def compiled_workload(self, domain: Domain) -> list[tuple[tuple[str, ...], float]]:
        """The workload as validated ``(clique, weight)`` pairs (``ValueError`` on unknown attributes)."""
        if self.workload is None:
            return [(c, 1.0) for c in all_kway(domain, min(3, len(domain)))]
        out = []
        for i, item in enumerate(self.workload):
            clique, w = (item[0], item[1]) if _weighted(item) else (item, 1.0)
            if isinstance(clique, str):
                clique = (clique,)
            clique = tuple(clique)
            if not clique:
                raise ValueError(f"workload[{i}] is empty")
            domain.check_attrs(clique, f"workload[{i}]")
            if not (math.isfinite(float(w)) and float(w) >= 0):
                raise ValueError(f"workload[{i}] weight must be finite and >= 0, got {w!r}")
            out.append((clique, float(w)))
        if not out:
            raise ValueError("workload is empty")
        return out

    def check(self, data: Dataset, budget: BudgetLedger, **_: object) -> None:
        """AIM's own checks (workload, rounds, sizes), before any noise."""
        check_marginals_fit(data.domain, [c for c, _ in self.compiled_workload(data.domain)], "workload marginal")
        check_records(self.synthetic_records, columns=len(data.domain))
        T = self.rounds or 16 * len(data.domain)
        if T < len(data.domain):
            # the d one-way measurements alone cost d * 0.9 rho / T: T < d leaves nothing for the rounds
            raise ValueError(f"rounds must be >= the number of attributes ({len(data.domain)}), got {T}")

    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """AIM (Alg. 2 of the AIM paper; module docstring) spending ``budget``. ``rules`` (no
        budget) act at GENERATE, in the final fit: Private-PGM's structural zeros, the rest
        enforced on the records (:class:`~.generators.PGMGenerator`); the rounds' models,
        which only score candidates, do not use them."""
        dom = data.domain
        workload = self.compiled_workload(dom)
        if self.incremental:
            kernels.load()  # dozens of fits and thousands of triangulations: all compiled
        clock = Stopwatch()
        times: dict[str, float] = {"select": 0.0, "estimate": 0.0}
        ledger = budget
        rho = ledger.total
        T = self.rounds or 16 * len(dom)
        candidates = workload_candidates(dom, workload)
        # the data's answers: on the fast path only their non-zero cells (adult: 0.6 million
        # of the candidates' 21 million cells, see _Counts); on the reference path every
        # table, integer counts kept as int32 when they fit (exact; half the bytes)
        small_counts = data.weights is None and len(data) < 2**31
        cells = {c: math.prod(dom[a].size for a in c) for c in candidates}
        answers: dict = {}
        for c in candidates:
            table = data.marginal(c, flatten=True)
            answers[c] = _Counts(table, tuple(dom[a].size for a in c)) if self.incremental else (
                table.astype(np.int32 if small_counts else np.float64))  # fmt: skip
        sigma = gaussian_sigma(self.alpha * rho / T)
        eps = exponential_epsilon((1 - self.alpha) * rho / T)

        # MEASURE the one-way marginals
        noisy: list[NoisyMarginal] = []
        measured: list[tuple[str, ...]] = []
        for a in dom.names:
            x = data.marginal((a,), flatten=True).astype(np.float64)
            y = gaussian_mechanism(x, sigma=sigma, l2_sensitivity=1.0, rng=rng, ledger=ledger, label=f"measure ({a},)")
            noisy.append(NoisyMarginal((a,), y, sigma))
            measured.append((a,))
        with timed(times, "estimate"):
            model = estimate(dom, from_noisy_marginals(noisy), iters=self.iters)

        trace = []
        structure: list[tuple[str, ...]] = []  # extra cliques of the model (incremental path)
        splice_cache: dict = {}  # re-triangulations of the candidate filter, kept across rounds
        t = 0
        terminate = False
        while not terminate:
            t += 1
            if ledger.remaining < 2 * (0.5 / sigma**2 + eps**2 / 8):
                rem = ledger.remaining
                sigma = gaussian_sigma(self.alpha * rem)
                eps = exponential_epsilon((1 - self.alpha) * rem)
                terminate = True
            spent_after = ledger.spent + eps**2 / 8 + 0.5 / sigma**2
            size_limit = self.max_model_size * spent_after / rho

            # SELECT
            with timed(times, "select"):
                if self.incremental:
                    small, spliced = self._filter_incremental(dom, candidates, model, size_limit, splice_cache)
                    project = _RoundMarginals(model)
                else:
                    small, spliced = self._filter(dom, candidates, measured, model, size_limit), {}
                    project = model.project
                keys = list(small)
                wts = np.array([small[c] for c in keys])
                sens = float(np.max(np.abs(wts))) if wts.size else 1.0
                if sens <= 0:
                    sens = 1.0
                bias = math.sqrt(2 / math.pi) * sigma
                if self.incremental:
                    with single_threaded_blas():  # small contractions: BLAS threads would only spin
                        err = project.l1_errors(keys, answers)
                else:
                    err = np.array([np.abs(answers[c] - project(c).ravel()).sum() for c in keys])
                q = wts * (err - bias * np.array([cells[c] for c in keys], dtype=np.float64))
                idx = exponential_mechanism(
                    q, epsilon=eps, sensitivity=sens, rng=rng, ledger=ledger, label=f"select round {t}"
                )
                cl = keys[idx]

            # MEASURE
            n_cl = cells[cl]
            exact = answers[cl].dense() if self.incremental else answers[cl].astype(np.float64)
            y = gaussian_mechanism(
                exact,
                sigma=sigma,
                l2_sensitivity=1.0,
                rng=rng,
                ledger=ledger,
                label=f"measure {cl}",
            )
            noisy.append(NoisyMarginal(cl, y, sigma))
            measured.append(cl)
            z = project(cl).ravel()
            with timed(times, "estimate"):
                measurements = from_noisy_marginals(noisy)
                if self.incremental:
                    structure = self._structure(dom, measured, structure, spliced.get(cl))
                    model = estimate(
                        dom, measurements, iters=self.iters, warm_start=model, extra_cliques=structure,
                        gap_tol=self.round_gap_tol, rtol=self.round_rtol,
                    )  # fmt: skip
                else:
                    model = estimate(dom, measurements, iters=self.iters, warm_start=model)
            w = model.project(cl).ravel()
            annealed = bool(np.abs(w - z).sum() <= math.sqrt(2 / math.pi) * sigma * n_cl)
            trace.append(
                {
                    "round": t,
                    "clique": list(cl),
                    "cells": n_cl,
                    "sigma": sigma,
                    "epsilon": eps,
                    "budget_used": ledger.spent / rho,
                    "model_mb": model.size_mb,
                    "annealed": annealed,
                    "iterations": int(model.stats["iterations"]),
                    "gap": float(model.stats["gap"]),
                    "seconds": clock.elapsed(),
                }
            )
            if self.verbose:
                print(
                    f"AIM round {t}: {cl} cells={n_cl} sigma={sigma:.3g} used={ledger.spent / rho:.3f} "
                    f"model={model.size_mb:.2f}MB {'anneal' if annealed else ''} t={clock.elapsed():.1f}s",
                    flush=True,
                )
            if annealed and not terminate:
                sigma /= 2
                eps *= 2

        # GENERATE (by default a final Private-PGM fit, warm-started, on the incremental path
        # over the last round's structure, and Algorithms 7-8)
        with timed(times, "generate"):
            marginals = NoisyMarginals(noisy)
            out = self.generator.generate(
                dom, marginals, rng, records=self.synthetic_records, warm_start=model, extra_cliques=structure,
                rules=rules,
            )  # fmt: skip
        model = out.extras.get("model")
        times["total"] = clock.elapsed()
        return SynthesisResult.from_ledger(
            out.synthetic,
            self.name,
            self.parameters(),
            ledger,
            times,
            {
                "rho": rho,
                "rounds": t,
                "trace": trace,
                "measured": measured,
                "model_mb": None if model is None else model.size_mb,
                "measurements": marginals,
                **{k: v for k, v in out.extras.items() if k != "model"},
            },
            sampler=pgm_sampler(out.extras, rules=rules),
        )

    def _filter(self, dom, candidates, measured, model, size_limit) -> dict[tuple[str, ...], float]:
        """Candidates whose addition keeps the junction tree ≤ ``size_limit`` MB, or that
        already lie inside a clique of the current model (AIM's ``filter_candidates``)."""
        out = {}
        cache: dict[frozenset, float] = {}
        base_edges = {frozenset(p) for c in measured for p in itertools.combinations(c, 2)}
        for c, w in candidates.items():
            if model.tree.find_clique(c) is not None:
                out[c] = w
                continue
            new = frozenset(frozenset(p) for p in itertools.combinations(c, 2)) - base_edges
            if new in cache:
                mb = cache[new]
            else:
                mb = junction_tree_size(dom, [*measured, c])[1]
                cache[new] = mb
            if mb <= size_limit:
                out[c] = w
        return out


    def _filter_incremental(
        self, dom, candidates, model: GraphicalModel, size_limit: float, cache: dict | None = None
    ) -> tuple[dict[tuple[str, ...], float], dict[tuple[str, ...], list[tuple[str, ...]]]]:
        """:meth:`_filter` with the size of the model with one clique added computed from
        the current junction tree (:func:`~margsynth.inference.pgm.splice_clique`).
        Returns the eligible candidates and, for those outside every clique, the spliced
        structure (the next model's, if selected)."""
        out, spliced = {}, {}
        tree = model.tree
        for c, w in candidates.items():
            if tree.find_clique(c) is not None:
                out[c] = w
                continue
            cliques, cells = splice_clique(tree, c, cache=cache)
            if cells * BYTES_PER_CELL / 2**20 <= size_limit:
                out[c] = w
                spliced[c] = cliques
        return out, spliced

    @staticmethod
    def _structure(dom, measured, structure, spliced) -> list[tuple[str, ...]]:
        """The next model's extra cliques: the spliced junction tree of the selected
        candidate when it is smaller than a fresh triangulation of all measured cliques
        (which :func:`~margsynth.inference.pgm.estimate` builds by itself), else none."""
        if spliced is None:
            return structure
        fresh = junction_tree_size(dom, measured)[0]
        cells = sum(math.prod(dom[a].size for a in c) for c in spliced)
        return list(spliced) if cells < fresh else []


#: AIM's presets. ``"default"``: the published settings (class docstring). ``"fast"``: a
#: cost that grows gently with ε: a model-size cap of 10 MB instead of 80 (AIM's own
#: ``max_model_size``, the cap that lets the models grow to millions of cells at high ε),
#: 50 iterations per round instead of 250 and a final fit of 100 instead of 500 (our
#: accelerated descent, warm-started). Measured in docs/notes/aim.md ("A preset for high
#: ε"): on the NIST ACS excerpt ma2018 (21 features) at ε = 10, about 1 minute instead of 20,
#: at the same k-marginal score.
PRESETS: dict[str, AIM] = {
    "default": AIM(),
    "fast": AIM(max_model_size=10.0, iters=50, generator=PGMGenerator(iters=100)),
}


class _Counts:
    """A candidate's table of the data by its non-zero cells: their flat indices (C order),
    the cells' code on each axis, and the values. :meth:`index` gives the cells' flat
    indices in the table over a subset of the axes; :meth:`dense` the whole table."""

    def __init__(self, table: np.ndarray, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.flat = np.flatnonzero(table)
        self.values = table[self.flat].astype(np.float64)
        self.codes = np.unravel_index(self.flat, shape) if shape else ()
        self._index: dict[tuple[int, ...], np.ndarray] = {}

    def index(self, axes: Sequence[int]) -> np.ndarray:
        """Flat indices of the non-zero cells in the table over ``axes`` (increasing); kept,
        as a candidate's parts change only when the model's components do."""
        if len(axes) == len(self.shape):
            return self.flat
        key = tuple(axes)
        idx = self._index.get(key)
        if idx is None:
            idx = self.codes[axes[0]]
            for a in axes[1:]:
                idx = idx * self.shape[a] + self.codes[a]
            self._index[key] = idx
        return idx

    def dense(self) -> np.ndarray:
        """The whole table (float64, flat)."""
        out = np.zeros(math.prod(self.shape))
        out[self.flat] = self.values
        return out


class _RoundMarginals:
    """The current model's marginals for one round of candidate scoring: every marginal is
    computed once; one outside every clique is summed from a cached superset's table
    when there is one (else variable elimination, :meth:`GraphicalModel.project`).
    Candidates are scored largest first, so the 3-way tables serve their subsets."""

    def __init__(self, model: GraphicalModel) -> None:
        self.model = model
        self.tree = model.tree
        self.cache: dict[tuple[str, ...], np.ndarray] = {}

    def components(self) -> dict[str, int]:
        """Each attribute's connected component of the junction forest (cliques joined by
        non-empty separators); attributes of different components are independent."""
        tree = self.tree
        root = list(range(len(tree.cliques)))

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        for i, p in enumerate(tree.parent):
            if p >= 0 and tree.separator(i):
                root[find(i)] = find(p)
        return {a: find(i) for i, c in enumerate(tree.cliques) for a in c}

    def l1_errors(self, keys: Sequence[tuple[str, ...]], answers: dict) -> np.ndarray:
        """``||y_c - N M_c(P)||_1`` for every candidate ``c`` of ``keys``, ``answers[c]`` the
        data's table ``y_c`` as :class:`_Counts` (AIM's quality before weights and bias).

        The model's table is never formed. Its marginal on ``c`` is the product of its
        marginals on the parts of ``c`` in different components of the junction forest
        (:meth:`components`), and since it is >= 0 the distance is read off the non-zero
        cells of ``y_c`` alone: ``||y - m||_1 = sum(m) + sum_{y != 0} (|y - m| - m)``, with
        ``sum(m)`` the product of the parts' sums. On adult that is 0.6 million cells per
        round instead of 21 million. Candidates go largest first, so that a part's table
        serves its subsets (:meth:`__call__`)."""
        comp = self.components()
        inv_n = 1.0 / self.model.total
        out = np.empty(len(keys))
        for i in sorted(range(len(keys)), key=lambda i: -len(keys[i])):
            c = keys[i]
            groups: dict[int, list[int]] = {}
            for j, a in enumerate(c):
                groups.setdefault(comp[a], []).append(j)
            y = answers[c]
            scale = inv_n ** (len(groups) - 1)
            m = np.full(y.values.size, scale)
            total = scale
            for ax in groups.values():
                f = self(tuple(c[j] for j in ax))
                total *= float(f.sum())
                m *= f.ravel()[y.index(ax)]
            out[i] = total + float((np.abs(y.values - m) - m).sum())
        return out

    def __call__(self, attrs: tuple[str, ...]) -> np.ndarray:
        hit = self.cache.get(attrs)
        if hit is not None:
            return hit
        if self.tree.find_clique(attrs) is None:
            dom = self.model.domain
            for extra in dom.names:
                if extra in attrs:
                    continue
                sup = dom.canonical((*attrs, extra))
                table = self.cache.get(sup)
                if table is not None:
                    out = align(table, sup, attrs, reduce=True)
                    self.cache[attrs] = out
                    return out
        out = self.model.project(attrs)
        self.cache[attrs] = out
        return out


def _weighted(item) -> bool:
    return (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and isinstance(item[1], (int, float))
        and not isinstance(item[1], bool)
        and isinstance(item[0], (tuple, list, str))
    )
