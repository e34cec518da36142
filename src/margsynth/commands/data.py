"""``margsynth data list|fetch|verify``: the dataset registry from the command line."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("data", help="list, fetch and verify the registered datasets")
    verbs = p.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="registered datasets, their files and local status").set_defaults(func=_list)
    f = verbs.add_parser("fetch", help="download (or copy from a mirror) and verify dataset files")
    f.add_argument("names", nargs="*", help="datasets (default: all)")
    f.add_argument("--from", dest="mirror", metavar="DIR", help="local mirror laid out like MANIFEST (default: $MARGSYNTH_DATA_MIRROR)")
    f.add_argument("--force", action="store_true", help="fetch again even if a verified copy is present")
    f.add_argument("--keep-going", action="store_true", help="report unavailable datasets instead of stopping")
    f.set_defaults(func=_fetch)
    v = verbs.add_parser(
        "verify", help="check the SHA-256 of every local file (and remove temporaries of interrupted fetches)"
    )
    v.add_argument("names", nargs="*", help="datasets (default: all); exits 1 if a file is missing or does not match")
    v.set_defaults(func=_verify)


def _list(args) -> int:
    from ..data import DATASETS, is_available
    from ..paths import data_dir

    print(f"data folder: {data_dir()}")
    print(f"{'dataset':14s} {'records':>10s} {'files':>5s} {'status':10s} licence")
    for d in DATASETS.values():
        status = "present" if is_available(d.name, mirror=None) else "missing"
        print(f"{d.name:14s} {d.records:>10,d} {len(d.files):>5d} {status:10s} {d.licence}")
    return 0


def _fetch(args) -> int:
    from ..data import DataUnavailableError, dataset_names, fetch

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
    from ..data import verify
    from ..paths import data_dir
    from ._outputs import clean_stale

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
