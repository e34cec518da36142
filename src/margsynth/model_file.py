"""Saved models: a run's fitted generative model in one file, sampled again at no privacy cost.

A run of a mechanism that generates with Private-PGM keeps its fitted graphical model
``P_theta`` and the steps that map its records back to the data's domain
(:class:`~margsynth.mechanisms.sampler.PGMSampler`; Fact 1, Eq. 4.2 and Algorithms 7-8 of
McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", JPC 2021, arXiv:2108.04978; McKenna, Sheldon &
Miklau, "Graphical-model based estimation and inference for differential privacy", ICML
2019, arXiv:1901.09136). The model is a function of the noisy measurements only, so
drawing more records from it is post-processing: it costs no privacy budget beyond what
the run spent.

:class:`SavedModel` adds what the run's sidecar says (mechanism, parameters, the full
ledger and the spent (ε, δ), the domain, the data's SHA-256, the seed) and, when the run
came from a raw table, the encoder's dictionary, so :meth:`SavedModel.sample_frame`
decodes to the raw columns. :meth:`SavedModel.save` writes one ``.npz`` file and
:meth:`SavedModel.load` reads it back; the format is described in docs/saved_models.md.

The file holds JSON metadata (UTF-8 bytes in the array ``meta``) and plain numeric
arrays only (``theta_<i>``: the log-potential of clique ``i``; ``support_<j>_<k>``: the
kept-value mask of attribute ``k`` in reversal step ``j``). It is read with
``numpy.load(allow_pickle=False)``: loading a file made by someone else runs no code
from it, and every field is checked (a malformed file is a ``ValueError`` naming the
file and the field): the domains by :meth:`margsynth.domain.Attribute.from_dict`, the
junction tree by :func:`margsynth.inference.pgm.check_junction_tree`.

Where it sits: in the top layer, beside ``margsynth.commands`` and ``margsynth.cli``
(domain/dataset/timing/paths -> data -> privacy -> metrics -> inference -> mechanisms ->
tabular -> experiments -> plotting/runner -> model_file/commands/cli). It reads and writes
the optional :class:`margsynth.tabular.Encoder` of a raw-table run, so it must come after
``tabular``, and it keeps the run's sidecar as the same strict JSON values the command
line writes (:mod:`margsynth.jsonable`, the one home of that encoding), so it
shares the commands' layer; ``margsynth synth --save-model`` and ``margsynth sample`` use
it, and nothing below the top layer does.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .dataset import Dataset
from .domain import Attribute, Domain
from .inference.pgm import GraphicalModel, JunctionTree, check_junction_tree
from .jsonable import finite_json, plain_json
from .mechanisms.compression import Compression
from .mechanisms.sampler import PGMSampler, pgm_mechanisms
from .paths import atomic_path
from .rules import RuleSet, as_rules
from .tabular import Encoder

__all__ = ["FORMAT", "VERSION", "SavedModel"]

FORMAT = "margsynth-model"
VERSION = 1
#: Keys of a run's sidecar left out of a saved model: wall-clock times differ between two runs
#: of the same seed, and without them the same run gives a byte-identical file.
_TIMINGS = ("seconds", "wall_seconds")


def _domain_json(domain: Domain) -> list[dict[str, Any]]:
    """The file's form of a domain: one :meth:`~margsynth.domain.Attribute.to_dict` per attribute."""
    return [a.to_dict() for a in domain.attributes]


