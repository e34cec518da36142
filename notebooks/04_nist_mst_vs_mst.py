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
# # 04 — NIST-MST vs MST (Table 5, Figure 3 and the selection-quality table, in kind)
#
# R. McKenna, G. Miklau & D. Sheldon, *Winning the NIST Contest: A scalable and general approach to
# differentially private synthetic data*, Journal of Privacy and Confidentiality 11(3), 2021, arXiv:2108.04978:
# §5 NIST-MST (Algorithms 2–5, 7–10) and Figure 3, §6 MST (Algorithm 6), §7 Table 5 and the appendix
# table on the quality of the selected marginals.
#
# **The census data of the 2018 challenge is not available**, so both tables are reproduced *in kind*:
# on the adult public/private split — `adult-pub` (3,238 records) plays the provisional public data
# NIST-MST selects on, `adult-priv` (32,384 records) the sensitive data — at ε ∈ {0.3, 1, 8} and
# δ = 1e-9 (about 1/n², as the contest's δ ≈ 2.3e-12 was for its 661k records). The contest's
# SEX × CITY × INCWAGE marginal becomes sex × native-country × income>50K. The three scores are the
# 2018 challenge's criteria as `margsynth.metrics.nist2018` scores them (docs/notes/nist2018.md): the
# mean TV of 100 random 3-way marginals; the challenge's high-order-conjunction test (NIST Technical
# Note 2151: 300 test cases built around real records, `min(1, Δ / ln 1000)`); and income inequality
# (per-city Gini indices of income and the cities' gender-pay-gap ranking, a formula of ours), each in
# [0, 1], lower is better (Table 5 reports one minus the challenge's score). Our older stand-in for the
# third criterion, the TV of the income distribution within each sex × country group, is shown as
# "target marginal (ours)". Adult has 15 attributes against the census's 98, so a test case restricts
# about 2 attributes instead of about 10 and the absolute scores stay far below the published ones:
# the published numbers are shown beside ours for the **ordering** of the mechanisms per criterion and
# ε, not for their level.
#
# MST is configured as in §7 (the designated pairs as Algorithm 6's initial cliques, the designated
# triple measured too, Algorithm 5's weights); the independent-marginals baseline spends the whole
# budget on one-way marginals. All three get their zCDP budget from (ε, δ) by Prop. 4 — NIST-MST's
# Eq. 5.1 is that bound in closed form, and MST's appendix states it — so they spend the same ρ
# (`margsynth`'s `MST()` defaults to the authors' tighter CKS conversion; `mst-prop4` is this setting).
#
# **Quick profile:** 2 seeds and 1,000 Private-PGM iterations (full: 5 seeds and the authors' 5,000); the
# mechanisms' order shows wherever the gap exceeds the spread over seeds (see the reading at the end).

# %% tags=["parameters"]
profile = "quick"  # "quick": 2 seeds, 1,000 Private-PGM iterations; "full": 5 seeds, 5,000 (the authors' setting)
seeds = None  # list of seeds; None: the profile's
epsilons = [0.3, 1.0, 8.0]
iters = None  # Private-PGM iterations; None: the profile's
workers = None  # local worker processes for the Table 5 runs; None: the profile's (quick: 2, full: 1)

# %%
from margsynth.data import load
from margsynth.experiments import nist_mst as exp
from margsynth.metrics.suite import designated_triple
from margsynth.plotting import nist_mst as figures
from margsynth.plotting import save_figure, save_table, use_style

use_style()
cfg = exp.PROFILES[profile]
seeds = list(cfg["seeds"] if seeds is None else seeds)
iters = int(cfg["iters"] if iters is None else iters)
workers = cfg["workers"] if workers is None else workers
print(f"profile={profile}: seeds={seeds}, epsilons={epsilons}, Private-PGM iterations={iters}")

# %% [markdown]
# ## Table 5 analogue: the three challenge criteria and their mean, mean ± sd over seeds

# %%
runs = exp.table5(epsilons=tuple(epsilons), seeds=tuple(seeds), iters=iters, workers=workers)
save_table(runs, "04_table5_runs")
summary = exp.table5_summary(runs)
save_table(summary, "04_table5")
show = summary.copy()
for c in [*exp.SCORES, "overall", *exp.EXTRA_SCORES]:
    show[c] = [f"{m:.3f} ± {s:.3f}" for m, s in zip(summary[f"{c} mean"], summary[f"{c} sd"])]
