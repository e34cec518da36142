"""The parsers of the ``margsynth`` commands: names, help texts, options.

This module is what ``margsynth --help`` needs, and nothing more: it imports argparse
and the argument types of ``margsynth.commands._args``, never numpy, pandas or a
mechanism. The work of each command lives in its own module,
``margsynth.commands.<command>``, which :mod:`margsynth.cli` imports only when that
command runs: every leaf parser here sets ``handler``, the name of the function of that
module to call with the parsed arguments (it returns the exit status).

Help texts are plain text (no markup): argparse prints them as they are.
"""

from __future__ import annotations

from ._args import (
    DEFAULT_MEMORY_LIMIT_MB,
    DELTA_MIN,
    EPSILON_RANGE,
    count_arg,
    delta_arg,
    epsilon_arg,
    memory_arg,
    seed_arg,
    share_arg,
)

__all__ = ["COMMANDS", "DESCRIPTION", "MECHANISMS", "add_commands"]

DESCRIPTION = "margsynth: reproducible marginal-based differentially private synthetic data."

#: The built-in mechanism names of :mod:`margsynth.mechanisms.registry`, in its order, for
#: ``synth --help`` (listing them here keeps the help from importing every mechanism;
#: tests/test_cli_startup.py checks that the two agree). ``synth`` accepts any registered name.
MECHANISMS = (
    "mst", "mst-prop4", "nist-mst", "aim", "independent", "adagrid", "adaptive-grid", "privsyn", "mst-gum",
    "privsyn-pgm", "privpgd", "rap", "gem", "private-gsd",
)  # fmt: skip


def _allow_surrogate(parser) -> None:
    parser.add_argument(
        "--allow-surrogate",
        action="store_true",
        help="if a registered dataset's real files are absent and cannot be fetched, run on its deterministic "
        "surrogate (same schema, not the data) instead of stopping",
    )


def _memory_limit(parser, what: str) -> None:
    parser.add_argument(
        "--memory-limit",
        type=memory_arg,
        metavar="MB",
        help=f"memory budget in MiB that every size is checked against before any work ({what}); "
        f"default {DEFAULT_MEMORY_LIMIT_MB}",
    )


def _data(sub) -> None:
    p = sub.add_parser("data", help="list, fetch and verify the registered datasets")
    verbs = p.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="registered datasets, their files and local status").set_defaults(handler="_list")
    f = verbs.add_parser("fetch", help="download (or copy from a mirror) and verify dataset files")
    f.add_argument("names", nargs="*", help="datasets (default: all)")
    f.add_argument("--from", dest="mirror", metavar="DIR", help="local mirror laid out like MANIFEST (default: $MARGSYNTH_DATA_MIRROR)")
    f.add_argument("--force", action="store_true", help="fetch again even if a verified copy is present")
    f.add_argument("--keep-going", action="store_true", help="report unavailable datasets instead of stopping")
    f.set_defaults(handler="_fetch")
    v = verbs.add_parser(
        "verify", help="check the SHA-256 of every local file (and remove temporaries of interrupted fetches)"
    )
    v.add_argument("names", nargs="*", help="datasets (default: all); exits 1 if a file is missing or does not match")
    v.set_defaults(handler="_verify")


def _reproduce(sub) -> None:
    p = sub.add_parser("reproduce", help="execute notebooks (papermill) and write figures, tables and a run manifest")
    p.add_argument("--profile", choices=["quick", "full"], help="quick: minutes (CI); full: paper scale (default quick)")
    p.add_argument("--only", nargs="+", metavar="NN", help="run only these notebooks (numbers or names)")
    p.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="override a notebook parameter (Python literal, else a string), for every selected notebook that "
        "declares it; checked before any notebook runs: NAME must be declared by one of them, VALUE must have the "
        "type of its default, and -p profile takes quick or full",
    )  # fmt: skip
    p.add_argument("--figures-only", action="store_true", help="re-render figures from cached results only")
    p.add_argument(
        "--publish", action="store_true",
        help="keep the result tables of each notebook that succeeds as its published snapshot "
        "(results/published/NN_name/, with a manifest: commit, parameters, machine, wall time), "
        "which the notebook plots without recomputing",
    )  # fmt: skip
    p.set_defaults(handler="run")


