"""Saved models (margsynth.model_file, margsynth.mechanisms.sampler): every mechanism that generates with Private-PGM keeps
its fitted model; saving and loading it is exact; sampling it repeats the run's own GENERATE step
(same rng state, same records), follows the model's distribution, and is refused cleanly for the
mechanisms that keep no model and for files that are not models."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Attribute, Domain, Hierarchy
from margsynth.inference.pgm import GraphicalModel
from margsynth.mechanisms import registry
from margsynth.mechanisms.generators import PGMGenerator
from margsynth.mechanisms.sampler import PGMSampler, pgm_mechanisms, unsavable_reason
from margsynth.model_file import SavedModel

DOM = Domain(
    (
        Attribute("a", 4, ordinal=True),
        Attribute("b", 5, labels=("v", "w", "x", "y", "z")),
        Attribute("c", 3, hierarchy=Hierarchy.from_groups((0, 0, 1))),
        Attribute("d", 6),
    )
)


def _data(n=1500, seed=0):
    """A correlated table whose last values of ``b`` and ``d`` are rare (MST/NIST-MST compress them)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 4, n))
    b[:2] = 4  # a rare value
    c = (a + (rng.random(n) < 0.3)) % 3
    d = np.where(rng.random(n) < 0.7, c, rng.integers(0, 3, n))
    d[:3] = 5
    d[3:5] = 4
    return Dataset(np.stack([a, b, c, d], 1), DOM)


FAST = {"iters": 30}
EXTRA = {"mst": {"select_iters": 30}, "mst-prop4": {"select_iters": 30}, "aim": {"generator.iters": 30, "rounds": 6}}


def _run(name, seed=0, data=None):
    data = _data() if data is None else data
    kw = {"public": _data(400, 9)} if registry.spec(name).needs_public else {}
    mech = registry.create(name, **(FAST if name in pgm_mechanisms() else {}), **EXTRA.get(name, {}))
    return mech.run(data, 1.0, 1e-6, np.random.default_rng(seed), **kw)


@pytest.fixture(scope="module")
def runs():
    return {name: _run(name) for name in pgm_mechanisms()}


def _codes(ds):
    return np.asarray(ds.codes, dtype=np.int64)


@pytest.mark.parametrize("name", pgm_mechanisms())
def test_save_load_sample_is_exact(runs, name, tmp_path):
    res = runs[name]
    assert isinstance(res.sampler, PGMSampler) and res.sampler.domain == DOM
    saved = SavedModel.from_result(res, info=res.sidecar())
    path = saved.save(tmp_path / "m.npz")
    back = SavedModel.load(path)
    assert back.domain == DOM and [a.labels for a in back.domain.attributes] == [a.labels for a in DOM.attributes]
    m0, m1 = res.sampler.model, back.sampler.model
    assert m1.cliques == m0.cliques and m1.total == m0.total
    assert all(np.array_equal(x, y) for x, y in zip(m0.theta, m1.theta))
    assert all(np.array_equal(x, y) for x, y in zip(m0.clique_marginals(), m1.clique_marginals()))
    for s in (0, 1):
        a = res.sampler.sample(700, np.random.default_rng(s))
        b = back.sample(700, np.random.default_rng(s))
        assert np.array_equal(_codes(a), _codes(b))  # same seed, same bytes, before and after the file
    assert not np.array_equal(_codes(back.sample(700, np.random.default_rng(0))), _codes(back.sample(700, np.random.default_rng(1))))
    assert back.info["epsilon_spent"] == pytest.approx(res.epsilon) and back.info["ledger"] == json.loads(json.dumps(res.ledger))
    assert back.records == len(res.synthetic)
    # a second save of the loaded model gives the same bytes
    assert saved.save(tmp_path / "a.npz").read_bytes() == back.save(tmp_path / "b.npz").read_bytes()


@pytest.mark.parametrize("name", ["mst", "nist-mst", "aim", "privsyn-pgm"])
def test_sampler_repeats_the_runs_generate_step(name):
    """Replaying the rng state the run had when it started Algorithm 8 gives the run's own records."""
    from .test_cli_tabular import generate_states

    with generate_states() as states:
        res = _run(name, seed=3)
    n, state = states[-1]
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    again = res.sampler.sample(n, rng)
    assert np.array_equal(_codes(again), _codes(res.synthetic))


