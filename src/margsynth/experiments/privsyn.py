"""Notebook 08: PrivSyn (Zhang et al., USENIX Security 2021) -- its selection, its GUM
generator against Private-PGM, and MST, on adult and nltcs.

Four mechanisms, two selections x two generators (all in the mechanism registry):

=================  ==============================================  ==========================
registry name      SELECT / MEASURE                                GENERATE
=================  ==============================================  ==========================
``privsyn``        noisy InDif, Algorithm 1 + Eq. 1, Algorithm 2   §4.3 consistency + GUM §5.2
``privsyn-pgm``    the same (same rng: the same noisy marginals)   Private-PGM, Algorithms 7-8
``mst``            MST (NIST-MST/MST paper §6, Algorithm 6)        Private-PGM, Algorithms 7-8
``mst-gum``        the same (same rng: the same noisy marginals)   §4.3 consistency + GUM §5.2
=================  ==============================================  ==========================

Computed here, cached on disk per run (:func:`~margsynth.experiments.cache.memoize`):

- :func:`run_one` -- one mechanism run and its utility: mean total-variation distance
  over all 2-way and all 3-way marginals (:func:`~margsynth.metrics.suite.tv_kway`), the
  error of a seeded workload of range queries
  (:func:`~margsynth.metrics.range_queries.range_workload`,
  :func:`~margsynth.metrics.range_queries.range_query_error`; re-exported here), optionally the counting queries of
  :func:`margsynth.metrics.evaluation.counting_queries` (PrivPGD paper Eq. 9; slow on
  adult, so on in the full profile only); PrivSyn's selection trace (Algorithm 1's
  error estimate per greedy step, the chosen pairs) and per-marginal budget (Eq. 1);
  GUM's convergence trace. A Private-PGM model over ``memory_limit_mb`` is not fitted:
  the run is reported with ``status = "model too large"`` and the junction-tree size.
- :func:`compare` -- the grid datasets x epsilons x seeds x mechanisms, optionally in
  local worker processes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..data import load
from ..inference.pgm import ModelTooLargeError
from ..mechanisms.registry import create
from ..metrics.evaluation import counting_queries
from ..metrics.range_queries import RangeQuery, range_query_error, range_workload
from ..metrics.suite import tv_kway
from ..timing import Stopwatch
from .cache import memoize
from .sweep import map_jobs

__all__ = [
    "DATASETS",
    "MECHANISMS",
    "PROFILES",
    "RangeQuery",
    "compare",
    "range_query_error",
    "range_workload",
    "run_one",
    "summarise",
]

#: The datasets of notebook 08.
DATASETS = ("adult", "nltcs")

#: Registry name -> label used in tables and figures.
MECHANISMS: dict[str, str] = {
    "privsyn": "PrivSyn + GUM",
    "privsyn-pgm": "PrivSyn selection + Private-PGM",
    "mst": "MST (Private-PGM)",
    "mst-gum": "MST + GUM",
}

#: The two profiles (quick: CI, the two ends of the quick range — ε = 0.3, where MST leads, and ε = 4,
#: where PrivSyn + GUM leads and Private-PGM is refused on adult —, the notebook about 75 CPU-seconds,
#: the runs on two worker processes; full: 6 epsilons x 5 seeds + counting queries).
PROFILES = {
    "quick": {"epsilons": (0.3, 4.0), "seeds": (0,), "mst_iters": 500, "pgm_iters": 200,
              "memory_limit_mb": 64.0, "n_queries": 200, "counting_queries": False, "workers": 2},
    "full": {"epsilons": (0.1, 0.3, 1.0, 2.0, 4.0, 10.0), "seeds": (0, 1, 2, 3, 4), "mst_iters": 3000,
             "pgm_iters": 1000, "memory_limit_mb": 64.0, "n_queries": 1000, "counting_queries": True,
             "workers": None},
}  # fmt: skip


# ----------------------------------------------------------------------------- one run
def _overrides(mechanism: str, mst_iters: int, pgm_iters: int, memory_limit_mb: float) -> dict:
    if mechanism == "mst":
        return {"iters": int(mst_iters)}
    if mechanism == "privsyn-pgm":
        return {"iters": int(pgm_iters), "memory_limit_mb": float(memory_limit_mb)}  # PGMGenerator fields
    return {}


@memoize(version=1)
def run_one(
    dataset: str,
    mechanism: str,
    epsilon: float,
    seed: int,
    *,
    delta: float = 1e-9,
    mst_iters: int = 1000,
    pgm_iters: int = 1000,
    memory_limit_mb: float = 64.0,
    n_queries: int = 200,
    query_k: int = 3,
    counting: bool = False,
) -> dict:
    """One run of ``mechanism`` (a key of :data:`MECHANISMS`) on ``dataset`` with
    ``np.random.default_rng(seed)``, and its utility.

    Returns plain rows: ``{"summary": {...}, "gum_trace": [...], "selection": [...],
    "budget": [...]}``. The range-query workload is drawn from ``default_rng([seed, 8])``,
    the counting queries from ``default_rng([seed, 9])``: the same for every mechanism.
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; one of {list(MECHANISMS)}")
    data = load(dataset)
    mech = create(mechanism, **_overrides(mechanism, mst_iters, pgm_iters, memory_limit_mb))
    key = {"dataset": dataset, "mechanism": mechanism, "label": MECHANISMS[mechanism], "epsilon": float(epsilon),
           "seed": int(seed)}  # fmt: skip
    nan = float("nan")
    summary = {**key, "status": "ok", "delta": delta, "epsilon_spent": nan, "records": 0, "marginals": nan,
               "junction_tree_mb": nan, "tv_2way": nan, "tv_3way": nan, "range_queries": nan,
               "counting_queries": nan, "gum_rounds": nan, "gum_converged": None}  # fmt: skip
    clock = Stopwatch()
    try:
        res = mech.run(data, float(epsilon), delta, np.random.default_rng(seed))
    except ModelTooLargeError as exc:
        summary.update(status="model too large", junction_tree_mb=getattr(exc, "size_mb", nan),
                       marginals=len(getattr(exc, "cliques", [])) or nan, seconds=clock.elapsed())  # fmt: skip
        return {"summary": summary, "gum_trace": [], "selection": [], "budget": []}
    summary["seconds"] = clock.elapsed()
    synth = res.synthetic
    ex = res.extras
    summary.update(
        epsilon_spent=res.epsilon,
        records=len(synth),
        marginals=len(ex["cliques"]),
        tv_2way=tv_kway(data, synth, 2),
        tv_3way=tv_kway(data, synth, 3),
        range_queries=range_query_error(
            data, synth, range_workload(data.domain, n_queries, query_k, np.random.default_rng([seed, 8]))
        ),
    )
    if counting:
        summary["counting_queries"] = counting_queries(data, synth, rng=np.random.default_rng([seed, 9]))
    if "junction_tree_mb" in ex:
        summary["junction_tree_mb"] = ex["junction_tree_mb"]
    trace = []
    if ex.get("gum_trace") is not None:
        summary.update(gum_rounds=int(ex["gum_trace"]["round"].max()), gum_converged=bool(ex["gum_converged"]))
        trace = [{**key, **row} for row in ex["gum_trace"].to_dict("records")]
    selection, budget = [], []
    if mechanism == "privsyn":
        meas = ex["measurement"]
        for row in ex["selection"].to_dict("records"):
            chosen = row["chosen"]
            selection.append({**key, "step": int(row["step"]), "chosen": "×".join(chosen) if chosen else "(start)",
                              "error": float(row["error"]), "accepted": True})  # fmt: skip
        if meas.selection.stopping_error is not None:
            selection.append({**key, "step": len(meas.selection.selected) + 1, "chosen": "(stop: no improvement)",
                              "error": float(meas.selection.stopping_error), "accepted": False})  # fmt: skip
        total = float(np.sum(meas.rhos))
        for row in ex["budget"].to_dict("records"):
            budget.append({**key, **row, "order": row["clique"].count("×") + 1, "share": row["rho"] / total})
        summary["selected_pairs"] = len(meas.selected_pairs)
        summary["rho_total"] = meas.ledger.total
    return {"summary": summary, "gum_trace": trace, "selection": selection, "budget": budget}


