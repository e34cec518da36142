"""Rules of a raw table, stated over its raw values in the schema, compiled to forbidden cells
of the encoded domain (:class:`~margsynth.rules.RuleSet`), enforced in the decoding within a
bin, and counted on raw tables.

A schema's ``"rules"`` is a list of objects, each with an optional ``"name"`` and one of:

- ``{"forbid": {"HOUSING_TYPE": [2, 3], "OWN_RENT": [1, 2]}}`` — no row takes these values
  together;
- ``{"functional": ["INDP", "INDP_CAT"], "map": {"170": "0", "180": "0", ...}}`` — the
  functional dependency ``INDP -> INDP_CAT``: each listed source value allows only the
  target value(s) it maps to (a dependency needs its map: a rule is public knowledge, never
  learned from the data);
- ``{"if": {"AGEP": {"<": 15}}, "then": {"EDU": {"<=": 9}, "PINCP": "null"}}`` — a
  conditional rule; a condition is a list of values, a range ``{"<": x, ">=": y, ...}``
  (operators ``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``), ``"null"`` or ``"not null"``;
- ``{"order": ["NPF", ">", "NOC"]}`` — an order between two columns (where both hold a
  value);
- ``{"null_if": "OWN_RENT", "when": {"HOUSING_TYPE": {"!=": 1}}}`` — ``OWN_RENT`` is null
  when the condition holds.

Rules are public knowledge: they are read from the schema, never from the data, and cost
no privacy budget. A rule naming an unknown column, a value a strict column cannot take, or
a malformed condition is refused naming the rule; so is a set of rules that no row could
obey, checked before any charge over the coarsest domain that makes every rule exact
(:func:`check_satisfiable`).

**Thresholds as cuts** (:func:`split_bins`): before encoding, the thresholds of the rules'
range conditions are added to the cuts of the fitted numeric columns (public: read from the
schema), so that each such condition holds on all or none of the values of every bin. Without
that, two rules on one bin (``AGEP >= 15 -> MSP set`` and ``AGEP < 3 -> EDU null`` over a bin
``[0, 16)``) decide no cell, and a row of that bin with ``MSP`` set and ``EDU`` null has no age
that obeys both: the decoding cannot repair it. A mechanism that fits better without the
extra bins (GEM: its generator starts near uniform over each attribute's bins, and the thin
new bins cost it more than the rules give back) is handed the split as a
:class:`~margsynth.rules.Refinement` (:func:`refinement`): it fits on the bins before the
split and spreads each split bin's probability over its parts by the share of the column's
distribution each part holds, which is how decoding would have drawn a value within the bin.

**Compiling** (:func:`compile_rules`) to the fitted encoder's domain: over a numeric column
a condition holds *surely* on the bins entirely inside its range and *possibly* on the bins
that meet it; a rule forbids a cell of the encoded attributes only where it is broken for
every value the cell stands for (premises surely hold, consequences surely fail), so no
allowed row is ever forbidden. A category that private discovery sent to ``other`` is
"possibly" any value left out. What a cell cannot decide — a bin partly inside a range — is
decided when decoding (:func:`repair_values`): the numeric values of a row that breaks a
rule are drawn again within their bins, from the part of the bin where the row obeys the
rule (an order between two binned columns: the only rules left to it once the thresholds are
cuts, with ``other``). Records that still break a rule are counted in the report (the decoding
never moves a value outside its bin).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..rules import Refinement, Rule, RuleSet
from .encoder import ColumnCoding, Encoder, _missing
from .schema import Schema, category_key

__all__ = ["OPERATORS", "SchemaRule", "check_satisfiable", "compile_rules", "parse_rules", "refinement", "repair_values",
           "split_bins", "violations"]

OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
KINDS = ("forbid", "functional", "if", "order", "null_if")
NULL, NOT_NULL = "null", "not null"
#: Draws of a value within its bin before the repair of a row gives up (and reports it).
REPAIR_DRAWS = 64


@dataclass(frozen=True)
class Condition:
    """What one column must satisfy: a set of values (category keys), ranges (operator,
    number) all of which must hold, or null / not null."""

    column: str
    values: frozenset[str] | None = None
    ranges: tuple[tuple[str, float], ...] = ()
    null: bool | None = None  # True: is null; False: is not null; None: a value condition

    def holds(self, keys: np.ndarray, nums: np.ndarray, miss: np.ndarray) -> np.ndarray:
        """Per row, whether the condition holds on raw values (``keys``: category keys,
        ``nums``: the values as numbers, NaN where not a number; ``miss``: null cells)."""
        if self.null is not None:
            return miss if self.null else ~miss
        out = ~miss
        if self.values is not None:
            out &= pd.Series(keys).isin(self.values).to_numpy()
        for op, v in self.ranges:
            with np.errstate(invalid="ignore"):
                out &= OPERATORS[op](nums, v) & ~np.isnan(nums)
        return out

    def interval_holds(self, a: float, b: float) -> tuple[bool, bool]:
        """``(surely, possibly)``: whether the condition holds for every / for some number in
        ``[a, b]`` (a non-null value; a value list is tested on the integers or at the end points)."""
        if self.null is not None:
            return (not self.null, not self.null)
        sure = possible = True
        for op, v in self.ranges:
            lo_ok, hi_ok = OPERATORS[op](a, v), OPERATORS[op](b, v)
            if op in ("==",):
                s, p = a == b == v, a <= v <= b
            elif op == "!=":
                s, p = not (a <= v <= b), not (a == b == v)
            else:
                s, p = lo_ok and hi_ok, lo_ok or hi_ok
            sure, possible = sure and s, possible and p
        if self.values is not None:
            nums = [float(k) for k in self.values if _is_number(k)]
            inside = [x for x in nums if a <= x <= b]
            sure = sure and a == b and a in nums
            possible = possible and bool(inside)
        return sure, possible


@dataclass(frozen=True)
class SchemaRule:
    """One rule of a schema, parsed (module docstring): ``kind``, its conditions (``premise``
    and ``consequence``: every condition of the premise holding means every condition of the
    consequence must hold), and for ``order`` the two columns and the operator."""

    name: str
    kind: str
    premise: tuple[Condition, ...] = ()
    consequence: tuple[Condition, ...] = ()
    order: tuple[str, str, str] | None = None
    text: str = ""

    @property
    def columns(self) -> tuple[str, ...]:
        if self.order is not None:
            return (self.order[0], self.order[2])
        return tuple(dict.fromkeys(c.column for c in (*self.premise, *self.consequence)))

    def broken(self, frame: pd.DataFrame, schema: Schema, cols: Mapping[str, tuple] | None = None) -> np.ndarray:
        """Per row of a raw table, whether the row breaks the rule (exact, on raw values);
        ``cols``: the table's columns as :func:`_raw_columns` reads them, when already read."""
        cols = _raw_columns(frame, schema, self.columns) if cols is None else cols
        if self.order is not None:
            x, op, y = self.order
            (_, nx, mx), (_, ny, my) = cols[x], cols[y]
            with np.errstate(invalid="ignore"):
                ok = OPERATORS[op](nx, ny)
            return ~mx & ~my & ~np.isnan(nx) & ~np.isnan(ny) & ~ok
        n = len(frame)
        prem = np.ones(n, dtype=bool)
        for c in self.premise:
            prem &= c.holds(*cols[c.column])
        cons = np.ones(n, dtype=bool)
        for c in self.consequence:
            cons &= c.holds(*cols[c.column])
        return prem & ~cons


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _raw_columns(frame: pd.DataFrame, schema: Schema, names: Sequence[str],
                 numbers: Sequence[str] | None = None) -> dict[str, tuple]:  # fmt: skip
    """Per column ``(category keys, numbers, null mask)`` of a raw table; ``numbers``: the
    columns whose numbers are needed (default: all; the others' numbers are NaN)."""
    out = {}
    for name in names:
        values = frame[name].reset_index(drop=True)
        miss = _missing(values, schema.tokens(name))
        codes, uniques = pd.factorize(values.astype(object), use_na_sentinel=False)  # each distinct value keyed once
        keys = np.array([category_key(v) for v in uniques], dtype=object)[codes]
        if numbers is not None and name not in numbers:
            out[name] = (keys, np.full(len(values), np.nan), miss)
            continue
        nums = pd.to_numeric(values.where(~pd.Series(miss)), errors="coerce").to_numpy(dtype=np.float64,
                                                                                      na_value=np.nan)  # fmt: skip
        out[name] = (keys, nums, miss)
    return out


