"""Semantic distances (MGD paper §4.3.1) and bin distances (Eq. 2).

Each attribute of a marginal becomes an :class:`AxisMetric`: the moving cost
``w_a · sd_a`` between its values at the chosen level, stored in the form the
neighbour graph of §6.3 needs:

- ``line``: ordinal, ``cost(i, j) = step·|i−j|`` with ``step = w_a/(k−1)``
  (§4.3.1: ``|j−i|/(k−1)`` at a level with ``k`` values), neighbours are the
  values just above and below;
- ``tree``: non-ordinal, ``sd = (t−s)/t`` for values at level ``t`` (from the
  root) whose lowest common ancestor is at level ``s``; neighbours are parent
  and children in the hierarchy, every tree edge costing ``w_a/(2t)`` (§6.3);
- ``forbid``: weight ∞, moving between different values is not allowed (Eq. 2);
- ``matrix``: an explicit metric (override, §5.2), complete per-attribute graph.

The bin distance of Eq. (2) is the sum over attributes; :func:`bin_distance`
materialises it (only for small marginals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...domain import Attribute, Hierarchy
from .spec import AttributeSpec, Distance

__all__ = ["AxisMetric", "axis_metric", "bin_distance", "resolve_weights"]


@dataclass(frozen=True, eq=False)
class AxisMetric:
    """Moving costs along one attribute of a marginal (see module docstring).

    ``parents`` (tree only) lists, for each relative level ``m = 0..t−1``, the
    array mapping node ``g`` at level ``m`` to its parent at level ``m+1``
    (level 0 being the marginal's values); ``edge`` is the cost of one tree
    edge. ``step`` is the line cost per step; ``matrix`` the explicit metric.
    """

    name: str
    k: int
    kind: str  # "line" | "tree" | "forbid" | "matrix"
    step: float = 0.0
    parents: tuple[np.ndarray, ...] = ()
    edge: float = 0.0
    matrix: np.ndarray | None = None

    @property
    def n_dummy(self) -> int:
        """Hierarchy nodes above the values (dummy nodes per line, §6.3)."""
        if self.kind != "tree":
            return 0
        return int(sum(int(p.max()) + 1 for p in self.parents))

    @property
    def is_uniform(self) -> bool:
        """Any two distinct values at the same cost (flat tree / one level)."""
        return self.kind == "tree" and len(self.parents) == 1

    @property
    def uniform_cost(self) -> float:
        return 2.0 * self.edge

    def dense(self) -> np.ndarray:
        """``k×k`` matrix of ``w_a·sd_a`` (``inf`` where forbidden)."""
        k = self.k
        if self.kind == "line":
            idx = np.arange(k)
            return self.step * np.abs(idx[:, None] - idx[None, :]).astype(np.float64)
        if self.kind == "forbid":
            out = np.full((k, k), math.inf)
            np.fill_diagonal(out, 0.0)
            return out
        if self.kind == "matrix":
            return np.array(self.matrix, dtype=np.float64)
        # tree: number of levels up to the lowest common ancestor
        anc = np.arange(k)
        up = np.zeros((k, k), dtype=np.int64)
        settled = np.eye(k, dtype=bool)
        for m, par in enumerate(self.parents, start=1):
            anc = par[anc]
            meet = (anc[:, None] == anc[None, :]) & ~settled
            up[meet] = m
            settled |= meet
        return 2.0 * self.edge * up

    def costs(self) -> list[float]:
        """The distinct edge costs this axis puts into the neighbour graph."""
        if self.kind == "line":
            return [self.step]
        if self.kind == "tree":
            return [self.edge]
        if self.kind == "matrix":
            m = self.dense()
            return [float(x) for x in np.unique(m[np.isfinite(m) & (m > 0)])]
        return []


def resolve_weights(attrs: tuple[Attribute, ...], specs: tuple[AttributeSpec, ...]) -> list[float | None]:
    """Fill default weights (§4.3.2: ∞ for categorical attributes, an equal
    share of the remaining weight for ordinal ones). Overridden attributes get
    ``None``."""
    out: list[float | None] = []
    given = sum(s.weight for s in specs if s.distance is None and s.weight is not None and math.isfinite(s.weight))
    n_free = sum(1 for a, s in zip(attrs, specs) if s.distance is None and s.weight is None and a.ordinal)
    share = (1.0 - given) / n_free if n_free else 0.0
    for a, s in zip(attrs, specs):
        if s.distance is not None:
            out.append(None)
        elif s.weight is not None:
            out.append(s.weight)
        else:
            out.append(share if a.ordinal else math.inf)
    return out


def _tree_parents(h: Hierarchy, level: int) -> tuple[np.ndarray, ...]:
    parents = []
    for m in range(level, h.height):
        child, parent = h.groups(m), h.groups(m + 1)
        par = np.zeros(h.n_groups(m), dtype=np.int64)
        par[child] = parent
        parents.append(par)
    return tuple(parents)


def axis_metric(attr: Attribute, spec: AttributeSpec, weight: float | None) -> AxisMetric:
    """The :class:`AxisMetric` of one attribute at ``spec.level`` (§4.3.1, Eq. 2)."""
    h = attr.effective_hierarchy
    if spec.level > h.height:
        raise ValueError(
            f"attribute {attr.name!r}: level {spec.level} not in its hierarchy (levels 0..{h.height}, 0 = leaves)"
        )
    k = h.n_groups(spec.level)
    name = attr.name
    if k == 1:
        return AxisMetric(name, 1, "line", 0.0)
    if spec.distance is not None:
        d: Distance = spec.distance
        if d.kind == "steps":
            return AxisMetric(name, k, "line", d.cost)
        if d.kind == "uniform":
            return AxisMetric(name, k, "tree", parents=(np.zeros(k, dtype=np.int64),), edge=d.cost / 2.0)
        m = np.asarray(d.matrix, dtype=np.float64)
        if m.shape != (k, k):
            raise ValueError(f"attribute {name!r}: distance matrix has shape {m.shape}, level {spec.level} has {k} values")
        if np.isnan(m).any() or (m < 0).any():
            raise ValueError(f"attribute {name!r}: distance matrix entries must be >= 0 (inf allowed), got NaN or negative")
        bad = np.flatnonzero(np.diag(m) != 0)
        if bad.size:
            raise ValueError(f"attribute {name!r}: distance matrix diagonal must be 0 (M_ii = 0, §4.2); entry {int(bad[0])} is {m[bad[0], bad[0]]}")
        if not np.array_equal(m, m.T):
            raise ValueError(f"attribute {name!r}: distance matrix must be symmetric")
        # triangle inequality (needed so that neighbour moves compose exactly, §6.3)
        closure = m.copy()
        for j in range(k):
            closure = np.minimum(closure, closure[:, j : j + 1] + closure[j : j + 1, :])
        viol = np.argwhere(closure < m * (1 - 1e-12))
        if viol.size:
            i, j = map(int, viol[0])
            raise ValueError(
                f"attribute {name!r}: distance matrix violates the triangle inequality at ({i}, {j}) "
                f"({m[i, j]} > {closure[i, j]} via other values); AEMC over it would not be a moving cost (§6.3)"
            )
        return AxisMetric(name, k, "matrix", matrix=m)
    if weight is None or math.isinf(weight):
        return AxisMetric(name, k, "forbid")
    if attr.ordinal:
        return AxisMetric(name, k, "line", weight / (k - 1))
    t = h.height - spec.level
    return AxisMetric(name, k, "tree", parents=_tree_parents(h, spec.level), edge=weight / (2.0 * t))


def bin_distance(axes: tuple[AxisMetric, ...]) -> np.ndarray:
    """The full ``T×T`` bin distance matrix ``M`` of Eq. (2), bins in C order."""
    shape = tuple(a.k for a in axes)
    T = int(np.prod(shape, dtype=np.int64))
    if T > 20000:
        raise ValueError(f"bin_distance: {T} bins is too many for a dense T×T matrix; use the neighbour graph")
    M = np.zeros((T, T))
    coords = np.unravel_index(np.arange(T), shape)
    for ax, c in zip(axes, coords):
        D = ax.dense()
        with np.errstate(invalid="ignore"):
            M += D[c[:, None], c[None, :]]
    return M
