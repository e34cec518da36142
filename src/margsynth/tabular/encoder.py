"""Raw table ⇄ :class:`~margsynth.dataset.Dataset`: checking cells, private fitting,
encoding and decoding.

:func:`fit_encoder` checks every cell of the table against the schema first (no noise is
drawn and nothing is charged before all checks pass), then runs the private discovery
steps of :mod:`margsynth.tabular.discovery` for what the schema leaves to ``"discover"``,
each charged to the given ledger, with the budget rule of :func:`discovery_budget`. The
:class:`Encoder` it returns maps each column to one attribute:

- categorical / ordinal: code ``i`` is the ``i``-th category (in the schema's order, or
  sorted for discovered ones), then the ``other`` bucket (discovered or ``strict: false``),
  then null (``nullable``);
- numeric: code ``j`` is bin ``j`` of ``[e_j, e_{j+1})`` (edges ``lo, cuts..., hi``; the last
  bin also holds ``hi``; integer bins hold the integers ``e_j .. e_{j+1}-1``), then null.

A cell is null when it is empty (or a missing value of a typed frame) or one of the
column's null tokens (:meth:`~margsynth.tabular.Schema.tokens`); nothing else is.

Decoding draws a numeric value within its bin from the private distribution of the column
(:class:`~margsynth.tabular.discovery.Distribution`: a cell of the bin with probability
proportional to its private mass, then uniformly within the cell; an integer uniformly
among the cell's integers), or uniformly within the bin when no distribution was measured,
so a decoded value lies in the bin it was drawn for and within the bounds; floats are
rounded to the column's ``decimals``; the ``other`` bucket decodes to its label and null to
a missing cell (:meth:`Encoder.to_text` writes it as the column's first null token).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from ..dataset import Dataset, _show
from ..domain import Attribute, Domain
from ..mechanisms.base import MemoryLimitError, current_memory_limit
from ..privacy import BudgetLedger
from ..privacy.accounting import gaussian_sigma
from . import discovery as dsc
from .schema import AUTO, DISCOVER, INTEGER_LIMIT, ColumnSpec, Schema, category_key

__all__ = [
    "CODE_BYTES",
    "ENCODER_VERSION",
    "ColumnCoding",
    "ColumnTally",
    "Encoder",
    "check_sizes",
    "check_table",
    "describe",
    "discovery_budget",
    "domain_extremes",
    "distribution_counts",
    "fit_encoder",
    "fit_tallies",
    "left_out",
    "size_range",
    "tally_column",
    "tally_table",
    "values_frame",
]

ENCODER_VERSION = 2


def _missing(values: pd.Series, tokens: tuple[str, ...] = ()) -> np.ndarray:
    """Null cells: a missing value of a typed frame (NaN/None/NA), the empty string, or one
    of ``tokens``."""
    miss = values.isna().to_numpy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        text = values.astype(object)
        miss = miss | (text == "").to_numpy(dtype=bool)
        if tokens:
            miss = miss | text.isin(tokens).to_numpy(dtype=bool)
    return miss


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _numbers(spec: ColumnSpec, values: pd.Series, miss: np.ndarray) -> np.ndarray:
    """The cells of a numeric column as floats (NaN where null); ``ValueError`` naming the
    column, row and value of the first non-numeric, non-finite or (integer columns)
    non-integral cell."""
    raw = values.to_numpy(dtype=object)
    if pd.api.types.is_bool_dtype(values.dtype):
        r = _first(~miss) if (~miss).any() else 0
        raise ValueError(f"column {spec.name!r} row {r}: boolean value {_show(raw[r])} in a numeric column")
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~miss & ~np.isfinite(x)
    if bad.any():
        r = _first(bad)
        raise ValueError(f"column {spec.name!r} row {r}: non-numeric value {_show(raw[r])} in a numeric column")
    if values.dtype == object:  # True/False among numbers would read as 1/0
        bad = ~miss & values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
        if bad.any():
            r = _first(bad)
            raise ValueError(f"column {spec.name!r} row {r}: boolean value {_show(raw[r])} in a numeric column")
    if spec.type == "integer":
        bad = ~miss & (x != np.round(x))
        if bad.any():
            r = _first(bad)
            raise ValueError(f"column {spec.name!r} row {r}: non-integer value {_show(raw[r])} in an integer column")
        bad = ~miss & (np.abs(x) >= INTEGER_LIMIT)
        if bad.any():
            r = _first(bad)
            raise ValueError(
                f"column {spec.name!r} row {r}: integer {_show(raw[r])} is beyond +-2^53 ({INTEGER_LIMIT:,}), where "
                "integers stop being exact; declare the column categorical (an identifier) or leave it out of the schema"
            )
    return x


def left_out(df: pd.DataFrame, schema: Schema) -> list[str]:
    """The columns of ``df`` the schema does not name (left out of the run), in order."""
    return [str(c) for c in df.columns if str(c) not in schema.names]


def check_table(df: pd.DataFrame, schema: Schema) -> dict[str, tuple[np.ndarray, Any]]:
    """Every check of ``df`` against ``schema`` (columns, then cells column by column);
    ``ValueError`` naming the column, and for a cell its (0-based) row and value. Columns
    of ``df`` the schema does not name are left out (:func:`left_out`).

    Returns per schema column ``(missing mask, values)``: floats for numeric columns,
    category keys (:func:`~margsynth.tabular.schema.category_key`) otherwise."""
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    cols = [str(c) for c in df.columns]
    empty = [i for i, c in enumerate(cols) if not c.strip()]
    if empty:
        raise ValueError(f"column {empty[0] + 1} of the data has no name; expected every column named")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise ValueError(f"column {dup[0]!r}: appears twice in the data")
    for name in schema.names:
        if name not in cols:
            raise ValueError(f"column {name!r}: in the schema but not in the data; data has {cols}")
    if len(df) == 0:
        raise ValueError("df has no rows")
    frame = df.set_axis(cols, axis=1)
    out: dict[str, tuple[np.ndarray, Any]] = {}
    for spec in schema.columns:
        values = frame[spec.name].reset_index(drop=True)
        miss = _missing(values, schema.tokens(spec.name))
        if miss.any() and spec.nullable is False:
            r = _first(miss)
            raise ValueError(
                f"column {spec.name!r} row {r}: missing value {_show(values.iloc[r])} in a column that is not nullable"
            )
        if spec.kind == "numeric":
            x = _numbers(spec, values, miss)
            if not isinstance(spec.bounds, str) and not spec.clip:
                lo, hi = spec.bounds
                bad = ~miss & ((x < lo) | (x > hi))
                if bad.any():
                    r = _first(bad)
                    raise ValueError(
                        f"column {spec.name!r} row {r}: value {_show(values.iloc[r])} outside the bounds [{_num(lo, spec)}, "
                        f'{_num(hi, spec)}] (set "clip": true to clamp)'
                    )
            out[spec.name] = (miss, x)
        else:
            keys = _keys(values, miss)
            if spec.categories != DISCOVER and (spec.kind == "ordinal" or spec.strict is not False):
                known = {category_key(c) for c in spec.categories}
                outside = ~miss & ~pd.Series(keys).isin(known).to_numpy()
                if outside.any():
                    r = _first(outside)
                    raise ValueError(
                        f"column {spec.name!r} row {r}: value {_show(values.iloc[r])} is not one of the "
                        f"{len(known)} declared categories (the column is strict)"
                    )
            out[spec.name] = (miss, keys)
    return out


@dataclass
class ColumnTally:
    """What :func:`fit_encoder` reads of one column before its distribution step: sums over
    rows, so the tallies of the chunks of a table add up to the table's (:meth:`add`).
    ``rows`` and ``nulls`` (null cells); ``categories``: the count of each non-null
    category key (categorical and ordinal columns; sorted keys); ``ranges``: the histogram
    of the non-null values on the range grid (:func:`~.discovery.range_histogram`; numeric
    columns whose range is discovered)."""

    rows: int
    nulls: int
    categories: dict[str, int] | None = None
    ranges: np.ndarray | None = None

    def add(self, other: ColumnTally) -> ColumnTally:
        """The tally of both tables' rows."""
        cats = None
        if self.categories is not None:
            keys = [*self.categories, *other.categories]
            cats = dsc.category_counts(keys, [*self.categories.values(), *other.categories.values()])
        ranges = None if self.ranges is None else self.ranges + other.ranges
        return ColumnTally(self.rows + other.rows, self.nulls + other.nulls, cats, ranges)


