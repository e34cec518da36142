"""The compiled Private-PGM objective (Eq. 4.1/4.2 of McKenna, Miklau & Sheldon, "Winning
the NIST Contest", JPC 2021, arXiv:2108.04978) against a plain computation.

:class:`~margsynth.inference.pgm.objective.Objective` folds the identity measurements:
those over a whole junction-tree clique into per-cell vectors ``A``/``B``, those over a
strict subset of a clique into one sparse 0/1 matrix ``S`` (``ps = S p``, ``G += S^T g``),
repeated attribute sets into one precision-weighted term. Here its value and gradient are
checked, on arbitrary (not necessarily consistent) clique tables ``p``, against

* a dense computation, one measurement at a time: ``mu_m`` summed from its clique's table,
  ``r = (N Q_m mu_m - y_m) / sigma_m``, ``0.5 ||r||^2`` (L2) or ``||r||_1`` (L1), and the
  gradient ``(N / sigma_m) Q_m^T r`` (L2; ``sign(r)`` for L1) broadcast over the clique;
* central finite differences of the value (exact up to rounding for the quadratic L2 loss).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from margsynth import Domain
from margsynth.inference.pgm import BeliefPropagation, Measurement, build_junction_tree, kernels
from margsynth.inference.pgm.factor import align
from margsynth.inference.pgm.measurement import compile_measurements
from margsynth.inference.pgm.objective import Objective

SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3, "f": 2}
STRUCTURE = [("a", "b", "c"), ("c", "d", "e"), ("e", "f")]


def _problem(seed: int):
    """Measurements covering every branch of the objective: whole-clique identity terms,
    sub-clique identity terms (the sparse folded matrix), an attribute set measured
    twice with different noise, a scaled identity, a sparse and a callable query."""
    dom = Domain.from_sizes(SIZES)
    rng = np.random.default_rng(seed)

    def y(attrs, rows=None):
        n = rows if rows is not None else int(np.prod([SIZES[a] for a in attrs]))
        return rng.normal(30.0, 10.0, n)

    W = rng.normal(size=(3, SIZES["d"] * SIZES["e"]))
    Q = sp.csr_matrix(rng.integers(0, 2, size=(5, SIZES["b"] * SIZES["c"])).astype(float))
    ms = [
        Measurement(("a", "b", "c"), None, y(("a", "b", "c")), 4.0),  # a whole clique
        Measurement(("e", "f"), None, y(("e", "f")), 2.0),  # a whole clique
        Measurement(("a",), None, y(("a",)), 1.5),  # inside a clique
        Measurement(("b",), None, y(("b",)), 3.0),
        Measurement(("b",), None, y(("b",)), 1.0),  # the same attribute set again
        Measurement(("c", "a"), None, y(("c", "a")), 2.5),  # axes not in domain order
        Measurement(("d",), sp.identity(2, format="csr") * 2.0, y(("d",)), 2.0),  # scaled identity
        Measurement(("f",), None, y(("f",)), 5.0),
        Measurement(("b", "c"), Q, y(("b", "c"), 5), 3.0),  # sparse query
        Measurement(("d", "e"), lambda v: W @ v, y(("d", "e"), 3), 2.0),  # callable query
    ]
    return dom, ms


def _setup(seed: int, loss: str, total: float = 250.0, kernel: bool = True):
    dom, ms = _problem(seed)
    compiled = compile_measurements(dom, ms)
    tree = build_junction_tree(dom, [m.attrs for m in compiled] + STRUCTURE)
    bp = BeliefPropagation(tree)
    obj = Objective(bp, compiled, total, loss, kernel=kernel)
    return dom, compiled, tree, bp, obj


def _dense(compiled, tree, bp, total, p_flat, loss, sizes=SIZES):
    """Value and gradient, one measurement at a time, no folding."""
    p = bp.views(p_flat)
    G_flat = np.zeros(bp.size)
    G = bp.views(G_flat)
    val = 0.0
    for m in compiled:
        c = tree.find_clique(m.attrs)
        cl = tree.cliques[c]
        mu = np.asarray(align(p[c], cl, m.attrs, reduce=True)).ravel()
        Q = sp.identity(mu.size, format="csr") if m.kind == "identity" else m.Q
        r = (total * (Q @ mu) - m.y) / m.sigma
        if loss == "l2":
            val += 0.5 * float(r @ r)
            g = (total / m.sigma) * (Q.T @ r)
        else:
            val += float(np.abs(r).sum())
            g = (total / m.sigma) * (Q.T @ np.sign(r))
        shape = tuple(sizes[a] for a in m.attrs)
        G[c] += align(np.asarray(g).reshape(shape), m.attrs, cl)
    return val, G_flat


def _evaluate(obj, bp, p_flat):
    G_flat = np.zeros(bp.size)
    val = obj.value_and_grad(p_flat, bp.views(p_flat), G_flat, bp.views(G_flat))
    return val, G_flat


def test_the_problem_exercises_every_branch():
    _, _, _, bp, obj = _setup(0, "l2", kernel=False)  # the numpy/scipy path (the compiled one: test_pgm_kernels)
    assert obj.has_full  # whole-clique identity terms (A, B)
    assert obj._S is not None and obj._S.shape == (obj._ps.size, bp.size)  # sub-clique terms, folded
    assert len(obj._folded) >= 4  # a, b (twice, one term), c×a, d (scaled), f
    assert len(obj.subs) == 2  # the sparse and the callable query stay matrix terms
    # the folded matrix has exactly one 1 per (term, clique cell): each cell of a clique
    # feeds one cell of each sub-clique marginal measured in it
    S = obj._S.tocsr()
    assert np.all(S.data == 1.0)
    start = 0
    for clique, _axes, ps, _g in obj._folded:  # term by term: each cell of its clique feeds one cell
        block = S[start : start + ps.size, :]
        start += ps.size
        counts = np.asarray(block.sum(axis=0)).ravel()
        inside = np.zeros(bp.size, dtype=bool)
        inside[bp.offsets[clique] : bp.offsets[clique + 1]] = True
        assert np.all(counts[inside] == 1.0) and np.all(counts[~inside] == 0.0)
    assert start == obj._ps.size


@pytest.mark.parametrize("kernel", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["l2", "l1"])
def test_value_and_gradient_match_the_dense_computation(seed, loss, kernel):
    dom, compiled, tree, bp, obj = _setup(seed, loss, kernel=kernel)
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        p_flat = rng.random(bp.size) / 10.0  # arbitrary tables: the objective is defined on any p
        want_v, want_G = _dense(compiled, tree, bp, 250.0, p_flat, loss)
        got_v, got_G = _evaluate(obj, bp, p_flat)
        assert got_v == pytest.approx(want_v, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(got_G, want_G, rtol=1e-11, atol=1e-9 * np.abs(want_G).max())


@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_matches_finite_differences(seed):
    """The L2 loss is quadratic in ``p``: the central difference ``(L(p + h v) - L(p - h v)) / 2h``
    equals ``<grad, v>`` up to rounding, for coordinate and random directions."""
    dom, compiled, tree, bp, obj = _setup(seed, "l2")
    rng = np.random.default_rng(200 + seed)
    p_flat = rng.random(bp.size) / 10.0
    v0, G = _evaluate(obj, bp, p_flat)
    h = 1e-4
    dirs = [np.eye(bp.size)[i] for i in rng.choice(bp.size, size=25, replace=False)]
    dirs += [rng.normal(size=bp.size) for _ in range(5)]
    for v in dirs:
        up, _ = _evaluate(obj, bp, p_flat + h * v)
        down, _ = _evaluate(obj, bp, p_flat - h * v)
        fd = (up - down) / (2 * h)
        assert fd == pytest.approx(float(G @ v), rel=1e-6, abs=1e-6 * np.abs(G).max())
    # and the second difference is the quadratic form: L(p + h v) = L + h <G, v> + h^2/2 v'Hv exactly
    v = dirs[-1]
    up, _ = _evaluate(obj, bp, p_flat + h * v)
    up2, _ = _evaluate(obj, bp, p_flat + 2 * h * v)
    curv = (up2 - 2 * up + v0) / h**2  # v'Hv
    assert curv >= -1e-6 * abs(v0)  # convex


def test_objective_is_independent_of_the_junction_tree():
    """The same measurements on a bigger junction tree (extra unmeasured cliques, so other
    terms become sub-clique terms) give the same value for the same joint distribution."""
    dom, ms = _problem(3)
    compiled = compile_measurements(dom, ms)
    rng = np.random.default_rng(7)
    joint = rng.random(tuple(SIZES.values()))
    joint /= joint.sum()
    vals = []
    for extra in (STRUCTURE, [("a", "b", "c", "d"), ("c", "d", "e", "f")], [tuple(SIZES)]):
        tree = build_junction_tree(dom, [m.attrs for m in compiled] + list(extra))
        bp = BeliefPropagation(tree)
        obj = Objective(bp, compiled, 250.0, "l2")
        p_flat = np.concatenate(
            [np.asarray(align(joint, tuple(SIZES), cl, reduce=True)).ravel() for cl in tree.cliques]
        )
        vals.append(_evaluate(obj, bp, p_flat)[0])
    assert vals[1] == pytest.approx(vals[0], rel=1e-12)
    assert vals[2] == pytest.approx(vals[0], rel=1e-12)


@pytest.mark.parametrize("kernel", [True, False])
def test_shared_intermediate_sums_match_the_dense_computation(kernel):
    """One six-attribute clique holding every 1-, 2- and 3-way measurement of its
    attributes: the compiled objective sums them through shared intermediate tables
    (:func:`~margsynth.inference.pgm.kernels.marginal_plan`); value and gradient must be
    those of one measurement at a time."""
    if kernel and not kernels.AVAILABLE:
        pytest.skip("numba not available")
    sizes = {"p": 3, "q": 4, "r": 2, "s": 5, "t": 3, "u": 2}
    dom = Domain.from_sizes(sizes)
    rng = np.random.default_rng(8)
    ms = []
    for k in (1, 2, 3):
        for attrs in itertools.combinations(dom.names, k):
            n = int(np.prod([sizes[a] for a in attrs]))
            ms.append(Measurement(attrs, None, rng.normal(40.0, 10.0, n), float(rng.uniform(1, 4))))
    compiled = compile_measurements(dom, ms)
    tree = build_junction_tree(dom, [m.attrs for m in compiled] + [tuple(dom.names)])
    assert len(tree.cliques) == 1
    bp = BeliefPropagation(tree)
    obj = Objective(bp, compiled, 300.0, "l2", kernel=kernel)
    if kernel:
        assert np.any(obj._kernel.terms[:, 10] == 1)  # some terms are summed from intermediates
    for seed in range(3):
        p_flat = np.random.default_rng(seed).dirichlet(np.ones(bp.size))
        val, G = _evaluate(obj, bp, p_flat)
        want_val, want_G = _dense(compiled, tree, bp, 300.0, p_flat, "l2", sizes)
        assert val == pytest.approx(want_val, rel=1e-12)
        np.testing.assert_allclose(G, want_G, rtol=1e-10, atol=1e-9 * np.abs(want_G).max())


def test_marginal_plan_serves_every_term_from_a_superset_and_never_costs_more():
    rng = np.random.default_rng(4)
    for _ in range(200):
        d = int(rng.integers(2, 7))
        sizes = [int(x) for x in rng.integers(1, 9, d)]
        full = frozenset(range(d))
        kept = []
        for _ in range(int(rng.integers(1, 12))):
            k = frozenset(int(i) for i in np.flatnonzero(rng.random(d) < 0.5))
            if k and k != full and k not in kept:
                kept.append(k)
        if not kept:
            continue
        plan = kernels.marginal_plan(sizes, kept)
        assert sorted(t for _, _, t in plan if t is not None) == list(range(len(kept)))
        cost = 0
        for i, (axes, src, t) in enumerate(plan):
            source = full if src < 0 else plan[src][0]
            assert src < i and axes < source
            if t is not None:
                assert axes == kept[t]
            cost += int(np.prod([sizes[j] for j in source]))
        assert cost <= len(kept) * int(np.prod(sizes))  # never worse than one pass per term
