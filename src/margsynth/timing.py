"""Phase times: the one place wall-clock (and CPU) time is read.

Every run reports seconds per phase (a mechanism's SELECT / MEASURE / GENERATE, an
estimator's setup and iterations, a solver's build and solve). They are taken with
:func:`timed`, a context manager that adds the phase's elapsed time to a dict, and
:class:`Stopwatch`, the time since a start::

    seconds: dict[str, float] = {}
    clock = Stopwatch()
    with timed(seconds, "select"):
        ...
    with timed(seconds, "estimate"):   # a second use of a key adds to it
        ...
    seconds["total"] = clock.elapsed()

``timed(..., cpu=True)`` also records the process's CPU time under ``"<key>_cpu"``.
Timings are reported, never used to decide anything: the same seed gives the same
bytes whatever the clock says.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

__all__ = ["Stopwatch", "timed"]


class Stopwatch:
    """Wall-clock (and CPU) seconds since construction or the last :meth:`restart`."""

    __slots__ = ("_cpu", "_wall")

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Start counting again from now."""
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def elapsed(self) -> float:
        """Wall-clock seconds since the start."""
        return time.perf_counter() - self._wall

    def cpu(self) -> float:
        """CPU seconds of this process (all threads) since the start."""
        return time.process_time() - self._cpu


@contextmanager
def timed(seconds: MutableMapping[str, float], key: str, *, cpu: bool = False) -> Iterator[Stopwatch]:
    """Add the wall-clock seconds of the ``with`` block to ``seconds[key]`` (created at 0),
    and with ``cpu=True`` its CPU seconds to ``seconds[key + "_cpu"]``; the time is added
    also when the block raises. Yields the block's :class:`Stopwatch`."""
    clock = Stopwatch()
    try:
        yield clock
    finally:
        seconds[key] = seconds.get(key, 0.0) + clock.elapsed()
        if cpu:
            seconds[f"{key}_cpu"] = seconds.get(f"{key}_cpu", 0.0) + clock.cpu()
