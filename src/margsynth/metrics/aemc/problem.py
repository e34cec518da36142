"""The AEMC problem (MGD paper Eq. 1) in one validated object.

``AEMC_{M,Δ}(P, Q) = (1/‖Q‖₁) · min_X Σ X_ij M_ij + α Σ_j max(|Σ_i X_ij − Q_j| − Δ, 0)``
subject to ``Σ_j X_ij = P_i``, ``X ≥ 0`` (P synthetic, Q ground truth, §4.2;
``α`` is the add/remove unit cost of Appendix A, 1 in the paper).

The bin distance ``M`` is either given by per-attribute :class:`AxisMetric`s
(Eq. 2, the usual case, which allows the neighbour graph of §6.3) or as an
explicit ``T×T`` matrix (:meth:`AEMCProblem.from_matrix`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...domain import Domain
from .distance import AxisMetric, axis_metric, bin_distance, resolve_weights
from .spec import MarginalSpec

__all__ = ["AEMCProblem", "check_counts", "aggregate_levels"]


def check_counts(x, name: str) -> np.ndarray:
    """Counts as a float64 array; ``ValueError`` naming the first NaN, inf or negative cell."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iufb":
        raise ValueError(f"{name}: counts must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    if bad.size:
        idx = np.unravel_index(int(bad[0]), arr.shape) if arr.ndim else ()
        raise ValueError(f"{name}: cell {tuple(map(int, idx))} is {arr.ravel()[bad[0]]!r}; counts must be finite")
    neg = np.flatnonzero(arr.ravel() < 0)
    if neg.size:
        idx = np.unravel_index(int(neg[0]), arr.shape) if arr.ndim else ()
        raise ValueError(f"{name}: cell {tuple(map(int, idx))} is {arr.ravel()[neg[0]]!r}; counts must be >= 0")
    return arr


def aggregate_levels(table: np.ndarray, domain: Domain, spec: MarginalSpec) -> np.ndarray:
    """Aggregate a leaf-level marginal over ``spec.names`` to the spec's
    generalisation levels (§4.3.2: a marginal uses one level per attribute)."""
    out = np.asarray(table)
    for ax, s in enumerate(spec.attributes):
        if s.level == 0:
            continue
        h = domain[s.name].effective_hierarchy
        if s.level > h.height:
            raise ValueError(f"attribute {s.name!r}: level {s.level} not in its hierarchy (levels 0..{h.height})")
        groups = h.groups(s.level)
        moved = np.moveaxis(out, ax, 0)
        agg = np.zeros((h.n_groups(s.level),) + moved.shape[1:], dtype=np.result_type(moved.dtype, np.float64))
        np.add.at(agg, groups, moved)
        out = np.moveaxis(agg, 0, ax)
    return out


@dataclass(frozen=True, eq=False)
class AEMCProblem:
    """One AEMC instance: counts ``p`` (synthetic) and ``q`` (truth) of shape
    ``shape``, per-axis metrics (or a dense ``matrix``), ``delta``, ``alpha``."""

    p: np.ndarray
    q: np.ndarray
    axes: tuple[AxisMetric, ...] | None
    delta: float
    alpha: float = 1.0
    matrix: np.ndarray | None = None
    label: str = ""
    allow_negative: bool = False

    def __post_init__(self) -> None:
        p = check_counts(self.p, f"{self.label or 'AEMC'}: P (synthetic)")
        q = check_counts(self.q, f"{self.label or 'AEMC'}: Q (truth)")
        if p.shape != q.shape:
            raise ValueError(f"{self.label or 'AEMC'}: P has shape {p.shape} but Q has shape {q.shape}")
        if self.axes is not None:
            shape = tuple(a.k for a in self.axes)
            if p.shape != shape and p.size == int(np.prod(shape, dtype=np.int64)):
                p, q = p.reshape(shape), q.reshape(shape)
            if p.shape != shape:
                raise ValueError(f"{self.label or 'AEMC'}: counts have shape {p.shape}, the spec's levels give {shape}")
        for nm, v in (("delta", self.delta), ("alpha", self.alpha)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not math.isfinite(v):
                raise ValueError(f"{self.label or 'AEMC'}: {nm} must be a finite number, got {v!r}")
        if self.delta < 0:
            raise ValueError(f"{self.label or 'AEMC'}: delta must be >= 0, got {self.delta!r}")
        if self.alpha <= 0:
            raise ValueError(f"{self.label or 'AEMC'}: alpha must be > 0, got {self.alpha!r}")
        if self.matrix is not None:
            m = np.asarray(self.matrix, dtype=np.float64)
            if m.shape != (p.size, p.size):
                raise ValueError(f"{self.label or 'AEMC'}: M has shape {m.shape}, expected ({p.size}, {p.size})")
            if np.isnan(m).any() or (m < 0).any():
                raise ValueError(f"{self.label or 'AEMC'}: M entries must be >= 0 (inf allowed); found NaN or negative")
            bad = np.flatnonzero(np.diag(m) != 0)
            if bad.size:
                raise ValueError(f"{self.label or 'AEMC'}: M_ii must be 0 (§4.2); M[{int(bad[0])},{int(bad[0])}] = {m[bad[0], bad[0]]}")
            m.setflags(write=False)
            object.__setattr__(self, "matrix", m)
        elif self.axes is None:
            raise ValueError("AEMCProblem needs per-attribute axes or an explicit matrix")
        p = np.ascontiguousarray(p)
        q = np.ascontiguousarray(q)
        p.setflags(write=False)
        q.setflags(write=False)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "alpha", float(self.alpha))

    # -- constructors --------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: MarginalSpec, domain: Domain, p_table, q_table, *, aggregated: bool = False) -> AEMCProblem:
        """Instance of a :class:`MarginalSpec` given the leaf-level marginal
        tables over ``spec.names`` (in that order); aggregates to the spec's
        levels unless ``aggregated``."""
        attrs = tuple(domain[n] for n in domain.check_attrs(spec.names, "marginal spec attributes"))
        weights = resolve_weights(attrs, spec.attributes)
        axes = tuple(axis_metric(a, s, w) for a, s, w in zip(attrs, spec.attributes, weights))
        p = check_counts(p_table, f"marginal {spec.label}: P (synthetic)")
        q = check_counts(q_table, f"marginal {spec.label}: Q (truth)")
        leaf_shape = tuple(a.size for a in attrs)
        if not aggregated:
            for nm, arr in (("P (synthetic)", p), ("Q (truth)", q)):
                if arr.shape != leaf_shape:
                    raise ValueError(f"marginal {spec.label}: {nm} has shape {arr.shape}, expected {leaf_shape}")
            p = aggregate_levels(p, domain, spec)
            q = aggregate_levels(q, domain, spec)
        return cls(p, q, axes, spec.delta, spec.alpha, label=spec.label, allow_negative=spec.allow_negative)

    @classmethod
    def from_matrix(cls, p, q, M, delta: float, alpha: float = 1.0, label: str = "") -> AEMCProblem:
        """Instance with an explicit bin distance matrix ``M`` (Eq. 1 verbatim)."""
        p = check_counts(p, f"{label or 'AEMC'}: P (synthetic)").ravel()
        q = check_counts(q, f"{label or 'AEMC'}: Q (truth)").ravel()
        return cls(p, q, None, delta, alpha, matrix=M, label=label)

    # -- derived ---------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.p.shape

    @property
    def n_bins(self) -> int:
        return int(self.p.size)

    @property
    def q_total(self) -> float:
        return float(self.q.sum())

    def lower(self) -> np.ndarray:
        """``L_j = max(Q_j − Δ, 0)``: the result of a bin is never negative (the LP of §6.1).

        With ``allow_negative`` (the authors' published flow code, design NOTES
        §1) the band's lower end is ``Q_j − Δ`` even when negative: on the
        compressed graph (Fig. 8) a bin with ``Q_j < Δ`` then supplies up to
        ``Δ − Q_j`` units for free, a relaxation of Eq. (1).
        """
        if self.allow_negative:
            return self.q - self.delta
        return np.maximum(self.q - self.delta, 0.0)

    def upper(self) -> np.ndarray:
        return self.q + self.delta

    def dense_matrix(self) -> np.ndarray:
        """The ``T×T`` bin distance matrix (Eq. 2), small instances only."""
        if self.matrix is not None:
            return self.matrix
        return bin_distance(self.axes)

    def normalise(self, cost: float) -> float:
        """Eq. (1)'s ``1/‖Q‖₁`` factor (a zero truth total leaves the cost as is)."""
        tot = self.q_total
        return cost / tot if tot > 0 else float(cost)
