"""MST — §6 of the NIST-MST/MST paper (Algorithm 6 + appendix "Noise calibration for MST").

The mechanism (the steps of Algorithm 2 without the census-specific ones):

1. **Calibrate**: the largest zCDP ρ that is (ε, δ)-DP (appendix; Prop. 4, or the
   Canonne–Kamath–Steinke conversion the authors' code uses), split into three named
   shares, 1/3 each by default: one-way measurements, selection, pair measurements.
2. **MEASURE one-way**: every 1-way marginal by Algorithm 1 with
   ``σ = sqrt(1 / (2 ρ_1))`` (= ``sqrt(3 / (2ρ))`` for the default split).
3. **Compress**: Algorithm 4 (:mod:`.compression`), no budget.
4. **SELECT**: Algorithm 6 — Private-PGM estimates every 2-way marginal from the
   one-way log (an independence model, footnote 7); the quality of pair ``(i, j)`` is
   ``q_ij(D) = ||M_ij(D) - M̂_ij||_1`` (sensitivity 1); a private Kruskal adds, ``r-1``
   times, the pair chosen by the exponential mechanism with ``ε = sqrt(8 ρ_2 / (r-1))``
   among the pairs joining two connected components (Theorem 3). Optional initial
   pairs are always kept.
5. **MEASURE pairs**: the selected pairs (plus optional extra cliques, e.g. §7's
   SEX × CITY × INCWAGE_A triple) by Algorithm 1 with ``σ = sqrt(1 / (2 ρ_3))``.
6. **GENERATE**: Private-PGM (Eq. 4.2) on both logs, synthetic records by
   Algorithms 7–8, then the compression reversed (§5 Step 8).

   ``generator=GUMGenerator()`` (registered as ``mst-gum``) replaces step 6 by PrivSyn's
   generator (Zhang et al., USENIX Security 2021): the noisy marginals of both logs (the
   one-way ones re-expressed over the compressed domain, merged values summed) are made
   consistent by PrivSyn §4.3 (weights ∝ 1/(σ² g)), and GUM (§5.2,
   :mod:`margsynth.inference.gum`) edits a random dataset until its marginals match them;
   the compression is then reversed as above. Measurements, selection and ledger are
   exactly those of the default (:class:`~.generators.PGMGenerator`) for the same
   ``rng``: generation is post-processing (:mod:`.generators`).

Every noisy step is charged to a :class:`~margsynth.privacy.BudgetLedger` before its noise
is drawn; the result reports the (ε, δ) the ledger says was spent.

Rules (``run(..., rules=...)``, :mod:`margsynth.rules`; public, no budget) act at step 6:
compressed like the domain (a merged cell is allowed when some original cell in it is,
:meth:`~.compression.Compression.compress_rules`), they are the generator's (Private-PGM:
structural zeros, the rest enforced on the records; GUM: allowed-cell targets and repair),
and records whose merged value ``∅`` is spread back onto a forbidden original value are
repaired after the reversal (:func:`~margsynth.inference.repair.enforce`): first their
merged values are drawn again within the merged set, evenly as the reversal spreads them,
among the values the rules allow (:func:`~margsynth.inference.repair.redraw` with
:meth:`~.compression.Compression.log_reversal`: the compressed record is unchanged); a
record no such draw fixes has the attributes of its broken rules redrawn given the rest,
weighted by the records' one-way marginals (``extras["rules_reversal"]``). Selection and
measurements do not change.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from ..dataset import Dataset
from ..domain import Domain
from ..inference.pgm import GraphicalModel, estimate, from_noisy_marginals
from ..inference.repair import enforce
from ..privacy import BudgetLedger, NoisyMarginals, exponential_mechanism, measure_marginals
from ..privacy.accounting import exponential_epsilon, gaussian_sigma
from ..rules import RuleSet
from ..timing import Stopwatch, timed
from .base import (
    Mechanism,
    SynthesisResult,
    check_conversion,
    check_generator,
    check_marginals_fit,
    check_positive_int,
    check_records,
    largest,
)
from .compression import Compression, compress_domain
from .generators import Generator, PGMGenerator
from .sampler import pgm_sampler

__all__ = ["MST", "check_cliques", "pair_errors", "private_kruskal"]


def check_cliques(domain: Domain, cliques: Sequence[Sequence[str]], what: str) -> tuple[tuple[str, ...], ...]:
    """Validate attribute sets against ``domain`` (``ValueError`` naming unknown attributes)."""
    out = []
    for i, c in enumerate(cliques):
        if isinstance(c, str):
            c = (c,)
        c = tuple(c)
        if not c:
            raise ValueError(f"{what}[{i}] is empty")
        out.append(domain.check_attrs(c, f"{what}[{i}]"))
    return tuple(out)


def pair_errors(data: Dataset, model: GraphicalModel, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """Algorithm 6 steps 1–2: ``q_ij = ||M_ij(D) - M̂_ij||_1`` for each pair, ``M̂`` from the
    Private-PGM model fitted to the one-way log (sensitivity 1 in ``D``)."""
    one = {a: model.project((a,)) for a in data.domain.names}
    total = model.total
    out = np.empty(len(pairs))
    tables = data.marginals(pairs)  # every pair in one pass over the data
    for k, (a, b) in enumerate(pairs):
        est = np.outer(one[a], one[b]) / total if _independent(model, a, b) else model.project((a, b))
        out[k] = np.abs(tables[k] - est).sum()
    return out


def _independent(model: GraphicalModel, a: str, b: str) -> bool:
    """True when no junction-tree clique links ``a`` and ``b`` through a path (singleton-only model)."""
    return all(len(c) == 1 for c in model.cliques)


def private_kruskal(
    names: Sequence[str],
    candidates: Sequence[tuple[str, str]],
    scores: np.ndarray,
    rho: float,
    rng: np.random.Generator,
    ledger: BudgetLedger,
    initial: Sequence[tuple[str, ...]] = (),
    label: str = "select",
) -> list[tuple[str, str]]:
    """Algorithm 6 steps 3–9: a differentially private Kruskal.

    Starting from the graph of the ``initial`` cliques, repeat ``r-1`` times (``r`` its
    number of connected components): among the candidate pairs joining two components,
    pick one with the exponential mechanism (Definition 4, Prop. 2) at
    ``ε = sqrt(8ρ/(r-1))`` on ``scores`` (sensitivity 1), and join its components.
    Each pick is charged ``ε²/8 = ρ/(r-1)`` zCDP before its noise is drawn (Theorem 3).
    Returns the selected pairs in order.
    """
    ds = DisjointSet(names)
    for c in initial:
        for a, b in zip(c, c[1:]):
            ds.merge(a, b)
    r = ds.n_subsets
    if r <= 1:
        return []
    eps = exponential_epsilon(rho / (r - 1))  # sqrt(8 rho / (r-1))
    cand = list(candidates)
    sc = np.asarray(scores, dtype=np.float64)
    chosen: list[tuple[str, str]] = []
    for step in range(r - 1):
        keep = [k for k, (a, b) in enumerate(cand) if not ds.connected(a, b)]
        cand = [cand[k] for k in keep]
        sc = sc[keep]
        idx = exponential_mechanism(
            sc, epsilon=eps, sensitivity=1.0, rng=rng, ledger=ledger, label=f"{label} {step + 1}/{r - 1}"
        )
        a, b = cand[idx]
        ds.merge(a, b)
        chosen.append((a, b))
    return chosen


def _final_pgm() -> Generator:
    """MST's step 6: Private-PGM with the authors' 5,000 iterations."""
    return PGMGenerator(iters=5000)


@dataclass(frozen=True)
class MST(Mechanism):
    """MST (§6, Algorithm 6; budget split of the appendix as named fields).

    Parameters
    ----------
    oneway_share, select_share, measure_share:
        Shares of the zCDP budget ρ for the one-way measurements (step 4 of Algorithm 2),
        the selection (Algorithm 6) and the pair measurements (step 6): 1/3 each in the
        paper. They must sum to 1.
    conversion:
        zCDP → (ε, δ) conversion used to find ρ: ``"prop4"`` (Prop. 4, as the paper's
        appendix states) or ``"cks"`` (Canonne–Kamath–Steinke 2020, as the authors'
        ``cdp2adp.cdp_rho`` does; about 25 % more ρ at ε = 1, δ = 1e-9).
    compress:
        Apply Algorithm 4 (threshold ``compress_threshold`` σ).
    select_iters:
        Private-PGM iterations for the selection model (authors: 1000).
    initial_cliques:
        Pairs always measured; Algorithm 6 builds the spanning tree around them.
    extra_cliques:
        Further attribute sets measured with the pairs (e.g. a designated triple, §7).
    clique_weights:
        ``((clique, weight), ...)`` relative Algorithm 1 weights of step 6 (default 1).
    synthetic_records:
        Number of synthetic records (default: the generator's estimate — Private-PGM's
        model total, or the total of GUM's consistent marginals).
    generator:
        The GENERATE step (:mod:`.generators`): by default the paper's step 6,
        ``PGMGenerator(iters=5000)`` (Private-PGM with the authors' 5,000 iterations +
        Algorithms 7–8); e.g. ``GUMGenerator()`` (PrivSyn §4.3 consistency + §5.2 GUM on
        the same noisy marginals; module docstring). Same measurements and ledger either way.
    """

    oneway_share: float = 1 / 3
    select_share: float = 1 / 3
    measure_share: float = 1 / 3
    conversion: str = "cks"
    compress: bool = True
    compress_threshold: float = 3.0
    select_iters: int = 1000
    initial_cliques: tuple[tuple[str, ...], ...] = ()
    extra_cliques: tuple[tuple[str, ...], ...] = ()
    clique_weights: tuple[tuple[tuple[str, ...], float], ...] = ()
    synthetic_records: int | None = None
    generator: Generator = field(default_factory=_final_pgm)

    name = "mst"

    def __post_init__(self) -> None:
        shares = (self.oneway_share, self.select_share, self.measure_share)
        if any(not (isinstance(s, (int, float)) and math.isfinite(s) and s > 0) for s in shares):
            raise ValueError(f"budget shares must be finite and > 0, got {shares}")
        if not math.isclose(sum(shares), 1.0, rel_tol=1e-9):
            raise ValueError(f"budget shares must sum to 1, got {shares} (sum {sum(shares)})")
        check_positive_int("select_iters", self.select_iters)
        check_conversion(self.conversion)
        check_generator(self.generator, allow_none=False)
        check_records(self.synthetic_records)
        object.__setattr__(self, "initial_cliques", tuple(tuple(c) for c in self.initial_cliques))
        object.__setattr__(self, "extra_cliques", tuple(tuple(c) for c in self.extra_cliques))
        object.__setattr__(self, "clique_weights", tuple((tuple(c), float(w)) for c, w in self.clique_weights))

    def parameters(self) -> dict:
        p = asdict(self)
        p["generator"] = {"name": self.generator.name, **asdict(self.generator)}
        p["initial_cliques"] = [list(c) for c in self.initial_cliques]
        p["extra_cliques"] = [list(c) for c in self.extra_cliques]
        p["clique_weights"] = [[list(c), w] for c, w in self.clique_weights]
        return p

    def check(self, data: Dataset, budget: BudgetLedger, **_: object) -> None:
        """MST's own checks (attributes, cliques, sizes), before any noise."""
        if len(data.domain) < 2:
            raise ValueError(f"MST needs at least 2 attributes, domain has {len(data.domain)}")
        init = check_cliques(data.domain, self.initial_cliques, "initial_cliques")
        for c in init:
            if len(c) != 2:
                raise ValueError(f"initial_cliques must be attribute pairs, got {c}")
        check_cliques(data.domain, self.extra_cliques, "extra_cliques")
        check_cliques(data.domain, [c for c, _ in self.clique_weights], "clique_weights")
        # Algorithm 6 scores every pair; the extra cliques are measured
        check_marginals_fit(data.domain, [largest(data.domain, 2), *self.extra_cliques], "marginal")
        check_records(self.synthetic_records, columns=len(data.domain))

    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """Steps 1–6 (module docstring) spending ``budget``; ``rules`` at step 6."""
        times: dict[str, float] = {}
        clock = Stopwatch()
        ledger = budget
        rho = ledger.total
        sigma1 = gaussian_sigma(ledger.portion(self.oneway_share))
        rho_select = ledger.portion(self.select_share)
        sigma2 = gaussian_sigma(ledger.portion(self.measure_share))

        # MEASURE one-way marginals (Algorithm 1) and compress the domain (Algorithm 4)
        with timed(times, "measure_oneway"):
            log1, comp, one_way = self._measure_oneway(data, sigma1, rng, ledger)
            cdata = comp.compress(data)

        # SELECT (Algorithm 6)
        with timed(times, "select"):
            pairs = self.select(cdata, one_way, rho_select, rng, ledger)

        # MEASURE the selected pairs (+ initial and extra cliques), Algorithm 1
        with timed(times, "measure_selected"):
            cliques = list(dict.fromkeys([*self.initial_cliques, *pairs, *self.extra_cliques]))
            wmap = dict(self.clique_weights)
            log2 = measure_marginals(
                cdata, [(c, wmap.get(c, 1.0)) for c in cliques], sigma2, rng, ledger=ledger, label="measure selected"
            )

        # GENERATE (post-processing, :mod:`.generators`) over the compressed domain, then
        # reverse Algorithm 4 (§5 Step 8)
        with timed(times, "generate"):
            gen = self.generator
            out = gen.generate(
                comp.compressed, one_way + log2, rng, records=self.synthetic_records, rules=comp.compress_rules(rules)
            )
            synth = comp.reverse(out.synthetic, rng)
            synth, reversal = enforce(synth, rules, rng, conditional=comp.log_reversal)
        times["total"] = clock.elapsed()
        return SynthesisResult.from_ledger(
            synth,
            self.name if isinstance(gen, PGMGenerator) else f"{self.name}-{gen.name}",
            self.parameters(),
            ledger,
            times,
            {
                "rho": rho,
                "sigma_oneway": sigma1,
                "sigma_selected": sigma2,
                "selected": pairs,
                "cliques": cliques,
                "compression": comp.summary(),
                "compression_map": comp,
                "log_oneway": log1,
                "log_selected": log2,
                **{k: v for k, v in out.extras.items() if k != "model"},
                **({} if reversal is None else {"rules_reversal": reversal}),
            },
            sampler=pgm_sampler(out.extras, comp, rules=rules),
        )

    def _measure_oneway(
        self, data: Dataset, sigma: float, rng: np.random.Generator, ledger: BudgetLedger
    ) -> tuple[NoisyMarginals, Compression, NoisyMarginals]:
        """Step 2 (every one-way marginal by Algorithm 1 at ``sigma``) and step 3 (Algorithm 4,
        when ``compress``): the one-way log, the compression and the log over the compressed
        domain."""
        names = data.domain.names
        log1 = measure_marginals(data, [((a,), 1.0) for a in names], sigma, rng, ledger=ledger, label="measure 1-way")
        if self.compress:
            comp, one_way = compress_domain(data.domain, log1, self.compress_threshold)
            return log1, comp, one_way
        return log1, Compression(data.domain, {a: np.ones(data.domain[a].size, bool) for a in names}), log1

    def select_only(
        self, data: Dataset, epsilon: float, delta: float, rng: np.random.Generator
    ) -> list[tuple[str, str]]:
        """Steps 1–4 only (calibrate, one-way measurements, compression, Algorithm 6): the pairs
        MST would measure — what the paper's selection-quality table logs. Spends the
        one-way and selection shares of the budget."""
        self.validate(data, epsilon, delta, rng=rng)
        ledger = self.budget(epsilon, delta)
        sigma1 = gaussian_sigma(ledger.portion(self.oneway_share))
        _, comp, one_way = self._measure_oneway(data, sigma1, rng, ledger)
        return self.select(comp.compress(data), one_way, ledger.portion(self.select_share), rng, ledger)

    def select(
        self,
        cdata: Dataset,
        one_way: NoisyMarginals,
        rho: float,
        rng: np.random.Generator,
        ledger: BudgetLedger,
    ) -> list[tuple[str, str]]:
        """Algorithm 6 on the (compressed) data: independence model from the one-way log,
        L1 pair errors, private Kruskal around ``initial_cliques``."""
        model = estimate(cdata.domain, from_noisy_marginals(one_way), iters=self.select_iters)
        names = cdata.domain.names
        candidates = list(itertools.combinations(names, 2))
        scores = pair_errors(cdata, model, candidates)
        return private_kruskal(names, candidates, scores, rho, rng, ledger, initial=self.initial_cliques)
