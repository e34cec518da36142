"""Sizes decided before noise: the number of synthetic records is checked before any
measurement (a negative or oversized count is refused by the parameter's name, nothing
written, no noise drawn), a domain whose marginal tables cannot be allocated is refused
by name, and the noisy total a generator falls back on stays within the bound that the
memory limit fixes before measuring (reported, never silent)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from margsynth.commands.synth import run_synth
from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms import base, registry

SIZES = {"a": 3, "b": 4, "c": 2}


def _records_param(name):
    return "n_particles" if name == "privpgd" else "synthetic_records"


def _write(d, sizes, n=30, seed=0):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, min(s, 5), n) for s in sizes.values()], 1)
    csv = d / "data.csv"
    csv.write_text(",".join(sizes) + "\n" + "\n".join(",".join(map(str, r)) for r in codes) + "\n")
    dom = d / "domain.json"
    dom.write_text(json.dumps(sizes))
    return str(csv), str(dom)


def _synth(name, csv, dom, out, **params):
    public = csv if registry.spec(name).needs_public else None
    return run_synth(name, csv, domain=dom, public=public, epsilon=1.0, delta=1e-6, out=str(out), params=params)


@pytest.mark.parametrize("value", [-5, 0, 10**12])
@pytest.mark.parametrize("name", registry.available())
def test_record_count_refused_by_name_before_noise(tmp_path, name, value):
    csv, dom = _write(tmp_path, SIZES)
    param = _records_param(name)
    with pytest.raises(ValueError, match=param) as info:
        _synth(name, csv, dom, tmp_path / "out.csv", **{param: value})
    assert repr(value) in str(info.value) or f"{value:,}" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "domain.json"]  # nothing written


@pytest.mark.parametrize("name", registry.available())
def test_oversized_count_refused_by_validate_with_untouched_rng(name):
    dom = Domain.from_sizes(SIZES)
    data = Dataset(np.zeros((10, 3), dtype=int), dom)
    param = _records_param(name)
    mech = registry.create(name, **{param: 10**12})
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    kw = {"public": data} if registry.spec(name).needs_public else {}
    with pytest.raises(ValueError, match=f"{param}=1000000000000.*memory limit"):
        mech.run(data, 1.0, 1e-6, rng, **kw)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("name", registry.available())
def test_attribute_too_large_to_tabulate_is_refused_by_name(tmp_path, name):
    """A one-way marginal of 2**40 cells (8 TiB) cannot be allocated: every mechanism refuses it."""
    csv, dom = _write(tmp_path, {"a": 3, "huge": 2**40, "c": 2})
    with pytest.raises(ValueError, match=r"domain too large.*'huge'.*huge=1,099,511,627,776"):
        _synth(name, csv, dom, tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize(
    "name",
    [
        "mst",
        "mst-prop4",
        "mst-gum",
        "nist-mst",
        "aim",
        "privsyn",
        "privsyn-pgm",
        "privpgd",
        "rap",
        "gem",
        "private-gsd",
    ],
)
def test_pair_too_large_to_tabulate_is_refused_by_name(tmp_path, name):
    """Each attribute fits but their pair (2**36 cells, 512 GiB) does not: the mechanisms
    that score or measure every pair refuse before any noise, naming both attributes."""
    csv, dom = _write(tmp_path, {"x": 2**18, "y": 2**18, "c": 2})
    with pytest.raises(ValueError, match=r"domain too large.*\('x', 'y'.*x=262,144, y=262,144"):
        _synth(name, csv, dom, tmp_path / "out.csv")


def test_bounded_records():
    hi = base.max_records(3)
    assert hi == int(base.MEMORY_LIMIT_MB * 2**20 // 24)
    assert base.bounded_records(41.6, 3) == (42, {})
    n, note = base.bounded_records(-7.2, 3)
    assert n == 0 and note["records_bounded"]["estimate"] == -7.2
    n, note = base.bounded_records(1e300, 3)
    assert n == hi and note["records_bounded"]["bounds"] == [0, hi]
    assert base.bounded_records(float("inf"), 3)[0] == hi


@pytest.mark.parametrize("name", ["independent", "mst", "privsyn", "privsyn-pgm", "adagrid", "aim"])
def test_noisy_total_at_tiny_epsilon_stays_within_the_bound(monkeypatch, name):
    """At epsilon = 1e-12 the noisy total is off by ~1e12; without synthetic_records the
    generator's count stays within the memory bound (here set to 1 KiB: 42 records of 3
    attributes) and the run reports that it was bounded, instead of a MemoryError or a
    negative count after all charges."""
    monkeypatch.setattr(base, "MEMORY_LIMIT_MB", 1 / 1024)
    dom = Domain.from_sizes(SIZES)
    rng = np.random.default_rng(0)
    data = Dataset(np.stack([rng.integers(0, s, 50) for s in SIZES.values()], 1), dom)
    tiny = {"iters": 3} if name != "privsyn" else {"max_rounds": 2}
    if name == "mst":
        tiny["select_iters"] = 3
    if name == "aim":
        tiny.update(rounds=3, **{"generator.iters": 3})
    res = registry.create(name, **tiny).run(data, 1e-12, 1e-6, np.random.default_rng(1))
    assert 0 <= len(res.synthetic) <= 42
    assert res.epsilon <= 1e-12
    note = res.extras.get("records_bounded")
    if note is not None:
        assert note["records"] == len(res.synthetic) and not 0 <= note["estimate"] <= 42


@pytest.mark.parametrize("name", ["rap", "gem", "private-gsd"])
def test_query_workload_too_large_for_memory_is_refused_before_noise(name):
    """Every pair fits (10,000 cells) but all 19,900 pairs of 200 attributes (199 million
    cells, tens of GiB with the counts, answers and noise of each) do not: the query-based
    mechanisms refuse in validate, saying how much they need, and the rng is untouched."""
    dom = Domain.from_sizes({f"x{i}": 100 for i in range(200)})
    data = Dataset(np.zeros((10, 200), dtype=int), dom)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=r"needs about [\d,]+ MiB for the 19,900 2-way marginals.*memory limit"):
        registry.create(name).run(data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == state


# ----------------------------------------------------------------------------- the memory limit a run sets
def test_memory_limit_is_set_per_run_and_read_by_every_check():
    """``memory_limit(MB)`` sets the limit of every size check within it (and only there); the
    attribute pairs are bounded too: 10,000 attributes need ~15 GiB of pair graph, refused at
    the default limit before any data is touched."""
    many = Domain.from_sizes({f"a{i}": 2 for i in range(10_000)})
    with pytest.raises(base.MemoryLimitError, match=r"10,000 attributes make 49,995,000 pairs.*4,096 MiB"):
        base.check_attribute_pairs(many)
    with base.memory_limit(64 * 1024) as limit:
        assert limit == base.current_memory_limit() == 64 * 1024
        base.check_attribute_pairs(many)
        with base.memory_limit(1):
            with pytest.raises(base.MemoryLimitError, match="synthetic_records=100000"):
                base.check_records(100_000, columns=3)
        assert base.current_memory_limit() == 64 * 1024
    assert base.current_memory_limit() == base.MEMORY_LIMIT_MB
    for bad in (0, -1.0, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="memory_limit_mb"):
            with base.memory_limit(bad):
                pass


def test_too_many_attributes_are_refused_by_validate_before_noise():
    dom = Domain.from_sizes({f"a{i}": 2 for i in range(120)})  # 7,140 pairs: ~2.2 MiB of pair graph
    data = Dataset(np.zeros((5, 120), dtype=int), dom)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with base.memory_limit(1.0):
        with pytest.raises(base.MemoryLimitError, match="too many attributes: 120 attributes"):
            registry.create("independent").run(data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == state


def test_raw_table_sizes_are_counted_before_anything_is_built():
    """``prepare`` checks a schema's bins against its ``memory_limit_mb`` (a field of the run it
    returns) before it reads a cell: a billion bins is refused at once, and the limit the run
    keeps is the one given."""
    import time

    import pandas as pd

    from margsynth.tabular import prepare

    df = pd.DataFrame({"x": ["1.5", "2.5", "3.5"] * 20, "c": ["a", "b", "c"] * 20})
    schema = {"columns": [{"name": "x", "kind": "numeric", "type": "float", "bounds": [0, 10], "bins": 10**9},
                          {"name": "c", "kind": "categorical", "categories": ["a", "b", "c"]}]}  # fmt: skip
    start = time.perf_counter()
    with pytest.raises(base.MemoryLimitError, match=r"column 'x': bins=1,000,000,000"):
        prepare(df, schema, "independent", epsilon=1.0, delta=1e-6)
    assert time.perf_counter() - start < 5
    schema["columns"][0]["bins"] = 5000
    with pytest.raises(base.MemoryLimitError, match=r"column 'x': bins=5,000.*0 MiB memory limit"):
        prepare(df, schema, "independent", epsilon=1.0, delta=1e-6, memory_limit_mb=0.5)
    run = prepare(df, schema, "independent", epsilon=1.0, delta=1e-6, memory_limit_mb=64)
    assert run.memory_limit_mb == 64.0


@pytest.mark.parametrize("name, params, field", [
    ("mst", {"iters": 10**14}, "generator.iters"), ("mst", {"select_iters": 10**14}, "select_iters"),
    ("aim", {"iters": 10**14}, "iters"), ("independent", {"iters": 10**14}, "generator.iters"),
])  # fmt: skip
def test_iteration_counts_are_bounded_before_noise(name, params, field):
    """A fit keeps one number per iteration: a count whose history cannot be allocated is
    refused by name in validate, the rng untouched (it used to fail after every charge)."""
    dom = Domain.from_sizes(SIZES)
    data = Dataset(np.zeros((10, 3), dtype=int), dom)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(base.MemoryLimitError, match=rf"{field}=100000000000000: a fit of"):
        registry.create(name, **params).run(data, 1.0, 1e-6, rng)
    assert rng.bit_generator.state == state
