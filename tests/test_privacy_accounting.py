"""Accounting: Props. 1-4, Eq. 5.1, MST's numerical ρ, CKS 2020, Gaussian DP.

Paper numbers refer to McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and
general approach to differentially private synthetic data", JPC 2021, arXiv:2108.04978.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from margsynth.privacy import accounting as acc

EPS_GRID = [0.01, 0.1, 0.3, 1.0, 2.0, 8.0, 30.0]
DELTA_GRID = [1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1, 0.5]


def _prop4_eps_numeric(rho: float, delta: float) -> float:
    """Prop. 4 minimised over α numerically (independent of the closed form)."""
    L = math.log(1 / delta)
    # optimise over t = log(α - 1) for a well-scaled 1-d problem
    res = minimize_scalar(
        lambda t: rho * (1 + math.exp(t)) + L / math.exp(t),
        bounds=(-40, 40),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(res.fun)


def _cks_delta_numeric(rho: float, eps: float) -> float:
    """CKS 2020 Cor. 13 minimised over α numerically on a fine log grid + refinement."""

    def logd(t):
        a = 1 + math.exp(t)
        return (a - 1) * (a * rho - eps) + a * math.log1p(-1 / a) - math.log(a - 1)

    ts = np.linspace(-30, 30, 6001)
    vals = np.array([logd(t) for t in ts])
    i = int(np.argmin(vals))
    res = minimize_scalar(
        logd, bounds=(ts[max(i - 1, 0)], ts[min(i + 1, len(ts) - 1)]), method="bounded", options={"xatol": 1e-13}
    )
    return math.exp(min(0.0, min(float(res.fun), float(vals[i]))))


# ----------------------------------------------------------------------------- Eq. 5.1
@pytest.mark.parametrize("delta", DELTA_GRID)
@pytest.mark.parametrize("eps", EPS_GRID)
def test_eq51_sigma_gives_exactly_epsilon(eps, delta):
    """Figure 4's sympy identity: α/σ² + log(1/δ)/(α-1) at α = 1 + σ sqrt(log 1/δ) equals ε."""
    sigma = acc.eq51_sigma(eps, delta)
    L = math.log(1 / delta)
    alpha = 1 + sigma * math.sqrt(L)
    assert alpha / sigma**2 + L / (alpha - 1) == pytest.approx(eps, rel=1e-12)
    assert acc.eq51_epsilon(sigma, delta) == pytest.approx(eps, rel=1e-12)
    # ... and that α is the optimal one: no α does better (Prop. 4 minimised numerically).
    assert _prop4_eps_numeric(1 / sigma**2, delta) == pytest.approx(eps, rel=1e-9)
    # NIST-MST is 1/σ²-zCDP (two sensitivity-1 measurements, Thm 1 + Prop. 3)
    assert acc.zcdp_to_dp(1 / sigma**2, delta) == pytest.approx(eps, rel=1e-12)
    assert acc.zcdp_rho(eps, delta) == pytest.approx(1 / sigma**2, rel=1e-12)


def test_eq51_beats_moments_accountant_integer_orders():
    """The contest minimised over α = 1..512 (§5 step 1); the closed form is at least as good."""
    eps, delta = 1.0, 2e-12
    sigma = acc.eq51_sigma(eps, delta)
    grid = min(acc.rdp_to_dp(a, a / sigma**2, delta) for a in range(2, 513))
    assert grid >= eps * (1 - 1e-12)
    assert grid - eps < 0.01  # and integer orders are nearly as good


def test_eq51_known_value():
    # σ = (sqrt(L) + sqrt(L + 1)) / 1 with L = log(1e9)
    L = math.log(1e9)
    assert acc.eq51_sigma(1.0, 1e-9) == pytest.approx(math.sqrt(L) + math.sqrt(L + 1), rel=1e-15)


# ----------------------------------------------------------------------------- Props 1-3
def test_prop1_gaussian_rdp_and_zcdp():
    assert acc.gaussian_zcdp(2.0, 3.0) == pytest.approx(9 / 8)
    assert acc.gaussian_rdp(5.0, 2.0, 3.0) == pytest.approx(5 * 9 / 8)
    assert acc.gaussian_sigma(acc.gaussian_zcdp(7.5, 2.0), 2.0) == pytest.approx(7.5)
    # MST appendix: σ = sqrt(3/(2ρ)) achieves ρ/3
    rho = 0.37
    assert acc.gaussian_sigma(rho / 3) == pytest.approx(math.sqrt(3 / (2 * rho)))
    # Theorem 1: Algorithm 1 is (α, α/(2σ²))-RDP
    assert acc.gaussian_rdp(3.0, 4.0) == pytest.approx(3 / (2 * 16))


