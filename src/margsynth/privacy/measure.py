"""Algorithm 1 ("Measure Marginals") of the NIST-MST paper.

Given cliques ``C`` with weights ``w_C``, normalise the weights to
``w_C / sqrt(Σ_C w_C²)`` so the stacked query ``D ↦ (w_C M_C(D))_C`` has L2 sensitivity
exactly 1 (one record adds 1 to one cell of every marginal; footnote 2), and release
``ỹ_C = w_C M_C(D) + N(0, σ² I)`` for each ``C``. By Prop. 1 (Theorem 1) the whole call is
``(α, α/(2σ²))``-RDP, i.e. ``1/(2σ²)``-zCDP, or ``1/σ``-GDP; it is charged to the ledger
once, before any noise is drawn.

The result is the measurement log — a list of :class:`NoisyMarginal` — that Private-PGM
consumes (Algorithm 1 step 4 appends ``(w_C I, ỹ, σ, C)``; see
:meth:`NoisyMarginal.to_measurement`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from . import accounting as acc
from .ledger import BudgetLedger
from .mechanisms import _check_ledger, _check_rng

__all__ = ["NoisyMarginal", "measure", "measure_marginals", "normalise_weights"]


@dataclass(frozen=True, eq=False)
class NoisyMarginal:
    """One entry of Algorithm 1's measurement log.

    Attributes
    ----------
    clique:
        The attributes ``C`` of the marginal, in the order the marginal is laid out.
    y:
        Read-only 1-d array ``w_C M_C(D) + N(0, σ² I)``: the C-order flattening of the
        weighted marginal table over ``clique`` (shape ``domain.project(clique).shape``).
    sigma:
        The noise scale σ (Definition 3).
    weight:
        The *normalised* weight ``w_C`` (Algorithm 1 step 1); the query matrix is ``w_C I``.
    """

    clique: tuple[str, ...]
    y: np.ndarray
    sigma: float
    weight: float

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

    @property
    def estimate(self) -> np.ndarray:
        """``y / w_C``: an unbiased estimate of the marginal ``M_C(D)`` (flattened)."""
        return self.y / self.weight

    @property
    def std(self) -> float:
        """Per-cell noise standard deviation of :attr:`estimate`: ``σ / w_C``."""
        return self.sigma / self.weight

    def to_measurement(self):
        """Algorithm 1 step 4's 4-tuple ``(Q, ỹ, σ, C)`` with ``Q = w_C I`` (a scipy sparse
        diagonal matrix) — the form Private-PGM's estimator takes (Eq. 4.1 with
        ``Q_C = w_C I``). Kept as a plain tuple until the Private-PGM engine's own
        measurement type is integrated."""
        from scipy.sparse import identity

        q = self.weight * identity(self.y.size, format="csr", dtype=np.float64)
        return q, self.y, self.sigma, self.clique

    def __repr__(self) -> str:
        """Short summary of the Algorithm 1 log entry (not the noisy values)."""
        return f"NoisyMarginal(clique={self.clique}, cells={self.y.size}, sigma={self.sigma:.6g}, weight={self.weight:.6g})"


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
) -> list[NoisyMarginal]:
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
    The measurement log: one :class:`NoisyMarginal` per clique, in input order, with the
    normalised weight.
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
    tables = [wc * data.marginal(c, flatten=True).astype(np.float64) for c, wc in zip(names, w)]
    if ledger is not None:
        ledger.charge(
            "gaussian",
            ledger.cost("gaussian", sigma=s, sensitivity=1.0),
            label,
            sigma=s,
            sensitivity=1.0,
            cliques=tuple(names),
        )
    return [
        NoisyMarginal(clique=c, y=t + rng.normal(0.0, s, size=t.shape), sigma=s, weight=float(wc))
        for c, t, wc in zip(names, tables, w)
    ]


#: Short alias, for ``from margsynth.privacy.measure import measure``. The package namespace
#: exports only :func:`measure_marginals`, so ``margsynth.privacy.measure`` stays the module.
measure = measure_marginals
