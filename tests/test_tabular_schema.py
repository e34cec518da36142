"""Bad schemas and bad cells: one-line ``ValueError`` naming the column (and the row and
value for a cell), raised before any noise — the ledger has no charge and the generator
has not moved. Draft schemas copy nothing out of the data unless told it is public."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from margsynth.privacy import BudgetLedger
from margsynth.tabular import Schema, draft_schema, fit_encoder, synthesize

from .test_cli_failures import SEED, spy  # noqa: F401  (the fixture: charges, ledgers, rng, runs)

DISCOVER_ALL = {
    "columns": [
        {"name": "city", "kind": "categorical", "categories": "discover", "nullable": True},
        {"name": "price", "kind": "numeric", "type": "float", "bounds": "discover", "binning": "quantile", "bins": 4,
         "nullable": True},
        {"name": "rooms", "kind": "numeric", "type": "integer", "bounds": [1, 6]},
        {"name": "kind", "kind": "categorical", "categories": ["flat", "house"]},
    ]
}  # fmt: skip


def raw(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "city": rng.choice(["Oslo", "Lima", None], n),
        "price": rng.uniform(10, 90, n),
        "rooms": rng.integers(1, 7, n),
        "kind": rng.choice(["flat", "house"], n),
    })  # fmt: skip


def with_cell(col: str, row: int, value) -> pd.DataFrame:
    df = raw().astype({col: object})
    df.loc[row, col] = value
    return df


def schema_with(col: str, **changes) -> dict:
    s = json.loads(json.dumps(DISCOVER_ALL))
    for c in s["columns"]:
        if c["name"] == col:
            c.update(changes)
            for k, v in list(c.items()):
                if v is None:
                    del c[k]
    return s


BAD_CELLS = [
    ("rooms", 7, "three", r"column 'rooms' row 7: non-numeric value 'three' in a numeric column"),
    ("rooms", 3, 2.5, r"column 'rooms' row 3: non-integer value 2.5 in an integer column"),
    ("rooms", 5, 12, r"column 'rooms' row 5: value 12 outside the bounds \[1, 6\]"),
    ("rooms", 2, None, r"column 'rooms' row 2: missing value None in a column that is not nullable"),
    ("rooms", 6, True, r"column 'rooms' row 6: boolean value True in a numeric column"),
    ("price", 9, "cheap", r"column 'price' row 9: non-numeric value 'cheap' in a numeric column"),
    ("price", 4, float("inf"), r"column 'price' row 4: non-numeric value inf"),
    ("kind", 11, "castle", r"column 'kind' row 11: value 'castle' is not one of the 2 declared categories"),
    ("kind", 0, "", r"column 'kind' row 0: missing value '' in a column that is not nullable"),
]

BAD_SCHEMAS = [
    (schema_with("price", bounds=[90, 10]), r"column 'price': bounds \[90, 10\] are reversed"),
    (schema_with("price", bounds=[5, 5]), r"column 'price': bounds \[5, 5\] are reversed or empty"),
    (schema_with("rooms", bins=0), r"column 'rooms': bins must be a positive integer or \"auto\", got 0"),
    (schema_with("rooms", binning="explicit", bins=None, cuts=[3, 2]), r"column 'rooms': cuts must increase"),
    (schema_with("rooms", binning="explicit", bins=None, cuts=[3, 9]), r"column 'rooms': cut point 9.0 is outside"),
    (schema_with("kind", categories=[]), r"column 'kind': categories must be a non-empty list"),
    (schema_with("kind", categories=["a", "a"]), r"column 'kind': category 'a' is listed twice"),
    (schema_with("kind", kind="ordinal", categories="discover"), r"column 'kind': categories must be a list"),
    (schema_with("city", strict=True), r"column 'city': strict is for a given category list"),
    (schema_with("city", colour="red"), r"column 'city': unknown key\(s\) \['colour'\]"),
    (schema_with("price", type="decimal"), r"column 'price': type must be one of"),
    (schema_with("price", kind="text"), r"column 'price': kind must be one of"),
    ({"columns": DISCOVER_ALL["columns"] + [{"name": "garden", "kind": "categorical", "categories": ["y"]}]},
     r"column 'garden': in the schema but not in the data"),
    ({"columns": DISCOVER_ALL["columns"] + DISCOVER_ALL["columns"][:1]}, r"column 'city': listed twice"),
]  # fmt: skip


def _fit_untouched(df, schema, match):
    ledger = BudgetLedger.from_dp(1.0, 1e-6)
    rng = np.random.default_rng(0)
    state = json.dumps(rng.bit_generator.state)
    with pytest.raises(ValueError, match=match) as info:
        fit_encoder(df, schema, ledger=ledger, rng=rng, share=0.5, delta=1e-7)
    assert "\n" not in str(info.value)
    assert ledger.entries == () and ledger.spent == 0.0
    assert json.dumps(rng.bit_generator.state) == state


@pytest.mark.parametrize("col,row,value,match", BAD_CELLS)
def test_bad_cell_names_column_row_value_before_noise(col, row, value, match):
    _fit_untouched(with_cell(col, row, value), DISCOVER_ALL, match)


@pytest.mark.parametrize("schema,match", BAD_SCHEMAS)
def test_bad_schema_names_column_before_noise(schema, match):
    _fit_untouched(raw(), schema, match)


def test_clip_clamps_given_bounds_instead():
    enc, _ = fit_encoder(with_cell("rooms", 5, 12), schema_with("rooms", clip=True), ledger=BudgetLedger.from_dp(1, 1e-6),
                         rng=np.random.default_rng(0), share=0.5, delta=1e-7)  # fmt: skip
    assert enc.columns[2].hi == 6.0


def test_synthesize_refuses_before_noise():
    with pytest.raises(ValueError, match=r"column 'kind' row 11: value 'castle'"):
        synthesize(with_cell("kind", 11, "castle"), DISCOVER_ALL, "mst", epsilon=1.0, delta=1e-6, seed=0)
    for kw, match in [({"epsilon": -1.0}, "epsilon"), ({"delta": 2.0}, "delta"), ({"seed": -1}, "seed"),
                      ({"preprocessing_share": 1.0}, "preprocessing_share"), ({"synthetic_records": 0}, "synthetic_records must be"),
                      ({"iters": -3}, "iters")]:  # fmt: skip
        args = {"epsilon": 1.0, "delta": 1e-6, "seed": 0, **kw}
        with pytest.raises(ValueError, match=match):
            synthesize(raw(), DISCOVER_ALL, "mst", **args)
    with pytest.raises(ValueError, match="unknown mechanism"):
        synthesize(raw(), DISCOVER_ALL, "nope", epsilon=1.0, delta=1e-6, seed=0)


def test_load_reports_path_and_json_errors(tmp_path):
    p = tmp_path / "s.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        Schema.load(p)
    with pytest.raises(ValueError, match="cannot read"):
        Schema.load(tmp_path / "missing.json")


# ----------------------------------------------------------------------------- drafts
DISTINCT = pd.DataFrame({
    "code": ["ZX-Quokka-918273", "ZX-Quokka-918273", "Wombat-771166", None],
    "amount": [123456.789, 98765.4321, np.nan, 55555.125],
    "visits": np.array([987654, 876543, 765432, 654321], dtype=np.int64),
    "flag": [True, False, True, True],
})  # fmt: skip
SECRETS = ["Quokka", "918273", "Wombat", "771166", "123456", "98765", "55555", "987654", "654321", "765432"]


def test_draft_copies_no_value():
    """Names and types only: the draft knows a column's type (integers, decimals and how many
    decimals, or text), never one of its values; nulls and bounds are left to discovery."""
    d = draft_schema(DISTINCT)
    text = json.dumps(d)
    assert not any(s in text for s in SECRETS), text
    assert "public" not in d
    cols = {c["name"]: c for c in d["columns"]}
    assert cols["code"] == {"name": "code", "kind": "categorical", "categories": "discover", "nullable": "discover"}
    assert cols["amount"]["bounds"] == "discover" and cols["amount"]["type"] == "float"
    assert cols["amount"]["decimals"] == 4 and cols["amount"]["nullable"] == "discover"
    assert cols["visits"]["type"] == "integer" and cols["visits"]["bins"] == "auto"
    assert cols["flag"]["kind"] == "categorical"
    Schema.from_dict(d)


def test_draft_of_a_text_table_reads_types_and_null_tokens():
    """Read as text, a column of integers with empty cells is an integer column (not floats),
    decimals are counted, ``N`` is null only when named, ``NA`` (Namibia) is a category."""
    text = pd.DataFrame({"n": ["1", "", "3", "N"], "x": ["1.50", "2.125", "N", ""], "cc": ["NA", "DE", "N", "NA"]})
    d = {c["name"]: c for c in draft_schema(text, null_tokens=["N"])["columns"]}
    assert d["n"]["type"] == "integer" and d["x"]["type"] == "float" and d["x"]["decimals"] == 3
    assert d["cc"]["kind"] == "categorical"
    assert draft_schema(text, null_tokens=["N"])["null_tokens"] == ["N"]
    assert {c["name"]: c["kind"] for c in draft_schema(text)["columns"]}["n"] == "categorical"  # "N" is a value


def test_public_draft_takes_values_and_says_so():
    d = draft_schema(DISTINCT, public=True)
    assert d["public"] is True
    cols = {c["name"]: c for c in d["columns"]}
    assert cols["code"]["categories"] == ["Wombat-771166", "ZX-Quokka-918273"] and cols["code"]["nullable"]
    assert cols["visits"]["bounds"] == [654321, 987654] and cols["visits"]["nullable"] is False
    assert cols["amount"]["bounds"] == [55555.125, 123456.789]
    d["columns"] = [dict(c, bins=8) if c["kind"] == "numeric" else c for c in d["columns"]]  # bins given, not "auto"
    for c in d["columns"]:
        if c["kind"] == "numeric":
            c["binning"] = "uniform"
    enc, rep = fit_encoder(DISTINCT, d, ledger=None, rng=None)  # a public draft with given bins needs no budget
    assert rep["steps"] == 0


# ----------------------------------------------------------------------------- the mechanism's checks come first


def nothing_spent(seen) -> bool:
    """No privacy charge, no generator seeded with SEED, no mechanism run (the run's ledger
    may exist: the mechanism's share of it is computed before the checks)."""
    return not (seen["charges"] or seen["rng"] or seen["runs"])


def many_cities(n: int = 3000) -> pd.DataFrame:
    """30 frequent cities (discovery keeps them all) and a price for quantile bins."""
    rng = np.random.default_rng(5)
    return pd.DataFrame({"city": rng.choice([f"c{i:02d}" for i in range(30)], n), "price": rng.uniform(10, 90, n),
                         "kind": rng.choice(["flat", "house"], n)})  # fmt: skip


CITY_SCHEMA = {
    "columns": [
        {"name": "city", "kind": "categorical", "categories": "discover"},
        {"name": "price", "kind": "numeric", "type": "float", "bounds": [0, 100], "binning": "quantile", "bins": 16},
        {"name": "kind", "kind": "categorical", "categories": ["flat", "house"]},
    ]
}


def test_sizes_bracket_what_discovery_gives():
    """domain_extremes: every fitted domain lies between the smallest and the largest, over
    many seeds and budgets (tiny budgets keep few categories and merge bins, large ones many)."""
    from margsynth.tabular.encoder import domain_extremes

    df = raw(400)
    schema = Schema.coerce(schema_with("rooms", bounds="discover", binning="quantile", bins=5))
    small, big = domain_extremes(schema, check_table_of(df, schema))
    assert small.to_dict() == {"city": 2, "price": 2, "rooms": 1, "kind": 2}
    assert big.to_dict() == {"city": 4, "price": 5, "rooms": 5, "kind": 2}
    seen = set()
    for seed, eps in itertools.product(range(6), (1e-3, 0.3, 30.0)):
        ledger = BudgetLedger.from_dp(eps, 1e-6)
        enc, _ = fit_encoder(df, schema, ledger=ledger, rng=np.random.default_rng(seed), share=0.9, delta=1e-7)
        got = enc.domain.to_dict()
        for a in got:
            assert small[a].size <= got[a] <= big[a].size, (a, got[a], seed, eps)
        seen.add(tuple(got.values()))
    assert len(seen) > 1  # discovery did vary


def check_table_of(df, schema):
    from margsynth.tabular import check_table

    return check_table(df, schema)


def test_memory_refusal_before_any_charge_or_draw(spy, monkeypatch):  # noqa: F811
    """A marginal too large for the memory limit is refused before discovery charges the
    ledger or draws: checked against the largest domain discovery can give."""
    from margsynth.mechanisms import base

    monkeypatch.setattr(base, "MEMORY_LIMIT_MB", 300 * 8 / 2**20)  # 300 cells; 31 x 16 do not fit
    with pytest.raises(ValueError, match=r"domain too large.*largest domain private discovery can give") as info:
        synthesize(many_cities(), CITY_SCHEMA, "mst", epsilon=1.0, delta=1e-6, seed=SEED)
    assert "\n" not in str(info.value) and "city=1..31" in str(info.value)
    assert nothing_spent(spy)
    monkeypatch.setattr(base, "MEMORY_LIMIT_MB", 600 * 8 / 2**20)  # 31 x 16 = 496 cells fit: the run goes ahead
    out, rep = synthesize(many_cities(), CITY_SCHEMA, "mst", epsilon=1.0, delta=1e-6, seed=SEED, iters=20)
    assert len(out) > 0 and spy["charges"] and spy["rng"]


@pytest.mark.parametrize(
    "mechanism,kw,match",
    [
        ("aim", {"rounds": 2}, r"rounds must be >= the number of attributes"),  # a check of validate, not of create
        ("rap", {"degree": 4}, r"degree 4 exceeds the number of attributes"),
        ("privpgd", {}, r"size 1.*smallest domain private discovery can give"),  # discovery may keep no city
    ],
)
def test_mechanism_refusals_before_any_charge_or_draw(spy, mechanism, kw, match):  # noqa: F811
    with pytest.raises(ValueError, match=match) as info:
        synthesize(many_cities(), CITY_SCHEMA, mechanism, epsilon=1.0, delta=1e-6, seed=SEED, **kw)
    assert "\n" not in str(info.value)
    assert nothing_spent(spy)


def test_max_categories_bounds_the_size_up_front():
    from margsynth.tabular.encoder import domain_extremes

    capped = json.loads(json.dumps(CITY_SCHEMA))
    capped["columns"][0]["max_categories"] = 5
    schema = Schema.coerce(capped)
    small, big = domain_extremes(schema, check_table_of(many_cities(), schema))
    assert (small["city"].size, big["city"].size) == (1, 6)
    enc, rep = fit_encoder(many_cities(), schema, ledger=BudgetLedger.from_dp(5.0, 1e-6),
                           rng=np.random.default_rng(0), share=0.5, delta=1e-7)  # fmt: skip
    assert len(enc.columns[0].categories) == 5 and rep["columns"]["city"]["steps"][0]["max_categories"] == 5
    assert Schema.coerce(capped).to_dict()["columns"][0]["max_categories"] == 5
    for change, match in [({"max_categories": 0}, "max_categories must be a positive integer"),
                          ({"max_categories": True}, "max_categories must be a positive integer"),
                          ({"categories": ["a"], "max_categories": 3}, 'max_categories is for categories "discover"')]:  # fmt: skip
        bad = json.loads(json.dumps(CITY_SCHEMA))
        bad["columns"][0].update(change)
        with pytest.raises(ValueError, match=match):
            Schema.coerce(bad)
