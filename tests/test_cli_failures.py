"""How the CLI fails: user errors exit 2 with one line naming the argument, the value and
what was expected, before any privacy charge or random draw, leaving every file as it was;
internal errors exit 1 with a short message and the path of a full log; signals exit quietly.
One test per family of failures, parametrised over the commands it touches."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from margsynth.cli import main
from margsynth.domain import Domain


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(path.rglob("*"))}


def _one_line_error(err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def toy(tmp_path):
    """A small private CSV, a public CSV and their domain JSON in a fresh folder."""
    dom = Domain.from_sizes({"x": 3, "y": 4, "z": 2})
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, k, 300) for k in dom.shape], axis=1)
    pd.DataFrame(codes[:250], columns=dom.names).to_csv(tmp_path / "priv.csv", index=False)
    pd.DataFrame(codes[250:], columns=dom.names).to_csv(tmp_path / "pub.csv", index=False)
    (tmp_path / "dom.json").write_text(json.dumps(dom.to_dict()))
    return tmp_path


def _synth(toy, *extra, mech="mst", out=None):
    return ["synth", mech, "--dataset", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"), "--epsilon", "1",
            "--delta", "1e-6", "--out", str(out if out is not None else toy / "out.csv"), "-p", "iters=20", *extra]  # fmt: skip


def _gum(args: list[str]) -> list[str]:
    """``args`` for mst-gum: its generator (GUM) has rounds where Private-PGM has iterations."""
    return ["max_rounds=5" if a == "iters=20" else a for a in args]


# ----------------------------------------------------------------------------- the contract
def test_internal_error_exits_1_with_a_log(toy, tmp_path, capsys, monkeypatch):
    from margsynth.commands import synth

    def boom(*a, **k):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(synth, "run_synth", boom)
    monkeypatch.setenv("MARGSYNTH_LOG_DIR", str(tmp_path))
    assert main(_synth(toy)) == 1
    line = _one_line_error(capsys.readouterr().err, "internal error", "RuntimeError", "something inside broke")
    log = Path(line.rsplit("full log: ", 1)[1])
    assert log.is_file() and "Traceback" in log.read_text() and "something inside broke" in log.read_text()


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_exit_quietly(toy, sig, code):
    from margsynth.cli import Terminated

    assert issubclass(Terminated, KeyboardInterrupt)
    script = (
        "import os, signal, sys\n"
        "from margsynth import cli\n"
        "from margsynth.commands import data\n"
        f"data._list = lambda args: os.kill(os.getpid(), {int(sig)}) or __import__('time').sleep(5)\n"
        "sys.exit(cli.main(['data', 'list']))\n"
    )
    # a non-interactive shell starts background jobs with SIGINT ignored, and an ignored
    # signal stays ignored across exec: give the child the default disposition, as a
    # program started from a terminal has
    res = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert res.returncode == code
    _one_line_error(res.stderr, "margsynth data:")


# ----------------------------------------------------------------------------- family 6: permissions
@pytest.fixture
def umask():
    old = os.umask(0o022)
    try:
        yield lambda m: os.umask(m)
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_files_follow_the_umask(toy, tmp_path, monkeypatch, umask, mask, mode):
    import hashlib
    import importlib

    from margsynth.data import registry

    fetch_mod = importlib.import_module("margsynth.data.fetch")

    umask(mask)
    # synth output and sidecar
    assert main(_synth(toy)) == 0
    for p in (toy / "out.csv", toy / "out.csv.json"):
        assert p.stat().st_mode & 0o777 == mode, p
    # fetched data (from a mirror)
    content = b"x\n0\n"
    (tmp_path / "mirror" / "toy").mkdir(parents=True)
    (tmp_path / "mirror" / "toy" / "a.csv").write_bytes(content)
    entry = registry.FileEntry("toy/a.csv", hashlib.sha256(content).hexdigest(), len(content), "http://127.0.0.1:9/a")
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path / "cache"))
    report = fetch_mod.fetch_file(entry, mirror=tmp_path / "mirror")
    assert report.action == "copied" and report.local.stat().st_mode & 0o777 == mode


# ----------------------------------------------------------------------------- ledger and rng untouched
SEED = 424242


@pytest.fixture
def spy(monkeypatch):
    """Records every privacy charge, every ledger made, every Generator seeded with SEED and every mechanism run."""
    from margsynth.mechanisms import registry
    from margsynth.privacy.ledger import BudgetLedger

    seen = {"charges": [], "ledgers": [], "rng": [], "runs": [], "validate": []}
    charge, init, default_rng, create = (
        BudgetLedger.charge,
        BudgetLedger.__init__,
        np.random.default_rng,
        registry.create,
    )

    def spy_charge(self, *a, **k):
        seen["charges"].append(a)
        return charge(self, *a, **k)

    def spy_init(self, *a, **k):
        seen["ledgers"].append(a)
        return init(self, *a, **k)

    def spy_rng(*a, **k):
        if a and a[0] == SEED:
            seen["rng"].append(a)
        return default_rng(*a, **k)

    class Spy:
        def __init__(self, mech):
            self._mech = mech

        def __getattr__(self, name):
            return getattr(self._mech, name)

        def run(self, *a, **k):
            seen["runs"].append(1)
            return self._mech.run(*a, **k)

    monkeypatch.setattr(BudgetLedger, "charge", spy_charge)
    monkeypatch.setattr(BudgetLedger, "__init__", spy_init)
    monkeypatch.setattr(np.random, "default_rng", spy_rng)
    monkeypatch.setattr(registry, "create", lambda name, **kw: Spy(create(name, **kw)))

    def untouched():
        # a ledger opened only to size a budget (``validate`` with (epsilon, delta)) is allowed:
        # what must not happen before a refusal is a charge, a seeded draw or a run
        return not (seen["charges"] or seen["rng"] or seen["runs"])

    seen["untouched"] = untouched
    return seen


def test_spy_sees_a_real_run(toy, spy):
    assert main(_synth(toy, "--seed", str(SEED))) == 0
    assert spy["runs"] and spy["rng"] and spy["charges"] and not spy["untouched"]()


# ----------------------------------------------------------------------------- family 1: output paths
def _bad_out(kind, toy):
    if kind == "fifo":
        os.mkfifo(toy / "fifo.csv")
        return str(toy / "fifo.csv"), "is a FIFO"
    if kind == "device":
        # A device node of our own (same major/minor as /dev/null) inside the test's folder:
        # should the check ever regress, the run overwrites this node, never the real /dev/null.
        dev = toy / "null.csv"
        try:
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except (PermissionError, OSError) as exc:
            pytest.skip(f"cannot create a device node here: {exc}")
        return str(dev), "is a device"
    if kind == "symlink":
        (toy / "target.csv").write_text("keep me\n")
        (toy / "link.csv").symlink_to(toy / "target.csv")
        return str(toy / "link.csv"), "symbolic link"
    if kind == "sidecar-symlink":
        (toy / "target.json").write_text("{}")
        (toy / "o.csv.json").symlink_to(toy / "target.json")
        return str(toy / "o.csv"), "symbolic link"
    if kind == "newdir/":
        return str(toy / "newdir") + "/", "names a folder"
    if kind == "folder":
        (toy / "afolder").mkdir()
        return str(toy / "afolder"), "is a folder"
    if kind == "input":
        return str(toy / "priv.csv"), "is the input --dataset"
    if kind == "sidecar-over-domain":
        return str(toy / "dom"), "would overwrite the input --domain"
    if kind == "parent-is-file":
        return str(toy / "priv.csv" / "o.csv"), "is not a folder"
    if kind == "proc":
        return "/proc/margsynth-out.csv", "cannot create a file in '/proc'"
    raise AssertionError(kind)


@pytest.mark.parametrize("mech", ["mst", "aim", "independent"])
@pytest.mark.parametrize(
    "kind",
    [
        "fifo",
        "device",
        "symlink",
        "sidecar-symlink",
        "newdir/",
        "folder",
        "input",
        "sidecar-over-domain",
        "parent-is-file",
        "proc",
    ],  # fmt: skip
)
def test_bad_output_paths_refused_up_front(toy, capsys, spy, kind, mech):
    out, message = _bad_out(kind, toy)
    before = _tree(toy) if kind != "fifo" else sorted(p.name for p in toy.iterdir())
    assert main(_synth(toy, "--seed", str(SEED), mech=mech, out=out)) == 2
    _one_line_error(capsys.readouterr().err, "--out", message)
    assert (_tree(toy) if kind != "fifo" else sorted(p.name for p in toy.iterdir())) == before
    assert spy["untouched"]()


def test_csv_and_sidecar_land_as_one_unit(toy, monkeypatch, capsys, tmp_path_factory):
    from margsynth.commands import _outputs

    monkeypatch.setenv("MARGSYNTH_LOG_DIR", str(tmp_path_factory.mktemp("logs")))

    out = toy / "out.csv"
    assert main(_synth(toy, "--seed", "1")) == 0
    old = _tree(toy)
    real_replace = os.replace

    def failing_replace(src, dst):
        if str(dst).endswith(".csv.json"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(_outputs.os, "replace", failing_replace)
    assert main(_synth(toy, "--seed", "2")) == 1  # an I/O failure while writing is not the user's error
    assert _tree(toy) == old  # the old pair is back, nothing else left behind
    monkeypatch.setattr(_outputs.os, "replace", real_replace)
    assert main(_synth(toy, "--seed", "2")) == 0
    new = _tree(toy)
    assert new["out.csv"] != old["out.csv"] and new["out.csv.json"] != old["out.csv.json"]
    assert json.loads(new["out.csv.json"])["seed"] == 2
    assert sorted(new) == sorted(old) and out.exists()
    capsys.readouterr()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_sigterm_removes_temporaries_and_the_next_run_cleans_stale_ones(toy):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = _synth(toy, "-p", "iters=100000", "-p", "select_iters=100000")
    proc = subprocess.Popen([sys.executable, "-m", "margsynth", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 120
    while not [p for p in toy.iterdir() if ".margsynth-tmp-" in p.name]:
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    _one_line_error(err, "terminated")
    assert sorted(p.name for p in toy.iterdir()) == ["dom.json", "priv.csv", "pub.csv"]

    # a killed run's leftovers (its pid is gone) are removed and reported by the next run
    stale = [
        toy / f".out.csv.margsynth-tmp-{_dead_pid()}-0badcafe.csv",
        toy / f".out.csv.json.margsynth-tmp-{_dead_pid()}-00ff.json",
    ]
    for p in stale:
        p.write_text("half")
    res = subprocess.run([sys.executable, "-m", "margsynth", *_synth(toy)], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert all(str(p) in res.stderr for p in stale) and "stale temporary" in res.stderr
    assert sorted(p.name for p in toy.iterdir()) == ["dom.json", "out.csv", "out.csv.json", "priv.csv", "pub.csv"]


def test_data_verify_cleans_stale_temporaries(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path))
    (tmp_path / "benchmark").mkdir()
    stale = tmp_path / "benchmark" / f".titanic.zip.margsynth-tmp-{_dead_pid()}-abcd.part"
    stale.write_bytes(b"partial")
    live = tmp_path / "benchmark" / f".titanic.zip.margsynth-tmp-{os.getpid()}-abcd.part"  # a running fetch's
    live.write_bytes(b"in progress")
    main(["data", "verify", "titanic"])
    err = capsys.readouterr().err
    assert str(stale) in err and not stale.exists() and live.exists()


# ----------------------------------------------------------------------------- family 3: files and specs
def _family3(toy, case):
    (toy / "afolder").mkdir(exist_ok=True)
    (toy / "dup.json").write_text('{"x": 3, "y": 4, "z": 2, "x": 3}')
    (toy / "duph.csv").write_text("x,y,x\n0,1,1\n1,2,0\n")
    (toy / "bool.csv").write_text("x,y,z\nTrue,1,1\nFalse,2,0\n")
    for name, level in (("null", None), ("list", [1])):
        spec = {"marginals": [{"attributes": [{"name": "x", "level": level}, "y"]}]}
        (toy / f"spec-{name}.json").write_text(json.dumps(spec))
    if not (toy / "fifo.json").exists():
        os.mkfifo(toy / "fifo.json")
    (toy / "schema.json").write_text(json.dumps({"columns": [{"name": "x", "kind": "categorical", "categories": "discover"}]}))
    (toy / "longsize.json").write_text(json.dumps({"x": list(range(500)), "y": 4, "z": 2}))
    priv, dom = str(toy / "priv.csv"), str(toy / "dom.json")
    synth = ["synth", "mst", "--epsilon", "1", "--delta", "1e-6", "--seed", str(SEED), "--out", str(toy / "o.csv")]
    evaluate = ["evaluate", "--dataset", priv, "--domain", dom, "--seed", str(SEED)]
    mgd = ["mgd", "--truth", priv, "--domain", dom]
    spec = str(toy / "spec-null.json")
    return {
        "synth --domain missing": ([*synth, "--dataset", priv, "--domain", str(toy / "nope.json")], "--domain", "does not exist"),
        "synth --domain folder": ([*synth, "--dataset", priv, "--domain", str(toy / "afolder")], "--domain", "is a folder"),
        "synth --domain fifo": ([*synth, "--dataset", priv, "--domain", str(toy / "fifo.json")], "--domain", "not a regular file"),
        "synth --domain duplicate key": ([*synth, "--dataset", priv, "--domain", str(toy / "dup.json")], "--domain", "'x' appears twice"),
        "synth --domain a schema": ([*synth, "--dataset", priv, "--domain", str(toy / "schema.json")], "--domain", "a schema goes to --schema"),
        "synth --domain long size": ([*synth, "--dataset", priv, "--domain", str(toy / "longsize.json")], "--domain", "has size list [0, 1,"),
        "synth --dataset folder": ([*synth, "--dataset", str(toy / "afolder"), "--domain", dom], "--dataset", "is a folder"),
        "synth --dataset duplicated header": ([*synth, "--dataset", str(toy / "duph.csv"), "--domain", dom], "--dataset", "['x'] more than once"),
        "synth --dataset True/False": ([*synth, "--dataset", str(toy / "bool.csv"), "--domain", dom], "--dataset", "True/False"),
        "synth --public missing": (["synth", "nist-mst", *synth[2:], "--dataset", priv, "--domain", dom, "--public", str(toy / "nope.csv")], "--public", "does not exist"),
        "synth --public folder": (["synth", "nist-mst", *synth[2:], "--dataset", priv, "--domain", dom, "--public", str(toy / "afolder")], "--public", "is a folder"),
        "evaluate --synthetic missing": ([*evaluate, "--synthetic", str(toy / "nope.csv")], "--synthetic", "does not exist"),
        "evaluate --synthetic folder": ([*evaluate, "--synthetic", str(toy / "afolder")], "--synthetic", "is a folder"),
        "evaluate --synthetic duplicated header": ([*evaluate, "--synthetic", str(toy / "duph.csv")], "--synthetic", "more than once"),
        "evaluate --synthetic True/False": ([*evaluate, "--synthetic", str(toy / "bool.csv")], "--synthetic", "True/False"),
        "evaluate --domain duplicate key": (["evaluate", "--dataset", priv, "--domain", str(toy / "dup.json"), "--synthetic", priv], "--domain", "appears twice"),
        "mgd --spec missing": ([*mgd, "--synthetic", priv, "--spec", str(toy / "nope.json")], "--spec", "does not exist"),
        "mgd --spec folder": ([*mgd, "--synthetic", priv, "--spec", str(toy / "afolder")], "--spec", "is a folder"),
        "mgd --spec fifo": ([*mgd, "--synthetic", priv, "--spec", str(toy / "fifo.json")], "--spec", "not a regular file"),
        "mgd --spec level null": ([*mgd, "--synthetic", priv, "--spec", spec], "--spec", "level must be an integer >= 0, got None"),
        "mgd --spec level [1]": ([*mgd, "--synthetic", priv, "--spec", str(toy / "spec-list.json")], "--spec", "got [1]"),
        "mgd --domain missing": (["mgd", "--truth", priv, "--synthetic", priv, "--domain", str(toy / "nope.json"), "--spec", str(toy / "spec-ok.json")], "--domain", "does not exist"),
        "mgd --domain duplicate key": (["mgd", "--truth", priv, "--synthetic", priv, "--domain", str(toy / "dup.json"), "--spec", str(toy / "spec-ok.json")], "--domain", "appears twice"),
        "mgd --truth folder": (["mgd", "--truth", str(toy / "afolder"), "--synthetic", priv, "--domain", dom, "--spec", str(toy / "spec-ok.json")], "--truth", "is a folder"),
        "mgd --synthetic duplicated header": ([*mgd, "--synthetic", str(toy / "duph.csv"), "--spec", str(toy / "spec-ok.json")], "--synthetic", "more than once"),
        "mgd --synthetic True/False": ([*mgd, "--synthetic", str(toy / "bool.csv"), "--spec", str(toy / "spec-ok.json")], "--synthetic", "True/False"),
    }[case]  # fmt: skip


FAMILY3 = [
    "synth --domain missing", "synth --domain folder", "synth --domain fifo", "synth --domain duplicate key",
    "synth --domain a schema", "synth --domain long size",
    "synth --dataset folder", "synth --dataset duplicated header", "synth --dataset True/False", "synth --public missing",
    "synth --public folder", "evaluate --synthetic missing", "evaluate --synthetic folder",
    "evaluate --synthetic duplicated header", "evaluate --synthetic True/False", "evaluate --domain duplicate key",
    "mgd --spec missing", "mgd --spec folder", "mgd --spec fifo", "mgd --spec level null", "mgd --spec level [1]",
    "mgd --domain missing", "mgd --domain duplicate key", "mgd --truth folder", "mgd --synthetic duplicated header",
    "mgd --synthetic True/False",
]  # fmt: skip


@pytest.mark.parametrize("case", FAMILY3)
def test_missing_or_malformed_input_files(toy, capsys, spy, case):
    (toy / "spec-ok.json").write_text(json.dumps({"marginals": [{"attributes": ["x", "y"]}]}))
    args, option, message = _family3(toy, case)
    before = sorted(p.name for p in toy.iterdir())
    sizes = {p.name: p.stat().st_size for p in toy.iterdir() if p.is_file()}
    assert main(args) == 2
    assert len(_one_line_error(capsys.readouterr().err, option, message)) < 400  # a line, not a dump of the file
    assert sorted(p.name for p in toy.iterdir()) == before
    assert {p.name: p.stat().st_size for p in toy.iterdir() if p.is_file()} == sizes
    assert spy["untouched"]()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
@pytest.mark.parametrize("option", ["--domain", "--spec"])
def test_unreadable_files(toy, capsys, option):
    (toy / "spec-ok.json").write_text(json.dumps({"marginals": [{"attributes": ["x", "y"]}]}))
    target = toy / ("dom.json" if option == "--domain" else "spec-ok.json")
    target.chmod(0)
    args = ["mgd", "--truth", str(toy / "priv.csv"), "--synthetic", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"),
            "--spec", str(toy / "spec-ok.json")]  # fmt: skip
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, option, "cannot be read")


# ----------------------------------------------------------------------------- family 7: messages that say the truth
FAMILY7 = [
    ("synth", ["--seed", "-1"], "--seed", "-1 is negative"),
    ("evaluate", ["--seed", "-1"], "--seed", "-1 is negative"),
    ("mgd", ["--seed", "-1"], "--seed", "-1 is negative"),
    ("synth", ["--epsilon", "1e308"], "--epsilon", "outside the supported range"),
    ("synth", ["--epsilon", "1e-300"], "--epsilon", "outside the supported range"),
    ("synth", ["--delta", "5e-324"], "--delta", "outside the supported range"),
    ("synth", ["--delta", "-1e-6"], "--delta", "delta must be in (0, 1), got -1e-06"),
    ("synth", ["--epsilon", "-1e-3"], "--epsilon", "epsilon must be a finite number > 0, got -0.001"),
    ("synth", ["--epsilon", "-inf"], "--epsilon", "epsilon must be a finite number > 0"),
    ("synth", ["--dataset", "FOLDER"], "--dataset", "is a folder"),
    ("evaluate", ["--dataset", "FOLDER"], "--dataset", "is a folder"),
]


@pytest.mark.parametrize("command, change, option, message", FAMILY7)
def test_messages_name_the_argument_and_the_truth(toy, capsys, spy, command, change, option, message):
    (toy / "afolder").mkdir()
    base = {
        "synth": ["synth", "mst", "--dataset", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"), "--epsilon", "1",
                  "--delta", "1e-6", "--seed", str(SEED), "--out", str(toy / "o.csv")],
        "evaluate": ["evaluate", "--dataset", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"), "--synthetic",
                     str(toy / "pub.csv"), "--seed", str(SEED)],
        "mgd": ["mgd", "--truth", str(toy / "priv.csv"), "--synthetic", str(toy / "pub.csv"), "--domain",
                str(toy / "dom.json"), "--spec", str(toy / "dom.json"), "--seed", str(SEED)],
    }[command]  # fmt: skip
    key, value = change
    args = list(base)
    args[args.index(key) + 1] = str(toy / "afolder") if value == "FOLDER" else value
    before = _tree(toy)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, option, message)
    assert _tree(toy) == before and spy["untouched"]()


def test_run_synth_checks_the_range_too(toy, spy):
    from margsynth.commands.synth import run_synth

    for eps, delta, msg in [(1e308, 1e-6, "--epsilon"), (1.0, 5e-324, "--delta"), (float("nan"), 1e-6, "--epsilon")]:
        with pytest.raises(ValueError, match=msg):
            run_synth("mst", str(toy / "priv.csv"), domain=str(toy / "dom.json"), epsilon=eps, delta=delta,
                      out=str(toy / "o.csv"), seed=SEED)  # fmt: skip
    with pytest.raises(ValueError, match="--seed"):
        run_synth(
            "mst",
            str(toy / "priv.csv"),
            domain=str(toy / "dom.json"),
            epsilon=1.0,
            delta=1e-6,
            out=str(toy / "o.csv"),
            seed=-1,
        )
    assert spy["untouched"]() and not (toy / "o.csv").exists()


def test_data_verify_fails_and_names_missing_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path))
    assert main(["data", "verify", "titanic"]) == 1
    err = capsys.readouterr().err
    assert (
        "benchmark/titanic.zip" in err
        and "benchmark/titanic-domain.json" in err
        and "margsynth data fetch titanic" in err
    )


# ----------------------------------------------------------------------------- family 5: output that is valid
def _strict(text: str):
    def refuse(const):
        raise AssertionError(f"non-strict JSON constant {const}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("command", ["evaluate", "mgd", "synth"])
def test_json_output_is_strict(toy, capsys, monkeypatch, command):
    import margsynth.metrics.mgd as mgd_mod
    from margsynth.metrics import suite

    spec = toy / "spec.json"
    spec.write_text(json.dumps({"marginals": [{"attributes": ["x", "y"]}]}))
    if command == "evaluate":
        monkeypatch.setitem(suite.METRICS, "test-nan", lambda r, s, *, rng=None: float("nan"))
        args = ["evaluate", "--dataset", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"), "--synthetic",
                str(toy / "pub.csv"), "--json", "--metrics", "tv-1way,test-nan"]  # fmt: skip
    elif command == "mgd":
        real = mgd_mod.mgd

        def with_nan(*a, **k):
            res = real(*a, **k)
            res.extras["undefined-extra"] = float("inf")
            return res

        monkeypatch.setattr(mgd_mod, "mgd", with_nan)
        args = ["mgd", "--truth", str(toy / "priv.csv"), "--synthetic", str(toy / "pub.csv"), "--domain",
                str(toy / "dom.json"), "--spec", str(spec), "--json"]  # fmt: skip
    else:
        from margsynth.mechanisms.base import SynthesisResult

        real_sidecar = SynthesisResult.sidecar
        monkeypatch.setattr(SynthesisResult, "sidecar", lambda self: {**real_sidecar(self), "undefined": float("nan")})
        args = _synth(toy)
    assert main(args) == 0
    captured = capsys.readouterr()
    text = (toy / "out.csv.json").read_text() if command == "synth" else captured.out
    out = _strict(text)
    if command == "evaluate":
        assert out["test-nan"] is None and 0 <= out["tv-1way"] <= 1 and "test-nan is undefined" in captured.err
    elif command == "mgd":
        assert out["undefined-extra"] is None and out["mgd"] >= 0 and "undefined-extra is undefined" in captured.err
    else:
        assert out["undefined"] is None


@pytest.fixture
def baltimore_schema(tmp_path, monkeypatch):
    """Count files over the Baltimore schema, offline (the surrogate's schema has the same shape)."""
    from margsynth.data.baltimore import CountTable
    from margsynth.data.surrogate import surrogate_baltimore

    monkeypatch.setenv("MARGSYNTH_DATA_DIR", str(tmp_path / "nodata"))
    monkeypatch.setenv("MARGSYNTH_NO_DOWNLOAD", "1")
    monkeypatch.delenv("MARGSYNTH_DATA_MIRROR", raising=False)
    counts, dom = surrogate_baltimore()

    def write(name, change=None):
        frame = CountTable(name, counts, dom, "surrogate").to_frame()
        if change is not None:
            frame = change(frame)
        path = tmp_path / f"{name}.csv"
        frame.to_csv(path, index=False)
        return str(path)

    return write


def _set(row, col, value):
    def change(frame):
        frame = frame.astype({col: object})
        frame.loc[row, col] = value
        return frame

    return change


@pytest.mark.parametrize(
    "case, message",
    [
        ("truth total 0", "total 0"),
        ("records truth total 0", "total 0"),
        ("count 2**63", "is too large"),
        ("count 2**64+5", "is too large"),
        ("count 1e30", "is too large"),
        ("counts adding past int64", "add up to more than a 64-bit integer"),
    ],
)
def test_mgd_refuses_undefined_or_overflowing_totals(toy, baltimore_schema, capsys, case, message):
    good = baltimore_schema("good")
    zero = lambda f: f.assign(**{c: 0 for c in f.columns if c.isdigit()})  # noqa: E731
    big = 2**62 + 1
    truth = {
        "truth total 0": lambda: baltimore_schema("zero", zero),
        "count 2**63": lambda: baltimore_schema("big", _set(3, "7", str(2**63))),
        "count 2**64+5": lambda: baltimore_schema("bigger", _set(3, "7", str(2**64 + 5))),
        "count 1e30": lambda: baltimore_schema("float", _set(3, "7", "1e30")),
        "counts adding past int64": lambda: baltimore_schema("sum", lambda f: _set(4, "9", big)(_set(3, "7", big)(f))),
    }
    if case == "records truth total 0":
        (toy / "empty.csv").write_text("x,y,z\n")
        (toy / "spec.json").write_text(json.dumps({"marginals": [{"attributes": ["x", "y"]}]}))
        args = ["mgd", "--truth", str(toy / "empty.csv"), "--synthetic", str(toy / "pub.csv"), "--domain",
                str(toy / "dom.json"), "--spec", str(toy / "spec.json"), "--json"]  # fmt: skip
    else:
        args = ["mgd", "--truth", truth[case](), "--synthetic", good, "--allow-surrogate", "--json",
                "--preset", "baltimore-table1"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("margsynth mgd: error")]
    assert len(line) == 1 and message in line[0] and "negative" not in line[0] and "--truth" in line[0], err


def test_a_registered_name_wins_over_a_folder_of_that_name(tmp_path, monkeypatch):
    from margsynth.commands._inputs import is_file_arg

    monkeypatch.chdir(tmp_path)
    (tmp_path / "titanic").mkdir()
    (tmp_path / "mine").mkdir()
    assert not is_file_arg("titanic") and is_file_arg("mine") and is_file_arg("./titanic")


# ----------------------------------------------------------------------------- family 9: the query-based mechanisms
#: Tiny hyperparameters of RAP, GEM and Private-GSD (``-p``) so that a run takes a second.
QUERY_TINY = {
    "rap": ["-p", "n_rows=8", "-p", "iters=3", "-p", "progress=False"],
    "gem": ["-p", "rounds=2", "-p", "batch_size=8", "-p", "embedding_dim=4", "-p", "hidden=[8]", "-p", "iters=2",
            "-p", "progress=False"],
    "private-gsd": ["-p", "synthetic_rows=20", "-p", "generations=50", "-p", "progress=False"],
}  # fmt: skip


def _query_synth(toy, mech, *extra, out="out.csv", seed=SEED):
    return ["synth", mech, "--dataset", str(toy / "priv.csv"), "--domain", str(toy / "dom.json"), "--epsilon", "1",
            "--delta", "1e-6", "--seed", str(seed), "--out", str(toy / out), *QUERY_TINY[mech], *extra]  # fmt: skip


def _has_cuda() -> bool:
    import torch  # heavy import, these tests only

    return torch.cuda.is_available()


@pytest.fixture
def ledger_spy(monkeypatch):
    """Every charge (without wrapping the mechanism, so that its ``synthesize`` signature, which
    says whether it takes ``--device``, is the real one). A ledger opened only to size the
    budget during validation charges nothing and is not counted."""
    from margsynth.privacy.ledger import BudgetLedger

    seen = []
    charge = BudgetLedger.charge
    monkeypatch.setattr(BudgetLedger, "charge", lambda self, *a, **k: seen.append(a) or charge(self, *a, **k))
    return seen


@pytest.mark.skipif(_has_cuda(), reason="a GPU is present")
@pytest.mark.parametrize("mech", ["rap", "gem"])
def test_cuda_without_a_gpu_exits_2_no_silent_cpu_fallback(toy, capsys, ledger_spy, mech):
    before = _tree(toy)
    assert main(_query_synth(toy, mech, "--device", "cuda")) == 2
    _one_line_error(capsys.readouterr().err, "device 'cuda'", "no CUDA GPU", "no silent CPU fallback")
    assert _tree(toy) == before and not ledger_spy


@pytest.mark.parametrize(
    "mech, extra, message",
    [
        ("private-gsd", ["--device", "cpu"], "mechanism 'private-gsd' takes no --device"),
        ("rap", ["--device", "tpu"], "unknown device 'tpu'"),
        ("gem", ["--preset", "huge"], "unknown preset 'huge'; expected one of ['default', 'fast']"),
        ("rap", ["-p", "n_rows=0"], "n_rows must be a positive integer, got 0"),
        ("gem", ["-p", "ema_beta=1.0"], "ema_beta must be in [0, 1), got 1.0"),
        ("private-gsd", ["-p", "elite=2"], "unknown private-gsd parameter(s) ['elite']"),
        ("private-gsd", ["-p", "synthetic_records=-3"], "synthetic_records must be a positive integer or None, got -3"),
        ("rap", ["-p", "degree=4"], "degree 4 exceeds the number of attributes (3)"),
    ],
)
def test_query_mechanisms_refuse_bad_options_before_any_noise(toy, capsys, ledger_spy, mech, extra, message):
    before = _tree(toy)
    assert main(_query_synth(toy, mech, *extra)) == 2
    _one_line_error(capsys.readouterr().err, message)
    assert _tree(toy) == before and not ledger_spy


@pytest.mark.parametrize("mech", ["rap", "gem", "private-gsd"])
def test_query_mechanisms_run_from_the_cli_same_seed_same_bytes(toy, capsys, mech):
    """``margsynth synth rap|gem|private-gsd``: exit 0, a sidecar with the full ledger and a
    spend within the request; the same seed gives the same bytes, another seed other bytes."""
    assert main(_query_synth(toy, mech, out="a.csv")) == 0
    assert main(_query_synth(toy, mech, out="b.csv")) == 0
    assert main(_query_synth(toy, mech, out="c.csv", seed=SEED + 1)) == 0
    a, b, c = ((toy / f"{x}.csv").read_bytes() for x in "abc")
    assert a == b and a != c
    side = json.loads((toy / "a.csv.json").read_text())
    assert side["mechanism"] == mech and side["epsilon_spent"] <= 1.0 and side["delta"] <= 1e-6
    assert side["ledger"] and side["ledger"][0]["label"] == "measure total"
    assert side["budget"]["spent"] <= side["budget"]["total"] * (1 + 1e-12)
    assert pd.read_csv(toy / "a.csv").columns.tolist() == ["x", "y", "z"]


# ----------------------------------------------------------------------------- saved models and sample
@pytest.fixture
def toy_model(toy):
    """``toy`` with a saved MST model (made before any spy is installed)."""
    assert main(_synth(toy, "--save-model", str(toy / "m.npz"), out=toy / "first.csv")) == 0
    return toy / "m.npz"


def _model_case(toy, model, case):
    (toy / "afolder").mkdir(exist_ok=True)
    (toy / "notmodel.npz").write_text("x,y,z\n0,0,0\n")
    (toy / "target.npz").write_bytes(b"keep me")
    if not (toy / "link.npz").exists():
        (toy / "link.npz").symlink_to(toy / "target.npz")
    sample = ["sample", str(model), "--seed", str(SEED), "--out", str(toy / "s.csv")]
    with np.load(model, allow_pickle=False) as z:  # a model file from a future margsynth
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["meta"].tobytes())
    meta["version"] = 99
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(toy / "future.npz", **arrays)
    return {
        "synth --save-model privsyn": ([a for a in _synth(toy, "--seed", str(SEED), "--save-model", str(toy / "p.npz"), mech="privsyn")
                                        if a not in ("-p", "iters=20")],
                                       "--save-model", "'privsyn' keeps no fitted Private-PGM model"),
        "synth --save-model privpgd": (_gum(_synth(toy, "--seed", str(SEED), "--save-model", str(toy / "p.npz"), mech="mst-gum")),
                                       "--save-model", "generates with gum, not with Private-PGM"),
        "synth --save-model is --out": (_synth(toy, "--seed", str(SEED), "--save-model", str(toy / "out.csv")),
                                        "--save-model", "same file as --out"),
        "synth --save-model is the sidecar": (_synth(toy, "--seed", str(SEED), "--save-model", str(toy / "out.csv.json")),
                                              "--save-model", "same file as --out's sidecar"),
        "synth --save-model folder": (_synth(toy, "--seed", str(SEED), "--save-model", str(toy / "afolder")),
                                      "--save-model", "is a folder"),
        "synth --save-model symlink": (_synth(toy, "--seed", str(SEED), "--save-model", str(toy / "link.npz")),
                                       "--save-model", "symbolic link"),
        "synth --save-model is the input": (_synth(toy, "--seed", str(SEED), "--save-model", str(toy / "priv.csv")),
                                            "--save-model", "is the input --dataset"),
        "synth --preprocessing-share without --schema": (_synth(toy, "--seed", str(SEED), "--preprocessing-share", "0.1"),
                                                         "--preprocessing-share", "only a raw CSV (--schema)"),
        "synth --preprocessing-share 1": (_synth(toy, "--seed", str(SEED), "--preprocessing-share", "1"),
                                          "--preprocessing-share", "not in (0, 1)"),
        "sample MODEL missing": (["sample", str(toy / "nope.npz"), "--out", str(toy / "s.csv"), "--seed", str(SEED)],
                                 "MODEL", "does not exist"),
        "sample MODEL folder": (["sample", str(toy / "afolder"), "--out", str(toy / "s.csv"), "--seed", str(SEED)],
                                "MODEL", "is a folder"),
        "sample MODEL not a model": (["sample", str(toy / "notmodel.npz"), "--out", str(toy / "s.csv"), "--seed", str(SEED)],
                                     "MODEL", "not a numpy .npz archive"),
        "sample MODEL is a CSV": (["sample", str(toy / "priv.csv"), "--out", str(toy / "s.csv"), "--seed", str(SEED)],
                                  "MODEL", "expected a model file written by margsynth synth --save-model"),
        "sample MODEL from a future version": (["sample", str(toy / "future.npz"), "--out", str(toy / "s.csv"), "--seed",
                                               str(SEED)], "MODEL", "meta.version: version 99 is not supported"),
        "sample --n 0": ([*sample, "--n", "0"], "--n", "0 is not >= 1"),
        "sample --n x": ([*sample, "--n", "x"], "--n", "'x' is not an integer"),
        "sample --n huge": ([*sample, "--n", str(10**12)], "--n", "memory limit"),
        "sample --seed -1": ([*sample[:2], "--seed", "-1", "--out", str(toy / "s.csv")], "--seed", "-1 is negative"),
        "sample --out is MODEL": (["sample", str(model), "--seed", str(SEED), "--out", str(model)], "--out", "is the input MODEL"),
        "sample --out folder": (["sample", str(model), "--seed", str(SEED), "--out", str(toy / "afolder")], "--out", "is a folder"),
        "sample --out symlink": (["sample", str(model), "--seed", str(SEED), "--out", str(toy / "link.npz")], "--out", "symbolic link"),
    }[case]  # fmt: skip


