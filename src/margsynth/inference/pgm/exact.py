"""The exact optimum of Private-PGM's estimation problem, by a second solver.

Eq. (4.2) of McKenna, Sheldon & Miklau ("Graphical-model based estimation and inference for
differential privacy", ICML 2019, arXiv:1901.09136) with the L2 loss is a convex quadratic
program once the marginal polytope of a junction tree is written as its local polytope —
one table of counts per clique, non-negative, equal on every separator, summing to ``N``
(for a junction tree the two polytopes are the same; Wainwright & Jordan, "Graphical
models, exponential families, and variational inference", 2008, Prop. 2.1 and §4.1):

    minimise  0.5 sum_m ||r_m||^2   subject to   r_m = (Q_m P_m x_{C(m)} - y_m) / sigma_m,
              P_{C->S} x_C = P_{D->S} x_D  for every tree edge (C, D) with separator S,
              sum x_root = N,   x >= 0,

``P_m`` summing clique ``C(m)``'s table (the smallest clique holding measurement ``m``)
onto the measured attributes; with rules (:mod:`margsynth.rules`), also ``x_c = 0`` for
every cell ``c`` a rule inside its clique forbids — the local polytope's face with those
cells empty, which for a junction tree is ``M_Z``, the marginals of the distributions with
no mass on a forbidden cell. :func:`exact_optimum` solves it with the interior-point
solver Clarabel (Goulart & Chen, "Clarabel: an interior-point solver for conic programs
with quadratic objectives", arXiv:2405.12762), which ships with CVXPY.

Two uses. It is the independent reference of the optimality certificate (:mod:`.certificate`):
on any fit, ``loss - gap <= L* <= loss`` must hold (``benchmarks/bench_certificate.py
--exact``; tests against a full-joint NNLS solver on tiny domains). And it finds the optimal
face for ``estimate(..., method="interior_point")``: the cells every optimum leaves empty,
read off the solver's strictly complementary end point (:func:`solve` returns the reduced
gradients ``z`` beside the counts ``x``); the descent on the remaining cells then converges
to the maximum-entropy optimum in a few thousand iterations. The interior point's own
clique tables are an optimum too, but an arbitrary one (near the analytic centre of the
optimal face), not the model Private-PGM describes. Its cost grows quickly with the cells:
~5 s for AIM's 12,000-cell final model of adult, ~30 s for a 65,000-cell one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import clarabel
import numpy as np
import scipy.sparse as sp

from ...domain import Domain
from ...rules import Rule, RuleSet, as_rules
from ...timing import Stopwatch
from .junction_tree import JunctionTree
from .kernels import sub_map
from .measurement import CompiledMeasurement, Measurement, compile_measurements

__all__ = ["ExactSolution", "exact_optimum"]


@dataclass(frozen=True)
class ExactSolution:
    """``loss``: the optimum ``L*`` (the objective at the solver's point); ``marginals``: the
    clique tables of counts at the optimum (clique order of the tree, negative rounding
    noise clipped to 0); ``status``, ``iterations`` and ``seconds`` of the solver;
    ``reduced``: the multipliers of ``x >= 0`` per clique table (the reduced gradient,
    positive where every optimum leaves the cell empty)."""

    loss: float
    marginals: list[np.ndarray]
    status: str
    iterations: int
    seconds: float
    reduced: list[np.ndarray] | None = None


def _projection(shape: Sequence[int], axes: Sequence[int]) -> sp.csr_matrix:
    """The 0/1 matrix summing a table of ``shape`` (C order) onto its axes ``axes``."""
    rows = sub_map(list(shape), frozenset(range(len(shape))), frozenset(axes))
    n_out = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
    return sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))), shape=(n_out, rows.size))


def exact_optimum(
    domain: Domain,
    tree: JunctionTree,
    measurements: Sequence[Measurement],
    total: float,
    *,
    max_cells: int = 100_000,
    tol: float = 1e-9,
    max_iter: int = 200,
    rules: RuleSet | Sequence[Rule] | None = None,
) -> ExactSolution:
    """The minimum of the L2 loss of :func:`~.estimation.estimate` over the marginal polytope
    of ``tree`` (every measurement's attributes must lie in one of its cliques; a fitted
    model's ``tree`` qualifies), with ``total`` records; with ``rules``, over its
    distributions with no mass on a cell that a rule inside a clique forbids (rules inside
    no clique are ignored: a fitted model's ``stats["rules"]["left"]``).

    Raises ``ValueError`` for a tree of more than ``max_cells`` cells (the interior-point
    factorisations grow quickly) and ``RuntimeError`` when the solver does not report a
    solution within ``max_iter`` iterations. ``tol``: the solver's relative gap and
    feasibility tolerances. ``estimate(..., method="interior_point")`` fits a model by the
    same solver (no cell limit there)."""
    if tree.cells > max_cells:
        raise ValueError(f"max_cells: the junction tree has {tree.cells:,} cells > max_cells={max_cells:,}")
    if not np.isfinite(total) or total <= 0:
        raise ValueError(f"total must be finite and > 0, got {total!r}")
    rule_set = as_rules(rules, domain)
    allowed = None if rule_set is None else [rule_set.mask(c, domain) for c in tree.cliques]
    return solve(
        domain, tree, compile_measurements(domain, measurements), float(total), tol=tol, max_iter=max_iter,
        allowed=allowed,
    )  # fmt: skip


def solve(
    domain: Domain,
    tree: JunctionTree,
    compiled: Sequence[CompiledMeasurement],
    total: float,
    *,
    tol: float = 1e-9,
    max_iter: int = 200,
    allowed: Sequence[np.ndarray | None] | None = None,
) -> ExactSolution:
    """:func:`exact_optimum` on validated measurements (:func:`~.measurement.compile_measurements`)
    and a valid ``total``: the quadratic program above, built as sparse matrices and solved by
    Clarabel (single-threaded, deterministic). ``allowed``: per clique, the cells that may
    hold mass (``None``: all); the others are constrained to 0."""
    shapes = [tuple(domain[a].size for a in c) for c in tree.cliques]
    cells = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    off = np.concatenate([[0], np.cumsum(cells)]).astype(np.int64)
    n = int(off[-1])
    # residual rows: r_m - (Q_m P_m / sigma_m) x = -y_m / sigma_m
    blocks, rhs = [], []
    n_res = sum(m.y.size for m in compiled)
    at = 0
    for m in compiled:
        i = tree.find_clique(m.attrs)
        if i is None:
            raise ValueError(f"measurements: {m.label} lies in no clique of the tree")
        clique = tree.cliques[i]
        P = _projection(shapes[i], [clique.index(a) for a in m.attrs])
        A = (P if m.kind == "identity" else m.Q @ P).tocoo()
        k = A.shape[0]
        x_part = sp.coo_matrix((-A.data / m.sigma, (A.row, A.col + off[i])), shape=(k, n))
        r_part = sp.coo_matrix((np.ones(k), (np.arange(k), at + np.arange(k))), shape=(k, n_res))
        blocks.append(sp.hstack([x_part, r_part]))
        rhs.append(-m.y / m.sigma)
        at += k
    # consistency on every separator, the total at the root
    for i, p in enumerate(tree.parent):
        if p < 0:
            continue
        sep = tree.separator(i)
        Pi = _projection(shapes[i], [tree.cliques[i].index(a) for a in sep]).tocoo()
        Pp = _projection(shapes[p], [tree.cliques[p].index(a) for a in sep]).tocoo()
        k = Pi.shape[0]
        x_part = sp.coo_matrix(
            (np.r_[Pi.data, -Pp.data], (np.r_[Pi.row, Pp.row], np.r_[Pi.col + off[i], Pp.col + off[p]])), shape=(k, n)
        )
        blocks.append(sp.hstack([x_part, sp.coo_matrix((k, n_res))]))
        rhs.append(np.zeros(k))
    # structural zeros: x_c = 0 on every forbidden cell
    if allowed is not None:
        for i, m in enumerate(allowed):
            if m is None or m.all():
                continue
            cols = off[i] + np.flatnonzero(~np.asarray(m, dtype=bool).ravel())
            k = cols.size
            x_part = sp.coo_matrix((np.ones(k), (np.arange(k), cols)), shape=(k, n))
            blocks.append(sp.hstack([x_part, sp.coo_matrix((k, n_res))]))
            rhs.append(np.zeros(k))
    r = tree.root
    root_row = sp.coo_matrix((np.ones(cells[r]), (np.zeros(cells[r], dtype=np.int64), off[r] + np.arange(cells[r]))), (1, n))
    blocks.append(sp.hstack([root_row, sp.coo_matrix((1, n_res))]))
    rhs.append(np.array([float(total)]))
    n_eq = sum(b.shape[0] for b in blocks)
    A = sp.vstack([*blocks, sp.hstack([-sp.identity(n), sp.coo_matrix((n, n_res))])]).tocsc()
    b = np.concatenate([*rhs, np.zeros(n)])
    P = sp.block_diag([sp.csc_matrix((n, n)), sp.identity(n_res)]).tocsc()
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_threads = 1
    settings.max_iter = int(max_iter)
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    clock = Stopwatch()
    cones = [clarabel.ZeroConeT(n_eq), clarabel.NonnegativeConeT(n)]
    sol = clarabel.DefaultSolver(sp.triu(P).tocsc(), np.zeros(n + n_res), A, b, cones, settings).solve()
    seconds = clock.elapsed()
    status = str(sol.status)
    if "Solved" not in status:
        raise RuntimeError(
            f"interior point: Clarabel stopped with status {status} after {int(sol.iterations)} iterations"
        )
    z = np.asarray(sol.x)
    res = z[n:]
    x = np.maximum(z[:n], 0.0)
    dual = np.maximum(np.asarray(sol.z)[n_eq:], 0.0)  # multipliers of x >= 0: the reduced gradient
    tables = [x[off[i] : off[i + 1]].reshape(shapes[i]) for i in range(len(cells))]
    duals = [dual[off[i] : off[i + 1]].reshape(shapes[i]) for i in range(len(cells))]
    return ExactSolution(0.5 * float(res @ res), tables, status, int(sol.iterations), seconds, duals)
