"""BudgetLedger: composition in zCDP (Prop. 3) and GDP (Dong et al. Cor. 3.3), refusal
of overspending, the report and the final (ε, δ)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from margsynth.privacy import BudgetLedger
from margsynth.privacy import accounting as acc
from margsynth.privacy.ledger import CALIBRATION_MARGIN


def test_zcdp_ledger_mst_split_spends_exactly_the_target():
    """MST's appendix: ρ from (ε, δ), split into thirds (Gaussian, Alg. 6 selections, Gaussian)."""
    eps, delta = 1.0, 1e-9
    led = BudgetLedger.from_dp(eps, delta)
    rho = led.total
    assert rho == acc.zcdp_rho(eps, delta) * (1 - CALIBRATION_MARGIN)  # the largest rho, less the safety margin
    sigma = acc.gaussian_sigma(rho / 3)  # σ = sqrt(3/(2ρ))
    led.charge("gaussian", led.cost("gaussian", sigma=sigma, sensitivity=1.0), "one-way", sigma=sigma, sensitivity=1.0)
    d = 14
    e_sel = acc.exponential_epsilon(rho / 3 / (d - 1))
    for i in range(d - 1):
        led.charge("exponential", led.cost("exponential", epsilon=e_sel), f"select {i}", epsilon=e_sel)
    led.charge("gaussian", led.cost("gaussian", sigma=sigma, sensitivity=1.0), "two-way", sigma=sigma, sensitivity=1.0)
    assert led.spent == pytest.approx(rho, rel=1e-12)
    assert led.remaining == pytest.approx(0.0, abs=1e-12 * rho)
    e_spent, d_spent = led.spent_dp()
    assert d_spent == delta
    assert e_spent == pytest.approx(eps, rel=1e-9)
    with pytest.raises(ValueError, match="overspend"):
        led.charge("exponential", led.cost("exponential", epsilon=e_sel), "one too many", epsilon=e_sel)
    assert len(led.entries) == d + 1


def test_zcdp_composition_is_additive():
    led = BudgetLedger(1.0)
    costs = [0.1, 0.25, 0.05, 0.3]
    for i, c in enumerate(costs):
        led.charge("other", c, f"step {i}")
    assert led.spent == pytest.approx(sum(costs))
    assert led.remaining == pytest.approx(1 - sum(costs))
    rep = led.report()
    assert list(rep["cost"]) == costs
    assert list(rep["cumulative"]) == pytest.approx(list(pd.Series(costs).cumsum()))
    assert rep["share"].sum() == pytest.approx(sum(costs))


def test_nist_mst_two_measurements_spend_exactly_epsilon():
    """NIST-MST: two Algorithm-1 calls at Eq. 5.1's σ are 1/σ²-zCDP = the (ε, δ) budget."""
    eps, delta = 0.3, 2e-12
    led = BudgetLedger.from_dp(eps, delta)
    sigma = math.sqrt(1.0 / led.total)  # Eq. 5.1 with the ledger's calibration margin
    assert sigma == pytest.approx(acc.eq51_sigma(eps, delta), rel=1e-9)
    for label in ("one-way", "selected"):
        led.charge("gaussian", led.cost("gaussian", sigma=sigma, sensitivity=1.0), label, sigma=sigma, sensitivity=1.0)
    assert led.spent_dp()[0] == pytest.approx(eps, rel=1e-9) and led.spent_dp()[0] <= eps


def test_gdp_ledger_composes_in_squares():
    eps, delta = 1.0, 2.5e-5
    led = BudgetLedger.from_dp(eps, delta, currency="gdp")
    assert led.total == pytest.approx(acc.gdp_mu_for_dp(eps, delta))
    mus = [0.1, 0.2, 0.05]
    for i, m in enumerate(mus):
        led.charge("gaussian", m, f"round {i}")
    assert led.spent == pytest.approx(math.sqrt(sum(m * m for m in mus)))
    assert led.remaining == pytest.approx(math.sqrt(led.total**2 - sum(m * m for m in mus)))
    assert led.spent_dp()[0] == pytest.approx(acc.gdp_epsilon(led.spent, delta))
    # the AGM example: 66 equal measurements spend the whole budget
    led2 = BudgetLedger.from_dp(eps, delta, currency="gdp")
    share = led2.portion(1 / 66)
    sigma = 150 / share
    for i in range(66):
        led2.charge(
            "gaussian", led2.cost("gaussian", sigma=sigma, sensitivity=150), f"m{i}", sigma=sigma, sensitivity=150
        )
    assert led2.spent == pytest.approx(led2.total, rel=1e-12)
    assert led2.spent_dp()[0] == pytest.approx(eps, rel=1e-9)
    with pytest.raises(ValueError, match="overspend"):
        led2.charge("gaussian", 1e-6, "extra")


