"""Symbolic checks of the (ε, δ) ↔ ρ conversions of ``margsynth.privacy.accounting``.

McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", J. Privacy and Confidentiality 11(3), 2021,
arXiv:2108.04978: Prop. 4 (RDP → (ε, δ)), Eq. 5.1 and Theorem 2 (NIST-MST's noise scale),
and the supplement's Figure 4, which verifies Theorem 2's algebra with sympy. Canonne, Kamath
& Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020, arXiv:2004.00010,
Prop. 12 / Cor. 13 (the tighter ``conversion="cks"``).

Each relation is derived symbolically here, then compared with the numerical implementation
on a grid of (ε, δ) / (ρ, ε).
"""

from __future__ import annotations

import itertools
import math

import pytest

from margsynth.privacy import accounting as acc

sp = pytest.importorskip("sympy")

alpha, eps, delta, sigma, rho, L = sp.symbols("alpha epsilon delta sigma rho L", positive=True)

EPSILONS = (0.05, 0.3, 1.0, 3.0, 8.0, 20.0)
DELTAS = (1e-3, 1e-5, 1e-9, 2.2820610e-12)


def test_figure4_theorem2_simplifies_to_epsilon():
    """Figure 4 of the supplement: α/σ² + log(1/δ)/(α − 1) at α = 1 + σ sqrt(log 1/δ) and
    σ of Eq. 5.1 simplifies to ε — and our eq51_epsilon(eq51_sigma(ε, δ), δ) is ε on a grid."""
    expr = alpha / sigma**2 + sp.log(1 / delta) / (alpha - 1)
    expr = expr.subs(alpha, 1 + sigma * sp.sqrt(sp.log(1 / delta)))
    expr = expr.subs(sigma, (sp.sqrt(sp.log(1 / delta)) + sp.sqrt(sp.log(1 / delta) + eps)) / eps)
    assert sp.simplify(expr - eps) == 0
    sigma_expr = sp.lambdify((eps, delta), (sp.sqrt(sp.log(1 / delta)) + sp.sqrt(sp.log(1 / delta) + eps)) / eps)
    for e, d in itertools.product(EPSILONS, DELTAS):
        s = acc.eq51_sigma(e, d)
        assert s == pytest.approx(sigma_expr(e, d), rel=1e-14)
        assert acc.eq51_epsilon(s, d) == pytest.approx(e, rel=1e-12)


def test_prop4_optimal_alpha_and_rho_closed_forms():
    """Prop. 4 on (α, αρ)-RDP: ε(α) = αρ + L/(α − 1), L = log 1/δ. Its minimiser over α > 1 is
    α* = 1 + sqrt(L/ρ) (Theorem 2's α, with ρ = 1/σ²), the minimum ρ + 2 sqrt(ρ L), and solving
    that for ρ gives the largest ρ with ρ-zCDP ⇒ (ε, δ)-DP: (sqrt(L + ε) − sqrt(L))²."""
    f = alpha * rho + L / (alpha - 1)
    crit = [a for a in sp.solve(sp.diff(f, alpha), alpha) if sp.simplify(a - 1).is_positive]
    assert len(crit) == 1
    a_star = crit[0]
    assert sp.simplify(a_star - (1 + sp.sqrt(L / rho))) == 0
    assert sp.simplify(sp.diff(f, alpha, 2).subs(alpha, a_star)).is_positive  # a minimum
    eps_of_rho = sp.simplify(f.subs(alpha, a_star))
    assert sp.simplify(eps_of_rho - (rho + 2 * sp.sqrt(rho * L))) == 0
    # invert: the root of eps_of_rho = ε in ρ > 0
    roots = sp.solve(sp.Eq(eps_of_rho, eps), rho)
    rho_of_eps = [r for r in roots if all(sp.N(r.subs({L: lv, eps: ev})) > 0 for lv, ev in [(3, 1), (20, 0.3)])]
    assert len(rho_of_eps) == 1
    rho_expr = rho_of_eps[0]
    assert sp.simplify(rho_expr - (sp.sqrt(L + eps) - sp.sqrt(L)) ** 2) == 0
    # δ as a function of (ρ, ε): solve ρ + 2 sqrt(ρ L) = ε for L, δ = exp(−L)
    L_of = sp.solve(sp.Eq(eps_of_rho, eps), L)
    assert len(L_of) == 1 and sp.simplify(L_of[0] - (eps - rho) ** 2 / (4 * rho)) == 0
    # Theorem 2: NIST-MST's two sensitivity-1 Gaussian measurements cost ρ = 2 · 1/(2σ²) = 1/σ²,
    # and Eq. 5.1's σ is exactly 1/sqrt(ρ*)
    sigma51 = (sp.sqrt(L) + sp.sqrt(L + eps)) / eps
    assert sp.simplify(1 / sigma51**2 - rho_expr) == 0

    eps_num = sp.lambdify((rho, L), eps_of_rho)
    rho_num = sp.lambdify((eps, L), rho_expr)
    for e, d in itertools.product(EPSILONS, DELTAS):
        lv = math.log(1 / d)
        r = acc.zcdp_rho(e, d, conversion="prop4")
        assert r == pytest.approx(rho_num(e, lv), rel=1e-12)
        assert acc.zcdp_to_dp(r, d, conversion="prop4") == pytest.approx(eps_num(r, lv), rel=1e-14)
        assert acc.zcdp_to_dp(r, d, conversion="prop4") <= e  # the float ρ never overspends
        assert acc.zcdp_delta(r, e, conversion="prop4") == pytest.approx(d, rel=1e-9)
        assert acc.calibrate_gaussian_sigma(e, d, compositions=2) == pytest.approx(acc.eq51_sigma(e, d), rel=1e-12)
        # α* plugged into Prop. 4 (rdp_to_dp) reproduces ε
        a = 1 + math.sqrt(lv / r)
        assert acc.rdp_to_dp(a, a * r, d) == pytest.approx(e, rel=1e-12)