def _mgd(sub) -> None:
    p = sub.add_parser("mgd", help="score synthetic data against the truth with MGD (AEMC per marginal)",
                       description="Score a synthetic dataset against the truth with MGD (MGD paper, Eq. 3).")  # fmt: skip
    p.add_argument("--truth", required=True, metavar="PATH", help="ground-truth file")
    p.add_argument("--synthetic", required=True, metavar="PATH", help="synthetic file to score")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--preset", metavar="NAME", help="named marginal set: baltimore-table1 (default for count files), "
                   "baltimore-paper")
    g.add_argument("--spec", metavar="SPEC.json", help="marginal specs (README: SPEC.json format)")
    p.add_argument("--solver", default="auto", choices=("auto", "flow", "lp"), help="AEMC solver (default auto)")
    p.add_argument("--domain", metavar="DOMAIN.json", help="read record CSVs over this domain instead of count files")
    p.add_argument("--ordinal", default="", metavar="A,B", help="ordinal attributes of --domain")
    p.add_argument("--schema", metavar="SCHEMA.json", help="read raw CSVs described by this schema (default marginals: "
                   "the schema's, numeric bins ordinal, categories flat)")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the range queries (Baltimore presets)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _memory_limit(p, "the schema's bins, each marginal's table and its AEMC problem")
    _allow_surrogate(p)
    p.set_defaults(handler="run")


def _synth(sub) -> None:
    p = sub.add_parser(
        "synth",
        help="generate differentially private synthetic data",
        description="Run a DP synthetic-data mechanism; write the synthetic CSV and a JSON sidecar (PATH.json).",
    )
    p.add_argument("mechanism", metavar="MECHANISM", help=f"one of: {', '.join(MECHANISMS)}")
    p.add_argument(
        "--dataset",
        required=True,
        metavar="NAME|CSV",
        help="registered dataset name or a CSV of integer codes (with --schema: a raw CSV or Parquet file, a folder "
        "of parts, or a registered raw table)",
    )
    p.add_argument("--domain", metavar="JSON", help='domain JSON {"attr": size, ...} (required for a CSV of codes)')
    p.add_argument(
        "--schema",
        metavar="SCHEMA.json",
        help="--dataset is a raw CSV (strings, decimals, empty cells) described by this schema "
        "(margsynth schema init drafts one; for the NIST excerpts, nist-acs or nist-acs-21: built from their data "
        "dictionary); the output is decoded to the raw columns",
    )
    p.add_argument(
        "--preprocessing-share",
        type=share_arg,
        metavar="F",
        help="with --schema: share of the budget in (0, 1) for the private discovery of what the schema leaves to "
        '"discover" (default: the library\'s, see the docs)',
    )
    p.add_argument(
        "--chunk-rows",
        type=count_arg,
        metavar="N",
        help="with --schema: read the raw table in chunks of N rows (memory independent of the rows; a Parquet "
        "file or a folder of parts, or a CSV over 256 MiB, is always read in chunks, of 1,000,000 rows by default)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --schema: count the raw table's partitions on this Dask scheduler (tcp://host:8786)",
    )
    p.add_argument("--public", metavar="NAME|CSV", help="public dataset over the same domain (nist-mst)")
    lo, hi = EPSILON_RANGE
    p.add_argument("--epsilon", required=True, type=epsilon_arg, metavar="E", help=f"privacy parameter epsilon in [{lo:g}, {hi:g}]")
    p.add_argument("--delta", required=True, type=delta_arg, metavar="D", help=f"privacy parameter delta in [{DELTA_MIN:g}, 1)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of the noise generator, an integer >= 0 (default 0)")
    p.add_argument("--out", required=True, metavar="PATH", help="output CSV (with --schema, .parquet writes Parquet); the sidecar goes to PATH.json")
    p.add_argument("--preset", metavar="NAME", help="hyperparameter preset of the mechanism (privpgd, gem, private-gsd: default | fast; rap: default | adaptive | fast)")
    p.add_argument("--device", metavar="DEVICE", help="torch device for mechanisms that take one (privpgd, rap, gem: cpu | cuda)")
    p.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="mechanism hyperparameter (Python literal), e.g. -p iters=1000, or a field of its generator, "
        "e.g. -p generator.iters=1000; repeatable",
    )
    p.add_argument(
        "--save-model",
        metavar="PATH",
        help="also save the fitted model (mechanisms that generate with Private-PGM) to PATH (.npz), "
        "from which margsynth sample draws more records at no privacy cost",
    )
    _memory_limit(p, "records, attributes and their pairs, marginal tables, the schema's bins; before any privacy "
                  "charge")
    _allow_surrogate(p)
    p.set_defaults(handler="_main")


