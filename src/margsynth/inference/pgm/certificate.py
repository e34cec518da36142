"""The optimality certificate of a Private-PGM fit: a certified gap to the optimum of Eq. (4.2).

The problem of :mod:`.objective` (Eq. 4.2 of McKenna, Miklau & Sheldon, "Winning the NIST
Contest: A scalable and general approach to differentially private synthetic data", JPC
2021, arXiv:2108.04978, §4.2) is convex, so every fit returns, besides its loss ``L(mu)``,
a certified gap ``G >= L(mu) - min_M L`` (``M`` the marginal polytope of the junction
tree): ``G = L(mu) - LB`` for the best of three lower bounds, all read off one max-sum
calibration on ``-grad L`` (:meth:`~.inference.BeliefPropagation.max_marginals`; a linear
function over ``M`` is minimised at a vertex, a point mass) — the Frank–Wolfe duality gap
(Jaggi, "Revisiting Frank-Wolfe: projection-free sparse convex optimization", ICML 2013,
§2), and for the L2 loss the Fenchel dual at the scaled residual and at the residual lifted
clique by clique (:func:`certified_gap`). The lift is what makes the certificate close:
near an optimum on a face of ``M`` (noisy counts that want to be negative) the Frank–Wolfe
gap shrinks only like the distance to the optimum; on MST's fit of adult (ε = 1) it leaves
``G / L = 1.1e-3`` after 5,000 iterations where the lifted bound certifies ``2.3e-8``
(``benchmarks/bench_certificate.py``). :func:`~.estimation.estimate` puts it in
``model.stats["gap"]``; :func:`~.estimation.estimation_summary` gives ``{"loss", "gap",
"iterations", "method"}``, which every PGM-based mechanism reports as
``extras["estimation"]`` and in its sidecar (``docs/api/inference.md`` derives the bounds).

Structural zeros (rules, :mod:`margsynth.rules`): the fit then minimises over ``M_Z``, the
points of ``M`` that put no mass on a forbidden cell — the face of ``M`` spanned by the
point masses on allowed assignments (a point of ``M`` is a mixture of point masses; it
leaves the forbidden cells empty exactly when every point mass it uses does). Every bound
above is weak duality for a linear function minimised over the polytope, so it stays valid
and closes on ``M_Z`` when that minimum is taken over the allowed assignments only: the
max-sum calibration runs on ``-G`` plus the zeros (``-inf`` on forbidden cells), and in
the lift a cell that no allowed assignment reaches (max-marginal ``-inf``) is left out —
no allowed assignment pays its lift, so raising the dual there buys nothing
(:func:`certified_gap`, ``zeros``). A bound over ``M`` would stay valid too (``M_Z`` is a
subset) but would not close at an optimum that the zeros move.
"""

from __future__ import annotations

import numpy as np

from .inference import BeliefPropagation
from .objective import Objective

__all__ = ["LIFT_BATCH", "certified_gap"]

#: The certificate's lifts are computed in batches of about this many cells (its temporary
#: arrays take ~120 bytes per cell of a batch).
LIFT_BATCH = 1 << 20


