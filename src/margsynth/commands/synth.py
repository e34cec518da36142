"""``margsynth synth MECHANISM``: run a DP synthetic-data mechanism on a dataset.

    margsynth synth {mst,nist-mst,aim,...} --dataset NAME|CSV [--domain JSON | --schema SCHEMA.json]
                  [--public NAME|CSV] --epsilon E --delta D [--seed S] --out PATH
                  [--preset NAME] [--device cpu|cuda] [--param KEY=VALUE ...] [--allow-surrogate]
                  [--save-model MODEL.npz] [--preprocessing-share F]

writes the synthetic records to ``PATH`` (CSV, same columns and integer coding as the
input) and a JSON sidecar ``PATH.json``, written as one unit (both to temporaries
created before the run, renamed only when both are complete) (mechanism, parameters,
requested and spent (ε, δ), the budget ledger, seconds per phase, input, seed,
``data_source`` ``"real"`` with the inputs' SHA-256, or ``"surrogate"`` with
``--allow-surrogate`` when the real files could not be had).
Every input is checked before any noise is drawn; on bad input the command exits
with status 2, a message saying why, and writes nothing.

With ``--schema`` the dataset is a raw CSV (strings, decimals, empty cells) described by
the schema (``margsynth schema init`` drafts one): whatever the schema leaves to
"discover" is found privately on the same ledger (``--preprocessing-share`` of the
budget), the mechanism runs on the encoded table, and the output CSV is decoded to the
raw columns; the sidecar adds a ``"preprocessing"`` section. ``--save-model PATH`` also
writes the run's fitted Private-PGM model (:mod:`margsynth.model_file`), from which
``margsynth sample`` draws more records at no privacy cost; the three files land as one
unit.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from ..data import RAW_TABLES, RECORD_DATASETS
from ..data.fetch import local_path
from ..data.registry import dataset_info
from ..mechanisms import registry  # the module: its functions are looked up when called (tests spy on them)
from ..mechanisms.base import MemoryLimitError, check_privacy_params, check_seed
from ..mechanisms.sampler import pgm_mechanisms, unsavable_reason
from ..model_file import SavedModel, is_model_file
from ..tabular import TableError, describe, encoder_of, prepare, sidecar
from ..tabular.stream import CHUNK_ROWS, DaskTable, TableSource, TableWriter, prepare_stream, table_kind, write_kind
from ..timing import Stopwatch
from ._args import check_budget
from ._inputs import file_sha256, is_file_arg, memory_budget, raw_input, resolve_dataset, schema_input
from ._outputs import OutputPair, check_out, dumps_strict, json_default, mark_sidecar, sidecar_path

__all__ = ["check_save_model", "load_dataset", "model_bytes", "run_synth"]


def load_dataset(arg: str, domain_json: str | None, what: str = "--dataset", allow_surrogate: bool = False):
    """A :class:`Dataset` from a registered name or a CSV (+ domain JSON)."""
    return resolve_dataset(arg, domain_json, what=what, allow_surrogate=allow_surrogate).dataset


def _input_columns(arg: str) -> list[str] | None:
    """Column order of the input file (a CSV path or a registered dataset's file)."""
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
        if (
            not sep
            or not all(part.isidentifier() for part in key.removeprefix("generator.").split(".", 1))
            or ("." in key.removeprefix("generator."))
        ):
            raise ValueError(f"--param must be KEY=VALUE with KEY a name or generator.NAME, got {it!r}")
        try:
            out[key] = ast.literal_eval(val)
        except (ValueError, SyntaxError):
            out[key] = val
    return out


def _option_of(params: dict, message: str) -> str:
    """The options that set the hyperparameters a refusal of ``registry.create`` is about:
    ``--preset NAME`` and/or ``--param KEY=VALUE`` (all of them when the message names none)."""
    named = [k for k in params if k in message] or list(params)
    return " ".join(f"--preset {params[k]!r}" if k == "preset" else f"--param {k}={params[k]!r}" for k in named)


def _create(mechanism: str, params: dict):
    """``registry.create(mechanism, **params)``; a refusal names MECHANISM, ``--preset`` or ``--param``."""
    try:
        registry.spec(mechanism)
    except ValueError as exc:
        raise ValueError(f"MECHANISM {mechanism!r}: {exc}") from None
    try:
        return registry.create(mechanism, **params)
    except ValueError as exc:
        raise ValueError(f"{_option_of(params, str(exc))}: {exc}") from None


def _sized(data_option: str, params: dict, exc: MemoryLimitError) -> MemoryLimitError:
    """A size refused by the run's checks, prefixed by the options that set it: the ``--param``
    it names (e.g. ``synthetic_records``), else ``data_option`` (the data's attributes) and
    the hyperparameters given with it (the workload of RAP, GEM and Private-GSD grows with both)."""
    msg = str(exc)
    named = [k for k in params if k != "preset" and f"{k.removeprefix('generator.')}=" in msg]
    if named:
        return MemoryLimitError(f"{_option_of({k: params[k] for k in named}, msg)}: {msg}")
    given = f" with {_option_of(params, '')}" if params else ""
    return MemoryLimitError(f"{data_option}{given}: {msg}")


def _input_paths(dataset: str, domain: str | None, public: str | None) -> dict[str, Path]:
    """Every file the run reads, by the option that names it (for the output-path checks)."""
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
    schema: str | None = None,
    save_model: str | None = None,
    preprocessing_share: float | None = None,
    memory_limit_mb: float | None = None,
    chunk_rows: int | None = None,
    scheduler: str | None = None,
) -> dict:
    """The work of ``margsynth synth`` (callable from Python); returns the sidecar dict.
    ``device`` is passed to the mechanism's ``run`` (only mechanisms that take one).
    A registered dataset whose real files are absent is fetched; if that fails the
    run stops (``ValueError``) unless ``allow_surrogate``, and the sidecar says which
    (``"data_source"``) and carries the SHA-256 of every input file. ``schema``: the
    dataset is a raw CSV described by it (:func:`margsynth.tabular.synthesize`);
    ``save_model``: also write the fitted model there (:class:`~margsynth.model_file.SavedModel`);
    ``chunk_rows`` / ``scheduler``: read the raw table in chunks / count it on a Dask
    scheduler (:mod:`margsynth.tabular.stream`; a Parquet file, a folder of parts or a CSV
    over :data:`STREAM_BYTES` is always read in chunks);
    ``memory_limit_mb``: the memory budget every size is checked against before any charge
    (``None``: :data:`~margsynth.mechanisms.base.MEMORY_LIMIT_MB`)."""
    with memory_budget(memory_limit_mb):  # every size below checked against --memory-limit
        # --- validate everything before any noise is drawn
        try:
            s = registry.spec(mechanism)
        except ValueError as exc:
            raise ValueError(f"MECHANISM {mechanism!r}: {exc}") from None
        check_budget(epsilon, delta)
        check_privacy_params(epsilon, delta)
        check_seed(seed, "--seed")
        if schema is not None:
            return _run_raw(mechanism, dataset, schema, epsilon=epsilon, delta=delta, out=out, seed=seed, domain=domain,
                            public=public, params=params, device=device, save_model=save_model,
                            preprocessing_share=preprocessing_share, chunk_rows=chunk_rows,
                            scheduler=scheduler)  # fmt: skip
        for opt, val in (("--chunk-rows", chunk_rows), ("--scheduler", scheduler)):
            if val is not None:
                raise ValueError(f"{opt} {val!r}: only a raw table (--schema) is read in chunks; drop it or pass --schema")
        if preprocessing_share is not None:
            raise ValueError(
                f"--preprocessing-share {preprocessing_share!r}: only a raw CSV (--schema) has preprocessing; drop it or pass --schema"
            )
        inputs_read = _input_paths(dataset, domain, public)
        path = check_out(out, inputs_read)
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
        mech = _create(mechanism, params or {})
        if device is not None:
            if "device" not in inspect.signature(mech.synthesize).parameters:
                raise ValueError(f"mechanism {mechanism!r} takes no --device")
        kw = {"public": pub} if pub is not None else {}
        if device is not None:
            kw["device"] = device
        try:
            mech.validate(data, epsilon, delta, **kw)  # every check of the run, before any noise
        except MemoryLimitError as exc:
            raise _sized(
                f"--dataset {dataset!r}" + (f" (--domain {domain!r})" if domain else ""), params or {}, exc
            ) from None
        model_path = check_save_model(save_model, mech, mechanism, path, inputs_read)

        # --- reserve the outputs (an unwritable place is found now, before any noise), run, write all or nothing
        with OutputPair(path, extra=[(model_path, "--save-model")] if model_path else []) as pair:
            rng = np.random.default_rng(seed)
            clock = Stopwatch()
            result = mech.run(data, epsilon, delta, rng, **kw)
            wall = clock.elapsed()

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
            side["margsynth_version"] = __version__
            side = mark_sidecar(side)
            frame = result.synthetic.df
            order = _input_columns(dataset)
            if order is not None and set(order) == set(frame.columns):
                frame = frame[order]  # same column order as the input file
            writers = []
            if model_path is not None:
                blob = model_bytes(result, dict(side), list(frame.columns))
                side["saved_model"] = {"path": str(model_path), "sha256": hashlib.sha256(blob).hexdigest()}
                writers.append(lambda tmp: tmp.write_bytes(blob))
            text = dumps_strict(json.loads(json.dumps(side, default=_json_default)), prog="margsynth synth", indent=2)
            pair.commit(lambda tmp: frame.to_csv(tmp, index=False), lambda tmp: tmp.write_text(text), *writers)
        return side