def test_prop2_exponential_and_theorem3():
    assert acc.exponential_zcdp(2.0) == pytest.approx(0.5)
    assert acc.exponential_rdp(4.0, 2.0) == pytest.approx(2.0)
    assert acc.exponential_epsilon(acc.exponential_zcdp(0.7)) == pytest.approx(0.7)
    # Theorem 3: r-1 selections with ε = sqrt(8ρ/(r-1)) compose to ρ
    rho, r = 0.05, 15
    eps = acc.exponential_epsilon(rho / (r - 1))
    assert eps == pytest.approx(math.sqrt(8 * rho / (r - 1)))
    assert acc.compose_zcdp([acc.exponential_zcdp(eps)] * (r - 1)) == pytest.approx(rho, rel=1e-12)
    # Prop. 2's own parametrisation: ∝ exp(ε' q) with Δ is (2ε'Δ)²/8-zCDP
    eps_prime, Delta = 0.3, 2.0
    assert acc.exponential_zcdp(2 * eps_prime * Delta) == pytest.approx((2 * eps_prime * Delta) ** 2 / 8)


def test_prop3_composition_and_mst_split():
    rho = acc.zcdp_rho(1.0, 1e-9)
    assert acc.compose_zcdp([rho / 3] * 3) == pytest.approx(rho, rel=1e-15)
    assert acc.compose_rdp([0.1, 0.2]) == pytest.approx(0.3)
    assert acc.compose_zcdp([]) == 0.0
    # NIST-MST: two (α, α/(2σ²)) measurements compose to (α, α/σ²)
    s = 3.0
    assert acc.compose_rdp([acc.gaussian_rdp(4.0, s)] * 2) == pytest.approx(4.0 / s**2)


def test_prop4_rdp_to_dp():
    assert acc.rdp_to_dp(11.0, 0.5, 1e-5) == pytest.approx(0.5 + math.log(1e5) / 10)


def test_pure_dp_to_zcdp():
    assert acc.pure_dp_zcdp(1.0) == 0.5


# ----------------------------------------------------------------------------- numerical ρ
@pytest.mark.parametrize("delta", [1e-12, 1e-9, 1e-5, 0.01, 0.5])
@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 8.0, 40.0])
def test_zcdp_rho_is_largest_satisfying_prop4(eps, delta):
    rho = acc.zcdp_rho(eps, delta)
    # exact float maximiser of the library's bound
    assert acc.zcdp_to_dp(rho, delta) <= eps
    assert acc.zcdp_to_dp(float(np.nextafter(rho, math.inf)), delta) > eps
    # straddles an independent numerical minimisation of Prop. 4 over α
    assert _prop4_eps_numeric(rho, delta) <= eps * (1 + 1e-10)
    assert _prop4_eps_numeric(rho * (1 + 1e-9), delta) > eps
    # and agrees with the closed form (sqrt(L + ε) - sqrt(L))²
    L = math.log(1 / delta)
    assert rho == pytest.approx((math.sqrt(L + eps) - math.sqrt(L)) ** 2, rel=1e-12)


@pytest.mark.parametrize("delta", [1e-12, 1e-9, 1e-5, 0.01])
@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 8.0, 40.0])
def test_zcdp_rho_is_largest_satisfying_cks(eps, delta):
    rho = acc.zcdp_rho(eps, delta, conversion="cks")
    # exact float maximiser of the library's CKS bound ...
    assert acc.zcdp_delta(rho, eps, conversion="cks") <= delta
    assert acc.zcdp_delta(float(np.nextafter(rho, math.inf)), eps, conversion="cks") > delta
    # ... straddling an independent numerical minimisation over α
    assert _cks_delta_numeric(rho, eps) <= delta * (1 + 1e-9)
    assert _cks_delta_numeric(rho * (1 + 1e-9), eps) > delta
    assert acc.zcdp_delta(rho, eps, conversion="cks") == pytest.approx(delta, rel=1e-9)
    assert acc.zcdp_to_dp(rho, delta, conversion="cks") == pytest.approx(eps, rel=1e-9)
    # CKS is tighter: it allows a larger ρ than Prop. 4
    assert rho > acc.zcdp_rho(eps, delta)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.3, 2.0])
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_cks_never_looser_than_prop4(rho, eps):
    assert acc.zcdp_delta(rho, eps, conversion="cks") <= acc.zcdp_delta(rho, eps) * (1 + 1e-12)
    assert acc.zcdp_delta(rho, eps, conversion="cks") == pytest.approx(_cks_delta_numeric(rho, eps), rel=1e-8)


