"""``margsynth synth MECHANISM``: run a DP synthetic-data mechanism on a dataset.

    margsynth synth {mst,nist-mst,aim,...} --dataset NAME|CSV [--domain JSON]
                  [--public NAME|CSV] --epsilon E --delta D [--seed S] --out PATH
                  [--preset NAME] [--device cpu|cuda] [--param KEY=VALUE ...] [--allow-surrogate]

writes the synthetic records to ``PATH`` (CSV, same columns and integer coding as the
input) and a JSON sidecar ``PATH.json``, written as one unit (both to temporaries
created before the run, renamed only when both are complete) (mechanism, parameters,
requested and spent (ε, δ), the budget ledger, seconds per phase, input, seed,
``data_source`` ``"real"`` with the inputs' SHA-256, or ``"surrogate"`` with
``--allow-surrogate`` when the real files could not be had).
Every input is checked before any noise is drawn; on bad input the command exits
with status 2, a message saying why, and writes nothing.
"""

from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path

from ._args import DELTA_MIN, EPSILON_RANGE, check_budget, delta_arg, epsilon_arg, seed_arg
from ._inputs import add_allow_surrogate, is_file_arg, resolve_dataset
from ._outputs import OutputPair, check_out, dumps_strict

__all__ = ["load_dataset", "register", "run_synth"]


def register(sub) -> None:
    from ..mechanisms.registry import available

    p = sub.add_parser(
        "synth",
        help="generate differentially private synthetic data",
        description="Run a DP synthetic-data mechanism; write the synthetic CSV and a JSON sidecar (PATH.json).",
    )
    p.add_argument("mechanism", metavar="MECHANISM", help=f"one of: {', '.join(available())}")
    p.add_argument(
        "--dataset", required=True, metavar="NAME|CSV", help="registered dataset name or a CSV of integer codes"
    )
    p.add_argument("--domain", metavar="JSON", help='domain JSON {"attr": size, ...} (required for a CSV)')
    p.add_argument("--public", metavar="NAME|CSV", help="public dataset over the same domain (nist-mst)")
    lo, hi = EPSILON_RANGE
    p.add_argument("--epsilon", required=True, type=epsilon_arg, metavar="E", help=f"privacy parameter epsilon in [{lo:g}, {hi:g}]")
    p.add_argument("--delta", required=True, type=delta_arg, metavar="D", help=f"privacy parameter delta in [{DELTA_MIN:g}, 1)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of the noise generator, an integer >= 0 (default 0)")
    p.add_argument("--out", required=True, metavar="PATH", help="output CSV; the sidecar goes to PATH.json")
    p.add_argument("--preset", metavar="NAME", help="hyperparameter preset of the mechanism (privpgd: default | fast)")
    p.add_argument("--device", metavar="DEVICE", help="torch device for mechanisms that take one (privpgd: cpu | cuda)")
    p.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="mechanism hyperparameter (Python literal), e.g. -p iters=1000; repeatable",
    )
    add_allow_surrogate(p)
    p.set_defaults(func=_main)


def load_dataset(arg: str, domain_json: str | None, what: str = "--dataset", allow_surrogate: bool = False):
    """A :class:`Dataset` from a registered name or a CSV (+ domain JSON)."""
    return resolve_dataset(arg, domain_json, what=what, allow_surrogate=allow_surrogate).dataset


def _input_columns(arg: str) -> list[str] | None:
    """Column order of the input file (a CSV path or a registered dataset's file)."""
    import pandas as pd

    from ..data import RECORD_DATASETS
    from ..data.fetch import local_path
    from ..data.registry import dataset_info

    if is_file_arg(arg):
        source = Path(arg)
    else:
        registry, data_file, _ = RECORD_DATASETS[arg]
        entry = next(e for e in dataset_info(registry).files if e.path == data_file)
        source = local_path(entry)
        if not source.is_file():  # surrogate data: domain order
            return None
    return [str(c) for c in pd.read_csv(source, nrows=0).columns]


def _parse_params(items: list[str]) -> dict:
    out = {}
    for it in items:
        key, sep, val = it.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise ValueError(f"--param must be KEY=VALUE with KEY a name, got {it!r}")
        try:
            out[key] = ast.literal_eval(val)
        except (ValueError, SyntaxError):
            out[key] = val
    return out


def _input_paths(dataset: str, domain: str | None, public: str | None) -> dict[str, Path]:
    """Every file the run reads, by the option that names it (for the output-path checks)."""
    from ..data import RECORD_DATASETS
    from ..data.fetch import local_path
    from ..data.registry import dataset_info

    out: dict[str, Path] = {}
    for opt, arg in (("--dataset", dataset), ("--public", public)):
        if arg is None:
            continue
        if is_file_arg(arg):
            out[f"{opt} {arg!r}"] = Path(arg)
        elif arg in RECORD_DATASETS:
            for e in dataset_info(RECORD_DATASETS[arg][0]).files:
                out[f"{opt} {arg!r} (file {e.path})"] = local_path(e)
    if domain is not None:
        out[f"--domain {domain!r}"] = Path(domain)
    return out


