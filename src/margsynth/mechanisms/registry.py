"""Mechanism registry: name → factory, with presets. What ``margsynth synth NAME`` runs.

A factory is any callable returning an object with the mechanism protocol
(:class:`~margsynth.mechanisms.base.Mechanism`: ``validate(data, epsilon, delta, **kw)``,
which makes every check without drawing noise, and ``run(data, epsilon, delta, rng,
**kw) -> SynthesisResult``). Factories are given as ``"module:attribute"`` strings and
imported on first use, so registering a mechanism costs nothing (and PrivPGD's
torch is imported only when PrivPGD runs). Another mechanism plugs in with one
line, e.g.::

    register("privpgd", "margsynth.mechanisms.privpgd:PrivPGD.preset")
    register("privsyn", "margsynth.mechanisms.privsyn:PrivSyn")

A preset is a name bound to a factory plus keyword arguments (e.g. ``mst-prop4``, or
``mst-gum``: MST with ``generator=GUMGenerator()``). An override that names no field of
the mechanism but a field of the generator it holds (e.g. ``iters`` of ``privsyn-pgm``'s
``PGMGenerator``, ``max_rounds`` of ``mst-gum``'s ``GUMGenerator``), or is written
``generator.<field>``, sets that field of the generator, so ``margsynth synth NAME -p
KEY=VALUE`` reaches both.
Mechanisms that need a public dataset (``nist-mst``) declare ``needs_public=True``;
``run`` keyword arguments (``public=...``) are passed through by the CLI.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .generators import GUMGenerator, PGMGenerator

__all__ = ["MechanismSpec", "available", "create", "register", "spec"]


@dataclass(frozen=True)
class MechanismSpec:
    name: str
    factory: str | Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    needs_public: bool = False
    description: str = ""
    #: generates with Private-PGM, so a run keeps a savable model (:func:`~.sampler.pgm_mechanisms`)
    pgm: bool = False

    def resolve(self) -> Callable[..., Any]:
        f = self.factory
        if callable(f):
            return f
        module, _, attr = f.partition(":")
        if not module or not attr:
            raise ValueError(f"mechanism {self.name!r}: factory must be 'module:attribute', got {f!r}")
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise ValueError(
                f"mechanism {self.name!r} is registered but its module {module!r} is not available ({exc})"
            ) from exc
        obj: Any = mod
        try:
            for part in attr.split("."):  # "Class.classmethod" factories are allowed
                obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"mechanism {self.name!r}: {module!r} has no attribute {attr!r}") from None
        return obj


_REGISTRY: dict[str, MechanismSpec] = {}


def register(
    name: str,
    factory: str | Callable[..., Any],
    *,
    needs_public: bool = False,
    description: str = "",
    replace: bool = False,
    pgm: bool = False,
    **kwargs: Any,
) -> None:
    """Register ``name`` → ``factory(**kwargs)`` (``factory`` a callable or ``"module:attr"``);
    ``pgm``: the mechanism generates with Private-PGM (its runs keep a savable model)."""
    if not isinstance(name, str) or not name or name != name.strip() or " " in name:
        raise ValueError(f"mechanism name must be a non-empty word, got {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"mechanism {name!r} is already registered")
    _REGISTRY[name] = MechanismSpec(name, factory, dict(kwargs), needs_public, description, pgm)


def available() -> list[str]:
    """Registered mechanism names, in registration order."""
    return list(_REGISTRY)


def spec(name: str) -> MechanismSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown mechanism {name!r}; available: {', '.join(_REGISTRY)}") from None


def create(name: str, **overrides: Any):
    """A mechanism instance for ``name`` (preset keyword arguments, then ``overrides``).

    A keyword naming a field of the mechanism sets it; one naming no field of the
    mechanism but a field of its ``generator`` (e.g. ``gap_tol`` of
    :class:`~margsynth.mechanisms.generators.PGMGenerator`), or written
    ``"generator.<field>"`` (needed where both have the field, e.g. AIM's ``iters`` and its
    final fit's ``generator.iters``), sets that field of the generator the mechanism holds.
    Anything else is a ``ValueError`` naming the fields there are."""
    s = spec(name)
    factory = s.resolve()
    kwargs = {**s.kwargs, **overrides}
    cls = factory.__self__ if inspect.ismethod(factory) else factory
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    gen_kw: dict[str, Any] = {}
    if "generator" in fields:  # keywords of the generator it holds go to that generator
        own = fields.keys() | {
            p.name for p in inspect.signature(factory).parameters.values() if p.kind is not p.VAR_KEYWORD
        }
        gen_kw = {k.removeprefix("generator."): v for k, v in kwargs.items() if k not in own}
        kwargs = {k: v for k, v in kwargs.items() if k in own}
    try:
        mech = factory(**kwargs)
    except TypeError as exc:
        raise ValueError(f"mechanism {name!r}: bad parameters {sorted(overrides)} ({exc})") from None
    if not gen_kw:
        return mech
    gen = mech.generator
    theirs = {f.name for f in dataclasses.fields(gen)} if dataclasses.is_dataclass(gen) else set()
    unknown = sorted(k for k in gen_kw if k not in theirs)
    if unknown:
        raise ValueError(
            f"mechanism {name!r}: bad parameters {unknown}; expected fields of {cls.__name__} "
            f"({', '.join(sorted(fields))}) or of its generator {type(gen).__name__} ({', '.join(sorted(theirs))})"
        )
    return dataclasses.replace(mech, generator=dataclasses.replace(gen, **gen_kw))


# --------------------------------------------------------------------------- built-ins
register(
    "mst",
    "margsynth.mechanisms.mst:MST",
    pgm=True,
    description="MST (NIST-MST paper §6): private Chow-Liu tree + Private-PGM",
)
register(
    "mst-prop4",
    "margsynth.mechanisms.mst:MST",
    pgm=True,
    conversion="prop4",
    description="MST with rho from Prop. 4 as the paper's appendix states (default uses the authors' CKS conversion)",
)
register(
    "nist-mst",
    "margsynth.mechanisms.nist_mst:NISTMST",
    needs_public=True,
    pgm=True,
    description="NIST-MST (§5): selection on public data (Algorithm 5), Eq. 5.1 noise, Private-PGM",
)
register(
    "aim",
    "margsynth.mechanisms.aim:AIM.preset",
    pgm=True,
    description="AIM (McKenna et al. 2022), all 3-way workload by default (--preset default|fast)",
)
register(
    "independent",
    "margsynth.mechanisms.baselines:Independent",
    pgm=True,
    description="independent one-way marginals baseline",
)
register(
    "adagrid",
    "margsynth.mechanisms.adagrid:AdaptiveGrid",
    pgm=True,
    description="adaptive-granularity mechanism (Gaussian DP, Private-PGM)",
)
register(
    "adaptive-grid",
    "margsynth.mechanisms.adagrid:AdaptiveGrid",
    pgm=True,
    description="alias of adagrid",
)
register(
    "privsyn",
    "margsynth.mechanisms.privsyn:PrivSyn",
    description="PrivSyn: InDif selection (Algorithms 1-2, Eq. 1), consistency, GUM synthesis",
)
register(
    "mst-gum",
    "margsynth.mechanisms.mst:MST",
    generator=GUMGenerator(),
    description="MST's selection and measurements, synthetic data from PrivSyn's GUM (§5.2) on its consistent marginals",
)
register(
    "privsyn-pgm",
    "margsynth.mechanisms.privsyn:PrivSyn",
    # a certified fit: at most 5,000 iterations, stopping once the certificate reads <= 1e-3 of
    # the loss (adult at eps = 1: ~2,000 iterations; at 1,000 the fit is within 5e-6 of its
    # optimum but the bound, 7.8e-3, cannot show it: docs/notes/aim.md)
    generator=PGMGenerator(iters=5000, gap_tol=1e-3, memory_limit_mb=1024.0),
    pgm=True,
    description="PrivSyn's selection and measurements (Algorithms 1-2, Eq. 1), synthetic data from Private-PGM",
)
register(
    "privpgd",
    "margsynth.mechanisms.privpgd:PrivPGD.preset",
    description="PrivPGD (Donhauser et al. 2024): particle gradient descent on sliced Wasserstein (--preset default|fast)",
)
register(
    "rap",
    "margsynth.mechanisms.rap:RAP.preset",
    description="RAP (Aydore et al. 2021): relaxed projection on all 2-way marginal queries (--preset default|adaptive|fast)",
)
register(
    "gem",
    "margsynth.mechanisms.gem:GEM.preset",
    description="GEM (Liu, Vietri & Wu 2021): generator network + exponential mechanism, all 2-way marginals (--preset default|fast)",
)
register(
    "private-gsd",
    "margsynth.mechanisms.private_gsd:PrivateGSD.preset",
    description="Private-GSD (Liu et al. ICML 2023), one-shot: all 2-way marginals measured once, genetic search (--preset default|fast)",
)
