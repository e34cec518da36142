"""GUM (PrivSyn §5): convergence on noise-free marginals, generator from any set of
noisy marginals, the min-cost-flow option of §5.1, trace, stopping rule, validation."""

from __future__ import annotations

import time

import numpy as np
import pytest

from margsynth import Dataset, Domain
from margsynth.inference.gum import GUM, gum, normalise_marginals
from margsynth.privacy.measure import measure_marginals

DOM = Domain.from_sizes({"a": 4, "b": 5, "c": 3, "d": 6, "e": 2})


def _correlated(n: int, seed: int = 1) -> Dataset:
    """A small dataset with strong pairwise and higher-order structure."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 5
    c = (b + rng.integers(0, 2, n)) % 3
    d = (a * c + rng.integers(0, 3, n)) % 6
    e = ((d > 2).astype(int) ^ (rng.random(n) < 0.1)).astype(int)
    return Dataset(np.stack([a, b, c, d, e], 1), DOM)


DATA = _correlated(5000)
CLIQUES = {
    "tree": [("a", "b"), ("b", "c"), ("a", "d"), ("d", "e")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "e")],
    "dense": [("a", "b"), ("b", "c"), ("a", "d"), ("c", "d"), ("d", "e"), ("a", "c", "d"), ("b", "e")],
}


def _tv(ds: Dataset, clique, target) -> float:
    t = np.asarray(target, dtype=float).ravel()
    return 0.5 * np.abs(ds.marginal(clique, flatten=True) / len(ds) - t / t.sum()).sum()


@pytest.mark.parametrize("shape", sorted(CLIQUES))
def test_noise_free_marginals_converge_within_one_percent_tv(shape):
    margs = [(c, DATA.marginal(c)) for c in CLIQUES[shape]]
    res = GUM().synthesize(DOM, margs, len(DATA), np.random.default_rng(0))
    assert len(res.synthetic) == len(DATA)
    for c, m in margs:
        assert _tv(res.synthetic, c, m) <= 0.01, (shape, c)
    # the trace reports the same thing and improves on the independent start
    tr = res.trace
    assert list(tr.columns) == ["round", "alpha", "changed", "changed_fraction", "mean_tv", "max_tv", "seconds"]
    assert tr["round"].iloc[0] == 0 and tr["max_tv"].iloc[-1] <= 0.01
    assert tr["mean_tv"].iloc[-1] < tr["mean_tv"].iloc[0] / 10


@pytest.mark.parametrize("order", ["given", "error"])
def test_visit_orders_converge(order):
    margs = [(c, DATA.marginal(c)) for c in CLIQUES["dense"]]
    res = GUM(order=order).synthesize(DOM, margs, len(DATA), np.random.default_rng(3))
    assert max(_tv(res.synthetic, c, m) for c, m in margs) <= 0.01


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_change_and_duplicate_extremes_both_converge(beta):
    margs = [(c, DATA.marginal(c)) for c in CLIQUES["cycle"]]
    res = GUM(beta=beta, max_rounds=80).synthesize(DOM, margs, len(DATA), np.random.default_rng(1))
    # changing only (beta=0) converges more slowly than duplicating on this cycle
    assert max(_tv(res.synthetic, c, m) for c, m in margs) <= 0.03


def test_min_cost_flow_update_converges():
    margs = [(c, DATA.marginal(c)) for c in CLIQUES["tree"]]
    res = GUM(update="mcf").synthesize(DOM, margs, len(DATA), np.random.default_rng(2))
    assert max(_tv(res.synthetic, c, m) for c, m in margs) <= 0.015


def test_min_cost_flow_moves_minimally_on_one_marginal():
    """§5.1, Figure 2: one MCF update on a 1-way marginal moves exactly the L1/2 surplus."""
    dom = Domain.from_sizes({"age": 3, "g": 2})
    codes = np.array([[0, 0]] * 3 + [[1, 0]] * 3 + [[2, 1]] * 4)
    start = Dataset(codes, dom)
    target = np.array([5.0, 2.0, 3.0])  # 0.3/0.3/0.4 -> 0.5/0.2/0.3
    res = GUM(update="mcf", alpha=1.0, max_rounds=1, order="given").synthesize(
        dom, [(("age",), target)], 10, np.random.default_rng(0), initial=start
    )
    np.testing.assert_array_equal(res.synthetic.marginal("age"), target)
    assert res.trace["changed"].iloc[1] == 2
    # only the marginal's attribute changed: g is untouched
    np.testing.assert_array_equal(res.synthetic.column("g"), start.column("g"))


def test_mcf_refuses_huge_graphs():
    dom = Domain.from_sizes({"x": 300, "y": 300})
    rng = np.random.default_rng(0)
    target = rng.uniform(0, 2, 90_000)
    with pytest.raises(ValueError, match="max_mcf_arcs"):
        GUM(update="mcf", max_mcf_arcs=1000).synthesize(dom, [(("x", "y"), target)], 5000, rng)


def test_generator_from_noisy_measurements_of_another_mechanism():
    """GUM takes Algorithm 1's NoisyMarginal log (MST / NIST-MST style), negative cells included."""
    rng = np.random.default_rng(4)
    log = measure_marginals(DATA, [(c, 1.0) for c in CLIQUES["cycle"]] + [(("e",), 1.0)], sigma=5.0, rng=rng)
    assert any(m.estimate.min() < 0 for m in log)
    res = gum(DOM, log, len(DATA), np.random.default_rng(5), max_rounds=30)
    for m in log:
        assert _tv(res.synthetic, m.clique, np.maximum(m.estimate, 0)) <= 0.05


