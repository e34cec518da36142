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
  matrices on neighbouring datasets, plain and with per-person clipping weights
  (:func:`brute_force_sensitivity`: verification tooling, not part of the mechanism).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..data import is_available, load
from ..data.loaders import RECORD_DATASETS
from ..dataset import Dataset
from ..mechanisms.adagrid import (
    AdaptiveGrid,
    AdaptiveQuery,
    clipping_weights,
    column_norms,
    contribution_bound,
    measure_rounds,
)
from ..mechanisms.generators import PGMGenerator
from ..metrics.marginal import marginal_tvs
from ..timing import Stopwatch
from .cache import memoize
from .sweep import map_jobs

__all__ = [
    "BASE_DATASETS",
    "LARGER_DATASETS",
    "PROFILES",
    "brute_force_sensitivity",
    "compare",
    "datasets_present",
    "run_one",
    "sensitivity_check",
]

#: The datasets of notebook 07, and the larger registered ones used when present.
BASE_DATASETS = ("adult", "nltcs")
LARGER_DATASETS = ("fire", "loans", "msnbc")

#: Settings of the two profiles (quick: CI, the notebook about 50 CPU-seconds, its 12 runs on two
#: worker processes; full: paper scale, in this process).
PROFILES = {
    "quick": {"epsilons": (0.1, 1.0, 10.0), "seeds": (0,), "iters": 300, "max_neighbours": 200, "larger": False,
              "workers": 2},
    "full": {"epsilons": (0.1, 0.3, 1.0, 3.0, 10.0), "seeds": (0, 1, 2, 3, 4), "iters": 1500,
             "max_neighbours": 2000, "larger": True, "workers": 1},
}  # fmt: skip


def datasets_present(include_larger: bool = True) -> list[str]:
    """adult and nltcs, plus the larger registered datasets whose real files are present."""
    out = list(BASE_DATASETS)
    if include_larger:
        out += [n for n in LARGER_DATASETS if n in RECORD_DATASETS and is_available(RECORD_DATASETS[n][0])]
    return out


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
    mech = AdaptiveGrid(dataset=dataset, queries=queries, generator=PGMGenerator(iters=iters), threshold=threshold)
    clock = Stopwatch()
    res = mech.run(data, epsilon, delta, np.random.default_rng(seed))
    seconds = clock.elapsed()
    key = {"dataset": dataset, "epsilon": epsilon, "seed": seed, "queries": queries}
    measured = res.extras["marginals"]
    err_measured = marginal_tvs(data, res.synthetic, measured)
    triples = list(itertools.combinations(data.domain.names, 3))
    err_3way = marginal_tvs(data, res.synthetic, triples)
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
    workers: int | None = 1,
    scheduler: str | None = None,
    progress: bool = True,
) -> dict[str, pd.DataFrame]:
    """Adaptive grid vs identity queries on every (dataset, epsilon, seed).

    The runs go through :func:`~margsynth.experiments.sweep.map_jobs` (``workers``
    local processes, ``1``: in this process; or a Dask ``scheduler``), each cached.
    Returns DataFrames ``errors`` (one row per run and workload), ``rounds`` (one row per
    run and round: identity/aggregate rows, column-norm range) and ``runs`` (spent
    budget, sigma, timings)."""
    calls = [
        {"dataset": ds, "epsilon": float(eps), "seed": int(seed), "queries": q, "delta": delta, "iters": iters,
         "threshold": threshold}
        for ds, eps, seed, q in itertools.product(datasets, epsilons, seeds, ("adaptive", "identity"))
    ]  # fmt: skip
    if not calls:
        raise ValueError("nothing to run: empty datasets, epsilons or seeds")
    errors, rounds, runs = [], [], []
    for out in map_jobs(run_one, calls, workers=workers, scheduler=scheduler, progress=progress, desc="adaptive grid"):
        errors += out["errors"]
        rounds += out["rounds"]
        runs.append(out["summary"])
    return {"errors": pd.DataFrame(errors), "rounds": pd.DataFrame(rounds), "runs": pd.DataFrame(runs)}


# ----------------------------------------------------------------------------- sensitivity check
# (verification tooling of notebook 07, kept out of the mechanism: it never runs inside a release)
class _Neighbours:
    """Differences ``M(D) - M(D')`` of one marginal over many neighbours, collected in
    blocks and evaluated as the columns of one sparse matrix (``Q @ deltas``)."""

    def __init__(self, ncell: int) -> None:
        self.ncell = ncell
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, Any]] = []

    def add(self, idx, v, what: str) -> None:
        """One neighbour: values ``v`` at cells ``idx`` (repeats add up)."""
        idx = np.asarray(idx, dtype=np.int64).ravel()
        self.blocks.append((idx, np.asarray(v, dtype=np.float64).ravel(), np.zeros(idx.size, np.int64), 1, what))

    def add_cells(self, v: float, what) -> None:
        """One neighbour per cell ``x``: value ``v`` at ``x``; ``what(x)`` labels it."""
        n = self.ncell
        self.blocks.append((np.arange(n), np.full(n, float(v)), np.arange(n), n, what))

    def evaluate(self, q: sp.spmatrix):
        """``||Q delta||_2`` for every neighbour, and a function labelling neighbour ``j``."""
        starts = np.cumsum([0] + [b[3] for b in self.blocks])
        colidx = np.concatenate([b[2] + s0 for b, s0 in zip(self.blocks, starts[:-1])])
        deltas = sp.csc_matrix(
            (np.concatenate([b[1] for b in self.blocks]), (np.concatenate([b[0] for b in self.blocks]), colidx)),
            shape=(self.ncell, int(starts[-1])),
        )
        change = column_norms(q @ deltas)

        def label(j: int) -> str:
            bi = int(np.searchsorted(starts, j, side="right") - 1)
            what = self.blocks[bi][4]
            return what(j - int(starts[bi])) if callable(what) else what

        return change, label


