"""PrivSyn (Zhang et al. 2021): InDif, Eq. 1, Algorithm 1 (stops exactly when the
error estimate stops improving), Algorithm 2, the ledger, per-person contribution
bounding, and validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import margsynth.mechanisms.privsyn as ps
from margsynth import Dataset, Domain
from margsynth.inference.consistency import max_inconsistency
from margsynth.mechanisms.generators import GUMGenerator
from margsynth.mechanisms.privsyn import (
    PrivSyn,
    allocate_budget,
    combine_marginals,
    greedy_select,
    indif,
    measure_with_budgets,
    noise_error,
    truncate_contributions,
)
from margsynth.privacy import BudgetLedger
from margsynth.privacy.accounting import zcdp_rho
from margsynth.privacy.ledger import CALIBRATION_MARGIN

DOM = Domain.from_sizes({"a": 2, "b": 3, "c": 2, "d": 4, "e": 2})


def _data(n=3000, seed=0) -> Dataset:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (a ^ (rng.random(n) < 0.1)).astype(int)
    d = rng.integers(0, 4, n)
    e = (d > 1).astype(int)
    return Dataset(np.stack([a, b, c, d, e], 1), DOM)


DATA = _data()
FAST = PrivSyn(generator=GUMGenerator(max_rounds=15))


# ----------------------------------------------------------------------------- InDif
def test_indif_matches_definition_and_independence():
    m = DATA.marginal(("a", "b")).astype(float)
    n = m.sum()
    expect = np.abs(m - np.outer(m.sum(1), m.sum(0)) / n).sum()
    assert indif(DATA, "a", "b") == pytest.approx(expect)
    # exactly independent table: InDif 0
    codes = np.array(list(itertools.product(range(2), range(3))) * 5)
    ind = Dataset(np.c_[codes, np.zeros((30, 3), int)], DOM)
    assert indif(ind, "a", "b") == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="two different"):
        indif(DATA, "a", "a")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_indif_sensitivity_is_at_most_four(seed):
    """docs/notes/privsyn.md: adding (or removing) one record changes InDif by at most 4."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    codes = np.stack([rng.integers(0, s, n) for s in DOM.shape], 1)
    extra = np.array([[rng.integers(0, s) for s in DOM.shape]])
    small, big = Dataset(codes, DOM), Dataset(np.r_[codes, extra], DOM)
    for a, b in itertools.combinations(DOM.names, 2):
        assert abs(indif(big, a, b) - indif(small, a, b)) <= ps.INDIF_SENSITIVITY + 1e-9


# ----------------------------------------------------------------------------- Eq. 1
def test_allocation_sums_to_total_and_follows_two_thirds_power():
    cells = np.array([12, 100, 48372, 7])
    r = allocate_budget(cells, 0.37)
    assert math.fsum(r) == pytest.approx(0.37, rel=1e-14)
    np.testing.assert_allclose(r / r[0], (cells / cells[0]) ** (2 / 3))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 10_000), min_size=2, max_size=8), st.integers(0, 2**32 - 1))
def test_eq1_minimises_total_noise_error(cells, seed):
    """Eq. 1 is the argmin of Σ c_i sqrt(1/(π ρ_i)) subject to Σ ρ_i = ρ."""
    rho = 1.0
    best = noise_error(cells, allocate_budget(cells, rho)).sum()
    w = np.random.default_rng(seed).dirichlet(np.ones(len(cells)), size=20)
    for split in w:
        assert noise_error(cells, split * rho).sum() >= best * (1 - 1e-12)
    # closed form used by Algorithm 1
    s = np.sum(np.asarray(cells, float) ** (2 / 3))
    assert best == pytest.approx(s**1.5 / math.sqrt(math.pi * rho), rel=1e-12)


# ----------------------------------------------------------------------------- Algorithm 1
def test_greedy_stops_exactly_when_error_stops_improving():
    """Constructed: ρ = 1/π so the noise error of t selected marginals of c = 8 cells is
    (t·8^{2/3})^{3/2} = 8 t^{3/2}. With φ = (100, 60, 30, 10, 5):
    E0 = 205, E1 = 8 + 105 = 113, E2 = 8·2^{1.5} + 45 = 67.63, E3 = 8·3^{1.5} + 15 = 56.57,
    and adding a fourth gives 8·4^{1.5} + 5 = 69 ≥ 56.57: stop with three."""
    phi = [10, 100, 5, 60, 30]  # shuffled order: the answer is by value
    sel = greedy_select(phi, [8] * 5, 1 / math.pi)
    assert sel.selected == (1, 3, 4)
    np.testing.assert_allclose(sel.errors, [205, 113, 8 * 2**1.5 + 45, 8 * 3**1.5 + 15])
    assert sel.stopping_error == pytest.approx(69.0)


