"""The Baltimore 911 count tables of the NIST 2020 Temporal Map Challenge (sprint 1).

Each file is one row per (neighborhood, month) with 174 incident-type count
columns ``0..173``; files differ in extra columns (``epsilon``, ``year``), so
columns are matched by name. Every file is validated against the ground
truth: same (neighborhood, month) rows in the same order, the same 174
incident columns, non-negative integer counts. A table is returned as a
labelled 3-D array, neighborhood x month x incident type, with names from
``parameters.json``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..dataset import Dataset, _show
from ..domain import Attribute, Domain
from . import provenance
from .fetch import DataUnavailableError, fetch, local_path
from .loaders import read_csv_strict
from .registry import dataset_info
from .surrogate import surrogate_baltimore, surrogate_baltimore_synthetic

__all__ = ["CountTable", "load_records", "load_synthetic", "load_table", "load_truth", "synthetic_names"]

N_TYPES = 174
KEY = ("neighborhood", "month")
OPTIONAL = ("year", "epsilon")


@dataclass(frozen=True)
class CountTable:
    """A dense count table over ``domain`` (neighborhood x month x incident_type)."""

    name: str
    counts: np.ndarray = field(repr=False)
    domain: Domain
    source: str  # "real" or "surrogate"
    epsilon: float | None = None
    path: str | None = None

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def marginal(self, attrs) -> np.ndarray:
        """Counts summed over every attribute not in ``attrs`` (in the order given)."""
        attrs = self.domain.check_attrs(attrs)
        keep = [self.domain.index(a) for a in attrs]
        drop = tuple(i for i in range(len(self.domain)) if i not in keep)
        m = self.counts.sum(axis=drop)
        order = np.argsort(np.argsort(keep))
        return np.transpose(m, order) if len(keep) > 1 else m

    def to_records(self) -> Dataset:
        """One record per incident (for the mechanisms)."""
        return Dataset.from_counts(self.counts, self.domain)

    def to_frame(self) -> pd.DataFrame:
        """The scored-file layout: neighborhood, year, month, ``0..173``."""
        n_nb, n_m, n_t = self.counts.shape
        frame = pd.DataFrame(self.counts.reshape(n_nb * n_m, n_t), columns=[str(i) for i in range(n_t)])
        frame.insert(0, "month", np.tile(np.arange(1, n_m + 1), n_nb))
        frame.insert(0, "year", 2019)
        frame.insert(0, "neighborhood", np.repeat(np.arange(n_nb), n_m))
        return frame


def synthetic_names() -> list[str]:
    """Names (file stems) of the 14 scored files, in registry order."""
    return [Path(e.path).stem for e in dataset_info("baltimore911").files if e.path.startswith("baltimore911/synthetic/")]


def _entry(rel: str):
    for e in dataset_info("baltimore911").files:
        if e.path == rel:
            return e
    raise ValueError(f"no registered Baltimore file {rel!r}; scored files: {synthetic_names()}")


def _real() -> bool:
    try:
        fetch(["baltimore911"])
        return True
    except DataUnavailableError as exc:
        if os.environ.get("MARGSYNTH_REQUIRE_REAL"):
            raise
        provenance.warn_surrogate("baltimore911", str(exc))
        return False


def _domain_from_parameters(path: Path) -> Domain:
    schema = json.loads(path.read_text())["schema"]
    nb = sorted(schema["neighborhood"], key=lambda r: r["code"])
    it = sorted(schema["incident_type"], key=lambda r: r["code"])
    periods = schema["periods"]
    if [r["code"] for r in nb] != list(range(len(nb))) or [r["code"] for r in it] != list(range(len(it))):
        raise ValueError(f"{path}: neighborhood/incident_type codes are not 0..k-1")
    return Domain(
        (
            Attribute("neighborhood", len(nb), labels=tuple(r["name"] for r in nb)),
            Attribute("month", len(periods), ordinal=True, labels=tuple(f"{p['year']}-{p['month']:02d}" for p in periods)),
            Attribute("incident_type", len(it), labels=tuple(r["name"] for r in it)),
        )
    )


def read_count_file(path: str | Path, domain: Domain, key: pd.DataFrame | None = None) -> tuple[np.ndarray, float | None]:
    """Parse one count file into a (neighborhood, month, incident_type) array.

    ``key`` holds the ground truth's (neighborhood, month) rows; the file must
    have exactly those rows in that order. Raises ``ValueError`` naming the
    file and the offending column/row/value.
    """
    path = Path(path)
    name = path.name
    try:
        frame = read_csv_strict(path)
    except ValueError as exc:
        raise ValueError(str(exc).replace(str(path), name, 1)) from exc
    n_nb, n_m, n_t = domain.shape
    type_cols = [str(i) for i in range(n_t)]
    cols = [str(c) for c in frame.columns]
    frame.columns = cols
    missing = [c for c in (*KEY, *type_cols) if c not in cols]
    extra = [c for c in cols if c not in (*KEY, *OPTIONAL, *type_cols)]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing[:10]}{' ...' if len(missing) > 10 else ''}")
    if extra:
        raise ValueError(f"{name}: unexpected column(s) {extra[:10]}")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise ValueError(f"{name}: duplicated column(s) {dup}")
    if len(frame) != n_nb * n_m:
        raise ValueError(f"{name}: {len(frame)} rows, expected {n_nb * n_m} (one per neighborhood and month)")
    if key is None:
        key = pd.DataFrame({"neighborhood": np.repeat(np.arange(n_nb), n_m), "month": np.tile(np.arange(1, n_m + 1), n_nb)})
    got = frame[list(KEY)].apply(pd.to_numeric, errors="coerce").to_numpy()
    want = key[list(KEY)].to_numpy()
    bad = np.flatnonzero((got != want).any(axis=1))
    if bad.size:
        r = int(bad[0])
        have = tuple(_show(frame[c].iloc[r]) for c in KEY)
        raise ValueError(
            f"{name}: row {r} has (neighborhood, month) = ({have[0]}, {have[1]}) but the ground truth has "
            f"({_show(want[r, 0])}, {_show(want[r, 1])}) there; rows must be the ground truth's (neighborhood, month) "
            "rows in the same order (shuffled, duplicated or missing rows are refused)"
        )
    values = frame[type_cols]
    booleans = [c for c in type_cols if values[c].dtype == bool]
    if booleans:
        raise ValueError(f"{name}: column {booleans[0]!r} holds True/False; expected integer counts")
    arr = raw = values.to_numpy()
    int64_max = np.iinfo(np.int64).max

    def too_large(where: np.ndarray) -> None:
        if where.size:
            r, c = map(int, where[0])
            raise ValueError(
                f"{name}: column {type_cols[c]!r} row {r}: value {_show(raw[r, c])} is too large; "
                f"counts must fit in a 64-bit integer (at most {int64_max})"
            )

    if arr.dtype.kind == "u":
        too_large(np.argwhere(arr > int64_max))
    elif arr.dtype.kind != "i":
        num = values.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        bad = np.argwhere(~np.isfinite(num) | (num != np.round(num)))
        if bad.size:
            r, c = map(int, bad[0])
            raise ValueError(f"{name}: column {type_cols[c]!r} row {r}: value {_show(arr[r, c])} is not an integer count")
        too_large(np.argwhere(num >= 2.0**63))
        arr = np.where(num < 0, -1, num)  # negatives are reported below
    arr = arr.astype(np.int64)
    if float(arr.sum(dtype=np.float64)) >= 2.0**62 and sum(int(v) for v in arr.ravel() if v > 0) > int64_max:
        raise ValueError(f"{name}: the counts add up to more than a 64-bit integer holds (at most {int64_max})")
    neg = np.argwhere(arr < 0)
    if neg.size:
        r, c = map(int, neg[0])
        raise ValueError(f"{name}: column {type_cols[c]!r} row {r}: negative count {_show(raw[r, c])}")
    if "year" in cols:
        years = set(pd.unique(frame["year"]))
        if len(years) != 1:
            raise ValueError(f"{name}: column 'year' has several values {sorted(years)}; expected one year")
    eps = None
    if "epsilon" in cols:
        e = pd.unique(frame["epsilon"])
        if len(e) != 1:
            raise ValueError(f"{name}: column 'epsilon' is not constant ({list(e)[:5]})")
        eps = float(e[0])
    return arr.reshape(n_nb, n_m, n_t), eps


def _truth_parts() -> tuple[np.ndarray, Domain, pd.DataFrame, str]:
    return _truth_parts_of(_real())


@cache
def _truth_parts_of(real: bool) -> tuple[np.ndarray, Domain, pd.DataFrame, str]:
    if not real:
        counts, domain = surrogate_baltimore()
        provenance.record("baltimore911", "surrogate")
        return counts, domain, None, "surrogate"
    gt, params = _entry("baltimore911/ground_truth.csv"), _entry("baltimore911/parameters.json")
    domain = _domain_from_parameters(local_path(params))
    counts, _ = read_count_file(local_path(gt), domain)
    key = pd.read_csv(local_path(gt), usecols=list(KEY))
    provenance.record("baltimore911", "real", {gt.path: gt.sha256, params.path: params.sha256})
    return counts, domain, key, "real"


def load_truth() -> CountTable:
    """The ground truth: 1,455,608 incidents over 278 x 12 x 174 cells."""
    counts, domain, _, source = _truth_parts()
    path = None if source == "surrogate" else str(local_path(_entry("baltimore911/ground_truth.csv")))
    return CountTable("ground_truth", counts, domain, source, None, path)


def load_synthetic(name: str) -> CountTable:
    """One of the 14 scored files, by stem (e.g. ``lap_eps1``, ``0.1_sampling``,
    ``privatized-mediocre-quality``)."""
    if name not in synthetic_names():
        raise ValueError(f"unknown Baltimore scored file {name!r}; known: {synthetic_names()}")
    truth, domain, key, source = _truth_parts()
    if source == "surrogate":
        counts, eps = surrogate_baltimore_synthetic(name, truth)
        return CountTable(name, counts, domain, "surrogate", eps)
    entry = _entry(f"baltimore911/synthetic/{name}.csv")
    counts, eps = read_count_file(local_path(entry), domain, key)
    return CountTable(name, counts, domain, "real", eps, str(local_path(entry)))


def load_table(path: str | Path, name: str | None = None) -> CountTable:
    """A user's count file in the scored-file layout, validated against the ground truth."""
    _, domain, key, source = _truth_parts()
    counts, eps = read_count_file(path, domain, key)
    return CountTable(name or Path(path).stem, counts, domain, "real" if source == "real" else "surrogate", eps, str(path))


def load_records() -> Dataset:
    """The ground truth as records, one per incident."""
    return load_truth().to_records()
