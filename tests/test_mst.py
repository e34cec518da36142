"""MST (NIST-MST/MST paper §6, Algorithm 6, appendix noise calibration)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.inference.pgm import estimate, from_noisy_marginals
from margsynth.mechanisms.generators import PGMGenerator
from margsynth.mechanisms.mst import MST, pair_errors, private_kruskal
from margsynth.privacy import BudgetLedger, measure_marginals
from margsynth.privacy.accounting import zcdp_rho


@pytest.fixture(scope="module")
def corr_data():
    """6 attributes, a chain a->b->c and an independent block; 3000 records."""
    rng = np.random.default_rng(7)
    n = 3000
    a = rng.integers(0, 4, n)
    b = (a + (rng.random(n) < 0.2)) % 4
    c = (b + (rng.random(n) < 0.2) * rng.integers(0, 3, n)) % 3
    d = rng.integers(0, 5, n)
    e = (d + (rng.random(n) < 0.1)) % 5
    f = rng.integers(0, 2, n)
    dom = Domain.from_sizes({"a": 4, "b": 4, "c": 3, "d": 5, "e": 5, "f": 2})
    return Dataset(np.stack([a, b, c, d, e, f], axis=1), dom)


def _state(rng):
    return rng.bit_generator.state


def test_default_budget_split_is_one_third_each_and_named():
    m = MST()
    assert (m.oneway_share, m.select_share, m.measure_share) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    with pytest.raises(ValueError, match="sum to 1"):
        MST(oneway_share=0.5, select_share=0.5, measure_share=0.5)
    with pytest.raises(ValueError, match="finite and > 0"):
        MST(oneway_share=0.0, select_share=0.5, measure_share=0.5)


@pytest.mark.parametrize("conversion", ["cks", "prop4"])
def test_ledger_totals_equal_epsilon_and_split(corr_data, conversion):
    res = MST(conversion=conversion, generator=PGMGenerator(iters=100), select_iters=100).run(corr_data, 1.0, 1e-6, np.random.default_rng(0))
    rho = zcdp_rho(1.0, 1e-6, conversion=conversion)
    assert res.extras["rho"] == pytest.approx(rho)
    costs = {}
    for row in res.ledger:
        key = "select" if row["label"].startswith("select") else row["label"]
        costs[key] = costs.get(key, 0.0) + row["cost"]
    assert costs["measure 1-way"] == pytest.approx(rho / 3, rel=1e-12)
    assert costs["select"] == pytest.approx(rho / 3, rel=1e-12)
    assert costs["measure selected"] == pytest.approx(rho / 3, rel=1e-12)
    # d-1 = 5 exponential-mechanism draws, each eps^2/8 = rho/3/5 (Theorem 3)
    sel = [r for r in res.ledger if r["kind"] == "exponential"]
    assert len(sel) == 5
    for r in sel:
        assert r["epsilon"] == pytest.approx(math.sqrt(8 * rho / 3 / 5))
    assert res.epsilon == pytest.approx(1.0, rel=1e-9)
    assert res.delta == 1e-6
    assert res.extras["sigma_oneway"] == pytest.approx(math.sqrt(3 / (2 * rho)))
    assert len(res.extras["selected"]) == 5
    assert res.synthetic.domain == corr_data.domain
    assert abs(len(res.synthetic) - len(corr_data)) < 200


def test_noise_variance_matches_ledger(corr_data):
    """The noise MST draws has the variance its ledger charges (within sampling error)."""
    res = MST(generator=PGMGenerator(iters=50), select_iters=50).run(corr_data, 0.5, 1e-6, np.random.default_rng(5))
    sig1 = next(r for r in res.ledger if r["label"] == "measure 1-way")["sigma"]
    z = []
    for m in res.extras["log_oneway"]:
        assert m.sigma == sig1
        z.append((m.y - m.weight * corr_data.marginal(m.clique, flatten=True)) / sig1)
    comp = res.extras["compression_map"]
    cdata = comp.compress(corr_data)
    sig2 = next(r for r in res.ledger if r["label"] == "measure selected")["sigma"]
    for m in res.extras["log_selected"]:
        z.append((m.y - m.weight * cdata.marginal(m.clique, flatten=True)) / sig2)
    z = np.concatenate(z)
    assert z.size > 100
    # var of standardised noise is 1; sd of the sample variance is ~ sqrt(2/n)
    assert abs(z.var() - 1.0) < 5 * math.sqrt(2 / z.size)


def test_selection_recovers_true_tree_at_large_epsilon(corr_data):
    res = MST(generator=PGMGenerator(iters=50), select_iters=200).run(corr_data, 50.0, 1e-6, np.random.default_rng(1))
    chosen = {frozenset(p) for p in res.extras["selected"]}
    assert {frozenset("ab"), frozenset("bc"), frozenset("de")} <= chosen


def test_private_kruskal_is_kruskal_with_huge_budget():
    names = ["w", "x", "y", "z"]
    cands = list(itertools.combinations(names, 2))
    scores = np.array([10.0, 1.0, 2.0, 9.0, 3.0, 8.0])  # wx, wy, wz, xy, xz, yz
    led = BudgetLedger(1e6, delta=1e-6)
    picks = private_kruskal(names, cands, scores * 1e3, 1e6, np.random.default_rng(0), led)
    assert picks == [("w", "x"), ("x", "y"), ("y", "z")]
    assert len(led.entries) == 3 and all(e.kind == "exponential" for e in led.entries)


def test_selection_follows_exponential_mechanism_distribution():
    """First pick of Algorithm 6 has Pr[e] ∝ exp(eps q_e / 2) (Definition 4, sensitivity 1)."""
    names = ["u", "v", "w"]
    cands = list(itertools.combinations(names, 2))
    scores = np.array([0.0, 1.0, 2.0])
    rho = 0.5  # r-1 = 2 picks, each eps = sqrt(8 rho / 2) = 2
    eps = math.sqrt(8 * rho / 2)
    rng = np.random.default_rng(11)
    first = np.zeros(3)
    n = 6000
    for _ in range(n):
        led = BudgetLedger(rho, delta=1e-6)
        pick = private_kruskal(names, cands, scores, rho, rng, led)[0]
        first[cands.index(pick)] += 1
    expected = np.exp(eps * scores / 2)
    expected /= expected.sum()
    assert np.all(np.abs(first / n - expected) < 4 * np.sqrt(expected * (1 - expected) / n))


def test_pair_errors_are_l1_to_independence_estimate(corr_data):
    rng = np.random.default_rng(0)
    log = measure_marginals(corr_data, [((a,), 1.0) for a in corr_data.domain.names], 1e-3, rng)
    model = estimate(corr_data.domain, from_noisy_marginals(log), iters=200)
    err = pair_errors(corr_data, model, [("a", "b"), ("a", "f")])
    n = len(corr_data)
    pa, pb, pf = (corr_data.marginal(x) / n for x in "abf")
    ab = np.abs(corr_data.marginal(("a", "b")) - n * np.outer(pa, pb)).sum()
    af = np.abs(corr_data.marginal(("a", "f")) - n * np.outer(pa, pf)).sum()
    assert err == pytest.approx([ab, af], rel=1e-3)
    assert err[0] > err[1]


def test_initial_and_extra_cliques_are_measured(corr_data):
    m = MST(
        initial_cliques=(("a", "f"),),
        extra_cliques=(("a", "b", "c"),),
        clique_weights=((("a", "b", "c"), 3.0),),
        generator=PGMGenerator(iters=50),
        select_iters=50,
    )
    res = m.run(corr_data, 1.0, 1e-6, np.random.default_rng(2))
    cl = res.extras["cliques"]
    assert ("a", "f") in cl and ("a", "b", "c") in cl
    assert len(res.extras["selected"]) == 4  # 6 attributes, one edge given
    w = {tuple(x.clique): x.weight for x in res.extras["log_selected"]}
    assert w[("a", "b", "c")] == pytest.approx(3 * w[("a", "f")])


@pytest.mark.parametrize(
    "eps, delta, match",
    [
        (0.0, 1e-6, "epsilon"),
        (-1.0, 1e-6, "epsilon"),
        (float("nan"), 1e-6, "epsilon"),
        (1.0, 0.0, "delta"),
        (1.0, 1.0, "delta"),
    ],
)
def test_bad_privacy_parameters_draw_no_noise(corr_data, eps, delta, match):
    rng = np.random.default_rng(0)
    before = _state(rng)
    with pytest.raises(ValueError, match=match):
        MST().run(corr_data, eps, delta, rng)
    assert _state(rng) == before


def test_unknown_initial_clique_draws_no_noise(corr_data):
    rng = np.random.default_rng(0)
    before = _state(rng)
    with pytest.raises(ValueError, match="unknown attribute"):
        MST(initial_cliques=(("a", "nope"),)).run(corr_data, 1.0, 1e-6, rng)
    with pytest.raises(ValueError, match="pairs"):
        MST(initial_cliques=(("a", "b", "c"),)).run(corr_data, 1.0, 1e-6, rng)
    assert _state(rng) == before


def test_select_only_returns_spanning_tree(corr_data):
    pairs = MST(select_iters=50).select_only(corr_data, 1.0, 1e-6, np.random.default_rng(0))
    assert len(pairs) == len(corr_data.domain) - 1
    import networkx as nx

    g = nx.Graph(pairs)
    g.add_nodes_from(corr_data.domain.names)
    assert nx.is_tree(g)
