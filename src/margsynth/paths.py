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
import re
import secrets
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_path",
    "cache_dir",
    "data_dir",
    "figures_dir",
    "make_temporary",
    "make_temporary_name",
    "project_root",
    "results_dir",
    "stale_temporaries",
]

# Temporaries are named ".<target>.margsynth-tmp-<pid>-<random><suffix>", so that the
# ones a killed process left behind can be recognised (their pid is gone) and removed.
_TMP_TAG = ".margsynth-tmp-"
_TMP_RE = re.compile(r"^\..+" + re.escape(_TMP_TAG) + r"(\d+)-[0-9a-f]+")


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


def make_temporary(target: str | Path, suffix: str | None = None) -> Path:
    """Create an empty temporary file beside ``target`` (exclusively) and return its path.

    Unlike ``tempfile.mkstemp`` (always mode 600) the file gets the permissions
    the process umask gives a new file, as ``open(path, "w")`` would."""
    target = Path(target)
    for _ in range(100):
        tmp = target.with_name(make_temporary_name(target, suffix, secrets.token_hex(4)))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"could not create a temporary file beside {target}")  # pragma: no cover


def make_temporary_name(target: str | Path, suffix: str | None = None, token: str = "0" * 8) -> str:
    """The name :func:`make_temporary` gives a temporary beside ``target`` (``token``: its
    random part), e.g. to check up front that the file system can hold it."""
    return f".{Path(target).name}{_TMP_TAG}{os.getpid()}-{token}{suffix or '.part'}"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def stale_temporaries(folder: str | Path, recursive: bool = False) -> list[Path]:
    """Temporaries under ``folder`` left by margsynth processes that no longer run."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    out = []
    for p in folder.rglob(".*") if recursive else folder.glob(".*"):
        m = _TMP_RE.match(p.name)
        if m and p.is_file() and not p.is_symlink() and not _pid_alive(int(m.group(1))):
            out.append(p)
    return sorted(out)


@contextmanager
def atomic_path(target: str | Path, suffix: str | None = None):
    """Yield a temporary path beside ``target``; on success rename it over
    ``target`` (atomic on POSIX), on failure (or Ctrl-C / SIGTERM) delete it. A
    failed write never leaves a half-written file where a good one was. The file
    gets the permissions of the process umask."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = make_temporary(target, suffix)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
