"""Rules the data obeys, over an encoded :class:`~margsynth.domain.Domain`: forbidden cells.

Real tables carry deterministic rules: no 6-year-old holds a doctorate, a child's row has
no income, a family is larger than its number of children, a PUMA lies in one density
class. Over the encoded (integer-coded) domain every such rule is a set of *forbidden
cells* of one attribute set: a :class:`Rule` is an attribute tuple ``attrs`` and a boolean
table ``allowed`` of their shape, and a record whose codes on ``attrs`` fall on a
``False`` cell breaks it. The usual kinds compile to one table each:

* a forbidden combination — the cells themselves (:meth:`Rule.forbid`);
* a functional dependency ``A -> B`` — per value of ``A`` the ``B`` value(s) it may take
  (:meth:`Rule.functional`);
* an order ``X > Y`` (``>=``, ``<``, ``<=``, ``==``, ``!=``) between two attributes of
  comparable codes — a triangular table (:meth:`Rule.order`);
* a conditional rule "if every condition attribute takes one of its listed codes, then
  every consequence attribute takes one of its listed codes" — the table over the
  condition and consequence attributes that is ``False`` exactly where the condition holds
  and the consequence does not (:meth:`Rule.conditional`; "null if" is the consequence
  "takes the null code").

A :class:`RuleSet` is what mechanisms, generators and metrics take: it validates against
a domain (:meth:`RuleSet.validate`: names and shapes, ``ValueError`` naming the rule),
checks that some record of the whole domain obeys every rule at once
(:meth:`RuleSet.check`: exact, by variable elimination over the boolean tables — bucket
elimination, Dechter, "Bucket elimination: a unifying framework for reasoning", Artificial
Intelligence 113, 1999, §3 — never by enumerating the domain; an unsatisfiable set is
refused with the names of a minimal subset of rules that cannot hold together), counts the
records that break each rule (:meth:`RuleSet.violations`, vectorised), and round-trips
through JSON (:meth:`RuleSet.to_json`, :meth:`RuleSet.from_json`) so a saved model or a
sidecar can carry it. A :class:`Refinement` relates the domain a rule set's thresholds split
(a numeric rule's ``AGEP < 15`` cuts an age bin ``[10, 16)`` in two) to the domain before the
split, for a mechanism that fits on the coarser one and enforces the rules on the finer.

Rules are public knowledge — properties of the schema, stated before the data are seen —
so enforcing them is post-processing of the private measurements and costs no privacy
budget. How each part of the library enforces them: ``docs/notes/rules.md``.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dataset import Dataset
from .domain import Attribute, Domain

__all__ = ["ORDER_RELATIONS", "Refinement", "Rule", "RuleSet", "as_rules"]

#: The relations :meth:`Rule.order` compiles, by their symbol.
ORDER_RELATIONS = {
    ">": np.greater,
    ">=": np.greater_equal,
    "<": np.less,
    "<=": np.less_equal,
    "==": np.equal,
    "!=": np.not_equal,
}
#: The largest intermediate table (cells) the satisfiability check builds; a rule set whose
#: elimination needs more is refused with a ``ValueError`` (its rules interlock too densely
#: over too large attributes to be checked exactly).
MAX_CHECK_CELLS = 1 << 24


def _codes(values: Iterable[Any], size: int, what: str) -> np.ndarray:
    """``values`` as a sorted array of distinct codes of an attribute of ``size`` values."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = [values]
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < size:
            raise ValueError(f"{what}: {v!r} is not a code 0..{size - 1}")
        out.append(int(v))
    return np.unique(np.asarray(out, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class Rule:
    """Forbidden cells over the attributes ``attrs``: a record breaks the rule when its codes
    on ``attrs`` fall on a ``False`` cell of ``allowed`` (a boolean table, axis ``k`` over
    attribute ``attrs[k]``). ``name`` identifies the rule in reports and errors; ``text``
    says it in words (e.g. the schema's source line).

    >>> r = Rule(("age", "degree"), np.array([[True, False], [True, True]]), "no child doctors")
    >>> r.forbidden_cells
    1
    """

    attrs: tuple[str, ...]
    allowed: np.ndarray
    name: str
    text: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"rule name must be a non-empty string, got {self.name!r}")
        attrs = (self.attrs,) if isinstance(self.attrs, str) else tuple(self.attrs)
        if not attrs or not all(isinstance(a, str) and a for a in attrs):
            raise ValueError(f"rule {self.name!r}: attrs must be a non-empty tuple of attribute names, got {self.attrs!r}")
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"rule {self.name!r}: attrs repeat an attribute: {list(attrs)}")
        if not isinstance(self.text, str):
            raise ValueError(f"rule {self.name!r}: text must be a string, got {self.text!r}")
        allowed = np.asarray(self.allowed)
        if allowed.dtype != bool:
            raise ValueError(f"rule {self.name!r}: allowed must be a boolean array, got dtype {allowed.dtype}")
        if allowed.ndim != len(attrs):
            raise ValueError(
                f"rule {self.name!r}: allowed has {allowed.ndim} axes for the {len(attrs)} attributes {list(attrs)}"
            )
        if 0 in allowed.shape:
            raise ValueError(f"rule {self.name!r}: allowed has an empty axis (shape {allowed.shape})")
        allowed = np.array(allowed, dtype=bool, order="C")
        allowed.setflags(write=False)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "allowed", allowed)

    # -- compilers of the usual kinds ------------------------------------------------------
    @classmethod
    def forbid(
        cls, name: str, domain: Domain, attrs: Sequence[str], cells: Iterable[Sequence[int]], text: str = ""
    ) -> Rule:
        """The rule forbidding the combinations ``cells`` (code tuples over ``attrs``)."""
        attrs = domain.check_attrs(attrs, f"rule {name!r}")
        allowed = np.ones(domain.project(attrs).shape, dtype=bool)
        for cell in cells:
            cell = tuple(cell)
            if len(cell) != len(attrs):
                raise ValueError(f"rule {name!r}: cell {cell!r} has {len(cell)} codes for the attributes {list(attrs)}")
            for a, v in zip(attrs, cell):
                _codes([v], domain[a].size, f"rule {name!r}: attribute {a!r}")
            allowed[cell] = False
        return cls(attrs, allowed, name, text)

    @classmethod
    def functional(
        cls, name: str, domain: Domain, source: str, target: str, mapping: Mapping[int, Any] | Sequence[Any], text: str = ""
    ) -> Rule:
        """The functional dependency ``source -> target``: source value ``v`` allows only the
        target code(s) ``mapping[v]`` (one code or several). ``mapping`` is a sequence over
        every source value or a mapping; a source value it does not list is unrestricted."""
        attrs = domain.check_attrs((source, target), f"rule {name!r}")
        ns, nt = domain[source].size, domain[target].size
        items = mapping.items() if isinstance(mapping, Mapping) else enumerate(mapping)
        if not isinstance(mapping, Mapping) and len(mapping) != ns:
            raise ValueError(f"rule {name!r}: mapping lists {len(mapping)} values, {source!r} has {ns}")
        allowed = np.ones((ns, nt), dtype=bool)
        for v, targets in items:
            v = int(_codes([v], ns, f"rule {name!r}: source {source!r}")[0])
            allowed[v] = False
            allowed[v, _codes(targets, nt, f"rule {name!r}: target {target!r} of {source}={v}")] = True
        return cls(attrs, allowed, name, text)

    @classmethod
    def order(cls, name: str, domain: Domain, x: str, y: str, relation: str = ">", text: str = "") -> Rule:
        """``x <relation> y`` on the codes (``relation`` one of :data:`ORDER_RELATIONS`):
        meaningful where both attributes' codes follow one order (ordinal codes of a common
        scale, e.g. counts encoded as themselves)."""
        attrs = domain.check_attrs((x, y), f"rule {name!r}")
        if relation not in ORDER_RELATIONS:
            raise ValueError(f"rule {name!r}: relation must be one of {list(ORDER_RELATIONS)}, got {relation!r}")
        ax = np.arange(domain[x].size)[:, None]
        ay = np.arange(domain[y].size)[None, :]
        return cls(attrs, ORDER_RELATIONS[relation](ax, ay), name, text)

    @classmethod
    def conditional(
        cls,
        name: str,
        domain: Domain,
        condition: Mapping[str, Any],
        consequence: Mapping[str, Any],
        text: str = "",
    ) -> Rule:
        """"If every attribute of ``condition`` takes one of its listed codes, then every
        attribute of ``consequence`` takes one of its listed codes" (each value one code or
        several; the two may not share an attribute): ``False`` exactly on the cells where
        the condition holds and the consequence does not."""
        if not condition or not consequence:
            raise ValueError(f"rule {name!r}: condition and consequence must each name at least one attribute")
        shared = sorted(set(condition) & set(consequence))
        if shared:
            raise ValueError(f"rule {name!r}: condition and consequence share attribute(s) {shared}")
        attrs = domain.check_attrs((*condition, *consequence), f"rule {name!r}")
        shape = domain.project(attrs).shape
        holds = [np.ones(shape, dtype=bool), np.ones(shape, dtype=bool)]
        for part, spec in enumerate((condition, consequence)):
            for a, values in spec.items():
                k = attrs.index(a)
                member = np.zeros(shape[k], dtype=bool)
                member[_codes(values, shape[k], f"rule {name!r}: attribute {a!r}")] = True
                holds[part] &= member.reshape([shape[k] if i == k else 1 for i in range(len(shape))])
        return cls(attrs, ~holds[0] | holds[1], name, text)

    # -- queries ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.allowed.shape)

    @property
    def forbidden_cells(self) -> int:
        return int(self.allowed.size - np.count_nonzero(self.allowed))

    def check(self, domain: Domain) -> Rule:
        """``ValueError`` naming the rule unless its attributes are in ``domain`` with the
        sizes of its table; returns the rule."""
        unknown = [a for a in self.attrs if a not in domain]
        if unknown:
            raise ValueError(f"rule {self.name!r}: unknown attribute(s) {unknown}; the domain has {list(domain.names)}")
        want = domain.project(self.attrs).shape
        if self.shape != want:
            raise ValueError(
                f"rule {self.name!r}: its table over {list(self.attrs)} has shape {self.shape}, the domain's sizes are {want}"
            )
        return self

    def broken(self, data: Dataset) -> np.ndarray:
        """Per record of ``data``, whether it breaks the rule (a boolean vector; vectorised)."""
        self.check(data.domain)
        cols = tuple(data.column(a).astype(np.intp, copy=False) for a in self.attrs)
        return ~self.allowed.ravel()[np.ravel_multi_index(cols, self.shape)]

    def expand(self, attrs: Sequence[str], domain: Domain) -> np.ndarray:
        """``allowed`` transposed and reshaped to broadcast over a table with axes ``attrs``
        (which must hold the rule's attributes), size-1 axes for the others."""
        missing = [a for a in self.attrs if a not in attrs]
        if missing:
            raise ValueError(f"rule {self.name!r}: {missing} not among {list(attrs)}")
        mine = [a for a in attrs if a in self.attrs]
        t = np.transpose(self.allowed, [self.attrs.index(a) for a in mine])
        return t.reshape([domain[a].size if a in self.attrs else 1 for a in attrs])

    def coarsen(self, maps: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> Rule:
        """The rule over coarser codes: attribute ``a``'s old code ``v`` becomes
        ``maps[a][v]`` (of ``sizes[a]`` new codes; attributes not in ``maps`` keep theirs). A
        new cell is allowed when *some* old cell merged into it is: the coarse rule forbids
        only what every finer record in it breaks (e.g. MST's Algorithm 4 merging rare values,
        :meth:`~margsynth.mechanisms.compression.Compression.compress_rules`)."""
        index, shape = [], []
        for a, n in zip(self.attrs, self.shape):
            f = np.arange(n) if a not in maps else np.asarray(maps[a], dtype=np.intp)
            if f.shape != (n,):
                raise ValueError(f"rule {self.name!r}: the map of {a!r} has shape {f.shape}, expected ({n},)")
            index.append(f)
            shape.append(int(sizes.get(a, n)))
        out = np.zeros(shape, dtype=bool)
        np.logical_or.at(out, np.ix_(*index), self.allowed)
        return Rule(self.attrs, out, self.name, self.text)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON values: ``name``, ``text``, ``attrs``, ``shape`` and the shorter of the lists
        ``forbidden`` / ``allowed`` of cells (code lists over ``attrs``)."""
        bad = np.argwhere(~self.allowed)
        good_count = self.allowed.size - bad.shape[0]
        key, cells = ("forbidden", bad) if bad.shape[0] <= good_count else ("allowed", np.argwhere(self.allowed))
        return {
            "name": self.name,
            "text": self.text,
            "attrs": list(self.attrs),
            "shape": list(self.shape),
            key: cells.tolist(),
        }

    @classmethod
    def from_dict(cls, spec: Any) -> Rule:
        """The rule :meth:`to_dict` described; ``ValueError`` naming what is wrong."""
        if not isinstance(spec, Mapping):
            raise ValueError(f"a rule is an object with fields name, attrs, shape and forbidden or allowed, got {spec!r}")
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"rule field 'name': {name!r} is not a non-empty string")
        for key in ("attrs", "shape"):
            if not isinstance(spec.get(key), list):
                raise ValueError(f"rule {name!r}: field {key!r} must be a list, got {spec.get(key)!r}")
        shape = spec["shape"]
        if len(shape) != len(spec["attrs"]) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape
        ):
            raise ValueError(f"rule {name!r}: field 'shape' {shape!r} must list one positive size per attribute")
        kinds = [k for k in ("forbidden", "allowed") if k in spec]
        if len(kinds) != 1:
            raise ValueError(f"rule {name!r}: exactly one of the fields 'forbidden' and 'allowed' is expected")
        cells = np.asarray(spec[kinds[0]], dtype=object)
        cells = cells.reshape(-1, len(shape)) if cells.size else np.zeros((0, len(shape)), dtype=np.int64)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in cells.ravel()):
            raise ValueError(f"rule {name!r}: field {kinds[0]!r} must list cells of integer codes")
        cells = cells.astype(np.int64)
        if cells.size and (np.any(cells < 0) or np.any(cells >= np.asarray(shape))):
            raise ValueError(f"rule {name!r}: a cell of field {kinds[0]!r} lies outside the shape {shape}")
        table = np.full(shape, kinds[0] == "forbidden", dtype=bool)
        table[tuple(cells.T)] = kinds[0] == "allowed"
        text = spec.get("text", "")
        return cls(tuple(spec["attrs"]), table, name, text if isinstance(text, str) else str(text))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rule):
            return NotImplemented
        return (self.attrs, self.name, self.text) == (other.attrs, other.name, other.text) and np.array_equal(
            self.allowed, other.allowed
        )

    def __hash__(self) -> int:
        return hash((self.attrs, self.name, self.text, self.allowed.tobytes()))

    def __repr__(self) -> str:
        return f"Rule({self.name!r} over {list(self.attrs)}: {self.forbidden_cells} of {self.allowed.size} cells forbidden)"


@dataclass(frozen=True, eq=False)
class RuleSet:
    """An ordered collection of :class:`Rule` objects with distinct names (module docstring).

    >>> dom = Domain.from_sizes({"age": 3, "edu": 3})
    >>> rules = RuleSet([Rule.order("edu<=age", dom, "edu", "age", "<=")])
    >>> rules.check(dom).names
    ('edu<=age',)
    >>> data = Dataset(np.array([[0, 0], [0, 2], [2, 1]]), dom)
    >>> rules.violations(data)
    {'edu<=age': 1}
    """

    rules: tuple[Rule, ...] = ()
    _checked: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules = tuple(self.rules)
        for r in rules:
            if not isinstance(r, Rule):
                raise ValueError(f"RuleSet takes Rule objects, got {type(r).__name__}: {r!r}")
        names = [r.name for r in rules]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"rule names must be distinct; repeated: {dup}")
        object.__setattr__(self, "rules", rules)

    # -- collection ------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def __getitem__(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise ValueError(f"no rule named {name!r}; the rules are {list(self.names)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every attribute some rule mentions (first mention order)."""
        return tuple(dict.fromkeys(a for r in self.rules for a in r.attrs))

    def subset(self, names: Iterable[str]) -> RuleSet:
        """The rules named ``names``, in this set's order."""
        want = set(names)
        unknown = sorted(want - set(self.names))
        if unknown:
            raise ValueError(f"no rules named {unknown}; the rules are {list(self.names)}")
        return RuleSet(tuple(r for r in self.rules if r.name in want))

    def within(self, attrs: Iterable[str]) -> RuleSet:
        """The rules whose attributes all lie in ``attrs``."""
        s = set(attrs)
        return RuleSet(tuple(r for r in self.rules if s.issuperset(r.attrs)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RuleSet):
            return NotImplemented
        return self.rules == other.rules

    def __hash__(self) -> int:
        return hash(self.rules)

    def __repr__(self) -> str:
        return f"RuleSet({list(self.names)})"

    # -- validation ------------------------------------------------------------------------
    def validate(self, domain: Domain) -> RuleSet:
        """Every rule's attributes and shape against ``domain`` (:meth:`Rule.check`)."""
        for r in self.rules:
            r.check(domain)
        return self

    def check(self, domain: Domain) -> RuleSet:
        """:meth:`validate`, then ``ValueError`` unless some record of ``domain`` obeys every
        rule at once, naming a minimal set of rules that cannot hold together (each one's
        removal makes the rest satisfiable). Exact (variable elimination over the boolean
        tables, :func:`_satisfiable`); the result is remembered per domain. Returns the set."""
        if domain in self._checked:
            return self
        self.validate(domain)
        for comp in _components(self.rules):
            if _satisfiable(comp, domain):
                continue
            core = list(comp)
            for r in list(core):  # deletion filter: drop every rule the contradiction does not need
                rest = [q for q in core if q is not r]
                if rest and not _satisfiable(rest, domain):
                    core = rest
            names = [r.name for r in core]
            if len(core) == 1:
                raise ValueError(
                    f"rules: rule {names[0]!r} forbids every combination of {list(core[0].attrs)}; no record obeys it"
                )
            raise ValueError(
                f"rules: the rules {names} cannot all hold: no record of the domain obeys them together "
                f"(over the attributes {list(dict.fromkeys(a for r in core for a in r.attrs))})"
            )
        self._checked[domain] = True
        return self

    # -- data ------------------------------------------------------------------------------
    def broken(self, data: Dataset) -> np.ndarray:
        """``(records, rules)`` boolean matrix: record ``i`` breaks rule ``j``."""
        out = np.zeros((len(data), len(self.rules)), dtype=bool)
        for j, r in enumerate(self.rules):
            out[:, j] = r.broken(data)
        return out

    def violations(self, data: Dataset) -> dict[str, int]:
        """Per rule (by name, in order), the number of records of ``data`` that break it."""
        return {r.name: int(np.count_nonzero(r.broken(data))) for r in self.rules}

    def row_check(self, domain: Domain) -> Callable[[np.ndarray], np.ndarray]:
        """A vectorised test of raw code rows: the returned ``obeys(codes)`` takes an ``(k, d)``
        integer array over ``domain``'s attributes (in its order) and returns, per row, whether
        it breaks no rule — :meth:`broken` without building a :class:`Dataset`, for a search
        that tests a few rows many times (Private-GSD's constrained generations). Each rule's
        cell is one flat index, ``codes @ strides + offset``, into the rules' forbidden cells
        laid end to end (one matrix product for all rules)."""
        self.validate(domain)
        names = list(domain.names)
        strides = np.zeros((len(names), len(self.rules)), dtype=np.float64)
        offsets = np.zeros(len(self.rules), dtype=np.int64)
        flat, at = [], 0
        for j, r in enumerate(self.rules):
            step = 1
            for a, size in zip(reversed(r.attrs), reversed(r.shape)):
                strides[names.index(a), j] = step
                step *= size
            offsets[j] = at
            flat.append(~r.allowed.ravel())
            at += r.allowed.size
        forbidden = np.concatenate(flat) if flat else np.zeros(0, dtype=bool)
        if at >= 2**53:  # float64 products stay exact below 2**53
            raise ValueError(f"rules: {at:,} cells in all are too many for a row check")

        def obeys(codes: np.ndarray) -> np.ndarray:
            codes = np.asarray(codes)
            if not len(self.rules):
                return np.ones(codes.shape[0], dtype=bool)
            cells = (codes.astype(np.float64) @ strides).astype(np.int64) + offsets
            return ~forbidden[cells].any(axis=1)

        return obeys

    def mask(self, attrs: Sequence[str], domain: Domain) -> np.ndarray | None:
        """The allowed cells of the table over ``attrs`` (axes in that order) under every rule
        whose attributes lie in ``attrs`` — the structural zeros of that table — or ``None``
        when no rule does."""
        attrs = tuple(attrs)
        inside = self.within(attrs).rules
        if not inside:
            return None
        out = np.ones(domain.project(attrs).shape, dtype=bool)
        for r in inside:
            out &= r.expand(attrs, domain)
        return out

    def project(self, table: np.ndarray, attrs: Sequence[str], domain: Domain) -> np.ndarray:
        """A non-negative table over ``attrs`` (shaped, or flat in C order) with the cells the
        rules inside ``attrs`` forbid emptied and the others rescaled to the same total
        (spread evenly over the allowed cells if they held nothing): the closest table with
        those zeros in Kullback-Leibler divergence (its I-projection: Csiszár, "I-divergence
        geometry of probability distributions and minimization problems", Annals of
        Probability 3, 1975). Unchanged when no rule lies inside
        ``attrs``. Used for a generator's target marginals (GUM, PrivPGD)."""
        allowed = self.mask(attrs, domain)
        table = np.asarray(table, dtype=np.float64)
        if allowed is None:
            return table
        keep = allowed.reshape(table.shape)
        total = float(table.sum())
        out = np.where(keep, table, 0.0)
        s = float(out.sum())
        return out * (total / s) if s > 0 else keep * (total / np.count_nonzero(keep))

    def coarsen(self, maps: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> RuleSet:
        """Every rule coarsened by :meth:`Rule.coarsen`."""
        return RuleSet(tuple(r.coarsen(maps, sizes) for r in self.rules))

    # -- JSON ------------------------------------------------------------------------------
    def to_list(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rules]

    @classmethod
    def from_list(cls, specs: Any) -> RuleSet:
        if not isinstance(specs, list):
            raise ValueError(f"rules: expected a JSON list of rules, got {type(specs).__name__}")
        return cls(tuple(Rule.from_dict(s) for s in specs))

    def to_json(self) -> str:
        return json.dumps(self.to_list())

    @classmethod
    def from_json(cls, text: str) -> RuleSet:
        try:
            specs = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"rules: not valid JSON ({exc})") from None
        return cls.from_list(specs)


@dataclass(frozen=True)
class Refinement:
    """A finer domain over a coarser one: each fine code lies in one coarse code and takes a
    fixed share of its mass (the bins a rule set's thresholds split, each part with the share
    of the column's distribution that decoding gives it).

    ``fine`` is the domain the records and the rules are coded in; ``parent[a]`` (one entry
    per fine code of ``a``) the coarse code each fine code lies in, every coarse code
    ``0..m-1`` among them; ``share[a]`` each fine code's share of its coarse code, non-negative,
    summing to 1 over the fine codes of each coarse code. Attributes not in ``parent`` are
    the same in both domains. :meth:`coarsen` maps records down; :meth:`expand` maps product
    distributions over the coarse domain up (a coarse value's probability spread over its
    fine values by their shares), so a record drawn from the expanded distribution is a
    record drawn from the coarse one with each split value then drawn by its shares."""

    fine: Domain
    parent: Mapping[str, np.ndarray]
    share: Mapping[str, np.ndarray]

    def __post_init__(self) -> None:
        if set(self.parent) != set(self.share):
            raise ValueError(f"parent and share name different attributes: {sorted(self.parent)} and {sorted(self.share)}")
        parent, share = {}, {}
        for a in self.fine.names:
            if a not in self.parent:
                continue
            n = self.fine[a].size
            p = np.asarray(self.parent[a])
            w = np.asarray(self.share[a], dtype=np.float64)
            if p.shape != (n,) or w.shape != (n,) or p.dtype.kind not in "iu":
                raise ValueError(f"{a!r}: parent and share must be ({n},) arrays of integers and numbers")
            m = int(p.max()) + 1
            if p.min() < 0 or np.unique(p).size != m:
                raise ValueError(f"{a!r}: parent must cover the coarse codes 0..{m - 1}, got {p.tolist()}")
            if not (np.isfinite(w).all() and (w >= 0).all() and np.allclose(np.bincount(p, w, m), 1.0)):
                raise ValueError(f"{a!r}: the shares of each coarse code must be non-negative and sum to 1")
            parent[a], share[a] = p.astype(np.intp), w
        unknown = sorted(set(self.parent) - set(self.fine.names))
        if unknown:
            raise ValueError(f"attributes {unknown} are not in the fine domain")
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "share", share)

    @property
    def coarse(self) -> Domain:
        """The coarser domain (the split attributes with their coarse sizes)."""
        return Domain(tuple(
            Attribute(a.name, int(self.parent[a.name].max()) + 1, ordinal=a.ordinal) if a.name in self.parent else a
            for a in self.fine.attributes
        ))  # fmt: skip

    def coarsen(self, data: Dataset) -> Dataset:
        """``data`` (over :attr:`fine`) with each split attribute's codes mapped to their coarse codes."""
        if data.domain != self.fine:
            raise ValueError("data is not over the refinement's fine domain")
        codes = np.array(data.codes, dtype=np.int64)
        for a, p in self.parent.items():
            j = self.fine.index(a)
            codes[:, j] = p[codes[:, j]]
        return Dataset._trusted(codes, self.coarse, data.weights)

    def expand(self, probs: np.ndarray) -> np.ndarray:
        """Rows of per-attribute distributions over :attr:`coarse` (the blocks of a one-hot
        encoding, side by side in domain order) as rows over :attr:`fine`: fine value ``v`` of a
        split attribute gets ``share[v]`` of its parent's probability."""
        probs = np.asarray(probs, dtype=np.float64)
        coarse = self.coarse
        off = np.concatenate([[0], np.cumsum(coarse.shape)])
        if probs.ndim != 2 or probs.shape[1] != off[-1]:
            raise ValueError(f"probs must be (rows, {off[-1]}), got {probs.shape}")
        blocks = []
        for j, a in enumerate(coarse.names):
            block = probs[:, off[j] : off[j + 1]]
            blocks.append(block if a not in self.parent else block[:, self.parent[a]] * self.share[a])
        return np.concatenate(blocks, axis=1)


def as_rules(rules: Any, domain: Domain | None = None) -> RuleSet | None:
    """``rules`` (a :class:`RuleSet`, a sequence of :class:`Rule`, or ``None``) as a
    :class:`RuleSet` (``None`` for none or an empty set), checked against ``domain`` when
    given (:meth:`RuleSet.check`); ``ValueError`` naming the argument otherwise."""
    if rules is None:
        return None
    if isinstance(rules, Rule):
        rules = RuleSet((rules,))
    elif not isinstance(rules, RuleSet):
        if isinstance(rules, (str, bytes, Mapping)) or not isinstance(rules, Iterable):
            raise ValueError(f"rules must be a RuleSet, a sequence of Rule objects or None, got {type(rules).__name__}")
        rules = RuleSet(tuple(rules))
    if not rules.rules:
        return None
    return rules.check(domain) if domain is not None else rules


def _components(rules: Sequence[Rule]) -> list[list[Rule]]:
    """The rules grouped by connected components of their attribute sets (rules in no
    common component constrain independent attributes)."""
    parent = list(range(len(rules)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, r in enumerate(rules):
        for a in r.attrs:
            if a in owner:
                parent[find(i)] = find(owner[a])
            else:
                owner[a] = i
    groups: dict[int, list[Rule]] = {}
    for i, r in enumerate(rules):
        groups.setdefault(find(i), []).append(r)
    return list(groups.values())


def _satisfiable(rules: Sequence[Rule], domain: Domain) -> bool:
    """Whether some assignment of the rules' attributes obeys them all: bucket elimination
    (Dechter 1999, §3) over the boolean tables — eliminate one attribute at a time (the one
    whose combined table is smallest), replacing the tables that mention it by "some value
    of it is allowed by all of them" over their other attributes. Exact; ``ValueError``
    when an intermediate table would exceed :data:`MAX_CHECK_CELLS`."""
    factors: list[tuple[tuple[str, ...], np.ndarray]] = [(r.attrs, r.allowed) for r in rules]
    if any(not t.any() for _, t in factors):
        return False
    while True:
        scope_vars = {a for attrs, _ in factors for a in attrs}
        if not scope_vars:
            return True

        def cost(v: str, factors=factors) -> tuple[int, int]:
            union = {a for attrs, _ in factors if v in attrs for a in attrs}
            return math.prod(domain[a].size for a in union), domain.index(v)

        v = min(scope_vars, key=cost)
        cells = cost(v)[0]
        touching = [f for f in factors if v in f[0]]
        if cells > MAX_CHECK_CELLS:
            names = sorted({a for attrs, _ in touching for a in attrs})
            raise ValueError(
                f"rules: checking that the rules can hold together needs a table of {cells:,} cells over {names} "
                f"(more than {MAX_CHECK_CELLS:,}); expected rules that interlock over fewer or smaller attributes"
            )
        union = tuple(dict.fromkeys(a for attrs, _ in touching for a in attrs))
        if len(union) > len(string.ascii_letters):
            raise ValueError(f"rules: {len(union)} attributes interlock in one step of the check (at most 52)")
        out = tuple(a for a in union if a != v)
        letters = {a: string.ascii_letters[i] for i, a in enumerate(union)}
        subs = ",".join("".join(letters[a] for a in attrs) for attrs, _ in touching)
        subs += "->" + "".join(letters[a] for a in out)
        table = np.einsum(subs, *[t.astype(np.float64) for _, t in touching], optimize=len(touching) > 2) > 0
        if not table.any():
            return False
        factors = [f for f in factors if v not in f[0]] + ([(out, table)] if out else [])
