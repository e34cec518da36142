"""The schema of a raw table: one :class:`ColumnSpec` per column, in the table's order.

A schema says, for every column of a raw table (strings, numbers, empty cells), how it
becomes one discrete attribute of a :class:`~margsynth.dataset.Dataset`:

- ``categorical``: a set of ``categories`` (a list, or ``"discover"`` to find the frequent
  ones privately); ``strict`` (default ``true`` for a list) refuses a value outside the
  list, ``strict: false`` sends it to the ``other`` bucket (labelled ``other_label``). A
  discovered set always has an ``other`` bucket (the rare categories go there);
  ``max_categories`` (optional, discovered sets only) keeps at most that many, those with
  the largest noisy counts, so the column's size is known before any noise.
- ``ordinal``: an ordered list of ``categories`` (always strict).
- ``numeric``: ``type`` ``integer`` or ``float``; ``bounds`` ``[lo, hi]`` or ``"discover"``;
  ``binning`` ``uniform`` (``bins`` equal-width bins within the bounds), ``quantile``
  (``bins`` bins cut at private quantiles) or ``explicit`` (``cuts``, the increasing
  interior cut points); ``bins`` a positive integer or ``"auto"`` (the default: a
  documented rule of the table's size and the budget, :func:`auto_bins`); ``clip``
  (default ``false``) clamps values outside given bounds instead of refusing them (values
  outside *discovered* bounds are always clamped); ``decimals`` (float columns, optional):
  the number of decimals the column is written with, which the output keeps.
- every kind: ``nullable``: ``false`` (default), ``true`` (a null cell is a value of its
  own) or ``"discover"`` (whether the column has nulls is found privately);
  ``null_tokens`` (optional): the cell texts that mean null in this column, besides the
  empty cell (default: the schema's).

The JSON form is ``{"columns": [{"name": ..., "kind": ..., ...}, ...]}`` (plus
``"null_tokens": [...]`` for the whole file, and ``"public": true`` when the categories and
bounds were read from a public file by :func:`draft_schema`); docs/tabular.md has a
complete example. A schema may name a subset of a table's columns: the others are left
out of the run (and the run says which). Every problem is a ``ValueError`` whose one-line
message names the column (and, for data, the row and value).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["AUTO", "BINNINGS", "KINDS", "NUMERIC_TYPES", "ColumnSpec", "Schema", "draft_schema"]

KINDS = ("categorical", "numeric", "ordinal")
NUMERIC_TYPES = ("integer", "float")
BINNINGS = ("uniform", "quantile", "explicit")
DISCOVER = "discover"
#: ``bins`` chosen by :func:`~margsynth.tabular.discovery.auto_bins` (the default).
AUTO = "auto"
#: Label of the bucket of the categories outside a (discovered or non-strict) set.
DEFAULT_OTHER = "other"

_KEYS = {
    "categorical": {"name", "kind", "categories", "strict", "other_label", "max_categories", "nullable", "null_tokens"},
    "ordinal": {"name", "kind", "categories", "nullable", "null_tokens"},
    "numeric": {"name", "kind", "type", "bounds", "binning", "bins", "cuts", "clip", "nullable", "null_tokens",
                "decimals"},
}  # fmt: skip


def check_tokens(where: str, tokens: Any) -> tuple[str, ...]:
    """A list of null tokens: non-empty strings, none twice (``ValueError`` naming ``where``)."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise ValueError(f"{where}: null_tokens must be a list of strings, got {tokens!r}")
    out = tuple(tokens)
    for t in out:
        if not isinstance(t, str) or not t:
            raise ValueError(f"{where}: a null token must be a non-empty string, got {t!r} (the empty cell is null anyway)")
    if len(set(out)) != len(out):
        raise ValueError(f"{where}: null_tokens lists {sorted(t for t in out if out.count(t) > 1)[0]!r} twice")
    return out


def _scalar(value: Any) -> Any:
    """A JSON scalar for a category value (numpy scalars unwrapped)."""
    if isinstance(value, np.generic):
        value = value.item()
    return value


