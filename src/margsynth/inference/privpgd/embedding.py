"""Embedding of a discrete domain into the unit cube (PrivPGD paper §3.1, Eq. 4).

Attribute ``i`` with ``n_i`` values is mapped to ``n_i`` equally spaced centres in
``[0, 1]``, the midpoints of ``n_i`` equal bins::

    e_i(k) = (2k + 1) / (2 n_i),        k = 0, ..., n_i - 1            (Eq. 4)

so the embedding preserves the order of the codes (age bins, discretised
continuous values) and the distance between neighbouring codes is ``1 / n_i``.
A record ``x`` is embedded coordinate-wise, ``e(x) = (e_1(x_1), ..., e_d(x_d))``,
and a marginal over a clique ``C`` lives on the product grid
``prod_{i in C} {e_i(0), ..., e_i(n_i - 1)}`` (cells in C order, i.e. row-major,
matching :meth:`margsynth.dataset.Dataset.marginal`).

This module is numpy-only; the torch code in this package consumes its arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...dataset import Dataset
from ...domain import Domain

__all__ = ["attribute_centres", "check_domain", "clique_centres", "embed", "nearest_codes"]


def check_domain(domain: Domain) -> tuple[int, ...]:
    """Sizes of ``domain``'s attributes; ``ValueError`` if any has fewer than 2 values.

    A one-value attribute carries no information and has no spacing to embed
    (PrivPGD's grid needs at least two centres per axis); drop it before synthesis.
    """
    if not isinstance(domain, Domain):
        raise ValueError(f"expected a Domain, got {type(domain).__name__}")
    if len(domain) == 0:
        raise ValueError("domain has no attributes")
    small = [a.name for a in domain.attributes if a.size < 2]
    if small:
        raise ValueError(
            f"PrivPGD needs every attribute to have at least 2 values; attribute(s) {small} have size 1 "
            "(drop constant attributes before synthesis)"
        )
    return domain.shape


def attribute_centres(size: int) -> np.ndarray:
    """The ``size`` centres ``(2k + 1) / (2 size)`` of Eq. 4 (float64, increasing).

    >>> attribute_centres(4)
    array([0.125, 0.375, 0.625, 0.875])
    """
    if isinstance(size, bool) or int(size) != size or size < 2:
        raise ValueError(f"attribute size must be an integer >= 2, got {size!r}")
    return (2.0 * np.arange(int(size)) + 1.0) / (2.0 * int(size))


def clique_centres(sizes: Sequence[int]) -> np.ndarray:
    """``(prod sizes, len(sizes))`` array: the embedded cell centres of a marginal,
    cells in row-major (C) order — the order of ``Dataset.marginal(...).ravel()``.

    >>> clique_centres([2, 3]).shape
    (6, 2)
    """
    axes = [attribute_centres(s) for s in sizes]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def embed(data: Dataset) -> np.ndarray:
    """``(n, d)`` float64 array of embedded records ``e(x)`` (Eq. 4)."""
    sizes = np.asarray(check_domain(data.domain), dtype=np.float64)
    return (2.0 * data.codes.astype(np.float64) + 1.0) / (2.0 * sizes)


def nearest_codes(points: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Map points of ``[0, 1]^d`` (or beyond; clipped) to the code of the nearest centre
    per coordinate: ``argmin_k |x - e(k)| = min(floor(n x), n - 1)`` (finalization, §3.3).

    Ties (a point exactly half-way) go to the upper centre. Returns int64 ``(n, d)``.
    """
    pts = np.asarray(points, dtype=np.float64)
    n = np.asarray(sizes, dtype=np.int64)
    if pts.ndim != 2 or pts.shape[1] != n.size:
        raise ValueError(f"points must have shape (n, {n.size}), got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("points contain non-finite values")
    codes = np.floor(pts * n).astype(np.int64)
    return np.clip(codes, 0, n - 1)
