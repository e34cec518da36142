"""Noise primitives: Gaussian and Laplace noise on vectors, private selection.

Every function takes an explicit ``numpy.random.Generator`` and, optionally, a
:class:`~margsynth.privacy.ledger.BudgetLedger`. The order is always: validate every
input, price the call, **charge the ledger**, and only then draw noise — so invalid
input or an overspending charge raises ``ValueError`` with the generator untouched.

Seeded noise exists to reproduce papers; it is not meant for production releases
(floating-point Gaussian/Laplace samplers are not side-channel safe).

Costs (numbering of McKenna, Miklau & Sheldon, "Winning the NIST Contest", JPC 2021,
arXiv:2108.04978):

==========================  ==================  ===================================
primitive                   guarantee           zCDP cost
==========================  ==================  ===================================
gaussian_mechanism          Def. 3, Prop. 1     Δ₂²/(2σ²)   (GDP: μ = Δ₂/σ)
laplace_mechanism           ε-DP, b = Δ₁/ε      ε²/2        (Bun & Steinke Prop. 1.4)
exponential_mechanism       Def. 4, Prop. 2     ε²/8
report_noisy_max (gumbel)   ≡ exponential       ε²/8
report_noisy_max (exp/lap)  ε-DP                ε²/2
permute_and_flip            ε-DP (ref. [43])    ε²/2
==========================  ==================  ===================================
"""

from __future__ import annotations

import numpy as np

from . import accounting as acc
from .ledger import BudgetLedger

__all__ = [
    "exponential_mechanism",
    "gaussian_mechanism",
    "laplace_mechanism",
    "permute_and_flip",
    "report_noisy_max",
]

_RNM_NOISES = ("gumbel", "exponential", "laplace")


def _check_rng(rng: object) -> np.random.Generator:
    """The explicit generator every noise draw of Definitions 3-4 comes from, else ``ValueError``."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_ledger(ledger: object) -> BudgetLedger | None:
    """``None`` or a :class:`BudgetLedger` (composition by Prop. 3), else ``ValueError``."""
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise ValueError(f"ledger must be a BudgetLedger or None, got {type(ledger).__name__}")
    return ledger


def _finite_vector(name: str, values: object) -> np.ndarray:
    """``values`` as a non-empty finite float array: the query answer ``f(D)`` of Definition 3
    or the scores ``q(D, r)`` of Definition 4 (NaN/inf → ``ValueError``)."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {values!r:.80}") from exc
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    if bad.size:
        raise ValueError(f"{name} has a non-finite entry at flat index {int(bad[0])}: {arr.ravel()[bad[0]]!r}")
    return arr


# ----------------------------------------------------------------------------- additive noise
def gaussian_mechanism(
    values: object,
    *,
    sigma: float,
    l2_sensitivity: float,
    rng: np.random.Generator,
    ledger: BudgetLedger | None = None,
    label: str = "gaussian",
) -> np.ndarray:
    """``values + N(0, σ² I)`` (Definition 3), where ``values`` is a query answer whose
    L2 sensitivity (Definition 6) is ``l2_sensitivity``.

    Privacy: ``Δ²/(2σ²)``-zCDP (Prop. 1), or ``Δ/σ``-GDP (Dong et al. Thm 2.7); the
    ledger, if given, is charged that cost in its currency before the noise is drawn.
    Returns a new float array of the same shape.
    """
    arr = _finite_vector("values", values)
    s = acc.check_sigma(sigma)
    d = acc.check_sensitivity(l2_sensitivity, "l2_sensitivity")
    rng = _check_rng(rng)
    ledger = _check_ledger(ledger)
    if ledger is not None:
        ledger.charge("gaussian", ledger.cost("gaussian", sigma=s, sensitivity=d), label, sigma=s, sensitivity=d)
    return arr + rng.normal(0.0, s, size=arr.shape)


def laplace_mechanism(
    values: object,
    *,
    epsilon: float,
    l1_sensitivity: float,
    rng: np.random.Generator,
    ledger: BudgetLedger | None = None,
    label: str = "laplace",
) -> np.ndarray:
    """``values + Lap(b)^p`` with ``b = Δ₁/ε``: ε-DP for a query of L1 sensitivity Δ₁
    (Dwork & Roth 2014, Thm 3.6; ref. [21]). Per-coordinate variance ``2b²``.

    Ledger cost: ``ε²/2`` zCDP (ε-DP ⇒ ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4, composed
    with the paper's Prop. 3). A GDP ledger refuses it.
    """
    arr = _finite_vector("values", values)
    e = acc.check_epsilon(epsilon)
    d = acc.check_sensitivity(l1_sensitivity, "l1_sensitivity")
    rng = _check_rng(rng)
    ledger = _check_ledger(ledger)
    if ledger is not None:
        ledger.charge("laplace", ledger.cost("laplace", epsilon=e), label, epsilon=e, sensitivity=d)
    return arr + rng.laplace(0.0, d / e, size=arr.shape)