# ----------------------------------------------------------------------------- parsing
def _condition(where: str, column: str, spec: Any, schema: Schema) -> Condition:
    if column not in schema.names:
        raise ValueError(f"{where}: column {column!r} is not in the schema; expected one of {list(schema.names)}")
    col = schema[column]
    if spec in (NULL, NOT_NULL):
        if spec == NULL and col.nullable is False:
            raise ValueError(f"{where}: column {column!r} is not nullable, so it is never null")
        return Condition(column, null=spec == NULL)
    if isinstance(spec, Mapping):
        ranges = []
        for op, v in spec.items():
            if op not in OPERATORS:
                raise ValueError(f"{where}: column {column!r}: unknown operator {op!r}; expected one of {list(OPERATORS)}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{where}: column {column!r}: {op} takes a finite number, got {v!r}")
            ranges.append((op, float(v)))
        if not ranges:
            raise ValueError(f"{where}: column {column!r}: an empty range")
        if col.kind != "numeric" and col.categories != "discover":
            if not any(_is_number(category_key(c)) for c in col.categories):
                raise ValueError(f"{where}: column {column!r} has no numeric values for a range")
        return Condition(column, ranges=tuple(ranges))
    values = [spec] if isinstance(spec, (str, int, float)) and not isinstance(spec, bool) else spec
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ValueError(
            f"{where}: column {column!r}: a condition is a list of values, a range {{'<': x, ...}}, 'null' or "
            f"'not null'; got {spec!r}"
        )
    keys = frozenset(category_key(v) for v in values)
    if col.kind != "numeric" and col.categories != "discover" and (col.kind == "ordinal" or col.strict is not False):
        known = {category_key(c) for c in col.categories}
        unknown = sorted(keys - known)
        if unknown:
            raise ValueError(f"{where}: column {column!r} cannot take {unknown[0]!r}; its categories are listed")
    if col.kind == "numeric" and not all(_is_number(k) for k in keys):
        raise ValueError(f"{where}: column {column!r} is numeric; got the value(s) {sorted(keys)}")
    return Condition(column, values=keys)


