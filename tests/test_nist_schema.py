"""The NIST excerpts' schema built from their data dictionary (margsynth.data.nist_schema): the
rules feature by feature on a small dictionary, the named schemas, the excerpts' own PUMAs,
every cell of the real excerpts fitting it, the command line, and a smoke run through
``synthesize`` scored by the k-marginal scorer."""

from __future__ import annotations

import json

import pytest

from margsynth.cli import main
from margsynth.data.nist_schema import (
    NAMED_SCHEMAS,
    NIST_ACS_RULES,
    acs_rules,
    excerpt_pumas,
    nist_acs_schema,
    schema_from_dictionary,
)
from margsynth.tabular import Schema
from margsynth.tabular.constraints import check_satisfiable, parse_rules, violations
from margsynth.tabular.encoder import check_table, left_out

from .conftest import needs_real

#: A dictionary in the excerpts' format, with each kind of entry they have.
DD = {
    "PUMA": {"description": "area", "values": {"25-00001": "a", "48-00002": "b", "01-00003": "c", "06-00004": "d"}},
    "AGEP": {"description": "age", "values": {"min": 0, "max": 99}},
    "MSP": {"description": "marital status", "values": {"N": "n/a", "1": "married", "2": "single"}},
    "SEX": {"description": "sex", "values": {"1": "Male", "2": "Female"}},
    "NOC": {"description": "children", "values": {"N": "n/a", "0": "none", "min": 1, "max": 19}},
    "DENSITY": {"description": "density", "values": {"min": 16.3, "max": 52864.7}},
    "POVPIP": {"description": "ratio", "values": {"N": "n/a", "min": 0, "max": 500, "501": "top"}},
    "INDP": {"description": "industry codes", "details": "free codes"},
    "PWGTP": {"description": "weight", "values": {"min": 1, "max": 9999}},
    "WGTP": {"description": "weight", "values": {"0": "group quarters", "min": 1, "max": 9999}},
}
EXCERPTS = ("ma2018", "tx2018", "national2018")


def test_each_kind_of_dictionary_entry():
    s = schema_from_dictionary(DD)
    assert s["null_tokens"] == ["N"] and s["public"] is True
    cols = {c["name"]: c for c in s["columns"]}
    assert list(cols) == list(DD)  # the dictionary's order
    # codes only: a strict list in the dictionary's order, N the null (not a category)
    assert cols["MSP"] == {"name": "MSP", "kind": "categorical", "categories": ["1", "2"], "strict": True,
                           "nullable": True}  # fmt: skip
    assert cols["SEX"]["nullable"] is False and cols["PUMA"]["categories"] == list(DD["PUMA"]["values"])
    # a range: given bounds, quantile bins "auto"; numeric codes widen the bounds
    assert cols["AGEP"] == {"name": "AGEP", "kind": "numeric", "type": "integer", "bounds": [0, 99],
                            "binning": "quantile", "bins": "auto", "nullable": False}  # fmt: skip
    assert cols["NOC"]["bounds"] == [0, 19] and cols["NOC"]["nullable"] is True
    assert cols["POVPIP"]["bounds"] == [0, 501] and cols["WGTP"]["bounds"] == [0, 9999]
    assert cols["DENSITY"]["type"] == "float" and cols["DENSITY"]["decimals"] == 1
    assert cols["DENSITY"]["bounds"] == [16.3, 52864.7]
    # nothing usable: discovered
    assert cols["INDP"] == {"name": "INDP", "kind": "categorical", "categories": "discover", "nullable": "discover"}
    Schema.from_dict(s)  # a valid schema


def test_features_and_pumas():
    s = schema_from_dictionary(DD, features=["SEX", "PUMA"], pumas=["01-00003", "25-00001"])
    assert [c["name"] for c in s["columns"]] == ["SEX", "PUMA"]
    assert s["columns"][1]["categories"] == ["25-00001", "01-00003"]  # the dictionary's order
    for kw, needle in [
        ({"features": ["SEX", "NOPE"]}, "NOPE"),
        ({"features": ["SEX", "SEX"]}, "distinct"),
        ({"features": []}, "features"),
        ({"pumas": ["99-99999"]}, "pumas"),
        ({"pumas": []}, "pumas"),
    ]:
        with pytest.raises(ValueError, match=needle):
            schema_from_dictionary(DD, **kw)
    bad = {"X": {"values": {"min": 0, "max": 5, "top": "text code"}}}
    with pytest.raises(ValueError, match="'X'.*'top'"):
        schema_from_dictionary(bad)
    with pytest.raises(ValueError, match="one end"):
        schema_from_dictionary({"X": {"values": {"min": 0}}})
    with pytest.raises(ValueError, match="no code"):
        schema_from_dictionary({"X": {"values": {"N": "n/a"}}})


