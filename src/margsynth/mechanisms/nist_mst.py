"""NIST-MST — §5 of the NIST-MST/MST paper (Algorithms 2–5, 7–10), made generic.

Algorithm 2, step by step, as :meth:`NISTMST.run` does it:

1. **Calibrate noise** — Eq. 5.1, ``σ = (sqrt(log 1/δ) + sqrt(log 1/δ + ε)) / ε``: two
   sensitivity-1 Gaussian measurements (steps 4 and 6) compose to ``1/σ²``-zCDP, which is
   exactly (ε, δ)-DP by Prop. 4 (Theorem 2). Each is charged ``1/(2σ²)`` to the ledger.
2. **Encode domain** from public information: optionally restrict every attribute to
   the values the public data shows (``encode_from_public``; the paper intersected the
   SPECS file with IPUMS), values outside merged into one code and spread back on
   reversal (:class:`~.compression.Compression` with public supports).
3. **Transform** (optional, :class:`Transform` objects with exact reverses on their
   image), e.g. :class:`IncwageValuehTransform` = Algorithm 3 / 9 / 10.
4. **Compress** — measure all one-way marginals (Algorithm 1, weights
   ``oneway_weights``, default 1; the paper gave INCWAGE_A weight 2) and apply
   Algorithm 4 (threshold 3σ).
5. **Select** on the *public* data only (Algorithm 5, :func:`select_public`): mutual
   information maximum spanning tree with the forced pairs boosted by ``boost`` (100),
   the forced pairs and triples added, triples chosen by Private-PGM's estimation error
   (threshold 0.1), marginals of ≥ 10⁶ cells dropped, ε-dependent weights
   (:func:`contest_weights`). No budget is consumed.
6. **Measure** the selection (Algorithm 1, σ).
7. **Synthesize** — Private-PGM on both logs (Eq. 4.2), records by Algorithms 7–8.
8. **Reverse** — Algorithm 4 reversed (§5 Step 8), the transforms reversed
   (Algorithm 9), the encoding reversed.

The forced attributes generalise the contest's SEX × CITY × INCWAGE_A: ``designated``
(default: :func:`margsynth.metrics.suite.designated_triple`, e.g. sex × native-country ×
income>50K on adult) gives the three forced pairs and the forced triple.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

import networkx as nx
import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..inference.pgm import ModelTooLargeError, junction_tree_size
from ..inference.repair import enforce
from ..metrics.suite import designated_triple
from ..privacy import BudgetLedger, measure_marginals
from ..privacy.accounting import gaussian_sigma
from ..rules import RuleSet
from ..timing import Stopwatch, timed
from .base import (
    Mechanism,
    SynthesisResult,
    check_generator,
    check_marginals_fit,
    check_records,
    largest,
)
from .compression import Compression, compress_domain
from .generators import Generator, PGMGenerator
from .mst import check_cliques
from .nist_mst_census import IncwageValuehTransform, digits_class  # re-exported (census transform, own module)
from .sampler import pgm_sampler

__all__ = [
    "IncwageValuehTransform",
    "NISTMST",
    "Transform",
    "contest_weights",
    "digits_class",
    "mutual_information",
    "select_public",
    "triple_error",
]

MAX_CELLS = 10**6


# ----------------------------------------------------------------------------- transforms
class Transform(Protocol):
    """A record-level transformation of step 3 with its reverse (step 8).

    ``forward`` must not depend on the sensitive data beyond each record itself (so one
    record still moves each marginal by at most one, §5 Step 1); ``reverse`` must map
    back exactly on the image of ``forward``: ``forward(reverse(forward(D)))`` equals
    ``forward(D)``. ``reverse`` receives the domain ``forward`` started from.
    """

    def transform_domain(self, domain: Domain) -> Domain: ...

    def forward(self, data: Dataset) -> Dataset: ...

    def reverse(self, data: Dataset, rng: np.random.Generator, domain: Domain) -> Dataset: ...


# ----------------------------------------------------------------------------- Algorithm 5
def mutual_information(data: Dataset, a: str, b: str) -> float:
    """``I(a; b)`` (nats) of the empirical joint distribution of ``a`` and ``b`` in ``data``: the
    edge weight of Algorithm 5 step 1 (the Chow-Liu criterion, ref. [15])."""
    joint = data.marginal((a, b)).astype(np.float64)
    p = joint / joint.sum()
    pa, pb = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (pa * pb)[nz])).sum())


def triple_error(data: Dataset, i: str, j: str, k: str) -> float:
    """Algorithm 5 step 3: ``E_ijk = ||M_ijk − M̃_ijk||_1`` on probabilities, where
    ``M̃_ijk`` is Private-PGM's estimate from the exact ``M_ij`` and ``M_ik``: the graphical
    model with cliques ``{ij, ik}`` matching both (Fact 1), i.e. ``M_ij M_ik / M_i``."""
    m = data.marginal((i, j, k)).astype(np.float64)
    p = m / m.sum()
    pij = p.sum(axis=2)
    pik = p.sum(axis=1)
    pi = p.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(pi[:, None, None] > 0, pij[:, :, None] * pik[:, None, :] / pi[:, None, None], 0.0)
    return float(np.abs(p - est).sum())


def contest_weights(
    cliques: Sequence[tuple[str, ...]],
    epsilon: float,
    forced_pairs: Sequence[tuple[str, ...]] = (),
    forced_triples: Sequence[tuple[str, ...]] = (),
) -> list[float]:
    """Algorithm 5 step 6: weight 8 / 6 / 4 (ε ≤ 0.3 / between / ε ≥ 4) for a forced triple,
    2 for a forced pair, 1 otherwise (relative; Algorithm 1 normalises them)."""
    fp = {frozenset(c) for c in forced_pairs}
    ft = {frozenset(c) for c in forced_triples}
    w_triple = 8.0 if epsilon <= 0.3 else (4.0 if epsilon >= 4.0 else 6.0)
    return [w_triple if frozenset(c) in ft else (2.0 if frozenset(c) in fp else 1.0) for c in cliques]


def select_public(
    public: Dataset,
    epsilon: float,
    forced_pairs: Sequence[tuple[str, str]] = (),
    forced_triples: Sequence[tuple[str, ...]] = (),
    *,
    boost: float = 100.0,
    threshold: float = 0.1,
    max_cells: int = MAX_CELLS,
    triples: bool = True,
) -> tuple[list[tuple[str, ...]], list[float], dict]:
    """Algorithm 5 on the public data (no privacy cost). Returns the cliques, their
    weights (step 6) and details (``tree``: the spanning-tree pairs, ``triples``: the
    triples added in step 4, ``dropped``: cliques removed in step 5)."""
    dom = public.domain
    names = dom.names
    fp = {frozenset(p) for p in forced_pairs}
    # (1) complete graph weighted by mutual information, forced pairs boosted
    g = nx.Graph()
    g.add_nodes_from(names)
    for a, b in itertools.combinations(names, 2):
        g.add_edge(a, b, weight=mutual_information(public, a, b) + (boost if frozenset((a, b)) in fp else 0.0))
    # (2) maximum spanning tree + forced pairs and triples
    tree = nx.maximum_spanning_tree(g, algorithm="kruskal")
    tree_pairs = [tuple(dom.canonical(e)) for e in tree.edges]
    cliques: list[tuple[str, ...]] = list(tree_pairs)
    for c in [*forced_pairs, *forced_triples]:
        c = dom.canonical(c)
        if c not in cliques:
            cliques.append(c)
    # (3)-(4) triples by estimation error, per attribute, maximum spanning tree over its neighbours
    added = []
    if triples:
        for i in names:
            nb = sorted(tree.neighbors(i), key=dom.index)
            if len(nb) < 2:
                continue
            h = nx.Graph()
            h.add_nodes_from(nb)
            for j, k in itertools.combinations(nb, 2):
                e = triple_error(public, i, j, k)
                if e >= threshold:
                    h.add_edge(j, k, weight=e)
            for j, k in nx.maximum_spanning_tree(h).edges:
                for c in (dom.canonical((j, k)), dom.canonical((i, j, k))):
                    if c not in cliques:
                        cliques.append(c)
                added.append(dom.canonical((i, j, k)))
    # (5) drop marginals that are too large
    dropped = [c for c in cliques if dom.size(c) >= max_cells]
    cliques = [c for c in cliques if dom.size(c) < max_cells]
    weights = contest_weights(cliques, epsilon, forced_pairs, forced_triples)
    return cliques, weights, {"tree": tree_pairs, "triples": added, "dropped": dropped}


# ----------------------------------------------------------------------------- the mechanism
def _final_pgm() -> Generator:
    """Step 7: Private-PGM with the authors' 5,000 iterations."""
    return PGMGenerator(iters=5000)


