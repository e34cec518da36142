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
# # 02 — AEMC: LP vs min-cost flow (MGD paper §6, §6.4, Appendix A)
#
# The MGD paper: Z. Li, T. Wang, T. Dang & N. Li, *MGD: A Utility Metric for Private Data Publication*,
# International Conference on Networking, Systems and Security (NSysS 2021), ACM, doi:10.1145/3491371.3491385.
#
# 1. Agreement of every solver (LP of §6.1 in both forms, flow on the full graph of Appendix A.1 and on the
#    neighbour graph of §6.3, `auto`) on random instances: ordinal, categorical, hierarchies, ∞ weights, explicit
#    metrics, unequal totals, Δ = 0.
# 2. Solve time and peak memory against the number of cells, 10 to 10⁶ (LP until it leaves the time budget;
#    the full graph while it fits), with a reference-style implementation that builds the graph arc by arc in a
#    Python loop, as the authors' code did.
# 3. The 580,464-cell Baltimore 3-way marginal (`full` profile).
#
# **Quick profile:** 150 random instances (full: 1,000), sizes up to 10⁴ cells (full: 10⁶), no Baltimore 3-way
# marginal; the claims show in both: every solver finds the same optimum, the flow on the neighbour graph (and
# `auto`) is the fastest from 10³ cells on, and the LP and the full graph the slowest and most memory-hungry.

# %% tags=["parameters"]
profile = "quick"  # "quick" (CI, minutes) or "full" (paper scale)
seed = 0

# %%
from IPython.display import display

from margsynth.experiments import aemc_solvers as exp
from margsynth.plotting import aemc as figures
from margsynth.plotting import save_figure, save_table, use_style

use_style()
cfg = exp.PROFILES[profile]
agree = exp.agreement(cfg["n_agree"], seed=seed)
save_table(agree, "02_aemc_agreement")
print(f"{len(agree)} instances, max relative difference between solvers: {agree.max_rel_diff.max():.2e}")
agree.groupby("kinds").max_rel_diff.agg(["count", "max"]).sort_values("count", ascending=False).head(15)

# %% [markdown]
# ## Time and memory against the number of cells

# %%
sc = exp.scaling(profile, seed=seed)
save_table(sc, "02_aemc_scaling")
fig = figures.solver_scaling(sc, profile=profile)
save_figure(fig, "02_aemc_lp_vs_flow")
sc.pivot_table(index="cells", columns="method", values="seconds").round(3)

# %%
# every method found the same optimum at every size
spread = sc.groupby("cells").cost.agg(lambda c: (c.max() - c.min()) / max(1.0, abs(c.max())))
print(f"max relative spread of the optimum across methods: {spread.max():.2e}")

# %% [markdown]
# ## The Baltimore 3-way marginal (580,464 cells)

# %%
if cfg["baltimore"]:
    b3 = exp.baltimore_3way("privatized-mediocre-quality", reference=True)
    save_table(b3, "02_aemc_baltimore_3way")
    display(b3)
else:
    print("full profile only (about 15 s ours, about 25 s the reference loop on this machine); see benchmarks/bench_aemc.py")