def tally_column(spec: ColumnSpec, miss: np.ndarray, vals: np.ndarray, weights: np.ndarray | None = None) -> ColumnTally:
    """The :class:`ColumnTally` of one column from :func:`check_table`'s ``(miss, values)``;
    ``weights``: each entry stands for that many rows (the distinct cells of a chunk)."""
    w = np.ones(miss.size, dtype=np.int64) if weights is None else np.asarray(weights, dtype=np.int64)
    rows, nulls = int(w.sum()), int(w[miss].sum())
    if spec.kind != "numeric":
        if spec.categories != DISCOVER:
            return ColumnTally(rows, nulls, categories={})
        keep = ~miss
        cats = dsc.category_counts(vals[keep].tolist(), None if weights is None else w[keep].tolist())
        return ColumnTally(rows, nulls, categories=cats)
    ranges = None
    if "range" in spec.discovers:
        lower, _ = dsc.range_bins(spec.type == "integer")
        if weights is None:
            ranges = dsc.range_histogram(vals[~miss], spec.type == "integer")
        else:
            ranges = _weighted_bincount(dsc._bin_of(vals[~miss], lower), w[~miss], lower.size)
    return ColumnTally(rows, nulls, ranges=ranges)


def _weighted_bincount(idx: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Integer counts: ``weights[k]`` added to cell ``idx[k]`` (exact in int64)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, idx, weights)
    return out


def tally_table(schema: Schema, checked: Mapping[str, tuple[np.ndarray, Any]]) -> dict[str, ColumnTally]:
    """The :class:`ColumnTally` of every schema column of a checked table (:func:`check_table`)."""
    return {spec.name: tally_column(spec, *checked[spec.name]) for spec in schema.columns}


