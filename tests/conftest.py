"""Shared fixtures. The real data come only from $MARGSYNTH_DATA_MIRROR (a local mirror
of the data manifest) or the cache ($MARGSYNTH_DATA_DIR); tests needing them skip with a
reason when neither has them. No test reads a path outside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def mirror() -> Path | None:
    env = os.environ.get("MARGSYNTH_DATA_MIRROR")
    if env and Path(env).is_dir():
        return Path(env)
    return None


def real_data_available(name: str) -> bool:
    from margsynth.data import is_available

    return is_available(name, mirror=mirror())


@pytest.fixture(scope="session", autouse=True)
def _mirror_env():
    os.environ.setdefault("MPLBACKEND", "Agg")
    yield


def needs_real(name: str):
    return pytest.mark.skipif(not real_data_available(name), reason=f"real {name} data not available (no mirror or cache)")