MODEL_CASES = [
    "synth --save-model privsyn", "synth --save-model privpgd", "synth --save-model is --out",
    "synth --save-model is the sidecar", "synth --save-model folder", "synth --save-model symlink",
    "synth --save-model is the input", "synth --preprocessing-share without --schema", "synth --preprocessing-share 1",
    "sample MODEL missing", "sample MODEL folder", "sample MODEL not a model", "sample MODEL is a CSV",
    "sample MODEL from a future version", "sample --n 0",
    "sample --n x", "sample --n huge", "sample --seed -1", "sample --out is MODEL", "sample --out folder",
    "sample --out symlink",
]  # fmt: skip


@pytest.mark.parametrize("case", MODEL_CASES)
def test_save_model_and_sample_refuse_bad_input_up_front(toy_model, spy, capsys, case):
    toy = toy_model.parent
    args, option, message = _model_case(toy, toy_model, case)
    capsys.readouterr()
    before = _tree(toy)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, option, message)
    assert _tree(toy) == before
    assert spy["untouched"]()


def test_synth_model_and_csv_land_as_one_unit(toy, monkeypatch, capsys, tmp_path_factory):
    """A failure while renaming the three files puts every old file back."""
    from margsynth.commands import _outputs

    monkeypatch.setenv("MARGSYNTH_LOG_DIR", str(tmp_path_factory.mktemp("logs")))
    assert main(_synth(toy, "--seed", "1", "--save-model", str(toy / "m.npz"))) == 0
    old = _tree(toy)
    real_replace = os.replace

    def failing_replace(src, dst):
        if str(dst).endswith(".csv.json"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(_outputs.os, "replace", failing_replace)
    assert main(_synth(toy, "--seed", "2", "--save-model", str(toy / "m.npz"))) == 1
    assert _tree(toy) == old
    monkeypatch.setattr(_outputs.os, "replace", real_replace)
    assert main(_synth(toy, "--seed", "2", "--save-model", str(toy / "m2.npz"))) == 0
    new = _tree(toy)
    assert new["m.npz"] == old["m.npz"] and new["m2.npz"] != old["m.npz"]
    capsys.readouterr()


# ----------------------------------------------------------------------------- raw tables (synth --schema)
@pytest.fixture
def rawtoy(tmp_path):
    """A raw CSV (strings, decimals, integers, empty cells) and a schema for it."""
    pytest.importorskip("margsynth.tabular")
    rng = np.random.default_rng(0)
    n = 300
    colour = rng.choice(["red", "green", "blue"], n).astype(object)
    colour[::7] = None
    frame = pd.DataFrame({"colour": colour, "height": rng.normal(170, 10, n).round(1), "age": rng.integers(18, 90, n),
                          "grade": rng.choice(["low", "mid", "high"], n)})  # fmt: skip
    frame.to_csv(tmp_path / "raw.csv", index=False)
    schema = {"columns": [
        {"name": "colour", "kind": "categorical", "categories": "discover", "nullable": True},
        {"name": "height", "kind": "numeric", "type": "float", "bounds": [100, 250], "bins": 10},
        {"name": "age", "kind": "numeric", "type": "integer", "bounds": "discover", "binning": "quantile", "bins": 5},
        {"name": "grade", "kind": "ordinal", "categories": ["low", "mid", "high"]},
    ]}  # fmt: skip
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    return tmp_path


def _raw_case(toy, case):
    schema = json.loads((toy / "schema.json").read_text())
    frame = pd.read_csv(toy / "raw.csv", keep_default_na=False, dtype=str)

    made = []  # every entry below is built: each bad file gets its own name

    def with_schema(change):
        s = json.loads(json.dumps(schema))
        change(s["columns"])
        made.append(1)
        path = toy / f"bad-schema-{len(made)}.json"
        path.write_text(json.dumps(s))
        return str(path)

    def with_cell(col, row, value):
        f = frame.copy()
        f.loc[row, col] = value
        made.append(1)
        path = toy / f"bad-{len(made)}.csv"
        f.to_csv(path, index=False)
        return str(path)

    raw, good = str(toy / "raw.csv"), str(toy / "schema.json")

    def synth(data=raw, sch=good, *extra):
        return ["synth", "mst", "--dataset", data, "--schema", sch, "--epsilon", "1", "--delta", "1e-6", "--seed",
                str(SEED), "--out", str(toy / "o.csv"), "-p", "iters=20", *extra]  # fmt: skip

    return {
        "unknown column": (synth(sch=with_schema(lambda c: c.append({"name": "shoe", "kind": "categorical", "categories": "discover"}))),
                           ["column 'shoe'"]),
        "bounds reversed": (synth(sch=with_schema(lambda c: c[1].update(bounds=[250, 100]))),
                            ["--schema", "column 'height'", "reversed"]),
        "outside the category set": (synth(data=with_cell("grade", 41, "excellent")), ["column 'grade'", "row", "excellent"]),
        "non-numeric cell": (synth(data=with_cell("age", 17, "twelve")), ["column 'age'", "row", "twelve"]),
        "outside given bounds": (synth(data=with_cell("height", 5, "999.5")), ["column 'height'", "row", "999.5"]),
        "empty cell in a non-nullable column": (synth(data=with_cell("grade", 3, "")), ["column 'grade'", "row"]),
        "schema not JSON": (synth(sch=str(toy / "raw.csv")), ["--schema", "not valid JSON"]),
        "schema missing": (synth(sch=str(toy / "nope.json")), ["--schema", "does not exist"]),
        "dataset missing": (synth(data=str(toy / "nope.csv")), ["--dataset", "does not exist"]),
        "--domain with --schema": ([*synth(), "--domain", good], ["--domain", "drop --domain"]),
        "nist-mst with --schema": (["synth", "nist-mst", *synth()[2:]], ["nist-mst", "--schema"]),
        "--save-model with GUM": (_gum(["synth", "mst-gum", *synth()[2:], "--save-model", str(toy / "m.npz")]),
                                  ["--save-model", "not with Private-PGM"]),
        "evaluate unknown column": (["evaluate", "--dataset", raw, "--synthetic", raw, "--seed", str(SEED), "--schema",
                                     with_schema(lambda c: c.append({"name": "shoe", "kind": "categorical", "categories": "discover"}))],
                                    ["column 'shoe'"]),
        "evaluate bad synthetic cell": (["evaluate", "--dataset", raw, "--synthetic", with_cell("age", 9, "old"), "--seed",
                                         str(SEED), "--schema", good], ["--synthetic", "column 'age'", "row", "old"]),
        "mgd bad synthetic cell": (["mgd", "--truth", raw, "--synthetic", with_cell("grade", 2, "top"), "--schema", good],
                                   ["--synthetic", "column 'grade'", "row", "top"]),
        "schema init RAW missing": (["schema", "init", str(toy / "nope.csv"), "--out", str(toy / "d.json")], ["RAW.csv", "does not exist"]),
        "schema init --out exists": (["schema", "init", raw, "--out", good], ["--out", "--force"]),
        "schema init --out is RAW": (["schema", "init", raw, "--out", raw, "--force"], ["--out", "is the input RAW.csv"]),
    }[case]  # fmt: skip


RAW_CASES = [
    "unknown column", "bounds reversed", "outside the category set", "non-numeric cell", "outside given bounds",
    "empty cell in a non-nullable column", "schema not JSON", "schema missing", "dataset missing",
    "--domain with --schema", "nist-mst with --schema", "--save-model with GUM", "evaluate unknown column",
    "evaluate bad synthetic cell", "mgd bad synthetic cell", "schema init RAW missing", "schema init --out exists",
    "schema init --out is RAW",
]  # fmt: skip


@pytest.mark.parametrize("case", RAW_CASES)
def test_raw_tables_refuse_bad_input_before_any_noise(rawtoy, spy, capsys, case):
    args, needles = _raw_case(rawtoy, case)
    before = _tree(rawtoy)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, *needles)
    assert _tree(rawtoy) == before
    assert spy["untouched"]()


