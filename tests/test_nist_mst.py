"""NIST-MST (NIST-MST/MST paper §5: Algorithms 2-5, 7-10)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms.generators import PGMGenerator
from margsynth.mechanisms.nist_mst import NISTMST, contest_weights, select_public, triple_error
from margsynth.mechanisms.nist_mst_census import IncwageValuehTransform, digits_class
from margsynth.privacy.accounting import eq51_sigma

RAW = 10_000_000


def census_like(n: int, seed: int) -> Dataset:
    """SEX, CITY, INCWAGE (raw), VALUEH (raw), AGE: a toy stand-in for the 1940 census."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    city = rng.integers(0, 6, n)
    age = rng.integers(0, 10, n)
    inc = np.where(
        rng.random(n) < 0.1, 9_999_998, 100 * rng.integers(0, 40, n) * (1 + sex) // 2 + 50 * rng.integers(0, 2, n)
    )
    inc = np.where(inc == 9_999_998, inc, np.minimum(inc, 5000))
    val = np.where(rng.random(n) < 0.05, 9_999_999, 5 * rng.integers(0, 3000, n))
    dom = Domain.from_sizes({"SEX": 2, "CITY": 6, "INCWAGE": RAW, "VALUEH": RAW, "AGE": 10})
    return Dataset(np.stack([sex, city, inc, val, age], axis=1), dom)


# ----------------------------------------------------------------------------- Algorithms 3, 9, 10
def test_digits_class_matches_algorithm_10():
    k = digits_class(np.arange(100))
    assert k[0] == 0
    assert set(np.flatnonzero(k == 1)) == {20, 40, 60, 80}
    assert set(np.flatnonzero(k == 2)) == {50}
    assert set(np.flatnonzero(k == 3)) == {25, 75}
    assert set(np.flatnonzero(k == 4)) == {10, 30, 70, 90}
    assert set(np.flatnonzero(k == 5)) == {5, 15, 35, 45, 55, 65, 85, 95}
    assert np.all(k[(np.arange(100) % 2 == 0) & (np.arange(100) % 10 != 0)] == 6)
    assert np.all(k[(np.arange(100) % 2 == 1) & (np.arange(100) % 5 != 0)] == 7)
    assert np.bincount(k).tolist() == [1, 4, 1, 2, 4, 8, 40, 40]


def test_transform_domain_and_values():
    t = IncwageValuehTransform()
    data = census_like(500, 0)
    out = t.forward(data)
    assert out.domain.names == ("SEX", "CITY", "INCWAGE_A", "INCWAGE_B", "VALUEH", "AGE")
    assert out.domain.to_dict()["INCWAGE_A"] == 52 and out.domain.to_dict()["INCWAGE_B"] == 8
    assert out.domain.to_dict()["VALUEH"] == 5003
    raw = Dataset(
        np.array(
            [
                [0, 0, 9_999_998, 9_999_999, 0],
                [1, 1, 4250, 9_999_998, 1],
                [1, 2, 1234, 25_000, 2],
                [0, 3, 7000, 30_001, 3],
            ]
        ),
        data.domain,
    )
    f = t.forward(raw)
    assert f.column("INCWAGE_A").tolist() == [51, 42, 12, 50]
    assert f.column("INCWAGE_B").tolist() == [0, 2, 6, 0]  # special; ..50 -> class 2; ..34 even -> 6; capped 5000 -> 0
    assert f.column("VALUEH").tolist() == [5002, 5001, 5000, 5000]


def test_transform_round_trips_exactly_on_its_image():
    t = IncwageValuehTransform()
    data = census_like(2000, 1)
    f = t.forward(data)
    rng = np.random.default_rng(0)
    back = t.reverse(f, rng, domain=data.domain)
    assert back.domain == data.domain
    # the census-like values are all representable (multiples of 50 / of 5, or special codes)
    assert back.equals(data)
    # and for arbitrary values: forward(reverse(forward(D))) == forward(D)
    rng2 = np.random.default_rng(5)
    arb = Dataset(
        np.stack(
            [
                rng2.integers(0, 2, 3000),
                rng2.integers(0, 6, 3000),
                rng2.integers(0, RAW, 3000) % 8000,
                rng2.integers(0, 40_000, 3000),
                rng2.integers(0, 10, 3000),
            ],
            axis=1,
        ),
        data.domain,
    )
    fa = t.forward(arb)
    assert t.forward(t.reverse(fa, rng2, domain=arb.domain)).equals(fa)


