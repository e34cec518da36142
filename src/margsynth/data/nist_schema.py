"""The schema of the NIST Diverse Communities excerpts, built from their public data dictionary alone.

The excerpts (``ma2018``, ``tx2018``, ``national2018``) come with one data dictionary
(:func:`~margsynth.data.load_data_dictionary`; NIST, *SDNist v2*, the Diverse Communities Data
Excerpts' ``data_dictionary.json``). It is a public document, so a schema read from it costs
no privacy budget; :func:`schema_from_dictionary` turns it into the JSON form of a
:class:`margsynth.tabular.Schema`, feature by feature, from the entry's ``values``:

- **codes only** (``SEX``, ``MSP``, ``EDU``, ``PUMA``, ...): ``categorical`` with the
  dictionary's codes (``"N"`` excepted) as a strict category list, in the dictionary's order;
- **a range** (``"min"``/``"max"``: ``AGEP``, ``NOC``, ``NPF``, ``DENSITY``, ``PINCP``,
  ``POVPIP``, ``PWGTP``, ``WGTP``): ``numeric`` with the range as given bounds, widened to
  the numeric codes listed beside it (``NOC``'s ``0``, ``POVPIP``'s top code ``501``,
  ``WGTP``'s group-quarters ``0``), quantile binning with ``bins: "auto"``; ``integer``
  when the bounds and codes are whole numbers, else ``float`` with the ``decimals`` the
  dictionary writes its bounds with (``DENSITY``: 1);
- **no values** (``INDP``: 271 free industry codes, the dictionary says, with no list):
  ``categorical`` with ``categories: "discover"`` and ``nullable: "discover"`` — found
  privately on the run's budget.

A feature whose values list ``"N"`` is nullable (``"null_tokens": ["N"]`` for the whole
schema: the excerpts' literal ``N`` is their null cell, written back as ``N``); one that does
not list it is not (an ``N`` there is refused before any noise).

**PUMA per excerpt.** The dictionary lists the PUMAs of all three excerpts (31). Each excerpt
holds its own: Massachusetts' five PUMAs (state code ``25``), Texas' six (``48``), and the
twenty others in ``national2018`` (NIST's description of the excerpts; the registry's
descriptions give the counts). :func:`nist_acs_schema` keeps the excerpt's own PUMAs — public
knowledge, no cost — so the output holds no record in a PUMA the excerpt cannot contain
(with all 31, MST put 1.7% of ``ma2018``'s records in other states' PUMAs at ε = 1;
docs/notes/sdnist_kmarginal.md).

**Named schemas.** :data:`NAMED_SCHEMAS`: ``nist-acs`` (all 24 features) and ``nist-acs-21``
(without ``PWGTP``, ``WGTP`` and ``INDP``: the run leaves those columns out). The command line
takes the name where it takes a schema file (``margsynth synth mst --dataset ma2018 --schema
nist-acs``). A function rather than a JSON file in the package: the dictionary stays the one
home of the codes and ranges (it is verified by SHA-256 and fetched with every excerpt, so it
is there whenever an excerpt is), and the PUMA list depends on the excerpt.

**Rules.** Deterministic relations between the features (a child has no income, ``INDP_CAT``
is a function of ``INDP``, ...) are not part of the schema: :data:`NIST_ACS_RULES` is where
they will be listed; it is empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .loaders import NIST_EXCERPTS, load_data_dictionary

__all__ = [
    "EXCERPT_STATES",
    "NAMED_SCHEMAS",
    "NIST_ACS_RULES",
    "NULL_TOKEN",
    "excerpt_pumas",
    "named_schema",
    "nist_acs_schema",
    "schema_from_dictionary",
]

#: The excerpts' null cell ("not applicable"), as the dictionary writes it.
NULL_TOKEN = "N"
#: Named schemas: name -> the features it leaves out.
NAMED_SCHEMAS: dict[str, tuple[str, ...]] = {
    "nist-acs": (),
    "nist-acs-21": ("PWGTP", "WGTP", "INDP"),
}
#: The state codes (the first two digits of a PUMA code) of each excerpt's PUMAs; ``None``:
#: every PUMA of the dictionary outside the other excerpts' states.
EXCERPT_STATES: dict[str, tuple[str, ...] | None] = {"ma2018": ("25",), "tx2018": ("48",), "national2018": None}
#: Deterministic relations between the excerpts' features, for the rules of a later version
#: (none yet; the schema above is the whole of what is shipped).
NIST_ACS_RULES: tuple[()] = ()


def _decimals(value: float) -> int:
    """The decimals ``value`` is written with in the dictionary (``16.3``: 1)."""
    text = repr(float(value))
    return 0 if "e" in text or text.endswith(".0") else len(text.split(".")[1])


def _numeric(feature: str, values: Mapping[str, Any], null: bool) -> dict[str, Any]:
    codes = [k for k in values if k not in ("min", "max", NULL_TOKEN)]
    numbers = []
    for k in codes:
        try:
            numbers.append(float(k))
        except ValueError:
            raise ValueError(
                f"data dictionary: feature {feature!r} lists the code {k!r} beside a numeric range; expected numeric "
                "codes only (a range with text codes has no schema)"
            ) from None
    lo, hi = values["min"], values["max"]
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo <= hi):
        raise ValueError(f"data dictionary: feature {feature!r} has the range [{lo!r}, {hi!r}]; expected min <= max")
    ends = [float(lo), float(hi), *numbers]
    spec: dict[str, Any] = {"name": feature, "kind": "numeric"}
    if all(v == math.floor(v) for v in ends):
        spec.update(type="integer", bounds=[int(min(ends)), int(max(ends))])
    else:
        spec.update(type="float", bounds=[min(ends), max(ends)])
    spec.update(binning="quantile", bins="auto")
    if spec["type"] == "float":
        spec["decimals"] = max(_decimals(v) for v in ends)
    spec["nullable"] = null
    return spec


def schema_from_dictionary(
    dictionary: Mapping[str, Mapping[str, Any]],
    *,
    features: Sequence[str] | None = None,
    pumas: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The JSON form of the schema of the features of ``dictionary`` (a data dictionary in the
    NIST excerpts' format, :func:`~margsynth.data.read_data_dictionary`), by the rules of the
    module docstring, in the dictionary's order. ``features``: those features only, in the
    order given (a table's other columns are then left out of a run); ``pumas``: the
    categories of ``PUMA`` (default: every code the dictionary lists; each must be one of
    them). Reads only the dictionary: no value of any table."""
    if not isinstance(dictionary, Mapping) or not dictionary:
        raise ValueError("dictionary: expected a non-empty data dictionary {feature: {...}}")
    names = list(dictionary) if features is None else list(features)
    unknown = [f for f in names if f not in dictionary]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"features {names!r}: expected distinct features of the dictionary ({', '.join(dictionary)})")
    columns = []
    for feature in names:
        values = dictionary[feature].get("values")
        if values is None:  # free codes (INDP): nothing usable, everything discovered
            columns.append({"name": feature, "kind": "categorical", "categories": "discover", "nullable": "discover"})
            continue
        null = NULL_TOKEN in values
        if "min" in values or "max" in values:
            if not ("min" in values and "max" in values):
                raise ValueError(f"data dictionary: feature {feature!r} gives one end of its range; expected min and max")
            columns.append(_numeric(feature, values, null))
            continue
        codes = [k for k in values if k != NULL_TOKEN]
        if feature == "PUMA" and pumas is not None:
            outside = [p for p in pumas if p not in codes]
            if outside or not pumas:
                raise ValueError(f"pumas {list(pumas)!r}: expected PUMA codes of the dictionary ({', '.join(codes)})")
            codes = [p for p in codes if p in set(pumas)]
        if not codes:
            raise ValueError(f"data dictionary: feature {feature!r} lists no code besides {NULL_TOKEN!r}")
        columns.append({"name": feature, "kind": "categorical", "categories": codes, "strict": True, "nullable": null})
    return {"columns": columns, "null_tokens": [NULL_TOKEN], "public": True}


