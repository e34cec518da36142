"""``margsynth reproduce``: execute the numbered notebooks with papermill
(parser: :mod:`margsynth.commands.parsers`).

``-p NAME VALUE`` is checked like ``--profile``, before any notebook runs
(:func:`margsynth.runner.check_parameters`): ``NAME`` must be a parameter of one of
the selected notebooks, ``-p profile`` takes only the profiles (and the same one as
``--profile`` when both are given), and ``VALUE`` (a Python literal, else a string)
must have the type of the parameter's default.
"""

from __future__ import annotations

import ast

from ..runner import PROFILES, reproduce


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def run(args) -> int:
    params = {}
    for name, text in args.parameter:
        if name in params:
            raise ValueError(f"-p {name} {text!r}: {name!r} is given twice; expected each parameter once")
        params[name] = _value(text)
    profile = args.profile
    if profile is None:  # -p profile stands for --profile; the default is quick
        given = params.get("profile", "quick")
        profile = given if isinstance(given, str) and given in PROFILES else "quick"
    try:
        results, manifest = reproduce(profile, args.only, params, args.figures_only, publish=args.publish)
    except ValueError as exc:
        msg = str(exc)
        if msg.startswith("parameter "):  # name the option: -p NAME VALUE
            name = next((k for k in params if msg.startswith(f"parameter {k!r}")), None)
            if name is not None:
                text = dict(args.parameter)[name]
                raise ValueError(f"-p {name} {text!r}{msg.removeprefix(f'parameter {name!r}')}") from None
        raise
    failed = [r for r in results if r.status != "ok"]
    print(f"manifest: {manifest}")
    if failed:
        print(f"{len(failed)} notebook(s) failed:")
        for r in failed:
            print(f"  {r.error}")
        return 1
    return 0
