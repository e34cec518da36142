"""PrivSyn (Zhang, Wang, Li, Honorio, Backes, He, Chen & Zhang, "PrivSyn: Differentially
Private Data Synthesis", USENIX Security 2021, arXiv:2012.15128; the parts the paper
excerpt leaves out are in docs/notes/privsyn.md).

The mechanism reads SELECT / MEASURE / GENERATE:

SELECT
    1. **Noisy InDif** of every attribute pair ``(a, b)`` (docs/notes/privsyn.md):
       ``InDif(a, b) = Σ_{x,y} |c(a=x, b=y) - c(a=x) c(b=y) / n|``. One record
       changes it by at most 4, so it is released with Gaussian noise of
       sensitivity ``4k`` (``k`` = records per person, below), from a share
       ``indif_fraction`` (10% in the paper) of the zCDP budget, split evenly
       over the ``m = d(d-1)/2`` pairs; each pair is charged to the ledger.
    2. **Greedy selection** (Algorithm 1, §4.2): with budget ``ρ`` for the
       marginals, repeatedly add the pair minimising
       ``E_t(i) = Σ_{j∈X∪{i}} c_j k sqrt(1/(π ρ_j)) + Σ_{j∉X∪{i}} φ_j``
       (noise error of the selected marginals under the Eq. 1 allocation +
       dependency error -- the noisy InDif -- of the rest), and stop as soon as
       ``E_t ≥ E_{t-1}``. Under Eq. 1 the noise part has the closed form
       ``k (Σ_j c_j^{2/3})^{3/2} / sqrt(π ρ)``, which is what is evaluated.
    3. **Combination** (Algorithm 2): cliques of size ≥ 3 of the graph of the
       selected pairs, visited largest first, become one marginal when their
       domain has at most ``γ`` cells (5000 by default) and they share at most 2
       attributes with attributes already combined; their pairs are dropped.
MEASURE
    4. Eq. 1 allocation ``ρ_i = c_i^{2/3} / Σ_j c_j^{2/3} · ρ`` over the final
       selected marginals (the combined cliques and the remaining pairs); the
       1-way marginals get ``one_way_fraction`` of the budget, evenly (as in the
       authors' public code, which GUM initialises from); each marginal is
       measured with the Gaussian mechanism of L2 sensitivity ``k`` and charged
       to the :class:`~margsynth.privacy.BudgetLedger` before its noise is drawn.
GENERATE
    5. Consistency post-processing (§4.3; :mod:`margsynth.inference.consistency`),
       weights ``∝ ρ_i / g_i``; the number of records is the consistent total.
    6. GUM (§5; :mod:`margsynth.inference.gum`).

    ``generator=PGMGenerator(iters=5000, gap_tol=1e-3, memory_limit_mb=1024)`` (registered as
    ``privsyn-pgm``; :mod:`.generators`) keeps steps 1–4 and replaces 5–6 by Private-PGM
    (McKenna, Sheldon & Miklau, ICML 2019; Eq. 4.1–4.2 of the NIST-MST/MST paper)
    estimated from the *same raw noisy marginals* (each with its own σ_i; Private-PGM's
    maximum-likelihood estimate is its own consistency step), and records sampled by
    Algorithms 7–8 (``model.synthetic_data``), ``n_estimate`` of them. This is the
    "graphical model" generator PrivSyn §5 argues against for dense marginal sets: when
    the selected cliques triangulate into a junction tree larger than the generator's
    ``memory_limit_mb`` the run stops with
    :class:`~margsynth.inference.pgm.ModelTooLargeError` (a ``ValueError``).

**Per-person contribution bounding.** Differential privacy here protects a
*person*, who may own several records (the Baltimore incidents: up to 20 per
person in the NIST challenge). With ``max_records_per_person = k`` every noisy
quantity's sensitivity is multiplied by ``k``: a marginal's count vector moves by
at most ``k`` in L2 and InDif by at most ``4k``. If the caller passes
``person_ids``, the data are first *truncated* to at most ``k`` random records per
person (a stable transformation: neighbouring inputs stay within one person's
``k`` records), so the bound holds by construction. Without ids the bound is an
*assumption about the data* that the caller must state (the MGD paper's PrivSyn
runs used truncation 2; see :mod:`margsynth.experiments.privsyn_baltimore`).

Seeded noise is for reproducing papers, not for production releases.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..domain import Domain
from ..inference.consistency import make_consistent
from ..privacy import BudgetLedger, NoisyMarginal, NoisyMarginals, gaussian_mechanism
from ..privacy.accounting import gaussian_sigma
from ..rules import RuleSet
from ..timing import timed
from .base import (
    Mechanism,
    SynthesisResult,
    bounded_records,
    check_conversion,
    check_generator,
    check_marginals_fit,
    check_records,
    largest,
)
from .generators import Generator, GUMGenerator
from .sampler import pgm_sampler

__all__ = [
    "INDIF_SENSITIVITY",
    "PrivSyn",
    "PrivSynMeasurement",
    "Selection",
    "allocate_budget",
    "combine_marginals",
    "greedy_select",
    "indif",
    "indif_scores",
    "measure_with_budgets",
    "noise_error",
    "truncate_contributions",
]

#: L2 (= absolute) sensitivity of one pair's InDif to one record (docs/notes/privsyn.md).
INDIF_SENSITIVITY = 4.0
_ONE_WAY = ("uncovered", "all", "none")


# ----------------------------------------------------------------------------- InDif
def indif(data: Dataset, a: str, b: str) -> float:
    """PrivSyn's InDif of the pair ``(a, b)`` (§4, the dependency measure; docs/notes/privsyn.md):
    ``Σ_{x,y} |c(x, y) - c(x) c(y) / n|`` -- the L1 distance of the 2-way marginal
    from the product of its 1-way marginals, in counts. Sensitivity 4 per record.

    >>> from margsynth import Domain
    >>> d = Dataset([[0, 0], [1, 1]], Domain.from_sizes({"a": 2, "b": 2}))
    >>> indif(d, "a", "b")
    2.0
    """
    if a == b:
        raise ValueError(f"InDif needs two different attributes, got ({a!r}, {b!r})")
    m = data.marginal((a, b)).astype(np.float64)
    n = m.sum()
    if n <= 0:
        return 0.0
    return float(np.abs(m - np.outer(m.sum(axis=1), m.sum(axis=0)) / n).sum())


def indif_scores(data: Dataset, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """Exact InDif of each pair (no noise): the input of the noisy release."""
    return np.array([indif(data, a, b) for a, b in pairs], dtype=np.float64)


# ----------------------------------------------------------------------------- Eq. 1 and Algorithm 1
def _check_cells(cells) -> np.ndarray:
    c = np.asarray(cells, dtype=np.float64)
    if c.ndim != 1 or not np.all(np.isfinite(c)) or np.any(c < 1):
        raise ValueError(f"cells must be a 1-d array of marginal sizes >= 1, got {cells!r:.100}")
    return c


def _check_rho(rho) -> float:
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating)) or not np.isfinite(rho) or rho <= 0:
        raise ValueError(f"rho (zCDP budget) must be a finite number > 0, got {rho!r}")
    return float(rho)


def allocate_budget(cells: Sequence[float], rho: float) -> np.ndarray:
    """Eq. 1: ``ρ_i = c_i^{2/3} / Σ_j c_j^{2/3} · ρ`` -- the split of ``ρ`` minimising the
    total expected noise error ``Σ_i c_i sqrt(1/(π ρ_i))`` (§4.2). Sums to ``ρ``.

    >>> allocate_budget([8, 8], 1.0).tolist()
    [0.5, 0.5]
    """
    c = _check_cells(cells)
    r = _check_rho(rho)
    if c.size == 0:
        raise ValueError("no marginals to allocate budget to")
    w = c ** (2.0 / 3.0)
    return r * w / w.sum()


def noise_error(cells: Sequence[float], rhos: Sequence[float], sensitivity: float = 1.0) -> np.ndarray:
    """Expected L1 noise error of each marginal, ``c_i Δ sqrt(1/(π ρ_i))`` (Algorithm 1
    line 5; docs/notes/privsyn.md): ``c_i`` cells with Gaussian noise ``σ_i = Δ/sqrt(2ρ_i)``, whose
    mean absolute value is ``σ_i sqrt(2/π)``."""
    c = _check_cells(cells)
    r = np.asarray(rhos, dtype=np.float64)
    if r.shape != c.shape or not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError(f"rhos must be {c.size} finite numbers > 0, got {rhos!r:.100}")
    return c * float(sensitivity) * np.sqrt(1.0 / (np.pi * r))


@dataclass(frozen=True)
class Selection:
    """Trace of Algorithm 1.

    ``selected``: indices into the candidate list, in the order chosen.
    ``errors``: ``E_0, E_1, …, E_t`` -- the error estimate before any selection and
    after each accepted step. ``stopping_error``: ``E`` of the best candidate at the
    step that ended the loop (``>= errors[-1]``), or ``None`` if every candidate was
    taken.
    """

    selected: tuple[int, ...]
    errors: tuple[float, ...]
    stopping_error: float | None

    def to_frame(self, names: Sequence[Any] | None = None) -> pd.DataFrame:
        rows = [{"step": 0, "chosen": None, "error": self.errors[0]}]
        for t, (i, e) in enumerate(zip(self.selected, self.errors[1:]), start=1):
            rows.append({"step": t, "chosen": names[i] if names is not None else i, "error": e})
        return pd.DataFrame(rows)


def greedy_select(
    dependency_errors: Sequence[float], cells: Sequence[float], rho: float, *, sensitivity: float = 1.0
) -> Selection:
    """Algorithm 1 (Marginal Selection, §4.2).

    ``dependency_errors[i]`` is ``φ_i`` (PrivSyn: the noisy InDif of pair ``i``),
    ``cells[i]`` is ``c_i``, ``rho`` the zCDP budget of the marginals, ``sensitivity``
    the Gaussian sensitivity ``Δ`` (``k`` records per person). Each iteration evaluates,
    for every unselected ``i``, ``E_t(i) = Σ_{j∈X∪{i}} c_j Δ sqrt(1/(π ρ_j)) +
    Σ_{j∈X̄∖{i}} φ_j`` with ``ρ_j`` allocated over ``X∪{i}`` by Eq. 1 -- in closed form
    ``Δ (Σ_{j∈X∪{i}} c_j^{2/3})^{3/2} / sqrt(πρ) + Σ_{j∈X̄} φ_j - φ_i`` -- takes the
    argmin (lowest index on ties), and stops when ``E_t ≥ E_{t-1}`` (line 8).
    """
    phi = np.asarray(dependency_errors, dtype=np.float64)
    c = _check_cells(cells)
    r = _check_rho(rho)
    if phi.shape != c.shape:
        raise ValueError(f"{phi.size} dependency errors but {c.size} cell counts")
    if not np.all(np.isfinite(phi)):
        raise ValueError("dependency errors must be finite")
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    w = c ** (2.0 / 3.0)
    scale = float(sensitivity) / math.sqrt(math.pi * r)
    free = np.ones(c.size, dtype=bool)
    s_sel = 0.0
    rest = float(phi.sum())
    errors = [rest]  # E_0
    chosen: list[int] = []
    stopping = None
    while free.any():
        cand = np.flatnonzero(free)
        e = scale * (s_sel + w[cand]) ** 1.5 + (rest - phi[cand])
        k = int(np.argmin(e))
        best, e_best = int(cand[k]), float(e[k])
        if e_best >= errors[-1]:
            stopping = e_best
            break
        chosen.append(best)
        errors.append(e_best)
        free[best] = False
        s_sel += w[best]
        rest -= phi[best]
    return Selection(tuple(chosen), tuple(errors), stopping)


# ----------------------------------------------------------------------------- Algorithm 2
def _cliques(adj: dict[str, set[str]], order: list[str], domain: Domain, gamma: float) -> list[tuple[str, ...]]:
    """All cliques of ≥ 3 nodes whose domain has ≤ γ cells (larger ones can never be
    combined, and a clique's cell count only grows when it is extended)."""
    pos = {a: i for i, a in enumerate(order)}
    out: list[tuple[str, ...]] = []

    def extend(clique: list[str], cands: list[str], cells: int) -> None:
        if len(clique) >= 3:
            out.append(tuple(clique))
        for i, v in enumerate(cands):
            size = cells * domain[v].size
            if size > gamma:
                continue
            extend(clique + [v], [u for u in cands[i + 1 :] if u in adj[v]], size)

    for a in order:
        extend([a], sorted((u for u in adj[a] if pos[u] > pos[a]), key=pos.get), domain[a].size)
    return out


def combine_marginals(
    pairs: Sequence[tuple[str, str]], domain: Domain, gamma: float = 5000
) -> list[tuple[str, ...]]:
    """Algorithm 2 (Marginal Combine, §4.2).

    Build the graph whose edges are the selected ``pairs``; visit its cliques of
    ≥ 3 attributes from the largest to size 3 (ties in domain order); a clique ``c``
    becomes one marginal if its domain has at most ``gamma`` cells and
    ``|c ∩ S| ≤ 2``, where ``S`` holds the attributes of the cliques already
    combined; the pairs inside an accepted clique are dropped. Returns the
    combined cliques followed by the remaining pairs, each in domain order.

    ``gamma <= 0`` raises ``ValueError``.
    """
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.integer, np.floating)) or not gamma > 0:
        raise ValueError(f"gamma (clique size threshold) must be > 0, got {gamma!r}")
    edges = []
    for p in pairs:
        p = domain.check_attrs(tuple(p), "selected pair")
        if len(p) != 2:
            raise ValueError(f"selected marginals must be pairs of attributes, got {p!r}")
        edges.append(domain.canonical(p))
    edges = list(dict.fromkeys(edges))
    nodes = sorted({a for e in edges for a in e}, key=domain.index)
    adj: dict[str, set[str]] = {a: set() for a in nodes}
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    cliques = _cliques(adj, nodes, domain, float(gamma))
    cliques.sort(key=lambda c: (-len(c), [domain.index(a) for a in c]))
    combined: list[tuple[str, ...]] = []
    covered: set[str] = set()
    remaining = set(edges)
    for c in cliques:
        if len(covered & set(c)) <= 2 and domain.size(c) <= gamma:
            combined.append(c)
            covered |= set(c)
            remaining -= {e for e in itertools.combinations(c, 2)}
    return combined + [e for e in edges if e in remaining]


