"""Rules the model leaves out, enforced by redrawing the attribute each broken rule determines
(margsynth.inference.repair.redraw):

* a graphical model's full conditional (``GraphicalModel.log_conditional``) equals the
  brute-force joint's conditional, structural zeros included;
* ``dependents`` picks the attribute fewest others share a rule with (ties: the later);
* ``redraw`` changes only offending records and, in them, only the dependent attributes when
  that suffices; the redrawn values follow the conditional restricted to the allowed values
  (checked against the formula on many records); a record the dependent alone cannot fix
  is widened; same rng, same bytes;
* ``Compression.log_reversal`` lets MST's reversal repair move merged values within their
  merged set only (the compressed records are unchanged);
* with the PGM generator, the rules left out of the model keep the conditioning attribute's
  marginal exactly (rejection from the model does not), and every record obeys every rule
  over many seeds;
* Private-PGM's placement takes the cheap rule sets first;
* ``rebalance`` moves the redrawn attribute's one-way counts back to the generated ones by
  changing only records the redraw left alone, largest gain first, keeping them lawful.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from margsynth import Dataset, Domain
from margsynth.inference.gum import GUM
from margsynth.inference.pgm import GraphicalModel, estimation
from margsynth.inference.pgm.factor import Factor
from margsynth.inference.pgm.junction_tree import build_junction_tree
from margsynth.inference.pgm.measurement import Measurement
from margsynth.inference.repair import dependents, enforce, marginals_log_conditional, rebalance, redraw, reject
from margsynth.mechanisms import baselines
from margsynth.mechanisms.compression import Compression
from margsynth.mechanisms.queries import MarginalQueries
from margsynth.rules import Rule, RuleSet
from margsynth.tabular.constraints import Condition, SchemaRule
from tests.test_rules_generation import _rules, _run


def _joint(model: GraphicalModel) -> np.ndarray:
    """The model's joint over the whole domain, by brute force (axes in domain order)."""
    dom = model.domain
    log = np.zeros(dom.shape)
    for c, th in zip(model.tree.cliques, model.theta):
        log = log + th.reshape([dom[a].size if a in c else 1 for a in dom.names])
    p = np.exp(log - log[np.isfinite(log)].max())
    return p / p.sum()


def _model(seed: int, zeros: bool) -> GraphicalModel:
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    rng = np.random.default_rng(seed)
    factors = [Factor(("a", "b"), rng.normal(size=(3, 4))), Factor(("b", "c"), rng.normal(size=(4, 2))),
               Factor(("c", "d"), rng.normal(size=(2, 3)))]  # fmt: skip
    if zeros:
        t = rng.normal(size=(3, 4))
        t[0, 1] = t[2, 3] = -np.inf
        factors[0] = Factor(("a", "b"), t)
    return GraphicalModel.from_factors(dom, factors, total=100.0)


def _assert_is_conditional(logw: np.ndarray, records: np.ndarray, joint: np.ndarray, dom, attrs, zeros=False):
    """``logw`` (one row per record of ``records``) is, record by record, the conditional of
    ``attrs`` given the rest under ``joint`` (axes in domain order), by brute force;
    ``zeros``: and ``-inf`` exactly where the joint is 0."""
    assert logw.shape == (len(records), *(dom[a].size for a in attrs))
    idx = [dom.index(a) for a in attrs]
    for rec, lw in zip(records, logw):
        # the joint at the record with ``attrs`` free, axes in ``attrs`` order
        key = tuple(slice(None) if j in idx else int(v) for j, v in enumerate(rec))
        want = np.moveaxis(joint[key], list(np.argsort(np.argsort(idx))), list(range(len(idx))))
        if not want.sum() > 0:  # the rest alone is impossible: nothing to compare
            continue
        got = np.exp(lw - lw.max())
        np.testing.assert_allclose(got / got.sum(), want / want.sum(), rtol=1e-9, atol=1e-15)
        if zeros:
            assert np.array_equal(np.isneginf(lw), want == 0)


@pytest.mark.parametrize("zeros", [False, True])
@pytest.mark.parametrize("attrs", [("b",), ("a",), ("d", "b"), ("a", "c")])
def test_log_conditional_is_the_brute_force_conditional(attrs, zeros):
    model = _model(3, zeros)
    dom = model.domain
    records = np.array(list(itertools.product(*(range(s) for s in dom.shape))))
    _assert_is_conditional(model.log_conditional(attrs, records), records, _joint(model), dom, attrs, zeros=True)


