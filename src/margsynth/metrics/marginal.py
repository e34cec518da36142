"""Marginal distances: L1 and total variation between count tables.

This module is the one home of the total-variation distance; every TV-based metric
of the package (``tv-1way``/``tv-2way``/``tv-3way``, the PrivPGD suite's ``tv-2way``,
NIST 2018 criteria 1 and 3, the experiments' workload errors) calls :func:`tv_distance`.

Definition. For two count tables ``x`` and ``y`` of the same shape (marginals
``M_C(D)``, ``M_C(S)`` of the real and the synthetic data over an attribute set ``C``)::

    TV(x, y) = ½ Σ_cells | x / Σx − y / Σy |

is the total-variation distance between the two tables normalised to probability
distributions; it lies in [0, 1], is 0 iff the normalised tables agree and 1 iff
their supports are disjoint. (For datasets, ``Σ M_C(D)`` is the dataset's total
weight: its record count when unweighted.) ``l1`` is the MGD paper's "marginal table
distance" baseline ``Σ|x − y|`` on the counts themselves (§2.2).

Marginals come from :meth:`~margsynth.dataset.Dataset.marginal` (one
``ravel_multi_index`` + ``bincount`` pass per marginal).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..dataset import Dataset

__all__ = ["marginal_l1", "marginal_pair", "marginal_tv", "marginal_tvs", "mean_marginal_tv", "tv_distance"]


def _counts(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: counts contain NaN or inf")
    if (arr < 0).any():
        raise ValueError(f"{name}: counts contain negative values")
    return arr


def tv_distance(x, y, *, axis: int | None = None):
    """Total variation ``½ Σ|x/Σx − y/Σy|`` between two count tables (module docstring).

    ``axis=None``: one number for the whole tables. ``axis=i``: one value per slice,
    each slice along axis ``i`` normalised by its own total (row-wise TV between
    conditional distributions); every slice must then have a positive total.
    Raises ``ValueError`` for different shapes, negative or non-finite counts, or a
    table (slice) with total 0.
    """
    p, q = _counts(x, "first table"), _counts(y, "second table")
    if p.shape != q.shape:
        raise ValueError(f"tables have different shapes {p.shape} and {q.shape}")
    sp, sq = p.sum(axis=axis, keepdims=True), q.sum(axis=axis, keepdims=True)
    if (sp <= 0).any() or (sq <= 0).any():
        raise ValueError("total variation needs two tables with positive totals")
    d = 0.5 * np.abs(p / sp - q / sq).sum(axis=axis)
    return float(d) if axis is None else d


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
    """:func:`tv_distance` of two count tables, or of two Datasets' marginals over ``attrs`` (in [0, 1])."""
    return tv_distance(*marginal_pair(a, b, attrs))


def marginal_tvs(a: Dataset, b: Dataset, cliques: Iterable[Sequence[str]]) -> np.ndarray:
    """:func:`tv_distance` between the two datasets' marginals, one value per attribute set of ``cliques``."""
    return np.array([tv_distance(*marginal_pair(a, b, c)) for c in cliques], dtype=np.float64)


def mean_marginal_tv(a: Dataset, b: Dataset, cliques: Iterable[Sequence[str]]) -> float:
    """Mean total variation over a list of marginals (attribute lists)."""
    vals = marginal_tvs(a, b, cliques)
    if not vals.size:
        raise ValueError("no marginals given")
    return float(np.mean(vals))
