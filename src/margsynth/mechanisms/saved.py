"""Saved models: the fitted generative model of a run, in one file, sampled again at no privacy cost.

A run of a mechanism that generates with Private-PGM (``mst``, ``mst-prop4``, ``nist-mst``,
``aim``, ``adagrid``, ``independent``, ``privsyn-pgm``) ends with a fitted graphical model
``P_theta`` (Fact 1 and Eq. 4.2 of McKenna, Miklau & Sheldon, "Winning the NIST Contest: A
scalable and general approach to differentially private synthetic data", JPC 2021,
arXiv:2108.04978; McKenna, Sheldon & Miklau, "Graphical-model based estimation and
inference for differential privacy", ICML 2019, arXiv:1901.09136) and draws its records
from it by Algorithms 7-8 of the first paper, then maps them back to the data's domain
(Algorithm 4 reversed, §5 Step 8, when the mechanism compressed the domain). The model
is a function of the noisy measurements only, so drawing more records from it is
post-processing: it costs no privacy budget beyond what the run spent.

- :class:`PGMSampler` is that model plus its reversal steps, in memory: a run keeps it as
  :attr:`SynthesisResult.sampler <margsynth.mechanisms.base.SynthesisResult>` (``None``
  for mechanisms that keep no Private-PGM model: GUM, PrivPGD);
  :meth:`PGMSampler.sample` repeats the run's GENERATE step exactly (same arithmetic,
  same order of draws from ``rng``).
- :class:`SavedModel` adds what the run's sidecar says (mechanism, parameters, the full
  ledger and the spent (ε, δ), the domain, the data's SHA-256, the seed) and, when the run
  came from a raw table, the encoder's dictionary, so :meth:`SavedModel.sample_frame`
  decodes to the raw columns. :meth:`SavedModel.save` writes one ``.npz`` file and
  :meth:`SavedModel.load` reads it back; the format is described in docs/saved_models.md.

The file holds JSON metadata (UTF-8 bytes in the array ``meta``) and plain numeric
arrays only (``theta_<i>``: the log-potential of clique ``i``; ``support_<j>_<k>``: the
kept-value mask of attribute ``k`` in reversal step ``j``). It is read with
``numpy.load(allow_pickle=False)``: loading a file made by someone else runs no code
from it, and every field is checked (a malformed file is a ``ValueError`` naming the
file and the field).
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..domain import Attribute, Domain, Hierarchy
from ..inference.pgm import GraphicalModel, JunctionTree
from .base import check_records
from .compression import Compression

__all__ = [
    "FORMAT",
    "PGM_MECHANISMS",
    "VERSION",
    "PGMSampler",
    "SavedModel",
    "json_default",
    "pgm_sampler",
    "unsavable_reason",
]

FORMAT = "margsynth-model"
VERSION = 1
#: The registered mechanisms that generate with Private-PGM (and so keep a savable model).
PGM_MECHANISMS = ("mst", "mst-prop4", "nist-mst", "aim", "adagrid", "adaptive-grid", "independent", "privsyn-pgm")


# ----------------------------------------------------------------------------- in memory
@dataclass(frozen=True, eq=False)
class PGMSampler:
    """A fitted Private-PGM model and the steps that map its records to the data's domain.

    ``model`` is over the domain the mechanism fitted on (compressed, for MST and
    NIST-MST); ``reverse`` holds the :class:`~.compression.Compression` steps applied after
    Algorithm 8, in order (each step's ``compressed`` domain is the previous step's output
    domain). :meth:`sample` is the run's GENERATE step: Algorithms 7-8, then each reversal.
    """

    model: GraphicalModel
    reverse: tuple[Compression, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.model, GraphicalModel):
            raise ValueError(f"model must be a GraphicalModel, got {type(self.model).__name__}")
        steps = tuple(self.reverse)
        dom = self.model.domain
        for j, c in enumerate(steps):
            if not isinstance(c, Compression):
                raise ValueError(f"reverse step {j} must be a Compression, got {type(c).__name__}")
            if c.compressed != dom:
                raise ValueError(f"reverse step {j} starts from {c.compressed!r}, the previous step ends in {dom!r}")
            dom = c.original
        object.__setattr__(self, "reverse", steps)

    @property
    def domain(self) -> Domain:
        """The domain of the records :meth:`sample` returns (the data's domain)."""
        return self.reverse[-1].original if self.reverse else self.model.domain

    @property
    def total(self) -> float:
        """The model's (noisy) number of records ``N``."""
        return float(self.model.total)

    def sample(self, n: int, rng: np.random.Generator) -> Dataset:
        """``n`` records over :attr:`domain`: Algorithms 7-8 on the model, then the reversal
        steps, every draw from ``rng`` (same ``rng`` state, same records)."""
        n = check_records(n, "n", columns=len(self.domain))
        if n is None:
            raise ValueError("n must be a positive integer, got None")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
        synth = self.model.synthetic_data(n, rng=rng)
        for c in self.reverse:
            synth = c.reverse(synth, rng)
        return synth


def pgm_sampler(extras: Mapping[str, Any], *reverse: Compression) -> PGMSampler | None:
    """The :class:`PGMSampler` of a generator's output (its ``extras["model"]``, present when
    the generator was Private-PGM) followed by ``reverse``; ``None`` when there is no model."""
    model = extras.get("model")
    if not isinstance(model, GraphicalModel):
        return None
    return PGMSampler(model, tuple(reverse))


def unsavable_reason(mechanism: Any) -> str | None:
    """Why a run of ``mechanism`` (an instance) will keep no :class:`PGMSampler`, or ``None``
    when it will: it must generate with Private-PGM (a
    :class:`~.generators.PGMGenerator`) and have no record transforms (NIST-MST's
    ``transforms``, whose reverses are arbitrary code and are not saved)."""
    from .generators import PGMGenerator

    gen = getattr(mechanism, "generator_", None)
    if gen is None:
        gen = getattr(mechanism, "generator", None)
    if not isinstance(gen, PGMGenerator):
        what = getattr(gen, "name", None) or type(mechanism).__name__
        return f"it generates with {what}, not with Private-PGM"
    if getattr(mechanism, "transforms", ()):
        return "its record transforms cannot be saved"
    return None


# ----------------------------------------------------------------------------- JSON helpers
#: Keys of a run's sidecar left out of a saved model: wall-clock times differ between two runs
#: of the same seed, and without them the same run gives a byte-identical file.
_TIMINGS = ("seconds", "wall_seconds")


def json_default(o: Any) -> Any:
    """``json.dumps``'s ``default`` for run descriptions: numpy scalars and arrays as numbers and
    lists, sets as lists, anything else by its ``repr``."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return repr(o)


def _plain(obj: Any) -> Any:
    """``obj`` as JSON values (:func:`json_default`)."""
    return json.loads(json.dumps(obj, default=json_default))


def _finite_json(obj: Any) -> Any:
    """Non-finite floats (which strict JSON has no word for) as ``None``."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_json(v) for v in obj]
    return obj


def _domain_to_json(domain: Domain) -> list[dict[str, Any]]:
    out = []
    for a in domain.attributes:
        d: dict[str, Any] = {"name": a.name, "size": a.size, "ordinal": bool(a.ordinal)}
        if a.hierarchy is not None:
            d["hierarchy"] = [list(lvl) for lvl in a.hierarchy.levels]
        if a.labels is not None:
            d["labels"] = list(a.labels)
        out.append(d)
    return out


class _Reader:
    """Checks on a loaded file's fields; every error names the file and the field."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, problem: str) -> ValueError:
        return ValueError(f"{str(self.path)!r}: {where}: {problem}; expected a model file written by margsynth synth --save-model")

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
            w = f"{where}[{i}]"
            name = self.get(a, "name", str, w)
            size = self.get(a, "size", int, w)
            ordinal = self.get(a, "ordinal", bool, w)
            try:
                hier = Hierarchy(tuple(tuple(lvl) for lvl in a["hierarchy"])) if a.get("hierarchy") is not None else None
                labels = a.get("labels")
                if labels is not None and (not isinstance(labels, list) or not all(isinstance(x, str) for x in labels)):
                    raise ValueError(f"labels must be a list of strings, got {labels!r}")
                attrs.append(Attribute(name, size, ordinal=ordinal, hierarchy=hier, labels=labels))
            except (ValueError, TypeError) as exc:
                raise self.fail(w, str(exc)) from None
        try:
            return Domain(tuple(attrs))
        except ValueError as exc:
            raise self.fail(where, str(exc)) from None

    def tree(self, spec: Any, domain: Domain, where: str) -> JunctionTree:
        cliques = self.get(spec, "cliques", list, where)
        parent = self.get(spec, "parent", list, where)
        order = self.get(spec, "order", list, where)
        elim = self.get(spec, "elimination_order", list, where)
        k = len(cliques)
        if k == 0:
            raise self.fail(f"{where}.cliques", "no cliques")
        cl = []
        for i, c in enumerate(cliques):
            try:
                if not isinstance(c, list) or not c or not all(isinstance(a, str) for a in c):
                    raise ValueError(f"{c!r} is not a non-empty list of attribute names")
                c = domain.check_attrs(c, "clique")
                if c != domain.canonical(c):
                    raise ValueError(f"{list(c)} is not in domain order {list(domain.canonical(c))}")
                cl.append(c)
            except ValueError as exc:
                raise self.fail(f"{where}.cliques[{i}]", str(exc)) from None
        if sorted({a for c in cl for a in c}, key=domain.index) != list(domain.names):
            raise self.fail(f"{where}.cliques", "they do not cover every attribute of the model's domain")
        if len(parent) != k or not all(isinstance(p, int) and not isinstance(p, bool) and -1 <= p < k for p in parent):
            raise self.fail(f"{where}.parent", f"{parent!r} is not one index in [-1, {k}) per clique")
        if not all(isinstance(o, int) and not isinstance(o, bool) for o in order) or sorted(order) != list(range(k)):
            raise self.fail(f"{where}.order", f"{order!r} is not a permutation of the {k} clique indices")
        pos = {c: i for i, c in enumerate(order)}
        if parent[order[0]] != -1 or any(parent[c] == -1 or pos[parent[c]] >= pos[c] for c in order[1:]):
            raise self.fail(f"{where}.order", "it is not a breadth-first order of a tree rooted at its first clique (parents first)")
        for a in domain.names:  # running intersection: the cliques holding ``a`` form a subtree
            holding = [c for c in range(k) if a in cl[c]]
            tops = [c for c in holding if parent[c] not in holding]
            if len(tops) != 1:
                raise self.fail(f"{where}.cliques", f"attribute {a!r} breaks the running-intersection property")
        if not all(isinstance(e, str) for e in elim) or sorted(elim) != sorted(domain.names):
            raise self.fail(f"{where}.elimination_order", "it is not an ordering of the model's attributes")
        return JunctionTree(domain, tuple(cl), tuple(parent), tuple(order), tuple(elim))


# ----------------------------------------------------------------------------- on disk
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
        object.__setattr__(self, "info", _finite_json(_plain(info)))
        if self.columns is not None:
            cols = tuple(str(c) for c in self.columns)
            if sorted(cols) != sorted(self.domain.names):
                raise ValueError(f"columns {list(cols)} are not the domain's attributes {list(self.domain.names)}")
            object.__setattr__(self, "columns", cols)
        if self.encoder is not None:
            object.__setattr__(self, "encoder", _plain(dict(self.encoder)))

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
        """The saved model of ``result`` (a :class:`~.base.SynthesisResult`); ``info`` defaults
        to its sidecar; ``encoder`` is an encoder object (``to_dict()``) or its dictionary.
        ``ValueError`` when the run kept no Private-PGM model."""
        sampler = getattr(result, "sampler", None)
        if sampler is None:
            raise ValueError(
                f"mechanism {getattr(result, 'mechanism', '?')!r} keeps no fitted Private-PGM model to save; "
                f"saved models exist for the mechanisms that generate with Private-PGM ({', '.join(PGM_MECHANISMS)})"
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
        """``n`` records over :attr:`domain` (``None``: :attr:`records`); see :meth:`PGMSampler.sample`."""
        return self.sampler.sample(self.records if n is None else n, rng)

    def sample_frame(self, n: int | None, rng: np.random.Generator):
        """``n`` records as a DataFrame: decoded to the raw columns (raw order and types) when the
        run came from a raw table, else integer codes in the run's column order."""
        data = self.sample(n, rng)
        if self.encoder is not None:
            return self.decoder().decode(data, rng)
        frame = data.df
        return frame[list(self.columns)] if self.columns is not None else frame

    def decoder(self):
        """The :class:`margsynth.tabular.Encoder` of a raw-table run (``None`` otherwise)."""
        if self.encoder is None:
            return None
        from ..tabular import Encoder

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
                "domain": _domain_to_json(m.domain),
                "cliques": [list(c) for c in tree.cliques],
                "parent": list(tree.parent),
                "order": list(tree.order),
                "elimination_order": list(tree.elimination_order),
                "total": float(m.total),
            },
            "reverse": [{"kind": "compression", "original": _domain_to_json(c.original)} for c in self.sampler.reverse],
            "domain": _domain_to_json(self.domain),
            "columns": None if self.columns is None else list(self.columns),
            "info": self.info,
            "encoder": self.encoder,
        }
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
        from ..paths import atomic_path

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
        saved = cls(PGMSampler(model, tuple(steps)), info, None if columns is None else tuple(columns), encoder)
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

