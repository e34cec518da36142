"""Privacy of the preprocessing: every discovery step measures a histogram whose L2
sensitivity over add/remove-one-row neighbours is 1 (brute force over all neighbours of
small tables), a category of count 1 passes its threshold with probability exactly δ_c,
the ledger is charged what the report says, and :func:`synthesize` never spends more than
the requested (ε, δ)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from margsynth.privacy import BudgetLedger
from margsynth.tabular import Encoder, Schema, describe, fit_encoder, synthesize
from margsynth.tabular import discovery as dsc
from margsynth.tabular.encoder import check_table, domain_extremes


def neighbours(values: list, extra: list):
    """Every table at distance one: one row removed, or one row of ``extra`` added."""
    for i in range(len(values)):
        yield values[:i] + values[i + 1 :]
    for v in extra:
        yield values + [v]


def l2(a: dict, b: dict) -> float:
    keys = set(a) | set(b)
    return math.sqrt(sum((a.get(k, 0) - b.get(k, 0)) ** 2 for k in keys))


def test_category_counts_sensitivity_is_one():
    base = ["a", "b", "b", "c", "c", "c"]
    worst = 0.0
    for d in [base[:k] for k in range(len(base) + 1)]:
        for nb in neighbours(d, ["a", "b", "c", "new"]):
            dist = l2(dsc.category_counts(d), dsc.category_counts(nb))
            assert dist <= 1.0
            worst = max(worst, dist)
    assert worst == 1.0


def _l2(h, g) -> float:
    return float(np.sqrt(((np.asarray(h, dtype=float) - np.asarray(g, dtype=float)) ** 2).sum()))


def test_category_histogram_with_its_null_cell_has_sensitivity_one():
    """Keys and the null cell of one column: a row is in exactly one of them."""
    base = ["a", "b", None, "b", None, "c"]
    worst = 0.0
    for d in [base[:k] for k in range(len(base) + 1)]:
        for nb in neighbours(d, ["a", None, "new"]):
            h = {**dsc.category_counts(k for k in d if k is not None), None: sum(k is None for k in d)}
            g = {**dsc.category_counts(k for k in nb if k is not None), None: sum(k is None for k in nb)}
            worst = max(worst, l2(h, g))
    assert worst == 1.0


@pytest.mark.parametrize("integer", [True, False])
def test_range_histogram_sensitivity_is_one(integer):
    vals = (
        [0, 1, 3, 4, 7, 8, -1, -2, 100, 2**70] if integer else [0.0, 1e-40, 0.5, 1.0, 1.5, -0.25, -3.0, 1e30, 2.0**80]
    )
    extra = vals + ([5, -7, 2**63] if integer else [0.75, -1e-12, 7.5])
    worst = 0.0
    for d in [vals[:k] for k in range(0, len(vals) + 1, 3)]:
        h = dsc.range_histogram(np.array(d, dtype=float), integer)
        assert h.sum() == len(d)
        for nb in neighbours(d, extra):
            dist = _l2(h, dsc.range_histogram(np.array(nb, dtype=float), integer))
            assert dist <= 1.0
            worst = max(worst, dist)
    assert worst == 1.0


def test_range_bins_are_ordered_and_hold_their_values():
    for integer in (True, False):
        lower, upper = dsc.range_bins(integer)
        assert (lower < upper).all() and (upper[:-1] == lower[1:]).all()  # a partition into half-open bins
        ratio = (upper / np.where(lower > 0, lower, np.nan))[lower > 16]  # 2^(1/8), integer edges rounded up
        assert (ratio <= 2 ** (1 / 8) * (1 + 1 / 16) + 1e-9).all() and (ratio[-100:] <= 2 ** (1 / 8) + 1e-9).all()
        xs = [0, 1, 2, 3, 5, 11, 12, 1023, 1024, -1, -6, -1024] if integer else [0.0, 0.3, 1.0, 1.99, -0.7, -1e6, 12345.6]
        for x in xs:
            k = int(np.argmax(dsc.range_histogram(np.array([x], dtype=float), integer)))
            assert lower[k] <= x < upper[k], (x, lower[k], upper[k])
        if integer:  # every integer up to 11 is its own bin
            assert all(upper[k] - lower[k] == 1 for k in range(lower.size) if 0 <= lower[k] <= 11)


@pytest.mark.parametrize("integer", [True, False])
def test_fine_histogram_sensitivity_is_one(integer):
    """The distribution histogram with its cells below and above: a row in exactly one cell."""
    edges = dsc.fine_edges(0.0, 20.0, integer, cells=8) if integer else dsc.fine_edges(-1.0, 1.0, integer, cells=8)
    vals = [0, 3, 3, 7, 20, 11, 19, -5, 40] if integer else [-1.0, -0.5, 0.0, 0.999, 1.0, 0.25, -7.0, 3.0]
    worst = 0.0
    for d in [vals[:k] for k in range(len(vals) + 1)]:
        h = dsc.fine_histogram(np.array(d, dtype=float), edges)
        assert h.sum() == len(d)
        for nb in neighbours(d, vals):
            worst = max(worst, _l2(h, dsc.fine_histogram(np.array(nb, dtype=float), edges)))
    assert worst == 1.0


def test_new_category_passes_with_probability_delta():
    for sigma, delta in itertools.product([0.5, 3.0, 40.0], [1e-3, 1e-9, 1e-15]):
        tau = dsc.category_threshold(sigma, delta)
        assert norm.sf(tau - 1.0, scale=sigma) == pytest.approx(delta, rel=1e-6)


def test_discovery_finds_what_it_should():
    rng = np.random.default_rng(0)
    led = BudgetLedger.from_dp(50.0, 1e-6)
    keys = ["a"] * 5000 + ["b"] * 3000 + ["rare"] * 2
    kept, info = dsc.discover_categories(keys, rho=0.5, delta=1e-9, rng=rng, ledger=led, label="c", nulls=40)
    assert kept == ["a", "b"] and info["kept"] == 2 and abs(info["noisy_nulls"] - 40) < 10
    for integer, x in [(False, rng.uniform(5.0, 900.0, 5000)), (True, rng.integers(1956, 2014, 5000).astype(float))]:
        (i, j), _ = dsc.discover_range(x, rho=0.5, integer=integer, rng=rng, ledger=led, label="r")
        lower, upper = dsc.range_bins(integer)
        assert lower[i] <= x.min() and x.max() < upper[j]
        edges = dsc.fine_edges(0, 0, integer, cells=1024, range_index=(i, j))
        dist, _ = dsc.measure_distribution(x, edges, rho=0.5, rng=rng, ledger=led, label="d")
        lo, hi, clamped = dsc.refine_bounds(dist, integer)
        assert x.min() - 0.02 * np.ptp(x) <= lo <= np.quantile(x, 0.01) and np.quantile(x, 0.99) <= hi
        assert hi <= x.max() + 0.02 * np.ptp(x) + 1 and clamped < 0.01
        cuts = dsc.quantile_cuts(dist, lo, hi, 4, integer)
        # within the noise of a cumulative sum over the core and tail cells (sigma 1): a few percent
        assert np.allclose(cuts, np.quantile(x, [0.25, 0.5, 0.75]), rtol=0.04, atol=2.0)


def test_a_point_mass_in_a_discovered_range_keeps_its_value():
    """A top code holding most of an integer column (an income-to-poverty ratio's 501) inside
    a discovered range: the distribution cells follow the range step's noisy mass, so 501 is
    a cell of its own and the column's values decode to 501 as often as the data has it;
    without the mass the cells there are ~10 integers wide and spread it."""
    from margsynth.tabular import encoder_of, synthesize

    rng = np.random.default_rng(5)
    x = np.where(rng.random(7000) < 0.55, 501, rng.integers(0, 501, 7000)).astype(float)
    led = BudgetLedger.from_dp(10.0, 1e-6)
    (i, j), info = dsc.release_range(dsc.range_histogram(x, True), rho=0.004, integer=True, rng=rng, ledger=led,
                                     label="r", with_noisy=True)  # fmt: skip
    assert info["noisy"].size == j - i + 1
    cells = dsc.distribution_cells(len(x), 10.4)
    plain = dsc.fine_edges(0, 0, True, cells=cells, range_index=(i, j))
    weighted = dsc.fine_edges(0, 0, True, cells=cells, range_index=(i, j), range_mass=info["noisy"])
    assert not {501.0, 502.0} <= set(plain.tolist())
    assert {501.0, 502.0} <= set(weighted.tolist()) and weighted.size <= cells + 64
    frame = pd.DataFrame({"p": x.astype(int).astype(str)})
    schema = {"columns": [{"name": "p", "kind": "numeric", "type": "integer", "bounds": "discover"}]}
    _, report = synthesize(frame, schema, "independent", epsilon=10.0, delta=1e-6, seed=3, iters=5)
    enc = encoder_of(report)
    decoded = enc.to_text(enc.decode(enc.encode(frame), np.random.default_rng(0)))["p"]
    assert abs((decoded == "501").mean() - (x == 501).mean()) < 0.02


def test_no_window_reaches_from_empty_cells_across_zero():
    """A thin run of small non-negative values (80 at each of 0..15) that only a wide window
    finds: without the split at zero the earliest-ending passing window starts in the empty
    negative cells; with it, the range starts at the zero cell."""
    y = np.zeros(64)
    y[32:48] = 80.0  # cells 32.. hold the values 0, 1, 2, ...
    assert dsc.mass_edges(y, 38.0, 1e-4)[0] < 32
    assert dsc.mass_edges(y, 38.0, 1e-4, split=32)[0] == 32
    rng = np.random.default_rng(0)
    for seed in range(20):  # ages 0-99 (thin at both ends) at a small budget: never a negative bound
        g = np.random.default_rng(seed)
        x = np.clip(np.round(rng.normal(45, 22, 7000)), 0, 99)
        (i, j), info = dsc.discover_range(x, rho=6e-5, integer=True, rng=g, ledger=BudgetLedger(1.0), label="r")
        assert info["range"][0] >= 0.0


def test_refined_bounds_keep_the_range_steps_and_leave_empty_tails():
    """The distribution's bounds: a tail moves a bound only on its own mass (an empty tail next
    to thin values does not, whatever a wide window reaching into the values sums to), and never
    inside the range the range step found before its widening."""
    edges = np.concatenate([np.arange(0.0, 100.0), [128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0]])
    counts = np.zeros(edges.size + 1)
    counts[1:91] = 60.0  # values 0..89, thin everywhere (below a single cell's threshold)
    for seed in range(20):
        noise = np.random.default_rng(seed).normal(0.0, 38.0, counts.size)
        dist, _ = dsc.release_distribution(counts, edges, noise, 38.0, rho=1.0)
        lo, hi, _ = dsc.refine_bounds(dist, True, 1e-3, core=(0.0, 100.0), inner=(1.0, 84.0))
        assert hi < 100 and lo <= 0 and hi >= 84
    dist, _ = dsc.release_distribution(counts + np.r_[np.zeros(101), [0, 0, 900, 0, 0, 0]], edges,
                                       np.zeros(counts.size), 38.0, rho=1.0)  # fmt: skip
    assert dsc.refine_bounds(dist, True, 1e-3, core=(0.0, 100.0))[1] == 1023  # a tail holding values is found


def test_range_and_nulls_of_a_sparse_column():
    """23 values and 3,300 nulls at a small budget: no range bin stands out (reported as
    sparse), the null cell does."""
    rng = np.random.default_rng(3)
    x = rng.uniform(90, 432, 23)
    (i, j), info = dsc.discover_range(x, rho=1e-4, integer=False, rng=rng, ledger=BudgetLedger(1.0), label="s",
                                      nulls=3300)  # fmt: skip
    assert info["sparse"] and i == j and info["noisy_nulls"] > 3000


def test_non_negative_floats_never_get_a_negative_bound():
    rng = np.random.default_rng(1)
    x = np.where(rng.random(3000) < 0.4, 0.0, rng.exponential(3.0, 3000))
    for seed in range(4):
        led = BudgetLedger.from_dp(10.0, 1e-6)
        g = np.random.default_rng(seed)
        (i, j), _ = dsc.discover_range(x, rho=0.5, integer=False, rng=g, ledger=led, label="r")
        edges = dsc.fine_edges(0, 0, False, range_index=(i, j))
        dist, _ = dsc.measure_distribution(x, edges, rho=0.5, rng=g, ledger=led, label="d")
        lo, hi, _ = dsc.refine_bounds(dist, False)
        assert edges[0] == 0.0 and lo == 0.0 and hi > 5


def test_category_budget_keeps_a_tenth_of_a_small_table():
    """The issue of small tables: 344 rows at epsilon 2 -- a category of 10% of the rows is kept
    with probability >= 0.99, at a budget within the cap."""
    from margsynth.privacy.accounting import zcdp_rho
    from margsynth.tabular.encoder import CATEGORY_CAP, category_budget

    total = zcdp_rho(2.0, 1e-5, conversion="cks")
    sigma, fraction = category_budget(3, 344.0, total, 0.1 * 1e-5 * math.exp(-2.0) / 3)
    assert fraction <= 0.10 + 1e-12 and 3 / (2 * sigma**2) <= CATEGORY_CAP * total
    tau = dsc.category_threshold(sigma, 0.1 * 1e-5 * math.exp(-2.0) / 3)
    assert norm.sf(tau - 34.4, scale=sigma) >= 0.99


SCHEMA = {
    "columns": [
        {"name": "city", "kind": "categorical", "categories": "discover", "nullable": True},
        {"name": "price", "kind": "numeric", "type": "float", "bounds": "discover", "binning": "quantile", "bins": 4},
        {"name": "rooms", "kind": "numeric", "type": "integer", "bounds": "discover", "bins": 8, "nullable": True},
        {"name": "kind", "kind": "categorical", "categories": ["flat", "house"]},
    ]
}  # fmt: skip


def raw(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rooms = rng.integers(1, 7, n).astype(float)
    rooms[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "city": rng.choice(np.array(["Oslo", "Lima", "Pune", None], dtype=object), n, p=[0.5, 0.3, 0.15, 0.05]),
        "price": rng.lognormal(4, 0.5, n),
        "rooms": rooms,
        "kind": rng.choice(["flat", "house"], n),
    })  # fmt: skip


def test_fit_encoder_charges_what_it_reports():
    """An explicit share is spent exactly: the row count 2% of it, the rest an equal part per
    column with a step (a numeric column's range 40% of its part, its distribution 60%)."""
    led = BudgetLedger.from_dp(1.0, 1e-6)
    enc, rep = fit_encoder(raw(), SCHEMA, ledger=led, rng=np.random.default_rng(0), share=0.2, delta=1e-7)
    labels = [e.label for e in led.entries]
    assert labels == ["count rows", "discover categories of city", "discover the range of price",
                      "distribution of price", "discover the range of rooms", "distribution of rooms"]  # fmt: skip
    assert rep["steps"] == 5
    assert led.spent == pytest.approx(rep["rho"], rel=1e-12) == pytest.approx(led.portion(0.2), rel=1e-9)
    per_col = 0.98 * led.portion(0.2) / 3
    for name in ("city", "price", "rooms"):
        assert rep["columns"][name]["rho"] == pytest.approx(per_col, rel=1e-9)
    assert rep["rows"]["rho"] == pytest.approx(0.02 * led.portion(0.2), rel=1e-12)
    assert rep["delta"] == pytest.approx(1e-7) and rep["columns"]["city"]["delta"] == pytest.approx(1e-7)
    assert rep["columns"]["kind"]["rho"] == 0.0


def test_default_rule_adapts_to_the_table():
    """The default rule: the categories of a large table are cheap (a low kept fraction), and
    every step is on the ledger; nothing is spent beyond the rule's most."""
    from margsynth.tabular.encoder import discovery_budget

    led = BudgetLedger.from_dp(1.0, 1e-6)
    enc, rep = fit_encoder(raw(20000), SCHEMA, ledger=led, rng=np.random.default_rng(1), delta=1e-7)
    assert rep["categories"]["kept_fraction"] <= 0.01
    assert led.spent == pytest.approx(rep["rho"], rel=1e-12)
    assert rep["rho"] <= discovery_budget(Schema.coerce(SCHEMA), led.total)["most"]
    small = BudgetLedger.from_dp(1.0, 1e-6)
    _, rep_small = fit_encoder(raw(300), SCHEMA, ledger=small, rng=np.random.default_rng(1), delta=1e-7)
    assert rep_small["categories"]["kept_fraction"] > rep["categories"]["kept_fraction"]
    assert rep_small["rho"] > rep["rho"]  # a small table buys its categories with more of the budget


@pytest.mark.parametrize("rows,epsilon", [(300, 1.0), (3000, 1.0), (3000, 20.0), (20000, 1.0), (20000, 0.2)])
def test_numeric_share_finds_a_twentieth_of_the_rows(rows, epsilon):
    """The numeric columns' share under the default rule: at least 10%; above it only as far as
    the range steps need to find a range bin of 3% of the rows w.p. 0.99 (their sigma at most
    0.03 n / (z + 2.33)), and only within the caps; every step on the ledger, never beyond the
    rule's most."""
    from scipy.special import ndtri

    from margsynth.tabular.encoder import (
        DISCOVERY_CAP,
        NUMERIC_CAP,
        NUMERIC_FRACTION,
        NUMERIC_SHARE,
        RANGE_PART,
        discovery_budget,
        range_false_positive,
    )  # fmt: skip

    led = BudgetLedger.from_dp(epsilon, 1e-6)
    _, rep = fit_encoder(raw(rows), SCHEMA, ledger=led, rng=np.random.default_rng(2), delta=1e-7)
    share, n = rep["numeric_share"], rep["rows"]["rows"]
    assert NUMERIC_SHARE <= share <= NUMERIC_CAP
    assert led.spent == pytest.approx(rep["rho"], rel=1e-12)
    assert rep["rho"] <= discovery_budget(Schema.coerce(SCHEMA), led.total)["most"] <= led.total
    nums = ["price", "rooms"]
    for name in nums:
        rng_step = next(st for st in rep["columns"][name]["steps"] if st["step"] == "range")
        assert rng_step["rho"] == pytest.approx(RANGE_PART * share * led.total / len(nums), rel=1e-12)
    fp = range_false_positive(Schema.coerce(SCHEMA))  # the table's 1%, shared by its two range scans
    assert fp == pytest.approx(dsc.RANGE_FALSE_POSITIVE / 2)
    z = max(dsc.range_threshold(False, fp), dsc.range_threshold(True, fp)) + float(ndtri(0.99))
    sigma = max(st["sigma"] for name in nums for st in rep["columns"][name]["steps"] if st["step"] == "range")
    if share > NUMERIC_SHARE + 1e-12:  # raised: exactly to the criterion, or to a cap
        at_cap = share == pytest.approx(NUMERIC_CAP) or rep["rho"] == pytest.approx(DISCOVERY_CAP * led.total)
        assert at_cap or sigma == pytest.approx(NUMERIC_FRACTION * n / z, rel=1e-9)
        assert sigma >= NUMERIC_FRACTION * n / z * (1 - 1e-9)
    else:  # the floor already meets it
        assert sigma <= NUMERIC_FRACTION * n / z * (1 + 1e-9)
    if rows == 300:
        assert share > NUMERIC_SHARE  # a small table at a small budget spends more on its ranges


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (0.05, 1e-9), (8.0, 1e-3)])
def test_synthesize_never_spends_more_than_asked(epsilon, delta):
    out, rep = synthesize(raw(300), SCHEMA, "independent", epsilon=epsilon, delta=delta, seed=3, iters=5,
                          synthetic_records=50)  # fmt: skip
    assert len(out) == 50 and list(out.columns) == [c["name"] for c in SCHEMA["columns"]]
    assert rep["epsilon"] <= epsilon and rep["delta"] <= delta
    led = rep["ledger"]
    costs = [c["cost"] for c in led["charges"]]
    assert math.fsum(costs) == pytest.approx(led["spent"], rel=1e-12)
    assert led["spent"] == rep["budget"]["rho_spent"] and led["spent"] <= led["total"]
    assert led["spent_epsilon"] == rep["epsilon"]
    pre = [c for c in led["charges"] if not c["label"].startswith("independent:")]
    assert math.fsum(c["cost"] for c in pre) == pytest.approx(rep["preprocessing"]["rho"], rel=1e-12)
    assert rep["preprocessing"]["preprocessing_share"] == pytest.approx(rep["preprocessing"]["rho"] / led["total"])
    # delta: the conversion's share plus e^eps times the category thresholds'
    b = rep["budget"]
    assert rep["delta"] == pytest.approx(b["delta_conversion"] + math.exp(rep["epsilon"]) * b["delta_categories"])


