"""The objective of Private-PGM: the loss of Eq. (4.2) compiled onto a junction tree.

Eq. (4.2) of McKenna, Miklau & Sheldon ("Winning the NIST Contest: A scalable and general
approach to differentially private synthetic data", JPC 2021, arXiv:2108.04978, §4.2) —
by Fact 1 the same optimum as Eq. (4.1) —

    minimise_theta  L(mu) = sum_m loss((Q_m N mu_m(theta) - y_m) / sigma_m),

``mu_m`` the model's probability marginal over measurement ``m``'s clique, ``N`` the
total, ``loss(r) = 0.5 ||r||_2^2`` (default) or ``||r||_1`` (McKenna, Sheldon & Miklau,
"Graphical-model based estimation and inference for differential privacy", ICML 2019,
arXiv:1901.09136, §3). :class:`Objective` evaluates ``L`` and its gradient with respect to
the clique marginals; :class:`_Evaluator` adds belief propagation, so the descent
(:mod:`.descent`) evaluates it at log-potentials ``theta``.

Speed: measurements are folded into per-clique quadratic terms once
(identity measurements of the same attribute set become one ``a * mu - b``
gradient; those over a whole clique are computed over all cliques in two
vector operations, those over part of a clique through one sparse 0/1 matrix
``S`` that sums clique cells into measured cells, ``ps = S p`` and
``G += S^T g``); parameters, marginals and gradients live in flat vectors;
belief propagation is the compiled schedule of :class:`~.inference.BeliefPropagation`.
Fits with ``iters x cells >= kernels.WORTH`` run belief propagation and the sub-clique and
matrix terms of the L2 loss in compiled loops (:mod:`.kernels`, numba; same numbers up to
the order of additions): on adult this makes MST's fits ~4x and AIM's ~1.5x cheaper in
CPU time than the numpy path, whose cost there is per-call overhead
(``benchmarks/bench_mst.py``, ``benchmarks/bench_aim.py``).

The objective also prepares what the optimality certificate (:mod:`.certificate`) lifts
along: per clique, the L2 loss's identity terms, and the partitions of a query matrix's
cells by rows of equal entries (:func:`_row_partitions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from . import kernels
from .inference import BeliefPropagation
from .measurement import CompiledMeasurement

__all__ = ["LOSSES", "PARTITION_MAX_ROWS", "Objective"]

LOSSES = ("l2", "l1")

#: Query matrices with more rows than this get no lift of their own in the certificate
#: (:func:`_row_partitions`).
PARTITION_MAX_ROWS = 100_000


@dataclass
class _SubTerm:
    clique: int
    axes: tuple[int, ...]  # axes of the clique summed to get the measured marginal
    a: float | None  # identity/L2: gradient a*mu - b
    b: np.ndarray | None  # keepdims shape over the clique
    const: float
    Q: object = None  # matrix terms: scaled CSR (N/sigma) Q and its transpose
    QT: object = None
    y: np.ndarray | None = None  # y / sigma
    shape: tuple[int, ...] = ()


class Objective:
    """The loss of Eq. (4.1)/(4.2) compiled onto a junction tree's flat marginal vector.

    ``value_and_grad(p_flat, G_flat)`` returns ``L`` and writes ``dL/dmu``
    (per clique, broadcast into the clique's table) into ``G_flat``. ``kernel=True``: the
    L2 loss's sub-clique terms run in the compiled kernel of :mod:`.kernels` when numba is
    available (else numpy/scipy, the reference).
    """

    def __init__(
        self,
        bp: BeliefPropagation,
        compiled: Sequence[CompiledMeasurement],
        total: float,
        loss: str = "l2",
        *,
        kernel: bool = True,
    ):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.loss = loss
        tree = bp.tree
        self.bp = bp
        n = float(total)
        self.A = np.zeros(bp.size)
        self.B = np.zeros(bp.size)
        self.const = 0.0
        self.subs: list[_SubTerm] = []
        # per clique, the L2 loss's identity terms ``0.5 a ||mu_S - ybar_S / N||^2`` (merged
        # repeated measurements of one attribute set S) as (axes of the clique summed to S, a):
        # the certificate's lifted dual bound (``certificate._lifted``) raises the dual along them.
        # A term over the whole clique lifts cell by cell and is then the only one kept.
        # A matrix term whose rows include a partition of the marginal's cells by rows of
        # equal positive entries (AGM's adaptive queries: identity rows, and one grouping of
        # aggregate rows) lifts along those rows: a row acts as one coarse cell (the min of
        # its cells' values, the sum of their mass, coefficient (N q / sigma)^2); the third
        # element is then (order grouping the cells by row, row starts, 1 / coefficient).
        self.lift_terms: dict[int, list[tuple[tuple[int, ...], float, tuple | None]]] = {}
        lip = 0.0
        groups: dict[tuple[int, tuple[str, ...]], list[CompiledMeasurement]] = {}
        for m in compiled:
            c = tree.find_clique(m.attrs)
            if c is None:  # cannot happen: the tree is built from these cliques
                raise ValueError(f"{m.label}: clique {m.attrs} is in no junction-tree clique")
            if m.kind == "identity":
                lip += n * n / m.sigma**2
                groups.setdefault((c, m.attrs), []).append(m)
            else:
                colmax = float(np.max(np.asarray(m.Q.multiply(m.Q).sum(axis=0)))) if m.Q.nnz else 0.0
                lip += n * n * colmax / m.sigma**2
                cl = tree.cliques[c]
                axes = tuple(i for i, a in enumerate(cl) if a not in m.attrs)
                shape = tuple(bp.shapes[c][i] if a in m.attrs else 1 for i, a in enumerate(cl))
                Q = (m.Q * (n / m.sigma)).tocsr()
                self.subs.append(_SubTerm(c, axes, None, None, 0.0, Q, Q.T.tocsr(), m.y / m.sigma, shape))
                for part in _row_partitions(Q) if loss == "l2" else ():
                    self.lift_terms.setdefault(c, []).append((axes, 0.0, part))
        for (c, attrs), ms in groups.items():
            cl = tree.cliques[c]
            axes = tuple(i for i, a in enumerate(cl) if a not in attrs)
            shape = tuple(bp.shapes[c][i] if a in attrs else 1 for i, a in enumerate(cl))
            if loss == "l1":
                for m in ms:
                    self.subs.append(_SubTerm(c, axes, n / m.sigma, (m.y / m.sigma).reshape(shape), 0.0))
                continue
            prec = sum(1.0 / m.sigma**2 for m in ms)
            a = n * n * prec
            ybar = sum(m.y / m.sigma**2 for m in ms) / prec  # precision-weighted mean answer
            b = n * prec * ybar
            # loss = 0.5 a ||mu - ybar/N||^2 + const, const = 0.5 sum_m ||y_m - ybar||^2 / sigma_m^2
            # (written as 0.5 ||grad||^2 / a + const: no cancellation between large terms)
            const = 0.5 * sum(float((m.y - ybar) @ (m.y - ybar)) / m.sigma**2 for m in ms)
            self.lift_terms.setdefault(c, []).append((axes, a, None))
            if not axes:
                o = bp.offsets
                self.A[o[c] : o[c + 1]] += a
                self.B[o[c] : o[c + 1]] += b
                self.const += const
            else:
                self.subs.append(_SubTerm(c, axes, a, b.reshape(shape), const))
        self.lipschitz = lip
        for c, ts in self.lift_terms.items():
            whole = [t for t in ts if not t[0] and t[2] is None]
            if whole:
                self.lift_terms[c] = whole[:1]
        self.has_full = bool(np.any(self.A))
        self.A_inv = np.zeros(bp.size)
        np.divide(1.0, self.A, out=self.A_inv, where=self.A > 0)
        self._tmp = np.zeros(bp.size)
        # identity/L2 sub-clique terms, batched: their marginals are summed into one
        # buffer, and gradient and loss are computed for all of them in a few vector ops
        folded = [t for t in self.subs if t.Q is None and loss == "l2"]
        self.subs = [t for t in self.subs if not (t.Q is None and loss == "l2")]
        sizes = [int(np.prod(t.b.shape)) for t in folded]
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._ps = np.zeros(int(off[-1]))
        self._g = np.zeros(int(off[-1]))
        self._a = np.concatenate([np.full(k, t.a) for k, t in zip(sizes, folded)]) if folded else np.zeros(0)
        self._a_inv = 1.0 / self._a
        self._b = np.concatenate([t.b.ravel() for t in folded]) if folded else np.zeros(0)
        self._sub_const = float(sum(t.const for t in folded))
        self._folded = [
            (
                t.clique,
                t.axes,
                self._ps[off[i] : off[i + 1]].reshape(t.b.shape),
                self._g[off[i] : off[i + 1]].reshape(t.b.shape),
            )
            for i, t in enumerate(folded)
        ]
        def cell_map(c: int, shape: tuple[int, ...]) -> np.ndarray:
            """For each cell of clique ``c`` (flat, C order), its cell in the sub-clique
            marginal of keepdims ``shape``."""
            sizes = bp.shapes[c]
            return kernels.sub_map(sizes, frozenset(range(len(sizes))), frozenset(k for k, n in enumerate(shape) if n > 1))

        # compiled (numba) path for the L2 loss: every sub-clique term, identity or matrix, in
        # one kernel call (:class:`~.kernels.L2Terms`); the numpy/scipy path below otherwise
        self._kernel = None
        self._S = self._ST = None
        if kernel and kernels.AVAILABLE and loss == "l2":
            o = bp.offsets
            ident = []  # per clique, its terms summed through shared intermediates (kernels.marginal_plan)
            by_clique: dict[int, list[_SubTerm]] = {}
            for t in folded:
                by_clique.setdefault(t.clique, []).append(t)
            for c, ts in by_clique.items():
                sizes = bp.shapes[c]
                plan = kernels.marginal_plan(sizes, [frozenset(range(len(sizes))) - set(t.axes) for t in ts])
                base = len(ident)
                for axes, src, k in plan:
                    keep = tuple(sizes[i] if i in axes else 1 for i in range(len(sizes)))
                    a, b = (ts[k].a, ts[k].b) if k is not None else (0.0, np.zeros(keep))
                    if src < 0:
                        ident.append((int(o[c]), int(o[c + 1] - o[c]), cell_map(c, keep), a, b))
                    else:
                        ident.append((None, base + src, kernels.sub_map(sizes, plan[src][0], axes), a, b))
            # the whole-clique terms too (a cell map onto itself), so one call computes the
            # loss and the whole gradient: no pass over the whole vector for the few cliques
            # measured whole (AIM's one-way cliques beside a 40,000-cell clique)
            for c in range(len(bp.shapes)):
                lo, hi = int(o[c]), int(o[c + 1])
                if hi > lo and self.A[lo] > 0:  # a (sum of) whole-clique term(s): a is constant on the clique
                    ident.append((lo, hi - lo, np.arange(hi - lo, dtype=np.int64), float(self.A[lo]), self.B[lo:hi].copy()))
            mat = [(int(o[t.clique]), int(o[t.clique + 1] - o[t.clique]), cell_map(t.clique, t.shape), t.Q, t.y)
                   for t in self.subs]  # fmt: skip
            self._kernel = kernels.L2Terms(ident, mat)
        # the same sums as one sparse 0/1 matrix S (marginal cell <- clique cell): ps = S p and
        # G += S^T g replace a reduction and a broadcast add per term (two calls instead of
        # ~2 per measurement: the hot loop is call-bound on models of ~10^4 cells)
        elif folded:
            rows, cols = [], []
            for i, t in enumerate(folded):
                c = t.clique
                rows.append(off[i] + cell_map(c, t.b.shape))
                cols.append(np.arange(bp.offsets[c], bp.offsets[c + 1], dtype=np.int64))
            r, c_ = np.concatenate(rows), np.concatenate(cols)
            self._S = sp.csr_matrix((np.ones(r.size), (r, c_)), shape=(int(off[-1]), bp.size))
            self._ST = self._S.T.tocsr()

    def value(self, p_flat: np.ndarray, p: list[np.ndarray]) -> float:
        """The loss alone (the compiled path skips the gradient's scatter; else
        :meth:`value_and_grad` into scratch)."""
        if self._kernel is not None:
            return self.const + self._kernel.add(p_flat, self._tmp, backward=False) + self._sub_const
        return self.value_and_grad(p_flat, p, self._scratch_G, self.bp.views(self._scratch_G))

    @cached_property
    def _scratch_G(self) -> np.ndarray:
        return np.zeros(self.bp.size)

    def value_and_grad(self, p_flat: np.ndarray, p: list[np.ndarray], G_flat: np.ndarray, G: list[np.ndarray]) -> float:
        if self._kernel is not None:  # every L2 term, whole-clique ones included, compiled
            G_flat.fill(0.0)
            return self.const + self._kernel.add(p_flat, G_flat) + self._sub_const
        if self.has_full:
            np.multiply(self.A, p_flat, out=G_flat)
            G_flat -= self.B
            np.multiply(G_flat, self.A_inv, out=self._tmp)
            val = 0.5 * float(self._tmp @ G_flat) + self.const
        else:
            G_flat.fill(0.0)
            val = 0.0
        if self._folded:
            self._ps[:] = self._S @ p_flat
            np.multiply(self._a, self._ps, out=self._g)
            self._g -= self._b
            val += 0.5 * float((self._g * self._a_inv) @ self._g) + self._sub_const
            G_flat += self._ST @ self._g
        l1 = self.loss == "l1"
        for t in self.subs:
            pc = p[t.clique]
            ps = pc.sum(axis=t.axes, keepdims=True) if t.axes else pc
            if t.Q is not None:
                r = t.Q @ ps.ravel() - t.y
                if l1:
                    val += float(np.abs(r).sum())
                    g = t.QT @ np.sign(r)
                else:
                    val += 0.5 * float(r @ r)
                    g = t.QT @ r
                G[t.clique] += g.reshape(t.shape)
            elif l1:  # identity, L1: r = (N mu - y)/sigma, grad = (N/sigma) sign(r)
                r = ps * t.a - t.b
                val += float(np.abs(r).sum())
                G[t.clique] += np.sign(r) * t.a
        return val


def _row_partitions(Q: sp.csr_matrix) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Sets of rows of ``Q`` (scaled, CSR) that partition its columns, each row with equal
    positive entries ``q_r``, for the certificate's lift (``Objective.lift_terms``; the
    lift takes the best one per clique). Each set is greedy, a row taken when none of its
    columns is covered yet, in row order and in reverse row order (AGM's queries: the
    identity rows with the first, resp. the last, grouping of aggregate rows), else with
    the rows of one entry first. Each is (columns grouped by row, the groups' starts,
    ``1 / q_r^2``); none when no order covers every column, or when ``Q`` has more than
    ``PARTITION_MAX_ROWS`` rows (the greedy passes are Python loops; the bound stays valid
    without the lift, only looser)."""
    Q = Q.tocsr()
    Q.sum_duplicates()
    n_cols = Q.shape[1]
    if n_cols == 0 or Q.shape[0] > PARTITION_MAX_ROWS:
        return []
    lens = np.diff(Q.indptr)
    rows = np.flatnonzero(lens > 0)
    if rows.size == 0:
        return []
    lo = Q.indptr[rows]  # the non-empty rows' segments are contiguous in Q.data
    rmin, rmax = np.minimum.reduceat(Q.data, lo), np.maximum.reduceat(Q.data, lo)
    usable = rows[(rmin == rmax) & (rmin > 0)].tolist()
    out, seen = [], set()
    for seq in (usable, usable[::-1], sorted(usable, key=lambda r: lens[r] > 1)):
        covered = np.zeros(n_cols, dtype=bool)
        taken = []
        for r in seq:
            cols = Q.indices[Q.indptr[r] : Q.indptr[r + 1]]
            if not covered[cols].any():
                covered[cols] = True
                taken.append(r)
        key = tuple(sorted(taken))
        if covered.all() and key not in seen:
            seen.add(key)
            cols = [Q.indices[Q.indptr[r] : Q.indptr[r + 1]] for r in taken]
            starts = np.concatenate([[0], np.cumsum([c.size for c in cols])[:-1]]).astype(np.intp)
            q = np.array([Q.data[Q.indptr[r]] for r in taken])
            out.append((np.concatenate(cols).astype(np.intp), starts, 1.0 / np.square(q)))
    return out


class _Evaluator:
    """Flat buffers + belief propagation + objective: ``evaluate(theta) -> (loss, p, G)``.

    ``zeros`` (flat, ``0`` or ``-inf`` per cell; ``None``: none) are the structural zeros of
    a fit with rules: added to every ``theta`` before the propagation, so the forbidden
    cells have probability exactly 0 and the descent, which moves the finite ``theta``,
    optimises over the allowed cells only."""

    def __init__(
        self, bp: BeliefPropagation, obj: Objective, compiled: bool = False, zeros: np.ndarray | None = None
    ) -> None:
        self.bp, self.obj, self.compiled, self.zeros = bp, obj, compiled, zeros
        self._views: dict[int, list[np.ndarray]] = {}
        self.count = 0

    def buffer(self) -> np.ndarray:
        a = np.zeros(self.bp.size)
        self._views[id(a)] = self.bp.views(a)
        return a

    def adopt(self, a: np.ndarray) -> np.ndarray:
        self._views[id(a)] = self.bp.views(a)
        return a

    def __call__(self, theta: np.ndarray, p: np.ndarray, G: np.ndarray | None) -> float:
        """The loss at ``theta``, its marginals into ``p`` and (unless ``G`` is None) its
        gradient into ``G``."""
        v = self._views
        self.bp.calibrate_flat(theta, p, compiled=self.compiled, zeros=self.zeros)
        self.count += 1
        if G is None:
            return self.obj.value(p, v[id(p)])
        return self.obj.value_and_grad(p, v[id(p)], G, v[id(G)])

    def grad(self, p: np.ndarray, G: np.ndarray) -> float:
        """The gradient at marginals ``p`` (already computed) into ``G``: no propagation."""
        v = self._views
        return self.obj.value_and_grad(p, v[id(p)], G, v[id(G)])

