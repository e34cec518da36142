"""Notebook 05 — the PrivPGD benchmark (Donhauser et al., ICML 2024, §4.1-4.3, Figures 1-2).

A sweep (dataset x epsilon x method x seed) through :mod:`margsynth.experiments.sweep`
(each job memoized on disk by its inputs), the paper's six metrics per job (§4.1,
:mod:`margsynth.metrics.evaluation`), the real-data downstream baseline, the
relative-performance view of Figure 1 (per metric, each method's value divided by
the best method's, so 1 = best) and the distance view of Figure 2 (average sliced W1
and TV over the 2-way marginals), and the paper's appendix tables
(``margsynth.experiments.published``: ``privpgd_tables``) summarised *in kind*: the paper's datasets
(ACS, Taxi, ...) are not available here, so we compare per-method medians over
datasets and mean ranks, never cell by cell.

Profiles (``PROFILES``), both with the seven methods of ``METHOD_ORDER`` (PrivPGD, PGM+MST,
PGM+AIM, GUM and the paper's query-based RAP, GEM and Private-GSD, all 2-way marginals as
their workload):

* ``quick`` — titanic and nltcs, eps in {0.2, 2.5} (the ends of the paper's range), 1 seed:
  four columns of Figure 1, two panels of Figure 2; PrivPGD ``fast`` with 40 epochs and 10,000
  particles; RAP, GEM and Private-GSD with their ``fast`` presets; PGM+MST, PGM+AIM and GUM
  with their defaults (AIM with 16 rounds and 300 Private-PGM iterations was far from
  converged on nltcs: 2-way TV 0.15 vs 0.025). Its 28 jobs take about 90 CPU-seconds, the
  sweep on two worker processes.
* ``full`` — every available dataset (:func:`available_datasets`), eps in {0.2, 1, 2.5},
  delta = 1e-5, 3 seeds; PrivPGD with the paper's defaults (``PrivPGD.preset("default")``),
  RAP, GEM and Private-GSD with their ``default`` presets, PGM+MST / PGM+AIM / GUM with
  their registry defaults. Expected runtime on the 2-core CPU: PrivPGD default ~30-45 min
  per (dataset, eps, seed) on adult (titanic/nltcs are smaller), AIM 5-30 min, MST ~1-3 min,
  RAP and Private-GSD ~1 CPU-minute, GEM ~6, so about 3 datasets x 3 eps x 3 seeds x ~1 h =
  ~1.5 days on one machine — run it on a Dask cluster (``scheduler=``) or a GPU for PrivPGD.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from .. import data as D
from ..data import load
from ..metrics.evaluation import default_target, downstream_error, fixed_split
from . import published
from .cache import memoize
from .sweep import DEFAULT_METRICS, METHODS, grid, run_sweep

__all__ = [
    "CORE_DATASETS",
    "LOWER_IS_BETTER",
    "METRIC_LABELS",
    "PAPER_METHODS",
    "PROFILES",
    "available_datasets",
    "benchmark",
    "distance_table",
    "method_params",
    "paper_summary",
    "paper_table",
    "our_summary",
    "privpgd_leads",
    "real_baseline",
    "relative_performance",
]

CORE_DATASETS = ("adult", "nltcs", "titanic")
METHOD_ORDER = ("PrivPGD", "PGM+MST", "PGM+AIM", "GUM", "RAP", "GEM", "Private-GSD")
#: Methods whose registry factory takes a ``preset`` (expanded into every field by :func:`method_params`).
PRESET_METHODS = ("PrivPGD", "RAP", "GEM", "Private-GSD")
METRIC_LABELS = {
    "downstream": "downstream",
    "covariance": "covariance",
    "counting-queries": "counting query",
    "threshold-queries": "thresholding query",
    "sw-2way": "SW1 distance",
    "tv-2way": "TV distance",
}
#: our metric name -> column of privpgd_tables.csv
PAPER_COLUMNS = {
    "downstream": "downstream_synth",
    "covariance": "covariance",
    "counting-queries": "counting_query",
    "threshold-queries": "thresholding_query",
    "sw-2way": "sw1_distance",
    "tv-2way": "tv_distance",
}
LOWER_IS_BETTER = True  # every metric of §4.1
PAPER_METHODS = ("PrivPGD", "PGM+MST", "PGM+AIM", "Private-GSD", "GEM", "RAP")
#: Rough relative cost of a job per method (the order jobs are started in: slowest first).
JOB_COST = {"PGM+AIM": 6, "PrivPGD": 5, "PGM+MST": 3, "GEM": 2, "Private-GSD": 1, "RAP": 1, "GUM": 1}
#: the published table's method labels -> ours
PAPER_LABELS = {"Private GSD": "Private-GSD"}

PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "datasets": ("titanic", "nltcs"),
        "epsilons": (0.2, 2.5),
        "seeds": (0,),
        "methods": METHOD_ORDER,
        "params": {
            "PrivPGD": {"preset": "fast", "epochs": 40, "n_particles": 10_000, "lr_step": 4},
            "PGM+MST": {},
            "PGM+AIM": {},
            "GUM": {},
            "RAP": {"preset": "fast", "progress": False},
            "GEM": {"preset": "fast", "progress": False},
            "Private-GSD": {"preset": "fast", "progress": False},
        },
    },
    "full": {
        "datasets": None,  # available_datasets()
        "epsilons": (0.2, 1.0, 2.5),
        "seeds": (0, 1, 2),
        "methods": METHOD_ORDER,
        "params": {
            "PrivPGD": {"preset": "default"},
            "PGM+MST": {},
            "PGM+AIM": {},
            "GUM": {},
            "RAP": {"preset": "default", "progress": False},
            "GEM": {"preset": "default", "progress": False},
            "Private-GSD": {"preset": "default", "progress": False},
        },
    },
}


def method_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Mechanism keyword arguments for a sweep job. The ``preset`` of PrivPGD, RAP, GEM and
    Private-GSD is expanded into the full hyperparameter set (so the cache key names every
    value)."""
    params = dict(params)
    if method in PRESET_METHODS:
        from ..mechanisms.registry import create  # the factory may load torch

        cfg = asdict(create(METHODS[method], **params))
        cfg.pop("constraint", None)
        cfg.update(cfg.pop("generator", None) or {})  # PrivPGD's generator fields, flat (the factory routes them)
        return cfg
    return params