def distribution_counts(column: tuple[np.ndarray, np.ndarray], edges: np.ndarray, clip: tuple[float, float] | None,
                        weights: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """The distribution histogram (:func:`~.discovery.fine_histogram`) of a checked numeric
    column ``(miss, values)``, its values first clamped to ``clip`` (given bounds);
    ``weights`` as in :func:`tally_column`."""
    miss, vals = column
    x = vals[~miss]
    if clip is not None:
        x = np.clip(x, *clip)
    if weights is None:
        return dsc.fine_histogram(x, edges)
    idx = np.searchsorted(edges, np.asarray(x, dtype=np.float64), side="right")
    return _weighted_bincount(idx, np.asarray(weights, dtype=np.int64)[~miss], edges.size + 1)


def values_frame(df: pd.DataFrame, schema: Schema | Mapping[str, Any]) -> pd.DataFrame:
    """The columns of ``df`` the schema names as values (after :func:`check_table`): numbers as
    floats (integer columns as ``Int64``), categories as the text they are matched by, null
    cells (empty, a null token, or missing) as missing values — the table a scorer or a plot
    reads."""
    schema = Schema.coerce(schema)
    checked = check_table(df, schema)
    out = {}
    for spec in schema.columns:
        miss, vals = checked[spec.name]
        if spec.kind == "numeric":
            x = np.where(miss, np.nan, vals)
            out[spec.name] = pd.array(np.where(miss, 0, x).astype(np.int64), dtype="Int64") if spec.type == "integer" else x
            if spec.type == "integer":
                out[spec.name] = pd.Series(out[spec.name]).mask(miss)
        else:
            out[spec.name] = pd.Series(vals, dtype=object).where(~miss, None)
    return pd.DataFrame(out)


def _keys(values: pd.Series, miss: np.ndarray) -> np.ndarray:
    """:func:`~margsynth.tabular.schema.category_key` of every cell (``None`` where null),
    computed once per distinct value."""
    codes, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
    table = np.array([category_key(u) for u in uniques] + [None], dtype=object)
    keys = table[np.where(codes < 0, len(uniques), codes)]
    keys[miss] = None
    return keys


def _num(v: float, spec: ColumnSpec) -> Any:
    return int(v) if spec.type == "integer" else v


# ----------------------------------------------------------------------------- codings
@dataclass(frozen=True)
class ColumnCoding:
    """How one column is coded (see the module docstring): ``categories`` (labels, for
    categorical/ordinal) or ``lo, hi, cuts`` (numeric), plus the ``other`` bucket and null.
    Numeric columns may carry the private distribution decoding draws from within a bin
    (``cells``: the edges of its cells within the bounds; ``masses``: their private masses)
    and the ``decimals`` floats are written with; ``null_tokens`` are the texts that mean
    null in the column besides the empty cell (a null cell is written as the first)."""

    name: str
    kind: str
    nullable: bool
    categories: tuple[Any, ...] | None = None
    other_label: str | None = None  # None: no other bucket
    type: str | None = None
    lo: float | None = None
    hi: float | None = None
    cuts: tuple[float, ...] | None = None
    clip: bool = False
    decimals: int | None = None
    cells: tuple[float, ...] | None = None
    masses: tuple[float, ...] | None = None
    null_tokens: tuple[str, ...] = ()
    fill: int | None = None  # the code of a null cell when the column is not nullable (nulls too rare to keep)
    rare: int | None = None  # a discovered set without an other bucket: the code of a value outside its categories
    located: bool = True  # False: the values were too few to locate privately; every cell is coded null

    @property
    def n_values(self) -> int:
        """Number of non-null codes (categories and ``other``, or bins)."""
        if self.kind == "numeric":
            return len(self.cuts) + 1
        return len(self.categories) + (self.other_label is not None)

    @property
    def size(self) -> int:
        return self.n_values + self.nullable

    @property
    def null_code(self) -> int | None:
        return self.n_values if self.nullable else None

    @property
    def edges(self) -> np.ndarray:
        """``lo, cuts..., hi`` (``hi + 1`` for integers: bins are half-open)."""
        top = self.hi + 1.0 if self.type == "integer" else self.hi
        return np.array([self.lo, *self.cuts, top], dtype=np.float64)

    def labels(self) -> tuple[str, ...]:
        """A text label per code (bins as ``[a, b)``; null as ``<null>``)."""
        if self.kind == "numeric":
            e = self.edges
            if self.type == "integer":
                labs = [f"{int(a)}" if b - a == 1 else f"{int(a)}..{int(b) - 1}" for a, b in zip(e[:-1], e[1:])]
            else:
                labs = [f"[{a:.6g}, {b:.6g})" for a, b in zip(e[:-1], e[1:])]
                labs[-1] = labs[-1][:-1] + "]"
        else:
            labs = [str(c) for c in self.categories]
            if self.other_label is not None:
                labs.append(self.other_label)
        if self.nullable:
            labs.append("<null>")
        return tuple(labs)

    def segments(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per bin, the pieces decoding draws from: ``(starts, ends, probabilities)`` —
        the bin's overlap with each cell of the private distribution, weighted by the cell's
        mass times the share of the cell inside the bin (uniform over the bin when there
        is no distribution or no mass in the bin)."""
        e = self.edges
        out = []
        cells = None if self.cells is None else np.asarray(self.cells, dtype=np.float64)
        mass = None if self.masses is None else np.asarray(self.masses, dtype=np.float64)
        for a, b in zip(e[:-1], e[1:]):
            if cells is not None:
                s0, s1 = np.maximum(cells[:-1], a), np.minimum(cells[1:], b)
                keep = s1 > s0
                w = mass[keep] * (s1[keep] - s0[keep]) / (cells[1:][keep] - cells[:-1][keep])
                if keep.any() and w.sum() > 0:
                    out.append((s0[keep], s1[keep], w / w.sum()))
                    continue
            out.append((np.array([a]), np.array([b]), np.array([1.0])))
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "nullable": self.nullable}
        if self.kind == "numeric":
            integer = self.type == "integer"
            out.update(type=self.type, bounds=[_n(self.lo, integer), _n(self.hi, integer)],
                       cuts=[_n(c, integer) for c in self.cuts], clip=self.clip)  # fmt: skip
            if self.decimals is not None:
                out["decimals"] = self.decimals
            if self.cells is not None:
                out["cells"] = [_n(c, integer) for c in self.cells]
                out["masses"] = [float(m) for m in self.masses]
        else:
            out.update(categories=list(self.categories), other_label=self.other_label)
        if self.null_tokens:
            out["null_tokens"] = list(self.null_tokens)
        if self.fill is not None:
            out["fill"] = self.fill
        if self.rare is not None:
            out["rare"] = self.rare
        if not self.located:
            out["located"] = False
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnCoding:
        if not isinstance(d, Mapping) or "name" not in d or d.get("kind") not in ("categorical", "ordinal", "numeric"):
            raise ValueError(f"encoder: bad column coding {d!r}")
        tokens = tuple(str(t) for t in d.get("null_tokens", ()))
        fill = d.get("fill")
        if d["kind"] == "numeric":
            lo, hi = d["bounds"]
            cells = d.get("cells")
            return cls(d["name"], "numeric", bool(d["nullable"]), type=d["type"], lo=float(lo), hi=float(hi),
                       cuts=tuple(float(c) for c in d["cuts"]), clip=bool(d.get("clip", False)),
                       decimals=d.get("decimals"), cells=None if cells is None else tuple(float(c) for c in cells),
                       masses=None if cells is None else tuple(float(m) for m in d["masses"]),
                       null_tokens=tokens, fill=fill, located=bool(d.get("located", True)))  # fmt: skip
        return cls(d["name"], d["kind"], bool(d["nullable"]), categories=tuple(d["categories"]),
                   other_label=d.get("other_label"), null_tokens=tokens, fill=fill, rare=d.get("rare"))  # fmt: skip


def _typed(key: str, dtype: Any) -> Any:
    """A discovered category key back as a value of the column's dtype (numbers stay
    numbers; only the dtype is used, never a cell)."""
    if pd.api.types.is_bool_dtype(dtype):
        return key == "True"
    if pd.api.types.is_integer_dtype(dtype):
        return int(key)
    if pd.api.types.is_float_dtype(dtype):
        return float(key)
    return key


def _fixed(decimals: int, v: float) -> str:
    return f"{v:.{decimals}f}"


def _each_distinct(values: np.ndarray, fmt) -> np.ndarray:
    """``fmt`` of each float of ``values``, called once per distinct value (by its bits:
    ``-0.0`` and ``0.0`` apart), as an object array."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    uniq, inv = np.unique(bits, return_inverse=True)
    return np.array([fmt(v) for v in uniq.view(np.float64).tolist()], dtype=object)[inv.ravel()]


def _label_dtype(labels: list[Any], nullable: bool) -> str | None:
    """The dtype a categorical or ordinal column decodes to: ``int64`` when every label is
    an integer (``Int64`` when nullable), ``float64`` when every label is a number,
    ``bool`` when every label is a boolean (``boolean`` when nullable), else ``None``
    (object: strings, or numbers beside a text ``other`` label)."""
    if all(isinstance(v, (bool, np.bool_)) for v in labels):
        return "boolean" if nullable else "bool"
    if any(isinstance(v, (bool, np.bool_)) for v in labels):
        return None
    if all(isinstance(v, (int, np.integer)) for v in labels):
        return "Int64" if nullable else "int64"
    if all(isinstance(v, (int, float, np.integer, np.floating)) for v in labels):
        return "float64"
    return None


def _n(v: float, integer: bool) -> Any:
    return int(v) if integer else float(v)


class Encoder:
    """A fitted coding of a raw table (see the module docstring); made by
    :func:`fit_encoder` or :meth:`from_dict`."""

    def __init__(self, columns: list[ColumnCoding] | tuple[ColumnCoding, ...]) -> None:
        self.columns = tuple(columns)
        if not self.columns:
            raise ValueError("encoder: needs at least one column")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"encoder: repeated column names {names}")
        self.domain = Domain(
            tuple(Attribute(c.name, c.size, ordinal=c.kind != "categorical", labels=c.labels()) for c in self.columns)
        )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def schema(self) -> Schema:
        """The explicit schema this encoder amounts to (no ``"discover"`` left): encoding
        a table with it needs no privacy budget."""
        cols = []
        for c in self.columns:
            nullable = c.nullable or c.fill is not None
            tokens = c.null_tokens or None
            if c.kind == "numeric":
                kw: dict[str, Any] = {"binning": "explicit", "cuts": c.cuts} if c.cuts else {"binning": "uniform", "bins": 1}
                cols.append(ColumnSpec(c.name, "numeric", nullable, type=c.type, bounds=(c.lo, c.hi), clip=True,
                                       decimals=c.decimals, null_tokens=tokens, **kw))  # fmt: skip
            else:  # rare values coded as a category: the nearest schema sends them to an other bucket
                strict = None if c.kind == "ordinal" else c.other_label is None and c.rare is None
                cols.append(ColumnSpec(c.name, c.kind, nullable, categories=c.categories, strict=strict,
                                       other_label=c.other_label or "other", null_tokens=tokens))  # fmt: skip
        return Schema(tuple(cols))

    # ------------------------------------------------------------------ encode
    def encode(self, df: pd.DataFrame) -> Dataset:
        """The :class:`Dataset` of ``df`` (its columns the encoder names; others are left
        out). Cells are checked as in :func:`check_table` against the fitted codings:
        categories outside a strict set are refused, those outside a discovered or
        non-strict set go to ``other`` (or to the category a discovered set without an
        ``other`` bucket codes its rare values as); numbers outside the bounds are clamped (discovered
        bounds or ``clip``) or refused; a null cell of a column whose nulls were too rare to
        keep gets the column's ``fill`` code."""
        checked = check_table(df, self._check_schema())
        codes = np.empty((len(df), len(self.columns)), dtype=np.int64)
        for j, c in enumerate(self.columns):
            miss, vals = checked[c.name]
            if c.kind == "numeric":
                x = np.clip(np.where(miss, c.lo, vals), c.lo, c.hi)
                code = np.searchsorted(np.asarray(c.cuts, dtype=np.float64), x, side="right")
            else:
                index = {category_key(v): i for i, v in enumerate(c.categories)}
                other = len(c.categories) if c.rare is None else c.rare  # only reached when either is set
                code = pd.Series(vals).map(index).fillna(other).to_numpy(dtype=np.int64)
            if c.nullable or c.fill is not None:
                code = np.where(miss, c.null_code if c.nullable else c.fill, code)
            if not c.located:
                code = np.full(code.shape, c.null_code)
            codes[:, j] = code
        return Dataset._trusted(codes, self.domain)

    def _check_schema(self) -> Schema:
        """The schema cells are checked against when encoding: the fitted one, with
        ``other`` buckets non-strict and numeric bounds clamping when they were discovered
        or ``clip`` was set."""
        cols = []
        for c in self.columns:
            nullable = c.nullable or c.fill is not None
            tokens = c.null_tokens or None
            if c.kind == "numeric":
                cols.append(ColumnSpec(c.name, "numeric", nullable, type=c.type, bounds=(c.lo, c.hi),
                                       binning="uniform", bins=1, clip=c.clip, null_tokens=tokens))  # fmt: skip
            else:  # a column with an other bucket (or a code for rare values) accepts any value
                cats = DISCOVER if c.other_label is not None or c.rare is not None or not c.categories else c.categories
                strict = None if c.kind == "ordinal" or cats == DISCOVER else True
                cols.append(ColumnSpec(c.name, c.kind, nullable, categories=cats, strict=strict,
                                       other_label=c.other_label or "other", null_tokens=tokens))  # fmt: skip
        return Schema(tuple(cols))

    def to_text(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A decoded table as the text its CSV holds: floats with the column's ``decimals``
        (else as Python writes them), integers as integers, null cells as the column's first
        null token (else empty), categories as their labels; the columns in ``frame``'s order
        (a run's output keeps the raw table's order, which the schema's need not be)."""
        coding = {c.name: c for c in self.columns}
        missing = [n for n in coding if n not in set(map(str, frame.columns))]
        if missing:
            raise ValueError(f"frame lacks the encoder's column(s) {missing}; expected a decoded table")
        out = {}
        for c in (coding[str(n)] for n in frame.columns if str(n) in coding):
            col = frame[c.name]
            null = col.isna().to_numpy()
            if c.kind == "numeric" and c.type == "float" and c.decimals is not None:
                text = _each_distinct(col.to_numpy(dtype=np.float64, na_value=0.0), partial(_fixed, c.decimals))
            elif c.kind == "numeric" and c.type == "integer":
                text = _each_distinct(col.to_numpy(dtype=np.float64, na_value=0.0), lambda v: str(int(v)))
            else:  # once per distinct value, unless an object column's values may compare equal across types (1 == True)
                cells = col.astype(object).fillna("")
                codes, uniq = pd.factorize(cells)
                if col.dtype != object or all(isinstance(u, str) for u in uniq):
                    text = np.array([u if isinstance(u, str) else category_key(u) for u in uniq], dtype=object)[codes]
                else:
                    text = [category_key(v) if not isinstance(v, str) else v for v in cells]
            token = c.null_tokens[0] if c.null_tokens else ""
            out[c.name] = pd.Series(np.where(null, token, np.array(text, dtype=object)), dtype=object)
        return pd.DataFrame(out)

    # ------------------------------------------------------------------ decode
    def decode(self, data: Dataset | pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """The raw table of ``data`` (a :class:`Dataset` over :attr:`domain`, or a frame of
        its codes): raw columns in order, categories as their labels (``other`` as its
        label; a column whose labels are all integers decodes to ``int64``, all numbers
        to ``float64``, all booleans to ``bool``, with ``Int64``/``boolean`` when
        nullable, else to ``object``), numbers drawn uniformly within their bin (integers
        as integers, dtype ``int64``, or ``Int64`` when nullable), null codes as missing
        cells. A code outside
        a column's range is refused with ``ValueError`` naming the column, row and code."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
        if isinstance(data, Dataset):
            if tuple(data.domain.names) != self.names:
                raise ValueError(f"dataset columns {list(data.domain.names)} are not the encoder's {list(self.names)}")
            codes = np.asarray(data.codes, dtype=np.int64)
        elif isinstance(data, pd.DataFrame):
            if [str(c) for c in data.columns] != list(self.names):
                raise ValueError(f"code columns {list(data.columns)} are not the encoder's {list(self.names)}")
            codes = np.empty(data.shape, dtype=np.int64)
            for j, c in enumerate(self.columns):
                x = pd.to_numeric(data.iloc[:, j], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                bad = ~np.isfinite(x) | (x != np.round(x))
                if bad.any():
                    r = _first(bad)
                    raise ValueError(f"column {c.name!r} row {r}: code {_show(data.iloc[r, j])} is not an integer")
                codes[:, j] = x.astype(np.int64)
        else:
            raise ValueError(f"data must be a Dataset or a DataFrame of codes, got {type(data).__name__}")
        for j, c in enumerate(self.columns):
            bad = (codes[:, j] < 0) | (codes[:, j] >= c.size)
            if bad.any():
                r = _first(bad)
                raise ValueError(
                    f"column {c.name!r} row {r}: unknown code {int(codes[r, j])}; expected 0..{c.size - 1}"
                )
        out = {}
        for j, c in enumerate(self.columns):
            out[c.name] = self._decode_column(c, codes[:, j], rng)
        return pd.DataFrame(out)

    def decode_column(self, name: str, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """One column of codes decoded as :meth:`decode` does (numbers drawn within their bins)."""
        return self._decode_column(self.columns[self.names.index(name)], np.asarray(codes, dtype=np.int64), rng)

    @staticmethod
    def _decode_column(c: ColumnCoding, code: np.ndarray, rng: np.random.Generator) -> pd.Series:
        null = code == c.null_code if c.nullable else np.zeros(code.shape, dtype=bool)
        if not c.located:  # its values were coded null; a bin the mechanism's noise filled is no value
            null = np.ones(code.shape, dtype=bool)
        if c.kind != "numeric":
            labels = list(c.categories) + ([c.other_label] if c.other_label is not None else [])
            dtype = _label_dtype(labels, c.nullable)
            if dtype is not None:  # numbers and booleans keep their type
                v = np.array(labels)[np.where(null, 0, code)]
                return pd.Series(pd.array(v, dtype=dtype)).mask(null) if c.nullable else pd.Series(v, dtype=dtype)
            lab = np.array(labels + [None], dtype=object)
            vals = lab[np.where(null, len(labels), code)]
            s = pd.Series(vals, dtype=object)
            return s.where(~null, np.nan)
        k = np.where(null, 0, code)
        a = np.zeros(code.size, dtype=np.float64)
        b = np.zeros(code.size, dtype=np.float64)
        for j, (s0, s1, p) in enumerate(c.segments()):  # a piece of the bin by its private mass
            rows = np.flatnonzero(k == j)
            if rows.size:
                pick = rng.choice(p.size, size=rows.size, p=p) if p.size > 1 else np.zeros(rows.size, dtype=np.int64)
                a[rows], b[rows] = s0[pick], s1[pick]
        if c.type == "integer":
            v = rng.integers(a.astype(np.int64), b.astype(np.int64))
            if c.nullable:
                return pd.Series(pd.array(np.where(null, 0, v), dtype="Int64")).mask(null)
            return pd.Series(v.astype(np.int64))
        v = np.minimum(rng.uniform(a, b), c.hi)
        if c.decimals is not None:  # as the column is written, never outside the bounds
            step = 10.0 ** -c.decimals
            lo, hi = math.ceil(c.lo / step - 1e-9) * step, math.floor(c.hi / step + 1e-9) * step
            v = np.round(v, c.decimals)
            if lo <= hi:
                v = np.clip(v, lo, hi)
        return pd.Series(np.where(null, np.nan, v), dtype=np.float64)

    # ------------------------------------------------------------------ specs and JSON
    def mgd_spec(self) -> dict[str, Any]:
        """A default MGD spec (``{"marginals": [...]}``, the SPEC.json format of
        :func:`margsynth.metrics.aemc.load_specs`): every 1-way marginal and every 2-way
        marginal; numeric and ordinal columns ordinal (moving mass between neighbouring
        bins costs by distance, weights shared equally), categorical columns flat
        (weight ``"inf"``: mass moves only by add/remove)."""
        ordinal = {c.name for c in self.columns if c.kind != "categorical"}

        def attrs(names: tuple[str, ...]) -> list[dict[str, Any]]:
            k = sum(n in ordinal for n in names)
            return [{"name": n, "weight": 1.0 / k if n in ordinal else "inf"} for n in names]

        names = self.names
        marg = [{"attributes": attrs((a,))} for a in names]
        marg += [{"attributes": attrs((a, b))} for i, a in enumerate(names) for b in names[i + 1 :]]
        return {"marginals": marg}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (for a saved model)."""
        return {"version": ENCODER_VERSION, "columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Encoder:
        if not isinstance(d, Mapping) or d.get("version") != ENCODER_VERSION or not isinstance(d.get("columns"), list):
            raise ValueError(f"encoder: expected {{'version': {ENCODER_VERSION}, 'columns': [...]}}")
        return cls([ColumnCoding.from_dict(c) for c in d["columns"]])

    def __repr__(self) -> str:
        return f"Encoder({', '.join(f'{c.name}: {c.size}' for c in self.columns)})"


# ----------------------------------------------------------------------------- sizes before discovery
def size_range(spec: ColumnSpec, present: int = 0) -> tuple[int, int]:
    """The fewest and the most codes :func:`fit_encoder` can give column ``spec``, whatever
    private discovery finds (null included). ``present`` is the number of distinct
    non-null values of a column whose categories are discovered: discovery keeps a subset
    of them (at most ``max_categories``), plus the ``other`` bucket. Explicit sizes are
    exact; ``bins: "auto"`` gives 2 to 64 bins (:func:`~.discovery.auto_bins`; at most
    the integers of given bounds), discovered bounds may close in on one integer, a
    quantile binning or explicit cuts within discovered bounds can merge down to one bin;
    ``nullable: "discover"`` adds zero or one, and so do discovered bounds (values too few to
    be located are coded as null)."""
    null_lo, null_hi = (0, 1) if spec.nullable == DISCOVER else (int(spec.nullable), int(spec.nullable))
    if spec.kind == "numeric" and spec.bounds == DISCOVER:
        null_hi = 1  # values too few to locate are coded as null, in any column
    if spec.kind != "numeric":
        if spec.categories != DISCOVER:
            n = len(spec.categories) + spec.has_other
            return n + null_lo, n + null_hi
        most = int(present) if spec.max_categories is None else min(int(present), spec.max_categories)
        return 1 + null_lo, most + 1 + null_hi
    integer = spec.type == "integer"
    given = spec.bounds != DISCOVER
    if spec.binning == "explicit":
        most = len(spec.cuts) + 1
        return (most if given else 1) + null_lo, most + null_hi
    span = int(spec.bounds[1] - spec.bounds[0] + 1) if given and integer else None
    if spec.bins == AUTO:
        most = 64 if span is None else min(64, span)
        fewest = min(2, most)
    else:  # the bins of uniform_cuts, counted without building them
        most = min(spec.bins, span) if span is not None else spec.bins
        fewest = most
    if spec.binning == "quantile" or not given:
        fewest = 1
    return fewest + null_lo, most + null_hi


#: Bytes per code of a column besides its marginals' cells: its cut point or label in the
#: encoder, in the sidecar's and a saved model's JSON, and in the arrays that encode and
#: decode it (an estimate; :func:`check_sizes`).
CODE_BYTES = 128


def check_sizes(schema: Schema, limit_mb: float | None = None) -> None:
    """Before anything is built from ``schema``: :class:`~margsynth.mechanisms.base.MemoryLimitError`
    naming the column when the most codes it can have (:func:`size_range`: its ``bins``,
    listed categories or cuts), :data:`CODE_BYTES` each, or its one-way marginal do not
    fit ``limit_mb`` MiB (``None``: :func:`~margsynth.mechanisms.base.current_memory_limit`).
    Counted, never built: ``"bins": 1000000000`` is refused at once."""
    limit = current_memory_limit() if limit_mb is None else limit_mb
    budget = limit * 2**20
    for spec in schema.columns:
        most = size_range(spec)[1]
        if most * CODE_BYTES > budget:
            what = (f"bins={spec.bins:,}" if spec.kind == "numeric" and spec.binning != "explicit"
                    else f"{most - 1:,} cut points" if spec.kind == "numeric" else f"{most:,} categories")  # fmt: skip
            raise MemoryLimitError(
                f"column {spec.name!r}: {what} make up to {most:,} codes, about {most * CODE_BYTES / 2**20:,.0f} MiB "
                f"to encode, more than the {limit:,.0f} MiB memory limit; expected at most "
                f"{int(budget // CODE_BYTES):,}"
            )


def domain_extremes(
    schema: Schema, checked: Mapping[str, tuple[np.ndarray, Any]] | None = None, *, present: Mapping[str, int] | None = None
) -> tuple[Domain, Domain]:
    """The smallest and the largest domain :func:`fit_encoder` can give ``schema``
    (:func:`size_range` per column; ``checked`` is :func:`check_table`'s output, read
    only for the number of distinct values of discovered category sets). A check that
    refuses a domain for being too large (memory) or too small (a one-value attribute)
    is monotone in every attribute's size, so a mechanism's ``validate`` that accepts
    both extremes accepts whatever discovery produces: the tabular pipeline validates
    against them before any noise. ``present``: instead of ``checked``, the number of
    distinct non-null values of each discovered category set (a table read in chunks)."""
    lows, highs = [], []
    for spec in schema.columns:
        count = 0
        if spec.kind != "numeric" and spec.categories == DISCOVER:
            if present is not None:
                count = int(present.get(spec.name, 0))
            else:
                miss, keys = checked[spec.name]
                count = len(set(keys[~miss].tolist()))
        lo, hi = size_range(spec, count)
        ordinal = spec.kind != "categorical"
        lows.append(Attribute(spec.name, lo, ordinal=ordinal))
        highs.append(Attribute(spec.name, hi, ordinal=ordinal))
    return Domain(tuple(lows)), Domain(tuple(highs))


# ----------------------------------------------------------------------------- fitting
def _steps(schema: Schema) -> list[tuple[str, str]]:
    """The discovery steps in order: ``(column, step)``."""
    return [(c.name, s) for c in schema.columns for s in c.discovers]


#: The budget rule of discovery (:func:`discovery_budget`), as shares of the run's total ρ.
COUNT_SHARE = 0.005  # the noisy row count (null rates, bins, the category budget)
NUMERIC_SHARE = 0.10  # all numeric columns together at least (range 40%, distribution 60% of a column's)
NUMERIC_CAP = 0.50  # numeric columns at most, so that a range bin of NUMERIC_FRACTION of the rows is found
NUMERIC_FRACTION = 0.03  # ... with probability KEEP_PROBABILITY, on tables whose size and budget allow it
DISCOVERY_CAP = 0.90  # numeric columns take more than NUMERIC_SHARE only while discovery stays within this
NULLS_SHARE = 0.005  # a column whose only step is its null count (a null rate of 1-2% found at the 1% test)
CATEGORY_SHARE = 0.10  # categories, when that keeps every category of the smallest fraction below
CATEGORY_CAP = 0.75  # categories at most, to keep every category of 10% of the rows on small tables
CATEGORY_FRACTIONS = (0.005, 0.01, 0.02, 0.05, 0.10)
RANGE_PART = 0.4


def discovery_budget(schema: Schema, total: float, share: float | None = None) -> dict[str, Any]:
    """The budget of each discovery step, as ρ (the documented rule; docs/tabular.md).

    ``share=None`` (the default rule): the row count :data:`COUNT_SHARE` of ``total``; the numeric columns :data:`NUMERIC_SHARE` together, an
    equal part each (its range step :data:`RANGE_PART` of it when the bounds are
    discovered, its distribution the rest); a column whose only step is its null count
    :data:`NULLS_SHARE`; the category sets what :func:`category_budget` chooses from the
    noisy row count. ``share`` given: discovery spends exactly ``share · total``: 2% of it
    on the row count, the rest an equal part per column. Returns
    ``{"count": ρ, "columns": {name: {step: ρ}}, "categories": "adaptive" | ρ per column,
    "most": the largest total ρ discovery can spend}``."""
    steps = _steps(schema)
    cat_cols = [n for n, s in steps if s == "categories"]
    num_cols = list(dict.fromkeys(n for n, s in steps if s in ("range", "distribution")))
    null_cols = [n for n, s in steps if s == "nulls"]
    plan: dict[str, Any] = {"count": 0.0, "columns": {}, "categories": "adaptive", "numeric": None}
    if not steps:
        plan["most"] = 0.0
        return plan
    if share is None:
        plan["count"] = COUNT_SHARE * total
        per_num = NUMERIC_SHARE * total / len(num_cols) if num_cols else 0.0
        cat_most = CATEGORY_CAP * total if cat_cols else 0.0
        per_null = NULLS_SHARE * total
        if any("range" in schema[name].discovers for name in num_cols):
            plan["numeric"] = "adaptive"
    else:
        budget = share * total
        plan["count"] = 0.02 * budget
        per_col = (budget - plan["count"]) / len(set(cat_cols) | set(num_cols) | set(null_cols))
        per_num = per_null = per_col
        plan["categories"] = per_col
        cat_most = per_col * len(cat_cols)
    _numeric_plan(schema, plan, num_cols, per_num)
    for name in null_cols:
        plan["columns"][name] = {"nulls": per_null}
    plan["most"] = plan["count"] + per_num * len(num_cols) + per_null * len(null_cols) + cat_most
    if plan["numeric"] == "adaptive":  # numeric_budget: at most NUMERIC_CAP, beyond NUMERIC_SHARE only within DISCOVERY_CAP
        fixed = plan["count"] + per_null * len(null_cols) + cat_most
        plan["most"] = min(fixed + NUMERIC_CAP * total, max(plan["most"], DISCOVERY_CAP * total))
    return plan


def range_false_positive(schema: Schema) -> float:
    """The false-positive rate of each range scan of ``schema``'s table (the range step's and
    the distribution's bounds, :func:`~margsynth.tabular.discovery.mass_edges`): the table's
    :data:`~margsynth.tabular.discovery.RANGE_FALSE_POSITIVE` shared by the columns whose range is
    discovered, so a wide table does not get a spurious bound in some column in most runs."""
    k = sum("range" in c.discovers for c in schema.columns)
    return dsc.RANGE_FALSE_POSITIVE / max(k, 1)


def numeric_budget(schema: Schema, plan: dict[str, Any], rows: float, total: float, spent: float) -> float:
    """The numeric columns' share of ``total`` under the default rule, from the noisy row
    count ``rows`` (post-processing of a released value) and ``spent``, the ρ discovery has
    spent or committed before them (the row count, the category sets, the null counts): the
    share at which every numeric column's range step finds a range bin holding
    :data:`NUMERIC_FRACTION` of the rows with probability ``KEEP_PROBABILITY`` — its noise
    ``σ ≤ NUMERIC_FRACTION · rows / (z + Φ⁻¹(KEEP_PROBABILITY))``, ``z`` the range scan's
    threshold in units of ``σ`` (:func:`~margsynth.tabular.discovery.range_threshold`) —
    between :data:`NUMERIC_SHARE` and :data:`NUMERIC_CAP`, and above ``NUMERIC_SHARE`` only
    as far as discovery stays within :data:`DISCOVERY_CAP` of ``total``. Sets each numeric
    column's steps in ``plan`` (an equal part each) and returns the share."""
    num_cols = list(dict.fromkeys(n for n, st in _steps(schema) if st in ("range", "distribution")))
    ranges = [schema[n] for n in num_cols if "range" in schema[n].discovers]
    fp = range_false_positive(schema)
    z = max(dsc.range_threshold(c.type == "integer", fp) for c in ranges) + float(ndtri(dsc.KEEP_PROBABILITY))
    sigma = NUMERIC_FRACTION * max(rows, 1.0) / z
    need = len(num_cols) / (2.0 * sigma**2 * RANGE_PART) / total
    room = max(NUMERIC_SHARE, DISCOVERY_CAP - spent / total)
    share = float(min(max(need, NUMERIC_SHARE), NUMERIC_CAP, room))
    _numeric_plan(schema, plan, num_cols, share * total / len(num_cols))
    return share


def _numeric_plan(schema: Schema, plan: dict[str, Any], names: list[str], per_num: float) -> None:
    """Each numeric column's steps in ``plan``: ``per_num`` each, :data:`RANGE_PART` of it to the
    range step when its bounds are discovered (with the table's scan rate), the rest to its distribution."""
    fp = range_false_positive(schema)
    for name in names:
        plan["columns"][name] = (
            {"range": RANGE_PART * per_num, "distribution": (1 - RANGE_PART) * per_num, "false_positive": fp}
            if "range" in schema[name].discovers
            else {"distribution": per_num}
        )


def category_budget(columns: int, rows: float, total: float, delta: float) -> tuple[float, float]:
    """The ``σ`` of each of ``columns`` category discoveries and the fraction of the rows a
    category needs to be kept with probability ``KEEP_PROBABILITY`` (the default rule): the
    smallest fraction of :data:`CATEGORY_FRACTIONS` whose cost (``columns / (2σ²)``) stays
    within :data:`CATEGORY_SHARE` of ``total``; else the 10% fraction at up to
    :data:`CATEGORY_CAP` of ``total`` (on small tables); else what that cap affords.
    ``rows`` is the noisy row count, ``delta`` each column's threshold δ."""
    for f in CATEGORY_FRACTIONS:
        sigma = dsc.category_sigma(f, rows, delta)
        if columns / (2 * sigma**2) <= CATEGORY_SHARE * total:
            return sigma, dsc.kept_fraction(sigma, rows, delta)
    sigma = max(dsc.category_sigma(CATEGORY_FRACTIONS[-1], rows, delta), math.sqrt(columns / (2 * CATEGORY_CAP * total)))
    return sigma, dsc.kept_fraction(sigma, rows, delta)


def fit_encoder(
    df: pd.DataFrame,
    schema: Schema | Mapping[str, Any] | str,
    *,
    ledger: BudgetLedger | None,
    rng: np.random.Generator | None,
    share: float | None = None,
    delta: float | None = None,
    checked: Mapping[str, tuple[np.ndarray, Any]] | None = None,
) -> tuple[Encoder, dict[str, Any]]:
    """Fit an :class:`Encoder` of ``df`` to ``schema``, discovering privately what it leaves
    to ``"discover"``.

    Every check runs first (:func:`check_table`, the ledger, the rng, the budget); then the
    discovery steps (:mod:`~margsynth.tabular.discovery`) with the budget of
    :func:`discovery_budget` (``share``: of the ledger's *total* ρ; ``None``: the default
    rule, whose category budget depends on the noisy row count). Category discovery also
    spends ``delta`` (split equally between its columns; see the discovery module for how it
    enters the final (ε, δ)). ``checked``: :func:`check_table`'s reading of ``df`` against
    ``schema`` when the caller has it already (the table is then not read again). The number
    of bins of ``bins: "auto"`` columns is chosen last, from the ρ the ledger has left for
    the mechanism (:func:`~margsynth.tabular.discovery.auto_bins`).

    Returns the encoder and the ``"preprocessing"`` report: the budget spent, the noisy
    row count, and per column what was done, what it cost and what it changed (bounds,
    bins, categories kept, the private share of values clamped or sent to ``other``, the
    private null rate); ``left_out`` lists the columns of ``df`` the schema does not name.
    A schema with nothing to discover needs no ledger, rng or delta, and spends nothing.
    """
    schema = Schema.coerce(schema)
    if checked is None:
        checked = check_table(df, schema)
    dtypes = {str(c): df[c].dtype for c in df.columns}

    def distribution(requests: Mapping[str, tuple[np.ndarray, tuple[float, float] | None]]) -> dict[str, np.ndarray]:
        return {name: distribution_counts(checked[name], edges, clip) for name, (edges, clip) in requests.items()}

    return fit_tallies(schema, tally_table(schema, checked), dtypes, left_out(df, schema), distribution, ledger=ledger,
                       rng=rng, share=share, delta=delta)  # fmt: skip


def fit_tallies(
    schema: Schema,
    tallies: Mapping[str, ColumnTally],
    dtypes: Mapping[str, Any],
    left: list[str],
    distribution: Any,
    *,
    ledger: BudgetLedger | None,
    rng: np.random.Generator | None,
    share: float | None = None,
    delta: float | None = None,
) -> tuple[Encoder, dict[str, Any]]:
    """:func:`fit_encoder` from what it reads of the table: the :class:`ColumnTally` of every
    schema column (:func:`tally_table`, or summed over the chunks of a table read in chunks),
    the columns' dtypes, the columns left out, and ``distribution``, called once with
    ``{column: (edges, clip bounds or None)}`` for the distribution histograms (their grid
    depends on earlier releases), returning ``{column: distribution_counts(...)}``. Every
    step's noise is drawn in the order of the steps before ``distribution`` is called, so
    the releases are those of :func:`fit_encoder` whatever reads the counts."""
    steps = _steps(schema)
    cat_cols = [n for n, s in steps if s == "categories"]
    if steps:
        if not isinstance(ledger, BudgetLedger):
            raise ValueError(
                f"ledger: the schema leaves {len(steps)} step(s) to discover; expected a BudgetLedger, got {ledger!r}"
            )
        if ledger.currency != "zcdp":
            raise ValueError(f"ledger: discovery is accounted in zCDP; got a {ledger.currency!r} ledger")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
        if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1):
            raise ValueError(f"share must be in (0, 1] or None, got {share!r}")
        plan = discovery_budget(schema, ledger.total, share)
        if not ledger.can_afford(plan["most"]):
            raise ValueError(f"discovery may spend {plan['most']:.6g} but the ledger has {ledger.remaining:.6g} left")
        if cat_cols and not (isinstance(delta, (int, float)) and not isinstance(delta, bool) and 0 < delta < 1):
            raise ValueError(
                f"delta: the schema discovers the categories of {cat_cols}; expected a delta in (0, 1), got {delta!r}"
            )
    delta_col = delta / len(cat_cols) if cat_cols else 0.0
    n = next(iter(tallies.values())).rows
    spent0 = ledger.spent if steps else 0.0

    report: dict[str, Any] = {"steps": len(steps), "left_out": list(left)}
    rows = None
    if steps:
        rows, info = dsc.noisy_count(n, rho=plan["count"], rng=rng, ledger=ledger, label="count rows")
        report["rows"] = info
    if cat_cols:
        if plan["categories"] == "adaptive":
            sigma_cat, fraction = category_budget(len(cat_cols), rows, ledger.total, delta_col)
        else:
            sigma_cat = gaussian_sigma(plan["categories"])
            fraction = dsc.kept_fraction(sigma_cat, rows, delta_col)
        report["categories"] = {"sigma": sigma_cat, "kept_fraction": fraction}
    if steps and plan["numeric"] == "adaptive":
        committed = plan["count"] + sum(p.get("nulls", 0.0) for p in plan["columns"].values())
        committed += len(cat_cols) / (2.0 * sigma_cat**2) if cat_cols else 0.0
        report["numeric_share"] = numeric_budget(schema, plan, rows, ledger.total, committed)

    fits: list[dict[str, Any]] = []
    for spec in schema.columns:
        col_plan = plan["columns"].get(spec.name, {}) if steps else {}
        fits.append(_fit_column(spec, tallies[spec.name], dtypes[spec.name], schema.tokens(spec.name), col_plan,
                                sigma_cat if spec.name in cat_cols else None, delta_col, rng, ledger, rows))  # fmt: skip
    pending = {spec.name: fit.pop("pending") for spec, fit in zip(schema.columns, fits) if "pending" in fit}
    if pending:  # the distribution histograms: their noise is drawn, their counts read now (one pass)
        counts = distribution({name: (p["edges"], p["clip"]) for name, p in pending.items()})
        for spec, fit in zip(schema.columns, fits):
            if spec.name in pending:
                _finish_distribution(fit, pending[spec.name], counts[spec.name])
    # the mechanism's budget is what discovery left: bins chosen from it (post-processing)
    rho_mech = ledger.remaining if steps else None
    # the tests of "is there anything there" (a null code, an other bucket), each at its share of a table-wide rate
    tests = {"nulls": sum(c.nullable == DISCOVER for c in schema.columns), "other": len(cat_cols),
             "false_positive": range_false_positive(schema),
             "rows_sigma": report["rows"]["sigma"] if steps else 0.0}  # fmt: skip
    columns, report_cols = [], {}
    for spec, fit in zip(schema.columns, fits):
        coding, rep = _finish_column(spec, fit, rho_mech, len(schema.columns), rows, tests)
        columns.append(coding)
        report_cols[spec.name] = rep
    report.update({
        "share": share,
        "rho": (ledger.spent - spent0) if steps else 0.0,
        "delta": delta_col * len(cat_cols),
        "columns": report_cols,
    })  # fmt: skip
    return Encoder(columns), report


#: Probability that some column without nulls is found to have some (``nullable: "discover"``;
#: each of the ``k`` such columns of a table is tested at ``NULL_FALSE_POSITIVE / k``).
NULL_FALSE_POSITIVE = 0.01
#: Probability that some discovered category set whose values were all kept keeps an (empty)
#: ``other`` bucket (each of the ``k`` discovered sets of a table is tested at ``OTHER_FALSE_POSITIVE / k``).
OTHER_FALSE_POSITIVE = 0.01


def _fit_column(spec, tally, dtype, tokens, plan, sigma_cat, delta_col, rng, ledger, rows) -> dict[str, Any]:
    """The private measurements of one column (:mod:`~margsynth.tabular.discovery`), in the
    order of its steps; the null cell (when the column may have nulls) joins the first. The
    distribution step's noise is drawn here and its histogram left ``"pending"`` (its counts
    are read once every column's noise is drawn: :func:`_finish_distribution`)."""
    nulls = tally.nulls if spec.nullable is not False else None
    fit: dict[str, Any] = {"tokens": tokens, "dtype": dtype, "has_nulls": tally.nulls > 0, "steps": [],
                           "noisy_nulls": None}  # fmt: skip
    steps = spec.discovers

    def took(info):
        fit["steps"].append(info)
        if "noisy_nulls" in info:
            fit["noisy_nulls"], fit["null_sigma"] = info["noisy_nulls"], info["sigma"]

    if "nulls" in steps:
        (y, _), sigma = dsc.noisy_counts(np.array([tally.rows - nulls, nulls], dtype=np.float64), plan["nulls"], rng, ledger,
                                   f"count nulls of {spec.name}")  # fmt: skip
        took({"step": "nulls", "method": "noisy null count", "sigma": sigma, "rho": plan["nulls"],
              "noisy_nulls": float(_), "values": float(y)})  # fmt: skip
        fit["values"] = float(y)
    if spec.kind != "numeric":
        if "categories" in steps:
            keys, info = dsc.select_categories(
                tally.categories, rho=1.0 / (2.0 * sigma_cat**2), delta=delta_col, rng=rng, ledger=ledger,
                label=f"discover categories of {spec.name}", max_keep=spec.max_categories, nulls=nulls,
            )  # fmt: skip
            keys = [k for k in keys if k != category_key(spec.other_label)]  # it decodes to the same label
            info["kept"] = len(keys)
            fit["kept_counts"] = info.pop("kept_counts")
            took({"step": "categories", **info})
            fit["keys"] = keys
        return fit
    integer = spec.type == "integer"
    first = nulls
    if "range" in steps:
        (i, j), info = dsc.release_range(tally.ranges, rho=plan["range"], integer=integer, rng=rng, ledger=ledger,
                                         label=f"discover the range of {spec.name}", nulls=first, with_noisy=True,
                                         false_positive=plan["false_positive"])  # fmt: skip
        range_mass = info.pop("noisy", None)
        lower, upper = dsc.range_bins(integer)
        if j - i >= 2 and not info["sparse"]:  # the end bins found, before the widening by a bin on each side
            fit["inner"] = (float(upper[i + 1]), float(lower[j - 1]))
        took({"step": "range", **info})
        first = None
        fit["sparse"] = info["sparse"]
    if "distribution" in steps:
        cells = dsc.distribution_cells(rows, gaussian_sigma(plan["distribution"]))
        clip = None
        if "range" in steps:
            edges = dsc.fine_edges(0.0, 0.0, integer, cells=cells, range_index=(i, j), range_mass=range_mass,
                                   range_sigma=fit["steps"][-1]["sigma"])  # fmt: skip
        else:
            lo, hi = spec.bounds
            edges = dsc.fine_edges(lo, hi, integer, cells=cells)
            clip = (lo, hi)
        noise, sigma = dsc.histogram_noise((edges.size + 1 + (first is not None),), plan["distribution"], rng, ledger,
                                           f"distribution of {spec.name}")  # fmt: skip
        fit["steps"].append(None)  # its place among the column's steps; filled by _finish_distribution
        fit["pending"] = {"edges": edges, "clip": clip, "noise": noise, "sigma": sigma, "rho": plan["distribution"],
                          "nulls": first}  # fmt: skip
    return fit


def _finish_distribution(fit: dict[str, Any], pending: dict[str, Any], counts: np.ndarray) -> None:
    """The distribution step of :func:`_fit_column` once its histogram is counted."""
    dist, info = dsc.release_distribution(counts, pending["edges"], pending["noise"], pending["sigma"],
                                          rho=pending["rho"], nulls=pending["nulls"])  # fmt: skip
    info = {"step": "distribution", **info}
    fit["steps"][fit["steps"].index(None)] = info
    if "noisy_nulls" in info:
        fit["noisy_nulls"], fit["null_sigma"] = info["noisy_nulls"], info["sigma"]
    fit["dist"], fit["dist_sigma"] = dist, info["sigma"]
    fit["values"] = dist.total


def _nullable(spec: ColumnSpec, fit: dict[str, Any], rows: float | None, tests: int = 1) -> tuple[bool, float | None]:
    """Whether the column keeps a null code, and its private null rate (``None`` when not
    measured; of the noisy row count):
    ``nullable: "discover"`` keeps it when the noisy null count exceeds
    ``σ Φ⁻¹(1 - NULL_FALSE_POSITIVE / tests)``, ``tests`` the table's columns so tested."""
    y = fit.get("noisy_nulls")
    rate = None
    if y is not None:
        rate = float(np.clip(max(y, 0.0) / max(rows or 0.0, 1.0), 0.0, 1.0))
    if spec.nullable != DISCOVER:
        return bool(spec.nullable), rate
    tau = -fit["null_sigma"] * float(ndtri(NULL_FALSE_POSITIVE / max(tests, 1)))
    return bool(y > tau), rate


def _other_stands_out(fit: dict[str, Any], rows: float, null_rate: float | None, tests: dict[str, Any]) -> bool:
    """Whether a discovered set keeps its ``other`` bucket: the private count of the values
    outside the kept categories — the noisy row count, less the noisy null count (when
    measured) and the kept categories' noisy counts, all released — exceeds
    ``s Φ⁻¹(1 - OTHER_FALSE_POSITIVE / k)``, ``s`` its noise's standard deviation and ``k``
    the table's discovered sets. Post-processing only."""
    info = fit["steps"][-1]
    terms = len(fit["kept_counts"]) + (fit.get("noisy_nulls") is not None)
    sd = math.sqrt(tests["rows_sigma"] ** 2 + terms * info["sigma"] ** 2)
    rest = rows * (1.0 - (null_rate or 0.0)) - math.fsum(fit["kept_counts"].values())
    return bool(rest > -sd * float(ndtri(OTHER_FALSE_POSITIVE / max(tests["other"], 1))))


def _finish_column(spec: ColumnSpec, fit: dict[str, Any], rho_mech: float | None, columns: int,
                   rows: float | None, tests: dict[str, Any] | None = None) -> tuple[ColumnCoding, dict[str, Any]]:  # fmt: skip
    """The coding of one column from its private measurements (post-processing only), and
    its report: steps, cost, and what preprocessing changed. ``tests``: the number of
    columns whose nullability is discovered (``"nulls"``), of discovered category sets
    (``"other"``) and the noise of the row count (``"rows_sigma"``)."""
    tests = tests or {"nulls": 1, "other": 1, "rows_sigma": 0.0}
    nullable, null_rate = _nullable(spec, fit, rows, tests["nulls"])
    has_nulls = bool(fit["has_nulls"])
    tokens = tuple(fit["tokens"])
    rep: dict[str, Any] = {"kind": spec.kind, "steps": list(fit["steps"])}
    if null_rate is not None:
        rep["null_rate"] = null_rate
    rep["nullable"] = nullable
    if spec.kind != "numeric":
        if "keys" in fit:
            cats: tuple[Any, ...] = tuple(_typed(k, fit["dtype"]) for k in fit["keys"])
            other = spec.other_label
            info = fit["steps"][-1]
            total = max(rows or 0.0, 1.0)
            nonnull = total * (1.0 - (null_rate or 0.0))
            rep["categories_kept"] = len(cats)
            rep["other_share"] = float(np.clip((nonnull - info["kept_mass"]) / total, 0.0, 1.0))
            rare = None
            if cats and not _other_stands_out(fit, total, null_rate, tests):  # no other bucket: rare values
                counts = fit["kept_counts"]  # coded as the kept category of the largest noisy count
                rare = max(range(len(cats)), key=lambda i: (counts.get(fit["keys"][i], -math.inf), -i))
                other = None
                rep["rare_coded_as"] = cats[rare]
        else:
            cats = tuple(spec.categories)
            other = spec.other_label if spec.has_other else None
            rare = None
            rep["steps"].insert(0, {"step": "categories", "method": "given", "rho": 0.0})
        fill = None
        if has_nulls and not nullable:
            fill = len(cats) if other is not None else (rare or 0)
            rep["nulls_coded_as"] = other if other is not None else cats[fill]
        coding = ColumnCoding(spec.name, spec.kind, nullable, categories=cats, other_label=other,
                              null_tokens=tokens, fill=fill, rare=rare)  # fmt: skip
    else:
        integer = spec.type == "integer"
        dist = fit.get("dist")
        clamped = 0.0
        if spec.bounds == DISCOVER:
            core = next((tuple(st["range"]) for st in fit["steps"] if st and st.get("step") == "range"), None)
            lo, hi, clamped = dsc.refine_bounds(dist, integer, tests.get("false_positive", dsc.RANGE_FALSE_POSITIVE),
                                                core=core, inner=fit.get("inner"))  # fmt: skip
            rep["clamped_noise"] = dsc.clamped_noise(dist, lo, hi, integer)
            if integer:  # the values lie within +-2^53 (larger ones are refused): so do the bounds, exact
                top = float(INTEGER_LIMIT - 1)
                lo, hi = min(max(lo, -top), top), max(min(hi, top), -top)
            clip = True
            if fit.get("sparse"):
                rep["sparse"] = True
        else:
            lo, hi = spec.bounds
            clip = spec.clip
            if dist is not None and dist.total > 0:
                clamped = (dist.below + dist.above) / dist.total
        if spec.binning == "explicit":
            top = hi if integer else hi
            cuts = [c for c in spec.cuts if lo < c <= top] if integer else [c for c in spec.cuts if lo < c < hi]
            method = "explicit cuts"
        else:
            if spec.bins == AUTO:
                values = fit.get("values", rows or 0.0)
                bins = dsc.auto_bins(values, rho_mech or 0.0, columns, lo=lo, hi=hi, integer=integer)
            else:
                bins = spec.bins
            if integer and hi - lo + 1 <= bins:  # every integer its own bin: the values exactly
                cuts = [float(v) for v in np.arange(lo + 1, hi + 1)]
                method = "one bin per integer"
            elif spec.binning == "quantile" and dist is not None:
                cuts = dsc.quantile_cuts(dist, lo, hi, bins, integer)
                method = "quantiles of the private distribution"
            else:
                cuts = dsc.uniform_cuts(lo, hi, bins, integer)
                method = "uniform"
        cells = masses = None
        if dist is not None:
            top = hi + 1.0 if integer else hi
            e = dist.edges
            keep = (e[1:] > lo) & (e[:-1] < top)
            idx = np.flatnonzero(keep)
            if idx.size:
                cell_edges = np.concatenate([[max(e[idx[0]], lo)], np.minimum(e[idx + 1], top)])
                cells, masses = tuple(float(c) for c in cell_edges), tuple(float(m) for m in dist.masses[idx])
        fill = None
        located = not fit.get("sparse")  # values too few to locate: coded as null (reported), nullable or not
        if not located:
            rep["values_coded_as_null"] = True
            nullable = rep["nullable"] = True  # (its bounds are a noise draw: a value there would be invented)
        if has_nulls and not nullable:
            coding0 = ColumnCoding(spec.name, "numeric", False, type=spec.type, lo=float(lo), hi=float(hi),
                                   cuts=tuple(float(c) for c in cuts))  # fmt: skip
            fill = _mode_bin(coding0, cells, masses)
            rep["nulls_coded_as"] = coding0.labels()[fill]
        coding = ColumnCoding(spec.name, "numeric", nullable, type=spec.type, lo=float(lo), hi=float(hi),
                              cuts=tuple(float(c) for c in cuts), clip=clip, decimals=spec.decimals, cells=cells,
                              masses=masses, null_tokens=tokens, fill=fill, located=located)  # fmt: skip
        rep.update({"bounds": [_n(lo, integer), _n(hi, integer)] if located else None, "bins": len(cuts) + 1,
                    "binning": method, "clamped_share": float(clamped) if located else 0.0})  # fmt: skip
        if "range" not in spec.discovers:
            rep["steps"].insert(0, {"step": "bounds", "method": "given", "rho": 0.0})
    rep["rho"] = math.fsum(st.get("rho", 0.0) for st in rep["steps"])
    rep["delta"] = math.fsum(st.get("delta", 0.0) for st in rep["steps"])
    return coding, rep


def _mode_bin(coding: ColumnCoding, cells, masses) -> int:
    """The bin holding the most private mass (the first bin without a distribution)."""
    if cells is None:
        return 0
    probe = ColumnCoding(coding.name, "numeric", False, type=coding.type, lo=coding.lo, hi=coding.hi,
                         cuts=coding.cuts, cells=cells, masses=masses)  # fmt: skip
    e, c, m = probe.edges, np.asarray(cells), np.asarray(masses)
    mids = (c[:-1] + c[1:]) / 2
    per_bin = np.bincount(np.clip(np.searchsorted(e, mids, side="right") - 1, 0, e.size - 2), weights=m,
                          minlength=e.size - 1)  # fmt: skip
    return int(np.argmax(per_bin))


#: A column that loses more than this share of its values to clamping, to ``other`` or to
#: null gets a warning line (:func:`describe`).
WARN_SHARE = 0.05


def _short(v: float) -> str:
    """A bound as a person reads it: an integer as such, else six significant digits (the
    report's number keeps every digit)."""
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 2**53 else f"{v:.6g}"


def describe(report: Mapping[str, Any]) -> list[str]:
    """What preprocessing did, in words (the ``"preprocessing"`` report of
    :func:`fit_encoder`): one line per column whose preprocessing cost budget or changed
    values — bounds found, bins, categories kept, the private share of values clamped,
    sent to ``other`` or coded as null, the null rate — then one warning line per column
    that lost more than :data:`WARN_SHARE` of its values (a discovered range's clamped share
    by more than twice its noise), and the columns left out."""
    lines, warnings = [], []
    cat = report.get("categories")
    for name, rep in report.get("columns", {}).items():
        parts, lost, margin = [], 0.0, 0.0
        if rep.get("values_coded_as_null"):
            parts.append("too few values to locate at this budget: every value coded as null")
            warnings.append(f"warning: {name}: its values could not be located privately and are written as null; "
                            "give its bounds in the schema")  # fmt: skip
        elif rep["kind"] == "numeric":
            how = "found" if any(st["step"] == "range" for st in rep["steps"]) else "given"
            lo, hi = (_short(b) for b in rep["bounds"])
            parts.append(f"bounds [{lo}, {hi}] {how}, {rep['bins']} bin{'s' * (rep['bins'] != 1)} ({rep['binning']})")
            lost = rep.get("clamped_share", 0.0)
            noise = rep.get("clamped_noise", 0.0)
            if lost > 0:
                within = f" (its noise ±{200 * noise:.1f}%)" if noise > 0 else ""
                parts.append(f"{100 * lost:.1f}% of values clamped{within}")
            margin = 2 * noise  # warned only when the share is beyond twice its noise
        elif "categories_kept" in rep:
            kept = rep["categories_kept"]
            note = f" (a category of {100 * cat['kept_fraction']:.1f}% of the rows is kept w.p. 0.99)" if cat else ""
            parts.append(f"{kept} categor{'y' if kept == 1 else 'ies'} kept{note}")
            lost = rep.get("other_share", 0.0)
            if "rare_coded_as" in rep:
                parts.append(f"no 'other' bucket (the rest, {100 * lost:.1f}% of values, is within the noise): "
                             f"rare values coded as {rep['rare_coded_as']!r}")  # fmt: skip
            else:
                parts.append(f"{100 * lost:.1f}% of values sent to 'other'")
        if rep.get("null_rate") is not None and (rep["nullable"] or "nulls_coded_as" in rep):
            parts.append(f"nulls {100 * rep['null_rate']:.1f}%")
        if "nulls_coded_as" in rep:
            parts.append(f"its nulls coded as {rep['nulls_coded_as']!r}")
            lost += rep.get("null_rate") or 0.0
        if rep["rho"] > 0 or parts and (lost > 0 or "nulls_coded_as" in rep):
            lines.append(f"  {name}: " + "; ".join(parts) + f" [rho {rep['rho']:.3g}]")
        if lost - margin > WARN_SHARE:
            warnings.append(f"warning: {name} lost {100 * lost:.1f}% of its values to preprocessing (more than "
                            f"{100 * WARN_SHARE:.0f}%); declare its categories or bounds in the schema, or raise epsilon")  # fmt: skip
    if report.get("left_out"):
        lines.append(f"  left out (not in the schema): {', '.join(report['left_out'])}")
    return lines + warnings
