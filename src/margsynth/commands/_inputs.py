"""Reading the commands' inputs: registered datasets (real unless the user
opts in to the surrogate) and the user's own CSV and domain JSON files, with
the SHA-256 of every file read (recorded in the synth sidecar)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..data import NIST_EXCERPTS, RAW_TABLES, RECORD_DATASETS, load_csv, load_raw
from ..data.fetch import DataUnavailableError, local_path, require
from ..data.loaders import load_registered
from ..data.loaders import read_raw_csv as read_text
from ..data.nist_schema import NAMED_SCHEMAS, named_schema
from ..data.registry import NIST_CRC_DICTIONARY, dataset_info
from ..domain import Domain
from ..mechanisms.base import MemoryLimitError, memory_limit
from ..paths import file_sha256
from ..tabular import Schema
from ..tabular.encoder import check_sizes

__all__ = [
    "Input",
    "check_input_file",
    "file_sha256",
    "is_file_arg",
    "memory_budget",
    "read_csv_dataset",
    "read_domain",
    "raw_input",
    "read_raw_csv",
    "read_schema",
    "resolve_dataset",
    "schema_input",
    "use_registered",
]


@dataclass(frozen=True)
class Input:
    """A dataset a command read: the data, ``"real"`` or ``"surrogate"``, and
    ``{file: sha256}`` of the files it came from (empty for a surrogate)."""

    dataset: object
    source: str
    sha256: dict = field(default_factory=dict)
    path: Path | None = None  # the user's CSV, when the input was one


@contextmanager
def memory_budget(limit_mb: float | None) -> Iterator[float]:
    """Within the block every size check uses ``--memory-limit`` (``limit_mb``; ``None``: the
    library's default, :data:`margsynth.mechanisms.base.MEMORY_LIMIT_MB`), and a size it
    refuses says how to raise the limit."""
    with memory_limit(limit_mb) as limit:
        try:
            yield limit
        except MemoryLimitError as exc:
            raise MemoryLimitError(f"{exc} (--memory-limit {limit:g} MiB; raise it to allow more)") from None


def check_input_file(option: str, value: str | Path, expected: str) -> Path:
    """``value`` as a readable regular file, or ``ValueError`` naming ``option``, the value and ``expected``."""
    try:
        return _check_input_file(option, value, expected)
    except OSError as exc:  # a name too long for the system, a folder we may not look into, ...
        raise ValueError(f"{option} {str(value)!r}: {exc.strerror or exc}; expected {expected}") from None


def _check_input_file(option: str, value: str | Path, expected: str) -> Path:
    p = Path(value)
    if p.is_dir():
        raise ValueError(f"{option} {str(value)!r} is a folder; expected {expected}")
    if not p.exists():
        raise ValueError(f"{option} {str(value)!r} does not exist; expected {expected}")
    if not p.is_file():
        raise ValueError(f"{option} {str(value)!r} is not a regular file; expected {expected}")
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise ValueError(f"{option} {str(value)!r} cannot be read ({exc.strerror}); expected {expected}") from None
    return p


def read_domain(option: str, value: str | Path, ordinal=()):
    """The :class:`Domain` in a domain JSON file ``{"attr": size, ...}``; duplicate attributes are refused."""
    expected = 'a domain JSON file {"attr": size, ...}'
    check_input_file(option, value, expected)

    def no_duplicates(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"{option} {str(value)!r}: attribute {k!r} appears twice; expected each attribute once")
            seen.add(k)
        return dict(pairs)

    try:
        json.loads(Path(value).read_text(), object_pairs_hook=no_duplicates)
        return Domain.from_json(value, ordinal=ordinal)
    except UnicodeDecodeError:
        raise ValueError(f"{option} {str(value)!r} is not text; expected {expected}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{option} {str(value)!r}: not valid JSON ({exc}); expected {expected}") from None
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith(option) else f"{option} {msg}") from None


def read_csv_dataset(option: str, value: str | Path, domain, *, need_rows: bool = True):
    """A CSV of integer codes over ``domain`` (``need_rows``: with at least one record); errors name ``option``."""
    path = check_input_file(option, value, "a CSV file of integer codes")
    try:
        data = load_csv(path, domain)
    except ValueError as exc:
        raise ValueError(f"{option} {exc}") from None
    if need_rows and len(data) == 0:
        raise ValueError(f"{option} {str(value)!r} has no rows; expected a header row and at least one record")
    return data


def is_file_arg(arg: str) -> bool:
    """Whether ``--dataset``/``--public`` names a file (or a folder given by mistake) rather than a
    registered dataset; a registered name wins over a folder of the same name in the working directory."""
    if arg.endswith((".csv", ".zip", ".CSV")) or "/" in arg:
        return True
    try:
        return Path(arg).is_file() or (Path(arg).exists() and arg not in RECORD_DATASETS)
    except OSError:  # e.g. a name too long to be a file: the file checks say so
        return arg not in RECORD_DATASETS


def use_registered(name: str, allow_surrogate: bool) -> tuple[str, dict[str, str]]:
    """Make the registered dataset ``name`` (a registry name) usable: its real files
    present and verified -> ``("real", {path: sha256})``; otherwise, with
    ``allow_surrogate``, ``("surrogate", {})``; otherwise ``ValueError`` saying what
    is missing and how to fetch it. A tampered local file is always refused."""
    try:
        return "real", require(name)
    except DataUnavailableError as exc:
        if allow_surrogate:
            return "surrogate", {}
        raise ValueError(f"{exc}; or pass --allow-surrogate to run on the deterministic surrogate") from None


def resolve_dataset(arg: str, domain_json: str | None, *, what: str = "--dataset", allow_surrogate: bool = False) -> Input:
    """The dataset named by ``--dataset``/``--public`` (``what``): a registered name or a CSV (+ domain JSON)."""
    if is_file_arg(arg):
        path = Path(arg)
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except OSError as exc:  # a name too long for the system, ...
            raise ValueError(f"{what} {arg!r}: {exc.strerror}; expected a CSV file or a registered dataset name") from None
        if is_dir:
            raise ValueError(f"{what} {arg!r} is a folder; expected a CSV file or a registered dataset name")
        if not exists:
            raise ValueError(f"{what} file {arg!r} does not exist; expected a CSV file or a registered dataset name")
        if domain_json is None:
            raise ValueError(f"{what} {arg!r} is a CSV: pass its domain with --domain JSON")
        ds = read_csv_dataset(what, path, read_domain("--domain", domain_json))
        return Input(ds, "real", {str(path): file_sha256(path), str(domain_json): file_sha256(domain_json)}, path)
    if arg in RAW_TABLES:
        shipped = f", or the shipped {' or '.join(NAMED_SCHEMAS)}" if arg in NIST_EXCERPTS else ""
        raise ValueError(
            f"{what} {arg!r} is a raw table: pass --schema with a schema JSON (margsynth schema init drafts one){shipped}"
        )
    if arg not in RECORD_DATASETS:
        raise ValueError(f"{what} {arg!r}: unknown dataset, not a file and not one of {', '.join(RECORD_DATASETS)}")
    dom = read_domain("--domain", domain_json) if domain_json is not None else None
    try:
        ds, source, sha = load_registered(arg, allow_surrogate=allow_surrogate)
    except DataUnavailableError as exc:
        raise ValueError(f"{exc}; or pass --allow-surrogate to run on the deterministic surrogate") from None
    if dom is not None and dom.to_dict() != ds.domain.to_dict():
        raise ValueError(f"--domain {domain_json!r} does not match the domain of registered dataset {arg!r}")
    return Input(ds, source, sha)


SCHEMA_EXPECTED = (
    f"a schema JSON file (margsynth schema init drafts one) or a shipped schema ({', '.join(NAMED_SCHEMAS)})"
)


def is_named_schema(value: str | Path) -> bool:
    """Whether ``--schema`` names a shipped schema (``margsynth.data.NAMED_SCHEMAS``: ``nist-acs``)
    rather than a file; a file of that name wins."""
    return str(value) in NAMED_SCHEMAS and not Path(value).exists()


def schema_input(option: str, value: str | Path, dataset: str | None = None):
    """``(schema, {file: sha256}, paths read)`` for ``option``: a schema JSON file, or a named
    schema (``nist-acs``, ``nist-acs-21``: built from the NIST excerpts' data dictionary for the
    table ``dataset``, :func:`margsynth.data.nist_schema.named_schema`), with errors naming
    ``option``."""
    if not is_named_schema(value):
        path = check_input_file(option, value, SCHEMA_EXPECTED)
        return read_schema(option, value), {str(value): file_sha256(path)}, [path]
    try:
        schema = Schema.from_dict(named_schema(str(value), dataset))
    except DataUnavailableError as exc:
        raise ValueError(f"{option} {str(value)!r}: the NIST data dictionary is unavailable ({exc})") from None
    entry = next(e for e in dataset_info("ma2018").files if e.path == NIST_CRC_DICTIONARY)
    return schema, {NIST_CRC_DICTIONARY: entry.sha256}, [local_path(entry)]



def read_schema(option: str, value: str | Path, dataset: str | None = None):
    """The :class:`~margsynth.tabular.Schema` in a schema JSON file, or the named schema
    ``value`` for the table ``dataset`` (:func:`schema_input`), with errors naming ``option``."""
    if is_named_schema(value):
        return schema_input(option, value, dataset)[0]
    expected = SCHEMA_EXPECTED
    check_input_file(option, value, expected)
    try:
        schema = Schema.load(value)
        check_sizes(schema)  # its bins counted against --memory-limit before anything is built
        return schema
    except UnicodeDecodeError:
        raise ValueError(f"{option} {str(value)!r} is not text; expected {expected}") from None
    except ValueError as exc:
        msg = str(exc).removeprefix(f"schema {str(value)!r}: ")
        raise type(exc)(f"{option} {str(value)!r}: {msg}") from None


def read_raw_csv(option: str, value: str | Path, *, need_rows: bool = True):
    """A raw CSV as text, read as the registered raw tables are
    (:func:`margsynth.data.loaders.read_raw_csv`), with errors naming ``option``;
    ``need_rows``: a header without records is refused."""
    path = check_input_file(option, value, "a raw CSV file with a header row")
    try:
        frame = read_text(path)
    except ValueError as exc:
        msg = str(exc).removeprefix(f"{path}: ")
        raise ValueError(f"{option} {str(value)!r}: {msg}") from None
    if need_rows and len(frame) == 0:
        raise ValueError(f"{option} {str(value)!r} has no rows; expected a header row and at least one record")
    return frame


def raw_input(option: str, value: str, *, need_rows: bool = True) -> tuple[object, dict[str, str], Path]:
    """A raw table named by ``option``: a registered raw table (``margsynth.data.RAW_TABLES``,
    verified by SHA-256) or a raw CSV file (``need_rows``: with at least one record).
    Returns ``(frame, {file: sha256}, path)``."""
    if value in RAW_TABLES and not Path(value).exists():
        reg, data_file = RAW_TABLES[value]
        entry = next(e for e in dataset_info(reg).files if e.path == data_file)
        try:
            frame = load_raw(value)
        except DataUnavailableError as exc:
            raise ValueError(f"{option} {value!r}: {exc}") from None
        return frame, {data_file: entry.sha256}, local_path(entry)
    path = check_input_file(option, value, f"a raw CSV file or a registered raw table ({', '.join(RAW_TABLES)})")
    return read_raw_csv(option, path, need_rows=need_rows), {str(value): file_sha256(path)}, path
