"""Saved models (margsynth.model_file): what a file costs and what sampling from it costs.

One MST run on adult (real data if present, else the surrogate), then:

1. save and load the model (seconds, file size in bytes, junction-tree cells);
2. draw ``n`` records from the loaded model against the run's own GENERATE step done by
   hand (Private-PGM's Algorithm 8 on the model, then Algorithm 4 reversed): same records
   for the same rng state (checked), so the ratio is the overhead of the saved-model layer;
3. the same through ``margsynth sample`` (load, sample, write the CSV and its sidecar).

Prints seconds and the ratio saved / by hand.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from margsynth.cli import main
from margsynth.data import load
from margsynth.mechanisms.mst import MST
from margsynth.model_file import SavedModel


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def by_hand(sampler, n, seed):
    rng = np.random.default_rng(seed)
    data = sampler.model.synthetic_data(n, rng=rng)
    for step in sampler.reverse:
        data = step.reverse(data, rng)
    return data


def main_bench(n: int = 200_000) -> None:
    data = load("adult")
    t = time.perf_counter()
    result = MST().run(data, 1.0, 1e-9, np.random.default_rng(0))
    print(f"MST on adult: {time.perf_counter() - t:.1f} s; junction tree {result.sampler.model.tree.cells:,} cells")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adult-mst.npz"
        t_save, _ = best(lambda: SavedModel.from_result(result).save(path))
        t_load, model = best(lambda: SavedModel.load(path))
        print(f"save {t_save:.4f} s, load {t_load:.4f} s, file {os.path.getsize(path):,} bytes")
        t_ours, ours = best(lambda: model.sample(n, np.random.default_rng(1)))
        t_ref, ref = best(lambda: by_hand(result.sampler, n, 1))
        assert np.array_equal(np.asarray(ours.codes, np.int64), np.asarray(ref.codes, np.int64))
        print(f"{n:,} records: saved model {t_ours:.3f} s, by hand {t_ref:.3f} s, ratio {t_ours / t_ref:.2f}")
        out = Path(tmp) / "more.csv"
        t_cli, code = best(lambda: main(["sample", str(path), "--n", str(n), "--seed", "1", "--out", str(out)]), repeat=1)
        assert code == 0
        print(f"margsynth sample --n {n:,}: {t_cli:.3f} s (load + sample + CSV + sidecar), ratio to sampling {t_cli / t_ours:.1f}")


if __name__ == "__main__":
    main_bench()
