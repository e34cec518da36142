"""Private discovery of what a schema leaves to ``"discover"``: category sets, numeric
bounds and quantile cut points, each charged to a :class:`~margsynth.privacy.BudgetLedger`
before its noise is drawn.

Neighbouring tables differ by adding or removing one row; every query below is a
histogram in which one row falls in exactly one cell, so its L2 sensitivity is 1
(checked by brute force over neighbouring tables in the tests) and the Gaussian mechanism of scale
``σ`` costs ``ρ = 1/(2σ²)`` zCDP (McKenna, Miklau & Sheldon, "Winning the NIST Contest",
JPC 2021, arXiv:2108.04978, Prop. 1; Bun & Steinke, TCC 2016, arXiv:1605.02065,
Prop. 1.6). What is released is a post-processing of the noisy histogram.

1. **Categories** (:func:`discover_categories`): Gaussian noise on the count of every
   category *present in the data*, keeping those whose noisy count exceeds
   ``τ = 1 + σ Φ⁻¹(1 - δ_c)``: the thresholded-count method for an unknown key set
   (Korolova, Kenthapadi, Mishra & Ntoulas, "Releasing Search Queries and Clicks
   Privately", WWW 2009; with Gaussian noise and its analysis for unknown domains,
   Rogers, "A Unifying Privacy Analysis Framework for Unknown Domain Algorithms in
   Differential Privacy", arXiv:2309.09170, 2023). Between neighbours the counts of
   common categories differ by at most 1 in one cell (ρ-zCDP, as above); a category
   present only in the larger table has count 1 and is released with probability
   exactly ``δ_c``. Conditioned on it not being released the run is the ρ-zCDP run on
   the common key set, so the whole pipeline is ``(ε, δ_conv + e^ε δ_c)``-DP where
   ``(ε, δ_conv)`` is the conversion of its total ρ (the δ-approximate ρ-zCDP of Bun &
   Steinke 2016; the ``e^ε`` factor comes from the direction where the larger
   table is on the right: a total-variation distance ``δ_c`` inside an ε-DP bound).
   One row adds at most one new category per column, so the ``δ_c`` of the columns add.
   Only the set of kept categories leaves this step, never their counts. An optional cap
   keeps the ``max_keep`` largest noisy counts among those above ``τ``: a function of
   the same thresholded noisy counts, so the argument above is unchanged.
2. **Bounds** (:func:`discover_bounds`): a noisy histogram over a fixed, data-independent
   set of signed powers-of-two bins ``±[2^k, 2^{k+1})`` and a zero bin; the bounds are the
   outer edges of the lowest and the highest bin whose noisy count exceeds a threshold
   (the largest bin if none does) — the "ApproxBounds" algorithm of Google's
   differential-privacy library (logarithmic histogram bins, noisy counts, a threshold
   set for a success probability; github.com/google/differential-privacy,
   cc/docs/algorithms/approx-bounds.md), here with Gaussian noise. Values outside the
   bounds found are clamped to them when encoding.
3. **Quantile cut points** (:func:`private_quantile_cuts`): a noisy histogram over
   :data:`QUANTILE_GRID` equal-width cells within the bounds; the cut points are read off
   its (non-negative, normalised) cumulative sum at ``j / bins`` — quantiles as a
   post-processing of one noisy histogram (Hay, Rastogi, Miklau & Suciu, "Boosting the
   Accuracy of Differentially Private Histograms Through Consistency", PVLDB 2010,
   arXiv:0904.0942, §2-3: range and prefix queries answered from noisy unit counts;
   OpenDP's ``make_quantiles_from_counts`` does the same), so any number of cut points
   costs one measurement. The cumulative sum is taken over the *unclamped* noisy cells and
   then made non-decreasing by its least-squares projection onto non-decreasing sequences
   (isotonic regression, :func:`isotonic_fit` — the least-squares projection Hay et al.
   use for the sorted query of unattributed histograms), then clamped at zero. Clamping each cell at zero
   first instead would give every empty cell a positive expected mass (about ``0.4 σ``),
   and summed over a wide empty stretch of declared bounds (bounds [0, 1000], data in
   [0, 100]) that mass pulls most cut points into the empty stretch; without the clamp an
   empty stretch adds zero-mean noise only. Post-processing of the same histogram: it
   costs nothing more.

docs/tabular.md states the budget split and why these methods were chosen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..privacy import BudgetLedger
from ..privacy.accounting import gaussian_sigma

__all__ = [
    "BOUNDS_FALSE_POSITIVE",
    "FLOAT_EXPONENTS",
    "INTEGER_EXPONENTS",
    "QUANTILE_GRID",
    "category_counts",
    "discover_bounds",
    "discover_categories",
    "log2_bin_edges",
    "isotonic_fit",
    "log2_histogram",
    "monotone_cumulative",
    "private_quantile_cuts",
    "quantile_histogram",
]

#: Exponents ``k`` of the powers-of-two bins ``[2^k, 2^{k+1})`` (and their negatives) for
#: float columns; magnitudes below ``2^kmin`` fall in the zero bin, above ``2^kmax`` in the
#: outermost bin.
FLOAT_EXPONENTS = (-30, 64)
#: Same for integer columns: the zero bin is exactly {0}.
INTEGER_EXPONENTS = (0, 64)
#: Probability that an empty powers-of-two bin passes the bounds threshold (all bins together).
BOUNDS_FALSE_POSITIVE = 0.05
#: Number of equal-width cells of the histogram that quantile cut points are read from.
QUANTILE_GRID = 1024


def _charge(ledger: BudgetLedger, sigma: float, label: str) -> None:
    """Charge one L2-sensitivity-1 Gaussian measurement (Prop. 1) before its noise is drawn."""
    ledger.charge(
        "gaussian", ledger.cost("gaussian", sigma=sigma, sensitivity=1.0), label, sigma=sigma, sensitivity=1.0
    )


# ----------------------------------------------------------------------------- categories
def category_counts(keys: Iterable[str]) -> dict[str, int]:
    """The histogram that category discovery measures: count of each key present, keys
    sorted (one row adds 1 to one key: L2 sensitivity 1)."""
    out: dict[str, int] = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def category_threshold(sigma: float, delta: float) -> float:
    """``τ = 1 + σ Φ⁻¹(1 - δ)``: a key of count 1 passes with probability exactly δ."""
    return 1.0 - sigma * float(ndtri(delta))


def discover_categories(
    keys: Iterable[str],
    *,
    rho: float,
    delta: float,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
    max_keep: int | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """The keys whose Gaussian-noised count exceeds :func:`category_threshold` (module
    docstring, 1); with ``max_keep``, at most that many of them, those with the largest
    noisy counts (ties by key) — a post-processing of the thresholded noisy counts, so
    it costs nothing more and the column's size is bounded before any noise. Charges ρ
    to ``ledger`` first; returns the kept keys (sorted) and a report (σ, threshold, ρ, δ,
    number kept)."""
    if not (0 < delta < 1):
        raise ValueError(f"{label}: delta must be in (0, 1), got {delta!r}")
    if max_keep is not None and (isinstance(max_keep, bool) or not isinstance(max_keep, int) or max_keep < 1):
        raise ValueError(f"{label}: max_keep must be a positive integer or None, got {max_keep!r}")
    sigma = gaussian_sigma(rho)
    tau = category_threshold(sigma, delta)
    counts = category_counts(keys)
    _charge(ledger, sigma, label)
    noisy = np.fromiter(counts.values(), dtype=np.float64, count=len(counts)) + rng.normal(0.0, sigma, len(counts))
    above = [(y, k) for k, y in zip(counts, noisy) if y > tau]
    if max_keep is not None and len(above) > max_keep:
        above = sorted(above, key=lambda yk: (-yk[0], yk[1]))[:max_keep]
    kept = sorted(k for _, k in above)
    info = {"method": "thresholded Gaussian counts", "sigma": sigma, "threshold": tau, "rho": rho, "delta": delta,
            "kept": len(kept)}  # fmt: skip
    if max_keep is not None:
        info["max_categories"] = max_keep
    return kept, info


# ----------------------------------------------------------------------------- bounds
def _exponents(integer: bool) -> tuple[int, int]:
    return INTEGER_EXPONENTS if integer else FLOAT_EXPONENTS


def log2_bin_edges(integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds (inclusive, as the bounds they would give) of the signed
    powers-of-two bins, in increasing order: negative bins, the zero bin, positive bins.
    Integer columns: ``[2^k, 2^{k+1}-1]``, the zero bin ``[0, 0]``; floats:
    ``[2^k, 2^{k+1}]`` and ``[-2^kmin, 2^kmin]``."""
    kmin, kmax = _exponents(integer)
    ks = np.arange(kmin, kmax, dtype=np.float64)
    lo_pos, hi_pos = 2.0**ks, 2.0 ** (ks + 1)
    if integer:
        hi_pos = hi_pos - 1.0
        zero = (0.0, 0.0)
    else:
        zero = (-(2.0**kmin), 2.0**kmin)
    lower = np.concatenate([-hi_pos[::-1], [zero[0]], lo_pos])
    upper = np.concatenate([-lo_pos[::-1], [zero[1]], hi_pos])
    return lower, upper


