"""AEMC unit tests: semantic distances from the paper's examples (§4.3.1),
Eq. (1) special cases (§4.2), closed forms, scaling, validation."""

from __future__ import annotations

import logging
import math
from fractions import Fraction

import numpy as np
import pytest

from margsynth.domain import Attribute, Domain, Hierarchy
from margsynth.metrics.aemc import (
    AEMCProblem,
    AttributeSpec,
    Distance,
    MarginalSpec,
    axis_metric,
    load_specs,
    solve,
    specs_to_json,
)
from margsynth.metrics.aemc.scaling import exact_scale

logging.getLogger("cvxpy").setLevel(logging.ERROR)


# -- semantic distance, §4.3.1 ------------------------------------------------
def test_ordinal_grades_example():
    """Fig. 2(b): 13 grades under 4 school levels: sd(1st, 8th) = 7/12, sd(Elementary, Middle) = 1/3."""
    schools = (0,) * 6 + (1,) * 3 + (2,) * 3 + (3,)
    attr = Attribute("edu", 13, ordinal=True, hierarchy=Hierarchy.from_groups(schools))
    leaf = axis_metric(attr, AttributeSpec("edu", 0, 1.0), 1.0).dense()
    assert leaf[1, 8] == pytest.approx(7 / 12)
    up = axis_metric(attr, AttributeSpec("edu", 1, 1.0), 1.0).dense()
    assert up[0, 1] == pytest.approx(1 / 3)


def test_categorical_cities_example():
    """Fig. 1(b): cities in the same state are 1/2 apart, in different states 1."""
    attr = Attribute("city", 4, hierarchy=Hierarchy.from_groups((0, 0, 1, 1)))
    d = axis_metric(attr, AttributeSpec("city", 0, 1.0), 1.0).dense()
    assert d[0, 1] == pytest.approx(0.5) and d[0, 2] == pytest.approx(1.0) and d[0, 0] == 0
    d1 = axis_metric(attr, AttributeSpec("city", 1, 1.0), 1.0).dense()  # states
    assert d1[0, 1] == pytest.approx(1.0)


def test_default_flat_hierarchy_and_default_weights():
    """Fig. 1(a): default two-level hierarchy, all distances 1; default weight ∞ for categorical (§4.3.2)."""
    attr = Attribute("type", 3)
    assert np.array_equal(axis_metric(attr, AttributeSpec("type"), 1.0).dense(), 1 - np.eye(3))
    dom = Domain((Attribute("m", 12, ordinal=True), Attribute("t", 3)))
    prob = AEMCProblem.from_spec(MarginalSpec.of("m", "t"), dom, np.ones((12, 3)), np.ones((12, 3)))
    assert [a.kind for a in prob.axes] == ["line", "forbid"]
    assert prob.axes[0].step == pytest.approx(1 / 11)  # month: |i−j|/11 (Fig. 2a)


# -- Eq. (1) special cases ---------------------------------------------------------
def test_l1_special_case():
    """§4.2: M = ∞ off the diagonal and Δ = 0 give the L1 distance over ‖Q‖₁."""
    dom = Domain.from_sizes({"a": 3, "b": 2})
    rng = np.random.default_rng(0)
    P, Q = rng.poisson(5, (3, 2)), rng.poisson(5, (3, 2))
    spec = MarginalSpec.of("a", "b", delta=0.0, a=math.inf, b=math.inf)
    for solver in ("auto", "flow", "lp"):
        r = solve(AEMCProblem.from_spec(spec, dom, P, Q), solver)
        assert r.value == pytest.approx(np.abs(P - Q).sum() / Q.sum())


def test_section_2_2_example():
    """§2.2: [4,5,1] is closer to [5,4,1] than [4,4,2] once semantics count."""
    dom = Domain.from_sizes({"x": 3}, ordinal=["x"])
    spec = MarginalSpec.of("x", delta=0.0, x=1.0)
    q = np.array([5, 4, 1])
    a = solve(AEMCProblem.from_spec(spec, dom, np.array([4, 5, 1]), q), "flow")
    b = solve(AEMCProblem.from_spec(spec, dom, np.array([4, 4, 2]), q), "flow")
    assert a.cost == pytest.approx(0.5) and b.cost == pytest.approx(1.0)


def test_within_delta_is_zero_and_unequal_totals():
    dom = Domain.from_sizes({"x": 4}, ordinal=["x"])
    spec = MarginalSpec.of("x", delta=2.0, x=1.0)
    q = np.array([3, 0, 7, 1])
    assert solve(AEMCProblem.from_spec(spec, dom, q + np.array([2, 1, -2, 0]), q)).cost == 0
    # 10 extra units in one bin: 2 tolerated, the rest spread into spare room or removed
    r = solve(AEMCProblem.from_spec(spec, dom, q + np.array([10, 0, 0, 0]), q), "lp")
    assert r.cost == pytest.approx(solve(AEMCProblem.from_spec(spec, dom, q + np.array([10, 0, 0, 0]), q), "flow").cost)
    assert 0 < r.cost < 8