# ----------------------------------------------------------------------------- contribution bounding
def truncate_contributions(
    data: Dataset, person_ids: np.ndarray, max_records: int, rng: np.random.Generator
) -> Dataset:
    """Keep at most ``max_records`` uniformly random records of each person.

    After this, datasets differing in one person differ in at most ``max_records``
    records, so a query of per-record sensitivity ``Δ`` has per-person sensitivity
    ``max_records · Δ``.
    """
    ids = np.asarray(person_ids)
    if ids.shape != (len(data),):
        raise ValueError(f"person_ids has shape {ids.shape}, expected ({len(data)},)")
    k = _check_k(max_records)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    _, inv = np.unique(ids, return_inverse=True)
    perm = rng.permutation(len(data))
    order = perm[np.argsort(inv[perm], kind="stable")]
    g = inv[order]
    rank = np.arange(g.size) - np.searchsorted(g, g, side="left")
    return data.take(np.sort(order[rank < k]))


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"max_records_per_person must be a positive integer, got {k!r}")
    return int(k)


# ----------------------------------------------------------------------------- measurement
def measure_with_budgets(
    data: Dataset,
    cliques: Sequence[Sequence[str]],
    rhos: Sequence[float],
    rng: np.random.Generator,
    ledger: BudgetLedger,
    *,
    sensitivity: float = 1.0,
    label: str = "privsyn marginal",
) -> NoisyMarginals:
    """Measure each marginal with the Gaussian mechanism, ``σ_i = Δ/sqrt(2ρ_i)`` (ρ_i-zCDP,
    NIST-MST paper Prop. 1), charging the ledger before each draw.

    The whole plan is checked first: if ``Σ ρ_i`` exceeds ``ledger.remaining`` (zCDP
    ledger) a ``ValueError`` names the selection and no noise is drawn.
    """
    if ledger.currency != "zcdp":
        raise ValueError(f"PrivSyn accounts in zCDP; got a {ledger.currency!r} ledger")
    cl = [data.domain.check_attrs(tuple(c), f"clique {i}") for i, c in enumerate(cliques)]
    r = np.asarray(rhos, dtype=np.float64)
    if r.shape != (len(cl),) or not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError(f"rhos must be {len(cl)} finite numbers > 0, got {rhos!r:.100}")
    total = math.fsum(r)
    if total > ledger.remaining * (1 + 1e-12):
        raise ValueError(
            f"selection {cl} needs rho={total:.6g} but the ledger has {ledger.remaining:.6g} left; "
            "it cannot fit the budget"
        )
    out = []
    for c, rho_i in zip(cl, r):
        sigma = gaussian_sigma(float(rho_i), sensitivity)
        m = data.marginal(c, flatten=True).astype(np.float64)
        y = gaussian_mechanism(m, sigma=sigma, l2_sensitivity=sensitivity, rng=rng, ledger=ledger, label=f"{label} {'×'.join(c)}")
        out.append(NoisyMarginal(clique=c, y=y, sigma=sigma, weight=1.0))
    return NoisyMarginals(out)