def log2_histogram(x: np.ndarray, integer: bool) -> np.ndarray:
    """Counts of ``x`` in the bins of :func:`log2_bin_edges` (one value, one bin: L2
    sensitivity 1). ``floor(log2 |x|)`` comes exactly from ``frexp``."""
    kmin, kmax = _exponents(integer)
    nk = kmax - kmin
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    _, e = np.frexp(a)
    k = np.clip(e.astype(np.int64) - 1, kmin, kmax - 1) - kmin
    idx = np.where(a < 2.0**kmin, nk, np.where(x > 0, nk + 1 + k, nk - 1 - k))
    return np.bincount(idx, minlength=2 * nk + 1)


def discover_bounds(
    x: np.ndarray, *, rho: float, integer: bool, rng: np.random.Generator, ledger: BudgetLedger, label: str
) -> tuple[tuple[float, float], dict[str, Any]]:
    """Private bounds of ``x`` (module docstring, 2): the outer edges of the lowest and the
    highest powers-of-two bin whose Gaussian-noised count exceeds
    ``σ Φ⁻¹(1 - BOUNDS_FALSE_POSITIVE / bins)``, else of the bin with the largest noisy count.

    Every bound is thus on the grid ``{0} ∪ {±2^k}``. The float zero bin holds the
    magnitudes below ``2^kmin``; when it is the lowest (highest) bin found its outer edge
    is reported as 0 rather than ``∓2^kmin`` (``-9.3e-10`` for floats): the bounds move
    inward by at most ``2^kmin``, a data-independent function of the released bins (no
    cost), and a column of non-negative values gets ``lo = 0``, never a tiny negative
    bound that decoding could draw below zero. The zero bin alone gives ``[0, 1]``."""
    sigma = gaussian_sigma(rho)
    counts = log2_histogram(x, integer)
    lower, upper = log2_bin_edges(integer)
    tau = -sigma * float(ndtri(BOUNDS_FALSE_POSITIVE / counts.size))
    _charge(ledger, sigma, label)
    noisy = counts + rng.normal(0.0, sigma, counts.size)
    above = np.flatnonzero(noisy > tau)
    if above.size == 0:
        above = np.array([int(np.argmax(noisy))])
    lo, hi = float(lower[above[0]]), float(upper[above[-1]])
    if not integer:  # the float zero bin as an outer edge: 0, not ±2^kmin (see the docstring)
        zero = counts.size // 2
        lo = 0.0 if above[0] == zero else lo
        hi = 0.0 if above[-1] == zero else hi
    if lo == hi:  # the zero bin alone
        hi = lo + 1.0
    info = {"method": "noisy powers-of-two histogram", "sigma": sigma, "threshold": tau, "rho": rho,
            "bounds": [lo, hi]}  # fmt: skip
    return (lo, hi), info


