"""Junction trees for the graphical models of Private-PGM.

By Fact 1 of McKenna, Sheldon, Miklau & Su (NIST-MST/MST paper, §4.2) the
optimum of Eq. (4.1) is a graphical model with one factor per measured
attribute set. Marginal inference in it is exact and efficient on a junction
tree (Koller & Friedman 2009, §10.4): triangulate the model's graph (an edge
between every two attributes measured together), take the maximal cliques of
the chordal graph, and connect them by a maximum-weight spanning tree on
separator sizes, which has the running-intersection property. Its size — the
number of cells of all clique tables — decides the cost of inference (Remark 1
of the paper: tree width); :func:`junction_tree_size` gives it *before* any
array is allocated, which is what AIM's size-limited candidate filter needs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from ...domain import Domain
from . import kernels

__all__ = [
    "JunctionTree",
    "ModelTooLargeError",
    "build_junction_tree",
    "check_junction_tree",
    "junction_tree_size",
    "splice_clique",
    "triangulate",
]

HEURISTICS = ("min_fill", "weighted_min_fill", "min_weight")
BYTES_PER_CELL = 8  # float64; ``size_mb`` counts one copy of every clique table


class ModelTooLargeError(ValueError):
    """The junction tree would exceed the caller's memory limit."""


_TABLES: dict[int, tuple[Domain, dict[str, int], dict[str, int]]] = {}


def _tables(domain: Domain) -> tuple[dict[str, int], dict[str, int]]:
    """``(rank, size)`` of every attribute of ``domain`` as plain dicts (hot loops of the
    triangulation look them up tens of thousands of times per AIM round)."""
    hit = _TABLES.get(id(domain))
    if hit is None or hit[0] is not domain:
        if len(_TABLES) > 64:
            _TABLES.clear()
        hit = _TABLES[id(domain)] = (
            domain,
            {a: i for i, a in enumerate(domain.names)},
            {a: domain[a].size for a in domain.names},
        )
    return hit[1], hit[2]


def _cells(domain: Domain, attrs: Iterable[str]) -> int:
    size = _tables(domain)[1]
    return math.prod(size[a] for a in attrs)


def _model_graph(domain: Domain, cliques: Iterable[Sequence[str]]) -> dict[str, set[str]]:
    """Adjacency sets of the model's graph: an edge between every two attributes of a clique."""
    adj: dict[str, set[str]] = {a: set() for a in domain.names}
    for cl in cliques:
        cl = domain.check_attrs(cl, "clique")
        for a in cl:
            adj[a].update(cl)
            adj[a].discard(a)
    return adj


