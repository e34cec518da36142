"""LP vs min-cost flow for AEMC (MGD paper §6, §6.4, Appendix A): agreement of
the solvers on random instances, solve time and peak memory against the number
of cells, and the 580,464-cell Baltimore 3-way marginal, with a
reference-style implementation (the graph built arc by arc in a Python loop,
as the authors' code did) for comparison. Behind notebook 02.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import threading
from collections.abc import Callable

import numpy as np
import pandas as pd
import psutil

from ..data.baltimore import load_synthetic, load_truth
from ..domain import Attribute, Domain
from ..metrics.aemc import AEMCProblem, AttributeSpec, MarginalSpec, solve
from ..metrics.aemc.graph import neighbour_graph
from ..metrics.aemc.instances import random_problem
from ..metrics.aemc.scaling import exact_scale
from ..metrics.baltimore import table1_specs
from ..timing import Stopwatch
from .cache import memoize
from .sweep import progress_bar

__all__ = [
    "PROFILES", "agreement", "baltimore_3way", "measure", "reference_loop_flow", "scaling", "scaling_instance",
]

logging.getLogger("cvxpy").setLevel(logging.ERROR)

PROFILES = {
    "quick": {"n_agree": 150, "sizes": (10, 100, 1_000, 10_000), "lp_budget": 20.0, "loop_max": 10_000,
              "full_graph_max": 2_000, "baltimore": False},
    "full": {"n_agree": 1_000, "sizes": (10, 100, 1_000, 10_000, 100_000, 1_000_000), "lp_budget": 120.0,
             "loop_max": 1_000_000, "full_graph_max": 4_000, "baltimore": True},
}


def measure(fn: Callable[[], object], interval: float = 0.005) -> tuple[object, float, float]:
    """Run ``fn``; return ``(result, wall seconds, peak extra RSS in MiB)``
    (resident memory sampled in a thread, so native allocations count; the RSS
    of worker processes ``fn`` starts is added, pages they share with this
    process counted twice, so the figure is an upper bound)."""
    proc = psutil.Process(os.getpid())

    def rss() -> int:
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:  # ended between the listing and the reading
                pass
        return total

    gc.collect()
    base = proc.memory_info().rss
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss())
            stop.wait(interval)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    clock = Stopwatch()
    try:
        out = fn()
    finally:
        dt = clock.elapsed()
        stop.set()
        th.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    return out, dt, (peak[0] - base) / 2**20


# -- agreement ------------------------------------------------------------------------
def agreement(n: int = 200, seed: int = 0) -> pd.DataFrame:
    """Solve ``n`` random instances (the test suite's generator: ordinal, categorical,
    hierarchies, ∞ weights, explicit metrics, Δ = 0, empty bins, unequal totals)
    with every solver; one row per instance with the relative spread."""

    rng = np.random.default_rng(seed)
    rows = []
    for i in progress_bar(range(n), desc="random instances"):
        prob = random_problem(rng)
        vals = {s: solve(prob, s).cost for s in ("flow", "lp", "auto")}
        if prob.n_bins <= 40:
            vals["lp_full"] = solve(prob, "lp", graph="full").cost
            vals["flow_full"] = solve(prob, "flow", graph="full").cost
        ref = vals["flow"]
        spread = max(abs(v - ref) for v in vals.values()) / max(1.0, abs(ref))
        rows.append({"instance": i, "n_bins": prob.n_bins, "kinds": "+".join(a.kind for a in prob.axes),
                     "delta": prob.delta, "alpha": prob.alpha, "unequal_totals": prob.p.sum() != prob.q.sum(),
                     **vals, "max_rel_diff": spread})
    return pd.DataFrame(rows)


# -- scaling ------------------------------------------------------------------------
def scaling_instance(n_cells: int, seed: int = 0) -> AEMCProblem:
    """A Baltimore-like instance with about ``n_cells`` cells: an ordinal and two
    categorical attributes (flat hierarchies), weights 1/3, Δ = 2, noisy counts."""
    rng = np.random.default_rng(seed)
    if n_cells <= 12:
        shape = (n_cells,)
    else:
        k = max(2, round((n_cells / 12) ** 0.5))
        shape = (k, 12, max(1, round(n_cells / (12 * k))))
    names = ["region", "month", "kind"][: len(shape)] if len(shape) == 3 else ["month"]
    attrs = tuple(Attribute(nm, s, ordinal=(nm == "month")) for nm, s in zip(names, shape))
    dom = Domain(attrs)
    w = 1.0 / len(shape)
    spec = MarginalSpec(tuple(AttributeSpec(nm, weight=w) for nm in names), delta=2.0)
    q = rng.poisson(rng.gamma(0.5, 6, shape))
    p = np.maximum(q + np.round(rng.laplace(0, 3, shape)), 0)
    return AEMCProblem.from_spec(spec, dom, p, q)


def reference_loop_flow(prob: AEMCProblem) -> float:
    """Reference-style implementation: the same neighbour graph added to OR-Tools
    one arc at a time from Python loops (as the authors' code built it)."""
    from ortools.graph.python import min_cost_flow  # loads OR-Tools

    g = neighbour_graph(prob, prune=False, directed_hubs=False, reorder=False)
    scale = exact_scale(np.append(g.cost, prob.alpha), "costs")
    smcf = min_cost_flow.SimpleMinCostFlow()
    big = int(prob.p.sum() + prob.upper().sum()) + 1
    tails, heads, costs, caps = g.tail.tolist(), g.head.tolist(), g.cost.tolist(), g.cap.tolist()
    for t, h, c, cap in zip(tails, heads, costs, caps):
        smcf.add_arc_with_capacity_and_unit_cost(t, h, big if math.isinf(cap) else int(round(cap)), int(round(c * scale)))
    for node, s in enumerate(g.supply.tolist()):
        smcf.set_node_supply(node, int(round(s)))
    status = smcf.solve()
    if status != smcf.OPTIMAL:
        raise RuntimeError(f"reference flow: status {status}")
    return prob.normalise(smcf.optimal_cost() / scale)


def _methods(full_graph_max: int):
    return {
        "lp": lambda p: solve(p, "lp").cost,
        "flow (full graph)": lambda p: solve(p, "flow", graph="full").cost if p.n_bins <= full_graph_max else None,
        "flow (neighbour graph)": lambda p: solve(p, "flow", graph="neighbour").cost,
        "auto": lambda p: solve(p, "auto").cost,
        "reference loop": lambda p: reference_loop_flow(p) * p.q_total,
    }


@memoize(version=2)
def scaling(profile: str = "quick", seed: int = 0) -> pd.DataFrame:
    """Solve time and peak memory per method against the number of cells.
    A method is dropped for larger sizes once it exceeds the profile's time
    budget (the LP) or size limit (full graph, reference loop)."""
    cfg = PROFILES[profile]
    methods = _methods(cfg["full_graph_max"])
    dropped: set[str] = set()
    rows = []
    for n in progress_bar(cfg["sizes"], desc="sizes"):
        prob = scaling_instance(n, seed)
        for name, fn in methods.items():
            if name in dropped or (name == "reference loop" and n > cfg["loop_max"]):
                continue
            if name == "flow (full graph)" and prob.n_bins > cfg["full_graph_max"]:
                continue
            value, dt, mem = measure(lambda fn=fn, prob=prob: fn(prob))
            if value is None:
                continue
            rows.append({"cells": prob.n_bins, "method": name, "seconds": dt, "peak_mib": mem, "cost": value})
            if name == "lp" and dt > cfg["lp_budget"] / 4:  # next size (10x) would exceed the budget
                dropped.add(name)
    return pd.DataFrame(rows)


@memoize(version=2)
def baltimore_3way(stem: str = "privatized-mediocre-quality", reference: bool = False) -> pd.DataFrame:
    """The 580,464-cell Baltimore 3-way AEMC (Table 1 preset) by our flow and,
    optionally, the reference-style Python-loop build."""
    truth, synth = load_truth(), load_synthetic(stem)
    spec = table1_specs()[-1]
    prob = AEMCProblem.from_spec(spec, truth.domain, synth.counts, truth.counts)
    rows = []
    res, dt, mem = measure(lambda: solve(prob, "auto"))
    rows.append({"method": f"auto ({res.solver})", "seconds": dt, "peak_mib": mem, "aemc": res.value})
    if reference:
        val, dt, mem = measure(lambda: reference_loop_flow(prob))
        rows.append({"method": "reference loop", "seconds": dt, "peak_mib": mem, "aemc": val})
    return pd.DataFrame(rows)
