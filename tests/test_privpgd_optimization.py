"""PrivPGD's optimization step takes its hyperparameters as one validated, frozen
:class:`OptimizerConfig`; keyword arguments build the same config (same bytes)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from margsynth.inference.privpgd import DirectionBank, OptimizerConfig, clique_centres, optimize_particles, quantize

BASE = {"n_particles": 300, "epochs": 8, "projections": 4, "batch_size": 2, "drop_fraction": 0.5, "lr": 0.1,
        "lr_step": 3, "lr_gamma": 0.75}  # fmt: skip


def _problem():
    rng = np.random.default_rng(0)
    sizes = [3, 4, 5]
    cliques = list(itertools.combinations(range(3), 2))
    centres = [clique_centres([sizes[i] for i in c]) for c in cliques]
    counts = [quantize(rng.random(sizes[a] * sizes[b]), BASE["n_particles"]) for a, b in cliques]
    return counts, cliques, centres, DirectionBank.build(centres, 16, np.random.default_rng(1))


@pytest.mark.parametrize("ranking", ["buckets", "sort"])
def test_config_and_keywords_give_the_same_particles(ranking):
    counts, cliques, centres, bank = _problem()
    cfg = OptimizerConfig(**BASE, ranking=ranking, track_loss=True)
    x1, t1 = optimize_particles(counts, cliques, centres, bank, 3, cfg, generator=torch.Generator().manual_seed(0))
    x2, t2 = optimize_particles(counts, cliques, centres, bank, 3, **BASE, ranking=ranking, track_loss=True,
                                generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert torch.equal(x1, x2) and t1.loss == t2.loss and t1.epochs == 8
    with pytest.raises(ValueError, match="not both"):
        optimize_particles(counts, cliques, centres, bank, 3, cfg, epochs=2, generator=torch.Generator())


def test_config_is_frozen_and_validated():
    cfg = OptimizerConfig(**BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0  # type: ignore[misc]
    bad = {"n_particles": 0, "epochs": -1, "projections": 1.5, "batch_size": True, "drop_fraction": 1.0, "lr": 0.0,
           "lr_step": 0, "lr_gamma": float("nan"), "ranking": "nope", "rank_buckets": -1.0, "gamma": -0.1,
           "betas": (0.9, 1.0), "eps": 0.0}  # fmt: skip
    for name, value in bad.items():
        with pytest.raises(ValueError, match=name):
            OptimizerConfig(**{**BASE, name: value})
    with pytest.raises(ValueError, match="betas"):
        OptimizerConfig(**BASE, betas=(0.9,))
    with pytest.raises(TypeError):
        OptimizerConfig(**{k: v for k, v in BASE.items() if k != "lr"})
