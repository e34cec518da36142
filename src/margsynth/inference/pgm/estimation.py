"""Private-PGM estimation: fit ``P_theta`` to noisy marginal measurements.

Solves Eq. (4.2) of the NIST-MST/MST paper (§4.2) — by Fact 1 the same
optimum as Eq. (4.1) —

    minimise_theta  L(mu) = sum_m loss((Q_m N mu_m(theta) - y_m) / sigma_m),

``mu_m`` the model's probability marginal over measurement ``m``'s clique,
``N`` the total, ``loss(r) = 0.5 ||r||_2^2`` (default) or ``||r||_1``, with
the entropic mirror-descent ("proximal") algorithm of McKenna, Sheldon &
Miklau (ICML 2019, Algorithm 1):

    theta_{t+1} = theta_t - eta_t * grad_mu L(mu_t),   mu_{t+1} = M(theta_{t+1}),

i.e. ``P_{t+1} ∝ P_t * exp(-eta_t * grad)`` on the probability simplex. The
gradient with respect to a clique marginal is added to the log-potential of
the junction-tree clique holding it, so the model stays in the family of
Fact 1.

Step size without tuning: the first step is ``1 / Lip``, ``Lip = N^2 sum_m
max_col ||Q_m||^2 / sigma_m^2`` (the l1-smoothness constant of the L2 loss
on the simplex, for which mirror descent provably descends); afterwards a
backtracking (Armijo) line search accepts a step when
``L(mu_new) <= L(mu) - 0.5 <grad, mu - mu_new>`` and otherwise halves it,
and every accepted step lets the next one grow by ``STEP_GROWTH``. Scale-free:
neither ``N``, ``sigma`` nor the domain sizes need per-dataset settings.
For the non-smooth L1 loss a line search stalls at the kinks, so L1 uses the
classical subgradient schedule ``eta_t = eta_0 / sqrt(t + 1)`` (``eta_0`` =
1 / the largest initial gradient entry) and returns the best iterate.

Acceleration (``method="accelerated"``, the default): the same mirror step is
taken from an extrapolated point ``y = theta_t + k/(k+3) (theta_t -
theta_{t-1})`` (Nesterov momentum in the natural parameters, as in FISTA,
Beck & Teboulle 2009), with the same Armijo line search at ``y`` and an
adaptive restart (momentum reset whenever the loss would increase;
O'Donoghue & Candes 2015), so the loss sequence stays monotone. On adult
with MST's measurements it reaches the optimum of Eq. (4.2) to 1e-5 relative
in 1,000 iterations, where plain mirror descent needs ~30,000
(``benchmarks/bench_pgm.py``). ``method="mirror_descent"`` is the plain
algorithm of the ICML paper.

Optimality certificate: the problem is convex, so every fit returns, besides its
loss ``L(mu)``, a certified gap ``G >= L(mu) - min_M L`` (``M`` the marginal polytope of
the junction tree): ``G = L(mu) - LB`` for the best of three lower bounds, all read off
one max-sum calibration on ``-grad L``
(:meth:`~.inference.BeliefPropagation.max_marginals`; a linear function over ``M`` is
minimised at a vertex, a point mass) — the Frank–Wolfe duality gap (Jaggi, "Revisiting
Frank-Wolfe: projection-free sparse convex optimization", ICML 2013, §2), and for the L2
loss the Fenchel dual at the scaled residual and at the residual lifted clique by clique
(:meth:`_Iterate.gap`). The lift is what makes the certificate close: near an optimum on
a face of ``M`` (noisy counts that want to be negative) the Frank–Wolfe gap shrinks only
like the distance to the optimum; on MST's fit of adult (ε = 1) it leaves ``G / L = 1.1e-3``
after 5,000 iterations where the lifted bound certifies ``2.3e-8``
(``benchmarks/bench_certificate.py``). It is in ``model.stats["gap"]``;
:func:`estimation_summary` gives ``{"loss", "gap", "iterations", "method"}``, which every
PGM-based mechanism reports as ``extras["estimation"]`` and in its sidecar. ``gap_tol``
stops a fit once ``G <= gap_tol * L`` (a certified stop); ``rtol`` once the loss stalls
(an uncertified one, for callers such as AIM's rounds, whose fits stop far from the
optimum — see docs/notes/aim.md).

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
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from ...domain import Domain
from . import kernels
from .exact import ExactSolution
from .exact import solve as exact_solve
from .factor import align
from .inference import BeliefPropagation, marginal
from .junction_tree import build_junction_tree
from .measurement import CompiledMeasurement, Measurement, compile_measurements, estimate_total
from .model import GraphicalModel

__all__ = ["LOSSES", "METHODS", "Objective", "estimate", "estimation_summary", "evaluate_loss"]

LOSSES = ("l2", "l1")
STEP_GROWTH = 1.1  # growth of the step after an accepted step (Armijo backtracking halves it)
ARMIJO = 0.5
MAX_HALVINGS = 60


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
        # the certificate's lifted dual bound (``_Iterate._lifted``) raises the dual along them.
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


def _initial_theta(bp: BeliefPropagation, warm_start: GraphicalModel | None) -> np.ndarray:
    theta = np.zeros(bp.size)
    if warm_start is None:
        return theta
    tree = bp.tree
    views = bp.views(theta)
    old = warm_start.tree
    if all(tree.find_clique(c) is not None for c in old.cliques):
        for c, th in zip(old.cliques, warm_start.theta):
            i = tree.find_clique(c)
            views[i] += align(th, c, tree.cliques[i])
        return theta
    # the old cliques do not all fit: junction-tree factorisation of the old model's
    # marginals over the new tree (theta_C = log mu_C - log mu_S)
    floor = 1e-300
    for i in tree.order:
        mu = np.maximum(warm_start.probabilities(tree.cliques[i]), floor)
        views[i] += np.log(mu)
        sep = tree.separator(i)
        if sep:
            ms = np.maximum(warm_start.probabilities(sep), floor)
            views[i] -= align(np.log(ms), sep, tree.cliques[i])
    return theta


def single_threaded_blas():
    """Context limiting BLAS to one thread: around every :func:`estimate`, and around AIM's
    candidate scoring (hundreds of small ``einsum`` contractions per round).

    The estimation loop's only BLAS calls are dot products of the flat vectors, the
    scoring's are matrix products of a few hundred cells; OpenBLAS spreads both over
    threads whose spin-waiting costs far more than it saves (measured: 9 ms instead of
    0.5 ms of CPU per iteration on a busy 2-core machine; AIM on adult took 20-25% more
    CPU than wall time with the scoring multi-threaded, none with it single-threaded).
    Scoped to the call; a no-op without threadpoolctl.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            return contextlib.nullcontext()
        # found once per process: listing the loaded libraries costs ~3 ms, per fit that
        # was a tenth of the setup of AIM's small round fits
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


