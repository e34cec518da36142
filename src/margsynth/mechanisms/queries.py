"""Marginal query workloads: what the query-based mechanisms (RAP, GEM, Private-GSD) share.

A *k-way marginal query* ``q`` on a record ``x`` is the indicator that ``x`` takes given
values on ``k`` attributes. With each attribute one-hot encoded (attribute ``i``'s value
``v`` is column ``offsets[i] + v`` of a ``D``-column matrix), ``q(x)`` is the product of
the ``k`` one-hot entries of its columns, and a dataset's answer is the average over its
rows. Relaxing the one-hot rows to points of the per-attribute probability simplices (RAP,
Aydore et al., "Differentially Private Query Release Through Adaptive Projection", ICML 2021,
arXiv:2103.06641, §3, Eq. (2)) or to product distributions (GEM, Liu, Vietri & Wu,
"Iterative Methods for Private Synthetic Data: Unifying Framework and New Methods",
NeurIPS 2021, arXiv:2106.07153, §4) keeps the same formula and makes it differentiable.

This module holds, once:

- :class:`MarginalQueries` — a workload of whole marginals (default: all ``k``-way), its
  query ids, the one-hot column offsets, the exact answers of a :class:`Dataset` (from
  :meth:`Dataset.marginal`, so query ``j`` of a clique is cell ``j`` of the C-order
  flattening of that marginal) and the relaxed answers of a torch matrix;
- :func:`measure_total`, :func:`measure_queries` — Gaussian measurements (Prop. 1 of the
  NIST-MST paper, McKenna, Miklau & Sheldon 2021, via
  :func:`margsynth.privacy.gaussian_mechanism`), charged to the ledger before the draw;
- :func:`select_queries` — private worst-query selection (the exponential mechanism,
  :func:`margsynth.privacy.exponential_mechanism`, applied ``K`` times without
  replacement: "peeling", which has the distribution of the one-shot Gumbel top-K of
  Durfee & Rogers, "Practical Differentially Private Top-k Selection with Pay-what-you-get
  Composition", NeurIPS 2019, arXiv:1905.04273, Lemma 4.2), one charge per pick;
- :func:`query_scores`, :func:`clique_scores` — the selection qualities;
- :meth:`MarginalQueries.sample_obeying` — records from RAP's / GEM's relaxed rows that obey
  rules (:mod:`margsynth.rules`).

**Neighbouring relation and sensitivities.** The project's relation is add/remove-one
record (as MST, AIM and PrivPGD here). The papers measure *normalised* answers with ``n``
public (replace-one; RAP §3 uses sensitivity ``1/n`` per query). Here every measured value
is a *count* ``c_q(D) = n a_q(D)``, and ``n`` is estimated privately once
(:func:`measure_total`; sensitivity 1). Adding or removing a record ``x`` changes ``c_q`` by
``q(x) ∈ {0, 1}``, and ``x`` satisfies exactly one query of each marginal, so a set ``S`` of
queries has L2 sensitivity ``sqrt(max_x Σ_{q∈S} q(x))``, bounded by ``sqrt(m_S)`` with
``m_S`` the number of distinct marginals ``S`` touches (equality when ``S`` is a union of
whole marginals): :meth:`MarginalQueries.l2_sensitivity`. Under replace-one it would be
``sqrt(2 m_S)``. Selection scores ``|c_q(D) − n̂ a_q(X)|`` (per query) and
``Σ_{q∈C} |c_q(D) − n̂ a_q(X)|`` (per marginal), with the synthetic answers ``a(X)`` and
``n̂`` already released, move by at most 1 (triangle inequality). These decisions are
written up in ``docs/notes/query_baselines.md``; the tests prove them by brute force.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..inference.repair import enforce
from ..privacy import BudgetLedger, exponential_mechanism, gaussian_mechanism
from ..privacy.accounting import exponential_epsilon, gaussian_sigma
from ..rules import Refinement, RuleSet
from . import base as _base

__all__ = [
    "MarginalQueries",
    "QueryMeasurement",
    "check_workload_fits",
    "clique_scores",
    "measure_queries",
    "measure_total",
    "query_scores",
    "select_queries",
]

_CHUNK_ELEMENTS = 1 << 24  # rows x queries x k of one gather-product chunk (64 MB in float32)


@dataclass(frozen=True, eq=False)
class MarginalQueries:
    """Every cell of every marginal in ``cliques``, as counting queries over the one-hot encoding.

    Attributes
    ----------
    domain:
        The :class:`Domain`.
    cliques:
        The marginals (attribute tuples). Query ids run clique by clique; within clique ``c``
        they follow the C-order flattening of ``Dataset.marginal(c)``.
    offsets:
        ``(d + 1,)`` int64: attribute ``i`` occupies one-hot columns ``offsets[i]:offsets[i+1]``
        (``offsets[-1] = D``, the number of one-hot columns).
    columns:
        ``(Q, k_max)`` int64 one-hot columns of each query; queries of a clique with fewer than
        ``k_max`` attributes are padded with column ``D`` (an all-ones column appended by
        :meth:`relaxed_answers`).
    clique_of:
        ``(Q,)`` int64: the clique index of each query.
    starts:
        ``(len(cliques) + 1,)`` int64: queries of clique ``j`` are ids ``starts[j]:starts[j+1]``.
    """

    domain: Domain
    cliques: tuple[tuple[str, ...], ...]
    offsets: np.ndarray = field(init=False, repr=False)
    columns: np.ndarray = field(init=False, repr=False)
    clique_of: np.ndarray = field(init=False, repr=False)
    starts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise ValueError(f"domain must be a Domain, got {type(self.domain).__name__}")
        if isinstance(self.cliques, (str, bytes)) or not isinstance(self.cliques, Iterable):
            raise ValueError(f"cliques must be a sequence of attribute tuples, got {self.cliques!r}")
        cl = []
        for i, c in enumerate(self.cliques):
            c = (c,) if isinstance(c, str) else tuple(c)
            if not c:
                raise ValueError(f"cliques[{i}] is empty")
            cl.append(self.domain.check_attrs(c, f"cliques[{i}]"))
        if not cl:
            raise ValueError("cliques is empty: a workload needs at least one marginal")
        sizes = np.array(self.domain.shape, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        D = int(offsets[-1])
        kmax = max(len(c) for c in cl)
        blocks, owner = [], []
        for j, c in enumerate(cl):
            idx = [self.domain.index(a) for a in c]
            grids = np.indices(tuple(int(sizes[i]) for i in idx)).reshape(len(idx), -1).T  # C order
            cols = grids + offsets[idx][None, :]
            if len(c) < kmax:
                cols = np.concatenate([cols, np.full((cols.shape[0], kmax - len(c)), D, np.int64)], axis=1)
            blocks.append(cols.astype(np.int64))
            owner.append(np.full(cols.shape[0], j, np.int64))
        columns = np.concatenate(blocks)
        starts = np.concatenate([[0], np.cumsum([b.shape[0] for b in blocks])]).astype(np.int64)
        for name, arr in (("offsets", offsets), ("columns", columns), ("starts", starts)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        clique_of = np.concatenate(owner)
        clique_of.setflags(write=False)
        object.__setattr__(self, "clique_of", clique_of)
        object.__setattr__(self, "cliques", tuple(cl))

    # ------------------------------------------------------------------ construction
    @classmethod
    def all_kway(cls, domain: Domain, k: int = 2) -> MarginalQueries:
        """Every ``k``-way marginal of ``domain`` (attributes in domain order), e.g. the all
        2-way workload the PrivPGD paper (§4) gives RAP, GEM and Private-GSD."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(domain):
            raise ValueError(f"k must be an integer in 1..{len(domain)}, got {k!r}")
        return cls(domain, tuple(itertools.combinations(domain.names, int(k))))

    # ------------------------------------------------------------------ sizes
    @property
    def n_queries(self) -> int:
        """``Q``: the number of queries (cells of all marginals)."""
        return int(self.columns.shape[0])

    @property
    def n_columns(self) -> int:
        """``D``: the number of one-hot columns (sum of the attribute sizes)."""
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return self.n_queries

    def clique_ids(self, j: int) -> np.ndarray:
        """Query ids of clique ``j`` (cells of its marginal, C order)."""
        return np.arange(self.starts[j], self.starts[j + 1], dtype=np.int64)

    def ids_of(self, cliques: Iterable[int]) -> np.ndarray:
        """Query ids of the cliques with indices ``cliques``, concatenated in that order."""
        parts = [self.clique_ids(int(j)) for j in cliques]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def describe(self, q: int) -> dict[str, int]:
        """Query ``q`` as ``{attribute: value}``."""
        c = self.cliques[int(self.clique_of[q])]
        out = {}
        for a, col in zip(c, self.columns[q]):
            i = self.domain.index(a)
            out[a] = int(col - self.offsets[i])
        return out

    # ------------------------------------------------------------------ exact answers
    def counts(self, data: Dataset) -> np.ndarray:
        """``(Q,)`` float64 counts ``c_q(D) = Σ_x q(x)`` (sums of record weights if weighted),
        via :meth:`Dataset.marginal` (one ``bincount`` per marginal)."""
        self._check_data(data)
        return np.concatenate([data.marginal(c, flatten=True).astype(np.float64) for c in self.cliques])

    def answers(self, data: Dataset) -> np.ndarray:
        """``(Q,)`` normalised answers ``a_q(D) = c_q(D) / n`` (``n`` = total weight)."""
        total = data.total() if isinstance(data, Dataset) else 0.0
        if total <= 0:
            raise ValueError("data has no records (total weight 0): normalised answers are undefined")
        return self.counts(data) / total

    def one_hot(self, data: Dataset, dtype=np.float32) -> np.ndarray:
        """``(n, D)`` one-hot encoding of ``data``'s records (column ``offsets[i] + code``)."""
        self._check_data(data)
        codes = data.codes.astype(np.int64, copy=False)
        X = np.zeros((len(data), self.n_columns), dtype=dtype)
        rows = np.arange(len(data))
        for i in range(len(self.domain)):
            X[rows, self.offsets[i] + codes[:, i]] = 1
        return X

    def _check_data(self, data: object) -> None:
        if not isinstance(data, Dataset):
            raise ValueError(f"data must be a Dataset, got {type(data).__name__}")
        if data.domain != self.domain:
            raise ValueError(f"data's domain {data.domain!r} differs from the workload's {self.domain!r}")

    # ------------------------------------------------------------------ relaxed answers
    def relaxed_answers(self, X, ids: np.ndarray | Sequence[int] | None = None):
        """Answers of a relaxed one-hot matrix, differentiable (torch).

        ``X`` is an ``(n, D)`` torch tensor whose rows are relaxed one-hot records (RAP's
        relaxation) or product distributions (GEM's generator output): each attribute's block
        a point of the simplex. Query ``q`` with columns ``j_1..j_k`` gets
        ``(1/n) Σ_r Π_l X[r, j_l]`` — RAP Eq. (2); for one-hot rows it is exactly
        :meth:`answers`. All 2-way workloads use the Gram matrix ``XᵀX / n`` (one matrix
        product) when many queries are asked; otherwise products are gathered (in chunks). Returns a ``(len(ids),)`` tensor
        (all queries if ``ids`` is None) on ``X``'s device and dtype.
        """
        import torch

        if not isinstance(X, torch.Tensor) or X.ndim != 2 or X.shape[1] != self.n_columns:
            raise ValueError(f"X must be an (n, {self.n_columns}) torch tensor, got {getattr(X, 'shape', type(X))}")
        n = X.shape[0]
        if n == 0:
            raise ValueError("X has no rows")
        cols = self.columns if ids is None else self.columns[np.asarray(ids, dtype=np.int64)]
        cols = np.array(cols, dtype=np.int64)  # a writable copy for torch
        k = cols.shape[1]
        if k == 1:
            return X.mean(dim=0)[torch.from_numpy(cols[:, 0].copy()).to(X.device)]
        if k == 2 and not (cols == self.n_columns).any() and cols.shape[0] >= 8 * self.n_columns:
            G = (X.T @ X) / n
            a = torch.from_numpy(cols[:, 0].copy()).to(X.device)
            b = torch.from_numpy(cols[:, 1].copy()).to(X.device)
            return G[a, b]
        if k == 2 and not (cols == self.n_columns).any():
            XT = X.T.contiguous()  # rows of XT are columns of X: contiguous gathers
            a = torch.from_numpy(cols[:, 0].copy()).to(X.device)
            b = torch.from_numpy(cols[:, 1].copy()).to(X.device)
            return (XT.index_select(0, a) * XT.index_select(0, b)).mean(dim=1)
        Xp = torch.cat([X, torch.ones(n, 1, dtype=X.dtype, device=X.device)], dim=1)
        step = max(1, _CHUNK_ELEMENTS // max(1, n * k))
        out = []
        for s in range(0, cols.shape[0], step):
            c = torch.from_numpy(cols[s : s + step]).to(X.device)
            out.append(Xp[:, c].prod(dim=-1).mean(dim=0))
        return torch.cat(out) if out else X.new_zeros(0)

    def block_softmax(self, logits):
        """Softmax within each attribute's block of columns: ``(n, D)`` free parameters →
        ``(n, D)`` rows of product distributions (RAP's softmax parameterisation of the
        relaxed one-hot rows; GEM's output activation)."""
        import torch

        o = self.offsets
        return torch.cat([logits[:, int(o[i]) : int(o[i + 1])].softmax(dim=-1) for i in range(len(o) - 1)], dim=1)

    def sample_records(
        self, probs: np.ndarray, n: int, rng: np.random.Generator, weights: np.ndarray | None = None
    ) -> Dataset:
        """``n`` records from the mixture of the product distributions ``probs`` (``(rows, D)``,
        each block on its simplex) with mixture ``weights`` (default uniform): a row drawn by
        weight, then each attribute from that row's block (inverse-CDF draws from ``rng``; same
        seed, same records)."""
        P = np.asarray(probs, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != self.n_columns or P.shape[0] == 0:
            raise ValueError(f"probs must be an (rows, {self.n_columns}) array, got shape {P.shape}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if weights is not None:
            wts = np.asarray(weights, dtype=np.float64)
            if wts.shape != (P.shape[0],) or not np.all(np.isfinite(wts)) or (wts < 0).any() or wts.sum() <= 0:
                raise ValueError(f"weights must be {P.shape[0]} finite non-negative numbers with a positive sum")
            rows = rng.choice(P.shape[0], size=int(n), p=wts / wts.sum())
        else:
            rows = rng.integers(0, P.shape[0], size=int(n))
        codes = np.empty((int(n), len(self.domain)), dtype=np.int64)
        for i in range(len(self.domain)):
            block = np.clip(P[:, self.offsets[i] : self.offsets[i + 1]], 0.0, None)
            cdf = np.cumsum(block, axis=1)
            cdf /= cdf[:, -1:]
            u = rng.random(int(n))
            step = max(1, _CHUNK_ELEMENTS // block.shape[1])  # records per chunk: bounded temporaries
            for s in range(0, int(n), step):
                hit = (u[s : s + step, None] >= cdf[rows[s : s + step]]).sum(axis=1)
                codes[s : s + step, i] = np.minimum(hit, block.shape[1] - 1)
        return Dataset(codes, self.domain)

    def sample_obeying(
        self,
        probs: np.ndarray,
        n: int,
        rng: np.random.Generator,
        rules: RuleSet | None,
        weights: np.ndarray | None = None,
        *,
        whole: bool = True,
        keep_counts: bool = True,
        refinement: Refinement | None = None,
    ) -> tuple[Dataset, dict[str, Any] | None]:
        """:meth:`sample_records`, then each record that breaks one of ``rules`` gets every
        attribute of its broken rules drawn again, one after the other, among the values every
        rule allows, from the mixture's full conditional given the record's other attributes
        (:meth:`mixture_log_conditional`; a sweep of Gibbs steps of the mixture conditioned on
        the rules, :func:`~margsynth.inference.repair.redraw` with ``whole``), and a record that
        leaves unfixed gets the attributes of its broken rules redrawn weighted by the
        mixture's one-way marginals; then each redrawn attribute's one-way counts are moved
        back to the drawn records' by changing that attribute in records the redraw left alone,
        where they stay lawful (:func:`~margsynth.inference.repair.rebalance`;
        :func:`~margsynth.inference.repair.enforce` does the three). A product row spreads a
        rule's attributes independently, so its records break the rule both ways round (a
        child with a degree is as likely an adult, by its income) and redrawing only the
        determined attribute shifts that attribute's counts systematically; on the NIST
        excerpts at ε = 10 the sweep and the counts turned RAP's 1.8-2.3 points under its
        score without the rules into a gain (docs/notes/rules.md). Not rejection: redrawing
        whole records conditions the mixture on the rules, and a product row that makes a
        rule's attributes independent then loses most of its records (on the NIST excerpts
        RAP's score fell by 36 points that way). ``whole=False``: only the attribute each
        broken rule determines is redrawn; ``keep_counts=False``: no
        :func:`~margsynth.inference.repair.rebalance` (GEM: on the NIST excerpts at ε = 10 the
        determined attribute alone scored 3-6 points above the whole rule with the counts, which
        also took 2-3x GEM's CPU time, its mixture holding thousands of rows). Returns the records
        and the report (``None`` without rules: the draws of :meth:`sample_records` alone).
        Rules are public: no budget. ``refinement`` (a :class:`~margsynth.rules.Refinement`
        whose coarse domain is this workload's): the rows are first spread onto its fine
        domain (:meth:`~margsynth.rules.Refinement.expand`), where the records are drawn and
        ``rules`` hold (the bins the rules' thresholds split, for a mechanism that fits on the
        bins before the split)."""
        if refinement is not None:
            if refinement.coarse != self.domain:
                raise ValueError("the refinement's coarse domain is not the workload's")
            fine = MarginalQueries(refinement.fine, ((refinement.fine.names[0],),))  # sampling reads only the layout
            return fine.sample_obeying(refinement.expand(probs), n, rng, rules, weights, whole=whole,
                                       keep_counts=keep_counts)  # fmt: skip
        synth = self.sample_records(probs, n, rng, weights)
        if rules is None:
            return synth, None
        P, w = self._normalised(probs, weights)
        mix = w @ P  # the mixture's one-way marginals, block by block
        one_way = {a: mix[self.offsets[i] : self.offsets[i + 1]] for i, a in enumerate(self.domain.names)}
        return enforce(synth, rules, rng, conditional=self.mixture_log_conditional(probs, weights), weights=one_way,
                       whole=whole, keep_counts=keep_counts)

    def _normalised(self, probs: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The rows' blocks each on its simplex, and the mixture weights summing to 1."""
        P = np.clip(np.asarray(probs, dtype=np.float64), 0.0, None)
        P = P / np.add.reduceat(P, self.offsets[:-1], axis=1).repeat(np.diff(self.offsets), axis=1)
        w = np.full(P.shape[0], 1.0 / P.shape[0]) if weights is None else np.asarray(weights) / np.sum(weights)
        return P, w

    def mixture_log_conditional(self, probs: np.ndarray, weights: np.ndarray | None = None):
        """``conditional(attrs, codes)`` for :func:`~margsynth.inference.repair.redraw`: the
        log of the mixture's full conditional of ``attrs`` given each record's other
        attributes, ``log sum_r w_r prod_{a in attrs} P_r(x_a) prod_{b not in attrs} P_r(x_b)``
        up to a constant per record (``P_r``: row ``r``'s product distribution, ``w_r`` its
        weight). Exact for the mixture :meth:`sample_records` draws from; computed in blocks
        of records so that no temporary exceeds about 2^22 numbers. The sum over rows is one
        matrix product per block, ``A @ B`` with ``A[i, r] = exp(b_ir + m_r - M_i)`` (``b_ir``:
        the log weight of row ``r`` given record ``i``'s other attributes, ``m_r`` the largest
        log probability row ``r`` gives a value of ``attrs``, ``M_i`` the largest
        ``b_ir + m_r``) and ``B[r, v] = exp(log P_r(v) - m_r)``, both in ``[0, 1]``; a record
        for which some value's sum underflows to 0 there (every row's term below ~1e-308) is
        summed again term by term in log space, so a value gets no mass only where every row
        gives it none."""
        P, w = self._normalised(probs, weights)
        with np.errstate(divide="ignore"):
            logP, logw = np.log(P), np.log(w)
        logPT = np.ascontiguousarray(logP.T)  # one column's values of every row, contiguous
        dom, offsets = self.domain, self.offsets

        def conditional(attrs: tuple[str, ...], codes: np.ndarray) -> np.ndarray:
            attrs = tuple(attrs)
            idx = [dom.index(a) for a in attrs]
            sizes = tuple(dom[a].size for a in attrs)
            rows = P.shape[0]
            joint = np.zeros((rows, *sizes))  # per row, the log probability of each joint value of attrs
            for k, j in enumerate(idx):
                shape = [rows] + [1] * len(attrs)
                shape[k + 1] = sizes[k]
                joint = joint + logP[:, offsets[j] : offsets[j + 1]].reshape(shape)
            joint = joint.reshape(rows, -1)
            rowmax = joint.max(axis=1)
            live = np.isfinite(rowmax)  # a row giving every value of attrs probability 0 adds nothing
            B = np.exp(joint[live] - rowmax[live, None])
            drawable = np.isfinite(joint[live]).any(axis=0)  # values some row can draw (B may underflow)
            out = np.empty((codes.shape[0], joint.shape[1]))
            step = max(1, (1 << 22) // max(rows, joint.shape[1], 1))
            others = [j for j in range(len(dom)) if j not in idx]
            for s in range(0, codes.shape[0], step):
                c = codes[s : s + step]
                base = np.broadcast_to(logw, (c.shape[0], rows)).copy()
                for j in others:
                    base += logPT[offsets[j] + c[:, j].astype(np.intp)]
                a = base[:, live] + rowmax[live]
                top = a.max(axis=1, keepdims=True) if a.shape[1] else np.full((c.shape[0], 1), -np.inf)
                top = np.where(np.isfinite(top), top, 0.0)
                total = np.exp(a - top) @ B
                with np.errstate(divide="ignore"):
                    out[s : s + step] = np.log(total) + top
                redo = np.flatnonzero(((total <= 0) & drawable).any(axis=1) & np.isfinite(a).any(axis=1))
                for i in redo:  # an underflow: the exact sum in log space, one record at a time
                    t = base[i][:, None] + joint
                    m = t.max(axis=0)
                    m = np.where(np.isfinite(m), m, 0.0)
                    with np.errstate(divide="ignore"):
                        out[s + i] = np.log(np.exp(t - m).sum(axis=0)) + m
            return out.reshape((codes.shape[0], *sizes))

        return conditional

    # ------------------------------------------------------------------ privacy
    def cliques_touched(self, ids: np.ndarray | Sequence[int]) -> int:
        """Number of distinct marginals among the queries ``ids``."""
        ids = np.asarray(ids, dtype=np.int64)
        return int(np.unique(self.clique_of[ids]).size)

    def l2_sensitivity(self, ids: np.ndarray | Sequence[int]) -> float:
        """L2 sensitivity of the count vector ``(c_q(D))_{q ∈ ids}`` under add/remove-one:
        ``sqrt(m)``, ``m`` the number of distinct marginals among ``ids`` (a record satisfies
        at most one query per marginal; see the module docstring). Ids are taken as a set
        (:func:`measure_queries` refuses repeats)."""
        m = self.cliques_touched(ids)
        if m == 0:
            raise ValueError("no queries given")
        return math.sqrt(m)


# ----------------------------------------------------------------------------- measurement
@dataclass(frozen=True)
class QueryMeasurement:
    """Noisy counts ``y = c_S(D) + N(0, σ² I)`` of the queries ``ids`` (one Gaussian mechanism
    of L2 sensitivity ``sensitivity``)."""

    ids: np.ndarray
    y: np.ndarray
    sigma: float
    sensitivity: float


def _check_ids(workload: MarginalQueries, ids: object) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"ids must be a non-empty 1-d array of query ids, got {ids!r:.80}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= workload.n_queries:
        raise ValueError(f"query ids must be in 0..{workload.n_queries - 1}, got range {arr.min()}..{arr.max()}")
    if np.unique(arr).size != arr.size:
        raise ValueError("query ids repeat: measure each query once per call")
    return arr


def measure_queries(
    workload: MarginalQueries,
    counts: np.ndarray,
    ids: np.ndarray | Sequence[int],
    rho: float,
    rng: np.random.Generator,
    *,
    ledger: BudgetLedger | None,
    label: str = "measure queries",
) -> QueryMeasurement:
    """Measure the counts of queries ``ids`` with one Gaussian mechanism costing ``rho`` zCDP.

    ``counts`` are the exact counts :meth:`MarginalQueries.counts` of the sensitive data (the
    full ``(Q,)`` vector, computed once by the caller). The L2 sensitivity is
    :meth:`MarginalQueries.l2_sensitivity` ``= sqrt(m)``, so ``σ = sqrt(m) / sqrt(2ρ)``
    (Prop. 1 inverted); the charge is made by :func:`~margsynth.privacy.gaussian_mechanism`
    before the noise is drawn. Measuring whole marginals is the special case ``ids =
    workload.ids_of(cliques)``.
    """
    ids = _check_ids(workload, ids)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != (workload.n_queries,):
        raise ValueError(f"counts must have shape ({workload.n_queries},), got {counts.shape}")
    sens = workload.l2_sensitivity(ids)
    sigma = gaussian_sigma(rho, sens)
    y = gaussian_mechanism(counts[ids], sigma=sigma, l2_sensitivity=sens, rng=rng, ledger=ledger, label=label)
    y.setflags(write=False)
    ids.setflags(write=False)
    return QueryMeasurement(ids, y, sigma, sens)


def measure_total(
    data: Dataset, rho: float, rng: np.random.Generator, *, ledger: BudgetLedger | None, label: str = "measure total"
) -> float:
    """``n̂ = n + N(0, σ²)``, ``σ = 1/sqrt(2ρ)``: the record count (sensitivity 1 under
    add/remove-one), released once so that noisy counts can be normalised; floored at 1."""
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a Dataset, got {type(data).__name__}")
    sigma = gaussian_sigma(rho, 1.0)
    y = gaussian_mechanism([data.total()], sigma=sigma, l2_sensitivity=1.0, rng=rng, ledger=ledger, label=label)
    return max(float(y[0]), 1.0)


# ----------------------------------------------------------------------------- selection
def query_scores(counts: np.ndarray, synthetic_answers: np.ndarray, n_hat: float) -> np.ndarray:
    """Per-query quality ``|c_q(D) − n̂ a_q(X)|`` (sensitivity 1 in ``D``)."""
    return np.abs(np.asarray(counts, np.float64) - float(n_hat) * np.asarray(synthetic_answers, np.float64))


def clique_scores(
    workload: MarginalQueries, counts: np.ndarray, synthetic_answers: np.ndarray, n_hat: float
) -> np.ndarray:
    """Per-marginal quality ``Σ_{q∈C} |c_q(D) − n̂ a_q(X)|`` (L1 error of the marginal in counts;
    sensitivity 1 in ``D`` since a record moves one cell of each marginal by 1)."""
    err = query_scores(counts, synthetic_answers, n_hat)
    return np.add.reduceat(err, workload.starts[:-1])


def select_queries(
    scores: np.ndarray,
    k: int,
    rho: float,
    rng: np.random.Generator,
    *,
    ledger: BudgetLedger | None,
    exclude: np.ndarray | Sequence[int] = (),
    sensitivity: float = 1.0,
    label: str = "select",
) -> np.ndarray:
    """Pick ``k`` distinct candidates with large ``scores`` privately, spending ``rho`` zCDP.

    ``k`` exponential mechanisms (Definition 4 / Prop. 2 of the NIST-MST paper) at
    ``ε = sqrt(8 ρ / k)`` each, each on the candidates not yet picked and not in ``exclude``
    (already measured; a function of earlier releases, so adaptive composition applies).
    Each pick is charged ``ε²/8 = ρ/k`` by :func:`~margsynth.privacy.exponential_mechanism`
    before its Gumbel noise is drawn. Returns the picked indices in order (fewer than ``k``
    only if fewer candidates remain — then the unspent picks are not charged).
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-d array, got shape {s.shape}")
    eps = exponential_epsilon(rho / int(k))
    alive = np.ones(s.size, dtype=bool)
    ex = np.asarray(exclude, dtype=np.int64)
    if ex.size:
        alive[ex] = False
    picked: list[int] = []
    for step in range(int(k)):
        cand = np.flatnonzero(alive)
        if cand.size == 0:
            break
        j = exponential_mechanism(
            s[cand], epsilon=eps, sensitivity=sensitivity, rng=rng, ledger=ledger, label=f"{label} {step + 1}/{k}"
        )
        picked.append(int(cand[j]))
        alive[cand[j]] = False
    return np.array(picked, dtype=np.int64)


# ----------------------------------------------------------------------------- sizes
def check_workload_fits(
    domain: Domain,
    degree: int,
    who: str,
    *,
    per_query_bytes: int,
    extra_bytes: int = 0,
    limit_mb: float | None = None,
) -> int:
    """Before any noise: ``ValueError`` unless every ``degree``-way marginal table of
    ``domain`` can be allocated (:func:`~.base.check_marginals_fit`, naming the attributes)
    and the whole workload — ``per_query_bytes`` for each of its cells plus ``extra_bytes``
    (the mechanism's synthetic data and optimiser state) — fits the memory limit
    (:func:`~.base.current_memory_limit` unless ``limit_mb``). Returns the number of cells."""
    cliques = list(itertools.combinations(domain.names, int(degree)))
    _base.check_marginals_fit(domain, cliques, f"{degree}-way marginal", limit_mb)
    cells = sum(math.prod(int(domain[a].size) for a in c) for c in cliques)
    limit = _base.current_memory_limit() if limit_mb is None else limit_mb
    mb = (int(per_query_bytes) * cells + int(extra_bytes)) / 2**20
    if mb > limit:
        raise _base.MemoryLimitError(
            f"{who} needs about {mb:,.0f} MiB for the {len(cliques):,} {degree}-way marginals of the domain "
            f"({cells:,} cells) and its synthetic rows, more than the {limit:,.0f} MiB memory limit; expected a "
            "smaller degree, fewer or smaller attributes, or fewer synthetic rows"
        )
    return cells
