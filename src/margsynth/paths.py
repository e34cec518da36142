"""Where margsynth reads and writes: project root, data cache, figures, results.

The project root is ``$MARGSYNTH_ROOT`` if set, else the nearest folder at or
above the working directory holding margsynth's ``pyproject.toml``, else the
checkout the package was imported from, else the working directory. Data
files go to ``$MARGSYNTH_DATA_DIR`` or ``<root>/data/raw``; results and figures
to ``$MARGSYNTH_RESULTS_DIR`` / ``$MARGSYNTH_FIGURES_DIR`` or ``<root>/results`` and
``<root>/figures``.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "cache_dir", "data_dir", "figures_dir", "project_root", "results_dir"]


def _is_root(path: Path) -> bool:
    pp = path / "pyproject.toml"
    try:
        return pp.is_file() and 'name = "margsynth"' in pp.read_text()
    except OSError:
        return False


def project_root() -> Path:
    env = os.environ.get("MARGSYNTH_ROOT")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd().resolve()
    for cand in (cwd, *cwd.parents):
        if _is_root(cand):
            return cand
    pkg_root = Path(__file__).resolve().parents[2]
    if _is_root(pkg_root):
        return pkg_root
    return cwd


def data_dir() -> Path:
    env = os.environ.get("MARGSYNTH_DATA_DIR")
    return Path(env).resolve() if env else project_root() / "data" / "raw"


def results_dir() -> Path:
    env = os.environ.get("MARGSYNTH_RESULTS_DIR")
    return Path(env).resolve() if env else project_root() / "results"


def figures_dir() -> Path:
    env = os.environ.get("MARGSYNTH_FIGURES_DIR")
    return Path(env).resolve() if env else project_root() / "figures"


def cache_dir() -> Path:
    env = os.environ.get("MARGSYNTH_CACHE_DIR")
    return Path(env).resolve() if env else results_dir() / "cache"


@contextmanager
def atomic_path(target: str | Path, suffix: str | None = None):
    """Yield a temporary path beside ``target``; on success rename it over
    ``target`` (atomic on POSIX), on failure delete it. A failed write never
    leaves a half-written file where a good one was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or ".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
