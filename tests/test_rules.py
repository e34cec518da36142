"""Rules over an encoded domain (margsynth.rules):

* each compiler (forbidden cells, functional dependency, order, conditional) gives the
  table its definition says, checked cell by cell;
* the satisfiability check agrees with brute force over the whole domain on random rule
  sets, names a minimal unsatisfiable subset, and runs on domains far too large to enumerate;
* violations are the per-record count a loop gives; masks, coarsening and JSON round trips;
* bad input fails with a ValueError naming the rule.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from margsynth import Dataset, Domain
from margsynth.mechanisms.queries import MarginalQueries
from margsynth.rules import Refinement, Rule, RuleSet, as_rules

DOM = Domain.from_sizes({"age": 5, "edu": 4, "inc": 3, "kids": 4, "size": 5})


def _records(dom: Domain, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset(np.stack([rng.integers(0, s, n) for s in dom.shape], axis=1), dom)


def _obeys(rule: Rule, record: dict) -> bool:
    return bool(rule.allowed[tuple(record[a] for a in rule.attrs)])


def _brute_satisfiable(rules, dom: Domain) -> bool:
    attrs = list(dict.fromkeys(a for r in rules for a in r.attrs))
    for values in itertools.product(*(range(dom[a].size) for a in attrs)):
        rec = dict(zip(attrs, values))
        if all(_obeys(r, rec) for r in rules):
            return True
    return False


def test_compilers_give_the_tables_their_definitions_say():
    f = Rule.forbid("child-phd", DOM, ("age", "edu"), [(0, 3), (1, 3), (0, 2)])
    assert f.forbidden_cells == 3 and not f.allowed[0, 3] and f.allowed[2, 3]
    fd = Rule.functional("kids->size", DOM, "kids", "size", {0: 1, 1: [2, 3]})
    for k, s in itertools.product(range(4), range(5)):
        want = {0: s == 1, 1: s in (2, 3)}.get(k, True)
        assert fd.allowed[k, s] == want
    full = Rule.functional("edu->inc", DOM, "edu", "inc", [0, 1, 2, 2])
    assert full.allowed.sum(axis=1).tolist() == [1, 1, 1, 1] and full.allowed[3, 2]
    for rel, op in [(">", int.__gt__), (">=", int.__ge__), ("<", int.__lt__), ("!=", int.__ne__)]:
        o = Rule.order(f"size{rel}kids", DOM, "size", "kids", rel)
        for s, k in itertools.product(range(5), range(4)):
            assert o.allowed[s, k] == op(s, k)
    c = Rule.conditional("young", DOM, {"age": [0, 1]}, {"edu": range(2), "inc": 0})
    assert c.attrs == ("age", "edu", "inc")
    for a, e, i in itertools.product(range(5), range(4), range(3)):
        assert c.allowed[a, e, i] == (a not in (0, 1) or (e < 2 and i == 0))


@pytest.mark.parametrize("seed", range(16))
def test_satisfiability_agrees_with_brute_force(seed):
    rng = np.random.default_rng(seed)
    dom = Domain.from_sizes({f"x{i}": int(rng.integers(2, 4)) for i in range(6)})
    rules = []
    for k in range(int(rng.integers(3, 9))):
        attrs = tuple(rng.choice(dom.names, size=int(rng.integers(1, 4)), replace=False))
        allowed = rng.random(dom.project(attrs).shape) < rng.uniform(0.2, 0.7)
        if not allowed.any():
            allowed.flat[0] = True
        rules.append(Rule(attrs, allowed, f"r{k}"))
    rs = RuleSet(rules)
    if _brute_satisfiable(rules, dom):
        assert rs.check(dom) is rs
        return
    with pytest.raises(ValueError, match="cannot all hold|forbids every") as err:
        rs.check(dom)
    named = [r for r in rules if repr(r.name) in str(err.value)]
    assert named and not _brute_satisfiable(named, dom)
    for r in named:  # minimal: each named rule is needed for the contradiction
        rest = [q for q in named if q is not r]
        assert not rest or _brute_satisfiable(rest, dom)


def test_unsatisfiable_set_names_only_the_contradicting_rules():
    rs = RuleSet(
        [
            Rule.order("size>kids", DOM, "size", "kids", ">"),
            Rule.functional("age->edu", DOM, "age", "edu", [0, 0, 1, 2, 3]),
            Rule.forbid("kids-not-0", DOM, ("kids",), [(0,)]),
            Rule.conditional("small", DOM, {"kids": [1, 2, 3]}, {"size": [0, 1]}),
        ]
    )
    with pytest.raises(ValueError) as err:
        rs.check(DOM)
    msg = str(err.value)
    assert "'size>kids'" in msg and "'kids-not-0'" in msg and "'small'" in msg and "age->edu" not in msg
    with pytest.raises(ValueError, match="'nothing' forbids every combination"):
        RuleSet([Rule(("inc",), np.zeros(3, bool), "nothing")]).check(DOM)


def test_check_is_exact_on_a_domain_too_large_to_enumerate():
    """40 attributes of 20 values (20^40 records): a chain of order rules x_i < x_{i+1} needs
    19 steps up, so it holds for 20 attributes and fails for 21; the check decides both."""
    dom = Domain.from_sizes({f"x{i}": 20 for i in range(40)})
    chain = [Rule.order(f"x{i}<x{i + 1}", dom, f"x{i}", f"x{i + 1}", "<") for i in range(39)]
    RuleSet(chain[:19]).check(dom)
    with pytest.raises(ValueError, match="cannot all hold") as err:
        RuleSet(chain[:20]).check(dom)
    assert all(f"'x{i}<x{i + 1}'" in str(err.value) for i in range(20))


def test_violations_mask_and_broken_agree_with_a_loop():
    data = _records(DOM, 300, 0)
    rs = RuleSet(
        [
            Rule.order("size>=kids", DOM, "size", "kids", ">="),
            Rule.conditional("young-no-income", DOM, {"age": 0}, {"inc": 0}),
            Rule.forbid("edu3-kids3", DOM, ("kids", "edu"), [(3, 3)]),
        ]
    )
    broken = rs.broken(data)
    for i, row in enumerate(data.codes):
        rec = dict(zip(DOM.names, map(int, row)))
        assert broken[i].tolist() == [not _obeys(r, rec) for r in rs]
    assert rs.violations(data) == {r.name: int(broken[:, j].sum()) for j, r in enumerate(rs)}
    attrs = ("kids", "age", "size", "edu", "inc")
    mask = rs.mask(attrs, DOM)
    for cell in itertools.product(*(range(DOM[a].size) for a in attrs)):
        rec = dict(zip(attrs, cell))
        assert mask[cell] == all(_obeys(r, rec) for r in rs)
    assert rs.mask(("age", "edu"), DOM) is None
    assert rs.within(("size", "kids", "edu")).names == ("size>=kids", "edu3-kids3")


@pytest.mark.parametrize("seed", range(5))
def test_row_check_agrees_with_a_loop_over_the_rules(seed):
    """The one-product row test (Private-GSD's lawful search) against each rule's table, on
    random rules of one to three attributes, out of domain order."""
    rng = np.random.default_rng(seed)
    rules = []
    for j in range(6):
        attrs = tuple(rng.choice(DOM.names, size=int(rng.integers(1, 4)), replace=False))
        allowed = rng.random(tuple(DOM[a].size for a in attrs)) < 0.8
        allowed.flat[0] = True  # the set stays satisfiable at the first cell of each table
        rules.append(Rule(attrs, allowed, f"r{j}"))
    rs = RuleSet(rules)
    data = _records(DOM, 400, seed)
    obeys = rs.row_check(DOM)(data.codes)
    for i, row in enumerate(data.codes):
        rec = dict(zip(DOM.names, map(int, row)))
        assert obeys[i] == all(_obeys(r, rec) for r in rs)
    assert (obeys == ~rs.broken(data).any(axis=1)).all() and (~obeys).any() and obeys.any()
    assert RuleSet().row_check(DOM)(data.codes).all()


def test_coarsen_allows_a_merged_cell_when_some_original_cell_is_allowed():
    rng = np.random.default_rng(3)
    r = Rule(("age", "edu"), rng.random((5, 4)) < 0.4, "random")
    maps = {"age": np.array([0, 1, 1, 2, 2])}
    c = r.coarsen(maps, {"age": 3})
    assert c.shape == (3, 4)
    for g, e in itertools.product(range(3), range(4)):
        assert c.allowed[g, e] == any(r.allowed[a, e] for a in range(5) if maps["age"][a] == g)


def test_json_round_trip_keeps_every_rule():
    rs = RuleSet(
        [
            Rule.functional("kids->size", DOM, "kids", "size", [0, 1, 2, 3], text="size is kids"),  # mostly forbidden
            Rule.forbid("one", DOM, ("age", "inc"), [(0, 2)]),  # mostly allowed
        ]
    )
    specs = json.loads(rs.to_json())
    assert "allowed" in specs[0] and "forbidden" in specs[1]
    back = RuleSet.from_json(rs.to_json())
    assert back == rs and back["kids->size"].text == "size is kids"
    assert RuleSet.from_list(rs.to_list()) == rs


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Rule(("age",), np.ones(5, dtype=int), "ints"), "boolean array"),
        (lambda: Rule(("age", "edu"), np.ones(5, bool), "axes"), "1 axes for the 2 attributes"),
        (lambda: Rule(("age", "age"), np.ones((5, 5), bool), "rep"), "repeat"),
        (lambda: Rule((), np.ones(()), "none"), "non-empty tuple"),
        (lambda: Rule(("age",), np.ones(5, bool), ""), "name"),
        (lambda: RuleSet([Rule(("age",), np.ones(5, bool), "x")] * 2), "distinct"),
        (lambda: Rule.forbid("bad-code", DOM, ("age",), [(7,)]), "bad-code.*7 is not a code 0..4"),
        (lambda: Rule.order("rel", DOM, "age", "edu", "<>"), "relation"),
        (lambda: Rule.conditional("both", DOM, {"age": 0}, {"age": 1}), "share"),
        (lambda: Rule.functional("len", DOM, "age", "edu", [0, 1]), "mapping lists 2 values"),
        (lambda: Rule.from_dict({"name": "j", "attrs": ["age"], "shape": [5]}), "exactly one of"),
        (lambda: Rule.from_dict({"name": "j", "attrs": ["age"], "shape": [5], "allowed": [[9]]}), "outside"),
        (lambda: RuleSet.from_json("{"), "not valid JSON"),
        (lambda: as_rules("age<edu"), "rules must be a RuleSet"),
    ],
)
def test_bad_rules_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_validation_against_a_domain_names_the_rule():
    other = Domain.from_sizes({"age": 6, "edu": 4})
    r = Rule.order("edu<=age", DOM, "edu", "age", "<=")
    with pytest.raises(ValueError, match="rule 'edu<=age'.*shape"):
        RuleSet([r]).check(other)
    with pytest.raises(ValueError, match="rule 'edu<=age'.*unknown attribute"):
        RuleSet([r]).check(Domain.from_sizes({"age": 5}))
    assert as_rules(None) is None and as_rules([]) is None and as_rules([r], DOM) == RuleSet([r])


def _refinement() -> Refinement:
    """``age`` 3 coarse bins split into 5 (bin 0 in two, bin 2 in two), ``inc`` 2 into 3, ``sex`` unsplit."""
    fine = Domain.from_sizes({"age": 5, "sex": 2, "inc": 3})
    return Refinement(fine, {"age": np.array([0, 0, 1, 2, 2]), "inc": np.array([0, 1, 1])},
                      {"age": np.array([0.25, 0.75, 1.0, 0.5, 0.5]), "inc": np.array([1.0, 0.1, 0.9])})  # fmt: skip


def test_refinement_coarsens_codes_and_keeps_the_rest():
    ref = _refinement()
    assert ref.coarse.shape == (3, 2, 2) and ref.coarse.names == ref.fine.names
    data = Dataset(np.array([[0, 1, 2], [1, 0, 0], [4, 1, 1], [2, 0, 2]]), ref.fine)
    assert ref.coarsen(data).codes.tolist() == [[0, 1, 1], [0, 0, 0], [2, 1, 1], [1, 0, 1]]


@pytest.mark.parametrize("seed", range(3))
def test_refinement_expand_draws_the_coarse_records_then_the_parts_by_share(seed):
    """Expanded rows sum back to the coarse rows and split each coarse value by its shares; the
    same draws (same rng) from the expanded rows give, coarsened, exactly the coarse draws
    (inverse-CDF draws: the fine values of a coarse value are adjacent), and within a coarse
    value the parts come out in their shares."""
    ref = _refinement()
    rng = np.random.default_rng(seed)
    blocks = [rng.dirichlet(np.ones(s), size=40) for s in ref.coarse.shape]
    P = np.concatenate(blocks, axis=1)
    F = ref.expand(P)
    off = np.concatenate([[0], np.cumsum(ref.fine.shape)])
    for j, a in enumerate(ref.fine.names):
        fb = F[:, off[j] : off[j + 1]]
        if a in ref.parent:
            back = np.stack([fb[:, ref.parent[a] == k].sum(1) for k in range(ref.coarse[a].size)], axis=1)
            np.testing.assert_allclose(back, blocks[j])
            np.testing.assert_allclose(fb, blocks[j][:, ref.parent[a]] * ref.share[a])
        else:
            np.testing.assert_array_equal(fb, blocks[j])
    n = 20_000
    coarse = MarginalQueries(ref.coarse, (("age",),)).sample_records(P, n, np.random.default_rng(seed))
    fine = MarginalQueries(ref.fine, (("age",),)).sample_records(F, n, np.random.default_rng(seed))
    assert (ref.coarsen(fine).codes == coarse.codes).mean() > 0.999  # equal but for float ties at a boundary
    age = fine.codes[:, 0]
    inside = age[np.isin(age, [0, 1])]
    assert abs((inside == 0).mean() - 0.25) < 4 * np.sqrt(0.25 * 0.75 / inside.size)


@pytest.mark.parametrize(
    "parent, share, match",
    [
        ({"age": np.array([0, 0, 2, 2, 2])}, {"age": np.array([0.5, 0.5, 1 / 3, 1 / 3, 1 / 3])}, "cover"),
        ({"age": np.array([0, 0, 1, 2, 2])}, {"age": np.array([0.5, 0.6, 1.0, 0.5, 0.5])}, "sum to 1"),
        ({"age": np.array([0, 0, 1, 2, 2])}, {"age": np.array([1.5, -0.5, 1.0, 0.5, 0.5])}, "non-negative"),
        ({"age": np.array([0, 0, 1])}, {"age": np.array([0.5, 0.5, 1.0])}, "arrays"),
        ({"zip": np.array([0])}, {"zip": np.array([1.0])}, "not in the fine domain"),
        ({"age": np.array([0, 0, 1, 2, 2])}, {}, "different attributes"),
    ],
)
def test_bad_refinements_are_refused(parent, share, match):
    with pytest.raises(ValueError, match=match):
        Refinement(Domain.from_sizes({"age": 5, "sex": 2}), parent, share)


def test_a_refinement_of_another_domain_is_refused_before_any_charge():
    """The sampler refuses a refinement whose coarse domain is not its workload's; GEM refuses
    one whose fine domain is not the data's, before any charge or draw."""
    from margsynth.mechanisms.gem import GEM
    from margsynth.privacy import BudgetLedger

    ref = _refinement()
    P = np.full((4, sum(ref.fine.shape)), 0.5)
    with pytest.raises(ValueError, match="coarse domain"):
        MarginalQueries(ref.fine, (("age",),)).sample_obeying(P, 10, np.random.default_rng(0), None, refinement=ref)
    data = Dataset(np.zeros((30, 3), dtype=np.int64), ref.coarse)  # over the coarse domain, not the fine one
    for mech in (GEM(rounds=1, batch_size=4, embedding_dim=2, hidden=(4,), progress=False),):
        ledger, rng = BudgetLedger.from_dp(1.0, 1e-6), np.random.default_rng(0)
        state = rng.bit_generator.state
        with pytest.raises(ValueError, match="refinement must be a Refinement"):
            mech.run(data, rng, budget=ledger, refinement=ref)
        assert ledger.spent == 0 and rng.bit_generator.state == state