def compare(
    datasets: Sequence[str],
    epsilons: Sequence[float],
    seeds: Sequence[int],
    mechanisms: Sequence[str] = tuple(MECHANISMS),
    *,
    workers: int | None = 1,
    scheduler: str | None = None,
    progress: bool = True,
    **kwargs,
) -> dict[str, pd.DataFrame]:
    """Every (dataset, epsilon, seed, mechanism) through :func:`run_one` (``kwargs`` go
    to it), as jobs of :func:`~margsynth.experiments.sweep.map_jobs`: ``workers`` local
    processes (``None``: the CPU count; ``1``: in-process) or a Dask ``scheduler``.

    Returns DataFrames ``runs`` (one row per run: status, spent budget, utility, timing),
    ``gum_traces`` (one row per GUM round), ``selection`` (Algorithm 1 per step, PrivSyn
    runs) and ``budget`` (Eq. 1 per measured marginal, PrivSyn runs)."""
    bad = [m for m in mechanisms if m not in MECHANISMS]
    if bad:
        raise ValueError(f"unknown mechanisms {bad}; known: {list(MECHANISMS)}")
    calls = [{"dataset": d, "mechanism": m, "epsilon": float(e), "seed": int(s), **kwargs}
             for d, e, s, m in itertools.product(datasets, epsilons, seeds, mechanisms)]  # fmt: skip
    if not calls:
        raise ValueError("nothing to run: empty datasets, epsilons, seeds or mechanisms")
    outs = map_jobs(run_one, calls, workers=workers, scheduler=scheduler, progress=progress, desc="privsyn")
    frames = {}
    parts = (("summary", "runs"), ("gum_trace", "gum_traces"), ("selection", "selection"), ("budget", "budget"))
    for part, name in parts:
        rows = [o[part] for o in outs] if part == "summary" else [r for o in outs for r in o[part]]
        frames[name] = pd.DataFrame(rows)
    return frames


def summarise(runs: pd.DataFrame, metrics: Sequence[str] = ("tv_2way", "tv_3way", "range_queries")) -> pd.DataFrame:
    """Mean (and standard deviation over seeds) of each metric per dataset, epsilon and
    mechanism; runs that did not fit (``status != "ok"``) are counted, not averaged."""
    metrics = [m for m in metrics if m in runs and runs[m].notna().any()]
    g = runs.groupby(["dataset", "epsilon", "label"], sort=False)
    out = g[metrics].mean()
    if runs["seed"].nunique() > 1:
        out = out.join(g[metrics].std().add_suffix("_sd"))
    out["runs"] = g.size()
    out["too_large"] = g["status"].apply(lambda s: int((s != "ok").sum()))
    out["seconds"] = g["seconds"].mean()
    return out.reset_index()