def test_prop4_delta_closed_form():
    rho, eps = 0.1, 2.0
    assert acc.zcdp_delta(rho, eps) == pytest.approx(math.exp(-((eps - rho) ** 2) / (4 * rho)))
    assert acc.zcdp_delta(3.0, 2.0) == 1.0
    assert acc.zcdp_to_dp(0.0, 1e-9) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 50.0), st.floats(1e-14, 0.5))
def test_zcdp_round_trip_property(eps, delta):
    for conv in acc.CONVERSIONS:
        rho = acc.zcdp_rho(eps, delta, conversion=conv)
        assert acc.zcdp_to_dp(rho, delta, conversion=conv) == pytest.approx(eps, rel=1e-8)


# ----------------------------------------------------------------------------- Gaussian DP
def test_gdp_delta_formula():
    for mu, eps in [(0.5, 0.1), (1.0, 1.0), (3.0, 2.0), (0.2, 3.0)]:
        expected = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        assert acc.gdp_delta(mu, eps) == pytest.approx(expected, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-9, 1e-5, 1e-2])
def test_gdp_round_trips(mu, delta):
    eps = acc.gdp_epsilon(mu, delta)
    if eps > 0:
        assert acc.gdp_delta(mu, eps) == pytest.approx(delta, rel=1e-9)
        assert acc.gdp_mu_for_dp(eps, delta) == pytest.approx(mu, rel=1e-9)
        # the returned μ never overshoots δ
        assert acc.gdp_delta(acc.gdp_mu_for_dp(eps, delta), eps) <= delta
    # (ε, δ) → μ → (ε, δ)
    for e in (0.1, 1.0, 10.0):
        m = acc.gdp_mu_for_dp(e, delta)
        assert acc.gdp_epsilon(m, delta) == pytest.approx(e, rel=1e-9)


def test_gdp_composition_and_notes_numbers():
    assert acc.compose_gdp([0.3] * 4) == pytest.approx(0.6)
    assert acc.gdp_mu(4.0, 2.0) == 0.5
    # docs/notes/adaptive_grid.md: 66 measurements, C = 150 at (1, 2.5e-5) -> σ ≈ 4290; C = 200 at (10, 2.5e-5) -> ≈ 784
    s1 = acc.gdp_sigma(1.0, 2.5e-5, sensitivity=150, compositions=66)
    s10 = acc.gdp_sigma(10.0, 2.5e-5, sensitivity=200, compositions=66)
    assert s1 == pytest.approx(4290, abs=1.0)
    assert s10 == pytest.approx(784, abs=1.0)
    mu = acc.compose_gdp([acc.gdp_mu(s1, 150)] * 66)
    assert acc.gdp_epsilon(mu, 2.5e-5) == pytest.approx(1.0, rel=1e-9)


def test_gdp_is_tighter_than_zcdp_for_gaussians():
    for mu in (0.1, 0.5, 2.0):
        for delta in (1e-9, 1e-5):
            e_gdp = acc.gdp_epsilon(mu, delta)
            rho = acc.gdp_to_zcdp(mu)
            assert e_gdp <= acc.zcdp_to_dp(rho, delta, conversion="cks") <= acc.zcdp_to_dp(rho, delta)


def test_gdp_epsilon_zero_when_delta_large():
    mu = 0.1
    assert acc.gdp_epsilon(mu, 0.5) == 0.0  # δ(0) = 2Φ(0.05) - 1 ≈ 0.04 < 0.5


# ----------------------------------------------------------------------------- bad input
BAD_EPS = [0.0, -1.0, float("nan"), float("inf"), "1", True, None]
BAD_DELTA = [0.0, 1.0, -0.1, 1.5, float("nan"), "0.1", None]
BAD_SIGMA = [0.0, -2.0, float("nan"), float("inf")]


@pytest.mark.parametrize("bad", BAD_EPS)
def test_bad_epsilon_raises(bad):
    for f in (
        lambda e: acc.eq51_sigma(e, 1e-9),
        lambda e: acc.zcdp_rho(e, 1e-9),
        lambda e: acc.zcdp_rho(e, 1e-9, conversion="cks"),
        lambda e: acc.zcdp_delta(0.1, e),
        lambda e: acc.gdp_mu_for_dp(e, 1e-9),
        lambda e: acc.gdp_sigma(e, 1e-9),
        acc.exponential_zcdp,
        acc.pure_dp_zcdp,
    ):
        with pytest.raises(ValueError, match="epsilon"):
            f(bad)


