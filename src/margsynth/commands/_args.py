"""Argument types shared by the commands: each refuses a bad value with a message
naming what was expected (argparse adds the option's name)."""

from __future__ import annotations

import argparse
import math

__all__ = [
    "DEFAULT_MEMORY_LIMIT_MB",
    "DELTA_MIN",
    "EPSILON_RANGE",
    "check_budget",
    "count_arg",
    "delta_arg",
    "epsilon_arg",
    "memory_arg",
    "seed_arg",
    "share_arg",
]

# The (ε, δ) the privacy accounting is checked on (zCDP with Prop. 4 or the
# Canonne-Kamath-Steinke conversion, Gaussian DP, NIST-MST's Eq. 5.1): below
# ε = 1e-15 or δ = 1e-300 (subnormal δ) the calibrations stall or fail, and far
# above ε = 1e6 there is no privacy left to account for.
EPSILON_RANGE = (1e-15, 1e6)
DELTA_MIN = 1e-300


def _problem(name: str, value) -> str | None:
    """What is wrong with ``--epsilon``/``--delta`` ``value``, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r} is not a number"
    if name == "epsilon":
        if not (math.isfinite(value) and value > 0):
            return f"epsilon must be a finite number > 0, got {value!r}"
        lo, hi = EPSILON_RANGE
        if not lo <= value <= hi:
            return f"{value!r} is outside the supported range [{lo:g}, {hi:g}] (the privacy accounting is not reliable beyond it)"
        return None
    if not 0 < value < 1:
        return f"delta must be in (0, 1), got {value!r}"
    if value < DELTA_MIN:
        return f"{value!r} is outside the supported range [{DELTA_MIN:g}, 1) (the privacy accounting is not reliable below it)"
    return None


def check_budget(epsilon: float, delta: float) -> None:
    """``ValueError`` naming ``--epsilon``/``--delta`` unless both are inside the supported range."""
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        problem = _problem(name, value)
        if problem:
            raise ValueError(f"--{name}: {problem}")


def _typed(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        problem = _problem(name, value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = name
    return parse


epsilon_arg = _typed("epsilon")
delta_arg = _typed("delta")


def seed_arg(text: str) -> int:
    """A seed for ``numpy.random.default_rng``: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; expected an integer >= 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; expected an integer >= 0")
    return value


def share_arg(text: str) -> float:
    """A share of the privacy budget: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; expected a share in (0, 1)") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not in (0, 1); expected a share of the budget strictly between 0 and 1")
    return value


def count_arg(text: str) -> int:
    """A number of records: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; expected an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1; expected an integer >= 1")
    return value


#: ``--memory-limit``'s default for the help texts: ``margsynth.mechanisms.base.MEMORY_LIMIT_MB``
#: (this module imports no numpy, so it repeats the number; tests/test_cli_startup.py checks
#: that the two agree). The commands pass ``None`` on, and the library uses its own default.
DEFAULT_MEMORY_LIMIT_MB = 4096


def memory_arg(text: str) -> float:
    """A memory limit in MiB: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; expected a number of MiB > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number > 0; expected a number of MiB > 0")
    return value
