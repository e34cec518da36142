"""Notebook 06 — PrivPGD with a domain-specific constraint (paper §4.4, App. B, Figure 3).

The experiment: protect one population-level statistic, a linear (non-sparse)
thresholding query ``q(D) = mean_x 1[<theta, e(x)> >= tau]`` in the embedding space,
while releasing good synthetic data. PrivPGD adds ``gamma R(X)`` to its loss
(:mod:`margsynth.inference.privpgd.constraints`): ``R`` is largest when the sigmoid
approximation of ``q`` on the particles equals a *private* estimate ``q~`` of the true
answer, and minimising the loss pushes the synthetic answer away from it. ``q~`` is
measured by the Gaussian mechanism with its own share (``constraint_share`` = 10%) of
the zCDP budget; the 2-way marginals get the rest (App. B; composition, Lemma 1). Every
run, ``gamma = 0`` included, uses the same split, so only ``gamma`` changes.

For each ``gamma`` (Figure 3) we report, against the real training split:

* ``protected error`` — ``|q(D^) - q(D)|``, the absolute error of the protected query
  (large = protected);
* ``downstream`` — gradient-boosting error trained on ``D^``, tested on the held-out 20%;
* ``counting error`` / ``thresholding error`` — the mean absolute error over random
  3-sparse counting / thresholding queries (the numerator of Eq. 9, as in Figure 3).

The query: ``theta`` a seeded random Gaussian direction over all attributes (unit
norm), ``tau`` the median of ``<theta, e(x)>`` over the real training data, so that
``q(D) ~ 1/2`` (the cube's centre ``<theta, 1/2>`` left titanic's query at 3%). Like
the random thresholding queries of §4.1, whose thresholds are drawn from the real
data's range, the protected query is a fixed input chosen by the experimenter; only
its answer ``q~`` is part of the private release and is paid for.

Profiles: ``quick`` — titanic, eps = 2.5, 1 seed, gamma in {0, 1, 10, 100} (one point per
decade: the trend of Figure 3 at a glance), PrivPGD ``fast`` with 10,000 particles, 40 epochs
(lr x0.75 every 4) and 150 projection iterations (lr x0.8 every 10, the ``fast`` preset's
schedule in half the steps), the runs on two worker processes (about a minute of CPU);
``full`` — adult, eps = 2.5, 3 seeds, gamma in {0, 0.1, 0.3, 1, 3, 10, 30, 100}, the paper's default hyperparameters (4.5-13
minutes of wall time per run with two runs sharing 2 cores, 1.7 h for all 24 with ``workers=2``; the
tables of that run are the published snapshot, :mod:`margsynth.experiments.snapshots`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from ..data import load
from ..metrics.evaluation import counting_queries, default_target, downstream_error, fixed_split, threshold_queries
from .cache import memoize
from .sweep import map_jobs

__all__ = ["PROFILES", "constraint_for", "constraint_run", "figure3", "summary"]

PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "dataset": "titanic",
        "epsilon": 2.5,
        "seeds": (0,),
        "gammas": (0.0, 1.0, 10.0, 100.0),
        "privpgd": {
            "preset": "fast",
            "n_particles": 10_000,
            "epochs": 40,
            "lr_step": 4,
            "projection_iters": 150,
            "projection_lr_step": 10,
        },
        "workers": 2,
    },
    "full": {
        "dataset": "adult",
        "epsilon": 2.5,
        "seeds": (0, 1, 2),
        "gammas": (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
        "privpgd": {"preset": "default"},
        "workers": 1,
    },
}


def constraint_for(domain, seed: int = 0, sharpness: float = 5.0, width: float = 0.01, data=None):
    """The protected query: a seeded random unit direction over all attributes; threshold at
    the median of ``<theta, e(x)>`` over ``data`` when given (a balanced query, q(D) ~ 1/2),
    else at the cube's centre ``<theta, 1/2>`` (module docstring)."""
    from ..inference.privpgd import ThresholdConstraint, embed  # loads torch

    rng = np.random.default_rng([seed, *b"constraint"])
    w = rng.standard_normal(len(domain))
    w /= np.linalg.norm(w)
    tau = float(0.5 * w.sum()) if data is None else float(np.median(embed(data) @ w))
    return ThresholdConstraint(dict(zip(domain.names, w.tolist())), tau=tau, sharpness=sharpness, width=width)