def available_datasets() -> list[str]:
    """adult, nltcs, titanic and every other registered record dataset present locally
    (``margsynth.data.is_available``); the adult public/private halves are left out (they
    are adult)."""
    names = list(CORE_DATASETS)
    for name, (reg, *_rest) in D.RECORD_DATASETS.items():
        if name in names or reg == "adult-split":
            continue
        if D.is_available(reg):
            names.append(name)
    return [n for n in names if D.is_available(D.RECORD_DATASETS[n][0])]


def benchmark(
    profile: str = "quick",
    *,
    datasets=None,
    epsilons=None,
    seeds=None,
    methods=None,
    params: dict[str, dict[str, Any]] | None = None,
    workers: int | None = 1,
    scheduler: str | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per (dataset, epsilon, method, seed) with the six metrics and timings."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {sorted(PROFILES)}")
    cfg = PROFILES[profile]
    datasets = list(datasets or cfg["datasets"] or available_datasets())
    epsilons = list(epsilons or cfg["epsilons"])
    seeds = list(seeds if seeds is not None else cfg["seeds"])
    methods = list(methods or cfg["methods"])
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; expected one of {list(METHODS)}")
    merged = {m: dict(cfg["params"].get(m, {})) for m in methods}
    for m, p in (params or {}).items():
        merged.setdefault(m, {}).update(p)
    jobs = grid(
        datasets,
        epsilons,
        methods,
        seeds,
        params={m: method_params(m, merged[m]) for m in methods},
        metrics=DEFAULT_METRICS,
    )
    # the slowest jobs first, so that parallel workers finish together; rows back in grid order
    order = sorted(range(len(jobs)), key=lambda i: -JOB_COST.get(jobs[i].method, 1))
    df = run_sweep([jobs[i] for i in order], workers=workers, scheduler=scheduler, progress=progress)
    df.index = order
    return df.sort_index().reset_index(drop=True).drop(columns=["params"], errors="ignore")


@memoize(version=1)
def real_baseline(dataset: str) -> float:
    """Downstream error of gradient boosting trained on the real 80% and tested on the 20%
    (the ``downstream_real`` column of the paper's tables)."""
    train, test = fixed_split(load(dataset), dataset)
    return downstream_error(
        train,
        train,
        rng=np.random.default_rng([0, *b"downstream"]),
        test=test,
        target=default_target(train.domain, dataset),
    )


def _mean_over_seeds(df: pd.DataFrame, metrics=DEFAULT_METRICS) -> pd.DataFrame:
    return df.groupby(["dataset", "epsilon", "method"], sort=False)[list(metrics)].mean().reset_index()


def relative_performance(df: pd.DataFrame, metrics=DEFAULT_METRICS) -> pd.DataFrame:
    """Figure 1: per (dataset, epsilon, metric), each method's seed-mean divided by the best
    (smallest) method's, and its rank among the methods; long format with columns dataset,
    epsilon, method, metric, value, relative (1 = best), rank (1 = best, ties averaged)."""
    m = _mean_over_seeds(df, metrics).melt(id_vars=["dataset", "epsilon", "method"], var_name="metric")
    groups = m.groupby(["dataset", "epsilon", "metric"])["value"]
    best = groups.transform("min")
    m["relative"] = np.where(best > 0, m["value"] / best.where(best > 0, 1.0), np.where(m["value"] > 0, np.inf, 1.0))
    m["rank"] = groups.rank(method="average")
    return m