def test_uniform_closed_form_by_hand():
    """Star with cost c: surplus 5 in bin 0, deficit 3 in bin 1, Δ = 0, α = 1."""
    dom = Domain.from_sizes({"x": 3})
    q = np.array([0, 3, 0])
    p = np.array([5, 0, 0])
    for c, expect in ((0.5, 3 * 0.5 + 2 * 1.0), (1.5, 3 * 1.5 + 2 * 1.0), (2.5, 5 + 3)):
        spec = MarginalSpec((AttributeSpec("x", distance=Distance.uniform(c)),), delta=0.0)
        prob = AEMCProblem.from_spec(spec, dom, p, q)
        assert solve(prob, "fast").cost == pytest.approx(expect)
        assert solve(prob, "flow").cost == pytest.approx(expect)


def test_hierarchy_level_aggregation():
    """Using level 1 aggregates the counts into the groups (§4.3.2)."""
    attr = Attribute("c", 4, hierarchy=Hierarchy.from_groups((0, 0, 1, 1)))
    dom = Domain((attr,))
    spec = MarginalSpec((AttributeSpec("c", level=1, weight=1.0),), delta=0.0)
    prob = AEMCProblem.from_spec(spec, dom, np.array([1, 1, 0, 0]), np.array([0, 2, 0, 0]))
    assert prob.shape == (2,) and solve(prob).cost == 0


def test_zero_truth_total_reports_raw_cost():
    dom = Domain.from_sizes({"x": 2})
    r = solve(AEMCProblem.from_spec(MarginalSpec.of("x", delta=0.0), dom, np.array([1, 0]), np.array([0, 0])))
    assert r.value == 1.0


# -- exact scaling --------------------------------------------------------------
def test_exact_scale_detection():
    assert exact_scale(np.array([1.0, 2.0]), "x") == 1
    assert exact_scale(np.array([0.33, 0.165, 1.0]), "x") == 200
    assert exact_scale(np.array([1 / 3, 0.5]), "x") == 6
    assert exact_scale(np.array([0.9 / 3]), "x") == 10  # float noise is read as 3/10
    with pytest.raises(ValueError, match="cannot be scaled"):
        exact_scale(np.array([math.pi]), "costs")


def test_fractional_counts_exact_and_irrational_counts():
    """Non-integer counts: exact rational optimum when scalable; otherwise refused
    by the flow, scored by the LP under auto, or rounded with a reported bound."""
    dom = Domain.from_sizes({"x": 3}, ordinal=["x"])
    spec = MarginalSpec.of("x", delta=0.0, x=1.0)
    r = solve(AEMCProblem.from_spec(spec, dom, np.array([0.5, 1.25, 0.0]), np.array([1.0, 0.0, 0.75])), "flow")
    assert r.details["exact_cost"] == Fraction(5, 8) + Fraction(3, 8) * 1 / 2 + Fraction(0) or r.exact
    lp = solve(AEMCProblem.from_spec(spec, dom, np.array([0.5, 1.25, 0.0]), np.array([1.0, 0.0, 0.75])), "lp")
    assert r.cost == pytest.approx(lp.cost, rel=1e-9)
    prob = AEMCProblem.from_spec(spec, dom, np.array([math.pi, 1.0, 0.0]), np.array([1.0, math.e, 0.5]))
    with pytest.raises(ValueError, match="cannot be scaled"):
        solve(prob, "flow")
    auto = solve(prob, "auto")
    assert auto.solver.startswith("lp") and "fallback" in auto.details
    approx = solve(prob, "flow", tolerance=1e-6)
    assert not approx.exact and abs(approx.value - auto.value) <= approx.error_bound + 1e-12


def test_int64_overflow_refused():
    dom = Domain.from_sizes({"x": 2}, ordinal=["x"])
    prob = AEMCProblem.from_spec(MarginalSpec.of("x", delta=0.0, x=1.0), dom, np.array([5e18, 0]), np.array([0, 5e18]))
    with pytest.raises(ValueError, match="64"):
        solve(prob, "flow")


