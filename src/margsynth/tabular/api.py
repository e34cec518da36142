"""One call from a raw table to a decoded synthetic table: :func:`synthesize`.

The budget is one (ε, δ) for everything, held in one zCDP
:class:`~margsynth.privacy.BudgetLedger` opened for the run:

1. If the schema discovers category sets, ``DELTA_SHARE`` of δ is set aside for their
   thresholds (``δ_c = DELTA_SHARE · δ · e^{-ε}``; see :mod:`~margsynth.tabular.discovery`,
   which explains the ``e^ε``) and the ledger is calibrated to ``(ε, δ_conv)``,
   ``δ_conv = (1 - DELTA_SHARE) δ``; otherwise to ``(ε, δ)``. Its conversion is the
   mechanism's (``mechanism.conversion``; the tighter Canonne–Kamath–Steinke conversion
   when the mechanism spends Gaussian DP).
2. Preprocessing spends what the budget rule of
   :func:`~margsynth.tabular.encoder.discovery_budget` gives each discovery step (only if
   something is left to discover; nothing otherwise), or exactly ``preprocessing_share``
   of the ledger's ρ when that is given.
3. The mechanism is handed what is left as a sub-budget of the run's ledger
   (:meth:`~margsynth.privacy.BudgetLedger.sub`), in the currency it declares — zCDP ρ, or
   for the adaptive grid GDP μ = sqrt(2ρ), since μ-GDP Gaussian measurements compose to
   μ²/2-zCDP (Prop. 1 of McKenna, Miklau & Sheldon, JPC 2021, arXiv:2108.04978). Each of
   its charges lands on the run's ledger as it is made (labelled ``"<mechanism>: ..."``),
   so the ledger lists every cost and refuses any that would overspend.
4. The run is ``(ε_spent, δ_conv + e^{ε_spent} δ_c)``-DP with ``ε_spent`` the ledger's
   conversion of the total ρ at ``δ_conv``: at most the requested (ε, δ).

:func:`prepare` makes every check — arguments, schema, every cell, the mechanism's
hyperparameters and its own ``validate`` against the smallest and the largest domain
discovery can give — and returns a :class:`PreparedRun` whose :meth:`~PreparedRun.run`
draws the noise; the command line checks with :func:`prepare` before it reserves its
output files.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..mechanisms import registry
from ..mechanisms.base import Mechanism, check_memory_limit, check_privacy_params, check_seed, memory_limit
from ..privacy import BudgetLedger
from ..timing import Stopwatch
from .constraints import (
    SchemaRule,
    check_satisfiable,
    compile_rules,
    parse_rules,
    refinement,
    repair_values,
    split_bins,
)
from .encoder import Encoder, check_sizes, check_table, discovery_budget, domain_extremes, fit_encoder
from .schema import Schema

__all__ = [
    "DEFAULT_PREPROCESSING_SHARE",
    "DELTA_SHARE",
    "PreparedRun",
    "TableError",
    "check_run_arguments",
    "encoder_of",
    "prepare",
    "sidecar",
    "synthesize",
]

#: ``preprocessing_share`` of a run: ``None``, the budget rule of
#: :func:`~margsynth.tabular.encoder.discovery_budget` (a share of ρ that adapts to the
#: table's size and columns).
DEFAULT_PREPROCESSING_SHARE = None
#: Share of δ set aside for the thresholds of category discovery (when the schema has any).
DELTA_SHARE = 0.1


class TableError(ValueError):
    """A cell, column or header of the raw table that does not fit the schema (raised by
    :func:`prepare` with :func:`~margsynth.tabular.encoder.check_table`'s message)."""


@dataclass(frozen=True)
class PreparedRun:
    """A raw-table run whose every check has passed (:func:`prepare`); :meth:`run` spends
    the budget. ``checked`` is :func:`~margsynth.tabular.encoder.check_table`'s reading
    of the table (cells parsed once)."""

    df: pd.DataFrame
    schema: Schema
    checked: Mapping[str, tuple[np.ndarray, Any]]
    mechanism_name: str
    mechanism: Mechanism
    epsilon: float
    delta: float
    preprocessing_share: float | None
    public: pd.DataFrame | None = None
    rules: tuple[SchemaRule, ...] = ()
    #: The memory limit (MiB) of every size check of the run (``None``: the one in force,
    #: :func:`~margsynth.mechanisms.base.current_memory_limit`).
    memory_limit_mb: float | None = None

    @property
    def discovers(self) -> bool:
        """Whether anything is left to discover (then preprocessing spends its share)."""
        return bool(self.schema.discovers)

    @property
    def category_steps(self) -> int:
        """The number of discovered category sets (each spends part of ``δ_c``)."""
        return sum(c.discovers[:1] == ("categories",) for c in self.schema.columns)

    def deltas(self) -> tuple[float, float]:
        """``(δ_conv, δ_c)``: the δ of the zCDP conversion and the one set aside for the
        category thresholds (module docstring, step 1)."""
        if not self.category_steps:
            return self.delta, 0.0
        # the relative 1e-12 absorbs the rounding of exp and of the sum in run()
        return (1.0 - DELTA_SHARE) * self.delta, DELTA_SHARE * self.delta * math.exp(-self.epsilon) * (1.0 - 1e-12)

    def ledger(self) -> BudgetLedger:
        """The run's ledger (step 1 of the module docstring). Nothing is charged."""
        mech = self.mechanism
        delta_conv, _ = self.deltas()
        conversion = mech.conversion if mech.currency == "zcdp" else "cks"
        return BudgetLedger.from_dp(self.epsilon, delta_conv, conversion=conversion)

    def smallest_budget(self) -> BudgetLedger:
        """The smallest sub-budget the mechanism can be handed: the run's ρ less the most
        discovery can spend (:func:`~margsynth.tabular.encoder.discovery_budget`). The
        mechanism's checks run against it before any charge (they are monotone in the
        budget). Nothing is charged."""
        ledger = self.ledger()
        most = discovery_budget(self.schema, ledger.total, self.preprocessing_share)["most"]
        return ledger.sub(ledger.total - most, self.mechanism_name, currency=self.mechanism.currency)

    @property
    def rows(self) -> int:
        """The table's number of rows."""
        return len(self.df)

    def placeholder(self, domain) -> Dataset:
        """An all-zero table of :attr:`rows` records over ``domain`` (what ``validate`` is
        shown before discovery)."""
        return Dataset._trusted(np.zeros((self.rows, len(domain)), dtype=np.int8), domain)

    def extremes(self):
        """The smallest and the largest domain discovery can give
        (:func:`~margsynth.tabular.encoder.domain_extremes`)."""
        return domain_extremes(self.schema, self.checked)

    def check_discovery(self) -> None:
        """The checks of :func:`prepare` that need the table read: a positive δ for the
        category thresholds, a budget left for the mechanism, and the mechanism's
        ``validate`` against the extreme domains. Nothing is charged."""
        steps = self.category_steps
        if steps and not self.deltas()[1] / steps >= sys.float_info.min:
            # a subnormal delta loses its precision: delta_conv + e^eps * delta_c could exceed delta
            raise ValueError(
                f"epsilon={self.epsilon!r} with delta={self.delta!r}: the delta of each category discovery, "
                f"{DELTA_SHARE}*delta*e^-epsilon/{steps} = {self.deltas()[1] / steps:.3g}, is below the smallest "
                f"normal float ({sys.float_info.min:.3g}); expected a larger delta or a smaller epsilon, or the "
                "categories listed in the schema"
            )
        ledger = self.ledger()
        most = discovery_budget(self.schema, ledger.total, self.preprocessing_share)["most"]
        if not most < ledger.total:
            raise ValueError(
                f"preprocessing_share={self.preprocessing_share!r}: discovery would leave the mechanism no budget; "
                "expected less"
            )
        _validate_extremes(self)

    def run(self, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Discovery, encoding, the mechanism on its sub-budget, decoding: the synthetic
        table and the report (see :func:`synthesize`)."""
        seed = check_seed(seed)
        with memory_limit(self.memory_limit_mb):
            return self._run(seed)

    def _run(self, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
        clock = Stopwatch()
        ledger = self.ledger()
        delta_conv, delta_cat = self.deltas()
        rng = np.random.default_rng(int(seed))
        encoder, prep = fit_encoder(
            self.df, self.schema, ledger=ledger, rng=rng, share=self.preprocessing_share,
            delta=delta_cat if self.category_steps else None, checked=self.checked,
        )  # fmt: skip
        t_pre = clock.elapsed()
        split: dict[str, list[float]] = {}
        run_kw: dict[str, Any] = {}
        if self.rules:  # the rules' thresholds as cuts: their conditions exact on every bin
            coarse = encoder
            encoder, split = split_bins(encoder, self.rules)
            if split and self.mechanism.takes_refinement:  # it fits on the bins before the cuts
                run_kw["refinement"] = refinement(coarse, encoder)
        data = encoder.encode(self.df)
        if self.public is not None:
            run_kw["public"] = encoder.encode(self.public)
        # the mechanism's budget: everything discovery left; the rules as cells of the encoded domain
        budget = ledger.sub(ledger.remaining, self.mechanism_name, currency=self.mechanism.currency)
        compiled = compile_rules(self.rules, encoder) if self.rules else None
        if compiled is not None:
            run_kw["rules"] = compiled
        result = self.mechanism.run(data, rng=rng, budget=budget, **run_kw)
        synthetic = encoder.decode(result.synthetic, rng)
        rule_report: dict[str, Any] = {}
        if self.rules:  # what the cells could not decide, decided within the bins
            synthetic, left = repair_values(synthetic, self.schema, self.rules, encoder, result.synthetic.codes, rng)
            rule_report = {"compiled": [] if compiled is None else list(compiled.names), "cuts_added": split,
                           "violations": left}
        synthetic = synthetic[[str(c) for c in self.df.columns if str(c) in self.schema.names]]  # the table's order
        report = self.report(result, prep, encoder, ledger, budget, seed, len(synthetic),
                             {"preprocessing": t_pre, **result.seconds, "total": clock.elapsed()})  # fmt: skip
        if self.rules:
            report["rules"] = rule_report
        return synthetic, report


    def report(self, result, prep: dict[str, Any], encoder: Encoder, ledger: BudgetLedger, budget: BudgetLedger,
               seed: int, records: int, seconds: dict[str, float]) -> dict[str, Any]:  # fmt: skip
        """The report of :meth:`run` (see :func:`synthesize`) from what the run made; refuses
        a spend over the requested (ε, δ) (by construction, never)."""
        delta_conv, delta_cat = self.deltas()
        eps_spent, _ = ledger.spent_dp()
        delta_spent = delta_conv + (math.exp(eps_spent) * delta_cat if delta_cat else 0.0)
        report: dict[str, Any] = {
            "mechanism": self.mechanism_name,
            "parameters": result.parameters,
            "epsilon": float(eps_spent),
            "delta": float(delta_spent),
            "requested": {"epsilon": self.epsilon, "delta": self.delta},
            "records": int(records),
            "seed": int(seed),
            "preprocessing": {**prep, "preprocessing_share": prep["rho"] / ledger.total if self.preprocessing_share is None
                              or not self.discovers else self.preprocessing_share},  # fmt: skip
            "mechanism_budget": {"currency": budget.currency, "total": budget.total, "spent": budget.spent},
            "budget": {
                "rho_total": ledger.total,
                "rho_spent": ledger.spent,
                "delta_conversion": delta_conv,
                "delta_categories": delta_cat,
                "composition": "epsilon from the total rho at delta_conversion; "
                "delta = delta_conversion + exp(epsilon) * delta_categories",
            },  # fmt: skip
            "ledger": ledger.to_dict(),
            "seconds": seconds,
            "encoder": encoder.to_dict(),
            "result": result,
        }
        if report["delta"] > self.delta or report["epsilon"] > self.epsilon:  # pragma: no cover - by construction
            raise RuntimeError(
                f"spent ({report['epsilon']!r}, {report['delta']!r}) exceeds ({self.epsilon!r}, {self.delta!r})"
            )
        return report


def _validate_extremes(run: PreparedRun) -> None:
    """``mech.validate`` on all-zero placeholder tables of the table's (and the public
    table's) size over the smallest and the largest domain private discovery can give
    (:func:`~margsynth.tabular.encoder.domain_extremes`), with the mechanism's sub-budget:
    no noise, no charge. Its size checks are monotone in each attribute's size, so passing
    both extremes means the run after discovery passes them too. A refusal names the
    extreme and the size ranges."""
    smallest, largest = run.extremes()
    extremes = [("largest", largest)] if smallest == largest else [("largest", largest), ("smallest", smallest)]
    budget = run.smallest_budget()
    for which, dom in extremes:
        kw: dict[str, Any] = {}
        if run.public is not None:
            kw["public"] = Dataset._trusted(np.zeros((len(run.public), len(dom)), dtype=np.int8), dom)
        try:
            run.mechanism.validate(run.placeholder(dom), budget=budget, **kw)
        except ValueError as exc:
            if len(extremes) == 1:
                raise
            sizes = ", ".join(
                f"{a}={smallest[a].size}" + (f"..{largest[a].size}" if largest[a].size != smallest[a].size else "")
                for a in largest.names
            )
            fix = (
                "list the categories, or set max_categories or fewer bins"
                if which == "largest"
                else "list the categories, give bounds with uniform bins, or make the column nullable"
            )
            raise type(exc)(  # a size refused stays a MemoryLimitError
                f"{exc} (checked before any noise against the {which} domain private discovery can give, "
                f"attribute sizes {sizes}; in the schema, {fix})"
            ) from None


def prepare(
    df: pd.DataFrame,
    schema: Schema | Mapping[str, Any] | str,
    mechanism: str = "mst",
    *,
    epsilon: float,
    delta: float,
    preprocessing_share: float = DEFAULT_PREPROCESSING_SHARE,
    public: pd.DataFrame | None = None,
    memory_limit_mb: float | None = None,
    **hyperparameters: Any,
) -> PreparedRun:
    """Every check of a raw-table run, before any charge or draw: the privacy parameters,
    ``preprocessing_share``, the schema, every cell of ``df`` (and ``public``), the
    mechanism's name and hyperparameters (it is built here, once), and the mechanism's own
    ``validate`` against the smallest and the largest domain discovery can produce
    (:func:`~margsynth.tabular.encoder.domain_extremes`), so a run they accept cannot be
    refused after discovery. Every size — the schema's bins and categories
    (:func:`~margsynth.tabular.encoder.check_sizes`, counted before anything is built), the
    attributes, the marginals, the records — is checked against ``memory_limit_mb`` MiB
    (``None``: :func:`~margsynth.mechanisms.base.current_memory_limit`), which the run keeps.
    ``ValueError`` naming the argument, the value and what was expected."""
    check_privacy_params(epsilon, delta)
    if memory_limit_mb is not None:
        memory_limit_mb = check_memory_limit(memory_limit_mb)
    with memory_limit(memory_limit_mb):
        return _prepare(df, schema, mechanism, epsilon, delta, preprocessing_share, public, memory_limit_mb,
                        hyperparameters)  # fmt: skip


def _prepare(df, schema, mechanism, epsilon, delta, preprocessing_share, public, memory_limit_mb, hyperparameters):
    """:func:`prepare` within its memory limit."""
    schema = check_run_arguments(schema, epsilon, delta, preprocessing_share)
    check_sizes(schema)  # counted before anything is built from the schema
    try:
        checked = check_table(df, schema)
    except ValueError as exc:
        raise TableError(str(exc)) from None
    spec = registry.spec(mechanism)
    if spec.needs_public and public is None:
        raise ValueError(f"public: mechanism {mechanism!r} needs a public table (public=DataFrame)")
    if public is not None:
        try:
            check_table(public, schema)
        except ValueError as exc:
            raise TableError(f"public: {exc}") from None
    mech = registry.create(mechanism, **hyperparameters)
    rules = parse_rules(schema.rules, schema)
    check_satisfiable(rules, schema)  # a rule set no row could obey is refused before any charge
    run = PreparedRun(df, schema, checked, mechanism, mech, float(epsilon), float(delta), preprocessing_share, public,
                      rules, memory_limit_mb)  # fmt: skip
    run.check_discovery()
    return run


def check_run_arguments(
    schema: Schema | Mapping[str, Any] | str, epsilon: float, delta: float, preprocessing_share: float | None
) -> Schema:
    """The first checks of a raw-table run (they need no table): the privacy parameters,
    ``preprocessing_share`` and the schema, returned as a :class:`Schema`."""
    check_privacy_params(epsilon, delta)
    if preprocessing_share is not None and (
        isinstance(preprocessing_share, bool)
        or not isinstance(preprocessing_share, (int, float))
        or not (0 < preprocessing_share < 1)
    ):
        raise ValueError(f"preprocessing_share must be in (0, 1) or None, got {preprocessing_share!r}")
    return Schema.coerce(schema)


def synthesize(
    df: pd.DataFrame,
    schema: Schema | Mapping[str, Any] | str,
    mechanism: str = "mst",
    *,
    epsilon: float,
    delta: float,
    seed: int,
    preprocessing_share: float = DEFAULT_PREPROCESSING_SHARE,
    public: pd.DataFrame | None = None,
    memory_limit_mb: float | None = None,
    **hyperparameters: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A decoded synthetic table of ``df`` from any registered mechanism, and the run's report.

    ``schema`` is a :class:`Schema`, its dict, or the path of its JSON; columns of ``df``
    it does not name are left out (the report's ``preprocessing.left_out``), and the output
    keeps the table's column order. The budget is split as the module docstring says
    (``preprocessing_share``: ``None`` for the budget rule, or a fixed share of ρ);
    ``public`` is the public table of mechanisms
    that need one (NIST-MST), coded with the same encoder; the other keyword arguments are
    the mechanism's hyperparameters (``synthetic_records=N`` sets the number of records);
    ``memory_limit_mb`` the limit of every size check (:func:`prepare`).
    Every check runs before the first charge and the first draw (:func:`prepare`).

    The report (a dict) has ``mechanism, parameters, epsilon, delta`` (spent, at most the
    requested), ``requested``, ``records``, ``seed``, ``preprocessing`` (per column what was
    done and what it cost), ``mechanism_budget`` (the sub-budget handed to the mechanism:
    currency, total, spent), ``budget``, ``ledger`` (every charge; its ``spent`` is the
    total ρ), ``encoder`` (:meth:`Encoder.to_dict`) and ``result``, the mechanism's
    :class:`~margsynth.mechanisms.base.SynthesisResult` (not JSON; :func:`sidecar` drops it).
    """
    check_seed(seed)
    run = prepare(df, schema, mechanism, epsilon=epsilon, delta=delta, preprocessing_share=preprocessing_share,
                  public=public, memory_limit_mb=memory_limit_mb, **hyperparameters)  # fmt: skip
    return run.run(seed)


def sidecar(report: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-able part of a :func:`synthesize` report (everything but ``result``)."""
    return {k: v for k, v in report.items() if k != "result"}


def encoder_of(report: Mapping[str, Any]) -> Encoder:
    """The fitted :class:`Encoder` of a :func:`synthesize` report."""
    return Encoder.from_dict(report["encoder"])
