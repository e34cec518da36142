"""MST through the raw path on tables of 1M, 10M and 100M rows, read and written in chunks:
wall time and peak RSS per size and format (CSV, Parquet), and the k-marginal score of a
10M-row run against the same run on a 1M-row sample of its table.

The table is our own deterministic generator of ACS-like person records (the 24 columns
of the NIST excerpts, :func:`margsynth.data.load_raw` ``("ma2018")``, with the kinds and
codes of their data dictionary): a latent-class model — each row draws one of
:data:`CLASSES` classes, then every column independently given its class — so that
columns are correlated as survey columns are, and every value is one SDNist's k-marginal
scorer accepts. Chunk ``i`` of a table is drawn from ``SeedSequence([seed, i])``: a table of
any size is the same whatever the chunk size it is written with, and its first 1M rows are a
sample of the 10M table.

    python benchmarks/bench_scale.py [--sizes 1000000 10000000 100000000] [--formats csv parquet]
                                     [--workdir /tmp/bench-scale] [--keep] [--score]

Each run is ``margsynth synth mst --schema ...`` in a child process (its peak RSS: its
``VmHWM``, polled); the files are written under ``--workdir`` and removed after each size unless
``--keep``. Prints one line per run and a table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pac
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

CLASSES = 12
CHUNK = 1_000_000
PUMAS = ("25-00503", "25-00703", "25-01000", "25-01300", "25-02800")
DENSITY = {"25-00503": "2872.7", "25-00703": "2195.3", "25-01000": "1457.2", "25-01300": "3683.9", "25-02800": "2447.1"}
CATEGORICAL = {
    "SEX": ("1", "2"),
    "MSP": ("N", "1", "2", "3", "4", "5", "6"),
    "HISP": ("0", "1", "2", "3", "4"),
    "RAC1P": ("1", "2", "3", "4", "5", "6", "7", "8", "9"),
    "NOC": ("N", "0", "1", "2", "3", "4", "5"),
    "NPF": ("N", "2", "3", "4", "5", "6", "7", "8"),
    "HOUSING_TYPE": ("1", "2", "3"),
    "OWN_RENT": ("0", "1", "2"),
    "INDP_CAT": ("N", *map(str, range(19))),
    "EDU": ("N", *map(str, range(1, 13))),
    "PINCP_DECILE": ("N", *map(str, range(10))),
    "DVET": ("N", "1", "2", "3", "4", "5", "6"),
    "DREM": ("N", "1", "2"),
    "DPHY": ("N", "1", "2"),
    "DEYE": ("1", "2"),
    "DEAR": ("1", "2"),
}
INDP = ("N", *(f"{v}" for v in range(170, 9921, 49)))
COLUMNS = ("PUMA", "AGEP", "SEX", "MSP", "HISP", "RAC1P", "NOC", "NPF", "HOUSING_TYPE", "OWN_RENT", "DENSITY", "INDP",
           "INDP_CAT", "EDU", "PINCP", "PINCP_DECILE", "POVPIP", "DVET", "DREM", "DPHY", "DEYE", "DEAR", "PWGTP", "WGTP")  # fmt: skip


def _model(seed: int = 2018) -> dict:
    """The generator's parameters (fixed by ``seed``): class weights, per-class category
    probabilities and numeric means."""
    rng = np.random.default_rng(seed)
    cats = {**CATEGORICAL, "PUMA": PUMAS, "INDP": INDP}
    return {
        "weights": rng.dirichlet(np.full(CLASSES, 2.0)),
        "probs": {c: rng.dirichlet(np.full(len(v), 0.4), size=CLASSES) for c, v in cats.items()},
        "age": rng.uniform(8, 80, CLASSES),
        "income": rng.uniform(8.5, 11.5, CLASSES),
        "income_null": rng.uniform(0.0, 0.4, CLASSES),
        "pov": rng.uniform(80, 450, CLASSES),
        "weight": rng.uniform(20, 150, CLASSES),
    }


def _pick(rng: np.random.Generator, probs: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """A value index per row, drawn from its class's probabilities."""
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random(cls.size)
    out = np.empty(cls.size, dtype=np.int32)
    for k in range(probs.shape[0]):
        rows = cls == k
        out[rows] = np.searchsorted(cdf[k], u[rows], side="right")
    return np.minimum(out, probs.shape[1] - 1)


def _text(values: tuple[str, ...], idx: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(values, pa.string())).cast(pa.string())


def _null_or(mask: np.ndarray, text: pa.Array) -> pa.Array:
    return pac.if_else(pa.array(mask), pa.scalar("N"), text)


