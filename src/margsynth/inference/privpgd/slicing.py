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

This module imports torch only for the tensors the bank hands out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

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

    Layout: the cells of all cliques are numbered globally (``cell_offsets[s]`` is the
    first cell of clique ``s``); every clique additionally owns one *separator* slot
    with global number ``n_cells + s``. Row ``m`` of :attr:`perm` lists, clique after
    clique, the separator of the clique followed by its cells sorted by their projection
    on the clique's ``m``-th direction; :attr:`gap` holds, at the same positions, the
    gap to the next sorted projection (0 on separators and on each clique's last cell).
    A prefix sum along a row therefore restarts at every clique when the separators
    carry minus the previous clique's total (see :mod:`.projection`).

    Attributes: ``dirs[s]`` (``(M_s, k_s)`` float64), ``perm`` (``(M, L)`` int32),
    ``gap`` (``(M, L)`` float32), ``seg_offsets`` (``S + 1`` row positions),
    ``cell_offsets`` (``S + 1``), ``M`` (rows; cliques with fewer distinct directions,
    e.g. 1-way ones, repeat theirs).
    """

    dirs: list
    perm: torch.Tensor
    gap: torch.Tensor
    seg_offsets: np.ndarray
    cell_offsets: np.ndarray
    M: int

    @classmethod
    def build(cls, centres: Sequence[np.ndarray], m: int, rng: np.random.Generator) -> DirectionBank:
        """Draw the directions (:func:`directions`) and sort every clique's projected
        centres once per direction (numpy argsort, stable)."""
        sizes = [c.shape[0] for c in centres]
        n_cells = int(np.sum(sizes))
        S = len(centres)
        L = n_cells + S
        perm = np.empty((m, L), dtype=np.int32)
        gap = np.zeros((m, L), dtype=np.float32)
        seg_offsets = np.zeros(S + 1, dtype=np.int64)
        cell_offsets = np.zeros(S + 1, dtype=np.int64)
        dirs = []
        pos = 0
        for s, c in enumerate(centres):
            K = c.shape[0]
            ds = directions(c.shape[1], m, rng)
            dirs.append(ds)
            rows = np.arange(m) % ds.shape[0]
            proj = c @ ds.T  # (K, M_s)
            order = np.argsort(proj, axis=0, kind="stable")  # (K, M_s)
            sorted_proj = np.take_along_axis(proj, order, axis=0)
            seg_offsets[s] = pos
            cell_offsets[s + 1] = cell_offsets[s] + K
            perm[:, pos] = n_cells + s
            perm[:, pos + 1 : pos + 1 + K] = (order[:, rows] + cell_offsets[s]).T
            gap[:, pos + 1 : pos + K] = np.diff(sorted_proj, axis=0)[:, rows].T
            pos += K + 1
        seg_offsets[S] = pos
        return cls(dirs, torch.from_numpy(perm), torch.from_numpy(gap), seg_offsets, cell_offsets, m)

    @property
    def n_cells(self) -> int:
        return int(self.cell_offsets[-1])

    def local_order(self, s: int, rows: slice | np.ndarray) -> torch.Tensor:
        """``(len(rows), K_s)`` int64: clique ``s``'s cell indices (local) in sorted order."""
        a, b = int(self.seg_offsets[s]) + 1, int(self.seg_offsets[s + 1])
        if not isinstance(rows, slice):
            rows = torch.as_tensor(np.asarray(rows, dtype=np.int64))
        return self.perm[rows, a:b].long() - int(self.cell_offsets[s])

    def nbytes(self) -> int:
        return self.perm.numel() * 4 + self.gap.numel() * 4
