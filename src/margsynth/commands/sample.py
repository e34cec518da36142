"""``margsynth sample MODEL``: draw records from a saved model, at no privacy cost.

    margsynth sample MODEL.npz [--n N] [--seed S] --out PATH

``MODEL.npz`` is a file written by ``margsynth synth ... --save-model MODEL.npz`` (the run's
fitted Private-PGM model, :mod:`margsynth.model_file`). The records are drawn from it
by the run's own GENERATE step (Algorithms 7-8 of the NIST-MST/MST paper, then the
mechanism's reversal of its domain compression) and, when the run came from a raw table
(``synth --schema``), decoded to the raw columns. This is post-processing of the run's
noisy measurements: it spends no privacy budget. The sidecar ``PATH.json`` says so
(``epsilon_spent`` 0, an empty ledger) and names the model file (path, SHA-256) and the
run it came from (mechanism, dataset, seed, the (ε, δ) that run spent).
Every input is checked before any record is drawn; on bad input the command exits with
status 2 and writes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .. import __version__
from ..mechanisms.base import check_records
from ..model_file import SavedModel
from ._inputs import check_input_file, file_sha256
from ._outputs import OutputPair, check_out, dumps_strict

__all__ = ["run_sample"]

EXPECTED = "a model file written by margsynth synth --save-model"


def load_model(value: str | Path, option: str = "MODEL"):
    """The :class:`~margsynth.model_file.SavedModel` in file ``value``; errors name ``option``."""
    check_input_file(option, value, EXPECTED)
    try:
        return SavedModel.load(value)
    except ValueError as exc:
        raise ValueError(f"{option} {exc}") from None


def run_sample(model: str, *, out: str, n: int | None = None, seed: int = 0) -> dict:
    """The work of ``margsynth sample`` (callable from Python); returns the sidecar dict."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed: {seed!r} is not an integer >= 0")
    path = check_out(out, {f"MODEL {str(model)!r}": Path(model)})
    saved = load_model(model)
    n = check_records(saved.records if n is None else n, "--n", columns=len(saved.domain))
    sha = file_sha256(model)
    with OutputPair(path) as pair:
        rng = np.random.default_rng(seed)
        frame = saved.sample_frame(n, rng)
        side = {
            "command": "sample",
            "model": str(model),
            "model_sha256": sha,
            "mechanism": saved.info.get("mechanism"),
            "registry_name": saved.info.get("registry_name"),
            "records": int(len(frame)),
            "seed": seed,
            "epsilon_spent": 0.0,
            "delta": 0.0,
            "ledger": [],
            "privacy": "no privacy cost: the records are drawn from a saved model, post-processing of the run that "
            "fitted it; that run's spent (epsilon, delta), under source_run, is the whole cost",
            "decoded": saved.encoder is not None,
            "source_run": saved.describe(),
            "margsynth_version": __version__,
        }
        text = dumps_strict(side, prog="margsynth sample", indent=2)
        pair.commit(lambda tmp: frame.to_csv(tmp, index=False), lambda tmp: tmp.write_text(text))
    return json.loads(text)


def _main(args) -> int:
    side = run_sample(args.model, out=args.out, n=args.n, seed=args.seed)
    run = side["source_run"]
    print(
        f"{side['records']:,} records from {args.model} ({side['mechanism']}, run epsilon {run.get('epsilon_spent', float('nan')):.6g}) "
        f"-> {args.out} (no privacy cost); sidecar {args.out}.json",
        file=sys.stdout,
    )
    return 0
