"""Private discovery of what a schema leaves to ``"discover"``: category sets, whether a
column has nulls, numeric ranges, bins and the distribution within each bin — each step a
noisy histogram charged to a :class:`~margsynth.privacy.BudgetLedger` before its noise is
drawn, and everything released a post-processing of those histograms.

Neighbouring tables differ by adding or removing one row; every query below is a histogram
in which one row falls in exactly one cell (its category, its bin, or the null cell), so its
L2 sensitivity is 1 (checked by brute force over neighbouring tables in the tests) and the
Gaussian mechanism of scale ``σ`` costs ``ρ = 1/(2σ²)`` zCDP (McKenna, Miklau & Sheldon,
"Winning the NIST Contest", JPC 2021, arXiv:2108.04978, Prop. 1; Bun & Steinke, TCC 2016,
arXiv:1605.02065, Prop. 1.6). The grids the histograms are taken over are fixed before any
noise, from the schema and earlier releases only.

1. **Rows** (:func:`noisy_count`): a noisy row count ``n̂``, from which the budget of the
   category steps and the number of bins are chosen (:func:`category_sigma`,
   :func:`auto_bins`). Choosing later privacy parameters from earlier releases is adaptive
   composition; the run's ledger never lets the total exceed the budget fixed up front, which
   makes it a privacy filter for zCDP (Feldman & Zrnic, "Individual Privacy Accounting via
   a Rényi Filter", NeurIPS 2021, arXiv:2008.11193; Whitehouse, Ramdas, Rogers & Wu,
   "Fully-Adaptive Composition in Differential Privacy", ICML 2023, arXiv:2203.05481).
2. **Categories** (:func:`discover_categories`): Gaussian noise on the count of every
   category *present in the data*, keeping those whose noisy count exceeds
   ``τ = 1 + σ Φ⁻¹(1 - δ_c)`` — Gaussian partition selection (Desfontaines, Voss, Gipson &
   Mandayam, "Differentially private partition selection", PoPETs 2022, arXiv:2006.03684,
   §4; Korolova, Kenthapadi, Mishra & Ntoulas, WWW 2009; Rogers, arXiv:2309.09170). Between
   neighbours the counts of common categories differ by at most 1 in one cell (ρ-zCDP, as
   above); a category present only in the larger table has count 1 and is released with
   probability exactly ``δ_c``. Conditioned on it not being released the run is the ρ-zCDP
   run on the common key set, so the whole pipeline is ``(ε, δ_conv + e^ε δ_c)``-DP where
   ``(ε, δ_conv)`` is the conversion of its total ρ (the δ-approximate ρ-zCDP of Bun &
   Steinke 2016; the ``e^ε`` factor comes from the direction where the larger table is on
   the right: a total-variation distance ``δ_c`` inside an ε-DP bound). One row adds at
   most one new category per column, so the ``δ_c`` of the columns add. ``σ`` is chosen
   from ``n̂`` so that a category holding a fraction ``f`` of the rows is kept with
   probability :data:`KEEP_PROBABILITY` (:func:`category_sigma`). The null cell, when the
   column's nulls are discovered, is one more (public) key of the same histogram.
3. **Range** (:func:`discover_range`): a noisy histogram over a fixed grid of signed
   logarithmic bins, :data:`RANGE_STEPS` per octave (each about 9% wide relative to its
   distance from zero; integers: every integer up to 11, then such bins), and a zero bin;
   the range is from the lowest to the highest bin where values are found — a bin, or a
   window of 2, 4, 8, ... bins, whose noisy count exceeds a threshold set for a
   false-positive probability :data:`RANGE_FALSE_POSITIVE` over all the windows
   (:func:`mass_edges`; the "ApproxBounds" idea of Google's differential-privacy library,
   github.com/google/differential-privacy, cc/docs/algorithms/approx-bounds.md, with
   Gaussian noise, a grid eight times finer, and windows, so that a tail spread thinly over
   many bins is found too), widened by one bin on each side (not across zero). If nothing
   passes, the
   column's values are too few to be located at this budget: the report says so (the
   encoder then codes them as null when the column may hold nulls).
4. **Distribution** (:func:`measure_distribution`): a noisy histogram over cells within
   the range (each range bin cut into equal cells, more of them where the range step's noisy
   counts put more of the values; integer cells hold whole integers; one cell per integer
   when they are few, or when a range bin holds a point mass) or within given bounds (cut at the range grid's
   edges as well as evenly, so the cells follow the scale of the values either way; an
   integer bound a cell of its own: :func:`fine_edges`), plus a cell below and a cell above
   for values outside it. The number of cells is what the noise allows: about
   ``n̂ / (3σ)`` for ``n̂`` noisy rows (:func:`distribution_cells`, at most
   :data:`FINE_CELLS`; a range or bounds spanning more range bins get one cell per bin), so
   that a cell of average mass stands out of its noise. Its cumulative sum, made non-decreasing by its
   least-squares projection (isotonic regression, :func:`isotonic_fit`) and clamped at zero,
   is a private distribution function (Hay, Rastogi, Miklau & Suciu, "Boosting the Accuracy
   of Differentially Private Histograms Through Consistency", PVLDB 2010, arXiv:0904.0942,
   §2-3). From it, at no further cost: the bounds (:func:`refine_bounds`: where, from each
   end, a cell's noisy count or the noisy count of all the cells before it stands out of
   the noise, so the bounds are near the extremes of the values and never outside the
   range found), the
   ``j/bins`` quantile cut points (:func:`quantile_cuts`), the mass each cell holds — the
   distribution decoding draws from within a bin — and the share of the values clamped.

docs/tabular.md states the budget rule and why these methods were chosen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..privacy import BudgetLedger
from ..privacy.accounting import gaussian_sigma

__all__ = [
    "FINE_CELLS",
    "KEEP_PROBABILITY",
    "RANGE_FALSE_POSITIVE",
    "RANGE_STEPS",
    "Distribution",
    "auto_bins",
    "category_counts",
    "category_sigma",
    "category_threshold",
    "discover_categories",
    "discover_range",
    "distribution_cells",
    "fine_edges",
    "fine_histogram",
    "histogram_noise",
    "isotonic_fit",
    "mass_edges",
    "kept_fraction",
    "measure_distribution",
    "monotone_cumulative",
    "noisy_count",
    "noisy_counts",
    "quantile_cuts",
    "range_bins",
    "range_histogram",
    "refine_bounds",
    "clamped_noise",
    "release_distribution",
    "release_range",
    "select_categories",
    "uniform_cuts",
]

#: Bins per octave of the range grid: neighbouring edges are ``2^(1/8) ≈ 1.09`` apart.
RANGE_STEPS = 8
#: Exponents ``k`` of the range grid's magnitudes ``2^k``: floats below ``2^-30`` fall in
#: the zero bin; magnitudes beyond ``2^64`` (``2^63`` for integers) in the outermost bin.
FLOAT_EXPONENTS = (-30, 64)
INTEGER_EXPONENTS = (0, 63)
#: Probability that some empty range bin passes the range threshold (all bins together).
RANGE_FALSE_POSITIVE = 0.01
#: Cells of the distribution histogram within a column's range.
FINE_CELLS = 1024
#: Probability with which a category holding the target fraction of the rows is kept.
KEEP_PROBABILITY = 0.99


def _charge(ledger: BudgetLedger, sigma: float, label: str) -> None:
    """Charge one L2-sensitivity-1 Gaussian measurement (Prop. 1) before its noise is drawn."""
    ledger.charge(
        "gaussian", ledger.cost("gaussian", sigma=sigma, sensitivity=1.0), label, sigma=sigma, sensitivity=1.0
    )


def histogram_noise(shape: tuple[int, ...], rho: float, rng: np.random.Generator, ledger: BudgetLedger, label: str):
    """The Gaussian noise of the ``σ`` that costs ``rho`` (charged first) for a histogram of
    ``shape`` (L2 sensitivity 1), drawn before its counts are read: a table read in chunks
    (:mod:`~margsynth.tabular.stream`) draws every step's noise in the order the steps are
    made and adds the counts of one later pass. Returns ``(noise, σ)``."""
    sigma = gaussian_sigma(rho)
    _charge(ledger, sigma, label)
    return rng.normal(0.0, sigma, shape), sigma


def noisy_counts(counts: np.ndarray, rho: float, rng: np.random.Generator, ledger: BudgetLedger, label: str):
    """``counts`` (a histogram: L2 sensitivity 1) plus Gaussian noise of the ``σ`` that costs
    ``rho`` (charged first, :func:`histogram_noise`); returns ``(noisy counts, σ)``."""
    noise, sigma = histogram_noise(np.shape(counts), rho, rng, ledger, label)
    return np.asarray(counts, dtype=np.float64) + noise, sigma


# ----------------------------------------------------------------------------- rows
def noisy_count(n: int, *, rho: float, rng: np.random.Generator, ledger: BudgetLedger, label: str) -> tuple[float, dict]:
    """The number of rows plus Gaussian noise (module docstring, 1): sensitivity 1."""
    (y,), sigma = noisy_counts(np.array([float(n)]), rho, rng, ledger, label)
    return float(y), {"method": "noisy row count", "sigma": sigma, "rho": rho, "rows": float(y)}


# ----------------------------------------------------------------------------- categories
def category_counts(keys: Iterable[str], weights: Iterable[int] | None = None) -> dict[str, int]:
    """The histogram that category discovery measures: count of each key present, keys
    sorted (one row adds 1 to one key: L2 sensitivity 1). ``weights``: each key stands for
    that many rows (the counts of distinct cells, or of chunks being merged)."""
    out: dict[str, int] = {}
    if weights is None:
        for k in keys:
            out[k] = out.get(k, 0) + 1
    else:
        for k, w in zip(keys, weights):
            out[k] = out.get(k, 0) + int(w)
    return dict(sorted(out.items()))


def category_threshold(sigma: float, delta: float) -> float:
    """``τ = 1 + σ Φ⁻¹(1 - δ)``: a key of count 1 passes with probability exactly δ."""
    return 1.0 - sigma * float(ndtri(delta))


def category_sigma(fraction: float, rows: float, delta: float) -> float:
    """The largest ``σ`` with which a category of ``fraction · rows`` rows passes the
    threshold :func:`category_threshold` with probability :data:`KEEP_PROBABILITY`:
    ``(f n - 1) / (Φ⁻¹(1-δ) + Φ⁻¹(p))`` (at least a hundredth, for tiny ``f n``)."""
    z = -float(ndtri(delta)) + float(ndtri(KEEP_PROBABILITY))
    return max((fraction * rows - 1.0) / z, 0.01)


def kept_fraction(sigma: float, rows: float, delta: float) -> float:
    """The fraction of the rows a category needs to be kept with probability
    :data:`KEEP_PROBABILITY` at ``σ`` (the inverse of :func:`category_sigma`)."""
    z = -float(ndtri(delta)) + float(ndtri(KEEP_PROBABILITY))
    return (1.0 + sigma * z) / max(rows, 1.0)


def discover_categories(
    keys: Iterable[str],
    *,
    rho: float,
    delta: float,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
    max_keep: int | None = None,
    nulls: int | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """The keys whose Gaussian-noised count exceeds :func:`category_threshold` (module
    docstring, 2); with ``max_keep``, at most that many of them, those with the largest
    noisy counts (ties by key) — a post-processing of the thresholded noisy counts, so
    it costs nothing more and the column's size is bounded before any noise. ``nulls``:
    the number of null cells, measured as one more cell of the same histogram (a public
    key); the report then has its noisy count. Charges ρ to ``ledger`` first; returns the
    kept keys (sorted) and a report (σ, threshold, ρ, δ, number kept, the noisy counts of
    the kept keys summed)."""
    return select_categories(category_counts(keys), rho=rho, delta=delta, rng=rng, ledger=ledger, label=label,
                             max_keep=max_keep, nulls=nulls)  # fmt: skip


def select_categories(
    counts: dict[str, int],
    *,
    rho: float,
    delta: float,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
    max_keep: int | None = None,
    nulls: int | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """:func:`discover_categories` from the histogram :func:`category_counts` (keys sorted)."""
    if not (0 < delta < 1):
        raise ValueError(f"{label}: delta must be in (0, 1), got {delta!r}")
    if max_keep is not None and (isinstance(max_keep, bool) or not isinstance(max_keep, int) or max_keep < 1):
        raise ValueError(f"{label}: max_keep must be a positive integer or None, got {max_keep!r}")
    values = list(counts.values()) + ([nulls] if nulls is not None else [])
    noisy, sigma = noisy_counts(np.array(values, dtype=np.float64), rho, rng, ledger, label)
    tau = category_threshold(sigma, delta)
    above = [(y, k) for k, y in zip(counts, noisy[: len(counts)]) if y > tau]
    if max_keep is not None and len(above) > max_keep:
        above = sorted(above, key=lambda yk: (-yk[0], yk[1]))[:max_keep]
    kept = sorted(k for _, k in above)
    info: dict[str, Any] = {"method": "Gaussian partition selection", "sigma": sigma, "threshold": tau, "rho": rho,
                            "delta": delta, "kept": len(kept), "kept_mass": float(sum(y for y, _ in above))}  # fmt: skip
    if max_keep is not None:
        info["max_categories"] = max_keep
    if nulls is not None:
        info["noisy_nulls"] = float(noisy[-1])
    info["kept_counts"] = {k: float(y) for y, k in above}  # released with their keys
    return kept, info


# ----------------------------------------------------------------------------- where mass is
def mass_edges(noisy: np.ndarray, sigma: float, false_positive: float = RANGE_FALSE_POSITIVE,
               split: int | None = None) -> tuple[int, int] | None:  # fmt: skip
    """The first and the last cell of a noisy histogram where values are found. From the low
    end: among the windows of ``w`` cells (``w`` = 1, 2, 4, ...) whose noisy sum exceeds
    ``z σ sqrt(w)``, ``z = Φ⁻¹(1 - false_positive / windows)`` over all the windows tried, the
    one that ends first (the narrowest of those), and the first cell is where it starts;
    from the high end likewise. Windows of empty cells pass with probability at most
    ``false_positive``; a single dense cell and a thin tail spread over many cells are both
    found, and a wide window never reaches out past the values to an empty stretch (a
    narrower window ending sooner is chosen). ``split``: the first cell of non-negative
    values when the cells hold both signs: no window holds cells of both (a window reaching
    from empty negative cells into the values would otherwise pass on the values' mass and
    start a non-negative column's range below zero). ``None`` when no window passes.
    Post-processing only."""
    y = np.asarray(noisy, dtype=np.float64)
    n = y.size
    widths = [w for w in (2**k for k in range(int(np.log2(max(n, 1))) + 1)) if w <= n]
    z = -float(ndtri(false_positive / max(n * len(widths), 1))) * sigma

    def first(v: np.ndarray, cut: int | None) -> int | None:
        # the window that passes with the earliest end (the tightest one among those), from its start;
        # windows holding both cell cut - 1 and cell cut are left out
        cum = np.concatenate([[0.0], np.cumsum(v)])
        best = None  # (end, width)
        for w in widths:
            ok = cum[w:] - cum[:-w] > z * np.sqrt(w)
            if cut is not None and 0 < cut < n:
                starts = np.arange(ok.size)
                ok &= ~((starts < cut) & (starts + w - 1 >= cut))
            hit = np.flatnonzero(ok)
            if hit.size and (best is None or hit[0] + w - 1 < best[0]):
                best = (int(hit[0]) + w - 1, w)
        return None if best is None else best[0] - best[1] + 1

    lo = first(y, split)
    if lo is None:
        return None
    hi = n - 1 - first(y[::-1], None if split is None else n - split)
    return lo, max(hi, lo)


def range_threshold(integer: bool, false_positive: float = RANGE_FALSE_POSITIVE) -> float:
    """The range scan's threshold for a single bin, in units of its noise ``σ`` (:func:`mass_edges`
    over the whole grid of :func:`range_bins`)."""
    n = range_bins(integer)[0].size
    widths = sum(1 for k in range(int(np.log2(n)) + 1) if 2**k <= n)
    return -float(ndtri(false_positive / (n * widths)))


# ----------------------------------------------------------------------------- range
@cache
def range_bins(integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """The range grid (module docstring, 3): lower and upper edges of its half-open bins
    ``[lower, upper)``, in increasing order — negative bins, the zero bin, positive bins.
    Integers: magnitudes ``ceil(2^(j/8))`` without repeats (every integer up to 11 is its
    own bin), the zero bin ``[0, 1)``; floats: magnitudes ``2^(kmin + j/8)``, the zero bin
    ``[-2^kmin, 2^kmin)``."""
    kmin, kmax = INTEGER_EXPONENTS if integer else FLOAT_EXPONENTS
    mags = 2.0 ** (kmin + np.arange(RANGE_STEPS * (kmax - kmin) + 1) / RANGE_STEPS)
    if integer:
        mags = np.unique(np.ceil(mags))
        pos_lo, pos_hi = mags[:-1], mags[1:]
        neg_lo, neg_hi = 1.0 - pos_hi[::-1], 1.0 - pos_lo[::-1]  # -v in (-hi, -lo]: [1-hi, 1-lo)
        zero = (0.0, 1.0)
    else:
        pos_lo, pos_hi = mags[:-1], mags[1:]
        neg_lo, neg_hi = -pos_hi[::-1], -pos_lo[::-1]
        zero = (-mags[0], mags[0])
    lower = np.concatenate([neg_lo, [zero[0]], pos_lo])
    upper = np.concatenate([neg_hi, [zero[1]], pos_hi])
    return lower, upper


def _bin_of(x: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The bin of each value of ``x`` in half-open bins with these lower edges (values below
    the first edge in the first bin)."""
    return np.clip(np.searchsorted(lower, np.asarray(x, dtype=np.float64), side="right") - 1, 0, lower.size - 1)


