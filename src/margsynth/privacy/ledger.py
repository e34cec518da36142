"""The privacy budget ledger every mechanism goes through.

A :class:`BudgetLedger` holds a total budget in one *currency*:

- ``"zcdp"`` — ρ of zero-concentrated DP. Costs add (Prop. 3 of the NIST-MST paper,
  applied at every Rényi order); the final (ε, δ) follows from Prop. 4 or, optionally,
  the Canonne–Kamath–Steinke 2020 conversion (see :mod:`margsynth.privacy.accounting`).
- ``"gdp"`` — μ of Gaussian DP (Dong, Roth & Su 2019). Costs compose as
  ``sqrt(Σ μ_i²)`` (Cor. 3.3); the final (ε, δ) follows from Cor. 2.13.

A run opens one ledger (:meth:`BudgetLedger.from_dp`) and hands parts of it on:
:meth:`BudgetLedger.sub` carves out a sub-budget — in the same currency, or in GDP μ out
of a zCDP ρ (a μ-GDP composition of Gaussian measurements is μ²/2-zCDP) — whose every
charge is charged to the parent at the same moment, so the parent lists every cost of
the run and its total is never exceeded. A mechanism is handed such a budget and spends it.

Each measurement or selection is recorded with :meth:`BudgetLedger.charge` *before*
its noise is drawn; a charge that would overspend raises ``ValueError`` and leaves the
ledger unchanged, so a mechanism that charges first never draws noise it cannot pay
for. At the end, :meth:`BudgetLedger.report` / :meth:`BudgetLedger.to_dict` say what
was spent where, and :meth:`BudgetLedger.spent_dp` the (ε, δ) actually spent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pandas as pd

from . import accounting as acc

__all__ = ["CALIBRATION_MARGIN", "KINDS", "SUB_MARGIN", "BudgetLedger", "Charge"]

#: Kinds of charge a ledger knows how to price (see :meth:`BudgetLedger.cost`).
#: ``"other"`` is a cost computed by the caller (e.g. a sub-mechanism's own analysis).
KINDS = ("gaussian", "exponential", "laplace", "permute_and_flip", "report_noisy_max", "other")

_CURRENCIES = ("zcdp", "gdp")
_GDP_KINDS = ("gaussian", "other")
# Relative slack on the overspend test: lets a budget split into exact shares
# (e.g. three charges of ρ/3) be spent in full despite floating-point rounding.
_RTOL = 1e-12
#: Safety margin of :meth:`BudgetLedger.from_dp`: the ledger holds ``(1 - margin)`` times
#: the largest ρ (or μ) that is (ε, δ)-DP. It exceeds the overspend slack ``_RTOL`` and
#: the rounding of the conversions by orders of magnitude, so the (ε, δ) computed from
#: the ledger at the end is never above the request, exactly in floating point, for any
#: split of the budget (costing at most a relative 1e-10 of ρ, about 5e-11 of ε).
CALIBRATION_MARGIN = 1e-10
#: Margin of :meth:`BudgetLedger.sub`: a sub-budget holds ``(1 - margin)`` times the cost
#: carved out, so that its own overspend slack (``_RTOL``) and the rounding of the sums never
#: take the parent past its total: the parent's ``spent`` stays ``<= total`` exactly.
SUB_MARGIN = 1e-11


@dataclass(frozen=True)
class Charge:
    """One ledger entry: ``cost`` in the ledger's currency (ρ for zCDP, μ for GDP).

    ``params`` holds the mechanism parameters the cost was derived from (e.g. ``sigma``
    and ``sensitivity`` for a Gaussian measurement, ``epsilon`` for a selection).
    """

    step: int
    kind: str
    label: str
    cost: float
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Freeze ``params`` (the Prop. 1 / Prop. 2 parameters the cost was priced from)."""
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


