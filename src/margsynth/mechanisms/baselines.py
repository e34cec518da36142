"""Baselines: the independent-marginals mechanism.

``Independent`` measures every one-way marginal with the whole budget (Algorithm 1
of the NIST-MST/MST paper, Gaussian noise ``σ = sqrt(1/(2ρ))``, equal weights, ρ the
largest zCDP budget that is (ε, δ)-DP), fits the independence model with Private-PGM
(Eq. 4.2 with one-way cliques only: each attribute's marginal is the non-negative
least-squares fit of its noisy counts) and generates records by Algorithms 7–8. It
is the "measure nothing about correlations" reference point of notebook 04's Table-5
analogue: any selection worth its budget must beat it on 2- and 3-way scores.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..dataset import Dataset
from ..privacy import BudgetLedger, measure_marginals
from ..privacy.accounting import gaussian_sigma
from ..rules import RuleSet
from ..timing import Stopwatch
from .base import Mechanism, SynthesisResult, check_conversion, check_generator, check_records
from .generators import Generator, PGMGenerator
from .sampler import pgm_sampler

__all__ = ["Independent"]


#: The cells the rules' cliques may add to the independence model (``PGMGenerator.rule_slack_cells``).
#: Its tree is one clique per attribute, so Private-PGM's default slack (made for MST's trees)
#: would leave most rules to the generator's redraw, which keeps the one-way marginals but
#: not the rules' joint shape (docs/notes/rules.md, "The slack and Independent").
INDEPENDENT_RULE_SLACK_CELLS = 1 << 16


def _independence_pgm() -> Generator:
    """Private-PGM's independence model, 1,000 iterations, room for the rules' cliques."""
    return PGMGenerator(iters=1000, rule_slack_cells=INDEPENDENT_RULE_SLACK_CELLS)


@dataclass(frozen=True)
class Independent(Mechanism):
    """Independent one-way marginals (baseline). ``conversion`` as in :class:`~.mst.MST`;
    ``generator``: by default ``PGMGenerator(iters=1000)`` (:mod:`.generators`)."""

    conversion: str = "cks"
    synthetic_records: int | None = None
    generator: Generator = field(default_factory=_independence_pgm)

    name = "independent"

    def __post_init__(self) -> None:
        check_conversion(self.conversion)
        check_records(self.synthetic_records)
        check_generator(self.generator, allow_none=False)

    def check(self, data: Dataset, budget: BudgetLedger, **_: object) -> None:
        """The record count fits memory (:func:`~.base.check_records`), before any noise."""
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
        """Every one-way marginal measured with the whole ``budget``, then the generator;
        ``rules`` are the generator's (Private-PGM: the independence model plus one clique
        per rule as structural zeros, :func:`~margsynth.inference.pgm.estimate`; no budget)."""
        clock = Stopwatch()
        ledger = budget
        sigma = gaussian_sigma(ledger.total)
        # SELECT: every one-way marginal (no budget). MEASURE: all of it on them.
        log = measure_marginals(
            data, [((a,), 1.0) for a in data.domain.names], sigma, rng, ledger=ledger, label="measure 1-way"
        )
        # GENERATE: by default Private-PGM's independence model, Algorithms 7-8
        out = self.generator.generate(data.domain, log, rng, records=self.synthetic_records, rules=rules)
        params = {**asdict(self), "generator": {"name": self.generator.name, **asdict(self.generator)}}
        return SynthesisResult.from_ledger(
            out.synthetic, self.name, params, ledger, {"total": clock.elapsed()},
            {"rho": ledger.total, "sigma": sigma, **{k: v for k, v in out.extras.items() if k != "model"}},
            sampler=pgm_sampler(out.extras, rules=rules),
        )  # fmt: skip