def range_histogram(x: np.ndarray, integer: bool) -> np.ndarray:
    """Counts of ``x`` in the bins of :func:`range_bins` (one value, one bin: L2 sensitivity 1)."""
    lower, _ = range_bins(integer)
    return np.bincount(_bin_of(x, lower), minlength=lower.size)


def discover_range(
    x: np.ndarray,
    *,
    rho: float,
    integer: bool,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
    nulls: int | None = None,
) -> tuple[tuple[int, int], dict[str, Any]]:
    """The range of ``x`` (module docstring, 3): the indices of the lowest and the highest
    bin of :func:`range_bins` whose noisy count exceeds ``σ Φ⁻¹(1 - RANGE_FALSE_POSITIVE /
    bins)``, or twice the index of the largest noisy count when none does (``"sparse"`` in
    the report). ``nulls``: the null cells, one more cell of the histogram (report:
    ``noisy_nulls``)."""
    return release_range(range_histogram(x, integer), rho=rho, integer=integer, rng=rng, ledger=ledger, label=label,
                         nulls=nulls)  # fmt: skip


def release_range(
    counts: np.ndarray,
    *,
    rho: float,
    integer: bool,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
    nulls: int | None = None,
    with_noisy: bool = False,
    false_positive: float = RANGE_FALSE_POSITIVE,
) -> tuple[tuple[int, int], dict[str, Any]]:
    """:func:`discover_range` from the histogram :func:`range_histogram`. ``with_noisy``: the
    report also holds the noisy counts of the range's bins (``"noisy"``, for
    :func:`fine_edges`' ``range_mass``); ``false_positive``: the scan's (:func:`mass_edges`;
    a table's columns share one rate)."""
    lower, upper = range_bins(integer)
    values = np.concatenate([counts, [nulls]]) if nulls is not None else counts
    noisy, sigma = noisy_counts(values, rho, rng, ledger, label)
    edges = mass_edges(noisy[: counts.size], sigma, false_positive, split=counts.size // 2)  # the zero bin
    sparse = edges is None
    if sparse:
        lo = hi = int(np.argmax(noisy[: counts.size]))
    else:  # a bin more on each side (not across zero): the edge of a window may cut a thin tail
        lo, hi = edges
        zero = counts.size // 2
        lo = max(lo - 1, zero if lo >= zero else 0)
        hi = min(hi + 1, zero if hi <= zero else counts.size - 1)
    info: dict[str, Any] = {"method": "noisy histogram on a logarithmic grid, scanned", "sigma": sigma,
                            "rho": rho, "range": [float(lower[lo]), float(upper[hi])], "sparse": bool(sparse)}  # fmt: skip
    if nulls is not None:
        info["noisy_nulls"] = float(noisy[-1])
    if with_noisy:
        info["noisy"] = noisy[lo : hi + 1]
    return (lo, hi), info


# ----------------------------------------------------------------------------- distribution
def _split(a: float, b: float, m: int, integer: bool) -> np.ndarray:
    """Edges of ``m`` equal cells of ``[a, b)`` (integers: at most one cell per integer,
    integral edges)."""
    if integer:
        k = int(min(m, b - a))
        return a + np.floor(np.arange(k + 1) * (b - a) / k)
    return a + np.arange(m + 1) * (b - a) / m


def fine_edges(
    lo: float,
    hi: float,
    integer: bool,
    *,
    cells: int = FINE_CELLS,
    range_index: tuple[int, int] | None = None,
    range_mass: np.ndarray | None = None,
    range_sigma: float = 0.0,
) -> np.ndarray:
    """The edges of the distribution histogram (module docstring, 4), half-open cells,
    increasing. With ``range_index`` (the bins :func:`discover_range` found) every range bin
    between them is cut into equal cells, so the cells follow the scale of the data: half of
    ``cells`` shared equally between the bins and, with ``range_mass`` (the range step's noisy
    counts of those bins, released, and ``range_sigma`` their noise), the other half in
    proportion to each bin's noisy mass above ``2 range_sigma`` (so the noise of empty bins
    draws few cells), so a bin holding much of the values gets fine cells — a point
    mass (a top code such as an income-to-poverty ratio's "501 or more", a common round
    value) then has a cell of its own (an integer bin given cells by its mass for a quarter
    of its integers or more gets one cell per integer) instead of being spread over its neighbours when
    decoding draws within a cell. Without ``range_mass``, ``cells`` shared equally. Without it (given bounds) ``[lo, hi]`` (``hi + 1`` for integers) is cut at
    the range-grid edges inside it (floats: none below ``(hi - lo) / FINE_CELLS`` in
    magnitude) and each part into equal cells, as many as its share of ``cells`` equal-width
    cells over the bounds, and at least an equal share of ``cells / 2`` (at least one): cells
    as fine as an even grid everywhere and as the range grid where the magnitudes are small,
    so a column whose wide bounds hold values over orders of magnitude (incomes, survey
    weights) gets fine cells where most of its values are; for integers ``lo``
    and ``hi`` are cells of their own: a value coded at a
    bound (a top code such as an income-to-poverty ratio's "501 or more", a bottom code, a
    zero) is a point mass that a wider cell would spread over its neighbours when decoding
    draws within the cell. A data-independent function of what was released before. A float range that
    starts (ends) at the zero bin starts (ends) at 0: a column of non-negative values never
    gets a tiny negative bound (values of magnitude below ``2^-30`` move to 0)."""
    if range_index is None:
        return _bounded_edges(float(lo), float(hi), integer, cells)
    lower, upper = range_bins(integer)
    i, j = range_index
    bins = j - i + 1
    if range_mass is None:
        m = np.full(bins, max(1, cells // bins))
    else:
        w = np.clip(np.asarray(range_mass, dtype=np.float64) - 2.0 * range_sigma, 0.0, None)
        if w.size != bins:
            raise ValueError(f"range_mass: expected {bins} noisy counts (the range's bins), got {w.size}")
        even = max(1, (cells // 2) // bins)
        by_mass = np.floor((cells - cells // 2) * w / w.sum()) if w.sum() > 0 else np.zeros(bins)
        m = even + by_mass.astype(np.int64)
        if integer:  # a bin given a quarter of its integers as cells gets all of them: a point mass stays exact
            width = (upper - lower)[i : j + 1]
            m = np.where((by_mass > 0) & (4 * m >= width), width, m).astype(np.int64)
    lower, upper = lower.copy(), upper.copy()
    if not integer:  # the float zero bin as an outer bin: its edge at 0 (values of non-negative data stay >= 0)
        zero = lower.size // 2
        lower[zero] = 0.0 if i == zero else lower[zero]
        upper[zero] = 0.0 if j == zero and i < zero else upper[zero]
    parts = [_split(lower[k], upper[k], int(m[k - i]), integer)[:-1] for k in range(i, j + 1)]
    core = np.concatenate([*parts, [upper[j]]])
    return np.union1d(core, _tail_edges(float(core[0]), float(core[-1]), integer))


#: Octaves of tail cells beyond a discovered range, away from zero (:func:`fine_edges`).
TAIL_OCTAVES = 8
#: Octaves of tail cells between a discovered range and zero, floats (one cell for the rest).
TAIL_OCTAVES_TO_ZERO = 16
#: Integer tail cells below this magnitude hold one integer each (codes stay codes).
SINGLE_INTEGERS = 32


def _magnitudes(m0: float, toward_zero: bool, integer: bool) -> list[float]:
    """The magnitudes of tail cell edges beyond magnitude ``m0`` (excluded): an octave apart
    (integers below :data:`SINGLE_INTEGERS`: every integer); toward zero down to 0 (floats: after
    :data:`TAIL_OCTAVES_TO_ZERO` octaves, one cell down to 0), away from zero up to
    :data:`TAIL_OCTAVES` octaves out (within the range grid)."""
    out: list[float] = []
    if toward_zero:
        m = m0
        for _ in range(TAIL_OCTAVES_TO_ZERO if not integer else 64):
            m = (m - 1.0 if m <= SINGLE_INTEGERS else 2.0 ** math.ceil(math.log2(m) - 1)) if integer else m / 2.0
            if m <= 0.0:
                break
            out.append(m)
        if not integer and m > 2.0 ** FLOAT_EXPONENTS[0]:  # exact zeros (a point mass) in a cell of their own
            out.append(2.0 ** FLOAT_EXPONENTS[0])
        return [*out, 0.0]
    top = 2.0 ** (INTEGER_EXPONENTS[1] if integer else FLOAT_EXPONENTS[1])
    m = m0
    while m < min(m0 * 2.0**TAIL_OCTAVES, top):
        m = (m + 1.0 if m < SINGLE_INTEGERS else 2.0 ** math.floor(math.log2(m) + 1)) if integer else m * 2.0
        out.append(min(m, top))
    return out


def _tail_edges(a: float, b: float, integer: bool) -> np.ndarray:
    """Edges of the tail cells of a discovered range ``[a, b)`` (:func:`fine_edges`): outward
    from each end, toward zero down to zero and away from zero a few octaves; none below a
    range starting at 0 (non-negative values stay non-negative). Integer cells hold whole
    integers (a negative cell of magnitudes ``[p, q)`` is ``[1 - q, 1 - p)``, as on the grid)."""
    def signed(ms: list[float], negative: bool) -> list[float]:
        return [(1.0 - m if integer else -m) if negative else m for m in ms]

    # the magnitude of an edge on the negative side (integers: the grid's edge 1 - m)
    def mag(v: float) -> float:
        return (1.0 - v if integer else -v) if v <= 0 else v

    out: list[float] = []
    if a > 0:  # below a positive range: toward zero
        out += _magnitudes(a, True, integer)
    elif a < 0:  # below a negative range: away from zero
        out += signed(_magnitudes(mag(a), False, integer), True)
    if b <= 0 and (b < 0 or integer):  # above a negative range: toward zero
        out += signed(_magnitudes(mag(b), True, integer), True)
    elif b > 0:  # above a positive range: away from zero
        out += _magnitudes(b, False, integer)
    return np.array(out, dtype=np.float64)


def _bounded_edges(lo: float, hi: float, integer: bool, cells: int) -> np.ndarray:
    """:func:`fine_edges` within given bounds (its docstring)."""
    top = hi + 1.0 if integer else hi
    lower, upper = range_bins(integer)
    last = hi if integer else float(np.nextafter(hi, -np.inf))  # the bin of the last value below top
    i, j = (int(k) for k in _bin_of(np.array([lo, last]), lower))
    # the range bins' edges inside (lo, top) (the outermost bins reach past the grid); floats: none at a
    # magnitude below span / FINE_CELLS (the grid goes down to 2^-30)
    span, half = top - lo, max(cells // 2, 1)
    floor = 0.0 if integer else span / FINE_CELLS
    parts = [lo, *(float(e) for e in upper[i:j] if lo < e < top and abs(e) >= floor), top]
    share = max(1, half // (len(parts) - 1))
    edges = np.concatenate([
        *(_split(a, b, max(share, math.ceil(cells * (b - a) / span)), integer)[:-1]
          for a, b in zip(parts[:-1], parts[1:])),
        [top],
    ])  # fmt: skip
    if integer and hi - lo >= 2:  # the end values alone in their cells
        edges = np.union1d(edges, [lo + 1.0, hi])
    return edges


def fine_histogram(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``x`` in the cells of ``edges``, with one cell below the first edge and one
    at or above the last (one value, one cell: L2 sensitivity 1)."""
    idx = np.searchsorted(edges, np.asarray(x, dtype=np.float64), side="right")  # 0: below; len(edges): above
    return np.bincount(idx, minlength=edges.size + 1)


@dataclass(frozen=True)
class Distribution:
    """A column's private distribution (module docstring, 4): the cells' ``edges``, the
    private mass of each cell (non-negative; the differences of the isotonic cumulative sum)
    and of the values ``below`` the first and ``above`` the last edge."""

    edges: np.ndarray
    masses: np.ndarray
    below: float
    above: float
    noisy: np.ndarray | None = None  # the noisy cell counts (below, cells..., above)
    sigma: float = 0.0

    @property
    def total(self) -> float:
        return float(self.below + self.masses.sum() + self.above)

    def cdf_at_edges(self) -> np.ndarray:
        """The private mass below each edge (``below`` at the first)."""
        return self.below + np.concatenate([[0.0], np.cumsum(self.masses)])


def measure_distribution(
    x: np.ndarray,
    edges: np.ndarray,
    *,
    rho: float,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    label: str,
    nulls: int | None = None,
) -> tuple[Distribution, dict[str, Any]]:
    """The noisy :func:`fine_histogram` of ``x`` over ``edges``, made a distribution by
    :func:`monotone_cumulative` (module docstring, 4). ``nulls``: the null cells, one more
    cell (report: ``noisy_nulls``)."""
    counts = fine_histogram(x, edges)
    noise, sigma = histogram_noise((edges.size + 1 + (nulls is not None),), rho, rng, ledger, label)
    return release_distribution(counts, edges, noise, sigma, rho=rho, nulls=nulls)


def release_distribution(counts: np.ndarray, edges: np.ndarray, noise: np.ndarray, sigma: float, *, rho: float,
                         nulls: int | None = None) -> tuple[Distribution, dict[str, Any]]:  # fmt: skip
    """:func:`measure_distribution` from the histogram :func:`fine_histogram` and the noise
    drawn for it beforehand (:func:`histogram_noise`, charged then)."""
    values = np.concatenate([counts, [nulls]]) if nulls is not None else counts
    noisy = np.asarray(values, dtype=np.float64) + noise
    cum = monotone_cumulative(noisy[: counts.size])
    mass = np.diff(np.concatenate([[0.0], cum]))
    dist = Distribution(np.asarray(edges, dtype=np.float64), mass[1:-1], float(mass[0]), float(mass[-1]),
                        noisy[: counts.size], sigma)  # fmt: skip
    info: dict[str, Any] = {"method": "noisy histogram, isotonic cumulative sum", "sigma": sigma, "rho": rho,
                            "cells": int(edges.size - 1), "values": dist.total}  # fmt: skip
    if nulls is not None:
        info["noisy_nulls"] = float(noisy[-1])
    return dist, info


def distribution_cells(rows: float, sigma: float) -> int:
    """The cells of a distribution histogram measured with noise ``sigma`` on ``rows`` noisy
    rows: ``rows / (3σ)``, between 8 and :data:`FINE_CELLS` (a post-processing of released
    values: the grid is fixed before the histogram's noise)."""
    return int(np.clip(round(max(rows, 0.0) / (3.0 * sigma)), 8, FINE_CELLS))


def refine_bounds(dist: Distribution, integer: bool, false_positive: float = RANGE_FALSE_POSITIVE,
                  core: tuple[float, float] | None = None,
                  inner: tuple[float, float] | None = None) -> tuple[float, float, float]:  # fmt: skip
    """Bounds from a private distribution: the first and the last cell where values are found
    (:func:`mass_edges` over its noisy cells), so the bounds are near the extremes of the
    values and never held out by the noise of empty cells (the cells' extent when nothing is
    found). Integers: ``hi`` is the last integer of its cell. ``false_positive``: the scan's
    (:func:`mass_edges`; a table's columns share one rate). ``core``: the range the range
    step found, when the cells hold tail cells beyond it (:func:`fine_edges`): the core cells
    are scanned, and each tail on its own — a bound moves into a tail only where a window of
    tail cells alone stands out, never because a wide window reaching from an empty tail into
    the values passes on the values' mass. ``inner``: where the lowest bin the range step
    found (before its widening by a bin on each side) ends and where its highest begins: the
    bounds never pass them (the scan of finer, noisier cells trims the widening bins and
    within the found end bins, so it clamps no more than the range step).
    Returns ``(lo, hi, clamped share)``: the private mass outside the bounds (the cells cut off and the values found
    below and above the cells) over the private total, from the noisy counts of those cells
    (unbiased; the isotonic masses of many empty tail cells add up to a positive bias),
    clipped to ``[0, 1]``; :func:`clamped_noise` is its noise."""
    e, m, total = dist.edges, dist.masses, dist.total
    cells = dist.noisy[1:-1]
    c0, c1 = 0, m.size - 1
    if core is not None:
        inside = np.flatnonzero((e[:-1] >= core[0]) & (e[1:] <= core[1]))
        if inside.size:
            c0, c1 = int(inside[0]), int(inside[-1])
    nonneg = np.flatnonzero(e[:-1] >= 0.0)
    split = int(nonneg[0]) if nonneg.size and nonneg[0] > 0 else None  # the first cell of non-negative values

    def part(a: int, b: int) -> int | None:
        return None if split is None or not a < split <= b else split - a

    found = mass_edges(cells[c0 : c1 + 1], dist.sigma, false_positive, split=part(c0, c1))
    lo_i, hi_i = (c0, c1) if found is None else (c0 + found[0], c0 + found[1])
    if inner is not None:
        k_lo = np.flatnonzero(e[1:] <= inner[0])  # cells ending by the end of the lowest found bin
        k_hi = np.flatnonzero(e[:-1] >= inner[1])  # cells from the start of the highest found bin
        if k_lo.size:
            lo_i = min(lo_i, int(k_lo[-1]))
        if k_hi.size:
            hi_i = max(hi_i, int(k_hi[0]))
    if c0 > 0 and (below := mass_edges(cells[:c0], dist.sigma, false_positive, split=part(0, c0 - 1))) is not None:
        lo_i = min(lo_i, below[0])
    if c1 < m.size - 1 and (above := mass_edges(cells[c1 + 1 :], dist.sigma, false_positive,
                                                split=part(c1 + 1, m.size - 1))) is not None:  # fmt: skip
        hi_i = max(hi_i, c1 + 1 + above[1])
    lo, top = float(e[lo_i]), float(e[hi_i + 1])
    y = dist.noisy  # (below, cells..., above)
    outside = float(y[: lo_i + 1].sum() + y[hi_i + 2 :].sum())
    clamped = float(np.clip(outside / total, 0.0, 1.0)) if total > 0 else 0.0
    return lo, (top - 1.0 if integer else top), clamped


def clamped_noise(dist: Distribution, lo: float, hi: float, integer: bool) -> float:
    """The standard deviation of the clamped share :func:`refine_bounds` reports for bounds
    ``[lo, hi]`` (as a share of the private total): ``σ sqrt(k) / total``, ``k`` the cells
    outside the bounds (with the cells below and above the grid). Post-processing only."""
    e, total = dist.edges, dist.total
    top = hi + 1.0 if integer else hi
    k = int(np.sum(e[1:] <= lo) + np.sum(e[:-1] >= top)) + 2
    return float(dist.sigma * math.sqrt(k) / total) if total > 0 else 0.0


def quantile_cuts(dist: Distribution, lo: float, hi: float, bins: int, integer: bool) -> list[float]:
    """Interior cut points at the ``j/bins`` quantiles of the private distribution within
    ``[lo, hi]``, each at a cell edge; repeats merged (fewer bins). Equal-width cuts when
    the distribution holds no mass there."""
    e = dist.edges
    top = hi + 1.0 if integer else hi
    inside = (e[:-1] >= lo) & (e[1:] <= top)
    cells, mass = np.flatnonzero(inside), dist.masses[inside]
    if not mass.sum() > 0 or bins <= 1:
        return uniform_cuts(lo, hi, bins, integer)
    cdf = np.cumsum(mass) / mass.sum()
    cuts: list[float] = []
    for j in range(1, bins):
        k = min(int(np.searchsorted(cdf, j / bins, side="left")), cells.size - 1)
        c = float(e[cells[k] + 1])
        if lo < c < top and (not cuts or c > cuts[-1]):
            cuts.append(c)
    return cuts


def uniform_cuts(lo: float, hi: float, bins: int, integer: bool) -> list[float]:
    """Interior cut points of ``bins`` equal-width bins of ``[lo, hi]`` (integers: of
    ``min(bins, hi-lo+1)`` bins with integer cut points)."""
    top = hi + 1.0 if integer else hi
    return [float(c) for c in _split(lo, top, bins, integer)[1:-1]]


def auto_bins(values: float, rho: float, columns: int, *, lo: float | None = None, hi: float | None = None,
              integer: bool = False) -> int:  # fmt: skip
    """The number of bins of a numeric column with ``bins: "auto"``: a 2-way marginal of two
    such columns has ``bins²`` cells, and each should hold, on average, at least three times
    the noise of a marginal measured with a third of the mechanism's budget ``rho`` split
    over the table's ``columns`` (MST's measurements: ``σ = sqrt(3 columns / (2 rho))``), i.e.
    ``bins = sqrt(values / (3σ))``, between 2 and 64 — more budget, or more values, buys
    finer bins. ``values`` is the column's private count of values; an integer column never
    gets more bins than integers in its bounds."""
    sigma = math.sqrt(3.0 * max(columns, 1) / (2.0 * rho)) if rho > 0 else math.inf
    b = int(np.clip(round(math.sqrt(max(values, 0.0) / (3.0 * sigma))), 2, 64))
    if integer and lo is not None and hi is not None:
        b = min(b, int(hi - lo + 1))
    return max(b, 1)


# ----------------------------------------------------------------------------- isotonic
def monotone_cumulative(noisy: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence closest in least squares to the cumulative sums of
    ``noisy`` (isotonic regression, pool-adjacent-violators), clamped to ``[0, ∞)``: a
    cumulative count function estimated from independent noisy unit counts, with no
    clamping of single cells (module docstring, 4). Post-processing only."""
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
