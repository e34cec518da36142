"""What every synthetic-data mechanism is, what it returns, and the checks it shares.

A mechanism is a frozen dataclass of hyperparameters (its budget split held in named
fields) that subclasses :class:`Mechanism`, and spends a budget it is handed::

    mech = MST()
    ledger = BudgetLedger.from_dp(1.0, 1e-9, conversion=mech.conversion)
    result = mech.run(data, rng=np.random.default_rng(0), budget=ledger)
    # or, the thin wrapper that opens that ledger itself:
    result = mech.run(data, 1.0, 1e-9, np.random.default_rng(0))

The budget is a :class:`~margsynth.privacy.BudgetLedger` in the currency the mechanism
declares (:attr:`Mechanism.currency`: zCDP ρ, or GDP μ for the adaptive grid), with no
charge on it yet — a fresh ledger, or a sub-budget of a larger run's ledger
(:meth:`~margsynth.privacy.BudgetLedger.sub`: the raw-table path spends its preprocessing
on the run's ledger and hands the rest on). ``run(data, epsilon, delta, rng)`` builds the
ledger :meth:`Mechanism.budget` opens for (ε, δ) and runs on it.

``validate(data, epsilon, delta | budget=..., rng=..., **kw)`` makes every check the run
needs — the budget's, the shared ones of :func:`check_run_inputs`, then the mechanism's own
(:meth:`Mechanism.check`: attribute names, workloads, sizes) — and raises ``ValueError``
naming the argument, its value and what was expected; it draws no noise and charges
nothing. ``run`` validates first, then calls :meth:`Mechanism.synthesize`, whose body reads
SELECT / MEASURE / GENERATE; it charges every noisy step to the ledger before drawing its
noise, and ends with :meth:`SynthesisResult.from_ledger`, which reports the (epsilon, delta)
the ledger says was spent. The number of records to synthesize is the field
``synthetic_records`` of every mechanism (``None``: the generator's estimate).

The GENERATE step is a pluggable generator object (:mod:`.generators`:
``PGMGenerator``, ``GUMGenerator``, ``PrivPGDGenerator``), held in the mechanism's
``generator`` field, that turns one :class:`~margsynth.privacy.NoisyMarginals` into a
synthetic :class:`Dataset`.

Rules the data obeys (:mod:`margsynth.rules`) are a run argument of every mechanism:
``run(data, ..., rules=RuleSet)``. :meth:`Mechanism.validate` and :meth:`Mechanism.run`
check them against the data's domain — satisfiability included — with the other checks,
before any noise; ``synthesize`` receives them as ``rules=`` (only when given) and every
mechanism returns records that obey them, each in its own way (its docstring says how);
``run`` then counts the records that break each rule (``extras["rule_violations"]``, all 0;
a ``RuntimeError`` otherwise — a bug). Rules are public knowledge, stated before the data
are seen: enforcing them is post-processing of the noisy measurements and costs no budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..privacy import BudgetLedger
from ..privacy.accounting import CONVERSIONS
from ..rules import RuleSet, as_rules

__all__ = [
    "NO_RNG",
    "Mechanism",
    "SynthesisResult",
    "check_conversion",
    "MEMORY_LIMIT_MB",
    "MemoryLimitError",
    "PAIR_BYTES",
    "bounded_records",
    "check_attribute_pairs",
    "check_iterations",
    "check_memory_limit",
    "check_generator",
    "check_marginals_fit",
    "check_positive_int",
    "check_records",
    "check_privacy_params",
    "check_rules_held",
    "check_run_inputs",
    "check_seed",
    "current_memory_limit",
    "memory_limit",
    "preset_of",
]


#: Default of ``validate(..., rng=NO_RNG)``: no generator given yet (the CLI validates
#: before it makes one); ``run`` always passes its ``rng``, which is then checked.
NO_RNG: Any = object()


@dataclass
class SynthesisResult:
    synthetic: Dataset
    mechanism: str
    parameters: dict[str, Any]
    epsilon: float  # spent, by the ledger's conversion
    delta: float
    ledger: list[dict[str, Any]] = field(default_factory=list)  # one row per charge
    seconds: dict[str, float] = field(default_factory=dict)  # per phase
    extras: dict[str, Any] = field(default_factory=dict)  # selected cliques, model, traces...
    # The fitted generative model that draws more records at no privacy cost
    # (:class:`~margsynth.mechanisms.sampler.PGMSampler`), None when the run keeps none.
    sampler: Any = None

    @classmethod
    def from_ledger(
        cls,
        synthetic: Dataset,
        mechanism: str,
        parameters: dict[str, Any],
        ledger: Any,
        seconds: dict[str, float],
        extras: dict[str, Any] | None = None,
        sampler: Any = None,
    ) -> SynthesisResult:
        """The result of a run whose every noisy step was charged to ``ledger``
        (a :class:`~margsynth.privacy.BudgetLedger`): the (ε, δ) reported are the
        ones the ledger says were spent, its charges become ``ledger`` and its
        summary ``extras["ledger"]``. ``sampler``: the run's fitted generative model
        (:func:`~margsynth.mechanisms.sampler.pgm_sampler`), if it keeps one."""
        eps, delta = ledger.spent_dp()
        extras = {**(extras or {}), "ledger": ledger.to_dict()}
        return cls(
            synthetic, mechanism, parameters, float(eps), float(delta), ledger.records(), seconds, extras, sampler
        )

    def sidecar(self) -> dict[str, Any]:
        """JSON-able description (the ``--out`` sidecar of ``margsynth synth``).

        PGM-based mechanisms put the certificate of their final Private-PGM fit in
        ``extras["estimation"]`` (:func:`~margsynth.inference.pgm.estimation_summary`:
        loss, certified gap, iterations, method); it is copied here as ``estimation``."""
        out = {
            "mechanism": self.mechanism,
            "parameters": self.parameters,
            "epsilon_spent": self.epsilon,
            "delta": self.delta,
            "records": len(self.synthetic),
            "ledger": self.ledger,
            "seconds": self.seconds,
        }
        if self.extras.get("estimation") is not None:
            out["estimation"] = dict(self.extras["estimation"])
        if self.extras.get("rule_violations") is not None:
            out["rule_violations"] = dict(self.extras["rule_violations"])
        return out


class Mechanism:
    """Base of every mechanism: a frozen dataclass of hyperparameters that spends a budget
    it is handed (module docstring). A subclass sets :attr:`name`, declares its
    :attr:`currency` (and a ``conversion`` field where the user chooses one), and defines
    :meth:`check` (its own validation) and :meth:`synthesize` (SELECT / MEASURE / GENERATE
    on the ledger it is given). ``currency`` (class attribute): the ledger currency it
    spends, ``"zcdp"`` (ρ, the default) or ``"gdp"`` (μ); ``conversion``: the zCDP → (ε, δ)
    conversion of the ledger :meth:`budget` opens (``"prop4"``, or a field of the mechanism)."""

    name: ClassVar[str]
    # The ledger currency the mechanism spends: "zcdp" (rho) or "gdp" (mu).
    currency: ClassVar[str] = "zcdp"
    # The zCDP -> (epsilon, delta) conversion of the ledger budget() opens (a mechanism whose
    # users choose it has a ``conversion`` field instead).
    conversion: ClassVar[str] = "prop4"
    # Whether synthesize() takes ``refinement=`` (a margsynth.rules.Refinement): the mechanism
    # fits on the bins before a rule set's cuts and spreads its output onto them (GEM).
    takes_refinement: ClassVar[bool] = False

    def budget(self, epsilon: float, delta: float) -> BudgetLedger:
        """The ledger ``run(data, epsilon, delta, rng)`` spends: the largest budget in
        :attr:`currency` that is (ε, δ)-DP (:meth:`BudgetLedger.from_dp`)."""
        check_privacy_params(epsilon, delta)
        return BudgetLedger.from_dp(epsilon, delta, currency=self.currency, conversion=self.conversion)

    def ledger(self, epsilon: Any = None, delta: Any = None, budget: Any = None) -> BudgetLedger:
        """The ledger a run spends: ``budget`` checked (a :class:`BudgetLedger` in
        :attr:`currency` with no charge on it yet), or :meth:`budget` of ``(epsilon, delta)``
        when no ``budget`` is given; ``ValueError`` naming what is wrong. Charges nothing."""
        if budget is None:
            return self.budget(epsilon, delta)
        if epsilon is not None or delta is not None:
            raise ValueError(
                f"budget: given both a budget and (epsilon, delta)=({epsilon!r}, {delta!r}); give one of them"
            )
        if not isinstance(budget, BudgetLedger):
            raise ValueError(f"budget must be a BudgetLedger, got {type(budget).__name__}")
        if budget.currency != self.currency:
            raise ValueError(
                f"budget: {type(self).__name__} spends a {self.currency} budget, got a {budget.currency} ledger "
                f"(e.g. ledger.sub(cost, label, currency={self.currency!r}))"
            )
        if budget.entries:
            raise ValueError(
                f"budget: the ledger already has {len(budget.entries)} charge(s); hand the mechanism a fresh "
                "budget (ledger.sub(ledger.remaining, label))"
            )
        return budget

    def validate(
        self,
        data: Dataset,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        budget: BudgetLedger | None = None,
        rng: Any = NO_RNG,
        rules: Any = None,
        **kwargs: Any,
    ) -> None:
        """Every check :meth:`run` makes — the budget (:meth:`ledger`), the shared inputs
        (:func:`check_run_inputs`), the rules (:func:`~margsynth.rules.as_rules`: their
        attributes, shapes and satisfiability over the data's domain), then the mechanism's
        own (:meth:`check`) — without drawing noise or charging a ledger; ``ValueError``
        naming the argument, its value and what was expected."""
        ledger = self.ledger(epsilon, delta, budget)
        check_run_inputs(data, rng)
        check_iterations(self)
        rule_set = as_rules(rules, None if data is None else data.domain)
        if rule_set is not None:
            self.check_rules(data, rule_set)
        self.check(data, ledger, **kwargs)

    def run(
        self,
        data: Dataset,
        epsilon: Any = None,
        delta: float | None = None,
        rng: np.random.Generator | None = None,
        *,
        budget: BudgetLedger | None = None,
        rules: Any = None,
        **kwargs: Any,
    ) -> SynthesisResult:
        """Synthesize ``data`` spending ``budget`` — ``run(data, rng, budget=ledger)`` — or
        the ledger of (ε, δ) — ``run(data, epsilon, delta, rng)``; :meth:`validate` first,
        then :meth:`synthesize`. ``rules``: a :class:`~margsynth.rules.RuleSet` (or a list of
        rules) the records must obey (module docstring; no budget). ``kwargs`` are the
        mechanism's other run arguments (e.g. ``public=`` of NIST-MST, ``device=`` of the
        torch mechanisms)."""
        if budget is not None and isinstance(epsilon, np.random.Generator) and delta is None and rng is None:
            epsilon, rng = None, epsilon  # the form run(data, rng, budget=ledger)
        ledger = self.ledger(epsilon, delta, budget)
        check_run_inputs(data, rng)
        check_iterations(self)
        rule_set = as_rules(rules, data.domain)
        if rule_set is not None:
            self.check_rules(data, rule_set)
        self.check(data, ledger, **kwargs)
        if rule_set is None:
            return self.synthesize(data, rng, ledger, **kwargs)
        return check_rules_held(self.synthesize(data, rng, ledger, rules=rule_set, **kwargs), rule_set)

    def check(self, data: Dataset, budget: BudgetLedger, **kwargs: Any) -> None:
        """The mechanism's own checks (beyond :func:`check_run_inputs`), before any noise."""
        if kwargs:
            raise ValueError(f"unexpected keyword argument(s) {sorted(kwargs)}")

    def check_rules(self, data: Dataset, rules: RuleSet) -> None:
        """The mechanism's own checks of the run's rules (already valid and satisfiable over
        the data's domain), before any noise; e.g. rules over an attribute the mechanism does
        not synthesize. None by default."""

    def synthesize(
        self, data: Dataset, rng: np.random.Generator, budget: BudgetLedger, **kwargs: Any
    ) -> SynthesisResult:
        """SELECT / MEASURE / GENERATE on ``budget`` (already checked by :meth:`validate`);
        ``rules=`` (a checked :class:`~margsynth.rules.RuleSet`) when the run has rules."""
        raise NotImplementedError


