"""Generation that honours rules (margsynth.rules), for every registered mechanism:

* the repair draws the attributes of the broken rules from their exact conditional (checked
  against the formula on many records), changes only offending records, widens when the
  context pins them, and keeps the number of records; rejection conditions a distribution;
* every registered mechanism, on tiny settings and many seeds, returns records that break
  no rule (while its records without rules do break them), reports 0 violations per rule,
  the number of records asked for, and the same bytes for the same seed;
* a rule set that cannot hold, or does not fit the domain, is refused before any noise:
  the generator's state is unchanged and the ledger has no charge;
* no rules (None or an empty set) leaves every mechanism's output byte-identical;
* Private-PGM's saved sampler enforces the run's rules, also after a save and load;
* the ``rule_violations`` metric counts per rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from margsynth import Dataset, Domain
from margsynth.inference import repair as repair_module
from margsynth.inference.gum import GUM
from margsynth.inference.pgm import GraphicalModel
from margsynth.inference.pgm import estimation as estimation_module
from margsynth.inference.repair import enforce, reject, repair
from margsynth.mechanisms import baselines, registry
from margsynth.metrics import rule_violations
from margsynth.model_file import SavedModel
from margsynth.privacy import BudgetLedger
from margsynth.rules import Rule, RuleSet
from tests.test_accounting_contract import SIZES, TINY

DOM = Domain.from_sizes(SIZES)  # a: 3, b: 4, c: 2


def _data(n: int = 80, seed: int = 0) -> Dataset:
    """Records that obey :func:`_rules` (b follows a; never b = 3 with c = 1; a = 2 gives c = 0)."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, s, n) for s in SIZES.values()], 1)
    codes[:, 1] = (codes[:, 0] + rng.integers(0, 2, n)) % 4
    codes[(codes[:, 1] == 3) | (codes[:, 0] == 2), 2] = 0
    return Dataset(codes, DOM)


def _rules() -> RuleSet:
    follows = np.zeros((3, 4), bool)
    for a in range(3):
        follows[a, a] = follows[a, (a + 1) % 4] = True
    return RuleSet(
        [
            Rule(("a", "b"), follows, "b-follows-a", "b is a or a + 1"),
            Rule.forbid("b3-c1", DOM, ("b", "c"), [(3, 1)]),
            Rule.conditional("a2-c0", DOM, {"a": 2}, {"c": 0}),
        ]
    )


def _run(name: str, seed: int, **kw):
    mech = registry.create(name, **TINY.get(name, {}))
    data = _data()
    if registry.spec(name).needs_public:
        kw["public"] = data
    return mech.run(data, 1.0, 1e-6, np.random.default_rng(seed), **kw)


# -- the repair ----------------------------------------------------------------------------