def chunk(model: dict, seed: int, index: int, rows: int) -> pa.Table:
    """Rows of chunk ``index`` of the table of ``seed`` (text columns)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    cls = np.searchsorted(np.cumsum(model["weights"]), rng.random(rows), side="right").clip(0, CLASSES - 1)
    cols: dict[str, pa.Array] = {}
    puma = _pick(rng, model["probs"]["PUMA"], cls)
    cols["PUMA"] = _text(PUMAS, puma)
    age = np.clip(np.rint(rng.normal(model["age"][cls], 12.0)), 0, 99).astype(np.int64)
    cols["AGEP"] = pa.array(age).cast(pa.string())
    for c, values in CATEGORICAL.items():
        cols[c] = _text(values, _pick(rng, model["probs"][c], cls))
    cols["DENSITY"] = _text(tuple(DENSITY[p] for p in PUMAS), puma)
    cols["INDP"] = _text(INDP, _pick(rng, model["probs"]["INDP"], cls))
    income = np.round(np.exp(rng.normal(model["income"][cls], 1.0)), -2).astype(np.int64)
    no_income = (rng.random(rows) < model["income_null"][cls]) | (age < 15)
    cols["PINCP"] = _null_or(no_income, pac.binary_join_element_wise(pa.array(income).cast(pa.string()), ".0", ""))
    pov = np.clip(np.rint(rng.normal(model["pov"][cls], 120.0)), 0, 501).astype(np.int64)
    cols["POVPIP"] = _null_or(rng.random(rows) < 0.05, pa.array(pov).cast(pa.string()))
    pw = np.clip(np.rint(rng.gamma(2.0, model["weight"][cls] / 2.0)), 1, 999).astype(np.int64)
    cols["PWGTP"] = pa.array(pw).cast(pa.string())
    wg = np.where(rng.random(rows) < 0.1, 0, np.clip(np.rint(pw * rng.uniform(0.7, 1.3, rows)), 1, 999)).astype(np.int64)
    cols["WGTP"] = pa.array(wg).cast(pa.string())
    return pa.table({c: cols[c] for c in COLUMNS})


def write_table(path: Path, rows: int, fmt: str, seed: int = 0) -> None:
    """The table of ``seed`` with ``rows`` rows: one CSV file, or a folder of Parquet parts
    (one per 10M rows)."""
    write_tables({fmt: path}, rows, seed)


def write_tables(paths: dict[str, Path], rows: int, seed: int = 0) -> None:
    """The table of ``seed`` with ``rows`` rows in each format of ``paths`` at once (one
    draw): ``"csv"`` one file, ``"parquet"`` a folder of parts of 10M rows (row groups of
    1M)."""
    model = _model()
    text = pa.schema([(c, pa.string()) for c in COLUMNS])
    csv_writer = pacsv.CSVWriter(paths["csv"], text) if "csv" in paths else None
    pq_writer, part = None, -1
    if "parquet" in paths:
        paths["parquet"].mkdir(parents=True, exist_ok=True)
    for i, lo in enumerate(range(0, rows, CHUNK)):
        table = chunk(model, seed, i, min(CHUNK, rows - lo))
        if csv_writer is not None:
            csv_writer.write_table(table)
        if "parquet" in paths:
            if lo // 10_000_000 != part:
                if pq_writer is not None:
                    pq_writer.close()
                part = lo // 10_000_000
                pq_writer = pq.ParquetWriter(paths["parquet"] / f"part-{part:03d}.parquet", text)
            pq_writer.write_table(table, row_group_size=CHUNK)
    for w in (csv_writer, pq_writer):
        if w is not None:
            w.close()


def schema() -> dict:
    """The schema of the generated table: codes as categories, the numeric columns binned
    (the k-marginal scorer's percentile columns) with bounds given, ``N`` the null."""
    cols = [{"name": "PUMA", "kind": "categorical", "categories": list(PUMAS)}]
    cols.append({"name": "AGEP", "kind": "numeric", "type": "integer", "bounds": [0, 99], "bins": 20, "binning": "uniform"})
    for c, values in CATEGORICAL.items():
        cols.append({"name": c, "kind": "categorical", "categories": [v for v in values if v != "N"],
                     "nullable": "N" in values})  # fmt: skip
    cols.append({"name": "DENSITY", "kind": "categorical", "categories": [DENSITY[p] for p in PUMAS]})
    cols.append({"name": "INDP", "kind": "categorical", "categories": "discover", "nullable": True, "max_categories": 60})
    cols.append({"name": "PINCP", "kind": "numeric", "type": "float", "bounds": [0, 2_000_000], "clip": True,
                 "binning": "quantile", "bins": 20, "nullable": True, "decimals": 1})  # fmt: skip
    cols.append({"name": "POVPIP", "kind": "numeric", "type": "integer", "bounds": [0, 501], "bins": 20,
                 "binning": "quantile", "nullable": True})  # fmt: skip
    for c in ("PWGTP", "WGTP"):
        cols.append({"name": c, "kind": "numeric", "type": "integer", "bounds": [0, 999], "bins": 20, "binning": "quantile"})
    order = {c: i for i, c in enumerate(COLUMNS)}
    cols.sort(key=lambda c: order[c["name"]])
    return {"columns": cols, "null_tokens": ["N"]}


def run_synth(dataset: Path, schema_path: Path, out: Path, extra: list[str], epsilon: float = 1.0) -> tuple[float, float, dict]:
    """``margsynth synth mst`` in a child process: (wall seconds, its peak RSS in MiB, sidecar)."""
    cmd = [sys.executable, "-m", "margsynth", "synth", "mst", "--dataset", str(dataset), "--schema", str(schema_path),
           "--epsilon", str(epsilon), "--delta", "1e-9", "--seed", "0", "--out", str(out), "--chunk-rows", str(CHUNK),
           *extra]  # fmt: skip
    t = time.perf_counter()
    log = out.with_name(out.name + ".log")
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, _high_water_mib(proc.pid))
            time.sleep(0.2)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{log.read_text()[-3000:]}")
    log.unlink()
    return wall, peak, json.loads(Path(str(out) + ".json").read_text())