def certified_gap(
    bp: BeliefPropagation, obj: Objective, val: float, p: np.ndarray, G: np.ndarray, zeros: np.ndarray | None = None
) -> float:
    """The certified gap of a point with loss ``val``, marginals ``p`` and gradient ``G`` (flat
    vectors of ``bp``), ``L(mu) - LB`` with ``LB <= min_M L`` (M the marginal polytope of
    the junction tree; with ``zeros``, the flat ``0`` / ``-inf`` structural zeros of a fit
    with rules, ``M_Z``: its points with no mass on a zero, module docstring), never negative. ``LB`` is the best of three lower bounds, all read
    off one max-sum calibration on ``-G`` (:meth:`~.inference.BeliefPropagation.max_marginals`;
    a linear function over ``M`` is minimised at a point mass, and every clique's
    max-marginal has the MAP value as its maximum):

    * ``L(mu) - fw``, ``fw = max_{s in M} <grad L(mu), mu - s>`` the Frank–Wolfe gap
      (convexity; Jaggi, "Revisiting Frank-Wolfe: projection-free sparse convex
      optimization", ICML 2013, §2; for the L1 loss with its subgradient: the only one);
    * for the L2 loss ``L = K + 0.5 ||A mu - b||^2`` (``K``: the constants of merged
      repeated measurements), the Fenchel dual at the scaled residual ``t r``, ``r = A mu
      - b``: ``K + c^2 / (2R)``, ``R = ||r||^2``, ``c = R - fw`` (and ``K`` itself, ``t =
      0``) (Borwein & Lewis, "Convex Analysis and Nonlinear Optimization", 2006,
      Thm 3.3.5);
    * for the L2 loss, the Fenchel dual at ``r`` lifted clique by clique along the
      identity terms (:func:`_lifted`): near an optimum on a face of ``M`` (cells the
      noisy counts want negative) the Frank–Wolfe gap decays only like the distance to
      the optimum, and most of it comes from cells the iterate barely uses; raising the
      dual there costs almost nothing (MST's fit of adult after 5,000 iterations:
      ``2.3e-8 L`` instead of ``1.1e-3 L``).
    """
    exact = zeros is not None
    mm = bp.max_marginals(bp.views(np.negative(G) + zeros if exact else np.negative(G)), exact_zeros=exact)
    fw = float(G @ p) + float(mm[bp.root].max())
    lower = _lower(obj, val, fw)
    if obj.loss == "l2" and obj.lift_terms:
        lower = max(lower, _lifted(bp, obj, val, p, G, mm, exact))
    return max(val - lower, 0.0)


def _lower(obj: Objective, val: float, fw: float) -> float:
    """The best lower bound on ``min_M L`` from a point with loss ``val`` and Frank–Wolfe
    gap ``fw``: ``val - fw`` (convexity), or for the L2 loss the Fenchel-dual bound along
    the point's scaled residual, whichever is larger."""
    if obj.loss != "l2":
        return val - max(fw, 0.0)
    k = obj.const + obj._sub_const
    half_r = max(val - k, 0.0)  # R / 2, R = ||r||^2
    c = 2.0 * half_r - fw
    return k + c * c / (4.0 * half_r) if c > 0 and half_r > 0 else k


