"""``margsynth reproduce``: execute the numbered notebooks with papermill
(parser: :mod:`margsynth.commands.parsers`)."""

from __future__ import annotations

import ast

from ..runner import reproduce


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def run(args) -> int:
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
