"""A tiny Sphinx directive that prints the ``--help`` of every ``margsynth`` command.

``.. margsynth-cli::`` builds the real parser (:func:`margsynth.cli.build_parser`) at
documentation build time, so the page can never disagree with the code. It needs no
dependency beyond Sphinx.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

WIDTH = "88"


def _help(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to $COLUMNS: fix it so builds are reproducible
    try:
        return parser.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:  # argparse keeps sub-commands only here
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


class MargsynthCLI(SphinxDirective):
    """Sections ``margsynth`` and ``margsynth <command>`` (one level of nesting more for
    commands that have their own sub-commands), each a literal block of ``--help``."""

    has_content = False

    def run(self):
        from margsynth.cli import build_parser

        root = build_parser()
        out = [nodes.literal_block(text=_help(root), language="text")]
        for name, sub in _subparsers(root):
            out.append(self._section(f"margsynth {name}", sub, depth=1))
        return out

    def _section(self, title: str, parser: argparse.ArgumentParser, depth: int) -> nodes.section:
        sec = nodes.section(ids=[nodes.make_id(f"cli-{title}")], names=[nodes.fully_normalize_name(title)])
        sec += nodes.title(text=title)
        sec += nodes.literal_block(text=_help(parser), language="text")
        if depth < 2:
            for name, sub in _subparsers(parser):
                sec += self._section(f"{title} {name}", sub, depth + 1)
        return sec


def setup(app):
    app.add_directive("margsynth-cli", MargsynthCLI)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
