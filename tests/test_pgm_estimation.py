"""Private-PGM estimation: recovery, optimality, options.

* noise-free consistent measurements are recovered (<= 1e-3 relative L1) on
  tree, cycle, 4-clique, disconnected and singleton-attribute structures;
* both estimators (plain and accelerated mirror descent) reach at least the
  loss of a second, independent solver (exact active-set NNLS over the *full
  joint*) on a tiny model — for identity,
  sparse and callable queries;
* warm start, total estimation, L1 loss, callback/early stop, progress bar.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls

from margsynth import Dataset, Domain
from margsynth.inference.pgm import Factor, GraphicalModel, Measurement, estimate, evaluate_loss

SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}
STRUCTURES = {
    "tree": [("a", "b"), ("b", "c"), ("b", "d"), ("d", "e")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")],
    "four_clique": [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")],
    "disconnected": [("a", "b"), ("c", "d")],
    "singletons": [("a",), ("b", "c"), ("e",)],
}


def sample_data(dom: Domain, n: int, seed: int) -> Dataset:
    """Records from a random model with every pair dependent (so marginals are informative)."""
    rng = np.random.default_rng(seed)
    names = dom.names
    factors = [
        Factor((a, b), rng.normal(size=(dom[a].size, dom[b].size))) for i, a in enumerate(names) for b in names[i + 1 :]
    ]
    return GraphicalModel.from_factors(dom, factors, total=n).synthetic_data(n, rng, method="sample")


def exact_measurements(data: Dataset, cliques) -> list[Measurement]:
    return [Measurement(c, None, data.marginal(c).ravel().astype(float), 1.0) for c in cliques]


@pytest.mark.parametrize("name", STRUCTURES)
def test_noise_free_measurements_are_recovered(name):
    dom = Domain.from_sizes(SIZES)
    data = sample_data(dom, 2000, seed=11)
    ms = exact_measurements(data, STRUCTURES[name])
    model = estimate(dom, ms, iters=3000)
    assert model.total == pytest.approx(2000.0)  # estimated from the measurements
    for c in STRUCTURES[name]:
        truth = data.marginal(c)
        rel = np.abs(model.project(c) - truth).sum() / truth.sum()
        assert rel <= 1e-3, f"{name} {c}: relative L1 {rel:.2e}"


def _full_joint_reference(dom: Domain, measurements, total: float) -> float:
    """Solve the same convex problem over the *full joint* with an independent exact method:
    min 0.5 sum ||(Q M p N - y)/sigma||^2 over the simplex, as active-set non-negative least
    squares (scipy.optimize.nnls) with the sum-to-one constraint as a heavily weighted row."""
    rows, rhs = [], []
    idx = np.indices(dom.shape).reshape(len(dom), -1)
    for m in measurements:
        # marginalisation matrix from the full joint onto m.clique (in the clique's order)
        cell = np.ravel_multi_index(tuple(idx[dom.index(a)] for a in m.clique), tuple(dom[a].size for a in m.clique))
        M = np.zeros((dom.size(m.clique), cell.size))
        M[cell, np.arange(cell.size)] = 1.0
        if m.query is None:
            Q = np.eye(M.shape[0])
        elif callable(m.query):
            Q = np.column_stack([m.query(e) for e in np.eye(M.shape[0])])
        else:
            Q = np.asarray(sp.csr_matrix(m.query).todense())
        rows.append(Q @ M * total / m.sigma)
        rhs.append(m.y / m.sigma)
    A, b = np.vstack(rows), np.concatenate(rhs)
    w = 1e5 * max(1.0, np.abs(A).max())
    p, _ = nnls(np.vstack([A, w * np.ones((1, A.shape[1]))]), np.concatenate([b, [w]]), maxiter=10_000)
    p = p / p.sum()
    r = A @ p - b
    return 0.5 * float(r @ r)


def _tiny_problem(kind: str):
    dom = Domain.from_sizes({"x": 2, "y": 3, "z": 2})
    rng = np.random.default_rng(4)
    data = sample_data(dom, 100, seed=5)
    ms = []
    for c in [("x", "y"), ("y", "z")]:
        truth = data.marginal(c).ravel().astype(float)
        if kind == "identity":
            ms.append(Measurement(c, None, truth + rng.normal(0, 3.0, truth.size), 3.0))
        elif kind == "sparse":
            # total + a random 0/1 aggregate query matrix
            Q = np.vstack([np.ones(truth.size), rng.integers(0, 2, size=(4, truth.size))])
            ms.append(Measurement(c, sp.csr_matrix(Q), Q @ truth + rng.normal(0, 2.0, Q.shape[0]), 2.0))
        else:
            W = rng.normal(size=(3, truth.size))
            ms.append(Measurement(c, lambda v, W=W: W @ v, W @ truth + rng.normal(0, 2.0, 3), 2.0))
    ms.append(Measurement(("z", "x"), None, data.marginal(("z", "x")).ravel() + rng.normal(0, 5.0, 4), 5.0))
    return dom, ms


@pytest.mark.parametrize(
    ("kind", "method", "iters"),
    [
        ("identity", "mirror_descent", 4000),
        ("identity", "accelerated", 1500),
        ("sparse", "accelerated", 1500),
        ("callable", "accelerated", 1500),
    ],
)
def test_estimator_reaches_the_reference_optimum(kind, method, iters):
    dom, ms = _tiny_problem(kind)
    total = 100.0
    model = estimate(dom, ms, iters=iters, total=total, method=method)
    ref = _full_joint_reference(dom, ms, total)
    ours = model.stats["loss"]
    assert ours == pytest.approx(evaluate_loss(model, ms), rel=1e-9, abs=1e-9)
    assert ours <= ref + 1e-6 * max(1.0, abs(ref)), f"{method} {ours} vs NNLS on the full joint {ref}"
    hist = model.stats["loss_history"]
    assert hist.size == iters and np.all(np.diff(hist) <= 1e-9 * np.abs(hist[:-1]) + 1e-12)  # monotone (Armijo)


def test_loss_definition_l2_and_l1():
    dom = Domain.from_sizes({"x": 2})
    m = Measurement(("x",), None, np.array([3.0, 5.0]), 2.0)
    model = GraphicalModel.from_factors(dom, [], total=10.0)  # uniform: (5, 5)
    assert evaluate_loss(model, [m]) == pytest.approx(0.5 * ((2 / 2) ** 2 + 0))
    assert evaluate_loss(model, [m], loss="l1") == pytest.approx(1.0)


def test_l1_loss_fits_and_is_robust_to_one_outlier_measurement():
    dom = Domain.from_sizes({"x": 3, "y": 2})
    data = sample_data(dom, 600, seed=2)
    truth = data.marginal(("x", "y")).ravel().astype(float)
    ms = [
        Measurement(("x", "y"), None, truth, 1.0),
        Measurement(("x", "y"), None, truth, 1.0),
        Measurement(("x", "y"), None, truth + np.array([300.0, 0, 0, 0, 0, 0]), 1.0),
    ]
    model = estimate(dom, ms, iters=3000, total=600.0, loss="l1")
    fit = model.project(("x", "y")).ravel()
    assert np.abs(fit - truth).sum() / 600.0 < 0.02  # the median-like L1 fit ignores the outlier
    l2 = estimate(dom, ms, iters=2000, total=600.0)
    assert np.abs(l2.project(("x", "y")).ravel() - truth).sum() > 100  # L2 averages it in


def test_total_is_estimated_by_inverse_variance_weighting():
    dom = Domain.from_sizes({"x": 2, "y": 2})
    ms = [
        Measurement(("x",), None, np.array([40.0, 60.0]), 1.0),  # total 100, variance 2
        Measurement(("y",), None, np.array([100.0, 100.0]), 10.0),
    ]  # total 200, variance 200
    model = estimate(dom, ms, iters=5)
    assert model.total == pytest.approx((100 / 2 + 200 / 200) / (1 / 2 + 1 / 200))
    assert model.stats["total_estimated"] is True
    assert estimate(dom, ms, iters=5, total=123.0).total == 123.0
    # a query that does not determine the total and no total given
    q = Measurement(("x",), np.array([[1.0, -1.0]]), np.array([3.0]), 1.0)
    with pytest.raises(ValueError, match="total"):
        estimate(dom, [q], iters=5)


def test_scaled_identity_matches_identity_form():
    """Algorithm 1's (w I, w M + noise, sigma) equals (I, M + noise/w, sigma/w)."""
    dom = Domain.from_sizes({"x": 3, "y": 2})
    rng = np.random.default_rng(0)
    y = rng.normal(50, 10, 6)
    w = 0.25
    a = estimate(dom, [Measurement(("x", "y"), w * sp.identity(6), w * y, 1.5)], iters=200, total=300.0)
    b = estimate(dom, [Measurement(("x", "y"), None, y, 1.5 / w)], iters=200, total=300.0)
    np.testing.assert_allclose(a.project(("x", "y")), b.project(("x", "y")), rtol=1e-10)


