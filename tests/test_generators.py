"""Generators as pluggable objects of the marginal-based mechanisms: MST with PrivSyn's GUM
(``mst-gum``), PrivSyn's selection with Private-PGM (``privsyn-pgm``), every generator on
the one noisy-marginals type, and the range queries of notebook 08's experiment module."""

from __future__ import annotations

import numpy as np
import pytest

from margsynth import Dataset, Domain
from margsynth.experiments.privsyn import RangeQuery, range_query_error, range_workload
from margsynth.inference.gum import GUM
from margsynth.inference.pgm import ModelTooLargeError
from margsynth.mechanisms import registry
from margsynth.mechanisms.generators import GUMGenerator, PGMGenerator, consistent_targets
from margsynth.mechanisms.mst import MST
from margsynth.mechanisms.privsyn import PrivSyn

DOM = Domain.from_sizes({"a": 4, "b": 4, "c": 3, "d": 5, "e": 5, "f": 2})


def _data(n: int = 3000, seed: int = 7) -> Dataset:
    """A chain a->b->c, a dependent pair d-e, an independent f (as in test_mst)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + (rng.random(n) < 0.2)) % 4
    c = (b + (rng.random(n) < 0.2) * rng.integers(0, 3, n)) % 3
    d = rng.integers(0, 5, n)
    e = (d + (rng.random(n) < 0.1)) % 5
    f = rng.integers(0, 2, n)
    return Dataset(np.stack([a, b, c, d, e, f], axis=1), DOM)


DATA = _data()
FAST_MST = {"select_iters": 200}
FAST_PGM = PGMGenerator(iters=200)
FAST_GUM = GUMGenerator(max_rounds=20)


def _tv(ds: Dataset, clique, target) -> float:
    t = np.asarray(target, dtype=float).ravel()
    return 0.5 * float(np.abs(ds.marginal(clique, flatten=True) / len(ds) - t / t.sum()).sum())


# ----------------------------------------------------------------------------- MST + GUM
@pytest.mark.parametrize("epsilon", [0.2, 2.0])
def test_mst_gum_spends_the_same_ledger_as_mst_pgm(epsilon):
    pgm = MST(**FAST_MST, generator=FAST_PGM).run(DATA, epsilon, 1e-9, np.random.default_rng(3))
    gum = MST(**FAST_MST, generator=FAST_GUM).run(DATA, epsilon, 1e-9, np.random.default_rng(3))
    assert gum.ledger == pgm.ledger  # same charges, labels and order: generation is post-processing
    assert gum.epsilon == pytest.approx(epsilon, rel=1e-9) and gum.epsilon == pgm.epsilon
    assert gum.delta == pgm.delta
    assert gum.extras["selected"] == pgm.extras["selected"]
    assert gum.extras["compression"] == pgm.extras["compression"]
    for lg, lp in zip(gum.extras["log_selected"], pgm.extras["log_selected"]):
        np.testing.assert_array_equal(lg.y, lp.y)  # the very same noisy measurements
    assert gum.mechanism == "mst-gum" and pgm.mechanism == "mst"
    assert gum.synthetic.domain == DATA.domain
    assert abs(len(gum.synthetic) - len(DATA)) < 0.05 * len(DATA)
    assert {"gum_trace", "gum_converged", "consistency_iterations"} <= set(gum.extras)
    assert "model_stats" not in gum.extras and "model_stats" in pgm.extras
    assert pgm.parameters["generator"]["name"] == "pgm" and gum.parameters["generator"]["name"] == "gum"


def test_mst_gum_reverses_the_compression():
    # at a tiny epsilon rare values of the 5-valued attributes are merged (Algorithm 4);
    # GUM runs on the compressed domain and the result is mapped back
    rng = np.random.default_rng(0)
    skew = DATA.codes.copy()
    skew[:, 3] = np.where(rng.random(len(DATA)) < 0.98, 0, skew[:, 3])  # d: values 1..4 rare
    data = Dataset(skew, DOM)
    res = MST(**FAST_MST, generator=FAST_GUM).run(data, 0.05, 1e-9, np.random.default_rng(1))
    assert res.extras["compression"]["d"][1] < 5
    assert res.synthetic.domain == DOM
    assert res.synthetic.codes[:, 3].max() < 5


def test_mst_gum_with_noise_free_measurements_tracks_the_data():
    res = MST(**FAST_MST, generator=GUMGenerator()).run(DATA, 1e4, 1e-9, np.random.default_rng(2))
    for c in res.extras["cliques"]:
        assert _tv(res.synthetic, c, DATA.marginal(c)) <= 0.02, c


def test_gum_fed_msts_noise_free_marginals_reproduces_them():
    res = MST(**FAST_MST).run(DATA, 1.0, 1e-9, np.random.default_rng(4))
    cliques = [(a,) for a in DOM.names] + [tuple(c) for c in res.extras["cliques"]]
    margs = [(c, DATA.marginal(c)) for c in cliques]
    out = GUM().synthesize(DOM, margs, len(DATA), np.random.default_rng(0))
    assert len(out.synthetic) == len(DATA)
    worst = max(_tv(out.synthetic, c, m) for c, m in margs)
    assert worst <= 0.01, worst
    assert out.trace["max_tv"].iloc[-1] <= 0.01


def test_consistent_targets_merges_repeats_and_is_consistent():
    rng = np.random.default_rng(0)
    ab = DATA.marginal(("a", "b")).astype(float)
    noisy_ab = ab + rng.normal(0, 5, ab.shape)
    noisy_ba = ab.T + rng.normal(0, 5, ab.T.shape)
    a = DATA.marginal(("a",)).astype(float) + rng.normal(0, 5, 4)
    items = [(("a", "b"), noisy_ab, 25.0), (("b", "a"), noisy_ba, 25.0), (("a",), a, 25.0)]
    targets, passes = consistent_targets(DOM, items)
    got = dict(targets)
    assert set(got) == {("a", "b"), ("a",)} and passes >= 1
    np.testing.assert_allclose(got[("a", "b")].sum(axis=1), got[("a",)], atol=1e-6)
    assert min(t.min() for t in got.values()) >= 0


# ----------------------------------------------------------------------------- PrivSyn + PGM
def test_privsyn_pgm_runs_and_spends_exactly_epsilon():
    eps = 1.0
    pgm = PrivSyn(generator=PGMGenerator(iters=300, memory_limit_mb=1024.0)).run(DATA, eps, 1e-9, np.random.default_rng(5))
    gum = PrivSyn(generator=FAST_GUM).run(DATA, eps, 1e-9, np.random.default_rng(5))
    assert pgm.epsilon == pytest.approx(eps, rel=1e-9)
    assert pgm.ledger == gum.ledger  # same selection and measurements for the same seed
    assert pgm.extras["cliques"] == gum.extras["cliques"]
    meas = pgm.extras["measurement"]
    assert sum(r["cost"] for r in pgm.ledger) == pytest.approx(meas.ledger.total, rel=1e-9)
    assert meas.ledger.remaining == pytest.approx(0.0, abs=1e-12 * meas.ledger.total)
    assert pgm.mechanism == "privsyn-pgm" and pgm.extras["gum_trace"] is None
    assert pgm.extras["junction_tree_mb"] > 0 and pgm.extras["model_stats"]["iterations"] >= 1
    assert pgm.synthetic.domain == DOM and len(pgm.synthetic) == meas.n_estimate
    # the strong dependencies survive Private-PGM: a-b far closer than independence
    ab = DATA.marginal(("a", "b")) / len(DATA)
    indep = np.outer(ab.sum(1), ab.sum(0))
    syn = pgm.synthetic.marginal(("a", "b")) / len(pgm.synthetic)
    assert 0.5 * np.abs(syn - ab).sum() < 0.5 * 0.5 * np.abs(indep - ab).sum()


def test_privsyn_pgm_refuses_a_junction_tree_over_the_memory_limit():
    mech = PrivSyn(generator=PGMGenerator(memory_limit_mb=1e-4))
    with pytest.raises(ModelTooLargeError, match="junction tree .* memory_limit_mb") as info:
        mech.run(DATA, 10.0, 1e-9, np.random.default_rng(0))
    assert isinstance(info.value, ValueError)
    assert info.value.size_mb > 1e-4 and info.value.cliques


@pytest.mark.parametrize(
    "factory, params, match",
    [
        (MST, {"generator": "gan"}, "generator"),
        (MST, {"generator": "gum"}, "GUMGenerator"),
        (PrivSyn, {"generator": "mcf"}, "generator"),
        (PrivSyn, {"generator": None}, "generator"),
        (PGMGenerator, {"iters": -1}, "iters"),
        (PGMGenerator, {"memory_limit_mb": 0}, "memory_limit_mb"),
        (PGMGenerator, {"memory_limit_mb": float("inf")}, "memory_limit_mb"),
        (PGMGenerator, {"gap_tol": -1e-3}, "gap_tol"),
        (PGMGenerator, {"gap_tol": float("nan")}, "gap_tol"),
        (PGMGenerator, {"gap_tol": True}, "gap_tol"),
        (PGMGenerator, {"rtol": -1.0}, "rtol"),
        (GUMGenerator, {"max_rounds": 0}, "max_rounds"),
        (GUMGenerator, {"nonnegativity": "clip"}, "nonnegativity"),
    ],
)
def test_bad_generator_parameters(factory, params, match):
    with pytest.raises(ValueError, match=match):
        factory(**params)


def test_registry_presets():
    assert isinstance(registry.create("mst-gum").generator, GUMGenerator)
    assert isinstance(registry.create("mst").generator, PGMGenerator)
    assert registry.create("privsyn-pgm").generator == PGMGenerator(iters=5000, gap_tol=1e-3, memory_limit_mb=1024.0)
    assert isinstance(registry.create("privsyn").generator, GUMGenerator)


def test_registry_routes_generator_fields():
    """``-p KEY=VALUE`` naming a field of the preset's generator (not of the mechanism) sets it."""
    assert registry.create("privsyn-pgm", iters=7).generator == PGMGenerator(iters=7, gap_tol=1e-3, memory_limit_mb=1024.0)
    assert registry.create("mst-gum", max_rounds=3).generator.max_rounds == 3
    assert registry.create("mst", iters=11).generator == PGMGenerator(iters=11)  # routed to its generator
    with pytest.raises(ValueError, match="bad parameters"):
        registry.create("mst-gum", no_such_field=1)