def category_key(value: Any) -> str:
    """The text a category is matched by: ``"3"`` for 3, 3.0, np.int64(3) and "3" alike, so
    a schema's categories match the cells whatever type the CSV reader gave them."""
    value = _scalar(value)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    return str(value)


def _finite(name: str, what: str, value: Any) -> float:
    """A finite number, else ``ValueError`` naming the column."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
    ):
        raise ValueError(f"column {name!r}: {what} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ColumnSpec:
    """One column of a :class:`Schema` (see the module docstring for the keys).

    ``categories`` is a tuple (``None`` for numeric columns) or ``"discover"``;
    ``bounds`` a ``(lo, hi)`` pair or ``"discover"``; ``cuts`` the explicit interior cut
    points of ``binning="explicit"``.
    """

    name: str
    kind: str
    nullable: bool | str = False
    categories: tuple[Any, ...] | str | None = None
    strict: bool | None = None
    other_label: str = DEFAULT_OTHER
    type: str | None = None
    bounds: tuple[float, float] | str | None = None
    binning: str | None = None
    bins: int | None = None
    cuts: tuple[float, ...] | None = None
    clip: bool = False
    max_categories: int | None = None
    null_tokens: tuple[str, ...] | None = None
    decimals: int | None = None

    def __post_init__(self) -> None:
        n = self.name
        if not isinstance(n, str) or not n:
            raise ValueError(f"column name must be a non-empty string, got {n!r}")
        if self.kind not in KINDS:
            raise ValueError(f"column {n!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.nullable, bool) and self.nullable != DISCOVER:
            raise ValueError(f'column {n!r}: nullable must be true, false or "discover", got {self.nullable!r}')
        if self.null_tokens is not None:
            object.__setattr__(self, "null_tokens", check_tokens(f"column {n!r}", self.null_tokens))
        d = self.decimals
        if d is not None:
            if self.kind != "numeric" or self.type != "float":
                raise ValueError(f"column {n!r}: decimals is for float columns, not a {self.type or self.kind} column")
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d <= 15:
                raise ValueError(f"column {n!r}: decimals must be an integer in 0..15, got {d!r}")
            object.__setattr__(self, "decimals", int(d))
        if self.kind == "numeric":
            self._check_numeric()
        else:
            self._check_categories()

    # ------------------------------------------------------------------ checks
    def _check_categories(self) -> None:
        n = self.name
        for key in ("type", "bounds", "binning", "bins", "cuts"):
            if getattr(self, key) is not None:
                raise ValueError(f"column {n!r}: {key!r} is for numeric columns, not {self.kind}")
        cats = self.categories
        m = self.max_categories
        if m is not None:
            if cats != DISCOVER:
                raise ValueError(f'column {n!r}: max_categories is for categories "discover", got categories {cats!r}')
            if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
                raise ValueError(f"column {n!r}: max_categories must be a positive integer, got {m!r}")
            object.__setattr__(self, "max_categories", int(m))
        if cats is None:
            raise ValueError(f"column {n!r}: {self.kind} column needs 'categories' (a list or \"discover\")")
        if isinstance(cats, str):
            if cats != DISCOVER or self.kind == "ordinal":
                want = "a list" if self.kind == "ordinal" else 'a list or "discover"'
                raise ValueError(f"column {n!r}: categories must be {want}, got {cats!r}")
            if self.strict:
                raise ValueError(
                    f"column {n!r}: strict is for a given category list; discovered categories put the rare "
                    "ones in the 'other' bucket"
                )
        else:
            if not isinstance(cats, Sequence) or len(cats) == 0:
                raise ValueError(f'column {n!r}: categories must be a non-empty list or "discover", got {cats!r}')
            cats = tuple(_scalar(c) for c in cats)
            for c in cats:
                if (
                    c is None
                    or (isinstance(c, float) and not math.isfinite(c))
                    or not isinstance(c, (str, int, float, bool))
                ):
                    raise ValueError(f"column {n!r}: category {c!r} must be a string or a finite number")
            keys = [category_key(c) for c in cats]
            dup = sorted({k for k in keys if keys.count(k) > 1})
            if dup:
                raise ValueError(f"column {n!r}: category {dup[0]!r} is listed twice")
            object.__setattr__(self, "categories", cats)
        if self.kind == "ordinal" and self.strict is not None and not self.strict:
            raise ValueError(f"column {n!r}: an ordinal column is always strict")
        if self.strict is not None and not isinstance(self.strict, bool):
            raise ValueError(f"column {n!r}: strict must be true or false, got {self.strict!r}")
        if not isinstance(self.other_label, str) or not self.other_label:
            raise ValueError(f"column {n!r}: other_label must be a non-empty string, got {self.other_label!r}")
        if (
            self.has_other
            and not isinstance(cats, str)
            and category_key(self.other_label) in {category_key(c) for c in cats}
        ):
            raise ValueError(
                f"column {n!r}: other_label {self.other_label!r} is also a category; choose another other_label"
            )

    def _check_numeric(self) -> None:
        n = self.name
        if self.categories is not None or self.strict is not None or self.max_categories is not None:
            raise ValueError(
                f"column {n!r}: 'categories', 'strict' and 'max_categories' are for categorical columns, not numeric"
            )
        if self.type not in NUMERIC_TYPES:
            raise ValueError(f"column {n!r}: type must be one of {NUMERIC_TYPES}, got {self.type!r}")
        b = self.bounds
        if b is None:
            raise ValueError(f"column {n!r}: numeric column needs 'bounds' ([lo, hi] or \"discover\")")
        if isinstance(b, str):
            if b != DISCOVER:
                raise ValueError(f'column {n!r}: bounds must be [lo, hi] or "discover", got {b!r}')
            if self.clip:
                raise ValueError(
                    f"column {n!r}: clip is for given bounds (values outside discovered bounds are always clamped)"
                )
        else:
            if not isinstance(b, Sequence) or len(b) != 2:
                raise ValueError(f'column {n!r}: bounds must be [lo, hi] or "discover", got {b!r}')
            lo, hi = (_finite(n, "bounds", v) for v in b)
            if not (lo < hi or (lo == hi and self.type == "integer")):
                want = "lo <= hi" if self.type == "integer" else "lo < hi"
                raise ValueError(f"column {n!r}: bounds [{b[0]!r}, {b[1]!r}] are reversed or empty; expected {want}")
            if self.type == "integer" and (lo != int(lo) or hi != int(hi)):
                raise ValueError(
                    f"column {n!r}: bounds of an integer column must be integers, got [{b[0]!r}, {b[1]!r}]"
                )
            object.__setattr__(self, "bounds", (lo, hi))
        if not isinstance(self.clip, bool):
            raise ValueError(f"column {n!r}: clip must be true or false, got {self.clip!r}")
        binning = "uniform" if self.binning is None else self.binning
        if binning not in BINNINGS:
            raise ValueError(f"column {n!r}: binning must be one of {BINNINGS}, got {binning!r}")
        object.__setattr__(self, "binning", binning)
        if binning == "explicit":
            if self.bins is not None:
                raise ValueError(f"column {n!r}: explicit binning takes 'cuts', not 'bins'")
            cuts = self.cuts
            if not isinstance(cuts, Sequence) or isinstance(cuts, str) or len(cuts) == 0:
                raise ValueError(
                    f"column {n!r}: explicit binning needs 'cuts', a non-empty list of cut points, got {cuts!r}"
                )
            cuts = tuple(_finite(n, "cuts", c) for c in cuts)
            if any(a >= c for a, c in zip(cuts, cuts[1:])):
                raise ValueError(f"column {n!r}: cuts must increase strictly, got {list(cuts)}")
            if self.type == "integer" and any(c != int(c) for c in cuts):
                raise ValueError(f"column {n!r}: cuts of an integer column must be integers, got {list(cuts)}")
            if not isinstance(self.bounds, str):
                lo, hi = self.bounds
                bad = (
                    [c for c in cuts if not lo < c <= hi]
                    if self.type == "integer"
                    else [c for c in cuts if not lo < c < hi]
                )
                if bad:
                    raise ValueError(f"column {n!r}: cut point {bad[0]!r} is outside the bounds ({lo!r}, {hi!r})")
            object.__setattr__(self, "cuts", cuts)
        else:
            if self.cuts is not None:
                raise ValueError(f"column {n!r}: 'cuts' needs binning \"explicit\", got binning {binning!r}")
            bins = AUTO if self.bins is None else self.bins
            if bins != AUTO:
                if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
                    raise ValueError(f'column {n!r}: bins must be a positive integer or "auto", got {bins!r}')
                bins = int(bins)
            object.__setattr__(self, "bins", bins)

    # ------------------------------------------------------------------ views
    @property
    def discovers(self) -> tuple[str, ...]:
        """The private discovery steps this column needs, in order: ``"categories"``;
        ``"range"`` (discovered bounds: where the values lie on a coarse scale) and
        ``"distribution"`` (a fine histogram within the range or the given bounds: the
        bounds refined, quantile cuts, the distribution within each bin, and the column's
        count, which ``bins: "auto"`` needs); ``"nulls"`` (``nullable: "discover"`` on a column with no
        other step: its null count); empty when everything is given."""
        steps = []
        if self.kind != "numeric":
            if self.categories == DISCOVER:
                steps.append("categories")
        else:
            if self.bounds == DISCOVER:
                steps.append("range")
            if self.bounds == DISCOVER or self.binning == "quantile" or (self.binning != "explicit" and self.bins == AUTO):
                steps.append("distribution")
        if self.nullable == DISCOVER and not steps:
            steps.append("nulls")
        return tuple(steps)

    @property
    def has_other(self) -> bool:
        """Whether the column has an ``other`` bucket (discovered, or ``strict: false``)."""
        if self.kind != "categorical":
            return False
        return self.categories == DISCOVER or self.strict is False

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this column (only the keys that apply)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.kind == "numeric":
            out["type"] = self.type
            out["bounds"] = self.bounds if isinstance(self.bounds, str) else [_num(v, self.type) for v in self.bounds]
            out["binning"] = self.binning
            if self.binning == "explicit":
                out["cuts"] = [_num(c, self.type) for c in self.cuts]
            else:
                out["bins"] = self.bins
            if self.clip:
                out["clip"] = True
            if self.decimals is not None:
                out["decimals"] = self.decimals
        else:
            out["categories"] = self.categories if isinstance(self.categories, str) else list(self.categories)
            if self.kind == "categorical":
                if self.strict is not None:
                    out["strict"] = self.strict
                if self.has_other and self.other_label != DEFAULT_OTHER:
                    out["other_label"] = self.other_label
                if self.max_categories is not None:
                    out["max_categories"] = self.max_categories
        out["nullable"] = self.nullable
        if self.null_tokens is not None:
            out["null_tokens"] = list(self.null_tokens)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "schema") -> ColumnSpec:
        """Read one column object (unknown keys refused, naming the column)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: each column must be an object, got {d!r}")
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: column name must be a non-empty string, got {name!r}")
        kind = d.get("kind")
        if kind not in KINDS:
            raise ValueError(f"column {name!r}: kind must be one of {KINDS}, got {kind!r}")
        unknown = sorted(set(d) - _KEYS[kind])
        if unknown:
            raise ValueError(
                f"column {name!r}: unknown key(s) {unknown} for a {kind} column; expected {sorted(_KEYS[kind])}"
            )
        kw = {k: v for k, v in d.items()}
        for key in ("categories", "bounds", "cuts", "null_tokens"):
            if isinstance(kw.get(key), list):
                kw[key] = tuple(kw[key])
        return cls(**kw)


