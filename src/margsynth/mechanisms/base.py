"""What every synthetic-data mechanism returns, and the protocol it follows.

A mechanism is a frozen dataclass of hyperparameters with two methods::

    mech = MST()
    mech.validate(data, epsilon=1.0, delta=1e-9)          # all checks, no noise
    result = mech.run(data, epsilon=1.0, delta=1e-9, rng=np.random.default_rng(0))

``validate(data, epsilon, delta, **kw)`` makes every check the run needs — the shared
ones of :func:`check_run_inputs` first, then the mechanism's own (attribute names,
workloads, sizes) — and raises ``ValueError`` naming the argument, its value and what
was expected; it draws no noise and charges nothing. ``run(data, epsilon, delta, rng,
**kw)`` starts with ``self.validate(data, epsilon, delta, rng=rng, **kw)``; its body
reads SELECT / MEASURE / GENERATE, with the split of the budget held in named fields of
the dataclass; it charges every noisy step to a budget ledger (``margsynth.privacy``)
before drawing its noise, and ends with :meth:`SynthesisResult.from_ledger`, which
reports the (epsilon, delta) the ledger says was spent.

The GENERATE step is a pluggable generator object (:mod:`.generators`:
``PGMGenerator``, ``GUMGenerator``, ``PrivPGDGenerator``) that turns one
:class:`~margsynth.privacy.NoisyMarginals` into a synthetic :class:`Dataset`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from ..dataset import Dataset
from ..privacy.accounting import CONVERSIONS

__all__ = [
    "NO_RNG",
    "Mechanism",
    "SynthesisResult",
    "check_conversion",
    "check_positive_int",
    "check_privacy_params",
    "check_run_inputs",
]


@dataclass
class SynthesisResult:
    synthetic: Dataset
    mechanism: str
    parameters: dict[str, Any]
    epsilon: float  # spent, by the ledger's conversion
    delta: float
    ledger: list[dict[str, Any]] = field(default_factory=list)  # one row per charge
    seconds: dict[str, float] = field(default_factory=dict)  # per phase
    extras: dict[str, Any] = field(default_factory=dict)  # selected cliques, model, traces...

    @classmethod
    def from_ledger(
        cls,
        synthetic: Dataset,
        mechanism: str,
        parameters: dict[str, Any],
        ledger: Any,
        seconds: dict[str, float],
        extras: dict[str, Any] | None = None,
    ) -> SynthesisResult:
        """The result of a run whose every noisy step was charged to ``ledger``
        (a :class:`~margsynth.privacy.BudgetLedger`): the (ε, δ) reported are the
        ones the ledger says were spent, its charges become ``ledger`` and its
        summary ``extras["ledger"]``."""
        eps, delta = ledger.spent_dp()
        extras = {**(extras or {}), "ledger": ledger.to_dict()}
        return cls(synthetic, mechanism, parameters, float(eps), float(delta), ledger.records(), seconds, extras)

    def sidecar(self) -> dict[str, Any]:
        """JSON-able description (the ``--out`` sidecar of ``margsynth synth``).

        PGM-based mechanisms put the certificate of their final Private-PGM fit in
        ``extras["estimation"]`` (:func:`~margsynth.inference.pgm.estimation_summary`:
        loss, Frank–Wolfe gap, iterations, method); it is copied here as ``estimation``."""
        out = {
            "mechanism": self.mechanism,
            "parameters": self.parameters,
            "epsilon_spent": self.epsilon,
            "delta": self.delta,
            "records": len(self.synthetic),
            "ledger": self.ledger,
            "seconds": self.seconds,
        }
        if self.extras.get("estimation") is not None:
            out["estimation"] = dict(self.extras["estimation"])
        return out


class Mechanism(Protocol):
    """The mechanism protocol: a frozen dataclass of hyperparameters (its budget split in
    named fields) with :meth:`validate` and :meth:`run` (see the module docstring)."""

    name: ClassVar[str]

    def validate(self, data: Dataset, epsilon: float, delta: float, **kwargs: Any) -> None:
        """Every check :meth:`run` makes, without drawing noise or charging a ledger;
        ``ValueError`` naming the argument, its value and what was expected."""
        ...

    def run(
        self, data: Dataset, epsilon: float, delta: float, rng: np.random.Generator, **kwargs: Any
    ) -> SynthesisResult:
        """``self.validate(...)``, then SELECT / MEASURE / GENERATE, then
        :meth:`SynthesisResult.from_ledger`."""
        ...


def check_privacy_params(epsilon: float, delta: float) -> None:
    """``ValueError`` unless ``epsilon > 0`` and ``0 < delta < 1`` (both finite)."""
    if not (isinstance(epsilon, (int, float)) and np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and np.isfinite(delta) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


#: Default of ``validate(..., rng=NO_RNG)``: no generator given yet (the CLI validates
#: before it makes one); ``run`` always passes its ``rng``, which is then checked.
NO_RNG: Any = object()


def check_run_inputs(
    data: Dataset | None, epsilon: float, delta: float, rng: Any = NO_RNG
) -> None:
    """The checks every mechanism makes before anything else (so no noise is drawn on bad
    input): privacy parameters, an explicit ``numpy.random.Generator`` (when ``rng`` is
    passed: :meth:`Mechanism.validate` called before a run has none yet), and (unless
    ``data`` is None) a non-empty :class:`Dataset`."""
    check_privacy_params(epsilon, delta)
    if rng is not NO_RNG and not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    if data is not None and not isinstance(data, Dataset):
        raise ValueError(f"data must be a non-empty Dataset, got {type(data).__name__}")
    if data is not None and len(data) == 0:
        raise ValueError("data must be a non-empty Dataset, got 0 records")


def check_positive_int(name: str, value: Any) -> int:
    """``value`` as an ``int`` >= 1, else ``ValueError`` naming ``name`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_conversion(conversion: Any) -> str:
    """A zCDP -> (epsilon, delta) conversion name (``"prop4"`` or ``"cks"``, see
    :data:`margsynth.privacy.CONVERSIONS`), else ``ValueError``."""
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
    return conversion
