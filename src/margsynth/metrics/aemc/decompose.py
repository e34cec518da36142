"""Exact decomposition of AEMC (MGD paper Eq. 1–2) into independent sub-problems.

Two cases, both exact:

- **∞-weighted attributes** (Eq. 2): bins that differ on such an attribute never
  exchange mass, so the problem is one sub-problem per value combination of
  those attributes and the optimum is the sum of the sub-optima (independent
  components when a weight is ∞).
- **Relaxing an ordinal attribute, then proving it did not matter.** Dropping
  the neighbour arcs (§6.3) of one ``line`` attribute (e.g. ``month``) splits
  the flow network of Appendix A into one network per value of it, joined only
  at the merged source/sink node ``z``. Each piece is solved on its own (in
  parallel processes when worth it); their sum is the optimum of a
  *restriction*, so an upper bound. It is the optimum of the whole problem iff
  the combined flow admits node potentials ``π`` with non-negative reduced cost
  ``c(u,v) + π(u) − π(v)`` on every residual arc of the *whole* network (the
  reduced-cost optimality condition of min-cost flow, Ahuja, Magnanti & Orlin,
  *Network Flows*, Thm. 9.8). Inside each piece such potentials are the
  shortest-path distances in its residual network (no negative cycle at an
  optimum); shifting each piece so that ``π(z) = 0`` makes them one potential
  of the union, and the dropped arcs carry no flow, so the only condition left
  is ``|π(b) − π(b')| ≤ step`` for every pair of bins one step apart on the
  relaxed attribute. Where that fails, the two neighbouring pieces are merged
  (their arcs restored) and solved again, until every remaining cut is
  certified — at worst the whole problem. Costs and flows are exact integers
  throughout (:mod:`.scaling`), so the certificate is an exact integer check,
  not a tolerance.

On the Baltimore 3-way marginal (278 × 12 × 174) relaxing ``month`` is certified
at once on 11 of the 14 scored files and makes the solve four to eight times
faster (``benchmarks/bench_aemc.py``).
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import sys
from fractions import Fraction

import numpy as np

from ...timing import Stopwatch
from .flow import integer_network, ortools_min_cost_flow
from .graph import neighbour_graph
from .problem import AEMCProblem
from .result import AEMCResult
from .scaling import exact_scale

__all__ = ["solve_decomposed", "residual_potentials", "relax_axis", "DECOMPOSE_MIN_BINS", "PARALLEL_MIN_BINS"]

#: relax an ordinal attribute only on problems at least this large (smaller ones solve in well under a second)
DECOMPOSE_MIN_BINS = 50_000
#: solve the pieces in worker processes only on problems at least this large
PARALLEL_MIN_BINS = 150_000


def residual_potentials(tail, head, cost, cap, flow, n_nodes: int, max_passes: int | None = None) -> np.ndarray | None:
    """Potentials ``d`` with ``d[v] <= d[u] + c`` on every residual arc ``u → v``.

    Residual arcs: ``tail → head`` at ``cost`` where ``flow < cap``, and
    ``head → tail`` at ``−cost`` where ``flow > 0``. ``d`` is the shortest
    distance from a virtual root joined to every node at cost 0 (so every node
    is reached and ``d <= 0``), by Bellman–Ford in vectorised Jacobi passes
    (parallel arcs and zero costs are handled as they are, which
    ``scipy.sparse.csgraph`` would merge or drop). Returns ``None`` if the
    passes do not settle within ``max_passes`` (default ``n_nodes``, which
    settles unless a negative cycle exists, i.e. the flow is not optimal).
    """
    fw, bw = flow < cap, flow > 0
    rt = np.concatenate([tail[fw], head[bw]])
    rh = np.concatenate([head[fw], tail[bw]])
    rc = np.concatenate([cost[fw], -cost[bw]])
    d = np.zeros(n_nodes, dtype=np.int64)
    if rt.size == 0:
        return d
    order = np.argsort(rh, kind="stable")
    rt, rh, rc = rt[order], rh[order], rc[order]
    heads, starts = np.unique(rh, return_index=True)
    for _ in range(n_nodes + 1 if max_passes is None else max_passes):
        best = np.minimum.reduceat(d[rt] + rc, starts)
        better = best < d[heads]
        if not better.any():
            return d
        d[heads[better]] = best[better]
    return None


def _cost_terms(prob: AEMCProblem) -> np.ndarray:
    """Every arc cost the neighbour graph (directed hubs) of ``prob`` can use, and α."""
    terms = [prob.alpha]
    for a in prob.axes:
        if a.kind == "line":
            terms.append(a.step)
        elif a.kind == "tree":
            terms.append(2 * a.edge)
        elif a.kind == "matrix":
            m = a.dense()
            terms.extend(np.unique(m[np.isfinite(m)]).tolist())
    return np.asarray(terms, dtype=np.float64)


def relax_axis(prob: AEMCProblem) -> int | None:
    """The ordinal attribute to relax: a ``line`` axis with at least 2 values
    while another attribute can still move (the one with most values)."""
    if prob.axes is None:
        return None
    movable = [i for i, a in enumerate(prob.axes) if a.k > 1 and a.kind != "forbid"]
    lines = [i for i in movable if prob.axes[i].kind == "line"]
    if not lines or len(movable) < 2:
        return None
    return max(lines, key=lambda i: prob.axes[i].k)


def _solve_piece(job):
    """Worker: one sub-problem by OR-Tools on its neighbour graph; returns
    ``(optimal integer cost, bin potentials shifted to π(z) = 0 or None)``."""
    p, q, axes, delta, alpha, label, allow_negative, cost_scale, cap_scale, want_potentials = job
    if not p.any() and not q.any():
        return 0, (np.zeros(p.shape, dtype=np.int64) if want_potentials else None)
    sub = AEMCProblem(p, q, axes, delta, alpha, label=label, allow_negative=allow_negative)
    g = neighbour_graph(sub)
    cost, cap, sup = integer_network(g, cost_scale, cap_scale, label)
    opt, flow = ortools_min_cost_flow(g.tail, g.head, cap, cost, sup, label)
    if not want_potentials:
        return opt, None
    d = residual_potentials(g.tail, g.head, cost, cap, flow, g.n_nodes)
    if d is None:  # pragma: no cover - an optimal flow has no negative residual cycle
        raise RuntimeError(f"{label}: residual potentials did not settle; the flow is not optimal")
    d = d - d[g.z]
    pot = np.empty(sub.n_bins, dtype=np.int64)
    pot[g.bin_index] = d[: sub.n_bins]
    return opt, pot.reshape(sub.shape)


def _default_workers() -> int:
    env = os.environ.get("MARGSYNTH_AEMC_WORKERS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"MARGSYNTH_AEMC_WORKERS must be an integer, got {env!r}") from None
        if n < 1:
            raise ValueError(f"MARGSYNTH_AEMC_WORKERS must be >= 1, got {n}")
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _run(jobs, workers: int):
    """Results of :func:`_solve_piece` in job order; forked worker processes
    when ``workers > 1`` (OR-Tools holds the GIL, so threads would not help)."""
    # a daemonic process (a Pool or Dask worker) may not have children: solve in turn there
    if workers > 1 and len(jobs) > 1 and sys.platform.startswith("linux") and not mp.current_process().daemon:
        with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            return pool.map(_solve_piece, jobs, chunksize=1)
    return [_solve_piece(j) for j in jobs]


def solve_decomposed(prob: AEMCProblem, *, workers: int | None = None, relax: bool = True,
                     min_bins: int = DECOMPOSE_MIN_BINS, parallel_min_bins: int = PARALLEL_MIN_BINS) -> AEMCResult | None:
    """AEMC by independent sub-problems (see module docstring); always exact.

    Pieces: one per value combination of the ∞-weighted attributes, times one
    per block of consecutive values of the relaxed ordinal attribute. Blocks
    start as single values; every boundary whose dropped arcs fail the
    certificate is closed (its two blocks merge, keeping the arcs between them)
    and only the merged pieces are solved again, until every open boundary is
    certified — at worst the relaxed attribute is one block, the whole problem
    (taken at once when a merged block would span more than half of it).
    ``details["rounds"]`` lists each round's pieces solved and boundaries closed.

    Returns ``None`` when there is nothing to split (no ∞-weighted attribute,
    and no ordinal attribute to relax or fewer than ``min_bins`` bins) or when
    counts or costs do not scale to integers exactly (the caller's solvers then
    decide). ``workers`` processes (default: the CPUs this process may use, or
    ``MARGSYNTH_AEMC_WORKERS``) solve the pieces of a problem with at least
    ``parallel_min_bins`` bins."""
    if prob.axes is None or prob.allow_negative:
        return None
    clock = Stopwatch()
    what = prob.label or "AEMC"
    forbid = [i for i, a in enumerate(prob.axes) if a.kind == "forbid" and a.k > 1]
    r = relax_axis(prob) if relax and prob.n_bins >= min_bins else None
    rest = [i for i in range(len(prob.axes)) if i not in forbid]
    if (not forbid and r is None) or not rest:
        return None
    try:
        cost_scale = exact_scale(_cost_terms(prob), f"{what} moving costs")
        cap_scale = exact_scale(np.concatenate([prob.p.ravel(), prob.q.ravel(), [prob.delta]]), f"{what} counts")
    except ValueError:
        return None
    workers = _default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if prob.n_bins < parallel_min_bins:
        workers = 1
    f_shape = tuple(prob.shape[i] for i in forbid)
    rest_axes = tuple(prob.axes[i] for i in rest)
    rest_shape = tuple(a.k for a in rest_axes)
    P = np.moveaxis(prob.p, forbid, range(len(forbid))).reshape((-1,) + rest_shape)
    Q = np.moveaxis(prob.q, forbid, range(len(forbid))).reshape((-1,) + rest_shape)
    n_f = P.shape[0]
    rr = rest.index(r) if r is not None else 0  # position of the relaxed axis in a piece
    k = rest_shape[rr] if r is not None else 1
    cuts = set(range(1, k)) if r is not None else set()  # boundary b: between values b-1 and b
    step = int(round(prob.axes[r].step * cost_scale)) if r is not None else 0
    solved: dict[tuple[int, int, int], tuple[int, np.ndarray | None]] = {}
    rounds: list[dict] = []

    def job(c: int, lo: int, hi: int, want: bool):
        sl = [slice(None)] * len(rest_shape)
        axes = rest_axes
        if r is not None:
            sl[rr] = slice(lo, hi)
            axes = tuple(dataclasses.replace(a, k=hi - lo) if i == rr else a for i, a in enumerate(rest_axes))
        where = ", ".join([f"{np.unravel_index(c, f_shape)}" if forbid else ""]
                          + ([f"{prob.axes[r].name} {lo}..{hi - 1}"] if r is not None else [])).strip(", ")
        return (P[c][tuple(sl)], Q[c][tuple(sl)], axes, prob.delta, prob.alpha, f"{what}[{where}]", False,
                cost_scale, cap_scale, want)

    while True:
        edges = [0] + sorted(cuts) + [k]
        blocks = list(zip(edges[:-1], edges[1:]))
        want = bool(cuts)
        todo = [(c, lo, hi) for c in range(n_f) for lo, hi in blocks if (c, lo, hi) not in solved]
        try:
            out = _run([job(c, lo, hi, want) for c, lo, hi in todo], workers)
        except ValueError:  # a piece does not scale within 64 bits: the whole problem's solvers decide
            return None
        solved.update(zip(todo, out))
        total = sum(solved[(c, lo, hi)][0] for c in range(n_f) for lo, hi in blocks)
        info = {"pieces_solved": len(todo), "blocks": len(blocks), "cost": Fraction(total, cost_scale * cap_scale)}
        rounds.append(info)
        if not want:
            break
        pot = np.empty(P.shape, dtype=np.int64)
        for c in range(n_f):
            for lo, hi in blocks:
                sl = [c] + [slice(None)] * len(rest_shape)
                sl[1 + rr] = slice(lo, hi)
                pot[tuple(sl)] = solved[(c, lo, hi)][1]
        closed = []
        n_viol = 0
        for b in sorted(cuts):
            bad = int((np.abs(np.take(pot, b, axis=1 + rr) - np.take(pot, b - 1, axis=1 + rr)) > step).sum())
            if bad:
                closed.append(b)
                n_viol += bad
        info.update(violated_arcs=n_viol, closed_boundaries=closed)
        if not closed:
            break
        cuts -= set(closed)
        widest = max(b - a for a, b in zip([0] + sorted(cuts), sorted(cuts) + [k]))
        if widest > k / 2:  # the relaxation is far from exact here: solve the whole attribute at once
            cuts.clear()
    details = {"pieces": n_f * len(blocks), "split_axes": [prob.axes[i].name for i in forbid], "workers": workers,
               "cost_scale": cost_scale, "cap_scale": cap_scale, "rounds": rounds}
    if r is not None:
        details["relaxed"] = prob.axes[r].name
        details["open_boundaries"] = sorted(cuts)
        if cuts:
            n_arcs = 2 * len(cuts) * n_f * int(np.prod(rest_shape, dtype=np.int64)) // k
            details["certificate"] = (
                f"potentials of the {n_f * len(blocks)} pieces give all {n_arcs} dropped {prob.axes[r].name!r} arcs "
                "a non-negative reduced cost"
            )
    opt = Fraction(total, cost_scale * cap_scale)
    cost = float(opt)
    details["exact_cost"] = opt
    return AEMCResult(value=prob.normalise(cost), cost=cost, solver="flow-decomposed",
                      seconds=clock.elapsed(), q_total=prob.q_total, details=details)