def test_measurement_axis_order_does_not_matter():
    dom = Domain.from_sizes({"x": 3, "y": 2})
    data = sample_data(dom, 500, seed=8)
    m1 = Measurement(("x", "y"), None, data.marginal(("x", "y")).ravel(), 1.0)
    m2 = Measurement(("y", "x"), None, data.marginal(("y", "x")).ravel(), 1.0)
    a = estimate(dom, [m1], iters=300)
    b = estimate(dom, [m2], iters=300)
    np.testing.assert_allclose(a.project(("y", "x")), b.project(("y", "x")), atol=1e-8)


def test_warm_start_continues_from_the_previous_model():
    dom = Domain.from_sizes(SIZES)
    data = sample_data(dom, 2000, seed=3)
    ms = exact_measurements(data, STRUCTURES["tree"])
    cold = estimate(dom, ms, iters=100)
    warm = estimate(dom, ms, iters=1, warm_start=cold)
    assert warm.stats["loss"] <= cold.stats["loss"] * (1 + 1e-12)
    # a new measurement whose clique changes the tree (AIM adds a clique)
    more = [*ms, *exact_measurements(data, [("a", "c", "e")])]
    warm2 = estimate(dom, more, iters=1, warm_start=cold)
    fresh = estimate(dom, more, iters=1)
    assert warm2.stats["loss"] < fresh.stats["loss"]
    # structure that cannot hold the old cliques: factorised warm start still valid
    other = estimate(dom, exact_measurements(data, [("a", "e"), ("c",)]), iters=1, warm_start=cold)
    assert np.isfinite(other.stats["loss"])


