"""Offline fallback: with no data and no mirror, loaders return deterministic
surrogates with the real schemas, say so loudly once, and record it."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from margsynth.data.surrogate import surrogate_baltimore, surrogate_records
from margsynth.domain import Domain

SCRIPT = textwrap.dedent(
    """
    import json, warnings, numpy as np
    from margsynth.data import load, surrogate_used
    from margsynth.data import baltimore as balt
    from margsynth.data.provenance import used
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = load("adult"); a2 = load("adult")
        t = balt.load_truth(); s = balt.load_synthetic("lap_eps1")
        n = load("nltcs")
    print(json.dumps({
        "adult": [len(a), list(a.domain.names)], "truth": [t.source, list(t.counts.shape), int(t.total)],
        "lap": [s.source, s.epsilon], "nltcs": list(n.domain.shape), "surrogate_used": surrogate_used(),
        "warnings": len(w), "used": used(), "hash": int(a.codes.sum()) + int(t.counts[:5].sum()),
    }))
    """
)


def _run(tmp_path, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARGSYNTH_")}
    env.update({"MARGSYNTH_DATA_DIR": str(tmp_path / "empty"), "MARGSYNTH_NO_DOWNLOAD": "1", **(env_extra or {})})
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_offline_fallback_is_loud_deterministic_and_recorded(tmp_path):
    first, stderr = _run(tmp_path)
    second, _ = _run(tmp_path)
    assert first == second  # deterministic
    assert first["adult"][0] == 48_842 and "income>50K" in first["adult"][1]
    assert first["truth"][0] == "surrogate" and first["truth"][1] == [278, 12, 174]
    assert abs(first["truth"][2] - 1_455_608) / 1_455_608 < 0.05
    assert first["lap"] == ["surrogate", 1.0]
    assert first["nltcs"] == [2] * 16
    assert first["surrogate_used"] is True
    assert {v["source"] for v in first["used"].values()} == {"surrogate"}
    # loud, once per dataset
    assert stderr.count("DETERMINISTIC SURROGATE") == 3 and first["warnings"] == 3


def test_require_real_refuses_surrogate(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARGSYNTH_")}
    env.update({"MARGSYNTH_DATA_DIR": str(tmp_path), "MARGSYNTH_NO_DOWNLOAD": "1", "MARGSYNTH_REQUIRE_REAL": "1"})
    out = subprocess.run([sys.executable, "-c", "from margsynth.data import load; load('adult')"], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "DataUnavailableError" in out.stderr


def test_surrogate_records_have_dependence_and_full_support():
    d = Domain.from_sizes({"a": 3, "b": 4, "c": 2})
    ds = surrogate_records("toy", d, 20_000)
    assert ds.equals(surrogate_records("toy", d, 20_000))
    assert all((ds.marginal([x]) > 0).all() for x in d.names)
    ab = ds.marginal(["a", "b"]) / len(ds)
    indep = np.outer(ab.sum(1), ab.sum(0))
    ac = ds.marginal(["a", "c"]) / len(ds)
    bc = ds.marginal(["b", "c"]) / len(ds)
    deps = [np.abs(ab - indep).sum(), np.abs(ac - np.outer(ac.sum(1), ac.sum(0))).sum(), np.abs(bc - np.outer(bc.sum(1), bc.sum(0))).sum()]
    assert max(deps) > 0.05  # not independent


def test_surrogate_baltimore_shape():
    counts, domain = surrogate_baltimore()
    assert counts.shape == domain.shape == (278, 12, 174) and counts.min() >= 0
    assert json.dumps(domain.to_dict()) == '{"neighborhood": 278, "month": 12, "incident_type": 174}'