def test_dependents_are_the_rules_last_attributes_the_consequences():
    dom = Domain.from_sizes({"age": 5, "edu": 3, "msp": 3, "job": 4, "industry": 6})
    rules = RuleSet([
        Rule.conditional("edu under 1", dom, {"age": [0]}, {"edu": [0]}),
        Rule.conditional("msp under 2", dom, {"age": [0, 1]}, {"msp": [0]}),
        Rule.functional("industry -> job", dom, "industry", "job", [0, 1, 1, 2, 3, 3]),
        Rule.order("msp >= edu", dom, "msp", "edu", ">="),
        Rule.forbid("edu2-job0", dom, ("edu", "job"), [(2, 0)]),
    ])  # fmt: skip
    assert dependents(rules) == {"edu under 1": "edu", "msp under 2": "msp", "industry -> job": "job",
                                 "msp >= edu": "edu", "edu2-job0": "job"}  # fmt: skip
    # a schema rule lists its premise's columns first, so it compiles with its consequence last
    rule = SchemaRule("EDU null under 3", "if", premise=(Condition("AGEP", ranges=(("<", 3.0),)),),
                      consequence=(Condition("EDU", null=True),))  # fmt: skip
    assert rule.columns == ("AGEP", "EDU")


def _cond(weights: dict[str, np.ndarray]):
    """A conditional that ignores the record: independent log weights per attribute."""

    def conditional(attrs, codes):
        out = np.zeros((len(codes), *(weights[a].size for a in attrs)))
        for i, a in enumerate(attrs):
            out += np.log(weights[a]).reshape([1] + [weights[a].size if j == i else 1 for j in range(len(attrs))])
        return out

    return conditional


