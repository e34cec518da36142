"""``margsynth mgd``: score a synthetic dataset against the truth with MGD (MGD paper Eq. 3).

Two input kinds:

- count files in the Baltimore 911 layout (``neighborhood``, ``month``,
  optional ``year``/``epsilon``, columns ``0..173``), the default;
- record CSVs (one integer-coded column per attribute) with ``--domain
  DOMAIN.json`` (``{"attr": size, ...}``) and ``--ordinal a,b``;
- raw CSVs (strings, decimals, empty cells) with ``--schema SCHEMA.json``: both are
  encoded by one encoder whose "discover" entries are resolved exactly from ``--truth``
  (:func:`margsynth.tabular.scoring.encode_pair`); the default marginals are the
  encoder's (:meth:`margsynth.tabular.Encoder.mgd_spec`: numeric bins as ordinal
  attributes, categories flat).

The marginals come from ``--preset`` (``baltimore-table1``: the paper's
Table 1 configuration, the default for count files) or ``--spec SPEC.json``
(see README: "SPEC.json format"). ``--json`` prints one object
``{"marginals": [{"attributes": [...], "aemc": x, "seconds": t}, ...], "mgd": x}``
plus ``"inv_pie"`` and ``"range_query"`` with a Baltimore preset. This output is
a stable interface. The parser is in :mod:`margsynth.commands.parsers`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from ..data.baltimore import CountTable, load_truth, read_count_file
from ..metrics import mgd as mgd_module  # the module: mgd is looked up when called (tests spy on it)
from ..metrics.aemc import MarginalSpec, load_specs
from ..metrics.baltimore import PRESETS, inverse_pie, range_query_error
from ..tabular.scoring import encode_pair
from ._inputs import (
    check_input_file,
    raw_input,
    read_csv_dataset,
    read_domain,
    read_raw_csv,
    read_schema,
    use_registered,
)
from ._outputs import dumps_strict


def _load(args):
    if args.domain:
        ordinal = [a for a in args.ordinal.split(",") if a]
        dom = read_domain("--domain", args.domain, ordinal=ordinal)
        out = [read_csv_dataset(opt, path, dom) for opt, path in (("--truth", args.truth), ("--synthetic", args.synthetic))]
        return out[0], out[1], False
    for opt, path in (("--truth", args.truth), ("--synthetic", args.synthetic)):
        check_input_file(opt, path, "a count file in the Baltimore scored-file layout (or record CSVs with --domain)")
    use_registered("baltimore911", args.allow_surrogate)  # the schema (names, labels) of the count files
    dom = load_truth().domain

    tables = []
    for opt, path in (("--truth", args.truth), ("--synthetic", args.synthetic)):
        try:
            counts, eps = read_count_file(path, dom)
        except ValueError as exc:
            raise ValueError(f"{opt} {exc}") from None
        tables.append(CountTable(Path(path).stem, counts, dom, "real", eps, str(path)))
    return tables[0], tables[1], True


def _load_raw(args):
    """``--truth`` and ``--synthetic`` as raw CSVs, encoded by one encoder from ``--schema``."""
    if args.domain:
        raise ValueError(f"--domain {args.domain!r}: raw CSVs (--schema) need no domain file; drop --domain")
    if args.ordinal:
        raise ValueError(f"--ordinal {args.ordinal!r}: with --schema the ordinal attributes come from the schema; drop --ordinal")
    schema = read_schema("--schema", args.schema)
    truth = raw_input("--truth", args.truth)[0]
    synth = read_raw_csv("--synthetic", args.synthetic)
    what = (f"--truth {args.truth!r}", f"--synthetic {args.synthetic!r}")
    return encode_pair(truth, synth, schema, what=what)


def _schema_specs(encoder):
    """The default marginals of a raw table: :meth:`margsynth.tabular.Encoder.mgd_spec`."""
    spec = encoder.mgd_spec()
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(m, MarginalSpec) for m in spec):
        return list(spec)
    return load_specs(spec)


def run(args) -> int:
    logging.getLogger("cvxpy").setLevel(logging.ERROR)
    if args.spec:
        check_input_file("--spec", args.spec, "a SPEC.json file (README: SPEC.json format)")
        try:
            specs = load_specs(args.spec)
        except ValueError as exc:
            msg = str(exc).removeprefix(f"{args.spec}: ")
            raise ValueError(f"--spec {args.spec!r}: {msg}") from None
    if args.schema:
        truth, synth, encoder = _load_raw(args)
        counts = False
        if not args.spec and args.preset is None:
            specs = _schema_specs(encoder)
    else:
        truth, synth, counts = _load(args)
    total = truth.total if counts else len(truth)
    if total == 0:
        raise ValueError(f"--truth {args.truth!r} holds no counts (total 0); MGD divides by the truth's total, expected a positive total")
    preset = args.preset
    if not args.spec and not (args.schema and preset is None):
        if preset is None:
            if not counts:
                raise ValueError("record CSVs need --spec SPEC.json (the presets are for the Baltimore count files)")
            preset = "baltimore-table1"
        if preset not in PRESETS:
            raise ValueError(f"--preset {preset!r}: unknown preset; expected one of {sorted(PRESETS)}")
        specs = PRESETS[preset]()
    res = mgd_module.mgd(truth, synth, specs, solver=args.solver)
    if preset is not None and preset.startswith("baltimore"):
        if not counts:
            raise ValueError("the Baltimore presets need the Baltimore count files")
        res.extras["inv_pie"] = inverse_pie(truth, synth)
        res.extras["range_query"] = range_query_error(truth, synth, seed=args.seed)
    if args.json:
        sys.stdout.write(dumps_strict(res.to_json(), prog="margsynth mgd") + "\n")
        return 0
    print(f"{'marginal':12s} {'attributes':40s} {'omega':>8s} {'AEMC':>12s} {'solver':>14s} {'seconds':>8s}")
    for s, r in zip(res.specs, res.results):
        print(f"{s.label:12s} {'+'.join(s.names):40s} {s.omega:8.4f} {r.value:12.6f} {r.solver:>14s} {r.seconds:8.2f}")
    print(f"{'MGD':12s} {'':40s} {'':8s} {res.value:12.6f} {'':>14s} {res.seconds:8.2f}")
    for k, v in res.extras.items():
        print(f"{k:12s} {v:.6f}")
    return 0