def brute_force_sensitivity(
    data: Dataset,
    queries: Sequence[AdaptiveQuery],
    *,
    person_ids: np.ndarray | None = None,
    clip: float = 1.0,
    max_neighbours: int | None = 2000,
    rng: np.random.Generator | None = None,
) -> list[dict[str, Any]]:
    """Largest ``||Q (M(D) - M(D'))||_2`` over neighbouring datasets ``D'``, per query,
    next to the bound ``C * max column norm`` the ledger was charged (AGM "Noise
    calibration": sensitivity ``||Q||_2 C``).

    Neighbours (weights recomputed by :func:`clipping_weights` on ``D'``):

    - ``remove record``: drop one record (every record, or ``max_neighbours`` drawn
      with ``rng``); with person ids the other records of its person are re-weighted;
    - ``add record``: a new record in every cell of the marginal, as a new person and
      (with person ids) as one more record of sampled existing persons;
    - with person ids, ``remove person`` (all its records) and ``add person`` (``R``
      records in one cell, ``R = 1..ceil(C)+1``).

    ``M(D) - M(D')`` is computed exactly from the records whose weight changes (a
    weighted bincount), not from the column-norm formula it checks. ``rng`` draws the
    sampled neighbours (default: a fixed seed, so the check is reproducible). Returns one dict
    per query: ``clique, neighbours, max_change, bound, ratio, worst``.
    """
    has_ids = person_ids is not None
    bound = contribution_bound(clip, has_ids)  # validates clip
    c = float(clip)
    n = len(data)
    ids = np.asarray(person_ids) if has_ids else np.arange(n)
    if ids.shape != (n,):
        raise ValueError(f"{ids.size} person ids for {n} records")
    w = clipping_weights(ids if has_ids else None, c, n)
    uniq, inv, counts = np.unique(ids, return_inverse=True, return_counts=True)
    members = np.split(np.argsort(inv, kind="stable"), np.cumsum(counts)[:-1])
    rng = rng if rng is not None else np.random.default_rng(0)

    def pick(size: int) -> np.ndarray:
        if max_neighbours is None or size <= max_neighbours:
            return np.arange(size)
        return np.sort(rng.choice(size, max_neighbours, replace=False))

    def wt(r: int) -> float:
        return min(1.0, c / r) if has_ids else min(1.0, c)

    rec_sample = pick(n)
    person_sample = pick(uniq.size) if has_ids else np.zeros(0, dtype=np.int64)
    out = []
    for q in queries:
        shape = tuple(data.domain[a].size for a in q.clique)
        cells = np.ravel_multi_index(tuple(data.column(a).astype(np.intp) for a in q.clique), shape)
        ncell = int(np.prod(shape, dtype=np.int64))
        nb = _Neighbours(ncell)
        add, add_cells = nb.add, nb.add_cells
        for i in rec_sample:  # remove one record (its person's other records re-weighted)
            recs = members[inv[i]]
            r = recs.size
            others = recs[recs != i] if has_ids else recs[:0]
            add(np.r_[cells[i], cells[others]], np.r_[w[i], np.full(others.size, wt(r) - wt(r - 1) if r > 1 else 0.0)],
                f"remove record {int(i)}")  # fmt: skip
        add_cells(-wt(1), lambda x: f"add record (new person) in cell {x}")
        if has_ids:
            for p in person_sample[: max(10, person_sample.size // 10)]:  # add one record to an existing person
                recs = members[p]
                r = recs.size
                xs = np.arange(ncell) if ncell <= 64 else rng.choice(ncell, 64, replace=False)
                for x in xs:
                    add(np.r_[x, cells[recs]], np.r_[-wt(r + 1), np.full(r, wt(r) - wt(r + 1))],
                        f"add record of person {uniq[p : p + 1].tolist()[0]!r} in cell {int(x)}")  # fmt: skip
            for p in person_sample:  # remove a whole person
                recs = members[p]
                add(cells[recs], w[recs], f"remove person {uniq[p : p + 1].tolist()[0]!r}")
            for r in range(1, math.ceil(c) + 2):  # add a person with R records, all in one cell
                add_cells(-r * wt(r), lambda x, r=r: f"add person with {r} records in cell {x}")
        change, label = nb.evaluate(q.matrix)
        j = int(np.argmax(change))
        b = bound * float(column_norms(q.matrix).max())
        out.append(
            {
                "clique": q.clique,
                "neighbours": int(change.size),
                "max_change": float(change[j]),
                "bound": b,
                "ratio": float(change[j]) / b,
                "worst": label(j),
            }
        )
    return out


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
    on neighbouring datasets (:func:`brute_force_sensitivity`).
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
