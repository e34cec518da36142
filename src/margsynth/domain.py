"""The discrete data model's schema: attributes and domains.

A :class:`Domain` is an ordered, immutable collection of :class:`Attribute`s.
Each attribute takes the integer codes ``0 .. size-1``; it may be *ordinal*
(codes are ordered, e.g. months or age bins) and may carry a generalisation
:class:`Hierarchy` (a tree over its values, used by the MGD metric's semantic
distance, MGD paper §4.3.1).

Everything here is frozen and hashable, so domains can key caches and be
shared between mechanisms without defensive copies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Attribute", "Domain", "Hierarchy"]


@dataclass(frozen=True)
class Hierarchy:
    """A generalisation hierarchy over the values ``0..size-1`` of one attribute.

    ``levels[l][v]`` is the group of leaf value ``v`` at level ``l``. Level 0 is
    the leaves themselves (``levels[0][v] == v``); the last level has a single
    group (the root). Groups at level ``l`` are numbered ``0..n_groups(l)-1`` and
    must nest: two leaves in one group at level ``l`` share a group at every
    level above ``l``. The *height* ``t`` is ``len(levels) - 1``; MGD's
    non-ordinal semantic distance between two values whose lowest common
    ancestor sits at level ``s`` is ``s / t`` (paper §4.3.1 writes it with
    levels counted from the root, ``(t - s') / t``).
    """

    levels: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        levels = tuple(tuple(int(g) for g in lvl) for lvl in self.levels)
        object.__setattr__(self, "levels", levels)
        if len(levels) < 2:
            raise ValueError(f"hierarchy needs at least 2 levels (leaves and root), got {len(levels)}")
        size = len(levels[0])
        if size == 0:
            raise ValueError("hierarchy has no leaves")
        if levels[0] != tuple(range(size)):
            raise ValueError("hierarchy level 0 must be the identity (leaf v in group v)")
        for li, lvl in enumerate(levels):
            if len(lvl) != size:
                raise ValueError(f"hierarchy level {li} has {len(lvl)} entries, expected {size}")
            groups = sorted(set(lvl))
            if groups != list(range(len(groups))):
                raise ValueError(f"hierarchy level {li}: groups must be numbered 0..k-1, got {groups[:10]}")
        if len(set(levels[-1])) != 1:
            raise ValueError("hierarchy top level must be a single root group")
        for li in range(1, len(levels)):
            parent_of: dict[int, int] = {}
            for v in range(size):
                child, parent = levels[li - 1][v], levels[li][v]
                if parent_of.setdefault(child, parent) != parent:
                    raise ValueError(
                        f"hierarchy level {li}: group {child} of level {li - 1} has two parents "
                        f"({parent_of[child]} and {parent}); levels must nest"
                    )

    @classmethod
    def flat(cls, size: int) -> Hierarchy:
        """The default two-level hierarchy: every value directly under one root."""
        return cls((tuple(range(size)), (0,) * size))

    @classmethod
    def from_groups(cls, *groupings: Sequence[int]) -> Hierarchy:
        """Build from intermediate groupings (leaves and root are added)."""
        size = len(groupings[0]) if groupings else 0
        if not groupings:
            raise ValueError("from_groups needs at least one grouping; use Hierarchy.flat for none")
        return cls((tuple(range(size)), *map(tuple, groupings), (0,) * size))

    @property
    def size(self) -> int:
        return len(self.levels[0])

    @property
    def height(self) -> int:
        return len(self.levels) - 1

    def n_groups(self, level: int) -> int:
        self._check_level(level)
        return max(self.levels[level]) + 1

    def groups(self, level: int) -> np.ndarray:
        """Array mapping each leaf value to its group at ``level``."""
        self._check_level(level)
        return np.asarray(self.levels[level], dtype=np.int64)

    def lca_level(self, level: int) -> np.ndarray:
        """Matrix ``L[g, h]``: the lowest level at which groups ``g`` and ``h`` of
        ``level`` share an ancestor (``level`` itself on the diagonal)."""
        self._check_level(level)
        k = self.n_groups(level)
        rep = np.zeros(k, dtype=np.int64)  # one leaf representing each group
        rep[np.asarray(self.levels[level])] = np.arange(self.size)
        out = np.full((k, k), self.height, dtype=np.int64)
        for li in range(self.height, level - 1, -1):
            g = np.asarray(self.levels[li])[rep]
            out[g[:, None] == g[None, :]] = li
        return out

    def _check_level(self, level: int) -> None:
        if not 0 <= level <= self.height:
            raise ValueError(f"hierarchy has levels 0..{self.height}, got level {level}")


@dataclass(frozen=True)
class Attribute:
    """One discrete attribute: integer codes ``0..size-1``.

    ``labels`` optionally names the codes (e.g. neighbourhood names);
    ``hierarchy`` defaults to the flat two-level hierarchy where needed.
    """

    name: str
    size: int
    ordinal: bool = False
    hierarchy: Hierarchy | None = None
    labels: tuple[str, ...] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"attribute name must be a non-empty string, got {self.name!r}")
        if isinstance(self.size, bool) or int(self.size) != self.size or self.size < 1:
            raise ValueError(f"attribute {self.name!r}: size must be a positive integer, got {self.size!r}")
        object.__setattr__(self, "size", int(self.size))
        if self.hierarchy is not None and self.hierarchy.size != self.size:
            raise ValueError(
                f"attribute {self.name!r}: hierarchy has {self.hierarchy.size} leaves, attribute has {self.size} values"
            )
        if self.labels is not None:
            labels = tuple(str(x) for x in self.labels)
            if len(labels) != self.size:
                raise ValueError(f"attribute {self.name!r}: {len(labels)} labels for {self.size} values")
            object.__setattr__(self, "labels", labels)

    @property
    def effective_hierarchy(self) -> Hierarchy:
        """The attribute's hierarchy, or the flat default (MGD §4.3.1)."""
        return self.hierarchy if self.hierarchy is not None else Hierarchy.flat(self.size)

    def to_dict(self) -> dict[str, Any]:
        """The whole attribute as JSON values: ``name``, ``size``, ``ordinal``, then
        ``hierarchy`` (its levels) and ``labels`` when it has them; :meth:`from_dict` reads it."""
        d: dict[str, Any] = {"name": self.name, "size": self.size, "ordinal": bool(self.ordinal)}
        if self.hierarchy is not None:
            d["hierarchy"] = [list(lvl) for lvl in self.hierarchy.levels]
        if self.labels is not None:
            d["labels"] = list(self.labels)
        return d

    @classmethod
    def from_dict(cls, spec: Any) -> Attribute:
        """The attribute that :meth:`to_dict` described as ``spec`` (e.g. read back from JSON);
        ``ValueError`` naming the field that is missing, of the wrong type or invalid."""
        if not isinstance(spec, Mapping):
            raise ValueError(f"an attribute is an object with fields name, size and ordinal, got {spec!r}")
        for key, kind, what in (("name", str, "a string"), ("size", int, "an integer"), ("ordinal", bool, "a boolean")):
            if key not in spec:
                raise ValueError(f"field {key!r} is missing")
            v = spec[key]
            if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
                raise ValueError(f"field {key!r}: {v!r} is not {what}")
        labels = spec.get("labels")
        if labels is not None and (not isinstance(labels, list) or not all(isinstance(x, str) for x in labels)):
            raise ValueError(f"field 'labels': {labels!r} is not a list of strings")
        levels = spec.get("hierarchy")
        try:
            hierarchy = Hierarchy(tuple(tuple(lvl) for lvl in levels)) if levels is not None else None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"field 'hierarchy': {exc}") from None
        return cls(spec["name"], spec["size"], ordinal=spec["ordinal"], hierarchy=hierarchy, labels=labels)


@dataclass(frozen=True)
class Domain:
    """An ordered tuple of attributes with unique names.

    >>> d = Domain.from_sizes({"a": 2, "b": 3})
    >>> d.shape, d.size(), d.project(["b"]).names
    ((2, 3), 6, ('b',))
    """

    attributes: tuple[Attribute, ...]

    def __post_init__(self) -> None:
        attrs = tuple(self.attributes)
        object.__setattr__(self, "attributes", attrs)
        for a in attrs:
            if not isinstance(a, Attribute):
                raise ValueError(f"Domain takes Attribute objects, got {a!r}")
        names = [a.name for a in attrs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate attribute names in domain: {dup}")
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    # -- construction --------------------------------------------------------
    @classmethod
    def from_sizes(cls, sizes: Mapping[str, int], ordinal: Iterable[str] = ()) -> Domain:
        ordinal = set(ordinal)
        unknown = ordinal - set(sizes)
        if unknown:
            raise ValueError(f"ordinal attributes not in domain: {sorted(unknown)}")
        return cls(tuple(Attribute(n, s, ordinal=n in ordinal) for n, s in sizes.items()))

    @classmethod
    def from_json(cls, path: str | Path, ordinal: Iterable[str] = ()) -> Domain:
        """Read a domain JSON of the form ``{"attr": size, ...}`` (Private-PGM style)."""
        with open(path) as fh:
            try:
                sizes = json.load(fh)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(sizes, dict) or not sizes:
            raise ValueError(f"{path}: expected a non-empty JSON object mapping attribute to size")
        if "columns" in sizes and not isinstance(sizes["columns"], int):
            raise ValueError(
                f"{path}: a schema of a raw table (it has 'columns'), not a domain; expected a JSON object "
                "mapping attribute to size (a schema goes to --schema)"
            )
        for k, v in sizes.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                shown = repr(v) if len(repr(v)) <= 60 else f"{type(v).__name__} {repr(v)[:40]}…"
                raise ValueError(f"{path}: attribute {k!r} has size {shown}; sizes must be positive integers")
        return cls.from_sizes(sizes, ordinal=ordinal)

    def to_dict(self) -> dict[str, int]:
        return {a.name: a.size for a in self.attributes}

    # -- queries -------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    def __len__(self) -> int:
        return len(self.attributes)

    def __iter__(self):
        return iter(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self._index  # type: ignore[attr-defined]

    def __getitem__(self, name: str) -> Attribute:
        return self.attributes[self.index(name)]

    def index(self, name: str) -> int:
        try:
            return self._index[name]  # type: ignore[attr-defined]
        except KeyError:
            raise ValueError(f"unknown attribute {name!r}; domain has {list(self.names)}") from None

    def check_attrs(self, attrs: Iterable[str], what: str = "attributes") -> tuple[str, ...]:
        """Validate a list of attribute names (known, no duplicates)."""
        if isinstance(attrs, str):
            attrs = (attrs,)
        attrs = tuple(attrs)
        unknown = [a for a in attrs if a not in self]
        if unknown:
            raise ValueError(f"{what} name unknown attribute(s) {unknown}; domain has {list(self.names)}")
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"{what} repeat an attribute: {list(attrs)}")
        return attrs

    def project(self, attrs: Iterable[str]) -> Domain:
        """The sub-domain over ``attrs`` in the given order."""
        attrs = self.check_attrs(attrs)
        return Domain(tuple(self[a] for a in attrs))

    def size(self, attrs: Iterable[str] | None = None) -> int:
        """Number of cells of the full table over ``attrs`` (all attributes by default)."""
        shape = self.shape if attrs is None else self.project(attrs).shape
        return int(np.prod(shape, dtype=np.int64)) if shape else 1

    def canonical(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` sorted into domain order."""
        attrs = self.check_attrs(attrs)
        return tuple(sorted(attrs, key=self.index))

    def marginalize(self, attrs: Iterable[str]) -> Domain:
        """The domain without ``attrs``."""
        drop = set(self.check_attrs(attrs))
        return Domain(tuple(a for a in self.attributes if a.name not in drop))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a.name}: {a.size}" for a in self.attributes)
        return f"Domain({inner})"
