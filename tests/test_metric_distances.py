"""The one TV and the one range-query implementation (``metrics.marginal``,
``metrics.range_queries``) against brute-force definitions computed record by record,
and every TV / range-query metric of the package against them."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from margsynth import Dataset, Domain
from margsynth.domain import Attribute
from margsynth.metrics import evaluation, nist2018, suite
from margsynth.metrics.baltimore import range_query_error as baltimore_rq
from margsynth.metrics.marginal import marginal_tv, marginal_tvs, mean_marginal_tv, tv_distance
from margsynth.metrics.range_queries import RangeQuery, query_errors, range_query_error, range_workload


def _random_pair(seed: int, ordinal: bool = False) -> tuple[Dataset, Dataset]:
    rng = np.random.default_rng(seed)
    sizes = [int(s) for s in rng.integers(2, 6, size=5)]
    dom = Domain([Attribute(f"x{i}", s, ordinal=ordinal) for i, s in enumerate(sizes)])
    n1, n2 = int(rng.integers(30, 300)), int(rng.integers(30, 300))
    a = Dataset(np.stack([rng.integers(0, s, n1) for s in sizes], 1), dom)
    # skewed second dataset so that the distances are far from 0
    b = Dataset(np.stack([np.minimum(rng.geometric(0.5, n2) - 1, s - 1) for s in sizes], 1), dom)
    return a, b


def _brute_tv(a: Dataset, b: Dataset, attrs) -> float:
    """½ Σ_cells |P_a(cell) − P_b(cell)| from record-by-record counts (no marginal tables)."""
    idx = [a.domain.index(x) for x in attrs]
    ca = Counter(tuple(int(v) for v in row[idx]) for row in a.codes)
    cb = Counter(tuple(int(v) for v in row[idx]) for row in b.codes)
    return 0.5 * sum(abs(ca[c] / len(a) - cb[c] / len(b)) for c in set(ca) | set(cb))


@pytest.mark.parametrize("seed", range(4))
def test_tv_matches_brute_force_on_random_data(seed):
    a, b = _random_pair(seed)
    names = a.domain.names
    cliques = [c for k in (1, 2, 3) for c in itertools.combinations(names, k)]
    brute = np.array([_brute_tv(a, b, c) for c in cliques])
    assert np.allclose(marginal_tvs(a, b, cliques), brute, rtol=0, atol=1e-12)
    assert [marginal_tv(a, b, c) for c in cliques[:5]] == pytest.approx(brute[:5], abs=1e-12)
    assert mean_marginal_tv(a, b, cliques) == pytest.approx(brute.mean(), abs=1e-12)
    for k in (1, 2, 3):
        ks = [i for i, c in enumerate(cliques) if len(c) == k]
        assert suite.tv_kway(a, b, k) == pytest.approx(brute[ks].mean(), abs=1e-12)
    pairs = [i for i, c in enumerate(cliques) if len(c) == 2]
    assert evaluation.tv_2way(a, b) == pytest.approx(brute[pairs].mean(), abs=1e-12)
    assert evaluation.tv_2way(a, b, l1=True) == pytest.approx(2 * brute[pairs].mean(), abs=1e-12)
    triples = nist2018.random_triples(names, 4, 5)
    want = np.mean([_brute_tv(a, b, c) for c in triples])
    assert nist2018.three_way_marginal_score(a, b, 5, n_triples=4) == pytest.approx(want, abs=1e-12)


def test_tv_is_bit_identical_across_callers():
    """Same definition, same arithmetic: the metrics return exactly the kept function's numbers."""
    a, b = _random_pair(11)
    pairs = list(itertools.combinations(a.domain.names, 2))
    tvs = marginal_tvs(a, b, pairs)
    assert suite.tv_kway(a, b, 2) == float(np.mean(tvs))
    assert evaluation.tv_2way(a, b) == float(np.mean(tvs))
    for c, v in zip(pairs, tvs):
        assert tv_distance(a.marginal(c), b.marginal(c)) == v


