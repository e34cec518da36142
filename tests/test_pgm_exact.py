"""The exact optimum of Private-PGM's estimation problem (interior-point QP over the local
polytope of the junction tree), the independent reference of the certificate:

* it equals the full-joint NNLS optimum on tiny domains (identity, sparse and callable
  queries);
* on a larger random problem, every fit's certificate brackets it: ``loss - gap <= L* <=
  loss``, at every iteration count, and long fits reach it;
* its clique tables are a point of the local polytope (non-negative, equal on separators,
  total ``N``);
* bad input fails with a ``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from margsynth import Domain
from margsynth.inference.pgm import Measurement, build_junction_tree, estimate, exact_optimum
from margsynth.inference.pgm.estimation import FACE_MAX_ITERS
from margsynth.inference.pgm.factor import align
from tests.test_pgm_estimation import _full_joint_reference, _tiny_problem, sample_data


@pytest.mark.parametrize("kind", ["identity", "sparse", "callable"])
def test_exact_optimum_equals_the_full_joint_reference(kind):
    dom, ms = _tiny_problem(kind)
    total = 100.0
    tree = build_junction_tree(dom, [m.clique for m in ms])
    sol = exact_optimum(dom, tree, ms, total)
    want = _full_joint_reference(dom, ms, total)
    assert sol.loss == pytest.approx(want, rel=1e-6, abs=1e-9)


def _noisy_problem(seed: int = 0):
    """Six attributes, a cycle of 2-way and two 3-way measurements with noise large enough
    that the optimum leaves cells empty (the hard case for the certificate)."""
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 5, "e": 3, "f": 2})
    data = sample_data(dom, 400, seed=seed)
    rng = np.random.default_rng(seed)
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("a", "e", "f"), ("b", "d", "e"), ("f",)]
    ms = []
    for c in cliques:
        truth = data.marginal(c).ravel().astype(float)
        ms.append(Measurement(c, None, truth + rng.normal(0, 8.0, truth.size), 8.0))
    return dom, ms, float(len(data))


def test_certificates_bracket_the_exact_optimum():
    dom, ms, total = _noisy_problem()
    fits = {k: estimate(dom, ms, iters=k, total=total) for k in (0, 20, 100, 500, 3000)}
    tree = fits[0].tree
    sol = exact_optimum(dom, tree, ms, total)
    for k, model in fits.items():
        loss, gap = model.stats["loss"], model.stats["gap"]
        assert sol.loss <= loss * (1 + 1e-9) + 1e-9, k
        assert loss - gap <= sol.loss * (1 + 1e-7) + 1e-7, k
    # the long fit reaches the optimum
    assert fits[3000].stats["loss"] == pytest.approx(sol.loss, rel=1e-5)


def test_exact_marginals_lie_in_the_local_polytope():
    dom, ms, total = _noisy_problem(1)
    tree = build_junction_tree(dom, [m.clique for m in ms])
    sol = exact_optimum(dom, tree, ms, total)
    assert all(np.all(t >= 0) for t in sol.marginals)
    for i, p in enumerate(tree.parent):
        assert sol.marginals[i].sum() == pytest.approx(total, rel=1e-7)
        if p >= 0:
            sep = tree.separator(i)
            a = align(sol.marginals[i], tree.cliques[i], sep, reduce=True)
            b = align(sol.marginals[p], tree.cliques[p], sep, reduce=True)
            np.testing.assert_allclose(a, b, atol=1e-6 * total, rtol=0)
    assert sol.status.endswith("Solved") and sol.iterations > 0


def test_exact_optimum_rejects_bad_input():
    dom, ms, total = _noisy_problem()
    tree = build_junction_tree(dom, [m.clique for m in ms])
    with pytest.raises(ValueError, match="max_cells"):
        exact_optimum(dom, tree, ms, total, max_cells=10)
    with pytest.raises(ValueError, match="total"):
        exact_optimum(dom, tree, ms, -1.0)
    small = build_junction_tree(dom, [("a", "b")])
    with pytest.raises(ValueError, match="lies in no clique"):
        exact_optimum(dom, small, ms, total)


# -- the interior point as an estimator: estimate(..., method="interior_point") -------------


@pytest.mark.parametrize("kind", ["identity", "sparse", "callable"])
def test_interior_point_fit_reaches_the_full_joint_optimum(kind):
    dom, ms = _tiny_problem(kind)
    total = 100.0
    want = _full_joint_reference(dom, ms, total)
    model = estimate(dom, ms, method="interior_point", total=total)
    st = model.stats
    assert st["method"] == "interior_point" and st["solver_iterations"] > 0
    assert st["gap"] <= 1e-3 * st["loss"]
    # the face descent stops at its certified target or, where the certificate cannot close
    # at the rounding of the arithmetic, once the loss stalls: never at the cap
    assert st["iterations"] < FACE_MAX_ITERS
    assert want <= st["loss"] <= want + st["gap"] + 1e-9
    tight = estimate(dom, ms, method="interior_point", total=total, gap_tol=1e-4)
    assert tight.stats["loss"] == pytest.approx(want, rel=1e-5, abs=1e-9)
    assert tight.stats["solver_loss"] == pytest.approx(want, rel=1e-7, abs=1e-9)


def _max_entropy_reference(dom, ms, total, iters=20000):
    """The descent alone, run long from the uniform model: its limit is the
    maximum-entropy optimum (the iterates stay in the family of the measured marginals)."""
    return estimate(dom, ms, iters=iters, total=total)


def test_interior_point_fit_is_the_maximum_entropy_optimum_and_certifies_it():
    """The interior point finds the optimal face; the descent on it returns the optimum the
    descent alone converges to (the maximum-entropy one, not the interior point's centre of
    the face): same loss, same marginals of every clique — measured or not — and a
    certificate at least as tight as asked."""
    dom, ms, total = _noisy_problem()
    model = estimate(dom, ms, method="interior_point", total=total, gap_tol=1e-6)
    st = model.stats
    sol = exact_optimum(dom, model.tree, ms, total)
    assert st["method"] == "interior_point" and st["solver_iterations"] == sol.iterations > 0
    assert st["solver_loss"] == pytest.approx(sol.loss, rel=1e-12)
    assert st["loss"] == pytest.approx(sol.loss, rel=1e-8)
    assert 0 <= st["gap"] <= 1e-6 * st["loss"]
    assert 0 < st["face_cells"] < model.tree.cells  # the optimum leaves cells empty
    long = _max_entropy_reference(dom, ms, total)
    assert long.stats["loss"] - long.stats["gap"] <= st["loss"] * (1 + 1e-9)
    for c in model.tree.cliques:
        np.testing.assert_allclose(model.project(c), long.project(c), atol=1e-3, rtol=0)
    # ... which is not the centre of the face the interior point ends at: on a clique that
    # holds unmeasured interactions the two differ
    centre = [sol.marginals[i] for i in range(len(model.tree.cliques))]
    diff = max(np.abs(model.project(c) - centre[i]).max() for i, c in enumerate(model.tree.cliques))
    assert diff > 1e-2
    from margsynth.inference.pgm import estimation_summary

    assert estimation_summary(model) == {
        "loss": st["loss"],
        "gap": st["gap"],
        "iterations": st["iterations"],
        "method": "interior_point",
    }


def test_interior_point_fit_is_deterministic_and_keeps_the_structure():
    dom, ms, total = _noisy_problem(2)
    a = estimate(dom, ms, method="interior_point", total=total, extra_cliques=[("c", "e", "f")])
    b = estimate(dom, ms, method="interior_point", total=total, extra_cliques=[("c", "e", "f")])
    assert a.tree.find_clique(("c", "e", "f")) is not None
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a.theta, b.theta))
    rng = np.random.default_rng(0)
    assert a.synthetic_data(50, rng=rng).df.equals(b.synthetic_data(50, rng=np.random.default_rng(0)).df)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"loss": "l1"}, "L2 loss only"),
        ({"iters": 0}, "iteration cap"),
        ({"rtol": 1e-6}, "rtol applies to the descent"),
        ({"step_size": 1.0}, "step_size applies to the descent"),
        ({"gap_tol": -1.0}, "gap_tol"),
        ({"method": "newton"}, "method must be one of"),
    ],
)
def test_interior_point_rejects_what_it_cannot_honour(kw, match):
    dom, ms, total = _noisy_problem()
    with pytest.raises(ValueError, match=match):
        estimate(dom, ms, total=total, **{"method": "interior_point", **kw})


def test_interior_point_reports_a_solver_that_stops_short():
    dom, ms, total = _noisy_problem()
    with pytest.raises(RuntimeError, match="MaxIterations"):
        estimate(dom, ms, total=total, method="interior_point", iters=2)
