"""Consistency post-processing of noisy marginals (PrivSyn §4.3; docs/notes/privsyn.md).

Noisy marginals that share attributes disagree on them, and contain negative
cells. PrivSyn (Zhang et al., USENIX Security 2021, §4.3 "Post Processing")
fixes both by alternating two operations until they agree:

1. **Consistency under uneven budgets** ("Consistency under Uneven Privacy
   Budget Allocation"). For every attribute set ``A`` shared by several
   marginals ``M_1..M_s`` (``A`` runs over the closure of the marginals'
   pairwise intersections, the empty set included, so totals agree too), each
   marginal gives an estimate of the ``A``-marginal by summing ``g_i`` of its
   cells per ``A``-cell. They are replaced by the weighted average with weights
   ``w_i = (ρ_i/g_i) / Σ_j (ρ_j/g_j)`` -- the minimiser of the variance
   ``Σ_i w_i² g_i/ρ_i`` subject to ``Σ_i w_i = 1`` (§4.3, the Lagrangian
   solution printed after the optimisation problem). Here the per-cell noise
   variance ``v_i`` (``∝ 1/ρ_i``) is taken directly, so ``w_i ∝ 1/(v_i g_i)``.
   Each marginal's correction ``avg(a) - est_i(a)`` is spread evenly over its
   ``g_i`` contributing cells (docs/notes/privsyn.md). Sets are processed in increasing
   size; one pass then makes every shared sub-marginal equal (a later, larger
   set ``B ⊃ A`` averages views that already agree on ``A``, and the weights
   sum to one, so ``A`` stays consistent).
2. **Non-negativity keeping totals** ("Overall Consistency"). Each marginal is
   replaced by its Euclidean projection onto ``{x ≥ 0, Σx = total}`` -- the
   maximum-likelihood valid table the paper cites. This is exactly the fixed
   point of the rule "set negatives to zero and take the excess evenly off the
   positive cells, repeatedly" (Michelot's algorithm; docs/notes/privsyn.md); it is computed in
   closed form by the sort-based simplex projection.

"We iterate the two operations multiple times to ensure both consistency
constraints are satisfied" (§4.3): :func:`make_consistent` alternates them
until the largest disagreement on a shared sub-marginal falls below
``tol`` × total (or ``max_iterations`` passes), always finishing with the
non-negativity step, so every cell is exactly ``>= 0`` on return.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..domain import Domain

__all__ = [
    "ConsistencyResult",
    "intersection_closure",
    "make_consistent",
    "max_inconsistency",
    "cut_nonnegative",
    "project_nonnegative",
]


@dataclass
class ConsistencyResult:
    """Output of :func:`make_consistent`.

    ``marginals[i]`` is the post-processed table of ``cliques[i]`` (same shape
    as the input, axes in the clique's given order); ``iterations`` the number
    of (consistency, non-negativity) passes made; ``inconsistency`` the largest
    absolute disagreement on any shared sub-marginal after each pass.
    """

    cliques: list[tuple[str, ...]]
    marginals: list[np.ndarray]
    iterations: int
    inconsistency: list[float] = field(default_factory=list)


def project_nonnegative(values: np.ndarray, total: float | None = None) -> np.ndarray:
    """Euclidean projection of ``values`` onto ``{x >= 0, Σx = total}`` (PrivSyn §4.3,
    "Overall Consistency"; ``total`` defaults to ``values.sum()``).

    Equals the limit of repeatedly zeroing negatives and taking the excess evenly
    off the positive cells (docs/notes/privsyn.md): ``x_i = max(v_i - τ, 0)`` with ``τ`` the
    unique shift making the sum ``total``. A non-positive ``total`` gives all zeros.

    >>> project_nonnegative(np.array([3.0, -1.0, 1.0])).tolist()
    [2.5, 0.0, 0.5]
    """
    v = np.asarray(values, dtype=np.float64)
    shape = v.shape
    flat = v.ravel()
    t = float(flat.sum()) if total is None else float(total)
    if not np.isfinite(t):
        raise ValueError(f"total must be finite, got {t!r}")
    if not np.all(np.isfinite(flat)):
        raise ValueError("values contain non-finite entries")
    if t <= 0 or flat.size == 0:
        return np.zeros(shape)
    if flat.min() >= 0 and np.isclose(flat.sum(), t, rtol=1e-12, atol=0):
        return flat.reshape(shape).copy()
    u = np.sort(flat)[::-1]
    css = np.cumsum(u) - t
    k = np.arange(1, u.size + 1)
    cond = u - css / k > 0
    r = int(np.flatnonzero(cond)[-1])
    tau = css[r] / (r + 1)
    return np.maximum(flat - tau, 0.0).reshape(shape)


def cut_nonnegative(values: np.ndarray) -> np.ndarray:
    """Non-negativity keeping the total by *cutting* (the authors' public PrivSyn code's
    ``norm_cut``): set negative cells to 0, then zero the smallest positive cells
    until their mass absorbs the removed negative mass (the boundary cell is reduced
    partially). Unlike :func:`project_nonnegative` it leaves large cells untouched,
    which suits sparse tables where most positive noise sits on true zeros.

    >>> cut_nonnegative(np.array([5.0, -2.0, 1.0, 3.0])).tolist()
    [5.0, 0.0, 0.0, 2.0]
    """
    v = np.array(values, dtype=np.float64)
    shape = v.shape
    flat = v.ravel()
    if not np.all(np.isfinite(flat)):
        raise ValueError("values contain non-finite entries")
    neg = flat < 0
    debt = -float(flat[neg].sum())
    if debt == 0.0:
        return flat.reshape(shape)
    flat[neg] = 0.0
    pos = np.flatnonzero(flat > 0)
    if pos.size == 0 or flat[pos].sum() <= debt:
        return np.zeros(shape)
    order = pos[np.argsort(flat[pos], kind="stable")]
    csum = np.cumsum(flat[order])
    k = int(np.searchsorted(csum, debt, side="right"))  # cells order[:k] are zeroed entirely
    flat[order[:k]] = 0.0
    if k < order.size:
        flat[order[k]] = csum[k] - debt
    return flat.reshape(shape)


def intersection_closure(cliques: Sequence[Sequence[str]], domain: Domain) -> list[tuple[str, ...]]:
    """Every attribute set that is an intersection of two or more of the cliques,
    closed under further intersection (the empty set included), in increasing size
    then domain order. These are the sets ``A`` PrivSyn §4.3 makes consistent."""
    sets = {frozenset(c) for c in cliques}
    base = list(sets)
    found: set[frozenset] = set()
    for i in range(len(base)):
        for j in range(i + 1, len(base)):
            found.add(base[i] & base[j])
    if len(base) >= 2:
        found.add(frozenset())
    frontier = set(found)
    while frontier:
        new = set()
        for a in frontier:
            for b in list(found):
                c = a & b
                if c not in found:
                    new.add(c)
        found |= new
        frontier = new
    # a set equal to a clique that is contained in another clique is a shared set too
    for a in base:
        if any(a < b for b in base):
            found.add(a)
    return sorted((domain.canonical(a) for a in found), key=lambda t: (len(t), [domain.index(x) for x in t]))


def _view(table: np.ndarray, clique: tuple[str, ...], sub: tuple[str, ...]) -> np.ndarray:
    """The marginal of ``table`` (axes = ``clique``) on ``sub`` (axes in ``sub`` order)."""
    drop = tuple(i for i, a in enumerate(clique) if a not in sub)
    s = table.sum(axis=drop) if drop else table
    present = [a for a in clique if a in sub]
    if len(sub) > 1:
        s = np.transpose(s, [present.index(a) for a in sub])
    return np.asarray(s)


def _expand(delta: np.ndarray, clique: tuple[str, ...], sub: tuple[str, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Broadcast a table over ``sub`` (axes in ``sub`` order) to the axes of ``clique``."""
    present = [a for a in clique if a in sub]
    d = np.transpose(delta, [sub.index(a) for a in present]) if len(sub) > 1 else np.asarray(delta)
    bshape = [shape[i] if a in sub else 1 for i, a in enumerate(clique)]
    return np.reshape(d, bshape)


def _check_inputs(cliques, marginals, variances, domain):
    if len(cliques) != len(marginals):
        raise ValueError(f"{len(cliques)} cliques but {len(marginals)} marginals")
    if not cliques:
        raise ValueError("no marginals given")
    cl = []
    tabs = []
    for i, (c, m) in enumerate(zip(cliques, marginals)):
        c = (c,) if isinstance(c, str) else tuple(c)
        c = domain.check_attrs(c, f"clique {i}")
        if not c:
            raise ValueError(f"clique {i} is empty")
        shape = domain.project(c).shape
        arr = np.asarray(m, dtype=np.float64)
        if arr.size != int(np.prod(shape)):
            raise ValueError(f"marginal {i} over {c} has {arr.size} cells, expected {int(np.prod(shape))} (shape {shape})")
        arr = arr.reshape(shape).copy()
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"marginal {i} over {c} has non-finite entries")
        cl.append(c)
        tabs.append(arr)
    if len(set(cl)) != len(cl):
        dup = sorted({c for c in cl if cl.count(c) > 1})
        raise ValueError(f"cliques repeat: {dup}; merge repeated measurements before post-processing")
    if variances is None:
        v = np.ones(len(cl))
    else:
        v = np.asarray(variances, dtype=np.float64)
        if v.shape != (len(cl),) or not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise ValueError(f"variances must be {len(cl)} finite positive numbers, got {variances!r}")
    return cl, tabs, v


