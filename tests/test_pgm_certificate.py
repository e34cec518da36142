"""The optimality certificate of Private-PGM estimation (the Frank–Wolfe gap).

* log-space max-product on the junction tree equals brute-force MAP (value and a
  maximising assignment) on trees, cycles, a 4-clique and a disconnected model, with
  random potentials;
* the certified gap bounds the suboptimality: ``gap >= L(mu) - L*`` with ``L*`` from an
  independent solver (active-set NNLS over the full joint of a tiny domain), at every
  iteration count, for identity, sparse and callable queries;
* the gap goes to 0 as the iterations grow, and ``gap_tol`` stops the descent with the
  certificate met;
* the certificate reaches the mechanisms' results (``extras["estimation"]`` and the sidecar).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp

from margsynth import Domain
from margsynth.inference.pgm import BeliefPropagation, build_junction_tree, estimate
from tests.test_pgm_estimation import STRUCTURES, _full_joint_reference, _tiny_problem

SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}


def _brute_force_map(dom: Domain, cliques, theta):
    best, arg = -np.inf, None
    for x in itertools.product(*(range(dom[a].size) for a in dom.names)):
        xd = dict(zip(dom.names, x))
        v = sum(t[tuple(xd[a] for a in c)] for c, t in zip(cliques, theta))
        if v > best:
            best, arg = v, xd
    return best, arg


@pytest.mark.parametrize("name", STRUCTURES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_product_matches_brute_force_map(name, seed):
    dom = Domain.from_sizes(SIZES)
    tree = build_junction_tree(dom, STRUCTURES[name])
    bp = BeliefPropagation(tree)
    rng = np.random.default_rng(seed)
    theta = [rng.normal(scale=2.0, size=s) for s in bp.shapes]
    if seed == 2:  # ties: integer potentials
        theta = [np.round(t) for t in theta]
    want, _ = _brute_force_map(dom, tree.cliques, theta)
    assert bp.max_product(theta) == pytest.approx(want, abs=1e-12)
    value, x = bp.max_product(theta, assignment=True)
    assert value == pytest.approx(want, abs=1e-12)
    assert set(x) == set(dom.names)
    score = sum(t[tuple(x[a] for a in c)] for c, t in zip(tree.cliques, theta))
    assert score == pytest.approx(want, abs=1e-12)  # the decoded assignment attains the MAP value


@pytest.mark.parametrize("kind", ["identity", "sparse", "callable"])
def test_gap_bounds_the_suboptimality(kind):
    dom, ms = _tiny_problem(kind)
    total = 100.0
    ref = _full_joint_reference(dom, ms, total)  # >= the true optimum L*
    gaps = []
    for iters in (0, 1, 3, 10, 30, 100, 1500):
        st = estimate(dom, ms, iters=iters, total=total).stats
        L, G = st["loss"], st["gap"]
        assert G >= 0
        # L - L* <= L - ref ... so the certificate must cover L - ref; equivalently L - G is a lower bound
        assert L - G <= ref + 1e-7 * max(1.0, ref), f"iters={iters}: L={L}, gap={G}, reference L*={ref}"
        gaps.append(G)
    # G -> 0. Once the descent stalls at its numerical optimum (here from ~600 iterations),
    # the last iterate's certificate is set by rounding: 1e-7..2e-4 relative on these tiny
    # problems, depending on the arithmetic path (numpy or compiled kernels)
    assert gaps[-1] <= 1e-3 * max(1.0, ref)
    assert gaps[-1] <= 1e-3 * gaps[0]


@pytest.mark.parametrize("method", ["accelerated", "mirror_descent"])
def test_gap_goes_to_zero_on_a_cycle(method):
    dom = Domain.from_sizes(SIZES)
    rng = np.random.default_rng(3)
    from tests.test_pgm_estimation import exact_measurements, sample_data

    data = sample_data(dom, 500, seed=3)
    ms = exact_measurements(data, STRUCTURES["cycle"])
    ms = [type(m)(m.clique, None, m.y + rng.normal(0, 2.0, m.y.size), 2.0) for m in ms]
    g = [estimate(dom, ms, iters=k, method=method).stats["gap"] for k in (5, 50, 500)]
    assert g[2] < g[1] < g[0]
    if method == "accelerated":  # plain mirror descent needs ~10x more iterations
        loss = estimate(dom, ms, iters=500, method=method).stats["loss"]
        assert g[2] <= 1e-3 * loss


def test_gap_tol_stops_with_the_certificate_met():
    dom, ms = _tiny_problem("identity")
    full = estimate(dom, ms, iters=1500, total=100.0)
    tol = 1e-3
    early = estimate(dom, ms, iters=1500, total=100.0, gap_tol=tol)
    st = early.stats
    assert st["iterations"] < full.stats["iterations"]
    assert st["gap"] <= tol * st["loss"]
    # the reported gap is the certificate of the returned model: recompute it from scratch
    again = estimate(dom, ms, iters=0, total=100.0, warm_start=early)
    assert again.stats["gap"] == pytest.approx(st["gap"], rel=1e-6, abs=1e-9)
    with pytest.raises(ValueError, match="gap_tol"):
        estimate(dom, ms, iters=10, gap_tol=-1.0)


def test_rtol_stops_when_the_loss_stalls():
    """``rtol``: the fit stops at the first check (every ``GAP_EVERY`` iterations) where the
    loss fell by at most ``rtol * loss`` since the previous check; the history up to there
    is the full run's, and the returned gap is still the returned model's certificate."""
    from margsynth.inference.pgm.descent import GAP_EVERY

    dom, ms = _tiny_problem("identity")
    full = estimate(dom, ms, iters=1500, total=100.0)
    h = full.stats["loss_history"]
    for tol in (1e-4, 1e-8):
        early = estimate(dom, ms, iters=1500, total=100.0, rtol=tol)
        k = early.stats["iterations"]
        assert k < 1500 and k % GAP_EVERY == 0
        np.testing.assert_array_equal(early.stats["loss_history"], h[:k])  # same iterates
        assert k >= 2 * GAP_EVERY
        assert h[k - GAP_EVERY - 1] - h[k - 1] <= tol * h[k - 1]  # stalled at the stop ...
        for j in range(2 * GAP_EVERY, k, GAP_EVERY):  # ... and at no earlier check
            assert h[j - GAP_EVERY - 1] - h[j - 1] > tol * h[j - 1]
        again = estimate(dom, ms, iters=0, total=100.0, warm_start=early)
        assert again.stats["gap"] == pytest.approx(early.stats["gap"], rel=1e-6, abs=1e-9)
        assert early.stats["loss"] - early.stats["gap"] <= full.stats["loss"] + 1e-9
    assert estimate(dom, ms, iters=1500, total=100.0, rtol=1e-4).stats["iterations"] <= k
    for bad in (-1.0, float("nan"), True):
        with pytest.raises(ValueError, match="rtol"):
            estimate(dom, ms, iters=10, rtol=bad)


def _pgm_based() -> list[str]:
    """The registered mechanisms whose GENERATE step is Private-PGM (a
    :class:`~margsynth.mechanisms.generators.PGMGenerator`), found from the registry."""
    from margsynth.mechanisms.generators import PGMGenerator
    from margsynth.mechanisms.registry import available, create

    out = []
    for name in available():
        try:
            mech = create(name)
        except ValueError:  # an optional dependency missing (e.g. torch for privpgd)
            continue
        gen = getattr(mech, "generator", None)
        if isinstance(gen, PGMGenerator):
            out.append(name)
    return out


PGM_BASED = _pgm_based()


def test_the_registry_lists_the_pgm_based_mechanisms():
    assert {"mst", "mst-prop4", "nist-mst", "aim", "adagrid", "privsyn-pgm", "independent"} <= set(PGM_BASED)
    assert not {"privsyn", "mst-gum", "privpgd"} & set(PGM_BASED)


def _small_run(name: str, **overrides):
    """``name`` from the registry (small settings for AIM, the data as public for NIST-MST)
    run on a 4-attribute toy at ε = 1, seed 0."""
    from margsynth.mechanisms.registry import create
    from tests.test_pgm_estimation import sample_data

    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    data = sample_data(dom, 400, seed=1)
    kw: dict = {"rounds": 8, "iters": 50, "generator.iters": 100} if name == "aim" else {}
    run_kw = {}
    if name == "nist-mst":
        kw, run_kw = {"designated": ()}, {"public": data}
    return create(name, **kw, **overrides).run(data, 1.0, 1e-6, np.random.default_rng(0), **run_kw)


@pytest.mark.parametrize("name", PGM_BASED)
def test_pgm_mechanisms_report_the_certificate(name):
    """Every PGM-based mechanism writes its final fit's certificate to ``extras["estimation"]``
    and, as strict JSON, to the sidecar."""
    res = _small_run(name)
    est = res.extras["estimation"]
    assert set(est) == {"loss", "gap", "iterations", "method"}
    assert est["gap"] >= 0 and est["loss"] >= 0 and est["iterations"] >= 1
    assert est["method"] in ("accelerated", "mirror_descent", "subgradient")
    side = res.sidecar()
    assert side["estimation"] == est
    assert json.loads(json.dumps(side["estimation"], allow_nan=False)) == est  # strict JSON


@pytest.mark.parametrize("seed", range(6))
def test_splice_clique_is_a_valid_junction_tree(seed):
    """AIM's incremental size test: the spliced cliques form a chordal graph whose
    maximal cliques they are, containing every old clique's edges and the new clique."""
    import networkx as nx

    from margsynth.inference.pgm import splice_clique

    rng = np.random.default_rng(seed)
    dom = Domain.from_sizes({k: int(rng.integers(2, 5)) for k in "abcdefgh"})
    names = dom.names
    cliques = [tuple(rng.choice(names, size=int(rng.integers(2, 4)), replace=False)) for _ in range(6)]
    tree = build_junction_tree(dom, cliques)
    for _ in range(5):
        new = tuple(rng.choice(names, size=3, replace=False))
        out, cells = splice_clique(tree, new)
        g = nx.Graph()
        g.add_nodes_from(names)
        for c in out:
            g.add_edges_from(itertools.combinations(c, 2))
        assert nx.is_chordal(g)
        assert {frozenset(c) for c in nx.find_cliques(g)} == {frozenset(c) for c in out}
        for c in [*tree.cliques, new]:
            assert any(set(c) <= set(o) for o in out)
        assert cells == sum(int(np.prod([dom[a].size for a in c])) for c in out)
        if tree.find_clique(new) is None:
            # the spliced structure is a junction tree estimate can use directly
            assert build_junction_tree(dom, out).cells <= cells