def test_same_seed_same_bytes():
    a, ra = synthesize(raw(300), SCHEMA, "independent", epsilon=1.0, delta=1e-6, seed=7, iters=5, synthetic_records=60)
    b, rb = synthesize(raw(300), SCHEMA, "independent", epsilon=1.0, delta=1e-6, seed=7, iters=5, synthetic_records=60)
    assert a.to_csv(index=False) == b.to_csv(index=False) and ra["encoder"] == rb["encoder"]


@pytest.mark.parametrize(
    "epsilon,delta", [(1e-15, 1e-9), (1e-15, 1 - 1e-9), (0.7, 1 - 1e-12), (2.0, 1e-300), (50.0, 1e-6)]
)
def test_extreme_budgets_are_kept_or_refused_before_noise(epsilon, delta):
    """At the corners of (epsilon, delta) a run either stays within the request or is refused
    with ValueError before any draw (the mechanism's epsilon is computed first)."""
    try:
        out, rep = synthesize(raw(200), SCHEMA, "independent", epsilon=epsilon, delta=delta, seed=1, iters=3, synthetic_records=30)
    except ValueError as exc:
        assert "epsilon" in str(exc) or "rho" in str(exc)
        return
    assert len(out) == 30 and rep["epsilon"] <= epsilon and rep["delta"] <= delta


