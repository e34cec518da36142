"""Algorithm 1 (Measure): sensitivity measured by brute force on neighbouring datasets,
noise variance as charged, the measurement log, and refusal without drawing noise."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from margsynth import Dataset, Domain
from margsynth.inference.pgm import from_noisy_marginals
from margsynth.privacy import BudgetLedger, NoisyMarginal, normalise_weights
from margsynth.privacy import accounting as acc
from margsynth.privacy.measure import measure, measure_marginals

DOMAIN = Domain.from_sizes({"a": 2, "b": 3, "c": 2, "d": 4})
CLIQUES = [(("a", "b"), 2.0), ("c", 1.0), (("b", "c", "d"), 0.5), (("a", "b"), 1.0), (("d", "a"), 3.0)]


def _dataset(n=25, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset(np.column_stack([rng.integers(0, k, n) for k in DOMAIN.shape]), DOMAIN)


def _stacked_query(ds: Dataset, cliques, weights) -> np.ndarray:
    """The query Algorithm 1 answers: all weighted marginals, concatenated."""
    return np.concatenate([w * ds.marginal(c, flatten=True) for c, w in zip(cliques, weights)])


def _brute_force_sensitivity(ds: Dataset, cliques, weights) -> float:
    """max ||f(D) - f(D')||₂ over every D' = D + one record (all of Ω) and D - one record."""
    base = _stacked_query(ds, cliques, weights)
    worst = 0.0
    for rec in itertools.product(*(range(k) for k in DOMAIN.shape)):
        bigger = Dataset(np.vstack([ds.codes, np.array(rec)[None, :]]), DOMAIN)
        worst = max(worst, float(np.linalg.norm(_stacked_query(bigger, cliques, weights) - base)))
    for i in range(len(ds)):
        smaller = ds.take(np.delete(np.arange(len(ds)), i))
        worst = max(worst, float(np.linalg.norm(_stacked_query(smaller, cliques, weights) - base)))
    return worst


def test_measure_query_has_l2_sensitivity_one_by_brute_force():
    ds = _dataset()
    names = [(c,) if isinstance(c, str) else c for c, _ in CLIQUES]
    raw = [w for _, w in CLIQUES]
    w = normalise_weights(raw)
    # the normalised weights give sensitivity exactly 1 (footnote 2) ...
    assert _brute_force_sensitivity(ds, names, w) == pytest.approx(1.0, rel=1e-12)
    # ... and the raw ones sqrt(Σ w²): normalising is what makes Theorem 1 hold
    assert _brute_force_sensitivity(ds, names, raw) == pytest.approx(math.sqrt(sum(x * x for x in raw)), rel=1e-12)
    # the weights measure() records are exactly these
    log = measure(ds, CLIQUES, sigma=1.0, rng=np.random.default_rng(0))
    assert [m.weight for m in log] == pytest.approx(list(w))


def test_single_marginal_sensitivity_is_one():
    ds = _dataset(10, seed=3)
    for c in [("a",), ("b", "d"), ("a", "b", "c", "d")]:
        assert _brute_force_sensitivity(ds, [c], [1.0]) == pytest.approx(1.0)


def test_measure_noise_variance_matches_ledger():
    ds = _dataset(200, seed=1)
    sigma = 2.5
    led = BudgetLedger(1e6)
    rng = np.random.default_rng(123)
    residuals = []
    for rep in range(400):
        log = measure(ds, CLIQUES, sigma, rng, ledger=led, label=f"rep{rep}")
        for m in log:
            residuals.append(m.y - m.weight * ds.marginal(m.clique, flatten=True))
    res = np.concatenate(residuals)
    # each call charged once, Theorem 1: 1/(2σ²) zCDP with sensitivity 1
    assert len(led.entries) == 400
    assert all(e.cost == pytest.approx(1 / (2 * sigma**2)) for e in led.entries)
    claimed = 1 / math.sqrt(2 * led.entries[0].cost)
    n = res.size
    t = (n - 1) * res.var(ddof=1) / claimed**2
    assert 2 * min(stats.chi2.cdf(t, n - 1), stats.chi2.sf(t, n - 1)) > 1e-4
    assert abs(res.mean()) < 5 * claimed / math.sqrt(n)


def test_measure_log_contents():
    ds = _dataset()
    log = measure(ds, CLIQUES, sigma=3.0, rng=np.random.default_rng(1))
    assert [m.clique for m in log] == [("a", "b"), ("c",), ("b", "c", "d"), ("a", "b"), ("d", "a")]
    for m in log:
        assert isinstance(m, NoisyMarginal)
        assert m.y.shape == (DOMAIN.size(m.clique),)
        assert not m.y.flags.writeable
        assert m.sigma == 3.0 and m.std == pytest.approx(3.0 / m.weight)
        assert m.estimate == pytest.approx(m.y / m.weight)
        (pm,) = from_noisy_marginals([m])  # Private-PGM's form of (w_C I, y, sigma, C): answers y / w_C, scale sigma / w_C
        assert pm.query is None and pm.clique == m.clique
        np.testing.assert_array_equal(pm.y, m.y / m.weight)
        assert pm.sigma == 3.0 / m.weight
    with pytest.raises(AttributeError):
        log[0].sigma = 1.0  # frozen


def test_measure_mst_calibration_end_to_end():
    """MST appendix: ρ/3 for the one-way measurements with σ = sqrt(3/(2ρ))."""
    ds = _dataset(100)
    led = BudgetLedger.from_dp(1.0, 1e-9)
    sigma = acc.gaussian_sigma(led.portion(1 / 3))
    measure(ds, [(a, 1.0) for a in DOMAIN.names], sigma, np.random.default_rng(0), ledger=led, label="one-way")
    assert led.spent == pytest.approx(led.total / 3, rel=1e-12)
    assert led.entries[0].params["cliques"] == tuple((a,) for a in DOMAIN.names)
    json.dumps(led.to_dict())
    assert led.report().loc[0, "sigma"] == pytest.approx(math.sqrt(3 / (2 * led.total)))


def test_measure_overspend_draws_nothing():
    ds = _dataset()
    led = BudgetLedger(0.01)
    rng = np.random.default_rng(9)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="overspend"):
        measure(ds, CLIQUES, sigma=1.0, rng=rng, ledger=led)  # costs 0.5
    assert rng.bit_generator.state == state
    assert led.entries == ()


@pytest.mark.parametrize(
    "cliques, sigma, match",
    [
        ([(("a", "zz"), 1.0)], 1.0, "unknown attribute"),
        ([(("a", "a"), 1.0)], 1.0, "repeat"),
        ([(("a",), 0.0)], 1.0, "weight"),
        ([(("a",), -1.0)], 1.0, "weight"),
        ([(("a",), float("nan"))], 1.0, "weight"),
        ([], 1.0, "empty"),
        ([("a", "b")], 1.0, "weight"),  # a bare clique is not a (clique, weight) pair
        ([(("a", "b"),)], 1.0, "pair"),
        ([((), 1.0)], 1.0, "non-empty"),
        ([(("a",), 1.0)], 0.0, "sigma"),
        ([(("a",), 1.0)], -1.0, "sigma"),
        ([(("a",), 1.0)], float("nan"), "sigma"),
        ("a", 1.0, "pairs"),
    ],
)
def test_measure_bad_input_raises_and_draws_nothing(cliques, sigma, match):
    ds = _dataset()
    rng = np.random.default_rng(9)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        measure(ds, cliques, sigma, rng)
    assert rng.bit_generator.state == state


def test_measure_other_bad_input():
    ds = _dataset()
    with pytest.raises(ValueError, match="Generator"):
        measure(ds, [("a", 1.0)], 1.0, rng=0)
    with pytest.raises(ValueError, match="Dataset"):
        measure(ds.codes, [("a", 1.0)], 1.0, np.random.default_rng(0))
    heavy = Dataset(ds.codes, DOMAIN, weights=np.full(len(ds), 2.0))
    with pytest.raises(ValueError, match="weights above 1"):
        measure(heavy, [("a", 1.0)], 1.0, np.random.default_rng(0))
    light = Dataset(ds.codes, DOMAIN, weights=np.full(len(ds), 0.5))
    (m,) = measure(light, [("a", 1.0)], 1e-9, np.random.default_rng(0))
    assert m.y.sum() == pytest.approx(0.5 * len(ds))


def test_noisy_marginal_validation():
    with pytest.raises(ValueError, match="sigma"):
        NoisyMarginal(("a",), np.zeros(2), 0.0, 1.0)
    with pytest.raises(ValueError, match="weight"):
        NoisyMarginal(("a",), np.zeros(2), 1.0, 0.0)
    with pytest.raises(ValueError, match="non-finite"):
        NoisyMarginal(("a",), np.array([1.0, np.nan]), 1.0, 1.0)
    with pytest.raises(ValueError, match="clique"):
        NoisyMarginal((), np.zeros(2), 1.0, 1.0)
    assert NoisyMarginal("a", [1, 2], 1.0, 1.0).clique == ("a",)


def test_package_exports_and_alias():
    import margsynth.privacy as priv
    import margsynth.privacy.measure as measure_module

    assert measure is measure_marginals is priv.measure_marginals
    assert measure_module.NoisyMarginal is priv.NoisyMarginal