def test_gap_tol_reaches_every_pgm_mechanism_from_the_cli(toy, capsys):
    """``-p gap_tol=...`` sets the certified stop of the Private-PGM fit also for mechanisms
    that build their generator themselves (MST from its ``iters``); a bad value exits 2 with
    one line and writes nothing."""
    from margsynth.mechanisms.generators import PGMGenerator
    from margsynth.mechanisms.registry import create

    for name in ("mst", "nist-mst", "aim", "adagrid", "independent", "privsyn-pgm"):
        gen = create(name, gap_tol=1e-3).generator
        assert isinstance(gen, PGMGenerator) and gen.gap_tol == 1e-3
    assert create("mst", iters=77, gap_tol=1e-3).generator == PGMGenerator(iters=77, gap_tol=1e-3)
    with pytest.raises(ValueError, match="bad parameters"):
        create("privsyn", gap_tol=1e-3)  # GUM has no such field
    args = _synth(toy, "-p", "iters=3000", "-p", "select_iters=50", "-p", "gap_tol=1e-3")
    assert main(args) == 0
    est = json.loads((toy / "out.csv.json").read_text())["estimation"]
    assert est["iterations"] < 3000 and est["gap"] <= 1e-3 * est["loss"]
    before = _tree(toy)
    capsys.readouterr()
    assert main(_synth(toy, "-p", "gap_tol=-1", out=toy / "bad.csv")) == 2
    _one_line_error(capsys.readouterr().err, "gap_tol")
    assert _tree(toy) == before


