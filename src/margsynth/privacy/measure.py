"""Algorithm 1 ("Measure Marginals") of the NIST-MST paper.

Given cliques ``C`` with weights ``w_C``, normalise the weights to
``w_C / sqrt(Σ_C w_C²)`` so the stacked query ``D ↦ (w_C M_C(D))_C`` has L2 sensitivity
exactly 1 (one record adds 1 to one cell of every marginal; footnote 2), and release
``ỹ_C = w_C M_C(D) + N(0, σ² I)`` for each ``C``. By Prop. 1 (Theorem 1) the whole call is
``(α, α/(2σ²))``-RDP, i.e. ``1/(2σ²)``-zCDP, or ``1/σ``-GDP; it is charged to the ledger
once, before any noise is drawn.

The result is the measurement log — a :class:`NoisyMarginals`, the one type for "a set of
noisy marginals" that every generator consumes (Private-PGM: Algorithm 1 step 4 appends
``(w_C I, ỹ, σ, C)``, converted by its consumer,
:func:`margsynth.inference.pgm.from_noisy_marginals`; GUM and PrivPGD: the per-marginal
estimates and variances, :meth:`NoisyMarginals.targets`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..dataset import Dataset
from . import accounting as acc
from .ledger import BudgetLedger
from .mechanisms import _check_ledger, _check_rng

__all__ = ["NoisyMarginal", "NoisyMarginals", "measure", "measure_marginals", "normalise_weights"]


@dataclass(frozen=True, eq=False)
class NoisyMarginal:
    """One entry of Algorithm 1's measurement log: ``(Q, ỹ, σ, C)`` with ``Q = w_C I``,
    or an explicit query matrix ``Q`` (adaptive-grid rows, a compressed domain's merged cell).

    Attributes
    ----------
    clique:
        The attributes ``C`` of the marginal, in the order the marginal is laid out.
    y:
        Read-only 1-d array ``w_C M_C(D) + N(0, σ² I)``: the C-order flattening of the
        weighted marginal table over ``clique`` (shape ``domain.project(clique).shape``);
        with a ``query``, ``Q M_C(D) + N(0, σ² I)`` (one entry per row of ``Q``).
    sigma:
        The noise scale σ (Definition 3).
    weight:
        The *normalised* weight ``w_C`` (Algorithm 1 step 1); the query matrix is ``w_C I``.
        Must be 1 when ``query`` is given.
    query:
        ``None`` (the query is ``w_C I``) or the matrix ``Q`` (scipy sparse or dense, one
        column per cell of ``M_C``) the noisy answers ``y`` measure.
    """

    clique: tuple[str, ...]
    y: np.ndarray
    sigma: float
    weight: float = 1.0
    query: Any = None

    def __post_init__(self) -> None:
        """Validate and freeze one Algorithm 1 log entry (σ > 0, w_C > 0, finite ỹ)."""
        clique = (self.clique,) if isinstance(self.clique, str) else tuple(self.clique)
        if not clique or not all(isinstance(a, str) for a in clique):
            raise ValueError(f"clique must be a non-empty tuple of attribute names, got {self.clique!r}")
        y = np.array(self.y, dtype=np.float64).ravel()
        if not np.all(np.isfinite(y)):
            raise ValueError(f"noisy marginal over {clique} has non-finite entries")
        y.setflags(write=False)
        object.__setattr__(self, "clique", clique)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "sigma", acc.check_sigma(self.sigma))
        object.__setattr__(self, "weight", acc._positive("weight", self.weight))
        if self.query is not None:
            if self.weight != 1.0:
                raise ValueError(f"noisy marginal over {clique}: an explicit query needs weight 1, got {self.weight!r}")
            if self.query.ndim != 2 or self.query.shape[0] != y.size:
                raise ValueError(
                    f"noisy marginal over {clique}: query has shape {self.query.shape}, expected ({y.size}, cells)"
                )

    @property
    def cells(self) -> int:
        """Number of cells of the marginal ``M_C``."""
        return self.y.size if self.query is None else int(self.query.shape[1])

    def _diagonal(self) -> np.ndarray | None:
        """The diagonal of a square diagonal ``query`` (``None`` if it is not one)."""
        q = self.query
        if q.shape[0] != q.shape[1]:
            return None
        d = np.asarray(q.diagonal(), dtype=np.float64)
        off = (sp.csr_matrix(q) - sp.diags(d)).count_nonzero() if sp.issparse(q) else np.count_nonzero(q - np.diag(d))
        return d if off == 0 and np.all(d != 0) else None

    @property
    def estimate(self) -> np.ndarray:
        """An unbiased estimate of the marginal ``M_C(D)`` (flattened): ``y / w_C``, or
        ``y / diag(Q)`` for a diagonal query (``ValueError`` for any other query)."""
        if self.query is None:
            return self.y / self.weight
        d = self._diagonal()
        if d is None:
            raise ValueError(
                f"noisy marginal over {self.clique} is measured through a non-diagonal query: no per-cell estimate"
            )
        return self.y / d

    @property
    def std(self) -> float:
        """Per-cell noise standard deviation of :attr:`estimate`: ``σ / w_C`` (for a
        diagonal query, ``σ / max |Q_jj|``: the smallest over the cells)."""
        if self.query is None:
            return self.sigma / self.weight
        d = self._diagonal()
        if d is None:
            raise ValueError(
                f"noisy marginal over {self.clique} is measured through a non-diagonal query: no per-cell std"
            )
        return self.sigma / float(np.abs(d).max())

    def __repr__(self) -> str:
        """Short summary of the Algorithm 1 log entry (not the noisy values)."""
        q = "" if self.query is None else f", query={self.query.shape}"
        return f"NoisyMarginal(clique={self.clique}, cells={self.y.size}, sigma={self.sigma:.6g}, weight={self.weight:.6g}{q})"


class NoisyMarginals(tuple):
    """A set of noisy marginals — what every mechanism's MEASURE step releases and every
    generator (Private-PGM, GUM, PrivPGD) consumes: a tuple of :class:`NoisyMarginal`
    (clique, noisy answers, noise scale, optionally the query matrix), in measurement
    order. ``a + b`` concatenates two sets.

    >>> import numpy as np
    >>> s = NoisyMarginals([NoisyMarginal(("a",), [3.0, 1.0], 2.0)])
    >>> s.cliques, s.mean_total()
    ((('a',),), 4.0)
    """

    def __new__(cls, marginals: Iterable[NoisyMarginal] = ()) -> NoisyMarginals:
        items = tuple(marginals)
        for i, m in enumerate(items):
            if not isinstance(m, NoisyMarginal):
                raise ValueError(f"marginals[{i}] must be a NoisyMarginal, got {type(m).__name__}")
        return super().__new__(cls, items)

    def __add__(self, other: Iterable[NoisyMarginal]) -> NoisyMarginals:
        return NoisyMarginals((*self, *other))

    def __getitem__(self, i):  # a slice stays a set of noisy marginals
        out = super().__getitem__(i)
        return NoisyMarginals(out) if isinstance(i, slice) else out

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        return tuple(m.clique for m in self)

    def targets(self) -> list[tuple[tuple[str, ...], np.ndarray, float]]:
        """``(clique, estimate, per-cell variance)`` of each marginal — the input of
        consistency post-processing (PrivSyn §4.3) and GUM."""
        return [(m.clique, m.estimate, m.std**2) for m in self]

    def mean_total(self) -> float:
        """The plain mean over the marginals of their estimated totals (the number of
        records the noisy marginals suggest)."""
        return float(np.mean([m.estimate.sum() for m in self]))

    def __repr__(self) -> str:
        return f"NoisyMarginals({len(self)} marginals: {', '.join('×'.join(c) for c in self.cliques)})"


def normalise_weights(weights: Iterable[float]) -> np.ndarray:
    """Algorithm 1 step 1: ``w_C ← w_C / sqrt(Σ_C w_C²)`` (so the stacked, weighted marginal
    query has L2 sensitivity 1). Weights must be finite and > 0."""
    w = np.array([acc._positive("clique weight", x) for x in weights], dtype=np.float64)
    if w.size == 0:
        raise ValueError("no weights given")
    return w / math.sqrt(math.fsum(w * w))


def _parse_cliques(
    cliques: Sequence[tuple[Sequence[str] | str, float]], data: Dataset
) -> tuple[list[tuple[str, ...]], list[float]]:
    """Split Algorithm 1's input ``[(C, w_C), ...]`` into validated cliques and raw weights."""
    if isinstance(cliques, (str, bytes)) or not isinstance(cliques, Iterable):
        raise ValueError(f"cliques must be a list of (clique, weight) pairs, got {cliques!r}")
    names: list[tuple[str, ...]] = []
    weights: list[float] = []
    for i, item in enumerate(cliques):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"cliques[{i}] must be a (clique, weight) pair, got {item!r}")
        clique, weight = item
        if isinstance(clique, str):
            clique = (clique,)
        if not isinstance(clique, Iterable) or not tuple(clique) or not all(isinstance(a, str) for a in clique):
            raise ValueError(f"cliques[{i}]: clique must be a non-empty sequence of attribute names, got {clique!r}")
        names.append(data.domain.check_attrs(tuple(clique), f"cliques[{i}]"))
        weights.append(weight)
    if not names:
        raise ValueError("cliques is empty: nothing to measure")
    return names, weights