def _lifted(
    bp: BeliefPropagation,
    obj: Objective,
    val: float,
    p: np.ndarray,
    G: np.ndarray,
    mm: list[np.ndarray],
    exact_zeros: bool = False,
) -> float:
    """The lifted dual bound of the L2 loss at a point (loss ``val``, marginals ``p``,
    gradient ``G``), given ``mm``, the max-marginals of ``-G`` (``n_C = -mm_C``, the
    min-marginals of ``G``).

    Max-sum calibration reparametrises the linear function (Koller & Friedman 2009,
    §13.3): ``G(x) = sum_C phi_C(x_C)`` with ``phi_R = n_R`` at the root and ``phi_C = n_C
    - n_{S_C} >= 0`` below it (``S_C`` the separator to the parent). For the dual point
    ``lambda = r + Delta`` (``r = A mu - b``), ``Delta`` lifting clique ``C`` along one
    identity term ``T`` it hosts (measured set ``T``, coefficient ``a``: ``A^T Delta`` adds
    ``h_C(x_T)``, ``||Delta||^2 = ||h_C||^2 / a``), weak duality gives

        ``min_M L >= L(mu) - <G, mu> + min_x (G + sum_C h_C)(x) - sum_C (<h_C, mu_T>
        + ||h_C||^2 / (2a))``.

    With ``h_C = (u_C - m_T)_+``, ``m_T(x_T) = min_{x_C ~ x_T} phi_C(x_C)``, every
    ``phi_C + h_C >= u_C``, so ``min_x (G + h) >= sum_C u_C`` and the bound separates: clique
    by clique, ``max_u u - <(u - m_T)_+, mu_T> - ||(u - m_T)_+||^2 / (2a)`` (concave,
    piecewise quadratic, maximised exactly over the sorted ``m_T``; ``u = min phi_C``, no
    lift, where ``C`` hosts no identity term). With no lift at all it is ``L(mu) - fw``;
    lifting costs almost nothing on cells the iterate barely uses — the cells that keep
    the Frank–Wolfe gap of a near-optimal point large when the optimum lies on a face of
    ``M`` (noisy counts that want to be negative).

    ``exact_zeros`` (``mm`` of ``-G`` plus structural zeros): the minimum over ``x`` runs over
    allowed assignments only, every cell of which has a finite max-marginal; ``phi_C`` is
    ``+inf`` on the others (no allowed assignment uses them), ``min phi_C`` is taken over the
    finite cells, and the measured cells with ``m_T = +inf`` get no lift (``h = 0``): the
    inequality ``phi_C + h_C >= u_C`` is needed on reachable cells only."""
    pv = bp.views(p)
    Av = bp.views(obj.A)
    total = val - float(G @ p)  # the shift by <G, mu>, on the root's phi
    ms, ws, invs, lens, owner = [], [], [], [], []
    best: dict[int, float] = {}

    def flush() -> None:  # the lifts gathered so far, in one batch (bounded memory)
        gain = _best_lifts(np.concatenate(ms), np.concatenate(ws), np.concatenate(invs), np.array(lens))
        for c, g in zip(owner, gain):
            best[c] = max(best.get(c, 0.0), float(g))
        for lst in (ms, ws, invs, lens, owner):
            lst.clear()

    if exact_zeros:
        with np.errstate(invalid="ignore"):  # -inf - -inf: a separator value no allowed assignment reaches
            tables = bp.decompose(mm)
    else:
        tables = bp.decompose(mm)
    for c, table in enumerate(tables):
        phi = np.negative(table, out=table)  # G = sum_C phi_C, phi_C >= 0 below the root
        if exact_zeros:
            phi[np.isnan(phi)] = np.inf  # unreachable cells: +inf, as those at -inf in mm
        total += float(phi.min())  # no lift; a lift adds its gain over this below
        for axes, a, part in obj.lift_terms.get(c, ()):
            m = (phi.min(axis=axes) if axes else phi).ravel()
            w = (pv[c].sum(axis=axes) if axes else pv[c]).ravel()
            if part is not None:  # a matrix term: its partition's rows are the cells
                order, starts, inv = part
                m, w = np.minimum.reduceat(m[order], starts), np.add.reduceat(w[order], starts)
            else:
                inv = np.full(m.size, 1.0 / a) if axes else 1.0 / Av[c].ravel()
            if exact_zeros:  # measured cells no allowed assignment reaches: no lift there
                keep = np.isfinite(m)
                if not keep.all():
                    m, w, inv = m[keep], w[keep], inv[keep]
                if not m.size:
                    continue
            ms.append(m)
            ws.append(w)
            invs.append(inv)
            lens.append(m.size)
            owner.append(c)
            if sum(lens) >= LIFT_BATCH:
                flush()
    if lens:
        flush()
    return total + sum(best.values())


def _best_lifts(m: np.ndarray, w: np.ndarray, inv_a: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """For each segment ``k`` of the concatenated arrays (lengths ``lens``), ``max_u f_k(u) -
    min(m)`` with ``f_k(u) = u - sum_i w_i (u - m_i)_+ - 0.5 sum_i (u - m_i)_+^2 inv_a_i``
    (concave, piecewise quadratic in ``u``; ``f_k(min m) = min m``, so the gain is >= 0):
    the stationary point of every interval between consecutive sorted ``m_i``, clipped to the
    interval, and the best of them; all segments in a few vector operations."""
    seg = np.repeat(np.arange(lens.size), lens)
    order = np.lexsort((m, seg))
    m, w, inv_a = m[order], w[order], inv_a[order]
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    ends = starts + lens - 1

    def segsum(x: np.ndarray) -> np.ndarray:  # cumulative sums restarting at every segment
        cs = np.cumsum(x)
        return cs - np.repeat(cs[starts] - x[starts], lens)

    # on [m_i, m_{i+1}] (cells up to i below u): u - (u W - WM) - 0.5 (u^2 IA - 2 u MA + MA2)
    W, WM = segsum(w), segsum(w * m)
    IA, MA, MA2 = segsum(inv_a), segsum(m * inv_a), segsum(m * m * inv_a)
    hi = np.empty_like(m)
    hi[:-1] = m[1:]
    hi[ends] = np.inf
    u = np.clip((1.0 - W + MA) / IA, m, hi)
    d = u - (u * W - WM) - 0.5 * (u * u * IA - 2.0 * u * MA + MA2)
    return np.maximum(np.maximum.reduceat(d, starts) - m[starts], 0.0)