class BudgetLedger:
    """A privacy budget in zCDP ρ or GDP μ, charged before any noise is drawn.

    Parameters
    ----------
    total:
        The total budget: ρ (``currency="zcdp"``, Prop. 3 composition) or μ
        (``currency="gdp"``, Dong et al. Cor. 3.3 composition).
    currency:
        ``"zcdp"`` or ``"gdp"``.
    delta:
        The δ at which the final (ε, δ) is reported (optional; required by
        :meth:`spent_dp` unless given there).
    conversion:
        zCDP → (ε, δ) conversion, ``"prop4"`` (Prop. 4) or ``"cks"`` (CKS 2020).
    epsilon:
        The target ε the total was derived from, kept for the report only.

    Examples
    --------
    >>> led = BudgetLedger.from_dp(1.0, 1e-9)
    >>> c = led.charge("gaussian", led.cost("gaussian", sigma=20.0, sensitivity=1.0), "one-way",
    ...                sigma=20.0, sensitivity=1.0)
    >>> round(led.spent, 6), round(led.remaining, 6)
    (0.00125, 0.010531)
    """

    def __init__(
        self,
        total: float,
        *,
        currency: str = "zcdp",
        delta: float | None = None,
        conversion: str = "prop4",
        epsilon: float | None = None,
    ) -> None:
        if currency not in _CURRENCIES:
            raise ValueError(f"currency must be one of {_CURRENCIES}, got {currency!r}")
        if conversion not in acc.CONVERSIONS:
            raise ValueError(f"conversion must be one of {acc.CONVERSIONS}, got {conversion!r}")
        self.currency = currency
        self.total = acc._positive("total budget", total)
        self.delta = None if delta is None else acc.check_delta(delta)
        self.epsilon = None if epsilon is None else acc.check_epsilon(epsilon)
        self.conversion = conversion
        self._entries: list[Charge] = []
        self._spent_additive = 0.0  # ρ (zCDP) or μ² (GDP): the quantity that adds up
        # (additive budget, delta) verified (epsilon, delta)-DP by from_dp's calibration
        self._certified: tuple[float, float] | None = None
        # a sub-budget (:meth:`sub`): the ledger every charge is also made to, and its label there
        self.parent: BudgetLedger | None = None
        self.label: str | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dp(
        cls, epsilon: float, delta: float, *, currency: str = "zcdp", conversion: str = "prop4"
    ) -> BudgetLedger:
        """A ledger holding the largest budget that is (ε, δ)-DP — ρ from
        :func:`~margsynth.privacy.accounting.zcdp_rho` (MST appendix, Prop. 4 or CKS) or μ
        from :func:`~margsynth.privacy.accounting.gdp_mu_for_dp` (Dong et al. Cor. 2.13) —
        less the relative :data:`CALIBRATION_MARGIN`, so that :meth:`spent_dp` never
        reports more than ``epsilon`` however the budget is split."""
        eps = acc.check_epsilon(epsilon)
        d = acc.check_delta(delta)
        if conversion not in acc.CONVERSIONS:
            raise ValueError(f"conversion must be one of {acc.CONVERSIONS}, got {conversion!r}")
        if currency == "zcdp":
            total = acc.zcdp_rho(eps, d, conversion=conversion)
        elif currency == "gdp":
            total = acc.gdp_mu_for_dp(eps, d)
        else:
            raise ValueError(f"currency must be one of {_CURRENCIES}, got {currency!r}")
        certified = total
        total *= 1.0 - CALIBRATION_MARGIN
        if not (math.isfinite(total) and total > 0):
            raise ValueError(
                f"(epsilon, delta)=({eps!r}, {d!r}) gives no usable budget ({currency} total {total!r}); "
                "expected epsilon and delta in the supported range"
            )
        led = cls(total, currency=currency, delta=d, conversion=conversion, epsilon=eps)
        led._certified = (led._additive(certified), d)
        return led

    def sub(self, cost: float, label: str, *, currency: str | None = None) -> BudgetLedger:
        """A sub-budget of ``cost`` (in this ledger's currency) to hand to a mechanism.

        The sub-budget is a ledger of its own (``currency``: this one's by default, or
        ``"gdp"`` out of a zCDP ledger: ``μ = sqrt(2 cost)``, since μ-GDP Gaussian
        measurements compose to μ²/2-zCDP — Dong, Roth & Su, JRSS-B 2022, Cor. 3.3, with
        Prop. 1 of the NIST-MST paper). Each of its charges is charged to this ledger at the
        same moment, labelled ``"<label>: <its label>"`` (a GDP charge as the zCDP cost of
        the same Gaussian noise), and neither records it unless both accept it: this ledger
        never spends more than its total, however its sub-budgets are spent. Nothing is
        reserved: sub-budgets and direct charges share this ledger's total. The
        sub-budget reports (ε, δ) at this ledger's δ and conversion. It holds
        ``(1 - SUB_MARGIN)`` of ``cost``, so that this ledger's ``spent`` never exceeds its
        total, not by one ulp, however the sub-budget is split.
        """
        c = acc._positive("cost", cost)
        if not isinstance(label, str) or not label:
            raise ValueError(f"label must be a non-empty string, got {label!r}")
        cur = self.currency if currency is None else currency
        if cur not in _CURRENCIES:
            raise ValueError(f"currency must be one of {_CURRENCIES}, got {cur!r}")
        c *= 1.0 - SUB_MARGIN
        if cur == self.currency:
            total = c
        elif cur == "gdp":  # zCDP parent: a μ-GDP Gaussian composition costs μ²/2 zCDP
            total = math.sqrt(2.0 * c)
        else:
            raise ValueError(
                "a GDP ledger cannot hold a zCDP sub-budget (its selections and Laplace noise have no exact "
                "mu-GDP price); open the run's ledger in zCDP"
            )
        child = BudgetLedger(total, currency=cur, delta=self.delta, conversion=self.conversion)
        child.parent, child.label = self, label
        return child

    def epsilon_of_total(self) -> float:
        """The ε this ledger's whole budget amounts to at its δ: the ``epsilon`` of
        :meth:`from_dp`, else the conversion of :attr:`total` (Prop. 4 / CKS on ρ, Dong et al.
        Cor. 2.13 on μ). What a mechanism whose rules depend on ε reads from a budget."""
        if self.epsilon is not None:
            return self.epsilon
        if self.delta is None:
            raise ValueError("no delta: the ledger's total has no (epsilon, delta) equivalent")
        if self.currency == "zcdp":
            return acc.zcdp_to_dp(self.total, self.delta, conversion=self.conversion)
        return acc.gdp_epsilon(self.total, self.delta)

    def _to_parent(self, kind: str, cost: float, params: Mapping[str, Any]) -> tuple[str, float]:
        """A charge of this sub-budget priced in its parent's currency (the same, or a GDP
        Gaussian measurement as zCDP: ρ = Δ²/(2σ²), i.e. μ²/2; Prop. 1)."""
        assert self.parent is not None
        if self.currency == self.parent.currency:
            return kind, cost
        if kind == "gaussian" and "sigma" in params and "sensitivity" in params:
            return kind, self.parent.cost("gaussian", sigma=params["sigma"], sensitivity=params["sensitivity"])
        return "other", cost * cost / 2.0

    # ------------------------------------------------------------------ pricing
    def cost(self, kind: str, **params: float) -> float:
        """Price one mechanism invocation in this ledger's currency.

        - ``gaussian(sigma, sensitivity)``: ρ = Δ²/(2σ²) (Prop. 1) or μ = Δ/σ (Dong et al. Thm 2.7);
        - ``exponential(epsilon)``: ρ = ε²/8 (Prop. 2);
        - ``laplace``, ``permute_and_flip``, ``report_noisy_max`` ``(epsilon)``: ρ = ε²/2
          (ε-DP ⇒ ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4); ``report_noisy_max`` with
          ``noise="gumbel"`` is the exponential mechanism and costs ε²/8 (Prop. 2).

        A GDP ledger prices only Gaussian measurements: the other primitives have no
        exact μ-GDP guarantee, so they are refused with ``ValueError``.
        """
        self._check_kind(kind)
        if kind == "other":
            raise ValueError("kind 'other' has no built-in price; pass the cost computed by the caller to charge()")
        if kind == "gaussian":
            unknown = set(params) - {"sigma", "sensitivity"}
            if unknown or "sigma" not in params or "sensitivity" not in params:
                raise ValueError(f"gaussian cost needs sigma= and sensitivity=, got {sorted(params)}")
            if self.currency == "zcdp":
                return acc.gaussian_zcdp(params["sigma"], params["sensitivity"])
            return acc.gdp_mu(params["sigma"], params["sensitivity"])
        if "epsilon" not in params:
            raise ValueError(f"{kind} cost needs epsilon=, got {sorted(params)}")
        extra = set(params) - {"epsilon", "sensitivity", "noise"}
        if extra:
            raise ValueError(f"{kind} cost: unexpected parameter(s) {sorted(extra)}")
        if kind == "exponential" or (kind == "report_noisy_max" and params.get("noise") == "gumbel"):
            return acc.exponential_zcdp(params["epsilon"])
        return acc.pure_dp_zcdp(params["epsilon"])

    def _check_kind(self, kind: str) -> None:
        """``kind`` is in :data:`KINDS` and priceable in this currency (GDP: Gaussian only, Thm 2.7)."""
        if kind not in KINDS:
            raise ValueError(f"unknown charge kind {kind!r}; expected one of {KINDS}")
        if self.currency == "gdp" and kind not in _GDP_KINDS:
            raise ValueError(
                f"a GDP ledger cannot price a {kind!r} charge (no exact mu-GDP guarantee); "
                "use a zCDP ledger for selections and Laplace noise"
            )

    # ------------------------------------------------------------------ state
    def _additive(self, cost: float) -> float:
        """The quantity that adds under composition: ρ (Prop. 3) or μ² (Dong et al. Cor. 3.3)."""
        return cost if self.currency == "zcdp" else cost * cost

    def _total_additive(self) -> float:
        """The total budget in the additive unit (ρ or μ², Prop. 3 / Cor. 3.3)."""
        return self._additive(self.total)

    def _from_additive(self, x: float) -> float:
        """Back from the additive unit: ρ, or μ = sqrt(Σμ²) (Dong et al. Cor. 3.3)."""
        return x if self.currency == "zcdp" else math.sqrt(max(x, 0.0))

    @property
    def spent(self) -> float:
        """Budget spent so far, composed: Σρ (Prop. 3) or sqrt(Σμ²) (Dong et al. Cor. 3.3)."""
        return self._from_additive(self._spent_additive)

    @property
    def remaining(self) -> float:
        """Largest single further charge affordable: total − Σρ, or sqrt(total² − Σμ²)."""
        return self._from_additive(max(self._total_additive() - self._spent_additive, 0.0))

    @property
    def entries(self) -> tuple[Charge, ...]:
        """The charges so far, in order (their costs compose by Prop. 3 / Cor. 3.3)."""
        return tuple(self._entries)

    def portion(self, fraction: float) -> float:
        """The cost that spends ``fraction`` of the *total* budget: ``f·ρ`` or ``sqrt(f)·μ``
        (so that shares compose back to the total under Prop. 3 / Cor. 3.3)."""
        f = acc._positive("fraction", fraction)
        if f > 1:
            raise ValueError(f"fraction must be in (0, 1], got {f!r}")
        return self.total * f if self.currency == "zcdp" else self.total * math.sqrt(f)

    def can_afford(self, cost: float) -> bool:
        """Whether :meth:`charge` would accept ``cost`` now (Prop. 3 / Cor. 3.3 composition)."""
        c = acc._positive("cost", cost)
        return self._spent_additive + self._additive(c) <= self._total_additive() * (1.0 + _RTOL)

    # ------------------------------------------------------------------ charging
    def charge(self, kind: str, cost: float, label: str, **params: Any) -> Charge:
        """Record a cost (in the ledger's currency) before the mechanism draws its noise.

        Raises ``ValueError`` — leaving the ledger unchanged — if ``kind`` is unknown or
        unpriceable in this currency, ``cost`` is not a finite positive number, the
        ``params`` given price the mechanism differently from ``cost`` (so a ledger
        never claims less than the noise drawn pays for), or the charge would overspend.
        Composition: ρ's add (Prop. 3); μ's add in squares (Dong et al. Cor. 3.3).
        """
        self._check_kind(kind)
        c = acc._positive("cost", cost)
        if not isinstance(label, str) or not label:
            raise ValueError(f"label must be a non-empty string, got {label!r}")
        priced = {k: v for k, v in params.items() if k in ("sigma", "sensitivity", "epsilon", "noise")}
        if kind != "other" and (("sigma" in priced and "sensitivity" in priced) or "epsilon" in priced):
            expected = self.cost(kind, **priced)
            if not math.isclose(expected, c, rel_tol=1e-9, abs_tol=0.0):
                raise ValueError(
                    f"charge {label!r}: cost {c!r} disagrees with the {kind} mechanism's parameters "
                    f"{priced} which cost {expected!r} {self.currency}"
                )
        if not self.can_afford(c):
            raise ValueError(
                f"charge {label!r} ({kind}) of {c:.6g} {self._unit} would overspend the budget: "
                f"spent {self.spent:.6g} of {self.total:.6g}, remaining {self.remaining:.6g}"
            )
        if self.parent is not None:  # the parent accepts it too, or nothing is recorded
            pkind, pcost = self._to_parent(kind, c, params)
            self.parent.charge(pkind, pcost, f"{self.label}: {label}", **params)
        entry = Charge(step=len(self._entries), kind=kind, label=label, cost=c, params=params)
        self._entries.append(entry)
        self._spent_additive += self._additive(c)
        return entry

    @property
    def _unit(self) -> str:
        """Name of the currency for messages: zCDP ρ (Prop. 1-3) or GDP μ."""
        return "rho (zCDP)" if self.currency == "zcdp" else "mu (GDP)"

    # ------------------------------------------------------------------ reporting
    def spent_dp(self, delta: float | None = None) -> tuple[float, float]:
        """The (ε, δ) actually spent: Prop. 4 / CKS on Σρ, or Cor. 2.13 on sqrt(Σμ²)."""
        d = self.delta if delta is None else acc.check_delta(delta)
        if d is None:
            raise ValueError("no delta: construct the ledger with delta= or pass delta to spent_dp()")
        if self._spent_additive == 0.0:
            return 0.0, d
        if self.currency == "zcdp":
            eps = acc.zcdp_to_dp(self.spent, d, conversion=self.conversion)
        else:
            eps = acc.gdp_epsilon(self.spent, d)
        # from_dp verified that its (un-margined) budget is (epsilon, delta)-DP and the
        # guarantee is monotone in the budget: a spend within it is (epsilon, delta)-DP too,
        # whatever the rounding of the conversion back (which matters near epsilon = 1e-15)
        if self._certified is not None and self.epsilon is not None:
            add, cert_delta = self._certified
            if d == cert_delta and self._spent_additive <= add:
                eps = min(eps, self.epsilon)
        return eps, d

    def report(self) -> pd.DataFrame:
        """One row per charge: ``step, label, kind, cost, share`` (of the total, in the
        additive unit ρ or μ²), ``cumulative`` (composed spend after the charge) and the
        mechanism parameters (``sigma``, ``sensitivity``, ``epsilon``, ...) as columns."""
        rows = []
        acc_add = 0.0
        tot = self._total_additive()
        for e in self._entries:
            acc_add += self._additive(e.cost)
            rows.append(
                {
                    "step": e.step,
                    "label": e.label,
                    "kind": e.kind,
                    "cost": e.cost,
                    "share": self._additive(e.cost) / tot,
                    "cumulative": self._from_additive(acc_add),
                    **dict(e.params),
                }
            )
        cols = ["step", "label", "kind", "cost", "share", "cumulative"]
        frame = pd.DataFrame(rows, columns=None if rows else cols)
        return frame

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: currency, total, spent, remaining, target and spent
        (ε, δ), conversion, and the list of charges (for a run's JSON sidecar)."""
        out: dict[str, Any] = {
            "currency": self.currency,
            "total": self.total,
            "spent": self.spent,
            "remaining": self.remaining,
            "target_epsilon": self.epsilon,
            "delta": self.delta,
            # GDP: the exact mu-GDP -> (eps, delta) curve (Dong et al. Cor. 2.13)
            "conversion": self.conversion if self.currency == "zcdp" else "gdp",
            "spent_epsilon": self.spent_dp()[0] if self.delta is not None else None,
            "charges": self.records(),
        }
        return out

    def records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per charge (``step, label, kind, cost`` and the mechanism
        parameters) — e.g. for ``SynthesisResult.ledger``; composition as in :meth:`spent`."""
        return [
            {"step": e.step, "label": e.label, "kind": e.kind, "cost": e.cost, **_jsonable(e.params)}
            for e in self._entries
        ]

    def __repr__(self) -> str:
        """Currency, composed spend and total (Prop. 3 / Cor. 3.3)."""
        return (
            f"BudgetLedger({self.currency}: spent {self.spent:.6g} of {self.total:.6g}, {len(self._entries)} charge(s))"
        )


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    """Charge parameters (σ, Δ of Prop. 1; ε of Prop. 2; cliques of Algorithm 1) as JSON values."""
    out = {}
    for k, v in params.items():
        if hasattr(v, "item") and callable(v.item):
            try:
                v = v.item()
            except (ValueError, TypeError):
                v = str(v)
        elif isinstance(v, tuple):
            v = list(v)
        elif not isinstance(v, (int, float, str, bool, list, dict, type(None))):
            v = str(v)
        out[k] = v
    return out
