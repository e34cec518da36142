"""GEM (Liu, Vietri & Wu, NeurIPS 2021, arXiv:2106.07153): product-distribution answers,
noise-free recovery, privacy accounting (every draw charged), determinism, input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms.gem import GEM, build_generator
from margsynth.mechanisms.queries import MarginalQueries
from margsynth.mechanisms.registry import create
from margsynth.privacy.accounting import zcdp_rho

DOM = Domain.from_sizes({"a": 3, "b": 3, "c": 4, "d": 2})
SMALL = dict(rounds=4, batch_size=64, embedding_dim=16, hidden=(32,), iters=60, lr=0.01, progress=False)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 1500
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2)) % 3
    c = (a * b + rng.integers(0, 2, n)) % 4
    d = (c > 1).astype(int) ^ (rng.random(n) < 0.1)
    return Dataset(np.stack([a, b, c, d], axis=1), DOM)


def test_generator_outputs_product_distributions_whose_answers_are_exact_when_one_hot(data):
    """The generator's softmax blocks are distributions; a batch of one-hot rows (the limit of
    saturated logits) answers every 2-way query exactly."""
    w = MarginalQueries.all_kway(DOM, 2)
    net = build_generator(8, (16, 16), w.n_columns, seed=0)
    P = w.block_softmax(net(torch.randn(10, 8, generator=torch.Generator().manual_seed(1))))
    for i in range(len(DOM)):
        torch.testing.assert_close(P[:, w.offsets[i] : w.offsets[i + 1]].sum(1), torch.ones(10))
    X = w.block_softmax(torch.as_tensor(w.one_hot(data, dtype=np.float64) * 60.0))
    np.testing.assert_allclose(w.relaxed_answers(X).numpy(), w.answers(data), atol=1e-12)
    # the generator's initialisation does not touch torch's global generator
    state = torch.random.get_rng_state()
    build_generator(8, (16,), w.n_columns, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())


def test_noise_free_run_recovers_two_way_marginals(data):
    w = MarginalQueries.all_kway(DOM, 2)
    params = dict(SMALL, rounds=len(w.cliques), iters=300, lr=0.01, ema_beta=0.0, patience=50)
    r = GEM(**params).run(data, 1e6, 1e-6, np.random.default_rng(1))
    assert sorted(r.extras["selected"]) == list(range(len(w.cliques)))  # every marginal measured once
    relaxed = torch.as_tensor(r.extras["relaxed"])
    err = np.abs(w.relaxed_answers(relaxed).numpy() - w.answers(data))
    assert err.max() < 0.03, err.max()
    tv = np.mean(
        [
            0.5 * np.abs(w.answers(r.synthetic)[w.clique_ids(j)] - w.answers(data)[w.clique_ids(j)]).sum()
            for j in range(len(w.cliques))
        ]
    )
    assert tv < 0.06, tv


@pytest.mark.parametrize("select", ["marginal", "query"])
def test_every_draw_is_charged_and_budget_not_exceeded(data, select):
    w = MarginalQueries.all_kway(DOM, 2)
    r = GEM(**dict(SMALL, select=select)).run(data, 1.0, 1e-6, np.random.default_rng(2))
    T = SMALL["rounds"]
    assert [e["kind"] for e in r.ledger] == ["gaussian"] + ["exponential", "gaussian"] * T
    rho = zcdp_rho(1.0, 1e-6, conversion="cks")
    spent = math.fsum(e["cost"] for e in r.ledger)
    assert spent <= rho and spent == pytest.approx(rho, rel=1e-8)
    assert r.epsilon <= 1.0 and r.epsilon == pytest.approx(1.0, rel=1e-6)
    # a marginal or a single query: sensitivity 1 either way (add/remove-one, counts)
    assert all(e["sensitivity"] == pytest.approx(1.0) for e in r.ledger)
    sel = r.extras["selected"]
    assert len(set(sel)) == T  # never re-selected
    if select == "marginal":
        assert r.extras["measured"].size == sum(w.clique_ids(j).size for j in sel)
    else:
        assert list(r.extras["measured"]) == sel


def test_rounds_capped_at_the_number_of_candidates(data):
    r = GEM(**dict(SMALL, rounds=50, iters=5)).run(data, 1.0, 1e-6, np.random.default_rng(4))
    assert len(r.extras["selected"]) == 6  # 4 attributes: 6 two-way marginals
    assert r.epsilon <= 1.0 and r.epsilon == pytest.approx(1.0, rel=1e-6)


def test_same_seed_same_bytes(data):
    a = GEM(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(7))
    b = GEM(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(7))
    c = GEM(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(8))
    assert a.synthetic.codes.tobytes() == b.synthetic.codes.tobytes()
    assert a.extras["relaxed"].tobytes() == b.extras["relaxed"].tobytes()
    assert a.ledger == b.ledger
    assert a.synthetic.codes.tobytes() != c.synthetic.codes.tobytes()


@pytest.mark.parametrize(
    "bad",
    [
        {"rounds": 0},
        {"batch_size": 1},
        {"embedding_dim": 2.0},
        {"hidden": (16, 0)},
        {"hidden": "wide"},
        {"lr": -0.1},
        {"iters": 0},
        {"ema_beta": 1.0},
        {"total_share": 0.0},
        {"select_share": 1.5},
        {"select": "workload"},
        {"conversion": "rdp"},
        {"degree": 9},
        {"progress": 1},
    ],
)
def test_bad_hyperparameters_refused_before_any_noise(data, bad):
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(ValueError):
        GEM(**{**SMALL, **bad}).run(data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == state


def test_bad_device_refused_before_any_noise(data):
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="device"):
        GEM(**SMALL).run(data, 1.0, 1e-6, rng, device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            GEM(**SMALL).run(data, 1.0, 1e-6, rng, device="cuda")
    assert rng.bit_generator.state == state


def test_registry_presets():
    m = create("gem", preset="fast", progress=False)
    assert isinstance(m, GEM) and m.rounds == 30 and m.batch_size == 300
    assert create("gem").batch_size == 1000
    assert create("gem", hidden=[64, 64]).hidden == (64, 64)


def test_output_is_the_moving_average_mixture_of_the_rounds(data):
    beta = 0.5
    r = GEM(**dict(SMALL, ema_beta=beta)).run(data, 1.0, 1e-6, np.random.default_rng(5))
    B, T = SMALL["batch_size"], SMALL["rounds"]
    rows, wts = r.extras["relaxed"], r.extras["relaxed_weights"]
    assert rows.shape[0] == B * T and wts.sum() == pytest.approx(1.0)
    per_round = wts.reshape(T, B).sum(1)
    want = np.array([beta ** (T - 1)] + [beta ** (T - 1 - t) * (1 - beta) for t in range(1, T)])
    np.testing.assert_allclose(per_round, want)


def test_progress_bars_over_rounds_and_steps(data, capsys):
    GEM(**dict(SMALL, progress=True, rounds=2, iters=3)).run(data, 1.0, 1e-6, np.random.default_rng(0))
    err = capsys.readouterr().err
    assert "GEM rounds" in err and "GEM round 1" in err
    GEM(**dict(SMALL, rounds=2, iters=3)).run(data, 1.0, 1e-6, np.random.default_rng(0))
    assert "GEM" not in capsys.readouterr().err
