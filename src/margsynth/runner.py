"""The notebook runner behind ``margsynth reproduce`` and ``make reproduce``.

Executes ``notebooks/NN_*.ipynb`` with papermill. Each notebook's first code
cell is tagged ``parameters`` and defines ``profile`` (``quick`` for CI-sized
runs, ``full`` for paper scale). Executed copies go to ``results/notebooks/``
(a failed one to ``NN_name.failed.ipynb``, leaving the last good copy in
place), figures to ``figures/``, tables to ``results/tables/``. A run
manifest (JSON) records the commit, parameters, package versions, the
datasets each notebook read (real or surrogate, with SHA-256) and wall time.

Parameters given to :func:`reproduce` are checked before any notebook runs, against what
the selected notebooks declare (:func:`notebook_parameters`, papermill's reading of the
``parameters`` cell): a name none of them declares is refused (naming every notebook's
parameters), ``profile`` takes only :data:`PROFILES`, and a value whose type differs from
the parameter's default (a string for a number, a number for a list, ...) is refused; a
default of ``None`` takes any value. Each notebook gets the parameters it declares, and
the manifest records, per notebook, the value every parameter ran with (``parameters``:
the value given, else the default) and which were given (``given``).
"""

from __future__ import annotations

import ast
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import nbformat
import papermill as pm
from tqdm.auto import tqdm

from .experiments import snapshots
from .paths import atomic_path, project_root, results_dir
from .timing import Stopwatch

__all__ = [
    "NotebookFailure",
    "NotebookResult",
    "check_parameters",
    "discover",
    "notebook_parameters",
    "reproduce",
    "run_notebook",
]

PROFILES = ("quick", "full")
PACKAGES = (
    "margsynth", "numpy", "pandas", "scipy", "matplotlib", "seaborn", "cvxpy", "highspy", "ortools", "torch",
    "networkx", "scikit-learn", "papermill", "jupyterlab", "ipykernel", "tqdm", "pooch",
)  # fmt: skip


class NotebookFailure(RuntimeError):
    """A notebook raised: names the notebook, the cell and the error."""


@dataclass
class NotebookResult:
    notebook: str
    status: str  # "ok" or "failed"
    seconds: float
    output: str
    parameters: dict[str, Any]  # every parameter's value in the run: the one given, else the default
    data: list[dict] = field(default_factory=list)
    error: str | None = None
    given: list[str] = field(default_factory=list)  # the parameters given (injected by papermill)


def discover(notebooks_dir: Path | None = None, only: list[str] | None = None) -> list[Path]:
    """``NN_*.ipynb`` notebooks in number order; ``only`` filters by number
    (``"01"``, ``"1"``) or name."""
    nb_dir = notebooks_dir or project_root() / "notebooks"
    found = sorted(p for p in nb_dir.glob("[0-9][0-9]_*.ipynb"))
    if not only:
        return found
    wanted, picked = list(only), []
    for w in wanted:
        hits = [p for p in found if p.stem == w or p.name == w or (w.isdigit() and int(p.stem[:2]) == int(w))]
        if not hits:
            raise ValueError(f"--only {w!r} matches no notebook in {nb_dir}; have {[p.name for p in found]}")
        picked.extend(h for h in hits if h not in picked)
    return sorted(picked)