def test_interior_point_final_fit_from_the_cli(toy, capsys):
    """``-p method=interior_point`` makes the final fit the optimum of Eq. (4.2): the sidecar
    certifies it (gap within 1e-3 of the loss) and names the method; an unknown method, or
    the descent's uncertified stopping rule alongside, exits 2 with one line and writes
    nothing."""
    assert main(_synth(toy, "-p", "method='interior_point'", mech="aim", out=toy / "exact.csv")) == 0
    side = json.loads((toy / "exact.csv.json").read_text())
    est = side["estimation"]
    assert est["method"] == "interior_point" and est["gap"] <= 1e-3 * est["loss"]
    assert side["parameters"]["generator"]["method"] == "interior_point"
    before = _tree(toy)
    capsys.readouterr()
    assert main(_synth(toy, "-p", "method='newton'", out=toy / "bad.csv")) == 2
    _one_line_error(capsys.readouterr().err, "method", "newton", "interior_point")
    assert main(_synth(toy, "-p", "method='interior_point'", "-p", "rtol=1e-6", out=toy / "bad.csv")) == 2
    _one_line_error(capsys.readouterr().err, "rtol", "interior_point")
    assert _tree(toy) == before


# ============================================================================= round two
# ----------------------------------------------------------------------------- a cell is what it says
@pytest.fixture
def cells(tmp_path):
    """A raw CSV whose values look like nulls to pandas (Namibia's ``NA``, ``None``, ``null``,
    ``nan``), and a schema listing its columns in another order than the file."""
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"id": np.arange(n), "country": rng.choice(["NA", "ZA", "BW"], n),
                          "word": rng.choice(["None", "null", "nan", "x"], n), "score": rng.integers(0, 10, n)})  # fmt: skip
    frame.to_csv(tmp_path / "raw.csv", index=False)
    schema = {"columns": [
        {"name": "score", "kind": "numeric", "type": "integer", "bounds": [0, 9], "bins": 10},
        {"name": "word", "kind": "categorical", "categories": ["None", "null", "nan", "x"]},
        {"name": "country", "kind": "categorical", "categories": ["NA", "ZA", "BW"]},
    ]}  # fmt: skip
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    return tmp_path