def test_reverse_digits_are_uniform_within_class():
    t = IncwageValuehTransform()
    dom = Domain.from_sizes({"INCWAGE_A": 52, "INCWAGE_B": 8, "VALUEH": 5003})
    n = 40_000
    f = Dataset(np.stack([np.full(n, 3), np.full(n, 5), np.zeros(n, int)], axis=1), dom)
    back = t.reverse(f, np.random.default_rng(2))
    digits = back.column("INCWAGE") - 300
    members = [5, 15, 35, 45, 55, 65, 85, 95]
    assert set(np.unique(digits)) == set(members)
    counts = np.array([(digits == m).sum() for m in members])
    assert np.all(np.abs(counts / n - 1 / 8) < 4 * math.sqrt((1 / 8) * (7 / 8) / n))


def test_transform_needs_raw_attributes():
    with pytest.raises(ValueError, match="VALUEH"):
        IncwageValuehTransform().transform_domain(Domain.from_sizes({"INCWAGE": RAW, "X": 2}))
    with pytest.raises(ValueError, match="raw domain"):
        IncwageValuehTransform().transform_domain(Domain.from_sizes({"INCWAGE": 100, "VALUEH": RAW}))


# ----------------------------------------------------------------------------- Algorithm 5
@pytest.fixture(scope="module")
def public():
    rng = np.random.default_rng(3)
    n = 4000
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.1)) % 3
    c = (a + b) % 3  # c depends on a and b jointly: large error of the (a,b)-(a,c) estimate
    d = rng.integers(0, 4, n)
    e = (d + (rng.random(n) < 0.2)) % 4
    dom = Domain.from_sizes({"a": 3, "b": 3, "c": 3, "d": 4, "e": 4})
    return Dataset(np.stack([a, b, c, d, e], axis=1), dom)


def test_contest_weights():
    cl = [("s", "c"), ("s", "i"), ("c", "i"), ("s", "c", "i"), ("x", "y")]
    fp, ft = cl[:3], [cl[3]]
    assert contest_weights(cl, 0.3, fp, ft) == [2, 2, 2, 8, 1]
    assert contest_weights(cl, 1.0, fp, ft) == [2, 2, 2, 6, 1]
    assert contest_weights(cl, 4.0, fp, ft) == [2, 2, 2, 4, 1]
    assert contest_weights(cl, 8.0, fp, ft) == [2, 2, 2, 4, 1]


def test_select_public_tree_forced_and_triples(public):
    forced = [("a", "d"), ("a", "e"), ("d", "e")]
    cliques, weights, info = select_public(public, 1.0, forced, [("a", "d", "e")])
    assert len(info["tree"]) == 4
    # the boosted forced pairs dominate the tree (two of the triangle's three edges fit)
    assert sum(frozenset(p) in {frozenset(f) for f in forced} for p in info["tree"]) == 2
    for f in [*forced, ("a", "d", "e")]:
        assert tuple(f) in cliques
    w = dict(zip(cliques, weights))
    assert w[("a", "d", "e")] == 6 and w[("a", "d")] == 2
    assert all(len(c) in (2, 3) for c in cliques)


def test_triple_threshold_and_error(public):
    e_dep = triple_error(public, "a", "b", "c")
    e_ind = triple_error(public, "d", "e", "b")
    assert e_dep > 0.1 > e_ind
    cl_lo, _, info_lo = select_public(public, 1.0, threshold=0.1)
    cl_hi, _, info_hi = select_public(public, 1.0, threshold=10.0)  # no triple passes
    assert info_hi["triples"] == [] and all(len(c) == 2 for c in cl_hi)
    assert len(info_lo["triples"]) >= 1