def test_named_schemas_and_the_excerpts_pumas():
    assert NAMED_SCHEMAS["nist-acs-21"] == ("PWGTP", "WGTP", "INDP") and NAMED_SCHEMAS["nist-acs"] == ()
    assert excerpt_pumas("ma2018", DD) == ["25-00001"] and excerpt_pumas("tx2018", DD) == ["48-00002"]
    assert excerpt_pumas("national2018", DD) == ["01-00003", "06-00004"]
    full = nist_acs_schema("tx2018", "nist-acs", dictionary=DD)
    sub = nist_acs_schema("tx2018", "nist-acs-21", dictionary=DD)
    names = [c["name"] for c in full["columns"]]
    assert names == list(DD) and full["columns"][0]["categories"] == ["48-00002"]
    assert [c["name"] for c in sub["columns"]] == [n for n in names if n not in ("PWGTP", "WGTP", "INDP")]
    for args, needle in [(("ma2018", "nope"), "named schema"), (("adult", "nist-acs"), "NIST excerpt")]:
        with pytest.raises(ValueError, match=needle):
            nist_acs_schema(*args, dictionary=DD)


def test_the_shipped_rules_parse_and_are_satisfiable_without_the_data():
    """The rules against a schema of the excerpts' 24 features built from a dictionary of
    their shape (no file read): every rule parses, the set is satisfiable, the 21-feature set
    keeps exactly the rules without INDP, WGTP and PWGTP, and a contradicting rule is refused."""
    names = {"PUMA", "AGEP", "SEX", "MSP", "HISP", "RAC1P", "NOC", "NPF", "HOUSING_TYPE", "OWN_RENT", "DENSITY",
             "INDP", "INDP_CAT", "EDU", "PINCP", "PINCP_DECILE", "POVPIP", "DVET", "DREM", "DPHY", "DEYE", "DEAR",
             "WGTP", "PWGTP"}  # fmt: skip
    rule_cols = set()
    for r in NIST_ACS_RULES:
        rule_cols |= {r["order"][0], r["order"][2]} if "order" in r else {*r["if"], *r["then"]}
        assert r.get("text", "").startswith("data dictionary"), r["name"]
    assert rule_cols <= names
    dd = {
        "PUMA": {"values": {"25-00001": "a"}},
        "AGEP": {"values": {"min": 0, "max": 99}},
        "NOC": {"values": {"N": "n/a", "0": "none", "min": 1, "max": 19}},
        "NPF": {"values": {"N": "n/a", "min": 2, "max": 20}},
        "HOUSING_TYPE": {"values": {"1": "HU", "2": "IGQ", "3": "NIGQ"}},
        "OWN_RENT": {"values": {"0": "GQ", "1": "own", "2": "rent"}},
        "INDP": {"description": "free codes"},
        "INDP_CAT": {"values": {"N": "n/a", **{str(k): str(k) for k in range(19)}}},
        "EDU": {"values": {"N": "n/a", **{str(k): str(k) for k in range(1, 13)}}},
        "WGTP": {"values": {"0": "GQ", "min": 1, "max": 9999}},
        **{f: {"values": {"N": "n/a", "1": "a", "2": "b"}} for f in ("MSP", "DREM", "DPHY")},
        "PINCP": {"values": {"N": "n/a", "min": -9000, "max": 1341000}},
        "PINCP_DECILE": {"values": {"N": "n/a", **{str(k): str(k) for k in range(10)}}},
    }
    full = Schema.from_dict(nist_acs_schema("ma2018", "nist-acs", dictionary=dd))
    rules = parse_rules(full.rules, full)
    assert len(full.rules) == len(NIST_ACS_RULES) == 43
    check_satisfiable(rules, full)
    sub = [r["name"] for r in acs_rules([f for f in dd if f not in NAMED_SCHEMAS["nist-acs-21"]])]
    assert len(sub) == 20 and not any("industry " in n and "category " in n for n in sub)
    assert "no industry under 16" in sub and "group quarters: housing weight 0" not in sub
    # two rules each satisfiable beside the shipped ones, not together: no row is left
    clash = [{"name": "clash: no group quarters", "forbid": {"HOUSING_TYPE": ["2", "3"]}},
             {"name": "clash: no owner or renter", "forbid": {"OWN_RENT": ["1", "2"]}}]  # fmt: skip
    for extra in ([clash[0]], [clash[1]]):
        ok = Schema.from_dict({**nist_acs_schema("ma2018", "nist-acs", dictionary=dd), "rules": [*full.rules, *extra]})
        check_satisfiable(parse_rules(ok.rules, ok), ok)
    bad = Schema.from_dict({**nist_acs_schema("ma2018", "nist-acs", dictionary=dd), "rules": [*full.rules, *clash]})
    with pytest.raises(ValueError, match="clash"):
        check_satisfiable(parse_rules(bad.rules, bad), bad)