class _Reader:
    """Checks on a loaded file's fields; every error names the file and the field."""

    def __init__(self, path: Path):
        self.path = path

    def error(self, problem: str) -> ValueError:
        """``problem`` (which names the field) as the error of this file."""
        return ValueError(f"{str(self.path)!r}: {problem}; expected a model file written by margsynth synth --save-model")

    def fail(self, where: str, problem: str) -> ValueError:
        return self.error(f"{where}: {problem}")

    def get(self, obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise self.fail(where, f"field {key!r} is missing")
        v = obj[key]
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.fail(f"{where}.{key}", f"{v!r} is not an integer")
        if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise self.fail(f"{where}.{key}", f"{v!r} is not a number")
        if kind not in (int, float) and not isinstance(v, kind):
            raise self.fail(f"{where}.{key}", f"{v!r} is not of type {getattr(kind, '__name__', kind)}")
        return v

    def domain(self, spec: Any, where: str) -> Domain:
        if not isinstance(spec, list) or not spec:
            raise self.fail(where, "not a non-empty list of attributes")
        attrs = []
        for i, a in enumerate(spec):
            try:
                attrs.append(Attribute.from_dict(a))
            except ValueError as exc:
                raise self.fail(f"{where}[{i}]", str(exc)) from None
        try:
            return Domain(tuple(attrs))
        except ValueError as exc:
            raise self.fail(where, str(exc)) from None

    def tree(self, spec: Any, domain: Domain, where: str) -> JunctionTree:
        fields = [self.get(spec, key, list, where) for key in ("cliques", "parent", "order", "elimination_order")]
        try:
            return check_junction_tree(domain, *fields, where=where)
        except ValueError as exc:
            raise self.error(str(exc)) from None


@dataclass(frozen=True, eq=False)
class SavedModel:
    """A run's fitted model with its description (see the module docstring).

    ``info`` is the run's sidecar as JSON values (``mechanism``, ``registry_name``,
    ``parameters``, ``epsilon_spent``, ``delta``, ``ledger``, ``records``, ``dataset``,
    ``seed``, ``input_sha256``, ``preprocessing`` for a raw table, ...; its timings are
    left out, so the same run gives the same bytes); ``columns`` the
    order of the columns the run wrote (``None``: domain order); ``encoder`` the
    :meth:`margsynth.tabular.Encoder.to_dict` of a raw-table run, else ``None``.
    """

    sampler: PGMSampler
    info: dict[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None
    encoder: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.sampler, PGMSampler):
            raise ValueError(f"sampler must be a PGMSampler, got {type(self.sampler).__name__}")
        info = {k: v for k, v in dict(self.info).items() if k not in _TIMINGS}
        object.__setattr__(self, "info", finite_json(plain_json(info)))
        if self.columns is not None:
            cols = tuple(str(c) for c in self.columns)
            if sorted(cols) != sorted(self.domain.names):
                raise ValueError(f"columns {list(cols)} are not the domain's attributes {list(self.domain.names)}")
            object.__setattr__(self, "columns", cols)
        if self.encoder is not None:
            object.__setattr__(self, "encoder", plain_json(dict(self.encoder)))

    # -- construction
    @classmethod
    def from_result(
        cls,
        result: Any,
        *,
        info: Mapping[str, Any] | None = None,
        columns: Any = None,
        encoder: Any = None,
    ) -> SavedModel:
        """The saved model of ``result`` (a :class:`~margsynth.mechanisms.base.SynthesisResult`); ``info`` defaults
        to its sidecar; ``encoder`` is an encoder object (``to_dict()``) or its dictionary.
        ``ValueError`` when the run kept no Private-PGM model."""
        sampler = getattr(result, "sampler", None)
        if sampler is None:
            raise ValueError(
                f"mechanism {getattr(result, 'mechanism', '?')!r} keeps no fitted Private-PGM model to save; "
                f"saved models exist for the mechanisms that generate with Private-PGM ({', '.join(pgm_mechanisms())})"
            )
        if encoder is not None and not isinstance(encoder, Mapping):
            encoder = encoder.to_dict()
        return cls(sampler, dict(info if info is not None else result.sidecar()), columns, encoder)

    # -- description
    @property
    def domain(self) -> Domain:
        return self.sampler.domain

    @property
    def mechanism(self) -> str:
        return str(self.info.get("registry_name") or self.info.get("mechanism") or "?")

    @property
    def records(self) -> int:
        """The number of records the run produced (the default of :meth:`sample`)."""
        r = self.info.get("records")
        return int(r) if isinstance(r, int) and r > 0 else max(1, int(round(self.sampler.total)))

    # -- sampling
    def sample(self, n: int | None, rng: np.random.Generator) -> Dataset:
        """``n`` records over :attr:`domain` (``None``: :attr:`records`); see :meth:`~margsynth.mechanisms.sampler.PGMSampler.sample`."""
        return self.sampler.sample(self.records if n is None else n, rng)

    def sample_frame(self, n: int | None, rng: np.random.Generator):
        """``n`` records as a DataFrame: decoded to the raw columns (raw order and types) when the
        run came from a raw table, else integer codes in the run's column order."""
        data = self.sample(n, rng)
        if self.encoder is not None:
            return self.decoder().decode(data, rng)
        frame = data.df
        return frame[list(self.columns)] if self.columns is not None else frame

    def decoder(self) -> Encoder | None:
        """The :class:`margsynth.tabular.Encoder` of a raw-table run (``None`` otherwise)."""
        if self.encoder is None:
            return None
        return Encoder.from_dict(self.encoder)

    # -- files
    def _payload(self) -> dict[str, np.ndarray]:
        m = self.sampler.model
        tree = m.tree
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "kind": "private-pgm",
            "model": {
                "domain": _domain_json(m.domain),
                "cliques": [list(c) for c in tree.cliques],
                "parent": list(tree.parent),
                "order": list(tree.order),
                "elimination_order": list(tree.elimination_order),
                "total": float(m.total),
            },
            "reverse": [{"kind": "compression", "original": _domain_json(c.original)} for c in self.sampler.reverse],
            "domain": _domain_json(self.domain),
            "columns": None if self.columns is None else list(self.columns),
            "info": self.info,
            "encoder": self.encoder,
        }
        if self.sampler.rules is not None:  # the run's rules (margsynth.rules), which sampling enforces
            meta["rules"] = self.sampler.rules.to_list()
        text = json.dumps(meta, allow_nan=False, indent=1)
        arrays = {"meta": np.frombuffer(text.encode("utf-8"), dtype=np.uint8)}
        for i, t in enumerate(m.theta):
            arrays[f"theta_{i}"] = np.ascontiguousarray(t, dtype=np.float64)
        for j, c in enumerate(self.sampler.reverse):
            for k, a in enumerate(c.original.names):
                arrays[f"support_{j}_{k}"] = np.asarray(c.supports[a], dtype=bool)
        return arrays

    def write(self, fh) -> None:
        """Write the file's bytes to the binary file object ``fh``: an ``.npz`` archive (as
        ``numpy.savez_compressed`` writes, but with fixed timestamps, so the same model gives
        the same bytes)."""
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for key, arr in self._payload().items():
                info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                with zf.open(info, "w", force_zip64=True) as out:
                    np.lib.format.write_array(out, arr, allow_pickle=False)

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path`` (one ``.npz`` file, replaced atomically)."""
        path = Path(path)
        with atomic_path(path, ".npz") as tmp:
            with open(tmp, "wb") as fh:
                self.write(fh)
        return path

    @classmethod
    def load(cls, path: str | Path) -> SavedModel:
        """Read a file written by :meth:`save`; ``ValueError`` naming the file and the
        field for anything that is not such a file. Nothing in it is executed."""
        path = Path(path)
        r = _Reader(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"{str(path)!r} cannot be read ({exc.strerror}); expected a model file") from None
        try:
            archive = np.load(io.BytesIO(raw), allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ValueError("a single array")
            with archive as z:
                arrays = {k: z[k] for k in z.files}
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
            raise r.fail("file", f"not a numpy .npz archive of plain arrays ({str(exc)[:120]})") from None
        for k, v in arrays.items():
            if not isinstance(v, np.ndarray):
                raise r.fail(k, "not a numpy array")
        if "meta" not in arrays or arrays["meta"].dtype != np.uint8 or arrays["meta"].ndim != 1:
            raise r.fail("meta", "missing (no JSON metadata)")
        try:
            meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise r.fail("meta", f"not JSON ({exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise r.fail("meta.format", f"{meta.get('format') if isinstance(meta, dict) else meta!r} is not {FORMAT!r}")
        version = r.get(meta, "version", int, "meta")
        if version != VERSION:
            raise r.fail("meta.version", f"version {version} is not supported (this margsynth reads version {VERSION})")
        if meta.get("kind") != "private-pgm":
            raise r.fail("meta.kind", f"{meta.get('kind')!r} is not 'private-pgm'")
        spec = r.get(meta, "model", dict, "meta")
        mdom = r.domain(r.get(spec, "domain", list, "meta.model"), "meta.model.domain")
        tree = r.tree(spec, mdom, "meta.model")
        total = r.get(spec, "total", float, "meta.model")
        theta = []
        for i, c in enumerate(tree.cliques):
            key = f"theta_{i}"
            if key not in arrays:
                raise r.fail(key, "array missing")
            t = arrays[key]
            want = tuple(mdom[a].size for a in c)
            if t.dtype != np.float64 or t.shape != want:
                raise r.fail(key, f"array of {t.dtype} {t.shape}, expected float64 {want} (clique {list(c)})")
            theta.append(t)
        try:
            model = GraphicalModel(mdom, tree, theta, float(total))
        except ValueError as exc:
            raise r.fail("meta.model", str(exc)) from None
        steps = []
        dom = mdom
        rev = r.get(meta, "reverse", list, "meta")
        for j, st in enumerate(rev):
            w = f"meta.reverse[{j}]"
            if r.get(st, "kind", str, w) != "compression":
                raise r.fail(f"{w}.kind", f"{st['kind']!r} is not 'compression'")
            orig = r.domain(r.get(st, "original", list, w), f"{w}.original")
            sup = {}
            for k, a in enumerate(orig.names):
                key = f"support_{j}_{k}"
                if key not in arrays or arrays[key].dtype != np.bool_ or arrays[key].shape != (orig[a].size,):
                    raise r.fail(key, f"missing or not a boolean mask of {orig[a].size} values (attribute {a!r})")
                sup[a] = arrays[key]
            try:
                comp = Compression(orig, sup)
            except ValueError as exc:
                raise r.fail(w, str(exc)) from None
            if comp.compressed != dom:
                raise r.fail(w, f"it maps {comp.compressed!r} back, but the step before ends in {dom!r}")
            steps.append(comp)
            dom = orig
        out_dom = r.domain(r.get(meta, "domain", list, "meta"), "meta.domain")
        if out_dom != dom:
            raise r.fail("meta.domain", f"{out_dom!r} is not the domain the model's records map to, {dom!r}")
        info = r.get(meta, "info", dict, "meta")
        columns = meta.get("columns")
        if columns is not None and (not isinstance(columns, list) or sorted(map(str, columns)) != sorted(dom.names)):
            raise r.fail("meta.columns", f"{columns!r} is not an ordering of the domain's attributes")
        encoder = meta.get("encoder")
        if encoder is not None and not isinstance(encoder, dict):
            raise r.fail("meta.encoder", f"{type(encoder).__name__} is not an object")
        rules = None
        if meta.get("rules") is not None:
            try:
                rules = as_rules(RuleSet.from_list(meta["rules"]), dom)
            except ValueError as exc:
                raise r.fail("meta.rules", str(exc)) from None
        saved = cls(PGMSampler(model, tuple(steps), rules), info, None if columns is None else tuple(columns), encoder)
        if encoder is not None:
            try:
                enc = saved.decoder()
            except (ValueError, KeyError, TypeError) as exc:
                raise r.fail("meta.encoder", f"not an encoder's dictionary ({exc})") from None
            check = getattr(enc, "domain", None)
            if check is not None and check.to_dict() != dom.to_dict():
                raise r.fail("meta.encoder", "its encoded domain is not the model's domain")
        return saved

    def describe(self) -> dict[str, Any]:
        """What a sample's sidecar says about the model: the mechanism, the run's spent (ε, δ),
        its dataset, seed and inputs' SHA-256."""
        keep = ("mechanism", "registry_name", "dataset", "seed", "epsilon_spent", "delta", "epsilon_requested",
                "delta_requested", "input_sha256", "data_source", "records", "margsynth_version")  # fmt: skip
        return {k: self.info[k] for k in keep if k in self.info}