# -- validation -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "p, q, match",
    [
        ([1, -1], [1, 1], "negative|>= 0"),
        ([1, np.nan], [1, 1], "finite"),
        ([1, 1, 1], [1, 1], "shape"),
        ([1, 1], [np.inf, 1], "finite"),
    ],
)
def test_bad_counts(p, q, match):
    dom = Domain.from_sizes({"x": 2})
    with pytest.raises(ValueError, match=match):
        AEMCProblem.from_spec(MarginalSpec.of("x"), dom, np.array(p, float), np.array(q, float))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(weight=1.5), r"weight must be in \[0, 1\] or inf"),
        (dict(weight=-0.1), "weight"),
        (dict(weight=float("nan")), "finite"),
        (dict(level=-1), "level"),
    ],
)
def test_bad_attribute_spec(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttributeSpec("x", **kwargs)


def test_bad_marginal_specs():
    with pytest.raises(ValueError, match="sum to 1"):
        MarginalSpec.of("a", "b", a=0.5, b=0.6)
    with pytest.raises(ValueError, match="delta must be >= 0"):
        MarginalSpec.of("a", delta=-1)
    with pytest.raises(ValueError, match="repeats"):
        MarginalSpec.of("a", "a")
    with pytest.raises(ValueError, match="either a weight or a distance"):
        AttributeSpec("a", weight=0.5, distance=Distance.steps(1))


def test_bad_level_and_matrix():
    dom = Domain((Attribute("c", 3),))
    with pytest.raises(ValueError, match="level 2 not in its hierarchy"):
        AEMCProblem.from_spec(MarginalSpec((AttributeSpec("c", level=2, weight=1.0),)), dom, np.ones(3), np.ones(3))
    bad_diag = np.array([[1.0, 1, 1], [1, 0, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match="diagonal must be 0"):
        AEMCProblem.from_spec(MarginalSpec((AttributeSpec("c", distance=Distance.from_matrix(bad_diag)),)), dom,
                              np.ones(3), np.ones(3))
    non_metric = np.array([[0.0, 1, 5], [1, 0, 1], [5, 1, 0]])
    with pytest.raises(ValueError, match="triangle"):
        AEMCProblem.from_spec(MarginalSpec((AttributeSpec("c", distance=Distance.from_matrix(non_metric)),)), dom,
                              np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="M_ii must be 0"):
        AEMCProblem.from_matrix(np.ones(2), np.ones(2), np.ones((2, 2)), delta=0.0)
    with pytest.raises(ValueError, match="unknown AEMC solver"):
        solve(AEMCProblem.from_matrix(np.ones(2), np.ones(2), 1 - np.eye(2), delta=0.0), "simplex")


def test_explicit_matrix_non_metric_full_graph():
    """A non-metric M is fine for Eq. (1) verbatim: full LP and full-graph flow agree."""
    M = np.array([[0.0, 1, 5], [1, 0, 1], [5, 1, 0]])
    prob = AEMCProblem.from_matrix(np.array([4.0, 0, 0]), np.array([0.0, 0, 4]), M, delta=0.0, alpha=3.0)
    assert solve(prob, "flow").cost == pytest.approx(solve(prob, "lp").cost) == pytest.approx(20.0)  # direct move; a transshipment via bin 1 would give 8


def test_spec_json_roundtrip(tmp_path):
    specs = [
        MarginalSpec((AttributeSpec("month", distance=Distance.steps(0.5)), AttributeSpec("type", weight=math.inf)),
                     delta=2, omega=0.5, name="M+I"),
        MarginalSpec((AttributeSpec("a", level=1, weight=1.0),), delta=0.0, allow_negative=True),
    ]
    path = tmp_path / "spec.json"
    import json

    path.write_text(json.dumps(specs_to_json(specs)))
    assert load_specs(path) == specs
    with pytest.raises(ValueError, match="unknown key"):
        load_specs({"marginals": [{"attributes": ["a"], "detla": 2}]})
    with pytest.raises(ValueError, match="weight must be a number or 'inf'"):
        load_specs({"marginals": [{"attributes": [{"name": "a", "weight": "big"}]}]})


def test_auto_large_unscalable_counts_rounds_with_reported_bound(monkeypatch):
    """Past the LP's size, ``auto`` rounds counts to a fine grid and reports the bound."""
    import sys

    monkeypatch.setattr(sys.modules["margsynth.metrics.aemc.solve"], "LP_MAX_BINS", 10)
    dom = Domain.from_sizes({"a": 12, "b": 9}, ordinal=["a"])
    rng = np.random.default_rng(0)
    P, Q = rng.random((12, 9)) * 5 * math.pi, rng.random((12, 9)) * 5
    prob = AEMCProblem.from_spec(MarginalSpec.of("a", "b", a=0.5, b=0.5), dom, P, Q)
    lp = solve(prob, "lp")
    auto = solve(prob, "auto")
    assert auto.solver == "flow-neighbour" and not auto.exact and 0 < auto.error_bound <= 1e-9
    assert abs(auto.value - lp.value) <= auto.error_bound + 1e-12
