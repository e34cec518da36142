"""The notebook runner behind ``margsynth reproduce`` and ``make reproduce``.

Executes ``notebooks/NN_*.ipynb`` with papermill. Each notebook's first code
cell is tagged ``parameters`` and defines ``profile`` (``quick`` for CI-sized
runs, ``full`` for paper scale). Executed copies go to ``results/notebooks/``
(a failed one to ``NN_name.failed.ipynb``, leaving the last good copy in
place), figures to ``figures/``, tables to ``results/tables/``. A run
manifest (JSON) records the commit, parameters, package versions, the
datasets each notebook read (real or surrogate, with SHA-256) and wall time.
"""

from __future__ import annotations

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

from .paths import atomic_path, project_root, results_dir
from .timing import Stopwatch

__all__ = ["NotebookFailure", "NotebookResult", "discover", "reproduce", "run_notebook"]

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
    parameters: dict[str, Any]
    data: list[dict] = field(default_factory=list)
    error: str | None = None


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


def _parameter_names(path: Path) -> set[str] | None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            names = set()
            for line in cell.source.splitlines():
                head = line.split("#", 1)[0]
                if "=" in head and not head.startswith((" ", "\t")):
                    names.add(head.split("=", 1)[0].strip().split(":")[0].strip())
            return names
    return None


def run_notebook(
    path: Path, profile: str = "quick", parameters: dict[str, Any] | None = None, out_dir: Path | None = None
) -> NotebookResult:
    """Execute one notebook with papermill; never raises for a notebook error
    (the result says ``failed`` and names the cell and error)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    names = _parameter_names(path)
    if names is None:
        raise ValueError(f"{path.name}: no code cell tagged 'parameters'")
    if "profile" not in names:
        raise ValueError(f"{path.name}: its parameters cell defines no 'profile'")
    params = {"profile": profile}
    for k, v in (parameters or {}).items():
        if k in names:
            params[k] = v
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
        str(out_dir / (f"{path.stem}.failed.ipynb" if error else path.name)), params, data, error,
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
) -> tuple[list[NotebookResult], Path]:
    """Run the notebooks and write the run manifest; returns (results, manifest path)."""
    paths = discover(notebooks_dir, only)
    if not paths:
        raise ValueError("no notebooks to run")
    saved = os.environ.get("MARGSYNTH_CACHE")
    if figures_only:
        os.environ["MARGSYNTH_CACHE"] = "require"
    started = _dt.datetime.now(_dt.timezone.utc)
    results = []
    try:
        for path in tqdm(paths, desc=f"notebooks ({profile})", unit="nb", file=sys.stderr):
            res = run_notebook(path, profile, parameters)
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
    return results, path
