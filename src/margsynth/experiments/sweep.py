"""The benchmark runner: a sweep over (dataset x epsilon x method x seed).

Each cell of the sweep is an independent :class:`Job`. Jobs run through one
executor, :func:`map_jobs` (the grids of the other experiments use it too) —
local processes by default (``concurrent.futures``), or a Dask cluster when a
scheduler address is given — and each job's result is cached on disk by its inputs (:func:`~margsynth.experiments.cache.memoize`), so re-running a
sweep recomputes only the jobs whose inputs changed.

A job follows the PrivPGD paper's protocol (§4.1): the dataset's fixed, seeded
80/20 split; the mechanism runs on the 80% (the private data); every metric
compares the synthetic data with the 80%, except ``downstream``, which trains
on the synthetic data and tests on the held-out 20%.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..data import load
from ..mechanisms.registry import available, create
from ..metrics.evaluation import default_target, fixed_split
from ..metrics.suite import get_metric
from ..timing import Stopwatch
from .cache import memoize

__all__ = ["METHODS", "Job", "grid", "map_jobs", "progress_bar", "run_job", "run_sweep"]

#: Benchmark method names -> mechanism registry names (``margsynth synth``).
METHODS: dict[str, str] = {
    "PrivPGD": "privpgd",
    "PGM+MST": "mst",
    "PGM+AIM": "aim",
    "GUM": "privsyn",
    "RAP": "rap",
    "GEM": "gem",
    "Private-GSD": "private-gsd",
}

#: The PrivPGD paper's metrics (§4.1), by ``margsynth evaluate`` name.
DEFAULT_METRICS = ("downstream", "covariance", "counting-queries", "threshold-queries", "sw-2way", "tv-2way")


@dataclass(frozen=True)
class Job:
    """One cell of a sweep. ``params`` are mechanism hyperparameters as sorted
    (name, value) pairs, so that a job is hashable and its cache key stable."""

    dataset: str
    epsilon: float
    method: str
    seed: int
    delta: float = 1e-5
    params: tuple[tuple[str, Any], ...] = ()
    metrics: tuple[str, ...] = DEFAULT_METRICS

    def __post_init__(self) -> None:
        if self.method not in METHODS and self.method not in _registry_names():
            raise ValueError(f"unknown method {self.method!r}; known: {sorted(METHODS)} or a registry name")
        object.__setattr__(self, "params", tuple(sorted(dict(self.params).items())))


def _registry_names() -> list[str]:
    return list(available())


def grid(
    datasets: Iterable[str],
    epsilons: Iterable[float],
    methods: Iterable[str],
    seeds: Iterable[int],
    *,
    delta: float = 1e-5,
    params: dict[str, dict[str, Any]] | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> list[Job]:
    """The full cross product as jobs; ``params[method]`` sets that method's hyperparameters."""
    params = params or {}
    return [
        Job(d, float(e), m, int(s), delta, tuple(params.get(m, {}).items()), tuple(metrics))
        for d in datasets
        for e in epsilons
        for m in methods
        for s in seeds
    ]


@memoize(version=1)
def run_job(job: Job) -> dict[str, Any]:
    """Run one job: split, synthesise on the 80%, evaluate; returns one result row."""
    data = load(job.dataset)
    train, test = fixed_split(data, job.dataset)
    mech = create(METHODS.get(job.method, job.method), **dict(job.params))
    rng = np.random.default_rng([job.seed, 20_240_501])
    clock = Stopwatch()
    result = mech.run(train, job.epsilon, job.delta, rng)
    row: dict[str, Any] = {
        "dataset": job.dataset, "epsilon": job.epsilon, "delta": job.delta, "method": job.method,
        "seed": job.seed, "params": dict(job.params), "seconds": clock.elapsed(),
        "epsilon_spent": result.epsilon, "delta_spent": result.delta, "records": len(result.synthetic),
    }  # fmt: skip
    for name in job.metrics:
        options = {"test": test, "target": default_target(train.domain, job.dataset)} if name == "downstream" else {}
        mrng = np.random.default_rng([job.seed, *name.encode()])
        row[name] = float(get_metric(name)(train, result.synthetic, rng=mrng, **options))
    return row


def progress_bar(iterable=None, *, enabled: bool = True, **kwargs):
    """A text progress bar on stderr, drawn only when stderr is a terminal: none in a notebook
    (whose saved copy would keep a frozen bar) or a log file; ``enabled=False``: never."""
    return tqdm(iterable, file=sys.stderr, disable=None if enabled else True, **kwargs)


def _call(func: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    return func(**kwargs)


def _map_local(func, calls: list[Mapping[str, Any]], workers: int, progress: bool, desc: str) -> list:
    if workers <= 1:
        return [func(**kw) for kw in progress_bar(calls, enabled=progress, desc=desc)]
    out: list[Any] = [None] * len(calls)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(func, **kw): i for i, kw in enumerate(calls)}
        for fut in progress_bar(as_completed(futures), enabled=progress, total=len(calls), desc=desc):
            out[futures[fut]] = fut.result()
    return out


def _map_dask(func, calls: list[Mapping[str, Any]], scheduler: str, progress: bool, desc: str) -> list:
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError as exc:  # optional dependency
        raise ImportError("a Dask scheduler was given but dask.distributed is missing: pip install 'margsynth[dask]'") from exc

    with Client(scheduler) as client:
        futures = client.map(_call, [func] * len(calls), calls, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(calls)
        for fut in progress_bar(dask_completed(futures), enabled=progress, total=len(calls), desc=f"{desc} (dask)"):
            out[index[fut.key]] = fut.result()
    return out


def map_jobs(
    func: Callable[..., Any],
    calls: Sequence[Mapping[str, Any]],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    desc: str = "sweep",
) -> list:
    """``[func(**kw) for kw in calls]``, run as independent jobs; results in the order of ``calls``.

    The one job runner of the experiments: :func:`run_sweep` and the experiments of
    notebooks 04, 07 and 08 pass their per-cell function (memoized with
    :func:`~margsynth.experiments.cache.memoize`, so a re-run reads cached cells back)
    and one keyword-argument dict per cell. ``workers``: local processes (``None``:
    the CPU count, at most the number of calls; ``1``: in this process);
    ``scheduler``: a Dask scheduler address (``tcp://host:8786``) to run the jobs on
    a cluster instead. ``func`` must be importable by name (a module-level function)
    for the process and Dask executors.
    """
    calls = [dict(kw) for kw in calls]
    if not calls:
        raise ValueError("map_jobs needs at least one job")
    if scheduler:
        return _map_dask(func, calls, scheduler, progress, desc)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    n = workers if workers is not None else (os.cpu_count() or 1)
    return _map_local(func, calls, min(n, len(calls)), progress, desc)


def run_sweep(
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run every job (cached ones are read back) and return one row per job.

    ``workers``: local processes (default: the CPU count, at most the number of
    jobs); ``scheduler``: a Dask scheduler address (``tcp://host:8786``) to run
    the jobs on a cluster instead.
    """
    jobs = list(jobs)
    if not jobs:
        raise ValueError("run_sweep needs at least one job")
    return pd.DataFrame(map_jobs(run_job, [{"job": j} for j in jobs], workers=workers, scheduler=scheduler,
                                 progress=progress))

