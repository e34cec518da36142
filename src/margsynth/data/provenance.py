"""Which data a run actually used: real (verified files) or the offline surrogate.

Every loader calls :func:`record`. Within a process, :func:`used` and
:func:`surrogate_used` answer; when ``$MARGSYNTH_PROVENANCE_FILE`` is set (the
notebook runner sets it per notebook), each record is also appended to that
file as a JSON line, so the run manifest can say what each notebook read.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

__all__ = ["SurrogateDataWarning", "record", "surrogate_used", "used", "warn_surrogate"]

_used: dict[str, dict] = {}
_warned: set[str] = set()


class SurrogateDataWarning(UserWarning):
    """Real data could not be fetched; a deterministic surrogate is used instead."""


def record(name: str, source: str, files: dict[str, str] | None = None) -> None:
    if source not in ("real", "surrogate"):
        raise ValueError(f"provenance source must be 'real' or 'surrogate', got {source!r}")
    entry = {"dataset": name, "source": source, "sha256": dict(files or {})}
    if _used.get(name) == entry:
        return
    _used[name] = entry
    path = os.environ.get("MARGSYNTH_PROVENANCE_FILE")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")


def warn_surrogate(name: str, reason: str) -> None:
    """Say loudly, once per process and dataset, that a surrogate replaces real data."""
    if name in _warned:
        return
    _warned.add(name)
    msg = (
        f"margsynth: real data for {name!r} is unavailable ({reason}); using a DETERMINISTIC SURROGATE with the "
        "same schema. Figures and tables made from it are marked as such. Fetch the data with "
        "`margsynth data fetch` (or set MARGSYNTH_DATA_MIRROR) to reproduce the papers."
    )
    print("\n" + "!" * 78 + "\n" + msg + "\n" + "!" * 78, file=sys.stderr)
    warnings.warn(msg, SurrogateDataWarning, stacklevel=3)


def used() -> dict[str, dict]:
    return {k: dict(v) for k, v in _used.items()}


def surrogate_used() -> bool:
    return any(v["source"] == "surrogate" for v in _used.values())