@pytest.mark.parametrize("kind", ["identity", "sparse", "callable"])
def test_reported_gap_is_at_most_frank_wolfe_and_the_scaled_dual_bound(kind):
    """The certificate is at most min(G_FW, R/2 - c^2/(2R)) (c = R - G_FW > 0, else R/2),
    R/2 = L - K: never above the Frank-Wolfe gap nor above L - K, at most half of G_FW once
    G_FW >= R (the lifted bound can only lower it further)."""
    from margsynth.inference.pgm.descent import _Iterate
    from margsynth.inference.pgm.measurement import compile_measurements
    from margsynth.inference.pgm.objective import Objective, _Evaluator

    dom, ms = _tiny_problem(kind)
    compiled = compile_measurements(dom, ms)
    bp = BeliefPropagation(build_junction_tree(dom, [m.attrs for m in compiled]))
    obj = Objective(bp, compiled, 100.0, "l2", kernel=False)
    rng = np.random.default_rng(0)
    seen_far = False
    for scale in (0.0, 0.5, 3.0, 10.0):
        s = _Iterate(_Evaluator(bp, obj), rng.normal(scale=scale, size=bp.size))
        fw = max(float(s.G @ s.p) + bp.max_product(bp.views(-s.G)), 0.0)
        half_r = s.val - obj.const - obj._sub_const
        g = s.gap()
        assert g <= fw + 1e-9 * max(1.0, fw)
        assert g <= half_r + 1e-9 * max(1.0, half_r)
        c = 2 * half_r - fw
        want = min(fw, half_r - c * c / (4 * half_r)) if c > 0 else half_r
        assert g <= want + 1e-12 * max(1.0, want)
        if fw >= 2 * half_r:
            seen_far = True
            assert g <= fw / 2 + 1e-9
    assert seen_far  # a far-from-optimal iterate, where the dual bound is the tighter one


