"""Notebook 03: Examples 1-3 of the NIST-MST/MST paper (§4.2) on adult.

The paper draws 1,000 records from the NIST contest data and measures the
(SEX, LABFORCE) and (LABFORCE, SCHOOL) marginals with the Gaussian mechanism
(sigma = 50). The contest data are not available, so three adult attributes
play the roles (``ROLES``): ``sex`` for SEX, ``relationship`` for LABFORCE
(the middle of the chain, strongly tied to both others: husband/wife/...),
and ``income>50K`` for SCHOOL — two binary attributes conditionally
almost independent given the middle one, as in the paper (Example 2: "SEX
and SCHOOL are (approximately) conditionally independent given LABFORCE").

* Example 1: L1 error of the noisy vs the Private-PGM marginals, over many
  noise seeds (not one lucky draw);
* Example 2: the estimated unmeasured (SEX, SCHOOL) and (SEX, LABFORCE,
  SCHOOL) marginals vs the truth (with the independence estimate from the
  noisy one-way counts as a reference point);
* Example 3: L1 distance of the synthetic data's marginals to the model's,
  for the rounding procedure (Algorithms 7-8) vs i.i.d. sampling.

Everything is returned as pandas DataFrames; the notebook only plots.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..data import load
from ..inference.pgm import Measurement, estimate
from .cache import memoize

__all__ = ["PROFILES", "ROLES", "SIGMA", "error_study", "example_tables", "sample", "summarise"]

ROLES = {"SEX": "sex", "LABFORCE": "relationship", "SCHOOL": "income>50K"}
SIGMA = 50.0
RECORDS = 1000
ITERS = 1000
PROFILES = {"quick": {"seeds": 60}, "full": {"seeds": 1000}}


def sample(sample_seed: int = 0, records: int = RECORDS):
    """The ``records``-record sample of adult over the three role attributes."""
    data = load("adult").project(list(ROLES.values()))
    return data.sample(records, np.random.default_rng(sample_seed))


def _pairs() -> tuple[tuple[str, str], tuple[str, str]]:
    s, lab, sch = ROLES["SEX"], ROLES["LABFORCE"], ROLES["SCHOOL"]
    return (s, lab), (lab, sch)


def _fit(data, noise_seed: int, iters: int):
    rng = np.random.default_rng(noise_seed)
    ms, noisy = [], {}
    for c in _pairs():
        truth = data.marginal(c).ravel().astype(np.float64)
        y = truth + rng.normal(0.0, SIGMA, size=truth.size)
        noisy[c] = y.reshape(data.marginal(c).shape)
        ms.append(Measurement(c, None, y, SIGMA))
    model = estimate(data.domain, ms, iters=iters)
    return model, noisy


def _l1(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)).sum())


def _independence(noisy, a: str, b: str, n: float) -> np.ndarray:
    """Reference estimate of an unmeasured pair: product of one-way counts read off the noisy tables."""
    (p1, p2) = _pairs()
    ma = np.clip(noisy[p1].sum(axis=1 if p1[0] == a else 0), 0, None)
    mb = np.clip(noisy[p2].sum(axis=0 if p2[1] == b else 1), 0, None)
    return np.outer(ma / max(ma.sum(), 1e-12), mb / max(mb.sum(), 1e-12)) * n


@memoize(version=1)
def error_study(seeds: int = 60, sample_seed: int = 0, iters: int = ITERS) -> pd.DataFrame:
    """One row per (noise seed, example, marginal, estimate) with the L1 error.

    Columns: ``seed, example, marginal, estimate, l1, l1_normalised`` (L1
    divided by the number of records, the paper's "normalized L1").
    """
    data = sample(sample_seed)
    n = len(data)
    s, lab, sch = ROLES["SEX"], ROLES["LABFORCE"], ROLES["SCHOOL"]
    rows = []

    def add(seed, example, marginal, est, l1):
        rows.append(
            {"seed": seed, "example": example, "marginal": marginal, "estimate": est, "l1": l1, "l1_normalised": l1 / n}
        )

    for seed in range(seeds):
        model, noisy = _fit(data, seed, iters)
        for c in _pairs():
            name = f"({c[0]}, {c[1]})"
            add(seed, "1: measured", name, "noisy", _l1(noisy[c], data.marginal(c)))
            add(seed, "1: measured", name, "Private-PGM", _l1(model.project(c), data.marginal(c)))
        add(
            seed, "2: unmeasured", f"({s}, {sch})", "Private-PGM", _l1(model.project((s, sch)), data.marginal((s, sch)))
        )
        add(
            seed,
            "2: unmeasured",
            f"({s}, {sch})",
            "independence",
            _l1(_independence(noisy, s, sch, model.total), data.marginal((s, sch))),
        )
        add(
            seed,
            "2: unmeasured",
            f"({s}, {lab}, {sch})",
            "Private-PGM",
            _l1(model.project((s, lab, sch)), data.marginal((s, lab, sch))),
        )
        rng = np.random.default_rng(10_000 + seed)
        for method, label in (("round", "rounding (Alg. 7-8)"), ("sample", "i.i.d. sampling")):
            synth = model.synthetic_data(rng=rng, method=method)
            for c in [(lab,), *_pairs(), (s, lab, sch)]:
                add(
                    seed,
                    "3: synthetic vs model",
                    "(" + ", ".join(c) + ")",
                    label,
                    _l1(synth.marginal(c), model.project(c)),
                )
    return pd.DataFrame(rows)


def summarise(errors: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and median of the L1 errors per (example, marginal, estimate)."""
    g = errors.groupby(["example", "marginal", "estimate"], sort=False)["l1"]
    out = g.agg(["count", "mean", "std", "median"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["count"])
    return out


def _table(arr: np.ndarray, attrs: Sequence[str], value: str) -> pd.DataFrame:
    idx = pd.MultiIndex.from_product([range(k) for k in arr.shape], names=list(attrs))
    return pd.DataFrame({value: np.asarray(arr, dtype=float).ravel()}, index=idx)


@memoize(version=1)
def example_tables(noise_seed: int = 0, sample_seed: int = 0, iters: int = ITERS) -> dict[str, pd.DataFrame]:
    """The paper's tables for one draw: Example 1 (true / noisy / Private-PGM measured
    marginals), Example 2 (true vs estimated unmeasured 2- and 3-way marginals) and
    Example 3 (the LABFORCE marginal of the model, the rounded synthetic data and an
    i.i.d. sample)."""
    data = sample(sample_seed)
    model, noisy = _fit(data, noise_seed, iters)
    s, lab, sch = ROLES["SEX"], ROLES["LABFORCE"], ROLES["SCHOOL"]
    out = {}
    for c in _pairs():
        key = f"example1_{c[0]}_{c[1]}"
        out[key] = pd.concat(
            [
                _table(data.marginal(c), c, "true"),
                _table(noisy[c], c, "noisy"),
                _table(model.project(c), c, "Private-PGM"),
            ],
            axis=1,
        ).reset_index()
    for c in [(s, sch), (s, lab, sch)]:
        key = "example2_" + "_".join(c)
        out[key] = pd.concat(
            [_table(data.marginal(c), c, "true"), _table(model.project(c), c, "Private-PGM")], axis=1
        ).reset_index()
    rng = np.random.default_rng(noise_seed)
    rounded = model.synthetic_data(rng=rng, method="round")
    sampled = model.synthetic_data(rng=rng, method="sample")
    out["example3_" + lab] = pd.concat(
        [
            _table(model.project((lab,)), (lab,), "model"),
            _table(rounded.marginal((lab,)), (lab,), "synthetic (rounding)"),
            _table(sampled.marginal((lab,)), (lab,), "synthetic (i.i.d. sampling)"),
        ],
        axis=1,
    ).reset_index()
    out["consistency"] = pd.DataFrame(
        {
            "source": [
                f"noisy ({s}, {lab})",
                f"noisy ({lab}, {sch})",
                f"Private-PGM ({s}, {lab})",
                f"Private-PGM ({lab}, {sch})",
            ],
            f"{lab} one-way counts": [
                np.round(noisy[_pairs()[0]].sum(axis=0), 3).tolist(),
                np.round(noisy[_pairs()[1]].sum(axis=1), 3).tolist(),
                np.round(model.project(_pairs()[0]).sum(axis=0), 3).tolist(),
                np.round(model.project(_pairs()[1]).sum(axis=1), 3).tolist(),
            ],
        }
    )
    return out
