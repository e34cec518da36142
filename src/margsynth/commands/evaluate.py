"""``margsynth evaluate``: score a synthetic dataset against the real one.

    margsynth evaluate --dataset NAME|CSV [--domain JSON | --schema SCHEMA.json] --synthetic PATH
                     [--metrics LIST] [--seed S] [--json] [--allow-surrogate]

``--metrics`` is a comma-separated list of metric names (default: ``tv-1way, tv-2way,
tv-3way, nist-3way, nist-conjunctions, nist-target``; also ``downstream, covariance,
counting-queries, threshold-queries, sw-2way``; see :mod:`margsynth.metrics.suite`). Prints one ``name value`` line per metric, or with
``--json`` one JSON object mapping metric name to value.

With ``--schema`` both files are raw CSVs described by the schema; they are encoded by one
encoder whose "discover" entries are resolved exactly from ``--dataset``
(:func:`margsynth.tabular.scoring.encode_pair`; scoring reads the real data, so the
scores are not differentially private).
"""

from __future__ import annotations

from ._args import seed_arg
from ._inputs import add_allow_surrogate, check_input_file, read_csv_dataset
from ._outputs import dumps_strict

__all__ = ["register"]


def register(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score synthetic data against the real data",
        description="Compute utility metrics of a synthetic CSV against the real dataset (lower is better).",
    )
    p.add_argument("--dataset", required=True, metavar="NAME|CSV", help="the real dataset: registered name or CSV")
    p.add_argument("--domain", metavar="JSON", help="domain JSON (required when --dataset is a CSV)")
    p.add_argument(
        "--schema",
        metavar="SCHEMA.json",
        help="--dataset and --synthetic are raw CSVs described by this schema (what it leaves to \"discover\" is "
        "resolved exactly from --dataset)",
    )
    p.add_argument("--synthetic", required=True, metavar="PATH", help="synthetic CSV over the same domain")
    p.add_argument(
        "--metrics",
        metavar="LIST",
        help="comma-separated metric names (default: tv-1way,tv-2way,tv-3way,nist-3way,nist-conjunctions,nist-target; "
        "also downstream,covariance,counting-queries,threshold-queries,sw-2way)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of randomised metrics (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object {metric: value}")
    add_allow_surrogate(p)
    p.set_defaults(func=_main)


def _raw_pair(args):
    """``--dataset`` and ``--synthetic`` read as raw CSVs and encoded by one encoder from ``--schema``."""
    from ..tabular.scoring import encode_pair
    from ._inputs import raw_input, read_raw_csv, read_schema

    if args.domain is not None:
        raise ValueError(f"--domain {args.domain!r}: raw CSVs (--schema) need no domain file; drop --domain")
    schema = read_schema("--schema", args.schema)
    real = raw_input("--dataset", args.dataset)[0]
    synth = read_raw_csv("--synthetic", args.synthetic)
    what = (f"--dataset {args.dataset!r}", f"--synthetic {args.synthetic!r}")
    real_ds, synth_ds, _ = encode_pair(real, synth, schema, what=what)
    return real_ds, synth_ds


def _main(args) -> int:
    from ..metrics.suite import DEFAULT_METRICS, evaluate, get_metric
    from .synth import load_dataset

    metrics = list(DEFAULT_METRICS)
    if args.metrics is not None:
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
        if not metrics:
            raise ValueError("--metrics is empty")
    for m in metrics:
        get_metric(m)  # unknown names fail before any data is read
    if args.schema is not None:
        real, synth = _raw_pair(args)
    else:
        check_input_file("--synthetic", args.synthetic, "a CSV file of integer codes")
        real = load_dataset(args.dataset, args.domain, allow_surrogate=args.allow_surrogate)
        synth = read_csv_dataset("--synthetic", args.synthetic, real.domain)
    values = evaluate(real, synth, metrics, seed=args.seed)
    if args.json:
        print(dumps_strict(values, prog="margsynth evaluate"))
    else:
        width = max(len(m) for m in values)
        for m, v in values.items():
            print(f"{m:{width}s}  {v:.6f}")
    return 0
