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
# # 05 — PrivPGD benchmark (Figures 1–2 and the appendix tables, in kind)
#
# K. Donhauser, J. Abad, N. Hulkund & F. Yang, *Privacy-preserving data release leveraging optimal transport and
# particle gradient descent*, ICML 2024, arXiv:2401.17823, §4.1–4.3.
#
# Every available dataset (adult, nltcs, titanic and any other registered record dataset present
# locally) at ε ∈ {0.2, 1, 2.5}, δ = 1e-5; seven methods: **PrivPGD** (ours, `margsynth.inference.privpgd`),
# **PGM+MST**, **PGM+AIM**, **GUM** (PrivSyn; not in the paper) and the paper's three query-based
# methods, each given all 2-way marginals as its query workload (§4): **RAP** (Aydore et al., ICML 2021,
# arXiv:2103.06641; `margsynth.mechanisms.rap`), **GEM** (Liu, Vietri & Wu, NeurIPS 2021,
# arXiv:2106.07153; `margsynth.mechanisms.gem`) and **Private-GSD** (Liu, Tang, Vietri & Wu, ICML 2023,
# arXiv:2306.03257, one-shot as the PrivPGD paper ran it; `margsynth.mechanisms.private_gsd`). Each job
# runs through `margsynth.experiments.sweep` (the fixed 80/20 split, synthesis on the 80%, results
# memoized on disk by their inputs). The six metrics of §4.1: downstream error (gradient boosting
# trained on synthetic, tested on the held-out 20%; the real-data baseline beside it), covariance
# error, 3-sparse counting and thresholding query errors (Eq. 9), average sliced W1 (Eq. 10) and TV
# (Eq. 11) over all 2-way marginals. Lower is better.
#
# **The paper's datasets (ACS, Taxi, Black Friday, …) are not available here**, so the comparison with
# its tables is *in kind*: per-method medians and mean ranks, never cell by cell.
#
# Profiles: `quick` (titanic and nltcs at ε ∈ {0.2, 2.5}, 1 seed — four columns of Figure 1 and two panels of
# Figure 2; PrivPGD `fast` with 40 epochs and 10,000 particles, RAP, GEM and Private-GSD with their `fast` presets,
# PGM+MST, PGM+AIM and GUM with their defaults): 28 jobs, about 90 CPU-seconds on two worker processes. `full` =
# the paper's settings (3 seeds, PrivPGD
# with its default hyperparameters, RAP / GEM / Private-GSD with their `default` presets). Restricted to
# adult it took 55 minutes on this 2-core CPU (2026-11-28; PrivPGD 5–8 min per run, GEM 3, RAP and
# Private-GSD under 1, PGM+AIM up to 6 at ε = 2.5); its tables are kept as a published snapshot that the
# last section plots in every profile. Every available dataset multiplies that by the datasets; run it
# with `scheduler=` on a Dask cluster, or on a GPU.
#
# **Quick profile:** two small datasets, two budgets, one seed and the `fast` presets instead of the paper's
# datasets, three budgets, three seeds and default hyperparameters. The budget effect shows (the errors fall from
# ε = 0.2 to 2.5, except MST's on nltcs, which its spanning tree bounds); PrivPGD's lead on sliced W1 and the
# query errors does not with its `fast` preset — that claim needs the full profile.

# %% tags=["parameters"]
profile = "quick"  # "quick" or "full" (the paper's settings; ~1 h per dataset on 2 cores)
datasets = None  # list of dataset names; None: the profile's (quick: titanic, nltcs; full: every available dataset)
epsilons = None  # None: the profile's (quick: [0.2, 2.5]; full: [0.2, 1.0, 2.5])
seeds = None  # None: the profile's (full: [0, 1, 2])
workers = 2  # local processes for the sweep
scheduler = None  # a Dask scheduler address, e.g. "tcp://host:8786"

# %%
import time

import pandas as pd

from margsynth.experiments import privpgd_benchmark as exp
from margsynth.experiments import snapshots
from margsynth.plotting import privpgd as figures
from margsynth.plotting import save_figure, save_table, use_style

use_style()
cfg = exp.PROFILES[profile]
print(f"profile={profile}; available datasets: {exp.available_datasets()}")
print({k: v for k, v in cfg.items() if k != "params"})