def test_redraw_changes_only_the_dependent_and_draws_from_the_restricted_conditional():
    dom = Domain.from_sizes({"age": 4, "edu": 5, "z": 3})
    rules = RuleSet([
        Rule.conditional("no school under 1", dom, {"age": [0]}, {"edu": [0]}),
        Rule.conditional("school from 1", dom, {"age": [1, 2, 3]}, {"edu": [1, 2, 3, 4]}),
        Rule.forbid("z2-edu4", dom, ("z", "edu"), [(2, 4)]),
    ])  # fmt: skip
    rng = np.random.default_rng(0)
    n = 40_000
    codes = np.stack([rng.integers(0, s, n) for s in dom.shape], 1)
    codes[: n // 2] = [2, 0, 2]  # half break "school from 1"; their allowed edu: 1, 2, 3 (z = 2 forbids 4)
    data = Dataset(codes, dom)
    w = {"age": np.ones(4), "edu": np.array([4.0, 1.0, 2.0, 3.0, 5.0]), "z": np.ones(3)}
    out, rep = redraw(data, rules, np.random.default_rng(1), _cond(w))
    assert rules.violations(out) == {n: 0 for n in rules.names} and rep["left"] == 0
    bad = rules.broken(data).any(axis=1)
    assert rep["redrawn"] == bad.sum() and rep["resampled"] == {"edu": int(bad.sum())}
    assert np.array_equal(out.codes[~bad], data.codes[~bad])
    assert np.array_equal(out.codes[:, [0, 2]], data.codes[:, [0, 2]])  # age and z never move
    got = np.bincount(out.codes[: n // 2, 1], minlength=5) / (n // 2)
    want = np.array([0.0, 1.0, 2.0, 3.0, 0.0]) / 6.0
    assert np.all(got[want == 0] == 0)
    np.testing.assert_allclose(got, want, atol=0.01)
    again, _ = redraw(data, rules, np.random.default_rng(1), _cond(w))
    assert again.codes.tobytes() == out.codes.tobytes()


def test_redraw_widens_when_the_dependent_alone_has_no_allowed_value():
    # under 1: job null (code 0); a null job goes with a null industry and a set job with a set one
    dom = Domain.from_sizes({"age": 3, "job": 3, "industry": 4, "other": 2})
    rules = RuleSet([
        Rule.conditional("no job under 1", dom, {"age": [0]}, {"job": [0]}),
        Rule.conditional("null together", dom, {"job": [0]}, {"industry": [0]}),
        Rule.conditional("set together", dom, {"job": [1, 2]}, {"industry": [1, 2, 3]}),
        Rule.conditional("industry 3 is job 2", dom, {"industry": [3]}, {"job": [2]}),
    ])  # fmt: skip
    assert dependents(rules)["no job under 1"] == "job"
    data = Dataset(np.array([[0, 2, 3, 1]] * 30 + [[1, 2, 3, 0]] * 30), dom)
    w = {a: np.ones(s) for a, s in zip(dom.names, dom.shape)}
    out, rep = redraw(data, rules, np.random.default_rng(0), _cond(w))
    assert rules.violations(out) == {n: 0 for n in rules.names} and rep["left"] == 0 and rep["redrawn"] == 30
    assert np.array_equal(out.codes[:30], np.array([[0, 0, 0, 1]] * 30))  # job and industry, together
    assert np.array_equal(out.codes[30:], data.codes[30:])


def test_enforce_with_a_conditional_does_not_reject_and_reports():
    dom = Domain.from_sizes({"a": 3, "b": 3})
    rules = RuleSet([Rule.order("a>=b", dom, "a", "b", ">=")])
    data = Dataset(np.array([[0, 2], [2, 1], [1, 2]]), dom)
    w = {"a": np.ones(3), "b": np.ones(3)}
    out, rep = enforce(data, rules, np.random.default_rng(0), conditional=_cond(w),
                       draw=lambda k: pytest.fail("no rejection with a conditional"))  # fmt: skip
    assert rep["redrawn"] == 2 and rep["rejected"] == 0 and rep["repaired"] == 0 and rep["violations"] == {"a>=b": 0}
    assert np.array_equal(out.codes[:, 0], data.codes[:, 0])  # b (the later attribute) is the one redrawn


def test_log_reversal_moves_merged_values_within_their_merged_set():
    dom = Domain.from_sizes({"x": 6, "y": 4})
    comp = Compression(dom, {"x": np.array([1, 1, 0, 0, 0, 1], bool), "y": np.ones(4, bool)})  # x 2, 3, 4 merged
    rules = RuleSet(
        [Rule.forbid("x23-y0", dom, ("x", "y"), [(2, 0), (3, 0)]), Rule.forbid("x0-y1", dom, ("x", "y"), [(0, 1)])]
    )
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 4, 3000), rng.integers(0, 4, 3000)], 1)
    compressed = Dataset(codes[~((codes[:, 0] == 0) & (codes[:, 1] == 1))], comp.compressed)  # obeys x0-y1
    back = comp.reverse(compressed, rng)
    before = rules.broken(back)
    assert before[:, 0].sum() > 100 and before[:, 1].sum() == 0
    out, rep = enforce(back, rules, np.random.default_rng(1), conditional=comp.log_reversal)
    assert rep["violations"] == {"x23-y0": 0, "x0-y1": 0} and rep["repaired"] == 0
    assert rep["redrawn"] == before[:, 0].sum()
    assert np.array_equal(comp.compress(out).codes, compressed.codes)  # the compressed records are unchanged
    assert set(np.unique(out.codes[before[:, 0], 0])) == {4}  # the one merged value y = 0 allows
    lw = comp.log_reversal(("x",), np.array([[0, 0], [3, 0]]))
    assert np.array_equal(np.isfinite(lw), np.array([[1, 0, 0, 0, 0, 0], [0, 0, 1, 1, 1, 0]], bool))


def test_pgm_redraw_keeps_the_conditioning_marginal_where_rejection_does_not():
    """A model that keeps age and education independent, and the rule "no schooling exactly
    under 1": redrawing education keeps the model's age marginal exactly; rejection (the model
    conditioned on the rule) moves it, thinning out the rare young records."""
    dom = Domain.from_sizes({"age": 4, "edu": 3})
    age = np.array([0.1, 0.3, 0.3, 0.3])
    edu = np.array([0.1, 0.5, 0.4])
    model = GraphicalModel.from_factors(dom, [Factor(("age",), np.log(age)), Factor(("edu",), np.log(edu))], 1.0)
    rules = RuleSet([
        Rule.conditional("none under 1", dom, {"age": [0]}, {"edu": [0]}),
        Rule.conditional("some from 1", dom, {"age": [1, 2, 3]}, {"edu": [1, 2]}),
    ])  # fmt: skip
    n = 50_000
    rng = np.random.default_rng(0)
    data = model.synthetic_data(n, rng=rng)
    out, rep = enforce(data, rules, rng, conditional=model.log_conditional)
    assert rep["violations"] == {"none under 1": 0, "some from 1": 0}
    assert np.array_equal(out.codes[:, 0], data.codes[:, 0])
    # edu: 0 exactly for the young; the others' 0 redrawn over 1, 2 in the ratio 5 : 4
    np.testing.assert_allclose(np.bincount(out.codes[:, 1], minlength=3) / n, [0.1, 0.5, 0.4], atol=0.01)
    rej, _ = reject(data, rules, lambda k: model.synthetic_data(k, rng=rng, method="sample"), max_rounds=100)
    young = np.mean(rej.codes[:, 0] == 0)
    assert young < 0.03  # 0.1 * 0.1 / (0.1 * 0.1 + 0.9 * 0.9) ≈ 0.012, not 0.1


