"""Differential tests: LP (§6.1), min-cost flow (Appendix A, neighbour graph §6.3
and full graph) and ``auto`` agree on random instances (>= 1,000
instances, 1e-9 relative), covering ∞ weights, deep hierarchies, Δ = 0,
all-zero bins and unequal totals."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from margsynth.domain import Attribute, Domain
from margsynth.metrics.aemc import AEMCProblem, AttributeSpec, Distance, MarginalSpec, solve
from margsynth.metrics.aemc.instances import random_problem

logging.getLogger("cvxpy").setLevel(logging.ERROR)

RTOL = 1e-9


def _agree(vals: dict[str, float]) -> bool:
    ref = vals["flow"]
    return all(abs(v - ref) <= RTOL * max(1.0, abs(ref)) for v in vals.values())


@pytest.mark.parametrize("seed", range(10))
def test_lp_flow_auto_agree_on_random_instances(seed):
    """10 × 110 = 1,100 random instances: LP (neighbour), flow, auto; and the
    literal §6.1 LP and Appendix A.1 full graph on the smaller ones."""
    rng = np.random.default_rng(1000 + seed)
    checked = 0
    while checked < 110:
        prob = random_problem(rng)
        vals = {
            "flow": solve(prob, "flow").cost,
            "lp": solve(prob, "lp").cost,
            "auto": solve(prob, "auto").cost,
        }
        if prob.n_bins <= 30 and checked % 3 == 0:
            vals["lp_full"] = solve(prob, "lp", graph="full").cost
            vals["flow_full"] = solve(prob, "flow", graph="full").cost
        assert _agree(vals), (vals, [(a.name, a.kind, a.k) for a in prob.axes], prob.delta, prob.alpha)
        checked += 1


@pytest.mark.parametrize("seed", range(3))
def test_authors_variant_flow_matches_its_lp(seed):
    """The authors' negative lower bound (docs/notes/mgd_baltimore.md), flow vs LP, and it never exceeds the paper's LP."""
    rng = np.random.default_rng(5000 + seed)
    for _ in range(40):
        p = random_problem(rng)
        neg = AEMCProblem(p.p, p.q, p.axes, p.delta, p.alpha, allow_negative=True)
        f = solve(neg, "flow").cost
        lp = solve(neg, "lp").cost
        assert abs(f - lp) <= RTOL * max(1.0, abs(lp))
        assert f <= solve(p, "flow").cost + 1e-9


def test_fast_paths_agree_with_flow():
    """Closed forms (no moves; one uniform attribute per ∞ component) equal the flow."""
    rng = np.random.default_rng(7)
    dom = Domain((Attribute("a", 6), Attribute("b", 5), Attribute("c", 4, ordinal=True)))
    for _ in range(60):
        c = float(rng.choice([0.25, 0.5, 1.0, 1.5, 2.0, 3.0]))
        alpha = float(rng.choice([0.5, 1.0, 2.0]))
        delta = float(rng.choice([0.0, 1.0, 2.0]))
        spec = MarginalSpec((AttributeSpec("a", weight=math.inf), AttributeSpec("b", distance=Distance.uniform(c)),
                             AttributeSpec("c", weight=math.inf)), delta=delta, alpha=alpha)
        P = rng.poisson(rng.choice([0.5, 3, 9]), dom.shape).astype(float)
        Q = rng.poisson(rng.choice([0.5, 3, 9]), dom.shape).astype(float)
        prob = AEMCProblem.from_spec(spec, dom, P, Q)
        fast = solve(prob, "fast")
        assert fast.solver == "fast-uniform"
        assert fast.cost == pytest.approx(solve(prob, "flow").cost, rel=RTOL, abs=1e-9)
        spec0 = MarginalSpec.of("a", "b", "c", delta=delta, alpha=alpha, a=math.inf, b=math.inf, c=math.inf)
        prob0 = AEMCProblem.from_spec(spec0, dom, P, Q)
        assert solve(prob0, "fast").cost == pytest.approx(solve(prob0, "lp").cost, rel=RTOL, abs=1e-9)


def test_plan_is_consistent_with_optimum():
    """The plan's moving cost plus add/remove penalty is the optimum, and
    per-attribute and per-bin contributions sum to it (§4.4)."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        prob = random_problem(rng)
        for solver in ("flow", "lp"):
            r = solve(prob, solver, plan=True)
            total = r.plan.moving_cost() + r.plan.penalty(prob.alpha)
            assert total == pytest.approx(r.cost, rel=1e-7, abs=1e-7)
            assert sum(r.plan.attribute_costs().values()) == pytest.approx(r.plan.moving_cost(), abs=1e-7)
            assert r.plan.bin_contributions(prob.alpha).sum() == pytest.approx(r.cost, rel=1e-7, abs=1e-7)
            final = r.plan.final
            assert (final >= prob.lower() - 1e-7).all() and (final <= prob.upper() + 1e-7).all()
