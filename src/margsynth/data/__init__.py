"""Datasets: the registry (pinned URLs + SHA-256), fetching from a mirror or
the internet, loaders, and the offline surrogate.

>>> from margsynth.data import load                     # doctest: +SKIP
>>> adult = load("adult")                             # doctest: +SKIP
"""

from .fetch import DataIntegrityError, DataUnavailableError, fetch, is_available, verify
from .loaders import (
    NIST_EXCERPTS,
    RAW_TABLES,
    RECORD_DATASETS,
    load,
    load_csv,
    load_data_dictionary,
    load_domain,
    load_raw,
    load_source,
    read_data_dictionary,
    read_raw_csv,
)
from .provenance import SurrogateDataWarning, surrogate_used
from .registry import DATASETS, dataset_info, dataset_names

__all__ = [
    "DATASETS",
    "NIST_EXCERPTS",
    "RAW_TABLES",
    "RECORD_DATASETS",
    "DataIntegrityError",
    "DataUnavailableError",
    "SurrogateDataWarning",
    "dataset_info",
    "dataset_names",
    "fetch",
    "is_available",
    "load",
    "load_csv",
    "load_data_dictionary",
    "load_domain",
    "load_raw",
    "load_source",
    "read_raw_csv",
    "read_data_dictionary",
    "surrogate_used",
    "verify",
]
