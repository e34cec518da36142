"""The adaptive-granularity mechanism (McKenna, NIST Temporal Map Challenge Sprint 3
write-up; docs/notes/adaptive_grid.md): query matrices, GDP accounting, sensitivity by brute force, validation, runs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from margsynth import Dataset, Domain
from margsynth.experiments.adagrid import brute_force_sensitivity
from margsynth.mechanisms.adagrid import (
    AdaptiveGrid,
    adaptive_query,
    clipping_weights,
    column_norms,
    default_marginals,
    downward_closure,
    identity_grid,
    large_cells,
    measure_rounds,
    window_marginals,
)
from margsynth.mechanisms.generators import PGMGenerator
from margsynth.privacy import BudgetLedger, compose_gdp, gdp_delta, gdp_epsilon, gdp_mu, gdp_mu_for_dp, gdp_sigma

from .conftest import needs_real

# ----------------------------------------------------------------------------- the paper's 4 x 3 example
# Attribute 1 takes W, X, Y, Z; attribute 2 takes 1, 2, 3. One-way counts (the paper's table):
# W 10000, X 300, Y 5000, Z 6000; 1 15000, 2 6100, 3 200. "X" and "3" are small.
ONE_WAY_1 = np.array([10000, 300, 5000, 6000], dtype=float)
ONE_WAY_2 = np.array([15000, 6100, 200], dtype=float)


def paper_example():
    """Parents measured large: attribute 1 in {W, Y, Z}, attribute 2 in {1, 2} (threshold 1000)."""
    large_1 = ONE_WAY_1 > 1000
    large_2 = ONE_WAY_2 > 1000
    # parent_large[j] is the parent that drops attribute j: j=0 drops attribute 1 -> attribute 2's cells
    return adaptive_query((4, 3), [large_2, large_1], ("a1", "a2"))


def test_paper_example_six_identity_rows_seven_aggregate_rows():
    q = paper_example()
    assert q.n_identity == 6
    assert q.n_aggregate == 7
    assert q.matrix.shape == (13, 12)
    # the diagonal block of the paper: 1-based positions 1, 2, 7, 8, 10, 11 ({W,Y,Z} x {1,2})
    assert np.flatnonzero(q.identity).tolist() == [0, 1, 6, 7, 9, 10]
    dense = q.matrix.toarray()
    assert np.array_equal(dense[:6][:, [0, 1, 6, 7, 9, 10]], np.eye(6))
    # aggregate rows re-measure the one-way marginals over the cells not measured finely
    agg = dense[6:] * math.sqrt(2)
    finely = np.zeros((4, 3), dtype=bool)
    finely[np.ix_([0, 2, 3], [0, 1])] = True
    rows = set()
    for a in range(4):  # attribute-1 groups: W (W3), X (X1 X2 X3), Y (Y3), Z (Z3)
        rows.add(tuple((np.arange(12).reshape(4, 3)[a][~finely[a]]).tolist()))
    for b in range(3):  # attribute-2 groups: 1 (X1), 2 (X2), 3 (W3 X3 Y3 Z3)
        rows.add(tuple((np.arange(12).reshape(4, 3)[:, b][~finely[:, b]]).tolist()))
    got = {tuple(np.flatnonzero(r).tolist()) for r in agg}
    assert got == rows and len(rows) == 7
    assert np.allclose(agg[agg != 0], 1.0)  # weight 1/sqrt(2) each


def test_paper_example_column_norms_all_one():
    q = paper_example()
    assert np.allclose(column_norms(q.matrix), 1.0, atol=1e-15, rtol=0)
    assert np.allclose(column_norms(q.matrix.toarray()), 1.0, atol=1e-15, rtol=0)


@pytest.mark.parametrize("shape", [(2,), (3, 4), (2, 3, 4), (3, 2, 2, 3)])
@pytest.mark.parametrize("fill", [0.0, 0.3, 0.7, 1.0])
def test_column_norms_exactly_one_for_any_parents(shape, fill):
    rng = np.random.default_rng(hash((shape, fill)) % 2**32)
    k = len(shape)
    parents = None if k == 1 else [rng.random(shape[:j] + shape[j + 1 :]) < fill for j in range(k)]
    q = adaptive_query(shape, parents)
    norms = column_norms(q.matrix)
    assert np.all(np.abs(norms - 1.0) <= 1e-12)
    n = int(np.prod(shape))
    # k aggregate rows per non-identity cell, one per parent grouping
    nnz_per_col = np.diff(q.matrix.tocsc().indptr)
    assert np.all(nnz_per_col[q.identity] == 1)
    assert np.all(nnz_per_col[~q.identity] == (k if k > 1 else 1))
    assert q.n_identity + (n - q.n_identity) * 0 == q.identity.sum()
    if fill == 1.0 or k == 1:
        assert q.n_aggregate == 0 and q.n_identity == n
    if fill == 0.0 and k > 1:
        assert q.n_identity == 0
        assert q.n_aggregate == sum(n // s for s in shape)  # every parent cell of every grouping


def test_large_cells_uses_noisy_identity_answers_and_threshold():
    q = paper_example()
    y = np.r_[np.array([5, 0.5, 3, -1, 2, 10.0]), np.zeros(7)]
    large = large_cells(q, y, sigma=2.0, threshold=1.0)
    assert np.flatnonzero(large).tolist() == [0, 6, 10]  # answers 5, 3, 10 exceed 2; aggregates never large


# ----------------------------------------------------------------------------- GDP accounting
@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 2.5e-5, 1e-3])
def test_gdp_round_trip_mu_to_dp_to_mu(mu, delta):
    eps = gdp_epsilon(mu, delta)
    if eps == 0.0:
        pytest.skip("delta above delta(0) for this mu")
    assert gdp_delta(mu, eps) == pytest.approx(delta, rel=1e-8)
    assert gdp_mu_for_dp(eps, delta) == pytest.approx(mu, rel=1e-8)


def test_gdp_delta_formula_against_scipy():
    from scipy.stats import norm

    for mu, eps in [(0.5, 0.3), (1.0, 1.0), (3.0, 5.0)]:
        ref = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        assert gdp_delta(mu, eps) == pytest.approx(ref, rel=1e-10)


def test_paper_noise_scales_follow_the_formula_not_the_quoted_numbers():
    # docs/notes/adaptive_grid.md: 66 measurements, delta 2.5e-5: C=150 at eps=1 gives ~4290 (paper says 5739.36),
    # C=200 at eps=10 gives ~784 (paper says 895).
    s1 = gdp_sigma(1.0, 2.5e-5, sensitivity=150, compositions=66)
    s10 = gdp_sigma(10.0, 2.5e-5, sensitivity=200, compositions=66)
    assert s1 == pytest.approx(4290, rel=2e-3)
    assert s10 == pytest.approx(784, rel=2e-3)
    # and the composition is exactly (1, 2.5e-5)-DP
    mu = compose_gdp([gdp_mu(s1, 150)] * 66)
    assert gdp_delta(mu, 1.0) == pytest.approx(2.5e-5, rel=1e-6)


def test_mechanism_spends_what_it_reports(small_data):
    r = AdaptiveGrid(marginals=(("a", "b", "c"),), generator=PGMGenerator(iters=20)).run(small_data, 0.7, 1e-6, np.random.default_rng(0))
    assert r.delta == 1e-6
    assert r.epsilon == pytest.approx(0.7, rel=1e-9) and r.epsilon <= 0.7 * (1 + 1e-9)
    mus = [e["cost"] for e in r.ledger]
    assert len(mus) == len(r.extras["marginals"]) == 7  # closure of one 3-set
    assert compose_gdp(mus) == pytest.approx(r.extras["mu"], rel=1e-12)
    assert gdp_epsilon(compose_gdp(mus), 1e-6) == pytest.approx(r.epsilon, rel=1e-9)
    assert all(
        e["sigma"] == pytest.approx(r.extras["sigma"]) and e["sensitivity"] == pytest.approx(1.0) for e in r.ledger
    )


# ----------------------------------------------------------------------------- clipping and sensitivity
def test_clipping_weights():
    w = clipping_weights(["a", "a", "a", "b", "c", "c"], 2.0)
    assert np.allclose(w, [2 / 3, 2 / 3, 2 / 3, 1, 1, 1])
    assert np.allclose(clipping_weights(None, 0.5, n=3), 0.5)
    assert np.allclose(clipping_weights(None, 150, n=3), 1.0)


@pytest.fixture
def small_data():
    rng = np.random.default_rng(3)
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    codes = np.stack([rng.choice(s, 400, p=np.r_[0.7, np.full(s - 1, 0.3 / (s - 1))]) for s in dom.shape], axis=1)
    return Dataset(codes, dom)


def _queries_for(data, person_ids, clip, eps=0.3):
    r = AdaptiveGrid(marginals=(("a", "b", "c"), ("c", "d")), clip=clip, generator=PGMGenerator(iters=5)).run(
        data, eps, 1e-6, np.random.default_rng(1), person_ids=person_ids
    )
    return r


def test_sensitivity_brute_force_plain_case(small_data):
    r = _queries_for(small_data, None, 1.0)
    assert sum(row["aggregate_rows"] for row in r.extras["rounds"]) > 0  # non-identity queries exercised
    res = brute_force_sensitivity(small_data, r.extras["queries"], max_neighbours=None)
    for row in res:
        assert row["max_change"] <= row["bound"] * (1 + 1e-12)
        assert row["max_change"] == pytest.approx(1.0)  # attained: norms are exactly 1
    assert r.extras["sensitivity"]["l2_sensitivity"] == pytest.approx(1.0)


@pytest.mark.parametrize("clip", [0.5, 1.0, 2.0, 3.5])
def test_sensitivity_brute_force_with_clipping_weights(small_data, clip):
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 60, len(small_data))  # persons with up to ~15 records
    r = _queries_for(small_data, ids, clip)
    assert r.extras["contribution_bound"] == clip
    res = brute_force_sensitivity(small_data, r.extras["queries"], person_ids=ids, clip=clip, max_neighbours=None)
    for row in res:
        assert row["bound"] == pytest.approx(clip)
        assert row["max_change"] <= row["bound"] * (1 + 1e-12), row
    assert max(row["ratio"] for row in res) == pytest.approx(1.0)  # the bound C is attained


def test_brute_force_literal_neighbours_tiny():
    """Fully literal: build every add/remove-one-record neighbour as a Dataset, recompute the
    clipping weights and marginals from scratch, and compare with the bound."""
    dom = Domain.from_sizes({"a": 2, "b": 3})
    codes = np.array([[0, 0], [0, 1], [1, 2], [0, 0], [1, 1], [0, 2]])
    ids = np.array([0, 0, 0, 1, 2, 2])
    clip = 2.0
    q = adaptive_query((2, 3), [np.array([True, True, False]), np.array([True, False])], ("a", "b"))

    def answer(c, p):
        d = Dataset(c, dom, weights=clipping_weights(p, clip, len(c)))
        return q.matrix @ d.marginal(("a", "b"), flatten=True)

    base = answer(codes, ids)
    worst = 0.0
    for i in range(len(codes)):  # remove one record
        keep = np.arange(len(codes)) != i
        worst = max(worst, np.linalg.norm(base - answer(codes[keep], ids[keep])))
    for x in itertools.product(range(2), range(3)):  # add a record, to each person or a new one
        for p in [0, 1, 2, 99]:
            worst = max(worst, np.linalg.norm(base - answer(np.vstack([codes, x]), np.r_[ids, p])))
    for p in [0, 1, 2]:  # remove a person
        keep = ids != p
        worst = max(worst, np.linalg.norm(base - answer(codes[keep], ids[keep])))
    assert worst <= clip + 1e-12
    res = brute_force_sensitivity(Dataset(codes, dom), [q], person_ids=ids, clip=clip, max_neighbours=None)
    assert res[0]["max_change"] >= worst - 1e-12  # the vectorised check covers the literal neighbours
    assert res[0]["max_change"] <= clip + 1e-12


def test_run_time_norm_check_fires(monkeypatch, small_data):
    import margsynth.mechanisms.adagrid as ag

    real = ag.adaptive_query

    def broken(shape, parents, clique=None):
        q = real(shape, parents, clique)
        m = q.matrix.copy()
        m.data[:] *= 1.01
        return ag.AdaptiveQuery(q.clique, m, q.identity, q.n_identity, q.n_aggregate)

    monkeypatch.setattr(ag, "adaptive_query", broken)
    with pytest.raises(RuntimeError, match="L2 norm"):
        AdaptiveGrid(marginals=(("a", "b"),), generator=PGMGenerator(iters=1)).run(small_data, 1.0, 1e-6, np.random.default_rng(0))


# ----------------------------------------------------------------------------- bad input
def test_bad_input(small_data):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown attribute"):
        AdaptiveGrid(marginals=(("a", "nope"),)).run(small_data, 1.0, 1e-6, rng)
    with pytest.raises(ValueError, match="unknown attribute"):
        downward_closure([("zzz",)], small_data.domain)
    for c in (0, -1.0, float("nan"), float("inf"), True, "2"):
        with pytest.raises(ValueError, match="clip"):
            AdaptiveGrid(clip=c)
    with pytest.raises(ValueError, match="clip"):
        clipping_weights([1, 2], 0.0)
    with pytest.raises(ValueError, match="queries"):
        AdaptiveGrid(queries="dense")
    with pytest.raises(ValueError, match="empty"):
        AdaptiveGrid(marginals=())
    with pytest.raises(ValueError, match="repeat"):
        AdaptiveGrid(marginals=(("a", "a"),)).run(small_data, 1.0, 1e-6, rng)
    with pytest.raises(ValueError, match="epsilon"):
        AdaptiveGrid(marginals=(("a",),)).run(small_data, 0.0, 1e-6, rng)
    with pytest.raises(ValueError, match="rng"):
        AdaptiveGrid(marginals=(("a",),)).run(small_data, 1.0, 1e-6, 0)
    with pytest.raises(ValueError, match="person ids"):
        AdaptiveGrid(marginals=(("a",),)).run(small_data, 1.0, 1e-6, rng, person_ids=[1, 2])
    with pytest.raises(ValueError, match="parents"):
        adaptive_query((2, 2), [np.ones(2, bool)])


# ----------------------------------------------------------------------------- selection and runs
def test_downward_closure_and_defaults():
    d = Domain.from_sizes({"a": 2, "b": 2, "c": 2, "d": 2})
    cl = downward_closure([("c", "a", "b"), ("d", "c")], d)
    assert cl == (("a",), ("b",), ("c",), ("d",), ("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("a", "b", "c"))
    assert window_marginals(d) == (("a", "b", "c"), ("b", "c", "d"))
    assert default_marginals("unknown", d) == window_marginals(d)
    big = Domain.from_sizes({"a": 100, "b": 100, "c": 100, "d": 2})
    assert window_marginals(big, max_cells=250_000) == (("a", "b"), ("b", "c"), ("b", "c", "d"))
    from margsynth.mechanisms.adagrid import DEFAULT_OUTER

    adult_like = Domain.from_sizes({a: 2 for a in sorted({a for s in DEFAULT_OUTER["adult"] for a in s})})
    assert default_marginals("", adult_like) == DEFAULT_OUTER["adult"]  # recognised by its schema (CLI use)
    assert default_marginals("adult", adult_like) == DEFAULT_OUTER["adult"]


def test_adaptive_rounds_use_previous_round(small_data):
    """Round k's identity cells are exactly those whose every parent was measured large."""
    led = BudgetLedger.from_dp(0.2, 1e-6, currency="gdp")
    cliques = downward_closure([("a", "b", "c")], small_data.domain)
    ms = measure_rounds(small_data, cliques, sigma=20.0, bound=1.0, rng=np.random.default_rng(2), ledger=None,
                        threshold=1.0)  # fmt: skip
    by = {m.query.clique: m for m in ms}
    ab = by[("a", "b")]
    la = large_cells(by[("a",)].query, by[("a",)].y, 20.0, 1.0)
    lb = large_cells(by[("b",)].query, by[("b",)].y, 20.0, 1.0)
    assert np.array_equal(ab.query.identity.reshape(3, 4), la[:, None] & lb[None, :])
    assert led.spent == 0.0


