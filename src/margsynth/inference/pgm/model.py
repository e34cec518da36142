"""The fitted graphical model ``P_theta``: marginals and synthetic data.

A :class:`GraphicalModel` is a junction tree, one log-potential table per
clique (``P_theta(x) ∝ exp(sum_C theta_C(x_C))``, Fact 1 of the NIST-MST/MST
paper, §4.2), and a total record count ``N``. Its calibrated clique marginals
are computed once at construction; :meth:`project` answers any marginal,
measured or not (Examples 1-2), and :meth:`synthetic_data` turns the model
into records by the rounding procedure of Algorithms 7-8 (or by i.i.d.
sampling, Example 3's comparison).

Structural zeros (cells a rule forbids, :mod:`margsynth.rules`; ``estimate(...,
rules=...)``) are log-potentials ``-inf``: those cells have probability exactly 0 in every
marginal (exact-zero belief propagation, :mod:`margsynth.inference.pgm.inference`), so no record drawn from the
model lands on one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...dataset import Dataset, _smallest_int_dtype
from ...domain import Domain
from ..repair import factors_log_conditional
from .factor import Factor, align
from .inference import BeliefPropagation, marginal
from .junction_tree import JunctionTree, build_junction_tree

__all__ = ["GraphicalModel", "synthetic_column"]


@dataclass(eq=False)
class GraphicalModel:
    """A calibrated junction-tree model with total ``total``.

    Build one with :func:`~margsynth.inference.pgm.estimation.estimate` or
    :meth:`from_factors`; ``theta`` is a list of log-potential arrays, one per
    ``tree.cliques[i]`` (axes in domain order), finite or ``-inf`` (a structural zero:
    probability exactly 0; some assignment must be left with a finite potential).
    """

    domain: Domain
    tree: JunctionTree
    theta: list[np.ndarray]
    total: float
    stats: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not np.isfinite(self.total) or self.total <= 0:
            raise ValueError(f"model total must be finite and > 0, got {self.total!r}")
        if len(self.theta) != len(self.tree.cliques):
            raise ValueError(f"theta has {len(self.theta)} tables for {len(self.tree.cliques)} cliques")
        self.theta = [np.asarray(t, dtype=np.float64) for t in self.theta]
        self._bp = BeliefPropagation(self.tree)
        for c, t, shape in zip(self.tree.cliques, self.theta, self._bp.shapes):
            if t.shape != shape:
                raise ValueError(f"theta for clique {c} has shape {t.shape}, expected {shape}")
            if np.isnan(t).any() or np.isposinf(t).any():
                raise ValueError(f"theta for clique {c} has NaN or +inf entries")
        self.has_zeros = not all(np.all(np.isfinite(t)) for t in self.theta)
        flat = np.empty(self._bp.size)
        self._probs = self._bp.views(flat)
        if self.has_zeros:
            if any(not np.isfinite(t).any() for t in self.theta):
                raise ValueError("theta: a clique has no cell with a finite potential; no record is possible")
            with np.errstate(invalid="ignore", divide="ignore"):  # a model without a possible record: refused below
                self.log_partition = self._bp.calibrate(self.theta, self._probs, exact_zeros=True)
            if not np.isfinite(self.log_partition):
                raise ValueError("theta: its structural zeros (-inf) leave no possible record")
        else:
            self.log_partition = self._bp.calibrate(self.theta, self._probs)
        for p in self._probs:
            p.setflags(write=False)
        self._cond_cache: dict = {}  # P(x_{C\\S} | x_S) per clique, filled by ``probabilities``

    # -- construction ------------------------------------------------------
    @classmethod
    def from_factors(
        cls, domain: Domain, factors: Iterable[Factor], total: float = 1.0, *, memory_limit_mb: float | None = None
    ) -> GraphicalModel:
        """The model ``∝ exp(sum of factors)`` (log-potentials over attribute subsets)."""
        factors = list(factors)
        tree = build_junction_tree(domain, [f.attrs for f in factors], memory_limit_mb=memory_limit_mb)
        theta = [np.zeros(tuple(domain[a].size for a in c)) for c in tree.cliques]
        for f in factors:
            i = tree.find_clique(f.attrs)
            theta[i] = theta[i] + align(np.asarray(f.values, dtype=np.float64), f.attrs, tree.cliques[i])
        return cls(domain, tree, theta, float(total))

    # -- marginals -----------------------------------------------------------
    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        return self.tree.cliques

    @property
    def size_mb(self) -> float:
        return self.tree.size_mb

    def clique_marginals(self) -> list[np.ndarray]:
        """Calibrated clique marginals as probabilities (read-only views)."""
        return list(self._probs)

    def probabilities(self, attrs: Sequence[str] | str) -> np.ndarray:
        """``P_theta`` marginal over ``attrs`` (in the order given), summing to one."""
        attrs = self.domain.check_attrs(attrs, "marginal attributes")
        return marginal(self.tree, self._probs, attrs, cache=self._cond_cache)

    def project(self, attrs: Sequence[str] | str) -> np.ndarray:
        """Estimated marginal counts ``N * M_attrs(P_theta)``, shape ``domain.project(attrs).shape``.

        Any attribute subset works: inside a clique it is a sum of the clique
        marginal, otherwise variable elimination (Example 2: marginals that
        were never measured).
        """
        return self.total * self.probabilities(attrs)

    def log_conditional(self, attrs: Sequence[str] | str, codes: np.ndarray) -> np.ndarray:
        """``log P_theta(x_attrs | x_rest)`` per record, up to a constant per record: for
        records ``codes`` (``k`` rows, one column per attribute of the domain), the sum over
        the cliques that meet ``attrs`` of their log-potential at the record's values of the
        clique's other attributes — the full conditional of a Gibbs step, since ``P_theta(x)
        ∝ exp(sum_C theta_C(x_C))`` and the cliques that miss ``attrs`` do not depend on them.
        Shape ``(k, *sizes of attrs)`` (axes in the order given); ``-inf`` where a structural
        zero forbids the value given the rest."""
        attrs = self.domain.check_attrs(attrs, "conditional attributes")
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.domain):
            raise ValueError(f"codes must have one column per attribute ({len(self.domain)}), got shape {codes.shape}")
        return factors_log_conditional(self.domain, zip(self.tree.cliques, self.theta), attrs, codes)

    # -- synthetic data (Algorithms 7-8) ---------------------------------------
    def synthesis_plan(self) -> list[tuple[str, tuple[str, ...], int]]:
        """Attribute order of Algorithm 8 with each attribute's conditioning set.

        Attributes come clique by clique in the tree's breadth-first order
        (root first), which reverses a perfect elimination order of the
        triangulated graph; attribute ``i``'s already-generated neighbours
        then all lie in the first clique containing ``i`` (running
        intersection), whose index is returned as the third element.
        """
        tree = self.tree
        done: list[str] = []
        plan = []
        for c in tree.order:
            clique = tree.cliques[c]
            for a in clique:
                if a in done:
                    continue
                cond = tuple(b for b in clique if b in done)
                plan.append((a, cond, c))
                done.append(a)
        return plan

    def synthetic_data(
        self, n: int | None = None, rng: np.random.Generator | None = None, method: str = "round"
    ) -> Dataset:
        """``n`` synthetic records (default: the model total, rounded).

        ``method="round"`` is Algorithm 8 of the NIST-MST/MST paper
        (appendix): attribute by attribute, records are grouped by their
        already-generated neighbours ``C`` and each group of ``n_g`` records
        gets a column from Algorithm 7 (:func:`synthetic_column`) with fractional
        counts ``mu = n_g * P_theta(x_i | x_C = g)`` — so each (group, value)
        count is within one record of ``mu``. ``method="sample"`` draws every
        value i.i.d. from the same conditionals (plain ancestral sampling; the
        comparison of Example 3). Fully vectorised: one pass per attribute,
        no Python loop over groups or records.
        """
        if not isinstance(rng, np.random.Generator):
            raise ValueError("synthetic_data needs an explicit numpy.random.Generator as rng")
        if method not in ("round", "sample"):
            raise ValueError(f"method must be 'round' or 'sample', got {method!r}")
        if n is None:
            n = int(round(self.total))
        if int(n) != n or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        n = int(n)
        dom = self.domain
        codes = np.zeros((n, len(dom)), dtype=_smallest_int_dtype(max(dom.shape, default=1)), order="F")
        for attr, cond, c in self.synthesis_plan():
            k = dom[attr].size
            table = align(self._probs[c], self.tree.cliques[c], (*cond, attr), reduce=True)
            table = np.ascontiguousarray(table).reshape(-1, k)
            if cond:
                gshape = tuple(dom[a].size for a in cond)
                g = np.ravel_multi_index(tuple(codes[:, dom.index(a)].astype(np.intp) for a in cond), gshape)
            else:
                g = np.zeros(n, dtype=np.intp)
            col = _round_column(table, g, rng) if method == "round" else _sample_column(table, g, rng)
            codes[:, dom.index(attr)] = col
        return Dataset._trusted(codes, dom)


def _conditionals(table: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Rows ``P(x_i | g)`` for the given group ids (uniform where the group has mass 0)."""
    rows = table[groups]
    s = rows.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = np.where(s > 0, rows / s, 1.0 / table.shape[1])
    return rows