def test_new_category_release_rate_matches_delta():
    """Monte Carlo over the implementation itself: a key of count 1 is kept at rate delta."""
    rng = np.random.default_rng(11)
    led = BudgetLedger(1e9)
    delta, trials = 0.05, 4000
    kept = sum(
        dsc.discover_categories(["x"], rho=0.02, delta=delta, rng=rng, ledger=led, label="t")[0] == ["x"]
        for _ in range(trials)
    )
    assert abs(kept / trials - delta) <= 4 * math.sqrt(delta * (1 - delta) / trials)


@pytest.mark.parametrize("mechanism", ["independent", "adagrid", "mst"])
@pytest.mark.parametrize("epsilon,delta", [(0.05, 1e-9), (1.0, 1e-6), (8.0, 1e-12)])
def test_the_mechanism_spends_what_preprocessing_left(mechanism, epsilon, delta):
    """One ledger for the run: the mechanism is handed the rest after preprocessing (a zCDP
    sub-budget, or GDP mu = sqrt(2 rho) for the adaptive grid) and spends it; the run's
    ledger is spent to within 1e-9 of its total and never above it, not by one ulp."""
    kw = {"iters": 3} if mechanism != "mst" else {"iters": 3, "select_iters": 3}
    _, rep = synthesize(raw(200), SCHEMA, mechanism, epsilon=epsilon, delta=delta, seed=2, synthetic_records=20, **kw)
    led, mb = rep["ledger"], rep["mechanism_budget"]
    pre = math.fsum(c["cost"] for c in led["charges"] if not c["label"].startswith(f"{mechanism}:"))
    rest = led["total"] - pre
    assert mb["currency"] == ("gdp" if mechanism == "adagrid" else "zcdp")
    handed = mb["total"] ** 2 / 2 if mb["currency"] == "gdp" else mb["total"]
    assert handed == pytest.approx(rest, rel=1e-10) and handed <= rest
    assert led["spent"] <= led["total"] and led["spent"] >= led["total"] * (1 - 1e-9)
    assert rep["epsilon"] <= epsilon