@dataclass(frozen=True)
class NISTMST(Mechanism):
    """NIST-MST (§5, Algorithm 2), generic. See the module docstring for the steps.

    Parameters
    ----------
    designated:
        The contest's SEX × CITY × INCWAGE_A analogue ``(a, b, c)``: its three pairs are
        forced and boosted, the triple forced. ``None``: :func:`margsynth.metrics.suite.designated_triple`;
        ``()``: nothing forced.
    transforms:
        Step 3 transforms (each with ``transform_domain``/``forward``/``reverse``).
    encode_from_public:
        Step 2: restrict each attribute to the values seen in the public data.
    oneway_weights:
        ``((attribute, weight), ...)`` Algorithm 1 weights of step 4 (others 1).
    boost, triple_threshold, max_cells:
        Algorithm 5's 100, 0.1 and 10⁶.
    compress_threshold:
        Algorithm 4's 3 (σ units).
    generator:
        The GENERATE step (:mod:`.generators`); default ``PGMGenerator(iters=5000)``
        (step 7: Private-PGM, the authors' iterations).
    memory_limit_mb:
        Refuse (``ModelTooLargeError``, a ``ValueError``) *before* the second round of noise
        when the selected cliques' junction tree would need more (``None``: no limit).
    """

    designated: tuple[str, ...] | None = None
    transforms: tuple = ()
    encode_from_public: bool = False
    oneway_weights: tuple[tuple[str, float], ...] = ()
    boost: float = 100.0
    triple_threshold: float = 0.1
    max_cells: int = MAX_CELLS
    compress: bool = True
    compress_threshold: float = 3.0
    synthetic_records: int | None = None
    memory_limit_mb: float | None = 4096.0
    generator: Generator = field(default_factory=_final_pgm)

    name = "nist-mst"

    def __post_init__(self) -> None:
        check_records(self.synthetic_records)
        check_generator(self.generator, allow_none=False)

    def parameters(self) -> dict:
        return {
            "designated": None if self.designated is None else list(self.designated),
            "transforms": [repr(t) for t in self.transforms],
            "encode_from_public": self.encode_from_public,
            "oneway_weights": [list(x) for x in self.oneway_weights],
            "boost": self.boost,
            "triple_threshold": self.triple_threshold,
            "max_cells": self.max_cells,
            "compress": self.compress,
            "compress_threshold": self.compress_threshold,
            "synthetic_records": self.synthetic_records,
            "memory_limit_mb": self.memory_limit_mb,
            "generator": {"name": self.generator.name, **asdict(self.generator)},
        }

    def _designated(self, domain: Domain) -> tuple[str, ...]:
        if self.designated is None:
            try:
                return designated_triple(domain)
            except ValueError:
                return ()
        return tuple(self.designated)

    @staticmethod
    def sigma(budget: BudgetLedger) -> float:
        """Step 1, Eq. 5.1's ``σ = (sqrt(log 1/δ) + sqrt(log 1/δ + ε)) / ε``: ``1/sqrt(ρ)`` for
        Prop. 4's largest ρ (Theorem 2), i.e. two rounds of ``1/(2σ²)`` each spend the whole
        ``budget`` — computed from the ledger's total, so that it carries the ledger's
        calibration margin and the two rounds never spend more than (ε, δ)
        (:func:`~margsynth.privacy.accounting.eq51_sigma` is the formula without it)."""
        return gaussian_sigma(budget.total / 2.0)

    def check(self, data: Dataset, budget: BudgetLedger, *, public: Dataset | None = None, **_: object) -> None:
        """NIST-MST's own checks — public data, designated attributes, weights, and that
        Eq. 5.1's two rounds fit the budget — before any noise."""
        sigma = self.sigma(budget)
        if not (math.isfinite(sigma) and budget.can_afford(1.0 / sigma**2)):
            # Theorem 2: both rounds must fit before any noise
            raise ValueError(f"Eq. 5.1 sigma={sigma!r} does not fit the budget ({budget!r})")
        if public is None:
            raise ValueError("NIST-MST needs a public dataset (public=...) for its selection (Algorithm 5)")
        if not isinstance(public, Dataset) or len(public) == 0:
            raise ValueError("public must be a non-empty Dataset")
        if public.domain != data.domain:
            raise ValueError(
                f"public dataset's domain differs from the private one: public {public.domain!r}, private {data.domain!r}"
            )
        des = self._designated(data.domain)
        if des:
            if len(des) != 3:
                raise ValueError(f"designated must name 3 attributes, got {des!r}")
        dom = data.domain
        for t in self.transforms:
            dom = t.transform_domain(dom)
        if des:
            check_cliques(dom, [des], "designated")
        check_cliques(dom, [(a,) for a, _ in self.oneway_weights], "oneway_weights")
        # Algorithm 5 scores every pair (mutual information) and measures the designated triple
        check_marginals_fit(dom, [largest(dom, 2), *([des] if des else [])], "marginal")
        check_records(self.synthetic_records, columns=len(data.domain))

    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        public: Dataset | None = None,
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """Steps 1–8 of Algorithm 2 (module docstring) spending ``budget``.

        ``rules`` (no budget): without ``transforms``, compressed through the public encoding
        and Algorithm 4 (:meth:`~.compression.Compression.compress_rules`) they are the
        generator's at step 7 (Private-PGM: structural zeros, the rest enforced on the
        records); with transforms (arbitrary maps of the records) the generator gets none.
        Either way the records are repaired after step 8 where a reversal put them on a
        forbidden cell (:func:`~margsynth.inference.repair.enforce`; ``extras["rules_reversal"]``)."""
        times: dict[str, float] = {}
        clock = Stopwatch()
        # (1) calibrate: Eq. 5.1; the ledger holds rho = 1/sigma^2, spent in two equal rounds
        # (one-way, selected) of 1/(2 sigma^2) each
        ledger, sigma = budget, self.sigma(budget)
        epsilon = budget.epsilon_of_total()  # Algorithm 5's weights depend on the target epsilon
        with timed(times, "measure_oneway"):
            # (2) encode the domain from public information
            if self.encode_from_public:
                enc = Compression(data.domain, {a: public.marginal((a,)) > 0 for a in data.domain.names})
            else:
                enc = Compression(data.domain, {a: np.ones(data.domain[a].size, bool) for a in data.domain.names})
            priv, pub = enc.compress(data), enc.compress(public)
            # (3) transforms
            for t in self.transforms:
                priv, pub = t.forward(priv), t.forward(pub)
            # (4) one-way measurements + compression (Algorithm 1, Algorithm 4)
            wmap = dict(self.oneway_weights)
            log1 = measure_marginals(
                priv,
                [((a,), wmap.get(a, 1.0)) for a in priv.domain.names],
                sigma,
                rng,
                ledger=ledger,
                label="measure 1-way",
            )
            one_way = log1
            if self.compress:
                comp, one_way = compress_domain(priv.domain, log1, self.compress_threshold)
            else:
                comp = Compression(priv.domain, {a: np.ones(priv.domain[a].size, bool) for a in priv.domain.names})
            cpriv, cpub = comp.compress(priv), comp.compress(pub)
        # (5) select on the public data (Algorithm 5)
        with timed(times, "select"):
            des = self._designated(data.domain)
            forced_pairs = list(itertools.combinations(des, 2)) if des else []
            forced_triples = [des] if des else []
            cliques, weights, info = select_public(
                cpub,
                epsilon,
                forced_pairs,
                forced_triples,
                boost=self.boost,
                threshold=self.triple_threshold,
                max_cells=self.max_cells,
            )
        if self.memory_limit_mb is not None:
            cells, mb = junction_tree_size(comp.compressed, cliques)
            if mb > self.memory_limit_mb:
                raise ModelTooLargeError(
                    f"NIST-MST selection needs a {mb:,.0f} MiB model ({cells:,} cells) > memory_limit_mb={self.memory_limit_mb:g}; "
                    "lower max_cells or raise the limit"
                )
        # (6) measure the selection (Algorithm 1)
        with timed(times, "measure_selected"):
            log2 = measure_marginals(
                cpriv, list(zip(cliques, weights)), sigma, rng, ledger=ledger, label="measure selected"
            )
        # (7) GENERATE: by default Private-PGM (Eq. 4.2) and Algorithms 7-8
        with timed(times, "generate"):
            inner = None if self.transforms else comp.compress_rules(enc.compress_rules(rules))
            out = self.generator.generate(comp.compressed, one_way + log2, rng, records=self.synthetic_records, rules=inner)
            synth = out.synthetic
            # (8) reverse: compression, transforms (Algorithm 9), encoding
            synth = comp.reverse(synth, rng)
            doms = [enc.compressed]
            for t in self.transforms[:-1]:
                doms.append(t.transform_domain(doms[-1]))
            for t, dom in zip(reversed(self.transforms), reversed(doms)):
                synth = t.reverse(synth, rng, domain=dom)
            synth = enc.reverse(synth, rng)
            synth, reversal = enforce(synth, rules, rng)
        times["total"] = clock.elapsed()
        return SynthesisResult.from_ledger(
            synth,
            self.name,
            self.parameters(),
            ledger,
            times,
            {
                "sigma": sigma,
                "rho": ledger.total,
                "cliques": cliques,
                "weights": weights,
                "selection": info,
                "designated": des,
                "compression": comp.summary(),
                "compression_map": comp,
                "log_oneway": log1,
                "log_selected": log2,
                **{k: v for k, v in out.extras.items() if k != "model"},
                **({} if reversal is None else {"rules_reversal": reversal}),
            },
            # the records' way back (Algorithm 4 reversed, then the encoding) is saved with the
            # model; the transforms' reverses are code, so a run with transforms keeps none
            sampler=None if self.transforms else pgm_sampler(out.extras, comp, enc, rules=rules),
        )
