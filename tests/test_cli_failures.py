"""How the CLI fails: user errors exit 2 with one line naming the argument, the value and
what was expected, before any privacy charge or random draw, leaving every file as it was;
internal errors exit 1 with a short message and the path of a full log; signals exit quietly.
One test per family of failures, parametrised over the commands it touches."""

from __future__ import annotations

import json
import os
import signal
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
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
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