# ----------------------------------------------------------------------------- quantile cuts in wide bounds
def test_isotonic_fit_is_the_least_squares_monotone_fit():
    """Against the min-max formula z_i = max_{k<=i} min_{j>=i} mean(y[k..j]) (brute force)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 7, 15):
        for _ in range(30):
            y = rng.normal(0, 2, n).cumsum() if rng.random() < 0.5 else rng.normal(0, 1, n)
            want = [max(min(y[k : j + 1].mean() for j in range(i, n)) for k in range(i + 1)) for i in range(n)]
            z = dsc.isotonic_fit(y)
            assert np.allclose(z, want) and (np.diff(z) >= -1e-12).all()
            assert math.isclose(z.sum(), y.sum(), rel_tol=1e-9, abs_tol=1e-9)  # blocks keep their means


def test_quantile_cuts_stay_where_the_data_are():
    """Given bounds [0, 1000], data in [0, 100]: the quantile cuts of the private distribution
    are where the data are (the noise of the empty stretch adds no mass there)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 100, 5000)
    for seed in range(6):
        led = BudgetLedger.from_dp(10.0, 1e-6)
        g = np.random.default_rng(seed)
        edges = dsc.fine_edges(0.0, 1000.0, False, cells=dsc.distribution_cells(5000, 16.0))
        dist, info = dsc.measure_distribution(x, edges, rho=0.002, rng=g, ledger=led, label="d")
        assert [e.cost for e in led.entries] == [pytest.approx(0.002, rel=1e-12)]
        cuts = dsc.quantile_cuts(dist, 0.0, 1000.0, 16, False)
        assert len(cuts) >= 10 and sum(c > 110 for c in cuts) <= 2


