"""Exact fast paths for AEMC (MGD paper Eq. 1–2 with special structure).

- **No moves** (every attribute weighted ∞, or single-valued): ``M_ij = ∞`` for
  ``i ≠ j`` so ``X`` is diagonal and the optimum is
  ``α·Σ_j max(|P_j − Q_j| − Δ, 0)`` (§4.2: "approximates the L1 distance").
- **Independent components** (some attributes weighted ∞, Eq. 2): bins that
  differ on an ∞ attribute never exchange mass, so the problem splits into one
  sub-problem per combination of the ∞ attributes' values.
- **One uniform attribute** per component (a flat hierarchy, §4.3.1 Fig. 1a, or a
  ``uniform`` override): every move costs the same ``c``, so the optimum has a
  closed form. With per-bin surplus ``S = Σ(P−U)⁺``, deficit ``D = Σ(L−P)⁺``,
  spare room ``R = Σ(U − max(P, L))⁺`` and spare supply ``G = Σ(min(P, U) − L)⁺``
  (``L = max(Q−Δ, 0)``, ``U = Q+Δ``), matched units ``m = min(S, D)`` cost
  ``min(c, 2α)`` each (a move instead of a removal plus an addition), the rest
  of the surplus moves into spare room at ``min(c, α)`` up to ``R`` and is
  removed at ``α`` beyond it, and symmetrically for the deficit with ``G``.
"""

from __future__ import annotations

import numpy as np

from ...timing import Stopwatch
from .problem import AEMCProblem
from .result import AEMCResult

__all__ = ["fast_path", "no_move_cost", "uniform_closed_form"]


def no_move_cost(P: np.ndarray, L: np.ndarray, U: np.ndarray, alpha: float) -> float:
    """``α·Σ max(L−P, P−U, 0)`` = ``α·Σ max(|P−Q|−Δ, 0)``: AEMC's cost when no move is allowed (§4.2)."""
    return float(alpha * np.maximum(np.maximum(L - P, P - U), 0.0).sum())


def uniform_closed_form(P: np.ndarray, L: np.ndarray, U: np.ndarray, alpha: float, c: float) -> np.ndarray:
    """Closed form per row of ``(n, k)`` arrays (counts ``P``, band ``[L, U]``)
    where any move within a row costs ``c``."""
    S = np.maximum(P - U, 0.0).sum(-1)
    D = np.maximum(L - P, 0.0).sum(-1)
    R = np.maximum(U - np.maximum(P, L), 0.0).sum(-1)
    G = np.maximum(np.minimum(P, U) - L, 0.0).sum(-1)
    m = np.minimum(S, D)
    s_rest, d_rest = S - m, D - m
    s_mv, d_mv = np.minimum(s_rest, R), np.minimum(d_rest, G)
    cm, ca = min(c, 2 * alpha), min(c, alpha)
    return cm * m + ca * s_mv + alpha * (s_rest - s_mv) + ca * d_mv + alpha * (d_rest - d_mv)


def fast_path(prob: AEMCProblem) -> AEMCResult | None:
    """The closed-form optimum when the structure allows, else ``None``."""
    if prob.axes is None:
        return None
    clock = Stopwatch()
    movable = [i for i, a in enumerate(prob.axes) if a.k > 1 and a.kind != "forbid"]
    P, L, U = prob.p, prob.lower(), prob.upper()
    if not movable:
        cost = no_move_cost(P, L, U, prob.alpha)
        kind = "fast-nomove"
    elif len(movable) == 1 and prob.axes[movable[0]].is_uniform:
        ax = movable[0]
        k = prob.axes[ax].k
        Pm, Lm, Um = (np.moveaxis(x, ax, -1).reshape(-1, k) for x in (P, L, U))
        cost = float(uniform_closed_form(Pm, Lm, Um, prob.alpha, prob.axes[ax].uniform_cost).sum())
        kind = "fast-uniform"
    else:
        return None
    return AEMCResult(value=prob.normalise(cost), cost=cost, solver=kind, seconds=clock.elapsed(),
                      q_total=prob.q_total)

