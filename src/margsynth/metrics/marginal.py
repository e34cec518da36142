"""Marginal distances: L1 and total variation between count tables.

Generic helpers: each takes two count arrays of the same shape, or two
:class:`~margsynth.dataset.Dataset` objects plus the attribute list of the
marginal. ``l1`` is the paper's "marginal table distance" baseline (MGD paper
§2.2); ``tv`` compares the normalised tables (half the L1 distance between
the two distributions).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..dataset import Dataset

__all__ = ["marginal_l1", "marginal_tv", "marginal_pair", "mean_marginal_tv"]


def _counts(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: counts contain NaN or inf")
    if (arr < 0).any():
        raise ValueError(f"{name}: counts contain negative values")
    return arr


def marginal_pair(a, b, attrs: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Two marginal tables: arrays as given, or ``Dataset.marginal(attrs)`` of each."""
    if isinstance(a, Dataset) or isinstance(b, Dataset):
        if not (isinstance(a, Dataset) and isinstance(b, Dataset)):
            raise ValueError("pass two Datasets or two count arrays, not one of each")
        if attrs is None:
            raise ValueError("Datasets need the marginal's attribute list")
        if a.domain.project(attrs).shape != b.domain.project(attrs).shape:
            raise ValueError(f"the two datasets' domains differ on {list(attrs)}")
        return a.marginal(attrs).astype(np.float64), b.marginal(attrs).astype(np.float64)
    x, y = _counts(a, "first table"), _counts(b, "second table")
    if x.shape != y.shape:
        raise ValueError(f"tables have different shapes {x.shape} and {y.shape}")
    return x, y


def marginal_l1(a, b, attrs: Sequence[str] | None = None, *, normalise: bool = False) -> float:
    """``Σ|a − b|`` over the marginal's cells (optionally divided by ``Σb``)."""
    x, y = marginal_pair(a, b, attrs)
    d = float(np.abs(x - y).sum())
    if normalise:
        tot = float(y.sum())
        return d / tot if tot > 0 else d
    return d


def marginal_tv(a, b, attrs: Sequence[str] | None = None) -> float:
    """Total variation between the normalised tables: ``½ Σ|a/Σa − b/Σb|`` (in [0, 1])."""
    x, y = marginal_pair(a, b, attrs)
    sx, sy = x.sum(), y.sum()
    if sx <= 0 or sy <= 0:
        raise ValueError("total variation needs two tables with positive totals")
    return float(0.5 * np.abs(x / sx - y / sy).sum())


def mean_marginal_tv(a: Dataset, b: Dataset, cliques: Iterable[Sequence[str]]) -> float:
    """Mean total variation over a list of marginals (attribute lists)."""
    vals = [marginal_tv(a, b, c) for c in cliques]
    if not vals:
        raise ValueError("no marginals given")
    return float(np.mean(vals))