def test_wide_bounds_through_synthesize_cost_the_same():
    """One distribution step for a column with given bounds and quantile bins, charged its part
    of an explicit share, and the bins found hold the data."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"v": rng.uniform(0, 100, 4000), "k": rng.choice(["a", "b"], 4000)})
    schema = {"columns": [{"name": "v", "kind": "numeric", "type": "float", "bounds": [0, 1000], "binning": "quantile",
                           "bins": 16}, {"name": "k", "kind": "categorical", "categories": ["a", "b"]}]}  # fmt: skip
    out, rep = synthesize(df, schema, "independent", epsilon=1.0, delta=1e-6, seed=0, iters=5, preprocessing_share=0.1)
    charges = [c for c in rep["ledger"]["charges"] if c["label"] == "distribution of v"]
    assert len(charges) == 1 and charges[0]["cost"] == pytest.approx(0.98 * 0.1 * rep["ledger"]["total"], rel=1e-9)
    cuts = rep["encoder"]["columns"][0]["cuts"]  # cells spread over the given bounds: ~10 of them hold the data
    assert len(cuts) >= 8 and sum(c > 110 for c in cuts) <= 1
    assert rep["epsilon"] <= 1.0 and rep["delta"] <= 1e-6


def test_integer_bounds_are_cells_of_their_own():
    """Given integer bounds: ``lo`` and ``hi`` are cells of their own (a data-independent grid),
    so a top-coded value holding most of the mass decodes to itself, not spread over its cell."""
    for lo, hi, cells in [(0, 501, 55), (0, 501, 1024), (-9000, 1341000, 100), (2, 4, 8), (0, 1, 8)]:
        e = dsc.fine_edges(float(lo), float(hi), True, cells=cells)
        assert e[0] == lo and e[-1] == hi + 1 and (np.diff(e) > 0).all() and (e == np.round(e)).all()
        if hi - lo >= 2:
            assert e[1] == lo + 1 and e[-2] == hi  # [lo, lo+1) and [hi, hi+1)
    # an income-to-poverty ratio top-coded at 501 for 57% of the rows (as ma2018's POVPIP)
    rng = np.random.default_rng(0)
    x = np.where(rng.random(6000) < 0.57, 501, rng.integers(0, 501, 6000))
    df = pd.DataFrame({"v": x.astype(str)})
    schema = {"columns": [{"name": "v", "kind": "numeric", "type": "integer", "bounds": [0, 501],
                           "binning": "quantile", "bins": 4}]}  # fmt: skip
    for seed in range(3):
        led = BudgetLedger.from_dp(1.0, 1e-5)
        enc, _ = fit_encoder(df, schema, ledger=led, rng=np.random.default_rng(seed), share=0.01)
        out = enc.decode(enc.encode(df), np.random.default_rng(seed))["v"].to_numpy()
        assert abs((out == 501).mean() - (x == 501).mean()) < 0.05, (out == 501).mean()  # before: about 8%


def test_a_column_too_sparse_to_locate_is_written_as_null():
    """23 values among 3,300 nulls at a tiny budget: the values are coded null, and whatever
    codes the mechanism's noise puts in the column's (unlocated) bin decode to null too."""
    rng = np.random.default_rng(3)
    v = np.full(3323, "", dtype=object)
    v[:23] = [f"{x:.1f}" for x in rng.uniform(90, 432, 23)]
    df = pd.DataFrame({"v": v, "k": rng.choice(["a", "b"], v.size)})
    schema = {"columns": [{"name": "v", "kind": "numeric", "type": "float", "bounds": "discover", "bins": 4,
                           "nullable": True}, {"name": "k", "kind": "categorical", "categories": ["a", "b"]}]}  # fmt: skip
    out, rep = synthesize(df, schema, "independent", epsilon=0.05, delta=1e-6, seed=0)
    assert rep["preprocessing"]["columns"]["v"].get("values_coded_as_null")
    enc = Encoder.from_dict(rep["encoder"])
    col = enc.columns[0]
    codes = pd.DataFrame({"v": np.arange(col.size).repeat(5), "k": 0})  # every code, the bins included
    assert enc.decode(codes, np.random.default_rng(0))["v"].isna().all() and out["v"].isna().all()


@pytest.mark.parametrize("lo, hi, integer, cells", [(0, 9999, True, 55), (0, 9999, True, 475), (-9000, 1341000, True, 55),
                                                    (16.3, 52864.7, False, 55), (0.0, 99.5, False, 20),
                                                    (1900, 2020, True, 100), (1e-12, 1e-10, False, 20),
                                                    (1e20, 1e21, False, 30), (-5.0, -1.0, False, 16)])  # fmt: skip
def test_cells_within_given_bounds_are_as_fine_as_both_grids(lo, hi, integer, cells):
    """Given bounds: the cells cover the bounds, are no wider than ``cells`` even cells (rounded
    up to an integer), nor than the range bin they lie in, and number at most about 1.5 cells
    plus one per range bin inside the bounds."""
    e = dsc.fine_edges(lo, hi, integer, cells=cells)
    top = hi + 1 if integer else hi
    assert e[0] == lo and e[-1] == top and (np.diff(e) > 0).all()
    if integer:
        assert (e == np.round(e)).all()
    even = (top - lo) / cells
    assert np.diff(e).max() <= (math.ceil(even) if integer else even * (1 + 1e-9))
    lower, upper = dsc.range_bins(integer)
    floor = 0.0 if integer else (top - lo) / dsc.FINE_CELLS
    k = np.clip(np.searchsorted(lower, e[:-1], side="right") - 1, 0, lower.size - 1)  # the range bin of each cell
    inside = (lower[k] >= lo) & (upper[k] <= top) & (np.abs(lower[k]) >= floor) & (np.abs(upper[k]) >= floor)
    assert (e[1:][inside] <= upper[k][inside]).all()  # no cell crosses a range-grid edge inside the bounds
    bins = int(((upper > lo) & (lower < top)).sum())
    assert e.size - 1 <= 1.5 * cells + bins + 2


def test_a_heavy_tailed_column_in_wide_bounds_keeps_its_percentiles():
    """Survey weights (log-normal, median about 80) with the bounds [1, 9999] a data dictionary
    gives: decoded through the encoder, their 20 percentile bins (as SDNist bins them) are within
    a total variation of 0.06 of the data's (even cells over the bounds gave 0.16: a handful of
    cells held every value)."""
    rng = np.random.default_rng(0)
    x = np.clip(np.round(np.exp(rng.normal(4.4, 0.7, 7000))), 1, 9999).astype(int)
    df = pd.DataFrame({"w": x.astype(str)})
    schema = {"columns": [{"name": "w", "kind": "numeric", "type": "integer", "bounds": [1, 9999],
                           "binning": "quantile", "bins": "auto"}]}  # fmt: skip
    q = np.quantile(x, np.linspace(0, 1, 21)[1:-1])
    for seed in range(3):
        led = BudgetLedger.from_dp(1.0, 1e-5)
        enc, _ = fit_encoder(df, schema, ledger=led, rng=np.random.default_rng(seed), share=0.05)
        out = enc.decode(enc.encode(df), np.random.default_rng(seed))["w"].to_numpy()
        real, dec = (np.bincount(np.searchsorted(q, v, side="right"), minlength=20) for v in (x, out))
        assert 0.5 * np.abs(real - dec).sum() / x.size <= 0.06
        assert len(enc.columns[0].cuts) >= 10  # distinct quantile cuts (before: 3 or 4)


def test_an_other_bucket_is_kept_only_when_its_private_count_stands_out():
    """A discovered set whose every value is kept gets no (empty) ``other`` bucket in at least
    95% of the runs (the test of the noisy rest of the rows, at 5% over the table's discovered
    sets): its rare values — none here, an unseen one when encoding — are coded as the kept
    category of the largest noisy count, and nothing decodes to ``other``. A set with 20% of its
    rows in rare categories keeps its bucket."""
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({
        "puma": rng.choice(["p1", "p2", "p3", "p4", "p5"], n, p=[0.3, 0.2, 0.2, 0.15, 0.15]),
        "job": np.where(rng.random(n) < 0.2, [f"rare{i}" for i in range(n)], rng.choice(["a", "b", "c"], n)),
    })  # fmt: skip
    schema = {"columns": [{"name": c, "kind": "categorical", "categories": "discover"} for c in frame.columns]}
    dropped, seeds = 0, 60
    for seed in range(seeds):
        led = BudgetLedger.from_dp(1.0, 1e-5)
        enc, rep = fit_encoder(frame, schema, ledger=led, rng=np.random.default_rng(seed), delta=1e-7)
        puma, job = enc.columns
        assert job.other_label == "other" and job.rare is None  # 20% of the rows in rare values
        if puma.other_label is None:
            dropped += 1
            assert puma.categories[puma.rare] == "p1" == rep["columns"]["puma"]["rare_coded_as"]
            assert puma.size == 5 and Encoder.from_dict(enc.to_dict()).columns[0] == puma
            unseen = enc.encode(pd.DataFrame({"puma": ["p2", "p9"], "job": ["a", "b"]})).codes[:, 0]
            assert unseen.tolist() == [1, puma.rare]
            out = enc.decode(pd.DataFrame({"puma": np.arange(5), "job": 0}), np.random.default_rng(0))
            assert "other" not in set(out["puma"])
    assert dropped >= 0.95 * seeds - 2 * math.sqrt(0.05 * 0.95 * seeds), dropped


def test_null_codes_appear_by_chance_in_at_most_five_percent_of_tables():
    """Ten columns without nulls, their nullability discovered: some column gets a null code
    in at most 5% of the runs (each of the 11 is tested at 0.45%; before, each at 5%: 40% of the
    runs), and a column with 10% nulls keeps its null code."""
    rng = np.random.default_rng(1)
    n = 5000
    frame = pd.DataFrame({f"c{i}": rng.integers(0, 50, n).astype(str) for i in range(10)})
    frame["gaps"] = np.where(rng.random(n) < 0.1, "", rng.integers(0, 50, n).astype(str))
    schema = {"columns": [{"name": c, "kind": "numeric", "type": "integer", "bounds": "discover",
                           "nullable": "discover"} for c in frame.columns]}  # fmt: skip
    spurious, seeds = 0, 200
    for seed in range(seeds):
        led = BudgetLedger.from_dp(1.0, 1e-5)
        enc, _ = fit_encoder(frame, schema, ledger=led, rng=np.random.default_rng(seed), share=0.2)
        spurious += any(c.nullable for c in enc.columns[:10])
        assert enc.columns[10].nullable
    assert spurious / seeds <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / seeds), spurious


def test_values_too_few_to_locate_are_written_as_null_in_a_column_without_nulls():
    """Monthly prices (no empty cell) in 500 rows beside nine other numeric columns at ε = 1:
    the range step finds no window (the budget is too small for the table), and instead of
    bounds drawn by the noise anywhere on the grid (prices of -1.3e10 before), the column is
    written as null, with the warning; the domain the checks saw before any noise allowed it."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({f"p{i}": [f"{v:.2f}" for v in rng.uniform(10, 200, 500)] for i in range(10)})
    schema = {"columns": [{"name": c, "kind": "numeric", "type": "float", "bounds": "discover"} for c in frame]}
    out, rep = synthesize(frame, schema, "independent", epsilon=1.0, delta=1e-5, seed=0)
    lost = [c for c, r in rep["preprocessing"]["columns"].items() if r.get("values_coded_as_null")]
    assert lost  # at this budget some (here: every) column cannot be located
    for c in lost:
        assert out[c].isna().all() and rep["preprocessing"]["columns"][c]["nullable"] is True
    assert any("could not be located" in line for line in describe(rep["preprocessing"]))
    enc = Encoder.from_dict(rep["encoder"])
    _, largest = domain_extremes(Schema.from_dict(schema), check_table(frame, Schema.from_dict(schema)))
    assert all(c.size <= largest[c.name].size for c in enc.columns)
    for c in set(frame) - set(lost):  # located columns keep their values within the bounds
        assert out[c].notna().all()