@pytest.mark.parametrize("seed", range(6))
def test_pgm_generation_never_breaks_a_rule_left_out_of_the_model(seed, monkeypatch):
    monkeypatch.setattr(estimation, "RULE_GROWTH", 1.0)  # the placement's limit, lowered: the rules are left out
    monkeypatch.setattr(estimation, "RULE_SLACK_CELLS", 0)
    monkeypatch.setattr(baselines, "INDEPENDENT_RULE_SLACK_CELLS", 0)  # Independent's generator: its own room
    rules = _rules()
    for name in ("mst", "independent"):
        res = _run(name, seed, rules=rules)
        assert rules.violations(res.synthetic) == {n: 0 for n in rules.names}
        assert res.extras["rules"]["rejected"] == 0
        assert name == "mst" or res.extras["rules"]["model"]["left"]  # (MST's tree holds every pair of 3 columns)
        assert _run(name, seed, rules=rules).synthetic.codes.tobytes() == res.synthetic.codes.tobytes()


def test_placement_takes_the_cheap_rule_sets_first_and_rechecks_split_pairs(monkeypatch):
    """A chain a - b - c - d - e measured pairwise: the dear rule (a, e: a clique over the whole
    chain's span) is listed first, the cheap one (a, c) second; a limit that admits one takes
    the cheap one; the cost of each is the tree's cells with that set alone added."""
    dom = Domain.from_sizes({"a": 4, "b": 4, "c": 4, "d": 4, "e": 4})
    pairs = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]
    ms = [Measurement(c, None, np.full(16, 10.0), 1.0) for c in pairs]
    dear = Rule.forbid("a0-e0", dom, ("a", "e"), [(0, 0)])
    cheap = Rule.forbid("a0-c0", dom, ("a", "c"), [(0, 0)])
    base = build_junction_tree(dom, pairs).cells
    cost = {r.name: build_junction_tree(dom, [*pairs, r.attrs]).cells for r in (dear, cheap)}
    assert cost["a0-c0"] < cost["a0-e0"]
    monkeypatch.setattr(estimation, "RULE_GROWTH", 1.0)
    monkeypatch.setattr(estimation, "RULE_SLACK_CELLS", cost["a0-c0"] - base)  # room for the cheap set only
    model = estimation.estimate(dom, ms, iters=5, total=160.0, rules=RuleSet([dear, cheap]))
    assert model.stats["rules"]["added_cliques"] == [["a", "c"]] and model.stats["rules"]["left"] == ["a0-e0"]
    monkeypatch.setattr(estimation, "RULE_SLACK_CELLS", 10**6)  # room for both
    model = estimation.estimate(dom, ms, iters=5, total=160.0, rules=RuleSet([dear, cheap]))
    assert model.stats["rules"]["left"] == [] and model.stats["rules"]["added_cliques"][0] == ["a", "c"]


@pytest.mark.parametrize("attrs", [("a",), ("b",), ("a", "b"), ("c", "a")])
def test_targets_conditional_is_the_conditional_of_the_decomposable_model(attrs):
    """GUM's redraw conditional: with exact marginals of a distribution that factorises as
    p(a) p(b | a) p(c | a) (cliques ab and ac meeting in a), the conditional built from the
    targets ab, ac and the one-way d is the brute-force conditional of that distribution."""
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    rng = np.random.default_rng(5)
    pa = rng.dirichlet(np.ones(3))
    pb_a = rng.dirichlet(np.ones(4), size=3)
    pc_a = rng.dirichlet(np.ones(2), size=3)
    pd = rng.dirichlet(np.ones(3))
    joint = pa[:, None, None, None] * pb_a[:, :, None, None] * pc_a[:, None, :, None] * pd[None, None, None, :]
    n = 1000.0
    targets = [(("a", "b"), n * joint.sum(axis=(2, 3))), (("a", "c"), n * joint.sum(axis=(1, 3))),
               (("d",), n * joint.sum(axis=(0, 1, 2)))]  # fmt: skip
    records = np.array(list(itertools.product(*(range(s) for s in dom.shape))))
    _assert_is_conditional(marginals_log_conditional(dom, targets)(attrs, records), records, joint, dom, attrs)