def test_a_cell_is_what_it_says_through_every_command(cells, capsys):
    """``NA`` (Namibia) in a strict category list, ``None``/``null``/``nan`` as values: synth,
    sample, evaluate, mgd and schema init read them as the values they are, and the output keeps
    the raw CSV's column order, not the schema's."""
    from margsynth.data.loaders import read_raw_csv

    raw, schema = str(cells / "raw.csv"), str(cells / "schema.json")
    args = ["synth", "mst", "--dataset", raw, "--schema", schema, "--epsilon", "20", "--delta", "1e-6", "--out",
            str(cells / "o.csv"), "-p", "iters=50", "--save-model", str(cells / "m.npz")]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    assert main(["sample", str(cells / "m.npz"), "--out", str(cells / "s.csv"), "--n", "300"]) == 0
    for name in ("o.csv", "s.csv"):
        out = read_raw_csv(cells / name)
        assert list(out.columns) == ["country", "word", "score"], name  # the CSV's order, id left out
        assert set(out["country"]) == {"NA", "ZA", "BW"} and set(out["word"]) == {"None", "null", "nan", "x"}, name
        assert not (out == "").any().any()
    capsys.readouterr()
    assert main(["evaluate", "--dataset", raw, "--schema", schema, "--synthetic", str(cells / "o.csv"), "--json",
                 "--metrics", "tv-1way"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["tv-1way"] < 0.2
    assert main(["mgd", "--truth", raw, "--schema", schema, "--synthetic", str(cells / "o.csv"), "--json"]) == 0
    capsys.readouterr()
    assert main(["schema", "init", raw, "--public", "--out", str(cells / "draft.json")]) == 0
    draft = {c["name"]: c for c in json.loads((cells / "draft.json").read_text())["columns"]}
    assert draft["country"]["categories"] == ["BW", "NA", "ZA"] and draft["country"]["nullable"] is False
    assert draft["word"]["categories"] == ["None", "nan", "null", "x"] and draft["word"]["nullable"] is False


def _cell_case(d, case):
    raw, schema = str(d / "raw.csv"), str(d / "schema.json")
    (d / "noname.csv").write_text("score,,country\n1,None,NA\n2,x,ZA\n")
    text = (d / "schema.json").read_text()
    (d / "dup.json").write_text(text.replace('"bins": 10', '"bins": 10, "bins": 5'))
    (d / "dupcol.json").write_text('{"columns": [], "columns": [{"name": "score", "kind": "numeric", "type": "integer", '
                                   '"bounds": [0, 9], "bins": 10}]}')  # fmt: skip
    synth = ["synth", "mst", "--epsilon", "1", "--delta", "1e-6", "--seed", str(SEED), "--out", str(d / "o.csv")]
    noname, dup = str(d / "noname.csv"), str(d / "dup.json")
    return {
        "synth --dataset unnamed column": ([*synth, "--dataset", noname, "--schema", schema], ["--dataset", "column 2 of the header has no name"]),
        "evaluate --synthetic unnamed column": (["evaluate", "--dataset", raw, "--schema", schema, "--synthetic", noname, "--seed", str(SEED)],
                                                ["--synthetic", "has no name"]),
        "mgd --truth unnamed column": (["mgd", "--truth", noname, "--schema", schema, "--synthetic", raw], ["--truth", "has no name"]),
        "schema init unnamed column": (["schema", "init", noname, "--out", str(d / "draft.json")], ["RAW.csv", "has no name"]),
        "synth --schema key twice": ([*synth, "--dataset", raw, "--schema", dup], ["--schema", "'bins' appears twice"]),
        "synth --schema columns twice": ([*synth, "--dataset", raw, "--schema", str(d / "dupcol.json")], ["--schema", "'columns' appears twice"]),
        "evaluate --schema key twice": (["evaluate", "--dataset", raw, "--schema", dup, "--synthetic", raw], ["--schema", "'bins' appears twice"]),
        "mgd --schema key twice": (["mgd", "--truth", raw, "--schema", dup, "--synthetic", raw], ["--schema", "'bins' appears twice"]),
    }[case]  # fmt: skip


@pytest.mark.parametrize("case", [
    "synth --dataset unnamed column", "evaluate --synthetic unnamed column", "mgd --truth unnamed column",
    "schema init unnamed column", "synth --schema key twice", "synth --schema columns twice",
    "evaluate --schema key twice", "mgd --schema key twice",
])  # fmt: skip
def test_unnamed_columns_and_keys_given_twice_are_refused(cells, spy, capsys, case):
    args, needles = _cell_case(cells, case)
    before = _tree(cells)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, *needles)
    assert _tree(cells) == before and spy["untouched"]()


# ----------------------------------------------------------------------------- nothing unrelated is replaced
@pytest.mark.parametrize("command", ["synth", "sample"])
@pytest.mark.parametrize(
    "content",
    ['{"notes": "my own file"}', "plain text\n", "[1, 2, 3]", '{"margsynth_version": "0.1", "seed": 1}', b"\xff\xfe"],
    ids=["json", "text", "list", "some-keys", "binary"],
)
def test_an_existing_file_that_is_not_our_sidecar_is_never_replaced(toy_model, spy, capsys, command, content):
    toy = toy_model.parent
    side = toy / "o.csv.json"
    side.write_bytes(content if isinstance(content, bytes) else content.encode())
    args = (_synth(toy, "--seed", str(SEED), out=toy / "o.csv") if command == "synth"
            else ["sample", str(toy_model), "--seed", str(SEED), "--out", str(toy / "o.csv")])  # fmt: skip
    capsys.readouterr()
    before = _tree(toy)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, "--out", str(side), "is not the sidecar of an earlier margsynth run")
    assert _tree(toy) == before and spy["untouched"]()


