"""The command line starts light: ``margsynth --help`` is built from the parsers alone (no
numpy, pandas or mechanism is imported), its texts are plain text, and every parser names
a handler its command module has. Timings are in benchmarks/bench_cli_startup.py."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from margsynth.cli import build_parser
from margsynth.commands import parsers

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("numpy", "pandas", "scipy", "torch", "matplotlib", "margsynth.mechanisms", "margsynth.data")

# reST / Markdown markup that argparse would print as it is
MARKUP = re.compile(r"`|\*\*|:(func|mod|class|meth|data|attr|ref):|^\s*\.\. ", re.MULTILINE)


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """``(command path, parser)`` for ``parser`` and every sub-parser under it."""
    yield path, parser
    for action in parser._actions:  # argparse keeps sub-commands only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}


def test_help_is_plain_text():
    found = list(_walk(build_parser()))
    assert {p[0] for p, _ in found if p} == set(parsers.COMMANDS)
    for path, parser in found:
        text = parser.format_help()
        hit = MARKUP.search(text)
        assert hit is None, f"margsynth {' '.join(path)} --help shows markup {hit.group(0)!r}:\n{text}"
    assert build_parser().description == parsers.DESCRIPTION


def test_every_parser_names_a_handler_of_its_command_module():
    for path, parser in _walk(build_parser()):
        if not path or any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            continue  # the top level and commands with verbs: their leaves run
        handler = parser.get_default("handler")
        module = importlib.import_module(f"margsynth.commands.{path[0]}")
        assert callable(getattr(module, handler, None)), f"margsynth {' '.join(path)}: no {module.__name__}.{handler}"


def test_help_imports_nothing_heavy():
    """``import margsynth.cli``, ``margsynth --help`` and ``margsynth synth --help`` load
    neither numpy nor pandas nor any mechanism (checked in a fresh interpreter)."""
    script = (
        "import contextlib, io, json, sys\n"
        "import margsynth.cli\n"
        f"heavy = {HEAVY!r}\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy))\n"
        "out = {'import': loaded()}\n"
        "for argv in (['--help'], ['synth', '--help'], ['schema', 'init', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        code = margsynth.cli.main(argv)\n"
        "    out[' '.join(argv)] = [code, loaded()]\n"
        "from margsynth.mechanisms.registry import available\n"
        "out['mechanisms'] = available()\n"
        "print(json.dumps(out))\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_child_env())
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["import"] == []
    for argv in ("--help", "synth --help", "schema init --help"):
        assert out[argv] == [0, []], argv
    # the cheap list of names that synth --help shows is the registry's list of built-ins
    assert tuple(out["mechanisms"]) == parsers.MECHANISMS


@pytest.mark.parametrize("argv", [["--help"], ["synth", "--help"]])
def test_help_exits_0_from_a_shell(argv):
    res = subprocess.run([sys.executable, "-m", "margsynth", *argv], capture_output=True, text=True, timeout=120,
                         env=_child_env())  # fmt: skip
    assert res.returncode == 0 and res.stderr == ""
    assert res.stdout.startswith("usage: margsynth") and MARKUP.search(res.stdout) is None