def test_every_generator_takes_the_noisy_marginals_type():
    """The same NoisyMarginals (Algorithm 1's log) feed Private-PGM and GUM; both give
    records over the domain whose 2-way marginals are close to the truth at large epsilon."""
    from margsynth.privacy import NoisyMarginals, measure_marginals

    log = measure_marginals(DATA, [(("a", "b"), 1.0), (("d", "e"), 1.0), (("c",), 1.0), (("f",), 1.0)], 1.0,
                            np.random.default_rng(0))  # fmt: skip
    assert isinstance(log, NoisyMarginals) and log.cliques[0] == ("a", "b")
    for gen in (PGMGenerator(iters=300), GUMGenerator(max_rounds=20)):
        out = gen.generate(DOM, log, np.random.default_rng(1), records=len(DATA))
        assert out.synthetic.domain == DOM and len(out.synthetic) == len(DATA)
        assert _tv(out.synthetic, ("a", "b"), DATA.marginal(("a", "b"))) < 0.05


# ----------------------------------------------------------------------------- range queries
def test_range_workload_is_seeded_and_uses_ordinal_or_binary_attributes():
    dom = Domain.from_sizes({"x": 10, "y": 3, "z": 2})  # from_sizes: not ordinal -> only z is eligible
    with pytest.raises(ValueError, match="k must be in 1..1"):
        range_workload(dom, 5, 2, np.random.default_rng(0))
    q1 = range_workload(DOM, 50, 1, np.random.default_rng(1))
    assert q1 == range_workload(DOM, 50, 1, np.random.default_rng(1))
    assert all(q.attrs == ("f",) and q.lo == q.hi for q in q1)
    with pytest.raises(ValueError, match="n_queries"):
        range_workload(DOM, 0, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        range_workload(DOM, 3, 1, 0)


def test_range_query_error_by_hand():
    dom = Domain.from_sizes({"u": 3, "v": 2})
    real = Dataset(np.array([[0, 0], [1, 1], [2, 1], [2, 0]]), dom)
    synth = Dataset(np.array([[0, 0], [0, 0], [2, 1], [2, 1]]), dom)
    q = [RangeQuery(("u", "v"), (1, 1), (2, 1)), RangeQuery(("u",), (0,), (0,))]
    # q0: real 2/4, synth 2/4 -> 0; q1: real 1/4, synth 2/4 -> 1/4
    assert range_query_error(real, synth, q) == pytest.approx(0.125)
    assert range_query_error(real, real, q) == 0.0


def test_notebook_08_experiment_on_a_small_dataset(monkeypatch):
    from margsynth.experiments import privsyn as exp

    monkeypatch.setenv("MARGSYNTH_CACHE", "off")
    res = exp.compare(["titanic"], [1.0], [0], workers=1, mst_iters=50, pgm_iters=50, n_queries=50)
    runs = res["runs"]
    assert list(runs["mechanism"]) == list(exp.MECHANISMS)
    assert (runs["status"] == "ok").all()
    assert np.allclose(runs["epsilon_spent"], 1.0)
    assert runs[["tv_2way", "tv_3way", "range_queries"]].notna().all().all()
    assert set(res["gum_traces"]["mechanism"]) == {"privsyn", "mst-gum"}
    sel = res["selection"]
    assert sel["step"].iloc[0] == 0 and (sel["error"].diff().iloc[1:][sel["accepted"].iloc[1:]] < 0).all()
    assert res["budget"]["share"].sum() == pytest.approx(1.0)
    summary = exp.summarise(runs)
    assert len(summary) == 4 and (summary["too_large"] == 0).all()
    tiny = exp.compare(["titanic"], [1.0], [0], ["privsyn-pgm"], workers=1, memory_limit_mb=1e-6, pgm_iters=5)
    assert tiny["runs"]["status"].tolist() == ["model too large"]
    assert tiny["runs"]["junction_tree_mb"].iloc[0] > 1e-6
    with pytest.raises(ValueError, match="unknown mechanisms"):
        exp.compare(["titanic"], [1.0], [0], ["gan"])
