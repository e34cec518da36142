"""PrivSyn §4.3 consistency post-processing (docs/notes/privsyn.md): weighted averages under uneven
budgets, non-negativity keeping totals, iterated."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from margsynth import Dataset, Domain
from margsynth.inference.consistency import (
    cut_nonnegative,
    intersection_closure,
    make_consistent,
    max_inconsistency,
    project_nonnegative,
)

DOM = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 5})

# named fixtures: clique sets of different shapes
SHAPES = {
    "tree": [("a", "b"), ("b", "c"), ("b", "d")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")],
    "singleton": [("a",), ("a", "b"), ("c",)],
    "nested": [("a", "b", "c"), ("a", "b"), ("c", "d")],
    "disjoint": [("a", "b"), ("c", "d")],
}


def _noisy(cliques, rng, scale=4.0, base=3.0):
    return [base + scale * rng.standard_normal(DOM.project(c).shape) for c in cliques]


def _michelot(v: np.ndarray) -> np.ndarray:
    """docs/notes/privsyn.md literally: zero the negatives, take the excess evenly off the positive
    cells, repeat."""
    x = v.astype(float).copy()
    for _ in range(10_000):
        neg = x < 0
        if not neg.any():
            return x
        excess = -x[neg].sum()
        x[neg] = 0.0
        pos = x > 0
        x[pos] -= excess / pos.sum()
    raise AssertionError("no convergence")


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("uneven", [False, True])
def test_shared_submarginals_equal_and_cells_nonnegative(shape, uneven):
    rng = np.random.default_rng(2 * sorted(SHAPES).index(shape) + int(uneven))
    cl = SHAPES[shape]
    tabs = _noisy(cl, rng)
    var = rng.uniform(0.5, 5.0, len(cl)) if uneven else None
    res = make_consistent(cl, tabs, DOM, variances=var)
    totals = [t.sum() for t in res.marginals]
    assert all(t.min() >= 0.0 for t in res.marginals)
    assert max_inconsistency(res.cliques, res.marginals, DOM) <= 1e-6 * max(totals)
    if shape != "disjoint":  # the empty set is shared: totals agree
        assert np.allclose(totals, totals[0], rtol=1e-6)
    for c, t in zip(res.cliques, res.marginals):
        assert t.shape == DOM.project(c).shape


def test_disjoint_cliques_still_get_common_total():
    res = make_consistent(SHAPES["disjoint"], _noisy(SHAPES["disjoint"], np.random.default_rng(0)), DOM)
    t = [m.sum() for m in res.marginals]
    assert t[0] == pytest.approx(t[1], rel=1e-9)


def test_weighted_average_uses_rho_over_g():
    """§4.3: the shared view becomes Σ w_i est_i with w_i ∝ ρ_i / g_i (variance ∝ 1/ρ_i)."""
    rng = np.random.default_rng(3)
    m1 = rng.uniform(5, 10, (3, 4))  # over (a, b): g = 4 cells per a-value
    m2 = rng.uniform(20, 40, (3,))  # over (a,):   g = 1
    rho1, rho2 = 2.0, 0.5
    m2 = m2 * m1.sum() / m2.sum()  # equal totals: the ∅ step is a no-op
    res = make_consistent([("a", "b"), ("a",)], [m1, m2], DOM, variances=[1 / rho1, 1 / rho2], max_iterations=1)
    w1, w2 = rho1 / 4, rho2 / 1
    expect = (w1 * m1.sum(axis=1) + w2 * m2) / (w1 + w2)
    np.testing.assert_allclose(res.marginals[1], expect, rtol=1e-12)
    np.testing.assert_allclose(res.marginals[0].sum(axis=1), expect, rtol=1e-12)
    # correction spread evenly over the 4 contributing cells of each a-value
    np.testing.assert_allclose(res.marginals[0] - m1, np.repeat(((expect - m1.sum(axis=1)) / 4)[:, None], 4, 1))


def test_axis_order_of_cliques_is_respected():
    rng = np.random.default_rng(5)
    m1 = rng.uniform(1, 5, (4, 3))  # over (b, a), not domain order
    m2 = rng.uniform(1, 5, (3, 2))  # over (a, c)
    res = make_consistent([("b", "a"), ("a", "c")], [m1, m2], DOM)
    np.testing.assert_allclose(res.marginals[0].sum(axis=0), res.marginals[1].sum(axis=1), atol=1e-8)


def test_true_marginals_are_a_fixed_point():
    rng = np.random.default_rng(9)
    ds = Dataset(np.stack([rng.integers(0, s, 500) for s in DOM.shape], axis=1), DOM)
    cl = SHAPES["cycle"]
    tabs = [ds.marginal(c).astype(float) for c in cl]
    res = make_consistent(cl, tabs, DOM, variances=[1, 2, 3, 4])
    for a, b in zip(tabs, res.marginals):
        np.testing.assert_allclose(a, b, atol=1e-9)
    assert res.iterations == 1


def test_empty_cells_and_negative_totals():
    """A marginal that is all noise around zero, with a negative total, ends at zeros
    consistent with a partner of positive total after iteration."""
    cl = [("a",), ("a", "b")]
    tabs = [np.array([-3.0, -1.0, 1.0]), np.zeros((3, 4))]
    res = make_consistent(cl, tabs, DOM)
    assert all(t.min() >= 0 for t in res.marginals)
    assert max_inconsistency(res.cliques, res.marginals, DOM) <= 1e-9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=30))
def test_projection_is_notes_iteration(values):
    v = np.array(values)
    if v.sum() <= 0:
        assert np.all(project_nonnegative(v) == 0)
        return
    p = project_nonnegative(v)
    assert p.min() >= 0
    assert p.sum() == pytest.approx(v.sum(), rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(p, _michelot(v), atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=30))
def test_cut_keeps_total_and_large_cells(values):
    v = np.array(values)
    c = cut_nonnegative(v)
    assert c.min() >= 0
    if v.sum() > 0:
        assert c.sum() == pytest.approx(v.sum(), rel=1e-9, abs=1e-9)
        # cells are only reduced, and a cell survives untouched unless smaller ones were all cut
        assert np.all(c <= np.maximum(v, 0) + 1e-12)


def test_closure_contains_empty_set_and_pairwise_intersections():
    clo = intersection_closure(SHAPES["cycle"], DOM)
    assert clo[0] == ()
    assert set(clo) == {(), ("a",), ("b",), ("c",), ("d",)}
    assert intersection_closure([("a", "b", "c"), ("b", "c", "d"), ("a", "b", "d")], DOM)[-1] in {
        ("a", "b"),
        ("b", "c"),
        ("b", "d"),
    }
    assert set(itertools.chain.from_iterable(intersection_closure(SHAPES["nested"], DOM))) <= {"a", "b", "c"}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cliques": [("a",)], "marginals": [np.ones(4)]}, "cells"),
        ({"cliques": [("a",), ("a",)], "marginals": [np.ones(3), np.ones(3)]}, "repeat"),
        ({"cliques": [("z",)], "marginals": [np.ones(3)]}, "unknown"),
        ({"cliques": [("a",)], "marginals": [np.ones(3)], "variances": [0.0]}, "variances"),
        ({"cliques": [("a",)], "marginals": [np.array([1.0, np.nan, 1.0])]}, "non-finite"),
        ({"cliques": [("a",)], "marginals": [np.ones(3)], "nonnegativity": "clip"}, "nonnegativity"),
        ({"cliques": [("a",)], "marginals": [np.ones(3)], "max_iterations": 0}, "max_iterations"),
        ({"cliques": [], "marginals": []}, "no marginals"),
    ],
)
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_consistent(domain=DOM, **kwargs)
