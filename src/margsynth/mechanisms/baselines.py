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

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..privacy import BudgetLedger, measure_marginals
from .base import (
    NO_RNG,
    SynthesisResult,
    check_conversion,
    check_generator,
    check_positive_int,
    check_records,
    check_run_inputs,
)
from .generators import Generator, PGMGenerator
from .sampler import pgm_sampler

__all__ = ["Independent"]


@dataclass(frozen=True)
class Independent:
    """Independent one-way marginals (baseline). ``conversion`` as in :class:`~.mst.MST`;
    ``generator``: ``None`` is ``PGMGenerator(iters=iters)`` (:mod:`.generators`)."""

    conversion: str = "cks"
    iters: int = 1000
    synthetic_records: int | None = None
    generator: Generator | None = None

    name = "independent"

    def __post_init__(self) -> None:
        check_conversion(self.conversion)
        check_positive_int("iters", self.iters)
        check_records(self.synthetic_records)
        check_generator(self.generator)

    @property
    def generator_(self) -> Generator:
        """The generator GENERATE uses: ``generator``, or Private-PGM with ``iters``."""
        return PGMGenerator(iters=self.iters) if self.generator is None else self.generator

    def validate(
        self, data: Dataset, epsilon: float, delta: float, *, rng: Any = NO_RNG, **_: object
    ) -> None:
        """Every check of :meth:`run`, before any noise (``ValueError`` on bad input)."""
        check_run_inputs(data, epsilon, delta, rng)
        check_records(self.synthetic_records, columns=len(data.domain))

    def run(
        self, data: Dataset, epsilon: float, delta: float, rng: np.random.Generator, **kw: object
    ) -> SynthesisResult:
        self.validate(data, epsilon, delta, rng=rng, **kw)
        t0 = time.perf_counter()
        ledger = BudgetLedger.from_dp(epsilon, delta, conversion=self.conversion)
        sigma = math.sqrt(1.0 / (2.0 * ledger.total))
        # SELECT: every one-way marginal (no budget). MEASURE: all of it on them.
        log = measure_marginals(
            data, [((a,), 1.0) for a in data.domain.names], sigma, rng, ledger=ledger, label="measure 1-way"
        )
        # GENERATE: by default Private-PGM's independence model, Algorithms 7-8
        out = self.generator_.generate(data.domain, log, rng, records=self.synthetic_records)
        params = {**asdict(self), "generator": {"name": self.generator_.name, **asdict(self.generator_)}}
        return SynthesisResult.from_ledger(
            out.synthetic, self.name, params, ledger, {"total": time.perf_counter() - t0},
            {"rho": ledger.total, "sigma": sigma, **{k: v for k, v in out.extras.items() if k != "model"}},
            sampler=pgm_sampler(out.extras),
        )  # fmt: skip