def _consistency_pass(cliques, tables, variances, shared) -> None:
    for a in shared:
        aset = set(a)
        members = [i for i, c in enumerate(cliques) if aset <= set(c)]
        if len(members) < 2:
            continue
        views = [_view(tables[i], cliques[i], a) for i in members]
        g = np.array([tables[i].size / max(views[k].size, 1) for k, i in enumerate(members)])
        w = 1.0 / (variances[members] * g)
        w /= w.sum()
        avg = sum(wk * vk for wk, vk in zip(w, views))
        for k, i in enumerate(members):
            corr = (avg - views[k]) / g[k]
            tables[i] += _expand(np.asarray(corr), cliques[i], a, tables[i].shape)


def max_inconsistency(cliques: Sequence[Sequence[str]], marginals: Sequence[np.ndarray], domain: Domain) -> float:
    """Largest absolute difference between two marginals' views of a shared attribute set."""
    cl = [domain.check_attrs((c,) if isinstance(c, str) else tuple(c)) for c in cliques]
    tabs = [np.asarray(m, dtype=np.float64).reshape(domain.project(c).shape) for c, m in zip(cl, marginals)]
    worst = 0.0
    for a in intersection_closure(cl, domain):
        views = [_view(t, c, a) for c, t in zip(cl, tabs) if set(a) <= set(c)]
        for v in views[1:]:
            worst = max(worst, float(np.max(np.abs(np.asarray(v) - np.asarray(views[0])))))
    return worst