def test_tv_distance_rowwise_and_checks():
    rng = np.random.default_rng(3)
    x, y = rng.integers(1, 9, size=(4, 5)), rng.integers(1, 9, size=(4, 5))
    rows = tv_distance(x, y, axis=1)
    assert rows.shape == (4,)
    assert rows == pytest.approx([tv_distance(x[i], y[i]) for i in range(4)], abs=1e-15)
    assert tv_distance(x, x) == 0.0
    assert tv_distance([1, 0], [0, 3]) == 1.0
    with pytest.raises(ValueError, match="shapes"):
        tv_distance(x, y[:, :4])
    with pytest.raises(ValueError, match="negative"):
        tv_distance(-x, y)
    with pytest.raises(ValueError, match="positive totals"):
        tv_distance(np.zeros(3), np.ones(3))


def test_tv_zero_on_identical_and_one_on_disjoint():
    dom = Domain.from_sizes({"a": 2, "b": 2})
    d1 = Dataset(np.array([[0, 0], [0, 1]]), dom)
    d2 = Dataset(np.array([[1, 0], [1, 1]]), dom)
    assert marginal_tvs(d1, d1, [("a",), ("a", "b")]).tolist() == [0.0, 0.0]
    assert marginal_tvs(d1, d2, [("a",)]).tolist() == [1.0]


def test_designated_score_matches_brute_force():
    a, b = _random_pair(5)
    g1, g2, target = a.domain.names[:3]
    na = Counter((int(r[0]), int(r[1])) for r in a.codes)
    nb = Counter((int(r[0]), int(r[1])) for r in b.codes)
    want = 0.0
    for grp, cnt in na.items():
        if nb[grp] == 0:
            tv = 1.0
        else:
            ca = Counter(int(r[2]) for r in a.codes if (r[0], r[1]) == grp)
            cb = Counter(int(r[2]) for r in b.codes if (r[0], r[1]) == grp)
            tv = 0.5 * sum(abs(ca[v] / cnt - cb[v] / nb[grp]) for v in set(ca) | set(cb))
        want += cnt / len(a) * tv
    assert nist2018.designated_marginal_score(a, b, (g1, g2, target)) == pytest.approx(want, abs=1e-12)


def _brute_range(ds: Dataset, q: RangeQuery) -> float:
    idx = [ds.domain.index(x) for x in q.attrs]
    ok = np.ones(len(ds), dtype=bool)
    for j, lo, hi in zip(idx, q.lo, q.hi):
        ok &= (ds.codes[:, j] >= lo) & (ds.codes[:, j] <= hi)
    return ok.sum() / len(ds)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_range_query_error_matches_brute_force(k):
    a, b = _random_pair(20 + k, ordinal=True)
    qs = range_workload(a.domain, 60, k, np.random.default_rng(k))
    want = np.mean([abs(_brute_range(a, q) - _brute_range(b, q)) for q in qs])
    assert range_query_error(a, b, qs) == pytest.approx(want, abs=1e-12)
    assert range_query_error(a, a, qs) == 0.0


def test_baltimore_range_queries_match_brute_force():
    """Table 1's RQ: the same seeded subset queries, answered cell by cell."""
    rng = np.random.default_rng(0)
    t = rng.integers(0, 20, size=(10, 6, 7)).astype(float)
    s = rng.integers(0, 20, size=(10, 6, 7)).astype(float)
    got = baltimore_rq(t, s, n_queries=25, seed=4, floor=10.0)
    qrng = np.random.default_rng(4)
    errs = []
    for _ in range(25):
        nb = qrng.choice(10, math.floor(0.3 * 10), replace=False)
        mo = qrng.choice(6, 4, replace=False)
        ty = qrng.choice(7, math.floor(0.3 * 7), replace=False)
        true = sum(t[i, j, m] for i in nb for j in mo for m in ty)
        syn = sum(s[i, j, m] for i in nb for j in mo for m in ty)
        errs.append(abs(syn - true) / max(true, 10.0))
    assert got == pytest.approx(np.mean(errs), abs=1e-12)


def test_query_errors_forms_and_checks():
    t = np.arange(12.0).reshape(3, 4)
    s = t + 1.0
    box = (slice(0, 2), np.array([1, 3]))
    assert query_errors(t, s, [box]).tolist() == [4.0]
    assert query_errors(t, s, [box], relative=True, floor=100.0).tolist() == [0.04]
    assert query_errors(t, s, [(slice(0, 3), slice(0, 4))], relative=True).tolist() == [12.0 / 66.0]
    with pytest.raises(ValueError, match="shape"):
        query_errors(t, s[:, :2], [box])
    with pytest.raises(ValueError, match="axes"):
        query_errors(t, s, [(slice(0, 1),)])
