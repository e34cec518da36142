"""Cross-check of our SDNist k-marginal score (``margsynth.metrics.kmarginal``) against sdnist 2.4 itself.

Source: NIST, *SDNist v2: Deidentified Data Report tool*, the ``sdnist`` package version 2.4
(``sdnist.metrics.kmarginal.KMarginal`` on the data its report prepares in
``sdnist.report.dataset.Dataset``: validation, transformation, percentile and DENSITY binning).

For each NIST excerpt (``ma2018``, ``tx2018``, ``national2018``: the registered 2018 files) both
implementations score the same CSV files against the excerpt:

* ``target``: the excerpt itself (1000 in both);
* ``subsample-P%``: P% of its records, drawn without replacement (our seeded draw);
* ``shuffled-columns``: every column permuted independently (1-way marginals kept, all
  dependence destroyed);
* ``independent``: every column sampled with replacement from the excerpt's column;
* ``perturbed``: the shuffled table with every numeric value moved by Gaussian noise and
  written with two decimals (exercises truncation, values outside the target's range and
  unbinned values; DENSITY kept above 0, where sdnist 2.4 fails);
* ``mst-eps1``: ``margsynth synth mst --epsilon 1 --delta 1e-9`` on the excerpt with a schema
  drafted by ``margsynth schema init --public`` (every column categorical, its categories taken
  from the excerpt: a check of the metric, not a privacy claim; ``--no-mst`` skips it).

It prints both scores and their difference, then SDNist's own subsample baselines (its
report's ``DataFrame.sample(frac)``, seeded here through ``numpy.random.seed``) beside ours
(:func:`~margsynth.metrics.kmarginal.subsample_baselines`): different draws, so they agree
only up to sampling noise.

``--validate CSV --dataset NAME`` instead runs SDNist's validator on one synthetic CSV and prints,
per column, whether SDNist accepts it (or the values it rejects) beside our verdict.

sdnist 2.4 pins numpy 1.24 and pandas 2.0, so it cannot live beside margsynth: install it into a
*separate* virtual environment and pass its interpreter (or set ``$MARGSYNTH_SDNIST_PYTHON``)::

    python3 -m venv /tmp/venv-sdnist && /tmp/venv-sdnist/bin/pip install sdnist==2.4
    python benchmarks/bench_kmarginal.py --sdnist-python /tmp/venv-sdnist/bin/python
    python benchmarks/bench_kmarginal.py --sdnist-python ... --validate OUT.csv --dataset ma2018

The sdnist side runs in a subprocess of that interpreter (this file, ``--worker``): it lays the
target out as sdnist's data root expects (``massachusetts/ma2019.csv`` beside a parameters file
whose schema is drafted from the target, the data dictionary, a ``config.json`` and PUMA
names), builds sdnist's ``Dataset`` for each synthetic file and computes ``KMarginal``; sdnist's
own config (PUMA as group feature) applies. Real data only; not run in CI.

Measured 2026-11-28 (sdnist 2.4, numpy 1.24.2, pandas 2.0.0): see docs/notes/sdnist_kmarginal.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

SDNIST_ENV = "MARGSYNTH_SDNIST_PYTHON"
#: Columns sdnist's parameters file describes by a range (``min``/``max``) rather than a value list.
RANGE_FEATURES = ("AGEP", "DENSITY", "PINCP", "POVPIP", "PWGTP", "WGTP")
NUMERIC_FEATURES = ("AGEP", "PINCP", "POVPIP", "PWGTP", "WGTP", "DENSITY")


# -- the sdnist side (runs under the sdnist interpreter: numpy, pandas and sdnist only) ------------------


def _code_key(v: str):
    return (v != "N", int(v) if v.lstrip("-").isdigit() else 0, v)


def _data_root(root: Path, target_csv: Path, dictionary: Path) -> Path:
    """sdnist's data root for ``target_csv``, under the name of its Massachusetts 2019 slot."""
    dd = json.loads(dictionary.read_text())
    df = pd.read_csv(target_csv, dtype=str, keep_default_na=False)
    schema = {}
    for c in df.columns:
        col = df[c]
        has_null = bool((col == "N").any())
        d: dict = {"has_null": True, "null_value": "N"} if has_null else {}
        d["dtype"] = "object" if (c == "PUMA" or has_null) else ("float64" if c == "DENSITY" else "int64")
        if c in RANGE_FEATURES:
            nums = pd.to_numeric(col[col != "N"])
            cast = float if c == "DENSITY" else int
            d["min"], d["max"] = cast(nums.min()), cast(nums.max())
        else:
            vals = sorted(set(col), key=_code_key)
            d["values"] = vals if d["dtype"] == "object" else [int(v) for v in vals]
        schema[c] = d
    folder = root / "massachusetts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ma2019.json").write_text(json.dumps({"schema": schema}))
    shutil.copyfile(target_csv, folder / "ma2019.csv")
    config = {"drop_features": [], "k_marginal": {"ignore_features": [], "group_features": ["PUMA"]}}
    (root / "config.json").write_text(json.dumps(config))
    (root / "mappings.json").write_text(json.dumps({"PUMA": {k: {"name": v} for k, v in dd["PUMA"]["values"].items()}}))
    shutil.copyfile(dictionary, root / "data_dictionary.json")
    return root


