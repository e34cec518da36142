"""The papers' published tables (CSV shipped with the package), for side-by-side comparison."""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["TABLES", "load"]

TABLES = ("mgd_table1", "nist_mst_table5", "nist_mst_selection_quality", "privpgd_tables")


def load(name: str) -> pd.DataFrame:
    """One published table by name (see :data:`TABLES`)."""
    if name not in TABLES:
        raise ValueError(f"unknown published table {name!r}; have {TABLES}")
    with resources.files(__name__).joinpath(f"{name}.csv").open() as fh:
        return pd.read_csv(fh)