def test_portion_zcdp():
    led = BudgetLedger(0.9)
    assert led.portion(1 / 3) == pytest.approx(0.3)
    for _ in range(3):
        led.charge("other", led.portion(1 / 3), "third")
    assert led.remaining == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="fraction"):
        led.portion(1.5)


def test_overspend_leaves_ledger_unchanged():
    led = BudgetLedger(0.5)
    led.charge("other", 0.4, "big")
    before = (led.spent, len(led.entries))
    with pytest.raises(ValueError, match=r"would overspend.*spent 0\.4 of 0\.5"):
        led.charge("other", 0.2, "too big")
    assert (led.spent, len(led.entries)) == before
    assert led.can_afford(0.1) and not led.can_afford(0.11)


def test_cost_must_match_parameters():
    led = BudgetLedger(1.0)
    with pytest.raises(ValueError, match="disagrees"):
        led.charge("gaussian", 0.01, "cheat", sigma=1.0, sensitivity=1.0)  # really 0.5
    with pytest.raises(ValueError, match="disagrees"):
        led.charge("exponential", 0.01, "cheat", epsilon=1.0)  # really 1/8
    assert led.entries == ()


def test_cost_prices():
    z = BudgetLedger(10.0)
    assert z.cost("gaussian", sigma=2.0, sensitivity=1.0) == pytest.approx(1 / 8)
    assert z.cost("exponential", epsilon=2.0) == pytest.approx(0.5)
    assert z.cost("laplace", epsilon=2.0) == pytest.approx(2.0)
    assert z.cost("permute_and_flip", epsilon=2.0) == pytest.approx(2.0)
    assert z.cost("report_noisy_max", epsilon=2.0, noise="gumbel") == pytest.approx(0.5)
    assert z.cost("report_noisy_max", epsilon=2.0, noise="laplace") == pytest.approx(2.0)
    g = BudgetLedger(10.0, currency="gdp")
    assert g.cost("gaussian", sigma=4.0, sensitivity=2.0) == 0.5
    with pytest.raises(ValueError, match="GDP"):
        g.cost("exponential", epsilon=1.0)
    with pytest.raises(ValueError, match="GDP"):
        g.charge("laplace", 0.1, "lap")
    with pytest.raises(ValueError, match="sigma"):
        z.cost("gaussian", sigma=1.0)
    with pytest.raises(ValueError, match="caller"):
        z.cost("other")


def test_report_and_dict():
    led = BudgetLedger.from_dp(1.0, 1e-6)
    empty = led.report()
    assert list(empty.columns)[:6] == ["step", "label", "kind", "cost", "share", "cumulative"]
    assert len(empty) == 0
    assert led.spent_dp() == (0.0, 1e-6)
    led.charge(
        "gaussian",
        led.cost("gaussian", sigma=30.0, sensitivity=1.0),
        "measure",
        sigma=30.0,
        sensitivity=1.0,
        cliques=("a", "b"),
    )
    led.charge("exponential", led.cost("exponential", epsilon=0.05), "select", epsilon=0.05)
    rep = led.report()
    assert list(rep["label"]) == ["measure", "select"]
    assert rep.loc[0, "sigma"] == 30.0 and rep.loc[1, "epsilon"] == 0.05
    d = json.loads(json.dumps(led.to_dict()))
    assert d["currency"] == "zcdp" and d["delta"] == 1e-6 and d["target_epsilon"] == 1.0
    assert d["spent"] == pytest.approx(1 / 1800 + 0.05**2 / 8)
    assert d["spent_epsilon"] == pytest.approx(acc.zcdp_to_dp(d["spent"], 1e-6))
    assert [c["label"] for c in d["charges"]] == ["measure", "select"]
    assert d["charges"][0]["cliques"] == ["a", "b"]
    assert led.records() == led.to_dict()["charges"]
    assert "BudgetLedger(zcdp" in repr(led)


def test_cks_ledger_converts_with_cks():
    led = BudgetLedger.from_dp(1.0, 1e-9, conversion="cks")
    assert led.total == acc.zcdp_rho(1.0, 1e-9, conversion="cks") * (1 - CALIBRATION_MARGIN)
    led.charge("other", led.total, "all")
    assert led.spent_dp()[0] == pytest.approx(1.0, rel=1e-9) and led.spent_dp()[0] <= 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"total": 0.0}, "total"),
        ({"total": -1.0}, "total"),
        ({"total": float("nan")}, "NaN"),
        ({"total": float("inf")}, "finite"),
        ({"total": 1.0, "currency": "rdp"}, "currency"),
        ({"total": 1.0, "conversion": "x"}, "conversion"),
        ({"total": 1.0, "delta": 1.0}, "delta"),
        ({"total": 1.0, "delta": 0.0}, "delta"),
        ({"total": 1.0, "epsilon": -1.0}, "epsilon"),
    ],
)
def test_constructor_validation(kwargs, match):
    total = kwargs.pop("total")
    with pytest.raises(ValueError, match=match):
        BudgetLedger(total, **kwargs)


