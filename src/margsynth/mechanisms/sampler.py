"""The fitted generative model a run keeps in memory, to draw more records at no privacy cost.

A run of a mechanism that generates with Private-PGM (registered with ``pgm=True``:
:func:`pgm_mechanisms`) ends with a fitted graphical model ``P_theta`` (Fact 1 and Eq. 4.2
of McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and general approach
to differentially private synthetic data", JPC 2021, arXiv:2108.04978; McKenna, Sheldon &
Miklau, "Graphical-model based estimation and inference for differential privacy", ICML
2019, arXiv:1901.09136) and draws its records from it by Algorithms 7-8 of the first
paper, then maps them back to the data's domain (Algorithm 4 reversed, §5 Step 8, when the
mechanism compressed the domain). The model is a function of the noisy measurements only,
so drawing more records from it is post-processing: it costs no privacy budget beyond
what the run spent.

:class:`PGMSampler` is that model plus its reversal steps: a run keeps it as
:attr:`SynthesisResult.sampler <margsynth.mechanisms.base.SynthesisResult>` (``None``
for mechanisms that keep no Private-PGM model: GUM, PrivPGD), built by
:func:`pgm_sampler` from the :class:`~.generators.PGMGenerator`'s output;
:meth:`PGMSampler.sample` repeats the run's GENERATE step exactly (same arithmetic, same
order of draws from ``rng``), rules included: a run given rules (:mod:`margsynth.rules`)
keeps them in its sampler, whose records obey them as the run's did.
:mod:`margsynth.model_file` writes it to a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..inference.pgm import GraphicalModel
from ..inference.repair import enforce
from ..rules import RuleSet, as_rules
from . import registry
from .base import check_records
from .compression import Compression
from .generators import PGMGenerator, pgm_enforce

__all__ = ["PGMSampler", "pgm_mechanisms", "pgm_sampler", "unsavable_reason"]


@dataclass(frozen=True, eq=False)
class PGMSampler:
    """A fitted Private-PGM model and the steps that map its records to the data's domain.

    ``model`` is over the domain the mechanism fitted on (compressed, for MST and
    NIST-MST); ``reverse`` holds the :class:`~.compression.Compression` steps applied after
    Algorithm 8, in order (each step's ``compressed`` domain is the previous step's output
    domain). :meth:`sample` is the run's GENERATE step: Algorithms 7-8, then each reversal.
    ``rules`` (over :attr:`domain`, ``None``: none): the records obey them, enforced as the
    run enforced them — over the model's domain by :func:`~.generators.pgm_enforce` (the
    rules compressed through the reversal steps), and after the reversal by
    :func:`~margsynth.inference.repair.enforce` (after MST's one step, first redrawing the
    merged values within their merged set: :meth:`~.compression.Compression.log_reversal`).
    """

    model: GraphicalModel
    reverse: tuple[Compression, ...] = ()
    rules: RuleSet | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, GraphicalModel):
            raise ValueError(f"model must be a GraphicalModel, got {type(self.model).__name__}")
        steps = tuple(self.reverse)
        dom = self.model.domain
        for j, c in enumerate(steps):
            if not isinstance(c, Compression):
                raise ValueError(f"reverse step {j} must be a Compression, got {type(c).__name__}")
            if c.compressed != dom:
                raise ValueError(f"reverse step {j} starts from {c.compressed!r}, the previous step ends in {dom!r}")
            dom = c.original
        object.__setattr__(self, "reverse", steps)
        object.__setattr__(self, "rules", as_rules(self.rules, dom))

    @property
    def domain(self) -> Domain:
        """The domain of the records :meth:`sample` returns (the data's domain)."""
        return self.reverse[-1].original if self.reverse else self.model.domain

    @property
    def total(self) -> float:
        """The model's (noisy) number of records ``N``."""
        return float(self.model.total)

    def sample(self, n: int, rng: np.random.Generator) -> Dataset:
        """``n`` records over :attr:`domain`: Algorithms 7-8 on the model, then the reversal
        steps, every draw from ``rng`` (same ``rng`` state, same records)."""
        n = check_records(n, "n", columns=len(self.domain))
        if n is None:
            raise ValueError("n must be a positive integer, got None")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
        synth = self.model.synthetic_data(n, rng=rng)
        if self.rules is not None:
            synth, _ = pgm_enforce(self.model, synth, self.model_rules(), rng)
        for c in self.reverse:
            synth = c.reverse(synth, rng)
        if self.rules is not None and self.reverse:  # one step (MST): merged values moved within their merged set
            one = self.reverse[0].log_reversal if len(self.reverse) == 1 else None
            synth, _ = enforce(synth, self.rules, rng, conditional=one)
        return synth

    def model_rules(self) -> RuleSet | None:
        """:attr:`rules` over the model's domain (compressed through the reversal steps)."""
        rules = self.rules
        for c in reversed(self.reverse):
            rules = c.compress_rules(rules)
        return rules


def pgm_sampler(extras: Mapping[str, Any], *reverse: Compression, rules: RuleSet | None = None) -> PGMSampler | None:
    """The :class:`PGMSampler` of a generator's output (its ``extras["model"]``, present when
    the generator was Private-PGM) followed by ``reverse``, keeping the run's ``rules``;
    ``None`` when there is no model."""
    model = extras.get("model")
    if not isinstance(model, GraphicalModel):
        return None
    return PGMSampler(model, tuple(reverse), rules)


def unsavable_reason(mechanism: Any) -> str | None:
    """Why a run of ``mechanism`` (an instance) will keep no :class:`PGMSampler`, or ``None``
    when it will: it must generate with Private-PGM (a
    :class:`~.generators.PGMGenerator`) and have no record transforms (NIST-MST's
    ``transforms``, whose reverses are arbitrary code and are not saved)."""
    gen = getattr(mechanism, "generator_", None)
    if gen is None:
        gen = getattr(mechanism, "generator", None)
    if not isinstance(gen, PGMGenerator):
        what = getattr(gen, "name", None) or type(mechanism).__name__
        return f"it generates with {what}, not with Private-PGM"
    if getattr(mechanism, "transforms", ()):
        return "its record transforms cannot be saved"
    return None


def pgm_mechanisms() -> tuple[str, ...]:
    """The registered mechanisms that generate with Private-PGM (``register(..., pgm=True)``), in
    registration order: their runs keep a :class:`PGMSampler` (:func:`unsavable_reason` is
    ``None`` for them, unless a run is given record transforms or another generator)."""
    return tuple(name for name in registry.available() if registry.spec(name).pgm)
