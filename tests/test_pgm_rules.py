"""Private-PGM with rules: structural zeros (estimate(..., rules=...)).

* on small domains the fit equals the brute-force optimum of Eq. (4.2) over the allowed
  cells of the full joint (non-negative least squares on the allowed columns), for rules
  inside a clique and across cliques, and it is the maximum-entropy optimum there (the
  full joint equals iterative proportional fitting from the uniform distribution on the
  allowed cells to the optimum's measured marginals);
* forbidden cells have probability exactly 0, on the numpy and the compiled path alike,
  and belief propagation with zeros equals the brute-force joint;
* the certificate stays a valid lower bound with zeros (``loss - gap <=`` the brute-force
  optimum) and closes; the interior point reaches the same optimum;
* a rule inside no clique joins the structure within the growth limit, else it is left
  to the generator; an unsatisfiable rule set is refused; no rules = the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls

from margsynth import Domain
from margsynth.inference.pgm import (
    BeliefPropagation,
    Measurement,
    build_junction_tree,
    estimate,
    exact_optimum,
    kernels,
)
from margsynth.inference.pgm import estimation as estimation_module
from margsynth.rules import Rule, RuleSet
from tests.test_pgm_estimation import sample_data

TOTAL = 500.0


def _problem(name: str):
    """A domain, noisy identity (and one matrix) measurements, and rules that bind."""
    rng = np.random.default_rng(hash(name) % 2**32)
    if name == "chain":
        dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
        cliques = [("a", "b"), ("b", "c"), ("c", "d")]
        rules = [
            Rule.order("a<b", dom, "a", "b", "<"),  # inside the clique (a, b)
            Rule.forbid("cd", dom, ("c", "d"), [(0, 1), (1, 2)]),  # inside (c, d)
            Rule.forbid("ad", dom, ("a", "d"), [(0, 0), (2, 1)]),  # across cliques
        ]
    elif name == "cycle":
        dom = Domain.from_sizes({"a": 2, "b": 3, "c": 3, "d": 2, "e": 3})
        cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("e",)]
        rules = [
            Rule.conditional("if-a0", dom, {"a": 0}, {"c": [0, 1], "e": 2}),  # over three cliques
            Rule.functional("b->d", dom, "b", "d", {0: 0, 2: 1}),
        ]
    else:  # "fd": a functional dependency empties whole values of the 1-way marginals
        dom = Domain.from_sizes({"x": 4, "y": 3, "z": 3})
        cliques = [("x", "y"), ("y", "z"), ("x",), ("z",)]
        rules = [Rule.functional("x->y", dom, "x", "y", [0, 0, 1, 2]), Rule.forbid("z2", dom, ("z",), [(2,)])]
    data = sample_data(dom, int(TOTAL), seed=7)
    ms = []
    for c in cliques:
        truth = data.marginal(c).ravel().astype(float)
        ms.append(Measurement(c, None, truth + rng.normal(0, 4.0, truth.size), 4.0))
    c = cliques[0]
    truth = data.marginal(c).ravel().astype(float)
    Q = np.vstack([np.ones(truth.size), rng.integers(0, 2, size=(3, truth.size))])
    ms.append(Measurement(c, sp.csr_matrix(Q), Q @ truth + rng.normal(0, 3.0, 4), 3.0))
    return dom, ms, RuleSet(rules)


PROBLEMS = ("chain", "cycle", "fd")


def _design(dom: Domain, ms):
    """The rows of Eq. (4.2) over the full joint: ``A p - b`` is the scaled residual."""
    idx = np.indices(dom.shape).reshape(len(dom), -1)
    rows, rhs = [], []
    for m in ms:
        cell = np.ravel_multi_index(tuple(idx[dom.index(a)] for a in m.clique), tuple(dom[a].size for a in m.clique))
        M = np.zeros((dom.size(m.clique), cell.size))
        M[cell, np.arange(cell.size)] = 1.0
        Q = np.eye(M.shape[0]) if m.query is None else np.asarray(sp.csr_matrix(m.query).todense())
        rows.append(Q @ M * TOTAL / m.sigma)
        rhs.append(m.y / m.sigma)
    return np.vstack(rows), np.concatenate(rhs)


def _brute_optimum(dom: Domain, ms, allowed: np.ndarray) -> tuple[float, np.ndarray]:
    """min over distributions p on the allowed cells of 0.5 ||A p - b||^2, by active-set NNLS
    on the allowed columns (sum to one as a heavily weighted row): ``(L*, p*)``."""
    A, b = _design(dom, ms)
    cols = np.flatnonzero(allowed.ravel())
    w = 1e5 * max(1.0, np.abs(A).max())
    sub = A[:, cols]
    p, _ = nnls(np.vstack([sub, w * np.ones((1, cols.size))]), np.concatenate([b, [w]]), maxiter=20_000)
    full = np.zeros(allowed.size)
    full[cols] = p / p.sum()
    r = A @ full - b
    return 0.5 * float(r @ r), full.reshape(dom.shape)


def _max_entropy(dom: Domain, targets: dict, allowed: np.ndarray, sweeps: int = 4000) -> np.ndarray:
    """Iterative proportional fitting from the uniform distribution on the allowed cells to
    the marginals ``targets`` (attribute set -> table): the maximum-entropy distribution on
    the allowed cells with those marginals (Csiszar 1975)."""
    q = allowed.astype(float) / allowed.sum()
    for _ in range(sweeps):
        for attrs, t in targets.items():
            axes = tuple(i for i, a in enumerate(dom.names) if a not in attrs)
            cur = q.sum(axis=axes, keepdims=True)
            ratio = np.divide(t.reshape(cur.shape), cur, out=np.zeros_like(cur), where=cur > 0)
            q = q * ratio
    return q / q.sum()


@pytest.mark.parametrize("name", PROBLEMS)
def test_fit_is_the_brute_force_maximum_entropy_optimum_over_the_allowed_cells(name):
    dom, ms, rules = _problem(name)
    allowed = rules.mask(dom.names, dom)
    model = estimate(dom, ms, iters=4000, total=TOTAL, rules=rules)
    st = model.stats
    assert st["rules"]["in_model"] == list(rules.names) and st["rules"]["left"] == []
    want, p_star = _brute_optimum(dom, ms, allowed)
    unconstrained, _ = _brute_optimum(dom, ms, np.ones(dom.shape, bool))
    assert want > unconstrained + 1e-3 * abs(unconstrained)  # the rules bind
    assert st["loss"] == pytest.approx(want, rel=1e-6, abs=1e-6)
    assert st["loss"] - st["gap"] <= want * (1 + 1e-9) + 1e-9
    joint = model.probabilities(dom.names)
    assert np.all(joint[~allowed] == 0.0)  # exactly
    # the measured marginals of the optimum are unique (identity terms), and the fit is the
    # maximum-entropy distribution on the allowed cells that has them
    targets = {}
    for m in ms:
        if m.query is None:
            attrs = tuple(a for a in dom.names if a in m.clique)
            axes = tuple(i for i, a in enumerate(dom.names) if a not in attrs)
            targets[attrs] = p_star.sum(axis=axes)
            np.testing.assert_allclose(model.probabilities(attrs), targets[attrs], atol=2e-4)
    me = _max_entropy(dom, targets, allowed)
    np.testing.assert_allclose(joint, me, atol=2e-4)


@pytest.mark.parametrize("name", PROBLEMS)
def test_certificate_brackets_the_brute_force_optimum_with_zeros_and_closes(name):
    dom, ms, rules = _problem(name)
    want, _ = _brute_optimum(dom, ms, rules.mask(dom.names, dom))
    for iters in (0, 15, 150, 4000):
        st = estimate(dom, ms, iters=iters, total=TOTAL, rules=rules).stats
        assert st["loss"] >= want * (1 - 1e-9) - 1e-9, iters
        assert st["loss"] - st["gap"] <= want * (1 + 1e-9) + 1e-9, iters
    assert st["gap"] <= 1e-5 * st["loss"]
    tree = estimate(dom, ms, iters=0, total=TOTAL, rules=rules).tree
    assert exact_optimum(dom, tree, ms, TOTAL, rules=rules).loss == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("name", ["chain", "fd"])
def test_interior_point_with_rules_reaches_the_same_optimum(name):
    dom, ms, rules = _problem(name)
    want, _ = _brute_optimum(dom, ms, rules.mask(dom.names, dom))
    model = estimate(dom, ms, method="interior_point", total=TOTAL, rules=rules, gap_tol=1e-6)
    st = model.stats
    assert st["solver_loss"] == pytest.approx(want, rel=1e-6)
    assert st["loss"] == pytest.approx(want, rel=1e-6) and st["loss"] - st["gap"] <= want * (1 + 1e-9) + 1e-9
    joint = model.probabilities(dom.names)
    assert np.all(joint[~rules.mask(dom.names, dom)] == 0.0)
    descent = estimate(dom, ms, iters=4000, total=TOTAL, rules=rules)
    np.testing.assert_allclose(joint, descent.probabilities(dom.names), atol=2e-4)


def test_compiled_and_numpy_paths_agree_and_keep_exact_zeros(monkeypatch):
    if not kernels.AVAILABLE:
        pytest.skip("numba is not installed")
    dom, ms, rules = _problem("cycle")
    monkeypatch.setattr(kernels, "worth", lambda iters, cells: False)
    slow = estimate(dom, ms, iters=300, total=TOTAL, rules=rules)
    monkeypatch.setattr(kernels, "worth", lambda iters, cells: True)
    fast = estimate(dom, ms, iters=300, total=TOTAL, rules=rules)
    np.testing.assert_allclose(fast.stats["loss_history"], slow.stats["loss_history"], rtol=1e-9)
    allowed = rules.mask(dom.names, dom)
    for model in (slow, fast):
        assert np.all(model.probabilities(dom.names)[~allowed] == 0.0)


@pytest.mark.parametrize("seed", range(24))
def test_propagation_with_zeros_equals_the_brute_force_joint(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    names = [f"v{i}" for i in range(k)]
    dom = Domain.from_sizes(dict(zip(names, rng.integers(1, 5, size=k).tolist())))
    cliques = [tuple(sorted(rng.choice(names, size=int(rng.integers(1, min(3, k) + 1)), replace=False).tolist(),
                            key=names.index)) for _ in range(int(rng.integers(1, 5)))]  # fmt: skip
    tree = build_junction_tree(dom, cliques)
    bp = BeliefPropagation(tree)
    theta = rng.normal(size=bp.size) * [0.5, 5.0, 300.0][seed % 3]
    zeros = np.where(rng.random(bp.size) < 0.4, -np.inf, 0.0)
    # the brute-force joint: exp(sum of the clique potentials) on the full domain
    logp = np.zeros(dom.shape)
    for c, t, z in zip(tree.cliques, bp.views(theta), bp.views(zeros)):
        logp = logp + (t + z).reshape([dom[a].size if a in c else 1 for a in dom.names])
    if not np.isfinite(logp).any():  # no possible record: nothing to propagate
        return
    p = np.exp(logp - logp.max())
    p /= p.sum()
    outs = []
    for compiled in (False, True):
        out = np.empty(bp.size)
        log_z = bp.calibrate_flat(theta, out, compiled=compiled, zeros=zeros)
        assert np.isfinite(log_z) and not np.isnan(out).any()
        for c, v, z in zip(tree.cliques, bp.views(out), bp.views(zeros)):
            axes = tuple(i for i, a in enumerate(dom.names) if a not in c)
            # (positive probabilities below exp(LOG_FLOOR) of their slice are floored there)
            np.testing.assert_allclose(v, p.sum(axis=axes).reshape(v.shape), rtol=1e-9, atol=1e-12)
            assert np.all(v[np.isneginf(z)] == 0.0)  # exactly
        outs.append(out)
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12, atol=1e-300)


def test_rules_across_cliques_join_the_structure_or_are_left_to_the_generator(monkeypatch):
    dom, ms, rules = _problem("chain")
    model = estimate(dom, ms, iters=50, total=TOTAL, rules=rules)
    assert model.stats["rules"]["added_cliques"] == [["a", "d"]] and model.tree.find_clique(("a", "d")) is not None
    monkeypatch.setattr(estimation_module, "RULE_GROWTH", 1.0)
    monkeypatch.setattr(estimation_module, "RULE_SLACK_CELLS", 0)
    small = estimate(dom, ms, iters=50, total=TOTAL, rules=rules)
    assert small.stats["rules"] == {"in_model": ["a<b", "cd"], "added_cliques": [], "left": ["ad"],
                                    "zero_cells": small.stats["rules"]["zero_cells"]}  # fmt: skip
    assert small.tree.find_clique(("a", "d")) is None
    # the rules left out are not zeros: the model puts mass on their cells
    assert small.probabilities(("a", "d"))[0, 0] > 0
    # a caller's slack (the independence model's generator) lets the set in again
    roomy = estimate(dom, ms, iters=50, total=TOTAL, rules=rules, rule_slack_cells=1000)
    assert roomy.stats["rules"]["added_cliques"] == [["a", "d"]] and roomy.stats["rules"]["left"] == []
    assert roomy.probabilities(("a", "d"))[0, 0] == 0.0


def test_the_independence_model_holds_its_rules(monkeypatch):
    """Independent's generator has room for every rule clique of a small domain (one clique per
    attribute: Private-PGM's default slack would leave them to the redraw)."""
    from margsynth.mechanisms.baselines import INDEPENDENT_RULE_SLACK_CELLS, Independent

    gen = Independent().generator
    assert gen.rule_slack_cells == INDEPENDENT_RULE_SLACK_CELLS >= 1024
    dom, _, rules = _problem("chain")
    one_way = [Measurement((a,), np.eye(n), np.full(n, TOTAL / n), 1.0) for a, n in zip(dom.names, dom.shape)]
    monkeypatch.setattr(estimation_module, "RULE_SLACK_CELLS", 0)
    assert estimate(dom, one_way, iters=50, total=TOTAL, rules=rules).stats["rules"]["left"]
    model = estimate(dom, one_way, iters=50, total=TOTAL, rules=rules, rule_slack_cells=gen.rule_slack_cells)
    assert model.stats["rules"]["left"] == []
    with pytest.raises(ValueError, match="rule_slack_cells"):
        type(gen)(rule_slack_cells=-1)