@pytest.mark.parametrize(
    "eps, delta, match",
    [
        (0.0, 1e-9, "epsilon"),
        (-1, 1e-9, "epsilon"),
        (float("nan"), 1e-9, "epsilon"),
        (1.0, 0.0, "delta"),
        (1.0, 1.0, "delta"),
        (1.0, float("nan"), "delta"),
    ],
)
def test_from_dp_validation(eps, delta, match):
    with pytest.raises(ValueError, match=match):
        BudgetLedger.from_dp(eps, delta)


def test_charge_validation():
    led = BudgetLedger(1.0)
    for bad in (0.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="cost"):
            led.charge("other", bad, "x")
    with pytest.raises(ValueError, match="kind"):
        led.charge("wavelet", 0.1, "x")
    with pytest.raises(ValueError, match="label"):
        led.charge("other", 0.1, "")
    with pytest.raises(ValueError, match="delta"):
        BudgetLedger(1.0).spent_dp()
    assert led.entries == ()


# ----------------------------------------------------------------------------- sub-budgets
def test_sub_budget_charges_its_parent_at_once_and_never_alone():
    parent = BudgetLedger.from_dp(1.0, 1e-9)
    parent.charge("exponential", parent.cost("exponential", epsilon=0.1), "preprocessing", epsilon=0.1)
    child = parent.sub(parent.remaining, "mst")
    assert child.currency == "zcdp" and child.total == pytest.approx(parent.remaining, rel=1e-10)
    assert child.total < parent.remaining and child.delta == parent.delta and child.parent is parent
    cost = child.portion(0.5)
    sigma = acc.gaussian_sigma(cost)
    child.charge("gaussian", cost, "one-way", sigma=sigma, sensitivity=1.0)
    assert [e.label for e in parent.entries] == ["preprocessing", "mst: one-way"]
    assert parent.entries[-1].cost == cost and dict(parent.entries[-1].params)["sigma"] == sigma
    # a charge the parent cannot pay is refused by both, and neither records it
    other = parent.sub(parent.remaining, "other")
    other.charge("other", other.total, "all of it")
    n_parent, n_child = len(parent.entries), len(child.entries)
    with pytest.raises(ValueError, match="overspend"):
        child.charge("gaussian", cost, "more", sigma=sigma, sensitivity=1.0)
    assert (len(parent.entries), len(child.entries)) == (n_parent, n_child)


def test_gdp_sub_budget_of_a_zcdp_ledger_costs_mu_squared_over_two():
    """Gaussian noise of sigma with sensitivity D is D/sigma-GDP and D^2/(2 sigma^2)-zCDP:
    a GDP sub-budget of rho holds mu = sqrt(2 rho), and spending it all spends rho."""
    parent = BudgetLedger.from_dp(2.0, 1e-6, conversion="cks")
    rho = parent.portion(0.75)
    child = parent.sub(rho, "adagrid", currency="gdp")
    assert child.currency == "gdp" and child.total == pytest.approx(math.sqrt(2 * rho), rel=1e-10)
    k = 7
    sigma = math.sqrt(k) / child.total  # k measurements of sensitivity 1 compose to mu = total
    for i in range(k):
        child.charge("gaussian", child.cost("gaussian", sigma=sigma, sensitivity=1.0), f"m{i}", sigma=sigma,
                     sensitivity=1.0)  # fmt: skip
    assert child.spent == pytest.approx(child.total, rel=1e-12)
    assert parent.spent == pytest.approx(rho, rel=1e-9) and parent.spent <= rho
    assert all(e.cost == pytest.approx(1 / (2 * sigma**2), rel=1e-12) for e in parent.entries)
    with pytest.raises(ValueError, match="GDP ledger cannot hold a zCDP sub-budget"):
        BudgetLedger.from_dp(1.0, 1e-6, currency="gdp").sub(0.1, "x", currency="zcdp")


@pytest.mark.parametrize("parts", [1, 2, 3, 7, 10, 97, 1000])
@pytest.mark.parametrize("epsilon", [1e-3, 1.0, 40.0])
def test_a_fully_spent_sub_budget_never_takes_its_parent_past_its_total(parts, epsilon):
    """Preprocessing in equal steps, then the rest handed on and spent in equal shares (each
    accepted within the ledger's rounding slack): the parent's spent is <= its total exactly."""
    parent = BudgetLedger.from_dp(epsilon, 1e-9)
    pre = parent.portion(0.1)
    for i in range(3):
        parent.charge("other", pre / 3, f"pre {i}")
    child = parent.sub(parent.total - pre, "m")
    share = child.portion(1 / parts)
    for i in range(parts):
        child.charge("other", share, f"part {i}")
    assert parent.spent <= parent.total and parent.spent >= parent.total * (1 - 1e-9)
    assert parent.spent_dp()[0] <= epsilon