def _worker(spec_path: str, out_path: str) -> None:  # runs under the sdnist interpreter
    # sdnist.report.dataset first: sdnist's modules import one another in a cycle that only this order resolves
    from sdnist.report.dataset import Dataset  # noqa: I001
    import sdnist.utils as su
    from sdnist.load import TestDatasetName
    from sdnist.metrics.kmarginal import KMarginal
    from sdnist.report.dataset.validate import validate
    from sdnist.report.score.utility import kmarginal_subsamples
    from sdnist.version import __version__

    spec = json.loads(Path(spec_path).read_text())
    out: dict = {"version": __version__, "scores": {}, "validation": {}}
    dd = json.loads(Path(spec["dictionary"]).read_text())
    target_columns = pd.read_csv(spec["target"], nrows=0).columns
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
        root = _data_root(Path(tmp) / "root", Path(spec["target"]), Path(spec["dictionary"]))
        for name, path in spec["synthetic"].items():
            # the validator alone, on the columns the report would check (read as the report reads them)
            synth = pd.read_csv(path)
            common = [c for c in synth.columns if c in target_columns]
            _, log = validate(synth[common], dd, common)
            out["validation"][name] = {
                "checked": common,
                "out_of_bound": {k: sorted(map(str, set(v))) for k, v in log["values_out_of_bound"].items()},
            }
            try:
                ds = Dataset(Path(path), su.SimpleLogger(), TestDatasetName.ma2019, root, False)
                group = ds.config["k_marginal"]["group_features"]
                km = KMarginal(ds.d_target_data, ds.d_synthetic_data, group)
                km.compute_score()
                out["scores"][name] = float(km.score)
                if name == spec.get("baselines_of"):
                    np.random.seed(spec["seed"])  # noqa: NPY002 - sdnist samples with numpy's global generator
                    subs, _ = kmarginal_subsamples(ds, KMarginal, group)
                    np.random.seed(spec["seed"])  # noqa: NPY002 - the same, for our fractions
                    km_scores = {}
                    for frac in spec["fractions"]:
                        s = ds.d_target_data.sample(frac=frac)
                        k = KMarginal(ds.d_target_data, s, group)
                        k.compute_score()
                        km_scores[str(frac)] = float(k.score)
                    out["baselines"] = km_scores
                    out["baselines_report_int"] = {str(k): v for k, v in subs.items()}
            except Exception as exc:  # noqa: BLE001 - report sdnist's failure on this file and go on
                out["scores"][name] = None
                out["validation"][name]["error"] = f"{type(exc).__name__}: {exc}"
    Path(out_path).write_text(json.dumps(out))


