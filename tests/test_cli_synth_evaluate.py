"""``margsynth synth`` / ``margsynth evaluate`` end to end, the mechanism registry and the metric suite."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from margsynth.cli import main
from margsynth.data import load, load_source
from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms import registry
from margsynth.metrics import suite


def _files(d):
    return sorted(p.name for p in d.iterdir())


def test_synth_then_evaluate_on_titanic(tmp_path, capsys):
    out = tmp_path / "syn" / "titanic.csv"
    rc = main(
        [
            "synth",
            "mst",
            "--dataset",
            "titanic",
            "--epsilon",
            "1",
            "--delta",
            "1e-9",
            "--seed",
            "3",
            "--out",
            str(out),
            "-p",
            "iters=200",
            "-p",
            "select_iters=200",
            "--allow-surrogate",  # offline: the surrogate (real data when present)
        ]
    )
    assert rc == 0
    real = load("titanic")
    frame = pd.read_csv(out)
    # same columns, in the order of the input file
    assert sorted(frame.columns) == sorted(real.domain.names)
    if load_source("titanic") == "real":
        assert list(frame.columns)[:2] == ["Pclass", "Sex"]
    syn = Dataset(frame, real.domain)  # same coding: validates every code against the domain
    assert abs(len(syn) - len(real)) < 100
    side = json.loads((tmp_path / "syn" / "titanic.csv.json").read_text())
    for key in ("mechanism", "parameters", "ledger", "seconds", "epsilon_spent", "delta", "seed", "budget", "dataset"):
        assert key in side
    assert side["mechanism"] == "mst" and side["seed"] == 3 and side["parameters"]["generator"]["iters"] == 200
    assert side["epsilon_spent"] == pytest.approx(1.0)
    assert sum(r["cost"] for r in side["ledger"]) == pytest.approx(side["budget"]["total"])
    assert _files(tmp_path / "syn") == ["titanic.csv", "titanic.csv.json"]  # no temp files left
    capsys.readouterr()

    assert main(["evaluate", "--dataset", "titanic", "--synthetic", str(out), "--json", "--allow-surrogate"]) == 0
    values = json.loads(capsys.readouterr().out)
    assert list(values) == list(suite.DEFAULT_METRICS)
    assert all(0.0 <= v <= 1.0 for v in values.values())
    assert main(["evaluate", "--dataset", "titanic", "--synthetic", str(out), "--metrics", "tv-2way,tv-1way",
                 "--allow-surrogate"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("tv-2way") and "tv-1way" in text

    # the same seed gives the same synthetic data
    out2 = tmp_path / "again.csv"
    assert (
        main(
            [
                "synth",
                "mst",
                "--dataset",
                "titanic",
                "--epsilon",
                "1",
                "--delta",
                "1e-9",
                "--seed",
                "3",
                "--out",
                str(out2),
                "-p",
                "iters=200",
                "-p",
                "select_iters=200",
                "--allow-surrogate",
            ]
        )
        == 0
    )
    assert out.read_text() == out2.read_text()


def test_synth_csv_input_and_nist_mst_with_public(tmp_path, capsys):
    dom = Domain.from_sizes({"x": 3, "y": 4, "z": 2, "w": 3})
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 600)
    codes = np.stack([x, (x + rng.integers(0, 2, 600)) % 4, rng.integers(0, 2, 600), x], axis=1)
    pd.DataFrame(codes[:500], columns=dom.names).to_csv(tmp_path / "priv.csv", index=False)
    pd.DataFrame(codes[500:], columns=dom.names).to_csv(tmp_path / "pub.csv", index=False)
    (tmp_path / "dom.json").write_text(json.dumps(dom.to_dict()))
    out = tmp_path / "out.csv"
    rc = main(
        [
            "synth",
            "nist-mst",
            "--dataset",
            str(tmp_path / "priv.csv"),
            "--domain",
            str(tmp_path / "dom.json"),
            "--public",
            str(tmp_path / "pub.csv"),
            "--epsilon",
            "2",
            "--delta",
            "1e-6",
            "--out",
            str(out),
            "-p",
            "iters=100",
        ]
    )
    assert rc == 0
    assert list(pd.read_csv(out).columns) == list(dom.names)
    side = json.loads(out.with_name("out.csv.json").read_text())
    assert side["mechanism"] == "nist-mst" and side["public"] == str(tmp_path / "pub.csv")
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                "--dataset",
                str(tmp_path / "priv.csv"),
                "--domain",
                str(tmp_path / "dom.json"),
                "--synthetic",
                str(out),
                "--json",
                "--metrics",
                "tv-3way,nist-target",
            ]
        )
        == 0
    )
    assert set(json.loads(capsys.readouterr().out)) == {"tv-3way", "nist-target"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["mst", "--dataset", "titanic", "--epsilon", "0", "--delta", "1e-9"], "epsilon must be"),
        (["mst", "--dataset", "titanic", "--epsilon", "-2", "--delta", "1e-9"], "epsilon must be"),
        (["mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "1"], "delta must be in"),
        (["mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "0"], "delta must be in"),
        (
            ["nist-mst", "--dataset", "adult-priv", "--public", "adult", "--epsilon", "1", "--delta", "1e-9"],
            "public dataset's domain differs",
        ),
        (["nist-mst", "--dataset", "adult-priv", "--epsilon", "1", "--delta", "1e-9"], "needs a public dataset"),
        (
            ["aim", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9", "-p", "workload=[('Sex', 'Nope')]"],
            "unknown attribute",
        ),
        (
            ["mst", "--dataset", "titanic", "--public", "titanic", "--epsilon", "1", "--delta", "1e-9"],
            "does not use a public",
        ),
        (["nope", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9"], "unknown mechanism"),
        (["mst", "--dataset", "no_such.csv", "--epsilon", "1", "--delta", "1e-9"], "does not exist"),
        (["mst", "--dataset", "not-a-dataset", "--epsilon", "1", "--delta", "1e-9"], "unknown dataset"),
        (["mst", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-9", "-p", "bogus=1"], "bad parameters"),
    ],
)
def test_bad_input_is_clear_error_and_writes_nothing(tmp_path, capsys, monkeypatch, args, message):
    drawn = []
    real_create = registry.create

    class Spy:  # records any call of the mechanism's run (where all noise is drawn)
        def __init__(self, mech):
            self._mech = mech

        def __getattr__(self, name):
            return getattr(self._mech, name)

        def run(self, *a, **k):
            drawn.append(1)
            return self._mech.run(*a, **k)

    monkeypatch.setattr(registry, "create", lambda name, **kw: Spy(real_create(name, **kw)))
    out = tmp_path / "o.csv"
    rc = main(["synth", *args, "--out", str(out), "--allow-surrogate"])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert _files(tmp_path) == []
    assert drawn == []


def test_evaluate_errors(tmp_path, capsys):
    ev = ["evaluate", "--dataset", "titanic", "--allow-surrogate"]
    assert main([*ev, "--synthetic", str(tmp_path / "none.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"Survived": [5]}).to_csv(bad, index=False)
    assert main([*ev, "--synthetic", str(bad)]) == 2
    assert "missing column" in capsys.readouterr().err
    assert main([*ev, "--synthetic", str(bad), "--metrics", "tv-9way"]) == 2
    assert "unknown metric" in capsys.readouterr().err


def test_registry_creates_every_builtin_and_takes_plugins():
    for name in ("mst", "mst-prop4", "nist-mst", "aim", "independent"):
        assert name in registry.available()
        mech = registry.create(name)
        assert hasattr(mech, "run")
    assert registry.create("mst-prop4").conversion == "prop4"
    assert registry.spec("nist-mst").needs_public
    registry.register("test-plugin", "margsynth.mechanisms.baselines:Independent", iters=7)
    try:
        assert registry.create("test-plugin").generator.iters == 7  # routed to its generator
        with pytest.raises(ValueError, match="already registered"):
            registry.register("test-plugin", "x:y")
    finally:
        registry._REGISTRY.pop("test-plugin")
    registry.register("test-missing", "margsynth.no_such_module:Thing")
    try:
        with pytest.raises(ValueError, match="not available"):
            registry.create("test-missing")
    finally:
        registry._REGISTRY.pop("test-missing")


def test_metric_suite_values():
    dom = Domain.from_sizes({"a": 2, "b": 2, "c": 3})
    real = Dataset(np.array([[0, 0, 0], [1, 1, 1], [1, 0, 2], [0, 1, 2]]), dom)
    assert all(v == 0.0 for v in suite.evaluate(real, real).values())
    other = Dataset(np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]), dom)
    # tv-1way: a: |.5-1|+|.5-0| /2 = .5, b: .5, c: (|.25-1| + .25 + .5)/2 = .75 -> mean 0.5833
    assert suite.tv_kway(real, other, 1) == pytest.approx((0.5 + 0.5 + 0.75) / 3)
    assert suite.designated_triple(dom) == ("a", "b", "c")
    assert suite.designated_triple(load("adult").domain) == ("sex", "native-country", "income>50K")
    v1 = suite.evaluate(real, other, ["nist-3way"], seed=1)
    v2 = suite.evaluate(real, other, ["tv-1way", "nist-3way"], seed=1)
    assert v1["nist-3way"] == v2["nist-3way"]  # independent of which other metrics are asked
    suite.register_metric("test-zero", lambda r, s, *, rng=None: 0.0)
    try:
        assert "test-zero" in suite.available_metrics()
    finally:
        suite.METRICS.pop("test-zero")


def test_evaluation_metrics_merge_in_with_one_tv_2way():
    evaluation = pytest.importorskip("margsynth.metrics.evaluation")
    names = suite.available_metrics()
    assert set(evaluation.EVALUATION_METRICS) <= set(names)
    assert names.count("tv-2way") == 1
    dom = Domain.from_sizes({"a": 3, "b": 2, "c": 4})
    rng = np.random.default_rng(0)
    real = Dataset(np.stack([rng.integers(0, k, 300) for k in dom.shape], axis=1), dom)
    syn = Dataset(np.stack([rng.integers(0, k, 200) for k in dom.shape], axis=1), dom)
    ours = suite.get_metric("tv-2way")(real, syn, rng=rng)
    theirs = evaluation.EVALUATION_METRICS["tv-2way"](real, syn, rng=rng)
    assert ours == pytest.approx(theirs)


def test_privpgd_preset_and_device_flags(tmp_path, capsys):
    out = tmp_path / "pgd.csv"
    args = ["synth", "privpgd", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-5", "--out", str(out),
            "--allow-surrogate"]  # fmt: skip
    tiny = ["-p", "epochs=3", "-p", "n_particles=1000", "-p", "projection_iters=10"]
    assert main([*args, "--preset", "fast", "--device", "cpu", *tiny]) == 0
    side = json.loads((tmp_path / "pgd.csv.json").read_text())
    assert side["parameters"]["consistency"] is True  # the fast preset's setting
    assert abs(side["epsilon_spent"] - 1.0) < 1e-9
    out.unlink()
    assert main([*args, "--preset", "nope"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err
    assert main(["synth", "mst", "--device", "cpu", *args[2:]]) == 2
    assert "takes no --device" in capsys.readouterr().err
    assert not out.exists()


def test_aim_fast_preset_from_the_command_line(tmp_path):
    out = tmp_path / "aim.csv"
    args = ["synth", "aim", "--dataset", "titanic", "--epsilon", "1", "--delta", "1e-5", "--out", str(out),
            "--allow-surrogate", "--preset", "fast"]  # fmt: skip
    assert main(args) == 0
    side = json.loads((tmp_path / "aim.csv.json").read_text())
    p = side["parameters"]
    assert (p["max_model_size"], p["iters"], p["generator"]["iters"]) == (10.0, 50, 100)
    assert side["epsilon_spent"] <= 1.0
