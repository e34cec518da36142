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
# # 04 — NIST-MST vs MST (Table 5 and the selection-quality table, in kind)
#
# R. McKenna, G. Miklau & D. Sheldon, *Winning the NIST Contest: A scalable and general approach to
# differentially private synthetic data*, Journal of Privacy and Confidentiality 11(3), 2021, arXiv:2108.04978:
# §5 NIST-MST (Algorithms 2–5, 7–10), §6 MST (Algorithm 6), §7 Table 5 and the appendix table on the
# quality of the selected marginals.
#
# **The census data of the 2018 challenge is not available**, so both tables are reproduced *in kind*:
# on the adult public/private split — `adult-pub` (3,238 records) plays the provisional public data
# NIST-MST selects on, `adult-priv` (32,384 records) the sensitive data — at ε ∈ {0.3, 1, 8} and
# δ = 1e-9 (about 1/n², as the contest's δ ≈ 2.3e-12 was for its 661k records). The contest's
# SEX × CITY × INCWAGE marginal becomes sex × native-country × income>50K. The three scores are the
# generic NIST criteria of `margsynth.metrics.nist2018` (our reading of the 2018 challenge's scoring rules:
# docs/notes/nist2018.md), each in [0, 1], lower is better;
# the published numbers are shown beside ours for the ordering of mechanisms and the trend in ε,
# not for their level (different data, and the official scoring script is not available).
#
# MST is configured as in §7 (the designated pairs as Algorithm 6's initial cliques, the designated
# triple measured too, Algorithm 5's weights); the independent-marginals baseline spends the whole
# budget on one-way marginals. All three get their zCDP budget from (ε, δ) by Prop. 4 — NIST-MST's
# Eq. 5.1 is that bound in closed form, and MST's appendix states it — so they spend the same ρ
# (`margsynth`'s `MST()` defaults to the authors' tighter CKS conversion; `mst-prop4` is this setting).

# %% tags=["parameters"]
profile = "quick"  # "quick": 2 seeds, 1,000 Private-PGM iterations; "full": 5 seeds, 5,000 (the authors' setting)
seeds = None  # list of seeds; None: the profile's
epsilons = [0.3, 1.0, 8.0]
iters = None  # Private-PGM iterations; None: the profile's

# %%
import matplotlib.pyplot as plt
import pandas as pd

from margsynth.experiments import nist_mst as exp
from margsynth.plotting import save_figure, save_table, use_style

use_style()
cfg = exp.PROFILES[profile]
seeds = list(cfg["seeds"] if seeds is None else seeds)
iters = int(cfg["iters"] if iters is None else iters)
print(f"profile={profile}: seeds={seeds}, epsilons={epsilons}, Private-PGM iterations={iters}")

# %% [markdown]
# ## Table 5 analogue: three NIST scores and their mean, mean ± sd over seeds

# %%
runs = exp.table5(epsilons=tuple(epsilons), seeds=tuple(seeds), iters=iters)
save_table(runs, "04_table5_runs")
summary = exp.table5_summary(runs)
save_table(summary, "04_table5")
show = summary.copy()
for c in [*exp.SCORES, "overall"]:
    show[c] = [f"{m:.3f} ± {s:.3f}" for m, s in zip(summary[f"{c} mean"], summary[f"{c} sd"])]
show[["epsilon", "mechanism", *exp.SCORES, "overall", "seeds", *[f"published {c}" for c in [*exp.SCORES, "overall"]]]]

# %%
fig, axes = plt.subplots(1, 4, figsize=(15, 3.8), sharex=True)
colors = dict(zip(exp.MECHANISMS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
for ax, col in zip(axes, [*exp.SCORES, "overall"]):
    for mech, g in summary.groupby("mechanism", sort=False):
        ax.errorbar(g["epsilon"], g[f"{col} mean"], yerr=g[f"{col} sd"], marker="o", capsize=3, label=f"{mech} (adult)", color=colors[mech])
        pub = exp.PUBLISHED_TABLE5[exp.PUBLISHED_TABLE5["mechanism"] == mech]
        if len(pub):
            ax.plot(pub["epsilon"], pub[col], ls="--", marker="x", alpha=0.6, color=colors[mech], label=f"{mech} (census, published)")
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(epsilons, [str(e) for e in epsilons])
    ax.set_xlabel("epsilon")
    ax.set_title(col)
axes[0].set_ylabel("score (lower is better)")
axes[-1].legend(fontsize=8, loc="upper right")
fig.suptitle("Table 5 analogue: adult pub/priv (solid) vs the published census numbers (dashed)")
save_figure(fig, "04_table5")

# %% [markdown]
# ## Selection quality (the appendix table)
#
# Total mutual information, on the private data, of the 14 pairs each strategy selects: the best
# (true maximum spanning) tree, the public tree (Algorithm 5's maximum spanning tree on the public
# data, without boosts or the step-4 triples), MST's private selection (Algorithm 6) at each ε, and a
# uniformly random spanning tree. The published numbers (Arizona, Vermont; census) are in other units,
# so the shares of "Best" are the comparable quantity.

# %%
sel = exp.selection_quality(epsilons=tuple(epsilons), seeds=tuple(seeds))
save_table(sel, "04_selection_quality")
sel

# %%
fig, ax = plt.subplots(figsize=(8, 3.8))
x = range(len(sel))
ax.bar([i - 0.2 for i in x], sel["adult share of best"], width=0.4, yerr=sel["adult sd"] / sel["adult total MI"].iloc[0], capsize=3, label="adult pub/priv (ours)")
ax.bar([i + 0.2 for i in x], sel["Arizona share of best"], width=0.4, label="Arizona (published)")
ax.set_xticks(list(x), sel["selected marginals"], rotation=20, ha="right")
ax.set_ylabel("total MI / best tree's")
ax.set_ylim(0, 1.3)
ax.legend(loc="upper right", ncol=2)
ax.set_title("Quality of the selected marginals")
save_figure(fig, "04_selection_quality")

# %% [markdown]
# **Reading the results.** On census data (≈ 200–300k records per state) NIST-MST and MST were within
# 0.01 of each other on every score, MST slightly better at ε = 0.3 and NIST-MST slightly better at ε = 8.
# On adult-priv (32k records) the same ε buys far less signal per marginal, which magnifies that pattern:
# NIST-MST normalises its whole budget over about 30 weighted 2- and 3-way measurements (Algorithm 1),
# so at ε = 0.3 each ordinary marginal is measured with roughly ten times the noise of a single one and
# its 3-way score is no better than the independent baseline's, whereas at ε = 8 its extra triples
# make it the best of the three. MST beats the baseline at every ε. On the target score both
# mechanisms profit from the forced, up-weighted designated triple (the baseline, which measures no
# correlation, is an order of magnitude worse). The high-order-conjunction score is tiny on adult for
# every mechanism: with p = 0.1 per attribute on 15 attributes most conjunctions restrict one or two
# attributes to random value subsets, whose frequencies are easy to match. In the selection table,
# both the public tree and Algorithm 6 come within a few percent of the best tree's mutual information
# and far above a random tree, as in the paper; Algorithm 6 improves with ε.
