"""Private-PGM: factors, junction trees and exact marginal inference.

Exactness: on small random models (tree, cycle, 4-clique, disconnected,
singleton attributes, large/extreme potentials) every marginal from the
junction tree — inside a clique or by variable elimination — equals the
brute-force marginal of the full joint to 1e-9.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from margsynth import Domain
from margsynth.inference.pgm import (
    Factor,
    GraphicalModel,
    ModelTooLargeError,
    build_junction_tree,
    check_junction_tree,
    junction_tree_size,
    marginal,
)
from margsynth.inference.pgm.factor import align, contract, logsumexp
from margsynth.inference.pgm.junction_tree import HEURISTICS, triangulate

SIZES = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3, "f": 2}

FIXTURES = {
    "tree": [("a", "b"), ("b", "c"), ("b", "d"), ("d", "e"), ("e", "f")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a")],
    "four_clique": [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")],
    "triple_and_pairs": [("a", "b", "c"), ("c", "d"), ("d", "e", "f"), ("f", "a")],
    "disconnected": [("a", "b"), ("c", "d"), ("e", "f")],
    "singletons": [("a",), ("b", "c"), ("d",)],  # e and f appear in no factor
    "empty": [],
}


def domain() -> Domain:
    return Domain.from_sizes(SIZES)


def random_factors(dom: Domain, cliques, rng: np.random.Generator, scale: float = 2.0) -> list[Factor]:
    return [Factor(c, scale * rng.normal(size=tuple(dom[a].size for a in c))) for c in cliques]


def brute_joint(dom: Domain, factors: list[Factor]) -> np.ndarray:
    """The normalised full joint, computed independently of the package (dense sums)."""
    logp = np.zeros(dom.shape)
    for f in factors:
        idx = [dom.index(a) for a in f.attrs]
        # move the factor's axes into domain positions by explicit transpose + reshape
        order = np.argsort(idx)
        vals = np.transpose(f.values, order)
        shape = [1] * len(dom)
        for k, j in enumerate(sorted(idx)):
            shape[j] = vals.shape[k]
        logp = logp + vals.reshape(shape)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def brute_marginal(dom: Domain, joint: np.ndarray, attrs) -> np.ndarray:
    keep = [dom.index(a) for a in attrs]
    drop = tuple(i for i in range(len(dom)) if i not in keep)
    m = joint.sum(axis=drop)
    remaining = sorted(keep)
    return np.transpose(m, [remaining.index(k) for k in keep])


def all_subsets(names, max_size=3):
    for k in range(1, max_size + 1):
        yield from itertools.permutations(names, k) if k <= 2 else itertools.combinations(names, k)


# -- factors ------------------------------------------------------------------


def test_align_broadcast_and_reduce():
    a = np.arange(6.0).reshape(2, 3)
    out = align(a, ("x", "y"), ("y", "z", "x"))
    assert out.shape == (3, 1, 2)
    np.testing.assert_array_equal(out[:, 0, :], a.T)
    np.testing.assert_array_equal(align(a, ("x", "y"), ("y", "x"), reduce=True), a.T)
    np.testing.assert_array_equal(align(a, ("x", "y"), ("x",), reduce=True), a.sum(1))
    with pytest.raises(ValueError, match="not present"):
        align(a, ("x", "y"), ("x",))
    with pytest.raises(ValueError, match="not present"):
        align(a, ("x", "y"), ("z",), reduce=True)


def test_factor_algebra_matches_dense():
    rng = np.random.default_rng(1)
    f = Factor(("a", "b"), rng.normal(size=(2, 3)))
    g = Factor(("c", "a"), rng.normal(size=(4, 2)))
    h = f * g
    assert h.attrs == ("a", "b", "c")
    dense = f.values[:, :, None] + g.values.T[:, None, :]
    np.testing.assert_allclose(h.values, dense)
    m = h.logsumexp(["b"])
    np.testing.assert_allclose(m.values, np.log(np.exp(dense).sum(1)))
    np.testing.assert_allclose((h / g).values, np.broadcast_to(f.values[:, :, None], (2, 3, 4)))
    np.testing.assert_allclose(h.project(("c", "a")).values, np.log(np.exp(dense).sum(1)).T)
    np.testing.assert_allclose(h.probabilities().sum(), 1.0)
    with pytest.raises(ValueError, match="repeat"):
        Factor(("a", "a"), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="axes"):
        Factor(("a",), np.zeros((2, 2)))


def test_contract_is_a_sum_product():
    rng = np.random.default_rng(0)
    a, b = rng.random((2, 3)), rng.random((3, 4))
    np.testing.assert_allclose(contract([(("x", "y"), a), (("y", "z"), b)], ("z", "x")), (a @ b).T)
    with pytest.raises(ValueError, match="in no operand"):
        contract([(("x",), np.ones(2))], ("q",))


def test_logsumexp_is_stable_and_handles_minus_inf():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf]])
    out = logsumexp(x, axis=1)
    assert out[0] == pytest.approx(1000.0 + np.log(2.0))
    assert out[1] == -np.inf
    assert logsumexp(np.array([-1e4, -1e4 - 1.0])) == pytest.approx(-1e4 + np.log1p(np.exp(-1.0)))


def test_factor_torch_backend_matches_numpy():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    f = Factor(("a", "b"), rng.normal(size=(2, 3)))
    g = Factor(("b", "c"), rng.normal(size=(3, 4)))
    ft = Factor(f.attrs, torch.as_tensor(f.values))
    gt = Factor(g.attrs, torch.as_tensor(g.values))
    out = (ft * gt).logsumexp(["b"]).transpose(("c", "a"))
    ref = (f * g).logsumexp(["b"]).transpose(("c", "a"))
    np.testing.assert_allclose(out.values.numpy(), ref.values, atol=1e-12)


# -- junction tree -----------------------------------------------------------


def _check_running_intersection(tree) -> None:
    g = nx.Graph()
    g.add_nodes_from(range(len(tree.cliques)))
    g.add_edges_from((i, p) for i, p in enumerate(tree.parent) if p >= 0)
    assert nx.is_tree(g)
    for a in tree.domain.names:
        holding = [i for i, c in enumerate(tree.cliques) if a in c]
        assert holding, f"{a} in no clique"
        assert nx.is_connected(g.subgraph(holding)), f"running intersection fails for {a}"


@pytest.mark.parametrize("name", FIXTURES)
def test_junction_tree_structure(name):
    dom = domain()
    tree = build_junction_tree(dom, FIXTURES[name])
    _check_running_intersection(tree)
    for cl in FIXTURES[name]:
        assert tree.find_clique(cl) is not None
    for c in tree.cliques:
        assert list(c) == sorted(c, key=dom.index)
    assert junction_tree_size(dom, FIXTURES[name]) == (tree.cells, tree.size_mb)
    assert tree.order[0] == tree.root and sorted(tree.order) == list(range(len(tree.cliques)))


@pytest.mark.parametrize("name", FIXTURES)
def test_check_junction_tree_accepts_built_trees_and_names_the_broken_field(name):
    """A junction tree read back field by field (as from a saved model's JSON) is the tree that
    was built; each broken invariant is a ValueError naming ``where`` and the field."""
    dom = domain()
    tree = build_junction_tree(dom, FIXTURES[name])
    parts = [list(map(list, tree.cliques)), list(tree.parent), list(tree.order), list(tree.elimination_order)]
    back = check_junction_tree(dom, *parts, where="meta.model")
    assert (back.cliques, back.parent, back.order, back.elimination_order) == (
        tree.cliques, tree.parent, tree.order, tree.elimination_order)  # fmt: skip
    k = len(tree.cliques)
    broken = {
        "cliques": ([], "meta.model.cliques: no cliques"),
        "parent": ([k] * k, "meta.model.parent"),
        "order": (list(range(k))[::-1] if k > 1 else [5], "meta.model.order"),
        "elimination_order": (["a"], "meta.model.elimination_order"),
    }
    for i, (value, needle) in enumerate(broken.values()):  # the fields in check_junction_tree's order
        args = [*parts[:i], value, *parts[i + 1 :]]
        with pytest.raises(ValueError, match=needle.replace(".", r"\.")):
            check_junction_tree(dom, *args, where="meta.model")
    with pytest.raises(ValueError, match=r"meta\.model\.cliques\[0\]: .*unknown attribute"):
        check_junction_tree(dom, [["zzz"], *parts[0][1:]], *parts[1:], where="meta.model")
    if k > 1:  # a leaf cut off and hung on another clique that lacks its separator
        leaf = tree.order[-1]
        sep = set(tree.separator(leaf))
        other = [c for c in range(k) if c != leaf and not sep <= set(tree.cliques[c])]
        if other and sep:
            parent = list(tree.parent)
            parent[leaf] = other[0]
            order = [c for c in tree.order if c != leaf] + [leaf]
            with pytest.raises(ValueError, match="running-intersection|breadth-first"):
                check_junction_tree(dom, parts[0], parent, order, parts[3], where="meta.model")


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_triangulation_is_chordal_and_cliques_are_maximal(heuristic):
    dom = Domain.from_sizes({f"x{i}": 2 + i % 3 for i in range(8)})
    rng = np.random.default_rng(3)
    g = nx.gnp_random_graph(8, 0.4, seed=3)
    g = nx.relabel_nodes(g, {i: f"x{i}" for i in range(8)})
    order, cliques = triangulate(dom, g, heuristic)
    assert sorted(order) == sorted(dom.names)
    chordal = nx.Graph()
    chordal.add_nodes_from(dom.names)
    for c in cliques:
        chordal.add_edges_from(itertools.combinations(c, 2))
    assert nx.is_chordal(chordal)
    assert set(g.edges) <= {tuple(e) for e in chordal.edges} | {tuple(reversed(e)) for e in chordal.edges}
    assert {frozenset(c) for c in nx.chordal_graph_cliques(chordal)} == set(cliques)
    assert rng is not None


def _greedy_elimination(dom, adj, heuristic):
    """Koller & Friedman's Alg. 9.4 written plainly over sets of names: the definition
    :func:`triangulate` (bitmasks, incremental scores) must reproduce choice for choice."""
    adj = {v: set(nb) for v, nb in adj.items()}
    order, formed = [], []
    while adj:
        def key(v):
            nb = sorted(adj[v], key=dom.index)
            cells = dom[v].size * int(np.prod([dom[u].size for u in nb]))
            if heuristic == "min_weight":
                return (cells, dom.index(v))
            fill = sum(
                (dom[a].size * dom[b].size if heuristic == "weighted_min_fill" else 1)
                for a, b in itertools.combinations(nb, 2)
                if b not in adj[a]
            )
            return (fill, cells, dom.index(v))

        v = min(adj, key=key)
        for a in adj[v]:
            adj[a] |= adj[v] - {a}
            adj[a].discard(v)
        formed.append(frozenset(adj[v] | {v}))
        order.append(v)
        del adj[v]
    return order, {c for c in formed if not any(c < d for d in formed)}


def _random_graph(rng: np.random.Generator, max_n: int) -> tuple[Domain, dict[str, set[str]]]:
    """A random graph of 1..``max_n`` vertices (sizes from 1 to 100, a random edge density)."""
    n = int(rng.integers(1, max_n + 1))
    dom = Domain.from_sizes({f"v{i}": int(rng.choice([1, 2, 3, 5, 16, 42, 100])) for i in range(n)})
    p = rng.random()
    adj: dict[str, set[str]] = {v: set() for v in dom.names}
    for a, b in itertools.combinations(dom.names, 2):
        if rng.random() < p:
            adj[a].add(b)
            adj[b].add(a)
    return dom, adj


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_triangulate_makes_the_choices_of_plain_greedy_elimination(heuristic, compiled, monkeypatch):
    from margsynth.inference.pgm import kernels

    if compiled:
        if not kernels.AVAILABLE:
            pytest.skip("numba not available")
        kernels._jit(kernels._triangulate)  # loaded: triangulate runs the compiled loop
        used = []
        real = kernels.triangulate
        monkeypatch.setattr(kernels, "triangulate", lambda *a: used.append(1) or real(*a))
    else:
        monkeypatch.setattr(kernels, "triangulate", lambda *a: None)
    rng = np.random.default_rng(11)
    for _ in range(150):
        dom, adj = _random_graph(rng, 12)
        shuffled = {v: adj[v] for v in rng.permutation(dom.names)}
        order, cliques = triangulate(dom, shuffled, heuristic)
        want_order, want_cliques = _greedy_elimination(dom, adj, heuristic)
        assert order == want_order
        assert set(cliques) == want_cliques
    if compiled:
        assert used


def test_best_triangulation_compiled_equals_python(monkeypatch):
    """``auto`` (every heuristic, the fewest cells, the first on ties) in one compiled call
    gives the total, order and maximal cliques of the Python loop."""
    from margsynth.inference.pgm import junction_tree as jt
    from margsynth.inference.pgm import kernels

    if not kernels.AVAILABLE:
        pytest.skip("numba not available")
    kernels._jit(kernels._triangulate)
    rng = np.random.default_rng(12)
    for _ in range(150):
        dom, adj = _random_graph(rng, 13)
        for h in ("auto", *HEURISTICS):
            total, order, maximal = jt._best_triangulation(dom, adj, h)
            with monkeypatch.context() as m:
                m.setattr(kernels, "triangulate", lambda *a: None)
                want = jt._best_triangulation(dom, adj, h)
            assert (total, order, set(maximal)) == (want[0], want[1], set(want[2]))
            assert total == sum(math.prod(dom[a].size for a in c) for c in maximal)


def test_min_fill_on_a_cycle_adds_the_minimum_chords():
    dom = Domain.from_sizes({k: 2 for k in "abcdef"})
    tree = build_junction_tree(dom, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "a")])
    # a 6-cycle needs 3 chords: 4 triangles
    assert sorted(len(c) for c in tree.cliques) == [3, 3, 3, 3]


def test_memory_limit_error_names_size_and_limit():
    dom = Domain.from_sizes({f"x{i}": 10 for i in range(6)})
    cliques = list(itertools.combinations(dom.names, 2))  # complete graph: one 10^6-cell clique
    cells, mb = junction_tree_size(dom, cliques)
    assert cells == 10**6 and mb == pytest.approx(8e6 / 2**20)
    with pytest.raises(ModelTooLargeError, match=r"7\.6 MiB.*memory limit 1\.0 MiB") as err:
        build_junction_tree(dom, cliques, memory_limit_mb=1.0)
    assert isinstance(err.value, ValueError)
    build_junction_tree(dom, cliques, memory_limit_mb=10.0)


def test_unknown_clique_attribute_is_rejected():
    with pytest.raises(ValueError, match="unknown attribute"):
        build_junction_tree(domain(), [("a", "zzz")])


# -- exact inference ------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("seed", [0, 1])
def test_marginals_equal_brute_force(name, seed):
    dom = domain()
    rng = np.random.default_rng(seed)
    factors = random_factors(dom, FIXTURES[name], rng)
    model = GraphicalModel.from_factors(dom, factors, total=1.0)
    joint = brute_joint(dom, factors)
    for attrs in all_subsets(dom.names):
        got = model.probabilities(attrs)
        want = brute_marginal(dom, joint, attrs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-9, rtol=0, err_msg=f"{name} {attrs}")
        if len(attrs) == 3:  # the log-space variable-elimination path agrees too
            logve = marginal(model.tree, model.clique_marginals(), attrs, method="log")
            np.testing.assert_allclose(logve, want, atol=1e-9, rtol=0, err_msg=f"{name} {attrs} (log VE)")
    # every clique marginal too
    for c, p in zip(model.cliques, model.clique_marginals()):
        np.testing.assert_allclose(p, brute_marginal(dom, joint, c), atol=1e-9, rtol=0)
    # the same queries in the opposite order on a fresh model: the per-model cache of reduced
    # clique tables (a clique is the top of one query's subtree and inside another's) serves
    # them in a different order
    model = GraphicalModel.from_factors(dom, factors, total=1.0)
    for attrs in reversed(list(all_subsets(dom.names))):
        np.testing.assert_allclose(
            model.probabilities(attrs), brute_marginal(dom, joint, attrs), atol=1e-9, rtol=0, err_msg=f"{attrs}"
        )


def test_log_partition_equals_brute_force():
    dom = domain()
    factors = random_factors(dom, FIXTURES["cycle"], np.random.default_rng(5))
    model = GraphicalModel.from_factors(dom, factors)
    logp = np.log(brute_joint(dom, factors))  # normalised; recompute Z directly
    full = Factor((), np.zeros(()))
    for f in factors:
        full = full * f
    z = np.log(np.exp(full.transpose(tuple(a for a in dom.names if a in full.attrs)).values).sum())
    z += sum(np.log(dom[a].size) for a in dom.names if a not in full.attrs)
    assert model.log_partition == pytest.approx(z, abs=1e-9)
    assert np.isfinite(logp).all()


def test_extreme_potentials_stay_finite_and_exact():
    """Log-potentials of magnitude 1e3 (probabilities spanning e^-2000) are exact where it matters."""
    dom = domain()
    rng = np.random.default_rng(7)
    factors = random_factors(dom, FIXTURES["triple_and_pairs"], rng, scale=300.0)
    model = GraphicalModel.from_factors(dom, factors)
    joint = brute_joint(dom, factors)
    for attrs in [("a", "b"), ("c", "e"), ("a", "d", "f"), ("f",)]:
        got = model.probabilities(attrs)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, brute_marginal(dom, joint, attrs), atol=1e-9, rtol=0)


def test_project_scales_by_total_and_validates():
    dom = domain()
    model = GraphicalModel.from_factors(
        dom, random_factors(dom, FIXTURES["tree"], np.random.default_rng(0)), total=250.0
    )
    m = model.project(("c", "a"))
    assert m.shape == (4, 2) and m.sum() == pytest.approx(250.0)
    with pytest.raises(ValueError, match="unknown attribute"):
        model.project(("a", "nope"))
    with pytest.raises(ValueError, match="total"):
        GraphicalModel.from_factors(dom, [], total=0.0)


def test_model_validates_its_potentials():
    dom = domain()
    model = GraphicalModel.from_factors(dom, random_factors(dom, FIXTURES["tree"], np.random.default_rng(0)))
    with pytest.raises(ValueError, match="tables for"):
        GraphicalModel(dom, model.tree, model.theta[:-1], 1.0)
    bad = [t.copy() for t in model.theta]
    bad[0] = bad[0][..., :1]
    with pytest.raises(ValueError, match="has shape"):
        GraphicalModel(dom, model.tree, bad, 1.0)
    for value in (np.nan, np.inf):
        bad = [t.copy() for t in model.theta]
        bad[0].flat[0] = value
        with pytest.raises(ValueError, match="NaN or \\+inf"):
            GraphicalModel(dom, model.tree, bad, 1.0)
    # -inf is a structural zero (probability exactly 0), but some record must stay possible
    zero = [t.copy() for t in model.theta]
    zero[0].flat[0] = -np.inf
    assert GraphicalModel(dom, model.tree, zero, 1.0).clique_marginals()[0].flat[0] == 0.0
    zero[0][...] = -np.inf
    with pytest.raises(ValueError, match="no record"):
        GraphicalModel(dom, model.tree, zero, 1.0)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=6), data=st.data())
def test_random_structures_match_brute_force(sizes, data):
    """Property: any random set of cliques (any shape: chains, loops, dense, isolated, size-1
    attributes) gives exact marginals."""
    dom = Domain.from_sizes({f"v{i}": s for i, s in enumerate(sizes)})
    names = list(dom.names)
    cliques = data.draw(
        st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True), max_size=6), label="cliques"
    )
    seed = data.draw(st.integers(0, 2**16), label="seed")
    factors = random_factors(dom, [tuple(c) for c in cliques], np.random.default_rng(seed), scale=3.0)
    model = GraphicalModel.from_factors(dom, factors)
    joint = brute_joint(dom, factors)
    k = min(3, len(names))
    for attrs in [tuple(names[:k]), tuple(reversed(names))[:2], (names[-1],)]:
        np.testing.assert_allclose(model.probabilities(attrs), brute_marginal(dom, joint, attrs), atol=1e-9, rtol=0)


def test_marginal_agrees_with_log_space_elimination_and_brute_force_on_a_branching_tree():
    """Variable elimination by one ``einsum`` (its path searched with the intermediate bound
    of :func:`~margsynth.inference.pgm.factor.contract`) against log-space elimination and
    the dense joint, for every 2- and 3-way query outside the cliques of a model whose
    covering subtrees branch (several tables meet at one clique, where numpy's default bound
    made the path one contraction of all operands); queries in a random order share one
    cache of reduced tables."""
    sizes = {"a": 2, "b": 3, "c": 2, "d": 3, "e": 2, "f": 3, "g": 2, "h": 2}
    dom = Domain.from_sizes(sizes)
    cliques = [("a", "b", "c"), ("c", "d"), ("c", "e", "f"), ("f", "g"), ("b", "h"), ("d", "h")]
    rng = np.random.default_rng(11)
    factors = random_factors(dom, cliques, rng)
    model = GraphicalModel.from_factors(dom, factors, total=1.0)
    joint = brute_joint(dom, factors)
    queries = [q for k in (2, 3) for q in itertools.combinations(dom.names, k) if model.tree.find_clique(q) is None]
    assert len(queries) > 40
    shared: dict = {}
    for i in rng.permutation(len(queries)):
        q = queries[i]
        want = brute_marginal(dom, joint, q)
        got = marginal(model.tree, model.clique_marginals(), q, cache=shared)
        np.testing.assert_allclose(got, want, atol=1e-12, rtol=0, err_msg=f"{q}")
        logve = marginal(model.tree, model.clique_marginals(), q, method="log")
        np.testing.assert_allclose(logve, got, atol=1e-12, rtol=0, err_msg=f"{q} log")
        # without the cache: the same numbers
        np.testing.assert_allclose(marginal(model.tree, model.clique_marginals(), q), got, atol=1e-15, rtol=0)


def test_contract_paths_take_pairwise_steps_where_all_at_once_would_be_a_nested_loop():
    """Four tables meeting at one clique (AIM's ACS models): numpy's default bound (the
    largest operand) leaves a single step over every index; ours gives pairwise steps with
    the same result."""
    from margsynth.inference.pgm import factor

    rng = np.random.default_rng(0)
    sizes = dict(zip("abcdefg", (2, 7, 3, 3, 13, 11, 2)))
    extra = {"h": 23, "i": 21, "j": 20}
    shape = {**sizes, **extra}
    ops = [(tuple("abcdefg"), None), (tuple("acdefgh"), None), (tuple("abcdegi"), None), (tuple("abfj"), None)]
    ops = [(at, rng.random(tuple(shape[a] for a in at))) for at, _ in ops]
    factor._PATHS.clear()
    got = factor.contract(ops, ("h", "i", "j"))
    (path,) = [p for k, p in factor._PATHS.items() if k[0].startswith("abcdefg,")]
    assert len(path) == 4  # "einsum_path" and three pairwise steps
    default = np.einsum_path("abcdefg,acdefgh,abcdegi,abfj->hij", *(a for _, a in ops), optimize="greedy")[0]
    assert len(default) == 2  # numpy's bound: one step over all operands
    want = np.einsum("abcdefg,acdefgh,abcdegi,abfj->hij", *(a for _, a in ops), optimize=False)
    np.testing.assert_allclose(got, want, rtol=1e-12)
