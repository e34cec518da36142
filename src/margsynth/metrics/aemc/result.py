"""Solver results and the fine-grained report of MGD paper §4.4.

A :class:`Plan` is an optimal movement: the flow on every moving arc, and the
amounts added and removed per bin. From it :meth:`Plan.attribute_costs`
splits the moving cost by attribute (each neighbour arc of §6.3 changes one
attribute) and :meth:`Plan.bin_contributions` gives each bin its share of the
optimum (its add/remove penalty plus the moving cost of its arcs: bin–bin arcs
split half/half, bin–hub arcs to the bin), which sum to the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["AEMCResult", "Plan"]


@dataclass
class Plan:
    shape: tuple[int, ...]
    added: np.ndarray
    removed: np.ndarray
    final: np.ndarray
    move_tail: np.ndarray
    move_head: np.ndarray
    move_flow: np.ndarray
    move_cost: np.ndarray
    move_axis: np.ndarray
    n_bins: int
    bipartite: bool = False
    axis_names: tuple[str, ...] = ()

    @property
    def moved(self) -> float:
        """Total amount carried over moving arcs."""
        return float(self.move_flow.sum())

    def moving_cost(self) -> float:
        return float(self.move_flow @ self.move_cost)

    def penalty(self, alpha: float = 1.0) -> float:
        return float(alpha * (self.added.sum() + self.removed.sum()))

    def attribute_costs(self) -> dict[str, float]:
        """Moving cost by attribute (§4.4); ``"(mixed)"`` for full-graph arcs."""
        out: dict[str, float] = {}
        c = self.move_flow * self.move_cost
        for ai, name in enumerate(self.axis_names):
            out[name] = float(c[self.move_axis == ai].sum())
        mixed = float(c[self.move_axis < 0].sum())
        if mixed or not self.axis_names:
            out["(mixed)"] = mixed
        return out

    def bin_contributions(self, alpha: float = 1.0) -> np.ndarray:
        """Each bin's share of the unnormalised optimum (shape ``shape``)."""
        T = self.n_bins
        contrib = alpha * (self.added.ravel() + self.removed.ravel())
        c = self.move_flow * self.move_cost
        if self.bipartite:
            tail, head = self.move_tail, self.move_head - T
        else:
            tail, head = self.move_tail, self.move_head
        t_bin, h_bin = tail < T, head < T
        both = t_bin & h_bin
        share_t = np.where(both, 0.5 * c, np.where(t_bin, c, 0.0))
        share_h = np.where(both, 0.5 * c, np.where(h_bin & ~t_bin, c, 0.0))
        contrib = contrib + np.bincount(tail[t_bin], share_t[t_bin], minlength=T)
        contrib = contrib + np.bincount(head[h_bin], share_h[h_bin], minlength=T)
        # arcs between two hub (dummy) nodes: give their cost to the bins that feed them, proportionally
        hub = ~t_bin & ~h_bin
        if hub.any() and c[hub].sum() > 0:
            fed = contrib - alpha * (self.added.ravel() + self.removed.ravel())
            if fed.sum() > 0:
                contrib = contrib + c[hub].sum() * fed / fed.sum()
        return contrib.reshape(self.shape)

    def top_bins(self, k: int = 10, alpha: float = 1.0) -> list[tuple[tuple[int, ...], float]]:
        """The ``k`` bins contributing most (§4.4), as ``(index, contribution)``."""
        c = self.bin_contributions(alpha).ravel()
        k = min(k, c.size)
        order = np.argsort(-c, kind="stable")[:k]
        return [(tuple(int(i) for i in np.unravel_index(j, self.shape)), float(c[j])) for j in order if c[j] > 0]


@dataclass
class AEMCResult:
    """Result of one AEMC solve.

    ``value`` is Eq. (1) (normalised by ``‖Q‖₁``); ``cost`` the unnormalised
    optimum. ``exact`` is False only when counts were rounded on request, in
    which case ``|value − true| <= error_bound``.
    """

    value: float
    cost: float
    solver: str
    seconds: float
    exact: bool = True
    error_bound: float = 0.0
    plan: Plan | None = None
    q_total: float = 0.0
    details: dict = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.value)