def parse_rules(items: Any, schema: Schema) -> tuple[SchemaRule, ...]:
    """The schema's ``"rules"`` (module docstring), checked against its columns: a
    ``ValueError`` naming the rule for anything malformed."""
    if items is None:
        return ()
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise ValueError(f"schema: 'rules' must be a list of rule objects, got {items!r}")
    out, names = [], set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"schema: rule {i} must be an object, got {item!r}")
        name = item.get("name", f"rule {i + 1}")
        where = f"rule {name!r}"
        if not isinstance(name, str) or not name or name in names:
            raise ValueError(f"schema: rule {i}: name must be a distinct non-empty string, got {name!r}")
        names.add(name)
        kinds = [k for k in KINDS if k in item]
        allowed = {"name", "text", *kinds, *(["then"] if "if" in kinds else []), *(["map"] if "functional" in kinds else []),
                   *(["when"] if "null_if" in kinds else [])}  # fmt: skip
        if len(kinds) != 1:
            raise ValueError(f"{where}: give exactly one of {list(KINDS)}, got {sorted(item)}")
        extra = sorted(set(item) - allowed)
        if extra:
            raise ValueError(f"{where}: unknown key(s) {extra}")
        kind, text = kinds[0], str(item.get("text", ""))
        if kind == "forbid":
            spec = item["forbid"]
            if not isinstance(spec, Mapping) or len(spec) < 1:
                raise ValueError(f"{where}: 'forbid' maps columns to the values forbidden together, got {spec!r}")
            conds = tuple(_condition(where, c, v, schema) for c, v in spec.items())
            out.append(SchemaRule(name, kind, premise=conds, consequence=(), text=text))
        elif kind == "if":
            prem, cons = item["if"], item.get("then")
            if not isinstance(prem, Mapping) or not prem or not isinstance(cons, Mapping) or not cons:
                raise ValueError(f"{where}: 'if' and 'then' map columns to conditions, got {prem!r} and {cons!r}")
            shared = sorted(set(prem) & set(cons))
            if shared:
                raise ValueError(f"{where}: 'if' and 'then' share column(s) {shared}")
            out.append(SchemaRule(name, kind, premise=tuple(_condition(where, c, v, schema) for c, v in prem.items()),
                                  consequence=tuple(_condition(where, c, v, schema) for c, v in cons.items()),
                                  text=text))  # fmt: skip
        elif kind == "null_if":
            col, when = item["null_if"], item.get("when")
            if not isinstance(col, str) or not isinstance(when, Mapping) or not when or col in when:
                raise ValueError(f"{where}: 'null_if' names a column and 'when' maps other columns to conditions")
            out.append(SchemaRule(name, kind, premise=tuple(_condition(where, c, v, schema) for c, v in when.items()),
                                  consequence=(_condition(where, col, NULL, schema),), text=text))  # fmt: skip
        elif kind == "order":
            spec = item["order"]
            if not (isinstance(spec, Sequence) and len(spec) == 3 and spec[1] in OPERATORS):
                raise ValueError(f"{where}: 'order' is [X, OP, Y] with OP one of {list(OPERATORS)}, got {spec!r}")
            x, op, y = spec
            for c in (x, y):
                if c not in schema.names:
                    raise ValueError(f"{where}: column {c!r} is not in the schema")
            out.append(SchemaRule(name, kind, order=(x, op, y), text=text))
        else:  # functional
            spec, mapping = item["functional"], item.get("map")
            if not (isinstance(spec, Sequence) and len(spec) == 2 and all(isinstance(c, str) for c in spec)):
                raise ValueError(f"{where}: 'functional' is [SOURCE, TARGET], got {spec!r}")
            if not isinstance(mapping, Mapping) or not mapping:
                raise ValueError(
                    f"{where}: a functional dependency needs its 'map' {{source value: target value(s)}} (a rule is "
                    "public knowledge, never learned from the data)"
                )
            src, tgt = spec
            for source, target in mapping.items():  # each: if source == s then target in t
                cons = _condition(where, tgt, target if isinstance(target, list) else [target], schema)
                out.append(SchemaRule(f"{name}: {source}", "functional",
                                      premise=(_condition(where, src, [source], schema),), consequence=(cons,),
                                      text=text or f"{src} -> {tgt}"))  # fmt: skip
    return tuple(out)