@pytest.mark.parametrize("name", STRUCTURES)
@pytest.mark.parametrize("seed", [0, 1])
def test_max_marginals_match_brute_force_and_reparametrise(name, seed):
    """Max-sum calibration: every clique's table is the brute-force max-marginal, and the
    decomposition the lifted certificate uses, ``phi_R = n_R`` at the root and ``phi_C = n_C -
    n_{S_C}`` below it, sums to the function itself at every joint assignment."""
    dom = Domain.from_sizes(SIZES)
    tree = build_junction_tree(dom, STRUCTURES[name])
    bp = BeliefPropagation(tree)
    rng = np.random.default_rng(seed)
    theta = [rng.normal(scale=2.0, size=s) for s in bp.shapes]
    mm = bp.max_marginals(theta)
    want = [np.full(s, -np.inf) for s in bp.shapes]
    total = {}
    for x in itertools.product(*(range(dom[a].size) for a in dom.names)):
        xd = dict(zip(dom.names, x))
        v = sum(t[tuple(xd[a] for a in c)] for c, t in zip(tree.cliques, theta))
        total[x] = v
        for w, c in zip(want, tree.cliques):
            i = tuple(xd[a] for a in c)
            w[i] = max(w[i], v)
    for got, w in zip(mm, want):
        np.testing.assert_allclose(got, w, rtol=0, atol=1e-12)
    phi = bp.decompose(mm)
    for c, f in enumerate(phi):
        if c != bp.root:
            assert f.max() <= 1e-12 and f.max() >= -1e-12  # <= 0, with 0 attained
    for x, v in total.items():
        xd = dict(zip(dom.names, x))
        assert sum(f[tuple(xd[a] for a in c)] for c, f in zip(tree.cliques, phi)) == pytest.approx(v, abs=1e-9)


