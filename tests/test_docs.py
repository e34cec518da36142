"""The API reference covers the whole library: every module of ``margsynth`` has an
``automodule`` directive in a page of docs/ (``make docs`` builds them with -W)."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import margsynth

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_is_in_the_api_reference():
    documented = set()
    for page in (ROOT / "docs").rglob("*.md"):
        if "_build" not in page.parts:
            documented.update(re.findall(r"\.\. automodule:: (\S+)", page.read_text(encoding="utf-8")))
    modules = {
        m.name
        for m in pkgutil.walk_packages(margsynth.__path__, "margsynth.")
        if not any(part.startswith("_") for part in m.name.split("."))  # private modules and __main__
    }
    missing = sorted(modules - documented)
    assert not missing, f"add these modules to a page of docs/api/: {missing}"
    unknown = sorted(d for d in documented - modules - {"margsynth"} if not any(p.startswith("_") for p in d.split(".")))
    assert not unknown, f"docs/ names modules that do not exist: {unknown}"
