"""Domain compression (Algorithm 4 of the NIST-MST/MST paper) and its exact reversal."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.inference.pgm import Measurement, from_noisy_marginals
from margsynth.mechanisms.compression import Compression, compress_domain
from margsynth.privacy import measure_marginals


@pytest.fixture
def small():
    dom = Domain.from_sizes({"a": 5, "b": 3, "c": 4})
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 5, 400), rng.integers(0, 3, 400), rng.integers(0, 4, 400)], axis=1)
    return Dataset(codes, dom)


def test_compress_keeps_supported_values_and_merges_the_rest(small):
    comp = Compression(
        small.domain, {"a": [True, False, True, False, False], "b": [True] * 3, "c": [False, True, True, True]}
    )
    assert comp.compressed.to_dict() == {"a": 3, "b": 3, "c": 4}
    assert comp.kept("a").tolist() == [0, 2] and comp.merged("a").tolist() == [1, 3, 4]
    cd = comp.compress(small)
    a = small.column("a")
    ca = cd.column("a")
    assert np.array_equal(ca[a == 0], np.zeros((a == 0).sum())) and np.all(ca[a == 2] == 1)
    assert np.all(ca[np.isin(a, [1, 3, 4])] == 2)  # the "other" value is code k
    assert np.array_equal(cd.column("b"), small.column("b"))  # untouched attribute


def test_reverse_is_exact_on_kept_values_and_even_on_merged(small):
    comp = Compression(
        small.domain, {"a": [True, False, True, False, False], "b": [True] * 3, "c": [False, True, True, True]}
    )
    cd = comp.compress(small)
    back = comp.reverse(cd, np.random.default_rng(1))
    assert back.domain == small.domain
    for attr in small.domain.names:
        kept = np.isin(small.column(attr), comp.kept(attr))
        assert np.array_equal(back.column(attr)[kept], small.column(attr)[kept])
        merged = comp.merged(attr)
        if merged.size:
            vals = back.column(attr)[~kept]
            assert np.all(np.isin(vals, merged))
            counts = np.bincount(vals, minlength=small.domain[attr].size)[merged]
            assert counts.max() - counts.min() <= 1  # "evenly distributing" (§5 Step 8)
    # and compressing the reversed data gives the compressed data back exactly
    assert comp.compress(back).equals(cd)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    seed=st.integers(0, 10_000),
    n=st.integers(0, 60),
)
def test_round_trip_property(sizes, seed, n):
    rng = np.random.default_rng(seed)
    dom = Domain.from_sizes({f"x{i}": s for i, s in enumerate(sizes)})
    codes = np.stack([rng.integers(0, s, n) for s in sizes], axis=1) if n else np.zeros((0, len(sizes)), int)
    data = Dataset(codes, dom)
    supports = {a: rng.random(dom[a].size) < 0.5 for a in dom.names}
    comp = Compression(dom, supports)
    cd = comp.compress(data)
    back = comp.reverse(cd, rng)
    assert comp.compress(back).equals(cd)
    for a in dom.names:
        kept = supports[a][data.column(a)] if n else np.zeros(0, bool)
        assert np.array_equal(back.column(a)[kept], data.column(a)[kept])
    # any compressed dataset round-trips through reverse
    ccodes = (
        np.stack([rng.integers(0, comp.compressed[a].size, n) for a in dom.names], axis=1)
        if n
        else np.zeros((0, len(sizes)), int)
    )
    c2 = Dataset(ccodes, comp.compressed)
    assert comp.compress(comp.reverse(c2, rng)).equals(c2)


def test_compress_domain_threshold_and_reexpressed_measurement():
    dom = Domain.from_sizes({"a": 6})
    y = np.array([100.0, 2.0, 31.0, 29.0, -5.0, 50.0])
    m = Measurement(("a",), None, y, 10.0)
    comp, (m2,) = compress_domain(dom, [m], threshold=3.0)
    assert comp.supports["a"].tolist() == [True, False, True, False, False, True]  # y >= 3 sigma = 30
    assert comp.compressed["a"].size == 4
    k = 3
    assert np.allclose(m2.y, [100.0, 31.0, 50.0, (2.0 + 29.0 - 5.0) / math.sqrt(k)])
    q = m2.query.toarray()
    assert np.allclose(np.diag(q), [1, 1, 1, 1 / math.sqrt(k)]) and m2.sigma == 10.0
    # noise-free: Q times the compressed true marginal reproduces the re-expressed answers
    true = np.array([100.0, 2.0, 31.0, 29.0, -5.0, 50.0])
    comp_true = np.append(true[comp.supports["a"]], true[~comp.supports["a"]].sum())
    assert np.allclose(q @ comp_true, m2.y)


def test_compression_merged_row_keeps_noise_scale():
    """The merged row of the re-expressed measurement has the claimed noise sd sigma."""
    dom = Domain.from_sizes({"a": 40})
    data = Dataset(np.zeros((1000, 1), int), dom)  # all mass on value 0: 39 values merged
    rng = np.random.default_rng(3)
    last = []
    for _ in range(3000):
        (nm,) = measure_marginals(data, [(("a",), 1.0)], 5.0, rng)
        comp, (m2,) = compress_domain(dom, from_noisy_marginals([nm]))
        if comp.compressed["a"].size == 2 and comp.supports["a"][0]:
            last.append(m2.y[-1])
    # y_last = (sum of merged noisy cells)/sqrt(k); true value 0, so its sd must be sigma
    assert len(last) > 2000
    assert np.std(last) == pytest.approx(m2.sigma, rel=0.1) and m2.sigma == 5.0


def test_identity_compression_and_errors(small):
    comp = Compression(small.domain, {a: np.ones(small.domain[a].size, bool) for a in small.domain.names})
    assert comp.is_identity() and comp.compressed == small.domain
    assert comp.compress(small).equals(small)
    with pytest.raises(ValueError, match="support of 'a'"):
        Compression(small.domain, {"a": [True], "b": [True] * 3, "c": [True] * 4})
    with pytest.raises(ValueError, match="no support mask"):
        Compression(small.domain, {"a": [True] * 5})
    other = Dataset(np.zeros((2, 1), int), Domain.from_sizes({"z": 2}))
    with pytest.raises(ValueError, match="not the compression's original domain"):
        comp.compress(other)
    with pytest.raises(ValueError, match="numpy.random.Generator"):
        comp.reverse(comp.compress(small), None)
    with pytest.raises(ValueError, match="one-way identity"):
        compress_domain(small.domain, [Measurement(("a", "b"), None, np.zeros(15), 1.0)])