def _degenerate_problem(seed: int):
    """A random problem whose optimum lies on a face of the polytope: few records, loud noise
    (many noisy counts negative), every 1-way marginal and a random structure's pairs
    measured, sometimes an unmeasured 3-way clique (sub-clique terms) or a matrix query."""
    from margsynth.inference.pgm import Measurement
    from tests.test_pgm_estimation import sample_data

    rng = np.random.default_rng(100 + seed)
    dom = Domain.from_sizes({"a": 2, "b": 3, "c": 2, "d": 3})
    names = list(STRUCTURES)
    pairs = [c for c in STRUCTURES[names[seed % len(names)]] if set(c) <= set(dom.names)] or [("a", "b")]
    data = sample_data(dom, 40, seed=seed)
    sigma = float(rng.choice([2.0, 4.0, 8.0]))
    ms = []
    for c in [(a,) for a in dom.names] + pairs:
        truth = data.marginal(c).ravel().astype(float)
        ms.append(Measurement(c, None, truth + rng.normal(0, sigma, truth.size), sigma))
    if seed % 3 == 1:
        truth = data.marginal(("b", "c")).ravel().astype(float)
        Q = np.vstack([np.ones(truth.size), rng.integers(0, 2, size=(3, truth.size))])
        ms.append(Measurement(("b", "c"), sp.csr_matrix(Q), Q @ truth + rng.normal(0, sigma, 4), sigma))
    extra = [("a", "b", "c")] if seed % 2 else []
    return dom, ms, extra


@pytest.mark.parametrize("seed", range(12))
def test_lifted_certificate_is_a_valid_bound_that_closes(seed):
    """``L - gap <= L*`` at every iteration count on degenerate problems (``L*`` from the
    independent full-joint solver), and the certificate closes where the Frank–Wolfe gap
    alone stays far from 0."""
    from margsynth.inference.pgm.descent import _Iterate
    from margsynth.inference.pgm.measurement import compile_measurements
    from margsynth.inference.pgm.objective import Objective, _Evaluator

    dom, ms, extra = _degenerate_problem(seed)
    total = 40.0
    ref = _full_joint_reference(dom, ms, total)
    for iters in (0, 2, 10, 60, 400, 4000):
        model = estimate(dom, ms, iters=iters, total=total, extra_cliques=extra)
        L, G = model.stats["loss"], model.stats["gap"]
        assert G >= 0
        assert L - G <= ref + 1e-8 * max(1.0, ref), f"iters={iters}: L={L}, gap={G}, L*<={ref}"
    assert G <= 1e-5 * L  # 4000 iterations: certified to 1e-5
    # the Frank-Wolfe gap of the same final iterate, for comparison
    compiled = compile_measurements(dom, ms)
    bp = BeliefPropagation(model.tree)
    s = _Iterate(_Evaluator(bp, Objective(bp, compiled, total, "l2", kernel=False)), np.concatenate(
        [t.ravel() for t in model.theta]))  # fmt: skip
    fw = float(s.G @ s.p) + bp.max_product(bp.views(-s.G))
    assert s.gap() == pytest.approx(G, rel=1e-6, abs=1e-9)
    assert s.gap() <= fw + 1e-12


