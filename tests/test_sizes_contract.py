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