def check_rules_held(result: SynthesisResult, rules: RuleSet) -> SynthesisResult:
    """The final check of a run with rules: per rule, the synthetic records that break it,
    reported as ``extras["rule_violations"]`` (and in the sidecar); ``RuntimeError`` naming
    the rules and counts if any record breaks one (the mechanism failed to enforce them)."""
    violations = rules.violations(result.synthetic)
    broken = {name: count for name, count in violations.items() if count}
    if broken:
        raise RuntimeError(f"{result.mechanism}: synthetic records break rules it was given: {broken}")
    result.extras["rule_violations"] = violations
    return result


def check_privacy_params(epsilon: float, delta: float) -> None:
    """``ValueError`` unless ``epsilon > 0`` and ``0 < delta < 1`` (both finite)."""
    if not (isinstance(epsilon, (int, float)) and np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and np.isfinite(delta) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")




def check_run_inputs(data: Dataset | None, rng: Any = NO_RNG) -> None:
    """The checks every mechanism makes before anything else (so no noise is drawn on bad
    input): an explicit ``numpy.random.Generator`` (when ``rng`` is passed:
    :meth:`Mechanism.validate` called before a run has none yet), and (unless ``data`` is
    None) a non-empty :class:`Dataset` whose attribute pairs (:func:`check_attribute_pairs`)
    and one-way marginals fit the memory limit. The budget is checked by :meth:`Mechanism.ledger`."""
    if rng is not NO_RNG and not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    if data is not None and not isinstance(data, Dataset):
        raise ValueError(f"data must be a non-empty Dataset, got {type(data).__name__}")
    if data is not None and len(data) == 0:
        raise ValueError("data must be a non-empty Dataset, got 0 records")
    if data is not None:  # every mechanism tabulates the one-way marginals
        check_attribute_pairs(data.domain)
        check_marginals_fit(data.domain, [(a,) for a in data.domain.names], "one-way marginal")


#: The fields (of a mechanism or of its generator) that count the iterations of a fit: the
#: descent keeps one 8-byte number per iteration (its loss history), allocated up front.
ITERATION_FIELDS = ("iters", "select_iters")


def check_iterations(mechanism: Any, limit_mb: float | None = None) -> None:
    """:class:`MemoryLimitError` naming the field when an iteration count of ``mechanism`` or of
    its ``generator`` (:data:`ITERATION_FIELDS`), 8 bytes of history an iteration, does not fit
    ``limit_mb`` MiB (``None``: :func:`current_memory_limit`): ``iters=10**14`` is refused before
    any charge instead of failing to allocate after them."""
    limit_mb = _limit(limit_mb)
    for owner, prefix in ((mechanism, ""), (getattr(mechanism, "generator", None), "generator.")):
        for name in ITERATION_FIELDS:
            value = getattr(owner, name, None)
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value * 8 > limit_mb * _MIB:
                raise MemoryLimitError(
                    f"{prefix}{name}={value!r}: a fit of {value:,} iterations keeps {value * 8 / _MIB:,.0f} MiB of "
                    f"history, more than the {limit_mb:,.0f} MiB memory limit; expected at most "
                    f"{int(limit_mb * _MIB // 8):,}"
                )


def check_seed(seed: Any, name: str = "seed") -> int:
    """``seed`` as an ``int`` >= 0 (a seed of ``numpy.random.default_rng``), else
    ``ValueError`` naming ``name`` (bools refused)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {seed!r}")
    return int(seed)


def check_positive_int(name: str, value: Any) -> int:
    """``value`` as an ``int`` >= 1, else ``ValueError`` naming ``name`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_conversion(conversion: Any) -> str:
    """A zCDP -> (epsilon, delta) conversion name (``"prop4"`` or ``"cks"``, see
    :data:`margsynth.privacy.CONVERSIONS`), else ``ValueError``."""
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
    return conversion


def check_generator(generator: Any, *, allow_none: bool = True) -> Any:
    """A generator object (:mod:`.generators`: ``PGMGenerator()``, ``GUMGenerator()``, …:
    a ``generate(domain, marginals, rng, records=...)`` method), else ``ValueError``."""
    if generator is None and allow_none:
        return None
    if isinstance(generator, str) or not callable(getattr(generator, "generate", None)):
        raise ValueError(
            f"generator must be a generator object such as PGMGenerator() or GUMGenerator() "
            f"(margsynth.mechanisms.generators), got {generator!r}"
        )
    return generator


#: The default memory limit (MiB) a run's sizes are checked against before any noise: the
#: synthetic records (``records x attributes`` 8-byte codes), every marginal table a
#: mechanism will allocate (``cells`` 8-byte floats) and the pairs of attributes
#: (:func:`check_attribute_pairs`). Sizes are decided before measuring. A run sets another
#: limit with :func:`memory_limit` (the command line's ``--memory-limit MB``); every check
#: reads :func:`current_memory_limit`.
MEMORY_LIMIT_MB = 4096.0

_MIB = float(2**20)
_LIMIT: ContextVar[float | None] = ContextVar("margsynth_memory_limit_mb", default=None)


def check_memory_limit(limit_mb: Any, name: str = "memory_limit_mb") -> float:
    """``limit_mb`` as a float number of MiB (finite, > 0), else ``ValueError`` naming ``name``."""
    if isinstance(limit_mb, bool) or not isinstance(limit_mb, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number of MiB > 0, got {limit_mb!r}")
    if not (math.isfinite(limit_mb) and limit_mb > 0):
        raise ValueError(f"{name} must be a finite number of MiB > 0, got {limit_mb!r}")
    return float(limit_mb)


def current_memory_limit() -> float:
    """The memory limit (MiB) in force: the innermost :func:`memory_limit`, else
    :data:`MEMORY_LIMIT_MB` (read when called)."""
    limit = _LIMIT.get()
    return MEMORY_LIMIT_MB if limit is None else limit


@contextmanager
def memory_limit(limit_mb: float | None) -> Iterator[float]:
    """Within the block, every size check (:func:`check_records`, :func:`check_marginals_fit`,
    :func:`check_attribute_pairs`, the raw-table and saved-model checks) uses ``limit_mb``
    MiB (``None``: leave the limit as it is). Yields the limit in force."""
    if limit_mb is None:
        yield current_memory_limit()
        return
    token = _LIMIT.set(check_memory_limit(limit_mb))
    try:
        yield current_memory_limit()
    finally:
        _LIMIT.reset(token)


def _limit(limit_mb: float | None) -> float:
    return current_memory_limit() if limit_mb is None else limit_mb


class MemoryLimitError(ValueError):
    """A size a user asked for (records, attributes, marginal tables, bins, a model file's
    arrays) that does not fit the memory limit: refused before any charge or draw."""


#: Bytes per pair of attributes of the work that grows with the square of the number of
#: attributes: the clique graph Private-PGM builds its junction tree from (one weighted
#: edge per pair of cliques, at most one clique per attribute: networkx holds about 320
#: bytes an edge) and the candidate pairs MST, AIM and PrivSyn score. With the default
#: limit, about 5,000 attributes fit.
PAIR_BYTES = 320


def check_attribute_pairs(domain: Domain, limit_mb: float | None = None) -> None:
    """:class:`MemoryLimitError` when the ``n (n - 1) / 2`` pairs of ``domain``'s ``n``
    attributes, :data:`PAIR_BYTES` each, do not fit ``limit_mb`` MiB (``None``:
    :func:`current_memory_limit`). Every mechanism checks it before any noise
    (:func:`check_run_inputs`), so a table with too many columns is refused up front
    instead of failing after its one-way measurements."""
    limit_mb = _limit(limit_mb)
    n = len(domain)
    pairs = n * (n - 1) // 2
    if pairs * PAIR_BYTES > limit_mb * _MIB:
        most = int((1 + math.sqrt(1 + 8 * limit_mb * _MIB / PAIR_BYTES)) / 2)
        raise MemoryLimitError(
            f"too many attributes: {n:,} attributes make {pairs:,} pairs, about {pairs * PAIR_BYTES / _MIB:,.0f} MiB "
            f"for the pair graph, more than the {limit_mb:,.0f} MiB memory limit; expected at most {most:,} attributes"
        )


def max_records(columns: int, limit_mb: float | None = None) -> int:
    """The most synthetic records of ``columns`` attributes that fit in ``limit_mb`` MiB
    (``None``: :func:`current_memory_limit`)."""
    limit_mb = _limit(limit_mb)
    return int(limit_mb * _MIB // (8 * max(int(columns), 1)))


def check_records(
    records: Any, name: str = "synthetic_records", *, columns: int | None = None, limit_mb: float | None = None
) -> int | None:
    """``None`` (the generator's estimate) or a positive integer number of synthetic
    records which, with ``columns`` attributes (when given), fits ``limit_mb`` MiB;
    else ``ValueError`` naming ``name``, the value and what was expected."""
    if records is None:
        return None
    if isinstance(records, bool) or not isinstance(records, (int, np.integer)) or records < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {records!r}")
    limit_mb = _limit(limit_mb)
    if columns is not None and records > max_records(columns, limit_mb):
        mb = int(records) * 8 * int(columns) / _MIB
        raise MemoryLimitError(
            f"{name}={records!r}: {records:,} records x {columns} attributes need {mb:,.0f} MiB, more than the "
            f"{limit_mb:,.0f} MiB memory limit; expected at most {max_records(columns, limit_mb):,}"
        )
    return int(records)


def bounded_records(estimate: float, columns: int, limit_mb: float | None = None) -> tuple[int, dict[str, Any]]:
    """The number of records a generator makes when none was asked for: its noisy
    ``estimate`` rounded into ``[0, max_records(columns)]`` — the bound is decided before
    any noise, from the memory limit. Returns ``(n, note)``; ``note`` (empty unless the
    estimate fell outside the bound) is reported in the run's extras as
    ``records_bounded``, so nothing is clipped silently."""
    limit_mb = _limit(limit_mb)
    hi = max_records(columns, limit_mb)
    est = float(estimate)
    if math.isfinite(est) and -0.5 < est < hi + 0.5:
        return int(round(est)), {}
    n = hi if est > 0 else 0
    return n, {"records_bounded": {"estimate": est, "records": n, "bounds": [0, hi], "memory_limit_mb": limit_mb}}


def check_marginals_fit(
    domain: Domain,
    cliques: Iterable[Sequence[str]],
    what: str = "marginal",
    limit_mb: float | None = None,
    *,
    bytes_per_cell: int = 8,
) -> None:
    """:class:`MemoryLimitError` (a ``ValueError``) naming the attributes and their sizes when
    the table of one of ``cliques`` (``prod sizes`` cells, ``bytes_per_cell`` each: 8 for the
    table itself, more for the work done on it, e.g. scoring or an AEMC problem) cannot be
    allocated within ``limit_mb`` MiB."""
    limit_mb = _limit(limit_mb)
    for c in cliques:
        c = tuple(c)
        cells = math.prod(int(domain[a].size) for a in c)
        if cells * bytes_per_cell > limit_mb * _MIB:
            sizes = ", ".join(f"{a}={domain[a].size:,}" for a in c)
            raise MemoryLimitError(
                f"domain too large: the {what} over {c} has {cells:,} cells ({cells * bytes_per_cell / _MIB:,.0f} MiB), "
                f"more than the {limit_mb:,.0f} MiB memory limit (attribute sizes {sizes}); expected smaller attributes"
            )


def largest(domain: Domain, k: int) -> tuple[str, ...]:
    """The ``k`` attributes of ``domain`` with the most values: the largest ``k``-way
    marginal a mechanism that measures (or scores) all of them will allocate."""
    order = sorted(domain.names, key=lambda a: -domain[a].size)
    return tuple(order[: max(0, min(k, len(order)))])


def preset_of(cls: type, presets: dict[str, Any], preset: str, overrides: dict[str, Any]):
    """``presets[preset]`` with ``overrides`` replacing fields; ``ValueError`` naming an
    unknown preset or field (the registry factories of AIM, RAP, GEM and Private-GSD)."""
    if not isinstance(preset, str) or preset not in presets:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(presets)}")
    known = {f.name for f in fields(cls)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(
            f"unknown {getattr(cls, 'name', cls.__name__)} parameter(s) {bad}; expected some of {sorted(known)}"
        )
    return replace(presets[preset], **overrides)
