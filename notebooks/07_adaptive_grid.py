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
# # 07 — The adaptive-granularity mechanism vs identity queries
#
# The adaptive grid (`margsynth.mechanisms.adagrid`) implements R. McKenna's *Adaptive Granularity Mechanism*, the
# winning write-up of sprint 3 of the NIST PSCR Differential Privacy Temporal Map Challenge (2020–21,
# https://github.com/ryan112358/nist-synthetic-data-2021); what the write-up leaves open, and how we settled it, is
# in docs/notes/adaptive_grid.md. It measures the downward closure of a few outer-level marginals in rounds
# k = 1..K. Round k measures each k-way marginal through an *adaptive* query matrix: identity rows on
# the cells whose every (k−1)-way parent was measured large in round k−1 (noisy answer > `threshold`·σ),
# and k aggregate rows of weight 1/√k, one per parent grouping, over all other cells — so every column
# has L2 norm exactly 1 and each measurement has sensitivity C. Privacy is accounted in Gaussian DP
# (n measurements at noise σ compose to √n·C/σ-GDP, converted to (ε, δ) by Cor. 2.13 of J. Dong, A. Roth &
# W. J. Su, *Gaussian Differential Privacy*, JRSS-B 84(1), 2022, arXiv:1905.02383);
# Private-PGM turns the sparse measurements into a model and synthetic records.
#
# The comparison measures **the same marginals with the same σ** through identity queries (the special
# case the paper improves on), so every difference below comes from the query matrices.
# Default marginals (chosen from the public schema only): adult — 8 triples, each the target
# `income>50K` plus two related attributes; nltcs — consecutive triples in schema order.
#
# **Quick profile:** ε ∈ {0.1, 1, 10}, one seed and 300 Private-PGM iterations (full: five ε, five seeds, 1,500);
# on adult the adaptive grid's error is 1–5% below that of identity queries at ε = 1 and 10 (2% above on the
# measured marginals at ε = 0.1), differences one seed cannot separate from noise (every error axis spans at least
# a decade, so they look as small as they are); on nltcs the two coincide for ε ≥ 1. The claim needs the full
# profile's five seeds.

# %% tags=["parameters"]
profile = "quick"  # "quick" (CI, ~50 CPU-s, the runs on 2 processes) or "full" (5 epsilons x 5 seeds: ~11 CPU-min, 26 min wall on a busy 2-core machine)
epsilons = None  # None: the profile's (quick: 0.1, 1, 10; full: 0.1, 0.3, 1, 3, 10)
seeds = None  # None: the profile's (quick: 0; full: 0..4)
delta = 1e-9
threshold = 1.0  # a parent cell is "large" when its noisy identity answer exceeds threshold * sigma
iters = None  # Private-PGM iterations; None: the profile's (quick 300, full 1500)
clip = 2.0  # C of the clipped sensitivity check (pseudo-persons of ~3 records)
workers = None  # local worker processes for the runs; None: the profile's (quick: 2, full: 1)

# %%
import numpy as np
import pandas as pd

from margsynth.experiments import adagrid as exp
from margsynth.plotting import adagrid as figures
from margsynth.plotting import save_figure, save_table, use_style

use_style()
settings = dict(exp.PROFILES[profile])
epsilons = list(epsilons if epsilons is not None else settings["epsilons"])
seeds = list(seeds if seeds is not None else settings["seeds"])
iters = int(iters if iters is not None else settings["iters"])
workers = settings["workers"] if workers is None else workers
datasets = exp.datasets_present(include_larger=settings["larger"])
print(f"profile={profile} datasets={datasets} epsilons={epsilons} seeds={seeds} iters={iters} delta={delta}")

# %%
res = exp.compare(datasets, epsilons, seeds, delta=delta, iters=iters, threshold=threshold, workers=workers)
errors, rounds, runs = res["errors"], res["rounds"], res["runs"]
save_table(errors, "07_adagrid_errors")
save_table(rounds, "07_adagrid_rows_per_round")
save_table(runs, "07_adagrid_runs")
# every run spent exactly its target epsilon (to rounding) at the given delta
assert np.allclose(runs["epsilon_spent"], runs["epsilon"], rtol=1e-6), runs[["epsilon", "epsilon_spent"]]
summary = (
    errors.groupby(["dataset", "workload", "epsilon", "queries"])["error"].mean().unstack("queries")
    .assign(**{"adaptive / identity": lambda d: d["adaptive"] / d["identity"]})
    .reset_index()
)
save_table(summary, "07_adagrid_error_summary")
summary[summary["workload"].isin(["measured marginals", "all 3-way marginals"])].round(4)

# %%
fig = figures.workload_error(errors, delta=delta)
save_figure(fig, "07_adagrid_workload_error")

# %%
fig = figures.error_by_round(errors)
save_figure(fig, "07_adagrid_error_by_round")

# %%
fig = figures.rows_per_round(rounds, seed=seeds[0])
save_figure(fig, "07_adagrid_rows_per_round")
adaptive_rows = rounds[(rounds["queries"] == "adaptive") & (rounds["seed"] == seeds[0])]
adaptive_rows.pivot_table(index=["dataset", "round"], columns="epsilon", values=["identity_rows", "aggregate_rows"])

# %% [markdown]
# ## Sensitivity check
#
# For the adaptive query matrices of the smallest ε (where most aggregate rows appear), the largest
# change ‖Q(M(D) − M(D′))‖₂ over neighbouring datasets D′ — every record removed (or a sample), a record
# added in every cell, and with per-person clipping also whole persons removed/added and records added
# to existing persons — next to the bound C·max‖Q_j‖₂ the ledger was charged. Our datasets carry no
# person id, so the clipped case groups records into seeded pseudo-persons of about three records.

# %%
eps_check = min(epsilons)
checks = [exp.sensitivity_check(ds, eps_check, delta=delta, threshold=threshold, max_neighbours=settings["max_neighbours"])
          for ds in datasets]
checks += [exp.sensitivity_check(ds, eps_check, delta=delta, threshold=threshold, clip=clip,
                                 max_neighbours=settings["max_neighbours"]) for ds in datasets]
sens = pd.concat(checks, ignore_index=True)
save_table(sens, "07_adagrid_sensitivity")
assert (sens["max_ratio"] <= 1 + 1e-9).all(), sens
assert np.allclose(sens[["min_column_norm", "max_column_norm"]], 1.0, atol=1e-12)
sens

# %% [markdown]
# Reading the results: the two variants differ only where the adaptive matrices are not identity.
# At high ε nearly every parent cell is large, so round 3 keeps more identity rows and the variants
# converge; on binary nltcs (tiny marginals, all counts large) they coincide for ε ≥ 1 up to a
# handful of aggregate rows. On adult, most cells of the sparse 3-way marginals (e.g. capital-gain ×
# capital-loss × income) are measured by aggregate rows at every ε, and in our full-profile runs
# (5 seeds) the adaptive grid has the lower error on the measured marginals and on all 3-way marginals,
# most clearly at small ε; on nltcs the differences are within seed-to-seed noise. The paper's quoted
# noise scales (5739.36, 895) do not follow from its own formula (docs/notes/adaptive_grid.md); the mechanism
# uses the formula.
