"""pyproject.toml and environment.yml declare the same dependencies."""

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    return re.split(r"[<>=!\[ ]", spec.strip(), maxsplit=1)[0].lower()


def test_same_dependencies():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(s): s for s in py["dependencies"] + py["optional-dependencies"]["dev"]}
    env_specs = {}
    text = (ROOT / "environment.yml").read_text()
    for line in text[text.index("dependencies:") :].splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.\-]+[^#]*)", line)
        if m and not line.strip().endswith(":"):
            spec = m.group(1).strip()
            env_specs[_name(spec)] = spec.replace(" ", "")
    env_specs.pop("python", None)
    env_specs.pop("pip", None)
    assert set(env_specs) == set(wanted)
    for name, spec in wanted.items():
        assert env_specs[name] == spec.replace(" ", ""), name
    assert wanted["torch"] == "torch==2.13.0"
    for required in ("numpy", "pandas", "scipy", "matplotlib", "seaborn", "cvxpy", "ortools", "torch", "networkx",
                     "scikit-learn", "papermill", "jupyterlab", "ipykernel", "tqdm", "pooch", "pytest", "ruff"):  # fmt: skip
        assert required in wanted