def distance_table(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 2's numbers: seed mean and sd of sw-2way and tv-2way per dataset, epsilon, method."""
    g = df.groupby(["dataset", "epsilon", "method"], sort=False)[["sw-2way", "tv-2way"]]
    out = g.mean().add_suffix(" mean").join(g.std(ddof=0).fillna(0.0).add_suffix(" sd"))
    return out.reset_index()


def paper_table(block: int = 0) -> pd.DataFrame:
    """The paper's appendix table ``block`` (0 = the default budget, most likely eps = 2.5)
    with our metric names as columns."""
    ref = published.load("privpgd_tables")
    ref = ref[ref["table_block"] == block]
    out = ref[["dataset", "method"]].copy()
    out["method"] = out["method"].replace(PAPER_LABELS)
    for ours, col in PAPER_COLUMNS.items():
        out[ours] = ref[col].astype(float)
    out["downstream_real"] = ref["downstream_real"].astype(float)
    return out.reset_index(drop=True)


def _ranks(table: pd.DataFrame, group: list[str], metrics) -> pd.DataFrame:
    r = table.copy()
    for m in metrics:
        r[m] = table.groupby(group)[m].rank(method="average")
    return r


def paper_summary(block: int = 0, methods=PAPER_METHODS) -> pd.DataFrame:
    """Per method: the median over the paper's datasets of each metric and the mean rank
    among ``methods`` (ranked within each dataset, 1 = best; only the datasets with a row
    for every one of ``methods``: with RAP and GEM, the paper's ACS Employment is left out,
    where they did not fit in memory). The TV column is the paper's ``||p - q||_1``-style
    number as printed (see our ``tv-2way`` docstring)."""
    t = paper_table(block)
    t = t[t["method"].isin(methods)]
    t = t[t.groupby("dataset")["method"].transform("nunique") == len(methods)]
    return _summary(t, ["dataset"], list(PAPER_COLUMNS), "paper")


def our_summary(df: pd.DataFrame, epsilon: float | None = None) -> pd.DataFrame:
    """Same as :func:`paper_summary` for our sweep (seed means; datasets x epsilon as the groups)."""
    t = _mean_over_seeds(df)
    if epsilon is not None:
        t = t[np.isclose(t["epsilon"], epsilon)]
    return _summary(t, ["dataset", "epsilon"], list(DEFAULT_METRICS), "ours")


def _summary(t: pd.DataFrame, group: list[str], metrics: list[str], source: str) -> pd.DataFrame:
    med = t.groupby("method")[metrics].median().add_suffix(" median")
    rk = _ranks(t, group, metrics).groupby("method")[metrics].mean().add_suffix(" rank")
    out = med.join(rk)
    out.insert(0, "groups", t.groupby("method").size())
    out.insert(0, "source", source)
    order = [m for m in dict.fromkeys((*METHOD_ORDER, *PAPER_METHODS)) if m in out.index]
    return out.loc[order].reset_index()


def privpgd_leads(df: pd.DataFrame, method: str = "PrivPGD", methods=PAPER_METHODS, block: int = 0) -> pd.DataFrame:
    """Whether ``method`` leads as in the paper's Figure 1, metric by metric: per (dataset,
    epsilon, metric), ``method``'s rank among the paper's six ``methods`` (seed means, 1 =
    best), the best of the others and ``method``'s value relative to it (< 1: ``method``
    leads by that factor), whether the gap exceeds the two methods' seed standard deviations
    added (``beyond seeds``), and ``paper rank``: ``method``'s mean rank in the paper's
    appendix table ``block`` over its datasets (:func:`paper_summary`)."""
    d = df[df["method"].isin(methods)]
    keys = ["dataset", "epsilon", "method"]
    g = d.groupby(keys, sort=False)[list(DEFAULT_METRICS)]
    mean = g.mean().reset_index().melt(id_vars=keys, var_name="metric", value_name="mean")
    sd = g.std(ddof=0).fillna(0.0).reset_index().melt(id_vars=keys, var_name="metric", value_name="sd")
    t = mean.merge(sd, on=[*keys, "metric"])
    t["rank"] = t.groupby(["dataset", "epsilon", "metric"])["mean"].rank(method="average")
    paper = paper_summary(block, methods).set_index("method")
    rows = []
    for (ds, eps, metric), grp in t.groupby(["dataset", "epsilon", "metric"], sort=False):
        own, others = grp[grp["method"] == method], grp[grp["method"] != method]
        if own.empty or others.empty:
            continue
        own = own.iloc[0]
        best = others.loc[others["mean"].idxmin()]
        rel = own["mean"] / best["mean"] if best["mean"] > 0 else (np.inf if own["mean"] > 0 else 1.0)
        rows.append({
            "dataset": ds, "epsilon": eps, "metric": metric, "rank": own["rank"], "of": len(grp),
            "best other": best["method"], f"{method} / best other": rel,
            "beyond seeds": bool(abs(own["mean"] - best["mean"]) > own["sd"] + best["sd"]),
            "paper rank": paper.at[method, f"{metric} rank"] if method in paper.index else np.nan,
        })  # fmt: skip
    return pd.DataFrame(rows)