def test_gum_with_rules_redraws_from_the_targets_conditional():
    """GUM with a rule no target holds ("no schooling exactly under 1" over age and edu, the
    targets age-x and x-edu): every record obeys it, the records GUM broke it in get their
    education redrawn (not repaired from one-way weights), and age keeps GUM's values."""
    dom = Domain.from_sizes({"age": 4, "x": 3, "edu": 3})
    rng = np.random.default_rng(1)
    age_x = rng.dirichlet(np.ones(12)).reshape(4, 3) * 5000
    x_edu = np.outer(age_x.sum(axis=0), [0.2, 0.5, 0.3])
    rules = RuleSet([
        Rule.conditional("none under 1", dom, {"age": [0]}, {"edu": [0]}),
        Rule.conditional("some from 1", dom, {"age": [1, 2, 3]}, {"edu": [1, 2]}),
    ])  # fmt: skip
    gum = GUM(lawful=False)  # GUM as published, its records fixed at the end
    plain = gum.synthesize(dom, [(("age", "x"), age_x), (("x", "edu"), x_edu)], 5000, np.random.default_rng(2))
    res = gum.synthesize(dom, [(("age", "x"), age_x), (("x", "edu"), x_edu)], 5000, np.random.default_rng(2),
                         rules=rules)  # fmt: skip
    assert res.rules["violations"] == {"none under 1": 0, "some from 1": 0}
    assert res.rules["redrawn"] > 0 and res.rules["repaired"] == 0
    assert np.array_equal(res.synthetic.codes[:, 0], plain.synthetic.codes[:, 0])
    assert "lawful" not in res.rules


def _lawful_setup():
    dom = Domain.from_sizes({"age": 4, "x": 3, "edu": 3})
    rng = np.random.default_rng(1)
    joint = rng.dirichlet(np.ones(36)).reshape(4, 3, 3)
    joint[0, :, 1:] = 0  # the rules hold in the data: no schooling exactly under 1
    joint[1:, :, 0] = 0
    joint *= 5000 / joint.sum()
    rules = RuleSet([
        Rule.conditional("none under 1", dom, {"age": [0]}, {"edu": [0]}),
        Rule.conditional("some from 1", dom, {"age": [1, 2, 3]}, {"edu": [1, 2]}),
    ])  # fmt: skip
    targets = [(("age", "x"), joint.sum(axis=2)), (("x", "edu"), joint.sum(axis=0))]
    return dom, joint, rules, targets


def test_set_undoes_exactly_the_changes_the_row_test_rejects():
    """Lawful GUM's move: the marginal's attributes of the moved records take their new values,
    and a record the row test rejects afterwards gets its old values back (brute force)."""
    dom, _, rules, _ = _lawful_setup()
    rng = np.random.default_rng(3)
    codes = np.asfortranarray(rng.integers(0, dom.shape, size=(400, 3)))
    codes[codes[:, 0] == 0, 2] = 0
    codes[(codes[:, 0] > 0) & (codes[:, 2] == 0), 2] = 1
    before = codes.copy()
    rows = rng.choice(400, size=150, replace=False)
    cols = np.array([0, 1])
    vals = (rng.integers(0, 4, 150), rng.integers(0, 3, 150))
    kept = GUM._set(codes, rows, cols, vals, rules.row_check(dom))
    trial = before.copy()
    trial[rows, 0], trial[rows, 1] = vals
    ok = ~rules.broken(Dataset(trial[rows], dom)).any(axis=1)
    assert kept == ok.sum() and 0 < kept < 150
    assert np.array_equal(codes[rows[ok]], trial[rows[ok]]) and np.array_equal(codes[rows[~ok]], before[rows[~ok]])
    others = np.setdiff1d(np.arange(400), rows)
    assert np.array_equal(codes[others], before[others]) and not rules.broken(Dataset(codes, dom)).any()


