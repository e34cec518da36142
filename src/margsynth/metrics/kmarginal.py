"""SDNist's k-marginal score of a deidentified NIST excerpt against its target (0–1000, higher is better).

Source: NIST, *SDNist v2: Deidentified Data Report tool*, the ``sdnist`` package version 2.4
(``sdnist.metrics.kmarginal.KMarginal`` with the data preparation of ``sdnist.report.dataset``:
validation, transformation and binning), as applied to the NIST Diverse Communities Data
Excerpts (2018 ACS person records, :data:`margsynth.data.NIST_EXCERPTS`). This module is our own
implementation of that definition; ``benchmarks/bench_kmarginal.py`` runs it beside the real
package (docs/notes/sdnist_kmarginal.md has the agreement measured).

Both tables are raw: one string (or number) per cell, the literal ``N`` marking a null.

1. **Features.** The target's columns that the deidentified table also has (its other columns
   are ignored). Each deidentified column is *validated* against the data dictionary as SDNist
   does, and a column that fails is dropped from both tables (SDNist's "values out of bound";
   :attr:`KMarginalResult.dropped` lists the offending values). ``N`` is accepted only where the
   dictionary lists it (always for ``INDP``); every other cell must parse as a number, which is
   truncated toward zero; a categorical code must then be one of the dictionary's codes, a
   ``PUMA`` one of its PUMA strings; a numeric feature (``"min"`` in its values) is not checked
   against its range. An empty cell, ``NaN`` or ``inf`` fails. The target must validate.
2. **Categories.** ``N`` becomes the category ``-1``. ``AGEP``, ``PINCP``, ``POVPIP``, ``PWGTP``
   and ``WGTP`` are binned by the target's percentile ranks: a target value of average rank
   ``r`` among the ``n`` non-null target values is in bin ``min(⌊20 r / n⌋, 19)`` (ties share a
   bin; ``POVPIP``'s top code 501 is ranked like any value). A deidentified value goes to the
   bin whose target values it falls among: with ``t_b`` the largest target value of bin ``b``,
   bin 0 takes ``v ≤ t_0``, a middle bin ``(t_previous, t_b]``, the last present bin everything
   above. SDNist starts the running lower bound at 0, so when the target has no bin 0 a value
   ``≤ 0`` is left unbinned and keeps its own (truncated) value as its category, as it does in
   SDNist. ``DENSITY`` (truncated; a value above ``max + 500``, ``max`` from the dictionary,
   becomes ``max + 400``) is cut at ``0, 150`` and the 9th to 21st of 21 log-spaced points from
   10 to ``max + 500``, intervals closed on the right; a value ``≤ 0`` (on which SDNist 2.4
   fails) is a category of its own. Every other feature's category is its
   truncated code; ``PUMA`` its string.
3. **Marginals.** With ``F`` the scored features other than ``PUMA`` and ``INDP`` (sorted), the
   marginals are all pairs ``{a, b}`` of ``F``, each joined with ``PUMA`` when ``PUMA`` is scored
   (SDNist's group feature): the 3-way marginals ``PUMA × a × b`` (231 of them on the 24
   features). A single feature in ``F`` gives its 1-way marginal.
4. **Score.** Each marginal's total variation ``TV = ½ Σ |t − s|`` between the two tables'
   normalised marginals (:func:`~margsynth.metrics.marginal.tv_distance`); the score is
   ``1000 · (1 − mean TV)`` (SDNist: ``(2 − mean Σ|t − s|) · 500``). 1000 is a perfect match,
   0 disjoint supports on every marginal. SDNist reports ``int(score)``; we keep the float.

**Subsample baselines** (SDNist's report: "K-Marginal score of a p% sub-sample of the target"):
the score of ``round(p · n)`` target records drawn without replacement (``DataFrame.sample(frac)``
in SDNist, unseeded there; seeded here) against the whole target, the subsample keeping the
target's own bins. SDNist reports p = 1%, 5%, 10%, …, 90%; :data:`BASELINE_FRACTIONS` are ours.

``margsynth evaluate`` reports the score as is under ``nist-kmarginal`` (the one metric of
``evaluate`` where higher is better; kept on SDNist's scale so that it can be compared with
SDNist's reports) and the baselines under ``nist-kmarginal-baselines``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..data.loaders import load_data_dictionary
from .marginal import tv_distance

__all__ = [
    "BASELINE_FRACTIONS",
    "GROUP_FEATURE",
    "NOT_IN_MARGINALS",
    "PERCENTILE_FEATURES",
    "RAW_METRICS",
    "KMarginalResult",
    "baseline_name",
    "evaluate_raw",
    "kmarginal_score",
    "subsample_baselines",
    "validate_columns",
]

#: Features binned by the target's percentile ranks (20 bins, ``N`` apart).
PERCENTILE_FEATURES: tuple[str, ...] = ("AGEP", "POVPIP", "PINCP", "PWGTP", "WGTP")
#: Features in no marginal of their own: ``PUMA`` (the group feature) and ``INDP`` (the detailed
#: industry code; its 19 categories ``INDP_CAT`` are scored).
NOT_IN_MARGINALS: tuple[str, ...] = ("PUMA", "INDP")
#: The group feature joined to every pair when the deidentified table has it.
GROUP_FEATURE = "PUMA"
#: Fractions of the target scored by :func:`subsample_baselines` by default.
BASELINE_FRACTIONS: tuple[float, ...] = (0.05, 0.10, 0.20, 0.40)

#: The metric names ``margsynth evaluate`` computes on the raw tables (module docstring).
RAW_METRICS: tuple[str, ...] = ("nist-kmarginal", "nist-kmarginal-baselines")

_NULL = "N"
_NULL_CODE = -1
_PERCENTILE_BINS = 20


@dataclass(frozen=True)
class KMarginalResult:
    """What :func:`kmarginal_score` computed: the score and what it was computed on."""

    score: float  # 0..1000, higher is better
    features: tuple[str, ...]  # the scored features, sorted
    marginals: tuple[tuple[str, ...], ...]  # the column sets of the marginals averaged
    dropped: dict[str, tuple[str, ...]] = field(default_factory=dict)  # failed validation -> offending values
    missing: tuple[str, ...] = ()  # target columns the deidentified table lacks

    def notes(self) -> list[str]:
        """One line per reason a target column was not scored (empty when all were)."""
        out = []
        if self.dropped:
            cols = "; ".join(f"{f} (values {list(v)})" for f, v in self.dropped.items())
            out.append(
                f"columns dropped from the score, as SDNist drops them (values that do not fit the data dictionary): {cols}"
            )
        if self.missing:
            out.append(f"target columns absent from the deidentified table, not scored: {', '.join(self.missing)}")
        return out


@dataclass(frozen=True)
class _Column:
    """One validated, categorised column: integer categories (``PUMA``: strings)."""

    cats: np.ndarray
    numbers: np.ndarray | None = None  # truncated non-null values (percentile features), for the target's bins


def _feature_spec(dictionary: Mapping[str, Mapping], feature: str) -> dict:
    try:
        entry = dictionary[feature]
    except KeyError:
        raise ValueError(
            f"column {feature!r}: not described by the data dictionary; expected a feature of a NIST excerpt "
            f"({', '.join(dictionary)})"
        ) from None
    values = entry.get("values")
    return {"values": values if isinstance(values, Mapping) else None}


def _cells(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(is_null, numbers)``: ``N`` cells, and every cell parsed as a float (NaN where it is not a number)."""
    obj = series.astype(object)
    is_null = (obj == _NULL).to_numpy(dtype=bool)
    numbers = pd.to_numeric(obj.where(~is_null, np.nan), errors="coerce")
    return is_null, numbers.to_numpy(np.float64, na_value=np.nan)


