"""Published snapshots: a run's tables kept with their manifest, read back unchanged."""

import hashlib
import json
import os
import time

import nbformat
import pandas as pd
import pytest

from margsynth.experiments import snapshots
from margsynth.runner import reproduce


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_ROOT", str(tmp_path))
    monkeypatch.setenv("MARGSYNTH_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("MARGSYNTH_FIGURES_DIR", str(tmp_path / "figures"))
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    return tmp_path, nb_dir


def _notebook(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell('profile = "quick"\nn = 3', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(body),
    ]
    nbformat.write(nb, path)


SAVE = """
import pandas as pd
from margsynth.plotting import save_table
save_table(pd.DataFrame({"x": range(n), "y": [0.5] * n}), "05_runs")
save_table(pd.DataFrame({"z": [profile]}), "05_table")
"""


def test_publish_keeps_the_tables_of_the_run_with_their_manifest(project):
    root, nb_dir = project
    (root / "results/tables").mkdir(parents=True)
    pd.DataFrame({"old": [1]}).to_csv(root / "results/tables/05_stale.csv", index=False)  # before the run: not its
    pd.DataFrame({"other": [1]}).to_csv(root / "results/tables/06_other.csv", index=False)
    past = time.time() - 3600
    for name in ("05_stale.csv", "06_other.csv"):
        os.utime(root / "results/tables" / name, (past, past))
    _notebook(nb_dir / "05_bench.ipynb", SAVE)
    results, _ = reproduce("full", parameters={"n": 4}, notebooks_dir=nb_dir, echo=lambda *a: None, publish=True)
    assert [r.status for r in results] == ["ok"]
    folder = root / "results/published/05_bench"
    assert sorted(p.name for p in folder.iterdir()) == ["05_runs.csv", "05_table.csv", "manifest.json"]
    meta = snapshots.manifest("05_bench")
    assert meta["profile"] == "full" and meta["parameters"] == {"profile": "full", "n": 4}
    assert meta["given"] == ["n", "profile"] and meta["wall_seconds"] > 0
    assert meta["machine"]["cores"] >= 1 and "cpu" in meta["machine"]
    for name, digest in meta["tables"].items():
        assert hashlib.sha256((folder / f"{name}.csv").read_bytes()).hexdigest() == digest
    runs = snapshots.load("05_bench", "05_runs")
    assert runs["x"].tolist() == [0, 1, 2, 3]
    assert "profile full" in snapshots.describe("05_bench") and "'n': 4" in snapshots.describe("05_bench")


def test_publish_replaces_a_snapshot_as_a_whole_and_refuses_what_did_not_run(project):
    root, nb_dir = project
    _notebook(nb_dir / "05_bench.ipynb", SAVE)
    reproduce("full", notebooks_dir=nb_dir, echo=lambda *a: None, publish=True)
    folder = root / "results/published/05_bench"
    (folder / "05_extra.csv").write_text("a\n1\n")  # not the run's: gone after the next publish
    run = json.loads((root / "results/manifest.json").read_text())
    snapshots.publish("05_bench", run)
    assert not (folder / "05_extra.csv").exists() and (folder / "05_runs.csv").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary left
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(ValueError, match="is not in the run"):
        snapshots.publish("06_other", run)
    failed = {**run, "notebooks": [{**run["notebooks"][0], "status": "failed"}]}
    with pytest.raises(ValueError, match="failed"):
        snapshots.publish("05_bench", failed)
    later = {**run, "started": "2999-01-01T00:00:00+00:00"}
    with pytest.raises(ValueError, match="saved no table"):
        snapshots.publish("05_bench", later)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # refusals change nothing


def test_load_checks_the_tables_against_the_manifest(project):
    root, nb_dir = project
    _notebook(nb_dir / "05_bench.ipynb", SAVE)
    reproduce("full", notebooks_dir=nb_dir, echo=lambda *a: None, publish=True)
    with pytest.raises(ValueError, match="not in the snapshot"):
        snapshots.load("05_bench", "05_nothing")
    path = root / "results/published/05_bench/05_runs.csv"
    path.write_text(path.read_text().replace("0.5", "0.6"))
    with pytest.raises(ValueError, match="does not match its manifest"):
        snapshots.load("05_bench", "05_runs")
    assert not snapshots.available("07_none")
    with pytest.raises(FileNotFoundError, match="no published snapshot"):
        snapshots.manifest("07_none")
    with pytest.raises(ValueError, match="stem"):
        snapshots.snapshot_dir("../05_bench")


def test_failed_notebooks_are_not_published(project):
    root, nb_dir = project
    _notebook(nb_dir / "05_bench.ipynb", SAVE + "\nraise RuntimeError('late')")
    results, _ = reproduce("full", notebooks_dir=nb_dir, echo=lambda *a: None, publish=True)
    assert results[0].status == "failed"
    assert not (root / "results/published").exists()


def test_publish_takes_the_full_profile_only(project, capsys):
    """A quick run would replace the paper-scale snapshot: refused before any notebook runs."""
    from margsynth.cli import main

    root, nb_dir = project
    _notebook(nb_dir / "05_bench.ipynb", SAVE)
    with pytest.raises(ValueError, match="needs the full profile"):
        reproduce("quick", notebooks_dir=nb_dir, echo=lambda *a: None, publish=True)
    assert not (root / "results").exists()
    (root / "pyproject.toml").write_text('[project]\nname = "margsynth"\n')
    assert main(["reproduce", "--only", "05", "--publish"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "--publish" in err[0] and "full profile" in err[0]
    assert not (root / "results").exists()
