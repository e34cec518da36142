"""Private-GSD — Liu, Tang, Vietri & Wu, *Generating Private Synthetic Data with Genetic
Algorithms*, ICML 2023 (arXiv:2306.03257), in its one-shot form (every query measured once, then one search),
as the PrivPGD paper ran it (Donhauser et al., *Privacy-preserving data release leveraging
optimal transport and particle gradient descent*, ICML 2024, arXiv:2401.17823, §4:
all 2-way marginals as queries, elite size 2, early stopping).

1. **MEASURE** (once): the number of records ``n̂`` (share ``total_share``), then every
   cell of every ``degree``-way marginal — the query workload of
   :class:`~margsynth.mechanisms.queries.MarginalQueries` — as counts with one Gaussian
   mechanism (L2 sensitivity ``sqrt(P)`` for ``P`` marginals under add/remove-one, share
   ``measure_share``; :func:`~margsynth.mechanisms.queries.measure_queries`), each charged to
   the ledger before its draw. The noisy counts divided by ``n̂`` are the target answers
   ``â``.
2. **GENERATE**: a genetic search (the paper's Private-GSD algorithm: a genetic strategy
   with mutation and crossover operators made for synthetic data) over synthetic datasets of ``n'`` rows. The elite
   (``elite_size`` best datasets found so far) starts as uniformly random datasets; each
   generation makes a population of candidates from the best one:

   * **mutation** (``mutations`` candidates): ``rows_per_candidate`` rows get one value
     replaced by a uniformly random one (or, for a ``whole_rows`` fraction of the
     candidates, are replaced by uniformly random rows);
   * **crossover** (``crossovers`` candidates): ``rows_per_candidate`` rows get one
     column's value copied from a random row of a random elite member (or, for the
     ``whole_rows`` fraction, are replaced by whole rows of it).

   A candidate's fitness is its error against the noisy answers over all measured
   queries, ``Σ_q (a_q(X) - â_q)²`` (``loss="l2"``, the paper's) or
   ``Σ_q |a_q(X) - â_q|`` (``loss="l1"``), where ``a(X)`` is the vector of normalised
   marginal answers of ``X``. The elite keeps the fittest of itself and the population;
   the search stops after ``generations`` generations or when the best fitness improved by
   less than a relative ``tolerance`` over the last ``patience`` generations (early
   stopping, as in the PrivPGD paper §4).

   **Incremental answers** (the paper's efficiency device): a candidate changes only a few rows, so its answers are
   the best dataset's answers minus the old rows' contributions plus the new rows'
   (:func:`changed_cells`), and its fitness is the best one's plus the change on the
   touched cells only (:func:`fitness_change`). The answers are never recomputed from
   scratch during the search; everything is vectorised over the population in numpy.
3. The best dataset's ``n'`` rows are scaled to the requested number of records (each row
   repeated ``⌊N/n'⌋`` times, plus ``N mod n'`` distinct rows drawn at random).

Decisions the paper leaves open (the target normalisation by ``n̂``, the row-window
sampling of the changed rows, the output scaling) are written up in
``docs/notes/private_gsd.md``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..inference.repair import enforce, marginals_log_conditional
from ..privacy import BudgetLedger
from ..rules import RuleSet
from ..timing import Stopwatch, timed
from .base import (
    Mechanism,
    SynthesisResult,
    bounded_records,
    check_conversion,
    check_positive_int,
    check_records,
    preset_of,
)
from .queries import MarginalQueries, check_workload_fits, measure_queries, measure_total

__all__ = [
    "KINDS",
    "LOSSES",
    "PRESETS",
    "GeneticState",
    "MarginalCells",
    "PrivateGSD",
    "Proposal",
    "changed_cells",
    "fitness_change",
    "propose",
    "scale_rows",
    "value_cells",
]

#: Fitness functions: squared error (the paper's and the authors' code) or absolute error.
LOSSES = ("l2", "l1")
#: The operators, in the order a population lists them (:func:`propose`).
KINDS = ("value mutation", "row mutation", "value crossover", "row crossover")


# --------------------------------------------------------------------------- query cells
@dataclass(frozen=True)
class MarginalCells:
    """All ``k``-way marginals of a domain as one flat vector of cells: marginal ``p``
    over attributes ``cliques[p]`` occupies ``offsets[p] : offsets[p] + ∏ sizes``, cells in
    C order. A record hits exactly one cell of every marginal (:meth:`cells`), so a
    dataset's answers are the bincount of its records' cells (:meth:`counts`).

    For the value operators, ``touch_offsets[c]`` are the first cells of the ``T``
    marginals that contain attribute ``c`` (the only ones a change of ``c`` moves),
    ``own_stride[c]`` the stride of ``c`` in each, and ``others[c]`` / ``other_strides[c]``
    their other ``k - 1`` attributes and strides (:meth:`cells_touching`)."""

    sizes: np.ndarray  # (d,) attribute sizes
    cliques: np.ndarray  # (P, k) attribute indices, increasing
    strides: np.ndarray  # (P, k) C-order strides of each marginal table
    offsets: np.ndarray  # (P,) first cell of each marginal
    total: int  # number of cells Q
    touch_offsets: np.ndarray  # (d, T), T = C(d-1, k-1)
    own_stride: np.ndarray  # (d, T)
    others: np.ndarray  # (d, T, k-1)
    other_strides: np.ndarray  # (d, T, k-1)

    @classmethod
    def from_queries(cls, workload: MarginalQueries) -> MarginalCells:
        """The cells of a :class:`~.queries.MarginalQueries` workload of ``k``-way marginals
        (cell ``q`` is query ``q``: cliques in order, cells in C order, as
        :meth:`MarginalQueries.counts`)."""
        domain = workload.domain
        degree = len(workload.cliques[0])
        if any(len(c) != degree for c in workload.cliques):
            raise ValueError("Private-GSD's cells need marginals of one size (a k-way workload)")
        sizes = np.asarray(domain.shape, dtype=np.int64)
        d = len(sizes)
        cliques = np.array([[domain.index(a) for a in c] for c in workload.cliques], dtype=np.int64)
        csizes = sizes[cliques]
        strides = np.ones_like(csizes)
        for j in range(degree - 2, -1, -1):
            strides[:, j] = strides[:, j + 1] * csizes[:, j + 1]
        ncells = np.prod(csizes, axis=1)
        offsets = np.concatenate([[0], np.cumsum(ncells)[:-1]]).astype(np.int64)
        if int(ncells.sum()) != workload.n_queries:  # pragma: no cover - layouts agree by construction
            raise ValueError("cell layout disagrees with the workload's query ids")
        touch, own, oth, oth_s = [], [], [], []
        for c in range(d):
            ps = np.flatnonzero((cliques == c).any(axis=1))
            mine = cliques[ps] == c  # (T, k), one True per row
            touch.append(offsets[ps])
            own.append(strides[ps][mine])
            oth.append(cliques[ps][~mine].reshape(len(ps), degree - 1))
            oth_s.append(strides[ps][~mine].reshape(len(ps), degree - 1))
        t = len(touch[0])
        if any(len(x) != t for x in touch):
            raise ValueError("Private-GSD's value operators need every attribute in the same number of marginals")
        return cls(
            sizes, cliques, strides, offsets, int(ncells.sum()),
            np.array(touch, np.int64).reshape(d, t), np.array(own, np.int64).reshape(d, t),
            np.array(oth, np.int64).reshape(d, t, degree - 1), np.array(oth_s, np.int64).reshape(d, t, degree - 1),
        )  # fmt: skip

    def cells(self, rows: np.ndarray) -> np.ndarray:
        """Cell hit by each record in each marginal: ``rows`` ``(..., d)`` → ``(..., P)``."""
        r = np.asarray(rows, dtype=np.int64)
        return self.offsets + (r[..., self.cliques] * self.strides).sum(axis=-1)

    def cells_touching(self, rows: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For records ``rows`` ``(N, d)`` and one attribute ``col[i]`` of each: the cells of
        the marginals containing that attribute, without its own term (``(N, T)``), and
        the attribute's stride in each (``(N, T)``): the record's cell in marginal ``t`` is
        ``base[:, t] + rows[i, col[i]] * stride[:, t]``."""
        n = rows.shape[0]
        vals = rows[np.arange(n)[:, None, None], self.others[col]]  # (N, T, k-1)
        base = self.touch_offsets[col] + (vals * self.other_strides[col]).sum(axis=-1)
        return base, self.own_stride[col]

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Marginal counts of the records ``rows`` ``(n, d)``, flat ``(Q,)`` int64 — the
        from-scratch answer, used only to initialise the elite (and by the tests)."""
        return np.bincount(self.cells(rows).ravel(), minlength=self.total).astype(np.int64)


# --------------------------------------------------------------------------- incremental updates
@dataclass
class Proposal:
    """A population of candidates, each the best dataset with its rows ``rows[c]``
    (distinct within a candidate; ``old[c]`` their values) replaced by ``new[c]``.
    ``col[c, j]`` is the one attribute a value operator changed in row ``j`` (``-1`` for
    the whole-row operators); ``sizes`` counts the candidates of each of :data:`KINDS`,
    in that order."""

    rows: np.ndarray  # (C, m) row indices
    old: np.ndarray  # (C, m, d) the rows before
    new: np.ndarray  # (C, m, d) the rows after
    col: np.ndarray  # (C, m) changed attribute, -1 for whole rows
    sizes: tuple[int, ...]

    @property
    def kinds(self) -> np.ndarray:
        """The operator of each candidate (a name of :data:`KINDS`)."""
        return np.repeat(np.array(KINDS), self.sizes)


def _aggregate(cand: np.ndarray, cell: np.ndarray, sign: np.ndarray, total: int):
    """Sum ``sign`` per (candidate, cell); drop zeros; sorted by candidate then cell."""
    key = cand * total + cell
    uniq, inv = np.unique(key, return_inverse=True)
    delta = np.bincount(inv, weights=sign, minlength=uniq.size).astype(np.int64)
    keep = delta != 0
    uniq, delta = uniq[keep], delta[keep]
    return uniq // total, uniq % total, delta


def changed_cells(cells: MarginalCells, old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The change of each candidate's counts when rows ``old`` ``(C, m, d)`` are replaced by
    ``new``: subtract the old rows' cells, add the new rows' cells, sum per (candidate, cell).

    Returns ``(candidate, cell, delta)``, one entry per (candidate, cell) whose count
    changes (``delta ≠ 0``), sorted by candidate then cell.
    """
    c_old = cells.cells(old)  # (C, m, P)
    c_new = cells.cells(new)
    moved = c_old != c_new  # unchanged marginals cancel exactly
    cand = np.broadcast_to(np.arange(c_old.shape[0])[:, None, None], c_old.shape)[moved]
    ones = np.ones(cand.size, np.int64)
    return _aggregate(np.concatenate([cand, cand]), np.concatenate([c_old[moved], c_new[moved]]),
                      np.concatenate([-ones, ones]), cells.total)  # fmt: skip


