"""The ``margsynth`` command line (also ``python -m margsynth``).

The parsers of all commands (names, help texts, options) are in
:mod:`margsynth.commands.parsers`, which imports nothing heavy: ``margsynth
--help`` and usage errors answer at once, without numpy. Each command's work is
in ``margsynth.commands.<command>``; every leaf parser names, as ``handler``,
the function of that module that runs it (called with the parsed arguments, it
returns the exit status). :func:`run_command` imports that module when the
command runs: the one place the CLI imports lazily.

How every command ends:

- a user error (bad argument, missing or malformed file) exits with status 2
  and one line naming the argument, the value and what was expected, never a
  traceback; the commands check everything before any noise is drawn or any
  file is written, so every file is left as it was;
- an unexpected internal error exits with status 1, a short message and the
  path of a log file holding the full traceback;
- Ctrl-C (SIGINT) and SIGTERM exit quietly (status 130 and 143) after
  removing the temporaries the command had made.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager

from . import __version__
from .commands import parsers

__all__ = ["ArgumentParser", "Terminated", "build_parser", "main", "run_command"]

# argparse takes "-1e-6" or "-inf" for an option; these are numbers.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so that ``finally`` blocks remove temporaries."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with numbers like ``-1e-6`` read as values and usage errors on one line."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``margsynth`` and all its commands (cheap: no command module is imported)."""
    parser = ArgumentParser(
        prog="margsynth",
        description=parsers.DESCRIPTION,
        epilog="Run margsynth COMMAND --help for the options of a command.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    parsers.add_commands(sub)
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command: import ``margsynth.commands.<command>`` (here, and only
    here: the CLI's one lazy import, so that starting it costs nothing until a command
    runs) and call its ``handler`` function with ``args``; returns the exit status."""
    module = importlib.import_module(f"{__package__}.commands.{args.command}")
    return int(getattr(module, args.handler)(args) or 0)


@contextmanager
def _sigterm_raises():
    """While the command runs, SIGTERM raises :class:`Terminated` (like Ctrl-C raises KeyboardInterrupt)."""

    def handler(signum, frame):
        raise Terminated()

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _user_error(exc: BaseException) -> str | None:
    """The one-line message of a user error, or None for an internal error."""
    if isinstance(exc, ValueError):
        return str(exc)
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
        return f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    return None


def _write_log(command: str, argv: list[str]) -> str:
    """Write the current exception's traceback to a log file; returns its path."""
    folder = os.environ.get("MARGSYNTH_LOG_DIR") or tempfile.gettempdir()
    path = os.path.join(folder, f"margsynth-{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")
    try:
        with open(path, "w") as fh:
            fh.write(f"margsynth {__version__}, python {sys.version.split()[0]}\nargv: {argv!r}\n\n")
            fh.write(traceback.format_exc())
    except OSError:
        return "(no log: could not write one)"
    return path


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (one line, status 2) and --help (status 0)
        return exc.code if isinstance(exc.code, int) else 2
    prefix = f"margsynth {args.command}"
    try:
        with _sigterm_raises():
            return run_command(args)
    except BrokenPipeError:  # the reader of our output went away (`margsynth data list | head -1`)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more may reach the closed pipe at exit
        return 1
    except Terminated:
        print(f"{prefix}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Exception as exc:  # noqa: BLE001 - the one place that turns every error into an exit status
        message = _user_error(exc)
        if message is not None:
            print(f"{prefix}: error: {' '.join(message.split())}", file=sys.stderr)
            return 2
        log = _write_log(args.command, argv)
        print(f"{prefix}: internal error ({type(exc).__name__}: {str(exc)[:200]}); full log: {log}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
