"""The notebook runner: parameters, outputs, manifest, failures, the experiment cache."""

import json
import re

import nbformat
import pytest

from margsynth.experiments.cache import CacheMiss, memoize
from margsynth.runner import discover, reproduce


def _tiny(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# tiny"),
        nbformat.v4.new_code_cell('profile = "quick"\nscale = 2', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(body.strip()),
    ]
    nbformat.write(nb, path)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    monkeypatch.setenv("MARGSYNTH_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("MARGSYNTH_FIGURES_DIR", str(tmp_path / "figures"))
    return nb_dir, tmp_path


BODY = """
import json, os
from margsynth.data import load
ds = load("titanic")
from margsynth.paths import results_dir
(results_dir() / "out.json").write_text(json.dumps({"profile": profile, "scale": scale, "n": len(ds)}))
"""


def test_runner_executes_with_parameters_and_writes_manifest(sandbox):
    nb_dir, tmp = sandbox
    _tiny(nb_dir / "07_tiny.ipynb", BODY)
    results, manifest_path = reproduce("full", parameters={"scale": 5}, notebooks_dir=nb_dir, echo=lambda *a: None)
    assert [r.status for r in results] == ["ok"]
    assert json.loads((tmp / "results/out.json").read_text()) == {"profile": "full", "scale": 5, "n": 1304}
    assert (tmp / "results/notebooks/07_tiny.ipynb").is_file()
    manifest = json.loads(manifest_path.read_text())
    assert manifest == json.loads((tmp / "results/manifest.json").read_text())
    assert manifest["profile"] == "full" and manifest["packages"]["numpy"]
    nb = manifest["notebooks"][0]
    assert nb["parameters"] == {"profile": "full", "scale": 5} and nb["seconds"] > 0
    assert nb["given"] == ["profile", "scale"]
    assert nb["data"][0]["dataset"] == "titanic"
    assert nb["data"][0]["source"] in ("real", "surrogate")
    if nb["data"][0]["source"] == "real":
        assert manifest["data_source"] == "real"
        assert nb["data"][0]["sha256"]["benchmark/titanic.zip"].startswith("01cef749")


def test_runner_names_failing_cell_and_keeps_good_copy(sandbox):
    nb_dir, tmp = sandbox
    _tiny(nb_dir / "03_tiny.ipynb", "x = scale * 2")
    reproduce(notebooks_dir=nb_dir, echo=lambda *a: None)
    good = (tmp / "results/notebooks/03_tiny.ipynb").read_text()
    _tiny(nb_dir / "03_tiny.ipynb", "raise ValueError(f'bad scale {scale}')")
    results, _ = reproduce(notebooks_dir=nb_dir, echo=lambda *a: None)
    assert results[0].status == "failed"
    assert "03_tiny.ipynb: cell" in results[0].error and "ValueError: bad scale 2" in results[0].error
    assert (tmp / "results/notebooks/03_tiny.ipynb").read_text() == good
    assert (tmp / "results/notebooks/03_tiny.failed.ipynb").is_file()


def test_discover_and_validation(sandbox):
    nb_dir, _ = sandbox
    _tiny(nb_dir / "01_a.ipynb", "pass")
    _tiny(nb_dir / "02_b.ipynb", "pass")
    assert [p.name for p in discover(nb_dir, ["2"])] == ["02_b.ipynb"]
    assert [p.name for p in discover(nb_dir)] == ["01_a.ipynb", "02_b.ipynb"]
    with pytest.raises(ValueError, match="matches no notebook"):
        discover(nb_dir, ["9"])
    with pytest.raises(ValueError, match="profile must be"):
        reproduce("medium", notebooks_dir=nb_dir, echo=lambda *a: None)


def test_memoize_caches_and_figures_only_requires_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MARGSYNTH_CACHE", raising=False)
    calls = []

    @memoize(version=1)
    def square(x, power=2):
        calls.append(x)
        return x**power

    assert square(3) == 9 and square(3) == 9 and square(x=3, power=2) == 9
    assert calls == [3]
    assert square(4) == 16 and calls == [3, 4]
    monkeypatch.setenv("MARGSYNTH_CACHE", "require")
    assert square(3) == 9
    with pytest.raises(CacheMiss, match="figures-only"):
        square(5)
    monkeypatch.setenv("MARGSYNTH_CACHE", "off")
    assert square(3) == 9 and calls == [3, 4, 3]

    @memoize(version=2)
    def square(x, power=2):  # noqa: F811 - a new version of the computation
        calls.append(("v2", x))
        return x**power

    monkeypatch.setenv("MARGSYNTH_CACHE", "on")
    square(3)
    assert calls[-1] == ("v2", 3)


def _declaring(path, cell):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(cell, metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell("pass")]
    nbformat.write(nb, path)


@pytest.mark.parametrize(
    "parameters, message",
    [
        ({"unused": 1}, "parameter 'unused' is not declared by the selected notebooks"),
        ({"profile": "huge"}, "'huge' is not a profile"),
        ({"profile": "full"}, "contradicts the profile 'quick'"),
        ({"scale": "big"}, "parameter 'scale': 'big' is a string, but its default in 01_a.ipynb is 2, an integer"),
        ({"scale": 2.5}, "2.5 is a number, but its default in 01_a.ipynb is 2"),
        ({"scale": True}, "True is a boolean"),
        ({"rate": "x"}, "its default in 02_b.ipynb is 0.5, a number"),
        ({"flags": 1}, "its default in 02_b.ipynb is [1, 2], a list"),
        ({"fast": 1}, "1 is an integer, but its default in 02_b.ipynb is False, a boolean"),
    ],
)
def test_parameters_are_checked_before_any_notebook_runs(sandbox, monkeypatch, parameters, message):
    """A name no selected notebook declares, a profile that is not one, a value of another type
    than the default: refused before papermill runs anything, naming the parameter (and, for an
    unknown name, every notebook's parameters)."""
    import papermill

    nb_dir, tmp = sandbox
    _declaring(nb_dir / "01_a.ipynb", 'profile = "quick"\nscale = 2')
    _declaring(nb_dir / "02_b.ipynb", 'profile = "quick"\nrate = 0.5\nflags = [1, 2]\nfast = False\nwhatever = None')
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("a notebook ran"))
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        reproduce("quick", parameters=parameters, notebooks_dir=nb_dir, echo=lambda *a: None)
    if "unused" in parameters:
        assert "01_a: profile, scale" in str(info.value) and "02_b: profile, rate, flags, fast, whatever" in str(info.value)
    assert not (tmp / "results").exists()


def test_each_notebook_runs_with_the_parameters_it_declares_and_the_manifest_says_so(sandbox):
    nb_dir, tmp = sandbox
    _declaring(nb_dir / "01_a.ipynb", 'profile = "quick"\nscale = 2')
    _declaring(nb_dir / "02_b.ipynb", 'profile = "quick"\nrate = 0.5\nwhatever = None\ntotal = 50_000')
    params = {"scale": 7, "rate": 1, "whatever": [1], "profile": "full"}
    results, path = reproduce("full", parameters=params, notebooks_dir=nb_dir, echo=lambda *a: None)
    assert [r.status for r in results] == ["ok", "ok"]
    manifest = json.loads(path.read_text())
    a, b = manifest["notebooks"]
    assert a["parameters"] == {"profile": "full", "scale": 7} and a["given"] == ["profile", "scale"]
    assert b["parameters"] == {"profile": "full", "rate": 1, "whatever": [1], "total": 50000}
    assert b["given"] == ["profile", "rate", "whatever"]
    assert manifest["parameters"] == params
