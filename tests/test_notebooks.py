"""Every numbered notebook runs top to bottom with papermill in its quick profile, leaves a clean
saved copy, and every figure it makes is printable.

The figure check renders each notebook's figures with the functions the notebook calls
(:mod:`margsynth.plotting.catalog`) from the results its quick run left in the on-disk cache, and
runs :func:`margsynth.plotting.check.layout_problems` on each: no text over text, no text cut off
or hidden by a colour bar or legend, no legend over data, a label on every axis. In ``make test``
(a fresh clone has no cache) each notebook's test runs the check right after the notebook, from
the cache the run just filled, with ``MARGSYNTH_CACHE=require``: a miss is a failure (the catalog
asks for other results than the notebook computed). ``pytest -m figures`` runs the same check
alone, in seconds, from the project's cache (``results/cache``, filled by ``margsynth reproduce``),
skipping a notebook whose results are not there: the loop for working on a figure.
"""

import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402

from margsynth.experiments.cache import CacheMiss  # noqa: E402
from margsynth.paths import cache_dir, project_root  # noqa: E402
from margsynth.plotting import catalog  # noqa: E402
from margsynth.plotting.check import layout_problems  # noqa: E402
from margsynth.runner import discover, run_notebook  # noqa: E402

from .conftest import (
    mirror,  # noqa: E402
    real_data_available,  # noqa: E402
)

NOTEBOOKS = discover()
IDS = [p.stem for p in NOTEBOOKS]


def unclean_outputs(path: Path) -> list[str]:
    """What a saved notebook should not show: progress bars, warnings or anything else on stderr,
    file paths of this machine."""
    nb = nbformat.read(path, as_version=4)
    root = str(project_root())
    problems = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                text = out.text
                if out.name == "stderr":
                    problems.append(f"cell {i}: stderr output {text[:120]!r}")
            else:
                data = out.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    problems.append(f"cell {i}: a widget (progress bar?) {data.get('text/plain', '')[:80]!r}")
                text = data.get("text/plain", "")
            if re.search(r"\d+%\|", text) or "\r" in text:
                problems.append(f"cell {i}: a progress bar {text[:80]!r}")
            if "PosixPath(" in text or root in text or re.search(r"(^|[\s'\"(])/(tmp|home|root|work)/", text):
                problems.append(f"cell {i}: a file path of this machine {text[:120]!r}")
    return problems


def figure_problems(stem: str, cache: Path, monkeypatch) -> list[str]:
    """Every layout problem of ``stem``'s quick-profile figures, rendered from ``cache`` alone."""
    entry = catalog.NOTEBOOKS[stem]
    monkeypatch.setenv("MARGSYNTH_CACHE_DIR", str(cache))
    monkeypatch.setenv("MARGSYNTH_CACHE", "require")
    figures = entry.build("quick")
    try:
        absent = {name for name, dataset in entry.needs if not real_data_available(dataset)}
        assert set(figures) == set(entry.names) - set(entry.full_only) - absent
        return [f"{name}: {p}" for name, fig in figures.items() for p in layout_problems(fig)]
    finally:
        for fig in figures.values():
            plt.close(fig)


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs_in_quick_profile(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("MARGSYNTH_FIGURES_DIR", str(tmp_path / "figures"))
    result = run_notebook(path, "quick", out_dir=tmp_path / "results" / "notebooks")
    assert result.status == "ok", result.error
    assert list((tmp_path / "figures").glob("*.png")) or list((tmp_path / "results" / "tables").glob("*.csv"))
    if mirror() is not None and not os.environ.get("MARGSYNTH_NO_DOWNLOAD"):
        assert all(d["source"] == "real" for d in result.data), result.data
    problems = unclean_outputs(Path(result.output))
    assert not problems, "\n".join(problems)
    # the figure check, from the cache this run filled
    problems = figure_problems(path.stem, tmp_path / "results" / "cache", monkeypatch)
    assert not problems, "\n".join(problems)


@pytest.mark.figures
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_figure_is_printable(path, monkeypatch):
    cache = cache_dir()
    if not any(cache.glob("*/*.pkl")):
        pytest.skip(f"no cached results in {cache}: run `margsynth reproduce --only {path.stem[:2]}` first")
    try:
        problems = figure_problems(path.stem, cache, monkeypatch)
    except CacheMiss as exc:
        pytest.skip(f"{path.stem}'s quick results are not all cached ({exc}): run the notebook first")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_catalog_lists_every_figure_the_notebook_saves(path):
    source = path.with_suffix(".py").read_text(encoding="utf-8")
    saved = set(re.findall(r"save_figure\(\s*\w+\s*,\s*\"([^\"]+)\"", source))
    assert saved == set(catalog.NOTEBOOKS[path.stem].names)


def test_unclean_outputs_finds_progress_bars_warnings_and_paths(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="runs:   0%|          | 0/14 [00:00<?, ?it/s]"),
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: The figure layout has changed"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "[PosixPath('/tmp/x.pdf')]"}, execution_count=1),
    ]
    nb.cells.append(cell)
    nbformat.write(nb, tmp_path / "nb.ipynb")
    problems = " ".join(unclean_outputs(tmp_path / "nb.ipynb"))
    assert "progress bar" in problems and "stderr" in problems and "file path" in problems
