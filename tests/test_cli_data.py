import subprocess
import sys

from margsynth.cli import main


def test_data_list(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("baltimore911", "adult", "adult-split", "fire", "loans", "msnbc", "nltcs", "salary", "stroke", "titanic"):
        assert name in out


def test_data_fetch_unknown_dataset_is_clear_error(capsys):
    assert main(["data", "fetch", "nope"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "margsynth", "--help"], capture_output=True, text=True, check=True)
    assert "reproduce" in out.stdout and "data" in out.stdout