def test_greedy_stops_immediately_when_nothing_helps_and_takes_all_when_noise_is_free():
    none = greedy_select([1.0, 2.0], [100, 100], 1e-3)
    assert none.selected == () and none.errors == (3.0,)
    everything = greedy_select([5.0, 6.0, 7.0], [2, 2, 2], 1e12)
    assert sorted(everything.selected) == [0, 1, 2] and everything.stopping_error is None


def test_greedy_stop_on_equal_error():
    """Line 8 is `E_t >= E_{t-1}`: an exact tie stops. One pair, noise error = φ."""
    rho = 0.25
    phi = (1.0 / math.sqrt(math.pi * rho)) * (8.0 ** (2.0 / 3.0)) ** 1.5  # E1, in the same float arithmetic
    sel = greedy_select([phi], [8], rho)  # E1 = φ + 0 = E0
    assert sel.selected == () and sel.stopping_error == phi
    nudged = greedy_select([phi * (1 + 1e-12)], [8], rho)  # a hair more dependency error: take it
    assert nudged.selected == (0,)


def _literal_algorithm1(phi, cells, rho, sens=1.0):
    """Algorithm 1 line by line: explicit Eq. 1 allocation and error sums."""
    phi = list(phi)
    X, errors = [], [sum(phi)]
    while True:
        unsel = [i for i in range(len(phi)) if i not in X]
        if not unsel:
            return tuple(X), errors
        E = {}
        for i in unsel:
            S = X + [i]
            r = allocate_budget([cells[j] for j in S], rho)
            E[i] = noise_error([cells[j] for j in S], r, sens).sum() + sum(phi[j] for j in unsel if j != i)
        best = min(unsel, key=lambda i: (E[i], i))
        if E[best] >= errors[-1]:
            return tuple(X), errors
        X.append(best)
        errors.append(E[best])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-50, 3000), st.integers(2, 500)), min_size=1, max_size=9),
    st.floats(1e-4, 10),
    st.sampled_from([1.0, 2.0]),
)
def test_greedy_equals_literal_algorithm_1(items, rho, sens):
    phi = [p for p, _ in items]
    cells = [c for _, c in items]
    sel = greedy_select(phi, cells, rho, sensitivity=sens)
    X, errs = _literal_algorithm1(phi, cells, rho, sens)
    # same choices (up to exact ties between identical candidates, which rounding may order differently)
    assert [items[i] for i in sel.selected] == [items[i] for i in X]
    np.testing.assert_allclose(sel.errors, errs, rtol=1e-9, atol=1e-9)
    # strictly improving while running
    assert all(b < a for a, b in zip(sel.errors, sel.errors[1:]))


# ----------------------------------------------------------------------------- Algorithm 2
def test_combine_triangle_of_small_attributes():
    out = combine_marginals([("a", "b"), ("b", "c"), ("a", "c"), ("d", "e")], DOM)
    assert out == [("a", "b", "c"), ("d", "e")]
    # a γ smaller than the clique's 12 cells keeps the pairs
    assert combine_marginals([("a", "b"), ("b", "c"), ("a", "c")], DOM, gamma=11) == [
        ("a", "b"),
        ("b", "c"),
        ("a", "c"),
    ]


def test_combine_prefers_large_cliques_then_overlap_rule():
    k4 = list(itertools.combinations(["a", "b", "c", "d"], 2))
    assert combine_marginals(k4, DOM) == [("a", "b", "c", "d")]
    # γ = 20 forbids the 48-cell 4-clique and the 24-cell {b,c,d}/{a,b,d}... only
    # triangles of <= 20 cells: abc (12), acd (16), abd (24 > 20), bcd (24 > 20).
    out = combine_marginals(k4, DOM, gamma=20)
    assert out == [("a", "b", "c"), ("a", "c", "d"), ("b", "d")]


def test_combine_overlap_of_more_than_two_attributes_is_refused():
    """K4 over binary-ish attributes with γ allowing only triangles: abc is taken
    (S = {a,b,c}); abd shares 2 with S and is taken (S = {a,b,c,d}); acd and bcd share 3
    and are refused; the pairs inside accepted cliques are dropped, cd remains."""
    dom = Domain.from_sizes({"a": 2, "b": 2, "c": 2, "d": 2})
    k4 = list(itertools.combinations(dom.names, 2))
    assert combine_marginals(k4, dom, gamma=8) == [("a", "b", "c"), ("a", "b", "d"), ("c", "d")]


