"""Today's code against an earlier commit, side by side: wall and CPU time, same bytes.

Runs registered mechanisms on a registered dataset with the code of this checkout
(``src/``) and with the code of ``--ref`` (a git revision, extracted with ``git archive``
into a temporary folder), each run in a fresh Python process, the two versions
interleaved seed by seed (old, new, then new, old for the next seed) so that a change in
the machine's load hits both. Each run prints its wall time, the child's CPU time and the
SHA-256 of the synthetic codes; the table ends with new/old ratios of the summed times
and whether every seed gave the same bytes.

This is how a refactor shows it costs nothing: ``python benchmarks/bench_versions.py
--ref db7a00f --mechanisms mst aim --dataset adult --seeds 0 1 2`` (the budget
currency refactor's target: MST and AIM on adult at a ratio new/old <= 1.05).

Run: ``python benchmarks/bench_versions.py --ref REV [--mechanisms mst aim]
[--dataset adult] [--epsilon 1] [--delta 1e-9] [--seeds 0 1 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKER = r"""
import hashlib, json, resource, sys, time
import numpy as np
from margsynth.data import load
from margsynth.mechanisms import registry
name, dataset, eps, delta, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
data = load(dataset)
mech = registry.create(name)
t0 = time.perf_counter()
res = mech.run(data, eps, delta, np.random.default_rng(seed))
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
codes = np.ascontiguousarray(res.synthetic.codes)
print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
                  "sha256": hashlib.sha256(codes.tobytes() + str(codes.shape).encode()).hexdigest()}))
"""


def extract(ref: str, where: Path) -> Path:
    """The ``src/`` tree of git revision ``ref`` under ``where`` (``ValueError`` for an unknown revision)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                         capture_output=True, text=True)  # fmt: skip
    if sha.returncode != 0:
        raise ValueError(f"--ref {ref!r}: not a commit of this repository")
    archive = where / "src.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "-C", str(ROOT), "archive", sha.stdout.strip(), "src"], stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return where / "src"


def run_one(src: Path, name: str, dataset: str, eps: float, delta: float, seed: int) -> dict:
    """One run in a fresh process with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", WORKER, name, dataset, str(eps), str(delta), str(seed)],
                         capture_output=True, text=True, env=env, cwd=str(ROOT))  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"{name} seed {seed} with {src}: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True, help="git revision of the old code")
    ap.add_argument("--mechanisms", nargs="+", default=["mst", "aim"])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-versions-") as tmp:
            old_src = extract(args.ref, Path(tmp))
            new_src = ROOT / "src"
            print(f"old: {args.ref}  new: {new_src}  dataset {args.dataset}, eps {args.epsilon:g}, "
                  f"delta {args.delta:g}, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")  # fmt: skip
            print(f"{'mechanism':<10} {'seed':>4} {'old wall':>9} {'new wall':>9} {'old cpu':>8} {'new cpu':>8}  same bytes")
            ok = True
            for name in args.mechanisms:
                tot = {"old": [0.0, 0.0], "new": [0.0, 0.0]}
                same_all = True
                for i, seed in enumerate(args.seeds):
                    order = [("old", old_src), ("new", new_src)]
                    if i % 2:
                        order.reverse()
                    got = {k: run_one(src, name, args.dataset, args.epsilon, args.delta, seed) for k, src in order}
                    same = got["old"]["sha256"] == got["new"]["sha256"]
                    same_all &= same
                    for k in tot:
                        tot[k][0] += got[k]["wall"]
                        tot[k][1] += got[k]["cpu"]
                    print(f"{name:<10} {seed:>4} {got['old']['wall']:>8.2f}s {got['new']['wall']:>8.2f}s "
                          f"{got['old']['cpu']:>7.2f}s {got['new']['cpu']:>7.2f}s  {'yes' if same else 'NO'}")  # fmt: skip
                ratio_wall = tot["new"][0] / tot["old"][0]
                ratio_cpu = tot["new"][1] / tot["old"][1]
                print(f"{name:<10}  sum: wall new/old {ratio_wall:.3f}, CPU new/old {ratio_cpu:.3f}, "
                      f"same bytes on every seed: {'yes' if same_all else 'NO'}")  # fmt: skip
                ok &= same_all
            print(f"load average at the end {os.getloadavg()[0]:.2f}")
    except ValueError as exc:
        print(f"bench_versions: error: {exc}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
