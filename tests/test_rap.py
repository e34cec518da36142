"""RAP (Aydore et al., ICML 2021, arXiv:2103.06641): relaxed answers, noise-free recovery,
privacy accounting (every draw charged), determinism, input checks before any noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms.queries import MarginalQueries
from margsynth.mechanisms.rap import RAP
from margsynth.mechanisms.registry import create
from margsynth.privacy.accounting import zcdp_rho

DOM = Domain.from_sizes({"a": 3, "b": 3, "c": 4, "d": 2})
SMALL = dict(n_rows=64, rounds=3, top_k=6, iters=150, lr=0.1, progress=False)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 1500
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2)) % 3
    c = (a * b + rng.integers(0, 2, n)) % 4
    d = (c > 1).astype(int) ^ (rng.random(n) < 0.1)
    return Dataset(np.stack([a, b, c, d], axis=1), DOM)


def test_softmax_relaxation_of_one_hot_logits_gives_exact_answers(data):
    """RAP's relaxed answers (Eq. 2) through the softmax parameterisation equal the exact
    marginals when the logits put (numerically) all mass on the records' values."""
    w = MarginalQueries.all_kway(DOM, 2)
    logits = torch.as_tensor(w.one_hot(data, dtype=np.float64) * 60.0)
    got = w.relaxed_answers(w.block_softmax(logits)).numpy()
    np.testing.assert_allclose(got, w.answers(data), atol=1e-12)