# ----------------------------------------------------------------------------- quantiles
def _span(lo: float, hi: float, integer: bool) -> tuple[float, float]:
    """The half-open range the bins of a column cover: ``[lo, hi+1)`` for integers."""
    return (lo, hi + 1.0) if integer else (lo, hi)


def quantile_histogram(x: np.ndarray, lo: float, hi: float, integer: bool, cells: int = QUANTILE_GRID) -> np.ndarray:
    """Counts of ``x`` (already within ``[lo, hi]``) in ``cells`` equal-width cells of the
    column's span (for integers at most one cell per integer): L2 sensitivity 1."""
    a, b = _span(lo, hi, integer)
    m = min(cells, int(b - a)) if integer else cells
    x = np.asarray(x, dtype=np.float64)
    idx = np.clip(np.floor((x - a) / (b - a) * m), 0, m - 1).astype(np.int64)
    return np.bincount(idx, minlength=m)


def uniform_cuts(lo: float, hi: float, bins: int, integer: bool) -> list[float]:
    """Interior cut points of ``bins`` equal-width bins of ``[lo, hi]`` (integers: of
    ``min(bins, hi-lo+1)`` bins with integer cut points)."""
    a, b = _span(lo, hi, integer)
    if integer:
        k = int(min(bins, b - a))
        return [float(a + math.floor(j * (b - a) / k)) for j in range(1, k)]
    return [a + j * (b - a) / bins for j in range(1, bins)]