def _literal(text: str) -> Any:
    """A default's source as a Python value (``"50_000"`` -> 50000), else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def notebook_parameters(path: Path) -> dict[str, Any] | None:
    """The parameters the notebook's cell tagged ``parameters`` declares, name -> default (a
    Python value, or the source text of a default that is not a literal), in their order
    (``papermill.inspect_notebook``); ``None`` when no cell is tagged ``parameters``."""
    nb = nbformat.read(path, as_version=4)
    if not any(c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        return None
    return {name: _literal(p["default"]) for name, p in pm.inspect_notebook(str(path)).items()}


def _type_name(value: Any) -> str:
    if value is None:
        return "None"
    name = {str: "string", bool: "boolean", int: "integer", float: "number"}.get(type(value), type(value).__name__)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _fits(value: Any, default: Any) -> bool:
    """Whether ``value`` has the type of the parameter's ``default`` (``None``: any; a float
    takes an int; a bool is not a number)."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def check_parameters(paths: list[Path], profile: str, parameters: dict[str, Any] | None) -> dict[Path, dict[str, Any]]:
    """The parameters each of ``paths`` runs with (``profile`` and the given ones it declares),
    after the checks of the module docstring; ``ValueError`` starting ``parameter 'NAME'``
    for the first that fails. Nothing runs."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    declared = {}
    for path in paths:
        names = notebook_parameters(path)
        if names is None:
            raise ValueError(f"{path.name}: no code cell tagged 'parameters'")
        if "profile" not in names:
            raise ValueError(f"{path.name}: its parameters cell defines no 'profile'")
        declared[path] = names
    given = dict(parameters or {})
    if "profile" in given:
        value = given.pop("profile")
        if not isinstance(value, str) or value not in PROFILES:
            raise ValueError(f"parameter 'profile': {value!r} is not a profile; expected one of {list(PROFILES)}")
        if value != profile:
            raise ValueError(f"parameter 'profile': {value!r} contradicts the profile {profile!r}; give the profile once")
    for name, value in given.items():
        having = [p for p in paths if name in declared[p]]
        if not having:
            listing = "; ".join(f"{p.stem}: {', '.join(declared[p])}" for p in paths)
            raise ValueError(
                f"parameter {name!r} is not declared by the selected notebooks; expected one of their parameters "
                f"({listing})"
            )
        for p in having:
            default = declared[p][name]
            if not _fits(value, default):
                raise ValueError(
                    f"parameter {name!r}: {value!r} is {_type_name(value)}, but its default in {p.name} is "
                    f"{default!r}, {_type_name(default)}; expected {_type_name(default)}"
                )
    return {p: {"profile": profile, **{k: v for k, v in given.items() if k in declared[p]}} for p in paths}


def run_notebook(
    path: Path, profile: str = "quick", parameters: dict[str, Any] | None = None, out_dir: Path | None = None
) -> NotebookResult:
    """Execute one notebook with papermill; never raises for a notebook error
    (the result says ``failed`` and names the cell and error)."""
    names = notebook_parameters(path)
    params = check_parameters([path], profile, {k: v for k, v in (parameters or {}).items() if k in (names or {})})[path]
    out_dir = out_dir or results_dir() / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / path.name
    prov = out_dir / f".{path.stem}.provenance.jsonl"
    prov.unlink(missing_ok=True)
    env_before = os.environ.get("MARGSYNTH_PROVENANCE_FILE")
    os.environ["MARGSYNTH_PROVENANCE_FILE"] = str(prov)
    clock = Stopwatch()
    error = None
    try:
        with atomic_path(target, suffix=".ipynb") as tmp:
            try:
                pm.execute_notebook(
                    str(path), str(tmp), parameters=params, cwd=str(project_root()),
                    kernel_name="python3", progress_bar=False, log_output=False,
                )  # fmt: skip
            except pm.PapermillExecutionError as exc:
                error = f"{path.name}: cell {exc.exec_count} raised {exc.ename}: {exc.evalue}"
                failed = out_dir / f"{path.stem}.failed.ipynb"
                os.replace(tmp, failed)
                raise NotebookFailure(error) from exc
    except NotebookFailure:
        pass
    finally:
        if env_before is None:
            os.environ.pop("MARGSYNTH_PROVENANCE_FILE", None)
        else:
            os.environ["MARGSYNTH_PROVENANCE_FILE"] = env_before
    seconds = clock.elapsed()
    data = []
    if prov.exists():
        seen = {}
        for line in prov.read_text().splitlines():
            rec = json.loads(line)
            seen[rec["dataset"]] = rec
        data = list(seen.values())
        prov.unlink()
    return NotebookResult(
        path.name, "failed" if error else "ok", round(seconds, 2),
        str(out_dir / (f"{path.stem}.failed.ipynb" if error else path.name)), {**names, **params}, data, error,
        sorted(params),
    )  # fmt: skip


def _commit() -> dict[str, Any]:
    root = project_root()
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(
            subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True).stdout.strip()
        )
        return {"commit": sha, "dirty": dirty}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def _versions() -> dict[str, str | None]:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def reproduce(
    profile: str = "quick",
    only: list[str] | None = None,
    parameters: dict[str, Any] | None = None,
    figures_only: bool = False,
    notebooks_dir: Path | None = None,
    echo=print,
    publish: bool = False,
) -> tuple[list[NotebookResult], Path]:
    """Run the notebooks and write the run manifest; returns (results, manifest path).
    ``publish``: also write a published snapshot (:mod:`margsynth.experiments.snapshots`)
    of every notebook that succeeded (the ``full`` profile only: refused before any
    notebook runs otherwise)."""
    paths = discover(notebooks_dir, only)
    if not paths:
        raise ValueError("no notebooks to run")
    per_notebook = check_parameters(paths, profile, parameters)  # every check before any notebook runs
    if publish and profile != "full":
        raise ValueError(
            f"--publish keeps paper-scale runs as the notebooks' published snapshots; it needs the full profile, "
            f"got {profile!r} (a {profile} run would replace them)"
        )
    saved = os.environ.get("MARGSYNTH_CACHE")
    if figures_only:
        os.environ["MARGSYNTH_CACHE"] = "require"
    started = _dt.datetime.now(_dt.timezone.utc)
    results = []
    try:
        for path in tqdm(paths, desc=f"notebooks ({profile})", unit="nb", file=sys.stderr):
            res = run_notebook(path, profile, per_notebook[path])
            results.append(res)
            src = sorted({d["source"] for d in res.data}) or ["none"]
            echo(f"{res.status.upper():6s} {res.notebook:40s} {res.seconds:8.1f} s  data: {'/'.join(src)}")
            if res.error:
                echo(f"       {res.error}")
    finally:
        if figures_only:
            if saved is None:
                os.environ.pop("MARGSYNTH_CACHE", None)
            else:
                os.environ["MARGSYNTH_CACHE"] = saved
    manifest = {
        "started": started.isoformat(timespec="seconds"),
        "profile": profile,
        "figures_only": figures_only,
        "parameters": parameters or {},
        **_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": snapshots.machine(),
        "packages": _versions(),
        "data_mirror": os.environ.get("MARGSYNTH_DATA_MIRROR"),
        "data_source": (
            "surrogate" if any(d["source"] == "surrogate" for r in results for d in r.data)
            else "real" if any(r.data for r in results) else "none"
        ),
        "notebooks": [r.__dict__ for r in results],
        "wall_seconds": round(sum(r.seconds for r in results), 2),
    }  # fmt: skip
    mdir = results_dir() / "manifests"
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    path = mdir / f"run-{stamp}.json"
    for target in (path, results_dir() / "manifest.json"):
        with atomic_path(target, suffix=".json") as tmp:
            tmp.write_text(json.dumps(manifest, indent=2))
    if publish:
        for r in results:
            if r.status == "ok":
                echo(f"published {snapshots.publish(Path(r.notebook).stem, manifest)}")
    return results, path
