import time

import numpy as np
import pandas as pd
import pytest

from margsynth import Dataset, Domain


@pytest.fixture
def domain():
    return Domain.from_sizes({"a": 3, "b": 2, "c": 4})


def brute_marginal(codes, domain, attrs):
    shape = tuple(domain[a].size for a in attrs)
    out = np.zeros(shape, dtype=np.int64)
    cols = [domain.index(a) for a in attrs]
    for row in codes:
        out[tuple(row[cols])] += 1
    return out


def test_marginals_match_brute_force(domain):
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, s, 500) for s in domain.shape], axis=1)
    ds = Dataset(codes, domain)
    for attrs in (["a"], ["c", "a"], ["b", "c", "a"], []):
        np.testing.assert_array_equal(ds.marginal(attrs), brute_marginal(codes, domain, attrs))
    w = rng.random(500)
    np.testing.assert_allclose(Dataset(codes, domain, weights=w).marginal(["a"]), np.bincount(codes[:, 0], w, 3))


def test_counts_roundtrip(domain):
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 5, domain.shape)
    ds = Dataset.from_counts(counts, domain)
    assert len(ds) == counts.sum()
    np.testing.assert_array_equal(ds.to_counts(), counts)
    with pytest.raises(ValueError, match="negative"):
        Dataset.from_counts(-np.ones(domain.shape), domain)
    with pytest.raises(ValueError, match="not an integer"):
        Dataset.from_counts(np.full(domain.shape, 0.5), domain)


def test_project_and_frame(domain):
    ds = Dataset(pd.DataFrame({"c": [0, 3], "a": [2, 1], "b": [1, 0]}), domain)  # column order is free
    assert ds.domain.names == ("a", "b", "c")
    assert ds.project(["c"]).marginal(["c"]).tolist() == [1, 0, 0, 1]
    assert ds.df.to_dict("list") == {"a": [2, 1], "b": [1, 0], "c": [0, 3]}


@pytest.mark.parametrize(
    "frame, match",
    [
        (pd.DataFrame({"a": [0, 3], "b": [0, 0], "c": [0, 0]}), r"column 'a' row 1: value 3 outside the domain 0..2"),
        (pd.DataFrame({"a": [0, -1], "b": [0, 0], "c": [0, 0]}), r"column 'a' row 1: value -1"),
        (pd.DataFrame({"a": [0, 1], "b": [0, np.nan], "c": [0, 0]}), r"column 'b' row 1: NaN"),
        (pd.DataFrame({"a": [0, 1], "b": [0, 0], "c": [0, 1.5]}), r"column 'c' row 1: non-integer value 1.5"),
        (pd.DataFrame({"a": [0, 1], "b": [0, "x"], "c": [0, 0]}), r"column 'b' row 1"),
        (pd.DataFrame({"a": [0], "b": [0]}), r"missing column\(s\) \['c'\]"),
        (pd.DataFrame({"a": [0], "b": [0], "c": [0], "d": [0]}), r"extra column\(s\) \['d'\]"),
    ],
)
def test_validation_names_column_row_value(domain, frame, match):
    with pytest.raises(ValueError, match=match):
        Dataset(frame, domain)


def test_marginal_speed_million_records():
    d = Domain.from_sizes({"x": 100, "y": 50, "z": 20})
    rng = np.random.default_rng(2)
    ds = Dataset._trusted(np.stack([rng.integers(0, s, 1_000_000) for s in d.shape], axis=1), d)
    ds.marginal(["x", "y", "z"])
    start = time.perf_counter()
    m = ds.marginal(["x", "y", "z"])
    assert m.sum() == 1_000_000
    # a loose functional bound (well under a second); the real speed check is benchmarks/bench_dataset.py
    assert time.perf_counter() - start < 1.0


def test_sample_and_split_are_seeded(domain):
    codes = np.zeros((100, 3), dtype=int)
    codes[:, 0] = np.arange(100) % 3
    ds = Dataset(codes, domain)
    a = ds.sample(10, np.random.default_rng(5))
    b = ds.sample(10, np.random.default_rng(5))
    assert a.equals(b)
    tr, te = ds.split(0.2, np.random.default_rng(1))
    assert len(tr) == 80 and len(te) == 20
    with pytest.raises(ValueError, match="Generator"):
        ds.sample(3, 42)
