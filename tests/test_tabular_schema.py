"""Bad schemas and bad cells: one-line ``ValueError`` naming the column (and the row and
value for a cell), raised before any noise — the ledger has no charge and the generator
has not moved. Draft schemas copy nothing out of the data unless told it is public."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from margsynth.privacy import BudgetLedger
from margsynth.tabular import Schema, draft_schema, fit_encoder, synthesize

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
    (schema_with("rooms", bins=0), r"column 'rooms': bins must be a positive integer, got 0"),
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
    ({"columns": DISCOVER_ALL["columns"][:3]}, r"column 'kind': in the data but not in the schema"),
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
                      ({"preprocessing_share": 1.0}, "preprocessing_share"), ({"n": 0}, "n must be"),
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
    d = draft_schema(DISTINCT)
    text = json.dumps(d)
    assert not any(s in text for s in SECRETS), text
    assert "public" not in d
    cols = {c["name"]: c for c in d["columns"]}
    assert cols["code"] == {"name": "code", "kind": "categorical", "categories": "discover", "nullable": True}
    assert cols["amount"]["bounds"] == "discover" and cols["amount"]["type"] == "float" and cols["amount"]["nullable"]
    assert cols["visits"]["type"] == "integer" and cols["visits"]["nullable"] is False
    assert cols["flag"]["kind"] == "categorical" and cols["flag"]["nullable"] is False
    Schema.from_dict(d)


def test_public_draft_takes_values_and_says_so():
    d = draft_schema(DISTINCT, public=True)
    assert d["public"] is True
    cols = {c["name"]: c for c in d["columns"]}
    assert cols["code"]["categories"] == ["Wombat-771166", "ZX-Quokka-918273"] and cols["code"]["nullable"]
    assert cols["visits"]["bounds"] == [654321, 987654] and cols["visits"]["nullable"] is False
    assert cols["amount"]["bounds"] == [55555.125, 123456.789]
    enc, rep = fit_encoder(DISTINCT, d, ledger=None, rng=None)  # a public draft needs no budget
    assert rep["steps"] == 0
