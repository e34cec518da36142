"""PrivPGD end to end: projection output, recovery of exact marginals, the mechanism's
privacy bookkeeping, determinism, presets and input validation."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
import torch

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.inference.privpgd import (
    DirectionBank,
    PrivPGDGenerator,
    ThresholdConstraint,
    clique_centres,
    finalize,
    optimize_particles,
    project_measures,
    quantize,
    resolve_device,
)
from margsynth.mechanisms.privpgd import PRESETS, PrivPGD

TINY = PrivPGD(generator=PrivPGDGenerator(
    n_particles=2000, projection_iters=150, projection_projections=20, projection_lr_step=30,
    epochs=60, projections=6, batch_size=2, lr_step=15, direction_bank=48,
))


def _data(seed=0, n=3000, sizes=(2, 3, 4)):
    """Correlated toy data: b depends on a, c on b."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, sizes[0], n)
    b = (a + rng.integers(0, 2, n)) % sizes[1]
    c = np.minimum(b + rng.integers(0, 2, n), sizes[2] - 1)
    dom = Domain.from_sizes({"a": sizes[0], "b": sizes[1], "c": sizes[2]}, ordinal=["b", "c"])
    return Dataset(np.stack([a, b, c], axis=1), dom)


def _tv2(real, synth):
    out = []
    for pair in itertools.combinations(real.domain.names, 2):
        p = real.marginal(pair).ravel() / len(real)
        q = synth.marginal(pair).ravel() / len(synth)
        out.append(0.5 * np.abs(p - q).sum())
    return float(np.mean(out))


def test_projection_returns_probability_measures():
    rng = np.random.default_rng(0)
    sizes = [(3, 4), (2, 5), (6, 2)]
    centres = [clique_centres(s) for s in sizes]
    bank = DirectionBank.build(centres, 40, rng)
    targets = [rng.dirichlet(np.ones(len(c))) + rng.normal(0, 0.05, len(c)) for c in centres]  # signed
    assert any((t < 0).any() for t in targets)
    probs, diag = project_measures(targets, bank, iters=60, projections=20, lr=0.1, lr_step=20, lr_gamma=0.8,
                                   generator=torch.Generator().manual_seed(0))
    for p, c in zip(probs, centres):
        assert p.shape == (len(c),) and np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(diag["sw1_final"] <= diag["sw1_init"] + 1e-6)


@pytest.mark.parametrize("ranking", ["buckets", "sort"])
def test_exact_marginals_are_recovered(ranking):
    """Noise-free, exactly quantized 2-way marginals -> particles whose finalized
    marginals match them (Eq. 7/8 + finalization)."""
    data = _data()
    sizes = data.domain.shape
    cliques = list(itertools.combinations(range(3), 2))
    centres = [clique_centres([sizes[i] for i in c]) for c in cliques]
    N = 2000
    counts = [quantize(data.marginal([data.domain.names[i] for i in c]).ravel(), N) for c in cliques]
    bank = DirectionBank.build(centres, 32, np.random.default_rng(1))
    Xt, trace = optimize_particles(
        counts, cliques, centres, bank, 3, n_particles=N, epochs=60, projections=8, batch_size=1,
        drop_fraction=0.0, lr=0.1, lr_step=15, lr_gamma=0.75, generator=torch.Generator().manual_seed(0),
        ranking=ranking,
    )
    synth = finalize(Xt.T, data.domain)
    assert len(synth) == N
    assert _tv2(data, synth) < 0.02
    assert trace.epochs == 60


def test_run_recovers_marginals_at_huge_epsilon_and_accounts_privacy():
    data = _data(1)
    res = TINY.run(data, 1e4, 1e-6, np.random.default_rng(0))
    assert res.mechanism == "privpgd" and len(res.synthetic) == TINY.generator.n_particles
    assert res.synthetic.domain == data.domain
    assert _tv2(data, res.synthetic) < 0.05
    assert res.epsilon <= 1e4 * (1 + 1e-9) and res.delta == 1e-6
    assert len(res.ledger) == 1 and res.ledger[0]["kind"] == "gaussian"
    assert set(res.seconds) >= {"measure", "projection", "optimization", "total"}


def test_same_seed_same_bytes_and_different_seed_differs():
    data = _data(2, n=500)
    cfg = TINY.override(epochs=5, projection_iters=20, n_particles=500)
    r1 = cfg.run(data, 1.0, 1e-5, np.random.default_rng(42))
    r2 = cfg.run(data, 1.0, 1e-5, np.random.default_rng(42))
    r3 = cfg.run(data, 1.0, 1e-5, np.random.default_rng(43))
    assert r1.synthetic.codes.tobytes() == r2.synthetic.codes.tobytes()
    assert r1.synthetic.codes.tobytes() != r3.synthetic.codes.tobytes()