# ----------------------------------------------------------------------------- compiling
def _code_sets(cond: Condition, coding: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per code of one encoded column, whether ``cond`` holds surely / possibly for the
    values the code stands for."""
    size = coding.size
    sure, possible = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    null = coding.null_code
    if cond.null is not None:
        if null is not None:
            sure[null] = possible[null] = cond.null
        sure[: coding.n_values] = possible[: coding.n_values] = not cond.null
        return sure, possible
    if coding.kind == "numeric":
        e = coding.edges
        integer = coding.type == "integer"
        for j in range(coding.n_values):
            a, b = e[j], (e[j + 1] - 1.0 if integer else e[j + 1])
            sure[j], possible[j] = cond.interval_holds(a, b)
        return sure, possible
    for j, c in enumerate(coding.categories):
        key = category_key(c)
        s = True
        if cond.values is not None:
            s = key in cond.values
        if cond.ranges:
            s = s and _is_number(key) and all(OPERATORS[op](float(key), v) for op, v in cond.ranges)
        sure[j] = possible[j] = s
    if coding.other_label is not None:  # 'other' may hold any value left out: possibly, never surely
        possible[len(coding.categories)] = True
    return sure, possible


def compile_rules(rules: Sequence[SchemaRule], encoder: Any) -> RuleSet | None:
    """The rules as forbidden cells of ``encoder.domain`` (module docstring): a cell is
    forbidden only where the rule is broken for every value it stands for."""
    codings = {c.name: c for c in encoder.columns}
    out = []
    for r in rules:
        attrs = r.columns
        shape = tuple(codings[a].size for a in attrs)
        if r.order is not None:
            x, op, y = r.order
            lo = {a: _code_values(codings[a]) for a in (x, y)}
            (xa, xb), (ya, yb) = lo[x], lo[y]
            with np.errstate(invalid="ignore"):  # broken surely: the relation fails for every pair of values
                never = ~_relation_possible(op, xa[:, None], xb[:, None], ya[None, :], yb[None, :])
            allowed = ~(never & ~np.isnan(xa)[:, None] & ~np.isnan(ya)[None, :])
            out.append(Rule(attrs, allowed, r.name, r.text))
            continue
        broken = np.ones(shape, dtype=bool)
        for c in r.premise:  # every condition of the premise surely holds ...
            broken &= _on_axis(_code_sets(c, codings[c.column])[0], attrs.index(c.column), shape)
        if r.consequence:  # ... and some condition of the consequence surely fails
            fails = np.zeros(shape, dtype=bool)
            for c in r.consequence:
                fails |= _on_axis(~_code_sets(c, codings[c.column])[1], attrs.index(c.column), shape)
            broken &= fails
        if broken.any():  # a rule no cell can decide is left to the decoding
            out.append(Rule(attrs, ~broken, r.name, r.text))
    return RuleSet(tuple(out)) if out else None


def _on_axis(v: np.ndarray, k: int, shape: tuple[int, ...]) -> np.ndarray:
    """``v`` (over one attribute) broadcast along axis ``k`` of a table of ``shape``."""
    return v.reshape([shape[i] if i == k else 1 for i in range(len(shape))])


def _code_values(coding: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per code, the smallest and largest number it stands for (NaN for null, ``other`` and
    non-numeric categories)."""
    lo, hi = np.full(coding.size, np.nan), np.full(coding.size, np.nan)
    if coding.kind == "numeric":
        e = coding.edges
        integer = coding.type == "integer"
        lo[: coding.n_values] = e[:-1]
        hi[: coding.n_values] = e[1:] - 1.0 if integer else e[1:]
    else:
        for j, c in enumerate(coding.categories):
            k = category_key(c)
            if _is_number(k):
                lo[j] = hi[j] = float(k)
    return lo, hi


def _relation_possible(op: str, xa, xb, ya, yb) -> np.ndarray:
    """Whether ``x op y`` holds for some x in [xa, xb] and y in [ya, yb]."""
    if op == ">":
        return xb > ya
    if op == ">=":
        return xb >= ya
    if op == "<":
        return xa < yb
    if op == "<=":
        return xa <= yb
    if op == "==":
        return (xa <= yb) & (ya <= xb)
    return ~((xa == xb) & (ya == yb) & (xa == ya))


# ----------------------------------------------------------------------------- before any charge
def check_satisfiable(rules: Sequence[SchemaRule], schema: Schema) -> None:
    """Refuse (``ValueError`` naming the rules) a rule set no row could obey, before any
    charge: the rules are compiled exactly over the coarsest domain that separates every
    value and threshold they mention (per column: the listed values, the intervals between
    the thresholds, null, the rest), and checked there (:meth:`~margsynth.rules.RuleSet.check`)."""
    if not rules:
        return
    mentioned: dict[str, list[Condition]] = {}
    orders = []
    for r in rules:
        for c in (*r.premise, *r.consequence):
            mentioned.setdefault(c.column, []).append(c)
        if r.order is not None:
            orders.append(r.order)
    columns = []
    for name in dict.fromkeys([*mentioned, *[o[0] for o in orders], *[o[2] for o in orders]]):
        spec = schema[name]
        conds = mentioned.get(name, [])
        nullable = spec.nullable is not False
        if spec.kind == "numeric" and spec.type == "integer" and spec.bounds != "discover" and (
            spec.bounds[1] - spec.bounds[0] <= 1024
        ):  # few integers: each its own bin, every rule exact
            lo, hi = spec.bounds
            columns.append(ColumnCoding(name, "numeric", nullable, type="integer", lo=float(lo), hi=float(hi),
                                        cuts=tuple(float(v) for v in range(int(lo) + 1, int(hi) + 1))))  # fmt: skip
        elif spec.kind == "numeric":
            points = sorted({v for c in conds for _, v in c.ranges}
                            | {float(k) for c in conds if c.values for k in c.values if _is_number(k)}
                            | ({*spec.bounds} if spec.kind == "numeric" and spec.bounds != "discover" else set()))  # fmt: skip
            integer = spec.kind == "numeric" and spec.type == "integer"
            if integer:  # whole thresholds: a value v is the bin {v}; v - 0.5 rounds to the cells around it
                points = sorted({q for p in points for q in (math.floor(p), math.ceil(p))})
            lo = points[0] - 1.0 if points else 0.0
            hi = points[-1] + 1.0 if points else 1.0
            if spec.kind == "numeric" and spec.bounds != "discover":
                lo, hi = spec.bounds
            step = 1.0 if integer else 0.5
            cuts = sorted({p for p in points if lo < p <= hi} | {p + step for p in points if lo < p + step <= hi})
            cuts = [c for c in cuts if c < hi + (1.0 if integer else 0.0)]
            columns.append(ColumnCoding(name, "numeric", nullable, type="integer" if integer else "float",
                                        lo=float(lo), hi=float(hi), cuts=tuple(cuts)))  # fmt: skip
        else:  # the given categories, or the values the rules name (and 'other' for the rest)
            if spec.categories != "discover":
                cats = tuple(category_key(c) for c in spec.categories)
            else:
                cats = tuple(sorted({k for c in conds if c.values for k in c.values}))
            other = "other" if spec.categories == "discover" or spec.strict is False else None
            columns.append(ColumnCoding(name, spec.kind, nullable, categories=cats or ("?",), other_label=other))
    enc = Encoder(columns)
    compiled = compile_rules(rules, enc)
    if compiled is not None:
        compiled.check(enc.domain)


# ----------------------------------------------------------------------------- raw tables
def _broken(frame: pd.DataFrame, schema: Schema, rules: Sequence[SchemaRule]) -> dict[str, np.ndarray]:
    """Per rule, per row of a raw table, whether the row breaks it (each column read once)."""
    numbers = {c.column for r in rules for c in (*r.premise, *r.consequence) if c.ranges}
    numbers |= {a for r in rules if r.order is not None for a in r.columns}
    cols = _raw_columns(frame, schema, list(dict.fromkeys(c for r in rules for c in r.columns)), numbers)
    return {r.name: r.broken(frame, schema, cols) for r in rules}


def _decided(rule: SchemaRule, codings: Mapping[str, ColumnCoding]) -> bool:
    """Whether every condition of ``rule`` holds on all or none of the values of each code
    (no ``other`` bucket, no bin a threshold splits; an order never): then its compiled
    cells decide it exactly, and records the mechanism keeps off them obey it after decoding."""
    if rule.order is not None:
        return False
    for c in (*rule.premise, *rule.consequence):
        sure, possible = _code_sets(c, codings[c.column])
        if (sure != possible).any():
            return False
    return True


def violations(frame: pd.DataFrame, schema: Schema, rules: Sequence[SchemaRule]) -> dict[str, int]:
    """Per rule, the number of rows of a raw table that break it (exact, on raw values)."""
    return {name: int(b.sum()) for name, b in _broken(frame, schema, rules).items()}


def _threshold_cuts(cond: Condition, integer: bool) -> set[float]:
    """The cut points that decide ``cond`` on every bin of a numeric column: a bin ``[a, b)``
    lies on one side of each (integers: ``< v`` and ``>= v`` cut at ``ceil(v)``, ``<= v`` and
    ``> v`` at ``floor(v) + 1``, ``== v`` and ``!= v`` and a listed value ``v`` at ``v`` and
    ``v + 1``; floats: at ``v``, which leaves ``<= v`` and ``> v`` undecided on the bin
    starting at ``v``, for the decoding)."""
    points = [(op, v) for op, v in cond.ranges]
    points += [("==", float(k)) for k in (cond.values or ()) if _is_number(k)]
    out: set[float] = set()
    for op, v in points:
        if not integer:
            out.add(v)
        elif op in ("<", ">="):
            out.add(float(math.ceil(v)))
        elif op in ("<=", ">"):
            out.add(float(math.floor(v) + 1))
        elif v == math.floor(v):  # == and != (a value that is not an integer splits nothing)
            out.update((v, v + 1.0))
    return out


def split_bins(encoder: Encoder, rules: Sequence[SchemaRule]) -> tuple[Encoder, dict[str, list[float]]]:
    """``encoder`` with the thresholds of the rules' conditions (:func:`_threshold_cuts`) added
    to the cuts of its numeric columns, so that every such condition holds on all or none of
    the values of each bin and the rules compile to exact cells (:func:`compile_rules`) instead
    of being left to the decoding, where rules sharing a bin can leave a row no value that
    obeys them all (``AGEP >= 15`` and ``AGEP < 3`` within one bin ``[0, 16)``). The
    thresholds are the rules' — public, read from the schema — so the split costs nothing;
    each new bin keeps the private distribution within its part of the old bin (the cells
    decoding draws from are unchanged). Order rules add no cut. Returns the encoder and, per
    column split, the cuts added."""
    by_name: dict[str, list[Condition]] = {}
    for r in rules:
        for c in (*r.premise, *r.consequence):
            if c.null is None:
                by_name.setdefault(c.column, []).append(c)
    columns: list[ColumnCoding] = []
    added: dict[str, list[float]] = {}
    for coding in encoder.columns:
        conds = by_name.get(coding.name, [])
        if coding.kind != "numeric" or not coding.located or not conds:
            columns.append(coding)
            continue
        integer = coding.type == "integer"
        points = set().union(*(_threshold_cuts(c, integer) for c in conds))
        inside = {p for p in points if (coding.lo < p <= coding.hi if integer else coding.lo < p < coding.hi)}
        new = sorted(inside - set(coding.cuts))
        if new:
            added[coding.name] = new
            coding = replace(coding, cuts=tuple(sorted({*coding.cuts, *new})))
        columns.append(coding)
    return (Encoder(columns) if added else encoder), added


def refinement(coarse: Encoder, fine: Encoder) -> Refinement:
    """The :class:`~margsynth.rules.Refinement` of ``fine`` (``coarse`` after
    :func:`split_bins`) over ``coarse``: each bin of a split column lies in one bin of the
    column before the split, and takes the share of that bin's mass that decoding draws from
    its part (the column's private distribution, cell by cell, uniform within a cell:
    :meth:`~margsynth.tabular.encoder.ColumnCoding.segments`; by width where no distribution
    was measured). Null stays null. Computed from the encoders alone, post-processing of what
    discovery released: no budget."""
    parent: dict[str, np.ndarray] = {}
    share: dict[str, np.ndarray] = {}
    for cc, cf in zip(coarse.columns, fine.columns):
        if cc.name != cf.name:
            raise ValueError(f"the encoders' columns differ: {cc.name!r} and {cf.name!r}")
        if cc.size == cf.size:
            continue
        ef = cf.edges
        p = np.zeros(cf.size, dtype=np.intp)
        w = np.zeros(cf.size, dtype=np.float64)
        lo = np.searchsorted(cc.edges, ef[:-1], side="right") - 1  # the coarse bin each fine bin starts in
        for k, (s0, s1, prob) in enumerate(cc.segments()):
            for m in np.flatnonzero(lo == k):
                p[m] = k
                overlap = np.clip(np.minimum(s1, ef[m + 1]) - np.maximum(s0, ef[m]), 0.0, None)
                w[m] = float(np.sum(prob * overlap / (s1 - s0)))
        if cc.nullable:
            p[cf.null_code], w[cf.null_code] = cc.null_code, 1.0
        parent[cf.name], share[cf.name] = p, w
    return Refinement(fine.domain, parent, share)


def repair_values(frame: pd.DataFrame, schema: Schema, rules: Sequence[SchemaRule], encoder: Encoder,
                  codes: np.ndarray, rng: np.random.Generator) -> tuple[pd.DataFrame, dict[str, int]]:  # fmt: skip
    """Rows of a decoded table (codes ``codes`` of ``encoder``) that break a rule only through a
    value inside a bin the rule splits: their numeric values in the rule are drawn again within
    their bins (as decoding draws them) until the row obeys every rule, at most
    :data:`REPAIR_DRAWS` times; a row still breaking one then takes, for one numeric column of
    its broken rules (else two together), values drawn uniformly among those of their bins
    (their integers, or evenly spaced points) with which it obeys every rule. Values never
    leave their bins. Returns the table and per rule the rows still breaking it (counted on the
    raw values for the rules the cells do not decide; 0 for the others, which hold by
    construction)."""
    out = frame.copy()
    numeric = {c.name for c in encoder.columns if c.kind == "numeric"}
    index = {c.name: j for j, c in enumerate(encoder.columns)}
    codings = {c.name: c for c in encoder.columns}
    # the rules the cells decide exactly hold already (the mechanism keeps its records off their
    # forbidden cells); only the others are looked for (all are counted at the end)
    loose = [r for r in rules if not _decided(r, codings)]

    def still_bad(rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per loose rule, the rows breaking it; only ``rows`` are read (the others unchanged)."""
        if not loose or rows is None:
            return _broken(out, schema, loose) if loose else {}
        full = {r.name: np.zeros(len(out), dtype=bool) for r in loose}
        if rows.size:
            for name, b in _broken(out.iloc[rows], schema, loose).items():
                full[name][rows] = b
        return full

    bad = still_bad()
    for _ in range(REPAIR_DRAWS):
        rows_by_col: dict[str, np.ndarray] = {}
        for r in loose:
            if bad[r.name].any():
                for c in r.columns:
                    if c in numeric:
                        rows_by_col[c] = rows_by_col.get(c, np.zeros(len(out), dtype=bool)) | bad[r.name]
        if not rows_by_col:
            break
        for c, rows in rows_by_col.items():
            idx = np.flatnonzero(rows)
            out.loc[idx, c] = encoder.decode_column(c, codes[idx, index[c]], rng).to_numpy()
        bad = still_bad(np.flatnonzero(np.any(list(rows_by_col.values()), axis=0)))
    def candidates(c: str, i: int, most: int) -> np.ndarray | None:
        """The values of row ``i``'s bin in column ``c`` (at most about ``most``)."""
        coding = encoder.columns[index[c]]
        k = int(codes[i, index[c]])
        if coding.nullable and k == coding.null_code:
            return None
        e = coding.edges
        if coding.type == "integer":
            if e[k + 1] - e[k] <= most:  # counted before any is built: a bin may hold billions of integers
                return np.arange(int(e[k]), int(e[k + 1]))
            return np.unique(np.linspace(e[k], e[k + 1] - 1, most).round())
        cand = np.linspace(e[k], min(e[k + 1], coding.hi), most)
        return np.round(cand, coding.decimals) if coding.decimals is not None else cand

    broken_rows = np.flatnonzero(np.any(np.array(list(bad.values())), axis=0)) if bad else np.array([], dtype=int)
    for i in broken_rows:
        cols = list(dict.fromkeys(c for r in loose if bad[r.name][i] for c in r.columns if c in numeric))
        # one column at a time, then two together (an order between two binned columns)
        tries = [(c,) for c in cols] + [(a, b) for j, a in enumerate(cols) for b in cols[j + 1 :]]
        for group in tries:
            grids = [candidates(c, i, 4096 if len(group) == 1 else 256) for c in group]
            if any(g is None for g in grids):
                continue
            mesh = [m.ravel() for m in np.meshgrid(*grids, indexing="ij")]
            trial = pd.concat([out.iloc[[i]]] * mesh[0].size, ignore_index=True)
            for c, v in zip(group, mesh):
                trial[c] = v
            ok = ~np.any(list(_broken(trial, schema, loose).values()), axis=0)  # values stay in their bins
            if ok.any():
                pick = rng.choice(np.flatnonzero(ok))
                for c, v in zip(group, mesh):
                    out.loc[i, c] = v[pick]
                break
    # the rules the cells decide hold by construction (the mechanism checked its records' cells,
    # decoding keeps values within them): only the others are counted on the raw values
    counted = violations(out, schema, loose) if loose else {}
    return out, {r.name: counted.get(r.name, 0) for r in rules}
