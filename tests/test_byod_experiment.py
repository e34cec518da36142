"""margsynth.experiments.byod (notebook 09): the schema edits and the tables it shows, on a small raw table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("margsynth.tabular")

from margsynth.experiments import byod  # noqa: E402
from margsynth.tabular import draft_schema  # noqa: E402

from .conftest import needs_real  # noqa: E402


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 2000
    t = rng.normal(50, 15, n).round(1)
    return pd.DataFrame({"site": rng.choice(["A", "B", "C"], n), "month": rng.integers(1, 13, n), "temp": t,
                         "dewp": (t - rng.gamma(2, 4, n)).round(1)})  # fmt: skip


def test_edit_schema_applies_edits_and_refuses_unknown_columns(table):
    draft = draft_schema(table)
    edits = {"month": {"kind": "ordinal", "categories": list(range(1, 13))}, "temp": {"binning": "quantile", "bins": 4},
             "site": {"nullable": False}}  # fmt: skip
    schema = byod.edit_schema(draft, edits)
    assert schema["month"].kind == "ordinal" and schema["month"].categories == tuple(range(1, 13))
    assert schema["temp"].binning == "quantile" and schema["temp"].bins == 4 and schema["temp"].bounds == "discover"
    assert schema["site"].nullable is False and schema["site"].categories == "discover"
    with pytest.raises(ValueError, match="nope"):
        byod.edit_schema(draft, {"nope": {"nullable": True}})
    tab = byod.schema_table(schema)
    assert list(tab["column"]) == ["site", "month", "temp", "dewp"]
    assert tab.set_index("column").loc["temp", "discovered privately"] == "range, distribution"


def test_run_tables_and_checks(table):
    schema = byod.edit_schema(draft_schema(table), {"site": {"nullable": False}})
    synthetic, report = byod.run(table, schema, "mst", epsilon=1.0, delta=1e-9, seed=0, iters=100, select_iters=100)
    ledger = byod.ledger_table(report)
    assert ledger["share of rho"].sum() == pytest.approx(report["ledger"]["spent"] / report["ledger"]["total"])
    pre = byod.preprocessing_table(report)
    assert set(pre["column"]) == set(table.columns)
    bounds = byod.bounds_table(report, table)
    assert set(bounds["column"]) == {"month", "temp", "dewp"} and (bounds["share clamped"] >= 0).all()
    checks = byod.checks(table, synthetic, schema)
    assert checks.loc[checks["check"] == "Spearman(temp, dewp) gap", "value"].item() >= 0
    scores = byod.utility(table, synthetic, schema, mgd=False)
    assert 0 <= scores["tv-1way"] <= scores["tv-2way"] + 1e-12
    assert byod.utility(table, table, schema, mgd=True)["mgd"] == pytest.approx(0.0, abs=1e-9)


def test_acs_values_keeps_codes_as_text_and_numbers_as_numbers():
    text = pd.DataFrame({"AGEP": [str(i) for i in range(40)], "EDU": ["1", "N", "12", "3"] * 10,
                         "PUMA": ["25-00503"] * 40})  # fmt: skip
    v = byod.acs_values(text, ["AGEP", "EDU", "PUMA"])
    assert v["AGEP"].dtype.kind in "if" and v["AGEP"].max() == 39
    assert v["EDU"].isna().sum() == 10 and set(v["EDU"].dropna()) == {"1", "12", "3"}  # a code, N missing
    assert set(v["PUMA"]) == {"25-00503"}
    with pytest.raises(ValueError, match="features"):
        byod.acs_schema("draft", "ma2018", text, features=20)
    with pytest.raises(ValueError, match="kind"):
        byod.acs_schema("edited", "ma2018", text)


@needs_real("ma2018")
def test_acs_scores_score_both_schemas_beside_the_subsamples():
    """Notebook 09's last section: both schemas through the raw path, scored; the subsample
    baselines grow with the fraction; the examples are the written text (N as the null token)."""
    runs, base, examples = byod.acs_scores(epsilons=[10.0], seeds=[0])
    assert list(runs["schema"]) == ["dictionary", "draft"] and runs["score"].between(850, 1000).all()
    means = base.groupby("fraction")["score"].mean()
    assert list(means.index) == list(byod.ACS_FRACTIONS) and means.is_monotonic_increasing
    assert set(examples) == {"real", "dictionary", "draft"}
    assert list(examples["draft"].columns) == list(examples["real"].columns) and len(examples["real"].columns) == 21
    assert (examples["dictionary"]["PINCP"] == "N").any()