def test_constraint_budget_is_charged_and_penalty_pushes_away():
    data = _data(3, n=4000)
    con = ThresholdConstraint({"b": 1.0, "c": 1.0}, tau=1.0)
    truth = con.answer(data)
    assert 0.1 < truth < 0.9
    base = TINY.override(constraint=con, gamma=0.0, epochs=25, lr_step=8, n_particles=1500)
    r0 = base.run(data, 50.0, 1e-5, np.random.default_rng(0))
    assert [c["label"] for c in r0.ledger] == ["2-way marginals", "constraint target"]
    assert r0.epsilon <= 50.0 * (1 + 1e-9)
    r1 = replace(base, gamma=5e-3).run(data, 50.0, 1e-5, np.random.default_rng(0))
    err0 = abs(con.answer(r0.synthetic) - truth)
    err1 = abs(con.answer(r1.synthetic) - truth)
    assert err1 > err0 + 0.02
    assert abs(r1.extras["constraint_target"] - truth) < 0.05


def test_presets_match_paper_section_4_1():
    d = PRESETS["default"].generator
    assert (d.n_particles, d.epochs, d.projections, d.batch_size, d.drop_fraction) == (100_000, 1_000, 10, 5, 0.8)
    assert (d.lr, d.lr_step, d.lr_gamma) == (0.1, 50, 0.75)
    assert (d.projection_iters, d.projection_projections, d.projection_lr) == (1_750, 200, 0.1)
    assert (d.projection_lr_step, d.projection_lr_gamma, PRESETS["default"].degree) == (100, 0.8, 2)
    assert PrivPGD.preset("default") == PrivPGD() and d == PrivPGDGenerator()
    f = PrivPGD.preset("fast").generator
    assert f.n_particles < d.n_particles and f.epochs < d.epochs
    # a generator field given to the preset reaches the preset's generator, the rest kept
    g = PrivPGD.preset("fast", epochs=3, gamma=0.0, threads=2)
    assert g.generator == replace(f, epochs=3) and g.threads == 2
    assert PrivPGD.preset("fast", generator=PrivPGDGenerator(), lr=0.5).generator == PrivPGDGenerator(lr=0.5)
    with pytest.raises(TypeError):
        PrivPGD.preset("fast", no_such_field=1)
    assert d.consistency is False and d.init == "uniform"  # the paper's algorithm
    assert f.consistency is True
    with pytest.raises(ValueError, match="unknown preset"):
        PrivPGD.preset("slow")