def test_callback_progress_and_early_stop(capsys):
    dom = Domain.from_sizes({"x": 3, "y": 2})
    ms = [Measurement(("x", "y"), None, np.arange(6.0) + 1, 1.0)]
    seen = []

    def cb(t, loss, step):
        seen.append((t, loss, step))
        return t == 9

    model = estimate(dom, ms, iters=1000, callback=cb, progress=True)
    assert [s[0] for s in seen] == list(range(10))
    assert model.stats["iterations"] == 10 and model.stats["loss_history"].size == 10
    assert all(s[2] > 0 for s in seen)
    assert "Private-PGM" in capsys.readouterr().err


def test_memory_limit_is_enforced_by_estimate():
    dom = Domain.from_sizes({f"x{i}": 10 for i in range(5)})
    ms = [Measurement(tuple(dom.names), None, np.zeros(10**5), 1.0)]
    with pytest.raises(ValueError, match="memory limit"):
        estimate(dom, ms, iters=1, total=1.0, memory_limit_mb=0.1)


def test_accelerated_beats_plain_mirror_descent_at_equal_iterations():
    dom = Domain.from_sizes(SIZES)
    data = sample_data(dom, 5000, seed=9)
    rng = np.random.default_rng(1)
    ms = [
        Measurement(c, None, data.marginal(c).ravel() + rng.normal(0, 20.0, dom.size(c)), 20.0)
        for c in STRUCTURES["cycle"]
    ]
    acc = estimate(dom, ms, iters=200)
    md = estimate(dom, ms, iters=200, method="mirror_descent")
    long = estimate(dom, ms, iters=3000)
    assert acc.stats["method"] == "accelerated" and md.stats["method"] == "mirror_descent"
    assert long.stats["loss"] <= acc.stats["loss"] <= md.stats["loss"]
    assert acc.stats["loss"] - long.stats["loss"] <= 0.5 * (md.stats["loss"] - long.stats["loss"])


