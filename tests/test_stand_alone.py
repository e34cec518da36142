"""The repository stands alone: no source, test, benchmark, notebook, tool or documentation page cites a
file outside it (design notes, paper copies, reference tables beside the checkout) or an
issue number; decisions the papers leave out are cited as pages of docs/notes/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Assembled from pieces so that this file does not match itself.
FORBIDDEN = re.compile(
    "|".join(
        [
            re.escape("../" + "shared"),
            "NOTES" + " §",
            re.escape("NOTES" + ".md"),
            re.escape("shared/" + "papers"),
            re.escape("shared/" + "reference"),
            r"\b[Ii]ssue" + r" [0-9]+\b",
        ]
    )
)
#: README may name CI's data mirror, which does sit beside the checkout.
ALLOWED = re.compile(re.escape("../" + "shared/data"))
SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".json", ".tsv", ".csv", ".yml", ".yaml"}


def _files():
    for top in ("src", "tests", "benchmarks", "docs", "notebooks", "data", "tools"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "_build" not in p.parts and "__pycache__" not in p.parts:
                yield p
    yield ROOT / "README.md"


def test_no_pointer_outside_the_repository():
    hits = []
    for p in _files():
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if FORBIDDEN.search(ALLOWED.sub("", line)):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    assert not hits, "\n".join(hits)


def test_cited_notes_pages_exist():
    """Every notes page cited in the code (docs/notes/<name>.md) is a page of the documentation."""
    cited = set()
    for p in _files():
        cited.update(re.findall(r"docs/notes/([A-Za-z0-9_]+)\.md", p.read_text(encoding="utf-8", errors="replace")))
    assert cited, "no docs/notes page is cited at all"
    missing = sorted(n for n in cited if not (ROOT / "docs" / "notes" / f"{n}.md").is_file())
    assert not missing, missing
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert all(f"notes/{n}" in index for n in cited), "a cited notes page is missing from the docs' toctree"