class _DuplicateKey(Exception):
    """A JSON object naming a key twice (json.loads would keep the last one silently)."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise _DuplicateKey(k)
    return dict(pairs)


def _num(v: float, typ: str | None) -> float | int:
    """A bound or cut as JSON: an ``int`` for integer columns."""
    return int(v) if typ == "integer" else float(v)


@dataclass(frozen=True)
class Schema:
    """The columns of a raw table, in order (see the module docstring).

    >>> s = Schema.from_dict({"columns": [
    ...     {"name": "colour", "kind": "categorical", "categories": ["red", "blue"]},
    ...     {"name": "size", "kind": "numeric", "type": "integer", "bounds": [0, 9], "bins": 5}]})
    >>> s.names, s["size"].bins
    (('colour', 'size'), 5)
    """

    columns: tuple[ColumnSpec, ...]
    public: bool = False
    null_tokens: tuple[str, ...] = ()
    rules: tuple[Mapping[str, Any], ...] = ()  # the rows' rules (margsynth.tabular.constraints)

    def __post_init__(self) -> None:
        object.__setattr__(self, "null_tokens", check_tokens("schema", self.null_tokens))
        cols = tuple(self.columns)
        if not cols:
            raise ValueError("schema: needs at least one column")
        for c in cols:
            if not isinstance(c, ColumnSpec):
                raise ValueError(f"schema: columns must be ColumnSpec objects, got {c!r}")
        names = [c.name for c in cols]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"column {dup[0]!r}: listed twice in the schema")
        if not isinstance(self.public, bool):
            raise ValueError(f"schema: public must be true or false, got {self.public!r}")
        object.__setattr__(self, "columns", cols)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def __getitem__(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise ValueError(f"column {name!r}: not in the schema; schema has {list(self.names)}")

    @property
    def discovers(self) -> bool:
        """Whether any column leaves something to private discovery."""
        return any(c.discovers for c in self.columns)

    def tokens(self, name: str) -> tuple[str, ...]:
        """The cell texts that mean null in column ``name`` besides the empty cell: the
        column's ``null_tokens``, else the schema's."""
        spec = self[name]
        return self.null_tokens if spec.null_tokens is None else spec.null_tokens

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": [c.to_dict() for c in self.columns]}
        if self.null_tokens:
            out["null_tokens"] = list(self.null_tokens)
        if self.rules:
            out["rules"] = [dict(r) for r in self.rules]
        if self.public:
            out["public"] = True
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "schema") -> Schema:
        """Read ``{"columns": [...], "public": bool}`` (unknown keys refused)."""
        if isinstance(d, Schema):
            return d
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected an object with 'columns', got {type(d).__name__}")
        unknown = sorted(set(d) - {"columns", "public", "null_tokens", "rules"})
        if unknown:
            raise ValueError(
                f"{where}: unknown key(s) {unknown}; expected 'columns' (and 'null_tokens', 'rules', 'public')"
            )
        rules = d.get("rules", ())
        if isinstance(rules, (str, bytes, Mapping)) or not isinstance(rules, Sequence):
            raise ValueError(f"{where}: 'rules' must be a list of rule objects, got {rules!r}")
        cols = d.get("columns")
        if not isinstance(cols, Sequence) or isinstance(cols, str) or not cols:
            raise ValueError(f"{where}: 'columns' must be a non-empty list of column objects")
        tokens = d.get("null_tokens", ())
        tokens = check_tokens(where, tokens)
        return cls(tuple(ColumnSpec.from_dict(c, where) for c in cols), public=d.get("public", False),
                   null_tokens=tokens, rules=tuple(rules))  # fmt: skip

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        """Read a schema JSON file."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"schema {str(path)!r}: cannot read ({exc.strerror})") from None
        try:
            obj = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise ValueError(f"schema {str(path)!r}: not valid JSON ({exc})") from None
        except _DuplicateKey as exc:
            raise ValueError(f"schema {str(path)!r}: the key {exc.args[0]!r} appears twice in one object") from None
        return cls.from_dict(obj, where=f"schema {str(path)!r}")

    def save(self, path: str | Path) -> None:
        """Write the schema as indented JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def coerce(cls, schema: Schema | Mapping[str, Any] | str | Path) -> Schema:
        """A :class:`Schema` from a schema, its dict, or a path to its JSON."""
        if isinstance(schema, Schema):
            return schema
        if isinstance(schema, (str, Path)):
            return cls.load(schema)
        return cls.from_dict(schema)


# ----------------------------------------------------------------------------- drafts
_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _text(values: pd.Series) -> pd.Series:
    """The cells of a column as the text a CSV holds ("" for a missing value of a typed frame)."""
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        return values.map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
    return values.astype(object).map(lambda v: "" if pd.isna(v) else category_key(v))


def column_type(texts: Sequence[str]) -> tuple[str, int | None]:
    """What a column's non-null cell texts are: ``("integer", None)`` when every one is an
    integer, ``("float", d)`` when every one is a decimal number (``d`` the most digits
    after the point; ``None`` with exponents or more than 15, i.e. full precision), else ``("categorical", None)``. An empty
    column is categorical. (Metadata of the column, as its dtype is: no value is copied.)"""
    if not len(texts):
        return "categorical", None
    if all(_INTEGER.fullmatch(t) for t in texts):
        return "integer", None
    if all(_DECIMAL.fullmatch(t) for t in texts):
        plain = [t for t in texts if "e" not in t.lower()]
        decimals = max((len(t.split(".")[1]) if "." in t else 0) for t in plain) if len(plain) == len(texts) else None
        return "float", decimals if decimals is not None and decimals <= 15 else None
    return "categorical", None


def draft_schema(df: pd.DataFrame, public: bool = False, null_tokens: Sequence[str] = ()) -> dict[str, Any]:
    """A draft schema (its dict) for ``df`` (read as text: :func:`~margsynth.tabular.io.read_raw_csv`).

    A column whose non-null cells are all integers is ``numeric`` of type ``integer``, all
    decimal numbers ``numeric`` of type ``float`` with the ``decimals`` it is written with,
    anything else ``categorical`` — the column's type, as a CSV reader's dtype is; a null
    cell is the empty cell or one of ``null_tokens`` (recorded as the schema's
    ``"null_tokens"``). Without ``public`` no value is copied from the cells: categories,
    bounds and nullability are ``"discover"`` (found privately on the run's budget),
    numeric columns get ``binning: "quantile"`` with ``bins: "auto"``. With ``public=True``
    (the caller says the table is public) categories, bounds and nullability are read from
    the data and the draft records ``"public": true``.
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if df.shape[1] == 0:
        raise ValueError("df has no columns")
    tokens = check_tokens("--null-token", list(null_tokens))
    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise ValueError(f"column {dup[0]!r}: appears twice in the data")
    cols = []
    for name, col in zip(names, df.columns):
        text = _text(df[col])
        missing = text.eq("") | text.isin(tokens)
        present = text[~missing]
        kind, decimals = column_type(present.drop_duplicates().tolist())
        if kind in NUMERIC_TYPES:
            spec: dict[str, Any] = {"name": name, "kind": "numeric", "type": kind, "bounds": DISCOVER,
                                    "binning": "quantile", "bins": AUTO}  # fmt: skip
            if decimals is not None:
                spec["decimals"] = decimals
        else:
            spec = {"name": name, "kind": "categorical", "categories": DISCOVER}
        spec["nullable"] = DISCOVER
        if public:
            spec["nullable"] = bool(missing.any())
            if spec["kind"] == "numeric":
                nums = pd.to_numeric(present, errors="coerce").dropna()
                if len(nums) and nums.min() < nums.max():
                    spec["bounds"] = [_num(nums.min(), kind), _num(nums.max(), kind)]
            elif len(present):
                spec["categories"] = sorted(set(present.tolist()))
                spec["strict"] = True
        cols.append(spec)
    out: dict[str, Any] = {"columns": cols}
    if tokens:
        out["null_tokens"] = list(tokens)
    if public:
        out["public"] = True
    Schema.from_dict(out)  # a draft is always a valid schema
    return out
