"""Start-up time of the command line: ``margsynth --help`` (and ``margsynth synth --help``),
each run in a fresh Python process, as a user's shell runs it.

Prints the median and the maximum wall time over ``--runs`` runs (default 10) of each
command. The target for ``margsynth --help`` is under 0.5 s: the top-level help is built
from the commands' parsers alone (no numpy, pandas or mechanism is imported), see
:mod:`margsynth.cli`. The machine's load changes these numbers: report it with them.

    python benchmarks/bench_cli_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = (["--help"], ["synth", "--help"])


def time_command(args: list[str], runs: int) -> list[float]:
    """Wall seconds of ``python -m margsynth ARGS`` in ``runs`` fresh processes (exit status 0 checked)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "margsynth", *args], env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="fresh processes per command (default 10)")
    runs = parser.parse_args().runs
    if runs < 1:
        parser.error(f"--runs {runs}: expected an integer >= 1")
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    print(f"{os.cpu_count()} CPUs, load average {load}; {runs} runs each")
    print(f"{'command':28s} {'median s':>9s} {'max s':>7s}")
    for args in COMMANDS:
        times = time_command(args, runs)
        print(f"{'margsynth ' + ' '.join(args):28s} {statistics.median(times):9.3f} {max(times):7.3f}")


if __name__ == "__main__":
    main()
