"""Regenerate the registry tables of data/README.md (datasets, files, pinned URLs, SHA-256).

Run from the repository root after changing src/margsynth/data/registry.tsv or registry.py:

    .venv/bin/python tools/data_readme.py          # rewrite the generated block
    .venv/bin/python tools/data_readme.py --check  # exit 1 when the README is stale

Only the block between the markers of margsynth.data.readme is touched; the prose around it is hand-written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from margsynth.data.readme import replace_block

README = Path(__file__).resolve().parents[1] / "data" / "README.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 when data/README.md is stale")
    args = parser.parse_args(argv)
    old = README.read_text()
    new = replace_block(old)
    if args.check:
        if new != old:
            print(f"{README} is stale: run .venv/bin/python tools/data_readme.py", file=sys.stderr)
            return 1
        return 0
    if new != old:
        README.write_text(new)
        print(f"updated {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
