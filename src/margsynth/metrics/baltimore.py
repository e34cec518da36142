"""The MGD paper's Baltimore 911 case study metrics (§5.3, Appendix B, Table 1).

- :func:`table1_specs` — the ``baltimore-table1`` preset: the seven marginals
  M, N, I, M+I, M+N, N+I and the 3-way, configured as the published numbers
  were made (docs/notes/mgd_baltimore.md): Δ = 2, α = 1, month moving cost = weight per
  month moved, categorical change cost = weight (a star through a hub),
  weights 1 (one-way), 0.5 (two-way), 0.33 (three-way); ω = 1/9 for the six
  one- and two-way marginals and 1/3 for the 3-way (Figure 3's MGD).
- :func:`inverse_pie` — the NIST sprint-1 pie-chart score, inverted
  (``Inv Pie`` of Table 1; definition in docs/notes/mgd_baltimore.md).
- :func:`range_query_error` — Table 1's RQ: 300 random range queries over
  30% of neighborhoods, incident types and months, seeded (docs/notes/mgd_baltimore.md).
"""

from __future__ import annotations

import math

import numpy as np

from .aemc import AttributeSpec, Distance, MarginalSpec
from .range_queries import query_errors

__all__ = ["PRESETS", "TABLE1_COLUMNS", "inverse_pie", "range_query_error", "table1_specs"]

NB, MONTH, TYPE = "neighborhood", "month", "incident_type"
#: Table 1's marginal columns, in its order, as (label, attributes in domain order)
TABLE1_COLUMNS = (
    ("M", (MONTH,)),
    ("N", (NB,)),
    ("I", (TYPE,)),
    ("M+I", (MONTH, TYPE)),
    ("M+N", (NB, MONTH)),
    ("N+I", (NB, TYPE)),
    ("3way", (NB, MONTH, TYPE)),
)
_WEIGHT = {1: 1.0, 2: 0.5, 3: 0.33}  # the authors' code: 0.33, not 1/3 (docs/notes/mgd_baltimore.md)


def _attr(name: str, w: float) -> AttributeSpec:
    if name == MONTH:
        return AttributeSpec(name, distance=Distance.steps(w))
    return AttributeSpec(name, distance=Distance.uniform(w))


def table1_specs(delta: float = 2.0) -> list[MarginalSpec]:
    """The seven marginals of Table 1 / Figure 3 as published (docs/notes/mgd_baltimore.md)."""
    specs = []
    for label, attrs in TABLE1_COLUMNS:
        w = _WEIGHT[len(attrs)]
        omega = 1.0 / 3.0 if len(attrs) == 3 else 1.0 / 9.0
        specs.append(MarginalSpec(tuple(_attr(a, w) for a in attrs), delta=delta, alpha=1.0, omega=omega, name=label))
    return specs


def paper_specs(delta: float = 2.0) -> list[MarginalSpec]:
    """The same seven marginals with the paper's own definitions (§4.3.1–4.3.2,
    §5.3): semantic distances normalised to [0, 1], equal finite weights."""
    specs = []
    for label, attrs in TABLE1_COLUMNS:
        w = 1.0 / len(attrs)
        omega = 1.0 / 3.0 if len(attrs) == 3 else 1.0 / 9.0
        specs.append(MarginalSpec(tuple(AttributeSpec(a, weight=w) for a in attrs), delta=delta, omega=omega,
                                  name=label))
    return specs


PRESETS = {"baltimore-table1": table1_specs, "baltimore-paper": paper_specs}


def _table(x, what: str) -> np.ndarray:
    arr = np.asarray(getattr(x, "counts", x), dtype=np.float64)
    if arr.ndim != 3:
        raise ValueError(f"{what}: expected a neighborhood × month × incident_type table, got shape {arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(f"{what}: counts must be finite and >= 0")
    return arr


def _js_distance(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise Jensen–Shannon distance, base 2 (1e-9 added before normalising)."""
    p = p + 1e-9
    q = q + 1e-9
    p = p / p.sum(-1, keepdims=True)
    q = q / q.sum(-1, keepdims=True)
    m = 0.5 * (p + q)
    js = 0.5 * (p * np.log2(p / m)).sum(-1) + 0.5 * (q * np.log2(q / m)).sum(-1)
    return np.sqrt(np.maximum(js, 0.0))


def pie_row_scores(truth, synthetic, *, threshold: float = 0.05, misleading: float = 0.2, bias: float = 0.25,
                   bias_limit: float = 500.0) -> np.ndarray:
    """Per (neighborhood, month) pie-chart score in [0, 1] (NIST sprint 1; docs/notes/mgd_baltimore.md)."""
    t = _table(truth, "truth")
    s = _table(synthetic, "synthetic")
    if t.shape != s.shape:
        raise ValueError(f"truth has shape {t.shape}, synthetic has shape {s.shape}")
    t = t.reshape(-1, t.shape[-1])
    s = s.reshape(-1, s.shape[-1])
    tt, st = t.sum(-1, keepdims=True), s.sum(-1, keepdims=True)
    tz = np.where(t < threshold * tt, 0.0, t)
    sz = np.where(s < threshold * st, 0.0, s)
    pen = _js_distance(sz, tz)
    pen += misleading * ((sz > 0) & (tz == 0)).sum(-1)
    pen += bias * (np.abs(st - tt)[:, 0] > bias_limit)
    score = np.clip(1.0 - pen, 0.0, 1.0)
    score[(t == s).all(-1)] = 1.0
    return score


def inverse_pie(truth, synthetic) -> float:
    """Inverse pie-chart score: mean over (neighborhood, month) rows of ``1 − row score``."""
    sc = pie_row_scores(truth, synthetic)
    return float((1.0 - sc).sum() / sc.size)


def range_query_error(truth, synthetic, *, n_queries: int = 300, fraction: float = 0.3, n_months: int = 4,
                      seed: int = 0, floor: float = 10.0) -> float:
    """Mean relative error of random range queries (Table 1's RQ; docs/notes/mgd_baltimore.md).

    Each query sums the counts over ``round(fraction·278)`` = 83 random
    neighborhoods, ``round(fraction·174)`` = 52 random incident types and
    ``n_months`` = 4 random months (each drawn without replacement);
    the error is ``|true − synthetic| / max(true, floor)``
    (:func:`~margsynth.metrics.range_queries.query_errors`). Seeded: the
    published queries were not, so only the magnitude is comparable.
    """
    t = _table(truth, "truth")
    s = _table(synthetic, "synthetic")
    if t.shape != s.shape:
        raise ValueError(f"truth has shape {t.shape}, synthetic has shape {s.shape}")
    if n_queries < 1:
        raise ValueError(f"n_queries must be >= 1, got {n_queries}")
    rng = np.random.default_rng(seed)
    n_nb, n_m, n_ty = t.shape
    k_nb, k_ty = int(math.floor(fraction * n_nb)), int(math.floor(fraction * n_ty))
    if not (1 <= n_months <= n_m):
        raise ValueError(f"n_months must be in 1..{n_m}, got {n_months}")
    boxes = [
        (rng.choice(n_nb, k_nb, replace=False), rng.choice(n_m, n_months, replace=False),
         rng.choice(n_ty, k_ty, replace=False))
        for _ in range(n_queries)
    ]  # fmt: skip
    return float(query_errors(t, s, boxes, relative=True, floor=floor).mean())
