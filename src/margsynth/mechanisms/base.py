"""What every synthetic-data mechanism returns, and the protocol it follows.

A mechanism is a frozen dataclass of hyperparameters with one ``run`` method::

    result = MST().run(data, epsilon=1.0, delta=1e-9, rng=np.random.default_rng(0))

whose body reads SELECT / MEASURE / GENERATE, charges every noisy step to a
budget ledger (``margsynth.privacy``) before drawing noise, and returns a
:class:`SynthesisResult` with the (epsilon, delta) actually spent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..dataset import Dataset

__all__ = ["Mechanism", "SynthesisResult", "check_privacy_params", "check_run_inputs"]


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
        """JSON-able description (the ``--out`` sidecar of ``margsynth synth``)."""
        return {
            "mechanism": self.mechanism,
            "parameters": self.parameters,
            "epsilon_spent": self.epsilon,
            "delta": self.delta,
            "records": len(self.synthetic),
            "ledger": self.ledger,
            "seconds": self.seconds,
        }


class Mechanism(Protocol):
    def run(
        self, data: Dataset, epsilon: float, delta: float, rng: np.random.Generator, **kwargs: Any
    ) -> SynthesisResult: ...


def check_privacy_params(epsilon: float, delta: float) -> None:
    """``ValueError`` unless ``epsilon > 0`` and ``0 < delta < 1`` (both finite)."""
    if not (isinstance(epsilon, (int, float)) and np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and np.isfinite(delta) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def check_run_inputs(data: Dataset | None, epsilon: float, delta: float, rng: np.random.Generator) -> None:
    """The checks every ``run`` makes before anything else (so no noise is drawn on bad
    input): privacy parameters, an explicit ``numpy.random.Generator``, and (unless
    ``data`` is None) a non-empty :class:`Dataset`."""
    check_privacy_params(epsilon, delta)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    if data is not None and (not isinstance(data, Dataset) or len(data) == 0):
        raise ValueError("data must be a non-empty Dataset")
