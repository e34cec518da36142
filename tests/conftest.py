"""Shared fixtures. The real data come from $MARGSYNTH_DATA_MIRROR (CI: ../shared/data)
or the local cache; tests needing them skip with a reason when neither has them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def mirror() -> Path | None:
    env = os.environ.get("MARGSYNTH_DATA_MIRROR")
    if env and Path(env).is_dir():
        return Path(env)
    return SHARED_MIRROR if SHARED_MIRROR.is_dir() else None


def real_data_available(name: str) -> bool:
    from margsynth.data import is_available

    return is_available(name, mirror=mirror())


@pytest.fixture(scope="session", autouse=True)
def _mirror_env():
    m = mirror()
    if m is not None and not os.environ.get("MARGSYNTH_DATA_MIRROR"):
        os.environ["MARGSYNTH_DATA_MIRROR"] = str(m)
    os.environ.setdefault("MPLBACKEND", "Agg")
    yield


def needs_real(name: str):
    return pytest.mark.skipif(not real_data_available(name), reason=f"real {name} data not available (no mirror or cache)")