def synthetic_column(mu: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 7 (NIST-MST/MST paper, appendix) for one vector of fractional counts.

    ``floor(mu_t)`` copies of each value ``t``, then ``n - sum floor(mu)``
    more drawn without replacement with probabilities proportional to the
    remainders ``mu_t - floor(mu_t)``, then shuffled. Requires ``sum(mu) == n``
    (up to rounding).
    """
    mu = np.asarray(mu, dtype=np.float64)
    table = (mu / mu.sum())[None, :] if mu.sum() > 0 else np.full((1, mu.size), 1.0 / mu.size)
    return _round_column(table, np.zeros(n, dtype=np.intp), rng)


def _round_column(table: np.ndarray, g: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 7 applied to every group at once (the inner loop of Algorithm 8)."""
    n = g.size
    k = table.shape[1]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    groups, inv, n_g = _groups(g)
    mu = _conditionals(table, groups) * n_g[:, None]  # fractional counts per (group, value)
    floors = np.floor(mu)
    # floating error could make the floors overshoot n_g by one; trim the largest
    extra = n_g - floors.sum(axis=1).astype(np.int64)
    over = np.flatnonzero(extra < 0)
    for r in over:  # pathological (sum of floors > n_g through rounding); at most a few rows
        while extra[r] < 0:
            t = int(np.argmax(floors[r]))
            floors[r, t] -= 1
            extra[r] += 1
    rem = mu - floors
    # weighted sampling without replacement of extra[g] values per group, proportional to the
    # remainders: Efraimidis-Spirakis keys log(u)/w, keep the extra[g] largest keys per group
    rr, tt = np.nonzero(rem > 0)
    w = rem[rr, tt]
    keys = np.log(rng.random(rr.size)) / w
    counts = floors.astype(np.int64)
    if rr.size:
        order = np.lexsort((-keys, rr))  # by group, then key descending
        rr_s, tt_s = rr[order], tt[order]
        first = np.searchsorted(rr_s, np.arange(groups.size))
        rank = np.arange(rr_s.size) - first[rr_s]
        take = rank < extra[rr_s]
        np.add.at(counts, (rr_s[take], tt_s[take]), 1)
        short = extra - np.bincount(rr_s[take], minlength=groups.size)
    else:
        short = extra
    # if remainders were too few (float round-off), top up with the most likely values
    for r in np.flatnonzero(short > 0):
        order_t = np.argsort(-mu[r])
        for j in range(int(short[r])):
            counts[r, order_t[j % k]] += 1
    # column values grouped by group, in value order; then a random order within each group
    vals = np.repeat(np.tile(np.arange(k), groups.size), counts.ravel())
    vals_group = np.repeat(np.arange(groups.size), counts.sum(axis=1))
    shuffle = _by_group_then_key(vals_group, rng.random(n))
    vals = vals[shuffle]
    # records sorted by group receive the group's values
    rec_order = _stable_order(inv)
    out = np.empty(n, dtype=np.int64)
    out[rec_order] = vals
    return out


def _groups(g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(g, return_inverse=True, return_counts=True)`` of non-negative group ids,
    by counting when their range is small (the same arrays, without a sort)."""
    top = int(g.max()) + 1 if g.size else 0
    if top > 4 * g.size + (1 << 16):
        return np.unique(g, return_inverse=True, return_counts=True)
    counts = np.bincount(g, minlength=top)
    present = counts > 0
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[g], counts[present]


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of non-negative integer keys, by numpy's radix
    sort when they fit 16 bits (the stable order is unique: the same indices)."""
    if keys.size and int(keys.max()) < (1 << 16):
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


def _by_group_then_key(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``np.lexsort((key, group))``: indices by group, then key, then index — a stable sort
    by key, then a stable sort of that by group."""
    by_key = np.argsort(key, kind="stable")
    return by_key[_stable_order(group[by_key])]


def _sample_column(table: np.ndarray, g: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """i.i.d. draws ``x ~ P(x_i | g)`` for every record (inverse CDF, vectorised)."""
    n = g.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    groups, inv = np.unique(g, return_inverse=True)
    cdf = np.cumsum(_conditionals(table, groups), axis=1)
    cdf[:, -1] = 1.0
    u = rng.random(n)
    # per record: first value whose cdf exceeds u
    flat = (cdf + np.arange(groups.size)[:, None]).ravel()
    pos = np.searchsorted(flat, u + inv, side="right")
    return np.minimum(pos - inv * table.shape[1], table.shape[1] - 1)