def test_our_sidecars_old_and_new_are_replaced(toy_model, capsys):
    toy = toy_model.parent
    side = json.loads((toy / "first.csv.json").read_text())
    assert side["format"] == "margsynth-sidecar"
    assert main(_synth(toy, "--seed", "3", out=toy / "first.csv")) == 0  # ours: replaced
    assert json.loads((toy / "first.csv.json").read_text())["seed"] == 3
    old = {k: v for k, v in side.items() if k != "format"}  # a sidecar written before the marker existed
    (toy / "first.csv.json").write_text(json.dumps(old))
    assert main(["sample", str(toy_model), "--seed", "4", "--out", str(toy / "first.csv")]) == 0
    new = json.loads((toy / "first.csv.json").read_text())
    assert new["format"] == "margsynth-sidecar" and new["command"] == "sample" and new["seed"] == 4
    capsys.readouterr()


@pytest.mark.parametrize("kind", ["text", "other npz", "zip"])
def test_save_model_replaces_only_a_model_file_of_ours(toy_model, spy, capsys, kind):
    toy = toy_model.parent
    target = toy / "keep.npz"
    if kind == "text":
        target.write_text("my notes\n")
    elif kind == "other npz":
        np.savez(target, weights=np.arange(5.0))
    else:
        import zipfile

        with zipfile.ZipFile(target, "w") as z:
            z.writestr("meta.npy", b"not an array")
    capsys.readouterr()
    before = _tree(toy)
    assert main(_synth(toy, "--seed", str(SEED), "--save-model", str(target), out=toy / "o.csv")) == 2
    _one_line_error(capsys.readouterr().err, "--save-model", str(target), "is not a model file of margsynth")
    assert _tree(toy) == before and spy["untouched"]()


def test_save_model_replaces_our_model(toy_model, capsys):
    toy = toy_model.parent
    old = toy_model.read_bytes()
    assert main(_synth(toy, "--seed", "9", "--save-model", str(toy_model), out=toy / "o.csv")) == 0
    assert toy_model.read_bytes() != old
    capsys.readouterr()


# ----------------------------------------------------------------------------- every size bounded before any charge
def _npy_header(shape, descr="<f8") -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _size_case(d, model, case):
    import zipfile

    raw = str(d / "raw.csv")
    schema = json.loads((d / "schema.json").read_text())

    def with_bins(bins, cols=("height",)):
        s = json.loads(json.dumps(schema))
        for c in s["columns"]:
            if c["name"] in cols:
                c.update(bins=bins, binning="uniform", bounds=[100, 250])
        path = d / f"bins-{bins}.json"
        path.write_text(json.dumps(s))
        return str(path)

    frame = pd.read_csv(d / "raw.csv")
    frame.assign(width=frame["height"] - 10).to_csv(d / "two.csv", index=False)
    two = str(d / "two.csv")

    def two_floats(bins):
        s = {"columns": [{"name": c, "kind": "numeric", "type": "float", "bounds": [100, 250], "bins": bins}
                         for c in ("height", "width")]}  # fmt: skip
        path = d / f"two-{bins}.json"
        path.write_text(json.dumps(s))
        return str(path)

    def wide(n):
        rng = np.random.default_rng(1)
        pd.DataFrame(rng.integers(0, 2, (60, n)), columns=[f"c{i}" for i in range(n)]).to_csv(d / "wide.csv", index=False)
        (d / "wide-dom.json").write_text(json.dumps({f"c{i}": 2 for i in range(n)}))
        (d / "wide-schema.json").write_text(json.dumps({"columns": [
            {"name": f"c{i}", "kind": "categorical", "categories": ["0", "1"]} for i in range(n)]}))  # fmt: skip
        return str(d / "wide.csv")

    synth = ["synth", "mst", "--epsilon", "1", "--delta", "1e-6", "--seed", str(SEED), "--out", str(d / "o.csv")]
    huge_header = d / "huge.npz"
    with zipfile.ZipFile(model) as src, zipfile.ZipFile(huge_header, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "theta_0.npy":
                data = _npy_header((2**31,)) + b"\0" * 64
            dst.writestr(info.filename, data)
    bomb = d / "bomb.npz"
    with zipfile.ZipFile(model) as src, zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("zeros.npy", _npy_header((2**22,)) + bytes(8 * 2**22))  # 32 MiB of zeros in about 32 KiB
    sample = ["sample", "--seed", str(SEED), "--out", str(d / "s.csv")]
    return {
        "synth --schema bins 1e9": ([*synth, "--dataset", raw, "--schema", with_bins(10**9)], ["--schema", "column 'height'", "bins=1,000,000,000", "memory limit", "--memory-limit"]),
        "evaluate --schema bins 1e9": (["evaluate", "--dataset", raw, "--schema", with_bins(10**9), "--synthetic", raw], ["--schema", "bins=1,000,000,000"]),
        "mgd --schema bins 1e9": (["mgd", "--truth", raw, "--schema", with_bins(10**9), "--synthetic", raw], ["--schema", "bins=1,000,000,000"]),
        "synth --schema a pair of 1e6 bins": ([*synth, "--dataset", two, "--schema", two_floats(10**6)], ["--schema", "domain too large", "1,000,000"]),
        "evaluate --schema a pair of 1e6 bins": (["evaluate", "--dataset", two, "--schema", two_floats(10**6), "--synthetic", two],
                                                  ["--schema", "tv-2way", "cells", "memory limit"]),
        "evaluate --schema 1e4 bins": (["evaluate", "--dataset", two, "--schema", two_floats(10**4), "--synthetic", two,
                                        "--metrics", "tv-1way,tv-2way"], ["--schema", "tv-2way", "100,000,000 cells"]),
        "mgd --schema 1e4 bins": (["mgd", "--truth", two, "--schema", two_floats(10**4), "--synthetic", two], ["--schema", "AEMC", "100,000,000 cells"]),
        "mgd --spec over a large marginal": (["mgd", "--truth", two, "--schema", two_floats(3000), "--synthetic", two, "--spec",
                                              str(d / "spec.json")], ["--spec", "'height', 'width'", "9,000,000 cells"]),
        "mgd --solver lp": (["mgd", "--truth", two, "--schema", two_floats(600), "--synthetic", two, "--solver", "lp", "--spec",
                             str(d / "spec.json")], ["--spec", "360,000 cells", "AEMC, lp", "memory limit"]),
        "synth columns": ([*synth, "--dataset", wide(300), "--domain", str(d / "wide-dom.json"), "--memory-limit", "8"],
                          ["--dataset", "too many attributes", "300 attributes", "--memory-limit 8"]),
        "synth --schema columns": ([*synth, "--dataset", wide(300), "--schema", str(d / "wide-schema.json"), "--memory-limit", "8"],
                                   ["--dataset", "too many attributes", "300 attributes"]),
        "synth --param synthetic_records": ([*synth, "--dataset", raw, "--schema", str(d / "schema.json"), "-p", "synthetic_records=100000",
                                             "--memory-limit", "1"], ["--param synthetic_records=100000", "memory limit"]),
        "synth --param iters": ([*synth, "--dataset", raw, "--schema", str(d / "schema.json"), "-p", "iters=100000000000000"],
                                ["--param iters=100000000000000", "100,000,000,000,000 iterations", "memory limit"]),
        "synth gem --param hidden": (["synth", "gem", *synth[2:], "--dataset", raw, "--schema", str(d / "schema.json"), "-p",
                                      "hidden=[1000000000]"], ["--dataset", "with --param hidden=[1000000000]", "GEM needs about"]),
        "synth --memory-limit 0": ([*synth, "--dataset", raw, "--schema", str(d / "schema.json"), "--memory-limit", "0"], ["--memory-limit", "'0'"]),
        "evaluate --memory-limit nan": (["evaluate", "--dataset", raw, "--schema", str(d / "schema.json"), "--synthetic", raw, "--memory-limit", "nan"],
                                        ["--memory-limit", "'nan'"]),
        "sample a header claiming 2^31 values": ([*sample, str(huge_header)], ["MODEL", "theta_0", "(2147483648,)", "memory limit"]),
        "sample a zip bomb": ([*sample, str(bomb), "--memory-limit", "16"], ["MODEL", "decompress to", "memory limit"]),
        "sample --n over --memory-limit": ([*sample, str(model), "--n", "1000000", "--memory-limit", "1"], ["--n", "memory limit"]),
    }[case]  # fmt: skip


SIZE_CASES = [
    "synth --schema bins 1e9", "evaluate --schema bins 1e9", "mgd --schema bins 1e9", "synth --schema a pair of 1e6 bins",
    "evaluate --schema a pair of 1e6 bins", "evaluate --schema 1e4 bins", "mgd --schema 1e4 bins",
    "mgd --spec over a large marginal", "synth columns", "synth --schema columns", "synth --param synthetic_records",
    "synth --param iters", "synth gem --param hidden", "mgd --solver lp",
    "synth --memory-limit 0", "evaluate --memory-limit nan", "sample a header claiming 2^31 values", "sample a zip bomb",
    "sample --n over --memory-limit",
]  # fmt: skip


@pytest.fixture
def rawmodel(rawtoy):
    """``rawtoy`` with an MST model of it saved (before any spy is installed)."""
    args = ["synth", "mst", "--dataset", str(rawtoy / "raw.csv"), "--schema", str(rawtoy / "schema.json"), "--epsilon",
            "1", "--delta", "1e-6", "--out", str(rawtoy / "first.csv"), "-p", "iters=20", "--save-model", str(rawtoy / "m.npz")]  # fmt: skip
    assert main(args) == 0
    (rawtoy / "spec.json").write_text(json.dumps({"marginals": [{"attributes": ["height", "width"]}]}))
    return rawtoy / "m.npz"


@pytest.mark.parametrize("case", SIZE_CASES)
def test_every_size_is_bounded_before_any_charge(rawmodel, spy, capsys, case):
    """Sizes a user can ask for — a schema's bins, two huge columns, many columns, the
    marginals evaluate and mgd tabulate, the records, a model file's arrays and its members
    once decompressed — are checked against --memory-limit before any charge, draw or
    allocation: exit 2, one line naming the argument and the size, quickly."""
    d = rawmodel.parent
    args, needles = _size_case(d, rawmodel, case)
    capsys.readouterr()
    before = _tree(d)
    start = time.perf_counter()
    assert main(args) == 2
    assert time.perf_counter() - start < 60
    _one_line_error(capsys.readouterr().err, *needles)
    assert _tree(d) == before and spy["untouched"]()


# ----------------------------------------------------------------------------- values at the edges of their types
def _edge_case(d, case):
    rng = np.random.default_rng(2)
    ids = [str(int(v)) for v in rng.integers(2**62, 2**63 - 1, 200, dtype=np.int64)]
    pd.DataFrame({"id": ids, "c": rng.choice(["x", "y"], 200)}).to_csv(d / "ids.csv", index=False)
    disc = {"columns": [{"name": "id", "kind": "numeric", "type": "integer", "bounds": "discover", "bins": 8},
                        {"name": "c", "kind": "categorical", "categories": "discover"}]}  # fmt: skip
    (d / "disc.json").write_text(json.dumps(disc))
    wide = {"columns": [{"name": "id", "kind": "numeric", "type": "integer", "bounds": [0, 2**63 - 1], "bins": 8},
                        {"name": "c", "kind": "categorical", "categories": ["x", "y"]}]}  # fmt: skip
    (d / "wide.json").write_text(json.dumps(wide))
    synth = ["synth", "mst", "--seed", str(SEED), "--out", str(d / "o.csv")]
    raw, schema = str(d / "raw.csv"), str(d / "schema.json")
    return {
        "64-bit ids, discovered bounds": ([*synth, "--dataset", str(d / "ids.csv"), "--schema", str(d / "disc.json"), "--epsilon", "1",
                                           "--delta", "1e-6"], ["--dataset", "column 'id' row 0", "beyond +-2^53", "categorical"]),
        "bounds up to 2^63": ([*synth, "--dataset", str(d / "ids.csv"), "--schema", str(d / "wide.json"), "--epsilon", "1", "--delta",
                               "1e-6"], ["--schema", "column 'id'", "beyond +-2^53"]),
        "epsilon 40, delta 1e-300, discovered categories": ([*synth, "--dataset", raw, "--schema", schema, "--epsilon", "40", "--delta",
                                                             "1e-300"], ["epsilon=40.0", "delta=1e-300", "smallest normal float"]),
    }[case]  # fmt: skip


@pytest.mark.parametrize("case", ["64-bit ids, discovered bounds", "bounds up to 2^63", "epsilon 40, delta 1e-300, discovered categories"])
def test_values_at_the_edges_of_their_types_are_refused_before_noise(rawtoy, spy, capsys, case):
    """Integers beyond 2^53 (64-bit identifiers) cannot be exact in float64: refused before any
    charge with a message suggesting a categorical column; an (epsilon, delta) whose share for
    category discovery would be subnormal is refused up front instead of failing after the
    charges."""
    args, needles = _edge_case(rawtoy, case)
    before = _tree(rawtoy)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, *needles)
    assert _tree(rawtoy) == before and spy["untouched"]()