#: :func:`single_threaded_blas`'s view of the process's thread pools (threadpoolctl)
_BLAS_CONTROLLER = None


METHODS = ("accelerated", "mirror_descent", "interior_point")
#: ``method="interior_point"``: the solver's relative gap and feasibility tolerances; then the
#: descent on the optimal face stops at a certified gap of ``FACE_GAP_TOL * loss`` (unless
#: ``gap_tol`` says otherwise), once its loss stalls (``FACE_RTOL``: at the rounding of the
#: arithmetic, where the certificate cannot close further), or after ``FACE_MAX_ITERS``
INTERIOR_POINT_TOL = 1e-9
FACE_GAP_TOL = 1e-6
FACE_RTOL = 1e-12
FACE_MAX_ITERS = 20_000


def estimate(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    iters: int = 1000,
    total: float | None = None,
    loss: str = "l2",
    method: str = "accelerated",
    warm_start: GraphicalModel | None = None,
    callback: Callable[[int, float, float], bool | None] | None = None,
    progress: bool = False,
    memory_limit_mb: float | None = None,
    extra_cliques: Sequence[Sequence[str]] = (),
    step_size: float | None = None,
    gap_tol: float | None = None,
    rtol: float | None = None,
) -> GraphicalModel:
    """Fit a graphical model to noisy measurements (Private-PGM, Eq. 4.2).

    Parameters
    ----------
    domain:
        The data domain; every attribute gets a (possibly unmeasured) variable.
    measurements:
        :class:`~.measurement.Measurement` objects (validated here; errors
        name the measurement).
    iters:
        Iterations (each: one accepted mirror step; for ``"interior_point"``,
        the cap on the interior point's iterations).
    total:
        Number of records ``N``. ``None``: estimated from the measurements by
        :func:`~.measurement.estimate_total` (inverse-variance weighted); if
        none determines it, the warm-start model's total.
    loss:
        ``"l2"`` (``0.5 sum ||(Q mu - y)/sigma||^2``, the Gaussian
        log-likelihood of Eq. 4.1) or ``"l1"`` (``sum ||(Q mu - y)/sigma||_1``).
    method:
        ``"accelerated"`` (default): mirror descent with Nesterov momentum
        on the log-potentials and adaptive (function-value) restart; same
        step-size rule, reaches the optimum in ~10x fewer iterations on
        MST-like problems, ~2 belief propagations per iteration.
        ``"mirror_descent"``: the plain algorithm of McKenna et al. (2019,
        Alg. 1), ~1.3 belief propagations per iteration. Both are monotone.
        (The L1 loss always uses the subgradient schedule.)
        ``"interior_point"`` (L2 loss only): the exact optimum, certified. An
        interior-point solver (:mod:`.exact`, Clarabel; at most ``iters``
        iterations, ~20-50 are typical; a ``RuntimeError`` if it stops short)
        solves the problem as a quadratic program over the junction tree's
        local polytope; the cells it leaves empty are fixed at zero
        (``theta = log 1e-300``) and the accelerated descent, started from the
        uniform model on the remaining cells, runs until the certified gap is
        at most ``gap_tol * loss`` (default ``FACE_GAP_TOL = 1e-6``), until its
        loss stalls at the rounding of the arithmetic (``FACE_RTOL``), or for
        ``FACE_MAX_ITERS`` iterations. Its limit is the maximum-entropy optimum,
        the model the descent alone converges to (:func:`_face_theta`). On
        AIM's final models of adult the loss ends within ~1e-9 of the
        interior point's and the gap at 3-7e-4 of it (certified, where the
        500 descent iterations of AIM's default stop 7-9% above the optimum,
        uncertified), at a cost that grows quickly with the cells (~7 s for
        12,000 cells, ~45 s for 65,000; docs/notes/aim.md). ``warm_start``
        then only supplies a fallback total; ``step_size`` and ``rtol``
        belong to the descent methods (``ValueError``). ``stats`` add
        ``solver_iterations``, ``solver_seconds``, ``solver_loss`` (the
        interior point's optimum) and ``face_cells`` (the cells of the optimal
        face's support); ``iterations`` are the descent's.
    warm_start:
        A previous model (e.g. AIM's last round): its potentials start the
        descent, and its last step size seeds the line search.
    callback:
        ``callback(iteration, loss, step_size)`` after every iteration;
        returning ``True`` stops early.
    progress:
        Show a tqdm progress bar.
    memory_limit_mb:
        Refuse (``ModelTooLargeError``, a ``ValueError``) if the junction tree
        needs more than this many MiB (see :func:`~.junction_tree.junction_tree_size`).
    extra_cliques:
        Attribute sets to include in the model's structure without measuring them.
    step_size:
        Initial step; default ``1/Lip`` (see the module docstring).
    gap_tol:
        Stopping rule on the optimality certificate: stop as soon as the
        certified gap (below) is at most ``gap_tol * loss`` (checked before the
        first iteration, then at multiples of ``GAP_EVERY`` iterations spaced by
        ``GAP_SPACING`` of the iterations so far). ``None`` (default): run all
        ``iters``.
    rtol:
        Stopping rule on progress (smooth loss only): stop as soon as the loss fell
        by at most ``rtol * loss`` over the last ``GAP_EVERY`` iterations (the
        descent is monotone, so this is a stall, not a detour). Unlike ``gap_tol``
        it certifies nothing; the returned ``gap`` still does. ``None`` (default):
        no such rule.

    Returns
    -------
    GraphicalModel, with ``stats`` holding ``loss_history`` (loss of the
    iterate after each iteration), ``loss``, ``gap``, ``step_size``,
    ``iterations``, ``evaluations`` (belief propagations), ``restarts``,
    ``method``, ``total_estimated``, ``setup_seconds`` and ``seconds``.

    ``gap`` is the optimality certificate of the returned model: ``loss - LB``
    with ``LB`` a lower bound on ``min_M L`` over the marginal polytope ``M`` of
    the junction tree, so ``loss - gap <= min_M L <= loss``: the estimate is
    certified within ``gap`` of the optimum of Eq. (4.2). ``LB`` is the best of
    the Frank–Wolfe bound ``loss - max_{s in M} <grad L(mu), mu - s>`` and, for
    the L2 loss, two Fenchel-dual bounds (the scaled residual, and the residual
    lifted clique by clique), all from one max-sum calibration on ``-grad L``
    (module docstring; ``docs/api/inference.md``).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    with single_threaded_blas():
        return _estimate(
            domain,
            measurements,
            iters=iters,
            total=total,
            loss=loss,
            method=method,
            warm_start=warm_start,
            callback=callback,
            progress=progress,
            memory_limit_mb=memory_limit_mb,
            extra_cliques=extra_cliques,
            step_size=step_size,
            gap_tol=gap_tol,
            rtol=rtol,
        )


class _Evaluator:
    """Flat buffers + belief propagation + objective: ``evaluate(theta) -> (loss, p, G)``."""

    def __init__(self, bp: BeliefPropagation, obj: Objective, compiled: bool = False) -> None:
        self.bp, self.obj, self.compiled = bp, obj, compiled
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
        self.bp.calibrate_flat(theta, p, compiled=self.compiled)
        self.count += 1
        if G is None:
            return self.obj.value(p, v[id(p)])
        return self.obj.value_and_grad(p, v[id(p)], G, v[id(G)])

    def grad(self, p: np.ndarray, G: np.ndarray) -> float:
        """The gradient at marginals ``p`` (already computed) into ``G``: no propagation."""
        v = self._views
        return self.obj.value_and_grad(p, v[id(p)], G, v[id(G)])


class _Iterate:
    """The state of the descent: the iterate ``theta`` (log-potentials, flat) with its
    marginals ``p``, gradient ``G`` and loss ``val``; the previous iterate (momentum);
    scratch buffers for the trial point ``*_new`` and the extrapolated point ``*_y``;
    the step size ``eta`` and counters. Buffers are swapped, never copied."""

    def __init__(self, ev: _Evaluator, theta: np.ndarray) -> None:
        self.ev = ev
        self.theta = ev.adopt(theta)
        self.theta_prev, self.theta_new, self.theta_y = ev.buffer(), ev.buffer(), ev.buffer()
        self.p, self.p_new, self.p_y = ev.buffer(), ev.buffer(), ev.buffer()
        self.G, self.G_new, self.G_y = ev.buffer(), ev.buffer(), ev.buffer()
        self.val = ev(self.theta, self.p, self.G)
        self.g_ok = True  # G holds the gradient at theta (trial points may skip it: grad())
        self.eta = self.eta0 = 0.0
        self.k = 0  # accepted steps since the last (re)start of the momentum
        self.restarts = 0
        self.best_val, self.best_theta = self.val, None
        self.last_gap: float | None = None
        self.gap_stop = False

    def _lower(self, val: float, fw: float) -> float:
        """The best lower bound on ``min_M L`` from a point with loss ``val`` and Frank–Wolfe
        gap ``fw``: ``val - fw`` (convexity), or for the L2 loss the Fenchel-dual bound along
        the point's scaled residual, whichever is larger."""
        obj = self.ev.obj
        if obj.loss != "l2":
            return val - max(fw, 0.0)
        k = obj.const + obj._sub_const
        half_r = max(val - k, 0.0)  # R / 2, R = ||r||^2
        c = 2.0 * half_r - fw
        return k + c * c / (4.0 * half_r) if c > 0 and half_r > 0 else k

    def _lifted(self, mm: list[np.ndarray]) -> float:
        """The lifted dual bound of the L2 loss at the iterate, given ``mm``, the max-marginals
        of ``-G`` (``n_C = -mm_C``, the min-marginals of ``G``).

        Max-sum calibration reparametrises the linear function (Koller & Friedman 2009,
        §13.3): ``G(x) = sum_C phi_C(x_C)`` with ``phi_R = n_R`` at the root and ``phi_C = n_C
        - n_{S_C} >= 0`` below it (``S_C`` the separator to the parent). For the dual point
        ``lambda = r + Delta`` (``r = A mu - b``), ``Delta`` lifting clique ``C`` along one
        identity term ``T`` it hosts (measured set ``T``, coefficient ``a``: ``A^T Delta`` adds
        ``h_C(x_T)``, ``||Delta||^2 = ||h_C||^2 / a``), weak duality gives

            ``min_M L >= L(mu) - <G, mu> + min_x (G + sum_C h_C)(x) - sum_C (<h_C, mu_T>
            + ||h_C||^2 / (2a))``.

        With ``h_C = (u_C - m_T)_+``, ``m_T(x_T) = min_{x_C ~ x_T} phi_C(x_C)``, every
        ``phi_C + h_C >= u_C``, so ``min_x (G + h) >= sum_C u_C`` and the bound separates: clique
        by clique, ``max_u u - <(u - m_T)_+, mu_T> - ||(u - m_T)_+||^2 / (2a)`` (concave,
        piecewise quadratic, maximised exactly over the sorted ``m_T``; ``u = min phi_C``, no
        lift, where ``C`` hosts no identity term). With no lift at all it is ``L(mu) - fw``;
        lifting costs almost nothing on cells the iterate barely uses — the cells that keep
        the Frank–Wolfe gap of a near-optimal point large when the optimum lies on a face of
        ``M`` (noisy counts that want to be negative)."""
        obj, bp = self.ev.obj, self.ev.bp
        pv = bp.views(self.p)
        Av = bp.views(obj.A)
        total = self.val - float(self.G @ self.p)  # the shift by <G, mu>, on the root's phi
        ms, ws, invs, lens, owner = [], [], [], [], []
        best: dict[int, float] = {}

        def flush() -> None:  # the lifts gathered so far, in one batch (bounded memory)
            gain = _best_lifts(np.concatenate(ms), np.concatenate(ws), np.concatenate(invs), np.array(lens))
            for c, g in zip(owner, gain):
                best[c] = max(best.get(c, 0.0), float(g))
            for lst in (ms, ws, invs, lens, owner):
                lst.clear()

        for c, table in enumerate(bp.decompose(mm)):
            phi = np.negative(table, out=table)  # G = sum_C phi_C, phi_C >= 0 below the root
            total += float(phi.min())  # no lift; a lift adds its gain over this below
            for axes, a, part in obj.lift_terms.get(c, ()):
                m = (phi.min(axis=axes) if axes else phi).ravel()
                w = (pv[c].sum(axis=axes) if axes else pv[c]).ravel()
                if part is not None:  # a matrix term: its partition's rows are the cells
                    order, starts, inv = part
                    m, w = np.minimum.reduceat(m[order], starts), np.add.reduceat(w[order], starts)
                else:
                    inv = np.full(m.size, 1.0 / a) if axes else 1.0 / Av[c].ravel()
                ms.append(m)
                ws.append(w)
                invs.append(inv)
                lens.append(m.size)
                owner.append(c)
                if sum(lens) >= LIFT_BATCH:
                    flush()
        if lens:
            flush()
        return total + sum(best.values())

    def gap(self) -> float:
        """The certified gap of the iterate, ``L(mu) - LB`` with ``LB <= min_M L`` (M the
        marginal polytope of the junction tree), never negative. ``LB`` is the best of three
        lower bounds, all read off one max-sum calibration on ``-G``
        (:meth:`~.inference.BeliefPropagation.max_marginals`; a linear function over ``M`` is
        minimised at a point mass, and every clique's max-marginal has the MAP value as its
        maximum):

        * ``L(mu) - fw``, ``fw = max_{s in M} <grad L(mu), mu - s>`` the Frank–Wolfe gap
          (convexity; Jaggi, "Revisiting Frank-Wolfe: projection-free sparse convex
          optimization", ICML 2013, §2; for the L1 loss with its subgradient: the only one);
        * for the L2 loss ``L = K + 0.5 ||A mu - b||^2`` (``K``: the constants of merged
          repeated measurements), the Fenchel dual at the scaled residual ``t r``, ``r = A mu
          - b``: ``K + c^2 / (2R)``, ``R = ||r||^2``, ``c = R - fw`` (and ``K`` itself, ``t =
          0``) (Borwein & Lewis, "Convex Analysis and Nonlinear Optimization", 2006,
          Thm 3.3.5);
        * for the L2 loss, the Fenchel dual at ``r`` lifted clique by clique along the
          identity terms (:meth:`_lifted`): near an optimum on a face of ``M`` (cells the
          noisy counts want negative) the Frank–Wolfe gap decays only like the distance to
          the optimum, and most of it comes from cells the iterate barely uses; raising the
          dual there costs almost nothing (MST's fit of adult after 5,000 iterations:
          ``2.3e-8 L`` instead of ``1.1e-3 L``).
        """
        bp = self.ev.bp
        self.grad()
        mm = bp.max_marginals(bp.views(np.negative(self.G)))
        fw = float(self.G @ self.p) + float(mm[bp.root].max())
        lower = self._lower(self.val, fw)
        if self.ev.obj.loss == "l2" and self.ev.obj.lift_terms:
            lower = max(lower, self._lifted(mm))
        return max(self.val - lower, 0.0)

    def grad(self) -> None:
        """Makes ``G`` the gradient at the iterate, if its trial evaluation skipped it."""
        if not self.g_ok:
            self.ev.grad(self.p, self.G)
            self.g_ok = True

    def accept(self, new_val: float, g_ok: bool = True) -> None:
        """The trial point ``*_new`` becomes the iterate (``g_ok``: its gradient is in
        ``G_new``)."""
        self.theta_prev, self.theta, self.theta_new = self.theta, self.theta_new, self.theta_prev
        self.p, self.p_new = self.p_new, self.p
        self.G, self.G_new = self.G_new, self.G
        self.val = new_val
        self.g_ok = g_ok
        self.k += 1


