"""The §4.1 evaluation suite (PrivPGD paper): each metric on hand-made pairs."""

from __future__ import annotations

import numpy as np
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.metrics.evaluation import (
    EVALUATION_METRICS,
    counting_queries,
    covariance_error,
    default_target,
    downstream_error,
    embed_codes,
    fixed_split,
    sw_2way,
    threshold_queries,
    tv_2way,
)

ot = pytest.importorskip("ot")
DOM = Domain.from_sizes({"x": 4, "y": 3, "z": 2})


def _data(seed, n=600):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    y = np.minimum(x // 2 + rng.integers(0, 2, n), 2)
    z = (x >= 2).astype(int)  # a learnable target
    return Dataset(np.stack([x, y, z], axis=1), DOM)


REAL, OTHER = _data(0), _data(1)
SHIFTED = Dataset(np.stack([np.full(300, 3), np.zeros(300, int), np.zeros(300, int)], axis=1), DOM)


def test_registry_names_and_signature():
    assert set(EVALUATION_METRICS) == {
        "downstream",
        "covariance",
        "counting-queries",
        "threshold-queries",
        "sw-2way",
        "tv-2way",
    }
    for name, f in EVALUATION_METRICS.items():
        v = f(REAL, OTHER, rng=np.random.default_rng(0))
        assert np.isfinite(v) and v >= 0, name


@pytest.mark.parametrize("name", ["covariance", "counting-queries", "threshold-queries", "sw-2way", "tv-2way"])
def test_identical_data_score_zero_and_record_order_is_irrelevant(name):
    f = EVALUATION_METRICS[name]
    assert f(REAL, REAL, rng=np.random.default_rng(0)) == pytest.approx(0.0, abs=1e-12)
    perm = REAL.take(np.random.default_rng(3).permutation(len(REAL)))
    assert f(REAL, perm, rng=np.random.default_rng(0)) == pytest.approx(0.0, abs=1e-12)
    assert f(REAL, SHIFTED, rng=np.random.default_rng(0)) > f(REAL, OTHER, rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", ["downstream", "counting-queries", "threshold-queries", "sw-2way"])
def test_seeded_metrics_are_reproducible(name):
    f = EVALUATION_METRICS[name]
    a = f(REAL, OTHER, rng=np.random.default_rng(7))
    b = f(REAL, OTHER, rng=np.random.default_rng(7))
    assert a == b


def test_tv_2way_hand_computed():
    dom = Domain.from_sizes({"a": 2, "b": 2})
    real = Dataset(np.array([[0, 0], [1, 1]]), dom)
    synth = Dataset(np.array([[0, 0], [0, 0]]), dom)
    assert tv_2way(real, synth) == pytest.approx(0.5)
    assert tv_2way(real, synth, l1=True) == pytest.approx(1.0)


def test_sw_2way_agrees_with_pot_on_each_marginal():
    dom = Domain.from_sizes({"a": 3, "b": 5})
    real, synth = _pair(dom, 0), _pair(dom, 1)
    rng = np.random.default_rng(11)
    got = sw_2way(real, synth, rng=rng, n_projections=64)
    rng = np.random.default_rng(11)
    g = rng.standard_normal((64, 2))
    dirs = g / np.linalg.norm(g, axis=1, keepdims=True)
    er, es = embed_codes(real), embed_codes(synth)
    want = ot.sliced_wasserstein_distance(er, es, p=1, projections=dirs.T)
    assert got == pytest.approx(float(want), rel=1e-9)


def _pair(dom, seed):
    rng = np.random.default_rng(seed)
    return Dataset(np.stack([rng.integers(0, s, 200) for s in dom.shape], axis=1), dom)


def test_covariance_error_matches_definition():
    er, es = embed_codes(REAL), embed_codes(OTHER)
    cr, cs = np.cov(er, rowvar=False), np.cov(es, rowvar=False)
    assert covariance_error(REAL, OTHER) == pytest.approx(np.linalg.norm(cr - cs) / np.linalg.norm(cr))


def test_counting_queries_absolute_vs_relative_and_coverage_rejection():
    rel = counting_queries(REAL, OTHER, rng=np.random.default_rng(0), n_queries=50)
    ab = counting_queries(REAL, OTHER, rng=np.random.default_rng(0), n_queries=50, relative=False)
    assert 0 < ab < rel  # mean answers are < 1, so the relative error is larger
    with pytest.raises(ValueError, match="could not find"):
        counting_queries(REAL, OTHER, rng=np.random.default_rng(0), n_queries=5, coverage=(0.999, 1.0), max_tries=200)
    with pytest.raises(ValueError):
        counting_queries(REAL, OTHER, rng=np.random.default_rng(0), k=4)


def _counting_queries_record_by_record(real, synth, rng, n_queries=200, k=3, coverage=(0.05, 0.95)):
    """Eq. 9's counting queries with every record tested for every try (a second implementation)."""
    er, es = embed_codes(real), embed_codes(synth)
    wr = np.ones(len(real)) if real.weights is None else np.asarray(real.weights, float)
    wr, ws = wr / wr.sum(), np.ones(len(synth)) / len(synth)
    qr, qs = [], []
    while len(qr) < n_queries:
        cols = rng.choice(len(real.domain), size=k, replace=False)
        lb = rng.uniform(0.0, 1.0, size=k)
        ub = rng.uniform(lb, 1.0)
        ar = float(np.sum(wr, where=np.all((er[:, cols] >= lb) & (er[:, cols] <= ub), axis=1)))
        if coverage[0] <= ar <= coverage[1]:
            qr.append(ar)
            qs.append(float(np.sum(ws, where=np.all((es[:, cols] >= lb) & (es[:, cols] <= ub), axis=1))))
    qr, qs = np.array(qr), np.array(qs)
    return np.mean(np.abs(qr - qs)) / np.mean(np.abs(qr))


@pytest.mark.parametrize("sizes, weighted", [((4, 3, 2, 5), False), ((2,) * 6, True), ((40, 50, 3, 2), False)])
def test_counting_queries_coverage_from_marginals_equals_testing_every_record(sizes, weighted):
    """The coverage of a query box is read from the real data's weighted marginal of its columns
    (or, when that marginal has more cells than there are records, from the records): the same
    queries are accepted and the same error results as testing every record for every try."""
    rng = np.random.default_rng(7)
    dom = Domain.from_sizes({f"a{i}": s for i, s in enumerate(sizes)})
    n = 600  # (4, 3, 2, 5): every 3-way marginal is read from its table; (40, 50, 3, 2): mostly from the records
    codes = np.stack([rng.integers(0, s, n) for s in sizes], axis=1)
    codes[:, 1] = np.minimum(codes[:, 0], sizes[1] - 1)  # some dependence
    weights = rng.uniform(0.5, 2.0, n) if weighted else None
    real = Dataset(codes, dom, weights=weights)
    synth = Dataset(np.stack([rng.integers(0, s, 200) for s in sizes], axis=1), dom)
    for seed in range(3):
        got = counting_queries(real, synth, rng=np.random.default_rng(seed), n_queries=60)
        want = _counting_queries_record_by_record(real, synth, np.random.default_rng(seed), n_queries=60)
        assert got == pytest.approx(want, rel=1e-12)


def test_threshold_queries_absolute_is_small_for_similar_data():
    ab = threshold_queries(REAL, OTHER, rng=np.random.default_rng(0), relative=False, k=2)
    assert 0 < ab < 0.1


def test_downstream_learns_a_deterministic_target():
    train, test = fixed_split(REAL, "toy")
    err = downstream_error(REAL, train, rng=np.random.default_rng(0), test=test, target="z")
    assert err == 0.0
    # a constant-target synthetic set predicts the constant
    const = Dataset(np.stack([np.zeros(50, int), np.zeros(50, int), np.zeros(50, int)], axis=1), DOM)
    assert downstream_error(test, const, rng=np.random.default_rng(0), target="z") == pytest.approx(
        np.mean(test.column("z") != 0)
    )
    mse = downstream_error(test, train, rng=np.random.default_rng(0), target="x", task="regression")
    assert mse >= 0
    assert default_target(DOM) == "z"
    with pytest.raises(ValueError):
        downstream_error(test, train, rng=np.random.default_rng(0), task="ranking")


def test_fixed_split_is_fixed_and_80_20():
    tr1, te1 = fixed_split(REAL, "adult")
    tr2, te2 = fixed_split(REAL, "adult")
    assert tr1.equals(tr2) and te1.equals(te2)
    assert len(te1) == 120 and len(tr1) == 480
    tr3, _ = fixed_split(REAL, "nltcs")
    assert not tr3.equals(tr1)


def test_bad_inputs():
    other_dom = Dataset(np.zeros((5, 2), dtype=int), Domain.from_sizes({"x": 4, "y": 3}))
    for f in EVALUATION_METRICS.values():
        with pytest.raises(ValueError):
            f(REAL, other_dom, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        sw_2way(REAL, OTHER, rng=0)
    with pytest.raises(ValueError):
        fixed_split(REAL, "")