def test_the_lift_is_what_closes_the_certificate_on_degenerate_problems():
    """Across the degenerate problems, the Frank–Wolfe gap of the final iterate stays orders
    of magnitude above the lifted certificate on most of them."""
    from margsynth.inference.pgm.descent import _Iterate
    from margsynth.inference.pgm.measurement import compile_measurements
    from margsynth.inference.pgm.objective import Objective, _Evaluator

    ratios = []
    for seed in range(12):
        dom, ms, extra = _degenerate_problem(seed)
        model = estimate(dom, ms, iters=4000, total=40.0, extra_cliques=extra)
        bp = BeliefPropagation(model.tree)
        obj = Objective(bp, compile_measurements(dom, ms), 40.0, "l2", kernel=False)
        s = _Iterate(_Evaluator(bp, obj), np.concatenate([t.ravel() for t in model.theta]))
        fw = float(s.G @ s.p) + bp.max_product(bp.views(-s.G))
        ratios.append(fw / max(model.stats["gap"], 1e-300))
    assert sum(r > 100 for r in ratios) >= 6, ratios


def test_pgm_generator_gap_tol_is_a_certified_stop():
    """``PGMGenerator(gap_tol=...)`` (and the preset route ``-p gap_tol=...``) stops the final
    fit once the certificate is met, earlier than its ``iters``."""
    from margsynth.mechanisms.generators import PGMGenerator
    from margsynth.mechanisms.registry import create
    from tests.test_pgm_estimation import sample_data

    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    data = sample_data(dom, 400, seed=1)
    full = create("mst", iters=3000).run(data, 1.0, 1e-6, np.random.default_rng(0)).extras["estimation"]
    mech = create("mst", generator=PGMGenerator(iters=3000, gap_tol=1e-3))
    est = mech.run(data, 1.0, 1e-6, np.random.default_rng(0)).extras["estimation"]
    assert est["iterations"] < full["iterations"] == 3000
    assert est["gap"] <= 1e-3 * est["loss"]
    assert create("privsyn-pgm", gap_tol=1e-3).generator.gap_tol == 1e-3


@pytest.mark.parametrize("name", PGM_BASED)
def test_every_pgm_mechanism_can_fit_its_final_model_exactly(name):
    """``-p method=interior_point`` (routed to the mechanism's ``PGMGenerator``) makes the final
    fit the optimum, certified within ``1e-3 L`` (the target the descent misses on AIM's
    models), reported with its method, the sidecar's ``generator`` naming it."""
    descent = _small_run(name)
    res = _small_run(name, method="interior_point")
    est = res.extras["estimation"]
    assert est["method"] == "interior_point" and est["iterations"] >= 1
    assert 0 <= est["gap"] <= 1e-3 * est["loss"]
    assert est["loss"] <= descent.extras["estimation"]["loss"] + 1e-3 * est["loss"]
    assert res.sidecar()["estimation"] == est
    assert res.sidecar()["parameters"]["generator"]["method"] == "interior_point"
    assert res.epsilon == descent.epsilon <= 1.0  # the same privacy accounting: post-processing only
    assert res.sidecar()["ledger"] == descent.sidecar()["ledger"]


def test_lift_batches_do_not_change_the_certificate(monkeypatch):
    """The lifts are computed in batches of ``LIFT_BATCH`` cells (bounded memory on large
    models); a batch per term gives the same certificate as one batch for all."""
    import margsynth.inference.pgm.certificate as cert

    for seed in (1, 2, 5):
        dom, ms, extra = _degenerate_problem(seed)
        whole = estimate(dom, ms, iters=60, total=40.0, extra_cliques=extra).stats["gap"]
        monkeypatch.setattr(cert, "LIFT_BATCH", 1)
        one_by_one = estimate(dom, ms, iters=60, total=40.0, extra_cliques=extra).stats["gap"]
        monkeypatch.undo()
        assert one_by_one == pytest.approx(whole, rel=1e-12, abs=1e-12)


