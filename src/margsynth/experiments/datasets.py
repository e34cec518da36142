"""Notebook 00: every registered dataset at a glance.

``overview()`` returns one row per registered dataset (records, attributes,
domain sizes, cells of the full table, source, licence): the Baltimore 911
incidents, every record dataset (integer codes over a domain) and every raw
table (strings, decimals, empty cells: rows and columns only, as a raw table
has no domain until its schema is chosen); ``cardinalities()`` the long table
of attribute sizes behind the cardinality-profile figure (record datasets).
Datasets whose files are unavailable are listed from their stored schema
(source ``"unavailable"``) unless ``load_unavailable`` asks for their
offline surrogate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import DATASETS, RAW_TABLES, RECORD_DATASETS, is_available, load, load_raw
from ..data import baltimore as balt
from ..data.loaders import _schema_domain
from ..data.provenance import used

__all__ = ["cardinalities", "overview"]


def _row(name: str, registry: str, domain, records, source: str) -> dict:
    sizes = np.array(domain.shape)
    info = DATASETS[registry]
    return {
        "dataset": name,
        "registry": registry,
        "records": records,
        "attributes": len(sizes),
        "min size": int(sizes.min()),
        "median size": float(np.median(sizes)),
        "max size": int(sizes.max()),
        "log10 cells": float(np.log10(sizes.astype(float)).sum()),
        "source": source,
        "licence": info.licence,
    }


def overview(load_unavailable: bool = False) -> pd.DataFrame:
    rows = []
    if is_available("baltimore911") or load_unavailable:
        truth = balt.load_truth()
        rows.append(_row("baltimore911", "baltimore911", truth.domain, truth.total, truth.source))
    for name, (registry, _, _) in RECORD_DATASETS.items():
        if is_available(registry) or load_unavailable:
            try:
                ds = load(name)
            except Exception as exc:  # a dataset with no stored schema and no data
                rows.append({"dataset": name, "registry": registry, "source": f"unavailable ({type(exc).__name__})"})
                continue
            rows.append(_row(name, registry, ds.domain, len(ds), used()[name]["source"]))
        else:
            try:
                domain = _schema_domain(name)
            except Exception:
                rows.append({"dataset": name, "registry": registry, "source": "unavailable (no stored schema)",
                             "licence": DATASETS[registry].licence})  # fmt: skip
                continue
            rows.append(_row(name, registry, domain, pd.NA, "unavailable (schema only)"))
    for name, (registry, _) in RAW_TABLES.items():
        row = {"dataset": name, "registry": registry, "licence": DATASETS[registry].licence}
        if is_available(registry):
            table = load_raw(name)
            row.update({"records": len(table), "attributes": table.shape[1], "source": "real (raw table)"})
        else:
            row["source"] = "unavailable (raw table)"
        rows.append(row)
    frame = pd.DataFrame(rows)
    ints = {c: "Int64" for c in ("records", "attributes", "min size", "max size") if c in frame}
    return frame.astype(ints)


def cardinalities(load_unavailable: bool = False) -> pd.DataFrame:
    """Long table: dataset, attribute, size, ordinal flag."""
    rows = []
    domains = {}
    if is_available("baltimore911") or load_unavailable:
        domains["baltimore911"] = balt.load_truth().domain
    for name, (registry, _, _) in RECORD_DATASETS.items():
        try:
            domains[name] = load(name).domain if (is_available(registry) or load_unavailable) else _schema_domain(name)
        except Exception:
            continue
    for name, domain in domains.items():
        for a in domain.attributes:
            rows.append({"dataset": name, "attribute": a.name, "size": a.size, "ordinal": a.ordinal})
    return pd.DataFrame(rows)
