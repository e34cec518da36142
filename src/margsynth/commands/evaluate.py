"""``margsynth evaluate``: score a synthetic dataset against the real one.

    margsynth evaluate --dataset NAME|CSV [--domain JSON | --schema SCHEMA.json] --synthetic PATH
                     [--metrics LIST] [--seed S] [--json] [--allow-surrogate] [--data-dictionary JSON]

``--metrics`` is a comma-separated list of metric names (default: ``tv-1way, tv-2way,
tv-3way, nist-3way, nist-conjunctions, nist-target``; also ``downstream, covariance,
counting-queries, threshold-queries, sw-2way``; see :mod:`margsynth.metrics.suite`). Prints one ``name value`` line per metric, or with
``--json`` one JSON object mapping metric name to value. Lower is better, except for
``nist-kmarginal`` and its baselines.

With ``--schema`` both files are raw CSVs described by the schema; they are encoded by one
encoder whose "discover" entries are resolved exactly from ``--dataset``
(:func:`margsynth.tabular.scoring.encode_pair`; scoring reads the real data, so the
scores are not differentially private). The parser is in :mod:`margsynth.commands.parsers`.

``nist-kmarginal`` (SDNist v2's k-marginal score, 0-1000, higher is better) and
``nist-kmarginal-baselines`` (the score of 5%, 10%, 20% and 40% subsamples of the target,
printed as ``nist-kmarginal-subsample-P%``) read both tables as raw text (the null token ``N``
kept) and need no schema: ``--dataset`` a registered NIST excerpt (``ma2018``, ``tx2018``,
``national2018``; alone, it is what ``evaluate`` computes by default) or a raw CSV, described
by the excerpts' data dictionary (``--data-dictionary``, default the registered one); see
:mod:`margsynth.metrics.kmarginal`. A synthetic column that SDNist would drop (values that do
not fit the dictionary) is dropped and named on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..data import NIST_EXCERPTS, load_data_dictionary, load_raw, read_data_dictionary
from ..data.fetch import DataUnavailableError
from ..metrics.kmarginal import RAW_METRICS, evaluate_raw
from ..metrics.suite import DEFAULT_METRICS, evaluate, get_metric
from ..tabular.constraints import parse_rules, violations
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


#: The metric counting the rows that break the schema's rules (raw tables, ``--schema``).
RULES_METRIC = "rules"


def _is_excerpt(arg: str) -> bool:
    """Whether ``--dataset`` names a registered NIST excerpt (a file of that name wins)."""
    return arg in NIST_EXCERPTS and not Path(arg).exists()


def _metric_names(args) -> list[str]:
    """``--metrics`` (or the default for this input), every name checked before any data is read."""
    if args.metrics is None:
        if not _is_excerpt(args.dataset):
            return list(DEFAULT_METRICS)
        return ["nist-kmarginal"] if args.schema is None else [*DEFAULT_METRICS, "nist-kmarginal"]
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise ValueError("--metrics is empty")
    if RULES_METRIC in metrics and args.schema is None:
        raise ValueError(f"--metrics {args.metrics!r}: {RULES_METRIC} counts the rows that break the schema's rules; "
                         "pass --schema SCHEMA.json")  # fmt: skip
    for m in metrics:
        if m != RULES_METRIC and m not in RAW_METRICS:
            try:
                get_metric(m)
            except ValueError as exc:
                raise ValueError(f"{exc}, {', '.join(RAW_METRICS)}") from None
    encoded = [m for m in metrics if m not in RAW_METRICS]
    if encoded and len(encoded) < len(metrics) and args.schema is None:
        raw = [m for m in metrics if m in RAW_METRICS]
        raise ValueError(
            f"--metrics {args.metrics!r}: {', '.join(raw)} score raw tables and {', '.join(encoded)} integer codes; "
            "pass --schema SCHEMA.json (both from raw CSVs) or ask for them in two runs"
        )
    return metrics


def _text_table(option: str, value: str):
    """A raw table as text (every cell a string, ``N`` kept): a registered NIST excerpt or a CSV file."""
    if _is_excerpt(value):
        try:
            return load_raw(value)
        except DataUnavailableError as exc:
            raise ValueError(f"{option} {value!r}: {exc}") from None
    return read_raw_csv(option, value)


def _data_dictionary(args):
    """``--data-dictionary``, else the registered excerpts' dictionary (fetched and verified)."""
    if args.data_dictionary is not None:
        check_input_file("--data-dictionary", args.data_dictionary, "a data dictionary JSON file")
        try:
            return read_data_dictionary(args.data_dictionary)
        except ValueError as exc:
            raise ValueError(f"--data-dictionary {exc}") from None
    try:
        return load_data_dictionary(args.dataset if _is_excerpt(args.dataset) else "ma2018")
    except DataUnavailableError as exc:
        raise ValueError(f"the NIST data dictionary is unavailable ({exc}); or pass --data-dictionary JSON") from None


