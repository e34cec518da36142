"""Loaders: Baltimore count tables and discrete record datasets, good and bad input."""

import shutil

import numpy as np
import pandas as pd
import pytest

from margsynth.data import baltimore as balt
from margsynth.data import is_available, load, load_csv
from margsynth.domain import Domain

from .conftest import mirror, needs_real


@needs_real("baltimore911")
def test_baltimore_truth_and_all_scored_files_align():
    truth = balt.load_truth()
    assert truth.source == "real"
    assert truth.total == 1_455_608
    assert truth.counts.shape == (278, 12, 174)
    assert truth.domain.names == ("neighborhood", "month", "incident_type")
    assert truth.domain["month"].ordinal and not truth.domain["neighborhood"].ordinal
    assert truth.domain["neighborhood"].labels[0] == "Abell"
    names = balt.synthetic_names()
    assert len(names) == 14
    eps = {}
    for name in names:
        t = balt.load_synthetic(name)
        assert t.counts.shape == truth.counts.shape and t.counts.min() >= 0
        eps[name] = t.epsilon
    assert eps["lap_eps0.1"] == 0.1 and eps["0.1_sampling"] is None and eps["privatized-very-poor-quality"] == 0.5
    np.testing.assert_array_equal(truth.marginal(["month"]), truth.counts.sum(axis=(0, 2)))
    np.testing.assert_array_equal(truth.marginal(["incident_type", "neighborhood"]), truth.counts.sum(axis=1).T)


@needs_real("baltimore911")
def test_baltimore_records_roundtrip():
    truth = balt.load_truth()
    rec = balt.load_records()
    assert len(rec) == 1_455_608
    np.testing.assert_array_equal(rec.marginal(["neighborhood", "month", "incident_type"]), truth.counts)


@pytest.fixture
def scored_file(tmp_path):
    m = mirror()
    if m is None or not (m / "baltimore911/synthetic/lap_eps1.csv").is_file():
        pytest.skip("no Baltimore mirror")
    src = m / "baltimore911/synthetic/lap_eps1.csv"
    dst = tmp_path / "lap_eps1.csv"
    shutil.copyfile(src, dst)
    return dst


def _rewrite(path, frame):
    frame.to_csv(path, index=False)
    return path


def test_baltimore_good_user_file_loads(scored_file):
    t = balt.load_table(scored_file)
    assert t.epsilon == 1.0 and t.counts.shape == (278, 12, 174)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda f: f.drop(columns=["17"]), r"lap_eps1.csv: missing column\(s\) \['17'\]"),
        (lambda f: f.assign(extra=1), r"unexpected column\(s\) \['extra'\]"),
        (lambda f: f.iloc[np.r_[1, 0, 2 : len(f)]], r"row 0 has \(neighborhood, month\) = \(0, 2\) but the ground truth has \(0, 1\)"),
        (lambda f: pd.concat([f.iloc[:1], f.iloc[:-1]]), r"row 1 has \(neighborhood, month\) = \(0, 1\) but the ground truth has \(0, 2\)"),
        (lambda f: f.iloc[:-1], r"3335 rows, expected 3336"),
        (lambda f: f.assign(**{"5": f["5"].where(f.index != 7, -3)}), r"column '5' row 7: negative count -3"),
        (lambda f: f.assign(**{"5": f["5"].astype(float).where(f.index != 9, np.nan)}), r"column '5' row 9: value nan"),
        (lambda f: f.assign(**{"5": f["5"].astype(float).where(f.index != 9, 2.5)}), r"column '5' row 9: value 2.5"),
    ],
)
def test_baltimore_bad_files_refused(scored_file, mutate, match):
    frame = pd.read_csv(scored_file)
    _rewrite(scored_file, mutate(frame))
    with pytest.raises(ValueError, match=match):
        balt.load_table(scored_file)


def test_unknown_scored_file():
    with pytest.raises(ValueError, match="unknown Baltimore scored file"):
        balt.load_synthetic("nope")


@needs_real("adult")
@pytest.mark.parametrize(
    "name, n, d", [("adult", 48_842, 14), ("adult-pub", 3_238, 15), ("adult-priv", 32_384, 15)]
)
def test_adult_loaders(name, n, d):
    ds = load(name)
    assert len(ds) == n and len(ds.domain) == d
    assert ds.domain["age"].ordinal and not ds.domain["race"].ordinal


