"""``margsynth data list|fetch|verify``: the dataset registry from the command line
(parsers: :mod:`margsynth.commands.parsers`)."""

from __future__ import annotations

import sys

from ..data import DATASETS, DataUnavailableError, dataset_names, fetch, is_available, verify
from ..paths import data_dir
from ._outputs import clean_stale


def _list(args) -> int:
    print(f"data folder: {data_dir()}")
    print(f"{'dataset':14s} {'records':>10s} {'files':>5s} {'status':10s} licence")
    for d in DATASETS.values():
        status = "present" if is_available(d.name, mirror=None) else "missing"
        print(f"{d.name:14s} {d.records:>10,d} {len(d.files):>5d} {status:10s} {d.licence}")
    return 0


def _fetch(args) -> int:
    names = args.names or list(dataset_names())
    missing = []
    for name in names:
        try:
            reports = fetch([name], mirror=args.mirror, force=args.force)
        except DataUnavailableError as exc:
            if not args.keep_going:
                raise ValueError(str(exc)) from exc
            missing.append(name)
            print(f"{name:14s} UNAVAILABLE  {exc}")
            continue
        actions = sorted({r.action for r in reports})
        print(f"{name:14s} ok ({', '.join(actions)}; {len(reports)} file(s) verified)")
    if missing:
        print(f"unavailable: {', '.join(missing)} (loaders will fall back to surrogates for these)")
    return 0


def _verify(args) -> int:
    clean_stale(data_dir(), recursive=True)  # leftovers of interrupted fetches, reported on stderr
    bad, missing = [], []
    for path, status in verify(args.names or None):
        if status == "missing":
            missing.append(path)
        elif status != "ok":
            bad.append(path)
        print(f"{status if status in ('ok', 'missing') else 'BAD':8s} {path}" + ("" if status in ("ok", "missing") else f"  {status}"))
    if missing:
        cmd = " ".join(["margsynth data fetch", *args.names])
        print(f"missing: {len(missing)} registered file(s): {', '.join(missing)}; fetch them with `{cmd}`", file=sys.stderr)
    if bad:
        print(f"bad: {len(bad)} file(s) whose SHA-256 does not match the registry: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad or missing else 0