def test_lawful_gum_keeps_its_records_lawful_and_fits_as_well():
    """Lawful GUM (the default with rules) starts from fixed records and undoes moves that
    would break a rule: its records break none as it returns them (nothing left to fix at the
    end), and it matches the targets (which obey the rules) better than GUM fixed at the end."""
    dom, joint, rules, targets = _lawful_setup()
    res = GUM().synthesize(dom, targets, 5000, np.random.default_rng(2), rules=rules)
    assert res.rules["violations"] == {"none under 1": 0, "some from 1": 0}
    assert res.rules["broken"] == {"none under 1": 0, "some from 1": 0}  # as generated: lawful throughout
    start = res.rules["lawful"]["start"]
    assert sum(start["broken"].values()) > 0 and start["redrawn"] > 0  # the independent start broke them
    assert res.rules["lawful"]["undone"] > 0
    late = GUM(lawful=False).synthesize(dom, targets, 5000, np.random.default_rng(2), rules=rules)

    def error(r):
        return sum(np.abs(r.synthetic.marginal(c) - t).sum() for c, t in targets) + np.abs(
            r.synthetic.marginal(("age", "edu")) - joint.sum(axis=1)).sum()  # fmt: skip

    assert error(res) < error(late)
    again = GUM().synthesize(dom, targets, 5000, np.random.default_rng(2), rules=rules)
    assert np.array_equal(again.synthetic.codes, res.synthetic.codes)
    flow = GUM(update="mcf").synthesize(dom, targets, 5000, np.random.default_rng(2), rules=rules)  # §5.1's moves
    assert flow.rules["broken"] == {"none under 1": 0, "some from 1": 0} and flow.rules["lawful"]["undone"] > 0


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("attrs", [("b",), ("c", "a"), ("a", "b", "d")])
def test_mixture_conditional_is_the_brute_force_conditional(attrs, weighted):
    """RAP's and GEM's redraw conditional: the full conditional of the mixture of product
    rows, against the mixture's joint by brute force (a zero in a row included)."""
    dom = Domain.from_sizes({"a": 3, "b": 4, "c": 2, "d": 3})
    workload = MarginalQueries(dom, [("a", "b"), ("c", "d")])
    rng = np.random.default_rng(11)
    rows = 5
    blocks = [rng.dirichlet(np.ones(s), size=rows) for s in dom.shape]
    blocks[1][0, 2] = 0.0  # a value row 0 never draws
    probs = np.hstack(blocks)
    w = rng.random(rows) + 0.1 if weighted else None
    cond = workload.mixture_log_conditional(probs, w)
    ww = np.full(rows, 1 / rows) if w is None else w / w.sum()
    joint = sum(ww[r] * np.einsum("i,j,k,l->ijkl", *(blk[r] / blk[r].sum() for blk in blocks)) for r in range(rows))
    records = np.array(list(itertools.product(*(range(s) for s in dom.shape))))
    _assert_is_conditional(cond(attrs, records), records, joint, dom, attrs)


def test_mixture_conditional_survives_terms_below_the_smallest_double():
    """The matrix-product sum of the conditional underflows where every row gives a value
    less than ~1e-308 of its best; those records are summed again in log space: the tiny
    values keep their (finite) log mass, and a value no row can draw keeps none."""
    dom = Domain.from_sizes({"a": 3, "b": 3, "c": 2})
    workload = MarginalQueries(dom, [("a", "b"), ("c",)])
    tiny = 1e-200
    rows = [
        [1 - 2 * tiny, tiny, tiny, 1 - 2 * tiny, tiny, tiny, 0.5, 0.5],
        [1 - tiny, tiny, 0.0, 1 - tiny, tiny, 0.0, 0.3, 0.7],
    ]
    probs = np.array(rows)
    cond = workload.mixture_log_conditional(probs)
    records = np.array([[0, 0, 1], [2, 1, 0]])
    got = cond(("a", "b"), records)
    with np.errstate(divide="ignore"):
        logP = np.log(probs)
    for i, rec in enumerate(records):
        for va in range(3):
            for vb in range(3):
                terms = [np.log(0.5) + logP[r, va] + logP[r, 3 + vb] + logP[r, 6 + rec[2]] for r in range(2)]
                want = np.logaddexp(*terms) if np.isfinite(terms).any() else -np.inf
                assert got[i, va, vb] == pytest.approx(want, rel=1e-12) if np.isfinite(want) else got[i, va, vb] == -np.inf
    assert np.isfinite(got[0, 1, 1]) and got[0, 1, 1] < -900  # 1e-400: below the smallest double, not zero
    assert got[0, 2, 2] == pytest.approx(2 * np.log(0.5) + 2 * np.log(tiny), rel=1e-12)  # row 1 cannot draw 2


