"""Exact decomposition of AEMC (margsynth.metrics.aemc.decompose): ∞-weighted
components, the relaxed ordinal attribute with its dual certificate, the
residual potentials behind it, and worker processes."""

from __future__ import annotations

import numpy as np
import pytest

from margsynth.metrics.aemc import AEMCProblem, solve
from margsynth.metrics.aemc.decompose import relax_axis, residual_potentials, solve_decomposed
from margsynth.metrics.aemc.distance import AxisMetric
from margsynth.metrics.aemc.flow import integer_network, ortools_min_cost_flow
from margsynth.metrics.aemc.graph import neighbour_graph
from margsynth.metrics.aemc.instances import random_problem

RTOL = 1e-9


def _star(name: str, k: int, w: float) -> AxisMetric:
    return AxisMetric(name, k, "tree", parents=(np.zeros(k, dtype=np.int64),), edge=w / 2)


def _grid_problem(rng, k_line: int = 5, k1: int = 4, k2: int = 3, scale: int = 6, delta: float = 1.0) -> AEMCProblem:
    """Baltimore-like: a month-like line between two categorical stars (the costs of docs/notes/mgd_baltimore.md)."""
    axes = (_star("n", k1, 0.33), AxisMetric("m", k_line, "line", step=0.33), _star("i", k2, 0.33))
    shape = (k1, k_line, k2)
    q = rng.poisson(rng.uniform(0, scale), size=shape).astype(float)
    p = rng.poisson(rng.uniform(0, scale), size=shape).astype(float)
    return AEMCProblem(p, q, axes, delta, 1.0, label="grid")


def test_relaxation_is_exact_whether_certified_at_once_or_after_merging():
    """300 random month-like instances: the decomposition always equals the
    whole problem's optimum as an exact rational; the first round (every month
    alone) is an upper bound; some instances are certified at once, others only
    after merging months across failed boundaries."""
    rng = np.random.default_rng(11)
    at_once = merged = 0
    for _ in range(300):
        prob = _grid_problem(rng, k_line=int(rng.integers(2, 6)), k1=int(rng.integers(2, 5)),
                             k2=int(rng.integers(2, 4)), delta=float(rng.choice([0.0, 1.0, 2.0])))
        whole = solve(prob, "flow")
        res = solve_decomposed(prob, min_bins=0)
        assert res is not None and res.exact and res.details["relaxed"] == "m"
        assert res.details["exact_cost"] == whole.details["exact_cost"]
        rounds = res.details["rounds"]
        assert rounds[0]["pieces_solved"] == prob.shape[1] and rounds[0]["cost"] >= whole.details["exact_cost"]
        if len(rounds) == 1:
            at_once += 1
            assert rounds[0]["violated_arcs"] == 0 and "certificate" in res.details
        else:
            merged += 1
            assert rounds[0]["violated_arcs"] > 0 and rounds[0]["closed_boundaries"]
            assert all(r["cost"] >= whole.details["exact_cost"] for r in rounds)
    assert at_once > 30 and merged > 30, (at_once, merged)


def test_auto_uses_a_certified_decomposition_on_large_problems():
    rng = np.random.default_rng(3)
    prob = _grid_problem(rng, k_line=6, k1=100, k2=90, scale=4, delta=2.0)  # 54,000 bins
    auto = solve(prob, "auto", workers=2)
    assert auto.solver == "flow-decomposed", auto.details
    assert "certificate" in auto.details and len(auto.details["rounds"]) == 1
    assert auto.details["exact_cost"] == solve(prob, "flow").details["exact_cost"]


def test_auto_merges_pieces_when_the_certificate_fails():
    """Above the size threshold, a relaxation that is far from exact ends with
    the whole attribute in one piece, and says what the first round found."""
    # month moves are the only cheap way here: each month's surplus sits next to the next month's deficit
    k1, km, k2 = 100, 6, 90  # 54,000 bins >= DECOMPOSE_MIN_BINS
    axes = (_star("n", k1, 0.33), AxisMetric("m", km, "line", step=0.33), _star("i", k2, 0.33))
    q = np.zeros((k1, km, k2))
    p = np.zeros((k1, km, k2))
    q[:, 1::2, :] = 10.0
    p[:, 0::2, :] = 10.0
    prob = AEMCProblem(p, q, axes, 0.0, 1.0, label="shifted")
    r = solve(prob, "auto", workers=1)
    assert r.solver == "flow-decomposed" and r.details["relaxed"] == "m"
    first, last = r.details["rounds"][0], r.details["rounds"][-1]
    assert first["violated_arcs"] > 0 and first["cost"] == pytest.approx(2 * p.sum())  # without month moves: remove + add
    assert last["blocks"] == 1 and r.details["open_boundaries"] == []
    assert r.cost == pytest.approx(0.33 * p.sum())  # every unit moves one month
    assert r.details["exact_cost"] == solve(prob, "flow").details["exact_cost"]


def test_infinite_weight_components_match_the_whole_problem():
    """∞-weighted attributes split the problem exactly (no certificate needed)."""
    rng = np.random.default_rng(5)
    n = 0
    for _ in range(400):
        prob = random_problem(rng)
        if not any(a.kind == "forbid" and a.k > 1 for a in prob.axes):
            continue
        res = solve_decomposed(prob)
        if res is None:
            continue
        n += 1
        assert res.exact and res.solver == "flow-decomposed"
        assert res.cost == pytest.approx(solve(prob, "flow").cost, rel=RTOL, abs=1e-12)
        assert res.cost == pytest.approx(solve(prob, "lp").cost, rel=1e-7, abs=1e-9)
    assert n >= 40


def test_worker_processes_give_the_same_bytes():
    rng = np.random.default_rng(8)
    prob = _grid_problem(rng, k_line=6, k1=6, k2=5, scale=10)
    one = solve_decomposed(prob, min_bins=0, workers=1)
    two = solve_decomposed(prob, min_bins=0, workers=2, parallel_min_bins=0)
    assert two.details["workers"] == 2
    assert one.details["rounds"] == two.details["rounds"]
    assert one.details["exact_cost"] == two.details["exact_cost"]


def test_residual_potentials_certify_optimal_flows_and_expose_non_optimal_ones():
    rng = np.random.default_rng(9)
    for _ in range(30):
        prob = _grid_problem(rng)
        g = neighbour_graph(prob)
        cost, cap, sup = integer_network(g, 100, 1)
        _, flow = ortools_min_cost_flow(g.tail, g.head, cap, cost, sup)
        d = residual_potentials(g.tail, g.head, cost, cap, flow, g.n_nodes)
        assert d is not None and (d <= 0).all()
        rc = cost + d[g.tail] - d[g.head]
        assert (rc[flow < cap] >= 0).all() and (rc[flow > 0] <= 0).all()  # reduced-cost optimality (both residual directions)
    # a non-optimal flow: one unit around a positive cycle makes the reverse cycle negative
    tail, head = np.array([0, 1]), np.array([1, 0])
    cost, cap, flow = np.array([5, 5]), np.array([3, 3]), np.array([1, 1])
    assert residual_potentials(tail, head, cost, cap, flow, 2) is None


def test_relax_axis_choice():
    assert relax_axis(_grid_problem(np.random.default_rng(0))) == 1
    only_line = AEMCProblem(np.ones(4), np.ones(4), (AxisMetric("m", 4, "line", step=1 / 3),), 0.0)
    assert relax_axis(only_line) is None  # nothing else could move: nothing to split along
    with pytest.raises(ValueError, match="workers"):
        solve_decomposed(_grid_problem(np.random.default_rng(0)), min_bins=0, workers=0)