# -- our side ---------------------------------------------------------------------------------------------


def _run_sdnist(python: str, target: Path, dictionary: Path, files: dict[str, Path], **extra) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        body = {
            "target": str(target),
            "dictionary": str(dictionary),
            "synthetic": {k: str(v) for k, v in files.items()},
        }
        spec.write_text(json.dumps({**body, **extra}))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        # sdnist logs every step: kept out of the table, shown only when the worker fails
        done = subprocess.run(
            [python, __file__, "--worker", str(spec), str(out)], env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
            raise SystemExit(f"the sdnist worker ({python}) failed with status {done.returncode}")
        return json.loads(out.read_text())


def _variants(t: pd.DataFrame, fractions, seed: int, folder: Path, name: str, mst: bool) -> dict[str, Path]:
    rng = np.random.default_rng(seed)
    tables: dict[str, pd.DataFrame] = {"target": t}
    for p in fractions:
        rows = rng.choice(len(t), size=round(p * len(t)), replace=False)
        tables[f"subsample-{p * 100:g}%"] = t.iloc[np.sort(rows)]
    shuffled = t.copy()
    for c in shuffled.columns:
        shuffled[c] = rng.permutation(shuffled[c].to_numpy())
    tables["shuffled-columns"] = shuffled
    tables["independent"] = pd.DataFrame({c: rng.choice(t[c].to_numpy(), size=len(t)) for c in t.columns})
    perturbed = shuffled.copy()
    for c in NUMERIC_FEATURES:
        v = perturbed[c].to_numpy(dtype=object)
        ok = v != "N"
        x = pd.to_numeric(pd.Series(v[ok])).to_numpy(dtype=float)
        x = x + rng.normal(0.0, 0.3 * x.std() + 1.0, size=x.size)
        if c == "DENSITY":
            x = np.maximum(x, 1.0)
        v[ok] = [f"{z:.2f}" for z in x]
        perturbed[c] = v
    tables["perturbed"] = perturbed
    files = {}
    for key, table in tables.items():
        files[key] = folder / f"{name}-{key.replace('%', 'pct')}.csv"
        table.to_csv(files[key], index=False)
    if mst:
        schema, out = folder / f"{name}-schema.json", folder / f"{name}-mst-eps1.csv"
        cli = [sys.executable, "-m", "margsynth"]
        subprocess.run(
            [*cli, "schema", "init", name, "--public", "--out", str(schema), "--force"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(
            [
                *cli,
                "synth",
                "mst",
                "--dataset",
                name,
                "--schema",
                str(schema),
                "--epsilon",
                "1",
                "--delta",
                "1e-9",
                "--seed",
                str(seed),
                "--out",
                str(out),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        files["mst-eps1"] = out
    return files


def _registered(name: str) -> tuple[pd.DataFrame, dict, Path]:
    from margsynth.data import load_data_dictionary, load_raw
    from margsynth.data.fetch import local_path
    from margsynth.data.registry import NIST_CRC_DICTIONARY, dataset_info

    t, dd = load_raw(name), load_data_dictionary(name)
    entry = next(e for e in dataset_info(name).files if e.path == NIST_CRC_DICTIONARY)
    return t, dd, local_path(entry)


def _validate(args) -> None:
    from margsynth.data import read_raw_csv
    from margsynth.metrics.kmarginal import kmarginal_score, validate_columns

    t, dd, dd_path = _registered(args.dataset)
    synth = read_raw_csv(args.validate)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "target.csv"
        t.to_csv(target, index=False)
        res = _run_sdnist(args.sdnist_python, target, dd_path, {"file": Path(args.validate)})
    val = res["validation"]["file"]
    ours = validate_columns(synth, data_dictionary=dd)
    print(f"{'column':14s} {'sdnist ' + res['version'] + ' validator':40s} ours")
    for c in synth.columns:
        if c not in t.columns:
            print(f"{c:14s} {'not a target column (ignored)':40s} ignored")
            continue
        bad = val["out_of_bound"].get(c)
        theirs = f"rejects {bad[:5]}" if bad else "accepted"
        mine = f"rejects {list(ours[c][:5])}" if c in ours else "accepted"
        print(f"{c:14s} {theirs:40s} {mine}")
    for c in t.columns:
        if c not in synth.columns:
            print(f"{c:14s} {'absent from the file':40s} absent")
    accepted = not val["out_of_bound"] and not ours
    print(
        f"every column accepted: sdnist {'yes' if not val['out_of_bound'] else 'no'}, ours {'yes' if not ours else 'no'}"
    )
    if "error" in val:
        print(f"sdnist's report failed on the file: {val['error'][:200]}")
    elif res["scores"]["file"] is not None:
        score = kmarginal_score(t, synth, data_dictionary=dd).score
        print(f"k-marginal: sdnist {res['scores']['file']:.6f}  ours {score:.6f}")
    if not accepted:
        raise SystemExit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sdnist-python", default=os.environ.get(SDNIST_ENV), help=f"interpreter with sdnist 2.4 (or ${SDNIST_ENV})"
    )
    ap.add_argument("--datasets", default="ma2018,tx2018,national2018", help="NIST excerpts to score against")
    ap.add_argument("--fractions", default="0.05,0.1,0.2,0.4", help="subsample fractions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-mst", action="store_true", help="skip the table made by margsynth synth mst")
    ap.add_argument("--validate", metavar="CSV", help="only validate this synthetic CSV with sdnist (and with ours)")
    ap.add_argument("--dataset", default="ma2018", help="the excerpt --validate checks against")
    ap.add_argument("--worker", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(*args.worker)
        return
    if not args.sdnist_python:
        ap.error(f"--sdnist-python (or ${SDNIST_ENV}): an interpreter with sdnist 2.4 installed")
    if args.validate:
        _validate(args)
        return

    from margsynth.data import read_raw_csv
    from margsynth.metrics.kmarginal import kmarginal_score, subsample_baselines

    fractions = [float(f) for f in args.fractions.split(",")]
    print(f"{'dataset':13s} {'synthetic':18s} {'ours':>12s} {'sdnist':>12s} {'ours - sdnist':>14s}  dropped")
    worst = 0.0
    for name in args.datasets.split(","):
        t, dd, dd_path = _registered(name)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            files = _variants(t, fractions, args.seed, folder, name, not args.no_mst)
            target = files["target"]
            res = _run_sdnist(
                args.sdnist_python, target, dd_path, files, baselines_of="target", seed=args.seed, fractions=fractions
            )
            for key, path in files.items():
                ours = kmarginal_score(t, read_raw_csv(path), data_dictionary=dd)
                theirs = res["scores"][key]
                diff = "" if theirs is None else f"{ours.score - theirs:+14.2e}"
                worst = max(worst, 0.0 if theirs is None else abs(ours.score - theirs))
                shown = "failed" if theirs is None else f"{theirs:12.6f}"
                print(f"{name:13s} {key:18s} {ours.score:12.6f} {shown:>12s} {diff:>14s}  {sorted(ours.dropped) or ''}")
                if theirs is None:
                    print(f"    sdnist: {res['validation'][key]['error'][:200]}")
        ours_b = subsample_baselines(t, fractions=fractions, seed=args.seed, data_dictionary=dd)
        cells = "  ".join(
            f"{p * 100:g}%: ours {ours_b[p]:.1f} / sdnist {res['baselines'][str(p)]:.1f}" for p in fractions
        )
        print(f"{name:13s} baselines (different draws)  {cells}")
        report = res["baselines_report_int"]
        print(
            f"{name:13s} sdnist report's baselines (int): "
            + ", ".join(f"{float(k) * 100:g}%: {v}" for k, v in report.items())
        )
    print(f"largest |ours - sdnist| over the scored files: {worst:.2e} (sdnist {res['version']})")


if __name__ == "__main__":
    main()
