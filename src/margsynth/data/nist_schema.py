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

**Rules.** :data:`NIST_ACS_RULES` lists the deterministic relations between the features that
the dictionary states (an ``N`` defined as "N/A (less than 15 years old)" is null exactly below
that age; ``OWN_RENT``'s ``0`` is "Group quarters"; ``WGTP``'s ``0`` is the "Group quarters place
holder record"; ``INDP_CAT`` is ``INDP``'s sector) or that follow from the survey's definitions of
a family and an own child (a family is a householder and the persons related to them; an own
child of the householder is one of them): schema rules (:mod:`margsynth.tabular.constraints`),
each with a comment naming its entry. Relations merely observed in the data are not rules and are
not listed (a child under 15 with at most "grade 9-12, no diploma" is common, not defined).
:func:`nist_acs_schema` ships the rules whose columns the named schema keeps (``nist-acs-21``:
none of ``INDP``'s or ``WGTP``'s). Every rule has no violation on the real rows of the three
excerpts (``tests/test_nist_schema.py``); docs/notes/rules.md measures what they cost and give.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .loaders import NIST_EXCERPTS, load_data_dictionary

__all__ = [
    "acs_rules",
    "EXCERPT_STATES",
    "INDUSTRY_SECTORS",
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


def _null_below(feature: str, age: int, entry: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``feature`` is null below ``age`` and holds a value from it: the dictionary's ``N`` is
    "N/A (less than ``age`` years old)" (``entry``), which leaves no other reason for a null."""
    text = f"data dictionary, {feature}: N = {entry!r}"
    return (
        {"name": f"{feature} null under {age}", "if": {"AGEP": {"<": age}}, "then": {feature: "null"}, "text": text},
        {"name": f"{feature} set from {age}", "if": {"AGEP": {">=": age}}, "then": {feature: "not null"}, "text": text},
    )


#: ``INDP_CAT``'s sectors as ranges of ``INDP`` codes: ``(first, last, INDP_CAT code)``. The
#: dictionary links ``INDP`` to the ACS PUMS data dictionary, where each industry code's label
#: begins with its sector's abbreviation (``AGR-``, ``EXT-``, ...), the abbreviations that begin
#: ``INDP_CAT``'s labels; the 2018 industry codes of each sector form one range.
INDUSTRY_SECTORS: tuple[tuple[int, int, str], ...] = (
    (170, 290, "0"),  # AGR: Agriculture, Forestry, Fishing and Hunting
    (370, 490, "1"),  # EXT: Mining, Quarrying, and Oil and Gas Extraction
    (570, 690, "2"),  # UTL: Utilities
    (770, 770, "3"),  # CON: Construction
    (1070, 3990, "4"),  # MFG: Manufacturing
    (4070, 4590, "5"),  # WHL: Wholesale Trade
    (4670, 5790, "6"),  # RET: Retail Trade
    (6070, 6390, "7"),  # TRN: Transportation and Warehousing
    (6470, 6780, "8"),  # INF: Information
    (6870, 7190, "9"),  # FIN: Finance, Insurance, Real Estate
    (7270, 7790, "10"),  # PRF: Professional, Scientific and Technical Services
    (7860, 7890, "11"),  # EDU: Educational Services
    (7970, 8290, "12"),  # MED: Health Care
    (8370, 8470, "13"),  # SCA: Social Assistance
    (8560, 8690, "14"),  # ENT: Arts, Entertainment, Accommodation, Food Services and Recreation
    (8770, 9290, "15"),  # SRV: Other Services
    (9370, 9590, "16"),  # ADM: Government, Public Administration
    (9670, 9870, "17"),  # MIL: Military
    (9920, 9920, "18"),  # UNEMPLOYED (INDP 9920: unemployed, no work experience in the last 5 years or never worked)
)
_GQ, _HU = ["2", "3"], ["1"]  # HOUSING_TYPE: group quarters (institutional, non-institutional); housing unit
#: The deterministic relations between the excerpts' features (module docstring), as schema
#: rules (:mod:`margsynth.tabular.constraints`); each comment names the dictionary entry.
NIST_ACS_RULES: tuple[dict[str, Any], ...] = (
    *_null_below("MSP", 15, "N/A (age less than 15 years)"),  # MSP's N
    *_null_below("PINCP", 15, "N/A (less than 15 years old)"),  # PINCP's N
    *_null_below("PINCP_DECILE", 15, "N/A (less than 15 years old"),  # PINCP_DECILE's N
    *_null_below("EDU", 3, "N/A (less than 3 years old)"),  # EDU's N
    *_null_below("DREM", 5, "N/A (Less than 5 years old)"),  # DREM's N
    *_null_below("DPHY", 5, "N/A (Less than 5 years old)"),  # DPHY's N
    # INDP_CAT's N: "N/A (less than 16 years old, or last worked more than 5 years ago, or never worked)"
    {"name": "no industry under 16", "if": {"AGEP": {"<": 16}}, "then": {"INDP_CAT": "null"},
     "text": "data dictionary, INDP_CAT: N = N/A (less than 16 years old, ...)"},
    # INDP's N (the PUMS dictionary it links: "N/A (less than 16 years old/NILF who last worked more than 5 years
    # ago or never worked)") is INDP_CAT's N: the two are null together
    {"name": "industry code and category null together", "if": {"INDP": "null"}, "then": {"INDP_CAT": "null"},
     "text": "data dictionary, INDP and INDP_CAT: the same N/A"},
    {"name": "industry category and code null together", "if": {"INDP_CAT": "null"}, "then": {"INDP": "null"},
     "text": "data dictionary, INDP and INDP_CAT: the same N/A"},
    # INDP -> INDP_CAT: INDP_CAT is INDP's sector (INDUSTRY_SECTORS)
    *({"name": f"industry {lo}-{hi} is category {cat}", "if": {"INDP": {">=": lo, "<=": hi}},
       "then": {"INDP_CAT": [cat]}, "text": "data dictionary, INDP_CAT: the sector of the INDP code"}
      for lo, hi, cat in INDUSTRY_SECTORS),
    # OWN_RENT's 0: "Group quarters"; 1, 2: "Own / Rent housing unit"
    {"name": "group quarters: OWN_RENT 0", "if": {"HOUSING_TYPE": _GQ}, "then": {"OWN_RENT": ["0"]},
     "text": "data dictionary, OWN_RENT: 0 = Group quarters"},
    {"name": "housing unit: owned or rented", "if": {"HOUSING_TYPE": _HU}, "then": {"OWN_RENT": ["1", "2"]},
     "text": "data dictionary, OWN_RENT: 1 = Own housing unit, 2 = Rent housing unit"},
    # NOC's N: "N/A (GQ/vacant)"; NPF's N: "N/A (GQ/vacant/non-family household"
    {"name": "group quarters: no family", "if": {"HOUSING_TYPE": _GQ}, "then": {"NPF": "null"},
     "text": "data dictionary, NPF: N = N/A (GQ/vacant/non-family household"},
    {"name": "group quarters: no children counted", "if": {"HOUSING_TYPE": _GQ}, "then": {"NOC": "null"},
     "text": "data dictionary, NOC: N = N/A (GQ/vacant)"},
    {"name": "housing unit: children counted", "if": {"HOUSING_TYPE": _HU}, "then": {"NOC": "not null"},
     "text": "data dictionary, NOC: N = N/A (GQ/vacant); a person's record is never vacant"},
    # WGTP's 0: "Group quarters place holder record"; min 1 otherwise
    {"name": "group quarters: housing weight 0", "if": {"HOUSING_TYPE": _GQ}, "then": {"WGTP": {"==": 0}},
     "text": "data dictionary, WGTP: 0 = Group quarters place holder record"},
    {"name": "housing unit: housing weight >= 1", "if": {"HOUSING_TYPE": _HU}, "then": {"WGTP": {">=": 1}},
     "text": "data dictionary, WGTP: min 1 for a housing unit"},
    # NPF ("Number of persons in family") and NOC ("Number of own children in household"): the householder's own
    # children are related to the householder, so they and the householder are in the family
    {"name": "family larger than its children", "order": ["NPF", ">", "NOC"],
     "text": "data dictionary, NPF and NOC: a family holds the householder and their own children"},
    {"name": "own children: a family", "if": {"NOC": {">=": 1}}, "then": {"NPF": "not null"},
     "text": "data dictionary, NPF: N = N/A (... non-family household); own children make a family"},
)


def _rule_columns(rule: Mapping[str, Any]) -> set[str]:
    """The columns one schema rule names."""
    if "order" in rule:
        return {rule["order"][0], rule["order"][2]}
    return {*rule.get("if", {}), *rule.get("then", {})}


def acs_rules(features: Sequence[str]) -> list[dict[str, Any]]:
    """The rules of :data:`NIST_ACS_RULES` whose columns are all among ``features``."""
    keep = set(features)
    return [copy.deepcopy(r) for r in NIST_ACS_RULES if _rule_columns(r) <= keep]


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
    registered data dictionary (or ``dictionary``) with the excerpt's own PUMAs and the rules
    of :data:`NIST_ACS_RULES` whose columns it keeps (module docstring): the JSON form of a
    :class:`margsynth.tabular.Schema`."""
    if schema not in NAMED_SCHEMAS:
        raise ValueError(f"schema {schema!r}: not a named schema; expected one of {', '.join(NAMED_SCHEMAS)}")
    if name not in NIST_EXCERPTS:
        raise ValueError(f"name {name!r}: not a NIST excerpt; expected one of {', '.join(NIST_EXCERPTS)}")
    dd = load_data_dictionary(name) if dictionary is None else dictionary
    features = [f for f in dd if f not in NAMED_SCHEMAS[schema]]
    out = schema_from_dictionary(dd, features=features, pumas=excerpt_pumas(name, dd))
    out["rules"] = acs_rules(features)
    return out


def named_schema(schema: str, dataset: str | None) -> dict[str, Any]:
    """The named ``schema`` for the table ``dataset``: a NIST excerpt's name gives its own PUMAs
    (:func:`nist_acs_schema`); any other table (a CSV of an excerpt) every PUMA of the
    registered dictionary. Both with the rules of :func:`acs_rules`."""
    if schema not in NAMED_SCHEMAS:
        raise ValueError(f"schema {schema!r}: not a named schema; expected one of {', '.join(NAMED_SCHEMAS)}")
    if dataset in NIST_EXCERPTS:
        return nist_acs_schema(dataset, schema)
    dd = load_data_dictionary()
    features = [f for f in dd if f not in NAMED_SCHEMAS[schema]]
    out = schema_from_dictionary(dd, features=features)
    out["rules"] = acs_rules(features)
    return out