def _loss(residual: np.ndarray, loss: str) -> np.ndarray:
    return residual * residual if loss == "l2" else np.abs(residual)


def _change(r: np.ndarray, d: np.ndarray | float, loss: str) -> np.ndarray:
    """``f(r + d) - f(r)`` for the loss ``f``."""
    return d * (2.0 * r + d) if loss == "l2" else np.abs(r + d) - np.abs(r)


def fitness_change(
    residual: np.ndarray,
    cand: np.ndarray,
    cell: np.ndarray,
    delta: np.ndarray,
    n_rows: int,
    n_candidates: int,
    loss: str = "l2",
) -> np.ndarray:
    """Each candidate's fitness minus the best dataset's, from the changed cells only:
    ``Σ_cells f(r + δ/n') - f(r)`` with ``r = a(X) - â`` the best dataset's residuals."""
    per = _change(residual[cell], delta / n_rows, loss)
    return np.bincount(cand, weights=per, minlength=n_candidates)


def value_cells(
    cells: MarginalCells, old: np.ndarray, new: np.ndarray, col: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows ``old`` ``(N, d)`` changed only in attribute ``col[i]`` (``new``): the cells
    each row leaves and enters in the ``T`` marginals containing that attribute — the only
    ones it moves — ``(N, T)`` each, and whether the row changed at all ``(N,)``."""
    base, stride = cells.cells_touching(old, col)
    ar = np.arange(col.size)
    u = old[ar, col].astype(np.int64)[:, None]
    v = new[ar, col].astype(np.int64)[:, None]
    return base + u * stride, base + v * stride, (u != v)[:, 0]


@dataclass
class GeneticState:
    """The search state: the elite (``archive``, best first, with its fitness) and the
    best dataset's answers — integer counts ``counts`` and residuals
    ``residual = counts / n' - target`` — kept up to date incrementally."""

    cells: MarginalCells
    target: np.ndarray  # (Q,) noisy normalised answers
    archive: np.ndarray  # (E, n', d) int codes, best first
    fitness: np.ndarray  # (E,)
    counts: np.ndarray  # (Q,) int64 counts of archive[0]
    residual: np.ndarray  # (Q,) float64
    loss: str = "l2"

    @classmethod
    def start(cls, cells: MarginalCells, target: np.ndarray, archive: np.ndarray, loss: str) -> GeneticState:
        """Score the initial elite from scratch (the only full computation) and sort it."""
        n = archive.shape[1]
        fit = np.array([_loss(cells.counts(x) / n - target, loss).sum() for x in archive])
        order = np.argsort(fit, kind="stable")
        archive, fit = np.ascontiguousarray(archive[order]), fit[order]
        counts = cells.counts(archive[0])
        return cls(cells, target, archive, fit, counts, counts / n - target, loss)

    @property
    def best(self) -> np.ndarray:
        return self.archive[0]

    @property
    def best_fitness(self) -> float:
        return float(self.fitness[0])

    def moves(self, prop: Proposal, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(candidate, cell, delta)`` for the candidates ``idx`` of ``prop`` (candidate
        numbered by position in ``idx``): subtract the old rows' cells, add the new rows',
        sum per (candidate, cell) — value operators through :func:`value_cells` (only the
        marginals containing the changed attribute), whole rows through
        :func:`changed_cells`."""
        if prop.col[idx[0], 0] < 0:
            return changed_cells(self.cells, prop.old[idx], prop.new[idx])
        m, d = prop.rows.shape[1], prop.old.shape[2]
        oc, nc, moved = value_cells(self.cells, prop.old[idx].reshape(-1, d), prop.new[idx].reshape(-1, d),
                                    prop.col[idx].ravel())  # fmt: skip
        t = oc.shape[1]
        cand = np.repeat(np.repeat(np.arange(idx.size), m)[moved], t)
        ones = np.ones(cand.size, np.int64)
        return _aggregate(np.concatenate([cand, cand]), np.concatenate([oc[moved].ravel(), nc[moved].ravel()]),
                          np.concatenate([-ones, ones]), self.cells.total)  # fmt: skip

    def evaluate(self, prop: Proposal) -> np.ndarray:
        """Fitness of every candidate of ``prop``, incrementally: the best fitness plus
        the change on the cells the candidate moves (:meth:`moves`; with one row per
        candidate and a value operator the moved cells are distinct and summed directly)."""
        n_cand, m = prop.rows.shape
        n = self.archive.shape[1]
        change = np.zeros(n_cand)
        value = prop.col[:, 0] >= 0
        vi = np.flatnonzero(value)
        if vi.size and m == 1:
            oc, nc, moved = value_cells(self.cells, prop.old[vi, 0], prop.new[vi, 0], prop.col[vi, 0])
            h = 1.0 / n
            ch = _change(self.residual[nc], h, self.loss) + _change(self.residual[oc], -h, self.loss)
            change[vi] = np.where(moved, ch.sum(axis=1), 0.0)
        elif vi.size:
            c, cl, dl = self.moves(prop, vi)
            change[vi] = fitness_change(self.residual, c, cl, dl, n, vi.size, self.loss)
        ri = np.flatnonzero(~value)
        if ri.size:
            c, cl, dl = self.moves(prop, ri)
            change[ri] = fitness_change(self.residual, c, cl, dl, n, ri.size, self.loss)
        return self.fitness[0] + change

    def tell(self, prop: Proposal, fitness: np.ndarray) -> bool:
        """Keep the ``E`` fittest of the elite and the population (ties: the elite first);
        returns whether the best dataset changed (its answers are then updated
        incrementally with the winning candidate's moved cells, :meth:`apply`)."""
        e = len(self.fitness)
        allfit = np.concatenate([self.fitness, fitness])
        order = np.argsort(allfit, kind="stable")[:e]
        if order.max() < e:
            return False  # no candidate entered the elite
        archive = np.empty_like(self.archive)
        for k, i in enumerate(order):
            if i < e:
                archive[k] = self.archive[i]
            else:
                archive[k] = self.best
                archive[k, prop.rows[i - e]] = prop.new[i - e]
        improved = order[0] >= e
        if improved:
            self.apply(prop, int(order[0] - e))
        self.archive = archive
        self.fitness = allfit[order]
        return bool(improved)

    def apply(self, prop: Proposal, c: int) -> None:
        """Move the best dataset's answers to those of candidate ``c``: subtract its old
        rows' cells, add its new rows' (never recomputed from scratch)."""
        if prop.rows.shape[1] == 1 and prop.col[c, 0] >= 0:  # one value: distinct cells, as in evaluate
            oc, nc, moved = value_cells(self.cells, prop.old[c], prop.new[c], prop.col[c])
            if not moved[0]:
                return
            cell = np.concatenate([oc[0], nc[0]])
            self.counts[oc[0]] -= 1
            self.counts[nc[0]] += 1
        else:
            _, cell, delta = self.moves(prop, np.array([c]))
            self.counts[cell] += delta
        self.residual[cell] = self.counts[cell] / self.archive.shape[1] - self.target[cell]


def propose(
    rng: np.random.Generator,
    state: GeneticState,
    *,
    mutations: int,
    crossovers: int,
    rows_per_candidate: int,
    whole_rows: float,
) -> Proposal:
    """One generation's population, all drawn as arrays: value / row mutations, then
    value / row crossovers (``whole_rows`` of each operator's candidates replace whole
    rows). Each candidate changes ``rows_per_candidate`` distinct rows (one uniform row,
    or a random window of a fresh random permutation of the rows)."""
    sizes = state.cells.sizes
    best = state.best
    n, d = best.shape
    m = rows_per_candidate
    e = len(state.fitness)
    k_mut = int(round(whole_rows * mutations))
    k_cross = int(round(whole_rows * crossovers))
    counts = (mutations - k_mut, k_mut, crossovers - k_cross, k_cross)
    total = sum(counts)
    # one block of uniforms per generation; integers in 0..k-1 as floor(u * k)
    u = rng.random((total, 4 * m + 1))
    if m == 1:
        rows = (u[:, :1] * n).astype(np.int64)
    else:
        perm = rng.permutation(n)
        rows = perm[((u[:, :1] * n).astype(np.int64) + np.arange(m)) % n]  # distinct within a candidate
    cols = (u[:, m : 2 * m] * d).astype(np.int64)  # (C, m)
    old = best[rows]  # (C, m, d)
    new = old.copy()
    flat = new.reshape(total * m, d)
    col = np.full((total, m), -1, dtype=np.int64)
    b0, b1, b2, b3 = np.cumsum(counts).tolist()
    # value mutation: one attribute of each changed row gets a uniform random value
    if b0 > 0:
        c = cols[:b0]
        flat[np.arange(b0 * m), c.ravel()] = (u[:b0, 2 * m : 3 * m] * sizes[c]).astype(new.dtype).ravel()
        col[:b0] = c
    # row mutation: whole uniform random rows
    if b1 > b0:
        new[b0:b1] = (rng.random((b1 - b0, m, d)) * sizes).astype(new.dtype)
    # value crossover: one attribute copied from a random row of a random elite member
    if b2 > b1:
        member = (u[b1:b2, 4 * m :] * e).astype(np.int64)  # (k, 1)
        donor = (u[b1:b2, 3 * m : 4 * m] * n).astype(np.int64)  # (k, m)
        c = cols[b1:b2]
        flat[np.arange(b1 * m, b2 * m), c.ravel()] = state.archive[member, donor, c].ravel()
        col[b1:b2] = c
    # row crossover: whole rows copied from a random elite member
    if b3 > b2:
        member = (u[b2:b3, 4 * m :] * e).astype(np.int64)
        donor = (u[b2:b3, 3 * m : 4 * m] * n).astype(np.int64)
        new[b2:b3] = state.archive[member, donor]
    return Proposal(rows, old, new, col, counts)


def scale_rows(rows: np.ndarray, records: int, rng: np.random.Generator) -> np.ndarray:
    """``records`` rows from the ``n'`` rows ``rows``: each repeated ``⌊records/n'⌋`` times,
    plus ``records mod n'`` distinct ones drawn at random (so every row keeps weight
    ``1/n'`` up to one record)."""
    n = rows.shape[0]
    q, r = divmod(int(records), n)
    idx = np.concatenate([np.tile(np.arange(n), q), rng.choice(n, size=r, replace=False)])
    return rows[np.sort(idx, kind="stable")]


# --------------------------------------------------------------------------- the mechanism
@dataclass(frozen=True)
class PrivateGSD(Mechanism):
    """Private-GSD, one-shot (Liu, Tang, Vietri & Wu, ICML 2023, arXiv:2306.03257; as run in
    Donhauser et al., ICML 2024, arXiv:2401.17823, §4).

    Parameters
    ----------
    synthetic_rows:
        ``n'``, the rows of every candidate dataset (the PrivPGD paper tunes it).
    generations:
        ``G``, the most generations of the search.
    mutations, crossovers:
        Candidates made by mutation and by crossover each generation (the paper's
        mutation and crossover population sizes).
    rows_per_candidate:
        Rows each candidate changes (the authors' mutation / mating rate; 1 recommended).
    whole_rows:
        Fraction of each operator's candidates that replace whole rows instead of one
        value per row (0: the authors' operators).
    elite_size:
        Datasets kept between generations (2 in the PrivPGD paper).
    loss:
        ``"l2"`` (squared error, the paper's) or ``"l1"``.
    patience, tolerance:
        Early stopping: stop when the best fitness improved by less than a relative
        ``tolerance`` over the last ``patience`` generations (``patience=None``: ``n'``,
        as the authors' code). ``tolerance=0`` disables it.
    degree:
        The workload: all ``degree``-way marginals (2 in the PrivPGD paper).
    total_share, measure_share:
        Shares of the zCDP budget for the record count ``n̂`` (used to normalise the noisy
        counts; as RAP and GEM here) and for the one-shot measurement of the workload. They
        must sum to at most 1.
    conversion:
        zCDP → (ε, δ) conversion of the ledger, as :class:`~.mst.MST` (``"cks"``).
    synthetic_records:
        Records of the output (``None``: ``n̂`` rounded).
    progress:
        Show a tqdm progress bar over the generations.
    """

    synthetic_rows: int = 2000
    generations: int = 200_000
    mutations: int = 50
    crossovers: int = 50
    rows_per_candidate: int = 1
    whole_rows: float = 0.0
    elite_size: int = 2
    loss: str = "l2"
    patience: int | None = None
    tolerance: float = 1e-4
    degree: int = 2
    total_share: float = 0.01
    measure_share: float = 0.99
    conversion: str = "cks"
    synthetic_records: int | None = None
    progress: bool = True

    name = "private-gsd"

    @classmethod
    def preset(cls, preset: str = "default", **overrides: Any) -> PrivateGSD:
        """``"default"`` or ``"fast"`` (see ``PRESETS``) with ``overrides`` replacing fields
        (the registry's ``private-gsd`` factory)."""
        return preset_of(cls, PRESETS, preset, overrides)

    def parameters(self) -> dict[str, Any]:
        return asdict(self)

    # ------------------------------------------------------------------ checks
    def check_hyperparameters(self) -> None:
        """Every hyperparameter, before any draw (``ValueError`` naming the field)."""
        for f in ("synthetic_rows", "generations", "rows_per_candidate", "elite_size", "degree"):
            check_positive_int(f, getattr(self, f))
        for f in ("mutations", "crossovers"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{f} must be an integer >= 0, got {v!r}")
        if self.mutations + self.crossovers < 1:
            raise ValueError("mutations + crossovers must be at least 1 (an empty population cannot search)")
        if self.rows_per_candidate > self.synthetic_rows:
            raise ValueError(
                f"rows_per_candidate ({self.rows_per_candidate}) must be at most synthetic_rows ({self.synthetic_rows})"
            )
        if not (isinstance(self.whole_rows, (int, float)) and not isinstance(self.whole_rows, bool)
                and 0 <= self.whole_rows <= 1):  # fmt: skip
            raise ValueError(f"whole_rows must be a number in [0, 1], got {self.whole_rows!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.patience is not None:
            check_positive_int("patience", self.patience)
        if not (isinstance(self.tolerance, (int, float)) and not isinstance(self.tolerance, bool)
                and math.isfinite(self.tolerance) and self.tolerance >= 0):  # fmt: skip
            raise ValueError(f"tolerance must be a finite number >= 0, got {self.tolerance!r}")
        for f in ("total_share", "measure_share"):
            s = getattr(self, f)
            if not (isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and 0 < s < 1):
                raise ValueError(f"{f} must be in (0, 1), got {s!r}")
        if self.total_share + self.measure_share > 1.0 + 1e-12:
            raise ValueError(
                f"total_share + measure_share must be at most 1, got {self.total_share} + {self.measure_share}"
            )
        check_conversion(self.conversion)
        check_records(self.synthetic_records)
        if not isinstance(self.progress, bool):
            raise ValueError(f"progress must be True or False, got {self.progress!r}")

    def check(self, data: Dataset, budget: BudgetLedger, **_: object) -> None:
        """Private-GSD's own checks, before any noise: the hyperparameters, the workload's and
        the search's memory, the output size. Raises ``ValueError``."""
        self.check_hyperparameters()
        d = len(data.domain)
        if self.degree > d:
            raise ValueError(f"degree {self.degree} exceeds the number of attributes ({d})")
        if data.weights is not None:
            raise ValueError("Private-GSD takes unweighted records (data.weights must be None)")
        # per cell: exact and noisy counts, the search's counts and residuals (8 bytes each);
        # besides: the elite (int32 codes, and a copy when it is re-sorted) and a population's rows
        population = (self.mutations + self.crossovers) * self.rows_per_candidate
        check_workload_fits(data.domain, self.degree, "Private-GSD", per_query_bytes=4 * 8,
                            extra_bytes=2 * 4 * self.elite_size * self.synthetic_rows * d + 3 * 8 * population * d)  # fmt: skip
        check_records(self.synthetic_records, columns=d)

    # ------------------------------------------------------------------ run
    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """MEASURE the count and every query once, then the genetic search, spending ``budget``.

        ``rules`` (public, no budget): the search's ``n'`` rows are fixed before they are
        scaled to the requested records — each row that breaks a rule gets the attribute each
        broken rule determines redrawn, among the values every rule allows, from its
        conditional given the row's other attributes under the measured marginals
        (:func:`~margsynth.inference.repair.marginals_log_conditional`, the noisy counts with
        their negative cells at zero), and a row that leaves unfixed the attributes of its
        broken rules redrawn weighted by the rows' own one-way marginals
        (:func:`~margsynth.inference.repair.enforce`) — then the search runs again from the
        fixed rows as the elite, with the same operators, fitness and stopping rule, keeping
        only candidates whose changed rows break no rule (a lawful search: the fix moved
        values off the measured answers, the second search moves them back within the
        rules). Every copy of a row obeys them. ``extras["rules"]``: the fix's report and the
        lawful search's trace (``lawful_search``). The first search is the paper's,
        unconstrained: single-value moves cannot carry a row across a rule's boundary (a
        child to an adult changes the age, the marital status and the income together), so
        a search confined to lawful rows from the start could not move such mass."""
        seconds: dict[str, float] = {}
        clock = Stopwatch()
        ledger = budget
        rho_total = ledger.portion(self.total_share)
        rho_measure = ledger.portion(self.measure_share)

        # SELECT: the workload, all degree-way marginals (no budget)
        workload = MarginalQueries.all_kway(data.domain, self.degree)
        cells = MarginalCells.from_queries(workload)

        # MEASURE: the record count, then every query once (each charged before its draw)
        n_hat = measure_total(data, rho_total, rng, ledger=ledger, label="measure total")
        meas = measure_queries(
            workload, workload.counts(data), np.arange(workload.n_queries), rho_measure, rng,
            ledger=ledger, label=f"measure {self.degree}-way marginals",
        )  # fmt: skip
        target = np.asarray(meas.y) / n_hat
        seconds["measure"] = clock.elapsed()

        # GENERATE: genetic search, then scale n' rows to the requested records
        with timed(seconds, "search"):
            best, trace = self.search(cells, target, rng)
        records, note = (
            (self.synthetic_records, {}) if self.synthetic_records else bounded_records(n_hat, len(cells.sizes))
        )
        report = None
        if rules is not None:
            tables = [(c, meas.y[workload.starts[j] : workload.starts[j + 1]]) for j, c in enumerate(workload.cliques)]
            rows, report = enforce(
                Dataset._trusted(best, data.domain), rules, rng,
                conditional=marginals_log_conditional(data.domain, tables),
            )  # fmt: skip
            # the search again from the fixed rows, keeping only candidates whose rows obey
            # every rule: the fit the fix disturbed is searched for among lawful datasets
            with timed(seconds, "lawful search"):
                best, polish = self.search(
                    cells, target, rng, start=np.asarray(rows.codes, dtype=best.dtype), obeys=rules.row_check(data.domain)
                )
            left = rules.violations(Dataset._trusted(best, data.domain))
            if any(left.values()):  # by construction none: every kept candidate passed the row check
                raise RuntimeError(f"Private-GSD's lawful search kept rows breaking rules: {left}")
            lawful = {k: v for k, v in polish.items() if k != "fitness_history"}
            report = {**report, "lawful_search": {**lawful, "fitness_start": polish["fitness_history"][0]}}
        synth = Dataset._trusted(scale_rows(best, records, rng).astype(data.codes.dtype), data.domain)
        seconds["total"] = clock.elapsed()
        return SynthesisResult.from_ledger(
            synth, self.name, self.parameters(), ledger, seconds,
            {"rho": ledger.total, "sigma": meas.sigma, "sensitivity": meas.sensitivity, "n_hat": n_hat,
             "cliques": list(workload.cliques), **trace, **note, **({} if report is None else {"rules": report})},
        )  # fmt: skip

    def search(
        self,
        cells: MarginalCells,
        target: np.ndarray,
        rng: np.random.Generator,
        *,
        start: np.ndarray | None = None,
        obeys: Any = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """The genetic search (post-processing of ``target``): returns the best ``(n', d)``
        dataset and a trace (generations run, fitness history, stop reason).

        ``start``: an ``(n', d)`` dataset every elite member starts as (default: uniformly
        random datasets). ``obeys``: a row test (:meth:`~margsynth.rules.RuleSet.row_check`);
        a candidate with a row it rejects is never kept (its fitness is infinite), so a
        search started from rows that pass stays among datasets whose every row passes."""
        from tqdm.auto import tqdm

        n, d = self.synthetic_rows, len(cells.sizes)
        if start is None:
            init = (rng.random((self.elite_size, n, d)) * cells.sizes).astype(np.int32)
        else:
            init = np.repeat(np.asarray(start, dtype=np.int32)[None], self.elite_size, axis=0)
        state = GeneticState.start(cells, np.asarray(target, dtype=np.float64), init, self.loss)
        patience = self.patience or n
        history = [state.best_fitness]
        checkpoint = state.best_fitness
        stop = "generations"
        accepted = 0
        bar = tqdm(total=self.generations, desc="Private-GSD", unit="gen", mininterval=0.5, disable=not self.progress)
        g = 0
        try:
            for g in range(1, self.generations + 1):
                prop = propose(
                    rng, state, mutations=self.mutations, crossovers=self.crossovers,
                    rows_per_candidate=self.rows_per_candidate, whole_rows=self.whole_rows,
                )  # fmt: skip
                fitness = state.evaluate(prop)
                if obeys is not None:
                    ok = obeys(prop.new.reshape(-1, d)).reshape(prop.new.shape[:2]).all(axis=1)
                    fitness = np.where(ok, fitness, np.inf)
                accepted += state.tell(prop, fitness)
                if g % patience == 0:
                    f = state.best_fitness
                    history.append(f)
                    bar.update(patience)
                    bar.set_postfix(fitness=f"{f:.4g}", refresh=False)
                    if self.tolerance > 0 and (checkpoint <= 0 or (checkpoint - f) / checkpoint < self.tolerance):
                        stop = "early"
                        break
                    checkpoint = f
            bar.update(g - bar.n)
        finally:
            bar.close()
        return state.best.copy(), {
            "generations_run": g,
            "accepted": accepted,
            "fitness": state.best_fitness,
            "fitness_history": history,
            "stop": stop,
            "synthetic_rows": n,
        }


#: ``default``: the authors' operators (one value per candidate, mutation and crossover
#: populations of 50 each, elite 2, L2 fitness, early stopping every n' generations at a
#: relative improvement of 1e-4), n' = 2000 rows and at most 200,000 generations. Measured on
#: full adult (48,842 x 14) at eps = 2.5, delta = 1e-5, seed 0 on the shared 2-core machine
#: (load ~11): early stop after 112,000 generations, 40 s of process CPU (about 0.35 ms a
#: generation; 165 s wall at that load), 130 MB peak memory; average 2-way TV 0.033 and sliced
#: W1 0.00095. With n' = 5000 (and 500,000 generations at most): 230,000 generations, 82 s CPU,
#: TV 0.026, sliced W1 0.0014.
#: ``fast``: n' = 500, at most 20,000 generations, early-stopping window 1000 (tests, the
#: notebooks' quick profile): 2-4 s CPU on the 80% splits of titanic and nltcs at eps = 2.5.
PRESETS: dict[str, PrivateGSD] = {
    "default": PrivateGSD(),
    "fast": PrivateGSD(synthetic_rows=500, generations=20_000, patience=1000),
}
