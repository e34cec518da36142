"""Every benchmark script still imports against the current library.

The benchmarks are not run in CI (they take minutes each), so a renamed or removed
library function would otherwise break them silently. Importing a script runs its
module level (imports, constants) but not ``main``; scripts that need an optional
peer (``mbi``, ``jax``) import it inside ``main``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks():
    assert BENCHMARKS


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_imports(path):
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
