"""The ``margsynth`` command line (also ``python -m margsynth``).

Each sub-command lives in ``margsynth.commands.<name>`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Sub-command modules, in the order ``margsynth --help`` lists them.
COMMANDS = ("data", "reproduce", "mgd", "synth", "evaluate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="margsynth", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"margsynth.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"margsynth.commands.{name}":
                continue  # command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"margsynth {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