@pytest.mark.parametrize("one_shot", [True, False])
def test_noise_free_run_recovers_two_way_marginals(data, one_shot):
    w = MarginalQueries.all_kway(DOM, 2)
    params = dict(SMALL, one_shot=one_shot, rounds=6, top_k=w.n_queries // 6 + 1, iters=400)
    r = RAP(**params).run(data, 1e6, 1e-6, np.random.default_rng(1))
    relaxed = torch.as_tensor(r.extras["relaxed"])
    err = np.abs(w.relaxed_answers(relaxed).numpy() - w.answers(data))
    assert err.max() < 0.01, err.max()
    synth = r.synthetic
    assert abs(len(synth) - len(data)) <= 2  # n-hat is (nearly) exact at eps = 1e6
    # the sampled records follow the relaxed rows: 2-way TV within sampling error
    tv = np.mean(
        [
            0.5 * np.abs(w.answers(synth)[w.clique_ids(j)] - w.answers(data)[w.clique_ids(j)]).sum()
            for j in range(len(w.cliques))
        ]
    )
    assert tv < 0.05, tv


def test_every_draw_is_charged_and_budget_not_exceeded(data):
    w = MarginalQueries.all_kway(DOM, 2)
    r = RAP(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(2))
    kinds = [e["kind"] for e in r.ledger]
    # 1 total count + T rounds x (K picks + 1 measurement)
    assert kinds.count("gaussian") == 1 + SMALL["rounds"]
    assert kinds.count("exponential") == SMALL["rounds"] * SMALL["top_k"]
    assert len(r.ledger) == 1 + SMALL["rounds"] * (SMALL["top_k"] + 1)
    rho = zcdp_rho(1.0, 1e-6, conversion="cks")
    spent = math.fsum(e["cost"] for e in r.ledger)
    assert spent <= rho and spent == pytest.approx(rho, rel=1e-8)
    assert r.epsilon <= 1.0 and r.epsilon == pytest.approx(1.0, rel=1e-6)
    # each round's measurement is priced at the sensitivity of the queries it measured
    measured = r.extras["measured"]
    rounds = [e for e in r.ledger if e["label"].startswith("measure round")]
    for t, e in enumerate(rounds):
        ids = measured[t * SMALL["top_k"] : (t + 1) * SMALL["top_k"]]
        assert e["sensitivity"] == pytest.approx(w.l2_sensitivity(ids))
    assert len(np.unique(measured)) == measured.size  # never measured twice
    # one-shot: the count and one measurement of the whole workload (sensitivity sqrt(#marginals))
    r1 = RAP(**dict(SMALL, one_shot=True)).run(data, 1.0, 1e-6, np.random.default_rng(2))
    assert [e["kind"] for e in r1.ledger] == ["gaussian", "gaussian"]
    assert r1.ledger[1]["sensitivity"] == pytest.approx(math.sqrt(len(w.cliques)))
    assert r1.epsilon <= 1.0


def test_same_seed_same_bytes(data):
    a = RAP(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(7))
    b = RAP(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(7))
    c = RAP(**SMALL).run(data, 1.0, 1e-6, np.random.default_rng(8))
    assert a.synthetic.codes.tobytes() == b.synthetic.codes.tobytes()
    assert a.extras["relaxed"].tobytes() == b.extras["relaxed"].tobytes()
    assert a.ledger == b.ledger
    assert a.synthetic.codes.tobytes() != c.synthetic.codes.tobytes()


@pytest.mark.parametrize(
    "bad",
    [
        {"n_rows": 0},
        {"rounds": 1.5},
        {"top_k": -1},
        {"iters": True},
        {"lr": 0.0},
        {"lr": float("nan")},
        {"tol": -1e-3},
        {"total_share": 1.0},
        {"select_share": 0.0},
        {"one_shot": "yes"},
        {"conversion": "rdp"},
        {"synthetic_records": 0},
        {"degree": 5},
        {"threads": 0},
    ],
)
def test_bad_hyperparameters_refused_before_any_noise(data, bad):
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(ValueError):
        RAP(**{**SMALL, **bad}).run(data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == state


def test_bad_run_inputs_and_device_refused(data):
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    for eps, delta in ((0.0, 1e-6), (1.0, 1.0), (float("inf"), 1e-6)):
        with pytest.raises(ValueError):
            RAP(**SMALL).run(data, eps, delta, rng)
    with pytest.raises(ValueError, match="device"):
        RAP(**SMALL).run(data, 1.0, 1e-6, rng, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            RAP(**SMALL).run(data, 1.0, 1e-6, rng, device="cuda")
    assert rng.bit_generator.state == state
    with pytest.raises(ValueError, match="rng"):
        RAP(**SMALL).run(data, 1.0, 1e-6, 0)


def test_registry_presets():
    m = create("rap", preset="fast", progress=False)
    assert isinstance(m, RAP) and m.n_rows == 300 and not m.progress
    assert create("rap").n_rows == 1000
    with pytest.raises(ValueError, match="preset"):
        create("rap", preset="nope")


def test_progress_bars_over_rounds_and_projection_steps(data, capsys):
    RAP(**dict(SMALL, progress=True, rounds=2, top_k=3, iters=5)).run(data, 1.0, 1e-6, np.random.default_rng(0))
    err = capsys.readouterr().err
    assert "RAP rounds" in err and "RAP projection" in err
    RAP(**dict(SMALL, rounds=2, top_k=3, iters=5)).run(data, 1.0, 1e-6, np.random.default_rng(0))
    assert "RAP" not in capsys.readouterr().err  # progress=False: silent


def test_synthetic_records_default_to_the_noisy_count_within_the_memory_bound(data, monkeypatch):
    """Without synthetic_records the output has n-hat records; a count beyond the bound the memory
    limit fixes before measuring is bounded and reported, never silently."""
    from margsynth.mechanisms import base

    r = RAP(**dict(SMALL, one_shot=True, iters=5)).run(data, 1.0, 1e-6, np.random.default_rng(0))
    assert len(r.synthetic) == round(r.extras["n_hat"]) and "records_bounded" not in r.extras
    monkeypatch.setattr(base, "MEMORY_LIMIT_MB", 1.0)  # 1 MiB: at most 32,768 records of 4 attributes
    r = RAP(**dict(SMALL, one_shot=True, iters=5, n_rows=8)).run(data, 1e-12, 1e-6, np.random.default_rng(0))
    note = r.extras.get("records_bounded")
    assert len(r.synthetic) <= 32_768 and (note is None or note["records"] == len(r.synthetic))
