"""SDNist's k-marginal score (margsynth.metrics.kmarginal): hand-computed cases, a brute-force
second implementation, invariances, the null token, SDNist's validation, the subsample baselines,
reference numbers computed by sdnist 2.4 itself, and ``margsynth evaluate``."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from margsynth.cli import main
from margsynth.metrics.kmarginal import (
    RAW_METRICS,
    baseline_name,
    evaluate_raw,
    kmarginal_score,
    subsample_baselines,
)

from .conftest import needs_real

#: A small dictionary in the NIST excerpts' format.
DD = {
    "PUMA": {"description": "area", "values": {"01-001": "a", "01-002": "b", "01-003": "c"}},
    "SEX": {"description": "sex", "values": {"1": "Male", "2": "Female"}},
    "MSP": {"description": "marital status", "values": {"N": "n/a", "1": "married", "2": "single"}},
    "HISP": {"description": "origin", "values": {"0": "no", "1": "a", "2": "b", "3": "c"}},
    "AGEP": {"description": "age", "values": {"min": 0, "max": 99}},
    "DENSITY": {"description": "density", "values": {"min": 1, "max": 1000}},
    "INDP": {"description": "industry codes"},
}


def frame(**cols) -> pd.DataFrame:
    return pd.DataFrame({k: [str(v) for v in vs] for k, vs in cols.items()})


def score(t, s, **kw) -> float:
    return kmarginal_score(t, s, data_dictionary=DD, **kw).score


# -- hand-computed cases ----------------------------------------------------------------------------


def test_hand_computed_two_features_with_null():
    # one marginal (MSP, SEX): target 1/4 on (N,1), (1,1), (2,2), (N,2); synthetic 1/2 on (N,1), (N,2)
    t = frame(SEX=[1, 1, 2, 2], MSP=["N", 1, 2, "N"])
    s = frame(SEX=[1, 2], MSP=["N", "N"])
    r = kmarginal_score(t, s, data_dictionary=DD)
    assert r.marginals == (("MSP", "SEX"),)
    assert r.score == pytest.approx(1000 * (1 - 0.5 * (0.25 + 0.25 + 0.25 + 0.25)), abs=1e-12)  # 500
    # with PUMA, the marginal is PUMA x MSP x SEX: all synthetic mass in one PUMA, target split 2/2
    t["PUMA"], s["PUMA"] = ["01-001", "01-001", "01-002", "01-002"], ["01-001", "01-001"]
    r = kmarginal_score(t, s, data_dictionary=DD)
    assert r.marginals == (("PUMA", "MSP", "SEX"),)
    # target cells (001,N,1) (001,1,1) (002,2,2) (002,N,2), 1/4 each; synthetic (001,N,1) (001,N,2), 1/2 each
    assert r.score == pytest.approx(1000 * (1 - 0.5 * (0.25 + 0.25 + 0.25 + 0.25 + 0.5))), r.score  # 250


def test_null_is_its_own_category():
    t = frame(SEX=[1, 2], MSP=["N", "N"])
    assert score(t, frame(SEX=[1, 2], MSP=["N", "N"])) == 1000.0
    assert score(t, frame(SEX=[1, 2], MSP=[1, 1])) == 0.0  # N is not a code: disjoint supports


def test_percentile_bins_by_hand():
    # target AGEP 1..20: average rank r of value i is i, bin int(20 i / 20) = i, the maximum (x = 1) in bin 19;
    # bin 0 is empty, so SDNist's running lower bound 0 leaves a deidentified value <= 0 unbinned
    t = frame(AGEP=range(1, 21))
    assert score(t, t) == 1000.0
    s = frame(AGEP=["0", "-3", "25", "19.7", "1"])
    # categories: 0 and -3 (unbinned, not the target's), 25 -> 19 (above the last maximum), 19.7 -> 19 -> 19, 1 -> 1
    tv = 0.5 * (17 / 20 + abs(1 / 20 - 1 / 5) + abs(2 / 20 - 2 / 5) + 1 / 5 + 1 / 5)
    assert score(t, s) == pytest.approx(1000 * (1 - tv), abs=1e-9)  # 150


def test_target_without_bin_zero_does_not_score_1000_against_itself_as_in_sdnist():
    # three tied zeros: average rank 2 of 20, bin 2; bin 0 is absent, so a deidentified 0 stays unbinned
    # (SDNist 2.4 does the same: checked with the package on a real excerpt, docs/notes/sdnist_kmarginal.md)
    t = frame(AGEP=[0, 0, 0, *range(1, 18)])
    assert score(t, t) == pytest.approx(1000 * (1 - 0.5 * (3 / 20 + 3 / 20)), abs=1e-9)  # 850
    assert subsample_baselines(t, fractions=[1.0], data_dictionary=DD) == {1.0: 1000.0}  # the target's own bins


def test_density_bins():
    # max 1000: cut at 0, 150 and 10^(1 + i/20 * (log10(1500) - 1)) for i = 8..20, closed on the right
    assert score(frame(DENSITY=["150", "151"]), frame(DENSITY=["150.9", "151"])) == 1000.0  # truncated first
    assert score(frame(DENSITY=["149", "150"]), frame(DENSITY=["149", "0"])) == 500.0  # <= 0: a category of its own
    assert score(frame(DENSITY=["1499"]), frame(DENSITY=["2000"])) == 1000.0  # above 1500 -> 1400, top bin
    assert score(frame(DENSITY=["1499"]), frame(DENSITY=["1100"])) == 0.0  # (908.., 1167..] is another bin


# -- a second implementation ---------------------------------------------------------------------------


def brute_force(t: pd.DataFrame, s: pd.DataFrame) -> float:
    """Categorical features only: categories are the cells themselves (N included)."""
    cols = sorted(c for c in t.columns if c not in ("PUMA", "INDP"))
    group = ["PUMA"] if "PUMA" in t.columns else []
    tvs = []
    for a, b in itertools.combinations(cols, 2):
        keys = [*group, a, b]
        ct = Counter(map(tuple, t[keys].to_numpy()))
        cs = Counter(map(tuple, s[keys].to_numpy()))
        tvs.append(0.5 * sum(abs(ct[k] / len(t) - cs[k] / len(s)) for k in set(ct) | set(cs)))
    return 1000 * (1 - sum(tvs) / len(tvs))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_brute_force_on_random_categorical_tables(seed):
    rng = np.random.default_rng(seed)

    def draw(n, skew):
        return pd.DataFrame(
            {
                "PUMA": rng.choice(["01-001", "01-002", "01-003"], n, p=[0.5, 0.3, 0.2]),
                "SEX": rng.choice(["1", "2"], n),
                "MSP": rng.choice(["N", "1", "2"], n, p=[0.2 + skew, 0.5 - skew, 0.3]),
                "HISP": rng.choice(["0", "1", "2", "3"], n),
                "INDP": rng.choice(["N", "170", "8190"], n),
            }
        )

    t, s = draw(300, 0.0), draw(120, 0.2)
    r = kmarginal_score(t, s, data_dictionary=DD)
    assert len(r.marginals) == 3 and all(m[0] == "PUMA" for m in r.marginals)  # INDP in none
    assert r.score == pytest.approx(brute_force(t, s), abs=1e-9)
    assert kmarginal_score(t.drop(columns="PUMA"), s, data_dictionary=DD).score == pytest.approx(
        brute_force(t.drop(columns="PUMA"), s.drop(columns="PUMA")), abs=1e-9
    )


# -- invariances ---------------------------------------------------------------------------------------


def _random_mixed(rng, n):
    return pd.DataFrame(
        {
            "PUMA": rng.choice(["01-001", "01-002"], n),
            "SEX": rng.choice(["1", "2"], n),
            "MSP": rng.choice(["N", "1", "2"], n),
            "AGEP": rng.integers(0, 90, n).astype(str),
            "DENSITY": rng.choice(["16.3", "520.5", "900"], n),
        }
    )


def test_invariant_to_row_and_column_order():
    rng = np.random.default_rng(5)
    t, s = _random_mixed(rng, 400), _random_mixed(rng, 250)
    base = score(t, s)
    assert 0 < base < 1000
    shuffled_rows = score(t.sample(frac=1, random_state=1), s.sample(frac=1, random_state=2))
    assert shuffled_rows == pytest.approx(base, abs=1e-9)
    assert score(t[t.columns[::-1]], s[["DENSITY", "SEX", "PUMA", "AGEP", "MSP"]]) == pytest.approx(base, abs=1e-9)
    assert score(t, t) == 1000.0


def test_numbers_and_strings_score_alike():
    # a deidentified table read by pandas' defaults (numbers, no N in these columns) scores as the text
    rng = np.random.default_rng(6)
    t, s = _random_mixed(rng, 200), _random_mixed(rng, 200)
    parsed = s.assign(SEX=s.SEX.astype(int), AGEP=s.AGEP.astype(float), DENSITY=s.DENSITY.astype(float))
    assert score(t, parsed) == score(t, s)


# -- validation as SDNist does it ------------------------------------------------------------------------


def test_columns_that_do_not_fit_are_dropped_and_reported():
    rng = np.random.default_rng(7)
    t = _random_mixed(rng, 200).assign(HISP=lambda f: rng.choice(["0", "1"], len(f)), INDP="N")
    s = t.copy()
    s.loc[0, "SEX"] = "N"  # SEX has no null
    s.loc[1, "MSP"] = ""  # an empty cell is no value
    s.loc[2, "AGEP"] = "NA"
    s.loc[4, "INDP"] = "N"  # INDP always accepts N
    s.loc[5, "PUMA"] = "99-999"
    r = kmarginal_score(t, s.drop(columns="DENSITY"), data_dictionary=DD)
    assert r.dropped == {"PUMA": ("99-999",), "SEX": ("N",), "MSP": ("",), "AGEP": ("NA",)}
    assert r.missing == ("DENSITY",)
    assert r.features == ("HISP", "INDP") and r.marginals == (("HISP",),)  # no PUMA: no group; one feature left
    assert r.score == pytest.approx(brute_force_1way(t, s, "HISP"), abs=1e-9)
    assert any("SDNist drops" in line for line in r.notes()) and any("DENSITY" in line for line in r.notes())
    s.loc[3, "HISP"] = "7"  # not one of the codes
    assert kmarginal_score(t, s[["HISP", "INDP", "DENSITY"]], data_dictionary=DD).dropped == {"HISP": ("7",)}


def brute_force_1way(t, s, col):
    ct, cs = Counter(t[col]), Counter(s[col])
    return 1000 * (1 - 0.5 * sum(abs(ct[k] / len(t) - cs[k] / len(s)) for k in set(ct) | set(cs)))


def test_accepted_oddities():
    t = frame(SEX=[1, 2, 1], AGEP=[10, 20, 30])
    # a code written as a decimal is truncated (1.7 -> 1), an age outside the dictionary's range is not checked
    r = kmarginal_score(t, frame(SEX=["1.7", "2", "1"], AGEP=[10, 20, 150]), data_dictionary=DD)
    assert r.dropped == {} and r.score == 1000.0  # 150 is above the last maximum: the top bin, as 30


def test_bad_input_is_refused():
    t = frame(SEX=[1, 2], MSP=[1, 2])
    with pytest.raises(ValueError, match=r"target column 'SEX': value\(s\) \['3'\]"):
        kmarginal_score(frame(SEX=[1, 3], MSP=[1, 2]), t, data_dictionary=DD)
    with pytest.raises(ValueError, match="column 'FOO': not described by the data dictionary"):
        kmarginal_score(t.assign(FOO="x"), t, data_dictionary=DD)
    with pytest.raises(ValueError, match="synthetic has no rows"):
        kmarginal_score(t, t.iloc[:0], data_dictionary=DD)
    with pytest.raises(ValueError, match="no feature to score"):
        kmarginal_score(frame(PUMA=["01-001"], INDP=["N"]), frame(PUMA=["01-001"], INDP=["N"]), data_dictionary=DD)
    with pytest.raises(ValueError, match="shares no valid column"):
        kmarginal_score(t, frame(SEX=[5], MSP=[9]), data_dictionary=DD)
    with pytest.raises(ValueError, match="must be a pandas DataFrame"):
        kmarginal_score(t, [1, 2], data_dictionary=DD)


# -- subsample baselines ---------------------------------------------------------------------------------


def test_subsample_baselines_are_seeded_and_drawn_as_documented():
    rng = np.random.default_rng(8)
    t = _random_mixed(rng, 500)
    a = subsample_baselines(t, seed=3, data_dictionary=DD)
    assert list(a) == [0.05, 0.10, 0.20, 0.40]
    assert a == subsample_baselines(t, seed=3, data_dictionary=DD)
    assert a != subsample_baselines(t, seed=4, data_dictionary=DD)
    assert all(0 < v < 1000 for v in a.values())
    # the documented draw: round(p n) rows without replacement from default_rng(seed), fractions in order;
    # this target has a bin 0, so scoring the raw subsample gives the same number
    g = np.random.default_rng(3)
    for p, v in a.items():
        rows = g.choice(len(t), size=round(p * len(t)), replace=False)
        assert score(t, t.iloc[rows]) == pytest.approx(v, abs=1e-9)
    assert subsample_baselines(t, fractions=[1.0], data_dictionary=DD) == {1.0: 1000.0}
    only = subsample_baselines(t, fractions=[0.5], seed=3, data_dictionary=DD, features=["SEX", "MSP"])
    g = np.random.default_rng(3)
    rows = g.choice(len(t), size=250, replace=False)
    assert only[0.5] == pytest.approx(brute_force(t[["SEX", "MSP"]], t[["SEX", "MSP"]].iloc[rows]), abs=1e-9)
    for bad in ([0.0], [1.5], []):
        with pytest.raises(ValueError, match="fractions"):
            subsample_baselines(t, fractions=bad, data_dictionary=DD)


def test_evaluate_raw_names():
    rng = np.random.default_rng(9)
    t, s = _random_mixed(rng, 300), _random_mixed(rng, 300)
    values, result = evaluate_raw(t, s, list(RAW_METRICS), seed=1, data_dictionary=DD)
    assert list(values) == ["nist-kmarginal", *(baseline_name(p) for p in (0.05, 0.1, 0.2, 0.4))]
    assert list(values)[1:] == [f"nist-kmarginal-subsample-{p}%" for p in (5, 10, 20, 40)]
    assert values["nist-kmarginal"] == result.score
    assert values == evaluate_raw(t, s, list(RAW_METRICS), seed=1, data_dictionary=DD)[0]
    with pytest.raises(ValueError, match="not a raw-table metric"):
        evaluate_raw(t, s, ["tv-1way"], data_dictionary=DD)


# -- the real excerpts: reference numbers computed by sdnist 2.4 -------------------------------------------

#: sdnist 2.4's KMarginal score (its report's Dataset preparation; benchmarks/bench_kmarginal.py) of
#: deterministic tables made from the excerpts.
SDNIST_REFERENCE = {
    ("ma2018", "every10"): 846.8774846192541,  # rows 0, 10, 20, ...
    ("ma2018", "rev4"): 825.9780896445723,  # AGEP, PINCP, SEX and PUMA in reverse row order
    ("tx2018", "every10"): 839.7140141559277,
    ("tx2018", "rev4"): 813.544480211147,
}


def _variant(t: pd.DataFrame, kind: str) -> pd.DataFrame:
    if kind == "every10":
        return t.iloc[::10]
    r = t.copy()
    for c in ["AGEP", "PINCP", "SEX", "PUMA"]:
        r[c] = r[c].to_numpy()[::-1]
    return r


@needs_real("ma2018")
@needs_real("tx2018")
@pytest.mark.parametrize("name, kind", sorted(SDNIST_REFERENCE))
def test_matches_sdnist_on_the_excerpts(name, kind):
    from margsynth.data import load_data_dictionary, load_raw

    t = load_raw(name)
    assert (t == "N").to_numpy().any() and all(pd.api.types.is_string_dtype(d) for d in t.dtypes)  # text, N kept
    dd = load_data_dictionary(name)
    r = kmarginal_score(t, _variant(t, kind), data_dictionary=dd)
    assert len(r.marginals) == 231 and r.dropped == {} and r.missing == ()
    assert r.score == pytest.approx(SDNIST_REFERENCE[name, kind], abs=1e-9)
    if kind == "every10":
        assert kmarginal_score(t, t, data_dictionary=dd).score == 1000.0


# -- the command line -------------------------------------------------------------------------------------


@needs_real("ma2018")
def test_cli_evaluate_an_excerpt(tmp_path, capsys):
    from margsynth.data import load_raw

    t = load_raw("ma2018")
    out = tmp_path / "syn.csv"
    _variant(t, "every10").to_csv(out, index=False)
    assert main(["evaluate", "--dataset", "ma2018", "--synthetic", str(out)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[0].split() == ["nist-kmarginal", f"{SDNIST_REFERENCE['ma2018', 'every10']:.6f}"]
    # a raw CSV as --dataset, the baselines, JSON
    target = tmp_path / "target.csv"
    t.to_csv(target, index=False)
    args = ["evaluate", "--dataset", str(target), "--synthetic", str(out), "--json", "--seed", "2"]
    assert main([*args, "--metrics", "nist-kmarginal,nist-kmarginal-baselines"]) == 0
    values = json.loads(capsys.readouterr().out)
    assert list(values) == ["nist-kmarginal", *(f"nist-kmarginal-subsample-{p}%" for p in (5, 10, 20, 40))]
    assert values["nist-kmarginal"] == pytest.approx(SDNIST_REFERENCE["ma2018", "every10"], abs=1e-9)
    assert values["nist-kmarginal-subsample-5%"] < values["nist-kmarginal-subsample-40%"] < 1000
    # a column SDNist would drop is dropped and named on stderr
    bad = _variant(t, "every10").copy()
    bad.iloc[0, bad.columns.get_loc("SEX")] = "N"
    bad.to_csv(out, index=False)
    assert main(["evaluate", "--dataset", "ma2018", "--synthetic", str(out)]) == 0
    captured = capsys.readouterr()
    assert "SEX (values ['N'])" in captured.err


@needs_real("ma2018")
def test_cli_evaluate_errors(tmp_path, capsys):
    out = tmp_path / "syn.csv"
    out.write_text("SEX,AGEP\n1,5\n")
    cases = [
        (["--metrics", "nist-kmarginal,tv-1way"], "pass --schema"),
        (["--domain", str(out), "--metrics", "nist-kmarginal"], "drop --domain"),
        (["--metrics", "nope"], "nist-kmarginal-baselines"),  # the unknown-metric message lists them
        (["--data-dictionary", str(tmp_path / "none.json")], "--data-dictionary"),
    ]
    for extra, needle in cases:
        assert main(["evaluate", "--dataset", "ma2018", "--synthetic", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err


def test_validate_columns_alone():
    from margsynth.metrics.kmarginal import validate_columns

    s = frame(SEX=["1", "N", "other"], MSP=["N", "1", "2"], AGEP=["5", "", "7.5"], EXTRA=["?", "?", "?"])
    assert validate_columns(s, data_dictionary=DD) == {"SEX": ("N", "other"), "AGEP": ("",)}
    assert validate_columns(s[["MSP"]], data_dictionary=DD) == {}