# -- the real excerpts ------------------------------------------------------------------------------------


@needs_real("ma2018")
@needs_real("tx2018")
@needs_real("national2018")
@pytest.mark.parametrize("name", EXCERPTS)
def test_every_cell_of_each_excerpt_fits_the_shipped_schema(name):
    from margsynth.data import load_raw

    t = load_raw(name)
    full = Schema.from_dict(nist_acs_schema(name))
    # every column named (in the dictionary's order; a run's output keeps the file's)
    assert sorted(full.names) == sorted(t.columns) and len(full.names) == 24
    checked = check_table(t, full)  # every cell fits: a ValueError names the first that does not
    assert set(checked) == set(t.columns)
    pumas = full["PUMA"].categories
    assert len(pumas) == {"ma2018": 5, "tx2018": 6, "national2018": 20}[name]
    assert set(t["PUMA"]) == set(pumas)  # each of the excerpt's PUMAs holds records
    sub = Schema.from_dict(nist_acs_schema(name, "nist-acs-21"))
    assert left_out(t, sub) == ["INDP", "PWGTP", "WGTP"] and len(sub.names) == 21
    check_table(t, sub)
    # nullable exactly where the dictionary lists N; the data hold N only there
    for spec in full.columns:
        if spec.nullable is False:
            assert not (t[spec.name] == "N").any(), spec.name


@needs_real("ma2018")
def test_smoke_run_through_synthesize_is_scored(tmp_path):
    from margsynth.data import load_data_dictionary, load_raw
    from margsynth.metrics.kmarginal import kmarginal_score
    from margsynth.tabular import encoder_of, synthesize

    t = load_raw("ma2018").head(500)
    synthetic, report = synthesize(t, nist_acs_schema("ma2018"), "independent", epsilon=1.0, delta=1e-5, seed=0)
    text = encoder_of(report).to_text(synthetic)
    assert list(text.columns) == list(t.columns) and report["epsilon"] <= 1.0 and report["delta"] <= 1e-5
    r = kmarginal_score(t, text, data_dictionary=load_data_dictionary("ma2018"))
    # INDP's discovered set writes its rare codes as 'other', which SDNist does not accept (INDP is in no marginal)
    assert set(r.dropped) <= {"INDP"} and len(r.marginals) == 231 and 0 < r.score < 1000


@needs_real("ma2018")
def test_cli_takes_the_shipped_schema_by_name(tmp_path, capsys):
    out = tmp_path / "syn.csv"
    args = ["synth", "independent", "--dataset", "ma2018", "--epsilon", "1", "--delta", "1e-5", "--out", str(out)]
    assert main([*args, "--schema", "nist-acs-21"]) == 0
    printed = capsys.readouterr().out
    assert "left out (not in the schema): INDP, PWGTP, WGTP" in printed
    side = json.loads(out.with_name("syn.csv.json").read_text())
    assert side["schema"] == "nist-acs-21" and "nist-crc/data_dictionary.json" in side["input_sha256"]
    assert out.read_text().splitlines()[0].split(",")[:3] == ["PUMA", "AGEP", "SEX"]
    assert main(["evaluate", "--dataset", "ma2018", "--schema", "nist-acs-21", "--synthetic", str(out),
                 "--metrics", "tv-1way,nist-kmarginal"]) == 0  # fmt: skip
    assert "nist-kmarginal" in capsys.readouterr().out
    # without --schema an excerpt is refused with what to pass
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--schema" in err and "nist-acs" in err and err.count("\n") == 1


@needs_real("ma2018")
@needs_real("tx2018")
@needs_real("national2018")
@pytest.mark.parametrize("name", EXCERPTS)
def test_every_shipped_rule_holds_on_each_excerpts_real_rows(name):
    """A rule a real row breaks is no rule: every rule shipped with ``nist-acs`` and
    ``nist-acs-21`` has no violation on the excerpt's rows, and each set is satisfiable."""
    from margsynth.data import load_raw

    t = load_raw(name)
    for schema, count in (("nist-acs", 43), ("nist-acs-21", 20)):
        s = Schema.from_dict(nist_acs_schema(name, schema))
        rules = parse_rules(s.rules, s)
        assert len(rules) == count
        check_satisfiable(rules, s)
        counts = violations(t, s, rules)
        assert counts and set(counts.values()) == {0}, {k: v for k, v in counts.items() if v}
    # not vacuous: the same count on rows with one feature changed finds each broken row
    s = Schema.from_dict(nist_acs_schema(name))
    rules = parse_rules(s.rules, s)
    counts = violations(t.assign(MSP="1", INDP_CAT="N"), s, rules)
    ages = t["AGEP"].astype(int)
    assert counts["MSP null under 15"] == int((ages < 15).sum()) > 0
    assert counts["industry category and code null together"] == int((t["INDP"] != "N").sum()) > 0