def test_mixture_redraw_keeps_the_rows_the_rule_pairs():
    """Two product rows, one of young records without schooling, one of adults with: the
    rule "no schooling exactly under 1" holds in each row's typical records; rejection from
    the mixture would keep the rows' shares only where records obey. The sweep over the
    broken rule's attributes changes only the records that break it, and keeps both rows'
    shares (age's counts within sampling noise of the draws'); redrawing the dependent alone
    keeps the age marginal exactly."""
    dom = Domain.from_sizes({"age": 2, "edu": 2})
    workload = MarginalQueries(dom, [("age", "edu")])
    probs = np.array([[0.95, 0.05, 0.9, 0.1], [0.05, 0.95, 0.1, 0.9]])
    rules = RuleSet([
        Rule.conditional("none under 1", dom, {"age": [0]}, {"edu": [0]}),
        Rule.conditional("some from 1", dom, {"age": [1]}, {"edu": [1]}),
    ])  # fmt: skip
    n = 20_000
    plain = workload.sample_records(probs, n, np.random.default_rng(0))
    out, rep = workload.sample_obeying(probs, n, np.random.default_rng(0), rules)
    assert rep["violations"] == {"none under 1": 0, "some from 1": 0}
    assert rep["rejected"] == 0 and rep["redrawn"] > 0 and rep["rebalanced"] == {}  # edu is a function of age
    bad = rules.broken(plain).any(axis=1)
    assert rep["redrawn"] == bad.sum() and np.array_equal(out.codes[~bad], plain.codes[~bad])
    assert abs(int(out.marginal(("age",))[0]) - int(plain.marginal(("age",))[0])) < 4 * np.sqrt(n)
    one, _ = enforce(plain, rules, np.random.default_rng(1), conditional=workload.mixture_log_conditional(probs))
    assert np.array_equal(one.codes[:, 0], plain.codes[:, 0])


def _mixture_case(seed: int):
    """A product mixture over age, edu, z whose rows spread age and edu independently, and
    the rule "no schooling under 1": its draws break the rule in the rows' young records."""
    dom = Domain.from_sizes({"age": 3, "edu": 4, "z": 3})
    workload = MarginalQueries(dom, [("age", "edu"), ("z",)])
    rng = np.random.default_rng(seed)
    probs = np.concatenate([rng.dirichlet(np.ones(s), size=6) for s in dom.shape], axis=1)
    rules = RuleSet([Rule.conditional("no school under 1", dom, {"age": [0]}, {"edu": [0]})])
    return dom, workload, probs, rules


@pytest.mark.parametrize("seed", range(5))
def test_rebalance_gives_back_the_drawn_counts_moving_only_untouched_records(seed):
    dom, workload, probs, rules = _mixture_case(seed)
    n = 3_000
    drawn = workload.sample_records(probs, n, np.random.default_rng(seed))
    cond = workload.mixture_log_conditional(probs)
    plain, rep0 = enforce(drawn, rules, np.random.default_rng(7), conditional=cond)
    kept, rep = enforce(drawn, rules, np.random.default_rng(7), conditional=cond, keep_counts=True)
    assert "rebalanced" not in rep0 and rep["violations"] == {"no school under 1": 0}
    redrawn = (plain.codes != drawn.codes).any(axis=1)
    assert redrawn.sum() == rep["redrawn"] > 0
    assert np.array_equal(kept.codes[redrawn], plain.codes[redrawn])  # the redraw's records keep its values
    moved = (kept.codes != plain.codes).any(axis=1)
    assert moved.sum() == sum(rep["rebalanced"].values()) > 0
    assert np.all((kept.codes[moved] != plain.codes[moved]).sum(axis=1) == 1)  # one attribute each, edu
    assert np.array_equal(kept.codes[:, [0, 2]], drawn.codes[:, [0, 2]])
    # edu's counts come nearer the drawn ones, and stop short only where no record is left to move:
    # every untouched record holding a surplus value is a child (which must keep edu 0) or was moved
    edu = lambda d: np.bincount(d.codes[:, 1], minlength=4).astype(int)  # noqa: E731
    assert np.abs(edu(kept) - edu(drawn)).sum() < np.abs(edu(plain) - edu(drawn)).sum()
    surplus = edu(kept) - edu(drawn)
    if (surplus < 0).any():
        left = ~redrawn & ~moved & (surplus[kept.codes[:, 1]] > 0)
        assert np.all(kept.codes[left, 0] == 0) and np.all(kept.codes[left, 1] == 0)
    # same inputs, same bytes (no rng)
    again, moved_again = rebalance(drawn, plain, rules, cond)
    assert np.array_equal(again.codes, kept.codes) and moved_again == rep["rebalanced"]