def _validate(series: pd.Series, feature: str, spec: dict) -> tuple[np.ndarray | None, np.ndarray, list[str]]:
    """SDNist's check of one column: ``(truncated numbers or None for PUMA, is_null, bad values)``."""
    values = spec["values"]
    if feature == GROUP_FEATURE:
        allowed = set(values or {})
        strings = series.astype(str).to_numpy()
        bad = sorted({s for s in strings if s not in allowed})
        return None, np.zeros(len(series), dtype=bool), bad
    null_ok = feature == "INDP" or (values is not None and _NULL in values)
    is_null, numbers = _cells(series)
    bad_mask = ~is_null & ~(np.isfinite(numbers) & (np.abs(numbers) < 2.0**62))
    trunc = np.where(bad_mask | is_null, 0.0, np.trunc(np.nan_to_num(numbers))).astype(np.int64)
    if not null_ok:
        bad_mask |= is_null
    if values is not None and "min" not in values and feature != "INDP":
        try:
            codes = {int(k) for k in values if k != _NULL}
        except ValueError:
            raise ValueError(
                f"data dictionary: feature {feature!r} has codes {list(values)}; expected integer codes (and N)"
            ) from None
        bad_mask |= ~is_null & ~bad_mask & ~np.isin(trunc, list(codes))
    raw = series.astype(object).to_numpy()
    bad = sorted({str(v) for v in raw[bad_mask]})
    return trunc, is_null, bad