def _best_lifts(m: np.ndarray, w: np.ndarray, inv_a: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """For each segment ``k`` of the concatenated arrays (lengths ``lens``), ``max_u f_k(u) -
    min(m)`` with ``f_k(u) = u - sum_i w_i (u - m_i)_+ - 0.5 sum_i (u - m_i)_+^2 inv_a_i``
    (concave, piecewise quadratic in ``u``; ``f_k(min m) = min m``, so the gain is >= 0):
    the stationary point of every interval between consecutive sorted ``m_i``, clipped to the
    interval, and the best of them; all segments in a few vector operations."""
    seg = np.repeat(np.arange(lens.size), lens)
    order = np.lexsort((m, seg))
    m, w, inv_a = m[order], w[order], inv_a[order]
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    ends = starts + lens - 1

    def segsum(x: np.ndarray) -> np.ndarray:  # cumulative sums restarting at every segment
        cs = np.cumsum(x)
        return cs - np.repeat(cs[starts] - x[starts], lens)

    # on [m_i, m_{i+1}] (cells up to i below u): u - (u W - WM) - 0.5 (u^2 IA - 2 u MA + MA2)
    W, WM = segsum(w), segsum(w * m)
    IA, MA, MA2 = segsum(inv_a), segsum(m * inv_a), segsum(m * m * inv_a)
    hi = np.empty_like(m)
    hi[:-1] = m[1:]
    hi[ends] = np.inf
    u = np.clip((1.0 - W + MA) / IA, m, hi)
    d = u - (u * W - WM) - 0.5 * (u * u * IA - 2.0 * u * MA + MA2)
    return np.maximum(np.maximum.reduceat(d, starts) - m[starts], 0.0)


def _armijo(
    s: _Iterate, ty: np.ndarray, py: np.ndarray, Gy: np.ndarray, val_y: float, grad: bool = True
) -> float | None:
    """Backtracking line search for the mirror step from ``y`` (module docstring): the
    trial point ``theta_new = y - eta * grad(y)`` is accepted when ``L(new) <= L(y) -
    ARMIJO * <grad, mu_y - mu_new>``, else ``eta`` is halved. Returns the accepted loss
    (trial point in ``s.*_new``; its gradient in ``s.G_new`` only with ``grad``) or
    ``None`` when no step is acceptable."""
    gp = float(Gy @ py)
    for _ in range(MAX_HALVINGS):
        if s.ev.compiled:
            kernels.mirror_step(Gy, s.eta, ty, s.theta_new)
        else:
            np.multiply(Gy, -s.eta, out=s.theta_new)
            s.theta_new += ty
        new_val = s.ev(s.theta_new, s.p_new, s.G_new if grad else None)
        decrease = gp - float(Gy @ s.p_new)  # <grad, mu_y - mu_new>
        if new_val <= val_y - ARMIJO * max(decrease, 0.0) or (new_val <= val_y and decrease <= 0):
            return new_val
        s.eta *= 0.5
    return None


def _mirror_descent_step(s: _Iterate, t: int) -> bool:
    """One step of entropic mirror descent (McKenna, Sheldon & Miklau, ICML 2019,
    Algorithm 1) with the Armijo step size. ``False``: (numerically) optimal, stop."""
    new_val = _armijo(s, s.theta, s.p, s.G, s.val)
    if new_val is None:
        return False
    s.eta *= STEP_GROWTH
    s.accept(new_val)
    return True


def _accelerated_step(s: _Iterate, t: int) -> bool:
    """The mirror step from the extrapolated point ``y = theta + k/(k+3) (theta -
    theta_prev)`` (Nesterov momentum, as in FISTA, Beck & Teboulle 2009) with adaptive
    restart (O'Donoghue & Candes 2015): a step that would raise the loss is not taken
    and the momentum is reset. ``False``: (numerically) optimal, stop."""
    if s.k > 0:
        if s.ev.compiled:
            kernels.extrapolate(s.theta, s.theta_prev, s.k / (s.k + 3.0), s.theta_y)
        else:
            np.subtract(s.theta, s.theta_prev, out=s.theta_y)
            s.theta_y *= s.k / (s.k + 3.0)
            s.theta_y += s.theta
        val_y = s.ev(s.theta_y, s.p_y, s.G_y)
        ty, py, Gy = s.theta_y, s.p_y, s.G_y
    else:
        s.grad()
        ty, py, Gy, val_y = s.theta, s.p, s.G, s.val
    # the trial point's gradient is needed only after a restart (computed then from its
    # marginals, without another propagation), so the trials skip it
    new_val = _armijo(s, ty, py, Gy, val_y, grad=False)
    if new_val is None:
        return False
    restart = new_val > s.val
    if restart:
        s.k = 0
        s.restarts += 1
    s.eta *= STEP_GROWTH
    if not restart:
        s.accept(new_val, g_ok=False)
    return True


def _subgradient_step(s: _Iterate, t: int) -> bool:
    """One mirror step with the subgradient schedule ``eta_t = eta_0 / sqrt(t + 1)``
    (L1 loss); the best iterate is kept, as the method is not monotone."""
    s.eta = s.eta0 / np.sqrt(t + 1.0)
    np.multiply(s.G, -s.eta, out=s.theta_new)
    s.theta_new += s.theta
    s.accept(s.ev(s.theta_new, s.p_new, s.G_new))
    if s.val < s.best_val:
        s.best_val, s.best_theta = s.val, s.theta.copy()
    return True


#: ``method`` -> step function for the smooth (L2) loss; the L1 loss uses :func:`_subgradient_step`.
_STEPS: dict[str, Callable[[_Iterate, int], bool]] = {
    "accelerated": _accelerated_step,
    "mirror_descent": _mirror_descent_step,
}


#: The certificate's lifts are computed in batches of about this many cells (its temporary
#: arrays take ~120 bytes per cell of a batch).
LIFT_BATCH = 1 << 20

#: Query matrices with more rows than this get no lift of their own in the certificate
#: (:func:`_row_partitions`).
PARTITION_MAX_ROWS = 100_000

#: ``rtol`` checks the loss every ``GAP_EVERY`` iterations; ``gap_tol`` checks the
#: certificate (one max-sum calibration and the lifted bound: a few evaluations' worth) at
#: multiples of ``GAP_EVERY`` spaced by at least ``GAP_SPACING`` times the iterations so far,
#: so the checks cost a bounded share of the fit and a stop comes at most ~10% late.
GAP_EVERY = 10
GAP_SPACING = 0.1


def _descend(
    s: _Iterate,
    step: Callable[[_Iterate, int], bool],
    iters: int,
    callback,
    progress: bool,
    gap_tol: float | None = None,
    rtol: float | None = None,
) -> np.ndarray:
    """The loop shared by every method: up to ``iters`` calls of ``step``, the loss after
    each, progress bar and callback; with ``gap_tol``, stops (before the step) at the first
    check (``GAP_SPACING``) where the certified gap is at most ``gap_tol * loss``; with ``rtol``, as soon as the loss
    fell by at most ``rtol * loss`` over the last ``GAP_EVERY`` iterations. Returns the
    loss history."""
    history = np.empty(iters)
    done = 0
    checked = None  # the loss at the last progress check (rtol)
    bar = None
    if progress:
        bar = tqdm(total=iters, desc="Private-PGM", unit="it", mininterval=0.5)
    next_gap = 0
    for t in range(iters):
        if gap_tol is not None and t >= next_gap and t % GAP_EVERY == 0:
            s.last_gap = s.gap()
            if s.last_gap <= gap_tol * max(s.val, 0.0):
                s.gap_stop = True  # last_gap certifies the current iterate
                break
            next_gap = t + max(GAP_EVERY, int(GAP_SPACING * t))
        if rtol is not None and t % GAP_EVERY == 0:
            if checked is not None and checked - s.val <= rtol * abs(s.val):
                break
            checked = s.val
        if not step(s, t):
            break
        history[t] = s.val
        done = t + 1
        if bar is not None and (t % 50 == 49 or t == iters - 1):
            bar.update(t + 1 - bar.n)
            bar.set_postfix(loss=f"{s.val:.6g}", refresh=False)
        if callback is not None and callback(t, s.val, s.eta):
            break
    if bar is not None:
        bar.close()
    return history[:done]


def _estimate(
    domain,
    measurements,
    *,
    iters,
    total,
    loss,
    method,
    warm_start,
    callback,
    progress,
    memory_limit_mb,
    extra_cliques,
    step_size,
    gap_tol,
    rtol=None,
):
    t0 = time.perf_counter()
    if isinstance(iters, bool) or int(iters) != iters or iters < 0:
        raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
    iters = int(iters)
    if gap_tol is not None and (isinstance(gap_tol, bool) or not np.isfinite(gap_tol) or gap_tol < 0):
        raise ValueError(f"gap_tol must be a finite number >= 0 or None, got {gap_tol!r}")
    if rtol is not None and (isinstance(rtol, bool) or not np.isfinite(rtol) or rtol < 0):
        raise ValueError(f"rtol must be a finite number >= 0 or None, got {rtol!r}")
    if method == "interior_point":
        if loss != "l2":
            raise ValueError(f"method='interior_point' solves the L2 loss only, got loss={loss!r}")
        if iters < 1:
            raise ValueError(f"iters (the interior point's iteration cap) must be >= 1, got {iters!r}")
        for name, value in (("step_size", step_size), ("rtol", rtol)):
            if value is not None:
                raise ValueError(f"{name} applies to the descent methods, not to method='interior_point'")
    compiled = compile_measurements(domain, measurements)
    if not compiled:
        raise ValueError("estimate needs at least one measurement")
    if warm_start is not None and not isinstance(warm_start, GraphicalModel):
        raise ValueError(f"warm_start must be a GraphicalModel, got {type(warm_start).__name__}")
    if warm_start is not None and warm_start.domain != domain:
        raise ValueError("warm_start model is over a different domain")
    total_estimated = total is None
    if total is None:
        total = estimate_total(compiled)
        if total is None:
            if warm_start is None:
                raise ValueError("no measurement determines the total number of records; pass total=")
            total = warm_start.total
        total = max(float(total), 1.0)
    elif not np.isfinite(total) or total <= 0:
        raise ValueError(f"total must be finite and > 0, got {total!r}")
    total = float(total)
    tree = build_junction_tree(
        domain, [m.attrs for m in compiled] + [tuple(c) for c in extra_cliques], memory_limit_mb=memory_limit_mb
    )
    bp = BeliefPropagation(tree)
    solver: dict = {}
    if method == "interior_point":  # the optimal face, then the accelerated descent on it
        sol = exact_solve(domain, tree, compiled, total, tol=INTERIOR_POINT_TOL, max_iter=iters)
        theta0 = _face_theta(bp, sol)
        solver = {
            "solver_iterations": sol.iterations,
            "solver_seconds": sol.seconds,
            "solver_loss": sol.loss,
            "face_cells": int(sum(int(np.count_nonzero(v == 0.0)) for v in bp.views(theta0))),
        }
        iters, warm_start, rtol = FACE_MAX_ITERS, None, FACE_RTOL
        gap_tol = FACE_GAP_TOL if gap_tol is None else gap_tol
    fast = kernels.worth(iters, bp.size)  # compiled kernels (numba) for all but small fits
    obj = Objective(bp, compiled, total, loss, kernel=fast)
    ev = _Evaluator(bp, obj, fast)

    s = _Iterate(ev, theta0 if solver else _initial_theta(bp, warm_start))
    if step_size is not None:
        s.eta = float(step_size)
        if not np.isfinite(s.eta) or s.eta <= 0:
            raise ValueError(f"step_size must be finite and > 0, got {step_size!r}")
    elif warm_start is not None and "step_size" in warm_start.stats:
        # the last fit's step, but never below the default 1/Lip: a fit that ended at its
        # numerical optimum has halved its step towards zero (Armijo fails on rounding), and
        # the next fit would spend most of its iterations growing it back
        s.eta = max(float(warm_start.stats["step_size"]), 1.0 / max(obj.lipschitz, 1e-300))
    else:
        s.eta = 1.0 / max(obj.lipschitz, 1e-300)
    smooth = obj.loss == "l2"
    s.eta0 = s.eta if step_size is not None else 1.0 / max(float(np.abs(s.G).max()), 1e-300)  # L1 schedule
    setup = time.perf_counter() - t0
    step = _STEPS["accelerated" if solver else method] if smooth else _subgradient_step
    history = _descend(s, step, iters, callback, progress, gap_tol, rtol if smooth else None)
    if not smooth and s.best_theta is not None:  # non-monotone subgradient method: keep the best iterate
        s.theta = ev.adopt(s.best_theta)
        s.val = ev(s.theta, s.p, s.G)  # marginals and gradient of the best iterate, for its certificate
        ev.count -= 1  # not a descent evaluation
        s.gap_stop = False
    gap = s.last_gap if s.gap_stop else s.gap()
    theta, val = s.theta, s.val
    # shift log Z into the root's potential (a tidy, normalised parameter vector)
    th_views = bp.views(theta)
    log_z = bp.calibrate_flat(theta, s.p_new, compiled=fast)
    th_views[tree.root] -= log_z
    model = GraphicalModel(domain, tree, [v.copy() for v in th_views], total)
    model.stats.update(
        loss_history=history,
        loss=float(val),
        gap=float(gap),
        step_size=float(s.eta) if smooth else float(s.eta0),
        iterations=history.size,
        evaluations=ev.count,
        restarts=s.restarts,
        method=method if smooth else "subgradient",
        total_estimated=total_estimated,
        setup_seconds=setup,
        seconds=time.perf_counter() - t0,
        **solver,
    )
    return model


def _face_theta(bp: BeliefPropagation, sol: ExactSolution) -> np.ndarray:
    """The start of the descent on the optimal face: log-potentials 0 on the cells the
    interior point leaves positive and ``log 1e-300`` on those it drives to zero (flat).

    The optimal residual of Eq. (4.2) is unique, but the optimal clique tables are not
    when cliques hold unmeasured interactions; they form a face of the polytope. An
    interior point ends near the analytic centre of that face, in its relative interior:
    a cell some optimum fills keeps a count ``x`` well above its reduced gradient ``z``,
    a cell every optimum empties the reverse (for linear programs the limit is strictly
    complementary, Güler & Ye, "Convergence behavior of interior-point algorithms", Math.
    Programming 60, 1993; on Private-PGM's problems the two separate by orders of
    magnitude on all but a few degenerate cells, and the certificate checks the end
    result either way), so ``x > z`` is the face's support. The centre itself is an
    arbitrary point of the face; the descent started here keeps its iterates in the
    exponential family of the measured marginals on that support, so its limit is the
    maximum-entropy optimum — the model Private-PGM's descent converges to (Fact 1 of the
    NIST-MST/MST paper) — reached in a few thousand iterations instead of tens of
    thousands."""
    theta = np.zeros(bp.size)
    floor = np.log(1e-300)
    for v, x, z in zip(bp.views(theta), sol.marginals, sol.reduced):
        v[...] = np.where(x > z, 0.0, floor)
    return theta


def estimation_summary(model: GraphicalModel) -> dict:
    """``{"loss", "gap", "iterations", "method"}`` of a model fitted by :func:`estimate`:
    its loss, the certified gap (``loss - gap <= min L <= loss``), the
    iterations run and the method — what every PGM-based mechanism reports as
    ``extras["estimation"]`` (and in its sidecar)."""
    st = model.stats
    return {
        "loss": float(st["loss"]),
        "gap": float(st["gap"]),
        "iterations": int(st["iterations"]),
        "method": str(st["method"]),
    }


def evaluate_loss(model: GraphicalModel, measurements: Sequence[Measurement], loss: str = "l2") -> float:
    """The objective of :func:`estimate` for any model (e.g. to compare estimators)."""
    compiled = compile_measurements(model.domain, measurements)
    val = 0.0
    for m in compiled:
        mu = marginal(model.tree, model.clique_marginals(), m.attrs).ravel() * model.total
        r = (mu - m.y) if m.kind == "identity" else (m.Q @ mu - m.y)
        r = r / m.sigma
        val += float(np.abs(r).sum()) if loss == "l1" else 0.5 * float(r @ r)
    return val
