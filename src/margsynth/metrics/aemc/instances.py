"""Random AEMC instances for differential tests and notebook 02.

:func:`random_problem` draws small instances covering what the solvers must
agree on: ordinal and categorical attributes, random nested
hierarchies used at random levels, ∞ weights, ``steps``/``uniform``/metric
overrides, Δ = 0, α ≠ 1, all-zero bins, unequal totals, half-integer counts.
Weights are ratios of small integers so the flow's exact scaling applies.
"""

from __future__ import annotations

import math

import numpy as np

from ...domain import Attribute, Domain, Hierarchy
from .problem import AEMCProblem
from .spec import AttributeSpec, Distance, MarginalSpec

__all__ = ["random_problem"]


def _random_hierarchy(rng, k: int) -> Hierarchy:
    """A random nested hierarchy with 2-4 levels over k leaves."""
    depth = int(rng.integers(0, 3))
    groupings = []
    n = k
    labels = np.arange(k)
    for _ in range(depth):
        m = int(rng.integers(1, max(2, n)))
        if m <= 1 or m >= n:
            break
        # merge consecutive groups of the previous level into m groups
        cuts = np.sort(rng.choice(np.arange(1, n), m - 1, replace=False))
        parent_of_group = np.searchsorted(cuts, np.arange(n), side="right")
        labels = parent_of_group[labels]
        groupings.append(tuple(int(x) for x in labels))
        n = m
    return Hierarchy.from_groups(*groupings) if groupings else Hierarchy.flat(k)


def random_problem(rng, *, max_bins: int = 60) -> AEMCProblem:
    d = int(rng.integers(1, 4))
    attrs, specs, finite = [], [], []
    for i in range(d):
        k = int(rng.integers(1, 6))
        kind = str(rng.choice(["ordinal", "categorical", "hierarchy", "inf", "steps", "uniform", "matrix"]))
        name = f"a{i}"
        if kind == "hierarchy":
            h = _random_hierarchy(rng, k)
            attrs.append(Attribute(name, k, ordinal=bool(rng.random() < 0.3), hierarchy=h))
            specs.append([name, int(rng.integers(0, h.height)), kind])
            finite.append(i)
        else:
            attrs.append(Attribute(name, k, ordinal=kind in ("ordinal", "steps")))
            specs.append([name, 0, kind])
            if kind in ("ordinal", "categorical"):
                finite.append(i)
    raw = rng.integers(0, 4, len(finite)).astype(float)
    if raw.size and raw.sum() == 0:
        raw[0] = 1
    weights = dict(zip(finite, raw / raw.sum())) if finite else {}
    aspecs = []
    for i, (name, level, kind) in enumerate(specs):
        if i in weights:
            aspecs.append(AttributeSpec(name, level=level, weight=float(weights[i])))
        elif kind == "inf":
            aspecs.append(AttributeSpec(name, weight=math.inf))
        elif kind == "steps":
            aspecs.append(AttributeSpec(name, distance=Distance.steps(float(rng.choice([0.25, 0.5, 1.0, 0.33, 0.1])))))
        elif kind == "uniform":
            aspecs.append(AttributeSpec(name, distance=Distance.uniform(float(rng.choice([0.5, 1.0, 1.5, 0.33, 3.0])))))
        else:  # a random metric: shortest paths of random integer-ish edge lengths
            k = attrs[i].size
            w = rng.integers(1, 5, (k, k)) / 4.0
            w = np.minimum(w, w.T)
            np.fill_diagonal(w, 0)
            for j in range(k):
                w = np.minimum(w, w[:, j : j + 1] + w[j : j + 1, :])
            aspecs.append(AttributeSpec(name, distance=Distance.from_matrix(w)))
    dom = Domain(tuple(attrs))
    spec = MarginalSpec(tuple(aspecs), delta=float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.0])),
                        alpha=float(rng.choice([1.0, 1.0, 0.5, 2.0])))
    shape = dom.shape
    lam_p, lam_q = rng.choice([0.3, 2.0, 8.0], 2)
    P = rng.poisson(lam_p, shape).astype(float)
    Q = rng.poisson(lam_q, shape).astype(float)
    if rng.random() < 0.3:  # all-zero bins
        mask = rng.random(shape) < 0.4
        P[mask] = 0
        Q[mask] = 0
    if rng.random() < 0.15:  # half-integer counts (rescaled tables) are scaled exactly
        P = P / 2
    return AEMCProblem.from_spec(spec, dom, P, Q)
