"""AEMC by min-cost flow with OR-Tools (MGD paper §6.2, Appendix A).

The network (see :mod:`.graph`) is passed to ``SimpleMinCostFlow`` in one
vectorised call. Costs and capacities are scaled to integers exactly
(:mod:`.scaling`), so the optimum is an exact rational; inputs that cannot be
scaled exactly raise ``ValueError`` unless ``tolerance`` asks for rounding of
the counts, whose effect on the optimum is bounded and reported (AEMC's cost
is α-Lipschitz in each count and in Δ·T).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ...timing import Stopwatch, timed
from .graph import ADD, BAND, MOVE, REMOVE, FlowGraph, full_graph, neighbour_graph
from .problem import AEMCProblem
from .result import AEMCResult, Plan
from .scaling import INT_LIMIT, exact_scale, scale_to_int

__all__ = ["integer_network", "ortools_min_cost_flow", "solve_flow", "solve_graph"]


def _status_name(smcf, status) -> str:
    for nm in ("OPTIMAL", "NOT_SOLVED", "FEASIBLE", "INFEASIBLE", "UNBALANCED", "BAD_RESULT", "BAD_COST_RANGE",
               "BAD_CAPACITY_RANGE"):
        if status == getattr(smcf, nm, None):
            return nm
    return str(status)


def _cap_scale(prob: AEMCProblem, tolerance: float | None):
    """Scale for capacities; with ``tolerance`` a rounding grid and its error bound."""
    vals = np.concatenate([prob.p.ravel(), prob.q.ravel(), [prob.delta]])
    try:
        return exact_scale(vals, f"{prob.label or 'AEMC'} counts"), None
    except ValueError:
        if tolerance is None:
            raise
    # round counts to a grid 1/s; |Δcost| <= α·(Σ|ΔP| + Σ|ΔQ| + 2T|ΔΔ|) (each count moves the optimum by <= α per unit)
    T = prob.n_bins
    s = 1
    while True:
        err = prob.alpha * (0.5 / s) * (2 * T + 2 * T)
        if prob.normalise(err) <= tolerance or s >= 2**40:
            return s, err
        s *= 2


def integer_network(g: FlowGraph, cost_scale: int, cap_scale: int, what: str = "AEMC"):
    """``(cost, cap, supply)`` of ``g`` as exact int64 arrays (unbounded arcs get
    a capacity above any feasible flow); ``ValueError`` beyond 64-bit limits."""
    cost = g.int_cost if g.int_cost is not None else scale_to_int(g.cost, cost_scale, f"{what}: moving costs")
    sup = scale_to_int(g.supply, cap_scale, f"{what}: supplies")
    finite = np.isfinite(g.cap)
    total = int(np.abs(sup).sum()) // 2 + 1
    inf_cap = total + int(scale_to_int(g.cap[finite], cap_scale, f"{what}: capacities").sum() if finite.any() else 0)
    if inf_cap >= INT_LIMIT:
        raise ValueError(f"{what}: total scaled flow {inf_cap} exceeds the 64-bit limit; counts too large for scale {cap_scale}")
    cap = np.full(g.n_arcs, inf_cap, dtype=np.int64)
    if finite.any():
        cap[finite] = scale_to_int(g.cap[finite], cap_scale, f"{what}: capacities")
    max_cost = int(np.abs(cost).max()) if cost.size else 0
    if max_cost * (g.n_nodes + 1) >= INT_LIMIT or max_cost * inf_cap >= INT_LIMIT:
        raise ValueError(
            f"{what}: scaled costs (max {max_cost}, scale {cost_scale}) times the network size/flow exceed 64 bits; "
            "use solver='lp'"
        )
    return cost, cap, sup


def ortools_min_cost_flow(tail, head, cap, cost, sup, what: str = "AEMC"):
    """Solve an integer network with OR-Tools' ``SimpleMinCostFlow`` in one
    vectorised call; returns ``(optimal_cost, flows)`` as exact integers."""
    try:  # local: OR-Tools fails to load after highspy, and the LP solver must still work then
        from ortools.graph.python import min_cost_flow
    except ImportError as exc:  # pragma: no cover
        raise ImportError(
            "the flow solver needs OR-Tools (pip install ortools); if it is installed, highspy was loaded first "
            "in this process (both bundle HiGHS): import margsynth.metrics.aemc before highspy/cvxpy's HIGHS"
        ) from exc
    smcf = min_cost_flow.SimpleMinCostFlow()
    arcs = smcf.add_arcs_with_capacity_and_unit_cost(
        np.asarray(tail, dtype=np.int32), np.asarray(head, dtype=np.int32), cap, cost
    )
    nz = np.flatnonzero(sup)
    smcf.set_nodes_supplies(nz.astype(np.int32), sup[nz])
    status = smcf.solve()
    if status != smcf.OPTIMAL:
        raise RuntimeError(f"{what}: OR-Tools min-cost flow returned {_status_name(smcf, status)}")
    return int(smcf.optimal_cost()), np.asarray(smcf.flows(arcs), dtype=np.int64)


def solve_graph(g: FlowGraph, cost_scale: int, cap_scale: int, *, what: str = "AEMC", want_flows: bool = False):
    """Solve a :class:`FlowGraph` with integer-scaled costs/capacities.

    Returns ``(optimal_cost_fraction, flows_or_None, seconds_build, seconds_solve)``.
    """
    seconds: dict[str, float] = {}
    with timed(seconds, "build"):
        cost, cap, sup = integer_network(g, cost_scale, cap_scale, what)
    with timed(seconds, "solve"):
        opt_int, iflows = ortools_min_cost_flow(g.tail, g.head, cap, cost, sup, what)
    opt = Fraction(opt_int, cost_scale * cap_scale)
    flows = iflows.astype(np.float64) / cap_scale if want_flows else None
    return opt, flows, seconds["build"], seconds["solve"]


def plan_from_flows(prob: AEMCProblem, g: FlowGraph, flows: np.ndarray) -> Plan:
    """Added/removed amounts per bin and moving flows from arc flows (Appendix A)."""
    T = prob.n_bins
    bins = g.tail.copy()
    bins[g.role == ADD] = g.head[g.role == ADD]
    if g.bipartite:
        bins = np.where(g.role == MOVE, bins, bins - T)

    def per_bin(role):
        out = np.bincount(bins[g.role == role], flows[g.role == role], minlength=T)
        if g.bin_index is not None:
            orig = np.empty(T)
            orig[g.bin_index] = out
            out = orig
        return out.reshape(prob.shape)

    added, removed, band = per_bin(ADD), per_bin(REMOVE), per_bin(BAND)
    final = prob.lower() + band
    mv = g.role == MOVE
    tail, head = g.tail[mv], g.head[mv]
    if g.bin_index is not None:  # bins back to the problem's numbering (hubs keep theirs, all >= T)
        tail = np.where(tail < T, g.bin_index[np.minimum(tail, T - 1)], tail)
        head = np.where(head < T, g.bin_index[np.minimum(head, T - 1)], head)
    return Plan(
        shape=prob.shape, added=added, removed=removed, final=final, move_tail=tail, move_head=head,
        move_flow=flows[mv], move_cost=g.cost[mv], move_axis=g.axis[mv], n_bins=T, bipartite=g.bipartite,
        axis_names=tuple(a.name for a in prob.axes) if prob.axes is not None else (),
    )


def solve_flow(prob: AEMCProblem, *, graph: str = "auto", plan: bool = False, tolerance: float | None = None) -> AEMCResult:
    """AEMC (Eq. 1) by OR-Tools min-cost flow (Appendix A).

    ``graph``: ``"neighbour"`` (O(T) arcs, §6.3), ``"full"`` (O(T²) arcs,
    Appendix A.1; any explicit matrix) or ``"auto"`` (neighbour when the
    problem has per-attribute metrics). Exact; see module docstring for
    ``tolerance``.
    """
    clock = Stopwatch()
    if graph == "auto":
        graph = "neighbour" if prob.axes is not None else "full"
    if graph not in ("neighbour", "full"):
        raise ValueError(f"graph must be 'neighbour', 'full' or 'auto', got {graph!r}")
    what = f"{prob.label or 'AEMC'} moving costs"
    if graph == "neighbour":
        g = neighbour_graph(prob)
        cost_scale = exact_scale(np.append(g.cost, prob.alpha), what)
    elif prob.axes is not None:
        # scale Eq. (2) term by term: float sums of the terms need not be exact
        terms = [c for a in prob.axes for c in np.unique(a.dense()[np.isfinite(a.dense())])]
        cost_scale = exact_scale(np.array(terms + [prob.alpha]), what)
        g = full_graph(prob, cost_scale=cost_scale)
    else:
        g = full_graph(prob)
        cost_scale = exact_scale(np.append(g.cost, prob.alpha), what)
    cap_scale, err = _cap_scale(prob, tolerance)
    if err is not None:
        # round the supplies/capacities to the grid (documented, bounded)
        g.supply = np.round(g.supply * cap_scale) / cap_scale
        fin = np.isfinite(g.cap)
        g.cap[fin] = np.round(g.cap[fin] * cap_scale) / cap_scale
        g.supply[g.z] -= g.supply.sum()
    opt, flows, tb, ts = solve_graph(g, cost_scale, cap_scale, what=prob.label or "AEMC", want_flows=plan)
    the_plan = plan_from_flows(prob, g, flows) if plan else None
    cost = float(opt)
    return AEMCResult(
        value=prob.normalise(cost), cost=cost, solver=f"flow-{graph}", seconds=clock.elapsed(),
        exact=err is None, error_bound=0.0 if err is None else prob.normalise(err), plan=the_plan,
        q_total=prob.q_total, details={"build_s": tb, "solve_s": ts, "n_arcs": g.n_arcs, "n_nodes": g.n_nodes,
                                       "cost_scale": cost_scale, "cap_scale": cap_scale, "exact_cost": opt},
    )