@memoize(version=2)
def constraint_run(
    dataset: str,
    epsilon: float,
    gamma: float,
    seed: int,
    privpgd: dict,
    delta: float = 1e-5,
    constraint_share: float = 0.1,
) -> dict:
    """One PrivPGD run with the constraint at strength ``gamma``; one result row."""
    from ..mechanisms.privpgd import PrivPGD  # loads torch

    train, test = fixed_split(load(dataset), dataset)
    cons = constraint_for(train.domain, data=train)
    params = dict(privpgd)
    preset = params.pop("preset", "default")
    cfg = PrivPGD.preset(preset, constraint=cons, gamma=float(gamma), constraint_share=constraint_share, **params)
    res = cfg.run(train, epsilon, delta, np.random.default_rng([seed, 20_240_501]))
    synth = res.synthetic
    truth = cons.answer(train)
    row = {
        "dataset": dataset, "epsilon": epsilon, "gamma": float(gamma), "seed": seed,
        "true answer": truth, "synthetic answer": cons.answer(synth),
        "private target": res.extras["constraint_target"],
        "protected error": abs(cons.answer(synth) - truth),
        "target error": abs(res.extras["constraint_target"] - truth),
        "downstream": downstream_error(train, synth, rng=np.random.default_rng([seed, 1]), test=test,
                                       target=default_target(train.domain, dataset)),
        "counting error": counting_queries(train, synth, rng=np.random.default_rng([seed, 2]), relative=False),
        "thresholding error": threshold_queries(train, synth, rng=np.random.default_rng([seed, 3]), relative=False),
        "seconds": res.seconds["total"], "epsilon_spent": res.epsilon,
    }  # fmt: skip
    return row


def figure3(
    profile: str = "quick",
    *,
    dataset=None,
    epsilon=None,
    seeds=None,
    gammas=None,
    privpgd: dict | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """All runs of the Figure 3 sweep (one row per gamma and seed), as jobs of
    :func:`~margsynth.experiments.sweep.map_jobs` (``workers`` local processes, ``None``:
    the profile's; or a Dask ``scheduler``), each cached."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {sorted(PROFILES)}")
    cfg = PROFILES[profile]
    gammas = list(cfg["gammas"] if gammas is None else gammas)
    if any((not np.isfinite(g)) or g < 0 for g in gammas):
        raise ValueError(f"gammas must be finite and >= 0, got {gammas}")
    calls = [
        {
            "dataset": dataset or cfg["dataset"],
            "epsilon": float(epsilon or cfg["epsilon"]),
            "gamma": float(g),
            "seed": int(s),
            "privpgd": dict(privpgd if privpgd is not None else cfg["privpgd"]),
        }
        for s in (cfg["seeds"] if seeds is None else seeds)
        for g in gammas
    ]
    if not calls:
        raise ValueError("nothing to run: empty seeds or gammas")
    workers = cfg["workers"] if workers is None else workers
    return pd.DataFrame(
        map_jobs(constraint_run, calls, workers=workers, scheduler=scheduler, progress=progress, desc="figure 3")
    )


SERIES = ("protected error", "downstream", "counting error", "thresholding error")


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    g = runs.groupby("gamma")[list(SERIES)]
    return g.mean().add_suffix(" mean").join(g.std(ddof=0).fillna(0.0).add_suffix(" sd")).reset_index()


def _params(cfg) -> dict:  # for reference in the notebook
    return asdict(cfg)