# ----------------------------------------------------------------------------- selection
def _selection_inputs(scores: object, epsilon: float, sensitivity: float, rng: object, ledger: object):
    """Validate a private selection's inputs (Definition 4 / Prop. 2): 1-d finite scores,
    ε > 0, Δ > 0, an explicit generator and an optional ledger."""
    q = _finite_vector("scores", scores)
    if q.ndim != 1:
        raise ValueError(f"scores must be a 1-d array of candidate qualities, got shape {q.shape}")
    e = acc.check_epsilon(epsilon)
    d = acc.check_sensitivity(sensitivity)
    return q, e, d, _check_rng(rng), _check_ledger(ledger)


def exponential_mechanism(
    scores: object,
    *,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    ledger: BudgetLedger | None = None,
    label: str = "exponential",
) -> int:
    """Index ``r`` drawn with ``Pr[r] ∝ exp(ε q_r / (2Δ))`` (Definition 4 with ε' = ε/(2Δ)).

    ``scores[r]`` is the quality ``q(D, r)`` (higher is better) and ``sensitivity`` the
    largest sensitivity Δ of any ``q(·, r)``. Sampled by the Gumbel-max trick:
    ``argmax_r ε q_r/(2Δ) + G_r``, ``G_r`` i.i.d. standard Gumbel, which has exactly this
    distribution and needs no normalisation (no overflow for large scores).

    Privacy: ε-DP and ``ε²/8``-zCDP (Prop. 2; Algorithm 6 uses ε = sqrt(8ρ/(r-1))).
    """
    q, e, d, rng, ledger = _selection_inputs(scores, epsilon, sensitivity, rng, ledger)
    if ledger is not None:
        ledger.charge("exponential", ledger.cost("exponential", epsilon=e), label, epsilon=e, sensitivity=d)
    return int(np.argmax(e * q / (2.0 * d) + rng.gumbel(size=q.shape)))


def report_noisy_max(
    scores: object,
    *,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    noise: str = "gumbel",
    ledger: BudgetLedger | None = None,
    label: str = "report_noisy_max",
) -> int:
    """``argmax_r q_r + Z_r`` — report-noisy-max (ref. [21], Dwork & Roth §3.3).

    ``noise="gumbel"``: ``Z ~ Gumbel(2Δ/ε)``; this *is* the exponential mechanism
    (Prop. 2: ε-DP, ε²/8-zCDP). ``noise="exponential"``: ``Z ~ Exp(2Δ/ε)``, which has the
    distribution of permute-and-flip (ref. [43]; Ding et al. 2021), ε-DP.
    ``noise="laplace"``: ``Z ~ Lap(2Δ/ε)``, ε-DP for any Δ-sensitive scores. The last
    two are charged ε²/2 zCDP (pure DP ⇒ zCDP, Bun & Steinke Prop. 1.4).
    """
    if noise not in _RNM_NOISES:
        raise ValueError(f"noise must be one of {_RNM_NOISES}, got {noise!r}")
    q, e, d, rng, ledger = _selection_inputs(scores, epsilon, sensitivity, rng, ledger)
    if ledger is not None:
        cost = ledger.cost("report_noisy_max", epsilon=e, noise=noise)
        ledger.charge("report_noisy_max", cost, label, epsilon=e, sensitivity=d, noise=noise)
    scale = 2.0 * d / e
    if noise == "gumbel":
        z = rng.gumbel(0.0, scale, size=q.shape)
    elif noise == "exponential":
        z = rng.exponential(scale, size=q.shape)
    else:
        z = rng.laplace(0.0, scale, size=q.shape)
    return int(np.argmax(q + z))


def permute_and_flip(
    scores: object,
    *,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    ledger: BudgetLedger | None = None,
    label: str = "permute_and_flip",
) -> int:
    """Permute-and-flip (McKenna & Sheldon 2020, ref. [43] of the NIST-MST paper).

    Visit candidates in a uniformly random order; accept candidate ``r`` with probability
    ``exp(ε (q_r - q*) / (2Δ))`` (``q* = max q``, so the best candidate is always
    accepted and the loop ends). ε-DP, never worse in expected quality than the
    exponential mechanism at the same ε; charged ``ε²/2`` zCDP (it lacks Prop. 2's
    tighter RDP bound, as paper §6 notes).
    """
    q, e, d, rng, ledger = _selection_inputs(scores, epsilon, sensitivity, rng, ledger)
    if ledger is not None:
        ledger.charge("permute_and_flip", ledger.cost("permute_and_flip", epsilon=e), label, epsilon=e, sensitivity=d)
    accept = np.exp(e * (q - q.max()) / (2.0 * d))
    for r in rng.permutation(q.size):
        if accept[r] >= 1.0 or rng.random() < accept[r]:
            return int(r)
    raise AssertionError("unreachable: the best candidate is always accepted")  # pragma: no cover
