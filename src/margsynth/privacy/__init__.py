"""Privacy layer: accounting, the budget ledger, noise primitives and Algorithm 1.

- :mod:`.accounting` — zCDP/RDP of the Gaussian (Prop. 1) and exponential (Prop. 2)
  mechanisms, composition (Prop. 3), RDP/zCDP → (ε, δ) (Prop. 4, or Canonne–Kamath–
  Steinke 2020), Eq. 5.1's σ, the largest ρ for a target (ε, δ), and Gaussian DP.
- :mod:`.ledger` — :class:`BudgetLedger`, charged before any noise is drawn.
- :mod:`.mechanisms` — Gaussian/Laplace noise, exponential mechanism,
  report-noisy-max, permute-and-flip; all take an explicit ``numpy.random.Generator``.
- :mod:`.measure` — Algorithm 1 ("Measure Marginals"), :func:`measure_marginals`, and its
  log :class:`NoisyMarginals` of :class:`NoisyMarginal` — the one type for a set of noisy
  marginals, which every generator consumes (the function is not re-exported as ``measure`` so that
  ``margsynth.privacy.measure`` remains the module).

Seeded DP noise is for reproducing papers, not for production releases.
"""

from .accounting import (
    CONVERSIONS,
    calibrate_gaussian_sigma,
    compose_gdp,
    compose_rdp,
    compose_zcdp,
    eq51_epsilon,
    eq51_sigma,
    exponential_epsilon,
    exponential_rdp,
    exponential_zcdp,
    gaussian_rdp,
    gaussian_sigma,
    gaussian_zcdp,
    gdp_curve,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gdp_mu_for_dp,
    gdp_sigma,
    gdp_to_zcdp,
    pure_dp_zcdp,
    rdp_to_dp,
    zcdp_delta,
    zcdp_rho,
    zcdp_to_dp,
)
from .ledger import KINDS, BudgetLedger, Charge
from .measure import NoisyMarginal, NoisyMarginals, measure_marginals, normalise_weights
from .mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    permute_and_flip,
    report_noisy_max,
)

__all__ = [
    "CONVERSIONS",
    "KINDS",
    "BudgetLedger",
    "Charge",
    "calibrate_gaussian_sigma",
    "NoisyMarginal",
    "NoisyMarginals",
    "compose_gdp",
    "compose_rdp",
    "compose_zcdp",
    "eq51_epsilon",
    "eq51_sigma",
    "exponential_epsilon",
    "exponential_mechanism",
    "exponential_rdp",
    "exponential_zcdp",
    "gaussian_mechanism",
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
    "laplace_mechanism",
    "measure_marginals",
    "normalise_weights",
    "permute_and_flip",
    "pure_dp_zcdp",
    "rdp_to_dp",
    "report_noisy_max",
    "zcdp_delta",
    "zcdp_rho",
    "zcdp_to_dp",
]