def _run_raw(
    mechanism: str,
    dataset: str,
    schema: str,
    *,
    epsilon: float,
    delta: float,
    out: str,
    seed: int,
    domain: str | None,
    public: str | None,
    params: dict | None,
    device: str | None,
    save_model: str | None,
    preprocessing_share: float | None,
    chunk_rows: int | None = None,
    scheduler: str | None = None,
) -> dict:
    """``synth --schema``: a raw CSV through :func:`margsynth.tabular.prepare` (every check),
    then :meth:`~margsynth.tabular.PreparedRun.run`, decoded; a table read in chunks
    (:func:`streams`) through :func:`_run_stream`."""
    if domain is not None:
        raise ValueError(
            f"--domain {domain!r}: a raw CSV (--schema) needs no domain file, its schema describes the columns; drop --domain"
        )
    if public is not None or registry.spec(mechanism).needs_public:
        raise ValueError(
            f"mechanism {mechanism!r} with --schema: a public dataset over the encoded domain is not supported for raw "
            "tables; expected a mechanism that needs no --public"
        )
    if device is not None:
        raise ValueError(f"--device {device!r}: not supported with --schema; drop it")
    if streams(dataset, chunk_rows, scheduler) or (write_kind(out) == "parquet" and Path(dataset).exists()):
        return _run_stream(mechanism, dataset, schema, epsilon=epsilon, delta=delta, out=out, seed=seed, params=params,
                           save_model=save_model, preprocessing_share=preprocessing_share, chunk_rows=chunk_rows,
                           scheduler=scheduler)  # fmt: skip
    if write_kind(out) != "csv":
        raise ValueError(f"--out {out!r}: a registered raw table is written as CSV; expected a .csv path")
    frame, sha, raw = raw_input("--dataset", dataset)
    sch, sch_sha, sch_paths = schema_input("--schema", schema, dataset)
    inputs_read = {f"--dataset {dataset!r}": raw, **{f"--schema {schema!r} ({p.name})": p for p in sch_paths}}
    path = check_out(out, inputs_read)
    kw = {} if preprocessing_share is None else {"preprocessing_share": preprocessing_share}
    _create(mechanism, params or {})  # a bad --param or --preset named before the table is checked
    try:  # every check of the run: cells, hyperparameters, the mechanism's own, before any noise
        prepared = prepare(frame, sch, mechanism, epsilon=epsilon, delta=delta, **kw, **(params or {}))
    except TableError as exc:
        raise ValueError(f"--dataset {dataset!r}: {exc} (--schema {schema!r})") from None
    except MemoryLimitError as exc:
        raise _sized(f"--dataset {dataset!r} (--schema {schema!r})", params or {}, exc) from None
    model_path = check_save_model(save_model, prepared.mechanism, mechanism, path, inputs_read)
    sha = {**sha, **sch_sha}

    with OutputPair(path, extra=[(model_path, "--save-model")] if model_path else []) as pair:
        clock = Stopwatch()
        synthetic, report = prepared.run(seed)
        wall = clock.elapsed()
        side, text, writers = _raw_outputs(report, model_path, {
            "registry_name": mechanism, "dataset": dataset, "schema": schema, "records": int(len(synthetic)),
            "epsilon_requested": epsilon, "delta_requested": delta, "seed": seed, "data_source": "real",
            "input_sha256": sha, "wall_seconds": wall, "margsynth_version": __version__}, list(synthetic.columns))  # fmt: skip
        table = encoder_of(report).to_text(synthetic)  # decimals, integers and null tokens as the input
        pair.commit(lambda tmp: table.to_csv(tmp, index=False), lambda tmp: tmp.write_text(text), *writers)
    return side