@dataclass
class PrivSynMeasurement:
    """Everything PrivSyn releases before generation (all of it differentially private).

    ``pairs``/``noisy_indif``: the candidate pairs and their noisy InDif;
    ``selection``: Algorithm 1's trace; ``cliques``: the measured marginals (after
    Algorithm 2 and the 1-way additions); ``rhos``: their Eq. 1 budgets;
    ``noisy``: the raw noisy marginals; ``consistent``: after §4.3 post-processing;
    ``n_estimate``: the consistent total; ``ledger``: the budget ledger.
    """

    pairs: list[tuple[str, str]]
    noisy_indif: np.ndarray
    selection: Selection | None
    selected_pairs: list[tuple[str, str]]
    cliques: list[tuple[str, ...]]
    rhos: np.ndarray
    noisy: NoisyMarginals
    consistent: list[tuple[tuple[str, ...], np.ndarray]]
    n_estimate: int
    ledger: BudgetLedger
    consistency_iterations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    records_note: dict[str, Any] = field(default_factory=dict)

    def budget_table(self) -> pd.DataFrame:
        """Budget per measured marginal: clique, cells, ρ_i, σ_i."""
        return pd.DataFrame(
            {
                "clique": ["×".join(c) for c in self.cliques],
                "cells": [m.y.size for m in self.noisy],
                "rho": self.rhos,
                "sigma": [m.sigma for m in self.noisy],
            }
        )


