"""AEMC as a linear program with CVXPY (MGD paper §6.1).

Two formulations, both solved by any CVXPY LP solver (HiGHS by default):

- ``graph="full"`` — §6.1 verbatim: a variable ``X_ij ≥ 0`` for every pair with
  finite ``M_ij``, rows summing to ``P_i``, and per bin ``e_j`` bounded below by
  the moving cost into ``j`` plus ``max(±(Σ_i X_ij − Q_j) − Δ, 0)`` (α-weighted);
  O(T²) variables.
- ``graph="neighbour"`` — the same LP over the neighbour arcs of §6.3 (a flow
  variable per arc, conservation at every bin and hub node), O(T) variables;
  equal to the full LP because the bin distance is the shortest-path metric
  of the neighbour graph.

The LP is the reference the flow solvers are tested against; it also scores
inputs the integer flow cannot scale exactly.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...timing import Stopwatch
from .graph import move_arcs
from .problem import AEMCProblem
from .result import AEMCResult, Plan

__all__ = ["solve_lp"]


def _import_cvxpy():
    # Load OR-Tools before CVXPY probes highspy: both carry HiGHS symbols and the
    # second library to load breaks (see _solve_with).
    try:
        from ortools.graph.python import min_cost_flow  # noqa: F401
    except ImportError:  # pragma: no cover - flow unavailable, LP still works
        pass
    try:  # local: CVXPY takes ~1 s to import, and only solver='lp' needs it
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover
        raise ImportError("solver='lp' needs cvxpy (pip install cvxpy highspy)") from exc
    return cp


def _solve_with(cp, problem, lp_solver: str, opts: dict, what: str) -> str:
    """Solve with ``lp_solver`` (a CVXPY solver name).

    ``"HIGHS"`` runs HiGHS through SciPy's build (CVXPY's ``SCIPY`` interface,
    ``method="highs"``): the ``highspy`` wheel and OR-Tools' bundled HiGHS
    export the same C++ symbols, so loading both into one process breaks
    whichever loads second (OR-Tools' min-cost flow, or CVXPY's HIGHS).
    """
    name = lp_solver.upper()
    if name == "HIGHS":
        name, opts = "SCIPY", {"scipy_options": {"method": "highs"}, **opts}
    try:
        problem.solve(solver=name, **opts)
    except cp.error.SolverError as exc:
        raise RuntimeError(f"{what}: LP solver {lp_solver} failed: {exc}") from exc
    return "HIGHS (SciPy)" if lp_solver.upper() == "HIGHS" else lp_solver


def solve_lp(prob: AEMCProblem, *, graph: str = "auto", lp_solver: str = "HIGHS", plan: bool = False,
             **solver_opts) -> AEMCResult:
    """AEMC (Eq. 1) by the LP of §6.1 (see module docstring for ``graph``)."""
    cp = _import_cvxpy()
    clock = Stopwatch()
    if graph == "auto":
        graph = "neighbour" if prob.axes is not None else "full"
    T = prob.n_bins
    P, Q = prob.p.ravel(), prob.q.ravel()
    d, a = prob.delta, prob.alpha
    if graph == "full":
        if prob.allow_negative:
            raise ValueError("allow_negative (the authors' compressed-graph variant) needs graph='neighbour'")
        M = prob.dense_matrix()
        ii, jj = np.nonzero(np.isfinite(M))
        c = M[ii, jj]
        x = cp.Variable(ii.size, nonneg=True)
        rows = sp.csr_matrix((np.ones(ii.size), (ii, np.arange(ii.size))), shape=(T, ii.size))
        cols = sp.csr_matrix((np.ones(ii.size), (jj, np.arange(ii.size))), shape=(T, ii.size))
        y = cols @ x
        move_in = sp.csr_matrix((c, (jj, np.arange(ii.size))), shape=(T, ii.size)) @ x
        e = cp.Variable(T)
        cons = [rows @ x == P, e >= move_in + a * (y - Q - d), e >= move_in + a * (Q - d - y), e >= move_in]
        objective = cp.sum(e)
    elif graph == "neighbour":
        if prob.axes is None:
            raise ValueError("graph='neighbour' needs per-attribute metrics; an explicit matrix needs graph='full'")
        tail, head, c, axis, n_dummy = move_arcs(prob.axes)
        n = T + n_dummy
        E = tail.size
        x = cp.Variable(E, nonneg=True)
        # net inflow per node
        A = sp.csr_matrix(
            (np.concatenate([np.ones(E), -np.ones(E)]), (np.concatenate([head, tail]), np.tile(np.arange(E), 2))),
            shape=(n, E),
        )
        # bin results after moving; the authors' variant lets them go below 0 (docs/notes/mgd_baltimore.md)
        y = cp.Variable(T, nonneg=not prob.allow_negative)
        u = cp.Variable(T, nonneg=True)  # penalised excess beyond Δ
        net = A @ x if E else np.zeros(n)
        cons = [u >= y - Q - d, u >= Q - d - y]
        if E:
            cons.append(net[:T] + P == y)
            if n_dummy:
                cons.append(net[T:] == 0)
        else:
            cons.append(y == P)
        objective = (c @ x if E else 0) + a * cp.sum(u)
    else:
        raise ValueError(f"graph must be 'neighbour', 'full' or 'auto', got {graph!r}")
    problem = cp.Problem(cp.Minimize(objective), cons)
    used = _solve_with(cp, problem, lp_solver, solver_opts, prob.label or "AEMC")
    if problem.status not in ("optimal",):
        raise RuntimeError(f"{prob.label or 'AEMC'}: LP solver {lp_solver} returned status {problem.status}")
    cost = float(problem.value)
    the_plan = None
    if plan:
        xv = np.zeros(x.size) if x.value is None else np.maximum(np.asarray(x.value, dtype=np.float64).ravel(), 0.0)
        if graph == "full":
            yv = np.bincount(jj, xv, minlength=T)
            mv = ii != jj
            mt, mh, mf, mc, ma = ii[mv], T + jj[mv], xv[mv], c[mv], np.full(int(mv.sum()), -1, np.int8)
            bip = True
        else:
            yv = np.asarray(y.value, dtype=np.float64)
            mt, mh, mf, mc, ma, bip = tail, head, xv, c, axis, False
        L, U = prob.lower().ravel(), prob.upper().ravel()
        the_plan = Plan(
            shape=prob.shape, added=np.maximum(L - yv, 0).reshape(prob.shape),
            removed=np.maximum(yv - U, 0).reshape(prob.shape), final=np.clip(yv, L, U).reshape(prob.shape),
            move_tail=mt, move_head=mh, move_flow=mf, move_cost=mc, move_axis=ma, n_bins=T, bipartite=bip,
            axis_names=tuple(ax.name for ax in prob.axes) if prob.axes is not None else (),
        )
    return AEMCResult(
        value=prob.normalise(cost), cost=cost, solver=f"lp-{graph}", seconds=clock.elapsed(),
        plan=the_plan, q_total=prob.q_total, details={"lp_solver": used},
    )
