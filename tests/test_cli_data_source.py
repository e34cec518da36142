"""The CLI never runs on a surrogate behind the user's back: absent registered data
is fetched or the command stops (exit 2, nothing written); ``--allow-surrogate``
opts in and the sidecar says so; a tampered local file is refused with both hashes."""

from __future__ import annotations

import hashlib
import json

import pytest

from margsynth.cli import main
from margsynth.data import provenance
from margsynth.data.registry import dataset_info

MST = ["-p", "iters=50", "-p", "select_iters=50"]


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    """An empty data folder, no mirror, downloads disabled: nothing can be fetched."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(data))
    monkeypatch.setenv("MARGSYNTH_NO_DOWNLOAD", "1")
    monkeypatch.delenv("MARGSYNTH_DATA_MIRROR", raising=False)
    monkeypatch.delenv("MARGSYNTH_REQUIRE_REAL", raising=False)
    monkeypatch.setattr(provenance, "_warned", set())  # the surrogate banner shows again in this test
    out = tmp_path / "out"
    out.mkdir()
    return data, out


def _tree(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _count_file(tmp_path):
    import numpy as np

    from margsynth.data.baltimore import CountTable
    from margsynth.data.surrogate import surrogate_baltimore

    counts, dom = surrogate_baltimore()
    path = tmp_path / "counts.csv"
    CountTable("t", counts, dom, "surrogate").to_frame().to_csv(path, index=False)
    assert np.asarray(counts).sum() > 0
    return path


@pytest.mark.parametrize("command", ["synth", "evaluate", "mgd"])
def test_absent_data_exits_2_and_writes_nothing(no_data, tmp_path, capsys, command):
    data, out = no_data
    if command == "synth":
        args = ["synth", "mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9", "--out", str(out / "s.csv")]
        name = "titanic"
    elif command == "evaluate":
        syn = out / "syn.csv"
        syn.write_text("Survived\n0\n")
        args = ["evaluate", "--dataset", "titanic", "--synthetic", str(syn)]
        name = "titanic"
    else:
        counts = _count_file(out)
        args = ["mgd", "--truth", str(counts), "--synthetic", str(counts), "--json"]
        name = "baltimore911"
    before = _tree(out)
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one message, no surrogate banner
    assert f"margsynth data fetch {name}" in err and "MARGSYNTH_DATA_MIRROR" in err and "--allow-surrogate" in err
    assert dataset_info(name).files[0].path in err  # says what is missing
    assert "SURROGATE" not in err
    assert _tree(out) == before and _tree(data) == []


def test_allow_surrogate_is_recorded_in_the_sidecar(no_data, capsys):
    _, out = no_data
    args = ["synth", "mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9", "--out", str(out / "s.csv"), *MST]
    assert main([*args, "--allow-surrogate"]) == 0
    side = json.loads((out / "s.csv.json").read_text())
    assert side["data_source"] == "surrogate" and side["input_sha256"] == {}
    assert "SURROGATE" in capsys.readouterr().err  # and said loudly
    assert main(["evaluate", "--dataset", "titanic", "--synthetic", str(out / "s.csv"), "--allow-surrogate"]) == 0


def test_real_inputs_are_recorded_with_their_hashes(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    from margsynth.domain import Domain

    dom = Domain.from_sizes({"a": 3, "b": 2})
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.integers(0, 2, 200)}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "dom.json").write_text(json.dumps(dom.to_dict()))
    out = tmp_path / "o.csv"
    args = ["synth", "mst", "--dataset", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"),
            "--epsilon", "1", "--delta", "1e-9", "--out", str(out), *MST]  # fmt: skip
    assert main(args) == 0
    side = json.loads((tmp_path / "o.csv.json").read_text())
    assert side["data_source"] == "real"
    assert side["input_sha256"] == {
        str(tmp_path / p): hashlib.sha256((tmp_path / p).read_bytes()).hexdigest() for p in ("d.csv", "dom.json")
    }


def test_registered_real_data_records_registry_hashes(tmp_path):
    from .conftest import real_data_available

    if not real_data_available("titanic"):
        pytest.skip("real titanic data not available")
    out = tmp_path / "o.csv"
    assert main(["synth", "mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9", "--out", str(out), *MST]) == 0
    side = json.loads((tmp_path / "o.csv.json").read_text())
    assert side["data_source"] == "real"
    assert side["input_sha256"] == {e.path: e.sha256 for e in dataset_info("titanic").files}


@pytest.mark.parametrize("allow", [False, True])
def test_tampered_local_file_is_refused_with_both_hashes(no_data, capsys, allow):
    data, out = no_data
    entry = next(e for e in dataset_info("titanic").files if e.path.endswith("domain.json"))
    local = data / entry.path
    local.parent.mkdir(parents=True)
    local.write_text('{"Survived": 2}')
    actual = hashlib.sha256(local.read_bytes()).hexdigest()
    args = ["synth", "mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9", "--out", str(out / "s.csv")]
    assert main(args + (["--allow-surrogate"] if allow else [])) == 2  # never replaced by the surrogate
    err = capsys.readouterr().err
    assert str(local) in err and entry.sha256 in err and actual in err
    assert "SURROGATE" not in err
    assert local.read_text() == '{"Survived": 2}'  # and not replaced behind the user's back either
    assert _tree(out) == []
