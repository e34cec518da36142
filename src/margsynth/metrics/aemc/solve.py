"""One interface over the AEMC solvers (MGD paper §6), chosen by keyword.

``solve(problem, solver=...)`` with ``solver`` one of

- ``"lp"``: the LP of §6.1 through CVXPY (``lp_solver=`` picks the backend,
  HiGHS by default);
- ``"flow"``: min-cost flow with OR-Tools (Appendix A), on the neighbour graph
  of §6.3 when the problem has per-attribute metrics, else the full graph;
- ``"fast"``: the closed forms of :mod:`.fast` (``ValueError`` if none applies);
- ``"auto"``: the fastest exact path — a closed form when one applies, else
  independent sub-problems (∞-weighted attributes, or a relaxed ordinal
  attribute certified by dual potentials, :mod:`.decompose`; ``workers=`` and
  ``decompose=False`` control it), else the flow when costs and counts scale
  to integers exactly, else the LP (up to
  ``LP_MAX_BINS`` bins), else the flow with counts rounded to a grid whose
  effect is bounded by ``tolerance`` (default 1e-9 of the AEMC scale) and
  reported in ``error_bound`` — never silently.

Every solver returns an :class:`~.result.AEMCResult`; ``plan=True`` asks for the
optimal movement (flow/LP only).
"""

from __future__ import annotations

from collections.abc import Callable

from .decompose import solve_decomposed
from .fast import fast_path
from .flow import solve_flow
from .lp import solve_lp
from .problem import AEMCProblem
from .result import AEMCResult

__all__ = ["SOLVERS", "solve"]


def _fast(prob: AEMCProblem, **kw) -> AEMCResult:
    res = fast_path(prob)
    if res is None:
        raise ValueError(f"{prob.label or 'AEMC'}: no closed form applies (needs at most one movable attribute, uniform)")
    return res


LP_MAX_BINS = 20_000


def _auto(prob: AEMCProblem, *, plan: bool = False, tolerance: float | None = None, decompose: bool = True,
          workers: int | None = None, **kw) -> AEMCResult:
    if not plan:
        res = fast_path(prob)
        if res is not None:
            return res
        if decompose and kw.get("graph", "auto") != "full":
            res = solve_decomposed(prob, workers=workers)
            if res is not None:
                return res
    try:
        return solve_flow(prob, plan=plan, tolerance=tolerance, graph=kw.get("graph", "auto"))
    except ValueError as exc:
        if "scale" not in str(exc) and "64-bit" not in str(exc) and "64 bits" not in str(exc):
            raise
        if prob.n_bins <= LP_MAX_BINS or "moving costs" in str(exc):
            res = solve_lp(prob, plan=plan, **{k: v for k, v in kw.items() if k in ("graph", "lp_solver")})
        else:
            res = solve_flow(prob, plan=plan, tolerance=1e-9 if tolerance is None else tolerance,
                             graph=kw.get("graph", "auto"))
        res.details["fallback"] = str(exc)
        return res


SOLVERS: dict[str, Callable[..., AEMCResult]] = {
    "lp": lambda prob, **kw: solve_lp(prob, **{k: v for k, v in kw.items() if k != "tolerance"}),
    "flow": lambda prob, **kw: solve_flow(prob, **{k: v for k, v in kw.items() if k in ("graph", "plan", "tolerance")}),
    "fast": _fast,
    "auto": _auto,
}


def solve(prob: AEMCProblem, solver: str = "auto", **options) -> AEMCResult:
    """Solve an AEMC instance (Eq. 1) with the named solver (see module docstring)."""
    try:
        fn = SOLVERS[solver]
    except KeyError:
        raise ValueError(f"unknown AEMC solver {solver!r}; choose from {sorted(SOLVERS)}") from None
    return fn(prob, **options)
