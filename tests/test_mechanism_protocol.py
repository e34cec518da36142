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


# ----------------------------------------------------------------------------- a budget it is handed
def _tiny(name):
    from .test_accounting_contract import TINY

    return registry.create(name, **TINY.get(name, {}))


@pytest.mark.parametrize("name", registry.available())
def test_run_on_a_handed_budget_equals_run_on_epsilon_delta(name):
    """``run(data, rng, budget=mech.budget(eps, delta))`` is the same run as
    ``run(data, eps, delta, rng)``: same records, same charges, same spent (epsilon, delta);
    the handed ledger holds every charge."""
    mech = _tiny(name)
    a = mech.run(_data(), 1.0, 1e-6, np.random.default_rng(3), **_kw(name))
    ledger = mech.budget(1.0, 1e-6)
    b = mech.run(_data(), np.random.default_rng(3), budget=ledger, **_kw(name))
    assert np.array_equal(a.synthetic.codes, b.synthetic.codes)
    assert a.ledger == b.ledger == ledger.records() and (a.epsilon, a.delta) == (b.epsilon, b.delta)


@pytest.mark.parametrize("name", registry.available())
def test_a_sub_budget_is_spent_and_lands_on_the_run_ledger(name):
    """A mechanism handed part of a larger ledger (in its currency) spends that part: its
    charges land on the larger ledger as they are made, which never goes past its total."""
    from margsynth.privacy import BudgetLedger

    mech = _tiny(name)
    run_ledger = BudgetLedger.from_dp(1.0, 1e-6, conversion="cks")
    run_ledger.charge("other", run_ledger.portion(0.25), "preprocessing")
    sub = run_ledger.sub(run_ledger.remaining, name, currency=mech.currency)
    res = mech.run(_data(), rng=np.random.default_rng(5), budget=sub, **_kw(name))
    mine = [e for e in run_ledger.entries if e.label.startswith(f"{name}: ")]
    assert len(mine) == len(res.ledger) == len(sub.entries) > 0
    assert run_ledger.spent <= run_ledger.total and run_ledger.spent >= run_ledger.total * (1 - 1e-9)


@pytest.mark.parametrize("name", registry.available())
def test_a_budget_the_mechanism_cannot_spend_is_refused_before_any_noise(name):
    from margsynth.privacy import BudgetLedger

    mech = registry.create(name)
    other = "gdp" if mech.currency == "zcdp" else "zcdp"
    used = mech.budget(1.0, 1e-6)
    used.charge("other", used.portion(0.1) if used.currency == "zcdp" else used.total / 2, "spent")
    cases = [
        (dict(budget=BudgetLedger.from_dp(1.0, 1e-6, currency=other)), f"spends a {mech.currency} budget"),
        (dict(budget=used), "already has 1 charge"),
        (dict(budget=mech.budget(1.0, 1e-6), epsilon=1.0, delta=1e-6), "give one of them"),
        (dict(budget=0.5), "budget must be a BudgetLedger"),
    ]
    for kw, message in cases:
        rng = np.random.default_rng(1)
        state = rng.bit_generator.state
        eps, delta = kw.pop("epsilon", None), kw.pop("delta", None)
        with pytest.raises(ValueError, match=message):
            mech.validate(_data(), eps, delta, rng=rng, **kw, **_kw(name))
        with pytest.raises(ValueError, match=message):
            mech.run(_data(), eps, delta, rng, **kw, **_kw(name))
        assert rng.bit_generator.state == state


@pytest.mark.parametrize("name", registry.available())
def test_records_are_one_named_field(name):
    """The number of records to synthesize is ``synthetic_records`` on every mechanism."""
    mech = registry.create(name)
    assert "synthetic_records" in {f.name for f in dataclasses.fields(mech)}
