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
scores are not differentially private). The parser is in :mod:`margsynth.commands.parsers`.
"""

from __future__ import annotations

from ..metrics.suite import DEFAULT_METRICS, evaluate, get_metric
from ..tabular.scoring import encode_pair
from ._inputs import check_input_file, raw_input, read_csv_dataset, read_raw_csv, read_schema, resolve_dataset
from ._outputs import dumps_strict


def _raw_pair(args):
    """``--dataset`` and ``--synthetic`` read as raw CSVs and encoded by one encoder from ``--schema``."""
    if args.domain is not None:
        raise ValueError(f"--domain {args.domain!r}: raw CSVs (--schema) need no domain file; drop --domain")
    schema = read_schema("--schema", args.schema)
    real = raw_input("--dataset", args.dataset)[0]
    synth = read_raw_csv("--synthetic", args.synthetic)
    what = (f"--dataset {args.dataset!r}", f"--synthetic {args.synthetic!r}")
    real_ds, synth_ds, _ = encode_pair(real, synth, schema, what=what)
    return real_ds, synth_ds


def _main(args) -> int:
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
        real = resolve_dataset(args.dataset, args.domain, allow_surrogate=args.allow_surrogate).dataset
        synth = read_csv_dataset("--synthetic", args.synthetic, real.domain)
    values = evaluate(real, synth, metrics, seed=args.seed)
    if args.json:
        print(dumps_strict(values, prog="margsynth evaluate"))
    else:
        width = max(len(m) for m in values)
        for m, v in values.items():
            print(f"{m:{width}s}  {v:.6f}")
    return 0