def excerpt_pumas(name: str, dictionary: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The PUMA codes of the excerpt ``name`` among the dictionary's (module docstring)."""
    if name not in EXCERPT_STATES:
        raise ValueError(f"name {name!r}: not a NIST excerpt; expected one of {', '.join(NIST_EXCERPTS)}")
    codes = [k for k in dictionary["PUMA"]["values"] if k != NULL_TOKEN]
    states = EXCERPT_STATES[name]
    if states is None:
        others = {s for v in EXCERPT_STATES.values() if v for s in v}
        return [c for c in codes if c.split("-")[0] not in others]
    return [c for c in codes if c.split("-")[0] in states]


def nist_acs_schema(name: str = "ma2018", schema: str = "nist-acs", dictionary: Mapping | None = None) -> dict[str, Any]:
    """The named ``schema`` (:data:`NAMED_SCHEMAS`) of the NIST excerpt ``name``, built from the
    registered data dictionary (or ``dictionary``) with the excerpt's own PUMAs (module
    docstring): the JSON form of a :class:`margsynth.tabular.Schema`."""
    if schema not in NAMED_SCHEMAS:
        raise ValueError(f"schema {schema!r}: not a named schema; expected one of {', '.join(NAMED_SCHEMAS)}")
    if name not in NIST_EXCERPTS:
        raise ValueError(f"name {name!r}: not a NIST excerpt; expected one of {', '.join(NIST_EXCERPTS)}")
    dd = load_data_dictionary(name) if dictionary is None else dictionary
    features = [f for f in dd if f not in NAMED_SCHEMAS[schema]]
    return schema_from_dictionary(dd, features=features, pumas=excerpt_pumas(name, dd))


def named_schema(schema: str, dataset: str | None) -> dict[str, Any]:
    """The named ``schema`` for the table ``dataset``: a NIST excerpt's name gives its own PUMAs
    (:func:`nist_acs_schema`); any other table (a CSV of an excerpt) every PUMA of the
    registered dictionary."""
    if schema not in NAMED_SCHEMAS:
        raise ValueError(f"schema {schema!r}: not a named schema; expected one of {', '.join(NAMED_SCHEMAS)}")
    if dataset in NIST_EXCERPTS:
        return nist_acs_schema(dataset, schema)
    dd = load_data_dictionary()
    return schema_from_dictionary(dd, features=[f for f in dd if f not in NAMED_SCHEMAS[schema]])
