"""Range-query errors: the one home of the package's range-query workloads and errors.

A *product query* over attributes ``A_1..A_k`` asks how many records have
``x_{A_j} ∈ S_j`` for every ``j``; it is answered by summing the box
``S_1 × … × S_k`` of the marginal table over ``(A_1..A_k)``. A *range query* is the
special case where each ``S_j`` is an interval ``[lo_j, hi_j]`` of an ordered
attribute. Every range-query metric of the package answers its queries with
:func:`query_errors`, in one of two error forms:

- absolute, on fractions of the records (``relative=False``; tables normalised to
  sum 1): ``|q(D)/|D| − q(S)/|S||`` — :func:`range_query_error`, the interval
  workload of :func:`range_workload` (notebook 08);
- relative, on counts (``relative=True``): ``|q(S) − q(D)| / max(q(D), floor)`` —
  the Baltimore case study's RQ (McKenna et al.'s MGD paper, Table 1;
  :func:`margsynth.metrics.baltimore.range_query_error` draws its random subset
  queries and calls :func:`query_errors`).

The metric of a workload is the mean of its queries' errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..domain import Domain

__all__ = ["RangeQuery", "query_errors", "range_query_error", "range_workload"]


@dataclass(frozen=True)
class RangeQuery:
    """``q(x) = Π_j 1[lo_j <= x_{attrs_j} <= hi_j]`` on attribute codes (inclusive bounds)."""

    attrs: tuple[str, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]

    def box(self) -> tuple[slice, ...]:
        """The query's cells in the marginal table over :attr:`attrs`, as slices."""
        return tuple(slice(lo, hi + 1) for lo, hi in zip(self.lo, self.hi))


def query_errors(true_table, synth_table, boxes: Sequence, *, relative: bool = False, floor: float = 0.0) -> np.ndarray:
    """Errors of product queries answered on two tables of the same shape.

    ``boxes``: one selection per query, a tuple with one entry per axis of the tables,
    each a ``slice`` or an array of cell indices (a query of all slices is a range
    query). ``relative=False``: ``|t_q − s_q|``; ``relative=True``:
    ``|Σ_box (s − t)| / max(t_q, floor)``, with ``t_q``, ``s_q`` the box sums of
    ``true_table`` and ``synth_table``. Returns one error per query.
    """
    t = np.asarray(true_table)
    s = np.asarray(synth_table)
    if t.shape != s.shape:
        raise ValueError(f"truth has shape {t.shape}, synthetic has shape {s.shape}")
    errs = np.empty(len(boxes))
    for i, box in enumerate(boxes):
        if len(box) != t.ndim:
            raise ValueError(f"query {i} selects {len(box)} axes of a {t.ndim}-dimensional table")
        if all(isinstance(b, slice) for b in box):
            idx = tuple(box)
        else:
            idx = np.ix_(*(np.arange(n)[b] if isinstance(b, slice) else b for n, b in zip(t.shape, box)))
        tq = float(t[idx].sum())
        if relative:  # the box sum of the differences (not the difference of two sums)
            errs[i] = abs(float((s[idx] - t[idx]).sum())) / max(tq, floor)
        else:
            errs[i] = abs(tq - float(s[idx].sum()))
    return errs


def range_workload(domain: Domain, n_queries: int, k: int, rng: np.random.Generator) -> list[RangeQuery]:
    """``n_queries`` random ``k``-attribute interval queries on the ordinal attributes.

    Eligible attributes: those the schema marks ordinal, plus binary ones (a two-value
    attribute has one order, so an interval on it is a value test). Each query picks
    ``k`` distinct eligible attributes uniformly; on an ordinal attribute of ``s``
    values its interval is ``[min(u, v), max(u, v)]`` for ``u, v`` uniform on
    ``0..s-1``; on a binary one, a single uniform value. Seeded by ``rng`` only (no data).
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    if isinstance(n_queries, bool) or not isinstance(n_queries, (int, np.integer)) or n_queries < 1:
        raise ValueError(f"n_queries must be a positive integer, got {n_queries!r}")
    eligible = [a for a in domain.attributes if a.ordinal or a.size == 2]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(eligible):
        raise ValueError(f"k must be in 1..{len(eligible)} (ordinal or binary attributes of the domain), got {k!r}")
    out = []
    for _ in range(int(n_queries)):
        pick = np.sort(rng.choice(len(eligible), size=int(k), replace=False))
        attrs, lo, hi = [], [], []
        for i in pick:
            a = eligible[int(i)]
            if a.size == 2:
                u = v = int(rng.integers(0, 2))
            else:
                u, v = sorted(int(x) for x in rng.integers(0, a.size, size=2))
            attrs.append(a.name)
            lo.append(u)
            hi.append(v)
        out.append(RangeQuery(tuple(attrs), tuple(lo), tuple(hi)))
    return out


def range_query_error(real: Dataset, synth: Dataset, queries: Sequence[RangeQuery]) -> float:
    """Mean over the queries of ``|q(D)/|D| − q(S)/|S||`` (answers as fractions of the
    records; :func:`query_errors`, absolute form), each answer read off the ``k``-way
    marginal of its attributes."""
    if not queries:
        raise ValueError("no range queries given")
    n_r, n_s = max(real.total(), 1e-300), max(synth.total(), 1e-300)
    by_attrs: dict[tuple[str, ...], list[int]] = {}
    for i, q in enumerate(queries):
        by_attrs.setdefault(q.attrs, []).append(i)
    errs = np.empty(len(queries))
    for attrs, idx in by_attrs.items():
        mr, ms = real.marginal(attrs) / n_r, synth.marginal(attrs) / n_s
        errs[idx] = query_errors(mr, ms, [queries[i].box() for i in idx])
    return float(errs.mean())
