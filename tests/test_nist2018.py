"""The 2018 NIST challenge scoring (NIST-MST paper §3.3; NIST TN 2151; docs/notes/nist2018.md):
3-way TV, the high-order-conjunction test, income inequality, the designated-marginal stand-in."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from margsynth import Dataset, Domain
from margsynth.metrics.nist2018 import (
    conjunction_delta,
    conjunction_score,
    designated_marginal_score,
    gini_index,
    income_inequality_components,
    income_inequality_score,
    nist2018_scores,
    random_test_cases,
    random_triples,
    three_way_marginal_score,
)

from .conftest import needs_real

DOMAIN = Domain.from_sizes({"a": 2, "b": 3, "c": 4, "d": 2, "e": 5}, ordinal=["c"])
LN1000 = math.log(1000.0)


def _random(n, seed, domain=DOMAIN, p=None):
    rng = np.random.default_rng(seed)
    cols = [rng.choice(k, n, p=None if p is None else p(k)) for k in domain.shape]
    return Dataset(np.column_stack(cols), domain)


def _mask(k, values):
    m = np.zeros(k, dtype=bool)
    m[list(values)] = True
    return m


# ----------------------------------------------------------------------------- all criteria
def test_identical_data_scores_zero():
    ds = _random(2000, 0)
    shuffled = ds.take(np.random.default_rng(1).permutation(len(ds)))
    s = nist2018_scores(ds, shuffled, ("a", "b", "e"), seed=3)
    assert s == {
        "nist-3way": 0.0,
        "nist-conjunctions": 0.0,
        "nist-income-inequality": 0.0,
        "nist-target": 0.0,
        "nist-mean": 0.0,
    }


def test_scores_in_unit_interval_and_seeded():
    real = _random(3000, 5, p=lambda k: np.linspace(1, 2, k) / np.linspace(1, 2, k).sum())
    synth = _random(2000, 6)
    a = nist2018_scores(real, synth, ("a", "c", "e"), seed=1)
    b = nist2018_scores(real, synth, ("a", "c", "e"), seed=1)
    c = nist2018_scores(real, synth, ("a", "c", "e"), seed=np.random.default_rng(1))
    assert a == b == c
    assert all(0.0 <= v <= 1.0 for v in a.values())
    challenge = [a["nist-3way"], a["nist-conjunctions"], a["nist-income-inequality"]]
    assert a["nist-mean"] == pytest.approx(np.mean(challenge))
    assert conjunction_score(real, synth, 1) != conjunction_score(real, synth, 2)


def test_weighted_data():
    ds = _random(2000, 9)
    doubled = Dataset(ds.codes, DOMAIN, weights=np.full(len(ds), 2.0))
    assert three_way_marginal_score(ds, doubled, 0) == pytest.approx(0.0, abs=1e-15)
    assert conjunction_score(ds, doubled, 0) == pytest.approx(0.0, abs=1e-12)
    assert income_inequality_score(ds, doubled, ("a", "b", "e")) == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- criterion 1
def test_three_way_is_one_minus_mean_one_minus_tv_over_100_random_triples():
    """The challenge scores mean(1 − TV) over 100 random triples; we report 1 − that. Brute
    force with pandas on the same 100 triples (a 10-attribute domain has 120)."""
    dom = Domain.from_sizes({f"x{i}": 2 + i % 4 for i in range(10)})
    real, synth = _random(400, 11, dom), _random(300, 12, dom)
    triples = random_triples(dom.names, 100, 7)
    assert len(triples) == 100 == len(set(triples)) and math.comb(10, 3) == 120
    sims = []
    for c in triples:
        p = real.df.groupby(list(c)).size() / len(real)
        q = synth.df.groupby(list(c)).size() / len(synth)
        sims.append(1.0 - 0.5 * p.sub(q, fill_value=0).abs().sum())
    assert three_way_marginal_score(real, synth, seed=7) == pytest.approx(1.0 - np.mean(sims), rel=1e-12)


def test_three_way_all_triples_and_disjoint_support():
    real, synth = _random(300, 1), _random(200, 2)
    expected = []
    for c in itertools.combinations(DOMAIN.names, 3):
        p = real.df.groupby(list(c)).size() / len(real)
        q = synth.df.groupby(list(c)).size() / len(synth)
        expected.append(0.5 * p.sub(q, fill_value=0).abs().sum())
    assert three_way_marginal_score(real, synth, seed=5, n_triples=50) == pytest.approx(np.mean(expected), rel=1e-12)
    dom = Domain.from_sizes({"x": 2, "y": 2, "z": 2})
    zeros = Dataset(np.zeros((10, 3), dtype=int), dom)
    ones = Dataset(np.ones((7, 3), dtype=int), dom)
    assert three_way_marginal_score(zeros, ones, 0) == pytest.approx(1.0)
    assert designated_marginal_score(zeros, ones, ("x", "y", "z")) == pytest.approx(1.0)


def test_random_triples_distinct_seeded():
    names = [f"v{i}" for i in range(98)]
    t1 = random_triples(names, 100, 7)
    assert len(t1) == 100 and len(set(t1)) == 100
    assert all(len(set(t)) == 3 for t in t1)
    assert t1 == random_triples(names, 100, 7)
    assert t1 != random_triples(names, 100, 8)
    assert len(random_triples(["a", "b", "c", "d"], 100, 0)) == 4


# ----------------------------------------------------------------------------- criterion 2
def test_conjunction_delta_hand_computed():
    """Three records, two attributes, four fixed test cases; Δ and the score by hand.

    real  = (0,0) (0,1) (1,2)       synth = (0,0) (0,0) (1,1)
    case                      f_r   f_s   d = ln max(f_s, 1e-6) − ln f_r
    a ∈ {0}                   2/3   2/3   0
    b ∈ {0}                   1/3   2/3   ln 2
    a ∈ {1} ∧ b ∈ {1, 2}      1/3   1/3   0
    b ∈ {2}                   1/3   0     ln 1e-6 − ln(1/3) = ln 3e-6
    Δ = sqrt((ln² 2 + ln² 3e-6) / 4) = sqrt((0.480453 + 161.719502) / 4) = 6.367887
    """
    dom = Domain.from_sizes({"a": 2, "b": 3})
    real = Dataset(np.array([[0, 0], [0, 1], [1, 2]]), dom)
    synth = Dataset(np.array([[0, 0], [0, 0], [1, 1]]), dom)
    cases = [{0: _mask(2, [0])}, {1: _mask(3, [0])}, {0: _mask(2, [1]), 1: _mask(3, [1, 2])}, {1: _mask(3, [2])}]
    delta = conjunction_delta(real, synth, cases)
    assert delta == pytest.approx(6.367887, abs=1e-6)
    assert delta == pytest.approx(math.sqrt((math.log(2) ** 2 + math.log(3e-6) ** 2) / 4), rel=1e-12)
    assert min(1.0, delta / LN1000) == pytest.approx(0.921846, abs=1e-6)
    # without the missed case: Δ = ln 2 / sqrt 3 = 0.400189, score 0.057933 (challenge: 942 of 1000)
    assert conjunction_delta(real, synth, cases[:3]) == pytest.approx(0.400189, abs=1e-6)
    assert conjunction_delta(real, real, cases) == 0.0
    with pytest.raises(ValueError, match="no real record"):
        conjunction_delta(synth, real, [{1: _mask(3, [2])}])


def test_test_cases_contain_their_record_and_follow_the_rules():
    real = _random(500, 3)
    cases = random_test_cases(real, 400, 11, p_attribute=0.4)
    rows = []
    rng = np.random.default_rng(11)  # replay the draws to recover each case's record
    for case in cases:
        while True:
            row = int(rng.integers(len(real)))
            joined = np.flatnonzero(rng.random(len(DOMAIN)) < 0.4)
            if joined.size:
                break
        assert sorted(case) == joined.tolist()
        rows.append(row)
        for j in joined:
            k, v = DOMAIN.shape[j], int(real.codes[row, j])
            if DOMAIN.attributes[j].ordinal:  # numeric: |x − v| ≤ h, h ~ U(0, k − 1)
                h = rng.uniform(0.0, k - 1.0)
                assert case[j].tolist() == (np.abs(np.arange(k) - v) <= h).tolist()
            else:  # categorical: add uniform draws until one repeats
                seen = {v}
                while (u := int(rng.integers(k))) not in seen:
                    seen.add(u)
                assert case[j].tolist() == _mask(k, seen).tolist()
    assert all(case[j][real.codes[r, j]] for case, r in zip(cases, rows) for j in case)
    assert random_test_cases(real, 400, 11, p_attribute=0.4)[7].keys() == cases[7].keys()


def test_empty_cases_are_redrawn_and_attribute_rate():
    tiny = Domain.from_sizes({"x": 3})
    ds = Dataset(np.array([[0], [1], [2]]), tiny)
    assert all(len(c) == 1 for c in random_test_cases(ds, 200, 0))  # p = 0.1 on 1 attribute: redrawn
    wide = Domain.from_sizes({f"v{i}": 3 for i in range(98)})
    big = Dataset(np.zeros((5, 98), dtype=int), wide)
    sizes = [len(c) for c in random_test_cases(big, 300, 0)]
    assert 8.5 < np.mean(sizes) < 11.5  # ≈ 0.1 · 98, as on the census


def test_conjunction_score_brute_force():
    real, synth = _random(400, 3), _random(300, 4)
    cases = random_test_cases(real, 60, 5, p_attribute=0.4)

    def frac(ds, case):
        ok = np.ones(len(ds), bool)
        for j, mask in case.items():
            ok &= ds.df[DOMAIN.names[j]].isin(np.flatnonzero(mask)).to_numpy()
        return ok.mean()

    d = [math.log(max(frac(synth, c), 1e-6)) - math.log(frac(real, c)) for c in cases]
    expected = min(1.0, math.sqrt(np.mean(np.square(d))) / LN1000)
    assert conjunction_score(real, synth, 5, n_queries=60, p_attribute=0.4) == pytest.approx(expected, rel=1e-12)


def test_conjunction_disjoint_support_scores_one():
    one = Domain.from_sizes({"x": 2})
    z1, o1 = Dataset(np.zeros((5, 1), dtype=int), one), Dataset(np.ones((4, 1), dtype=int), one)
    # every case is "x = 0" or "x ∈ {0,1}"; the former is missed: Δ ≥ ln 1e6 / sqrt 2 > ln 1000
    assert conjunction_score(z1, o1, 0, n_queries=50, p_attribute=0.5) == 1.0


# ----------------------------------------------------------------------------- criterion 3
def test_gini_index_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k = int(rng.integers(2, 7))
        values = np.sort(rng.uniform(0, 10, k))
        counts = rng.integers(0, 5, k)
        counts[0] += 1
        x = np.repeat(values, counts)
        brute = np.abs(x[:, None] - x[None, :]).mean() / (2 * x.mean())
        assert gini_index(counts, values) == pytest.approx(brute, rel=1e-12)
    assert gini_index(np.array([3, 0]), np.array([0.0, 5.0])) == 0.0  # everyone at 0
    assert gini_index(np.array([0.75, 0.25]), np.array([0.0, 1.0])) == pytest.approx(0.75)


def test_income_inequality_hand_example():
    """Roles (sex, city, income), income codes 0, 1, 2 as incomes; min_group 1.

    city  real (sex 0 | sex 1)   synth (sex 0 | sex 1)   G_real  G_synth  gap_real  gap_synth
    0     2 2 | 0 1              2 | 0                   0.35    0.5      0.75      1
    1     1 1 | 0 2              2 0 | 1                 0.375   4/9      0         0
    2     2 0 | 1 1              1 1 | —                 0.375   0        0         — (ranked last)
    Gini part: (0.15 + 0.069444 + 0.375) / 3 = 0.198148
    ranks by gap: real (3, 1.5, 1.5), synth (2, 1, 3): footrule 3 of ⌊9/2⌋ = 4 → 0.75
    score = (0.198148 + 0.75) / 2 = 0.474074
    """
    dom = Domain.from_sizes({"sex": 2, "city": 3, "inc": 3})

    def ds(rows):
        return Dataset(pd.DataFrame(rows, columns=["sex", "city", "inc"]), dom)

    real = ds([(0, 0, 2), (0, 0, 2), (1, 0, 0), (1, 0, 1), (0, 1, 1), (0, 1, 1), (1, 1, 0), (1, 1, 2),
               (0, 2, 2), (0, 2, 0), (1, 2, 1), (1, 2, 1)])  # fmt: skip
    synth = ds([(0, 0, 2), (1, 0, 0), (0, 1, 2), (0, 1, 0), (1, 1, 1), (0, 2, 1), (0, 2, 1)])
    roles = ("sex", "city", "inc")
    comp = income_inequality_components(real, synth, roles, min_group=1)
    assert comp["cities"] == 3
    assert comp["gini"] == pytest.approx((0.15 + (4 / 9 - 0.375) + 0.375) / 3, rel=1e-12)
    assert comp["gini"] == pytest.approx(0.198148, abs=1e-6)
    assert comp["pay-gap-rank"] == pytest.approx(0.75, rel=1e-12)
    assert income_inequality_score(real, synth, roles, min_group=1) == pytest.approx(0.474074, abs=1e-6)
    # min_group 2: every real city has 2 records of each sex, so nothing changes; 3 leaves none
    assert income_inequality_components(real, synth, roles, min_group=2) == comp
    with pytest.raises(ValueError, match="min_group"):
        income_inequality_components(real, synth, roles, min_group=3)
    # a city the synthetic data leaves empty counts 1 in the Gini part
    no_city2 = ds([(0, 0, 2), (1, 0, 0), (0, 1, 2), (0, 1, 0), (1, 1, 1)])
    assert income_inequality_components(real, no_city2, roles, min_group=1)["gini"] == pytest.approx(
        (0.15 + (4 / 9 - 0.375) + 1.0) / 3
    )
    # explicit incomes: the scale matters for Gini, not for ranks
    assert income_inequality_components(real, real, roles, min_group=1, income_values=[0, 10, 50])["gini"] == 0.0


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


# ----------------------------------------------------------------------------- bad input
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
    with pytest.raises(ValueError, match="n_queries"):
        conjunction_score(ds, ds, 0, n_queries=-1)
    with pytest.raises(ValueError, match="numeric"):
        random_test_cases(ds, 3, 0, numeric="c")
    with pytest.raises(ValueError, match="repeat"):
        income_inequality_score(ds, ds, ("a", "a", "e"))
    with pytest.raises(ValueError, match="income_values"):
        income_inequality_score(ds, ds, ("a", "b", "e"), min_group=1, income_values=[1, 2])
    with pytest.raises(ValueError, match="min_group"):
        income_inequality_score(ds, ds, ("a", "b", "e"), min_group=0)
    small = Domain.from_sizes({"a": 2, "b": 2})
    two = Dataset(np.zeros((3, 2), dtype=int), small)
    with pytest.raises(ValueError, match="at least 3"):
        three_way_marginal_score(two, two, 0)


# ----------------------------------------------------------------------------- adult
@needs_real("adult-split")
def test_adult_constant_occupation_scores_far_from_zero():
    """A copy of adult-priv whose occupation is one constant value: on 3-way marginals it is
    still close, but the conjunction test catches the cases it misses entirely (≈ 0.5)."""
    from margsynth.data import load

    priv = load("adult-priv")
    codes = np.array(priv.codes)
    codes[:, priv.domain.index("occupation")] = 0
    const = Dataset(codes, priv.domain)
    for seed in range(3):
        assert conjunction_score(priv, const, seed) > 0.3
    assert conjunction_score(priv, priv, 0) == 0.0


@needs_real("adult-split")
def test_adult_public_vs_private_and_independent_baseline():
    """Public and private adult halves are samples of one population: scores are small, and
    an independent-marginals sample (correlations destroyed) scores worse."""
    from margsynth.data import load

    priv, pub = load("adult-priv"), load("adult-pub")
    rng = np.random.default_rng(0)
    indep = Dataset(np.column_stack([rng.permutation(priv.codes[:, j]) for j in range(len(priv.domain))]), priv.domain)
    roles = ("sex", "native-country", "income>50K")
    s_pub = nist2018_scores(priv, pub, roles, seed=0)
    s_ind = nist2018_scores(priv, indep, roles, seed=0)
    assert all(0 <= v <= 1 for v in s_pub.values())
    assert s_ind["nist-3way"] > s_pub["nist-3way"]
    assert s_ind["nist-conjunctions"] > s_pub["nist-conjunctions"]
    assert s_ind["nist-target"] > s_pub["nist-target"]
    # a bootstrap resample of the private data (as large as it) keeps the cities' pay-gap order
    boot = priv.take(rng.integers(len(priv), size=len(priv)))
    assert income_inequality_score(priv, boot, roles) < income_inequality_score(priv, indep, roles)
