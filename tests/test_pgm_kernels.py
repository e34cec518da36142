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
from margsynth.inference.pgm.measurement import compile_measurements
from margsynth.inference.pgm.objective import Objective

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


def test_vectorised_exp_is_within_two_ulp_of_the_c_library():
    # calibration's exponentials: arguments in [LOG_FLOOR, 0] (shifted by the slice maximum
    # and clamped), range reduction + degree-13 polynomial + exponent bits
    from margsynth.inference.pgm.inference import LOG_FLOOR

    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            [0.0, -0.0, LOG_FLOOR, -np.log(2) / 2, -np.log(2), -1e-300, -5e-324],
            np.linspace(LOG_FLOOR, 0.0, 200_001),
            -rng.exponential(3.0, 100_000).clip(max=-LOG_FLOOR),
            -rng.random(100_000) * 1e-6,
        ]
    )
    e = np.concatenate([[7.0], x, [7.0]])  # an offset slice: the guards stay untouched
    kernels._jit(kernels._calibrate)  # compiles the helper too
    kernels._exp_cells(e, 1, x.size, np.empty(x.size))
    assert e[0] == 7.0 and e[-1] == 7.0
    want = np.exp(x)
    assert np.max(np.abs(e[1:-1] - want) / want) <= 2 * np.finfo(float).eps
    assert e[1] == 1.0 and np.all(e[1:-1] > 0)


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
    assert {f.__name__ for f in calls} == {"_calibrate", "_l2_terms", "_extrapolate", "_mirror_step"}
    monkeypatch.setattr(kernels, "WORTH", 2_000_000)
    kernels._JIT["_calibrate"] = object()  # loaded: the next small fit runs compiled
    calls.clear()
    estimate(dom, ms, iters=10)  # (and so does its triangulation, _triangulate)
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


def test_sub_map_equals_ravel_multi_index():
    """``sub_map`` (strides by broadcasting) gives numpy's ``ravel_multi_index`` of the kept
    coordinates, for any source and kept axes (including none)."""
    from margsynth.inference.pgm.kernels import sub_map

    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        sizes = [int(x) for x in rng.integers(1, 6, n)]
        src = frozenset(int(i) for i in np.flatnonzero(rng.random(n) < 0.7)) or frozenset([0])
        keep = frozenset(i for i in src if rng.random() < 0.5)
        s = sorted(src)
        idx = np.indices([sizes[i] for i in s]).reshape(len(s), -1)
        k = sorted(keep)
        want = (
            np.ravel_multi_index([idx[s.index(i)] for i in k], [sizes[i] for i in k])
            if k
            else np.zeros(idx.shape[1], dtype=np.int64)
        )
        got = sub_map(sizes, src, keep)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def test_step_kernels_equal_numpy_bit_for_bit():
    """The accelerated descent's vector updates in one pass each give numpy's passes exactly
    (same roundings, no fused multiply-add), so compiled and numpy fits take the same steps."""
    from margsynth.inference.pgm import kernels

    if not kernels.AVAILABLE:
        pytest.skip("numba not available")
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 4097):
        x, z, g, y = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n) for _ in range(4))
        for beta in (0.0, 0.25, 0.9973):
            want = np.subtract(x, z)
            want *= beta
            want += x
            got = np.empty(n)
            kernels.extrapolate(x, z, beta, got)
            assert np.array_equal(got.view(np.int64), want.view(np.int64))
        for eta in (1e-7, 0.5, 3.0e4):
            want = np.multiply(g, -eta)
            want += y
            got = np.empty(n)
            kernels.mirror_step(g, eta, y, got)
            assert np.array_equal(got.view(np.int64), want.view(np.int64))