def test_identity_variant_same_budget(small_data):
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    a = AdaptiveGrid(marginals=(("a", "b", "c"),), generator=PGMGenerator(iters=30)).run(small_data, 0.3, 1e-6, rng_a)
    b = identity_grid(marginals=(("a", "b", "c"),), generator=PGMGenerator(iters=30)).run(small_data, 0.3, 1e-6, rng_b)
    assert a.extras["sigma"] == b.extras["sigma"] and a.epsilon == b.epsilon
    assert all(r["aggregate_rows"] == 0 for r in b.extras["rounds"])
    assert b.mechanism == "adagrid-identity"
    assert len(a.synthetic) > 0 and a.synthetic.domain == small_data.domain


def test_person_column_is_dropped_and_clipped():
    rng = np.random.default_rng(0)
    dom = Domain.from_sizes({"pid": 20, "x": 3, "y": 2})
    codes = np.stack([rng.integers(0, 20, 300), rng.integers(0, 3, 300), rng.integers(0, 2, 300)], axis=1)
    r = AdaptiveGrid(marginals=(("x", "y"),), person_column="pid", clip=5, generator=PGMGenerator(iters=20)).run(
        Dataset(codes, dom), 200.0, 1e-6, rng
    )
    assert r.synthetic.domain.names == ("x", "y")
    assert r.extras["contribution_bound"] == 5 and r.extras["person_ids"]
    assert r.extras["estimated_total"] == pytest.approx(20 * 5, rel=0.1)  # weighted total: 20 persons x C


