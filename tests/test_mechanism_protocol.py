"""The mechanism skeleton, for every registered mechanism: a frozen dataclass of
hyperparameters whose ``validate(data, epsilon, delta, **kw)`` makes every check without
drawing noise, and whose ``run`` validates first (so bad input never touches the rng)."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from margsynth.dataset import Dataset
from margsynth.domain import Domain
from margsynth.mechanisms import registry

DOM = Domain.from_sizes({"a": 3, "b": 4, "c": 2})


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset(np.stack([rng.integers(0, s, n) for s in DOM.shape], 1), DOM)


def _kw(name):
    return {"public": _data(40, 1)} if registry.spec(name).needs_public else {}


@pytest.mark.parametrize("name", registry.available())
def test_frozen_dataclass_with_validate_and_run(name):
    mech = registry.create(name)
    assert dataclasses.is_dataclass(mech)
    assert type(mech).__dataclass_params__.frozen
    params = inspect.signature(mech.validate).parameters
    assert list(params)[:3] == ["data", "epsilon", "delta"]
    assert list(inspect.signature(mech.run).parameters)[:4] == ["data", "epsilon", "delta", "rng"]
    mech.validate(_data(), 1.0, 1e-6, **_kw(name))  # good input: no exception, no rng needed


BAD = [
    ("epsilon", dict(epsilon=0.0), "epsilon"),
    ("epsilon", dict(epsilon=float("nan")), "epsilon"),
    ("delta", dict(delta=1.0), "delta"),
    ("rng", dict(rng=0), "rng"),
    ("data", dict(data="x.csv"), "data"),
    ("data", dict(data=Dataset(np.zeros((0, 3), dtype=int), DOM)), "data"),
]


@pytest.mark.parametrize("name", registry.available())
@pytest.mark.parametrize("what,bad,word", BAD, ids=[f"{w}-{i}" for i, (w, _, _) in enumerate(BAD)])
def test_validate_and_run_refuse_before_any_noise(name, what, bad, word):
    mech = registry.create(name)
    args = {"data": _data(), "epsilon": 1.0, "delta": 1e-6, "rng": np.random.default_rng(7), **bad}
    rng = args["rng"]
    state = rng.bit_generator.state if isinstance(rng, np.random.Generator) else None
    with pytest.raises(ValueError, match=word):
        mech.validate(args["data"], args["epsilon"], args["delta"], rng=args["rng"], **_kw(name))
    with pytest.raises(ValueError, match=word):
        mech.run(args["data"], args["epsilon"], args["delta"], args["rng"], **_kw(name))
    if state is not None:
        assert rng.bit_generator.state == state  # no draw on a refusal


def test_cli_calls_validate_without_probing():
    from margsynth.commands import synth

    src = inspect.getsource(synth.run_synth)
    assert "mech.validate(" in src and 'hasattr(mech, "validate")' not in src
