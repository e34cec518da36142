"""The compiled (numba) kernels of Private-PGM's hot loop against the numpy reference.

:mod:`margsynth.inference.pgm.kernels` runs the sum-product calibration of
:class:`~margsynth.inference.pgm.BeliefPropagation` (Koller & Friedman 2009, §10.2-10.3)
and the sub-clique terms of the L2 objective (Eq. 4.2 of McKenna, Miklau & Sheldon,
"Winning the NIST Contest", JPC 2021, arXiv:2108.04978) as loops over flat arrays. They
must compute the same numbers as the numpy schedule up to the order of additions:

* calibration on random junction trees (forests, single cliques, empty separators,
  potentials spanning hundreds of nats so that the floors act): marginals and ``log Z``
  to 1e-12 relative;
* the objective (value and gradient) on problems exercising identity terms over whole
  and partial cliques and matrix terms;
* a whole fit: loss histories of ``estimate`` on both paths agree to 1e-9.
"""

from __future__ import annotations

import numpy as np
import pytest

from margsynth import Domain
from margsynth.inference.pgm import BeliefPropagation, build_junction_tree, estimate, kernels
from margsynth.inference.pgm.estimation import Objective
from margsynth.inference.pgm.measurement import compile_measurements

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")


def _random_tree(rng):
    k = int(rng.integers(1, 9))
    names = [f"v{i}" for i in range(k)]
    dom = Domain.from_sizes(dict(zip(names, rng.integers(1, 6, size=k).tolist())))
    cliques = []
    for _ in range(int(rng.integers(1, 7))):
        size = int(rng.integers(1, min(4, k) + 1))
        pick = set(rng.choice(names, size=size, replace=False).tolist())
        cliques.append(tuple(a for a in names if a in pick))
    return dom, build_junction_tree(dom, cliques)