@pytest.mark.parametrize("bad", BAD_DELTA)
def test_bad_delta_raises(bad):
    for f in (
        lambda d: acc.eq51_sigma(1.0, d),
        lambda d: acc.eq51_epsilon(3.0, d),
        lambda d: acc.zcdp_rho(1.0, d),
        lambda d: acc.zcdp_to_dp(0.1, d),
        lambda d: acc.rdp_to_dp(2.0, 0.1, d),
        lambda d: acc.gdp_epsilon(1.0, d),
        lambda d: acc.gdp_mu_for_dp(1.0, d),
    ):
        with pytest.raises(ValueError, match="delta"):
            f(bad)


@pytest.mark.parametrize("bad", BAD_SIGMA)
def test_bad_sigma_raises(bad):
    for f in (acc.gaussian_zcdp, acc.gdp_mu, lambda s: acc.eq51_epsilon(s, 1e-9), lambda s: acc.gaussian_rdp(2, s)):
        with pytest.raises(ValueError, match="sigma"):
            f(bad)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="sensitivity"):
        acc.gaussian_zcdp(1.0, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        acc.gaussian_zcdp(1.0, float("nan"))
    with pytest.raises(ValueError, match="alpha"):
        acc.rdp_to_dp(1.0, 0.1, 1e-5)
    with pytest.raises(ValueError, match="alpha"):
        acc.gaussian_rdp(float("nan"), 1.0)
    with pytest.raises(ValueError, match="conversion"):
        acc.zcdp_rho(1.0, 1e-9, conversion="mironov2")
    with pytest.raises(ValueError, match="rho"):
        acc.zcdp_to_dp(-0.1, 1e-9)
    with pytest.raises(ValueError, match="rho"):
        acc.gaussian_sigma(0.0)
    with pytest.raises(ValueError, match="rho"):
        acc.compose_zcdp([0.1, float("nan")])
    with pytest.raises(ValueError, match="mu"):
        acc.compose_gdp([0.1, -1.0])
    with pytest.raises(ValueError, match="compositions"):
        acc.gdp_sigma(1.0, 1e-5, compositions=0)
    with pytest.raises(ValueError, match="iterable"):
        acc.compose_zcdp("0.1")


def test_docstring_examples():
    import doctest

    import margsynth.privacy.ledger as ledger_module

    for mod in (acc, ledger_module):
        res = doctest.testmod(mod)
        assert res.attempted > 0 and res.failed == 0, mod.__name__


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 20.0), st.floats(1e-14, 0.3))
def test_gdp_round_trip_property(mu, delta):
    eps = acc.gdp_epsilon(mu, delta)
    if eps > 1e-6:
        assert acc.gdp_mu_for_dp(eps, delta) == pytest.approx(mu, rel=1e-8)
        assert acc.gdp_delta(mu, eps) == pytest.approx(delta, rel=1e-8)


def test_gdp_curve_is_decreasing_and_pointwise():
    eps = np.linspace(0.0, 5.0, 11)
    curve = acc.gdp_curve(1.0, eps)
    assert np.all(np.diff(curve) < 0)
    assert curve[4] == acc.gdp_delta(1.0, eps[4])
    assert curve[0] == pytest.approx(2 * norm.cdf(0.5) - 1)


@pytest.mark.parametrize("eps, delta", [(0.3, 1e-9), (1.0, 2e-12), (8.0, 1e-6)])
def test_calibrate_gaussian_sigma(eps, delta):
    # two sensitivity-1 measurements under Prop. 4: exactly Eq. 5.1
    assert acc.calibrate_gaussian_sigma(eps, delta, compositions=2) == pytest.approx(
        acc.eq51_sigma(eps, delta), rel=1e-12
    )
    s_z = acc.calibrate_gaussian_sigma(eps, delta, sensitivity=3.0, compositions=5)
    assert acc.zcdp_to_dp(5 * acc.gaussian_zcdp(s_z, 3.0), delta) == pytest.approx(eps, rel=1e-9)
    s_c = acc.calibrate_gaussian_sigma(eps, delta, sensitivity=3.0, compositions=5, conversion="cks")
    s_g = acc.calibrate_gaussian_sigma(eps, delta, sensitivity=3.0, compositions=5, accounting="gdp")
    assert s_g < s_c < s_z  # GDP is exact for Gaussians, CKS tighter than Prop. 4
    assert acc.gdp_epsilon(acc.compose_gdp([acc.gdp_mu(s_g, 3.0)] * 5), delta) == pytest.approx(eps, rel=1e-9)
    with pytest.raises(ValueError, match="accounting"):
        acc.calibrate_gaussian_sigma(eps, delta, accounting="rdp")
    with pytest.raises(ValueError, match="compositions"):
        acc.calibrate_gaussian_sigma(eps, delta, compositions=0)
