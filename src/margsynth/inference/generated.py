"""What a generator (the GENERATE step of a mechanism) returns.

Generators live next to their engines (Private-PGM and GUM in
:mod:`margsynth.mechanisms.generators`, PrivPGD in :mod:`margsynth.inference.privpgd`);
they share this result type so that a mechanism can take any of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..dataset import Dataset

__all__ = ["Generated"]


@dataclass
class Generated:
    """The synthetic records, what the generator wants reported (``extras``: model
    statistics, convergence traces, …) and its seconds per phase."""

    synthetic: Dataset
    extras: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