def _raw_outputs(report: dict, model_path: Path | None, about: dict, columns: list[str]) -> tuple[dict, str, list]:
    """The sidecar of a raw-table run (the keys of every synth sidecar, the report's
    sections and ``about``, marked as ours), its JSON text, and the saved model's writer
    when asked for (the output's column order ``columns`` kept in the model)."""
    side = sidecar(report)
    ledger = side.pop("ledger")
    side["epsilon_spent"] = side.pop("epsilon")  # the keys of every synth sidecar
    side["ledger"] = ledger["charges"]
    side["budget"] = {**{k: v for k, v in ledger.items() if k != "charges"}, **side.get("budget", {})}
    side.update(about)
    side = mark_sidecar(side)
    writers = []
    if model_path is not None:
        blob = model_bytes(report["result"], dict(side), columns, encoder=report["encoder"])
        side["saved_model"] = {"path": str(model_path), "sha256": hashlib.sha256(blob).hexdigest()}
        writers.append(lambda tmp: tmp.write_bytes(blob))
    text = dumps_strict(json.loads(json.dumps(side, default=_json_default)), prog="margsynth synth", indent=2)
    return side, text, writers


#: A raw CSV larger than this (bytes) is read in chunks (:mod:`margsynth.tabular.stream`).
STREAM_BYTES = 256 * 2**20


