"""The ``margsynth`` command line (also ``python -m margsynth``).

Each sub-command lives in ``margsynth.commands.<name>`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code.

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
from contextlib import contextmanager

# Sub-command modules, in the order ``margsynth --help`` lists them.
COMMANDS = ("data", "reproduce", "mgd", "synth", "sample", "evaluate", "schema")

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
    parser = ArgumentParser(prog="margsynth", description=__doc__.splitlines()[0])
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
    import tempfile
    import time
    import traceback

    from . import __version__

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
            return int(args.func(args) or 0)
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