def test_bad_inputs_raise_value_error():
    data = _data(4, n=200)
    with pytest.raises(ValueError, match="size 1"):
        dom1 = Domain.from_sizes({"a": 2, "k": 1, "c": 3})
        TINY.run(Dataset(np.zeros((10, 3), dtype=int), dom1), 1.0, 1e-5, np.random.default_rng(0))
    bad_codes = Dataset._trusted(np.full((10, 3), 7, dtype=np.int64), data.domain)
    with pytest.raises(ValueError, match="does not match"):
        TINY.run(bad_codes, 1.0, 1e-5, np.random.default_rng(0))
    wrong_cols = Dataset._trusted(np.zeros((10, 2), dtype=np.int64), data.domain)
    with pytest.raises(ValueError, match="columns"):
        TINY.run(wrong_cols, 1.0, 1e-5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="gamma"):
        PrivPGD(gamma=-0.1)
    with pytest.raises(ValueError, match="gamma > 0 needs a constraint"):
        PrivPGD(gamma=0.1)
    with pytest.raises(ValueError, match="unknown device"):
        TINY.run(data, 1.0, 1e-5, np.random.default_rng(0), device="tpu")
    with pytest.raises(ValueError):
        TINY.run(data, 1.0, 1e-5, np.random.default_rng(0), device=3)
    with pytest.raises(ValueError, match="epsilon"):
        TINY.run(data, -1.0, 1e-5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        TINY.run(data, 1.0, 1e-5, 0)
    with pytest.raises(ValueError, match="Dataset"):
        TINY.run(data.codes, 1.0, 1e-5, np.random.default_rng(0))
    for bad in ({"drop_fraction": 1.0}, {"epochs": 0}, {"lr": 0.0}, {"ranking": "radix"}, {"threads": 0},
                {"direction_bank": 100}):
        with pytest.raises(ValueError):
            PrivPGD().override(**bad)
    with pytest.raises(ValueError, match="PrivPGDGenerator"):
        PrivPGD(generator={"epochs": 3})
    with pytest.raises(ValueError):
        ThresholdConstraint({"b": 0.0}, tau=0.5)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_requested_without_gpu_raises_no_silent_fallback():
    with pytest.raises(ValueError, match="no CUDA GPU"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        TINY.run(_data(5, n=100), 1.0, 1e-5, np.random.default_rng(0), device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cpu_and_gpu_agree_up_to_floating_point():
    data = _data(6, n=1000)
    cfg = TINY.override(epochs=10, projection_iters=40)
    cpu = cfg.run(data, 2.0, 1e-5, np.random.default_rng(0))
    gpu = cfg.run(data, 2.0, 1e-5, np.random.default_rng(0), device="cuda")
    for a, b in zip(cpu.extras["projected"], gpu.extras["projected"]):
        assert np.allclose(a, b, atol=1e-4)
    agree = np.mean(np.all(cpu.synthetic.codes == gpu.synthetic.codes, axis=1))
    assert agree > 0.9


def test_marginal_initialisation_matches_projected_one_way_marginals():
    from margsynth.inference.privpgd.generator import initial_particles

    sizes = (3, 4, 2)
    cliques = list(itertools.combinations(range(3), 2))
    rng = np.random.default_rng(9)
    joint = rng.dirichlet(np.ones(24)).reshape(sizes)
    probs = [joint.sum(axis=tuple({0, 1, 2} - set(c))).ravel() for c in cliques]
    X = initial_particles(probs, cliques, sizes, 20000, torch.Generator().manual_seed(0))
    assert X.shape == (3, 20000) and float(X.min()) >= 0 and float(X.max()) <= 1
    codes = finalize(X.T, Domain.from_sizes({"a": 3, "b": 4, "c": 2})).codes
    for a, n in enumerate(sizes):
        want = joint.sum(axis=tuple(x for x in range(3) if x != a))
        got = np.bincount(codes[:, a], minlength=n) / 20000
        assert np.abs(got - want).max() < 0.02
    with pytest.raises(ValueError, match="init"):
        PrivPGD().override(init="zeros")


def test_consistency_step_runs_and_validates():
    data = _data(5)
    cfg = TINY.override(consistency=True)
    res = cfg.run(data, 1e4, 1e-6, np.random.default_rng(0))
    assert "consistency" in res.seconds
    assert _tv2(data, res.synthetic) < 0.05
    proj = res.extras["projected"]
    sizes = data.domain.shape
    cl = list(itertools.combinations(range(3), 2))
    one = {}
    for p, c in zip(proj, cl):
        t = np.asarray(p).reshape(sizes[c[0]], sizes[c[1]])
        for j, a in enumerate(c):
            one.setdefault(a, []).append(t.sum(axis=1 - j))
    for ms in one.values():
        np.testing.assert_allclose(ms[0], ms[1], atol=1e-6)
    with pytest.raises(ValueError, match="consistency"):
        TINY.override(consistency="yes")


def test_rules_zero_the_targets_before_the_consistency_step():
    """With rules, the measures the particles fit have the rules' forbidden cells empty and
    still agree on their shared one-way marginals: the rules' projection comes before the
    raking (which keeps zero cells), so one does not undo the other. At ε = 0.05 the noise
    leaves mass on the forbidden cells; raking with zeros converges more slowly, hence the
    500 rounds (projecting after the raking leaves the marginals 4e-4 apart however long it
    rakes)."""
    from margsynth.rules import Rule, RuleSet

    data = _data(6)
    dom = data.domain
    rules = RuleSet([
        Rule.forbid("b follows a", dom, ("a", "b"), [(0, 2), (1, 0)]),
        Rule.forbid("c from b", dom, ("b", "c"), [(b, c) for b in range(3) for c in range(4) if c < b]),
    ])  # fmt: skip
    assert rules.violations(data) == {n: 0 for n in rules.names}
    res = TINY.override(consistency=True, consistency_iters=500).run(data, 0.05, 1e-6, np.random.default_rng(1), rules=rules)
    assert rules.violations(res.synthetic) == {n: 0 for n in rules.names}
    sizes = dom.shape
    one = {}
    for p, c in zip(res.extras["projected"], itertools.combinations(range(3), 2)):
        t = np.asarray(p).reshape(sizes[c[0]], sizes[c[1]])
        allowed = rules.mask(tuple(dom.names[i] for i in c), dom)
        if allowed is not None:
            assert t[~allowed.reshape(t.shape)].sum() == 0.0
        for j, a in enumerate(c):
            one.setdefault(a, []).append(t.sum(axis=1 - j))
    for ms in one.values():
        np.testing.assert_allclose(ms[0], ms[1], atol=1e-6)