def test_edges_that_hold(rawtoy, capsys):
    """64-bit identifiers are drafted as categories; epsilon 40 with delta 1e-300 runs when
    nothing needs category discovery; a direct run's sidecar never spends more than its total."""
    _edge_case(rawtoy, "64-bit ids, discovered bounds")
    assert main(["schema", "init", str(rawtoy / "ids.csv"), "--out", str(rawtoy / "draft.json")]) == 0
    draft = json.loads((rawtoy / "draft.json").read_text())
    assert draft["columns"][0]["kind"] == "categorical"
    given = json.loads((rawtoy / "schema.json").read_text())
    given["columns"][0].update(categories=["red", "green", "blue"], nullable=True)
    (rawtoy / "given.json").write_text(json.dumps(given))
    args = ["synth", "mst", "--dataset", str(rawtoy / "raw.csv"), "--schema", str(rawtoy / "given.json"), "--epsilon", "40",
            "--delta", "1e-300", "--out", str(rawtoy / "o.csv"), "-p", "iters=20"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    side = json.loads((rawtoy / "o.csv.json").read_text())
    assert side["epsilon_spent"] <= 40 and side["delta"] <= 1e-300
    for eps in ("0.1", "1", "3", "40"):
        args = ["synth", "mst", "--dataset", str(rawtoy / "raw.csv"), "--schema", str(rawtoy / "given.json"), "--epsilon", eps,
                "--delta", "1e-6", "--out", str(rawtoy / "o.csv"), "-p", "iters=5", "-p", "select_iters=5"]  # fmt: skip
        assert main(args) == 0
        budget = json.loads((rawtoy / "o.csv.json").read_text())["budget"]
        assert budget["spent"] <= budget["total"]
    capsys.readouterr()


# ----------------------------------------------------------------------------- OS errors the user caused
def _os_case(d, model, case):
    long = "n" * 300
    near = "m" * 240  # fits, but not with the temporary margsynth writes beside it
    raw = str(d / "raw.csv")
    synth = ["synth", "mst", "--dataset", raw, "--schema", str(d / "schema.json"), "--epsilon", "1", "--delta", "1e-6",
             "--seed", str(SEED)]  # fmt: skip
    return {
        "schema init --out name too long": (["schema", "init", raw, "--out", str(d / f"{long}.json")], ["--out", "File name too long"]),
        "schema init --out near the limit": (["schema", "init", raw, "--out", str(d / f"{near}.json")], ["--out", "File name too long"]),
        "schema init --out in /proc": (["schema", "init", raw, "--out", "/proc/margsynth-schema.json"], ["--out", "cannot create a file in '/proc'"]),
        "schema init --out in a folder named too long": (["schema", "init", raw, "--out", str(d / long / "s.json")], ["--out", "File name too long"]),
        "synth --out name too long": ([*synth, "--out", str(d / f"{long}.csv")], ["--out", "File name too long"]),
        "synth --save-model name too long": ([*synth, "--out", str(d / "o.csv"), "--save-model", str(d / f"{long}.npz")],
                                             ["--save-model", "File name too long"]),
        "synth --dataset name too long": (["synth", "mst", "--dataset", str(d / f"{long}.csv"), "--schema", str(d / "schema.json"),
                                           "--epsilon", "1", "--delta", "1e-6", "--out", str(d / "o.csv")], ["--dataset", "File name too long"]),
        "synth --schema name too long": ([*synth[:4], "--schema", str(d / f"{long}.json"), *synth[6:], "--out", str(d / "o.csv")],
                                         ["--schema", "File name too long"]),
        "sample --out name too long": (["sample", str(model), "--out", str(d / f"{long}.csv")], ["--out", "File name too long"]),
        "evaluate --synthetic name too long": (["evaluate", "--dataset", raw, "--schema", str(d / "schema.json"), "--synthetic",
                                                str(d / f"{long}.csv")], ["--synthetic", "File name too long"]),
    }[case]  # fmt: skip


OS_CASES = [
    "schema init --out name too long", "schema init --out near the limit", "schema init --out in /proc",
    "schema init --out in a folder named too long", "synth --out name too long", "synth --save-model name too long",
    "synth --dataset name too long", "synth --schema name too long", "sample --out name too long",
    "evaluate --synthetic name too long",
]  # fmt: skip


@pytest.mark.parametrize("case", OS_CASES)
def test_os_errors_the_user_caused_exit_2_with_one_line(rawmodel, spy, capsys, case):
    d = rawmodel.parent
    args, needles = _os_case(d, rawmodel, case)
    capsys.readouterr()
    before = _tree(d)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, *needles)
    assert _tree(d) == before and spy["untouched"]()


@pytest.mark.parametrize("err", ["EROFS", "EACCES"])
def test_schema_init_on_a_read_only_place_exits_2(rawtoy, monkeypatch, capsys, err):
    """A read-only file system (or a folder this user may not write to: root may write
    anywhere, so the system's refusal is simulated where the temporary is created)."""
    import errno

    from margsynth.commands import _outputs

    def refuse(target, suffix=None):
        code = getattr(errno, err)
        raise OSError(code, os.strerror(code), str(target))

    monkeypatch.setattr(_outputs, "make_temporary", refuse)
    before = _tree(rawtoy)
    assert main(["schema", "init", str(rawtoy / "raw.csv"), "--out", str(rawtoy / "sub" / "s.json")]) == 2
    _one_line_error(capsys.readouterr().err, "--out", "cannot create a file", os.strerror(getattr(errno, err)))
    assert _tree(rawtoy) == before


