"""data/README.md agrees with the registry: its generated tables are current, and list every file's URL and SHA-256."""

import re
from pathlib import Path

import pytest

from margsynth.data.readme import BEGIN, END, registry_tables, replace_block
from margsynth.data.registry import DATASETS, file_entries

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "data" / "README.md"


def _block(text):
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)]


def test_generated_block_is_current():
    text = README.read_text()
    assert replace_block(text) == text, "data/README.md is stale: run .venv/bin/python tools/data_readme.py"


def test_every_file_once_with_its_hash_url_and_size():
    rows = [line for line in _block(README.read_text()).splitlines() if line.startswith("| `") and ("<http" in line or "<package:" in line)]
    parsed = {}
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        path, size, sha, url = cells[1].strip("`"), cells[2], cells[3].strip("`"), cells[4].strip("<>")
        assert path not in parsed, f"{path} listed twice"
        parsed[path] = (sha, int(size.replace(",", "")), url)
    assert parsed == {e.path: (e.sha256, e.bytes, e.url) for e in file_entries()}
    for sha, _, url in parsed.values():
        assert re.fullmatch(r"[0-9a-f]{64}", sha)
        assert url.startswith(("https://", "package:"))


def test_every_dataset_with_its_licence_and_source():
    block = _block(README.read_text())
    for d in DATASETS.values():
        row = next((line for line in block.splitlines() if line.startswith(f"| `{d.name}` | {d.kind} |")), None)
        assert row is not None, d.name
        assert d.licence in row and d.source in row and f"{d.records:,}" in row
        assert d.files, f"{d.name} has no registered file"
    text = README.read_text()
    for name in DATASETS:  # each has a provenance paragraph above the generated tables
        assert f"`{name}`" in text[: text.index(BEGIN)], name


def test_readme_says_how_to_fetch_and_verify():
    text = README.read_text()
    for needle in ("margsynth data fetch", "margsynth data verify", "MARGSYNTH_DATA_MIRROR", "data/raw/"):
        assert needle in text, needle
    assert "/data/raw/" in (ROOT / ".gitignore").read_text().splitlines()


def test_replace_block_leaves_the_prose_and_needs_the_markers():
    text = f"intro\n{BEGIN}\nold table\n{END}\noutro\n"
    new = replace_block(text, "NEW\n")
    assert new == f"intro\n{BEGIN}\n\nNEW\n\n{END}\noutro\n"
    assert replace_block(new, "NEW\n") == new
    assert registry_tables().count("\n| `") == len(DATASETS) + len(file_entries())
    with pytest.raises(ValueError, match="markers"):
        replace_block("no markers here")