@functools.lru_cache(maxsize=1 << 16)
def _bits(mask: int) -> tuple[int, ...]:
    """The positions of the set bits of ``mask``, increasing."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return tuple(out)


def _eliminate(names: list[str], nbm: list[int], size: list[int], heuristic: str) -> tuple[list[str], list[frozenset]]:
    """The greedy elimination loop of :func:`triangulate` in Python (bitmask neighbourhoods
    ``nbm``, modified in place); :func:`~.kernels.triangulate` runs its compiled twin."""
    weighted = heuristic == "weighted_min_fill"
    n = len(names)

    def score(v: int) -> tuple:
        nb = nbm[v]
        members = _bits(nb)
        cells = size[v]
        for a in members:
            cells *= size[a]
        if heuristic == "min_weight":
            return (cells, v)
        fill = 0  # twice the (weighted) number of missing edges among the neighbours
        for a in members:
            missing = nb & ~nbm[a] & ~(1 << a)
            if missing:
                if weighted:
                    fill += size[a] * sum(size[b] for b in _bits(missing))
                else:
                    fill += missing.bit_count()
        return (fill // 2, cells, v)

    keys = [score(v) for v in range(n)]
    order: list[str] = []
    formed: list[frozenset] = []
    remaining = set(range(n))
    while remaining:
        best = min(remaining, key=keys.__getitem__)
        nb = nbm[best]
        members = _bits(nb)
        for a in members:
            nbm[a] = (nbm[a] | nb) & ~(1 << a) & ~(1 << best)
        formed.append(frozenset([names[best]] + [names[a] for a in members]))
        order.append(names[best])
        remaining.discard(best)
        # scores change only within distance two of the eliminated vertex
        dirty = nb
        for a in members:
            dirty |= nbm[a]
        for v in _bits(dirty):
            if v in remaining:
                keys[v] = score(v)
    return order, formed


def triangulate(domain: Domain, graph, heuristic: str = "min_fill") -> tuple[list[str], list[frozenset]]:
    """Greedy vertex elimination (Koller & Friedman 2009, Alg. 9.4).

    At each step eliminate the vertex with the best score, connect its
    remaining neighbours (the fill-in) and record the clique it formed.
    Scores: ``min_fill`` (fewest fill edges, ties by clique cells),
    ``weighted_min_fill`` (fill edges weighted by the product of their
    endpoints' domain sizes), ``min_weight`` (fewest cells in the formed
    clique). Ties are broken by domain order, so the result is deterministic.

    ``graph`` is a networkx graph or a dict of adjacency sets. Returns the
    elimination order and the maximal cliques of the chordal completion.
    """
    if heuristic not in HEURISTICS:
        raise ValueError(f"unknown triangulation heuristic {heuristic!r}; choose from {HEURISTICS}")
    return _eliminate_masks(*_graph_masks(domain, graph), heuristic)


def _graph_masks(domain: Domain, graph) -> tuple[list[str], list[int], list[int]]:
    """``graph``'s vertices in domain order (the tie-break rank), their neighbourhoods as
    bitmasks (vertex ``v`` is bit ``v``) and their domain sizes: the input of the
    elimination loops, the same choices as a loop over sets of names, several times
    faster (the scores are integers, summed exactly in any order)."""
    if isinstance(graph, nx.Graph):
        adj = {v: set(graph.neighbors(v)) for v in graph.nodes}
    else:
        adj = graph
    rank, sizes = _tables(domain)
    try:
        names = sorted(adj, key=rank.__getitem__)
    except KeyError:
        names = sorted(adj, key=domain.index)  # raises the domain's error for an unknown name
    bit = {v: i for i, v in enumerate(names)}
    size = [sizes[v] for v in names]
    nbm = [0] * len(names)
    for v, nb in adj.items():
        m = 0
        for u in nb:
            m |= 1 << bit[u]
        nbm[bit[v]] = m & ~(1 << bit[v])
    return names, nbm, size


def _eliminate_masks(
    names: list[str], nbm: list[int], size: list[int], heuristic: str
) -> tuple[list[str], list[frozenset]]:
    """:func:`triangulate` on the output of :func:`_graph_masks` (``nbm`` is not modified)."""
    h = HEURISTICS.index(heuristic)
    fast = kernels.triangulate(nbm, size, (h,))
    if fast is not None:
        _, order_i, maximal_m, _ = fast
        return [names[v] for v in order_i], [frozenset(names[a] for a in _bits(m)) for m in maximal_m]
    order, formed = _eliminate(names, list(nbm), size, heuristic)
    # keep the maximal ones
    formed_sorted = sorted(set(formed), key=len, reverse=True)
    maximal: list[frozenset] = []
    for c in formed_sorted:
        if not any(c <= m for m in maximal):
            maximal.append(c)
    return order, maximal


def _best_triangulation(domain: Domain, graph, heuristic: str = "auto") -> tuple[int, list[str], list[frozenset]]:
    """``(total cells, elimination order, maximal cliques)`` of :func:`triangulate` with
    ``heuristic``, or with ``"auto"`` of the heuristic giving the fewest total cells (the
    first of :data:`HEURISTICS` on ties); the graph's bitmasks are built once, and with the
    compiled kernels every heuristic runs in one call (:func:`~.kernels.triangulate`)."""
    if heuristic != "auto" and heuristic not in HEURISTICS:
        raise ValueError(f"unknown triangulation heuristic {heuristic!r}; choose from {HEURISTICS} or 'auto'")
    names, nbm, size = masks = _graph_masks(domain, graph)
    tried = HEURISTICS if heuristic == "auto" else (heuristic,)
    fast = kernels.triangulate(nbm, size, [HEURISTICS.index(h) for h in tried])
    if fast is not None:
        _, order_i, maximal_m, total = fast
        return total, [names[v] for v in order_i], [frozenset(names[a] for a in _bits(m)) for m in maximal_m]
    best = None
    for h in tried:
        order, maximal = _eliminate_masks(*masks, h)
        total = sum(_cells(domain, c) for c in maximal)
        if best is None or total < best[0]:
            best = (total, order, maximal)
    return best


@dataclass(frozen=True, eq=False)
class JunctionTree:
    """A rooted junction tree over a domain.

    Attributes
    ----------
    domain:
        The full domain (every attribute is in at least one clique).
    cliques:
        Maximal cliques, each a tuple of attribute names in *domain order*.
    parent:
        ``parent[i]`` is the index of clique ``i``'s parent (``-1`` for the root).
    order:
        Clique indices in breadth-first order from the root (parents first).
    elimination_order:
        The vertex elimination order that produced the triangulation.
    """

    domain: Domain
    cliques: tuple[tuple[str, ...], ...]
    parent: tuple[int, ...]
    order: tuple[int, ...]
    elimination_order: tuple[str, ...]

    @property
    def root(self) -> int:
        return self.order[0]

    def separator(self, i: int) -> tuple[str, ...]:
        """Attributes clique ``i`` shares with its parent (domain order; empty for the root)."""
        p = self.parent[i]
        if p < 0:
            return ()
        other = set(self.cliques[p])
        return tuple(a for a in self.cliques[i] if a in other)

    def children(self, i: int) -> list[int]:
        return [c for c in self.order if self.parent[c] == i]

    def neighbors(self, i: int) -> list[int]:
        out = self.children(i)
        if self.parent[i] >= 0:
            out.append(self.parent[i])
        return out

    def clique_cells(self) -> list[int]:
        return list(self._cells_tuple)

    @cached_property
    def _cells_tuple(self) -> tuple[int, ...]:
        return tuple(_cells(self.domain, c) for c in self.cliques)

    @property
    def cells(self) -> int:
        """Total number of cells of all clique tables."""
        return int(sum(self.clique_cells()))

    @property
    def size_mb(self) -> float:
        """Size of one float64 copy of every clique table, in MiB (``cells * 8 / 2**20``)."""
        return self.cells * BYTES_PER_CELL / 2**20

    @cached_property
    def _sets(self) -> tuple[frozenset, ...]:
        return tuple(frozenset(c) for c in self.cliques)

    @cached_property
    def _by_cells(self) -> tuple[int, ...]:
        """Clique indices, smallest first (ties by index): ``find_clique``'s search order."""
        cells = self.clique_cells()
        return tuple(sorted(range(len(self.cliques)), key=lambda i: (cells[i], i)))

    @cached_property
    def _adjacency(self) -> tuple[frozenset, ...]:
        nb: list[set[int]] = [set() for _ in self.cliques]
        for i, p in enumerate(self.parent):
            if p >= 0:
                nb[i].add(p)
                nb[p].add(i)
        return tuple(frozenset(x) for x in nb)

    def find_clique(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs`` (None if none does; among
        equally small ones the first)."""
        want = set(attrs)
        sets = self._sets
        for i in self._by_cells:
            if want <= sets[i]:
                return i
        return None

    def covering_subtree(self, attrs: Iterable[str]) -> list[int]:
        """A connected set of cliques whose union contains ``attrs``: the whole
        tree pruned of leaves whose wanted attributes their neighbour also has
        (valid by the running-intersection property). Leaves are visited largest
        first (ties by index), in sweeps until none can go."""
        bit = self._attr_bits
        want = 0
        for a in attrs:
            want |= bit.get(a, 0)  # a name in no clique is covered by none (as before)
        masks, adj, by_size = self._clique_masks, self._adjacency_lists, self._by_size_desc
        alive = [True] * len(masks)
        n_alive = len(masks)
        changed = True
        while changed and n_alive > 1:
            changed = False
            for i in by_size:
                if not alive[i]:
                    continue
                nb = -1
                for j in adj[i]:
                    if alive[j]:
                        if nb >= 0:
                            nb = -2
                            break
                        nb = j
                if nb == -2:
                    continue
                mine = want & masks[i]
                if nb < 0:  # isolated (disconnected forest pieces joined by empty separators)
                    if not mine:
                        alive[i] = False
                        n_alive -= 1
                        changed = True
                    continue
                if mine & ~masks[nb] == 0:
                    alive[i] = False
                    n_alive -= 1
                    changed = True
                    if n_alive == 1:
                        break
        return [i for i, a in enumerate(alive) if a]

    @cached_property
    def _attr_bits(self) -> dict[str, int]:
        return {a: 1 << i for i, a in enumerate(self.domain.names)}

    @cached_property
    def _clique_masks(self) -> tuple[int, ...]:
        bit = self._attr_bits
        return tuple(functools.reduce(lambda m, a: m | bit[a], c, 0) for c in self.cliques)

    @cached_property
    def _adjacency_lists(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(sorted(nb)) for nb in self._adjacency)

    @cached_property
    def _by_size_desc(self) -> tuple[int, ...]:
        """Clique indices, largest first (ties by index)."""
        cells = self.clique_cells()
        return tuple(sorted(range(len(self.cliques)), key=lambda k: -cells[k]))

    def __repr__(self) -> str:
        return f"JunctionTree({len(self.cliques)} cliques, {self.cells} cells, {self.size_mb:.2f} MiB)"


def _clique_tree(cliques: list[tuple[str, ...]], cells: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    k = len(cliques)
    g = nx.Graph()
    g.add_nodes_from(range(k))
    sets = [set(c) for c in cliques]
    for i in range(k):
        for j in range(i + 1, k):
            # zero-weight edges join disconnected components into one tree (empty separators)
            g.add_edge(i, j, weight=len(sets[i] & sets[j]))
    tree = nx.maximum_spanning_tree(g, weight="weight", algorithm="kruskal") if k > 1 else g
    root = int(np.argmax(cells))
    parent = [-1] * k
    order = [root]
    seen = {root}
    for i in order:  # BFS; the list grows while we walk it
        for j in sorted(tree.neighbors(i)):
            if j not in seen:
                seen.add(j)
                parent[j] = i
                order.append(j)
    return tuple(parent), tuple(order)


def check_junction_tree(
    domain: Domain,
    cliques: Sequence,
    parent: Sequence,
    order: Sequence,
    elimination_order: Sequence,
    *,
    where: str = "junction tree",
) -> JunctionTree:
    """The :class:`JunctionTree` over ``domain`` with these fields, read from anywhere (e.g. a
    saved model's JSON), after checking every invariant the rest of the engine relies on:
    non-empty cliques of known attributes in domain order that cover the domain, one parent
    index in ``[-1, k)`` per clique, ``order`` a breadth-first order (parents first) of a tree
    rooted at its first clique, the running-intersection property (the cliques holding an
    attribute form a subtree; Koller & Friedman 2009, §10.1.2), and ``elimination_order`` an
    ordering of the attributes. ``ValueError`` naming ``where`` and the field
    (``"{where}.parent: ..."``)."""
    k = len(cliques)
    if k == 0:
        raise ValueError(f"{where}.cliques: no cliques")
    cl = []
    for i, c in enumerate(cliques):
        try:
            if not isinstance(c, (list, tuple)) or not c or not all(isinstance(a, str) for a in c):
                raise ValueError(f"{c!r} is not a non-empty list of attribute names")
            c = domain.check_attrs(c, "clique")
            if c != domain.canonical(c):
                raise ValueError(f"{list(c)} is not in domain order {list(domain.canonical(c))}")
            cl.append(c)
        except ValueError as exc:
            raise ValueError(f"{where}.cliques[{i}]: {exc}") from None
    if sorted({a for c in cl for a in c}, key=domain.index) != list(domain.names):
        raise ValueError(f"{where}.cliques: they do not cover every attribute of the model's domain")
    if len(parent) != k or not all(isinstance(p, int) and not isinstance(p, bool) and -1 <= p < k for p in parent):
        raise ValueError(f"{where}.parent: {parent!r} is not one index in [-1, {k}) per clique")
    if not all(isinstance(o, int) and not isinstance(o, bool) for o in order) or sorted(order) != list(range(k)):
        raise ValueError(f"{where}.order: {order!r} is not a permutation of the {k} clique indices")
    pos = {c: i for i, c in enumerate(order)}
    if parent[order[0]] != -1 or any(parent[c] == -1 or pos[parent[c]] >= pos[c] for c in order[1:]):
        raise ValueError(
            f"{where}.order: it is not a breadth-first order of a tree rooted at its first clique (parents first)"
        )
    for a in domain.names:  # running intersection: the cliques holding ``a`` form a subtree
        holding = [c for c in range(k) if a in cl[c]]
        tops = [c for c in holding if parent[c] not in holding]
        if len(tops) != 1:
            raise ValueError(f"{where}.cliques: attribute {a!r} breaks the running-intersection property")
    if not all(isinstance(e, str) for e in elimination_order) or sorted(elimination_order) != sorted(domain.names):
        raise ValueError(f"{where}.elimination_order: it is not an ordering of the model's attributes")
    return JunctionTree(domain, tuple(cl), tuple(parent), tuple(order), tuple(elimination_order))


def build_junction_tree(
    domain: Domain,
    cliques: Iterable[Sequence[str]],
    *,
    heuristic: str = "auto",
    memory_limit_mb: float | None = None,
) -> JunctionTree:
    """Junction tree of the graphical model with one factor per clique (Fact 1,
    NIST-MST/MST paper §4.2; construction of Koller & Friedman 2009, §10.4.2:
    triangulate, take maximal cliques, maximum spanning tree on separator sizes).

    ``heuristic="auto"`` tries every greedy heuristic of :func:`triangulate`
    and keeps the triangulation with the fewest total cells ("min-fill or
    better"). Attributes in no clique become singleton cliques. Raises
    :class:`ModelTooLargeError` (a ``ValueError``) when the tree's size
    exceeds ``memory_limit_mb``.
    """
    cliques = [domain.check_attrs(c, "clique") for c in cliques]
    graph = _model_graph(domain, cliques)
    total, order, maximal = _best_triangulation(domain, graph, heuristic)
    size_mb = total * BYTES_PER_CELL / 2**20
    if memory_limit_mb is not None and size_mb > memory_limit_mb:
        big = max(maximal, key=lambda c: _cells(domain, c))
        raise ModelTooLargeError(
            f"junction tree would need {size_mb:,.1f} MiB ({total:,} cells) > memory limit {memory_limit_mb:,.1f} MiB; "
            f"largest clique {domain.canonical(big)} has {_cells(domain, big):,} cells"
        )
    cl = sorted((domain.canonical(c) for c in maximal), key=lambda c: [domain.index(a) for a in c])
    cells = [_cells(domain, c) for c in cl]
    parent, bfs = _clique_tree(cl, cells)
    return JunctionTree(domain, tuple(cl), parent, bfs, tuple(order))


def junction_tree_size(
    domain: Domain, cliques: Iterable[Sequence[str]], *, heuristic: str = "auto"
) -> tuple[int, float]:
    """``(cells, MiB)`` of the junction tree for ``cliques`` — no arrays allocated.

    Cheap enough to call for every candidate clique in AIM's selection step.
    """
    cliques = [domain.check_attrs(c, "clique") for c in cliques]
    total = _best_triangulation(domain, _model_graph(domain, cliques), heuristic)[0]
    return int(total), total * BYTES_PER_CELL / 2**20


def splice_clique(
    tree: JunctionTree, clique: Sequence[str], *, heuristic: str = "auto", cache: dict | None = None
) -> tuple[list[tuple[str, ...]], int]:
    """Maximal cliques (and their total cells) of a junction tree for ``tree``'s model
    with ``clique`` added, re-triangulating only the part of ``tree`` it touches.

    The smallest connected set ``S`` of cliques covering ``clique``
    (:meth:`JunctionTree.covering_subtree`) spans the attributes ``V``; the chordal
    graph of ``tree`` restricted to ``V`` (its cliques in ``S``, made complete) plus
    the edges of ``clique`` is triangulated again (greedy elimination,
    :func:`triangulate`; ``"auto"``: the best of the heuristics) and its maximal
    cliques replace ``S``. Every other clique meets ``V`` only in a separator, which
    is complete in both parts, so the result is chordal (a clique-sum of chordal
    graphs; Koller & Friedman 2009, §10.4) and contains ``clique``: a valid junction
    tree, in ``O(|V|^3)`` instead of a triangulation of the whole graph. This is the
    incremental size test of AIM's candidate filter (McKenna et al., PVLDB 2022,
    arXiv:2201.12677, Alg. 2 line 8, ``JT-SIZE(M ∪ {r})``; see docs/notes/aim.md).

    If ``clique`` already lies in a clique of ``tree``, returns ``tree``'s cliques.
    ``cache``: a dict owned by the caller that keeps the re-triangulation of each
    (covering cliques, ``clique``) pair, for callers that splice the same candidates into
    a slowly changing tree (AIM's rounds).
    """
    dom = tree.domain
    clique = dom.check_attrs(clique, "clique")
    if tree.find_clique(clique) is not None:
        return list(tree.cliques), tree.cells
    sub = tree.covering_subtree(clique)
    inside = set(sub)
    key = (clique, tuple(tree.cliques[i] for i in sub), heuristic)
    hit = cache.get(key) if cache is not None else None
    if hit is None:
        V = set(clique).union(*(tree.cliques[i] for i in sub))
        adj: dict[str, set[str]] = {a: set() for a in V}
        for cl in [*(tree.cliques[i] for i in sub), clique]:
            for a in cl:
                adj[a].update(cl)
                adj[a].discard(a)
        total, _, maximal = _best_triangulation(dom, adj, heuristic)
        new = [frozenset(m) for m in maximal]
        hit = ([tuple(dom.canonical(m)) for m in new], frozenset(V), new, total)
        if cache is not None:
            cache[key] = hit
    out_new, V, new, cells = hit
    out = list(out_new)
    sets, sizes = tree._sets, tree._cells_tuple
    for i, c in enumerate(tree.cliques):
        # a clique outside the subtree stays unless a new clique holds it (only possible
        # when all its attributes are in V)
        if i not in inside and not (sets[i] <= V and any(sets[i] <= m for m in new)):
            out.append(c)
            cells += sizes[i]
    return out, int(cells)