# ----------------------------------------------------------------------------- reproduce -p
@pytest.mark.parametrize(
    "params, needles",
    [
        (["-p", "nosuch", "1"], ["-p nosuch '1'", "not declared by the selected notebooks", "04_nist_mst_vs_mst: profile, seeds"]),
        (["-p", "profile", "huge"], ["-p profile 'huge'", "not a profile"]),
        (["--profile", "quick", "-p", "profile", "full"], ["-p profile 'full'", "contradicts"]),
        (["-p", "epsilons", "3"], ["-p epsilons '3'", "a list"]),
        (["-p", "iters", "10", "-p", "iters", "20"], ["-p iters '20'", "given twice"]),
    ],
)
def test_reproduce_parameters_are_checked_before_any_notebook_runs(tmp_path, monkeypatch, capsys, params, needles):
    import papermill

    monkeypatch.setenv("MARGSYNTH_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("a notebook ran"))
    assert main(["reproduce", "--only", "04", *params]) == 2
    _one_line_error(capsys.readouterr().err, *needles)
    assert not (tmp_path / "results").exists()


# ----------------------------------------------------------------------------- messages name the argument
def _named_case(toy, raw, case):
    (toy / "hdr-codes.csv").write_text("x,y,z\n")
    (raw / "hdr-raw.csv").write_text("colour,height,age,grade\n")
    (toy / "spec.json").write_text(json.dumps({"marginals": [{"attributes": ["x", "w"]}]}))
    priv, dom = str(toy / "priv.csv"), str(toy / "dom.json")
    codes = ["--domain", dom]
    rawsch = ["--schema", str(raw / "schema.json")]
    synth = ["synth", "mst", "--epsilon", "1", "--delta", "1e-6", "--seed", str(SEED), "--out", str(toy / "o.csv")]
    return {
        "evaluate --synthetic header only": (["evaluate", "--dataset", priv, *codes, "--synthetic", str(toy / "hdr-codes.csv")],
                                             ["--synthetic", str(toy / "hdr-codes.csv"), "has no rows"]),
        "evaluate --schema --synthetic header only": (["evaluate", "--dataset", str(raw / "raw.csv"), *rawsch, "--synthetic", str(raw / "hdr-raw.csv")],
                                                      ["--synthetic", "has no rows"]),
        "mgd --synthetic header only": (["mgd", "--truth", priv, *codes, "--synthetic", str(toy / "hdr-codes.csv"), "--spec", str(toy / "dom.json")],
                                        ["--synthetic", "has no rows"]),
        "mgd --schema --synthetic header only": (["mgd", "--truth", str(raw / "raw.csv"), *rawsch, "--synthetic", str(raw / "hdr-raw.csv")],
                                                 ["--synthetic", "has no rows"]),
        "synth --dataset header only": ([*synth, "--dataset", str(toy / "hdr-codes.csv"), *codes], ["--dataset", "has no rows"]),
        "synth --schema --dataset header only": ([*synth, "--dataset", str(raw / "hdr-raw.csv"), *rawsch], ["--dataset", "has no rows"]),
        "evaluate --metrics unknown": (["evaluate", "--dataset", priv, *codes, "--synthetic", priv, "--metrics", "tv-1way,tv-9way"],
                                       ["--metrics 'tv-1way,tv-9way'", "unknown metric 'tv-9way'"]),
        "evaluate --metrics empty": (["evaluate", "--dataset", priv, *codes, "--synthetic", priv, "--metrics", ","], ["--metrics ','", "names no metric"]),
        "synth --preset": ([*synth, "--dataset", priv, *codes, "--preset", "huge"], ["--preset 'huge'"]),
        "synth --param unknown": ([*synth, "--dataset", priv, *codes, "-p", "foo=1"], ["--param foo=1", "bad parameters ['foo']"]),
        "synth --param bad value": ([*synth, "--dataset", priv, *codes, "-p", "iters=-3"], ["--param iters=-3", "iters"]),
        "synth --schema --param bad value": ([*synth, "--dataset", str(raw / "raw.csv"), *rawsch, "-p", "iters=-3"], ["--param iters=-3"]),
        "synth MECHANISM": (["synth", "nosuch", *synth[2:], "--dataset", priv, *codes], ["MECHANISM 'nosuch'", "unknown mechanism"]),
        "mgd --ordinal": (["mgd", "--truth", priv, *codes, "--synthetic", priv, "--ordinal", "q", "--spec", str(toy / "dom.json")],
                          ["--ordinal 'q'", "not attributes of --domain"]),
        "mgd --preset on records": (["mgd", "--truth", priv, *codes, "--synthetic", priv, "--preset", "baltimore-table1"],
                                    ["--preset 'baltimore-table1'", "count files"]),
        "mgd --spec unknown attribute": (["mgd", "--truth", priv, *codes, "--synthetic", priv, "--spec", str(toy / "spec.json")],
                                         ["--spec", "unknown attribute(s) ['w']"]),
    }[case]  # fmt: skip


NAMED_CASES = [
    "evaluate --synthetic header only", "evaluate --schema --synthetic header only", "mgd --synthetic header only",
    "mgd --schema --synthetic header only", "synth --dataset header only", "synth --schema --dataset header only",
    "evaluate --metrics unknown", "evaluate --metrics empty", "synth --preset", "synth --param unknown",
    "synth --param bad value", "synth --schema --param bad value", "synth MECHANISM", "mgd --ordinal",
    "mgd --preset on records", "mgd --spec unknown attribute",
]  # fmt: skip


@pytest.mark.parametrize("case", NAMED_CASES)
def test_every_refusal_names_its_option(toy, rawtoy, spy, capsys, case):
    args, needles = _named_case(toy, rawtoy, case)
    if "--spec" in args and args[args.index("--spec") + 1].endswith("dom.json"):
        args[args.index("--spec") + 1] = str(toy / "spec-xy.json")
        (toy / "spec-xy.json").write_text(json.dumps({"marginals": [{"attributes": ["x", "y"]}]}))
    before = _tree(toy), _tree(rawtoy)
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, *needles)
    assert (_tree(toy), _tree(rawtoy)) == before and spy["untouched"]()


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("end", ["top", "bottom"])
def test_a_range_discovered_at_the_ends_of_the_grid_stays_within_exact_integers(rawtoy, monkeypatch, end, sparse):
    """Noise can place an integer column's range in the grid's last bins (near +-2^63); its
    bounds are kept within +-2^53 (every value is), so encoding, decoding and writing go
    through instead of failing after the charges. A range found only among too few values
    (sparse) is not located: the column is written as null."""
    from margsynth.data.loaders import read_raw_csv
    from margsynth.tabular import discovery, synthesize
    from margsynth.tabular.schema import INTEGER_LIMIT

    real = discovery.release_range
    last = discovery.range_bins(True)[0].size - 1

    def at_the_end(*a, **k):
        _, info = real(*a, **k)
        i = last if end == "top" else 0
        return (i, i), {**info, "sparse": sparse, "noisy": info["noisy"][:1]}

    monkeypatch.setattr(discovery, "release_range", at_the_end)
    frame = read_raw_csv(rawtoy / "raw.csv")
    schema = {"columns": [{"name": "age", "kind": "numeric", "type": "integer", "bounds": "discover", "bins": 4},
                          {"name": "grade", "kind": "ordinal", "categories": ["low", "mid", "high"]}]}  # fmt: skip
    out, report = synthesize(frame, schema, "independent", epsilon=1.0, delta=1e-6, seed=SEED, iters=5)
    if sparse:
        assert report["preprocessing"]["columns"]["age"]["bounds"] is None and out["age"].isna().all()
        return
    lo, hi = report["preprocessing"]["columns"]["age"]["bounds"]
    assert -INTEGER_LIMIT < lo <= hi < INTEGER_LIMIT
    assert out["age"].between(lo, hi).all() and len(out) > 0


@pytest.mark.parametrize(
    "args, env, needles",
    [
        (["data", "fetch", "--from", "MISSING", "titanic"], None, ["--from", "is not a folder"]),
        (["data", "fetch", "--from", "LONG", "titanic"], None, ["--from", "File name too long"]),
        (["data", "fetch", "nope"], None, ["NAME 'nope'", "unknown dataset"]),
        (["data", "verify", "titanic", "nope"], None, ["NAME 'nope'", "unknown dataset"]),
        (["data", "fetch", "--from", "MIRROR", "titanic"], "/proc/margsynth-data", ["$MARGSYNTH_DATA_DIR", "cannot hold 'titanic'"]),
    ],
)
def test_data_refusals_name_their_option(tmp_path, monkeypatch, capsys, args, env, needles):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "benchmark").mkdir()
    (mirror / "benchmark" / "titanic.zip").write_bytes(b"not the file")
    args = [{"MISSING": str(tmp_path / "nope"), "LONG": str(tmp_path / ("l" * 300)), "MIRROR": str(mirror)}.get(a, a) for a in args]
    monkeypatch.setenv("MARGSYNTH_DATA_DIR", env or str(tmp_path / "data"))
    monkeypatch.setenv("MARGSYNTH_NO_DOWNLOAD", "1")
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, *needles)


def test_a_signal_while_a_temporary_is_made_waits_until_it_is_recorded(tmp_path, monkeypatch):
    """SIGTERM arriving while a temporary is created (before anything records it for removal)
    is held back until it is recorded, then raised: the cleanup finds every file it made."""
    from margsynth import paths
    from margsynth.commands import _outputs as outputs

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop

    real = paths.make_temporary

    def creating_then_signalled(*a, **k):
        tmp = real(*a, **k)
        os.kill(os.getpid(), signal.SIGTERM)  # the signal lands right after the file exists
        return tmp

    monkeypatch.setattr(paths, "make_temporary", creating_then_signalled)
    monkeypatch.setattr(outputs, "make_temporary", creating_then_signalled)
    old = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(Stop), paths.atomic_path(tmp_path / "a.csv"):
            pass
        with pytest.raises(Stop), outputs.OutputPair(tmp_path / "b.csv"):
            pass
    finally:
        signal.signal(signal.SIGTERM, old)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
