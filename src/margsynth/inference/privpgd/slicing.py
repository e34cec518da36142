"""Sliced-Wasserstein primitives shared by the projection and optimization steps.

Closed forms on the line (paper §2.2 and §3.3):

* Eq. 2/8 — for two empirical measures with the same number ``N`` of equally
  weighted atoms, ``W_2^2(a, b) = (1/N) sum_r (a_(r) - b_(r))^2`` where ``a_(r)`` is
  the ``r``-th smallest atom (sorting formula, :func:`w2_squared_sorted`).
* Eq. 3 (Vallender) — for finite (signed) measures ``alpha, beta`` on the line with
  atoms at positions ``v``: ``W_1(alpha, beta) = int |F_alpha(t) - F_beta(t)| dt``;
  with the atoms sorted, ``= sum_{r<K} |sum_{r'<=r} (alpha - beta)_(r')| (v_(r+1) - v_(r))``
  (:func:`w1_cdf`). This is how W1 extends to the signed noisy marginals (Eq. 5).
* Eq. 1 — ``SW_p^p(mu, nu) = E_{theta ~ U(S^{k-1})} W_p^p(theta#mu, theta#nu)``,
  estimated with a finite set of directions (:func:`sliced_wasserstein`).

Direction banks. For a marginal over ``k`` attributes the directions are unit
vectors of ``R^k``. A :class:`DirectionBank` fixes ``M`` of them per clique and
precomputes, for every direction, the sort order of the clique's grid cells and
the gaps between consecutive sorted projections, so that neither the projection
step nor the targets of the optimization step sort anything while iterating
(sorting is the bottleneck on a CPU: ~300 ns per element with ``torch.sort``).
For ``k = 2`` (the paper's 2-way marginals) direction ``m`` is the angle
``phi_m = pi * frac(phi_0 + m g)``, ``g = (sqrt 5 - 1)/2`` (golden-ratio / Kronecker
sequence, random ``phi_0``): any ``P`` consecutive rows are ``P`` well-spread
angles of ``[0, pi)`` (``theta`` and ``-theta`` give the same 1-D distances), so
drawing a random block of ``P`` consecutive rows is a randomised quasi-Monte-Carlo
estimate of the integral over the circle. For ``k = 1`` the single direction is
``+1``; for ``k >= 3`` the rows are i.i.d. uniform on the sphere.

This module is numpy-only, except :func:`w2_squared_sorted`, which also takes torch tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from . import kernels

__all__ = [
    "DirectionBank",
    "directions",
    "sliced_wasserstein",
    "w1_cdf",
    "w2_squared_sorted",
]

GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def directions(k: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """``(m, k)`` unit directions for a ``k``-attribute marginal (see module docstring).

    ``k == 1`` returns the single direction ``[[1.0]]`` whatever ``m``.
    """
    if k < 1 or m < 1:
        raise ValueError(f"need k >= 1 and m >= 1, got k={k}, m={m}")
    if k == 1:
        return np.ones((1, 1))
    if k == 2:
        phi = np.pi * np.mod(rng.random() + GOLDEN * np.arange(m), 1.0)
        return np.stack([np.cos(phi), np.sin(phi)], axis=1)
    g = rng.standard_normal((m, k))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def w2_squared_sorted(a, b):
    """Eq. 8: ``W_2^2`` between the empirical measures of the last-axis samples of ``a``
    and ``b`` (same length ``N``, equal weights): ``mean_r (sort(a)_r - sort(b)_r)^2``.
    Works on numpy arrays and torch tensors (batched over leading axes)."""
    if isinstance(a, torch.Tensor):
        return ((torch.sort(a, dim=-1).values - torch.sort(b, dim=-1).values) ** 2).mean(dim=-1)
    a = np.sort(np.asarray(a, dtype=np.float64), axis=-1)
    b = np.sort(np.asarray(b, dtype=np.float64), axis=-1)
    if a.shape != b.shape:
        raise ValueError(f"Eq. 8 needs equally many atoms, got {a.shape} and {b.shape}")
    return ((a - b) ** 2).mean(axis=-1)


def w1_cdf(positions, alpha, beta):
    """Eq. 3 (Vallender): ``W_1(alpha, beta) = int |F_alpha - F_beta|`` for finite (possibly
    signed) measures with weights ``alpha``, ``beta`` on common atoms ``positions`` (1-d).

    The mass difference is not required to vanish; the integral runs over the atoms'
    hull ``[min v, max v]`` (what Eq. 5 minimises for a signed ``beta``).
    """
    v = np.asarray(positions, dtype=np.float64).ravel()
    d = np.asarray(alpha, dtype=np.float64).ravel() - np.asarray(beta, dtype=np.float64).ravel()
    if v.shape != d.shape:
        raise ValueError(f"positions and weights disagree in length: {v.shape} vs {d.shape}")
    order = np.argsort(v, kind="stable")
    v, d = v[order], d[order]
    return float(np.sum(np.abs(np.cumsum(d)[:-1]) * np.diff(v)))


def sliced_wasserstein(x, y, dirs, p: int = 2, x_weights=None, y_weights=None) -> float:
    """``SW_p(mu, nu) = (mean_theta W_p^p(theta#mu, theta#nu))^(1/p)`` over the given
    ``dirs`` (``(m, k)`` rows), for weighted point clouds ``x`` (``(n, k)``) and ``y``.

    Uses the quantile-function form of Eq. 2 (exact for weighted atoms); POT's
    ``ot.sliced_wasserstein_distance`` with ``projections=dirs.T`` computes the same
    number. numpy only.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    dirs = np.atleast_2d(np.asarray(dirs, dtype=np.float64))
    a = np.full(len(x), 1.0 / len(x)) if x_weights is None else np.asarray(x_weights, float) / np.sum(x_weights)
    b = np.full(len(y), 1.0 / len(y)) if y_weights is None else np.asarray(y_weights, float) / np.sum(y_weights)
    total = 0.0
    for th in dirs:
        total += _wp_1d(x @ th, y @ th, a, b, p)
    return float((total / len(dirs)) ** (1.0 / p))


def _wp_1d(u, v, a, b, p):
    """``W_p^p`` between weighted 1-d measures via quantile functions (Eq. 2)."""
    iu, iv = np.argsort(u, kind="stable"), np.argsort(v, kind="stable")
    u, a, v, b = u[iu], a[iu], v[iv], b[iv]
    ca, cb = np.cumsum(a), np.cumsum(b)
    levels = np.unique(np.concatenate([ca, cb]))
    levels = levels[levels <= min(ca[-1], cb[-1]) + 1e-15]
    lo = np.concatenate([[0.0], levels[:-1]])
    w = levels - lo
    mid = (lo + levels) / 2
    qa = u[np.minimum(np.searchsorted(ca, mid), len(u) - 1)]
    qb = v[np.minimum(np.searchsorted(cb, mid), len(v) - 1)]
    return float(np.sum(w * np.abs(qa - qb) ** p))


@dataclass(eq=False)
class DirectionBank:
    """``M`` directions per clique with precomputed sort orders, in one flat layout.

    Layout: the cells of all cliques are numbered globally, clique after clique
    (``cell_offsets[s]`` is the first cell of clique ``s``). Row ``m`` of :attr:`order`
    holds, in clique ``s``'s columns ``cell_offsets[s] .. cell_offsets[s + 1] - 1``, the
    clique's *local* cell indices sorted by their projection on the clique's ``m``-th
    direction; :attr:`gap` holds, at the same positions, the gap to the next sorted
    projection (0 at each clique's last cell). Local indices fit 16 bits for cliques of
    up to 65,536 cells (``order`` is then uint16, else int32): the bank is read once per
    projection iteration, so its size is its cost.

    Attributes: ``dirs[s]`` (``(M_s, k_s)`` float64), ``order`` (``(M, n_cells)`` numpy
    uint16/int32), ``gap`` (``(M, n_cells)`` numpy float32), ``cell_offsets`` (``S + 1``),
    ``M`` (rows; cliques with fewer distinct directions, e.g. 1-way ones, repeat theirs).
    """

    dirs: list
    order: np.ndarray
    gap: np.ndarray
    cell_offsets: np.ndarray
    M: int

    @classmethod
    def build(cls, centres: Sequence[np.ndarray], m: int, rng: np.random.Generator) -> DirectionBank:
        """Draw the directions (:func:`directions`) and sort every clique's projected
        centres once per direction (:func:`.kernels.bank_rows`: stable sorts)."""
        sizes = [c.shape[0] for c in centres]
        cell_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n_cells = int(cell_offsets[-1])
        order = np.empty((m, n_cells), dtype=np.uint16 if max(sizes, default=0) <= 65536 else np.int32)
        gap = np.zeros((m, n_cells), dtype=np.float32)
        dirs = []
        for s, c in enumerate(centres):
            a, b = cell_offsets[s], cell_offsets[s + 1]
            ds = directions(c.shape[1], m, rng)
            dirs.append(ds)
            Ms = ds.shape[0]
            kernels.bank_rows(ds, np.asarray(c, dtype=np.float64), order[:Ms, a:b], gap[:Ms, a:b])
            for r in range(Ms, m, Ms):  # fewer distinct directions (a 1-way marginal): rows repeat
                order[r : r + Ms, a:b] = order[: min(Ms, m - r), a:b]
                gap[r : r + Ms, a:b] = gap[: min(Ms, m - r), a:b]
        return cls(dirs, order, gap, cell_offsets, m)

    @property
    def n_cells(self) -> int:
        return int(self.cell_offsets[-1])

    def local_order(self, s: int, rows) -> np.ndarray:
        """``(len(rows), K_s)`` int64: clique ``s``'s cell indices (local) in sorted order,
        for the rows ``rows`` (a slice or integer indices)."""
        a, b = int(self.cell_offsets[s]), int(self.cell_offsets[s + 1])
        return self.order[rows, a:b].astype(np.int64)

    def nbytes(self) -> int:
        return self.order.nbytes + self.gap.nbytes