def run_synth(
    mechanism: str,
    dataset: str,
    *,
    epsilon: float,
    delta: float,
    out: str,
    seed: int = 0,
    domain: str | None = None,
    public: str | None = None,
    params: dict | None = None,
    device: str | None = None,
    allow_surrogate: bool = False,
) -> dict:
    """The work of ``margsynth synth`` (callable from Python); returns the sidecar dict.
    ``device`` is passed to the mechanism's ``run`` (only mechanisms that take one).
    A registered dataset whose real files are absent is fetched; if that fails the
    run stops (``ValueError``) unless ``allow_surrogate``, and the sidecar says which
    (``"data_source"``) and carries the SHA-256 of every input file."""
    import numpy as np

    from ..mechanisms.base import check_privacy_params
    from ..mechanisms.registry import create, spec

    # --- validate everything before any noise is drawn
    s = spec(mechanism)
    check_budget(epsilon, delta)
    check_privacy_params(epsilon, delta)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed: {seed!r} is not an integer >= 0")
    path = check_out(out, _input_paths(dataset, domain, public))
    inp = resolve_dataset(dataset, domain, allow_surrogate=allow_surrogate)
    data = inp.dataset
    inputs = [inp]
    pub = None
    if public is not None:
        if not s.needs_public:
            raise ValueError(f"mechanism {mechanism!r} does not use a public dataset; drop --public")
        pub_inp = resolve_dataset(public, domain, what="--public", allow_surrogate=allow_surrogate)
        pub = pub_inp.dataset
        inputs.append(pub_inp)
        if pub.domain != data.domain:
            raise ValueError(
                f"public dataset's domain differs from the private one: public {pub.domain!r}, private {data.domain!r}"
            )
    elif s.needs_public:
        raise ValueError(f"mechanism {mechanism!r} needs a public dataset: pass --public NAME|CSV")
    mech = create(mechanism, **(params or {}))
    if device is not None:
        import inspect

        if "device" not in inspect.signature(mech.run).parameters:
            raise ValueError(f"mechanism {mechanism!r} takes no --device")
    kw = {"public": pub} if pub is not None else {}
    if device is not None:
        kw["device"] = device
    mech.validate(data, epsilon, delta, **kw)  # every check of the run, before any noise

    # --- reserve the outputs (an unwritable place is found now, before any noise), run, write both or neither
    with OutputPair(path) as pair:
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        result = mech.run(data, epsilon, delta, rng, **kw)
        wall = time.perf_counter() - t0

        side = result.sidecar()
        side.update(
            {
                "registry_name": mechanism,
                "dataset": dataset,
                "public": public,
                "domain": data.domain.to_dict(),
                "epsilon_requested": epsilon,
                "delta_requested": delta,
                "seed": seed,
                "data_source": "surrogate" if any(i.source == "surrogate" for i in inputs) else "real",
                "input_sha256": {k: v for i in inputs for k, v in i.sha256.items()},
                "wall_seconds": wall,
                "budget": {k: v for k, v in (result.extras.get("ledger") or {}).items() if k != "charges"},
            }
        )
        from .. import __version__

        side["margsynth_version"] = __version__
        text = dumps_strict(json.loads(json.dumps(side, default=_json_default)), prog="margsynth synth", indent=2)
        frame = result.synthetic.df
        order = _input_columns(dataset)
        if order is not None and set(order) == set(frame.columns):
            frame = frame[order]  # same column order as the input file
        pair.commit(lambda tmp: frame.to_csv(tmp, index=False), lambda tmp: tmp.write_text(text))
    return side


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return repr(o)


def _main(args) -> int:
    side = run_synth(
        args.mechanism,
        args.dataset,
        epsilon=args.epsilon,
        delta=args.delta,
        out=args.out,
        seed=args.seed,
        domain=args.domain,
        public=args.public,
        params={**({"preset": args.preset} if args.preset else {}), **_parse_params(args.param)},
        device=args.device,
        allow_surrogate=args.allow_surrogate,
    )
    print(
        f"{args.mechanism}: {side['records']:,} synthetic records -> {args.out} "
        f"(epsilon spent {side['epsilon_spent']:.6g}, delta {side['delta']:.3g}, {side['wall_seconds']:.1f} s); "
        f"sidecar {args.out}.json",
        file=sys.stdout,
    )
    return 0
