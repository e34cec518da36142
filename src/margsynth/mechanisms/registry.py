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
the mechanism but a field of its generator object (e.g. ``iters`` of ``privsyn-pgm``'s
``PGMGenerator``, ``max_rounds`` of ``mst-gum``'s ``GUMGenerator``) sets that field of
the generator, so ``margsynth synth NAME -p KEY=VALUE`` reaches both.
Mechanisms that need a public dataset (``nist-mst``) declare ``needs_public=True``;
``run`` keyword arguments (``public=...``) are passed through by the CLI.
"""

from __future__ import annotations

import dataclasses
import importlib
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
    An override naming a field of the mechanism's generator rather than of the mechanism
    (e.g. ``gap_tol`` of :class:`~margsynth.mechanisms.generators.PGMGenerator`) is set on
    that generator, also when the mechanism builds it itself (``generator=None``)."""
    s = spec(name)
    factory = s.resolve()
    kwargs = _route_generator_fields(factory, {**s.kwargs, **overrides})
    try:
        mech = factory(**kwargs)
    except TypeError as exc:
        late = _default_generator_fields(factory, kwargs)
        if not late:
            raise ValueError(f"mechanism {name!r}: bad parameters {sorted(overrides)} ({exc})") from exc
        # fields of the generator the mechanism builds itself (``generator=None``, e.g. MST's
        # Private-PGM from its ``iters``): build it, then set them on a copy of that generator
        rest = {k: v for k, v in kwargs.items() if k not in late}
        try:
            base = factory(**rest)
            mech = dataclasses.replace(base, generator=dataclasses.replace(base.generator_, **late))
        except TypeError as exc2:
            raise ValueError(f"mechanism {name!r}: bad parameters {sorted(overrides)} ({exc2})") from exc2
    return mech


def _default_generator_fields(factory: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments that name no field of the mechanism dataclass ``factory`` but a
    field of :class:`~margsynth.mechanisms.generators.PGMGenerator`, when the mechanism
    has a ``generator`` field left to ``None`` (it then builds its generator itself)."""
    if not (isinstance(factory, type) and dataclasses.is_dataclass(factory)):
        return {}
    fields = {f.name for f in dataclasses.fields(factory)}
    if "generator" not in fields or kwargs.get("generator") is not None or not hasattr(factory, "generator_"):
        return {}
    from .generators import PGMGenerator

    theirs = {f.name for f in dataclasses.fields(PGMGenerator)}
    return {k: v for k, v in kwargs.items() if k not in fields and k in theirs}


def _route_generator_fields(factory: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Move the keyword arguments that name no field of the mechanism dataclass
    ``factory`` but a field of its ``generator`` object into that object."""
    if not (isinstance(factory, type) and dataclasses.is_dataclass(factory)):
        return kwargs
    fields = {f.name: f for f in dataclasses.fields(factory)}
    gen = kwargs.get("generator")
    if "generator" not in kwargs and "generator" in fields:  # the mechanism's default generator
        f = fields["generator"]
        gen = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if not dataclasses.is_dataclass(gen) or isinstance(gen, type):
        return kwargs
    own = set(fields)
    theirs = {f.name for f in dataclasses.fields(gen)}
    moved = {k: v for k, v in kwargs.items() if k not in own and k in theirs}
    if not moved:
        return kwargs
    rest = {k: v for k, v in kwargs.items() if k not in moved}
    rest["generator"] = dataclasses.replace(gen, **moved)
    return rest


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
    "aim", "margsynth.mechanisms.aim:AIM", pgm=True, description="AIM (McKenna et al. 2022), all 3-way workload by default"
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