@pytest.mark.parametrize("by_table", [True, False])
def test_repair_draws_from_the_exact_conditional_and_touches_only_offending_records(by_table, monkeypatch):
    if not by_table:  # the path for large tables: one attribute at a time, record by record
        monkeypatch.setattr(repair_module, "TABLE_CELLS", 1)
    dom = Domain.from_sizes({"x": 4, "y": 5, "z": 3})
    rules = RuleSet([Rule.order("y>=x", dom, "y", "x", ">="), Rule.forbid("z-y", dom, ("z", "y"), [(2, 4), (2, 3)])])
    rng = np.random.default_rng(0)
    n = 60_000 if by_table else 6_000
    codes = np.stack([rng.integers(0, s, n) for s in dom.shape], 1)
    codes[: n // 2] = [3, 1, 2]  # half the records break y >= x with context z = 2
    data = Dataset(codes, dom)
    w = {"x": np.array([1.0, 2.0, 3.0, 4.0]), "y": np.array([5.0, 1.0, 1.0, 2.0, 3.0]), "z": np.ones(3)}
    fixed, report = repair(data, rules, np.random.default_rng(1), weights=w)
    assert len(fixed) == n and rules.violations(fixed) == {"y>=x": 0, "z-y": 0}
    broken = rules.broken(data)
    before_bad = broken.any(axis=1)
    assert report["repaired"] == before_bad.sum() and report["widened"] == 0
    unchanged = ~before_bad
    assert np.array_equal(fixed.codes[unchanged], data.codes[unchanged])
    only_order = broken[:, 0] & ~broken[:, 1]  # z is in no broken rule of these: kept
    assert only_order.sum() > n // 2 and np.array_equal(fixed.codes[only_order, 2], data.codes[only_order, 2])
    # the redrawn (x, y) of the records (3, 1, 2): P(x, y) ∝ w_x w_y [y >= x] [y not in {3, 4}]
    sub = fixed.codes[: n // 2]
    p = np.outer(w["x"], w["y"]) * (np.arange(5)[None, :] >= np.arange(4)[:, None])
    p[:, 3:] = 0
    p /= p.sum()
    got = np.zeros((4, 5))
    np.add.at(got, (sub[:, 0], sub[:, 1]), 1.0)
    got /= got.sum()
    assert np.all(got[p == 0] == 0)
    np.testing.assert_allclose(got, p, atol=0.01 if by_table else 0.03)


def test_repair_widens_when_the_context_leaves_no_allowed_value():
    dom = Domain.from_sizes({"a": 3, "b": 3, "c": 3})
    rules = RuleSet(
        [
            Rule.order("a!=b", dom, "a", "b", "!="),
            Rule.conditional("c0-a0", dom, {"c": 0}, {"a": 0}),
            Rule.conditional("c0-b0", dom, {"c": 0}, {"b": 0}),
        ]
    )
    data = Dataset(np.array([[0, 0, 0]] * 50 + [[1, 2, 1]] * 50), dom)
    fixed, report = repair(data, rules, np.random.default_rng(0))
    assert rules.violations(fixed) == {n: 0 for n in rules.names}
    assert report["widened"] == 50 and report["repaired"] == 50 and report["resampled"]["c"] == 50
    assert np.all(fixed.codes[:50, 2] != 0) and np.array_equal(fixed.codes[50:], data.codes[50:])


def test_rejection_keeps_draws_that_obey_and_enforce_reports():
    rules = _rules()
    model = GraphicalModel.from_factors(DOM, [], total=100.0)  # uniform
    data = model.synthetic_data(400, rng=np.random.default_rng(0), method="sample")
    broken = rules.broken(data).any(axis=1)
    rng = np.random.default_rng(1)
    out, rep = reject(data, rules, lambda k: model.synthetic_data(k, rng=rng, method="sample"))
    assert rep["rejected"] >= broken.sum() and rep["left"] == int(rules.broken(out).any(axis=1).sum())
    assert np.array_equal(out.codes[~broken], data.codes[~broken])
    # the uniform model conditioned on the rules is uniform on the allowed records
    out, rep = enforce(data, rules, rng, draw=lambda k: model.synthetic_data(k, rng=rng, method="sample"))
    assert rep["violations"] == {n: 0 for n in rules.names} and rep["broken"] == rules.violations(data)
    assert enforce(data, None, rng) == (data, None)


# -- every mechanism -----------------------------------------------------------------------


@pytest.mark.parametrize("name", registry.available())
def test_every_mechanism_returns_records_that_obey_the_rules(name):
    rules = _rules()
    broke = 0
    for seed in range(6):
        res = _run(name, seed, rules=rules)
        assert rules.violations(res.synthetic) == {n: 0 for n in rules.names}, seed
        assert res.extras["rule_violations"] == {n: 0 for n in rules.names}
        assert res.sidecar()["rule_violations"] == res.extras["rule_violations"]
        if TINY.get(name, {}).get("synthetic_records"):
            assert len(res.synthetic) == TINY[name]["synthetic_records"]
        broke += sum(rules.violations(_run(name, seed).synthetic).values())
    assert broke > 0  # without the rules the same runs break them: the test has teeth


@pytest.mark.parametrize("name", registry.available())
def test_runs_with_rules_are_deterministic_and_no_rules_changes_nothing(name):
    a = _run(name, 5, rules=_rules())
    b = _run(name, 5, rules=_rules())
    assert a.synthetic.codes.tobytes() == b.synthetic.codes.tobytes()
    plain = _run(name, 5)
    for same in (_run(name, 5, rules=None), _run(name, 5, rules=RuleSet())):
        assert same.synthetic.codes.tobytes() == plain.synthetic.codes.tobytes()
        assert "rule_violations" not in same.extras and same.ledger == plain.ledger


@pytest.mark.parametrize("name", registry.available())
def test_bad_rules_are_refused_before_any_noise(name):
    mech = registry.create(name, **TINY.get(name, {}))
    data = _data()
    kw = {"public": data} if registry.spec(name).needs_public else {}
    unsat = RuleSet([*_rules(), Rule.forbid("a-not-0-1", DOM, ("a",), [(0,), (1,)]), Rule.forbid("c0", DOM, ("c",), [(0,)]),
                     Rule.forbid("b2", DOM, ("b",), [(2,)])])  # fmt: skip
    alien = RuleSet([Rule(("a", "zz"), np.ones((3, 2), bool), "alien")])
    for bad, match in ((unsat, "cannot all hold"), (alien, "rule 'alien': unknown attribute")):
        with pytest.raises(ValueError, match=match):
            mech.validate(data, 1.0, 1e-6, rules=bad, **kw)
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        ledger = mech.budget(1.0, 1e-6)
        with pytest.raises(ValueError, match=match):
            mech.run(data, rng=rng, budget=ledger, rules=bad, **kw)
        assert rng.bit_generator.state == state and len(ledger.entries) == 0 and ledger.spent == 0
    assert isinstance(ledger, BudgetLedger)


def test_unsatisfiable_message_names_the_contradicting_rules():
    mech = registry.create("mst", **TINY["mst"])
    bad = RuleSet([*_rules(), Rule.forbid("a-not-0-1", DOM, ("a",), [(0,), (1,)]), Rule.forbid("c0", DOM, ("c",), [(0,)]),
                   Rule.forbid("b2", DOM, ("b",), [(2,)])])  # fmt: skip
    with pytest.raises(ValueError) as err:
        mech.validate(_data(), 1.0, 1e-6, rules=bad)
    # a = 2 (a is not 0 or 1) -> c = 0, which c0 forbids; b's rules play no part
    assert all(f"'{n}'" in str(err.value) for n in ("a2-c0", "a-not-0-1", "c0"))
    assert all(f"'{n}'" not in str(err.value) for n in ("b-follows-a", "b3-c1", "b2"))


@pytest.mark.parametrize("name", ["mst", "aim", "independent", "privsyn-pgm", "nist-mst"])
def test_the_saved_sampler_enforces_the_runs_rules(name, tmp_path):
    rules = _rules()
    res = _run(name, 2, rules=rules)
    assert res.sampler.rules == rules
    more = res.sampler.sample(500, np.random.default_rng(9))
    assert rules.violations(more) == {n: 0 for n in rules.names}
    path = SavedModel.from_result(res).save(tmp_path / "m.npz")
    loaded = SavedModel.load(path)
    assert loaded.sampler.rules == rules
    again = loaded.sample(500, np.random.default_rng(9))
    assert again.codes.tobytes() == more.codes.tobytes()


def test_pgm_rules_left_to_generation_are_enforced_by_redrawing(monkeypatch):
    monkeypatch.setattr(estimation_module, "RULE_GROWTH", 1.0)
    monkeypatch.setattr(estimation_module, "RULE_SLACK_CELLS", 0)
    monkeypatch.setattr(baselines, "INDEPENDENT_RULE_SLACK_CELLS", 0)  # its generator's own room for rules
    rules = _rules()
    res = _run("independent", 1, rules=rules)
    rep = res.extras["rules"]
    assert set(rep["model"]["left"]) == set(rules.names) and rep["redrawn"] > 0 and rep["rejected"] == 0
    assert res.extras["rule_violations"] == {n: 0 for n in rules.names}
    assert rules.violations(res.sampler.sample(300, np.random.default_rng(0))) == {n: 0 for n in rules.names}


def test_rule_violations_metric():
    rules = _rules()
    synth = Dataset(np.array([[0, 0, 0], [0, 2, 0], [2, 3, 1], [1, 3, 1]]), DOM)
    assert rule_violations(_data(), synth, rules=rules) == {"b-follows-a": 2, "b3-c1": 2, "a2-c0": 1}
    assert rule_violations(None, synth, rules=None) == {}
    with pytest.raises(ValueError, match="share a domain"):
        rule_violations(Dataset(np.zeros((1, 1), int), Domain.from_sizes({"a": 3})), synth, rules=rules)


def test_gum_matches_targets_projected_onto_the_allowed_cells():
    """GUM with rules fits each target emptied of its forbidden cells (and rescaled): its
    records land on a forbidden cell far less often before the repair, and never after."""
    rules = _rules()
    data = _data(4000, seed=3)
    rng = np.random.default_rng(0)
    targets = []
    for c in [("a", "b"), ("b", "c"), ("a", "c")]:
        t = data.marginal(c).astype(float)
        targets.append((c, t + np.abs(rng.normal(0, 40.0, t.shape))))  # noise puts mass on forbidden cells
    plain = GUM(max_rounds=30).synthesize(DOM, targets, 4000, np.random.default_rng(1))
    ruled = GUM(max_rounds=30).synthesize(DOM, targets, 4000, np.random.default_rng(1), rules=rules)
    before = sum(ruled.rules["broken"].values())
    assert before * 5 < sum(rules.violations(plain.synthetic).values())
    assert rules.violations(ruled.synthetic) == {n: 0 for n in rules.names} and len(ruled.synthetic) == 4000
    for c, t in targets:  # the projection keeps each target's total
        assert rules.project(t, c, DOM).sum() == pytest.approx(t.sum())
        mask = rules.mask(c, DOM)
        if mask is not None:
            assert np.all(rules.project(t, c, DOM)[~mask] == 0)


def test_adaptive_grid_refuses_rules_over_its_person_column():
    mech = registry.create("adagrid", person_column="c", iters=5, synthetic_records=40)
    with pytest.raises(ValueError, match=r"rules \['b3-c1', 'a2-c0'\] mention person_column='c'"):
        mech.validate(_data(), 1.0, 1e-6, rules=_rules())
    ok = RuleSet([_rules()["b-follows-a"]])
    res = mech.run(_data(), 1.0, 1e-6, np.random.default_rng(0), rules=ok)
    assert res.extras["rule_violations"] == {"b-follows-a": 0} and "c" not in res.synthetic.domain
