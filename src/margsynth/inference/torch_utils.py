"""Torch device and thread helpers: the one home of the rules every torch user in margsynth
follows (PrivPGD's generator, and the PrivPGD, RAP and GEM mechanisms).

* :func:`resolve_device` — ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; a requested GPU that is
  absent is a ``ValueError``, never a silent CPU fallback.
* :func:`with_torch_threads` — run a function with ``torch.set_num_threads(threads)``,
  restoring the previous count afterwards (``None`` leaves it). The mechanisms default to
  one thread: their kernels are memory-bound or serial (prefix sums, scatter-adds), and on
  a shared 2-core machine extra threads only contend.

torch is optional for the package: it is imported inside the functions, so a mechanism can
import these helpers at module top without loading torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

__all__ = ["resolve_device", "with_torch_threads"]

T = TypeVar("T")


def resolve_device(device: Any) -> torch.device:
    """``torch.device`` for ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (or a ``torch.device``);
    ``ValueError`` for anything else or for a GPU that is not present (no silent fallback)."""
    import torch  # optional heavy dependency, loaded on first use

    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but no CUDA GPU is available (no silent CPU fallback)")
        dev = torch.device(device)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} requested but only {torch.cuda.device_count()} GPU(s) present")
        return dev
    raise ValueError(f"unknown device {device!r}; expected 'cpu', 'cuda' or 'cuda:N'")


def with_torch_threads(threads: int | None, fn: Callable[[], T]) -> T:
    """``fn()`` with ``torch.set_num_threads(threads)``, the previous count restored afterwards
    (also when ``fn`` raises); ``threads=None`` leaves the count as it is."""
    import torch  # optional heavy dependency, loaded on first use

    old = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return fn()
    finally:
        if threads is not None:
            torch.set_num_threads(old)
