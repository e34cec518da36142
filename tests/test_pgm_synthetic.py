"""Synthetic data from a Private-PGM model: Algorithms 7-8 of the NIST-MST/MST paper.

The rounding bound of Algorithm 7, checked through Algorithm 8: for every
attribute, every group of records sharing its already-generated neighbours
``g`` and every value ``t``, ``|count(g, t) - n_g P(t | g)| < 1``; in
particular the first attribute's marginal is within one record per cell of
the model's. i.i.d. sampling (Example 3's comparison) does not have that bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from margsynth import Domain
from margsynth.inference.pgm import Factor, GraphicalModel, synthetic_column

SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 5, "f": 3}
STRUCTURES = {
    "tree": [("a", "b"), ("b", "c"), ("b", "d"), ("d", "e"), ("e", "f")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a")],
    "four_clique": [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")],
    "disconnected": [("a", "b"), ("c", "d"), ("e", "f")],
    "singletons": [("a",), ("b", "c")],
}


def random_model(name: str, seed: int = 0, total: float = 1234.0) -> GraphicalModel:
    dom = Domain.from_sizes(SIZES)
    rng = np.random.default_rng(seed)
    factors = [Factor(c, 1.5 * rng.normal(size=tuple(dom[a].size for a in c))) for c in STRUCTURES[name]]
    return GraphicalModel.from_factors(dom, factors, total=total)


def rounding_gaps(model: GraphicalModel, synth) -> float:
    """Largest |count(g, t) - n_g P(t | g)| over the plan of Algorithm 8."""
    dom = model.domain
    worst = 0.0
    for attr, cond, _ in model.synthesis_plan():
        joint = model.probabilities((*cond, attr)).reshape(-1, dom[attr].size)
        cond_p = joint / joint.sum(axis=1, keepdims=True)
        counts = synth.marginal((*cond, attr)).reshape(-1, dom[attr].size)
        n_g = counts.sum(axis=1, keepdims=True)
        worst = max(worst, float(np.abs(counts - n_g * cond_p).max()))
    return worst


@pytest.mark.parametrize("name", STRUCTURES)
def test_rounding_bound_of_algorithm_7_holds_per_attribute(name):
    model = random_model(name)
    synth = model.synthetic_data(rng=np.random.default_rng(1))
    assert len(synth) == 1234
    assert rounding_gaps(model, synth) < 1.0
    first, cond, _ = model.synthesis_plan()[0]
    assert cond == ()
    assert np.abs(synth.marginal(first) - model.project(first)).max() < 1.0


def test_plan_conditions_on_generated_neighbours_inside_one_clique():
    model = random_model("cycle")
    plan = model.synthesis_plan()
    assert sorted(a for a, _, _ in plan) == sorted(SIZES)
    done = set()
    for attr, cond, c in plan:
        assert set(cond) <= done and set(cond) | {attr} <= set(model.cliques[c])
        done.add(attr)


def test_sampling_is_unbiased_but_not_rounded():
    model = random_model("tree", total=5000.0)
    gaps = [rounding_gaps(model, model.synthetic_data(rng=np.random.default_rng(s), method="sample")) for s in range(3)]
    assert max(gaps) > 1.0  # i.i.d. sampling error exceeds the rounding bound
    big = model.synthetic_data(200_000, np.random.default_rng(0), method="sample")
    for attrs in [("a", "b"), ("d", "e"), ("c", "f")]:
        emp = big.marginal(attrs) / 200_000
        assert np.abs(emp - model.probabilities(attrs)).max() < 0.01


def test_n_other_than_total_and_reproducibility():
    model = random_model("four_clique", total=100.0)
    s1 = model.synthetic_data(777, np.random.default_rng(5))
    s2 = model.synthetic_data(777, np.random.default_rng(5))
    assert len(s1) == 777 and s1.equals(s2)
    assert rounding_gaps(model, s1) < 1.0
    assert len(model.synthetic_data(0, np.random.default_rng(0))) == 0


def test_synthetic_data_input_errors():
    model = random_model("tree")
    with pytest.raises(ValueError, match="Generator"):
        model.synthetic_data(10, rng=None)
    with pytest.raises(ValueError, match="method"):
        model.synthetic_data(10, np.random.default_rng(0), method="bootstrap")
    with pytest.raises(ValueError, match="non-negative integer"):
        model.synthetic_data(-3, np.random.default_rng(0))


def test_synthetic_column_is_algorithm_7():
    mu = np.array([290.863, 436.873, 254.636, 0.0])  # Example 3's LABFORCE marginal (+ an empty value)
    n = 982
    rng = np.random.default_rng(0)
    col = synthetic_column(mu, n, rng)
    counts = np.bincount(col, minlength=4)
    assert counts.sum() == n
    assert np.all(counts >= np.floor(mu)) and np.all(counts <= np.floor(mu) + 1)
    assert counts[3] == 0
    assert sorted(counts[:3].tolist()) == sorted([291, 437, 254])  # Example 3, Table (b)
    # the remainders are sampled without replacement, proportionally: value 0 (remainder .863)
    # gets the extra record far more often than value 2 (.636) over many draws
    extra = np.array(
        [
            np.bincount(synthetic_column(mu, n, np.random.default_rng(s)), minlength=4)[:3] - np.floor(mu[:3])
            for s in range(400)
        ]
    )
    assert np.all(extra.sum(axis=1) == 2)
    assert extra[:, 0].mean() > extra[:, 2].mean()
    # the column is shuffled, not sorted
    assert np.any(np.diff(col) < 0)