def test_accepts_mapping_and_flat_arrays():
    margs = {c: DATA.marginal(c, flatten=True) for c in CLIQUES["tree"]}
    out = normalise_marginals(margs, DOM)
    assert [c for c, _ in out] == CLIQUES["tree"]
    res = gum(DOM, margs, 1000, np.random.default_rng(0), max_rounds=5)
    assert len(res.synthetic) == 1000  # any n: targets are rescaled


def test_initialisation_from_one_way_marginals_and_deterministic_seed():
    margs = [(("a", "b"), DATA.marginal(("a", "b")))]
    r1 = gum(DOM, margs, 3000, np.random.default_rng(7), max_rounds=10)
    r2 = gum(DOM, margs, 3000, np.random.default_rng(7), max_rounds=10)
    assert r1.synthetic.equals(r2.synthetic)
    assert not r1.synthetic.equals(gum(DOM, margs, 3000, np.random.default_rng(8), max_rounds=10).synthetic)
    # round 0 is the 1-way initialisation: 1-way counts rounded exactly to n, the
    # uncovered attribute uniform
    init = GUM(max_rounds=1, tol=1.0).synthesize(DOM, margs, 3000, np.random.default_rng(7))
    assert init.trace["round"].tolist() == [0, 1]
    zero = GUM(alpha_min=0.0, alpha=1e-9, max_rounds=1).synthesize(DOM, margs, 3000, np.random.default_rng(7))
    np.testing.assert_array_equal(zero.synthetic.marginal("e"), [1500, 1500])
    a_target = DATA.marginal("a") * 3000 / len(DATA)
    assert np.abs(zero.synthetic.marginal("a") - a_target).max() < 1.0


def test_stopping_rule():
    margs = [(c, DATA.marginal(c)) for c in CLIQUES["tree"]]
    res = GUM(tol=0.05, max_rounds=50).synthesize(DOM, margs, len(DATA), np.random.default_rng(0))
    assert res.converged and res.rounds < 50
    assert res.trace["changed_fraction"].iloc[-1] < 0.05
    assert (res.trace["changed_fraction"].iloc[1:-1] >= 0.05).all()
    capped = GUM(tol=0.0, max_rounds=3).synthesize(DOM, margs, len(DATA), np.random.default_rng(0))
    assert capped.rounds == 3 and not capped.converged and len(capped.trace) == 4


def test_alpha_decays_to_floor():
    margs = [(c, DATA.marginal(c)) for c in CLIQUES["tree"]]
    res = GUM(alpha=0.8, alpha_decay=0.5, alpha_min=0.1, tol=0.0, max_rounds=6).synthesize(
        DOM, margs, 500, np.random.default_rng(0)
    )
    np.testing.assert_allclose(res.trace["alpha"].iloc[1:], [0.8, 0.4, 0.2, 0.1, 0.1, 0.1])


def test_vectorised_speed():
    """200k records, three 2-way marginals, 5 rounds: seconds, not minutes (no per-record loop)."""
    big = _correlated(200_000, seed=3)
    margs = [(c, big.marginal(c)) for c in CLIQUES["tree"][:3]]
    t0 = time.perf_counter()
    GUM(max_rounds=5, tol=0.0).synthesize(DOM, margs, len(big), np.random.default_rng(0))
    assert time.perf_counter() - t0 < 10.0


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": 0.0},
        {"alpha": 1.5},
        {"beta": -0.1},
        {"beta": 1.1},
        {"alpha_decay": 0.0},
        {"max_rounds": 0},
        {"tol": -1.0},
        {"update": "ipf"},
        {"growth_cap": 0.0},
        {"order": "sorted"},
        {"alpha": float("nan")},
        {"lawful": "yes"},
        {"lawful": 1},
    ],
)
def test_bad_hyperparameters(params):
    with pytest.raises(ValueError, match="GUM"):
        GUM(**params)


@pytest.mark.parametrize(
    "marginals, n, match",
    [
        ([(("a", "z"), np.ones(4))], 10, "unknown"),
        ([(("a",), np.ones(5))], 10, "cells"),
        ([(("a",), np.array([1.0, np.inf, 1.0, 1.0]))], 10, "non-finite"),
        ([], 10, "no marginals"),
        ([(("a",), np.ones(4))], 0, "positive integer"),
        ([("a",)], 10, "pair"),
    ],
)
def test_bad_inputs(marginals, n, match):
    with pytest.raises(ValueError, match=match):
        gum(DOM, marginals, n, np.random.default_rng(0))


def test_rng_must_be_a_generator():
    with pytest.raises(ValueError, match="Generator"):
        gum(DOM, [(("a",), np.ones(4))], 10, 0)


@pytest.mark.parametrize("size", [1, 7, 300, 1 << 16, (1 << 16) + 1, 580_464, 1 << 20])
def test_radix_ranking_equals_numpy_stable_sort(size):
    """The ranking helpers are numpy's stable argsort and searchsorted, element for element
    (so GUM's moves, hence its output, do not depend on which one runs)."""
    from margsynth.inference.gum import _first_positions, _stable_argsort

    rng = np.random.default_rng(size)
    for n in (0, 1, 50, 5_000):
        keys = rng.integers(0, size, n).astype(np.int64)
        if n:  # the extremes of the range
            keys[0], keys[-1] = 0, size - 1
        order = _stable_argsort(keys, size)
        assert np.array_equal(order, np.argsort(keys, kind="stable"))
        srt = keys[order]
        assert np.array_equal(_first_positions(srt, size)[srt], np.searchsorted(srt, srt, side="left"))
        probe = rng.integers(0, size, 20)
        assert np.array_equal(_first_positions(srt, size)[probe], np.searchsorted(srt, probe, side="left"))
