"""Notebook 07: the adaptive-granularity mechanism against identity queries.

The adaptive grid (``margsynth.mechanisms.adagrid``; AGM write-up, see docs/notes/adaptive_grid.md) and its
identity-query variant measure the *same* marginals with the *same* noise scale, so
any difference in error comes from the query matrices alone (AGM "Adaptive
Granularity Example"). Computed here, cached on disk per run:

- :func:`run_one` — one mechanism run: workload errors (mean total-variation distance
  between the true and the synthetic marginals) over the measured marginals (all, and
  by order k) and over every 3-way marginal, the identity/aggregate rows per round,
  the spent (epsilon, delta), sigma and timings;
- :func:`compare` — the grid datasets x epsilons x seeds x {adaptive, identity};
- :func:`sensitivity_check` — the brute-force sensitivity check of the adaptive query
  matrices on neighbouring datasets, plain and with per-person clipping weights.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..data import is_available, load
from ..data.loaders import RECORD_DATASETS
from ..dataset import Dataset
from ..mechanisms.adagrid import (
    AdaptiveGrid,
    brute_force_sensitivity,
    clipping_weights,
    contribution_bound,
    measure_rounds,
)
from .cache import memoize

__all__ = [
    "BASE_DATASETS",
    "LARGER_DATASETS",
    "PROFILES",
    "compare",
    "datasets_present",
    "run_one",
    "sensitivity_check",
    "tv_error",
]

#: The datasets of notebook 07, and the larger registered ones used when present.
BASE_DATASETS = ("adult", "nltcs")
LARGER_DATASETS = ("fire", "loans", "msnbc")

#: Settings of the two profiles (quick: CI, about a minute on 2 cores; full: paper scale).
PROFILES = {
    "quick": {"epsilons": (0.1, 1.0, 10.0), "seeds": (0,), "iters": 300, "max_neighbours": 200, "larger": False},
    "full": {"epsilons": (0.1, 0.3, 1.0, 3.0, 10.0), "seeds": (0, 1, 2, 3, 4), "iters": 1500,
             "max_neighbours": 2000, "larger": True},
}  # fmt: skip


def datasets_present(include_larger: bool = True) -> list[str]:
    """adult and nltcs, plus the larger registered datasets whose real files are present."""
    out = list(BASE_DATASETS)
    if include_larger:
        out += [n for n in LARGER_DATASETS if n in RECORD_DATASETS and is_available(RECORD_DATASETS[n][0])]
    return out


def tv_error(truth: Dataset, synth: Dataset, cliques: Sequence[Sequence[str]]) -> np.ndarray:
    """Total-variation distance ``0.5 ||p - q||_1`` between the normalised true and
    synthetic marginals, one value per clique."""
    n_t, n_s = max(truth.total(), 1e-300), max(synth.total(), 1e-300)
    return np.array([0.5 * float(np.abs(truth.marginal(c) / n_t - synth.marginal(c) / n_s).sum()) for c in cliques])


@memoize(version=1)
def run_one(
    dataset: str,
    epsilon: float,
    seed: int,
    queries: str,
    *,
    delta: float = 1e-9,
    iters: int = 1000,
    threshold: float = 1.0,
) -> dict:
    """One run of :class:`~margsynth.mechanisms.adagrid.AdaptiveGrid` (``queries`` =
    ``"adaptive"`` or ``"identity"``) on ``dataset`` with seed ``seed``.

    Returns ``{"errors": [...], "rounds": [...], "summary": {...}}`` (plain rows)."""
    data = load(dataset)
    mech = AdaptiveGrid(dataset=dataset, queries=queries, iters=iters, threshold=threshold)
    t0 = time.perf_counter()
    res = mech.run(data, epsilon, delta, np.random.default_rng(seed))
    seconds = time.perf_counter() - t0
    key = {"dataset": dataset, "epsilon": epsilon, "seed": seed, "queries": queries}
    measured = res.extras["marginals"]
    err_measured = tv_error(data, res.synthetic, measured)
    triples = list(itertools.combinations(data.domain.names, 3))
    err_3way = tv_error(data, res.synthetic, triples)
    errors = [
        {**key, "workload": "measured marginals", "marginals": len(measured), "error": float(err_measured.mean())}
    ]
    for k in sorted({len(c) for c in measured}):
        sel = np.array([len(c) == k for c in measured])
        errors.append(
            {
                **key,
                "workload": f"measured {k}-way",
                "marginals": int(sel.sum()),
                "error": float(err_measured[sel].mean()),
            }
        )
    errors.append(
        {**key, "workload": "all 3-way marginals", "marginals": len(triples), "error": float(err_3way.mean())}
    )
    rounds = [{**key, **row} for row in res.extras["rounds"]]
    summary = {
        **key,
        "delta": res.delta,
        "epsilon_spent": res.epsilon,
        "mu": res.extras["mu"],
        "sigma": res.extras["sigma"],
        "measurements": len(measured),
        "records": len(data),
        "synthetic_records": len(res.synthetic),
        "max_column_norm": res.extras["sensitivity"]["max_column_norm"],
        "min_column_norm": res.extras["sensitivity"]["min_column_norm"],
        "seconds": seconds,
        **{f"seconds_{k}": v for k, v in res.seconds.items()},
    }
    return {"errors": errors, "rounds": rounds, "summary": summary}


def compare(
    datasets: Sequence[str],
    epsilons: Sequence[float],
    seeds: Sequence[int],
    *,
    delta: float = 1e-9,
    iters: int = 1000,
    threshold: float = 1.0,
) -> dict[str, pd.DataFrame]:
    """Adaptive grid vs identity queries on every (dataset, epsilon, seed).

    Returns DataFrames ``errors`` (one row per run and workload), ``rounds`` (one row per
    run and round: identity/aggregate rows, column-norm range) and ``runs`` (spent
    budget, sigma, timings)."""
    errors, rounds, runs = [], [], []
    for ds, eps, seed, q in itertools.product(datasets, epsilons, seeds, ("adaptive", "identity")):
        out = run_one(ds, float(eps), int(seed), q, delta=delta, iters=iters, threshold=threshold)
        errors += out["errors"]
        rounds += out["rounds"]
        runs.append(out["summary"])
    return {"errors": pd.DataFrame(errors), "rounds": pd.DataFrame(rounds), "runs": pd.DataFrame(runs)}


@memoize(version=1)
def sensitivity_check(
    dataset: str,
    epsilon: float,
    *,
    seed: int = 0,
    delta: float = 1e-9,
    threshold: float = 1.0,
    clip: float | None = None,
    records_per_person: float = 3.0,
    max_neighbours: int = 500,
) -> pd.DataFrame:
    """Brute-force sensitivity check of the adaptive query matrices of one run.

    Rebuilds the run's query matrices (same seed, same sigma, so the same noisy answers
    and the same matrices as :func:`run_one`) and evaluates ``||Q (M(D) - M(D'))||_2``
    on neighbouring datasets (:func:`~margsynth.mechanisms.adagrid.brute_force_sensitivity`).
    ``clip=None``: the plain case (records are persons). ``clip=C``: the records are
    grouped into pseudo-persons of about ``records_per_person`` records each (a seeded
    random assignment made for this check only — our datasets carry no person id) and
    clipped with weights ``min(1, C/R)``. One row per round: marginals, neighbours
    tried, the largest change, the bound ``C * max column norm`` charged to the ledger,
    their ratio (must be <= 1) and the column-norm range.
    """
    data = load(dataset)
    rng_ids = np.random.default_rng(10_000 + seed)
    person_ids = None
    c = 1.0 if clip is None else float(clip)
    if clip is not None:
        person_ids = rng_ids.integers(0, max(1, int(len(data) / records_per_person)), len(data))
    mech = AdaptiveGrid(dataset=dataset, clip=c, threshold=threshold)
    cliques = mech.select(data.domain)
    bound = contribution_bound(c, person_ids is not None)
    sigma = mech.noise_scale(epsilon, delta, len(cliques), bound)
    w = clipping_weights(person_ids, c, len(data))
    weighted = Dataset._trusted(data.codes, data.domain, w if np.any(w != 1.0) else None)
    measured = measure_rounds(weighted, cliques, sigma=sigma, bound=bound, rng=np.random.default_rng(seed), ledger=None,
                              threshold=threshold)  # fmt: skip
    checks = brute_force_sensitivity(
        data, [m.query for m in measured], person_ids=person_ids, clip=c, max_neighbours=max_neighbours,
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    rows = []
    for k in sorted({len(m.query.clique) for m in measured}):
        idx = [i for i, m in enumerate(measured) if len(m.query.clique) == k]
        worst = max(idx, key=lambda i: checks[i]["ratio"])
        rows.append(
            {
                "dataset": dataset,
                "epsilon": epsilon,
                "case": "plain (record = person)" if clip is None else f"clipped, C = {c:g}",
                "round": k,
                "marginals": len(idx),
                "identity_rows": sum(measured[i].query.n_identity for i in idx),
                "aggregate_rows": sum(measured[i].query.n_aggregate for i in idx),
                "neighbours": sum(checks[i]["neighbours"] for i in idx),
                "max_change": max(checks[i]["max_change"] for i in idx),
                "bound": max(checks[i]["bound"] for i in idx),
                "max_ratio": checks[worst]["ratio"],
                "worst_neighbour": f"{'x'.join(checks[worst]['clique'])}: {checks[worst]['worst']}",
                "min_column_norm": min(measured[i].min_norm for i in idx),
                "max_column_norm": max(measured[i].max_norm for i in idx),
            }
        )
    return pd.DataFrame(rows)