def _raw_metrics(args, names: list[str]) -> dict[str, float]:
    """The raw-table metrics (:data:`margsynth.metrics.kmarginal.RAW_METRICS`) in ``names``; what
    SDNist would not score is said on stderr."""
    if args.domain is not None and args.schema is None:
        raise ValueError(
            f"--domain {args.domain!r}: {', '.join(names)} score raw tables, not integer codes; drop --domain"
        )
    target = _text_table("--dataset", args.dataset)
    synth = _text_table("--synthetic", args.synthetic)
    try:
        values, result = evaluate_raw(target, synth, names, seed=args.seed, data_dictionary=_data_dictionary(args))
    except ValueError as exc:
        raise ValueError(f"{names[0]}: {exc}") from None
    for line in result.notes():
        print(f"margsynth evaluate: nist-kmarginal: {line}", file=sys.stderr)
    return values


def _rules(args) -> dict[str, float]:
    """Per rule of ``--schema``, the rows of ``--synthetic`` that break it
    (``rules/NAME``) and of ``--dataset`` (``rules-real/NAME``: 0 for a true rule)."""
    schema = read_schema("--schema", args.schema)
    rules = parse_rules(schema.rules, schema)
    if not rules:
        raise ValueError(f"--schema {args.schema!r} states no rules; {RULES_METRIC} needs some")
    real = raw_input("--dataset", args.dataset)[0]
    synth = read_raw_csv("--synthetic", args.synthetic)
    out: dict[str, float] = {}
    for prefix, frame, option in (("rules", synth, "--synthetic"), ("rules-real", real, "--dataset")):
        missing = [c for r in rules for c in r.columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{option}: column {missing[0]!r} of the schema's rules is not in the table")
        for name, count in violations(frame, schema, rules).items():
            out[f"{prefix}/{name}"] = float(count)
    return out


def _main(args) -> int:
    metrics = _metric_names(args)
    encoded = [m for m in metrics if m not in RAW_METRICS and m != RULES_METRIC]
    raw = [m for m in metrics if m in RAW_METRICS]
    values: dict[str, float] = {}
    if raw:
        values.update(_raw_metrics(args, raw))
    if RULES_METRIC in metrics:
        values.update(_rules(args))
    if encoded:
        if args.schema is not None:
            real, synth = _raw_pair(args)
        else:
            check_input_file("--synthetic", args.synthetic, "a CSV file of integer codes")
            real = resolve_dataset(args.dataset, args.domain, allow_surrogate=args.allow_surrogate).dataset
            synth = read_csv_dataset("--synthetic", args.synthetic, real.domain)
        values = {**evaluate(real, synth, encoded, seed=args.seed), **values}
    if args.json:
        print(dumps_strict(values, prog="margsynth evaluate"))
    else:
        width = max(len(m) for m in values)
        for m, v in values.items():
            print(f"{m:{width}s}  {v:.6f}")
    return 0