def _high_water_mib(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (``VmHWM``: of its own address
    space; ``ru_maxrss`` of a child would also count the parent's memory at the fork)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 100_000_000])
    ap.add_argument("--formats", nargs="+", default=["csv", "parquet"], choices=["csv", "parquet"])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench-scale"))
    ap.add_argument("--keep", action="store_true", help="keep the generated tables and outputs")
    ap.add_argument("--score", action="store_true", help="the k-marginal comparison (needs the 10M size)")
    ap.add_argument("--records", type=int, default=1_000_000,
                    help="synthetic records of every run (-p synthetic_records; 0: the model's estimate, about the "
                    "table's rows); the same for every size, so that the curve is the input's")  # fmt: skip
    ap.add_argument("--epsilon", type=float, default=1.0, help="epsilon of every run (delta 1e-9)")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    schema_path = args.workdir / "schema.json"
    schema_path.write_text(json.dumps(schema(), indent=1))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} CPUs", flush=True)  # fmt: skip
    rows_out = []
    for n in args.sizes:
        data = {fmt: args.workdir / (f"t{n}.csv" if fmt == "csv" else f"t{n}") for fmt in args.formats}
        t = time.perf_counter()
        write_tables(data, n)
        made = time.perf_counter() - t
        print(f"{n:>11,} rows: tables written in {made:.0f} s ({', '.join(args.formats)})", flush=True)
        for fmt in args.formats:
            out = args.workdir / f"out{n}.{fmt}"
            extra = ["-p", f"synthetic_records={args.records}"] if args.records else []
            wall, rss, side = run_synth(data[fmt], schema_path, out, extra, args.epsilon)
            sec = side["seconds"]
            line = (f"{n:>11,} rows {fmt:>7}: {wall:8.1f} s, peak RSS {rss:8.1f} MiB ({side['records']:,} records; "
                    f"passes {side['stream']['counting_passes']}; check+discovery+encode {sec['preprocessing']:.0f}+"
                    f"{sec['encode']:.0f} s, select {sec['select']:.0f} s, generate {sec['generate']:.0f} s, write "
                    f"{sec['write']:.0f} s), load {os.getloadavg()[0]:.2f}")  # fmt: skip
            print(line, flush=True)
            rows_out.append((n, fmt, wall, rss))
            if args.score and n == 10_000_000 and fmt == args.formats[0]:
                score(args.workdir, schema_path, out, extra, args.epsilon)
            out.unlink(missing_ok=True)
        if not args.keep:
            for path in data.values():
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    print("\nrows,format,seconds,peak_rss_mib")
    for n, fmt, wall, rss in rows_out:
        print(f"{n},{fmt},{wall:.1f},{rss:.1f}")


def _head(path: Path, rows: int):
    import pandas as pd  # only the scoring reads tables whole

    if path.suffix == ".csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False, nrows=rows)
    return pq.ParquetFile(next(iter(sorted(path.glob("*.parquet")))) if path.is_dir() else path).read_row_group(0) \
        .to_pandas().iloc[:rows]


def score(workdir: Path, schema_path: Path, out: Path, extra: list[str], epsilon: float) -> None:
    """The k-marginal score (SDNist's, :func:`margsynth.metrics.kmarginal.kmarginal_score`)
    of the 10M-row run and of the same run on the table's first 1M rows, each on 1M
    synthetic records against a fresh 1M-row table of the same generator."""
    from margsynth.metrics.kmarginal import kmarginal_score  # the scorer, only for --score

    target_path = workdir / "target.csv"
    write_table(target_path, 1_000_000, "csv", seed=99)
    target = _head(target_path, 1_000_000)
    sample = workdir / "sample1m.csv"
    write_table(sample, 1_000_000, "csv")  # the first 1M rows of the table (chunks 0..)
    out_sample = workdir / "out-sample.csv"
    run_synth(sample, schema_path, out_sample, extra, epsilon)
    full = kmarginal_score(target, _head(out, 1_000_000)).score
    part = kmarginal_score(target, _head(out_sample, 1_000_000)).score
    print(f"k-marginal score (epsilon {epsilon:g}) vs a fresh 1M-row table: 10M-row run {full:.1f}, same run on a "
          f"1M-row sample {part:.1f}",
          flush=True)  # fmt: skip
    for p in (target_path, sample, out_sample):
        p.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
