"""The generic 2018 NIST scoring (docs/notes/nist2018.md): 3-way TV, conjunctions, designated marginal."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from margsynth import Dataset, Domain
from margsynth.metrics.nist2018 import (
    conjunction_score,
    designated_marginal_score,
    nist2018_scores,
    random_conjunctions,
    random_triples,
    three_way_marginal_score,
)

from .conftest import needs_real

DOMAIN = Domain.from_sizes({"a": 2, "b": 3, "c": 4, "d": 2, "e": 5})


def _random(n, seed, domain=DOMAIN, p=None):
    rng = np.random.default_rng(seed)
    cols = [rng.choice(k, n, p=None if p is None else p(k)) for k in domain.shape]
    return Dataset(np.column_stack(cols), domain)


def test_identical_data_scores_zero():
    ds = _random(500, 0)
    shuffled = ds.take(np.random.default_rng(1).permutation(len(ds)))
    s = nist2018_scores(ds, shuffled, ("a", "b", "e"), seed=3)
    assert s == {"nist-3way": 0.0, "nist-conjunctions": 0.0, "nist-target": 0.0, "nist-mean": 0.0}


def test_disjoint_support_scores_one():
    dom = Domain.from_sizes({"x": 2, "y": 2, "z": 2})
    zeros = Dataset(np.zeros((10, 3), dtype=int), dom)
    ones = Dataset(np.ones((7, 3), dtype=int), dom)
    assert three_way_marginal_score(zeros, ones, 0) == pytest.approx(1.0)
    assert designated_marginal_score(zeros, ones, ("x", "y", "z")) == pytest.approx(1.0)
    # on one binary attribute every conjunction is "x = 0" or "x = 1": exactly one side satisfies it
    one = Domain.from_sizes({"x": 2})
    z1, o1 = Dataset(np.zeros((5, 1), dtype=int), one), Dataset(np.ones((4, 1), dtype=int), one)
    assert conjunction_score(z1, o1, 0, n_queries=50, p_attribute=0.5) == pytest.approx(1.0)


def test_three_way_matches_brute_force_when_all_triples_used():
    real, synth = _random(300, 1), _random(200, 2)
    n_all = math.comb(len(DOMAIN), 3)
    expected = []
    for c in itertools.combinations(DOMAIN.names, 3):
        p = real.df.groupby(list(c)).size() / len(real)
        q = synth.df.groupby(list(c)).size() / len(synth)
        expected.append(0.5 * p.sub(q, fill_value=0).abs().sum())
    got = three_way_marginal_score(real, synth, seed=5, n_triples=n_all + 10)
    assert got == pytest.approx(np.mean(expected), rel=1e-12)


def test_random_triples_distinct_seeded():
    names = [f"v{i}" for i in range(98)]
    t1 = random_triples(names, 100, 7)
    assert len(t1) == 100 and len(set(t1)) == 100
    assert all(len(set(t)) == 3 for t in t1)
    assert t1 == random_triples(names, 100, 7)
    assert t1 != random_triples(names, 100, 8)
    assert len(random_triples(["a", "b", "c", "d"], 100, 0)) == 4


def test_conjunctions_brute_force_and_shape():
    real, synth = _random(400, 3), _random(300, 4)
    queries = random_conjunctions(DOMAIN.shape, 40, 11, p_attribute=0.4)
    for q in queries:
        assert q  # never empty
        for j, mask in q.items():
            assert 1 <= mask.sum() < DOMAIN.shape[j]  # proper, non-empty subsets

    def frac(ds, q):
        df = ds.df
        ok = np.ones(len(df), bool)
        for j, mask in q.items():
            ok &= df[DOMAIN.names[j]].isin(np.flatnonzero(mask)).to_numpy()
        return ok.mean()

    expected = np.mean([abs(frac(real, q) - frac(synth, q)) for q in queries])
    assert conjunction_score(real, synth, 11, n_queries=40, p_attribute=0.4) == pytest.approx(expected, rel=1e-12)


def test_conjunction_attribute_rate():
    shape = [3] * 98
    qs = random_conjunctions(shape, 300, 0)
    mean_size = np.mean([len(q) for q in qs])
    assert 8.0 < mean_size < 11.5  # ≈ 0.1 · 98, conditioned on non-empty


def test_designated_marginal_hand_example():
    dom = Domain.from_sizes({"sex": 2, "city": 2, "inc": 3})
    real = Dataset(
        pd.DataFrame(
            {"sex": [0, 0, 0, 0, 1, 1, 1, 1], "city": [0, 0, 1, 1, 0, 0, 0, 0], "inc": [0, 1, 2, 2, 0, 0, 1, 1]}
        ),
        dom,
    )
    synth = Dataset(pd.DataFrame({"sex": [0, 0, 1, 1], "city": [0, 0, 0, 0], "inc": [0, 0, 0, 1]}), dom)
    # groups (sex, city): (0,0): real 2/8 {0:.5, 1:.5} synth {0:1} -> TV .5
    #                     (0,1): real 2/8, synth empty -> TV 1
    #                     (1,0): real 4/8 {0:.5,1:.5} synth {0:.5,1:.5} -> TV 0
    assert designated_marginal_score(real, synth, ("sex", "city", "inc")) == pytest.approx(0.25 * 0.5 + 0.25 * 1.0)


def test_scores_in_unit_interval_and_seeded():
    real = _random(1000, 5, p=lambda k: np.linspace(1, 2, k) / np.linspace(1, 2, k).sum())
    synth = _random(800, 6)
    a = nist2018_scores(real, synth, ("a", "c", "e"), seed=1)
    b = nist2018_scores(real, synth, ("a", "c", "e"), seed=1)
    c = nist2018_scores(real, synth, ("a", "c", "e"), seed=np.random.default_rng(1))
    assert a == b == c
    assert all(0.0 <= v <= 1.0 for v in a.values())
    assert a["nist-mean"] == pytest.approx(np.mean([a["nist-3way"], a["nist-conjunctions"], a["nist-target"]]))
    assert conjunction_score(real, synth, 1) != conjunction_score(real, synth, 2)


def test_weighted_data():
    ds = _random(200, 9)
    doubled = Dataset(ds.codes, DOMAIN, weights=np.full(len(ds), 2.0))
    assert three_way_marginal_score(ds, doubled, 0) == pytest.approx(0.0, abs=1e-15)
    assert conjunction_score(ds, doubled, 0) == pytest.approx(0.0, abs=1e-15)


def test_bad_input():
    ds = _random(50, 0)
    other = _random(50, 0, Domain.from_sizes({"a": 2, "b": 3, "c": 4, "d": 2, "f": 5}))
    with pytest.raises(ValueError, match="share a domain"):
        three_way_marginal_score(ds, other, 0)
    empty = ds.take(np.array([], dtype=int))
    with pytest.raises(ValueError, match="empty"):
        conjunction_score(ds, empty, 0)
    with pytest.raises(ValueError, match="seed"):
        three_way_marginal_score(ds, ds, None)
    with pytest.raises(ValueError, match="3 attributes"):
        designated_marginal_score(ds, ds, ("a", "b"))
    with pytest.raises(ValueError, match="unknown"):
        designated_marginal_score(ds, ds, ("a", "b", "zz"))
    with pytest.raises(ValueError, match="n_triples"):
        three_way_marginal_score(ds, ds, 0, n_triples=0)
    with pytest.raises(ValueError, match="p_attribute"):
        conjunction_score(ds, ds, 0, p_attribute=0.0)
    small = Domain.from_sizes({"a": 2, "b": 2})
    two = Dataset(np.zeros((3, 2), dtype=int), small)
    with pytest.raises(ValueError, match="at least 3"):
        three_way_marginal_score(two, two, 0)


@needs_real("adult-split")
def test_adult_public_vs_private_and_independent_baseline():
    """Public and private adult halves are samples of one population: scores are small, and
    an independent-marginals sample (correlations destroyed) scores worse."""
    from margsynth.data import load

    pub, priv = load("adult-pub"), load("adult-priv")
    dom = priv.domain
    rng = np.random.default_rng(0)
    indep = Dataset(np.column_stack([rng.permutation(priv.codes[:, j]) for j in range(len(dom))]), dom)
    target = ("sex", "race", "income>50K")
    s_pub = nist2018_scores(priv, pub, target, seed=0)
    s_ind = nist2018_scores(priv, indep, target, seed=0)
    assert all(0 <= v <= 1 for v in s_pub.values())
    assert s_ind["nist-3way"] > s_pub["nist-3way"]
    assert s_ind["nist-target"] > s_pub["nist-target"]
    assert s_ind["nist-mean"] > s_pub["nist-mean"]
