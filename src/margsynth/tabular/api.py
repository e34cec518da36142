"""One call from a raw table to a decoded synthetic table: :func:`synthesize`.

The budget is one (ε, δ) for everything, held in one zCDP
:class:`~margsynth.privacy.BudgetLedger`:

1. If the schema discovers category sets, ``DELTA_SHARE`` of δ is set aside for their
   thresholds (``δ_c = DELTA_SHARE · δ · e^{-ε}``; see :mod:`~margsynth.tabular.discovery`,
   which explains the ``e^ε``) and the ledger is calibrated to ``(ε, δ_conv)``,
   ``δ_conv = (1 - DELTA_SHARE) δ``; otherwise to ``(ε, δ)``.
2. Preprocessing spends ``preprocessing_share`` of the ledger's ρ (only if something is
   left to discover; nothing otherwise).
3. The mechanism gets the rest: the largest ``ε_m`` whose ledger — the one the
   mechanism builds from ``(ε_m, δ_conv)`` (zCDP with its conversion, or Gaussian DP for
   the adaptive grid, whose μ-GDP Gaussian measurements cost ``μ²/2`` zCDP, Prop. 1 of
   McKenna et al., JPC 2021, arXiv:2108.04978) — fits in the remaining ρ. It is computed
   before any noise is drawn. After the run each of its charges is copied into the
   run's ledger (labelled ``"<mechanism>: ..."``), so the ledger lists every cost.
4. The run is ``(ε_spent, δ_conv + e^{ε_spent} δ_c)``-DP with ``ε_spent`` the ledger's
   conversion of the total ρ at ``δ_conv``: at most the requested (ε, δ).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..mechanisms import registry
from ..mechanisms.base import check_positive_int, check_privacy_params
from ..privacy import BudgetLedger
from ..privacy import accounting as acc
from .encoder import Encoder, check_table, domain_extremes, fit_encoder
from .schema import Schema

__all__ = [
    "DEFAULT_PREPROCESSING_SHARE",
    "DELTA_SHARE",
    "mechanism_accounting",
    "mechanism_epsilon",
    "encoder_of",
    "sidecar",
    "synthesize",
]

#: Share of the zCDP budget ρ spent on private discovery (when the schema has any).
DEFAULT_PREPROCESSING_SHARE = 0.1
#: Share of δ set aside for the thresholds of category discovery (when the schema has any).
DELTA_SHARE = 0.1
#: Mechanism classes whose ledger is Gaussian DP (``BudgetLedger.from_dp(..., currency="gdp")``).
_GDP_MECHANISMS = ("AdaptiveGrid",)
#: Names of the field that sets the number of synthetic records, by preference.
_RECORD_FIELDS = ("synthetic_records", "n_particles")


def mechanism_accounting(mech: Any) -> tuple[str, str]:
    """``(currency, conversion)`` of the ledger ``mech.run`` builds from (ε, δ): Gaussian DP
    for the adaptive grid, else zCDP with the mechanism's ``conversion`` field (Prop. 4 when
    it has none). :func:`synthesize` checks it against the ledger the run reports."""
    if type(mech).__name__ in _GDP_MECHANISMS:
        return "gdp", "gdp"
    return "zcdp", getattr(mech, "conversion", "prop4")


def mechanism_epsilon(rho: float, delta: float, currency: str, conversion: str) -> float:
    """The largest ε (to a relative 1e-12) such that the ledger a mechanism builds from
    ``(ε, delta)`` holds at most ``rho`` zCDP: ``zcdp_rho(ε, δ) ≤ ρ``, or for Gaussian DP
    ``μ(ε, δ)²/2 ≤ ρ`` (a μ-GDP composition of Gaussian measurements is μ²/2-zCDP,
    Prop. 1 and Prop. 3 of arXiv:2108.04978). ``ValueError`` when no positive ε fits."""
    if currency == "zcdp":
        eps = acc.zcdp_to_dp(rho, delta, conversion=conversion)

        def cost(e: float) -> float:
            return acc.zcdp_rho(e, delta, conversion=conversion)
    else:
        eps = acc.gdp_epsilon(math.sqrt(2.0 * rho), delta)

        def cost(e: float) -> float:
            return acc.gdp_mu_for_dp(e, delta) ** 2 / 2.0

    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(
            f"the mechanism's share of the budget (rho={rho:.6g}) gives no usable epsilon at delta={delta!r}"
        )
    for _ in range(10_000):
        if cost(eps) <= rho:
            return eps
        eps *= 1.0 - 1e-12 * 2 ** min(_, 30)
    raise ValueError(f"no mechanism epsilon fits rho={rho!r}")  # pragma: no cover


def _records_field(mech: Any) -> str:
    fields = {f.name for f in dataclasses.fields(mech)} if dataclasses.is_dataclass(mech) else set()
    for name in _RECORD_FIELDS:
        if name in fields:
            return name
    raise ValueError(f"n: mechanism {type(mech).__name__} has no parameter setting the number of records")


def _recharge(ledger: BudgetLedger, records: list[dict[str, Any]], currency: str, prefix: str) -> None:
    """Copy a mechanism's charges into the run's zCDP ledger (Gaussian DP costs μ → μ²/2)."""
    for rec in records:
        params = {k: v for k, v in rec.items() if k not in ("step", "label", "kind", "cost")}
        label = f"{prefix}: {rec['label']}"
        kind, cost = rec["kind"], float(rec["cost"])
        if currency == "gdp":
            if kind == "gaussian" and "sigma" in params and "sensitivity" in params:
                cost = ledger.cost("gaussian", sigma=params["sigma"], sensitivity=params["sensitivity"])
            else:
                kind, cost = "other", cost * cost / 2.0
        ledger.charge(kind, cost, label, **params)


def _validate_before_discovery(
    mech: Any,
    schema: Schema,
    checked: Mapping[str, Any],
    rows: int,
    public_rows: int | None,
    epsilon: float,
    delta: float,
) -> None:
    """``mech.validate`` on all-zero placeholder tables of ``rows`` (and ``public_rows``)
    records over the smallest and the largest domain private discovery can give
    (:func:`~margsynth.tabular.encoder.domain_extremes`): no noise, no charge. Its size
    checks are monotone in each attribute's size, so passing both extremes means the run
    after discovery passes them too. A refusal names the extreme and the size ranges."""
    smallest, largest = domain_extremes(schema, checked)
    extremes = [("largest", largest)] if smallest == largest else [("largest", largest), ("smallest", smallest)]
    for which, dom in extremes:
        kw: dict[str, Any] = {}
        if public_rows is not None:
            kw["public"] = Dataset._trusted(np.zeros((public_rows, len(dom)), dtype=np.int8), dom)
        try:
            mech.validate(Dataset._trusted(np.zeros((rows, len(dom)), dtype=np.int8), dom), epsilon, delta, **kw)
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
            raise ValueError(
                f"{exc} (checked before any noise against the {which} domain private discovery can give, "
                f"attribute sizes {sizes}; in the schema, {fix})"
            ) from None


def synthesize(
    df: pd.DataFrame,
    schema: Schema | Mapping[str, Any] | str,
    mechanism: str = "mst",
    *,
    epsilon: float,
    delta: float,
    seed: int,
    preprocessing_share: float = DEFAULT_PREPROCESSING_SHARE,
    n: int | None = None,
    public: pd.DataFrame | None = None,
    **hyperparameters: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A decoded synthetic table of ``df`` from any registered mechanism, and the run's report.

    ``schema`` is a :class:`Schema`, its dict, or the path of its JSON. The budget is split
    as the module docstring says (``preprocessing_share`` of ρ to discovery, default
    :data:`DEFAULT_PREPROCESSING_SHARE`); ``n`` sets the number of synthetic records
    (the mechanism's ``synthetic_records``/``n_particles``); ``public`` is the public table
    of mechanisms that need one (NIST-MST), coded with the same encoder; the other keyword
    arguments are the mechanism's hyperparameters. Every check — arguments, schema, cells,
    hyperparameters, budget, and the mechanism's own ``validate`` — runs before the first
    charge and the first draw; the checks that depend on the domain (a marginal too large
    for memory, a one-value attribute) run against the smallest and the largest domain
    discovery can produce (:func:`~margsynth.tabular.encoder.domain_extremes`), so a run
    they accept cannot be refused after discovery.

    The report (a dict) has ``mechanism, parameters, epsilon, delta`` (spent, at most the
    requested), ``requested``, ``records``, ``seed``, ``preprocessing`` (per column what was
    done and what it cost), ``mechanism_budget``, ``ledger`` (every charge; its ``spent`` is
    the total ρ), ``encoder`` (:meth:`Encoder.to_dict`) and ``result``, the mechanism's
    :class:`~margsynth.mechanisms.base.SynthesisResult` (not JSON; :func:`sidecar` drops it).
    """
    t0 = time.perf_counter()
    check_privacy_params(epsilon, delta)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if (
        isinstance(preprocessing_share, bool)
        or not isinstance(preprocessing_share, (int, float))
        or not (0 < preprocessing_share < 1)
    ):
        raise ValueError(f"preprocessing_share must be in (0, 1), got {preprocessing_share!r}")
    if n is not None:
        n = check_positive_int("n", n)
    schema = Schema.coerce(schema)
    checked = check_table(df, schema)
    spec = registry.spec(mechanism)
    if spec.needs_public:
        if public is None:
            raise ValueError(f"public: mechanism {mechanism!r} needs a public table (public=DataFrame)")
    if public is not None:
        check_table(public, schema)
    mech = registry.create(mechanism, **hyperparameters)
    if n is not None:
        field = _records_field(mech)
        if field in hyperparameters:
            raise ValueError(f"n: given both n={n} and {field}={hyperparameters[field]!r}; give one")
        mech = dataclasses.replace(mech, **{field: n})
    currency, conversion = mechanism_accounting(mech)

    # the budget: delta for the category thresholds, the rest for the zCDP conversion
    discovers = schema.discovers
    cat_steps = sum(c.discovers[:1] == ("categories",) for c in schema.columns)
    if cat_steps:
        delta_conv = (1.0 - DELTA_SHARE) * delta
        # the relative 1e-12 absorbs the rounding of exp and of the sum below
        delta_cat = DELTA_SHARE * delta * math.exp(-epsilon) * (1.0 - 1e-12)
        if not delta_cat > 0:
            raise ValueError(f"epsilon={epsilon!r} is too large to leave a positive delta for category discovery")
    else:
        delta_conv, delta_cat = delta, 0.0
    ledger = BudgetLedger.from_dp(epsilon, delta_conv, conversion="cks" if currency == "gdp" else conversion)
    pre_rho = ledger.portion(preprocessing_share) if discovers else 0.0
    rest = ledger.total - pre_rho
    eps_m = mechanism_epsilon(rest, delta_conv, currency, conversion)
    # the mechanism's own checks (hyperparameters, sizes, memory) against the smallest and
    # the largest domain discovery can produce, so none of them can refuse after a charge
    _validate_before_discovery(mech, schema, checked, len(df), None if public is None else len(public), eps_m,
                               delta_conv)  # fmt: skip

    rng = np.random.default_rng(int(seed))
    encoder, prep = fit_encoder(df, schema, ledger=ledger, rng=rng, share=preprocessing_share,
                                delta=delta_cat if cat_steps else None)  # fmt: skip
    t_pre = time.perf_counter() - t0
    data = encoder.encode(df)
    run_kw: dict[str, Any] = {}
    if public is not None:
        run_kw["public"] = encoder.encode(public)
    mech.validate(data, eps_m, delta_conv, rng=rng, **run_kw)  # passes: the domain lies between the extremes
    result = mech.run(data, eps_m, delta_conv, rng, **run_kw)
    mled = result.extras.get("ledger", {})
    if (mled.get("currency"), mled.get("conversion")) != (currency, conversion) or mled.get("delta") != delta_conv:
        raise RuntimeError(
            f"mechanism {mechanism!r} reported a {mled.get('currency')}/{mled.get('conversion')} ledger at delta "
            f"{mled.get('delta')!r}; expected {currency}/{conversion} at {delta_conv!r}"
        )
    _recharge(ledger, result.ledger, currency, mechanism)
    synthetic = encoder.decode(result.synthetic, rng)
    eps_spent, _ = ledger.spent_dp()
    delta_spent = delta_conv + (math.exp(eps_spent) * delta_cat if delta_cat else 0.0)
    report: dict[str, Any] = {
        "mechanism": mechanism,
        "parameters": result.parameters,
        "epsilon": float(eps_spent),
        "delta": float(delta_spent),
        "requested": {"epsilon": epsilon, "delta": delta},
        "records": len(synthetic),
        "seed": int(seed),
        "preprocessing": {**prep, "preprocessing_share": preprocessing_share if discovers else 0.0},
        "mechanism_budget": {
            "epsilon": eps_m,
            "delta": delta_conv,
            "currency": currency,
            "conversion": conversion,
            "spent_epsilon": result.epsilon,
            "rho": rest,
        },  # fmt: skip
        "budget": {
            "rho_total": ledger.total,
            "rho_spent": ledger.spent,
            "delta_conversion": delta_conv,
            "delta_categories": delta_cat,
            "composition": "epsilon from the total rho at delta_conversion; "
            "delta = delta_conversion + exp(epsilon) * delta_categories",
        },  # fmt: skip
        "ledger": ledger.to_dict(),
        "seconds": {"preprocessing": t_pre, **result.seconds, "total": time.perf_counter() - t0},
        "encoder": encoder.to_dict(),
        "result": result,
    }
    if report["delta"] > delta or report["epsilon"] > epsilon:  # pragma: no cover - guarded by construction
        raise RuntimeError(f"spent ({report['epsilon']!r}, {report['delta']!r}) exceeds ({epsilon!r}, {delta!r})")
    return synthetic, report


def sidecar(report: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-able part of a :func:`synthesize` report (everything but ``result``)."""
    return {k: v for k, v in report.items() if k != "result"}


def encoder_of(report: Mapping[str, Any]) -> Encoder:
    """The fitted :class:`Encoder` of a :func:`synthesize` report."""
    return Encoder.from_dict(report["encoder"])
