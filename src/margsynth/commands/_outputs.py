"""Writing a command's output as one unit: a CSV and its JSON sidecar.

:func:`check_out` refuses, before anything runs, an ``--out`` that is a FIFO,
a device, a symlink, a folder (or names one, ``newdir/``), an input itself, or
whose sidecar ``PATH.json`` would overwrite an input. :class:`OutputPair`
then creates both temporaries up front (so an unwritable location is found
before any noise is drawn), takes the two files' contents, and renames them
into place only when both were written; if the second rename fails the old
pair is restored. Temporaries are removed on any failure, Ctrl-C or SIGTERM,
and those left by a killed run are removed (and reported) by the next one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

from ..paths import make_temporary, stale_temporaries

__all__ = ["OutputPair", "check_out", "clean_stale", "dumps_strict", "sidecar_path"]


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _kind(st: os.stat_result) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    mode = st.st_mode
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):  # fmt: skip
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_out(out: str, inputs: dict[str, Path] | None = None, option: str = "--out") -> Path:
    """The output path, after refusing every path that cannot be a plain new or replaced file.

    ``inputs`` maps a description of each input (``"--domain"``) to its path.
    """
    if not out or out.endswith(("/", os.sep)) or Path(out).name in ("", ".", ".."):
        raise ValueError(f"{option} {out!r} names a folder; expected a file path such as {out.rstrip('/') or '.'}/synthetic.csv")
    path = Path(out)
    side = sidecar_path(path)
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ValueError(f"{option} {out!r}: {str(ancestor)!r} is not a folder")
            break
    for p, what in ((path, option), (side, f"{option}'s sidecar")):
        if p.is_symlink():
            raise ValueError(f"{what} {str(p)!r} is a symbolic link; expected a plain file path (give the link's target)")
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ValueError(f"{what} {str(p)!r}: {exc.strerror}") from None
        kind = _kind(st)
        if kind is not None:
            raise ValueError(f"{what} {str(p)!r} is {kind}; expected a regular file path")
    for desc, inp in (inputs or {}).items():
        inp = Path(inp)
        if _same(path, inp) or path.resolve() == inp.resolve():
            raise ValueError(f"{option} {out!r} is the input {desc} itself; choose another output path")
        if _same(side, inp) or side.resolve() == inp.resolve():
            raise ValueError(f"{option} {out!r}: its sidecar {str(side)!r} would overwrite the input {desc}; choose another output path")
    return path


def clean_stale(folder: Path, recursive: bool = False, quiet: bool = False) -> list[Path]:
    """Remove the temporaries killed margsynth runs left in ``folder``; report them on stderr."""
    removed = []
    for p in stale_temporaries(folder, recursive=recursive):
        try:
            p.unlink()
        except OSError as exc:
            print(f"margsynth: stale temporary {p} of an interrupted run could not be removed ({exc.strerror})", file=sys.stderr)
            continue
        removed.append(p)
        if not quiet:
            print(f"margsynth: removed stale temporary {p} left by an interrupted run", file=sys.stderr)
    return removed


class OutputPair:
    """A CSV and its sidecar, written as one unit (see the module docstring).

    >>> with OutputPair(path) as pair:     # doctest: +SKIP
    ...     result = expensive_run()        # temporaries already exist
    ...     pair.commit(write_csv, write_sidecar)
    """

    def __init__(self, path: Path, option: str = "--out"):
        self.path = Path(path)
        self.side = sidecar_path(self.path)
        self.option = option
        self._tmps: list[Path] = []
        self._made_dirs: list[Path] = []

    def __enter__(self) -> OutputPair:
        parent = self.path.parent
        missing = []
        for d in (parent, *parent.parents):
            if d.exists():
                break
            missing.append(d)
        try:
            for d in reversed(missing):
                d.mkdir()
                self._made_dirs.append(d)
            clean_stale(parent)
            self._tmps = [make_temporary(self.path, ".csv"), make_temporary(self.side, ".json")]
        except OSError as exc:
            self._abort()
            raise ValueError(
                f"{self.option} {str(self.path)!r}: cannot create a file in {str(parent)!r} ({exc.strerror}); "
                "expected a writable folder"
            ) from None
        return self

    def commit(self, write_csv, write_side) -> None:
        """``write_csv(tmp)`` and ``write_side(tmp)`` fill the temporaries; then both are renamed."""
        tmp_csv, tmp_side = self._tmps
        write_csv(tmp_csv)
        write_side(tmp_side)
        backup = None
        if self.path.exists():  # a second name for the old CSV, until the new pair is in place
            backup = make_temporary(self.path, ".old")
            self._tmps.append(backup)
            backup.unlink()
            try:
                os.link(self.path, backup)
            except OSError:
                shutil.copy2(self.path, backup)
        try:
            os.replace(tmp_csv, self.path)
            os.replace(tmp_side, self.side)
        except BaseException:
            if not tmp_csv.exists():  # the new CSV landed but its sidecar did not: put the old pair back
                if backup is not None:
                    os.replace(backup, self.path)
                else:
                    self.path.unlink()
            raise
        self._made_dirs = []  # they hold the output now

    def _abort(self) -> None:
        for t in self._tmps:
            try:
                t.unlink()
            except FileNotFoundError:
                pass
        for d in reversed(self._made_dirs):
            try:
                d.rmdir()
            except OSError:
                pass
        self._made_dirs = []

    def __exit__(self, exc_type, exc, tb) -> None:
        self._abort()


def _finite(obj, where: str, undefined: list):
    import math

    import numpy as np

    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        undefined.append((where, obj))
        return None
    if isinstance(obj, dict):
        return {k: _finite(v, f"{where}.{k}" if where else str(k), undefined) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, f"{where}[{i}]", undefined) for i, v in enumerate(obj)]
    return obj


def dumps_strict(obj, *, prog: str, **kwargs) -> str:
    """JSON text with no ``NaN``/``Infinity`` (which strict parsers reject): an undefined
    number becomes ``null`` and a line on stderr says which and why."""
    undefined: list[tuple[str, float]] = []
    clean = _finite(obj, "", undefined)
    for where, value in undefined:
        print(f"{prog}: {where} is undefined on these inputs (it came out as {value}); written as null", file=sys.stderr)
    return json.dumps(clean, allow_nan=False, **kwargs)