def test_unsatisfiable_rules_are_refused_and_empty_rules_change_nothing():
    dom, ms, rules = _problem("fd")
    bad = RuleSet([*rules, Rule.forbid("y0", dom, ("y",), [(0,)]), Rule.forbid("x01", dom, ("x",), [(2,), (3,)])])
    with pytest.raises(ValueError, match="cannot all hold"):
        estimate(dom, ms, iters=5, total=TOTAL, rules=bad)
    plain = estimate(dom, ms, iters=40, total=TOTAL)
    trivial = RuleSet([Rule(("x", "y"), np.ones((4, 3), bool), "anything")])
    for same in (estimate(dom, ms, iters=40, total=TOTAL, rules=RuleSet()),
                 estimate(dom, ms, iters=40, total=TOTAL, rules=trivial)):  # fmt: skip
        assert all(a.tobytes() == b.tobytes() for a, b in zip(plain.theta, same.theta))
        assert same.stats["loss"] == plain.stats["loss"]


def test_warm_start_from_a_model_with_zeros():
    dom, ms, rules = _problem("cycle")
    first = estimate(dom, ms, iters=100, total=TOTAL, rules=rules)
    assert first.has_zeros
    again = estimate(dom, ms, iters=100, total=TOTAL, rules=rules, warm_start=first)
    assert again.stats["loss"] <= first.stats["loss"] * (1 + 1e-12)
    assert not any(np.isnan(t).any() for t in again.theta)
    # no rules now: the old zeros become tiny but positive potentials, the fit is finite
    free = estimate(dom, ms, iters=100, total=TOTAL, warm_start=first)
    assert not free.has_zeros and np.isfinite(free.stats["loss"])