def _sample(sub) -> None:
    p = sub.add_parser(
        "sample",
        help="draw more records from a saved model (no privacy cost)",
        description="Draw records from a model saved by margsynth synth --save-model; write the CSV and a JSON "
        "sidecar (PATH.json). Sampling a saved model is post-processing: it costs no privacy budget.",
    )
    p.add_argument("model", metavar="MODEL", help="the model file (.npz) written by synth --save-model")
    p.add_argument("--n", type=count_arg, metavar="N", help="number of records (default: as many as the run made)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of the sampler, an integer >= 0 (default 0)")
    p.add_argument("--out", required=True, metavar="PATH", help="output CSV (with --schema, .parquet writes Parquet); the sidecar goes to PATH.json")
    _memory_limit(p, "the model file's arrays before they are read, and the records")
    p.set_defaults(handler="_main")


def _evaluate(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score synthetic data against the real data",
        description="Compute utility metrics of a synthetic CSV against the real dataset (lower is better, except "
        "nist-kmarginal and its baselines: SDNist's 0-1000 score, higher is better).",
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
        "also downstream,covariance,counting-queries,threshold-queries,sw-2way; on raw tables nist-kmarginal, "
        "nist-kmarginal-baselines, the default for a NIST excerpt without --schema and added to the default with it; "
        "with --schema, rules: per rule of the schema the synthetic and the real rows that break it)",
    )
    p.add_argument(
        "--data-dictionary",
        metavar="JSON",
        help="data dictionary for nist-kmarginal (default: the NIST excerpts' registered data_dictionary.json)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of randomised metrics (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object {metric: value}")
    _memory_limit(p, "the schema's bins and each marginal the metrics tabulate")
    _allow_surrogate(p)
    p.set_defaults(handler="_main")


def _schema(sub) -> None:
    p = sub.add_parser("schema", help="draft the schema of a raw CSV (for synth --schema)",
                       description="Schemas of raw tables (strings, decimals, empty cells) for margsynth synth --schema.")  # fmt: skip
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    init = verbs.add_parser(
        "init",
        help="write a draft schema from the column names and types (no values unless --public)",
        description="Write a draft schema of RAW.csv from its column names and types alone; values the draft cannot "
        'know are marked "discover" (found privately by synth --schema). Edit it before use.',
    )
    init.add_argument("raw", metavar="RAW.csv", help="the raw table: a CSV with a header row, or a registered raw table")
    init.add_argument("--out", required=True, metavar="SCHEMA.json", help="where to write the draft (JSON)")
    init.add_argument(
        "--public",
        action="store_true",
        help="the file is public: take category sets and numeric bounds from it (recorded in the draft)",
    )
    init.add_argument(
        "--null-token",
        action="append",
        default=[],
        metavar="TEXT",
        help="a cell text that means null (besides the empty cell), e.g. --null-token N; repeatable",
    )
    init.add_argument("--force", action="store_true", help="replace --out if it exists")
    init.set_defaults(handler="_main")


#: Command name -> the function adding its parser, in the order ``margsynth --help`` lists them.
_PARSERS = {
    "data": _data,
    "reproduce": _reproduce,
    "mgd": _mgd,
    "synth": _synth,
    "sample": _sample,
    "evaluate": _evaluate,
    "schema": _schema,
}
COMMANDS = tuple(_PARSERS)


def add_commands(sub) -> None:
    """Add the parser of every command to ``sub`` (the subparsers action of the top-level parser)."""
    for add in _PARSERS.values():
        add(sub)
