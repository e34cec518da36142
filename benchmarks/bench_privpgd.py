"""Speed/memory benchmark of PrivPGD on adult, with the fast preset's utility.

Set-up (stated so the numbers can be compared):

* data: ``margsynth.data.load("adult")`` — 48,842 records, 14 attributes, all 91 2-way
  marginals measured by the Gaussian mechanism at eps = 2.5, delta = 1e-5 (zCDP ledger);
* part 1, the paper's defaults (``PrivPGD.preset("default")``: 100,000 particles,
  1,000 epochs, 10 projections per marginal, batches of 5, 80% of gradient entries
  dropped, lr 0.1 x0.75 every 50 epochs; projection 1,750 iterations x 200 projections,
  lr 0.1 x0.8 every 100) run with ``--proj-iters`` projection iterations and ``--epochs``
  epochs only; the script prints seconds per projection iteration and per epoch (wall
  and process-CPU), the set-up time (direction bank), the peak resident memory, and the
  extrapolated full-default runtime ``setup + 1750 s_iter + 1000 s_epoch`` — it never
  runs the full 45-minute default;
* part 2, the ``fast`` preset end to end at eps = 2.5: wall time and the average 2-way
  TV (``margsynth.metrics.evaluation.tv_2way``) and sliced-W1 distance against the data
  synthesised from, next to PGM+MST (``margsynth.mechanisms.mst.MST``) run on the same data
  with the same seed in the same script, and the ratio of the two.

Targets: full defaults on adult <= 45 minutes, fast preset <= 5 minutes, peak memory
<= 4 GB, on the project's 2-core CPU. For scale, the authors' implementation, measured
once on this kind of machine, took ~7 s per projection iteration and ~33 s per
epoch (about 12 hours per adult run on a busy machine).

The CPU is often shared: wall times then exceed the process-CPU times; both are printed
(the process-CPU time is what a quiet machine's wall time would be with one thread).
PrivPGD runs with one torch thread by default; ``--threads 2`` measured 6x slower per
epoch on the shared 2-core machine.

Part 3, ``--paper``: the paper's settings end to end (``PrivPGD.preset("default")``: 100,000
particles, 1,750 projection iterations x 200 projections, 1,000 epochs x 10 projections), today's
code against an older source tree (``--before-src DIR``, e.g. the tree before the compiled
kernels: ``git archive db7a00f src | tar -x -C /tmp/privpgd-before`` and
``--before-src /tmp/privpgd-before/src``), on adult at ``--epsilon`` (default 1) and delta
1e-5, for ``--seeds`` (default 0 1 2), the two interleaved seed by seed. Every run is its own
process (this file, ``--worker``) with one torch thread; it reports the CPU time of the run
(process CPU, all threads, numba's loading of its compiled kernels included), the wall time,
the machine's load average, and the average 2-way TV and sliced W1 (Eq. 11 and 10; the
sliced W1 with 100 projections from ``default_rng(0)``) against the data synthesised from.
A full before-run takes 20-40 minutes here, so it runs in full for ``--before-full`` seeds
only (default: the first); for the other seeds the before-path runs ``--before-epochs``
epochs and ``--before-iters`` projection iterations and its full time is extrapolated
(set-up + 1,750 x CPU per projection iteration + 1,000 x median CPU per epoch); quality is
compared on completed runs only.

Run: ``python benchmarks/bench_privpgd.py [--threads T] [--proj-iters N] [--epochs E]
[--skip-default] [--skip-fast] [--seed S]``, or ``python benchmarks/bench_privpgd.py --paper
--before-src DIR [--seeds 0 1 2] [--before-full 0] [--epsilon 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import torch

from margsynth.data import load
from margsynth.mechanisms.privpgd import PrivPGD
from margsynth.metrics.evaluation import counting_queries, sw_2way, tv_2way

REFERENCE = {"s_per_projection_iter": 7.0, "s_per_epoch": 33.0}
PAPER = PrivPGD.preset("default")


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def part_default(data, args) -> None:
    cfg = PrivPGD.preset("default", projection_iters=args.proj_iters, epochs=args.epochs, threads=args.threads)
    print(f"\n== part 1: paper defaults, {args.proj_iters} projection iterations and {args.epochs} epochs measured ==")
    t = time.perf_counter()
    res = cfg.run(data, args.epsilon, args.delta, np.random.default_rng(args.seed))
    wall = time.perf_counter() - t
    s = res.seconds
    it_wall = s["projection"] / args.proj_iters
    it_cpu = s["projection_cpu"] / args.proj_iters
    ep_wall = float(np.median(res.extras["seconds_per_epoch"]))
    ep_cpu = float(np.median(res.extras["cpu_seconds_per_epoch"]))
    setup_wall = s["measure"] + s["bank"] + s["finalize"]
    setup_cpu = s["measure"] + s["bank_cpu"] + s["finalize"]
    full_wall = setup_wall + PAPER.generator.projection_iters * it_wall + PAPER.generator.epochs * ep_wall
    full_cpu = setup_cpu + PAPER.generator.projection_iters * it_cpu + PAPER.generator.epochs * ep_cpu
    print(f"run wall time (truncated run)        {wall:8.1f} s")
    print(f"set-up (measure + direction bank)     {setup_wall:8.2f} s wall  {setup_cpu:8.2f} s cpu")
    print(f"per projection iteration              {it_wall:8.3f} s wall  {it_cpu:8.3f} s cpu"
          f"   (authors ~{REFERENCE['s_per_projection_iter']:.0f} s: x{REFERENCE['s_per_projection_iter'] / it_wall:.0f} faster)")
    print(f"per epoch (median of {args.epochs})              {ep_wall:8.3f} s wall  {ep_cpu:8.3f} s cpu"
          f"   (authors ~{REFERENCE['s_per_epoch']:.0f} s: x{REFERENCE['s_per_epoch'] / ep_wall:.0f} faster)")
    print(f"epochs (wall): {[round(x, 2) for x in res.extras['seconds_per_epoch']]}")
    print(f"extrapolated full default run         {full_wall / 60:8.1f} min wall  {full_cpu / 60:8.1f} min cpu"
          f"   (target <= 45 min; authors ~{(1750 * 7 + 1000 * 33) / 3600:.1f} h)")
    print(f"direction bank                        {res.extras['bank_bytes'] / 1e9:8.2f} GB")
    print(f"peak resident memory so far           {peak_gb():8.2f} GB   (target <= 4 GB)")


def part_fast(data, args) -> None:
    cfg = PrivPGD.preset("fast", threads=args.threads)
    gen = cfg.generator
    print(f"\n== part 2: fast preset end to end at eps = {args.epsilon} ==")
    print(f"fast preset: {gen.n_particles} particles, {gen.epochs} epochs (lr x{gen.lr_gamma} every {gen.lr_step}), "
          f"{gen.projection_iters} projection iterations (lr x{gen.projection_lr_gamma} every {gen.projection_lr_step})")
    t = time.perf_counter()
    c = time.process_time()
    res = cfg.run(data, args.epsilon, args.delta, np.random.default_rng(args.seed))
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    tv = tv_2way(data, res.synthetic)
    sw = sw_2way(data, res.synthetic, rng=np.random.default_rng(0))
    cq = counting_queries(data, res.synthetic, rng=np.random.default_rng(0))
    print(f"fast preset wall time                 {wall:8.1f} s  ({cpu:.1f} s cpu; target <= 300 s)")
    print(f"phases (wall): { {k: round(v, 1) for k, v in res.seconds.items()} }")
    from margsynth.mechanisms.mst import MST

    t = time.perf_counter()
    mst = MST().run(data, args.epsilon, args.delta, np.random.default_rng(args.seed))
    mst_wall = time.perf_counter() - t
    mst_tv = tv_2way(data, mst.synthetic)
    print(f"average 2-way TV (1/2 L1)             {tv:8.4f}   PGM+MST {mst_tv:.4f} ({mst_wall:.1f} s); "
          f"ratio PrivPGD/MST {tv / mst_tv:.2f} (target <= 1)")
    print(f"average 2-way sliced W1               {sw:8.5f}")
    print(f"counting-query error (Eq. 9)          {cq:8.5f}")
    print(f"epsilon spent                         {res.epsilon:8.4f}")
    print(f"peak resident memory so far           {peak_gb():8.2f} GB")


def _worker(seed: int, epsilon: float, delta: float, overrides: dict) -> None:
    """One PrivPGD run at the paper's settings (``overrides`` replacing some) in this
    process, with whatever ``margsynth`` is on the path; prints one JSON line."""
    # the clock is the benchmark's own, so that a source tree older than margsynth.timing runs here too
    data = load("adult")
    mech = PrivPGD.preset("default", threads=1, **overrides)
    load_before = os.getloadavg()[0]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    res = mech.run(data, epsilon, delta, np.random.default_rng(seed))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    s = res.seconds
    out = {
        "wall": wall,
        "cpu": cpu,
        "load": (load_before + os.getloadavg()[0]) / 2,
        "seconds": {k: float(v) for k, v in s.items()},
        "cpu_per_epoch": [float(x) for x in res.extras.get("cpu_seconds_per_epoch", [])],
        "peak_gb": peak_gb(),
        "tv": tv_2way(data, res.synthetic),
        "sw": sw_2way(data, res.synthetic, rng=np.random.default_rng(0)),
    }
    print("RESULT " + json.dumps(out), flush=True)


def _run(src: str, seed: int, args, overrides: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(seed), json.dumps(overrides),
           "--epsilon", repr(args.epsilon), "--delta", repr(args.delta)]
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
        print(line)
    raise RuntimeError(f"worker seed={seed} ({src}) printed no result")


def _extrapolated_cpu(r: dict, iters: int, epochs: int) -> float:
    """A truncated run's CPU time scaled to the paper's settings: set-up + ``1750`` x CPU per
    projection iteration + ``1000`` x median CPU per epoch (+ finalization)."""
    s = r["seconds"]
    setup = s["measure"] + s["bank_cpu"] + s["finalize"]
    return (setup + PAPER.generator.projection_iters * s["projection_cpu"] / iters
            + PAPER.generator.epochs * float(np.median(r["cpu_per_epoch"])))


def part_paper(args) -> None:
    """Part 3 (module docstring): today's code and ``--before-src`` at the paper's settings."""
    after_src = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src")
    truncated = {"epochs": args.before_epochs, "projection_iters": args.before_iters}
    print(f"\n== part 3: the paper's settings on adult, eps = {args.epsilon:g}, delta = {args.delta:g}, "
          f"seeds {args.seeds}; before = {args.before_src}; after overrides {args.overrides} ==")
    print(f"{'seed':>4} {'code':>6} {'cpu s':>8} {'wall s':>8} {'load':>5} {'tv-2way':>8} {'sw-2way':>8}  note")
    rows = []
    for seed in args.seeds:
        for side in ("after", "before"):
            full = side == "after" or seed in args.before_full
            over = json.loads(args.overrides) if side == "after" else ({} if full else truncated)
            r = _run(after_src if side == "after" else args.before_src, seed, args, over)
            r.update(seed=seed, side=side, full=full)
            if not full:
                r["cpu_full"] = _extrapolated_cpu(r, args.before_iters, args.before_epochs)
            rows.append(r)
            tv = f"{r['tv']:8.4f}" if full else f"{'-':>8}"
            sw = f"{r['sw']:8.5f}" if full else f"{'-':>8}"
            cpu = r["cpu"] if full else r["cpu_full"]
            note = "" if full else (f"extrapolated from {args.before_epochs} epochs and {args.before_iters} "
                                    f"projection iterations ({r['cpu']:.0f} s cpu, {r['wall']:.0f} s wall)")
            wall = f"{r['wall']:8.0f}" if full else f"{'-':>8}"
            print(f"{seed:>4} {side:>6} {cpu:8.0f} {wall} {r['load']:5.1f} {tv} {sw}  {note}", flush=True)
    print("\nratios before / after (CPU time; > 1: faster now) and quality after / before (< 1: better now):")
    for seed in args.seeds:
        a = next(r for r in rows if r["seed"] == seed and r["side"] == "after")
        b = next(r for r in rows if r["seed"] == seed and r["side"] == "before")
        cpu_b = b["cpu"] if b["full"] else b["cpu_full"]
        line = f"  seed {seed}: cpu x{cpu_b / a['cpu']:.1f}"
        if b["full"]:
            line += (f", wall x{b['wall'] / a['wall']:.1f}, tv-2way {a['tv'] / b['tv']:.3f}, "
                     f"sw-2way {a['sw'] / b['sw']:.3f}")
        print(line)
    after = [r for r in rows if r["side"] == "after"]
    print(f"after: cpu {min(r['cpu'] for r in after):.0f}-{max(r['cpu'] for r in after):.0f} s per run "
          f"(target <= 300 s); phases of the slowest (cpu s): "
          + ", ".join(f"{k[:-4]} {v:.0f}" for k, v in max(after, key=lambda r: r["cpu"])["seconds"].items()
                      if k.endswith("_cpu")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--epsilon", type=float, default=None, help="default 2.5 (1 with --paper)")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1, PrivPGD's default)")
    ap.add_argument("--proj-iters", type=int, default=20)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--skip-default", action="store_true")
    ap.add_argument("--skip-fast", action="store_true")
    ap.add_argument("--paper", action="store_true", help="part 3 only: the paper's settings, before and after")
    ap.add_argument("--before-src", metavar="DIR", help="--paper: the source directory of the code to compare with")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--before-full", type=int, nargs="*", default=None, metavar="SEED",
                    help="--paper: seeds whose before-run is complete (default: the first seed)")
    ap.add_argument("--before-epochs", type=int, default=10)
    ap.add_argument("--before-iters", type=int, default=50)
    ap.add_argument("--worker", nargs=2, metavar=("SEED", "OVERRIDES"), help=argparse.SUPPRESS)
    ap.add_argument("--overrides", default="{}", metavar="JSON",
                    help="--paper: generator or mechanism fields replacing the after-runs' settings (experiments)")
    args = ap.parse_args(argv)
    if args.epsilon is None:
        args.epsilon = 1.0 if args.paper else 2.5
    if args.worker:
        _worker(int(args.worker[0]), args.epsilon, args.delta, json.loads(args.worker[1]))
        return 0
    if args.paper:
        if not args.before_src:
            ap.error("--paper needs --before-src DIR")
        if args.before_full is None:
            args.before_full = args.seeds[:1]
        print(f"PrivPGD at the paper's settings: torch {torch.__version__}, cores {os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f}")
        part_paper(args)
        return 0
    data = load(args.dataset)
    load_avg = os.getloadavg()
    print(f"PrivPGD benchmark: {args.dataset} ({len(data)} records, {len(data.domain)} attributes), "
          f"torch {torch.__version__}, threads {args.threads}, "
          f"cores {os.cpu_count()}, load average {load_avg[0]:.1f}")
    if not args.skip_default:
        part_default(data, args)
    if not args.skip_fast:
        part_fast(data, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
