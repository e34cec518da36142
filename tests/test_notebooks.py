"""Every numbered notebook runs top to bottom with papermill in its quick profile."""

import os

import pytest

from margsynth.runner import discover, run_notebook

from .conftest import mirror

NOTEBOOKS = discover()


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_profile(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("MARGSYNTH_FIGURES_DIR", str(tmp_path / "figures"))
    result = run_notebook(path, "quick", out_dir=tmp_path / "results" / "notebooks")
    assert result.status == "ok", result.error
    assert list((tmp_path / "figures").glob("*.png")) or list((tmp_path / "results" / "tables").glob("*.csv"))
    if mirror() is not None and not os.environ.get("MARGSYNTH_NO_DOWNLOAD"):
        assert all(d["source"] == "real" for d in result.data), result.data