def _density_edges(dictionary: Mapping[str, Mapping]) -> tuple[np.ndarray, float]:
    try:
        top = float(dictionary["DENSITY"]["values"]["max"]) + 500.0
    except (KeyError, TypeError, ValueError):
        raise ValueError("data dictionary: DENSITY needs values.max (a number) to bin DENSITY") from None
    points = np.logspace(math.log(10, 10), math.log(top, 10), num=21)
    return np.concatenate([[0.0, 150.0], points[8:]]), top


def _density_categories(trunc: np.ndarray, dictionary: Mapping[str, Mapping]) -> np.ndarray:
    edges, top = _density_edges(dictionary)
    v = trunc.astype(np.float64)
    v = np.where(v > top, top - 100.0, v)
    cats = np.searchsorted(edges, v, side="left") - 1  # (edges[i], edges[i + 1]] -> i
    return np.where(v <= 0, _NULL_CODE, cats).astype(np.int64)  # <= 0: outside every bin (SDNist fails there)


def _target_percentile_bins(trunc: np.ndarray, is_null: np.ndarray) -> np.ndarray:
    cats = np.full(len(trunc), _NULL_CODE, dtype=np.int64)
    present = ~is_null
    if present.any():
        pct = pd.Series(trunc[present]).rank(method="average", pct=True).to_numpy()
        cats[present] = np.minimum(np.floor(_PERCENTILE_BINS * pct), _PERCENTILE_BINS - 1).astype(np.int64)
    return cats


def _synthetic_percentile_bins(trunc: np.ndarray, is_null: np.ndarray, target: _Column) -> np.ndarray:
    """The bins of a deidentified column by the target's bin maxima (module docstring, step 2)."""
    t_cats, t_vals = target.cats, target.numbers
    cats = np.where(is_null, _NULL_CODE, trunc).astype(np.int64)  # unbinned values keep their own value
    present = ~is_null
    bins = sorted(int(b) for b in np.unique(t_cats) if b != _NULL_CODE)
    lower = 0
    for b in bins:
        upper = int(t_vals[t_cats == b].max())
        if b == 0:
            mask = trunc <= upper
        elif b != bins[-1]:
            mask = (trunc > lower) & (trunc <= upper)
        else:
            mask = trunc > lower
        cats[present & mask] = b
        lower = upper
    return cats


def _categorise(
    series: pd.Series, feature: str, spec: dict, dictionary: Mapping[str, Mapping], target: _Column | None
) -> tuple[_Column | None, list[str]]:
    """Validate and categorise one column (``target`` given: a deidentified column binned by it)."""
    trunc, is_null, bad = _validate(series, feature, spec)
    if bad:
        return None, bad
    if trunc is None:  # PUMA
        return _Column(series.astype(str).to_numpy()), []
    if feature in PERCENTILE_FEATURES:
        if target is None:
            return _Column(_target_percentile_bins(trunc, is_null), np.where(is_null, 0, trunc)), []
        return _Column(_synthetic_percentile_bins(trunc, is_null, target)), []
    if feature == "DENSITY":
        return _Column(np.where(is_null, _NULL_CODE, _density_categories(trunc, dictionary))), []
    return _Column(np.where(is_null, _NULL_CODE, trunc).astype(np.int64)), []


def _frame(x, what: str) -> pd.DataFrame:
    if not isinstance(x, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(x).__name__}")
    if len(x) == 0:
        raise ValueError(f"{what} has no rows; expected at least one record")
    dup = sorted({str(c) for c in x.columns if list(x.columns).count(c) > 1})
    if dup:
        raise ValueError(f"{what} names column(s) {dup} more than once; expected each column once")
    return x


def _dictionary(data_dictionary: Mapping[str, Mapping] | None) -> Mapping[str, Mapping]:
    if data_dictionary is None:
        return load_data_dictionary()
    if not isinstance(data_dictionary, Mapping) or not data_dictionary:
        raise ValueError(f"data_dictionary must be a non-empty mapping {{feature: {{...}}}}, got {data_dictionary!r}")
    return data_dictionary


@dataclass(frozen=True)
class _Prepared:
    """The target, categorised: what every deidentified table (and every subsample) is scored against."""

    columns: dict[str, _Column]
    specs: dict[str, dict]
    dictionary: Mapping[str, Mapping]
    n: int


