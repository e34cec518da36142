"""Speed benchmark of PrivSyn + GUM on the Baltimore 911 incidents.

Set-up (stated so the numbers can be compared):

* data: ``margsynth.data.baltimore.load_records()`` -- 1,455,608 incident records over
  neighborhood (278) x month (12) x incident type (174) (the offline surrogate
  when the real files are absent; the script says which);
* mechanism: ``PrivSyn(max_records_per_person=2)`` with its defaults (10% InDif,
  10% 1-way, 80% Eq. 1, gamma = 5000, consistency iterated, GUM 50 rounds at most),
  delta = the challenge's 1.2244e-11, seed 0;
* target: epsilon = 1 end to end in <= 10 minutes on the project's
  2-core machine (the script exits non-zero if it is slower).

Two reference approaches, run side by side:

1. **GUM update, vectorised vs per-cell loop.** One GUM update of the
   neighborhood x incident-type marginal (48,372 cells) done by
   :class:`margsynth.inference.gum.GUM` and by a straightforward reference that
   loops over the under-/over-counted cells in Python (the structure of the
   authors' public code), on the same records; prints the ratio.
2. **Max-entropy reference for the 3-way table.** The measured pairs define a
   family of 3-way tables; the max-entropy one (IPF on the consistent noisy pairs,
   sampled multinomially to n records) is what an ideal sampler from the pairwise
   model gives. Prints the 3-way L1/n and the AEMC-like proxy
   ``sum(max(|p - q| - 2, 0)) / n`` of GUM's output next to it, and IPF's time.

Run: ``python benchmarks/bench_privsyn.py [--epsilon E] [--seed S]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from margsynth.data.baltimore import load_truth
from margsynth.experiments.privsyn_baltimore import ASSUMED_MAX_RECORDS_PER_PERSON, challenge_delta
from margsynth.inference.gum import GUM
from margsynth.mechanisms.privsyn import PrivSyn


def loop_update(codes: np.ndarray, cols, shape, target: np.ndarray, alpha: float, rng: np.random.Generator) -> int:
    """Reference GUM update with a Python loop over cells (change moves only)."""
    strides = np.array([int(np.prod(shape[i + 1 :])) for i in range(len(shape))])
    idx = codes[:, cols] @ strides
    syn = np.bincount(idx, minlength=target.size)
    gap = target - syn
    order = np.argsort(idx, kind="stable")
    starts = np.searchsorted(idx[order], np.arange(target.size))
    ends = np.searchsorted(idx[order], np.arange(target.size), side="right")
    pool = []
    for cell in np.flatnonzero(gap < 0):
        members = order[starts[cell] : ends[cell]]
        k = int(round(-alpha * gap[cell]))
        pool.extend(rng.permutation(members)[:k].tolist())
    moved = 0
    for cell in np.flatnonzero(gap > 0):
        k = int(round(alpha * gap[cell]))
        vals = np.unravel_index(cell, shape)
        for _ in range(k):
            if not pool:
                return moved
            r = pool.pop()
            codes[r, cols] = vals
            moved += 1
    return moved


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    truth = load_truth()
    data = truth.to_records()
    n = len(data)
    delta = challenge_delta()
    print(f"data: Baltimore incidents ({truth.source}), {n:,} records, domain {data.domain.shape}; {os.cpu_count()} CPUs")
    print(f"PrivSyn(max_records_per_person={ASSUMED_MAX_RECORDS_PER_PERSON}) at epsilon={args.epsilon}, delta={delta:.4g}")

    mech = PrivSyn(max_records_per_person=ASSUMED_MAX_RECORDS_PER_PERSON)
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    res = mech.run(data, args.epsilon, delta, np.random.default_rng(args.seed))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(f"  end to end: {wall:7.1f} s wall, {cpu:7.1f} s CPU   (target <= 600 s)")
    for phase, s in res.seconds.items():
        print(f"    {phase:<12s}{s:7.2f} s")
    tr = res.extras["gum_trace"]
    print(f"  GUM: {len(tr) - 1} rounds, converged={res.extras['gum_converged']}, final mean TV to targets {tr['mean_tv'].iloc[-1]:.4f}")
    print(f"  selected pairs: {res.extras['selected_pairs']}; records {len(res.synthetic):,} (truth {n:,})")

    # 1. vectorised vs per-cell loop, one update of N x I
    meas = res.extras["measurement"]
    clique = ("neighborhood", "incident_type")
    target = dict(meas.consistent)[clique].ravel()
    target = target * n / target.sum()
    start = np.asarray(data.codes, dtype=np.int64).copy()
    rng = np.random.default_rng(1)
    perm = rng.permutation(n)
    shuffled = start[perm]  # an unconverged state: records' N and I decoupled
    shuffled[:, 2] = rng.permutation(shuffled[:, 2])
    g = GUM()
    plan = g._plan(data.domain, clique)
    a = np.asfortranarray(shuffled.copy())
    t0 = time.perf_counter()
    moved_v = g._update(a, plan, target, 1.0, np.random.default_rng(2))
    tv = time.perf_counter() - t0
    b = shuffled.copy()
    t0 = time.perf_counter()
    moved_l = loop_update(b, [0, 2], (278, 174), target, 1.0, np.random.default_rng(2))
    tl = time.perf_counter() - t0
    print("one GUM update of neighborhood x incident_type (48,372 cells), alpha = 1:")
    print(f"  margsynth GUM (vectorised)  : {tv:8.3f} s  ({moved_v:,} records moved)")
    print(f"  per-cell Python loop      : {tl:8.3f} s  ({moved_l:,} records moved)   ratio {tl / tv:6.1f}x")

    # 2. max-entropy reference for the 3-way table
    t0 = time.perf_counter()
    T = truth.counts.astype(float)
    tg = dict(meas.consistent)
    X = np.full(T.shape, n / T.size)
    axes = {("month", "incident_type"): 0, ("neighborhood", "incident_type"): 1, ("neighborhood", "month"): 2}
    for _ in range(200):
        for c, ax in axes.items():
            if c in tg:
                cur = X.sum(axis=ax, keepdims=True)
                X *= np.where(cur > 0, np.expand_dims(tg[c], ax) / np.maximum(cur, 1e-300), 0.0)
    sample = np.random.default_rng(3).multinomial(n, (X / X.sum()).ravel()).reshape(T.shape).astype(float)
    t_ipf = time.perf_counter() - t0
    S = res.synthetic.to_counts().astype(float)

    def report(name, P):
        l1 = np.abs(P - T).sum() / n
        proxy = np.maximum(np.abs(P - T) - 2.0, 0.0).sum() / n
        print(f"  {name:<34s} 3-way L1/n {l1:.4f}   proxy {proxy:.4f}")

    print(f"3-way table vs truth (IPF on the consistent noisy pairs, 200 sweeps: {t_ipf:.1f} s):")
    report("PrivSyn + GUM", S)
    report("max-entropy (IPF), sampled", sample)
    report("max-entropy (IPF), expected table", X)
    return 0 if wall <= 600 else 1


if __name__ == "__main__":
    sys.exit(main())
