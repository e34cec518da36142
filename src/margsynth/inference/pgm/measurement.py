"""Noisy linear measurements of marginals — the input of Private-PGM.

A :class:`Measurement` is one term of Eq. (4.1) of the NIST-MST/MST paper
(§4.2): ``y_C = Q_C M_C(D) + xi`` with ``xi`` zero-mean noise of scale
``sigma``. ``M_C(D)`` is the marginal (count table) over the attribute tuple
``clique``, vectorised in C order *with the axes in the order the clique
lists them*. ``Q_C`` is

* ``None`` — the identity (Algorithm 1 of the paper measures ``w_C I``; a
  scaled identity given as a matrix is recognised and handled as fast as
  ``None``);
* a scipy sparse matrix or a dense 2-D array (e.g. the adaptive grid's
  aggregate rows);
* a ``scipy.sparse.linalg.LinearOperator`` or any callable mapping a vector
  of the marginal's cells to the ``len(y)`` answers; it is applied once to
  the identity to obtain its matrix (so it must be linear).

Validation happens twice: :class:`Measurement` checks what it can alone
(``sigma`` finite and > 0, ``y`` a finite vector, ``Q``'s row count); the
domain-dependent checks (known attributes, ``Q``'s column count equal to the
clique's cells) run in :func:`compile_measurements`. Every error names the
measurement (its ``name`` or its position and clique) and what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import lsqr

from ...domain import Domain
from ...privacy.measure import NoisyMarginal
from .factor import align

__all__ = ["CompiledMeasurement", "Measurement", "compile_measurements", "estimate_total", "from_noisy_marginals"]


@dataclass(frozen=True, eq=False)
class Measurement:
    """One noisy linear measurement of a marginal.

    Parameters
    ----------
    clique:
        Attribute names of the marginal (a string is a 1-way marginal).
    query:
        ``Q`` (``None`` = identity), see the module docstring.
    y:
        Noisy answers, shape ``(rows of Q,)``.
    sigma:
        Noise scale (standard deviation for Gaussian noise); the loss weighs
        this term's residual by ``1/sigma``.
    name:
        Optional label used in error messages.
    """

    clique: tuple[str, ...]
    query: object
    y: np.ndarray
    sigma: float
    name: str | None = field(default=None)

    def __post_init__(self) -> None:
        clique = (self.clique,) if isinstance(self.clique, str) else tuple(self.clique)
        object.__setattr__(self, "clique", clique)
        label = self.label()
        if not clique or not all(isinstance(a, str) for a in clique):
            raise ValueError(f"{label}: clique must be a non-empty tuple of attribute names, got {self.clique!r}")
        if len(set(clique)) != len(clique):
            raise ValueError(f"{label}: clique repeats an attribute: {list(clique)}")
        try:
            sigma = float(self.sigma)
        except (TypeError, ValueError):
            raise ValueError(f"{label}: sigma must be a number, got {self.sigma!r}") from None
        if not np.isfinite(sigma) or sigma <= 0:
            raise ValueError(f"{label}: sigma must be finite and > 0, got {self.sigma!r}")
        object.__setattr__(self, "sigma", sigma)
        try:
            y = np.asarray(self.y, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{label}: y must be a numeric vector") from None
        if y.ndim != 1:
            if y.ndim > 1 and self.query is None:
                y = y.ravel()  # a marginal table given as an array: C-order vector
            else:
                raise ValueError(f"{label}: y must be a 1-D vector, got shape {y.shape}")
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            raise ValueError(f"{label}: y[{int(bad[0])}] is {float(y[bad[0]])}; all answers must be finite")
        y = y.copy()
        y.setflags(write=False)
        object.__setattr__(self, "y", y)
        q = self.query
        if q is not None and not callable(q) and not sp.issparse(q):
            try:
                q = np.asarray(q, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{label}: query must be None, a matrix or a callable, got {type(self.query).__name__}"
                ) from None
            if q.ndim != 2:
                raise ValueError(f"{label}: query matrix must be 2-D, got shape {q.shape}")
            object.__setattr__(self, "query", q)
        if q is not None and hasattr(q, "shape") and len(q.shape) == 2 and q.shape[0] != y.size:
            raise ValueError(f"{label}: Q has {q.shape[0]} rows but y has length {y.size}")

    def label(self, index: int | None = None) -> str:
        if self.name:
            return f"measurement {self.name!r}"
        where = f"measurement {index} " if index is not None else "measurement "
        return f"{where}on {self.clique!r}" if isinstance(self.clique, tuple) else where.strip()


@dataclass(frozen=True, eq=False)
class CompiledMeasurement:
    """A measurement re-expressed over the clique in *domain* order.

    ``kind == "identity"``: ``y`` (canonical cell order) already divided by the
    weight ``w`` of ``Q = w I`` and ``sigma`` divided by ``|w|``.
    ``kind == "matrix"``: ``Q`` is CSR with columns in canonical cell order.
    """

    attrs: tuple[str, ...]
    kind: str
    y: np.ndarray
    sigma: float
    Q: sp.csr_matrix | None
    label: str


def _canonical_permutation(domain: Domain, clique: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray]:
    canon = domain.canonical(clique)
    shape = tuple(domain[a].size for a in clique)
    idx = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    return canon, np.ascontiguousarray(align(idx, clique, canon)).ravel()


def _scaled_identity(q) -> float | None:
    """``w`` if ``q`` equals ``w * I`` (w != 0), else None."""
    n, m = q.shape
    if n != m:
        return None
    if sp.issparse(q):
        c = sp.csr_matrix(q)
        c.eliminate_zeros()
        c.sort_indices()
        if c.nnz != n or not np.array_equal(c.indices, np.arange(n)) or not np.array_equal(c.indptr, np.arange(n + 1)):
            return None
        d = c.data
    else:
        d = np.diag(q)
        if np.count_nonzero(q) != np.count_nonzero(d):
            return None
    if d.size == 0 or not np.all(d == d[0]) or d[0] == 0:
        return None
    return float(d[0])


def _materialise(q: Callable, n: int, rows: int, label: str) -> sp.csr_matrix:
    if hasattr(q, "matmat") and hasattr(q, "shape"):
        if q.shape[1] != n:
            raise ValueError(f"{label}: Q has {q.shape[1]} columns but the marginal has {n} cells")
        return sp.csr_matrix(q.matmat(np.eye(n)))
    try:
        cols = [np.asarray(q(np.eye(1, n, j).ravel()), dtype=np.float64).ravel() for j in range(n)]
    except Exception as exc:  # noqa: BLE001 - report any failure of the user's callable
        raise ValueError(f"{label}: the query callable failed on a vector of the marginal's {n} cells ({exc})") from exc
    mat = np.stack(cols, axis=1) if cols else np.zeros((rows, 0))
    if mat.shape[0] != rows:
        raise ValueError(f"{label}: the query callable returns {mat.shape[0]} answers but y has length {rows}")
    return sp.csr_matrix(mat)


def compile_measurements(domain: Domain, measurements: Sequence[Measurement]) -> list[CompiledMeasurement]:
    """Validate ``measurements`` against ``domain`` and bring them to canonical form.

    Raises ``ValueError`` naming the measurement for unknown attributes, a
    ``Q`` whose column count is not the clique's number of cells, or a ``y``
    whose length does not match.
    """
    if isinstance(measurements, Measurement):
        measurements = [measurements]
    out = []
    for i, m in enumerate(measurements):
        if not isinstance(m, Measurement):
            raise ValueError(f"measurement {i}: expected a Measurement, got {type(m).__name__}")
        label = m.label(i)
        unknown = [a for a in m.clique if a not in domain]
        if unknown:
            raise ValueError(f"{label}: unknown attribute(s) {unknown}; domain has {list(domain.names)}")
        n = domain.size(m.clique)
        canon, perm = _canonical_permutation(domain, m.clique)
        q = m.query
        if q is None:
            if m.y.size != n:
                raise ValueError(f"{label}: y has length {m.y.size} but the marginal over {m.clique} has {n} cells")
            out.append(CompiledMeasurement(canon, "identity", m.y[perm], m.sigma, None, label))
            continue
        if callable(q) and not sp.issparse(q):
            q = _materialise(q, n, m.y.size, label)
        if q.shape[1] != n:
            raise ValueError(f"{label}: Q has {q.shape[1]} columns but the marginal over {m.clique} has {n} cells")
        if q.shape[0] != m.y.size:
            raise ValueError(f"{label}: Q has {q.shape[0]} rows but y has length {m.y.size}")
        w = _scaled_identity(q)
        if w is not None:
            out.append(CompiledMeasurement(canon, "identity", (m.y / w)[perm], m.sigma / abs(w), None, label))
            continue
        qc = (
            sp.csr_matrix(q, dtype=np.float64)[:, perm]
            if not np.array_equal(perm, np.arange(n))
            else sp.csr_matrix(q, dtype=np.float64)
        )
        if not np.all(np.isfinite(qc.data)):
            raise ValueError(f"{label}: Q has non-finite entries")
        out.append(CompiledMeasurement(canon, "matrix", m.y.copy(), m.sigma, qc, label))
    return out


def estimate_total(compiled: Sequence[CompiledMeasurement]) -> float | None:
    """Inverse-variance weighted estimate of the number of records.

    (The papers leave the total to the implementation; this is the minimum-
    variance unbiased combination of the per-measurement estimates below,
    used by :func:`~.estimation.estimate` when ``total`` is not given.)

    Each measurement whose row space contains the all-ones functional gives
    an unbiased estimate ``v . y`` of the total (``Q^T v = 1``; for the
    identity ``v = 1`` and the estimate is ``sum(y)`` with variance
    ``cells * sigma^2``). Returns None if no measurement determines it.
    """
    est, wts = [], []
    for m in compiled:
        if m.kind == "identity":
            est.append(float(m.y.sum()))
            wts.append(1.0 / (m.y.size * m.sigma**2))
            continue
        ones = np.ones(m.Q.shape[1])
        v = lsqr(m.Q.T.tocsr(), ones, atol=1e-12, btol=1e-12)[0]
        if np.linalg.norm(m.Q.T @ v - ones) > 1e-6 * np.sqrt(ones.size):
            continue
        var = m.sigma**2 * float(v @ v)
        if var > 0:
            est.append(float(v @ m.y))
            wts.append(1.0 / var)
    if not est:
        return None
    return float(np.dot(est, wts) / np.sum(wts))


def from_noisy_marginals(marginals: Iterable[NoisyMarginal], sep: str = "/") -> list[Measurement]:
    """Algorithm 1's measurement log as Private-PGM measurements (one term of Eq. 4.1 each).

    ``marginals``: :class:`~margsynth.privacy.NoisyMarginals` (or any iterable of
    :class:`~margsynth.privacy.NoisyMarginal`), what every mechanism's MEASURE step releases.
    An entry ``(w_C I, ỹ, σ, C)`` (Algorithm 1 step 4) becomes the answers ``ỹ / w_C`` of
    ``M_C`` with noise scale ``σ / w_C`` and the identity query; an entry with an explicit
    query ``Q`` is kept as ``(Q, ỹ, σ)``. Each measurement is named by its clique joined with
    ``sep``. (The conversion lives here, with its consumer: the privacy layer below knows
    nothing of Private-PGM.)
    """
    out = []
    for i, m in enumerate(marginals):
        if not isinstance(m, NoisyMarginal):
            raise ValueError(f"marginals[{i}] must be a NoisyMarginal, got {type(m).__name__}")
        name = sep.join(m.clique)
        if m.query is None:
            out.append(Measurement(m.clique, None, m.estimate, m.std, name=name))
        else:
            out.append(Measurement(m.clique, m.query, m.y, m.sigma, name=name))
    return out