def _prepare_target(target: pd.DataFrame, dictionary: Mapping[str, Mapping]) -> _Prepared:
    target = _frame(target, "target")
    columns, specs = {}, {}
    for feature in target.columns:
        spec = _feature_spec(dictionary, str(feature))
        col, bad = _categorise(target[feature], str(feature), spec, dictionary, None)
        if col is None:
            raise ValueError(
                f"target column {feature!r}: value(s) {bad[:5]} do not fit the data dictionary; expected "
                + ("N or " if spec["values"] and _NULL in spec["values"] else "")
                + ("one of its codes" if spec["values"] and "min" not in spec["values"] else "numbers")
            )
        columns[str(feature)], specs[str(feature)] = col, spec
    return _Prepared(columns, specs, dictionary, len(target))


def _marginals(features: Sequence[str]) -> list[tuple[str, ...]]:
    cols = sorted(f for f in features if f not in NOT_IN_MARGINALS)
    if not cols:
        raise ValueError(
            f"no feature to score: the scored features {sorted(features)} are all among {list(NOT_IN_MARGINALS)}"
        )
    group = (GROUP_FEATURE,) if GROUP_FEATURE in features else ()
    pairs = [(cols[0],)] if len(cols) == 1 else list(itertools.combinations(cols, 2))
    return [group + p for p in pairs]


def _mean_tv(t: dict[str, np.ndarray], s: dict[str, np.ndarray], marginals: Sequence[tuple[str, ...]]) -> float:
    """Mean TV over ``marginals`` of two tables of categories (``t``, ``s``: feature -> array)."""
    nt = len(next(iter(t.values())))
    dense: dict[str, tuple[np.ndarray, int]] = {}
    for f in {f for m in marginals for f in m}:
        levels, inv = np.unique(np.concatenate([t[f], s[f]]), return_inverse=True)
        dense[f] = (inv.astype(np.int64), len(levels))
    tvs = []
    for m in marginals:
        key = np.zeros_like(dense[m[0]][0])
        size = 1
        for f in m:
            codes, k = dense[f]
            key = key * k + codes
            size *= k
        if size > 4 * len(key) + 1024:  # sparse: count the cells that occur
            _, key = np.unique(key, return_inverse=True)
            size = int(key.max()) + 1
        tvs.append(tv_distance(np.bincount(key[:nt], minlength=size), np.bincount(key[nt:], minlength=size)))
    return float(np.mean(tvs))


def _score(tv: float) -> float:
    return 1000.0 * (1.0 - tv)


def kmarginal_score(
    target: pd.DataFrame, synthetic: pd.DataFrame, *, data_dictionary: Mapping[str, Mapping] | None = None
) -> KMarginalResult:
    """SDNist v2's k-marginal score of ``synthetic`` against ``target`` (module docstring).

    ``target`` and ``synthetic`` are raw tables of a NIST excerpt's features (cells as strings,
    ``N`` the null, or as numbers); ``data_dictionary`` the excerpts' dictionary (default: the
    registered one, :func:`margsynth.data.load_data_dictionary`). A target column the dictionary
    does not describe, or whose values do not fit it, is a ``ValueError``; a deidentified column
    that does not fit is dropped from the score (as SDNist drops it) and reported in
    :attr:`KMarginalResult.dropped`.
    """
    dictionary = _dictionary(data_dictionary)
    prep = _prepare_target(target, dictionary)
    synthetic = _frame(synthetic, "synthetic")
    present = set(map(str, synthetic.columns))
    missing = tuple(f for f in prep.columns if f not in present)
    scored, dropped, s_cols = [], {}, {}
    for f, tcol in prep.columns.items():
        if f not in present:
            continue
        col, bad = _categorise(synthetic[f], f, prep.specs[f], dictionary, tcol)
        if col is None:
            dropped[f] = tuple(bad[:5])
            continue
        scored.append(f)
        s_cols[f] = col.cats
    if not scored:
        detail = "; ".join(f"{f} (values {list(v[:3])})" for f, v in list(dropped.items())[:4])
        raise ValueError(
            "synthetic shares no valid column with the target: "
            + (
                f"all {len(dropped)} shared columns hold values that do not fit the data dictionary, e.g. {detail}"
                if dropped
                else f"the target has {list(prep.columns)}"
            )
        )
    marginals = _marginals(scored)
    tv = _mean_tv({f: prep.columns[f].cats for f in scored}, s_cols, marginals)
    return KMarginalResult(_score(tv), tuple(sorted(scored)), tuple(marginals), dropped, missing)