def streams(dataset: str, chunk_rows: int | None = None, scheduler: str | None = None) -> bool:
    """Whether ``synth --schema`` reads ``--dataset`` in chunks: with ``--chunk-rows`` or
    ``--scheduler``, for Parquet, a folder of parts, or a CSV over :data:`STREAM_BYTES`."""
    if chunk_rows is not None or scheduler is not None:
        return True
    p = Path(dataset)
    try:
        if not p.exists() or (dataset in RAW_TABLES and not p.is_file()):
            return False
        return p.is_dir() or table_kind(p) == "parquet" or (p.is_file() and p.stat().st_size > STREAM_BYTES)
    except OSError:  # a name the OS refuses: the in-memory path's checks name --dataset
        return False


def _stream_inputs(dataset: str) -> dict[str, Path]:
    p = Path(dataset)
    files = sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else [p]
    return {f"--dataset {dataset!r}" + (f" (part {f.name})" if p.is_dir() else ""): f for f in files}


def _run_stream(mechanism: str, dataset: str, schema: str, *, epsilon: float, delta: float, out: str, seed: int,
                params: dict | None, save_model: str | None, preprocessing_share: float | None,
                chunk_rows: int | None, scheduler: str | None) -> dict:  # fmt: skip
    """``synth --schema`` on a table read in chunks (:func:`margsynth.tabular.stream.prepare_stream`):
    every check (one checking pass over the table) before the outputs are reserved, then the
    run, its records written block by block into the output's temporary."""
    sch, sch_sha, sch_paths = schema_input("--schema", schema, dataset)
    inputs_read = {**_stream_inputs(dataset), **{f"--schema {schema!r} ({p.name})": p for p in sch_paths}}
    path = check_out(out, inputs_read)
    source = (DaskTable.read(dataset, scheduler) if scheduler is not None
              else TableSource(dataset, chunk_rows=chunk_rows or CHUNK_ROWS))  # fmt: skip
    kw = {} if preprocessing_share is None else {"preprocessing_share": preprocessing_share}
    try:
        prepared = prepare_stream(source, sch, mechanism, epsilon=epsilon, delta=delta, **kw, **(params or {}))
    except TableError as exc:
        raise ValueError(f"--dataset {dataset!r}: {exc} (--schema {schema!r})") from None
    except MemoryLimitError as exc:
        raise _sized(f"--dataset {dataset!r} (--schema {schema!r})", params or {}, exc) from None
    model_path = check_save_model(save_model, prepared.mechanism, mechanism, path, inputs_read)
    files = [f for k, f in inputs_read.items() if k.startswith("--dataset")]
    sha = {**{str(f): file_sha256(f) for f in files}, **sch_sha}
    names = {c.name for c in sch.columns}

    with OutputPair(path, extra=[(model_path, "--save-model")] if model_path else []) as pair:
        clock = Stopwatch()
        writer = TableWriter(pair.temporary, write_kind(path))
        try:
            _, report = prepared.run(seed, write=writer.write)
        finally:
            writer.close()
        wall = clock.elapsed()
        side, text, writers = _raw_outputs(report, model_path, {
            "registry_name": mechanism, "dataset": dataset, "schema": schema, "epsilon_requested": epsilon,
            "delta_requested": delta, "seed": seed, "data_source": "real", "input_sha256": sha, "wall_seconds": wall,
            "margsynth_version": __version__}, [c for c in source.columns if c in names])  # fmt: skip
        pair.commit(lambda tmp: None, lambda tmp: tmp.write_text(text), *writers)  # the table is in its temporary
    return side


