"""Scoring a synthetic raw table against the real one: one encoder for both.

The metrics of :mod:`margsynth.metrics` compare two :class:`~margsynth.dataset.Dataset`
objects over one domain. A raw table (strings, decimals, empty cells) becomes one through
an encoder fitted from its schema (:func:`margsynth.tabular.fit_encoder`); to score,
the real and the synthetic table must go through the *same* encoder. (This module sits in
:mod:`margsynth.tabular`, above the metrics: it needs the schema and the encoder, the
metrics need neither.)

Scoring reads the real table, so the scores are not differentially private and the
encoder may be resolved exactly: :func:`exact_schema` replaces every ``"discover"`` of the
schema by what the real table shows (every category it holds, its minimum and maximum,
its exact quantiles as explicit cut points). A categorical column whose categories were
discovered accepts, in the synthetic table, values the real one lacks (e.g. the ``other``
bucket of a private discovery): they go to an ``other`` bucket of their own. Given
categories, bounds and cut points are kept as the schema states them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .encoder import _missing, fit_encoder
from .schema import Schema, category_key

__all__ = ["encode_pair", "exact_schema"]


#: Bins of a numeric column whose ``bins`` is ``"auto"``, for scoring (exact quantiles).
SCORING_BINS = 16


def _resolved_column(spec: Any, values: pd.Series, tokens: tuple[str, ...]) -> dict[str, Any]:
    d = spec.to_dict()
    miss = _missing(values, tokens)
    present = values[~miss]
    if d["nullable"] == "discover":  # the synthetic table may have nulls the real one lacks
        d["nullable"] = True
    if spec.kind != "numeric":
        if d.get("categories") == "discover":
            seen: dict[str, Any] = {}
            for v in present.tolist():
                seen.setdefault(category_key(v), v.item() if isinstance(v, np.generic) else v)
            cats = [seen[k] for k in sorted(seen)]
            label = d.get("other_label", "other")
            while category_key(label) in seen:
                label = f"({label})"
            d.update({"categories": cats or [label + "?"], "strict": False})
            if label != "other":
                d["other_label"] = label
        return d
    integer = spec.type == "integer"
    nums = pd.to_numeric(present, errors="coerce").dropna().to_numpy(np.float64)
    if d["bounds"] == "discover":
        lo, hi = (float(nums.min()), float(nums.max())) if nums.size else (0.0, 1.0)
        if integer:
            lo, hi = float(np.floor(lo)), float(np.ceil(hi))
        if not (lo < hi or (integer and lo == hi)):
            hi = lo + 1.0
        d["bounds"] = [int(lo), int(hi)] if integer else [lo, hi]
        d["clip"] = True
    bins = SCORING_BINS if spec.bins == "auto" else spec.bins
    if d.get("bins") == "auto":
        d["bins"] = bins
    if d.get("binning") == "quantile":
        lo, hi = d["bounds"]
        q = np.quantile(nums, np.arange(1, bins) / bins) if nums.size else np.zeros(0)
        if integer:
            q = np.ceil(q)
            cuts = sorted({float(c) for c in q if lo < c <= hi})
        else:
            cuts = sorted({float(c) for c in q if lo < c < hi})
        d.pop("bins", None)
        if cuts:
            d.update({"binning": "explicit", "cuts": [int(c) for c in cuts] if integer else cuts})
        else:
            d.update({"binning": "uniform", "bins": 1})
    return d


def exact_schema(real: pd.DataFrame, schema: Any):
    """``schema`` with every ``"discover"`` resolved exactly from ``real`` (see the module
    docstring); a :class:`~margsynth.tabular.Schema` that needs no private discovery."""
    schema = Schema.coerce(schema)
    cols = []
    for spec in schema.columns:
        if spec.name not in real.columns:
            raise ValueError(f"column {spec.name!r}: in the schema but not in the real table; the table has {list(real.columns)}")
        cols.append(_resolved_column(spec, real[spec.name], schema.tokens(spec.name)))
    return Schema.from_dict({"columns": cols, "null_tokens": list(schema.null_tokens)})


def encode_pair(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Any, *, what: tuple[str, str] = ("real table", "synthetic table")
):
    """``(real Dataset, synthetic Dataset, encoder)``: both tables encoded by the encoder of
    :func:`exact_schema` (a ``ValueError`` prefixed by ``what`` and naming the column, row and
    value when a cell does not fit the schema)."""
    try:
        resolved = exact_schema(real, schema)
    except ValueError as exc:
        raise ValueError(f"{what[0]}: {exc}") from None
    try:  # nothing is left to discover: no ledger, no rng, nothing spent
        encoder, _ = fit_encoder(real, resolved, ledger=None, rng=None)
    except ValueError as exc:
        raise ValueError(f"{what[0]}: {exc}") from None
    out = []
    for frame, name in zip((real, synthetic), what):
        try:
            out.append(encoder.encode(frame))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return out[0], out[1], encoder