def subsample_baselines(
    target: pd.DataFrame,
    *,
    fractions: Sequence[float] = BASELINE_FRACTIONS,
    seed: int | np.random.Generator = 0,
    data_dictionary: Mapping[str, Mapping] | None = None,
    features: Sequence[str] | None = None,
) -> dict[float, float]:
    """``{p: score}``: the k-marginal score of a ``p``-subsample of ``target`` against ``target``
    (module docstring), for each fraction ``p`` in ``(0, 1]``. One generator (``seed``) draws
    the subsamples in the order of ``fractions``: the same seed gives the same subsamples.
    ``features`` (default: all of the target's) restricts the score to those columns, as SDNist
    scores its baselines on the features the deidentified table was scored on
    (:attr:`KMarginalResult.features`)."""
    fracs = [float(p) for p in fractions]
    for p in fracs:
        if not 0.0 < p <= 1.0:
            raise ValueError(f"fractions: {p!r} is not in (0, 1]; expected subsample fractions such as 0.05")
    if not fracs:
        raise ValueError("fractions is empty; expected at least one subsample fraction")
    dictionary = _dictionary(data_dictionary)
    target = _frame(target, "target")
    if features is not None:
        unknown = [f for f in features if f not in target.columns]
        if unknown or not features:
            raise ValueError(
                f"features {list(features)!r}: expected target columns ({', '.join(map(str, target.columns))})"
            )
        target = target[list(features)]
    prep = _prepare_target(target, dictionary)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    t = {f: c.cats for f, c in prep.columns.items()}
    marginals = _marginals(list(t))
    out = {}
    for p in fracs:
        size = round(p * prep.n)
        if size < 1:
            raise ValueError(f"fractions: {p!r} of {prep.n} target records is no record; expected a larger fraction")
        rows = rng.choice(prep.n, size=size, replace=False)
        out[p] = _score(_mean_tv(t, {f: c[rows] for f, c in t.items()}, marginals))
    return out


def validate_columns(
    synthetic: pd.DataFrame, *, data_dictionary: Mapping[str, Mapping] | None = None
) -> dict[str, tuple[str, ...]]:
    """SDNist's validation of a deidentified table (module docstring, step 1) alone:
    ``{column: the values it rejects}`` for every column of ``synthetic`` that the data
    dictionary describes and that SDNist would drop (empty when it accepts them all). Columns
    the dictionary does not describe are not checked (SDNist ignores what the target lacks)."""
    dictionary = _dictionary(data_dictionary)
    synthetic = _frame(synthetic, "synthetic")
    out = {}
    for f in map(str, synthetic.columns):
        if f in dictionary:
            bad = _validate(synthetic[f], f, _feature_spec(dictionary, f))[2]
            if bad:
                out[f] = tuple(bad)
    return out


def baseline_name(fraction: float) -> str:
    """The ``evaluate`` output name of the subsample baseline at ``fraction``: ``nist-kmarginal-subsample-5%``."""
    pct = fraction * 100
    return f"nist-kmarginal-subsample-{round(pct) if abs(pct - round(pct)) < 1e-9 else pct:g}%"


def evaluate_raw(
    target: pd.DataFrame,
    synthetic: pd.DataFrame,
    names: Sequence[str],
    *,
    seed: int = 0,
    data_dictionary: Mapping[str, Mapping] | None = None,
) -> tuple[dict[str, float], KMarginalResult]:
    """The raw-table metrics :data:`RAW_METRICS` named in ``names``, for ``margsynth evaluate``:
    ``({output name: value}, the k-marginal result)``. ``nist-kmarginal`` is the score;
    ``nist-kmarginal-baselines`` adds one ``nist-kmarginal-subsample-P%`` per fraction of
    :data:`BASELINE_FRACTIONS`, scored on the features the synthetic table was scored on, the
    subsamples drawn from a generator derived from ``seed`` and the metric's name (as
    :func:`margsynth.metrics.suite.evaluate` derives its metrics' generators)."""
    unknown = [n for n in names if n not in RAW_METRICS]
    if unknown:
        raise ValueError(f"metric {unknown[0]!r}: not a raw-table metric; expected one of {', '.join(RAW_METRICS)}")
    dictionary = _dictionary(data_dictionary)
    result = kmarginal_score(target, synthetic, data_dictionary=dictionary)
    out: dict[str, float] = {}
    for name in names:
        if name == "nist-kmarginal":
            out[name] = result.score
        else:
            rng = np.random.default_rng([int(seed), *name.encode()])
            scores = subsample_baselines(target, seed=rng, data_dictionary=dictionary, features=result.features)
            out.update({baseline_name(p): v for p, v in scores.items()})
    return out, result