@pytest.mark.parametrize("gamma", [0, -5, float("nan"), True])
def test_combine_rejects_bad_gamma(gamma):
    with pytest.raises(ValueError, match="gamma"):
        combine_marginals([("a", "b")], DOM, gamma=gamma)


# ----------------------------------------------------------------------------- the mechanism
def test_every_noisy_quantity_goes_through_the_ledger(monkeypatch):
    calls = []
    real = ps.gaussian_mechanism

    def spy(values, **kw):
        assert isinstance(kw.get("ledger"), BudgetLedger)
        before = len(kw["ledger"].entries)
        out = real(values, **kw)
        assert len(kw["ledger"].entries) == before + 1  # charged by this call
        calls.append(kw["label"])
        return out

    monkeypatch.setattr(ps, "gaussian_mechanism", spy)
    res = FAST.run(DATA, 1.0, 1e-6, np.random.default_rng(0))
    m = len(DOM) * (len(DOM) - 1) // 2
    meas = res.extras["measurement"]
    assert len(calls) == m + len(meas.cliques)
    assert [r["label"] for r in res.ledger] == calls
    assert calls[:m] == [f"indif {a}×{b}" for a, b in itertools.combinations(DOM.names, 2)]
    assert {c.split(" ", 2)[2] for c in calls[m:]} == {"×".join(c) for c in meas.cliques}


@pytest.mark.parametrize("one_way", ["all", "uncovered", "none"])
def test_budget_allocation_sums_to_the_total(one_way):
    eps, delta = 2.0, 1e-7
    res = PrivSyn(one_way=one_way, generator=GUMGenerator(max_rounds=5)).run(DATA, eps, delta, np.random.default_rng(1))
    rho = zcdp_rho(eps, delta) * (1 - CALIBRATION_MARGIN)  # the ledger's budget
    costs = [r["cost"] for r in res.ledger]
    assert math.fsum(costs) == pytest.approx(rho, rel=1e-12)
    assert res.epsilon == pytest.approx(eps, rel=1e-9) and res.delta == delta
    meas = res.extras["measurement"]
    m = len(meas.pairs)
    assert math.fsum(costs[:m]) == pytest.approx(0.1 * rho, rel=1e-12)
    np.testing.assert_allclose(costs[m:], meas.rhos, rtol=1e-9)
    ones = [i for i, c in enumerate(meas.cliques) if len(c) == 1]
    multi = [i for i, c in enumerate(meas.cliques) if len(c) > 1]
    if one_way == "all":
        assert len(ones) == len(DOM)
    if ones and multi:
        assert math.fsum(meas.rhos[ones]) == pytest.approx(0.1 * rho, rel=1e-12)
        cells = np.array([DOM.size(meas.cliques[i]) for i in multi], float)
        np.testing.assert_allclose(meas.rhos[multi], allocate_budget(cells, 0.8 * rho))


def test_selection_uses_noisy_indif_and_selection_budget():
    res = FAST.run(DATA, 5.0, 1e-6, np.random.default_rng(2))
    meas = res.extras["measurement"]
    rho = zcdp_rho(5.0, 1e-6) * (1 - CALIBRATION_MARGIN)  # the ledger's budget
    again = greedy_select(meas.noisy_indif, [DOM.size(p) for p in meas.pairs], 0.8 * rho)
    assert again == meas.selection
    # the strong dependencies of the fixture are found
    assert {("a", "b"), ("a", "c"), ("d", "e")} <= set(meas.selected_pairs)
    frame = res.extras["selection"]
    assert list(frame.columns) == ["step", "chosen", "error"] and frame["error"].is_monotonic_decreasing


def test_output_quality_and_consistency_of_measurements():
    res = PrivSyn().run(DATA, 4.0, 1e-6, np.random.default_rng(3))
    meas = res.extras["measurement"]
    cl = [c for c, _ in meas.consistent]
    tabs = [t for _, t in meas.consistent]
    assert all(t.min() >= 0 for t in tabs)
    assert max_inconsistency(cl, tabs, DOM) <= 1e-6 * len(DATA)
    s = res.synthetic
    assert abs(len(s) - len(DATA)) < 0.05 * len(DATA)
    for c in [("a", "b"), ("d", "e"), ("a", "c")]:
        tv = 0.5 * np.abs(s.marginal(c) / len(s) - DATA.marginal(c) / len(DATA)).sum()
        assert tv < 0.05, c


def test_seeded_runs_are_reproducible():
    r1 = FAST.run(DATA, 1.0, 1e-6, np.random.default_rng(11))
    r2 = FAST.run(DATA, 1.0, 1e-6, np.random.default_rng(11))
    assert r1.synthetic.equals(r2.synthetic)


