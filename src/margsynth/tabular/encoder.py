"""Raw table ⇄ :class:`~margsynth.dataset.Dataset`: checking cells, private fitting,
encoding and decoding.

:func:`fit_encoder` checks every cell of the table against the schema first (no noise is
drawn and nothing is charged before all checks pass), then runs the private discovery
steps of :mod:`margsynth.tabular.discovery` for what the schema leaves to ``"discover"``,
each charged to the given ledger. The :class:`Encoder` it returns maps each column to one
attribute:

- categorical / ordinal: code ``i`` is the ``i``-th category (in the schema's order, or
  sorted for discovered ones), then the ``other`` bucket (discovered or ``strict: false``),
  then null (``nullable``);
- numeric: code ``j`` is bin ``j`` of ``[e_j, e_{j+1})`` (edges ``lo, cuts..., hi``; the last
  bin also holds ``hi``; integer bins hold the integers ``e_j .. e_{j+1}-1``), then null.

Decoding draws a numeric value uniformly within its bin (an integer uniformly among the
bin's integers), so a decoded value lies in the bin it was drawn for and within the
bounds; the ``other`` bucket decodes to its label and null to a missing cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset, _show
from ..domain import Attribute, Domain
from ..privacy import BudgetLedger
from . import discovery as dsc
from .schema import DISCOVER, ColumnSpec, Schema, category_key

__all__ = ["ENCODER_VERSION", "ColumnCoding", "Encoder", "check_table", "domain_extremes", "fit_encoder", "size_range"]

ENCODER_VERSION = 1


def _missing(values: pd.Series) -> np.ndarray:
    """Null cells: NaN/None/NA, or the empty string."""
    miss = values.isna().to_numpy()
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        miss = miss | (values.astype(object) == "").to_numpy(dtype=bool)
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
    return x


def check_table(df: pd.DataFrame, schema: Schema) -> dict[str, tuple[np.ndarray, Any]]:
    """Every check of ``df`` against ``schema`` (columns, then cells column by column);
    ``ValueError`` naming the column, and for a cell its (0-based) row and value.

    Returns per column ``(missing mask, values)``: floats for numeric columns, category
    keys (:func:`~margsynth.tabular.schema.category_key`) otherwise."""
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    cols = [str(c) for c in df.columns]
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise ValueError(f"column {dup[0]!r}: appears twice in the data")
    for c in cols:
        if c not in schema.names:
            raise ValueError(f"column {c!r}: in the data but not in the schema; schema has {list(schema.names)}")
    for name in schema.names:
        if name not in cols:
            raise ValueError(f"column {name!r}: in the schema but not in the data; data has {cols}")
    if len(df) == 0:
        raise ValueError("df has no rows")
    frame = df.set_axis(cols, axis=1)
    out: dict[str, tuple[np.ndarray, Any]] = {}
    for spec in schema.columns:
        values = frame[spec.name].reset_index(drop=True)
        miss = _missing(values)
        if miss.any() and not spec.nullable:
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
    categorical/ordinal) or ``lo, hi, cuts`` (numeric), plus the ``other`` bucket and null."""

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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "nullable": self.nullable}
        if self.kind == "numeric":
            integer = self.type == "integer"
            out.update(type=self.type, bounds=[_n(self.lo, integer), _n(self.hi, integer)],
                       cuts=[_n(c, integer) for c in self.cuts], clip=self.clip)  # fmt: skip
        else:
            out.update(categories=list(self.categories), other_label=self.other_label)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnCoding:
        if not isinstance(d, Mapping) or "name" not in d or d.get("kind") not in ("categorical", "ordinal", "numeric"):
            raise ValueError(f"encoder: bad column coding {d!r}")
        if d["kind"] == "numeric":
            lo, hi = d["bounds"]
            return cls(d["name"], "numeric", bool(d["nullable"]), type=d["type"], lo=float(lo), hi=float(hi),
                       cuts=tuple(float(c) for c in d["cuts"]), clip=bool(d.get("clip", False)))  # fmt: skip
        return cls(d["name"], d["kind"], bool(d["nullable"]), categories=tuple(d["categories"]),
                   other_label=d.get("other_label"))  # fmt: skip


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
            if c.kind == "numeric":
                if c.cuts:
                    cols.append(ColumnSpec(c.name, "numeric", c.nullable, type=c.type, bounds=(c.lo, c.hi),
                                           binning="explicit", cuts=c.cuts, clip=True))  # fmt: skip
                else:
                    cols.append(ColumnSpec(c.name, "numeric", c.nullable, type=c.type, bounds=(c.lo, c.hi),
                                           binning="uniform", bins=1, clip=True))  # fmt: skip
            else:
                strict = None if c.kind == "ordinal" else c.other_label is None
                cols.append(ColumnSpec(c.name, c.kind, c.nullable, categories=c.categories, strict=strict,
                                       other_label=c.other_label or "other"))  # fmt: skip
        return Schema(tuple(cols))

    # ------------------------------------------------------------------ encode
    def encode(self, df: pd.DataFrame) -> Dataset:
        """The :class:`Dataset` of ``df`` (columns in the encoder's order). Cells are
        checked as in :func:`check_table` against the fitted codings: categories outside
        a strict set are refused, those outside a discovered or non-strict set go to
        ``other``; numbers outside the bounds are clamped (discovered bounds or ``clip``)
        or refused."""
        checked = check_table(df, self._check_schema())
        codes = np.empty((len(df), len(self.columns)), dtype=np.int64)
        for j, c in enumerate(self.columns):
            miss, vals = checked[c.name]
            if c.kind == "numeric":
                x = np.clip(np.where(miss, c.lo, vals), c.lo, c.hi)
                code = np.searchsorted(np.asarray(c.cuts, dtype=np.float64), x, side="right")
            else:
                index = {category_key(v): i for i, v in enumerate(c.categories)}
                other = len(c.categories)  # only reached when there is an other bucket
                code = pd.Series(vals).map(index).fillna(other).to_numpy(dtype=np.int64)
            if c.nullable:
                code = np.where(miss, c.null_code, code)
            codes[:, j] = code
        return Dataset._trusted(codes, self.domain)

    def _check_schema(self) -> Schema:
        """The schema cells are checked against when encoding: the fitted one, with
        ``other`` buckets non-strict and numeric bounds clamping when they were discovered
        or ``clip`` was set."""
        cols = []
        for c in self.columns:
            if c.kind == "numeric":
                cols.append(ColumnSpec(c.name, "numeric", c.nullable, type=c.type, bounds=(c.lo, c.hi),
                                       binning="uniform", bins=1, clip=c.clip))  # fmt: skip
            else:  # a column with an other bucket accepts any value: no set to check against
                cats = DISCOVER if c.other_label is not None or not c.categories else c.categories
                strict = None if c.kind == "ordinal" or cats == DISCOVER else True
                cols.append(ColumnSpec(c.name, c.kind, c.nullable, categories=cats, strict=strict,
                                       other_label=c.other_label or "other"))  # fmt: skip
        return Schema(tuple(cols))

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

    @staticmethod
    def _decode_column(c: ColumnCoding, code: np.ndarray, rng: np.random.Generator) -> pd.Series:
        null = code == c.null_code if c.nullable else np.zeros(code.shape, dtype=bool)
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
        e = c.edges
        k = np.where(null, 0, code)
        a, b = e[k], e[k + 1]
        if c.type == "integer":
            v = rng.integers(a.astype(np.int64), b.astype(np.int64))
            if c.nullable:
                return pd.Series(pd.array(np.where(null, 0, v), dtype="Int64")).mask(null)
            return pd.Series(v.astype(np.int64))
        v = np.minimum(rng.uniform(a, b), c.hi)
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
    exact; discovered bounds give ``bins`` uniform float bins, ``min(bins, 2)`` to
    ``bins`` uniform integer bins (the bounds span at least two integers), and a quantile
    binning or explicit cuts within discovered bounds can merge down to one bin."""
    null = int(spec.nullable)
    if spec.kind != "numeric":
        if spec.categories != DISCOVER:
            n = len(spec.categories) + spec.has_other
            return n + null, n + null
        most = int(present) if spec.max_categories is None else min(int(present), spec.max_categories)
        return 1 + null, most + 1 + null
    integer = spec.type == "integer"
    given = spec.bounds != DISCOVER
    if spec.binning == "explicit":
        most = len(spec.cuts) + 1
        return (most if given else 1) + null, most + null
    most = len(dsc.uniform_cuts(*spec.bounds, spec.bins, integer)) + 1 if given else spec.bins
    if spec.binning == "quantile":
        fewest = 1
    elif given or not integer:
        fewest = most
    else:
        fewest = min(spec.bins, 2)
    return fewest + null, most + null


def domain_extremes(schema: Schema, checked: Mapping[str, tuple[np.ndarray, Any]]) -> tuple[Domain, Domain]:
    """The smallest and the largest domain :func:`fit_encoder` can give ``schema``
    (:func:`size_range` per column; ``checked`` is :func:`check_table`'s output, read
    only for the number of distinct values of discovered category sets). A check that
    refuses a domain for being too large (memory) or too small (a one-value attribute)
    is monotone in every attribute's size, so a mechanism's ``validate`` that accepts
    both extremes accepts whatever discovery produces: the tabular pipeline validates
    against them before any noise."""
    lows, highs = [], []
    for spec in schema.columns:
        present = 0
        if spec.kind != "numeric" and spec.categories == DISCOVER:
            miss, keys = checked[spec.name]
            present = len(set(keys[~miss].tolist()))
        lo, hi = size_range(spec, present)
        ordinal = spec.kind != "categorical"
        lows.append(Attribute(spec.name, lo, ordinal=ordinal))
        highs.append(Attribute(spec.name, hi, ordinal=ordinal))
    return Domain(tuple(lows)), Domain(tuple(highs))


# ----------------------------------------------------------------------------- fitting
def _steps(schema: Schema) -> list[tuple[str, str]]:
    """The discovery steps in order: ``(column, step)``."""
    return [(c.name, s) for c in schema.columns for s in c.discovers]


def fit_encoder(
    df: pd.DataFrame,
    schema: Schema | Mapping[str, Any] | str,
    *,
    ledger: BudgetLedger | None,
    rng: np.random.Generator | None,
    share: float = 1.0,
    delta: float | None = None,
    checked: Mapping[str, tuple[np.ndarray, Any]] | None = None,
) -> tuple[Encoder, dict[str, Any]]:
    """Fit an :class:`Encoder` of ``df`` to ``schema``, discovering privately what it leaves
    to ``"discover"``.

    Every check runs first (:func:`check_table`, the ledger, the rng, the budget); then the
    discovery steps (:mod:`~margsynth.tabular.discovery`), which spend ``share`` of the
    ledger's *total* budget (``ledger.portion(share)``), split equally between the steps
    (one per discovered category set, per discovered bounds and per quantile binning).
    Category discovery also spends ``delta`` (split equally between its columns; see the
    discovery module for how it enters the final (ε, δ)).

    ``checked``: :func:`check_table`'s reading of ``df`` against ``schema`` when the caller
    has it already (the table is then not read again).

    Returns the encoder and the ``"preprocessing"`` report: the budget spent, and per
    column what was done and what it cost. A schema with nothing to discover needs no
    ledger, rng or delta, and spends nothing. Explicit cut points outside discovered bounds
    are dropped (their bins merge; the report gives the number of bins).
    """
    schema = Schema.coerce(schema)
    if checked is None:
        checked = check_table(df, schema)
    dtypes = {str(c): df[c].dtype for c in df.columns}
    steps = _steps(schema)
    cat_cols = [n for n, s in steps if s == "categories"]
    rho_step = 0.0
    if steps:
        if not isinstance(ledger, BudgetLedger):
            raise ValueError(
                f"ledger: the schema leaves {len(steps)} step(s) to discover; expected a BudgetLedger, got {ledger!r}"
            )
        if ledger.currency != "zcdp":
            raise ValueError(f"ledger: discovery is accounted in zCDP; got a {ledger.currency!r} ledger")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not (0 < share <= 1):
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        budget = ledger.portion(share)
        if not ledger.can_afford(budget):
            raise ValueError(f"share={share!r}: the ledger has {ledger.remaining:.6g} left, less than {budget:.6g}")
        rho_step = budget / len(steps)
        if cat_cols and not (isinstance(delta, (int, float)) and not isinstance(delta, bool) and 0 < delta < 1):
            raise ValueError(
                f"delta: the schema discovers the categories of {cat_cols}; expected a delta in (0, 1), got {delta!r}"
            )
    delta_col = delta / len(cat_cols) if cat_cols else 0.0

    columns: list[ColumnCoding] = []
    report_cols: dict[str, Any] = {}
    for spec in schema.columns:
        miss, vals = checked[spec.name]
        done: list[dict[str, Any]] = []
        if spec.kind != "numeric":
            if spec.categories == DISCOVER:
                keys, info = dsc.discover_categories(
                    vals[~miss].tolist(), rho=rho_step, delta=delta_col, rng=rng, ledger=ledger,
                    label=f"discover categories of {spec.name}", max_keep=spec.max_categories,
                )  # fmt: skip
                other = spec.other_label
                # a kept category named like the other bucket joins it (it decodes to the same label)
                keys = [k for k in keys if k != category_key(other)]
                info["kept"] = len(keys)
                done.append({"step": "categories", **info})
                cats: tuple[Any, ...] = tuple(_typed(k, dtypes[spec.name]) for k in keys)
            else:
                cats = tuple(spec.categories)
                other = spec.other_label if spec.has_other else None
                done.append({"step": "categories", "method": "given", "rho": 0.0})
            columns.append(ColumnCoding(spec.name, spec.kind, spec.nullable, categories=cats, other_label=other))
        else:
            integer = spec.type == "integer"
            x = vals[~miss]
            clip = spec.clip
            if spec.bounds == DISCOVER:
                (lo, hi), info = dsc.discover_bounds(
                    x, rho=rho_step, integer=integer, rng=rng, ledger=ledger, label=f"discover bounds of {spec.name}"
                )
                done.append({"step": "bounds", **info, "note": "values outside are clamped to the bounds"})
                clip = True
            else:
                lo, hi = spec.bounds
                done.append(
                    {"step": "bounds", "method": "given", "bounds": [_num(lo, spec), _num(hi, spec)], "rho": 0.0}
                )
            x = np.clip(x, lo, hi)
            if spec.binning == "quantile":
                cuts, info = dsc.private_quantile_cuts(
                    x, lo, hi, spec.bins, rho=rho_step, integer=integer, rng=rng, ledger=ledger,
                    label=f"quantile cuts of {spec.name}",
                )  # fmt: skip
                done.append({"step": "binning", **info})
            elif spec.binning == "explicit":
                cuts = [c for c in spec.cuts if lo < c <= hi] if integer else [c for c in spec.cuts if lo < c < hi]
                done.append({"step": "binning", "method": "explicit cuts", "bins": len(cuts) + 1, "rho": 0.0})
            else:
                cuts = dsc.uniform_cuts(lo, hi, spec.bins, integer)
                done.append({"step": "binning", "method": "uniform", "bins": len(cuts) + 1, "rho": 0.0})
            columns.append(ColumnCoding(spec.name, "numeric", spec.nullable, type=spec.type, lo=float(lo), hi=float(hi),
                                        cuts=tuple(float(c) for c in cuts), clip=clip))  # fmt: skip
        if spec.nullable:
            done.append({"step": "null", "method": "null is a value of its own (the last code)", "rho": 0.0})
        report_cols[spec.name] = {"kind": spec.kind, "steps": done, "rho": math.fsum(s.get("rho", 0.0) for s in done),
                                  "delta": math.fsum(s.get("delta", 0.0) for s in done)}  # fmt: skip
    encoder = Encoder(columns)
    report = {
        "share": share if steps else 0.0,
        "rho": rho_step * len(steps),
        "delta": delta_col * len(cat_cols),
        "steps": len(steps),
        "columns": report_cols,
    }
    return encoder, report
