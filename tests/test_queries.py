"""The marginal-query workload shared by RAP, GEM and Private-GSD: exact and relaxed answers
against brute force, sensitivities by brute force over neighbouring datasets, and the
Gaussian / exponential-mechanism charges."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms.queries import (
    MarginalQueries,
    clique_scores,
    measure_queries,
    measure_total,
    query_scores,
    select_queries,
)
from margsynth.privacy import BudgetLedger
from margsynth.privacy.accounting import exponential_zcdp, gaussian_zcdp

DOM = Domain.from_sizes({"a": 2, "b": 3, "c": 2, "d": 3})


def _data(n=40, seed=0, dom=DOM):
    rng = np.random.default_rng(seed)
    return Dataset(np.stack([rng.integers(0, s, n) for s in dom.shape], axis=1), dom)


def _brute_answer(codes, dom, query):
    """Fraction of rows matching {attr: value}."""
    ok = np.ones(len(codes), bool)
    for a, v in query.items():
        ok &= codes[:, dom.index(a)] == v
    return ok.mean()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_answers_match_brute_force_and_ids_follow_marginal_order(k):
    data = _data()
    w = MarginalQueries.all_kway(DOM, k)
    assert w.n_queries == sum(DOM.size(c) for c in itertools.combinations(DOM.names, k))
    assert w.n_columns == sum(DOM.shape)
    ans = w.answers(data)
    for q in range(w.n_queries):
        assert ans[q] == pytest.approx(_brute_answer(data.codes, DOM, w.describe(q)))
    for j, c in enumerate(w.cliques):
        np.testing.assert_allclose(ans[w.clique_ids(j)], data.marginal(c, flatten=True) / len(data))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_relaxed_answers_of_one_hot_equal_exact_answers(k):
    data = _data(seed=1)
    w = MarginalQueries.all_kway(DOM, k)
    X = torch.as_tensor(w.one_hot(data), dtype=torch.float64)
    np.testing.assert_allclose(w.relaxed_answers(X).numpy(), w.answers(data), atol=1e-12)
    ids = np.array([w.n_queries - 1, 0, 3])
    np.testing.assert_allclose(w.relaxed_answers(X, ids).numpy(), w.answers(data)[ids], atol=1e-12)


def test_relaxed_answers_of_product_rows_are_mixture_probabilities():
    """Rows that are product distributions: the answer is the mixture's probability of the cell
    (brute force over the full domain), for a mixed 1-/2-/3-way workload (padded columns)."""
    rng = np.random.default_rng(2)
    cliques = [("a",), ("b", "d"), ("a", "c", "d"), ("c", "a")]
    w = MarginalQueries(DOM, cliques)
    n = 5
    blocks = [rng.dirichlet(np.ones(s), size=n) for s in DOM.shape]
    X = torch.as_tensor(np.concatenate(blocks, axis=1))
    got = w.relaxed_answers(X).numpy()
    for q in range(w.n_queries):
        want = np.mean([np.prod([blocks[DOM.index(a)][r, v] for a, v in w.describe(q).items()]) for r in range(n)])
        assert got[q] == pytest.approx(want, abs=1e-12)
    # the Gram path (all 2-way) agrees with the gather path on a subset
    w2 = MarginalQueries.all_kway(DOM, 2)
    full = w2.relaxed_answers(X).numpy()
    sub = np.arange(0, w2.n_queries, 3)
    np.testing.assert_allclose(w2.relaxed_answers(X, sub).numpy(), full[sub], atol=1e-12)


def test_relaxed_answers_are_differentiable():
    w = MarginalQueries.all_kway(DOM, 2)
    logits = torch.zeros(3, w.n_columns, dtype=torch.float64, requires_grad=True)
    probs = torch.cat([logits[:, w.offsets[i] : w.offsets[i + 1]].softmax(-1) for i in range(len(DOM))], 1)
    w.relaxed_answers(probs).sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()


def _max_count_change(w, ids):
    """max over records x of ||c_S(D ∪ {x}) − c_S(D)||_2 — add/remove-one, by brute force:
    the difference is the indicator vector of the queries x satisfies."""
    best = 0.0
    for x in itertools.product(*[range(s) for s in DOM.shape]):
        one = Dataset(np.array([x]), DOM)
        best = max(best, float(np.linalg.norm(w.counts(one)[ids])))
    return best


def test_l2_sensitivity_by_brute_force_over_neighbours():
    w = MarginalQueries.all_kway(DOM, 2)
    rng = np.random.default_rng(3)
    # unions of whole marginals: exactly sqrt(#marginals)
    for m in (1, 2, 4, len(w.cliques)):
        ids = w.ids_of(rng.choice(len(w.cliques), m, replace=False))
        assert w.l2_sensitivity(ids) == pytest.approx(math.sqrt(m))
        assert _max_count_change(w, ids) == pytest.approx(math.sqrt(m))
    # arbitrary query sets: never exceeded
    for _ in range(25):
        ids = rng.choice(w.n_queries, rng.integers(1, 12), replace=False)
        assert _max_count_change(w, ids) <= w.l2_sensitivity(ids) + 1e-12
    # and on real datasets: D vs D with one record removed (the neighbour the formula covers)
    data = _data(n=12, seed=4)
    ids = w.ids_of(range(len(w.cliques)))
    c = w.counts(data)
    for r in range(len(data)):
        nb = data.take(np.delete(np.arange(len(data)), r))
        assert np.linalg.norm(c - w.counts(nb)) == pytest.approx(w.l2_sensitivity(ids))
    # under replace-one the normalised answers move by at most 1/n per query (the papers' 1/n)
    n = len(data)
    for r in range(n):
        for x in itertools.product(*[range(s) for s in DOM.shape]):
            codes = data.codes.copy()
            codes[r] = x
            diff = np.abs(w.answers(Dataset(codes, DOM)) - w.answers(data))
            assert diff.max() <= 1 / n + 1e-12


def test_selection_scores_have_sensitivity_one():
    w = MarginalQueries.all_kway(DOM, 2)
    data = _data(n=15, seed=5)
    rng = np.random.default_rng(6)
    syn = w.answers(_data(n=7, seed=7))
    n_hat = 14.3
    s_q, s_c = query_scores(w.counts(data), syn, n_hat), clique_scores(w, w.counts(data), syn, n_hat)
    for x in itertools.product(*[range(s) for s in DOM.shape]):
        bigger = Dataset(np.vstack([data.codes, [x]]), DOM)
        assert np.abs(query_scores(w.counts(bigger), syn, n_hat) - s_q).max() <= 1 + 1e-12
        assert np.abs(clique_scores(w, w.counts(bigger), syn, n_hat) - s_c).max() <= 1 + 1e-12
    assert rng is not None


def test_measure_queries_charges_gaussian_before_the_draw():
    w = MarginalQueries.all_kway(DOM, 2)
    data = _data()
    counts = w.counts(data)
    ledger = BudgetLedger(1.0)
    rng = np.random.default_rng(0)
    ids = np.concatenate([w.clique_ids(0), w.clique_ids(2)[:2]])
    m = measure_queries(w, counts, ids, 0.25, rng, ledger=ledger, label="m")
    assert m.sensitivity == pytest.approx(math.sqrt(2))
    assert gaussian_zcdp(m.sigma, m.sensitivity) == pytest.approx(0.25)
    assert ledger.spent == pytest.approx(0.25) and len(ledger.entries) == 1
    np.testing.assert_allclose(m.y, counts[ids] + np.random.default_rng(0).normal(0, m.sigma, ids.size))
    # an unaffordable charge leaves the generator untouched
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="overspend"):
        measure_queries(w, counts, ids, 0.8, rng, ledger=ledger)
    assert rng.bit_generator.state == state
    with pytest.raises(ValueError, match="repeat"):
        measure_queries(w, counts, np.array([1, 1]), 0.1, rng, ledger=ledger)
    assert rng.bit_generator.state == state
    n_hat = measure_total(data, 0.5, rng, ledger=ledger)
    assert ledger.spent == pytest.approx(0.75) and abs(n_hat - len(data)) < 10


def test_select_queries_charges_each_pick_and_finds_the_worst():
    scores = np.zeros(50)
    scores[[7, 19, 33]] = 1e6
    ledger = BudgetLedger(1.0)
    picked = select_queries(scores, 3, 0.3, np.random.default_rng(0), ledger=ledger, exclude=[0, 1])
    assert sorted(picked) == [7, 19, 33]
    assert len(ledger.entries) == 3
    assert all(e.cost == pytest.approx(exponential_zcdp(math.sqrt(8 * 0.1))) for e in ledger.entries)
    assert ledger.spent == pytest.approx(0.3)
    # exclusion is honoured and picks are distinct
    p2 = select_queries(scores, 4, 0.1, np.random.default_rng(1), ledger=None, exclude=[7, 19])
    assert 7 not in p2 and 19 not in p2 and len(set(p2)) == 4
    # fewer candidates than k: only the picks made are charged
    led = BudgetLedger(1.0)
    p3 = select_queries(np.ones(3), 5, 0.5, np.random.default_rng(2), ledger=led, exclude=[0])
    assert sorted(p3) == [1, 2] and len(led.entries) == 2 and led.spent == pytest.approx(0.2)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="k must"):
        MarginalQueries.all_kway(DOM, 5)
    with pytest.raises(ValueError, match="unknown"):
        MarginalQueries(DOM, [("a", "zz")])
    with pytest.raises(ValueError, match="empty"):
        MarginalQueries(DOM, [])
    w = MarginalQueries.all_kway(DOM, 2)
    with pytest.raises(ValueError, match="domain"):
        w.counts(_data(dom=Domain.from_sizes({"a": 2, "b": 3, "c": 2, "e": 3})))
    with pytest.raises(ValueError, match="X must"):
        w.relaxed_answers(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="k must"):
        select_queries(np.ones(3), 0, 0.1, np.random.default_rng(0), ledger=None)


def test_block_softmax_and_sample_records():
    w = MarginalQueries.all_kway(DOM, 2)
    logits = torch.randn(4, w.n_columns, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    P = w.block_softmax(logits)
    for i in range(len(DOM)):
        blk = P[:, w.offsets[i] : w.offsets[i + 1]]
        torch.testing.assert_close(blk, logits[:, w.offsets[i] : w.offsets[i + 1]].softmax(-1))
    # one-hot rows: sampling with replacement reproduces the rows' distribution exactly in the limit
    data = _data(n=6, seed=8)
    onehot = w.one_hot(data, dtype=np.float64)
    s = w.sample_records(onehot, 3000, np.random.default_rng(0))
    rows = {tuple(r) for r in data.codes.tolist()}
    assert {tuple(r) for r in s.codes.tolist()} <= rows
    # a mixture of product distributions: empirical answers approach the relaxed answers
    probs = P.numpy()
    s = w.sample_records(probs, 40_000, np.random.default_rng(1))
    np.testing.assert_allclose(w.answers(s), w.relaxed_answers(P).numpy(), atol=0.015)
    # same seed, same records
    a = w.sample_records(probs, 50, np.random.default_rng(5))
    b = w.sample_records(probs, 50, np.random.default_rng(5))
    assert a.equals(b)
