"""Every notebook is paired with its jupytext percent script, in sync, without outputs, with a parameters cell.

The ``.py`` pair is the reviewable source; after editing either file, ``jupytext --sync notebooks/NN_name.ipynb``.
"""

from pathlib import Path

import jupytext
import nbformat
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
PY = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _cells(nb):
    """What a pair must agree on: cell type, source (trailing blank lines aside) and tags, in order."""
    return [(c.cell_type, c.source.rstrip("\n"), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def test_pairing_config():
    config = tomllib.loads((ROOT / "jupytext.toml").read_text())
    assert config["formats"] == "ipynb,py:percent"


def test_there_are_notebooks():
    assert len(IPYNB) >= 9


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_notebook_has_a_pair(path):
    assert path.with_suffix(".py").is_file(), f"{path.name} has no pair: run jupytext --sync notebooks/{path.name}"


@pytest.mark.parametrize("path", PY, ids=lambda p: p.stem)
def test_script_has_a_notebook(path):
    assert path.with_suffix(".ipynb").is_file(), (
        f"{path.name} has no notebook: run jupytext --sync notebooks/{path.name}"
    )


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_pair_in_sync(path):
    pair = path.with_suffix(".py")
    if not pair.is_file():
        pytest.skip("no pair (reported by test_notebook_has_a_pair)")
    ipynb = _cells(nbformat.read(path, as_version=4))
    py = _cells(jupytext.read(pair, fmt="py:percent"))
    assert ipynb == py, f"{path.name} and {pair.name} differ: run jupytext --sync notebooks/{path.name}"


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.stem)
def test_stored_without_outputs_and_with_parameters(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} is stored with outputs"
    assert code and "parameters" in code[0].metadata.get("tags", ()), (
        f"{path.name}: first code cell is not tagged parameters"
    )
    assert "profile" in code[0].source, f"{path.name}: the parameters cell does not set profile"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