def test_bad_iters_and_loss():
    dom = Domain.from_sizes({"x": 2})
    ms = [Measurement(("x",), None, np.ones(2), 1.0)]
    with pytest.raises(ValueError, match="iters"):
        estimate(dom, ms, iters=-1)
    with pytest.raises(ValueError, match="loss"):
        estimate(dom, ms, iters=1, loss="huber")
    with pytest.raises(ValueError, match="at least one measurement"):
        estimate(dom, [], iters=1)
    with pytest.raises(ValueError, match="method"):
        estimate(dom, ms, iters=1, method="adam")
    with pytest.raises(ValueError, match="step_size"):
        estimate(dom, ms, iters=1, step_size=-1.0)
    with pytest.raises(ValueError, match="warm_start"):
        estimate(dom, ms, iters=1, warm_start="model")


def test_extra_cliques_shape_the_model_and_the_size_estimate():
    from margsynth.inference.pgm import junction_tree_size

    dom = Domain.from_sizes(SIZES)
    data = sample_data(dom, 1000, seed=4)
    ms = exact_measurements(data, STRUCTURES["tree"])
    model = estimate(dom, ms, iters=5, extra_cliques=[("a", "c", "e")])
    assert model.tree.find_clique(("a", "c", "e")) is not None
    cells, mb = junction_tree_size(dom, [m.clique for m in ms] + [("a", "c", "e")])
    assert (cells, mb) == (model.tree.cells, model.size_mb)


def test_warm_start_with_zero_iterations_reproduces_the_model():
    dom = Domain.from_sizes(SIZES)
    data = sample_data(dom, 800, seed=6)
    ms = exact_measurements(data, STRUCTURES["cycle"])
    old = estimate(dom, ms, iters=50)
    same = estimate(dom, ms, iters=0, warm_start=old)
    bigger = estimate(dom, [*ms, *exact_measurements(data, [("a", "c", "e")])], iters=0, warm_start=old)
    for attrs in [("a", "b"), ("c", "e"), ("a", "d", "e")]:
        np.testing.assert_allclose(same.project(attrs), old.project(attrs), rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(bigger.project(attrs), old.project(attrs), rtol=1e-10, atol=1e-9)


def test_sparse_query_on_a_permuted_clique():
    """Q acts on the marginal vectorised in the clique's own (non-domain) order."""
    dom = Domain.from_sizes({"x": 3, "y": 2})
    data = sample_data(dom, 400, seed=1)
    table = data.marginal(("y", "x")).ravel().astype(float)  # (y, x) order
    Q = sp.csr_matrix(np.vstack([np.eye(6), np.ones((1, 6))]))
    model = estimate(dom, [Measurement(("y", "x"), Q, Q @ table, 1.0)], iters=3000)
    np.testing.assert_allclose(model.project(("y", "x")).ravel(), table, atol=0.5)