@needs_real("nltcs")
def test_runs_on_nltcs_and_reports_rounds():
    from margsynth.data import load

    data = load("nltcs")
    r = AdaptiveGrid(dataset="nltcs", generator=PGMGenerator(iters=100)).run(data, 0.1, 1e-9, np.random.default_rng(0))
    rounds = pd.DataFrame(r.extras["rounds"])
    assert rounds["round"].tolist() == [1, 2, 3]
    assert (rounds["min_column_norm"] > 1 - 1e-12).all() and (rounds["max_column_norm"] < 1 + 1e-12).all()
    assert r.extras["sensitivity"]["all_columns_norm_one"]
    assert len(r.synthetic) == pytest.approx(len(data), rel=0.05)


def test_sparse_measurements_reach_pgm(small_data):
    """Non-identity measurements are passed as sparse matrices and fitted by Private-PGM."""
    r = AdaptiveGrid(marginals=(("a", "b", "c"),), generator=PGMGenerator(iters=200), extras_model=True).run(
        small_data, 0.5, 1e-6, np.random.default_rng(4)
    )
    assert any(isinstance(q.matrix, sp.csr_matrix) and q.n_aggregate > 0 for q in r.extras["queries"])
    model = r.extras["model"]
    assert model.project(("a",)).sum() == pytest.approx(len(small_data), rel=0.2)


# ----------------------------------------------------------------------------- notebook 07's computations
@needs_real("nltcs")
def test_experiment_run_one_and_sensitivity_check(monkeypatch):
    from margsynth.experiments import adagrid as exp

    monkeypatch.setenv("MARGSYNTH_CACHE", "off")
    out = exp.run_one("nltcs", 0.1, 0, "adaptive", iters=30)
    errors = pd.DataFrame(out["errors"])
    assert set(errors["workload"]) >= {"measured marginals", "all 3-way marginals", "measured 3-way"}
    assert ((errors["error"] >= 0) & (errors["error"] <= 1)).all()
    assert errors.loc[errors["workload"] == "all 3-way marginals", "marginals"].item() == 560  # C(16, 3)
    assert out["summary"]["epsilon_spent"] == pytest.approx(0.1, rel=1e-9)
    sens = exp.sensitivity_check("nltcs", 0.1, clip=2.0, max_neighbours=50)
    assert (sens["max_ratio"] <= 1 + 1e-12).all() and sens["round"].tolist() == [1, 2, 3]
    assert (sens["bound"] == 2.0).all()
