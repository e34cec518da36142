"""Rules stated over raw values in a schema: parsed and refused with a message naming the rule,
an unsatisfiable set refused before any charge, compiled so that no row that obeys a rule is
ever forbidden (brute force over random rows and every coding), enforced in the output of a
run (zero violations over seeds), and counted on raw tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from margsynth.privacy import BudgetLedger
from margsynth.tabular import Schema, fit_encoder, synthesize
from margsynth.tabular.constraints import (
    check_satisfiable,
    compile_rules,
    parse_rules,
    refinement,
    split_bins,
    violations,
)

COLUMNS = [
    {"name": "AGEP", "kind": "numeric", "type": "integer", "bounds": [0, 99], "binning": "quantile", "bins": 7},
    {"name": "EDU", "kind": "ordinal", "categories": list(range(1, 17))},
    {"name": "PINCP", "kind": "numeric", "type": "integer", "bounds": "discover", "nullable": True},
    {"name": "NPF", "kind": "numeric", "type": "integer", "bounds": [1, 20], "bins": 6},
    {"name": "NOC", "kind": "numeric", "type": "integer", "bounds": [0, 19], "bins": 5},
    {"name": "HT", "kind": "categorical", "categories": [1, 2, 3]},
    {"name": "OWN", "kind": "categorical", "categories": [1, 2], "nullable": True},
    {"name": "CITY", "kind": "categorical", "categories": "discover"},
]
RULES = [
    {"name": "children", "if": {"AGEP": {"<": 15}}, "then": {"EDU": {"<=": 9}, "PINCP": "null"}},
    {"name": "schooling from 15", "if": {"AGEP": {">=": 15}}, "then": {"EDU": {">=": 10}}},
    {"name": "family", "order": ["NPF", ">", "NOC"]},
    {"name": "group quarters", "null_if": "OWN", "when": {"HT": [2, 3]}},
    {"name": "owners", "forbid": {"HT": [2, 3], "OWN": [1, 2]}},
    {"name": "capital", "functional": ["CITY", "HT"], "map": {"Oslo": [1, 2]}},
]


def table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Rows that obey every rule, as the text of a CSV."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n)
    edu = np.where(age < 15, rng.integers(1, 10, n), rng.integers(10, 17, n))
    inc = np.where(age < 15, np.nan, rng.lognormal(10, 1, n).round(0))
    npf = rng.integers(1, 8, n)
    noc = np.minimum(rng.integers(0, 5, n), npf - 1)
    city = rng.choice(["Oslo", "Lima", "Pune"], n, p=[0.5, 0.3, 0.2])
    ht = np.where(city == "Oslo", rng.choice([1, 2], n, p=[0.9, 0.1]), rng.choice([1, 2, 3], n, p=[0.8, 0.1, 0.1]))
    own = np.where(ht == 1, rng.choice([1, 2], n), np.nan)
    df = pd.DataFrame({"AGEP": age, "EDU": edu, "PINCP": inc, "NPF": npf, "NOC": noc, "HT": ht, "OWN": own,
                       "CITY": city})  # fmt: skip
    return df.astype(object).where(df.notna(), "").map(lambda v: str(int(v)) if isinstance(v, float) else str(v))


SCHEMA = Schema.from_dict({"columns": COLUMNS, "rules": RULES})


def test_the_table_obeys_its_rules():
    assert set(violations(table(), SCHEMA, parse_rules(SCHEMA.rules, SCHEMA)).values()) == {0}


@pytest.mark.parametrize(
    "rule, message",
    [
        ({"forbid": {"SHOE": [1]}}, "column 'SHOE' is not in the schema"),
        ({"if": {"AGEP": {"<<": 3}}, "then": {"EDU": [1]}}, "unknown operator '<<'"),
        ({"if": {"AGEP": {"<": 3}}}, "'if' and 'then' map columns"),
        ({"forbid": {"HT": [7]}}, "column 'HT' cannot take '7'"),
        ({"functional": ["CITY", "HT"]}, "needs its 'map'"),
        ({"order": ["NPF", "~", "NOC"]}, "'order' is \\[X, OP, Y\\]"),
        ({"null_if": "HT", "when": {"OWN": [1]}}, "column 'HT' is not nullable"),
        ({"forbid": {"HT": [1]}, "order": ["NPF", ">", "NOC"]}, "exactly one of"),
        ({"if": {"HT": [1]}, "then": {"HT": [2]}}, "share column"),
    ],
)
def test_a_malformed_rule_is_refused_naming_it(rule, message):
    sch = Schema.from_dict({"columns": COLUMNS, "rules": [{"name": "bad one", **rule}]})
    with pytest.raises(ValueError, match=message) as err:
        parse_rules(sch.rules, sch)
    assert "bad one" in str(err.value)


def test_an_unsatisfiable_rule_set_is_refused_before_any_charge(monkeypatch):
    rules = [*RULES, {"name": "adults", "forbid": {"AGEP": {">=": 0}}}]
    sch = {"columns": COLUMNS, "rules": rules}
    charges = []
    real_charge = BudgetLedger.charge
    monkeypatch.setattr(BudgetLedger, "charge", lambda self, *a, **k: charges.append(a) or real_charge(self, *a, **k))
    rng = np.random.default_rng(5)
    with pytest.raises(ValueError, match="adults"):
        synthesize(table(300), sch, "independent", epsilon=1.0, delta=1e-6, seed=0)
    assert not charges
    # a contradiction between two rules (a child of 5 must hold EDU <= 9; this forbids every EDU <= 9 at that age)
    s2 = Schema.from_dict({"columns": COLUMNS, "rules": [*RULES, {"name": "no primary at 5", "forbid": {
        "AGEP": [5], "EDU": list(range(1, 10))}}, {"name": "everyone is 5", "forbid": {"AGEP": {"!=": 5}}}]})  # fmt: skip
    with pytest.raises(ValueError, match="no primary at 5|everyone is 5"):
        check_satisfiable(parse_rules(s2.rules, s2), s2)
    assert rng.integers(10) >= 0  # the rng of the caller was never touched


@pytest.mark.parametrize("seed", range(4))
def test_compiling_never_forbids_a_row_that_obeys_the_rules(seed):
    """Soundness, by brute force: rows that obey every rule (in raw values) are encoded by
    every encoder discovery can give to cells the compiled rules allow."""
    df = table(2000, seed)
    led = BudgetLedger.from_dp(2.0, 1e-6)
    enc, _ = fit_encoder(df, SCHEMA, ledger=led, rng=np.random.default_rng(seed), delta=1e-7)
    rules = parse_rules(SCHEMA.rules, SCHEMA)
    compiled = compile_rules(rules, enc)
    data = enc.encode(df)
    assert compiled is not None and not compiled.broken(data).any()
    # the compiled cells do catch rows that break a rule wholly inside a cell
    bad = df.copy()
    bad.loc[:9, "HT"] = "3"
    bad.loc[:9, "OWN"] = "1"
    assert compiled.violations(enc.encode(bad))["owners"] >= 10


@pytest.mark.parametrize("seed", range(3))
def test_split_bins_make_every_threshold_exact(seed):
    """After :func:`split_bins`, each range condition holds on all or none of the integers of
    every bin (brute force), the private cuts are kept, and the compiled rules catch exactly
    the encoded rows that break a rule (every rule but the order decided by cells)."""
    df = table(2000, seed)
    enc, _ = fit_encoder(df, SCHEMA, ledger=BudgetLedger.from_dp(2.0, 1e-6), rng=np.random.default_rng(seed),
                         delta=1e-7)  # fmt: skip
    rules = parse_rules(SCHEMA.rules, SCHEMA)
    split, added = split_bins(enc, rules)
    before, after = {c.name: c for c in enc.columns}, {c.name: c for c in split.columns}
    for name, coding in after.items():
        if coding.kind == "numeric":
            assert set(before[name].cuts) <= set(coding.cuts)
            assert sorted(set(coding.cuts) - set(before[name].cuts)) == added.get(name, [])
    conds = [c for r in rules for c in (*r.premise, *r.consequence) if c.ranges and after[c.column].kind == "numeric"]
    assert {c.column for c in conds} == {"AGEP"}
    for c in conds:
        e = after[c.column].edges
        for a, b in zip(e[:-1], e[1:]):
            held = {c.interval_holds(v, v)[0] for v in range(int(a), int(b))}
            assert len(held) == 1, (c, a, b)
    assert 15.0 in after["AGEP"].cuts
    # exact: a row breaks a cell-decided rule in raw values iff its codes fall on a forbidden cell
    bad = df.copy()
    bad.loc[:99, "EDU"] = "5"  # adults with little schooling, children with much: both rules on AGEP broken
    bad.loc[100:199, "EDU"] = "12"
    raw = violations(bad, SCHEMA, rules)
    coded = compile_rules(rules, split).violations(split.encode(bad))
    for name in ("children", "schooling from 15"):
        assert raw[name] > 0 and coded[name] == raw[name], name


@pytest.mark.parametrize("seed", range(2))
def test_refinement_shares_are_what_decoding_draws(seed):
    """Brute force: a value decoded in a bin of the encoder before :func:`split_bins` falls in
    each part of that bin with the part's share in :func:`refinement` (200,000 draws a bin,
    within 5 standard errors); every part lies in its parent bin; null stays null."""
    df = table(2000, seed)
    enc, _ = fit_encoder(df, SCHEMA, ledger=BudgetLedger.from_dp(2.0, 1e-6), rng=np.random.default_rng(seed),
                         delta=1e-7)  # fmt: skip
    split, added = split_bins(enc, parse_rules(SCHEMA.rules, SCHEMA))
    ref = refinement(enc, split)
    assert set(ref.parent) == set(added) == {"AGEP"} and ref.coarse == enc.domain
    rng = np.random.default_rng(100 + seed)
    for name in ref.parent:
        cc, cf = enc.columns[enc.names.index(name)], split.columns[split.names.index(name)]
        for k in range(cc.n_values):
            parts = np.flatnonzero(ref.parent[name] == k)
            ef = cf.edges
            assert ef[parts[0]] == cc.edges[k] and ef[parts[-1] + 1] == cc.edges[k + 1]
            v = enc.decode_column(name, np.full(200_000, k), rng).to_numpy(dtype=float)
            got = np.bincount(np.searchsorted(ef, v, side="right") - 1, minlength=cf.n_values)[parts] / v.size
            want = ref.share[name][parts]
            assert np.all(np.abs(got - want) <= 5 * np.sqrt(np.clip(want * (1 - want), 0, None) / v.size) + 1e-9), (name, k, got, want)
        if cc.nullable:
            assert ref.parent[name][cf.null_code] == cc.null_code and ref.share[name][cf.null_code] == 1.0


def test_gem_fits_before_the_cuts_and_breaks_no_rule():
    """GEM is handed the split as a refinement: it fits on the bins before the cuts
    (``extras["fitted_coarse"]``, the fitted rows narrower than the records' one-hot width), its
    records are over the split bins, and no output row breaks a rule; a mechanism that takes
    no refinement (RAP, Independent) is not handed one."""
    from .test_accounting_contract import TINY

    kw = {k: v for k, v in TINY["gem"].items() if k != "synthetic_records"}
    rules = parse_rules(SCHEMA.rules, SCHEMA)
    for seed in range(3):
        out, rep = synthesize(table(1500, seed), SCHEMA, "gem", epsilon=1.0, delta=1e-6, seed=seed, **kw)
        res = rep["result"]
        assert res.extras["fitted_coarse"] == ["AGEP"] and rep["rules"]["cuts_added"]["AGEP"]
        assert res.extras["relaxed"].shape[1] < sum(res.synthetic.domain.shape)  # fitted on fewer bins
        assert set(violations(out, SCHEMA, rules).values()) == {0}, (seed, violations(out, SCHEMA, rules))
    out, rep = synthesize(table(1500, 0), SCHEMA, "rap", epsilon=1.0, delta=1e-6, seed=0, **{
        k: v for k, v in TINY["rap"].items() if k != "synthetic_records"})  # fmt: skip
    assert "fitted_coarse" not in rep["result"].extras and set(violations(out, SCHEMA, rules).values()) == {0}
    _, rep = synthesize(table(1500, 0), SCHEMA, "independent", epsilon=1.0, delta=1e-6, seed=0)
    assert "fitted_coarse" not in rep["result"].extras


@pytest.mark.parametrize("mechanism", ["mst", "aim", "privsyn", "independent"])
def test_runs_with_rules_break_none(mechanism):
    from .test_accounting_contract import TINY

    kw = dict(TINY.get(mechanism, {}))
    kw.pop("synthetic_records", None)
    if mechanism == "aim":
        kw["rounds"] = 16
    rules = parse_rules(SCHEMA.rules, SCHEMA)
    for seed in range(3):
        out, rep = synthesize(table(1500, seed), SCHEMA, mechanism, epsilon=1.0, delta=1e-6, seed=seed, **kw)
        assert set(violations(out, SCHEMA, rules).values()) == {0}, (seed, violations(out, SCHEMA, rules))
        assert set(rep["rules"]["violations"].values()) == {0}
        assert rep["epsilon"] <= 1.0 and rep["delta"] <= 1e-6


def test_without_rules_the_same_run_breaks_them():
    """The check above is not vacuous: MST without the rules breaks some of them."""
    rules = parse_rules(SCHEMA.rules, SCHEMA)
    no_rules = {"columns": COLUMNS}
    out, _ = synthesize(table(3000), no_rules, "mst", epsilon=1.0, delta=1e-6, seed=0)
    assert sum(violations(out, SCHEMA, rules).values()) > 0


def test_cli_run_with_rules_reports_them_and_evaluate_counts_them(tmp_path, capsys):
    import json

    from margsynth.cli import main

    table(800).to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps({"columns": COLUMNS, "rules": RULES}))
    args = ["--dataset", str(tmp_path / "r.csv"), "--schema", str(tmp_path / "s.json")]
    assert main(["synth", "mst", *args, "--epsilon", "1", "--delta", "1e-6", "--out", str(tmp_path / "o.csv")]) == 0
    side = json.loads((tmp_path / "o.csv.json").read_text())
    assert set(side["rules"]["violations"].values()) == {0}
    capsys.readouterr()
    assert main(["evaluate", *args, "--synthetic", str(tmp_path / "o.csv"), "--metrics", "rules", "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts and set(counts.values()) == {0.0}
    assert {k.split("/")[0] for k in counts} == {"rules", "rules-real"}
    assert main(["evaluate", "--dataset", str(tmp_path / "r.csv"), "--synthetic", str(tmp_path / "o.csv"),
                 "--metrics", "rules"]) == 2  # fmt: skip
    assert "pass --schema" in capsys.readouterr().err
