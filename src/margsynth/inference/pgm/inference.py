"""Exact marginal inference on a junction tree.

:class:`BeliefPropagation` compiles a :class:`~.junction_tree.JunctionTree`
into a fixed message schedule and runs the sum-product algorithm on
log-potentials ``theta_C`` (Koller & Friedman 2009, §10.2-10.3; the marginal
oracle ``M_C(P_theta)`` of Eq. (4.2) in the NIST-MST/MST paper, §4.2):

* **collect** (leaves to root, log space): clique ``C`` with parent ``P`` and
  separator ``S`` forms its upward belief ``b_C = theta_C + sum of its
  children's messages`` and sends ``m_{C->P}(x_S) = logsumexp_{x_{C\\S}} b_C``,
  computed with the per-separator-value maximum subtracted (no overflow, no
  underflow of a whole slice);
* **distribute** (root to leaves): the root's marginal is ``softmax(b_root)``;
  each child's marginal is ``mu_C = mu_S * exp(b_C - m_{C->P})`` — the
  parent's separator marginal times the child's conditional
  ``P(x_{C\\S} | x_S)``, which the collect pass already computed (Hugin-style
  distribution; one ``exp`` per clique per call, and the conditional's
  denominator is >= 1 so the division is safe). Conditionals are floored at
  ``exp(LOG_FLOOR)`` and separator probabilities at ``PROB_FLOOR``, so no
  underflow or subnormal number (10-100x slower arithmetic) ever appears.

Structural zeros (cells a rule forbids, :mod:`margsynth.rules`) are log-potentials ``-inf``:
with ``exact_zeros`` (or ``zeros=`` on flat vectors) the passes give every cell whose
belief is ``-inf`` probability exactly 0 — the floors above apply to positive
probabilities only — and a separator value that no cell of the child reaches probability 0
(no ``0 / 0``). Without zeros the arithmetic is unchanged.

Marginals of attribute sets inside no clique (Example 2 of the paper) come
from :func:`variable_elimination` over the calibrated clique and separator
marginals of a covering subtree, ``P(x_T) = prod_C mu_C / prod_S mu_S``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import kernels
from .factor import Factor, align, contract
from .junction_tree import JunctionTree

__all__ = ["BeliefPropagation", "marginal", "variable_elimination"]

# Numerical floor against subnormal floats (which slow x86 arithmetic ~100x): inside
# ``calibrate`` a conditional ``P(x_{C\\S} | x_S)`` is never below exp(LOG_FLOOR) relative to
# the largest entry of its slice, and a separator probability never below PROB_FLOOR (1e-150).
# Both are far below anything a count can show; exactness tests are unaffected.
LOG_FLOOR = -250.0
PROB_FLOOR = 1e-150
# the ufunc reductions themselves (what ndarray.sum/max call, without the wrapper's overhead;
# the hot loop makes ~10^6 of these small reductions)
_SUM = np.add.reduce
_MAX = np.maximum.reduce


class BeliefPropagation:
    """A compiled two-pass sum-product schedule for one junction tree (numpy).

    Parameters live in one flat float64 vector (``theta``) and marginals are
    written into another (``probs``); :meth:`views` gives per-clique shaped
    views into such a vector. ``calibrate`` does no allocation beyond the
    per-clique temporaries of the messages themselves.
    """

    def __init__(self, tree: JunctionTree) -> None:
        self.tree = tree
        dom = tree.domain
        self.shapes = [tuple(dom[a].size for a in c) for c in tree.cliques]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])
        self.root = tree.root
        self.parent = tree.parent
        up, down = [], []
        for c in reversed(tree.order[1:]):
            p = tree.parent[c]
            sep = set(tree.separator(c))
            cl, pl = tree.cliques[c], tree.cliques[p]
            sum_axes = tuple(i for i, a in enumerate(cl) if a not in sep)
            to_parent = tuple(dom[a].size if a in sep else 1 for a in pl)
            up.append((c, p, sum_axes, to_parent))
        for c in tree.order[1:]:
            p = tree.parent[c]
            sep = set(tree.separator(c))
            cl, pl = tree.cliques[c], tree.cliques[p]
            p_axes = tuple(i for i, a in enumerate(pl) if a not in sep)
            to_child = tuple(dom[a].size if a in sep else 1 for a in cl)
            down.append((c, p, p_axes, to_child))
        self._up, self._down = up, down
        self._index = None  # the compiled kernel's edge tables, built on first use
        self._scratch = self.views(np.empty(self.size))
        # per-edge buffers of the reductions (no allocation in the hot loop)
        k = len(tree.cliques)
        self._mx: list = [None] * k
        self._sums: list = [None] * k
        self._msgs: list = [None] * k
        self._seps: list = [None] * k
        for c, _, axes, _ in up:
            kept = tuple(1 if i in axes else n for i, n in enumerate(self.shapes[c]))
            self._mx[c], self._sums[c], self._msgs[c] = np.empty(kept), np.empty(kept), np.empty(kept)
        for c, p, axes, _ in down:
            self._seps[c] = np.empty(tuple(n for i, n in enumerate(self.shapes[p]) if i not in axes))

    def calibrate_flat(
        self, theta: np.ndarray, out: np.ndarray, *, compiled: bool = True, zeros: np.ndarray | None = None
    ) -> float:
        """:meth:`calibrate` on flat vectors of length ``self.size`` (the layout of
        :meth:`views`). ``compiled=True`` (default) runs the compiled kernel of
        :mod:`~margsynth.inference.pgm.kernels` when numba is available (one call, no per-edge numpy calls), else
        the numpy schedule; the two agree to rounding. ``zeros`` (flat, ``0`` or ``-inf``
        per cell) is added to ``theta``: the structural zeros of a model with rules, cells
        of probability exactly 0."""
        if compiled and kernels.AVAILABLE:
            ix = self._index
            if ix is None:
                ix = self._index = kernels.EdgeIndex(self)
            return kernels.calibrate_flat(ix, theta, out, LOG_FLOOR, PROB_FLOOR, zeros)
        if zeros is not None:
            return self.calibrate(self.views(theta + zeros), self.views(out), exact_zeros=True)
        return self.calibrate(self.views(theta), self.views(out))

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Per-clique shaped views into a flat vector of length ``self.size``."""
        o = self.offsets
        return [flat[o[i] : o[i + 1]].reshape(s) for i, s in enumerate(self.shapes)]

    def calibrate(self, theta: Sequence[np.ndarray], out: Sequence[np.ndarray], *, exact_zeros: bool = False) -> float:
        """Clique marginals (probabilities) of ``P_theta`` into ``out``; returns ``log Z``.

        Uses per-clique scratch buffers owned by this object (not re-entrant). The numpy
        schedule; :meth:`calibrate_flat` runs the compiled kernel on flat vectors.
        ``exact_zeros``: ``theta`` may hold ``-inf`` (structural zeros), whose cells get
        probability exactly 0 (module docstring).
        """
        buf = self._scratch
        acc = list(theta)
        owned = [False] * len(acc)
        cond_s: list = [None] * len(acc)
        for c, p, axes, to_parent in self._up:
            x = acc[c]
            mx = _MAX(x, axis=axes, keepdims=True, out=self._mx[c])
            e = buf[c]
            if exact_zeros:
                zero = np.isneginf(x)  # before e is written: x may be e (a parent's belief lives there)
                with np.errstate(invalid="ignore"):  # -inf - -inf on slices without an allowed cell
                    np.subtract(x, mx, out=e)
                np.maximum(e, LOG_FLOOR, out=e)
                np.exp(e, out=e)
                e[zero] = 0.0
            else:
                np.subtract(x, mx, out=e)
                np.maximum(e, LOG_FLOOR, out=e)
                np.exp(e, out=e)
            s = _SUM(e, axis=axes, keepdims=True, out=self._sums[c])
            cond_s[c] = s
            if exact_zeros:
                with np.errstate(divide="ignore"):  # log 0 = -inf: a separator value no allowed cell reaches
                    msg = np.log(s, out=self._msgs[c])
            else:
                msg = np.log(s, out=self._msgs[c])
            msg += mx
            msg = msg.reshape(to_parent)
            if owned[p]:
                acc[p] += msg
            else:
                acc[p] = np.add(acc[p], msg, out=buf[p])
                owned[p] = True
        r = self.root
        x = acc[r]
        mx = x.max()
        e = buf[r]
        zero = np.isneginf(x) if exact_zeros else None  # before e is written (x may be e)
        np.subtract(x, mx, out=e)
        np.maximum(e, LOG_FLOOR, out=e)
        np.exp(e, out=e)
        if zero is not None:
            e[zero] = 0.0
        z = e.sum()
        np.multiply(e, 1.0 / z, out=out[r])
        for c, p, axes, to_child in self._down:
            ps = _SUM(out[p], axis=axes, out=self._seps[c]).reshape(to_child)
            if exact_zeros:
                reached = cond_s[c] > 0
                np.divide(ps, cond_s[c], out=ps, where=reached)
                ps[~reached] = 0.0
                np.maximum(ps, PROB_FLOOR, out=ps, where=ps > 0)
            else:
                ps /= cond_s[c]
                np.maximum(ps, PROB_FLOOR, out=ps)
            np.multiply(buf[c], ps, out=out[c])
        return float(np.log(z) + mx)

    def max_product(self, theta: Sequence[np.ndarray], *, assignment: bool = False):
        """``max_x sum_C theta_C(x_C)`` by log-space max-product (Koller & Friedman 2009,
        §13.3: max-sum message passing on a clique tree is exact).

        The collect pass of :meth:`calibrate` with ``max`` in place of ``logsumexp``:
        clique ``C`` sends ``m_{C->P}(x_S) = max_{x_{C\\S}} (theta_C + sum of its
        children's messages)``; the maximum of the root's belief is the MAP value.
        With ``assignment=True`` a decoding pass (root to leaves, each clique's
        maximiser given its separator's values) returns ``(value, x)``, ``x`` a
        dict attribute -> code of one maximising joint assignment.

        This is the linear minimisation oracle of the Frank–Wolfe gap (the certificate
        of :func:`~.estimation.estimate` reads it off :meth:`max_marginals`, which also
        gives its dual bounds): a linear function over the marginal polytope
        is minimised at a point mass (McKenna, Sheldon & Miklau, ICML 2019,
        arXiv:1901.09136, §4 — the polytope's vertices are the integral marginals).
        """
        acc = [np.asarray(t, dtype=np.float64) for t in theta]
        owned = [False] * len(acc)
        for c, p, axes, to_parent in self._up:
            msg = acc[c].max(axis=axes, keepdims=True).reshape(to_parent)
            if owned[p]:
                acc[p] += msg
            else:
                acc[p] = acc[p] + msg
                owned[p] = True
        r = self.root
        value = float(acc[r].max())
        if not assignment:
            return value
        tree = self.tree
        x: dict[str, int] = {}
        for c in tree.order:  # parents first: the separator is fixed when the child is decoded
            cl = tree.cliques[c]
            belief = acc[c]
            index = tuple(x[a] if a in x else slice(None) for a in cl)
            sub = belief[index]
            free = [a for a in cl if a not in x]
            if free:
                pos = np.unravel_index(int(np.argmax(sub)), sub.shape)
                for a, v in zip(free, pos):
                    x[a] = int(v)
        return value, x


    def max_marginals(self, theta: Sequence[np.ndarray], *, exact_zeros: bool = False) -> list[np.ndarray]:
        """Per clique ``C``, the max-marginal ``max_{x' : x'_C = x_C} sum_D theta_D(x'_D)``
        (a table over ``C``'s cells; Koller & Friedman 2009, §13.3.1: max-sum calibration of a
        clique tree). The collect pass of :meth:`max_product`, then a distribute pass that
        sends each child the maximum of its parent's belief less the child's own message.
        Every clique's table has the same maximum, the MAP value. ``exact_zeros``: ``theta``
        may hold ``-inf`` (structural zeros); a cell that no allowed assignment reaches has
        max-marginal ``-inf``."""
        acc = [np.array(t, dtype=np.float64) for t in theta]
        msgs: list = [None] * len(acc)
        for c, p, axes, to_parent in self._up:
            msgs[c] = acc[c].max(axis=axes, keepdims=True).reshape(to_parent)
            acc[p] += msgs[c]
        for c, p, axes, to_child in self._down:
            if exact_zeros:  # -inf - -inf: a parent cell whose separator value the child cannot reach
                with np.errstate(invalid="ignore"):
                    d = acc[p] - msgs[c]
                d[np.isnan(d)] = -np.inf
                acc[c] += d.max(axis=axes).reshape(to_child)
            else:
                acc[c] += (acc[p] - msgs[c]).max(axis=axes).reshape(to_child)
        return acc


    def decompose(self, mm: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The reparametrisation of ``theta`` given its max-marginals ``mm``
        (:meth:`max_marginals`): ``phi_R = mm_R`` at the root and ``phi_C = mm_C - mm_{S_C} <=
        0`` below it (``mm_{S_C}`` the separator's max-marginal, read off ``mm_C``), so that
        ``sum_C phi_C(x_C) = sum_C theta_C(x_C)`` at every assignment ``x`` (the messages of
        a calibrated clique tree cancel; Koller & Friedman 2009, §13.3)."""
        out = [np.array(t, dtype=np.float64) for t in mm]
        for c, _, axes, _ in self._up:
            t = out[c]
            t -= t.max(axis=axes, keepdims=True) if axes else t
        return out


def _safe_neglog(p: np.ndarray) -> np.ndarray:
    """``-log p`` with 0 where ``p == 0`` (those cells are already -inf in a clique term)."""
    out = np.zeros_like(p, dtype=np.float64)
    pos = p > 0
    out[pos] = -np.log(p[pos])
    return out


def variable_elimination(factors: list[Factor], keep: Sequence[str], sizes: dict[str, int]) -> Factor:
    """Sum out every attribute not in ``keep`` from the log-space product of
    ``factors`` (Koller & Friedman 2009, Alg. 9.1), greedily eliminating the
    attribute whose elimination creates the smallest table; returns the
    normalised log-marginal over ``keep`` (in that order)."""
    keep = tuple(keep)
    factors = list(factors)
    elim = {a for f in factors for a in f.attrs} - set(keep)
    while elim:

        def cost(v, factors=factors):
            scope = {a for f in factors if v in f.attrs for a in f.attrs}
            return float(np.prod([sizes[a] for a in scope])), v

        v = min(elim, key=cost)
        touching = [f for f in factors if v in f.attrs]
        rest = [f for f in factors if v not in f.attrs]
        prod = touching[0]
        for f in touching[1:]:
            prod = prod * f
        factors = [*rest, prod.logsumexp([v])]
        elim.discard(v)
    missing = [a for a in keep if not any(a in f.attrs for f in factors)]
    if missing:
        raise ValueError(f"variable elimination: no factor mentions {missing}")
    prod = factors[0]
    for f in factors[1:]:
        prod = prod * f
    return prod.transpose(keep).normalize()


def marginal(
    tree: JunctionTree,
    probs: Sequence[np.ndarray],
    attrs: Sequence[str],
    *,
    method: str = "einsum",
    cache: dict | None = None,
) -> np.ndarray:
    """Probability table over ``attrs`` (in the given order) of the calibrated model.

    Inside a clique: a sum over that clique's marginal. Otherwise variable
    elimination over the smallest covering subtree ``T`` of the junction tree,
    using the junction-tree factorisation ``P(x_T) = mu_R prod_{C != R} P(x_{C\\S_C} | x_{S_C})``
    (``R`` the subtree's top clique, ``S_C`` the separator to the parent):
    ``method="einsum"`` (default) contracts those probability tables in one
    optimised ``einsum`` (:func:`~.factor.contract`); ``method="log"`` runs
    log-space :func:`variable_elimination` on ``log mu_C - log mu_S`` (slower,
    for checking; also the fallback when the subtree has more than 52 attributes).
    Each factor is first summed down to the attributes it shares with the others or
    the output (its separators inside the subtree and the wanted attributes).
    ``cache`` (a dict owned by the caller, e.g. the model) keeps the conditional tables
    and those reduced tables between calls: queries that meet a clique in the same
    attributes (AIM scoring hundreds of candidates on one model) sum it down once.
    """
    attrs = tuple(attrs)
    if not attrs:
        return np.ones(())
    i = tree.find_clique(attrs)
    if i is not None:
        return np.ascontiguousarray(align(probs[i], tree.cliques[i], attrs, reduce=True))
    sub = set(tree.covering_subtree(attrs))
    n_attrs = len({a for c in sub for a in tree.cliques[c]})
    if method == "einsum" and n_attrs <= 52:
        ops = []
        want = set(attrs)
        for c in sorted(sub):
            p = tree.parent[c]
            sep = tree.separator(c) if p >= 0 and p in sub else ()
            # the attributes this factor shares with the rest of the contraction: the wanted
            # ones and its separators inside the subtree (by the running-intersection
            # property no other clique of the subtree holds any other attribute of it, so
            # those are summed out of this factor alone, before the contraction)
            shared = want.union(sep, *(tree.separator(k) for k in tree.children(c) if k in sub))
            kept = tuple(a for a in tree.cliques[c] if a in shared)
            key = ("reduced", c, kept, bool(sep))  # a conditional below the top, a marginal at it
            table = cache.get(key) if cache is not None else None
            if table is None:
                if sep:
                    cond = cache.get(c) if cache is not None else None
                    if cond is None:
                        ps = align(probs[c], tree.cliques[c], sep, reduce=True)
                        inv = np.zeros_like(ps)
                        np.divide(1.0, ps, out=inv, where=ps > 0)
                        cond = probs[c] * align(inv, sep, tree.cliques[c])
                        if cache is not None:
                            cache[c] = cond
                else:
                    cond = probs[c]
                table = align(cond, tree.cliques[c], kept, reduce=True)
                if cache is not None:
                    cache[key] = table
            ops.append((kept, table))
        out = contract(ops, attrs)
        return np.ascontiguousarray(out / max(out.sum(), 1e-300))
    if method not in ("einsum", "log"):
        raise ValueError(f"method must be 'einsum' or 'log', got {method!r}")
    factors = []
    for c in sorted(sub):
        factors.append(Factor.from_probabilities(tree.cliques[c], probs[c]))
        p = tree.parent[c]
        if p >= 0 and p in sub:
            sep = tree.separator(c)
            if sep:
                ps = align(probs[c], tree.cliques[c], sep, reduce=True)
                factors.append(Factor(sep, _safe_neglog(ps)))
    sizes = {a: tree.domain[a].size for a in tree.domain.names}
    return np.exp(variable_elimination(factors, attrs, sizes).values)
