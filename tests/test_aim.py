"""AIM (McKenna, Mullins, Sheldon & Miklau, PVLDB 2022, arXiv:2201.12677; docs/notes/aim.md) on the project's ledger and Private-PGM engine."""

from __future__ import annotations

import math

import numpy as np
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms.aim import AIM, all_kway, workload_candidates
from margsynth.mechanisms.generators import PGMGenerator
from margsynth.privacy.accounting import zcdp_rho


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 2000
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2)) % 3
    c = (a * b + rng.integers(0, 2, n)) % 4
    d = rng.integers(0, 2, n)
    dom = Domain.from_sizes({"a": 3, "b": 3, "c": 4, "d": 2})
    return Dataset(np.stack([a, b, c, d], axis=1), dom)


def test_workload_candidates_are_downward_closure_with_overlap_weights():
    dom = Domain.from_sizes({"a": 2, "b": 2, "c": 2, "d": 2})
    cands = workload_candidates(dom, [(("a", "b", "c"), 1.0), (("b", "d"), 1.0)])
    assert set(cands) == {
        ("a",),
        ("b",),
        ("c",),
        ("d",),
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
        ("b", "d"),
        ("a", "b", "c"),
    }
    assert cands[("b",)] == 2  # b is in both workload cliques
    assert cands[("a", "b", "c")] == 3 + 1  # |abc ∩ abc| + |abc ∩ bd|
    assert cands[("b", "d")] == 1 + 2
    assert len(all_kway(dom, 3)) == 4


def test_run_spends_exactly_the_budget_and_reports_it(data):
    res = AIM(rounds=6, iters=30, generator=PGMGenerator(iters=30)).run(data, 1.0, 1e-6, np.random.default_rng(1))
    rho = zcdp_rho(1.0, 1e-6, conversion="cks")
    assert sum(r["cost"] for r in res.ledger) == pytest.approx(rho, rel=1e-9)
    assert res.epsilon == pytest.approx(1.0, rel=1e-6)
    kinds = [r["kind"] for r in res.ledger]
    assert kinds[:4] == ["gaussian"] * 4  # the one-way marginals
    # every round: one selection then one measurement
    assert kinds[4:] == ["exponential", "gaussian"] * res.extras["rounds"]
    sig0 = math.sqrt(6 / (2 * 0.9 * rho))
    assert res.ledger[0]["sigma"] == pytest.approx(sig0)
    assert res.synthetic.domain == data.domain
    for t in res.extras["trace"]:
        assert t["model_mb"] <= 80


def test_annealing_halves_sigma(data):
    res = AIM(rounds=40, iters=30, generator=PGMGenerator(iters=30)).run(data, 2.0, 1e-6, np.random.default_rng(3))
    tr = res.extras["trace"]
    assert any(t["annealed"] for t in tr[:-1])
    for prev, nxt in zip(tr, tr[1:]):
        if prev["annealed"] and nxt is not tr[-1]:
            assert nxt["sigma"] == pytest.approx(prev["sigma"] / 2)
            assert nxt["epsilon"] == pytest.approx(prev["epsilon"] * 2)


def test_model_size_cap_filters_candidates(data):
    res = AIM(rounds=5, iters=20, generator=PGMGenerator(iters=20), max_model_size=1e-4).run(data, 1.0, 1e-6, np.random.default_rng(0))
    # 1e-4 MB = 13 cells: no 2-way clique fits before the end, only already-covered (1-way) ones
    assert all(len(c) == 1 for c in res.extras["measured"])


