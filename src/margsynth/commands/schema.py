"""``margsynth schema init RAW.csv --out SCHEMA.json``: draft the schema of a raw table.

    margsynth schema init RAW.csv --out SCHEMA.json [--public] [--force]

The draft (:func:`margsynth.tabular.draft_schema`) is made from the column names and
types alone: it never copies a category, a bound or any other value out of the file
(that would leak the data outside the privacy accounting); what it cannot know is marked
``"discover"``, to be found privately by ``margsynth synth --schema`` on the run's ledger
(or filled in by hand). With ``--public`` (the file is public data) categories and bounds
are taken from the file, and the draft records that it did. An existing ``--out`` is
replaced only with ``--force`` (a schema is usually edited by hand). The parser is in
:mod:`margsynth.commands.parsers`.
"""

from __future__ import annotations

import json
import sys

from ..paths import atomic_path
from ..tabular import draft_schema
from ._inputs import raw_input
from ._outputs import check_out

__all__ = ["run_init"]


def run_init(raw: str, *, out: str, public: bool = False, force: bool = False, null_tokens=()) -> dict:
    """The work of ``margsynth schema init`` (callable from Python); returns the draft."""
    frame, _, raw_path = raw_input("RAW.csv", raw)
    path = check_out(out, {f"RAW.csv {raw!r}": raw_path}, sidecar=False)
    if path.exists() and not force:
        raise ValueError(f"--out {out!r} exists (a schema is usually edited by hand); pass --force to replace it")
    draft = draft_schema(frame, public=public, null_tokens=list(null_tokens))
    text = json.dumps(draft, indent=2, allow_nan=False) + "\n"
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(text)
    return draft


def _main(args) -> int:
    draft = run_init(args.raw, out=args.out, public=args.public, force=args.force, null_tokens=args.null_token)
    cols = draft.get("columns", draft) if isinstance(draft, dict) else draft
    n = len(cols) if hasattr(cols, "__len__") else "?"
    print(
        f"draft schema of {n} columns -> {args.out} ("
        + ("values taken from the file, which you declared public" if args.public else 'values marked "discover"; nothing copied from the data')
        + "); review and edit it, then: margsynth synth MECH --dataset RAW.csv --schema "
        + f"{args.out} ...",
        file=sys.stdout,
    )
    return 0
