"""``margsynth reproduce``: execute the numbered notebooks with papermill."""

from __future__ import annotations

import ast


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="execute notebooks (papermill) and write figures, tables and a run manifest")
    p.add_argument("--profile", choices=["quick", "full"], default="quick", help="quick: minutes (CI); full: paper scale")
    p.add_argument("--only", nargs="+", metavar="NN", help="run only these notebooks (numbers or names)")
    p.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="override a notebook parameter (Python literal), for every notebook that has it",
    )  # fmt: skip
    p.add_argument("--figures-only", action="store_true", help="re-render figures from cached results only")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..runner import reproduce

    params = {k: _value(v) for k, v in args.parameter}
    results, manifest = reproduce(args.profile, args.only, params, args.figures_only)
    failed = [r for r in results if r.status != "ok"]
    print(f"manifest: {manifest}")
    if failed:
        print(f"{len(failed)} notebook(s) failed:")
        for r in failed:
            print(f"  {r.error}")
        return 1
    return 0