# %% [markdown]
# ## The sweep: one row per (dataset, ε, method, seed)

# %%
t0 = time.perf_counter()
runs = exp.benchmark(profile, datasets=datasets, epsilons=epsilons, seeds=seeds, workers=workers, scheduler=scheduler,
                    progress=True)
print(f"sweep: {time.perf_counter() - t0:.0f} s ({len(runs)} jobs; cached jobs are read back)")
baseline = pd.DataFrame({"dataset": sorted(set(runs["dataset"]))})
baseline["downstream (real data)"] = [exp.real_baseline(d) for d in baseline["dataset"]]
save_table(runs, "05_runs")
metrics = list(exp.METRIC_LABELS)
table = runs.groupby(["dataset", "epsilon", "method"], sort=False)[metrics + ["seconds"]].mean().reset_index()
table = table.merge(baseline, on="dataset")
save_table(table, "05_table")
table

# %% [markdown]
# ## Figure 1 analogue: relative performance
#
# For each dataset, ε and metric, every method's (seed-mean) value divided by the best method's value
# (1 = best), as in the paper's Figure 1. With seven methods the paper's log-ratio bars would hide the
# best method (a bar of length log 1 = 0), so each panel is a heatmap instead: one row per method, one
# column per dataset and ε, the colour the method's rank there (1 = best) and the label its value
# relative to the best (`best` for the best, `×2.3` for 2.3 times the best, `×1.04` when close). Every method has a visible
# cell whatever the spread.

# %%
rel = exp.relative_performance(runs)
save_table(rel, "05_relative")
fig = figures.relative_performance(rel)
save_figure(fig, "05_relative_performance")
rel.pivot_table(index=["dataset", "epsilon", "method"], columns="metric", values="relative").round(2)

# %% [markdown]
# ## Figure 2 analogue: sliced W1 vs TV over the 2-way marginals
#
# PrivPGD minimises a sliced-Wasserstein loss, the PGM-based methods a TV/L2-type fit of the
# marginals; the paper's Figure 2 shows PrivPGD ahead on the first and the gap on the second. One marker
# per method and ε (the larger, the larger ε), a method's points joined in order of ε.

# %%
dist = exp.distance_table(runs)
save_table(dist, "05_distances")
fig = figures.distances(dist)
save_figure(fig, "05_distances")
dist

# %% [markdown]
# ## Beside the paper's tables (in kind)
#
# The paper's appendix tables (shipped with the package: `margsynth.experiments.published.load("privpgd_tables")`;
# block 0 = its default budget, most likely ε = 2.5) are on other datasets; we therefore put side by
# side, per method, the **median over datasets** of each metric and the **mean rank** among the paper's
# six methods — PrivPGD, PGM+MST, PGM+AIM, Private-GSD, GEM and RAP (1 = best) — for the paper's
# datasets (those with a row for all six: RAP and GEM ran out of memory on ACS Employment) and for
# ours at ε = 2.5 (GUM is not in the paper; it is in the table of all our methods below). Note the
# paper's TV column is printed as in its tables (its code reports the L1 norm, twice our TV).

# %%
paper = exp.paper_summary(block=0)
six = list(exp.PAPER_METHODS)
ours = exp.our_summary(runs[runs["method"].isin(six)], epsilon=2.5)
side = pd.concat([paper, ours], ignore_index=True)
save_table(side, "05_paper_vs_ours")
cols = ["source", "method", "groups"] + [f"{m} median" for m in metrics] + [f"{m} rank" for m in metrics]
side[cols].round(4)

# %%
ours_all = exp.our_summary(runs)
save_table(ours_all, "05_ours_all_methods")
ours_all.round(4)

