"""Privacy accounting: Rényi DP / zCDP, Gaussian DP, and their (ε, δ) conversions.

References (numbers refer to McKenna, Miklau & Sheldon, "Winning the NIST Contest: A
scalable and general approach to differentially private synthetic data", Journal of
Privacy and Confidentiality 11(3), 2021, arXiv:2108.04978, unless stated otherwise):

- **Prop. 1** — the Gaussian mechanism with L2 sensitivity Δ and noise scale σ is
  ``(α, α Δ²/(2σ²))``-RDP for all α ≥ 1, i.e. ``Δ²/(2σ²)``-zCDP.
- **Prop. 2** — the exponential mechanism sampling ``r`` with probability
  ``∝ exp(ε q(D, r) / (2Δ))`` is ε-DP and ``(α, α ε²/8)``-RDP, i.e. ``ε²/8``-zCDP.
  (The paper writes the mechanism as ``∝ exp(ε' q)``, which is ``2ε'Δ``-DP; we use
  the standard parametrisation ``ε' = ε/(2Δ)``, as Algorithm 6 and Theorem 3 do.)
- **Prop. 3** — adaptive composition: RDP costs at the same α (hence zCDP ρ's) add.
- **Prop. 4** — ``(α, γ)``-RDP implies ``(γ + log(1/δ)/(α-1), δ)``-DP.
- **Eq. 5.1** — the closed-form noise scale of NIST-MST (two sensitivity-1
  Gaussian measurements, hence ``1/σ²``-zCDP):
  ``σ = (sqrt(log(1/δ)) + sqrt(log(1/δ) + ε)) / ε``.
- **Appendix A** (noise calibration for MST) — the largest ρ such that ρ-zCDP
  implies (ε, δ)-DP by Prop. 4, "found numerically" (:func:`zcdp_rho`).
- **CKS 2020** — Canonne, Kamath & Steinke, "The discrete Gaussian for
  differential privacy" (NeurIPS 2020), Prop. 12 / Cor. 13: ρ-zCDP implies
  (ε, δ)-DP with ``δ = inf_{α>1} exp((α-1)(αρ-ε)) / (α-1) · (1 - 1/α)^α``,
  a tighter conversion than Prop. 4 (``conversion="cks"``).
- **GDP** — Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 84(1), 2022,
  arXiv:1905.02383, as used by the adaptive-granularity mechanism (McKenna, NIST
  Temporal Map Challenge Sprint 3 write-up, "Noise calibration and proof of privacy";
  see docs/notes/adaptive_grid.md):
  Thm 2.7 (Gaussian noise σ on sensitivity Δ is ``Δ/σ``-GDP), Cor. 3.3
  (``μ_i``-GDP mechanisms compose to ``sqrt(Σ μ_i²)``-GDP), Cor. 2.13
  (μ-GDP is (ε, δ(ε))-DP for ``δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)``).
  The adaptive-granularity write-up prints the first term as ``Φ(ε/μ - μ/2)``;
  that is a typo (it would exceed 1/2 for large ε); Dong et al. have the sign
  used here.

All functions validate their inputs and raise ``ValueError`` echoing the bad value
(NaN, infinities, ε ≤ 0, δ ∉ (0, 1), σ ≤ 0, ...). Everything is plain float maths on
scalars; nothing here draws randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

__all__ = [
    "CONVERSIONS",
    "calibrate_gaussian_sigma",
    "check_delta",
    "check_epsilon",
    "check_sensitivity",
    "check_sigma",
    "compose_gdp",
    "compose_rdp",
    "compose_zcdp",
    "eq51_epsilon",
    "eq51_sigma",
    "exponential_epsilon",
    "exponential_rdp",
    "exponential_zcdp",
    "gaussian_rdp",
    "gaussian_sigma",
    "gaussian_zcdp",
    "gdp_curve",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_mu_for_dp",
    "gdp_sigma",
    "gdp_to_zcdp",
    "pure_dp_zcdp",
    "rdp_to_dp",
    "zcdp_delta",
    "zcdp_rho",
    "zcdp_to_dp",
]

#: The zCDP → (ε, δ) conversions offered: ``"prop4"`` (the paper's Prop. 4,
#: minimised over α) and ``"cks"`` (Canonne, Kamath & Steinke 2020, Cor. 13).
CONVERSIONS = ("prop4", "cks")


# ----------------------------------------------------------------------------- validation
def _real(name: str, value: object) -> float:
    """Coerce ``value`` to a float, refusing bools, NaN and non-numbers (all accounting functions)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{name} is NaN")
    return x


