"""Writing a command's output as one unit: a CSV and its JSON sidecar (and, for
``synth --save-model``, the model file).

:func:`check_out` refuses, before anything runs, an ``--out`` that is a FIFO,
a device, a symlink, a folder (or names one, ``newdir/``), an input itself, a
name the file system cannot hold, or whose sidecar ``PATH.json`` would
overwrite an input or an existing file that is not a sidecar of ours
(:func:`is_sidecar`: every sidecar carries ``"format": "margsynth-sidecar"``,
:func:`mark_sidecar`; an older one is recognised by its keys). :class:`OutputPair`
then creates both temporaries up front (so an unwritable location is found
before any noise is drawn), takes the two files' contents, and renames them
into place only when both were written; if the second rename fails the old
pair is restored. Temporaries are removed on any failure, Ctrl-C or SIGTERM,
and those left by a killed run are removed (and reported) by the next one.

The sidecars' JSON is encoded by :mod:`margsynth.jsonable` (numpy numbers and arrays,
tuples, sets as JSON values; undefined numbers as ``null``); :func:`dumps_strict` writes it
and says on stderr which numbers were undefined.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from ..jsonable import finite_json, json_default, plain_json
from ..paths import make_temporary, make_temporary_name, signals_deferred, stale_temporaries

__all__ = [
    "SIDECAR_FORMAT",
    "OutputPair",
    "check_out",
    "clean_stale",
    "dumps_strict",
    "finite_json",
    "is_sidecar",
    "json_default",
    "mark_sidecar",
    "os_error",
    "plain_json",
    "sidecar_path",
]

#: The ``"format"`` of every sidecar a command writes (:func:`mark_sidecar`), by which the
#: next run knows that it may replace the file (:func:`is_sidecar`).
SIDECAR_FORMAT = "margsynth-sidecar"
#: The keys every sidecar written before :data:`SIDECAR_FORMAT` existed holds (synth's
#: and sample's): such a file is recognised as ours by them.
_LEGACY_KEYS = frozenset({"margsynth_version", "epsilon_spent", "delta", "seed", "records"})
#: A file larger than this is not read to see whether it is a sidecar (none of ours is).
_SIDECAR_MAX_BYTES = 256 * 2**20


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def mark_sidecar(side: dict) -> dict:
    """``side`` with the sidecar marker ``"format": SIDECAR_FORMAT`` as its first key."""
    return {"format": SIDECAR_FORMAT, **{k: v for k, v in side.items() if k != "format"}}


def is_sidecar(path: str | Path) -> bool:
    """Whether the file ``path`` is the sidecar of an earlier run of ours: a JSON object
    marked ``"format": "margsynth-sidecar"``, or an older sidecar holding every key synth's
    and sample's sidecars had (``margsynth_version``, ``epsilon_spent``, ``delta``, ``seed``,
    ``records``). Anything else — another program's JSON, text, a file too large to be
    ours — is not, and a command refuses to replace it."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_SIDECAR_MAX_BYTES + 1)
    except OSError:
        return False
    if len(raw) > _SIDECAR_MAX_BYTES:
        return False
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(obj, dict):
        return False
    return obj.get("format") == SIDECAR_FORMAT or _LEGACY_KEYS <= obj.keys()


def os_error(option: str, value, exc: OSError, expected: str = "a path this system can create") -> ValueError:
    """The user error of an OS error on the path ``value`` of ``option`` (one line: the
    option, the value, what the system said, what was expected)."""
    if exc.errno == errno.ENAMETOOLONG:
        expected = "a shorter file name (the system limits names to 255 bytes, and margsynth writes a temporary beside it)"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        expected = "a folder this user can write to"
    reason = exc.strerror or str(exc)
    return ValueError(f"{option} {str(value)!r}: {reason}; expected {expected}")


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


def check_out(out: str, inputs: dict[str, Path] | None = None, option: str = "--out", *, sidecar: bool = True) -> Path:
    """The output path, after refusing every path that cannot be a plain new or replaced file.

    ``inputs`` maps a description of each input (``"--domain"``) to its path; ``sidecar``:
    the output has a sidecar ``PATH.json``, checked likewise.
    """
    if not out or out.endswith(("/", os.sep)) or Path(out).name in ("", ".", ".."):
        raise ValueError(f"{option} {out!r} names a folder; expected a file path such as {out.rstrip('/') or '.'}/synthetic.csv")
    try:
        return _check_out(out, inputs, option, sidecar)
    except OSError as exc:  # a name too long, a folder we may not look into, ...: the user's path
        raise os_error(option, out, exc) from None


