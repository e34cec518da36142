"""Encode → decode of a raw table with an explicit schema (no noise) returns it up to
the binning of numeric columns: same columns in the same order, same dtypes, nulls in
the same cells, categories exact, numbers in the bin they came from; unknown codes are
refused; the encoder survives JSON; its MGD spec loads."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.metrics.aemc import load_specs
from margsynth.privacy import BudgetLedger
from margsynth.tabular import Encoder, Schema, fit_encoder

SCHEMA = {
    "columns": [
        {"name": "colour", "kind": "categorical", "categories": ["red", "blue", "green"], "nullable": True},
        {"name": "size", "kind": "numeric", "type": "integer", "bounds": [0, 9], "bins": 16},
        {"name": "weight", "kind": "numeric", "type": "float", "bounds": [0.0, 100.0], "bins": 10, "nullable": True},
        {"name": "grade", "kind": "ordinal", "categories": ["low", "mid", "high"]},
        {"name": "count", "kind": "numeric", "type": "integer", "bounds": [-5, 1000], "binning": "explicit",
         "cuts": [0, 1, 10, 100], "nullable": True},
        {"name": "city", "kind": "categorical", "categories": ["Oslo", "Lima"], "strict": False},
    ]
}  # fmt: skip


def table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    colour = rng.choice(np.array(["red", "blue", "green", None], dtype=object), n)
    weight = rng.uniform(0, 100, n)
    weight[rng.random(n) < 0.2] = np.nan
    count = rng.integers(-5, 1001, n).astype(np.float64)  # integers read as floats, as from a CSV with blanks
    count[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "colour": colour,
        "size": rng.integers(0, 10, n),
        "weight": weight,
        "grade": rng.choice(["low", "mid", "high"], n),
        "count": count,
        "city": rng.choice(["Oslo", "Lima", "Pune", "Kyiv"], n),
    })  # fmt: skip


@pytest.fixture(scope="module")
def fitted():
    df = table()
    enc, report = fit_encoder(df, SCHEMA, ledger=None, rng=None)
    return df, enc, report


def test_explicit_schema_spends_nothing(fitted):
    _, enc, report = fitted
    assert report["rho"] == 0.0 and report["steps"] == 0
    assert enc.domain.to_dict() == {"colour": 4, "size": 10, "weight": 11, "grade": 3, "count": 6, "city": 3}


def test_round_trip_up_to_binning(fitted):
    df, enc, _ = fitted
    data = enc.encode(df)
    assert isinstance(data, Dataset) and len(data) == len(df)
    out = enc.decode(data, np.random.default_rng(1))
    assert list(out.columns) == list(df.columns)
    # nulls in the same cells
    for c in df.columns:
        assert (out[c].isna().to_numpy() == df[c].isna().to_numpy()).all(), c
    # categories and ordinals exact; the other bucket decodes to its label
    pd.testing.assert_series_equal(out["colour"], df["colour"].where(df["colour"].notna(), np.nan), check_dtype=False)
    assert (out["grade"] == df["grade"]).all()
    other = ~df["city"].isin(["Oslo", "Lima"])
    assert (out["city"][~other] == df["city"][~other]).all() and (out["city"][other] == "other").all()
    # one bin per integer: exact, and still int64
    assert out["size"].dtype == np.int64 and (out["size"] == df["size"]).all()
    # binned numbers: in the bin they came from, within the bounds, with their type
    assert out["weight"].dtype == np.float64
    assert out["count"].dtype == "Int64"
    assert (enc.encode(out).codes == data.codes).all()
    w = out["weight"].dropna()
    assert ((w >= 0) & (w <= 100)).all()
    # decoding again (another draw) still lands in the same bins
    again = enc.decode(data, np.random.default_rng(2))
    assert (enc.encode(again).codes == data.codes).all()


def test_decode_is_reproducible(fitted):
    df, enc, _ = fitted
    data = enc.encode(df)
    a = enc.decode(data, np.random.default_rng(5))
    b = enc.decode(data, np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)


def test_integer_bins_draw_integers_uniformly():
    enc, _ = fit_encoder(pd.DataFrame({"x": [0, 5, 9]}), {"columns": [
        {"name": "x", "kind": "numeric", "type": "integer", "bounds": [0, 9], "bins": 2}]}, ledger=None, rng=None)  # fmt: skip
    codes = Dataset(pd.DataFrame({"x": np.zeros(20_000, dtype=int)}), enc.domain)
    out = enc.decode(codes, np.random.default_rng(0))["x"]
    assert out.dtype == np.int64 and set(out) == {0, 1, 2, 3, 4}
    freq = out.value_counts(normalize=True)
    assert np.allclose(freq.to_numpy(), 0.2, atol=0.015)


def test_unknown_codes_refused(fitted):
    _, enc, _ = fitted
    sizes = enc.domain.to_dict()
    bigger = Domain.from_sizes({k: v + 1 for k, v in sizes.items()})
    codes = np.array([[v for v in sizes.values()]])  # one past the last code of every column
    with pytest.raises(ValueError, match=r"dataset columns|unknown code"):
        enc.decode(Dataset(codes, bigger), np.random.default_rng(0))
    frame = pd.DataFrame(np.zeros((2, len(sizes)), dtype=int), columns=list(sizes))
    frame.loc[1, "colour"] = 4
    with pytest.raises(ValueError, match=r"column 'colour' row 1: unknown code 4; expected 0..3"):
        enc.decode(frame, np.random.default_rng(0))


def test_encoder_json_round_trip(fitted):
    df, enc, _ = fitted
    again = Encoder.from_dict(json.loads(json.dumps(enc.to_dict())))
    assert again.domain == enc.domain and again.to_dict() == enc.to_dict()
    assert (again.encode(df).codes == enc.encode(df).codes).all()
    a = enc.decode(enc.encode(df), np.random.default_rng(3))
    b = again.decode(again.encode(df), np.random.default_rng(3))
    pd.testing.assert_frame_equal(a, b)
    # the explicit schema an encoder amounts to encodes the same way, for free
    enc2, rep = fit_encoder(df, enc.schema(), ledger=None, rng=None)
    assert rep["steps"] == 0 and (enc2.encode(df).codes == enc.encode(df).codes).all()


def test_mgd_spec_is_a_valid_spec(fitted):
    _, enc, _ = fitted
    spec = enc.mgd_spec()
    specs = load_specs(json.loads(json.dumps(spec)))
    d = len(enc.names)
    assert len(specs) == d + d * (d - 1) // 2
    one = {s.names: s for s in specs if len(s.names) == 1}
    assert one[("colour",)].attributes[0].weight == float("inf")
    assert one[("size",)].attributes[0].weight == 1.0
    pair = next(s for s in specs if s.names == ("size", "weight"))
    assert [a.weight for a in pair.attributes] == [0.5, 0.5]


def test_schema_json_round_trip(tmp_path):
    s = Schema.from_dict(SCHEMA)
    p = tmp_path / "schema.json"
    s.save(p)
    assert Schema.load(p) == s and Schema.from_dict(s.to_dict()).to_dict() == s.to_dict()


# ----------------------------------------------------------------------------- types of categories
def test_category_labels_keep_their_type():
    """Ordinal and categorical columns of integers decode to int64 (Int64 when nullable),
    of numbers to float64, of booleans to bool; strings, and numbers beside an ``other``
    label, stay object. Encode -> decode returns the raw table exactly."""
    rng = np.random.default_rng(4)
    n = 200
    month = rng.integers(1, 13, n)
    stars = pd.array(rng.integers(1, 6, n), dtype="Int64")
    stars[rng.random(n) < 0.1] = pd.NA
    df = pd.DataFrame({
        "month": month, "stars": stars, "rate": rng.choice([0.5, 1.5, 2.25], n), "flag": rng.random(n) < 0.3,
        "code": rng.choice([10, 20, 30], n), "word": rng.choice(["x", "y"], n),
    })  # fmt: skip
    schema = {"columns": [
        {"name": "month", "kind": "ordinal", "categories": list(range(1, 13))},
        {"name": "stars", "kind": "ordinal", "categories": [1, 2, 3, 4, 5], "nullable": True},
        {"name": "rate", "kind": "categorical", "categories": [0.5, 1.5, 2.25]},
        {"name": "flag", "kind": "categorical", "categories": [False, True]},
        {"name": "code", "kind": "categorical", "categories": [10, 20], "strict": False},
        {"name": "word", "kind": "categorical", "categories": ["x", "y"]},
    ]}  # fmt: skip
    enc, _ = fit_encoder(df, schema, ledger=None, rng=None)
    again = Encoder.from_dict(json.loads(json.dumps(enc.to_dict())))
    for e in (enc, again):
        out = e.decode(e.encode(df), np.random.default_rng(0))
        assert out["month"].dtype == np.int64 and (out["month"] == df["month"]).all()
        pd.testing.assert_series_equal(out["stars"], df["stars"])
        assert out["rate"].dtype == np.float64 and (out["rate"] == df["rate"]).all()
        assert out["flag"].dtype == bool and (out["flag"] == df["flag"]).all()
        assert out["code"].dtype == object and set(out["code"]) <= {10, 20, "other"}
        assert out["word"].dtype == object and (out["word"] == df["word"]).all()


def test_discovered_float_bounds_print_and_decode_cleanly():
    """A non-negative float column with zeros: the discovered lower bound is 0 (no -9.3e-10
    in the labels or the encoder), and no decoded value is negative."""
    rng = np.random.default_rng(2)
    precip = np.where(rng.random(3000) < 0.7, 0.0, rng.exponential(0.1, 3000)).round(2)
    df = pd.DataFrame({"precip": precip})
    schema = {"columns": [{"name": "precip", "kind": "numeric", "type": "float", "bounds": "discover", "bins": 4}]}
    enc, _ = fit_encoder(df, schema, ledger=BudgetLedger.from_dp(5.0, 1e-6), rng=np.random.default_rng(0))
    col = enc.to_dict()["columns"][0]
    assert col["bounds"][0] == 0.0 and not any("e-" in lab for lab in enc.columns[0].labels())
    out = enc.decode(enc.encode(df), np.random.default_rng(1))
    assert (out["precip"] >= 0).all() and (out["precip"] <= col["bounds"][1]).all()


def test_to_text_keeps_the_frames_column_order():
    # a schema in another order than the table: the written table keeps the table's order
    df = pd.DataFrame({"b": ["x", "y", "N"], "a": ["1.50", "2.25", "3.00"]})
    schema = Schema.from_dict({"null_tokens": ["N"], "columns": [
        {"name": "a", "kind": "numeric", "type": "float", "bounds": [0, 4], "bins": 2, "decimals": 2},
        {"name": "b", "kind": "categorical", "categories": ["x", "y"], "nullable": True}]})  # fmt: skip
    enc, _ = fit_encoder(df, schema, ledger=None, rng=None)
    text = enc.to_text(enc.decode(enc.encode(df), np.random.default_rng(0))[["b", "a"]])
    assert list(text.columns) == ["b", "a"] and text["b"].tolist() == ["x", "y", "N"]
    assert all(len(v.split(".")[1]) == 2 for v in text["a"])
    with pytest.raises(ValueError, match=r"lacks the encoder's column\(s\) \['a'\]"):
        enc.to_text(text[["b"]])