def test_size_cap_drops_big_marginals():
    rng = np.random.default_rng(0)
    dom = Domain.from_sizes({"x": 2000, "y": 600, "z": 3})
    x = rng.integers(0, 2000, 3000)
    data = Dataset(np.stack([x, x % 600, x % 3], axis=1), dom)
    cliques, _, info = select_public(data, 1.0)
    assert ("x", "y") in info["dropped"]  # 1.2e6 cells >= 1e6
    assert all(dom.size(c) < 10**6 for c in cliques)


# ----------------------------------------------------------------------------- the mechanism
def test_nist_mst_end_to_end_with_transforms_and_ledger():
    priv, pub = census_like(3000, 10), census_like(800, 11)
    mech = NISTMST(
        designated=("SEX", "CITY", "INCWAGE_A"),
        transforms=(IncwageValuehTransform(),),
        oneway_weights=(("INCWAGE_A", 2.0),),
        generator=PGMGenerator(iters=100),
    )
    res = mech.run(priv, 1.0, 1e-6, np.random.default_rng(0), public=pub)
    syn = res.synthetic
    assert syn.domain == priv.domain
    inc = syn.column("INCWAGE").astype(np.int64)
    assert np.all((inc <= 5099) | (inc == 9_999_998))
    sigma = eq51_sigma(1.0, 1e-6)
    assert res.extras["sigma"] == pytest.approx(sigma)
    assert [r["cost"] for r in res.ledger] == pytest.approx([1 / (2 * sigma**2)] * 2)
    assert res.epsilon == pytest.approx(1.0, rel=1e-9)
    assert ("SEX", "CITY", "INCWAGE_A") in res.extras["cliques"]
    w = dict(zip(res.extras["cliques"], res.extras["weights"]))
    assert w[("SEX", "CITY", "INCWAGE_A")] == 6


def test_public_domain_must_match_and_no_noise_drawn(public):
    other = Dataset(np.zeros((5, 5), int), Domain.from_sizes({"a": 3, "b": 3, "c": 3, "d": 4, "e": 5}))
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="public dataset's domain differs"):
        NISTMST(designated=()).run(public, 1.0, 1e-6, rng, public=other)
    with pytest.raises(ValueError, match="needs a public dataset"):
        NISTMST(designated=()).run(public, 1.0, 1e-6, rng)
    with pytest.raises(ValueError, match="unknown attribute"):
        NISTMST(designated=("a", "b", "zz")).run(public, 1.0, 1e-6, rng, public=public)
    with pytest.raises(ValueError, match="epsilon"):
        NISTMST(designated=()).run(public, -1.0, 1e-6, rng, public=public)
    assert rng.bit_generator.state == before


def test_encode_from_public_restricts_to_public_support(public):
    pub = public.take(np.flatnonzero(public.column("d") != 3))  # value d=3 never public
    res = NISTMST(designated=(), encode_from_public=True, generator=PGMGenerator(iters=50)).run(
        public, 8.0, 1e-6, np.random.default_rng(1), public=pub
    )
    assert res.synthetic.domain == public.domain


def test_noise_variance_matches_ledger(public):
    """Both rounds of Algorithm 1 draw noise of the sigma charged (Eq. 5.1)."""
    res = NISTMST(designated=(), generator=PGMGenerator(iters=20)).run(public, 0.3, 1e-6, np.random.default_rng(9), public=public)
    sigma = eq51_sigma(0.3, 1e-6)
    comp = res.extras["compression_map"]
    cdata = comp.compress(public)
    z = [(m.y - m.weight * public.marginal(m.clique, flatten=True)) / sigma for m in res.extras["log_oneway"]]
    z += [(m.y - m.weight * cdata.marginal(m.clique, flatten=True)) / sigma for m in res.extras["log_selected"]]
    z = np.concatenate(z)
    assert all(r["sigma"] == pytest.approx(sigma) for r in res.ledger)
    assert abs(z.var() - 1.0) < 5 * math.sqrt(2 / z.size)