# ----------------------------------------------------------------------------- contribution bounding
def test_sensitivity_scales_with_max_records_per_person():
    k = 3
    r1 = FAST.run(DATA, 1.0, 1e-6, np.random.default_rng(4))
    r3 = PrivSyn(max_records_per_person=k, generator=GUMGenerator(max_rounds=15)).run(DATA, 1.0, 1e-6, np.random.default_rng(4))
    m = 10
    assert {r["sensitivity"] for r in r3.ledger[:m]} == {4.0 * k}
    assert {r["sensitivity"] for r in r3.ledger[m:]} == {float(k)}
    # same budget per InDif, k times the noise
    assert r3.ledger[0]["sigma"] == pytest.approx(k * r1.ledger[0]["sigma"])
    assert math.fsum(r["cost"] for r in r3.ledger) == pytest.approx(math.fsum(r["cost"] for r in r1.ledger))


def test_truncation_with_person_ids():
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 200, len(DATA))
    out = truncate_contributions(DATA, ids, 2, rng)
    _, counts = np.unique(ids, return_counts=True)
    assert len(out) == int(np.minimum(counts, 2).sum())
    res = PrivSyn(max_records_per_person=2, generator=GUMGenerator(max_rounds=5)).run(
        DATA, 1.0, 1e-6, np.random.default_rng(6), person_ids=ids
    )
    assert res.ledger[0]["sensitivity"] == 8.0
    with pytest.raises(ValueError, match="person_ids"):
        truncate_contributions(DATA, ids[:-1], 2, rng)
    with pytest.raises(ValueError, match="max_records_per_person"):
        truncate_contributions(DATA, ids, 0, rng)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "params, match",
    [
        ({"gamma": 0}, "gamma"),
        ({"gamma": -1.0}, "gamma"),
        ({"indif_fraction": 0.0}, "indif_fraction"),
        ({"indif_fraction": 0.6, "one_way_fraction": 0.4}, "cannot fit the budget"),
        ({"one_way_fraction": -0.1}, "one_way_fraction"),
        ({"max_records_per_person": 0}, "max_records_per_person"),
        ({"one_way": "some"}, "one_way"),
        ({"nonnegativity": "abs"}, "nonnegativity"),
        ({"generator": "gum"}, "generator"),
    ],
)
def test_bad_hyperparameters(params, match):
    with pytest.raises(ValueError, match=match):
        PrivSyn(**params)


def test_selection_that_cannot_fit_the_budget_draws_no_noise():
    ledger = BudgetLedger(0.01)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="cannot fit the budget"):
        measure_with_budgets(DATA, [("a", "b"), ("d",)], [0.008, 0.004], rng, ledger)
    assert rng.bit_generator.state == state and ledger.entries == ()
    out = measure_with_budgets(DATA, [("a", "b"), ("d",)], [0.006, 0.004], rng, ledger)
    assert [m.clique for m in out] == [("a", "b"), ("d",)]
    assert ledger.spent == pytest.approx(0.01)


@pytest.mark.parametrize(
    "args, match",
    [
        ((DATA, 0.0, 1e-6), "epsilon"),
        ((DATA, 1.0, 0.0), "delta"),
        ((DATA.df, 1.0, 1e-6), "Dataset"),
    ],
)
def test_bad_run_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        FAST.run(*args, np.random.default_rng(0))


def test_rng_must_be_generator_and_bad_greedy_inputs():
    with pytest.raises(ValueError, match="Generator"):
        FAST.run(DATA, 1.0, 1e-6, 0)
    with pytest.raises(ValueError, match="dependency errors"):
        greedy_select([1.0, 2.0], [4], 1.0)
    with pytest.raises(ValueError, match="rho"):
        greedy_select([1.0], [4], 0.0)
    with pytest.raises(ValueError, match="cells"):
        allocate_budget([0, 4], 1.0)


def test_one_way_fraction_zero_puts_one_way_marginals_into_eq1():
    res = PrivSyn(one_way_fraction=0.0, generator=GUMGenerator(max_rounds=3)).run(DATA, 1.0, 1e-6, np.random.default_rng(8))
    meas = res.extras["measurement"]
    rho = zcdp_rho(1.0, 1e-6) * (1 - CALIBRATION_MARGIN)  # the ledger's budget
    cells = [DOM.size(c) for c in meas.cliques]
    np.testing.assert_allclose(meas.rhos, allocate_budget(cells, 0.9 * rho), rtol=1e-9)
    assert any(len(c) == 1 for c in meas.cliques)
