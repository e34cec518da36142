"""Private-GSD (Liu, Tang, Vietri & Wu, ICML 2023, one-shot): incremental answers against
full recomputation, noise-free recovery, the ledger, seeding, and input checks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms.private_gsd import (
    KINDS,
    PRESETS,
    GeneticState,
    MarginalCells,
    PrivateGSD,
    propose,
    scale_rows,
)
from margsynth.mechanisms.queries import MarginalQueries
from margsynth.mechanisms.registry import create
from margsynth.privacy.accounting import zcdp_rho


def _cells(domain: Domain, degree: int) -> MarginalCells:
    return MarginalCells.from_queries(MarginalQueries.all_kway(domain, degree))


def _full_fitness(cells: MarginalCells, target: np.ndarray, x: np.ndarray, loss: str) -> float:
    r = cells.counts(x) / x.shape[0] - target
    return float((r * r).sum() if loss == "l2" else np.abs(r).sum())


def _brute_counts(domain: Domain, x: np.ndarray, degree: int) -> np.ndarray:
    """Marginal counts by Dataset.marginal, clique by clique (a second implementation)."""
    data = Dataset(x, domain)
    return np.concatenate([data.marginal(c, flatten=True) for c in itertools.combinations(domain.names, degree)])


@pytest.fixture(scope="module")
def small_data():
    """5 attributes with a chain of dependencies; 600 records."""
    rng = np.random.default_rng(3)
    n = 600
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.15)) % 3
    c = (2 * b + rng.integers(0, 2, n)) % 4
    d = rng.integers(0, 2, n)
    e = (d + c) % 3
    dom = Domain.from_sizes({"a": 3, "b": 3, "c": 4, "d": 2, "e": 3})
    return Dataset(np.stack([a, b, c, d, e], axis=1), dom)


# --------------------------------------------------------------------------- cells
@pytest.mark.parametrize("degree", [1, 2, 3])
def test_marginal_cells_match_dataset_marginals(degree):
    dom = Domain.from_sizes({"a": 3, "b": 1, "c": 4, "d": 2})
    x = np.random.default_rng(0).integers(0, dom.shape, size=(50, 4))
    cells = _cells(dom, degree)
    np.testing.assert_array_equal(cells.counts(x), _brute_counts(dom, x, degree))
    np.testing.assert_array_equal(cells.counts(x), MarginalQueries.all_kway(dom, degree).counts(Dataset(x, dom)))
    # the cells touching an attribute are exactly the cells of the marginals containing it
    full = cells.cells(x)
    for col in range(4):
        base, stride = cells.cells_touching(x, np.full(50, col))
        ps = [p for p, c in enumerate(cells.cliques) if col in c]
        np.testing.assert_array_equal(base + x[:, [col]] * stride, full[:, ps])


# --------------------------------------------------------------------------- incremental answers
@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=5),
    n_rows=st.integers(1, 12),
    m=st.integers(1, 3),
    whole=st.sampled_from([0.0, 0.5, 1.0]),
    elite=st.integers(1, 3),
    loss=st.sampled_from(["l2", "l1"]),
    degree=st.integers(1, 3),
    seed=st.integers(0, 2**31),
)
def test_incremental_answers_equal_full_recomputation(sizes, n_rows, m, whole, elite, loss, degree, seed):
    """After every kind of mutation and crossover: each candidate's incremental fitness
    equals its from-scratch fitness, and the best dataset's counts, residuals and
    fitness after each generation equal a full recomputation."""
    degree = min(degree, len(sizes))
    m = min(m, n_rows)
    dom = Domain.from_sizes({f"x{i}": s for i, s in enumerate(sizes)})
    cells = _cells(dom, degree)
    rng = np.random.default_rng(seed)
    target = rng.normal(1.0 / max(cells.total, 1), 0.05, size=cells.total)
    init = (rng.random((elite, n_rows, len(sizes))) * cells.sizes).astype(np.int32)
    state = GeneticState.start(cells, target, init, loss)
    for _ in range(4):
        prop = propose(rng, state, mutations=4, crossovers=4, rows_per_candidate=m, whole_rows=whole)
        assert prop.rows.shape == (8, m) and len(prop.kinds) == 8
        assert set(prop.kinds) <= set(KINDS)
        assert all(len(set(r)) == m for r in prop.rows.tolist())  # distinct rows per candidate
        fit = state.evaluate(prop)
        for c in range(8):
            x = state.best.copy()
            changed = prop.new[c] != prop.old[c]
            if prop.col[c, 0] >= 0:  # a value operator changes at most the recorded attribute
                for j in range(m):
                    assert not np.delete(changed[j], prop.col[c, j]).any()
            x[prop.rows[c]] = prop.new[c]
            assert fit[c] == pytest.approx(_full_fitness(cells, target, x, loss), rel=1e-9, abs=1e-12)
        state.tell(prop, fit)
        np.testing.assert_array_equal(state.counts, _brute_counts(dom, state.best, degree))
        np.testing.assert_allclose(state.residual, state.counts / n_rows - target, rtol=0, atol=1e-15)
        for k in range(len(state.fitness)):
            assert state.fitness[k] == pytest.approx(
                _full_fitness(cells, target, state.archive[k], loss), rel=1e-9, abs=1e-12
            )
        assert np.all(np.diff(state.fitness) >= 0)


def test_search_never_gets_worse_and_answers_stay_exact(small_data):
    cells = _cells(small_data.domain, 2)
    target = cells.counts(small_data.codes) / len(small_data)
    gsd = PrivateGSD(synthetic_rows=60, generations=400, patience=50, tolerance=0.0, whole_rows=0.25,
                     rows_per_candidate=2, progress=False)  # fmt: skip
    best, trace = gsd.search(cells, target, np.random.default_rng(1))
    assert np.all(np.diff(trace["fitness_history"]) <= 0)
    assert trace["fitness"] == pytest.approx(_full_fitness(cells, target, best, "l2"), rel=1e-9)
    assert trace["generations_run"] == 400 and trace["stop"] == "generations"


def test_early_stopping():
    dom = Domain.from_sizes({"a": 2, "b": 2})
    cells = _cells(dom, 2)
    target = cells.counts(np.array([[0, 0], [1, 1]] * 5)) / 10
    gsd = PrivateGSD(synthetic_rows=10, generations=100_000, patience=200, progress=False)
    best, trace = gsd.search(cells, target, np.random.default_rng(0))
    assert trace["stop"] == "early" and trace["generations_run"] < 100_000
    assert trace["fitness"] == pytest.approx(0.0, abs=1e-12)  # exact fit found, then no change


# --------------------------------------------------------------------------- the mechanism
def test_noise_free_run_recovers_two_way_marginals(small_data):
    gsd = PrivateGSD(synthetic_rows=300, generations=6000, patience=1000, progress=False)
    res = gsd.run(small_data, 1e5, 1e-9, np.random.default_rng(0))
    assert len(res.synthetic) == len(small_data)  # n_hat rounds to n when the noise is tiny
    tvs = []
    for c in itertools.combinations(small_data.domain.names, 2):
        p = small_data.marginal(c) / len(small_data)
        q = res.synthetic.marginal(c) / len(res.synthetic)
        tvs.append(0.5 * np.abs(p - q).sum())
    assert max(tvs) < 0.03, tvs
    # an independent random dataset is far: the search did the work
    rand = np.random.default_rng(0).integers(0, small_data.domain.shape, size=(600, 5))
    far = [0.5 * np.abs(small_data.marginal(c) / 600 - Dataset(rand, small_data.domain).marginal(c) / 600).sum()
           for c in itertools.combinations(small_data.domain.names, 2)]  # fmt: skip
    assert np.mean(tvs) < 0.2 * np.mean(far)


def test_every_draw_is_charged_and_spent_budget_reported(small_data):
    gsd = PrivateGSD.preset("fast", generations=50, progress=False)
    res = gsd.run(small_data, 1.0, 1e-6, np.random.default_rng(0))
    rho = res.extras["rho"]  # the ledger's total: the CKS rho less its calibration margin
    assert rho == pytest.approx(zcdp_rho(1.0, 1e-6, conversion="cks"), rel=1e-6) and rho <= zcdp_rho(
        1.0, 1e-6, conversion="cks"
    )
    # two Gaussian measurements (the count, then the workload); the search is post-processing
    assert [c["label"] for c in res.ledger] == ["measure total", "measure 2-way marginals"]
    total, queries = res.ledger
    assert total["kind"] == queries["kind"] == "gaussian"
    assert total["sensitivity"] == 1.0 and total["cost"] == pytest.approx(gsd.total_share * rho, rel=1e-12)
    p = math.comb(5, 2)
    assert queries["sensitivity"] == pytest.approx(math.sqrt(p)) == res.extras["sensitivity"]
    assert queries["sigma"] == pytest.approx(res.extras["sigma"])
    assert queries["cost"] == pytest.approx(p / (2.0 * res.extras["sigma"] ** 2))
    assert queries["cost"] == pytest.approx(gsd.measure_share * rho, rel=1e-12)
    assert res.epsilon == pytest.approx(1.0, rel=1e-9) and res.epsilon <= 1.0 + 1e-9
    assert len(res.extras["cliques"]) == p
    assert res.extras["ledger"]["spent"] <= res.extras["ledger"]["total"] * (1 + 1e-12)
    half = PrivateGSD(measure_share=0.49, total_share=0.01, generations=50, synthetic_rows=50, progress=False)
    r2 = half.run(small_data, 1.0, 1e-6, np.random.default_rng(0))
    assert r2.ledger[1]["cost"] == pytest.approx(0.49 * rho)
    assert r2.epsilon < 1.0


def test_workload_sensitivity_by_brute_force():
    """The stacked 2-way marginal counts move by exactly sqrt(P) in L2 when one record is
    added or removed — for every record of the (small) domain — the sensitivity the
    measurement is charged for."""
    dom = Domain.from_sizes({"a": 2, "b": 3, "c": 2, "d": 2})
    cells = _cells(dom, 2)
    x = np.random.default_rng(0).integers(0, dom.shape, size=(20, 4))
    base = cells.counts(x)
    sens = MarginalQueries.all_kway(dom, 2).l2_sensitivity(np.arange(cells.total))
    for rec in itertools.product(*[range(s) for s in dom.shape]):
        assert np.linalg.norm(cells.counts(np.vstack([x, rec])) - base) == pytest.approx(sens, rel=1e-12)
    for r in range(len(x)):
        assert np.linalg.norm(cells.counts(np.delete(x, r, axis=0)) - base) == pytest.approx(sens, rel=1e-12)


def test_same_seed_same_bytes_different_seed_differs(small_data):
    gsd = PrivateGSD(synthetic_rows=40, generations=300, progress=False, synthetic_records=111)
    a = gsd.run(small_data, 1.0, 1e-6, np.random.default_rng(5))
    b = gsd.run(small_data, 1.0, 1e-6, np.random.default_rng(5))
    c = gsd.run(small_data, 1.0, 1e-6, np.random.default_rng(6))
    assert a.synthetic.codes.tobytes() == b.synthetic.codes.tobytes()
    assert a.extras["fitness_history"] == b.extras["fitness_history"]
    assert a.synthetic.codes.tobytes() != c.synthetic.codes.tobytes()
    assert len(a.synthetic) == 111


def test_scale_rows_keeps_each_row_weight():
    rows = np.arange(7)[:, None]
    out = scale_rows(rows, 24, np.random.default_rng(0))
    counts = np.bincount(out[:, 0], minlength=7)
    assert out.shape == (24, 1) and set(counts.tolist()) <= {3, 4} and counts.sum() == 24
    assert np.array_equal(scale_rows(rows, 5, np.random.default_rng(1)), scale_rows(rows, 5, np.random.default_rng(1)))


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"synthetic_rows": 0}, "synthetic_rows"),
        ({"generations": 1.5}, "generations"),
        ({"mutations": -1}, "mutations"),
        ({"mutations": 0, "crossovers": 0}, "mutations \\+ crossovers"),
        ({"rows_per_candidate": 5, "synthetic_rows": 4}, "rows_per_candidate"),
        ({"whole_rows": 1.5}, "whole_rows"),
        ({"elite_size": 0}, "elite_size"),
        ({"loss": "l3"}, "loss"),
        ({"patience": 0}, "patience"),
        ({"tolerance": -1.0}, "tolerance"),
        ({"tolerance": float("nan")}, "tolerance"),
        ({"degree": 6}, "degree 6 exceeds"),
        ({"measure_share": 0.0}, "measure_share"),
        ({"total_share": 1.0}, "total_share"),
        ({"total_share": 0.5, "measure_share": 0.6}, "at most 1"),
        ({"conversion": "rdp"}, "conversion"),
        ({"synthetic_records": 0}, "synthetic_records"),
        ({"progress": "yes"}, "progress"),
    ],
)
def test_validate_refuses_bad_hyperparameters_before_any_draw(small_data, bad, match):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        PrivateGSD(**bad).run(small_data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == before


@pytest.mark.parametrize(
    "args, match",
    [((1.0, 0.0), "delta"), ((0.0, 1e-6), "epsilon"), ((float("inf"), 1e-6), "epsilon")],
)
def test_validate_refuses_bad_privacy_parameters_before_any_draw(small_data, args, match):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        PrivateGSD().run(small_data, *args, rng)
    assert rng.bit_generator.state == before
    with pytest.raises(ValueError, match="rng"):
        PrivateGSD().run(small_data, 1.0, 1e-6, 0)
    with pytest.raises(ValueError, match="Dataset"):
        PrivateGSD().run(small_data.df, 1.0, 1e-6, rng)


def test_registry_presets():
    assert create("private-gsd") == PRESETS["default"]
    fast = create("private-gsd", preset="fast", generations=10)
    assert fast.generations == 10 and fast.synthetic_rows == PRESETS["fast"].synthetic_rows
    assert PRESETS["default"].elite_size == 2
    with pytest.raises(ValueError, match="preset"):
        create("private-gsd", preset="nope")
    with pytest.raises(ValueError, match="unknown private-gsd parameter"):
        create("private-gsd", bogus=1)


def test_progress_bar_over_generations(small_data, capsys):
    PrivateGSD(synthetic_rows=30, generations=40, patience=10, progress=True).run(
        small_data, 1.0, 1e-6, np.random.default_rng(0)
    )
    assert "Private-GSD" in capsys.readouterr().err
    PrivateGSD(synthetic_rows=30, generations=40, patience=10, progress=False).run(
        small_data, 1.0, 1e-6, np.random.default_rng(0)
    )
    assert "Private-GSD" not in capsys.readouterr().err


# --------------------------------------------------------------------------- rules
def _gsd_rules(dom: Domain):
    from margsynth.rules import Rule, RuleSet

    follows = np.zeros((3, 3), bool)
    for a in range(3):
        follows[a, a] = follows[a, (a + 1) % 3] = True
    return RuleSet([Rule(("a", "b"), follows, "b-follows-a"), Rule.forbid("c3-d1", dom, ("c", "d"), [(3, 1)])])


def test_lawful_search_keeps_every_row_lawful_and_never_gets_worse(small_data):
    """Started from lawful rows with the row test, every kept dataset obeys the rules, the
    fitness never rises, and the incremental answers stay exact."""
    dom = small_data.domain
    rules = _gsd_rules(dom)
    cells = _cells(dom, 2)
    target = cells.counts(small_data.codes) / len(small_data)
    rng = np.random.default_rng(4)
    start = rng.integers(0, dom.shape, size=(80, 5)).astype(np.int32)
    start[:, 1] = start[:, 0]  # b = a: lawful
    start[start[:, 2] == 3, 3] = 0
    assert not rules.broken(Dataset(start, dom)).any()
    gsd = PrivateGSD(synthetic_rows=80, generations=1500, patience=100, tolerance=0.0, whole_rows=0.25,
                     progress=False)  # fmt: skip
    best, trace = gsd.search(cells, target, rng, start=start, obeys=rules.row_check(dom))
    assert not rules.broken(Dataset(best, dom)).any()
    assert np.all(np.diff(trace["fitness_history"]) <= 0)
    assert trace["fitness_history"][0] == pytest.approx(_full_fitness(cells, target, start, "l2"), rel=1e-9)
    assert trace["fitness"] == pytest.approx(_full_fitness(cells, target, best, "l2"), rel=1e-9)
    assert trace["fitness"] < 0.5 * trace["fitness_history"][0]  # it moved towards the target
    # the same search without the test leaves the lawful rows: the test is what keeps them
    free, _ = gsd.search(cells, target, np.random.default_rng(4), start=start)
    assert rules.broken(Dataset(free, dom)).any()


def test_run_with_rules_searches_again_among_lawful_rows(small_data):
    """With rules the fixed rows are searched again under the row test: the output obeys
    every rule, the report carries the lawful search, whose fit is at least the fixed rows'."""
    rules = _gsd_rules(small_data.domain)
    gsd = PrivateGSD(synthetic_rows=120, generations=3000, patience=500, progress=False)
    res = gsd.run(small_data, 50.0, 1e-6, np.random.default_rng(2), rules=rules)
    assert not rules.broken(res.synthetic).any()
    rep = res.extras["rules"]
    assert sum(rep["broken"].values()) > 0  # the unconstrained search's rows broke rules ...
    assert rep["violations"] == {"b-follows-a": 0, "c3-d1": 0}  # ... the output none
    lawful = rep["lawful_search"]
    assert lawful["fitness"] <= lawful["fitness_start"] and lawful["generations_run"] >= 1
    assert "lawful search" in res.seconds
    again = gsd.run(small_data, 50.0, 1e-6, np.random.default_rng(2), rules=rules)
    assert np.array_equal(again.synthetic.codes, res.synthetic.codes)
