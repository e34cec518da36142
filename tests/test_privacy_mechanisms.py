"""Noise primitives: the noise drawn has the variance the ledger claims, selection
frequencies match their distributions, and bad input / overspending draws nothing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from margsynth.privacy import (
    BudgetLedger,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    permute_and_flip,
    report_noisy_max,
)
from margsynth.privacy import accounting as acc

N = 200_000
P_MIN = 1e-4  # fixed seeds: these are deterministic checks that the law is right


def _variance_chi2_p(x: np.ndarray, sigma2: float) -> float:
    """Two-sided p-value of (n-1)s²/σ² ~ χ²(n-1) (exact for Gaussian samples)."""
    n = x.size
    t = (n - 1) * x.var(ddof=1) / sigma2
    cdf = stats.chi2.cdf(t, n - 1)
    return 2 * min(cdf, 1 - cdf)


# ----------------------------------------------------------------------------- Gaussian
@pytest.mark.parametrize("currency", ["zcdp", "gdp"])
@pytest.mark.parametrize("sigma, sens", [(0.5, 1.0), (3.0, 2.0), (40.0, 0.7)])
def test_gaussian_noise_has_the_variance_the_ledger_claims(currency, sigma, sens):
    rng = np.random.default_rng(11)
    led = BudgetLedger(1e6, currency=currency)
    values = np.linspace(-5, 5, N)
    out = gaussian_mechanism(values, sigma=sigma, l2_sensitivity=sens, rng=rng, ledger=led)
    (entry,) = led.entries
    # σ implied by the ledger's cost: ρ = Δ²/(2σ²) (Prop. 1) or μ = Δ/σ (GDP Thm 2.7)
    claimed = sens / math.sqrt(2 * entry.cost) if currency == "zcdp" else sens / entry.cost
    assert claimed == pytest.approx(sigma, rel=1e-12)
    assert entry.params["sigma"] == sigma and entry.params["sensitivity"] == sens
    noise = out - values
    assert _variance_chi2_p(noise, claimed**2) > P_MIN
    assert abs(noise.mean()) < 5 * claimed / math.sqrt(N)
    assert stats.kstest(noise / claimed, "norm").pvalue > P_MIN


def test_gaussian_keeps_shape_and_without_ledger():
    rng = np.random.default_rng(0)
    out = gaussian_mechanism(np.zeros((3, 4)), sigma=1.0, l2_sensitivity=1.0, rng=rng)
    assert out.shape == (3, 4)


# ----------------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("eps, sens", [(0.5, 1.0), (2.0, 3.0)])
def test_laplace_noise_has_the_claimed_scale(eps, sens):
    rng = np.random.default_rng(5)
    led = BudgetLedger(100.0)
    out = laplace_mechanism(np.zeros(N), epsilon=eps, l1_sensitivity=sens, rng=rng, ledger=led)
    (entry,) = led.entries
    assert entry.cost == pytest.approx(eps**2 / 2)  # ε-DP ⇒ ε²/2-zCDP
    b = sens / entry.params["epsilon"]  # the scale the ledger's ε implies
    # Var(Lap(b)) = 2b²; Var of the sample variance ≈ (μ4 - σ⁴)/n = 20 b⁴ / n
    z = (out.var(ddof=1) - 2 * b * b) / math.sqrt(20 * b**4 / N)
    assert abs(z) < 4.5
    assert stats.kstest(out, "laplace", args=(0, b)).pvalue > P_MIN


# ----------------------------------------------------------------------------- selection
def _em_probs(q, eps, sens):
    w = np.exp(eps * (np.asarray(q) - max(q)) / (2 * sens))
    return w / w.sum()


def _pf_probs(q, eps, sens):
    """Exact permute-and-flip law by enumerating all orders."""
    q = np.asarray(q, float)
    p = np.exp(eps * (q - q.max()) / (2 * sens))
    out = np.zeros(q.size)
    perms = list(itertools.permutations(range(q.size)))
    for perm in perms:
        reach = 1.0
        for r in perm:
            out[r] += reach * p[r] / len(perms)
            reach *= 1 - p[r]
    return out


def _frequencies(draw, k, n):
    return np.bincount([draw() for _ in range(n)], minlength=k)


SCORES = [0.0, 1.0, 2.0, 3.0, 5.0]


@pytest.mark.parametrize("eps, sens", [(1.0, 1.0), (1.5, 2.0)])
def test_exponential_mechanism_frequencies(eps, sens):
    rng = np.random.default_rng(2024)
    n = 30_000
    counts = _frequencies(lambda: exponential_mechanism(SCORES, epsilon=eps, sensitivity=sens, rng=rng), 5, n)
    expected = n * _em_probs(SCORES, eps, sens)
    # probabilities ∝ exp(ε q / (2Δ))
    assert stats.chisquare(counts, expected).pvalue > P_MIN


def test_report_noisy_max_gumbel_is_exponential_mechanism():
    rng = np.random.default_rng(7)
    n, eps, sens = 30_000, 1.2, 1.0
    counts = _frequencies(
        lambda: report_noisy_max(SCORES, epsilon=eps, sensitivity=sens, rng=rng, noise="gumbel"), 5, n
    )
    assert stats.chisquare(counts, n * _em_probs(SCORES, eps, sens)).pvalue > P_MIN


def test_permute_and_flip_frequencies_and_rnm_exponential_equivalence():
    eps, sens, n = 1.0, 1.0, 30_000
    q = [0.0, 1.0, 2.5, 3.0]
    exact = _pf_probs(q, eps, sens)
    rng = np.random.default_rng(3)
    pf = _frequencies(lambda: permute_and_flip(q, epsilon=eps, sensitivity=sens, rng=rng), 4, n)
    assert stats.chisquare(pf, n * exact).pvalue > P_MIN
    rnm = _frequencies(lambda: report_noisy_max(q, epsilon=eps, sensitivity=sens, rng=rng, noise="exponential"), 4, n)
    assert stats.chisquare(rnm, n * exact).pvalue > P_MIN
    # permute-and-flip puts more mass on the best candidate than the exponential mechanism
    assert exact[-1] > _em_probs(q, eps, sens)[-1]


def test_report_noisy_max_laplace_prefers_the_best():
    rng = np.random.default_rng(9)
    picks = _frequencies(
        lambda: report_noisy_max([0.0, 0.0, 50.0], epsilon=1.0, sensitivity=1.0, rng=rng, noise="laplace"), 3, 2000
    )
    assert picks[2] > 1900


def test_exponential_mechanism_huge_scores_no_overflow():
    rng = np.random.default_rng(1)
    assert exponential_mechanism([1e300, 0.0, -1e300], epsilon=1.0, sensitivity=1.0, rng=rng) == 0
    assert permute_and_flip([1e300, 0.0, -1e300], epsilon=1.0, sensitivity=1.0, rng=rng) == 0


def test_selection_ledger_costs():
    rng = np.random.default_rng(0)
    led = BudgetLedger(10.0)
    exponential_mechanism([1, 2], epsilon=2.0, sensitivity=1.0, rng=rng, ledger=led, label="em")
    report_noisy_max([1, 2], epsilon=2.0, sensitivity=1.0, rng=rng, ledger=led, noise="gumbel")
    report_noisy_max([1, 2], epsilon=2.0, sensitivity=1.0, rng=rng, ledger=led, noise="laplace")
    permute_and_flip([1, 2], epsilon=2.0, sensitivity=1.0, rng=rng, ledger=led)
    assert [e.cost for e in led.entries] == pytest.approx([0.5, 0.5, 2.0, 2.0])
    assert led.entries[0].label == "em"


# ----------------------------------------------------------------------------- no noise on refusal
def _calls(led):
    return {
        "gaussian": lambda rng: gaussian_mechanism([1.0, 2.0], sigma=0.01, l2_sensitivity=1.0, rng=rng, ledger=led),
        "laplace": lambda rng: laplace_mechanism([1.0, 2.0], epsilon=10.0, l1_sensitivity=1.0, rng=rng, ledger=led),
        "exponential": lambda rng: exponential_mechanism([1, 2], epsilon=10.0, sensitivity=1.0, rng=rng, ledger=led),
        "rnm": lambda rng: report_noisy_max([1, 2], epsilon=10.0, sensitivity=1.0, rng=rng, ledger=led),
        "pf": lambda rng: permute_and_flip([1, 2], epsilon=10.0, sensitivity=1.0, rng=rng, ledger=led),
    }


@pytest.mark.parametrize("name", ["gaussian", "laplace", "exponential", "rnm", "pf"])
def test_overspend_raises_before_noise_is_drawn(name):
    led = BudgetLedger(0.1)
    rng = np.random.default_rng(42)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="overspend"):
        _calls(led)[name](rng)
    assert rng.bit_generator.state == state
    assert led.entries == () and led.spent == 0.0


BAD_CALLS = {
    "nan values": (
        lambda rng: gaussian_mechanism([1.0, float("nan")], sigma=1.0, l2_sensitivity=1.0, rng=rng),
        "non-finite",
    ),
    "zero sigma": (lambda rng: gaussian_mechanism([1.0], sigma=0.0, l2_sensitivity=1.0, rng=rng), "sigma"),
    "negative sigma": (lambda rng: gaussian_mechanism([1.0], sigma=-1.0, l2_sensitivity=1.0, rng=rng), "sigma"),
    "nan sigma": (lambda rng: gaussian_mechanism([1.0], sigma=float("nan"), l2_sensitivity=1.0, rng=rng), "sigma"),
    "zero l2": (lambda rng: gaussian_mechanism([1.0], sigma=1.0, l2_sensitivity=0.0, rng=rng), "l2_sensitivity"),
    "empty": (lambda rng: gaussian_mechanism([], sigma=1.0, l2_sensitivity=1.0, rng=rng), "empty"),
    "zero eps lap": (lambda rng: laplace_mechanism([1.0], epsilon=0.0, l1_sensitivity=1.0, rng=rng), "epsilon"),
    "nan eps lap": (lambda rng: laplace_mechanism([1.0], epsilon=float("nan"), l1_sensitivity=1.0, rng=rng), "epsilon"),
    "neg l1": (lambda rng: laplace_mechanism([1.0], epsilon=1.0, l1_sensitivity=-1.0, rng=rng), "l1_sensitivity"),
    "neg eps em": (lambda rng: exponential_mechanism([1, 2], epsilon=-1.0, sensitivity=1.0, rng=rng), "epsilon"),
    "nan score": (
        lambda rng: exponential_mechanism([1, float("nan")], epsilon=1.0, sensitivity=1.0, rng=rng),
        "non-finite",
    ),
    "2d scores": (lambda rng: permute_and_flip([[1, 2]], epsilon=1.0, sensitivity=1.0, rng=rng), "1-d"),
    "zero sens": (lambda rng: permute_and_flip([1, 2], epsilon=1.0, sensitivity=0.0, rng=rng), "sensitivity"),
    "bad noise": (lambda rng: report_noisy_max([1, 2], epsilon=1.0, sensitivity=1.0, rng=rng, noise="cauchy"), "noise"),
    "gdp selection": (
        lambda rng: exponential_mechanism(
            [1, 2], epsilon=1.0, sensitivity=1.0, rng=rng, ledger=BudgetLedger(1.0, currency="gdp")
        ),
        "GDP",
    ),
    "bad ledger": (lambda rng: gaussian_mechanism([1.0], sigma=1.0, l2_sensitivity=1.0, rng=rng, ledger=0.5), "ledger"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_raises_and_draws_nothing(case):
    call, match = BAD_CALLS[case]
    rng = np.random.default_rng(42)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        call(rng)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("rng", [None, 0, np.random.RandomState(0)])
def test_rng_must_be_a_generator(rng):
    with pytest.raises(ValueError, match="Generator"):
        gaussian_mechanism([1.0], sigma=1.0, l2_sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match="Generator"):
        exponential_mechanism([1.0], epsilon=1.0, sensitivity=1.0, rng=rng)


def test_ledger_charged_amount_matches_accounting():
    rng = np.random.default_rng(0)
    led = BudgetLedger(2.0)
    gaussian_mechanism(np.zeros(3), sigma=2.0, l2_sensitivity=3.0, rng=rng, ledger=led, label="g")
    assert led.spent == pytest.approx(acc.gaussian_zcdp(2.0, 3.0))