def test_large_sample_follows_the_model(runs):
    """Marginals of a large sample match the model's (Algorithm 8 rounds each group's counts to
    within one record); values MST merged into one code are spread evenly back (§5 Step 8)."""
    sampler = runs["mst"].sampler
    (comp,) = sampler.reverse
    assert not comp.is_identity()  # the rare values were merged: the reversal is exercised
    n = 200_000
    sample = sampler.sample(n, np.random.default_rng(11))
    compressed = comp.compress(sample)
    model = sampler.model
    for clique in model.cliques:
        got = compressed.marginal(clique) / n
        assert np.abs(got - model.probabilities(clique)).max() < 2e-3, clique
    for a in DOM.names:
        merged = comp.merged(a)
        if merged.size:
            counts = sample.marginal((a,))[merged]
            assert counts.max() - counts.min() <= 1


def test_sample_matches_a_small_model_by_brute_force():
    """A hand-made two-clique model: the sample's joint frequencies match the model's joint
    distribution, enumerated cell by cell."""
    from margsynth.inference.pgm import Factor

    dom = Domain.from_sizes({"x": 2, "y": 3, "z": 2})
    rng = np.random.default_rng(5)
    model = GraphicalModel.from_factors(
        dom, [Factor(("x", "y"), rng.normal(size=(2, 3))), Factor(("y", "z"), rng.normal(size=(3, 2)))], total=100.0
    )
    joint = np.exp(np.add.outer(model.theta[0], np.zeros(2)) + np.add.outer(np.zeros(2), model.theta[1]))
    joint /= joint.sum()
    saved = SavedModel(PGMSampler(model))
    buf = io.BytesIO()
    saved.write(buf)
    path_bytes = buf.getvalue()
    assert path_bytes[:4] == b"PK\x03\x04"
    n = 120_000
    s = saved.sample(n, np.random.default_rng(0))
    freq = s.marginal(("x", "y", "z")) / n
    assert np.abs(freq - joint).max() < 3e-3
    assert saved.records == 100


def test_mechanisms_without_a_model_are_refused():
    for name in registry.available():
        if name == "privpgd":
            continue  # needs torch; it has no generator object either (checked below)
        reason = unsavable_reason(registry.create(name))
        assert (reason is None) == (name in pgm_mechanisms()), (name, reason)
    res = _run("privsyn")
    assert res.sampler is None
    with pytest.raises(ValueError, match="keeps no fitted Private-PGM model.*mst"):
        SavedModel.from_result(res)
    assert unsavable_reason(registry.create("mst-gum")) == "it generates with gum, not with Private-PGM"


def test_privpgd_is_refused():
    pytest.importorskip("torch")
    assert "not with Private-PGM" in unsavable_reason(registry.create("privpgd"))


def test_nist_mst_with_transforms_keeps_no_model():
    from margsynth.mechanisms.nist_mst import NISTMST

    class Shift:
        def transform_domain(self, domain):
            return domain

        def forward(self, data):
            return data

        def reverse(self, data, rng, domain):
            return data

    mech = NISTMST(transforms=(Shift(),), generator=PGMGenerator(iters=20))
    assert unsavable_reason(mech) == "its record transforms cannot be saved"
    res = mech.run(_data(), 1.0, 1e-6, np.random.default_rng(0), public=_data(400, 9))
    assert res.sampler is None


# ----------------------------------------------------------------------------- files that are not models
def _rewrite(path, out, change):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["meta"].tobytes())
    meta, arrays = change(meta, arrays)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(out, **arrays)
    return out


def _set(path_keys, value):
    def change(meta, arrays):
        obj = meta
        for k in path_keys[:-1]:
            obj = obj[k]
        obj[path_keys[-1]] = value
        return meta, arrays

    return change