def test_custom_workload_and_errors(data):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="unknown attribute"):
        AIM(workload=(("a", "zz"),)).run(data, 1.0, 1e-6, rng)
    with pytest.raises(ValueError, match="epsilon"):
        AIM().run(data, 0.0, 1e-6, rng)
    with pytest.raises(ValueError, match="delta"):
        AIM().run(data, 1.0, 1.5, rng)
    with pytest.raises(ValueError, match="rounds"):
        AIM(rounds=0)
    with pytest.raises(ValueError, match="number of attributes"):
        AIM(rounds=3).run(data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == before
    res = AIM(workload=((("a", "b"), 2.0), ("c", "d")), rounds=4, iters=20, generator=PGMGenerator(iters=20)).run(data, 1.0, 1e-6, rng)
    for c in res.extras["measured"]:
        assert set(c) <= {"a", "b"} or set(c) <= {"c", "d"}


def test_noise_variance_matches_ledger(data):
    """Every Gaussian measurement AIM draws has the sigma its ledger entry charges."""
    res = AIM(rounds=8, iters=20, generator=PGMGenerator(iters=20)).run(data, 0.5, 1e-6, np.random.default_rng(4))
    charged = [r["sigma"] for r in res.ledger if r["kind"] == "gaussian"]
    ms = res.extras["measurements"]
    assert [m.sigma for m in ms] == pytest.approx(charged)
    z = np.concatenate([(m.y - data.marginal(m.clique, flatten=True)) / m.sigma for m in ms])
    assert z.size > 40
    assert abs(z.var() - 1.0) < 5 * math.sqrt(2 / z.size)


@pytest.mark.parametrize("seed", [0, 1])
def test_incremental_path_selects_like_the_reference_path(data, seed):
    """The incremental candidate filter, the per-round marginal cache and the spliced
    model structure change no arithmetic that matters: same selections, same budget,
    and (the model family being the same) the same fitted loss to rounding."""
    kw = dict(rounds=12, iters=60, generator=PGMGenerator(iters=100), max_model_size=0.002)  # a cap that binds
    ref = AIM(incremental=False, **kw).run(data, 2.0, 1e-6, np.random.default_rng(seed))
    inc = AIM(**kw).run(data, 2.0, 1e-6, np.random.default_rng(seed))
    assert [t["clique"] for t in inc.extras["trace"]] == [t["clique"] for t in ref.extras["trace"]]
    assert [r["cost"] for r in inc.ledger] == pytest.approx([r["cost"] for r in ref.ledger])
    assert inc.extras["estimation"]["loss"] == pytest.approx(ref.extras["estimation"]["loss"], rel=1e-6)
    for t in inc.extras["trace"]:  # every model respected the size cap of its round
        assert t["model_mb"] <= 0.002 + 1e-12 or len(t["clique"]) == 1


def test_round_gap_tol_stops_rounds_early_and_is_validated(data):
    res = AIM(rounds=8, iters=400, generator=PGMGenerator(iters=50), round_gap_tol=0.2).run(data, 2.0, 1e-6, np.random.default_rng(0))
    tr = res.extras["trace"]
    assert any(t["iterations"] < 400 for t in tr)
    for t in tr:
        if t["iterations"] < 400:
            assert t["gap"] >= 0
    for bad in (-1.0, float("nan"), True):
        with pytest.raises(ValueError, match="round_gap_tol"):
            AIM(round_gap_tol=bad)
    with pytest.raises(ValueError, match="incremental"):
        AIM(incremental=1)


@pytest.mark.parametrize("zeros", [0.0, 0.7, 1.0])  # share of empty cells in the data's tables
def test_round_scores_are_the_l1_errors_of_the_model_marginals(zeros):
    """The fast path's scores read the model's marginal on a candidate as the product of
    its marginals on independent components, without forming it, and visit only the
    data's non-zero cells: brute force (the candidate's table by variable elimination,
    the dense L1 distance) must agree for every candidate."""
    from margsynth.inference.pgm import GraphicalModel
    from margsynth.inference.pgm.factor import Factor
    from margsynth.mechanisms.aim import _Counts, _RoundMarginals

    rng = np.random.default_rng(2)
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 5, "d": 2, "e": 6, "f": 3, "g": 4})
    cliques = [("a", "b"), ("b", "c"), ("d",), ("e", "f"), ("a", "c", "g")]  # components {a,b,c,g}, {d}, {e,f}
    model = GraphicalModel.from_factors(
        dom, [Factor(c, rng.normal(size=tuple(dom[x].size for x in c))) for c in cliques], total=1234.0
    )
    keys = list(workload_candidates(dom, [(c, 1.0) for c in all_kway(dom, 3)]))
    tables = {}
    for c in keys:
        t = rng.integers(1, 60, size=math.prod(dom[x].size for x in c)).astype(np.int32)
        t[rng.random(t.size) < zeros] = 0
        tables[c] = t
    answers = {c: _Counts(t, tuple(dom[x].size for x in c)) for c, t in tables.items()}
    for c, t in tables.items():
        np.testing.assert_array_equal(answers[c].dense(), t)
    scores = _RoundMarginals(model)
    assert len(set(scores.components().values())) == 3
    got = scores.l1_errors(keys, answers)
    want = [np.abs(tables[c] - model.project(c).ravel()).sum() for c in keys]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_round_scores_run_with_single_threaded_blas(data, monkeypatch):
    """The scoring's contractions are a few hundred cells each: multi-threaded BLAS only
    spins there (20-25% more CPU than wall time on adult), so every round scores with BLAS
    limited to one thread, and the limit is lifted afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from margsynth.mechanisms import aim as aim_module

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    seen = []
    scores = aim_module._RoundMarginals.l1_errors

    def spy(self, keys, answers):
        seen.append(blas_threads())
        return scores(self, keys, answers)

    monkeypatch.setattr(aim_module._RoundMarginals, "l1_errors", spy)
    res = AIM(rounds=4, iters=20, generator=PGMGenerator(iters=20)).run(data, 1.0, 1e-6, np.random.default_rng(0))
    assert len(seen) == res.extras["rounds"]
    assert all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before


def test_round_fits_are_at_least_as_converged_as_the_published_estimator(data, monkeypatch):
    """AIM's published code fits every round with 1,000 iterations of plain mirror descent
    (Private-PGM's default engine) and the final model with 2,500. Our defaults run 250
    and 500 iterations of the accelerated descent; from the same warm start they must
    reach a loss at least as low as the published counts of plain mirror descent."""
    import margsynth.mechanisms.aim as aim_module
    import margsynth.mechanisms.generators as generators_module
    from margsynth.inference.pgm import estimate

    checked = []

    def compare(published):
        def fit(domain, measurements, **kw):
            ours = estimate(domain, measurements, **kw)
            theirs = estimate(domain, measurements, **{**kw, "iters": published, "method": "mirror_descent"})
            checked.append((ours.stats["loss"], theirs.stats["loss"]))
            return ours

        return fit

    monkeypatch.setattr(aim_module, "estimate", compare(1000))
    monkeypatch.setattr(generators_module, "estimate", compare(2500))
    mech = AIM(rounds=12)
    assert (mech.iters, mech.generator.iters) == (250, 500)
    mech.run(data, 2.0, 1e-6, np.random.default_rng(7))
    assert len(checked) >= 4  # the one-way fit, rounds, the final fit
    for ours, theirs in checked:
        assert ours <= theirs * (1 + 1e-9) + 1e-9


def test_presets_default_is_the_published_aim_and_fast_bounds_the_cost():
    from margsynth.mechanisms.aim import PRESETS
    from margsynth.mechanisms.registry import create

    assert create("aim") == AIM() == PRESETS["default"]
    fast = create("aim", preset="fast")
    assert fast == PRESETS["fast"]
    assert (fast.max_model_size, fast.iters, fast.generator.iters) == (10.0, 50, 100)
    assert (fast.workload, fast.rounds, fast.alpha, fast.conversion) == (None, None, 0.9, "cks")  # the rest as AIM
    # overrides replace the preset's fields, of AIM and of its final fit
    tuned = create("aim", preset="fast", max_model_size=20.0, **{"generator.iters": 7})
    assert (tuned.max_model_size, tuned.iters, tuned.generator.iters) == (20.0, 50, 7)
    assert create("aim", preset="fast", gap_tol=1e-3).generator.gap_tol == 1e-3
    with pytest.raises(ValueError, match="unknown preset 'huge'; expected one of \\['default', 'fast'\\]"):
        create("aim", preset="huge")
    with pytest.raises(ValueError, match="bad parameters"):
        create("aim", preset="fast", colour=1)


def test_fast_preset_runs_its_iterations_and_spends_the_budget(data):
    from margsynth.mechanisms.aim import PRESETS

    res = PRESETS["fast"].run(data, 2.0, 1e-6, np.random.default_rng(3))
    rho = zcdp_rho(2.0, 1e-6, conversion="cks")
    assert sum(r["cost"] for r in res.ledger) <= rho
    assert sum(r["cost"] for r in res.ledger) == pytest.approx(rho, rel=1e-9)
    assert res.extras["rounds"] >= 1
    assert all(t["iterations"] == 50 for t in res.extras["trace"])
    for t in res.extras["trace"]:
        assert t["model_mb"] <= 10.0 * t["budget_used"] + 1e-12