def _adaptive_problem(seed: int):
    """A degenerate problem whose pairs are measured through AGM's adaptive query matrices
    (identity rows on some cells, the others covered by one aggregate row per parent
    grouping, entries 1/sqrt(2)), as the adaptive-granularity mechanism measures them."""
    from margsynth.inference.pgm import Measurement
    from margsynth.mechanisms.adagrid import adaptive_query
    from tests.test_pgm_estimation import sample_data

    rng = np.random.default_rng(300 + seed)
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    data = sample_data(dom, 40, seed=seed)
    sigma = float(rng.choice([2.0, 4.0, 8.0]))
    ms = []
    for c in [(a,) for a in dom.names]:
        truth = data.marginal(c).ravel().astype(float)
        ms.append(Measurement(c, None, truth + rng.normal(0, sigma, truth.size), sigma))
    for c in [("a", "b"), ("b", "c"), ("c", "d")]:
        shape = tuple(dom[x].size for x in c)
        masks = [rng.random(shape[1]) < 0.5, rng.random(shape[0]) < 0.5]  # parents dropping axis 0, axis 1
        q = adaptive_query(shape, masks, c).matrix
        truth = data.marginal(c).ravel().astype(float)
        ms.append(Measurement(c, q, q @ truth + rng.normal(0, sigma, q.shape[0]), sigma))
    return dom, ms


def test_adaptive_queries_lift_along_a_partition_of_their_rows():
    """AGM's query matrices hold partitions of the cells by rows of equal entries (the
    identity rows and one grouping of aggregate rows): ``_row_partitions`` finds one per
    grouping."""
    from margsynth.inference.pgm.objective import _row_partitions
    from margsynth.mechanisms.adagrid import adaptive_query

    rng = np.random.default_rng(0)
    for _ in range(20):
        shape = tuple(int(x) for x in rng.integers(2, 6, size=2))
        masks = [rng.random(shape[1]) < 0.5, rng.random(shape[0]) < 0.5]
        aq = adaptive_query(shape, masks)
        q = aq.matrix * 3.0
        parts = _row_partitions(q)
        assert len(parts) == (2 if aq.n_aggregate else 1)
        for order, starts, inv in parts:
            assert np.array_equal(np.sort(order), np.arange(q.shape[1]))  # every cell exactly once
            assert starts.size == inv.size
            assert np.all(np.isin(np.round(inv, 12), np.round([1 / 9.0, 2 / 9.0], 12)))  # q_r = 3 or 3/sqrt(2)
    # rows of unequal entries, or rows that cannot cover every column: no partition
    assert _row_partitions(sp.csr_matrix(np.array([[1.0, 2.0]]))) == []
    assert _row_partitions(sp.csr_matrix(np.array([[1.0, 1.0, 0.0]]))) == []


@pytest.mark.parametrize("seed", range(8))
def test_partition_lift_is_a_valid_bound_and_tighter(seed, monkeypatch):
    """``L - gap <= L*`` (independent full-joint solver) at every iteration count with the
    adaptive queries' partition lift, and the certificate is never looser than without it."""
    import margsynth.inference.pgm.objective as objective

    dom, ms = _adaptive_problem(seed)
    total = 40.0
    ref = _full_joint_reference(dom, ms, total)
    gaps = {}
    for iters in (0, 10, 100, 1000):
        model = estimate(dom, ms, iters=iters, total=total)
        L, G = model.stats["loss"], model.stats["gap"]
        assert G >= 0
        assert L - G <= ref + 1e-8 * max(1.0, ref), f"iters={iters}: L={L}, gap={G}, L*<={ref}"
        gaps[iters] = G
    monkeypatch.setattr(objective, "_row_partitions", lambda Q: [])
    for iters, g in gaps.items():
        assert g <= estimate(dom, ms, iters=iters, total=total).stats["gap"] * (1 + 1e-9) + 1e-12
