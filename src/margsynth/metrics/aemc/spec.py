"""Marginal specifications for AEMC / MGD (MGD paper §4.3.2).

A :class:`MarginalSpec` names the attributes of one target marginal, the
generalisation level used for each, each attribute's weight ``w_a`` in
``[0, 1] ∪ {∞}`` (finite weights summing to 1), the tolerance ``Δ`` of Eq. (1),
the unit cost ``α`` of adding or removing a count (Appendix A; the paper's
definition fixes ``α = 1``) and the marginal's weight ``ω`` in the MGD
average, Eq. (3).

An attribute may instead carry a :class:`Distance` *override*: absolute
per-attribute moving costs that replace ``w_a · sd_a`` (paper §5.2 allows a
user-given distance). It is how the configuration the published Baltimore
numbers were made with (docs/notes/mgd_baltimore.md: ordinal cost per step, categorical
cost = weight) is stated as a spec; such attributes are left out of the
"finite weights sum to 1" check because their weight is already inside the
costs.

Levels follow :class:`margsynth.domain.Hierarchy`: level 0 is the leaves and the
last level is the root (the paper counts levels from the root; §4.3.1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["AttributeSpec", "Distance", "MarginalSpec", "load_specs", "specs_to_json"]

INF = math.inf
_WEIGHT_SUM_TOL = 1e-9


def _check_number(value, what: str, *, allow_inf: bool = False) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return x


@dataclass(frozen=True)
class Distance:
    """A per-attribute moving-cost override (paper §5.2; docs/notes/mgd_baltimore.md).

    ``kind`` is one of

    - ``"steps"``: moving between codes ``i`` and ``j`` costs ``cost·|i−j|``
      (the published Baltimore configuration for ``month``: the attribute
      weight per month moved, not divided by ``k−1``);
    - ``"uniform"``: any change of value costs ``cost`` (a star through a hub,
      ``cost/2`` on each side; the published configuration for categorical
      attributes);
    - ``"matrix"``: an explicit ``k×k`` matrix ``D`` with zero diagonal,
      non-negative entries (``inf`` forbids the move) that satisfies the
      triangle inequality, so that the neighbour graph of §6.3 stays exact.

    The costs are absolute: the attribute's weight is not applied on top.
    """

    kind: str
    cost: float = 1.0
    matrix: tuple[tuple[float, ...], ...] | None = field(default=None, compare=True)

    def __post_init__(self) -> None:
        if self.kind not in ("steps", "uniform", "matrix"):
            raise ValueError(f"distance override kind must be 'steps', 'uniform' or 'matrix', got {self.kind!r}")
        if self.kind == "matrix":
            if self.matrix is None:
                raise ValueError("distance override 'matrix' needs a matrix")
            m = np.asarray(self.matrix, dtype=np.float64)
            if m.ndim != 2 or m.shape[0] != m.shape[1]:
                raise ValueError(f"distance override matrix must be square, got shape {m.shape}")
            object.__setattr__(self, "matrix", tuple(tuple(float(x) for x in row) for row in m))
        else:
            c = _check_number(self.cost, f"distance override {self.kind!r} cost")
            if c < 0:
                raise ValueError(f"distance override {self.kind!r} cost must be >= 0, got {c}")
            object.__setattr__(self, "cost", c)

    @classmethod
    def steps(cls, cost: float) -> Distance:
        return cls("steps", cost)

    @classmethod
    def uniform(cls, cost: float) -> Distance:
        return cls("uniform", cost)

    @classmethod
    def from_matrix(cls, matrix) -> Distance:
        return cls("matrix", 1.0, tuple(map(tuple, np.asarray(matrix, dtype=np.float64))))

    def to_json(self) -> dict:
        if self.kind == "matrix":
            return {"kind": "matrix", "matrix": [list(r) for r in self.matrix]}
        return {"kind": self.kind, "cost": self.cost}

    @classmethod
    def from_json(cls, obj, where: str = "distance") -> Distance:
        if not isinstance(obj, Mapping) or "kind" not in obj:
            raise ValueError(f"{where}: expected an object with a 'kind' key, got {obj!r}")
        unknown = set(obj) - {"kind", "cost", "matrix"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}")
        if obj["kind"] == "matrix":
            return cls.from_matrix(obj.get("matrix"))
        return cls(obj["kind"], obj.get("cost", 1.0))


@dataclass(frozen=True)
class AttributeSpec:
    """One attribute of a target marginal (§4.3.2).

    ``weight`` is ``w_a ∈ [0, 1] ∪ {∞}`` (``math.inf`` forbids moving between
    values of this attribute); ``None`` means the paper's default: ∞ for a
    categorical attribute, an equal share for ordinal ones. ``level`` is the
    hierarchy level (0 = leaves). ``distance`` is an optional override
    (:class:`Distance`), in which case ``weight`` must be ``None``.
    """

    name: str
    level: int = 0
    weight: float | None = None
    distance: Distance | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"attribute spec name must be a non-empty string, got {self.name!r}")
        if (
            isinstance(self.level, bool)
            or not isinstance(self.level, (int, float, np.integer, np.floating))
            or not math.isfinite(self.level)
            or int(self.level) != self.level
            or self.level < 0
        ):
            raise ValueError(f"attribute {self.name!r}: level must be an integer >= 0, got {self.level!r}")
        object.__setattr__(self, "level", int(self.level))
        if self.weight is not None:
            w = _check_number(self.weight, f"attribute {self.name!r}: weight", allow_inf=True)
            if not (math.isinf(w) and w > 0) and not 0.0 <= w <= 1.0:
                raise ValueError(f"attribute {self.name!r}: weight must be in [0, 1] or inf, got {self.weight!r}")
            object.__setattr__(self, "weight", w)
        if self.distance is not None:
            if not isinstance(self.distance, Distance):
                raise ValueError(f"attribute {self.name!r}: distance must be a Distance, got {self.distance!r}")
            if self.weight is not None:
                raise ValueError(
                    f"attribute {self.name!r}: give either a weight or a distance override (whose costs include "
                    "the weight), not both"
                )


@dataclass(frozen=True)
class MarginalSpec:
    """One target marginal φ of MGD (§4.3.2): attributes, Δ^φ, α, ω^φ.

    ``delta`` defaults to 2, the value of the paper's case study (§5.3) and in
    the range §6.5 recommends; ``alpha`` (add/remove unit cost, Appendix A)
    defaults to 1 as in Eq. (1); ``omega`` is the marginal's weight in Eq. (3).
    """

    attributes: tuple[AttributeSpec, ...]
    delta: float = 2.0
    alpha: float = 1.0
    omega: float = 1.0
    name: str | None = None
    allow_negative: bool = False

    def __post_init__(self) -> None:
        attrs = tuple(a if isinstance(a, AttributeSpec) else AttributeSpec(a) for a in self.attributes)
        object.__setattr__(self, "attributes", attrs)
        if not attrs:
            raise ValueError("a marginal spec needs at least one attribute")
        names = [a.name for a in attrs]
        if len(set(names)) != len(names):
            raise ValueError(f"marginal spec repeats an attribute: {names}")
        d = _check_number(self.delta, f"marginal {names}: delta")
        if d < 0:
            raise ValueError(f"marginal {names}: delta must be >= 0, got {self.delta!r}")
        a = _check_number(self.alpha, f"marginal {names}: alpha")
        if a <= 0:
            raise ValueError(f"marginal {names}: alpha must be > 0, got {self.alpha!r}")
        o = _check_number(self.omega, f"marginal {names}: omega")
        if o <= 0:
            raise ValueError(f"marginal {names}: omega must be > 0 (Eq. 3 weights are positive), got {self.omega!r}")
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "alpha", a)
        object.__setattr__(self, "omega", o)
        finite = [x.weight for x in attrs if x.distance is None and x.weight is not None and math.isfinite(x.weight)]
        if finite and abs(sum(finite) - 1.0) > _WEIGHT_SUM_TOL:
            raise ValueError(
                f"marginal {names}: finite attribute weights must sum to 1 (§4.3.2), got {finite} (sum {sum(finite)!r})"
            )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def label(self) -> str:
        return self.name if self.name else "+".join(self.names)

    @classmethod
    def of(cls, *names: str, delta: float = 2.0, alpha: float = 1.0, omega: float = 1.0, **weights) -> MarginalSpec:
        """Shorthand: ``MarginalSpec.of("month", "type", month=1.0, type=math.inf)``."""
        return cls(tuple(AttributeSpec(n, weight=weights.get(n)) for n in names), delta, alpha, omega)

    # -- JSON ----------------------------------------------------------------
    def to_json(self) -> dict:
        out: dict = {"attributes": []}
        for a in self.attributes:
            item: dict = {"name": a.name}
            if a.level:
                item["level"] = a.level
            if a.weight is not None:
                item["weight"] = "inf" if math.isinf(a.weight) else a.weight
            if a.distance is not None:
                item["distance"] = a.distance.to_json()
            out["attributes"].append(item)
        out.update(delta=self.delta, alpha=self.alpha, omega=self.omega)
        if self.name:
            out["name"] = self.name
        if self.allow_negative:
            out["allow_negative"] = True
        return out

    @classmethod
    def from_json(cls, obj, where: str = "marginal") -> MarginalSpec:
        if not isinstance(obj, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(obj).__name__}")
        unknown = set(obj) - {"attributes", "delta", "alpha", "omega", "name", "allow_negative"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}")
        raw = obj.get("attributes")
        if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
            raise ValueError(f"{where}: 'attributes' must be a non-empty list")
        attrs = []
        for i, item in enumerate(raw):
            w = f"{where}.attributes[{i}]"
            if isinstance(item, str):
                attrs.append(AttributeSpec(item))
                continue
            if not isinstance(item, Mapping) or "name" not in item:
                raise ValueError(f"{w}: expected a name or an object with 'name', got {item!r}")
            extra = set(item) - {"name", "level", "weight", "distance"}
            if extra:
                raise ValueError(f"{w}: unknown key(s) {sorted(extra)}")
            weight = item.get("weight")
            if isinstance(weight, str):
                if weight.lower() not in ("inf", "infinity", "∞"):
                    raise ValueError(f"{w}: weight must be a number or 'inf', got {weight!r}")
                weight = INF
            dist = Distance.from_json(item["distance"], f"{w}.distance") if "distance" in item else None
            attrs.append(AttributeSpec(item["name"], item.get("level", 0), weight, dist))
        neg = obj.get("allow_negative", False)
        if not isinstance(neg, bool):
            raise ValueError(f"{where}: allow_negative must be true or false, got {neg!r}")
        return cls(
            tuple(attrs), obj.get("delta", 2.0), obj.get("alpha", 1.0), obj.get("omega", 1.0), obj.get("name"), neg
        )


def load_specs(path_or_obj) -> list[MarginalSpec]:
    """Read a SPEC.json: ``{"marginals": [...]}`` or a bare list of marginal objects."""
    if isinstance(path_or_obj, (str, Path)):
        try:
            with open(path_or_obj) as fh:
                obj = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path_or_obj}: not valid JSON ({exc})") from exc
        where = str(path_or_obj)
    else:
        obj, where = path_or_obj, "spec"
    if isinstance(obj, Mapping):
        extra = set(obj) - {"marginals"}
        if extra or "marginals" not in obj:
            raise ValueError(f"{where}: expected {{'marginals': [...]}}, got keys {sorted(obj)}")
        obj = obj["marginals"]
    if not isinstance(obj, list) or not obj:
        raise ValueError(f"{where}: expected a non-empty list of marginals")
    return [MarginalSpec.from_json(m, f"{where}: marginals[{i}]") for i, m in enumerate(obj)]


def specs_to_json(specs: Sequence[MarginalSpec]) -> dict:
    return {"marginals": [s.to_json() for s in specs]}
