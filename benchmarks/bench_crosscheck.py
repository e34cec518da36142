"""Cross-check of our Private-PGM estimator against mbi 2.0 (the authors' package) on adult.

Private-PGM: McKenna, Sheldon & Miklau, "Graphical-model based estimation and inference for
differential privacy", ICML 2019, arXiv:1901.09136 (Algorithm 1; the problem is Eq. 4.2 of
the NIST-MST/MST paper). One set of noisy measurements is drawn per problem and fitted by
both estimators:

* ``mst``: all 14 one-way marginals and the 13 two-way marginals of the maximum spanning
  tree of the true pairwise mutual information (MST's structure), Gaussian noise
  ``sigma = 11.28`` (MST at ε = 1, δ = 1e-9);
* ``aim``: all one-way marginals and 12 three-way marginals ``(a, b, c)`` for the pairs of
  adjacent edges ``a-b, b-c`` of that tree, ``sigma = 20`` (an AIM-like set of 3-way
  cliques).

Reported per problem and estimator: the loss ``0.5 sum ||(N mu - y)/sigma||^2`` of the fitted
marginals (computed for both by our code, with the same total ``N``), its certified
gap under our certificate (mbi's potentials loaded into our engine; ``docs/api/inference.md``),
the total variation between the two fits' measured marginals, wall/CPU time and the peak
memory of the process that fitted. Our fit must reach a loss ``<= mbi's * (1 + 1e-6)``.

Measured 2026-11-26 (2,500 iterations each, quiet 2-core machine, mbi 2.0.0 with jax 0.10.2
CPU): ``mst`` ours loss 11,604.368, certified gap 0.050, 5.2 s CPU, 220 MiB; mbi 12,924.731,
gap 1.1e4, 25.3 s CPU, 889 MiB. ``aim`` ours 559,221.13, gap 0.17, 180 s CPU, 554 MiB; mbi
561,236.54, gap 1.4e4, 142 s CPU, 1,243 MiB. Ours <= mbi on both.

mbi and jax are heavy and not in our environment: install the ``crosscheck`` extra into a
*separate* virtual environment and pass its interpreter::

    python -m venv /tmp/xvenv && /tmp/xvenv/bin/pip install mbi==2.0.0 "jax[cpu]"
    python benchmarks/bench_crosscheck.py --mbi-python /tmp/xvenv/bin/python [--iters 2500]

The mbi side runs in a subprocess of that interpreter (this file, ``--worker``), which reads
the measurements from an ``.npz`` and writes back the fitted marginals and potentials.
Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

MST_SIGMA = 11.28
AIM_SIGMA = 20.0


def _worker(path_in: str, path_out: str, iters: int) -> None:  # runs under the mbi interpreter
    import jax

    jax.config.update("jax_enable_x64", True)
    from mbi import Domain, LinearMeasurement
    from mbi.estimation import MirrorDescent

    z = np.load(path_in, allow_pickle=True)
    spec = json.loads(str(z["spec"]))
    dom = Domain(spec["attrs"], spec["shape"])
    ms = [
        LinearMeasurement(np.asarray(z[f"y{i}"]), tuple(c), stddev=float(s))
        for i, (c, s) in enumerate(zip(spec["cliques"], spec["sigmas"]))
    ]
    t0, c0 = time.perf_counter(), time.process_time()
    model = MirrorDescent().estimate(dom, ms, known_total=float(spec["total"]), iters=iters)
    out = {}
    for i, c in enumerate(spec["cliques"]):
        out[f"mu{i}"] = np.asarray(model.project(tuple(c)).datavector(flatten=True))
    pots = model.potentials
    pc = []
    for j, cl in enumerate(pots.cliques):
        f = pots.tables[cl]
        pc.append(list(f.domain.attributes))
        out[f"th{j}"] = np.asarray(f.values)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["meta"] = json.dumps({"wall": wall, "cpu": cpu, "peak_mb": peak, "pot_cliques": pc})
    np.savez(path_out, **out)


def _problems(data):
    import networkx as nx

    names = data.domain.names
    g = nx.Graph()
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p = data.marginal((a, b)).astype(float)
            p /= p.sum()
            pa, pb = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
            nz = p > 0
            g.add_edge(a, b, weight=float((p[nz] * np.log(p[nz] / (pa @ pb)[nz])).sum()))
    tree = nx.maximum_spanning_tree(g)
    pairs = [tuple(sorted(e, key=names.index)) for e in tree.edges]
    triples = []
    for b in names:
        nb = sorted(tree.neighbors(b), key=names.index)
        for a, c in zip(nb, nb[1:]):
            triples.append(data.domain.canonical((a, b, c)))
    ones = [(a,) for a in names]
    return {
        "mst": [(c, MST_SIGMA) for c in ones + pairs],
        "aim": [(c, AIM_SIGMA) for c in ones + triples[:12]],
    }


def _loss(mus, ys, sigmas) -> float:
    return float(sum(0.5 * np.sum(((m - y) / s) ** 2) for m, y, s in zip(mus, ys, sigmas)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mbi-python", required=False, help="interpreter of the venv with mbi==2.0.0 and jax[cpu]")
    ap.add_argument("--iters", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=3, metavar=("IN", "OUT", "ITERS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    if not args.mbi_python:
        print("--mbi-python: the interpreter of a venv with mbi==2.0.0 and jax[cpu] is required", file=sys.stderr)
        return 2

    from margsynth.data import load
    from margsynth.inference.pgm import Factor, GraphicalModel, Measurement, estimate, estimate_total
    from margsynth.inference.pgm.measurement import compile_measurements

    data = load("adult")
    dom = data.domain
    rng = np.random.default_rng(args.seed)
    ok = True
    for name, items in _problems(data).items():
        cliques = [c for c, _ in items]
        sigmas = [s for _, s in items]
        ys = [data.marginal(c, flatten=True).astype(float) + rng.normal(0, s, dom.size(c)) for c, s in items]
        ms = [Measurement(c, None, y, s) for c, y, s in zip(cliques, ys, sigmas)]
        total = float(estimate_total(compile_measurements(dom, ms)))
        # ours
        t0, c0 = time.perf_counter(), time.process_time()
        ours = estimate(dom, ms, iters=args.iters, total=total)
        o_wall, o_cpu = time.perf_counter() - t0, time.process_time() - c0
        o_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        o_mu = [ours.project(c).ravel() for c in cliques]
        # mbi, in its own interpreter
        with tempfile.TemporaryDirectory() as tmp:
            fin, fout = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
            spec = {"attrs": list(dom.names), "shape": list(dom.shape), "cliques": [list(c) for c in cliques],
                    "sigmas": sigmas, "total": total}  # fmt: skip
            np.savez(fin, spec=json.dumps(spec), **{f"y{i}": y for i, y in enumerate(ys)})
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env["JAX_PLATFORMS"] = "cpu"
            subprocess.run([args.mbi_python, __file__, "--worker", fin, fout, str(args.iters)], check=True, env=env)
            z = np.load(fout, allow_pickle=True)
            meta = json.loads(str(z["meta"]))
            m_mu = [np.asarray(z[f"mu{i}"], dtype=float) for i in range(len(cliques))]
            factors = [
                Factor(tuple(c), np.asarray(z[f"th{j}"], dtype=float)) for j, c in enumerate(meta["pot_cliques"])
            ]
        o_loss, m_loss = _loss(o_mu, ys, sigmas), _loss(m_mu, ys, sigmas)
        # certificates: our fit's own, and mbi's potentials loaded into our engine (0 iterations)
        o_gap = ours.stats["gap"]
        mbi_model = GraphicalModel.from_factors(dom, factors, total)
        m_cert = estimate(dom, ms, iters=0, total=total, warm_start=mbi_model).stats
        tv = float(np.mean([0.5 * np.abs(a / total - b / total).sum() for a, b in zip(o_mu, m_mu)]))
        met = o_loss <= m_loss * (1 + 1e-6)
        ok &= met
        print(f"{name}: {len(cliques)} measurements, total N={total:,.1f}, {args.iters} iterations each")
        print(
            f"  ours: loss={o_loss:.8g} gap={o_gap:.4g}  {o_wall:.1f} s wall {o_cpu:.1f} s CPU, peak {o_peak:,.0f} MiB"
        )
        print(
            f"  mbi : loss={m_loss:.8g} gap={m_cert['gap']:.4g} (loss by our engine {m_cert['loss']:.8g})  "
            f"{meta['wall']:.1f} s wall {meta['cpu']:.1f} s CPU, peak {meta['peak_mb']:,.0f} MiB"
        )
        print(
            f"  mean TV between the fitted measured marginals {tv:.2e}; ours <= mbi * (1 + 1e-6): {'met' if met else 'NOT met'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