def test_rebalance_moves_the_largest_lawful_gain_first():
    """One record's edu went 2 -> 0 in the redraw: edu 0 has one record too many, edu 2 one
    too few. Of the untouched records with edu 0, the one of age 0 would gain most but may not
    take edu 2 (the rule), so the one of age 2, whose conditional prefers edu 2 more than age
    1's does, moves; nothing else changes."""
    dom = Domain.from_sizes({"age": 3, "edu": 3})
    rules = RuleSet([Rule.conditional("no school under 1", dom, {"age": [0]}, {"edu": [0]})])
    generated = Dataset(np.array([[0, 2], [0, 0], [1, 0], [2, 0], [1, 1]]), dom)
    data = Dataset(np.array([[0, 0], [0, 0], [1, 0], [2, 0], [1, 1]]), dom)
    logp = np.log(np.array([[0.1, 0.1, 0.8], [0.5, 0.2, 0.3], [0.3, 0.1, 0.6]]))  # by age: edu 0, 1, 2

    def cond(attrs, codes):
        assert attrs == ("edu",)
        return logp[codes[:, 0]]

    out, moved = rebalance(generated, data, rules, cond)
    assert moved == {"edu": 1}
    assert out.codes.tolist() == [[0, 0], [0, 0], [1, 0], [2, 2], [1, 1]]
    assert rules.violations(out) == {"no school under 1": 0}


def test_whole_redraw_moves_the_premise_where_the_record_says_so():
    """A record "age 0, degree, income" breaks "no degree under 1". Under a conditional in
    which income goes with adults (and every earning adult has a degree), ``whole`` redraws the
    age given the rest, which makes it an adult, then the degree given the adult age, which
    keeps it; redrawing the dependent alone must drop the degree. With "adults have an income"
    too, a child with a degree and no income has no age that obeys both: the draw widens to
    the three attributes together and lands on every lawful record the conditional allows."""
    dom = Domain.from_sizes({"age": 2, "edu": 2, "inc": 2})
    rules = RuleSet([Rule.conditional("no degree under 1", dom, {"age": [0]}, {"edu": [0]})])
    joint = np.zeros((2, 2, 2))  # P(age, edu, inc): no child has a degree, few an income; earners have degrees
    joint[0, 0, 0], joint[0, 0, 1], joint[1, 1, 1], joint[1, 1, 0] = 0.35, 0.05, 0.5, 0.1
    with np.errstate(divide="ignore"):
        logj = np.log(joint)

    def cond(attrs, codes):
        out = []
        for rec in codes:
            t = logj
            for a in ("inc", "edu", "age"):  # fix the attributes not drawn, from the last axis
                if a not in attrs:
                    t = np.take(t, rec[dom.index(a)], axis=dom.index(a))
            out.append(t)
        return np.array(out)

    data = Dataset(np.array([[0, 1, 1]] * 50), dom)
    whole, rep = redraw(data, rules, np.random.default_rng(0), cond, whole=True)
    assert whole.codes.tolist() == [[1, 1, 1]] * 50 and rep["resampled"] == {"age": 50, "edu": 50}
    one, _ = redraw(data, rules, np.random.default_rng(0), cond)
    assert one.codes.tolist() == [[0, 0, 1]] * 50
    both = RuleSet([*rules, Rule.conditional("adults earn", dom, {"age": [1]}, {"inc": [1]})])
    stuck, rep = redraw(Dataset(np.array([[0, 1, 0]] * 50), dom), both, np.random.default_rng(0), cond, whole=True)
    # the age alone has no allowed value: the draw widens to the rules' attributes together
    assert rep["left"] == 0 and both.violations(stuck) == {r: 0 for r in both.names}
    assert {tuple(r) for r in stuck.codes.tolist()} == {(0, 0, 0), (0, 0, 1), (1, 1, 1)}


@pytest.mark.parametrize("name", ["rap", "privpgd"])
def test_rap_and_privpgd_redraw_whole_rules_and_keep_counts_gem_redraws_dependents(name):
    """RAP's sampler and PrivPGD's generator redraw every attribute of a broken rule and keep
    the drawn counts; GEM's redraws only the determined attributes (``sample_obeying(whole=False,
    keep_counts=False)``), so only those appear among its redrawn attributes."""
    rules = _rules()
    dep = set(dependents(rules).values())
    whole = _run(name, 0, rules=rules).extras["rules"]
    gem = _run("gem", 0, rules=rules).extras["rules"]
    assert "rebalanced" in whole and "rebalanced" not in gem
    assert gem["redrawn"] > 0 and set(gem["resampled"]) <= dep | ({a for r in rules for a in r.attrs} if gem["repaired"] else set())
    assert whole["redrawn"] > 0 and set(whole["resampled"]) - dep  # a premise moved too
