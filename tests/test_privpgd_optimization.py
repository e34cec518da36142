"""PrivPGD's optimization step: its hyperparameters as one validated, frozen
:class:`OptimizerConfig` (keyword arguments build the same config, same bytes); the compiled
step against the per-marginal torch step it replaces on the CPU; the step's 1-D transport
against brute force; the dropout masks; determinism."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from margsynth.inference.privpgd import (
    DirectionBank,
    OptimizerConfig,
    clique_centres,
    kernels,
    optimize_particles,
    project_measures,
    quantize,
    w2_squared_sorted,
)

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


# --------------------------------------------------------------------------- compiled vs torch steps


def _mixed_problem(N=500, seed=0):
    """2-way marginals, a 3-way and a 1-way one (every code path of the compiled step)."""
    rng = np.random.default_rng(seed)
    sizes = [3, 4, 5, 2]
    cliques = [(0, 1), (1, 2), (0, 3), (2, 3), (0, 1, 2), (3,)]
    centres = [clique_centres([sizes[i] for i in c]) for c in cliques]
    counts = [quantize(rng.random(len(c)) ** 2, N) for c in centres]
    return counts, cliques, centres, DirectionBank.build(centres, 24, np.random.default_rng(seed + 1))


def _both(problem, epochs, **kw):
    counts, cliques, centres, bank = problem
    cfg = {**BASE, "n_particles": int(np.sum(counts[0])), "epochs": epochs, **kw}
    out = {}
    for backend in ("compiled", "torch"):
        out[backend] = optimize_particles(counts, cliques, centres, bank, 4, OptimizerConfig(**cfg, backend=backend),
                                          generator=torch.Generator().manual_seed(3))
    return out


@pytest.mark.parametrize("track_loss", [False, True])
def test_compiled_steps_equal_the_per_marginal_torch_steps(track_loss):
    """The compiled step (all marginals of a step in one call) and the torch reference
    (marginal by marginal) compute the same float32 operations: after one epoch (three
    steps) the particles agree to float32 rounding (torch's sqrt is not always correctly
    rounded), and so do the tracked losses."""
    out = _both(_mixed_problem(), 1, track_loss=track_loss)
    (xc, tc), (xt, tt) = out["compiled"], out["torch"]
    assert tc.backend == "compiled" and tt.backend == "torch" and tc.steps == tt.steps == 3
    np.testing.assert_allclose(xc.numpy(), xt.numpy(), rtol=0, atol=1e-6)
    if track_loss:
        assert tc.loss[0] == pytest.approx(tt.loss[0], rel=1e-5)


def test_compiled_and_torch_trajectories_stay_together():
    """Over many steps a rank can flip on a float32 rounding difference; the particles still
    agree almost everywhere."""
    out = _both(_mixed_problem(seed=4), 10)
    diff = np.abs(out["compiled"][0].numpy() - out["torch"][0].numpy())
    assert np.mean(diff < 1e-5) > 0.99 and diff.max() < 0.05


def test_compiled_step_with_penalty_equals_torch_step():
    from margsynth.domain import Domain
    from margsynth.inference.privpgd import ThresholdConstraint, ThresholdPenalty

    counts, cliques, centres, bank = _mixed_problem(seed=2)
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 5, "d": 2})
    pen = ThresholdPenalty(ThresholdConstraint({"a": 1.0, "d": 0.5}, tau=0.6), dom, 0.3, "cpu")
    res = {}
    for backend in ("compiled", "torch"):
        cfg = OptimizerConfig(**{**BASE, "n_particles": 500, "epochs": 1, "gamma": 5.0}, backend=backend)
        res[backend], _ = optimize_particles(counts, cliques, centres, bank, 4, cfg, penalty=pen,
                                             generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(res["compiled"].numpy(), res["torch"].numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_step_transport_is_the_optimal_matching(backend):
    """Eq. 8's sorted matching, as the step computes it (bucket ranks fine enough to be exact
    ranks): the tracked loss of the first step equals, direction by direction, the cheapest
    assignment of the particles' projections to the target atoms, found by brute force."""
    rng = np.random.default_rng(5)
    sizes, N = (2, 3), 6
    centres = [clique_centres(sizes)]
    counts = [quantize(rng.dirichlet(np.ones(6)), N)]
    bank = DirectionBank.build(centres, 4, np.random.default_rng(6))
    init = torch.rand(2, N, generator=torch.Generator().manual_seed(7))
    cfg = OptimizerConfig(n_particles=N, epochs=1, projections=4, batch_size=1, drop_fraction=0.0, lr=0.1, lr_step=1,
                          lr_gamma=1.0, rank_buckets=10_000.0, track_loss=True, backend=backend)
    gen = torch.Generator().manual_seed(8)
    _, trace = optimize_particles(counts, [(0, 1)], centres, bank, 2, cfg, generator=gen, init=init)
    gen = torch.Generator().manual_seed(8)  # the same draws: the initial particles' seed, then the epoch's block
    torch.randint(0, 2**62, (1,), generator=gen)
    torch.randperm(1, generator=gen)
    o = int(torch.randint(0, bank.M - 4 + 1, (1,), generator=gen))
    atoms = np.repeat(centres[0], counts[0], axis=0)
    x = init.double().numpy().T
    best = []
    for th in bank.dirs[0][o : o + 4]:
        z, t = x @ th, atoms @ th
        best.append(min(np.mean((z - t[list(p)]) ** 2) for p in itertools.permutations(range(N))))
        assert w2_squared_sorted(z, t) == pytest.approx(best[-1], rel=1e-12)
    assert trace.loss[0] == pytest.approx(np.mean(best), rel=1e-4)