BAD = {
    "format": (_set(["format"], "something-else"), "meta.format"),
    "version": (_set(["version"], 99), "version 99 is not supported"),
    "kind": (_set(["kind"], "gum"), "meta.kind"),
    "total": (_set(["model", "total"], -1.0), "model total must be finite and > 0"),
    "parent": (_set(["model", "parent"], [5, 5, 5]), "meta.model.parent"),
    "clique": (_set(["model", "cliques"], [["nope"]]), "unknown attribute"),
    "domain size": (_set(["domain"], [{"name": "a", "size": 2, "ordinal": True}]), "meta.domain"),
    "columns": (_set(["columns"], ["a", "a", "b", "c"]), "meta.columns"),
    "theta shape": (lambda m, a: (m, {**a, "theta_0": np.zeros(3)}), "theta_0"),
    "theta missing": (lambda m, a: (m, {k: v for k, v in a.items() if k != "theta_0"}), "theta_0: array missing"),
    "theta nan": (lambda m, a: (m, {**a, "theta_0": np.full_like(a["theta_0"], np.nan)}), "NaN or +inf"),
    "support": (lambda m, a: (m, {**a, "support_0_1": np.ones(2, dtype=bool)}), "support_0_1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_files_are_refused_naming_the_field(runs, tmp_path, case):
    good = SavedModel.from_result(runs["mst"]).save(tmp_path / "good.npz")
    change, needle = BAD[case]
    bad = _rewrite(good, tmp_path / "bad.npz", change)
    with pytest.raises(ValueError, match="bad.npz") as exc:
        SavedModel.load(bad)
    assert needle in str(exc.value)


#: A model file written by the first version of the format (MST on a domain with an ordinal
#: attribute with a hierarchy and labels, a labelled one and a compression step; a sidecar
#: with a NaN, a tuple and numpy values), with the SHA-256 of the first 40 records it draws
#: with ``default_rng(0)`` (int64 codes) as that version sampled them.
V1_FILE = Path(__file__).parent / "data" / "saved_model_v1.npz"
V1_SAMPLE = "782c632114a7fc8e7f892ea222c528a6ec4ef61cce06a7aeabe1eee1bce8e0cf"


def test_files_of_the_first_version_load_sample_and_rewrite_the_same_bytes():
    saved = SavedModel.load(V1_FILE)
    a, b, c, d = saved.domain.attributes
    assert (a.ordinal, a.hierarchy.levels[1], a.labels) == (True, (0, 0, 1, 1, 2, 2), tuple("uvwxyz"))
    assert (b.ordinal, b.hierarchy, b.labels, c.ordinal, d.labels) == (False, None, ("p", "q", "r"), True, None)
    assert len(saved.sampler.reverse) == 1 and saved.info["x"] is None and saved.info["y"] == [1, 2]
    codes = np.ascontiguousarray(saved.sample(40, np.random.default_rng(0)).codes, dtype=np.int64)
    assert hashlib.sha256(codes.tobytes()).hexdigest() == V1_SAMPLE
    buf = io.BytesIO()
    saved.write(buf)
    assert buf.getvalue() == V1_FILE.read_bytes()


def test_other_files_are_refused(tmp_path):
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="not a numpy .npz archive"):
        SavedModel.load(tmp_path / "text.npz")
    np.savez(tmp_path / "obj.npz", meta=np.array([{"a": 1}], dtype=object))  # a pickle inside: never loaded
    with pytest.raises(ValueError, match="not a numpy .npz archive of plain arrays"):
        SavedModel.load(tmp_path / "obj.npz")
    np.savez(tmp_path / "nometa.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="meta"):
        SavedModel.load(tmp_path / "nometa.npz")
    with zipfile.ZipFile(tmp_path / "zip.npz", "w") as z:
        z.writestr("meta.npy", b"not an array")
    with pytest.raises(ValueError, match="zip.npz"):
        SavedModel.load(tmp_path / "zip.npz")


def test_sample_checks_its_arguments(runs):
    sampler = runs["independent"].sampler
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for n in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="n must be a positive integer"):
            sampler.sample(n, rng)
    with pytest.raises(ValueError, match="memory limit"):
        sampler.sample(10**12, rng)
    with pytest.raises(ValueError, match="rng must be an explicit numpy.random.Generator"):
        sampler.sample(10, 0)
    assert rng.bit_generator.state == state