@pytest.mark.parametrize("seed", range(40))
def test_calibration_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    dom, tree = _random_tree(rng)
    bp = BeliefPropagation(tree)
    scale = [0.1, 3.0, 300.0][seed % 3]  # 300 nats: the LOG_FLOOR clamp is exercised
    theta = rng.normal(size=bp.size) * scale
    got, want = np.empty(bp.size), np.empty(bp.size)
    z_got = bp.calibrate_flat(theta, got)
    z_want = bp.calibrate_flat(theta, want, compiled=False)
    assert z_got == pytest.approx(z_want, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    # marginals are distributions and agree on shared separators (a calibrated tree)
    views = bp.views(got)
    for c in range(len(tree.cliques)):
        assert views[c].sum() == pytest.approx(1.0, abs=1e-12)


def _product(shape, factors, axes, scale):
    prod = np.full(shape, float(scale))
    for f, ax in zip(factors, axes):
        full = [1] * len(shape)
        for a in ax:
            full[a] = shape[a]
        prod = prod * f.reshape(full)
    return prod


@pytest.mark.parametrize("small", [0, 10**9])  # compiled, numpy
def test_l1_product_is_the_l1_distance_to_the_outer_product(monkeypatch, small):
    monkeypatch.setattr(kernels, "L1_SMALL", small)
    rng = np.random.default_rng(5)
    cases = [
        ((7,), [[0]]),
        ((4, 6), [[0, 1]]),
        ((4, 6), [[1], [0]]),
        ((5, 7, 3), [[0, 2], [1]]),
        ((3, 4, 5, 6), [[1, 3], [0, 2]]),
        ((2, 3, 4, 5, 2), [[0], [1, 4], [2, 3]]),
        ((13, 11, 9), [[0], [1], [2]]),
        # trailing axes of the last axis's factor are merged into one inner loop
        ((5, 4, 3, 2), [[0, 1, 2, 3]]),
        ((5, 4, 3, 2), [[0], [1, 2, 3]]),
        ((5, 4, 3, 2), [[1], [0, 2, 3]]),
        ((3, 4, 5, 2), [[0, 2], [1, 3]]),
        ((6, 2, 2), [[0, 1], [2]]),
    ]
    for shape, axes in cases:
        for dtype in (np.int32, np.float64):
            y = rng.integers(0, 40, size=shape).astype(dtype)
            factors = [rng.random(tuple(shape[a] for a in ax)) for ax in axes]
            want = float(np.abs(y - _product(shape, factors, axes, 7.5)).sum())
            y_before, f_before = y.copy(), [f.copy() for f in factors]
            got = kernels.l1_product(y, factors, axes, 7.5)
            assert got == pytest.approx(want, rel=1e-12)
            assert np.array_equal(y, y_before) and all(np.array_equal(a, b) for a, b in zip(factors, f_before))


def test_l1_product_rejects_axes_that_do_not_partition_the_table():
    y = np.zeros((2, 3))
    with pytest.raises(ValueError, match="every axis"):
        kernels.l1_product(y, [np.ones(2)], [[0]])
    with pytest.raises(ValueError, match="overlap"):
        kernels.l1_product(y, [np.ones((2, 3)), np.ones(3)], [[0, 1], [1]])
    with pytest.raises(ValueError, match="does not match"):
        kernels.l1_product(y, [np.ones(3), np.ones(2)], [[0], [1]])


def test_small_fits_stay_on_numpy(monkeypatch):
    """Below ``WORTH`` (iterations x cells) a fit does not touch numba at all, unless this
    process has loaded the kernels already (then small fits run compiled too)."""
    dom, ms = _objective_problem(4)
    calls = []
    monkeypatch.setattr(kernels, "_JIT", {})  # a process that has not loaded them
    monkeypatch.setattr(kernels, "_jit", lambda f: calls.append(f) or f)
    estimate(dom, ms, iters=10)
    assert calls == []
    monkeypatch.setattr(kernels, "WORTH", 0)
    estimate(dom, ms, iters=10)
    assert {f.__name__ for f in calls} == {"_calibrate", "_l2_terms"}
    monkeypatch.setattr(kernels, "WORTH", 2_000_000)
    kernels._JIT["_calibrate"] = object()  # loaded: the next small fit runs compiled
    calls.clear()
    estimate(dom, ms, iters=10)  # (and so does its triangulation, _eliminate)
    assert {"_calibrate", "_l2_terms"} <= {f.__name__ for f in calls}


def _objective_problem(seed):
    from tests.test_pgm_objective import _problem  # the problem covering every objective branch

    return _problem(seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_matches_numpy(seed, monkeypatch):
    dom, ms = _objective_problem(seed)
    compiled = compile_measurements(dom, ms)
    tree = build_junction_tree(dom, [m.attrs for m in compiled] + [("a", "b", "c"), ("c", "d", "e"), ("e", "f")])
    bp = BeliefPropagation(tree)
    fast = Objective(bp, compiled, 250.0, "l2")
    assert fast._kernel is not None
    slow = Objective(bp, compiled, 250.0, "l2", kernel=False)
    assert slow._kernel is None
    rng = np.random.default_rng(seed)
    for _ in range(3):
        p = rng.random(bp.size)
        G1, G2 = np.zeros(bp.size), np.zeros(bp.size)
        v1 = fast.value_and_grad(p, bp.views(p), G1, bp.views(G1))
        v2 = slow.value_and_grad(p, bp.views(p), G2, bp.views(G2))
        assert v1 == pytest.approx(v2, rel=1e-12)
        np.testing.assert_allclose(G1, G2, rtol=1e-12, atol=1e-12 * np.abs(G2).max())


def test_fit_matches_numpy(monkeypatch):
    dom, ms = _objective_problem(4)
    monkeypatch.setattr(kernels, "WORTH", 0)  # a small fit: force the kernels
    a = estimate(dom, ms, iters=200)
    monkeypatch.setattr(kernels, "AVAILABLE", False)
    b = estimate(dom, ms, iters=200)
    np.testing.assert_allclose(a.stats["loss_history"], b.stats["loss_history"], rtol=1e-9)
    assert a.stats["evaluations"] == b.stats["evaluations"]
    np.testing.assert_allclose(a.clique_marginals()[0], b.clique_marginals()[0], rtol=1e-7, atol=1e-12)