def test_masks_compiled_equal_numpy_and_keep_the_right_fraction():
    attrs = np.array([0, 3, 5])
    for drop in (0.0, 0.8, 0.5):
        thr = kernels.keep_threshold(drop)
        want = kernels.keep_masks_numpy(12345, 17, attrs, 6, 10_001, thr)
        got = kernels.keep_masks(12345, 17, attrs, 6, 10_001, thr)
        assert got.dtype == bool and np.array_equal(got, want)
        assert abs(want.mean() - (1 - drop)) < 0.01
    a = kernels.keep_masks_numpy(1, 2, [0, 1], 2, 1000, kernels.keep_threshold(0.5))
    assert not np.array_equal(a[0], a[1])  # rows differ
    assert not np.array_equal(a, kernels.keep_masks_numpy(1, 3, [0, 1], 2, 1000, kernels.keep_threshold(0.5)))


def test_compiled_run_is_deterministic_and_projection_matches_torch():
    counts, cliques, centres, bank = _mixed_problem(seed=3)
    kw = {**BASE, "n_particles": 500, "backend": "compiled"}
    x1, _ = optimize_particles(counts, cliques, centres, bank, 4, **kw, generator=torch.Generator().manual_seed(0))
    x2, _ = optimize_particles(counts, cliques, centres, bank, 4, **kw, generator=torch.Generator().manual_seed(0))
    x3, _ = optimize_particles(counts, cliques, centres, bank, 4, **kw, generator=torch.Generator().manual_seed(1))
    assert torch.equal(x1, x2) and not torch.equal(x1, x3)
    rng = np.random.default_rng(0)
    targets = [np.asarray(c, float) / 500 + rng.normal(0, 0.02, len(c)) for c in counts]
    probs = {}
    for backend in ("compiled", "torch"):
        probs[backend], _ = project_measures(targets, bank, iters=40, projections=8, lr=0.1, lr_step=15, lr_gamma=0.8,
                                             generator=torch.Generator().manual_seed(0), backend=backend)
    for a, b in zip(probs["compiled"], probs["torch"]):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_backend_choices_are_validated():
    counts, cliques, centres, bank = _mixed_problem()
    with pytest.raises(ValueError, match="backend"):
        OptimizerConfig(**BASE, backend="gpu")
    with pytest.raises(ValueError, match="buckets"):
        optimize_particles(counts, cliques, centres, bank, 4, **{**BASE, "n_particles": 500}, ranking="sort",
                           backend="compiled", generator=torch.Generator())
    with pytest.raises(ValueError, match="exceed"):
        optimize_particles(counts, cliques, centres, bank, 4, **{**BASE, "n_particles": 500, "projections": 30},
                           generator=torch.Generator())