@dataclass(frozen=True)
class PrivSyn(Mechanism):
    """PrivSyn's hyperparameters (see the module docstring for the algorithm).

    Attributes
    ----------
    indif_fraction:
        Share of the zCDP budget spent on the noisy InDif scores (paper: 10%).
    one_way_fraction:
        Share spent on the 1-way marginals (split evenly among them; the authors'
        public code uses 10%). The rest goes to the selected marginals by Eq. 1, and
        Algorithm 1 is run with that rest. ``0``: the 1-way marginals join the Eq. 1
        allocation instead. A share with nothing to buy (no 1-way
        marginal measured, no pair selected, a single attribute) is handed to the
        marginals that are measured, so the whole budget is always spent.
    gamma:
        Algorithm 2's clique-size threshold γ in cells (paper: 5000); must be > 0.
    max_records_per_person:
        Contribution bound ``k``: every sensitivity is multiplied by ``k``. With
        ``person_ids`` given to :meth:`run`, the data are truncated to it first.
    one_way:
        Which 1-way marginals are measured besides the selection: ``"all"`` (the
        authors' public code; GUM initialises from them), ``"uncovered"``
        (attributes no selected marginal contains) or ``"none"``.
    consistency_iterations:
        Upper bound on the (consistency, non-negativity) passes of §4.3.
    nonnegativity:
        ``"project"`` (§4.3's minimal-L2 projection, docs/notes/privsyn.md; default) or ``"cut"``
        (zero the smallest cells, as the authors' public code finishes); see
        :func:`~margsynth.inference.consistency.make_consistent`.
    conversion:
        zCDP → (ε, δ) conversion for the budget (``"prop4"`` or ``"cks"``).
    generator:
        The GENERATE step (:mod:`.generators`): ``GUMGenerator()`` (§5.2, default; it
        takes the §4.3 consistent marginals above as they are, so its own consistency
        fields are unused here) or e.g. ``PGMGenerator(iters=1000, memory_limit_mb=1024)``
        (module docstring).
    synthetic_records:
        Number of synthetic records (default ``None``: ``n_estimate``, the total of the
        consistent marginals).
    """

    indif_fraction: float = 0.1
    one_way_fraction: float = 0.1
    gamma: float = 5000
    max_records_per_person: int = 1
    one_way: str = "all"
    consistency_iterations: int = 100
    nonnegativity: str = "project"
    conversion: str = "prop4"
    generator: Generator = field(default_factory=GUMGenerator)
    synthetic_records: int | None = None

    name = "privsyn"

    def __post_init__(self) -> None:
        f = self.indif_fraction
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f < 1:
            raise ValueError(f"indif_fraction must be in (0, 1), got {f!r}")
        o = self.one_way_fraction
        if isinstance(o, bool) or not isinstance(o, (int, float)) or not 0 <= o < 1:
            raise ValueError(f"one_way_fraction must be in [0, 1), got {o!r}")
        if f + o >= 1:
            raise ValueError(
                f"indif_fraction + one_way_fraction = {f + o!r} leaves no budget for the selected marginals; "
                "the selection cannot fit the budget"
            )
        g = self.gamma
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not np.isfinite(g) or g <= 0:
            raise ValueError(f"gamma (clique size threshold) must be a finite number > 0, got {g!r}")
        _check_k(self.max_records_per_person)
        if self.one_way not in _ONE_WAY:
            raise ValueError(f"one_way must be one of {_ONE_WAY}, got {self.one_way!r}")
        it = self.consistency_iterations
        if isinstance(it, bool) or not isinstance(it, int) or it < 1:
            raise ValueError(f"consistency_iterations must be a positive integer, got {it!r}")
        check_conversion(self.conversion)
        if self.nonnegativity not in ("project", "cut"):
            raise ValueError(f"nonnegativity must be 'project' or 'cut', got {self.nonnegativity!r}")
        check_generator(self.generator, allow_none=False)
        check_records(self.synthetic_records)

    # ------------------------------------------------------------------ validate
    def check(
        self, data: Dataset, budget: BudgetLedger, *, person_ids: np.ndarray | None = None, **_: object
    ) -> None:
        """PrivSyn's own checks (records, person ids, sizes), before any noise."""
        if data.weights is not None:
            raise ValueError("PrivSyn takes unweighted records (one per row)")
        if person_ids is not None and np.shape(person_ids) != (len(data),):
            raise ValueError(f"person_ids has shape {np.shape(person_ids)}, expected ({len(data)},)")
        check_marginals_fit(data.domain, [largest(data.domain, 2)], "pair marginal (InDif scores every pair)")
        check_records(self.synthetic_records, columns=len(data.domain))

    # ------------------------------------------------------------------ SELECT + MEASURE
    def measure(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        person_ids: np.ndarray | None = None,
    ) -> PrivSynMeasurement:
        """Noisy InDif, Algorithm 1, Algorithm 2, Eq. 1, Gaussian measurement and the
        §4.3 post-processing, every noisy quantity charged to ``budget`` (a zCDP ledger
        with nothing spent, checked by :meth:`validate`)."""
        k = self.max_records_per_person
        if person_ids is not None:
            data = truncate_contributions(data, person_ids, k, rng)
        domain = data.domain
        ledger = budget
        rho = ledger.total
        seconds: dict[str, float] = {}

        # SELECT: noisy InDif (sensitivity 4k, ρ_indif/m each), Algorithm 1, Algorithm 2
        with timed(seconds, "select"):
            pairs = list(itertools.combinations(domain.names, 2))
            rho_indif = self.indif_fraction * rho if pairs else 0.0
            rho_one = self.one_way_fraction * rho if self.one_way != "none" else 0.0
            rho_sel = rho - rho_indif - rho_one
            noisy_indif = np.zeros(len(pairs))
            selection = None
            selected: list[tuple[str, str]] = []
            if pairs:
                sens = INDIF_SENSITIVITY * k
                sigma = gaussian_sigma(rho_indif / len(pairs), sens)
                exact = indif_scores(data, pairs)
                for i, (a, b) in enumerate(pairs):
                    noisy_indif[i] = gaussian_mechanism(
                        [exact[i]], sigma=sigma, l2_sensitivity=sens, rng=rng, ledger=ledger, label=f"indif {a}×{b}"
                    )[0]
                cells = [domain.size(p) for p in pairs]
                selection = greedy_select(noisy_indif, cells, rho_sel, sensitivity=float(k))
                selected = [pairs[i] for i in selection.selected]
            multi = combine_marginals(selected, domain, self.gamma)
            covered = {a for c in multi for a in c}
            if self.one_way == "all":
                ones = [(a,) for a in domain.names]
            elif self.one_way == "uncovered":
                ones = [(a,) for a in domain.names if a not in covered]
            else:
                ones = []
            if not multi and not ones:
                raise ValueError("nothing to measure: no pair selected and one_way='none'")

        # MEASURE: Eq. 1 over the selected marginals, an even split over the 1-way ones,
        # Gaussian noise of sensitivity k; a share with nothing to buy moves to the rest.
        with timed(seconds, "measure"):
            remaining = ledger.remaining
            cliques = list(multi) + ones
            if multi and ones and rho_one > 0:
                rhos = np.concatenate(
                    [allocate_budget([domain.size(c) for c in multi], remaining - rho_one), np.full(len(ones), rho_one / len(ones))]
                )
            elif multi or rho_one == 0:  # no 1-way share (or nothing else to buy): Eq. 1 over everything measured
                rhos = allocate_budget([domain.size(c) for c in cliques], remaining)
            else:  # nothing selected: the 1-way marginals share everything left, evenly
                rhos = np.full(len(ones), remaining / len(ones))
            noisy = measure_with_budgets(data, cliques, rhos, rng, ledger, sensitivity=float(k))

        # post-processing (§4.3): consistency with weights ∝ ρ_i/g_i, non-negativity
        with timed(seconds, "consistency"):
            cons = make_consistent(
                [m.clique for m in noisy],
                [m.estimate for m in noisy],
                domain,
                variances=[m.sigma**2 for m in noisy],
                max_iterations=self.consistency_iterations,
                nonnegativity=self.nonnegativity,
            )
            # the consistent total, within the bound decided before any noise (reported if outside)
            n_est, note = bounded_records(float(np.mean([t.sum() for t in cons.marginals])), len(domain))
            n_est = max(n_est, 1)
        return PrivSynMeasurement(
            pairs=pairs,
            noisy_indif=noisy_indif,
            selection=selection,
            selected_pairs=selected,
            cliques=list(cliques),
            rhos=rhos,
            noisy=noisy,
            consistent=list(zip(cons.cliques, cons.marginals)),
            n_estimate=n_est,
            ledger=ledger,
            consistency_iterations=cons.iterations,
            seconds=seconds,
            records_note=note,
        )

    # ------------------------------------------------------------------ full run
    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        person_ids: np.ndarray | None = None,
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """SELECT / MEASURE (:meth:`measure`) then GENERATE with GUM (or Private-PGM).

        ``rules`` (no budget) are the generator's: GUM projects its consistent targets onto
        the allowed cells and repairs the records (:meth:`~margsynth.inference.gum.GUM.synthesize`);
        Private-PGM makes structural zeros of them and enforces the rest
        (:class:`~.generators.PGMGenerator`).

        ``extras`` holds the selection trace (``selection``: DataFrame of
        ``step, chosen, error``), ``selected_pairs``, ``cliques``, the per-marginal
        budget table (``budget``), ``n_estimate``, the GUM convergence trace
        (``gum_trace``; ``None`` with a ``PGMGenerator``, which reports
        ``model_stats`` and ``junction_tree_mb`` instead) and the
        :class:`PrivSynMeasurement` (``measurement``).
        """
        meas = self.measure(data, rng, budget, person_ids=person_ids)
        # GENERATE (post-processing, :mod:`.generators`): GUM takes the §4.3 consistent
        # marginals as they are, Private-PGM the raw noisy ones; n_estimate records
        seconds = dict(meas.seconds)
        with timed(seconds, "generate"):
            out = self.generator.generate(
                data.domain, meas.noisy, rng, records=self.synthetic_records or meas.n_estimate,
                consistent=(meas.consistent, meas.consistency_iterations), sep="×", rules=rules,
            )  # fmt: skip
        synthetic = out.synthetic
        extras: dict[str, Any] = {"gum_trace": None, "gum_converged": None}
        extras.update({k: v for k, v in out.extras.items() if k not in ("model", "n_estimate", "consistency_iterations")})
        return SynthesisResult.from_ledger(
            synthetic,
            "privsyn" if isinstance(self.generator, GUMGenerator) else f"privsyn-{self.generator.name}",
            {**asdict(self), "generator": {"name": self.generator.name, **asdict(self.generator)}},
            meas.ledger,
            seconds,
            {
                "selection": meas.selection.to_frame(meas.pairs) if meas.selection is not None else None,
                "selected_pairs": meas.selected_pairs,
                "cliques": meas.cliques,
                "budget": meas.budget_table(),
                "n_estimate": meas.n_estimate,
                **extras,
                "consistency_iterations": meas.consistency_iterations,
                **meas.records_note,
                "measurement": meas,
            },
            sampler=pgm_sampler(out.extras, rules=rules),
        )