def check_save_model(save_model: str | None, mech, mechanism: str, out: Path, inputs: dict[str, Path]) -> Path | None:
    """``--save-model``'s path, after checking that ``mech`` will keep a model and that the path
    can be a new or replaced plain file other than an input, ``--out`` or its sidecar."""
    if save_model is None:
        return None
    reason = unsavable_reason(mech)
    if reason is not None:
        raise ValueError(
            f"--save-model: mechanism {mechanism!r} keeps no fitted Private-PGM model to save ({reason}); "
            f"expected one of the mechanisms that generate with Private-PGM: {', '.join(pgm_mechanisms())}"
        )
    path = check_out(save_model, inputs, option="--save-model", sidecar=False)
    for other, what in ((out, "--out"), (sidecar_path(out), "--out's sidecar")):
        if path.resolve() == other.resolve():
            raise ValueError(f"--save-model {save_model!r} is the same file as {what}; choose another path")
    if path.is_file() and not is_model_file(path):
        raise ValueError(
            f"--save-model {save_model!r} exists and is not a model file of margsynth; it is left as it is: move it "
            "away or choose another --save-model"
        )
    return path


def model_bytes(result, info: dict, columns: list[str], encoder=None) -> bytes:
    """The bytes of the saved-model file of ``result`` (:meth:`SavedModel.write`)."""
    buf = io.BytesIO()
    SavedModel.from_result(result, info=info, columns=columns, encoder=encoder).write(buf)
    return buf.getvalue()


def _json_default(o):
    return json_default(o)


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
        schema=args.schema,
        save_model=args.save_model,
        preprocessing_share=args.preprocessing_share,
        memory_limit_mb=args.memory_limit,
        chunk_rows=args.chunk_rows,
        scheduler=args.scheduler,
    )
    if "preprocessing" in side:  # a raw table: what preprocessing did, column by column
        print(f"preprocessing ({100 * side['preprocessing']['preprocessing_share']:.1f}% of the budget):")
        for line in describe(side["preprocessing"]):
            print(line)
    print(
        f"{args.mechanism}: {side['records']:,} synthetic records -> {args.out} "
        f"(epsilon spent {side['epsilon_spent']:.6g}, delta {side['delta']:.3g}, {side['wall_seconds']:.1f} s); "
        f"sidecar {args.out}.json" + (f"; model {args.save_model}" if args.save_model else ""),
        file=sys.stdout,
    )
    return 0