def test_cks_conversion_stationarity_and_values():
    """CKS 2020 Cor. 13: δ = inf_{α>1} exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α. The log of the
    objective, its α-derivative (the root our Brent search finds) and convexity are derived
    symbolically; the infimum is found by sympy's high-precision root finder and compared with
    zcdp_delta(..., "cks"), and zcdp_rho(..., "cks") is checked to hit δ exactly."""
    a = sp.Symbol("alpha", positive=True)
    log_obj = (a - 1) * (a * rho - eps) - sp.log(a - 1) + a * sp.log(1 - 1 / a)
    obj = sp.exp((a - 1) * (a * rho - eps)) / (a - 1) * (1 - 1 / a) ** a
    assert sp.simplify(sp.expand_log(sp.log(obj), force=True) - sp.expand_log(log_obj, force=True)) == 0
    d1 = sp.diff(log_obj, a)
    assert sp.simplify(d1 - ((2 * a - 1) * rho - eps + sp.log(1 - 1 / a))) == 0
    d2 = sp.simplify(sp.diff(log_obj, a, 2))
    assert sp.simplify(d2 - (2 * rho + 1 / (a * (a - 1)))) == 0  # > 0: one minimiser

    checked = 0
    for r, e in itertools.product((1e-3, 0.01178, 0.1, 0.5, 2.0), (0.3, 1.0, 3.0, 8.0)):
        d1_num = d1.subs({rho: sp.Float(r, 30), eps: sp.Float(e, 30)})
        if sp.N(d1_num.subs(a, sp.Float(1, 30) + sp.Float("1e-20", 30))) >= 0:
            continue  # δ would be ≥ 1 here; accounting clips at δ = 1
        a_star = sp.nsolve(
            d1_num, a, (sp.Float(1, 30) + sp.Float("1e-25", 30), sp.Float(1e6, 30)), solver="bisect", prec=30
        )
        log_d = float(log_obj.subs({rho: r, eps: e, a: a_star}).evalf(30))
        expected = math.exp(min(0.0, log_d))
        got = acc.zcdp_delta(r, e, conversion="cks")
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert got <= acc.zcdp_delta(r, e, conversion="prop4") * (1 + 1e-12)
        checked += 1
    assert checked >= 15
    for e, d in itertools.product(EPSILONS, DELTAS):
        r = acc.zcdp_rho(e, d, conversion="cks")
        assert r >= acc.zcdp_rho(e, d, conversion="prop4")
        assert acc.zcdp_delta(r, e, conversion="cks") <= d
        assert acc.zcdp_delta(r, e, conversion="cks") == pytest.approx(d, rel=1e-6)