def test_tail_cells_find_a_thin_tail_the_range_scan_misses():
    """A thin lower tail (ages 0-17 spread over many grid bins) that no range window passes at a
    small budget is found by the distribution's octave-wide tail cells."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.integers(0, 18, 1500), rng.integers(18, 90, 5700), np.full(6000, 501)]).astype(float)
    lower, _ = dsc.range_bins(True)
    i, j = (int(k) for k in dsc._bin_of(np.array([30.0, 501.0]), lower))  # a range that missed the tail
    edges = dsc.fine_edges(0, 0, True, cells=64, range_index=(i, j))
    assert edges[0] == 0.0 and {16.0, 8.0, 1.0} <= set(edges.tolist())  # tail cells down to zero, integral
    assert np.all(edges == np.round(edges)) and np.all(np.diff(edges) > 0)
    led = BudgetLedger(10.0)
    dist, _ = dsc.measure_distribution(x, edges, rho=0.05, rng=rng, ledger=led, label="d")
    lo, hi, clamped = dsc.refine_bounds(dist, True)
    assert lo <= 2 and clamped < 0.02
    cuts = dsc.quantile_cuts(dist, lo, hi, 8, True)
    assert cuts == sorted(set(cuts)) and lo < cuts[0] and cuts[-1] <= hi + 1



def test_the_printed_bounds_are_short_and_the_report_keeps_every_digit():
    """A float bound is printed with six significant digits, an integral one as an integer;
    the report (the sidecar) keeps the number itself."""
    rep = {"columns": {"DENSITY": {"kind": "numeric", "steps": [{"step": "range"}], "bins": 5,
                                   "bounds": [1448.1546878700494, 3711.514726096745], "binning": "quantiles",
                                   "clamped_share": 0.0, "null_rate": 0.0, "nullable": False, "rho": 1e-3},
                       "AGEP": {"kind": "numeric", "steps": [{"step": "range"}], "bins": 7, "bounds": [4.0, 83.0],
                                "binning": "quantiles", "clamped_share": 0.0, "null_rate": 0.0, "nullable": False, "rho": 1e-3}}}  # fmt: skip
    lines = describe(rep)
    assert any("DENSITY: bounds [1448.15, 3711.51] found" in line for line in lines), lines
    assert any("AGEP: bounds [4, 83] found" in line for line in lines), lines
    assert rep["columns"]["DENSITY"]["bounds"][0] == 1448.1546878700494