def measure_marginals(
    data: Dataset,
    cliques: Sequence[tuple[Sequence[str] | str, float]],
    sigma: float,
    rng: np.random.Generator,
    *,
    ledger: BudgetLedger | None = None,
    label: str = "measure",
) -> NoisyMarginals:
    """Algorithm 1: measure the weighted marginals ``w_C M_C(D)`` with Gaussian noise σ.

    Parameters
    ----------
    data:
        The sensitive :class:`~margsynth.dataset.Dataset` (neighbours differ by one record).
        If it carries per-record weights, each must be ≤ 1 so one record still moves each
        marginal by at most 1 in L2.
    cliques:
        ``[(clique, weight), ...]``: attribute tuples (a bare string is a 1-way clique)
        and positive relative weights; repeats are allowed (NIST-MST measures some
        marginals more than once).
    sigma:
        Gaussian noise scale, e.g. :func:`~margsynth.privacy.accounting.eq51_sigma` (NIST-MST)
        or :func:`~margsynth.privacy.accounting.gaussian_sigma` for a ρ share (MST).
    rng:
        The explicit ``numpy.random.Generator`` the noise is drawn from.
    ledger:
        If given, charged ``1/(2σ²)`` zCDP (Theorem 1 / Prop. 1) or ``1/σ`` GDP — once, as a
        single Gaussian mechanism of L2 sensitivity 1 — before any noise is drawn.

    Returns
    -------
    The measurement log (:class:`NoisyMarginals`): one :class:`NoisyMarginal` per clique,
    in input order, with the normalised weight.
    """
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a Dataset, got {type(data).__name__}")
    s = acc.check_sigma(sigma)
    rng = _check_rng(rng)
    ledger = _check_ledger(ledger)
    names, raw_weights = _parse_cliques(cliques, data)
    w = normalise_weights(raw_weights)
    if data.weights is not None and data.weights.size and float(data.weights.max()) > 1.0:
        raise ValueError(
            "data has record weights above 1; Algorithm 1's sensitivity-1 analysis needs every "
            "record weight <= 1 (rescale the weights or the noise)"
        )
    tables = [wc * t.astype(np.float64) for t, wc in zip(data.marginals(names, flatten=True), w)]  # one pass
    if ledger is not None:
        ledger.charge(
            "gaussian",
            ledger.cost("gaussian", sigma=s, sensitivity=1.0),
            label,
            sigma=s,
            sensitivity=1.0,
            cliques=tuple(names),
        )
    return NoisyMarginals(
        NoisyMarginal(clique=c, y=t + rng.normal(0.0, s, size=t.shape), sigma=s, weight=float(wc))
        for c, t, wc in zip(names, tables, w)
    )


#: Short alias, for ``from margsynth.privacy.measure import measure``. The package namespace
#: exports only :func:`measure_marginals`, so ``margsynth.privacy.measure`` stays the module.
measure = measure_marginals