@needs_real("nltcs")
def test_benchmark_zip_loaders():
    assert len(load("nltcs")) == 21_574 and load("nltcs").domain.shape == (2,) * 16
    t = load("titanic")
    assert len(t) == 1_304 and t.domain.names[0] == "Survived"  # domain order, not file order


def test_discrete_csv_validation(tmp_path):
    dom = tmp_path / "d.json"
    dom.write_text('{"a": 2, "b": 3}')
    good = tmp_path / "good.csv"
    good.write_text("b,a\n2,1\n0,0\n")
    ds = load_csv(good, dom)
    assert ds.domain == Domain.from_sizes({"a": 2, "b": 3}) and ds.marginal(["b"]).tolist() == [1, 0, 1]
    cases = {
        "a,b\n0,3\n": r"column 'b' row 0: value 3 outside the domain 0..2",
        "a,b\n0,1\n1,\n": r"column 'b' row 1: NaN/missing",
        "a,b\n0,1\n0.5,1\n": r"column 'a' row 1: non-integer value 0.5",
        "a\n0\n": r"missing column\(s\) \['b'\]",
        "a,b,c\n0,0,0\n": r"extra column\(s\) \['c'\]",
    }
    for text, match in cases.items():
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_csv(bad, dom)
    with pytest.raises(ValueError, match="does not exist"):
        load_csv(tmp_path / "missing.csv", dom)


def test_unknown_record_dataset():
    with pytest.raises(ValueError, match="unknown record dataset"):
        load("nope")


def test_nist_excerpt_read_as_text_and_its_dictionary():
    from margsynth.data import NIST_EXCERPTS, load_data_dictionary, load_raw

    for name in NIST_EXCERPTS:
        if not is_available(name, mirror=mirror()):
            pytest.skip(f"real {name} data not available (no mirror or cache)")
        t = load_raw(name)
        assert t.shape[1] == 24 and not t.isna().to_numpy().any()  # no NaN: N stays a token
        assert (t["PINCP"] == "N").any() and (t["MSP"] == "N").any()
        dd = load_data_dictionary(name)
        assert set(t.columns) == set(dd) and "N" in dd["MSP"]["values"] and "min" in dd["AGEP"]["values"]
    with pytest.raises(ValueError, match="name 'adult': not a NIST excerpt"):
        load_data_dictionary("adult")


def test_read_raw_csv_and_data_dictionary_files(tmp_path):
    from margsynth.data import read_data_dictionary, read_raw_csv

    (tmp_path / "t.csv").write_text("a,b\nN,NA\n,1.50\nNone,nan\n")
    t = read_raw_csv(tmp_path / "t.csv")  # a cell is what it says: only the schema makes a null
    assert t.to_numpy().tolist() == [["N", "NA"], ["", "1.50"], ["None", "nan"]]
    for header, match in [("a,,b\n1,2,3\n", "column 2 of the header has no name"),
                          ("a,a\n1,2\n", "names column\\(s\\) \\['a'\\] more than once")]:  # fmt: skip
        (tmp_path / "h.csv").write_text(header)
        with pytest.raises(ValueError, match=match):
            read_raw_csv(tmp_path / "h.csv")
    good = tmp_path / "dd.json"
    good.write_text('{"AGEP": {"description": "age", "values": {"min": 0, "max": 99}}, "INDP": {"description": "x"}}')
    assert read_data_dictionary(good)["AGEP"]["values"]["max"] == 99
    for text, match in [
        ("[1]", "expected a non-empty JSON object"),
        ("{", "not valid JSON"),
        ('{"A": 3}', "feature 'A' is 3; expected an object"),
        ('{"A": {"values": [1]}}', "feature 'A' has values \\[1\\]; expected an object"),
        ('{"A": {"values": {"min": "0"}}}', "feature 'A' has min '0'; expected a number"),
    ]:
        good.write_text(text)
        with pytest.raises(ValueError, match=match):
            read_data_dictionary(good)
    with pytest.raises(ValueError, match="does not exist"):
        read_data_dictionary(tmp_path / "none.json")