# %% [markdown]
# **Reading the results.** The quick profile is a smoke run (one small dataset, one seed, a shortened
# PrivPGD, the `fast` presets of RAP, GEM and Private-GSD); conclusions need the full profile. Titanic's
# downstream target `Survived` has a third value for the 415 passengers of Kaggle's unlabeled test set,
# so even the real-data baseline errs on ~43%. What to look for, following the paper: PrivPGD should
# lead on the sliced-W1 distance and the query errors; the PGM-based methods, which fit the marginals
# in a TV/L2 sense, are strongest on TV, and more so at small ε (Appendix Figures 4–7 show PrivPGD's
# edge shrinking as ε decreases). Among the query-based methods the paper finds Private-GSD
# competitive, RAP near PGM+AIM and GEM clearly behind on TV; here their privacy is accounted under
# add/remove-one with a private record count like every other method (see
# `docs/notes/query_baselines.md`). On nltcs (16 binary attributes; in the full profile) the embedding is
# just {0.25, 0.75} per attribute, so the geometry PrivPGD exploits is absent and the methods are close.
# The PrivPGD `fast` preset used by the quick profile includes our consistency step (the projected
# marginals raked to common 1-way marginals; see `margsynth.inference.privpgd.generator`), the full
# profile uses the paper's algorithm and hyperparameters unchanged.

# %% [markdown]
# ## At the paper's scale: the published snapshot (adult)
#
# The full profile restricted to adult — all seven methods at ε ∈ {0.2, 1, 2.5}, three seeds, PrivPGD
# with the paper's hyperparameters (100,000 particles, its epochs, projections and learning-rate
# schedule), RAP, GEM and Private-GSD with their `default` presets — was run once and its tables
# committed (`results/published/05_privpgd_benchmark/`, with a manifest: commit, parameters, machine,
# wall time). Whatever the profile of this run, the cells below plot that snapshot with the same
# functions as above, without recomputing (`margsynth reproduce --only 05 -p profile full -p datasets
# "['adult']" --publish` makes it again).

# %%
NB05 = "05_privpgd_benchmark"
print(snapshots.describe(NB05))
snap = snapshots.load(NB05, "05_runs")
snap_rel = exp.relative_performance(snap)
fig = figures.relative_performance(snap_rel)
save_figure(fig, "05_published_relative_performance")
fig = figures.distances(exp.distance_table(snap))
save_figure(fig, "05_published_distances")
snap.groupby(["epsilon", "method"], sort=False)[metrics + ["seconds"]].mean().round(4)

# %% [markdown]
# Does PrivPGD lead as in the paper's Figure 1? Per metric and ε: PrivPGD's rank among the paper's six
# methods (1 = best), the best of the other five and PrivPGD's value relative to it (< 1: PrivPGD
# leads by that factor), whether that gap exceeds the two methods' seed standard deviations added, and
# PrivPGD's mean rank over the paper's own datasets in its appendix table (its default budget).

# %%
leads = exp.privpgd_leads(snap)
save_table(leads, "05_published_leads")
leads.pivot_table(index="metric", columns="epsilon", values=["rank", "PrivPGD / best other"], sort=False).round(3)

# %% [markdown]
# **Does PrivPGD lead on adult, as in the paper's Figure 1? No — on no metric at any ε.** In the snapshot (adult, ε ∈
# {0.2, 1, 2.5}, 3 seeds, the paper's settings) PrivPGD ranks 4th to 6th of the six paper methods in all 18 (metric,
# ε) cells, every gap beyond the seeds' spread: its TV over the 2-way marginals is 0.397 / 0.174 / 0.108 against
# PGM+AIM's 0.076 / 0.041 / 0.027 (5.2×, 4.2×, 4.0×), its sliced W1 2.6–4.9× the best (PGM+AIM at ε = 0.2, Private-GSD
# above), its counting and thresholding query errors 2.2–4.8× the best, its downstream error 11–21% above the best;
# Private-GSD, PGM+AIM and RAP share the first places. In the paper's tables (other datasets, its default budget)
# PrivPGD's mean rank is 1.4–2.6 per metric. Adult is not one of the paper's datasets; four of its attributes have
# 85–100 values, so its 2-way marginals reach 10,000 cells, each measured with 1/91 of the budget. We have not
# established how much of the gap is adult's and how much ours. One measured pointer: the quick profile's `fast`
# preset, whose projected marginals are made consistent first, halves the TV at ε = 0.2 on adult (0.172 against 0.388,
# seed 0) but not at ε = 2.5 (0.087 against 0.091), where PrivPGD stays behind every PGM method. A PrivPGD run at the
# paper's settings took 5–8 minutes of wall time (two jobs sharing the two cores), against about a second for PGM+MST
# and GUM and 5–240 s for PGM+AIM (the `seconds` column above).
