"""The ``rules`` metric: per rule (:mod:`margsynth.rules`), the synthetic records that break it.

A mechanism given rules returns records that break none (``extras["rule_violations"]``);
this metric measures any synthetic dataset against a rule set — e.g. one synthesized
without rules, to see what enforcing them changes. It has the metric signature of
:mod:`margsynth.metrics.suite` plus the rules (a keyword), and returns a count per rule
rather than one number; the real data, which obey the rules by definition, are only
checked to share the synthetic data's domain.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dataset import Dataset
from ..rules import RuleSet, as_rules

__all__ = ["rule_violations"]


def rule_violations(
    real: Dataset | None, synth: Dataset, *, rules: RuleSet | Any, rng: np.random.Generator | None = None
) -> dict[str, int]:
    """``{rule name: synthetic records that break it}`` (in the rule set's order; vectorised,
    :meth:`~margsynth.rules.RuleSet.violations`). ``rules`` are checked against the synthetic
    data's domain; ``real`` (may be ``None``) must share it; ``rng`` is unused (the metric is
    deterministic)."""
    if not isinstance(synth, Dataset):
        raise ValueError(f"synthetic data must be a Dataset, got {type(synth).__name__}")
    if real is not None and (not isinstance(real, Dataset) or real.domain.to_dict() != synth.domain.to_dict()):
        raise ValueError("real and synthetic data must share a domain")
    rule_set = as_rules(rules, synth.domain)
    return {} if rule_set is None else rule_set.violations(synth)