show[["epsilon", "mechanism", *exp.SCORES, "overall", *exp.EXTRA_SCORES, "seeds", *[f"published {c}" for c in [*exp.SCORES, "overall"]]]]

# %% [markdown]
# The order of the mechanisms, best first, per criterion and ε: ours ("<" when the means differ by more
# than one standard deviation over seeds, else "≈") and the published one (census; Table 5 has no
# independent baseline), and whether NIST-MST and MST come in the same order ("tie": equal published
# values; "within sd": ours closer than the spread over seeds).

# %%
order = exp.table5_ordering(summary)
save_table(order, "04_table5_ordering")
order

# %%
fig = figures.table5(summary, epsilons)
save_figure(fig, "04_table5")

# %% [markdown]
# ## Figure 3 analogue: the marginals NIST-MST selected
#
# Attributes are nodes and measured pairs edges: the maximum spanning tree of the public data's mutual
# information (Algorithm 5 steps 1–2, designated pairs boosted) in black, the extra edges of step 4 dotted
# red with their triples as shaded triangles, the designated sex × native-country × income>50K clique in
# green. NIST-MST selects on the public data, but over the domain compressed by its noisy one-way
# marginals (Algorithm 4), so the selection changes with ε; cliques not selected at every ε are underlaid
# in yellow. First seed of the Table 5 runs.

# %%
fig3 = exp.figure3_data(epsilons=tuple(epsilons), seed=seeds[0], iters=iters)
save_table(fig3.assign(clique=fig3["clique"].map(" × ".join)), "04_figure3_selection")
dom = load("adult-priv").domain
fig = figures.selection(fig3, epsilons, dom.names, designated=designated_triple(dom))
save_figure(fig, "04_figure3_selection")
fig3.groupby(["epsilon", "kind"]).size().unstack(fill_value=0)

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
fig = figures.selection_quality(sel)
save_figure(fig, "04_selection_quality")

# %% [markdown]
# **Reading the results** (numbers of the quick profile: 2 seeds, 1,000 Private-PGM iterations). On census
# data NIST-MST and MST were within 0.01 of each other on every criterion, MST slightly better at ε = 0.3
# and NIST-MST slightly better at ε = 8. On adult-priv (32k records) the orderings follow the same pattern
# wherever the gap exceeds the spread over seeds: at ε = 0.3 MST is best on 3-way marginals (0.184 vs
# NIST-MST's 0.198) and income inequality (0.34 vs 0.38); at ε = 8 NIST-MST is best on 3-way marginals
# (0.078 vs 0.094), conjunctions and overall (0.074 vs 0.089); at ε = 1 the two are within a standard
# deviation of each other everywhere. NIST-MST normalises its budget over about 30 weighted 2- and 3-way
# measurements (Algorithm 1), so at ε = 0.3 its 3-way score is no better than the independent baseline's,
# while at ε = 8 its extra triples make it the best of the three. Both mechanisms beat the baseline on
# every criterion at ε ≥ 1 (income inequality at ε = 1 only within the seeds' spread). The conjunction
# scores stay at 0.006–0.014 against the published 0.14–0.17: with p = 0.1 on 15 attributes a test case
# restricts about 2 attributes (about 10 on the census), and such low-order frequencies are easy to match;
# docs/notes/nist2018.md shows that about 10 attributes per case put adult in the published range. The
# test's floor of 10⁻⁶ makes one entirely missed case dominate: one MST run at ε = 0.3 scores 0.08, hence
# its 0.048 ± 0.046. Income inequality (per-country Gini indices and gender-pay-gap ranking, 14 countries
# with at least 20 records of each sex) separates the baseline clearly; our older target-marginal score
# shows the same, with both mechanisms an order of magnitude below the baseline thanks to the forced,
# up-weighted designated triple. In Figure 3 the spanning tree around the designated clique is the same at
# every ε, while the age/education cluster changes: NIST-MST selects on the public data, but over the
# domain compressed by its noisy one-way marginals. In the selection table, both the public tree and
# Algorithm 6 come within a few percent of the best tree's mutual information and far above a random
# tree, as in the paper; Algorithm 6 improves with ε.
