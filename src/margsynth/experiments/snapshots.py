"""Published snapshots: paper-scale results kept in the repository.

A notebook's ``full`` profile can take CPU-hours (notebook 05's paper-scale PrivPGD
comparison, notebook 06's penalty sweep). Its result tables are therefore committed once,
under ``results/published/<notebook>/`` beside a ``manifest.json`` that says how they were
made: the commit and whether the tree was dirty, the profile and every parameter's value,
the machine (platform, CPU model, cores, memory), the notebook's wall time, the package
versions, the datasets read (with their SHA-256) and each table's SHA-256. The notebooks plot
a snapshot with the same functions they plot a fresh run with, without recomputing.

``margsynth reproduce --publish`` writes a snapshot for every notebook of the run that
succeeded (:func:`publish`); :func:`load` and :func:`manifest` read one back. The tables of
a notebook are the CSVs it saved in that run (``results/tables/NN_*.csv`` written after the
run started). The published folder sits under the project root, not under
``MARGSYNTH_RESULTS_DIR``: it is part of the repository.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from ..paths import file_sha256, project_root, results_dir

__all__ = ["available", "describe", "load", "machine", "manifest", "publish", "snapshot_dir"]

MANIFEST = "manifest.json"


def snapshot_dir(notebook: str) -> Path:
    """``results/published/<notebook>`` under the project root (``notebook``: a stem such as
    ``"05_privpgd_benchmark"``)."""
    if not notebook or "/" in notebook or notebook.startswith("."):
        raise ValueError(f"notebook must be a notebook's stem such as '05_privpgd_benchmark', got {notebook!r}")
    return project_root() / "results" / "published" / notebook


def available(notebook: str) -> bool:
    """Whether ``notebook`` has a published snapshot."""
    return (snapshot_dir(notebook) / MANIFEST).is_file()


def manifest(notebook: str) -> dict[str, Any]:
    """The snapshot's manifest (commit, parameters, machine, wall time, tables)."""
    path = snapshot_dir(notebook) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no published snapshot of {notebook} ({path} is missing)")
    return json.loads(path.read_text())


def load(notebook: str, table: str) -> pd.DataFrame:
    """One table of the snapshot (``table``: its name without ``.csv``, e.g. ``"05_runs"``);
    its SHA-256 is checked against the manifest's."""
    meta = manifest(notebook)
    tables = meta.get("tables", {})
    if table not in tables:
        raise ValueError(f"table {table!r} is not in the snapshot of {notebook}; it has {sorted(tables)}")
    path = snapshot_dir(notebook) / f"{table}.csv"
    digest = file_sha256(path)
    if digest != tables[table]:
        raise ValueError(f"{path} does not match its manifest (SHA-256 {digest[:16]}…, expected {tables[table][:16]}…)")
    return pd.read_csv(path)


def describe(notebook: str) -> str:
    """One line saying how the snapshot was made (for a notebook to print above its plots)."""
    m = manifest(notebook)
    mach = m.get("machine", {})
    params = {k: v for k, v in m.get("parameters", {}).items() if k in m.get("given", [])}
    hours = m.get("wall_seconds", 0) / 3600
    return (
        f"{notebook}: profile {m.get('profile')}, parameters {params or 'the defaults'}; commit "
        f"{(m.get('commit') or 'unknown')[:10]}{' (dirty)' if m.get('dirty') else ''}; run {m.get('started')}, "
        f"{hours:.1f} h wall on {mach.get('cores', '?')} cores ({mach.get('cpu', 'unknown CPU')})"
    )


def machine() -> dict[str, Any]:
    """The machine a run is on: platform, CPU model, logical cores, memory (GiB), load average."""
    cpu = platform.processor() or None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = round(int(line.split()[1]) / 2**20, 1)
                break
    except (OSError, ValueError, IndexError):
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory,
        "load_average": load,
    }


def _tables_of(notebook: str, since: _dt.datetime, tables_dir: Path) -> list[Path]:
    """The CSVs ``notebook`` saved in a run that started at ``since``: ``NN_*.csv`` under
    ``tables_dir`` modified after it."""
    prefix = notebook[:2]
    cutoff = since.timestamp()
    return sorted(p for p in tables_dir.glob(f"{prefix}_*.csv") if p.stat().st_mtime >= cutoff)


def publish(notebook: str, run: dict[str, Any] | None = None, *, tables_dir: Path | None = None) -> Path:
    """Copy the tables ``notebook`` saved in the run of ``run`` (a run manifest as
    :func:`margsynth.runner.reproduce` writes it; default ``results/manifest.json``, the
    latest run) to its snapshot folder with a manifest; returns the folder. Refused
    (``ValueError``, nothing written) when the run did not run the notebook, the notebook
    failed, or it saved no table. The folder is replaced as a whole: no table of an earlier
    snapshot stays beside the new ones."""
    if run is None:
        path = results_dir() / "manifest.json"
        if not path.is_file():
            raise ValueError(f"no run manifest at {path}; run `margsynth reproduce` first")
        run = json.loads(path.read_text())
    entries = [e for e in run.get("notebooks", []) if Path(e["notebook"]).stem == notebook]
    if not entries:
        ran = [Path(e["notebook"]).stem for e in run.get("notebooks", [])]
        raise ValueError(f"notebook {notebook!r} is not in the run of {run.get('started')}; it ran {ran}")
    entry = entries[-1]
    if entry.get("status") != "ok":
        raise ValueError(
            f"notebook {notebook!r} failed in the run of {run.get('started')}; only a run that succeeded is published"
        )
    started = _dt.datetime.fromisoformat(run["started"])
    tables = _tables_of(notebook, started, tables_dir or results_dir() / "tables")
    if not tables:
        raise ValueError(f"notebook {notebook!r} saved no table in the run of {run['started']}; nothing to publish")
    meta = {
        "notebook": notebook,
        "commit": run.get("commit"),
        "dirty": run.get("dirty"),
        "profile": run.get("profile"),
        "parameters": entry.get("parameters", {}),
        "given": entry.get("given", []),
        "started": run["started"],
        "wall_seconds": entry.get("seconds"),
        "machine": run.get("machine") or {**machine(), "recorded": "at publishing (the run's manifest has none)"},
        "python": run.get("python"),
        "packages": run.get("packages", {}),
        "data": entry.get("data", []),
        "published": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tables": {p.stem: file_sha256(p) for p in tables},
    }
    target = snapshot_dir(notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{notebook}.", dir=target.parent))
    old = None
    try:
        for p in tables:
            shutil.copyfile(p, tmp / p.name)
        (tmp / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
        if target.exists():  # the earlier snapshot goes aside, then away once the new one is in place
            old = target.with_name(f".{notebook}.old-{os.getpid()}")
            os.replace(target, old)
        os.replace(tmp, target)
    except BaseException:
        if old is not None and not target.exists():
            os.replace(old, target)
            old = None
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return target