def make_consistent(
    cliques: Sequence[Sequence[str]],
    marginals: Sequence[np.ndarray],
    domain: Domain,
    *,
    variances: Sequence[float] | None = None,
    max_iterations: int = 100,
    tol: float = 1e-9,
    nonnegativity: str = "project",
) -> ConsistencyResult:
    """PrivSyn §4.3 post-processing: weighted-average consistency under uneven
    budgets, then non-negativity keeping totals, iterated.

    Parameters
    ----------
    cliques, marginals:
        ``marginals[i]`` is a noisy count table over ``cliques[i]`` (any array
        with ``domain.project(cliques[i]).size`` entries, C order over the
        clique's attributes as given). Cliques must be distinct.
    variances:
        Per-marginal noise variance of one cell (``Δ²/(2ρ_i)`` for a Gaussian
        measurement with zCDP budget ``ρ_i``); weights are ``∝ 1/(v_i g_i)``,
        i.e. ``∝ ρ_i/g_i`` as in §4.3. Default: equal.
    max_iterations:
        Passes of (consistency, non-negativity), at least 1.
    tol:
        Stop once the largest disagreement on a shared sub-marginal, after the
        non-negativity step, is ``<= tol`` × the largest marginal total.
    nonnegativity:
        ``"project"`` (default; the paper's minimal-L2 projection = the
        repeated even subtraction, :func:`project_nonnegative`) or ``"cut"``
        (the authors' public code, :func:`cut_nonnegative`).

    Returns
    -------
    ConsistencyResult
        Every returned cell is ``>= 0`` and every total is preserved by the
        non-negativity step.
    """
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1:
        raise ValueError(f"max_iterations must be a positive integer, got {max_iterations!r}")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if nonnegativity not in _NONNEG:
        raise ValueError(f"nonnegativity must be one of {tuple(_NONNEG)}, got {nonnegativity!r}")
    fix = _NONNEG[nonnegativity]
    cl, tabs, v = _check_inputs(cliques, marginals, variances, domain)
    # work in each clique's given order; shared sets in canonical order
    shared = intersection_closure(cl, domain)
    trace: list[float] = []
    it = 0
    while it < int(max_iterations):
        it += 1
        _consistency_pass(cl, tabs, v, shared)
        for i, t in enumerate(tabs):
            tabs[i] = fix(t)
        scale = max(max(float(t.sum()) for t in tabs), 1.0)
        gap = max_inconsistency(cl, tabs, domain) if len(cl) > 1 else 0.0
        trace.append(gap)
        if gap <= tol * scale:
            break
    return ConsistencyResult(cliques=cl, marginals=tabs, iterations=it, inconsistency=trace)


_NONNEG = {"project": project_nonnegative, "cut": cut_nonnegative}
