"""Adaptive grid speed, against reference approaches run side by side:

1. building an adaptive query matrix (AGM "Adaptive Granularity Example"; docs/notes/adaptive_grid.md):
   ``adaptive_query`` (one vectorised pass per parent grouping) vs a reference that
   builds the identity and aggregate rows cell by cell in Python, the way the paper's
   ``get_identity`` / ``get_aggregate`` are described; the two matrices must be equal;
2. the brute-force sensitivity check: all neighbours as one sparse matrix product vs a
   loop applying ``Q`` to one dense difference vector per neighbour (same maxima);
3. one mechanism run on adult (real data if present, else the surrogate) per phase,
   adaptive vs identity queries (same marginals, same sigma).

Prints seconds and the ratio reference / ours.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from margsynth.experiments.adagrid import brute_force_sensitivity
from margsynth.mechanisms.adagrid import AdaptiveGrid, adaptive_query, column_norms
from margsynth.mechanisms.generators import PGMGenerator


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def reference_query(shape, parent_large):
    """Cell-by-cell construction (Python loops over cells and parent groupings)."""
    k = len(shape)
    cells = list(np.ndindex(*shape))
    ident = [all(parent_large[j][c[:j] + c[j + 1 :]] for j in range(k)) for c in cells]
    rows = [[(i, 1.0)] for i, c in enumerate(cells) if ident[i]]
    for j in range(k):
        groups: dict[tuple, list] = {}
        for i, c in enumerate(cells):
            if not ident[i]:
                groups.setdefault(c[:j] + c[j + 1 :], []).append(i)
        for key in sorted(groups):
            rows.append([(i, 1.0 / math.sqrt(k)) for i in groups[key]])
    data = [v for r in rows for _, v in r]
    ri = [n for n, r in enumerate(rows) for _ in r]
    ci = [i for r in rows for i, _ in r]
    return sp.csr_matrix((data, (ri, ci)), shape=(len(rows), len(cells)))


def main() -> None:
    rng = np.random.default_rng(0)
    shape = (100, 100, 2)  # adult's capital-gain x capital-loss x income
    parents = [rng.random(shape[:j] + shape[j + 1 :]) < 0.2 for j in range(3)]
    ours, q = best(lambda: adaptive_query(shape, parents))
    ref, qr = best(lambda: reference_query(shape, parents), repeat=1)
    assert (q.matrix != qr).nnz == 0 and np.allclose(column_norms(q.matrix), 1.0)
    print(f"adaptive query matrix, {shape} = {np.prod(shape):,} cells "
          f"({q.n_identity} identity + {q.n_aggregate} aggregate rows)")  # fmt: skip
    print(f"  margsynth adaptive_query      : {ours:8.4f} s")
    print(f"  cell-by-cell Python loops   : {ref:8.4f} s   ratio {ref / ours:6.1f}x")

    from margsynth import Dataset, Domain

    dom = Domain.from_sizes({"a": 40, "b": 40, "c": 2})
    codes = np.stack([rng.integers(0, s, 5000) for s in dom.shape], axis=1)
    data = Dataset(codes, dom)
    qs = adaptive_query(dom.shape, [rng.random(dom.shape[:j] + dom.shape[j + 1 :]) < 0.2 for j in range(3)], dom.names)
    ours, res = best(lambda: brute_force_sensitivity(data, [qs], max_neighbours=1000), repeat=1)
    matrix = qs.matrix.tocsr()

    def loop():
        cells = np.ravel_multi_index(tuple(codes[:, i] for i in range(3)), dom.shape)
        worst = 0.0
        for i in np.sort(np.random.default_rng(0).choice(len(codes), 1000, replace=False)):
            d = np.zeros(qs.cells)
            d[cells[i]] = 1.0
            worst = max(worst, float(np.linalg.norm(matrix @ d)))
        for x in range(qs.cells):
            d = np.zeros(qs.cells)
            d[x] = -1.0
            worst = max(worst, float(np.linalg.norm(matrix @ d)))
        return worst

    ref, worst = best(loop, repeat=1)
    assert abs(worst - res[0]["max_change"]) < 1e-12
    print(f"brute-force sensitivity, {res[0]['neighbours']:,} neighbours")
    print(f"  margsynth (one sparse product): {ours:8.4f} s")
    print(f"  one Q @ delta per neighbour : {ref:8.4f} s   ratio {ref / ours:6.1f}x")

    from margsynth.data import load

    adult = load("adult")
    print(f"mechanism run on adult ({len(adult):,} records), eps=1, delta=1e-9, 500 PGM iterations")
    for queries in ("adaptive", "identity"):
        t = time.perf_counter()
        r = AdaptiveGrid(dataset="adult", queries=queries, generator=PGMGenerator(iters=500)).run(adult, 1.0, 1e-9, np.random.default_rng(0))
        total = time.perf_counter() - t
        phases = "  ".join(f"{k} {v:.2f}s" for k, v in r.seconds.items())
        rows = sum(x["identity_rows"] + x["aggregate_rows"] for x in r.extras["rounds"])
        print(f"  {queries:9s}: {total:6.2f} s  ({phases}; {rows:,} query rows)")


if __name__ == "__main__":
    main()
