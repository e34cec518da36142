"""Domain compression (Algorithm 4 of the NIST-MST/MST paper) and its reversal.

After the one-way marginals are measured (Algorithm 1), every value ``t`` of
attribute ``i`` whose noisy count falls below ``3σ`` is merged into one
"other" value ``∅`` (Algorithm 4):

.. math::

    t \\leftarrow t \\text{ if } \\tilde\\mu_t \\ge 3\\sigma \\text{ else } \\varnothing,
    \\qquad \\Omega_i \\leftarrow \\{t : \\tilde\\mu_t \\ge 3\\sigma\\} \\cup \\{\\varnothing\\}.

Here ``μ̃`` is the unbiased estimate ``ỹ / w_C`` of the marginal and ``σ`` its
per-cell noise scale ``σ / w_C`` (Algorithm 1 writes ``ỹ = w_C M_C + N(0, σ²)``).

Kept values are renumbered ``0..k-1`` in their original order and ``∅`` becomes
code ``k`` (only if at least one value was merged). The one-way measurement is
re-expressed over the compressed domain (§5 Step 7): kept cells unchanged; the
merged cells' sum, which has variance ``m σ²`` for ``m`` merged cells, enters as
one row of ``Q = diag(1, …, 1, 1/sqrt(m))`` with answer ``Σ μ̃ / sqrt(m)`` so every
row keeps noise scale ``σ`` (as the authors' code does).

Reversal (§5 Step 8): kept codes map back exactly; records holding ``∅`` are
spread *evenly* over the original values merged into it (balanced counts, the
remainder and the assignment drawn from an explicit ``rng``). Hence
``reverse(compress(D))`` equals ``D`` on every record whose value was kept, and
``compress(reverse(C)) == C`` for every compressed dataset ``C`` (tested).

Compression is post-processing of the noisy one-way marginals: it costs no
privacy budget.

Rules (:mod:`margsynth.rules`) over the original domain carry over to the compressed one
by :meth:`Compression.compress_rules`: a compressed cell is allowed when some original cell
merged into it is, so a model over the compressed domain holds every zero that survives the
merge; records whose ``∅`` is spread back onto a forbidden original value are repaired
after the reversal (:func:`~margsynth.inference.repair.enforce`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..dataset import Dataset
from ..domain import Attribute, Domain
from ..inference.pgm import Measurement
from ..privacy import NoisyMarginal, NoisyMarginals
from ..rules import RuleSet

__all__ = ["Compression", "compress_domain"]


@dataclass(frozen=True, eq=False)
class Compression:
    """The result of Algorithm 4: which values of each attribute were kept.

    ``supports[a]`` is a read-only boolean mask over the original values of ``a``
    (``True`` = kept). Attributes with every value kept are unchanged.
    """

    original: Domain
    supports: Mapping[str, np.ndarray]

    def __post_init__(self) -> None:
        sup = {}
        for a in self.original.names:
            if a not in self.supports:
                raise ValueError(f"compression has no support mask for attribute {a!r}")
            s = np.asarray(self.supports[a], dtype=bool).copy()
            if s.shape != (self.original[a].size,):
                raise ValueError(f"support of {a!r} has shape {s.shape}, expected ({self.original[a].size},)")
            s.setflags(write=False)
            sup[a] = s
        extra = set(self.supports) - set(self.original.names)
        if extra:
            raise ValueError(f"support masks for unknown attributes {sorted(extra)}")
        object.__setattr__(self, "supports", sup)
        attrs = []
        fwd, back = {}, {}
        for attr in self.original.attributes:
            s = sup[attr.name]
            k = int(s.sum())
            merged = attr.size - k
            size = k + (1 if merged else 0)
            f = np.full(attr.size, k, dtype=np.int64)
            f[s] = np.arange(k)
            fwd[attr.name] = f
            back[attr.name] = np.flatnonzero(s)
            attrs.append(Attribute(attr.name, size, ordinal=attr.ordinal and merged == 0))
        object.__setattr__(self, "compressed", Domain(tuple(attrs)))
        object.__setattr__(self, "_forward", fwd)
        object.__setattr__(self, "_kept", back)

    # ------------------------------------------------------------------ queries
    def kept(self, attr: str) -> np.ndarray:
        """Original codes kept for ``attr`` (compressed code ``j`` is ``kept[j]``)."""
        return self._kept[attr]

    def merged(self, attr: str) -> np.ndarray:
        """Original codes merged into ``∅`` for ``attr`` (empty if none)."""
        return np.flatnonzero(~self.supports[attr])

    def is_identity(self) -> bool:
        return all(bool(s.all()) for s in self.supports.values())

    def summary(self) -> dict[str, tuple[int, int]]:
        """``{attr: (original size, compressed size)}``."""
        return {a: (self.original[a].size, self.compressed[a].size) for a in self.original.names}

    # ------------------------------------------------------------------ data
    def compress(self, data: Dataset) -> Dataset:
        """Algorithm 4's data transformation ``t ↦ t or ∅`` (exact, deterministic)."""
        if data.domain != self.original:
            raise ValueError(f"data domain {data.domain!r} is not the compression's original domain {self.original!r}")
        return data.recode(self._forward, self.compressed)

    def reverse(self, data: Dataset, rng: np.random.Generator) -> Dataset:
        """§5 Step 8: kept codes map back exactly; the records holding ``∅`` are spread
        evenly over the merged original values (each gets ``⌊r/m⌋`` or ``⌈r/m⌉`` of the
        ``r`` records, which ones at random from ``rng``)."""
        if data.domain != self.compressed:
            raise ValueError(f"data domain {data.domain!r} is not the compressed domain {self.compressed!r}")
        if not isinstance(rng, np.random.Generator):
            raise ValueError("reverse needs an explicit numpy.random.Generator as rng")
        n = len(data)
        codes = np.empty(data.codes.shape, dtype=np.int64)
        for j, a in enumerate(self.original.names):
            col = data.codes[:, j].astype(np.int64)
            kept = self._kept[a]
            merged = self.merged(a)
            out = np.empty(n, dtype=np.int64)
            is_null = col == kept.size
            out[~is_null] = kept[col[~is_null]]
            r = int(is_null.sum())
            if r:
                m = merged.size
                base = np.repeat(merged, r // m)
                extra = rng.choice(merged, size=r - base.size, replace=False) if r % m else np.zeros(0, dtype=np.int64)
                vals = np.concatenate([base, extra])
                out[is_null] = rng.permutation(vals)
            codes[:, j] = out
        return Dataset._trusted(codes, self.original, data.weights)

    def log_reversal(self, attrs: Sequence[str], codes: np.ndarray) -> np.ndarray:
        """Per record (``codes`` over :attr:`original`), log weights over the joint values of
        ``attrs`` that :meth:`reverse` could have given it: ``0`` on the original values merged
        into the record's compressed value (all equally likely, as the reversal spreads
        them), ``-inf`` elsewhere — a kept value only allows itself. Shape ``(k, *sizes)``: the
        ``conditional`` of :func:`~margsynth.inference.repair.redraw`, which then moves a
        record's merged values within their merged set only."""
        codes = np.asarray(codes)
        out = np.zeros((codes.shape[0], *(self.original[a].size for a in attrs)))
        for i, a in enumerate(attrs):
            f = self._forward[a]
            same = f[None, :] == f[codes[:, self.original.index(a)]][:, None]
            out += np.where(same, 0.0, -np.inf).reshape([codes.shape[0]] + [f.size if j == i else 1
                                                                            for j in range(len(attrs))])  # fmt: skip
        return out

    def compress_rules(self, rules: RuleSet | None) -> RuleSet | None:
        """``rules`` (over :attr:`original`) over the compressed domain: a compressed cell is
        allowed when some original cell merged into it is (:meth:`~margsynth.rules.Rule.coarsen`)."""
        if rules is None:
            return None
        return rules.coarsen(self._forward, {a: self.compressed[a].size for a in self.original.names})

    # ------------------------------------------------------------------ measurements
    def compress_measurement(self, m: Measurement | NoisyMarginal) -> Measurement | NoisyMarginal:
        """Re-express a one-way identity measurement over the compressed domain (§5 Step 7):
        kept cells as they are, merged cells summed into one row scaled by ``1/sqrt(m)``.
        A :class:`~margsynth.privacy.NoisyMarginal` (answers ``μ̃ = ỹ / w``, scale ``σ / w``)
        becomes one with that diagonal query; a Private-PGM ``Measurement`` likewise."""
        noisy = isinstance(m, NoisyMarginal)
        if len(m.clique) != 1 or m.query is not None:
            raise ValueError("only one-way identity measurements can be re-expressed over a compressed attribute")
        a = m.clique[0]
        s = self.supports[a]
        if s.all():
            return m
        values, scale = (m.estimate, m.std) if noisy else (m.y, m.sigma)
        k = int((~s).sum())
        y = np.append(values[s], values[~s].sum() / math.sqrt(k))
        q = np.ones(y.size)
        q[-1] = 1.0 / math.sqrt(k)
        if noisy:
            return NoisyMarginal(m.clique, y, scale, 1.0, query=sp.diags(q, format="csr"))
        return Measurement((a,), sp.diags(q, format="csr"), y, scale, name=m.name)


def compress_domain(
    domain: Domain, one_way: Sequence[Measurement] | NoisyMarginals, threshold: float = 3.0
) -> tuple[Compression, list[Measurement] | NoisyMarginals]:
    """Algorithm 4: keep value ``t`` of attribute ``i`` iff ``μ̃_t ≥ threshold · σ``.

    ``one_way`` holds one identity measurement per attribute: Algorithm 1's log
    (:class:`~margsynth.privacy.NoisyMarginals`, answers ``μ̃ = ỹ / w``, scale ``σ / w``)
    or Private-PGM :class:`Measurement` objects; attributes without one are kept whole.
    Returns the :class:`Compression` and the measurements re-expressed over the
    compressed domain (of the same kind as given).
    """
    thr = float(threshold)
    if not math.isfinite(thr) or thr < 0:
        raise ValueError(f"threshold must be a finite number >= 0, got {threshold!r}")
    supports = {a: np.ones(domain[a].size, dtype=bool) for a in domain.names}
    for m in one_way:
        if len(m.clique) != 1 or m.query is not None:
            raise ValueError(f"Algorithm 4 needs one-way identity measurements, got clique {m.clique}")
        a = m.clique[0]
        values, scale = (m.estimate, m.std) if isinstance(m, NoisyMarginal) else (m.y, m.sigma)
        if values.size != domain[a].size:
            raise ValueError(f"measurement of {a!r} has {values.size} cells, attribute has {domain[a].size}")
        supports[a] = values >= thr * scale
    comp = Compression(domain, supports)
    out = [comp.compress_measurement(m) for m in one_way]
    return comp, NoisyMarginals(out) if isinstance(one_way, NoisyMarginals) else out