def _check_out(out: str, inputs: dict[str, Path] | None, option: str, sidecar: bool) -> Path:
    path = Path(out)
    side = sidecar_path(path)
    for p in (path, side)[: 2 if sidecar else 1]:
        longest = len(os.fsencode(_temporary_name(p)))
        if longest > _NAME_MAX:
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), str(p))
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ValueError(f"{option} {out!r}: {str(ancestor)!r} is not a folder")
            break
    for p, what in ((path, option), (side, f"{option}'s sidecar"))[: 2 if sidecar else 1]:
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
        if sidecar and (_same(side, inp) or side.resolve() == inp.resolve()):
            raise ValueError(f"{option} {out!r}: its sidecar {str(side)!r} would overwrite the input {desc}; choose another output path")
    if sidecar and side.is_file() and not is_sidecar(side):
        raise ValueError(
            f"{option} {out!r}: {str(side)!r} exists and is not the sidecar of an earlier margsynth run; it is left as "
            f"it is: move it away or choose another {option}"
        )
    return path


#: The longest file name most file systems hold (bytes).
_NAME_MAX = 255


def _temporary_name(target: Path) -> str:
    """The longest name of a temporary :class:`OutputPair` makes beside ``target``."""
    return make_temporary_name(target, max((target.suffix, ".json"), key=len))


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
    """A CSV and its sidecar (and optionally more files, e.g. a saved model), written as one
    unit (see the module docstring).

    >>> with OutputPair(path, extra=[(model_path, "--save-model")]) as pair:     # doctest: +SKIP
    ...     result = expensive_run()        # temporaries already exist
    ...     pair.commit(write_csv, write_sidecar, write_model)
    """

    def __init__(self, path: Path, option: str = "--out", extra: Sequence[tuple[Path, str]] = (), *, sidecar: bool = True):
        self.path = Path(path)
        self.side = sidecar_path(self.path) if sidecar else None
        self.option = option
        self.extra = [(Path(p), opt) for p, opt in extra]
        self._tmps: list[Path] = []
        self._made_dirs: list[Path] = []

    def _reserve(self, target: Path, option: str, suffix: str) -> Path:
        parent = target.parent
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
            return make_temporary(target, suffix)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise os_error(option, target, exc) from None
            raise ValueError(
                f"{option} {str(target)!r}: cannot create a file in {str(parent)!r} ({exc.strerror}); "
                "expected a writable folder"
            ) from None

    def __enter__(self) -> OutputPair:
        wanted = [(self.path, self.option, self.path.suffix if self.side is None else ".csv"),
                  *([] if self.side is None else [(self.side, self.option, ".json")]),
                  *((p, opt, p.suffix or ".part") for p, opt in self.extra)]  # fmt: skip
        try:
            for target, option, suffix in wanted:
                with signals_deferred():  # each temporary recorded before a signal can interrupt
                    self._tmps.append(self._reserve(target, option, suffix))
        except BaseException:
            self._abort()
            raise
        return self

    @property
    def temporary(self) -> Path:
        """The main file's temporary (reserved on entering): a writer that streams the table
        fills it during the run, and ``commit``'s ``write_csv`` then has nothing left to do."""
        return self._tmps[0]

    def commit(self, write_csv, write_side, *write_extra) -> None:
        """``write_csv(tmp)``, ``write_side(tmp)`` (``None`` without a sidecar) and one writer per
        extra file fill the temporaries; then all are renamed into place (extras first, the
        sidecar last). If a rename fails, the files already renamed are put back as they were."""
        if len(write_extra) != len(self.extra):
            raise TypeError(f"commit needs {len(self.extra)} writer(s) for the extra files, got {len(write_extra)}")
        if (write_side is None) != (self.side is None):
            raise TypeError("commit needs a sidecar writer exactly when the output has a sidecar")
        n = 1 if self.side is None else 2
        tmps = [*self._tmps[n : n + len(self.extra)], *self._tmps[:n]]
        targets = [*(p for p, _ in self.extra), self.path, *([] if self.side is None else [self.side])]
        writers = [*write_extra, write_csv, *([] if write_side is None else [write_side])]
        for write, tmp in zip(writers, tmps):
            write(tmp)
        backups: list[Path | None] = []
        for target in targets[:-1]:  # a second name for each old file, until the new set is in place
            backup = None
            if target.exists():
                with signals_deferred():
                    backup = make_temporary(target, ".old")
                    self._tmps.append(backup)
                backup.unlink()
                try:
                    os.link(target, backup)
                except OSError:
                    shutil.copy2(target, backup)
            backups.append(backup)
        done = 0
        try:
            for tmp, target in zip(tmps, targets):
                os.replace(tmp, target)
                done += 1
        except BaseException:
            for target, backup in zip(targets[:done], backups[:done]):  # put the old files back
                if backup is not None:
                    os.replace(backup, target)
                else:
                    target.unlink()
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


def dumps_strict(obj, *, prog: str, **kwargs) -> str:
    """JSON text with no ``NaN``/``Infinity`` (which strict parsers reject): an undefined
    number becomes ``null`` and a line on stderr says which and why."""
    undefined: list[tuple[str, float]] = []
    clean = finite_json(obj, undefined)
    for where, value in undefined:
        print(f"{prog}: {where} is undefined on these inputs (it came out as {value}); written as null", file=sys.stderr)
    return json.dumps(clean, allow_nan=False, **kwargs)