def monotone_cumulative(noisy: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence closest in least squares to the cumulative sums of
    ``noisy`` (isotonic regression, pool-adjacent-violators), clamped to ``[0, ∞)``: a
    cumulative count function estimated from independent noisy unit counts, with no
    clamping of single cells (module docstring, 3). Post-processing only."""
    cum = np.cumsum(np.asarray(noisy, dtype=np.float64))
    return np.clip(isotonic_fit(cum), 0.0, None)


def isotonic_fit(y: np.ndarray) -> np.ndarray:
    """The non-decreasing ``z`` minimising ``Σ (z_i - y_i)²``: pool-adjacent-violators
    (Ayer, Brunk, Ewing, Reid & Silverman, "An Empirical Distribution Function for
    Sampling with Incomplete Information", Ann. Math. Statist. 26(4), 1955): merge
    neighbouring blocks while their means decrease; each block takes its mean."""
    y = np.asarray(y, dtype=np.float64)
    means: list[float] = []
    sizes: list[int] = []
    for v in y.tolist():
        mean, size = v, 1
        while means and means[-1] > mean:
            m0, s0 = means.pop(), sizes.pop()
            mean, size = (m0 * s0 + mean * size) / (s0 + size), s0 + size
        means.append(mean)
        sizes.append(size)
    return np.repeat(np.array(means), np.array(sizes, dtype=np.int64))


def private_quantile_cuts(
    x: np.ndarray,
    lo: float,
    hi: float,
    bins: int,
    *,
    rho: float,
    integer: bool,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
) -> tuple[list[float], dict[str, Any]]:
    """Cut points at the ``j/bins`` quantiles of a Gaussian-noised
    :func:`quantile_histogram`, read off :func:`monotone_cumulative` of its unclamped
    cells (module docstring, 3); duplicates merged (fewer bins), integer cuts rounded up
    to integers. Falls back to :func:`uniform_cuts` when the fitted total is not positive."""
    sigma = gaussian_sigma(rho)
    counts = quantile_histogram(x, lo, hi, integer)
    _charge(ledger, sigma, label)
    cum = monotone_cumulative(counts + rng.normal(0.0, sigma, counts.size))
    a, b = _span(lo, hi, integer)
    total = cum[-1]
    if not total > 0:
        cuts = uniform_cuts(lo, hi, bins, integer)
    else:
        cdf = cum / total
        m = counts.size
        right = a + (np.arange(m) + 1) * (b - a) / m
        cuts = []
        for j in range(1, bins):
            c = float(right[min(int(np.searchsorted(cdf, j / bins, side="left")), m - 1)])
            if integer:
                c = float(math.ceil(c - 1e-9 * max(1.0, abs(c))))
            if a < c < b and (not cuts or c > cuts[-1]):
                cuts.append(c)
    info = {"method": "quantiles of a noisy histogram (isotonic cumulative sum)", "sigma": sigma,
            "cells": int(counts.size), "rho": rho, "bins": len(cuts) + 1}  # fmt: skip
    return cuts, info
