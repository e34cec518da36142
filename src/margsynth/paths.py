"""Where margsynth reads and writes: project root, data cache, figures, results.

The project root is ``$MARGSYNTH_ROOT`` if set, else the nearest folder at or
above the working directory holding margsynth's ``pyproject.toml``, else the
checkout the package was imported from, else the working directory. Data
files go to ``$MARGSYNTH_DATA_DIR`` or ``<root>/data/raw``; results and figures
to ``$MARGSYNTH_RESULTS_DIR`` / ``$MARGSYNTH_FIGURES_DIR`` or ``<root>/results`` and
``<root>/figures``.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_path",
    "cache_dir",
    "data_dir",
    "file_sha256",
    "figures_dir",
    "make_temporary",
    "make_temporary_name",
    "signals_deferred",
    "project_root",
    "results_dir",
    "stale_temporaries",
]

def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks of 1 MiB."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
def signals_deferred():
    """Hold SIGINT and SIGTERM back while a temporary is created and recorded for removal: a
    signal arriving between the two would otherwise leave a file no ``finally`` knows of. The
    handlers are swapped for ones that only note the signal (Python runs handlers in the main
    thread, whichever thread the signal reached), and a noted signal is handed to the original
    handler on exit, its exception raised there. Outside the main thread (where handlers cannot
    be set, and none runs) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[tuple[int, object]] = []

    def note(signum, frame):
        noted.append((signum, frame))

    held = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    held = {s: h for s, h in held.items() if h is not None}  # a handler set outside Python stays
    for s in held:
        signal.signal(s, note)
    try:
        yield
    finally:
        for s, h in held.items():
            signal.signal(s, h)
        if noted:
            signum, frame = noted[0]
            handler = held[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)  # the default action, now


@contextmanager
def atomic_path(target: str | Path, suffix: str | None = None):
    """Yield a temporary path beside ``target``; on success rename it over
    ``target`` (atomic on POSIX), on failure (or Ctrl-C / SIGTERM) delete it. A
    failed write never leaves a half-written file where a good one was. The file
    gets the permissions of the process umask."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = None
    try:
        with signals_deferred():  # created and recorded before a signal can interrupt
            tmp_path = make_temporary(target, suffix)
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path is not None and tmp_path.exists():
            tmp_path.unlink()
