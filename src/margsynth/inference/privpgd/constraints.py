"""Domain-specific constraints as an additive differentiable penalty (paper §4.4, App. B).

Eq. 7 adds ``gamma R(X)`` (``gamma >= 0``) to the particle objective. The worked
example protects a population-level statistic: a linear thresholding query in the
embedding space,

    q(D) = (1/n) sum_x 1[<theta, e(x)> >= tau],

is approximated on particles by a sigmoid of sharpness ``s`` (App. B; the authors use
``s = 5``): ``q_s(X) = (1/N) sum_i sigmoid(s (<theta, x_i> - tau))``. Its target is
privatised with its own share of the budget: the count ``sum_x 1[...]`` has L2
sensitivity 1 (one record changes it by at most 1), so ``c~ = count + N(0, sigma_c^2)``
(Gaussian mechanism, charged to the same ledger before the noise is drawn) and
``q~ = c~ / n~`` with ``n~`` the total estimated from the noisy marginals
(post-processing). The penalty rewards distance from the private estimate — it
*pushes the synthetic statistic away from the truth*:

    R(X) = 1 / (1 + ((q_s(X) - q~) / w)^2),                    w = 0.01 by default,

maximal (= 1) when ``q_s = q~`` and decaying as they separate (this is the authors'
``0.01 / (1e-4 + (q_s - q~)^2) = 100 R``). The particle-scaled gradient handed to the
optimizer is ``N grad_{x_i} R = R'(q_s) s sigmoid'(s(<theta, x_i> - tau)) theta`` with
``R'(q) = -2 (q - q~) R^2 / w^2``. Scale: the authors' ``scale_reg`` equals
``gamma N / 100`` in our units (their loss is ``sum SW + (scale_reg/N) * 100 R``).

By Lemma 1 (composition, §3.4), the synthetic data are DP for the sum of the
marginals' and the constraint's budgets — the ledger records both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ...dataset import Dataset
from ...domain import Domain
from .embedding import embed

__all__ = ["ThresholdConstraint", "ThresholdPenalty"]


@dataclass(frozen=True)
class ThresholdConstraint:
    """The thresholding query ``1[<theta, e(x)> >= tau]`` to protect (§4.4).

    ``weights`` maps attribute names to coefficients of ``theta`` (others are 0);
    ``sharpness`` is the sigmoid's ``s``; ``width`` the penalty's ``w``.
    """

    weights: Mapping[str, float] | Sequence[tuple[str, float]]
    tau: float
    sharpness: float = 5.0
    width: float = 0.01

    def __post_init__(self) -> None:
        items = tuple(self.weights.items()) if isinstance(self.weights, Mapping) else tuple(self.weights)
        clean = []
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise ValueError(f"constraint weights must map attribute names to numbers, got {item!r}")
            w = float(item[1])
            if not np.isfinite(w):
                raise ValueError(f"constraint weight for {item[0]!r} is not finite: {item[1]!r}")
            clean.append((item[0], w))
        if not clean or all(w == 0 for _, w in clean):
            raise ValueError("constraint needs at least one non-zero weight")
        object.__setattr__(self, "weights", tuple(clean))
        for name in ("tau", "sharpness", "width"):
            v = getattr(self, name)
            if isinstance(v, bool) or not np.isfinite(float(v)):
                raise ValueError(f"constraint {name} must be a finite number, got {v!r}")
            object.__setattr__(self, name, float(v))
        if self.sharpness <= 0 or self.width <= 0:
            raise ValueError(f"sharpness and width must be > 0, got {self.sharpness}, {self.width}")

    def theta(self, domain: Domain) -> np.ndarray:
        th = np.zeros(len(domain))
        for name, w in self.weights:
            th[domain.index(name)] += w
        return th

    def count(self, data: Dataset) -> int:
        """The exact (sensitive) count ``sum_x 1[<theta, e(x)> >= tau]``."""
        return int(np.count_nonzero(embed(data) @ self.theta(data.domain) >= self.tau))

    def answer(self, data: Dataset) -> float:
        """``q(D)``: the fraction of records satisfying the query (for evaluation)."""
        return self.count(data) / max(len(data), 1)


class ThresholdPenalty:
    """``R`` of the module docstring for particles in the ``(d, N)`` layout; call it to
    get ``(attr_indices, N grad R rows, R value)``."""

    def __init__(self, constraint: ThresholdConstraint, domain: Domain, target: float, device):
        th = constraint.theta(domain)
        self.idx = torch.as_tensor(np.flatnonzero(th), dtype=torch.long, device=device)
        self.theta = torch.as_tensor(th[np.flatnonzero(th)], dtype=torch.float32, device=device)
        self.tau = constraint.tau
        self.s = constraint.sharpness
        self.w = constraint.width
        self.target = float(target)

    def smooth_answer(self, Xt: torch.Tensor) -> float:
        z = self.theta @ Xt.index_select(0, self.idx)
        return float(torch.sigmoid(self.s * (z - self.tau)).mean())

    def __call__(self, Xt: torch.Tensor):
        z = self.theta @ Xt.index_select(0, self.idx)  # (N,)
        sg = torch.sigmoid(self.s * (z - self.tau))
        q = sg.mean()
        r = 1.0 / (1.0 + ((q - self.target) / self.w) ** 2)
        dr = -2.0 * (q - self.target) * r * r / (self.w**2)
        coef = dr * self.s * sg * (1.0 - sg)  # (N,)
        return self.idx, self.theta[:, None] * coef[None, :], float(r)