def _positive(name: str, value: object, *, finite: bool = True) -> float:
    """A strictly positive (and by default finite) real, else ``ValueError``."""
    x = _real(name, value)
    if finite and math.isinf(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return x


def _nonnegative(name: str, value: object) -> float:
    """A finite real ≥ 0 (RDP costs γ of Definition 5, zCDP ρ, GDP μ), else ``ValueError``."""
    x = _real(name, value)
    if math.isinf(x) or x < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {x!r}")
    return x


def check_epsilon(epsilon: object) -> float:
    """Validate a target ε of (ε, δ)-DP (Definition 2): finite and > 0."""
    return _positive("epsilon", epsilon)


def check_delta(delta: object) -> float:
    """Validate a target δ of (ε, δ)-DP (Definition 2): strictly inside (0, 1)."""
    x = _real("delta", delta)
    if not 0.0 < x < 1.0:
        raise ValueError(f"delta must be in the open interval (0, 1), got {x!r}")
    return x


def check_sigma(sigma: object) -> float:
    """Validate a Gaussian noise scale σ (Definition 3): finite and > 0."""
    return _positive("sigma", sigma)


def check_sensitivity(sensitivity: object, name: str = "sensitivity") -> float:
    """Validate a sensitivity Δ (Definition 6): finite and > 0."""
    return _positive(name, sensitivity)


def _check_conversion(conversion: str) -> str:
    """One of :data:`CONVERSIONS` (Prop. 4 or CKS 2020 Cor. 13), else ``ValueError``."""
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
    return conversion


def _check_alpha(alpha: object) -> float:
    """A Rényi order α of Definition 5, finite and > 1 (Prop. 4 divides by α - 1)."""
    a = _real("alpha", alpha)
    if not a > 1 or math.isinf(a):
        raise ValueError(f"Rényi order alpha must be finite and > 1, got {a!r}")
    return a


# ----------------------------------------------------------------------------- RDP / zCDP costs
def gaussian_rdp(alpha: float, sigma: float, sensitivity: float = 1.0) -> float:
    """RDP cost ``γ = α Δ² / (2σ²)`` of one Gaussian mechanism at order α (Prop. 1)."""
    a = _check_alpha(alpha)
    return a * gaussian_zcdp(sigma, sensitivity)


def gaussian_zcdp(sigma: float, sensitivity: float = 1.0) -> float:
    """zCDP cost ``ρ = Δ² / (2σ²)`` of the Gaussian mechanism (Prop. 1: ``(α, αρ)``-RDP for all α).

    >>> gaussian_zcdp(1.0)
    0.5
    """
    s = check_sigma(sigma)
    d = check_sensitivity(sensitivity)
    return d * d / (2.0 * s * s)


def gaussian_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """Noise scale ``σ = Δ / sqrt(2ρ)`` making one Gaussian mechanism ρ-zCDP (Prop. 1 inverted).

    MST's appendix: ``σ = sqrt(3/(2ρ))`` for a ρ/3 share is ``gaussian_sigma(rho / 3)``.
    """
    r = _positive("rho", rho)
    d = check_sensitivity(sensitivity)
    return d / math.sqrt(2.0 * r)


def exponential_rdp(alpha: float, epsilon: float) -> float:
    """RDP cost ``α ε²/8`` of the ε-DP exponential mechanism ``∝ exp(ε q/(2Δ))`` (Prop. 2)."""
    a = _check_alpha(alpha)
    return a * exponential_zcdp(epsilon)


def exponential_zcdp(epsilon: float) -> float:
    """zCDP cost ``ρ = ε²/8`` of the exponential mechanism ``∝ exp(ε q/(2Δ))`` (Prop. 2).

    Prop. 2 states ``(α, α(2ε'Δ)²/8)``-RDP for the mechanism ``∝ exp(ε' q)``; with
    ``ε' = ε/(2Δ)`` this is ``α ε²/8`` (Theorem 3's proof, Algorithm 6 step 5).
    """
    e = check_epsilon(epsilon)
    return e * e / 8.0


def exponential_epsilon(rho: float) -> float:
    """ε of an exponential mechanism costing ρ zCDP: ``ε = sqrt(8ρ)`` (Prop. 2 inverted).

    Algorithm 6 step 5: ``ε = sqrt(8ρ/(r-1))`` is ``exponential_epsilon(rho / (r - 1))``.
    """
    r = _positive("rho", rho)
    return math.sqrt(8.0 * r)


def pure_dp_zcdp(epsilon: float) -> float:
    """zCDP cost ``ε²/2`` of any ε-DP mechanism (Bun & Steinke 2016, Prop. 1.4).

    Used for the Laplace mechanism, report-noisy-max with Laplace/exponential noise
    and permute-and-flip (ref. [43]), which are ε-DP but lack the exponential
    mechanism's tighter ``ε²/8`` RDP bound of Prop. 2 (paper §6 discusses this).
    """
    e = check_epsilon(epsilon)
    return e * e / 2.0


def compose_rdp(gammas: Iterable[float]) -> float:
    """Adaptive composition at one order α: RDP costs add (Prop. 3)."""
    return _sum_nonneg("RDP cost", gammas)


def compose_zcdp(rhos: Iterable[float]) -> float:
    """Adaptive composition of zCDP mechanisms: ρ's add (Prop. 3 applied at every α).

    >>> compose_zcdp([0.1, 0.2, 0.3])
    0.6
    """
    return _sum_nonneg("rho", rhos)


def _sum_nonneg(name: str, values: Iterable[float]) -> float:
    """Exactly rounded sum (``math.fsum``) of validated non-negative costs (Prop. 3)."""
    if isinstance(values, (str, bytes)):
        raise ValueError(f"expected an iterable of {name} values, got {values!r}")
    return math.fsum(_nonnegative(name, v) for v in values)


# ----------------------------------------------------------------------------- RDP / zCDP -> (ε, δ)
def rdp_to_dp(alpha: float, gamma: float, delta: float) -> float:
    """ε such that ``(α, γ)``-RDP implies (ε, δ)-DP: ``ε = γ + log(1/δ)/(α-1)`` (Prop. 4)."""
    a = _check_alpha(alpha)
    g = _nonnegative("gamma", gamma)
    d = check_delta(delta)
    return g + math.log(1.0 / d) / (a - 1.0)


def _prop4_epsilon(rho: float, log_inv_delta: float) -> float:
    """``min_{α>1} αρ + L/(α-1)`` (Prop. 4 applied to ``(α, αρ)``-RDP); attained at
    ``α* = 1 + sqrt(L/ρ)`` (the α of Theorem 2's proof), value ``ρ + 2 sqrt(ρ L)``."""
    if rho == 0.0:
        return 0.0
    return rho + 2.0 * math.sqrt(rho * log_inv_delta)


def _cks_log_delta(rho: float, epsilon: float) -> float:
    """``log δ`` of the CKS 2020 conversion (Cor. 13):
    ``min_{α>1} (α-1)(αρ-ε) + α log(1-1/α) - log(α-1)``, clipped at 0 (δ ≤ 1).

    The objective is strictly convex in α (second derivative ``2ρ + 1/(α(α-1))``) with
    derivative ``(2α-1)ρ - ε + log(1-1/α)``, whose unique root is found by Brent's method.
    """
    if rho == 0.0:
        return -math.inf

    def f(a: float) -> float:
        return (a - 1.0) * (a * rho - epsilon) + a * math.log1p(-1.0 / a) - math.log(a - 1.0)

    def g(a: float) -> float:
        return (2.0 * a - 1.0) * rho - epsilon + math.log1p(-1.0 / a)

    lo = 1.0 + 1e-12
    hi = max(2.0, (epsilon + 1.0) / (2.0 * rho) + 2.0)  # g(hi) > 0 (see docstring of zcdp_delta)
    if g(lo) >= 0.0:
        a_star = lo
    else:
        a_star = brentq(g, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    return min(0.0, f(a_star))


def zcdp_delta(rho: float, epsilon: float, *, conversion: str = "prop4") -> float:
    """δ for which ρ-zCDP implies (ε, δ)-DP.

    ``conversion="prop4"`` (Prop. 4, best α): ``δ = exp(-(ε-ρ)²/(4ρ))`` for ε > ρ, else 1.
    ``conversion="cks"`` (Canonne, Kamath & Steinke 2020, Cor. 13):
    ``δ = inf_{α>1} exp((α-1)(αρ-ε)) / (α-1) · (1-1/α)^α``, never larger than Prop. 4's.
    The search bracket for the CKS α uses ``α_hi = (ε+1)/(2ρ) + 2``, where the derivative
    ``(2α-1)ρ - ε + log(1-1/α) ≥ (2α-1)ρ - ε - 1/(α-1)`` is already positive.
    """
    r = _nonnegative("rho", rho)
    e = check_epsilon(epsilon)
    conversion = _check_conversion(conversion)
    if r == 0.0:
        return 0.0
    if conversion == "prop4":
        if e <= r:
            return 1.0
        return math.exp(-((e - r) ** 2) / (4.0 * r))
    return math.exp(_cks_log_delta(r, e))


def zcdp_to_dp(rho: float, delta: float, *, conversion: str = "prop4") -> float:
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP under the chosen conversion.

    ``"prop4"``: ``min_α αρ + log(1/δ)/(α-1) = ρ + 2 sqrt(ρ log(1/δ))`` (Prop. 4 with the
    minimising α of Theorem 2's proof). ``"cks"``: solves ``zcdp_delta(ρ, ε, "cks") = δ``
    for ε by Brent's method (δ is decreasing in ε).

    >>> round(zcdp_to_dp(0.5, 1e-5), 6)
    5.298526
    """
    r = _nonnegative("rho", rho)
    d = check_delta(delta)
    conversion = _check_conversion(conversion)
    if r == 0.0:
        return 0.0
    L = math.log(1.0 / d)
    eps_prop4 = _prop4_epsilon(r, L)
    if conversion == "prop4":
        return eps_prop4
    target = math.log(d)
    # CKS is never looser than Prop. 4, so eps_prop4 brackets the root from above.
    hi = eps_prop4
    if _cks_log_delta(r, hi) > target:  # numerical safety: widen
        while _cks_log_delta(r, hi) > target:
            hi *= 2.0
    lo = 1e-300
    if _cks_log_delta(r, lo) <= target:
        return 0.0
    e = brentq(lambda e: _cks_log_delta(r, e) - target, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    # report a certified bound: the root moved up to a float that passes the very test
    # zcdp_rho calibrates with, so a spend never reads as more (or less) private than it is
    return _snap_up(e, lambda x: math.exp(_cks_log_delta(r, x)) <= d)


def _snap_up(x: float, ok: Callable[[float], bool]) -> float:
    """A float at or above ``x`` that satisfies the monotone test ``ok`` (steps of one
    ulp, doubling after each failure, so at most about 60 evaluations): turns a root
    found to a tolerance into a bound that holds exactly in floating point."""
    x = float(x)
    step = float(np.spacing(x)) if x > 0 else 5e-324
    y = x
    for _ in range(2100):
        if ok(y):
            return y
        y = x + step
        step *= 2.0
    raise ValueError(f"no epsilon bound found above {x!r}")  # pragma: no cover - ok() holds for large eps


def zcdp_rho(epsilon: float, delta: float, *, conversion: str = "prop4") -> float:
    """The largest ρ such that ρ-zCDP implies (ε, δ)-DP — found numerically, as in MST's
    appendix ("Noise calibration for MST", Prop. 4), or with the CKS 2020 conversion.

    The bound is monotone in ρ, so the root is bracketed and found by Brent's method, then
    moved to the largest double that still satisfies the bound (the next double up does not):
    the result is the exact float maximiser, not merely an approximation of it.
    With ``"prop4"`` the answer equals the closed form ``(sqrt(L+ε) - sqrt(L))²``,
    ``L = log(1/δ)`` (Eq. 5.1 rearranged; checked in the tests).

    >>> round(zcdp_rho(1.0, 1e-9), 8)
    0.01178116
    """
    e = check_epsilon(epsilon)
    d = check_delta(delta)
    conversion = _check_conversion(conversion)
    L = math.log(1.0 / d)
    log_d = math.log(d)

    if conversion == "prop4":

        def ok(r: float) -> bool:
            return _prop4_epsilon(r, L) <= e

        def gap(r: float) -> float:
            return _prop4_epsilon(r, L) - e

    else:

        def ok(r: float) -> bool:  # exactly the test zcdp_delta(r, e, "cks") <= δ
            return math.exp(_cks_log_delta(r, e)) <= d

        def gap(r: float) -> float:
            return _cks_log_delta(r, e) - log_d

    lo = (math.sqrt(L + e) - math.sqrt(L)) ** 2 * 0.5  # satisfies Prop. 4, hence CKS
    hi = max(2.0 * lo, 1e-300)
    while ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e300:  # pragma: no cover - unreachable for finite ε
            raise ValueError(f"no finite rho bound for epsilon={e}, delta={d}")
    while not ok(lo):  # pragma: no cover - defensive
        lo *= 0.5
    r = brentq(gap, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=1000)
    # Snap to the largest float satisfying the bound.
    for _ in range(10_000):
        if ok(r):
            break
        r = np.nextafter(r, 0.0)
    for _ in range(10_000):
        up = float(np.nextafter(r, math.inf))
        if not ok(up):
            break
        r = up
    return float(r)


# ----------------------------------------------------------------------------- Eq. 5.1
def eq51_sigma(epsilon: float, delta: float) -> float:
    """NIST-MST's noise scale, Eq. 5.1: ``σ = (sqrt(log(1/δ)) + sqrt(log(1/δ) + ε)) / ε``.

    NIST-MST runs Algorithm 1 twice with sensitivity 1 (Theorem 1), so it is
    ``(α, α/σ²)``-RDP (Prop. 3) and by Prop. 4 ``(α/σ² + log(1/δ)/(α-1), δ)``-DP; with
    ``α = 1 + σ sqrt(log(1/δ))`` this equals ε exactly (Theorem 2, Figure 4's sympy check;
    see :func:`eq51_epsilon`).

    >>> round(eq51_sigma(1.0, 1e-9), 6)
    9.213104
    """
    e = check_epsilon(epsilon)
    d = check_delta(delta)
    L = math.log(1.0 / d)
    return (math.sqrt(L) + math.sqrt(L + e)) / e


def eq51_epsilon(sigma: float, delta: float) -> float:
    """The ε that Theorem 2's proof assigns to noise scale σ: ``α/σ² + log(1/δ)/(α-1)``
    evaluated at ``α = 1 + σ sqrt(log(1/δ))`` (Prop. 4 on the ``(α, α/σ²)``-RDP of NIST-MST).

    Figure 4's sympy identity says ``eq51_epsilon(eq51_sigma(ε, δ), δ) == ε``.
    """
    s = check_sigma(sigma)
    d = check_delta(delta)
    L = math.log(1.0 / d)
    alpha = 1.0 + s * math.sqrt(L)
    return alpha / s**2 + L / (alpha - 1.0)


# ----------------------------------------------------------------------------- Gaussian DP
def gdp_mu(sigma: float, sensitivity: float = 1.0) -> float:
    """μ = Δ/σ: the Gaussian mechanism is μ-GDP (Dong, Roth & Su 2019, Thm 2.7; AGM write-up)."""
    s = check_sigma(sigma)
    d = check_sensitivity(sensitivity)
    return d / s


def compose_gdp(mus: Iterable[float]) -> float:
    """Adaptive composition of μ_i-GDP mechanisms: ``sqrt(Σ μ_i²)``-GDP (Dong et al. Cor. 3.3).

    >>> compose_gdp([3.0, 4.0])
    5.0
    """
    if isinstance(mus, (str, bytes)):
        raise ValueError(f"expected an iterable of mu values, got {mus!r}")
    return math.sqrt(math.fsum(_nonnegative("mu", m) ** 2 for m in mus))


def gdp_to_zcdp(mu: float) -> float:
    """ρ = μ²/2: a μ-GDP Gaussian mechanism (μ = Δ/σ) is μ²/2-zCDP (Prop. 1)."""
    m = _nonnegative("mu", mu)
    return m * m / 2.0


def _gdp_log_delta(mu: float, epsilon: float) -> float:
    """``log δ(ε)`` for μ-GDP (Dong et al. Cor. 2.13), computed in log space:
    ``δ = Φ(a) (1 - exp(ε + log Φ(b) - log Φ(a)))``, ``a = -ε/μ + μ/2``, ``b = -ε/μ - μ/2``."""
    la = float(log_ndtr(-epsilon / mu + mu / 2.0))
    lb = float(log_ndtr(-epsilon / mu - mu / 2.0))
    diff = epsilon + lb - la
    if diff >= 0.0:  # only through rounding; δ is positive in exact arithmetic
        return -math.inf
    return la + math.log(-math.expm1(diff))


def gdp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: ``Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong et al. Cor. 2.13).

    >>> round(gdp_delta(1.0, 1.0), 6)
    0.126937
    """
    m = _positive("mu", mu)
    e = _nonnegative("epsilon", epsilon)
    return math.exp(_gdp_log_delta(m, e))


def gdp_curve(mu: float, epsilons: Iterable[float]) -> np.ndarray:
    """The (ε, δ(ε)) privacy curve of μ-GDP at the given ε's (Dong et al. Cor. 2.13): every
    point of it holds simultaneously. Returns the δ's as an array."""
    return np.array([gdp_delta(mu, e) for e in epsilons], dtype=np.float64)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with μ-GDP ⇒ (ε, δ)-DP: solves ``gdp_delta(μ, ε) = δ`` (Cor. 2.13).

    δ(ε) decreases from ``δ(0) = 2Φ(μ/2) - 1`` to 0, so the root is unique (0 if δ ≥ δ(0)).
    """
    m = _nonnegative("mu", mu)
    d = check_delta(delta)
    if m == 0.0:
        return 0.0
    target = math.log(d)
    if _gdp_log_delta(m, 0.0) <= target:
        return 0.0
    hi = max(1.0, m * m)
    while _gdp_log_delta(m, hi) > target:
        hi *= 2.0
    e = brentq(lambda e: _gdp_log_delta(m, e) - target, 0.0, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    # a certified bound: the same test gdp_mu_for_dp calibrates with (see _snap_up)
    return _snap_up(e, lambda x: math.exp(_gdp_log_delta(m, x)) <= d)


def gdp_mu_for_dp(epsilon: float, delta: float) -> float:
    """The largest μ such that μ-GDP implies (ε, δ)-DP (Dong et al. Cor. 2.13 inverted in μ).

    δ(ε) is increasing in μ (from 0 to 1), so the root of ``gdp_delta(μ, ε) = δ`` is unique.
    This is the analytic-Gaussian calibration the AGM write-up uses.

    >>> mu = gdp_mu_for_dp(1.0, 1e-5)
    >>> round(mu, 6), gdp_delta(mu, 1.0) <= 1e-5
    (0.268051, True)
    """
    e = check_epsilon(epsilon)
    d = check_delta(delta)
    target = math.log(d)
    lo, hi = 1e-3, 1.0
    while _gdp_log_delta(lo, e) > target:
        lo *= 0.5
    while _gdp_log_delta(hi, e) < target:
        lo, hi = hi, hi * 2.0
    mu = brentq(lambda m: _gdp_log_delta(m, e) - target, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    while math.exp(_gdp_log_delta(mu, e)) > d:  # never report a μ whose gdp_delta overshoots δ
        mu = float(np.nextafter(mu, 0.0))
    return float(mu)


def gdp_sigma(epsilon: float, delta: float, sensitivity: float = 1.0, compositions: int = 1) -> float:
    """Noise scale for ``compositions`` Gaussian measurements of L2 sensitivity Δ whose
    composition is (ε, δ)-DP: ``σ = Δ sqrt(k) / μ(ε, δ)`` (Thm 2.7 + Cor. 3.3 + Cor. 2.13).

    The AGM write-up uses k = 66 measurements with C = 150 at (1, 2.5e-5): σ ≈ 4290
    (the write-up quotes 5739.36; see docs/notes/adaptive_grid.md).
    """
    d = check_sensitivity(sensitivity)
    if isinstance(compositions, bool) or not isinstance(compositions, (int, np.integer)) or compositions < 1:
        raise ValueError(f"compositions must be a positive integer, got {compositions!r}")
    mu = gdp_mu_for_dp(epsilon, delta)
    return d * math.sqrt(int(compositions)) / mu


def calibrate_gaussian_sigma(
    epsilon: float,
    delta: float,
    *,
    sensitivity: float = 1.0,
    compositions: int = 1,
    accounting: str = "zcdp",
    conversion: str = "prop4",
) -> float:
    """Smallest σ such that ``compositions`` Gaussian measurements (each of L2 sensitivity Δ
    and noise σ, adaptively composed) are (ε, δ)-DP.

    ``accounting="zcdp"``: ρ = :func:`zcdp_rho` (Prop. 4 or CKS) split evenly, each share
    ``Δ²/(2σ²)`` (Props. 1, 3) — so ``σ = Δ sqrt(k / (2ρ))``; with k = 2, Δ = 1 and Prop. 4 this
    is exactly Eq. 5.1. ``accounting="gdp"``: :func:`gdp_sigma` (Dong et al. Thm 2.7,
    Cor. 3.3, Cor. 2.13), never larger than the zCDP answer.

    >>> round(calibrate_gaussian_sigma(1.0, 1e-9, compositions=2), 6)  # = Eq. 5.1
    9.213104
    >>> round(calibrate_gaussian_sigma(1.0, 1e-9, compositions=2, accounting="gdp"), 5)
    7.77148
    """
    if accounting not in ("zcdp", "gdp"):
        raise ValueError(f"accounting must be 'zcdp' or 'gdp', got {accounting!r}")
    if isinstance(compositions, bool) or not isinstance(compositions, (int, np.integer)) or compositions < 1:
        raise ValueError(f"compositions must be a positive integer, got {compositions!r}")
    d = check_sensitivity(sensitivity)
    if accounting == "gdp":
        return gdp_sigma(epsilon, delta, d, compositions)
    rho = zcdp_rho(epsilon, delta, conversion=conversion)
    return d * math.sqrt(int(compositions) / (2.0 * rho))
