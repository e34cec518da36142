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
# # 00 — The datasets
#
# Every dataset in margsynth's registry: records, attributes, domain sizes, where it comes from and under which
# licence, and the profile of attribute cardinalities. This notebook also proves the runner end to end:
# `margsynth reproduce --only 00`.
#
# Data are fetched (and SHA-256-verified) from the pinned URLs or a local mirror (`MARGSYNTH_DATA_MIRROR`);
# datasets that cannot be fetched are listed from their stored schema.

# %% tags=["parameters"]
profile = "quick"  # "quick" or "full": same work here, the notebook is small either way
load_unavailable = False  # True: load offline surrogates for datasets that cannot be fetched

# %%
import matplotlib.pyplot as plt
import seaborn as sns

from margsynth.experiments import datasets as exp
from margsynth.plotting import save_figure, save_table, use_style

use_style()
overview = exp.overview(load_unavailable=load_unavailable)
save_table(overview, "00_datasets")
overview

# %%
card = exp.cardinalities(load_unavailable=load_unavailable)
order = card.groupby("dataset")["size"].median().sort_values().index
fig, ax = plt.subplots(figsize=(8, 4.5))
sns.stripplot(data=card, x="size", y="dataset", hue="ordinal", order=order, jitter=0.25, alpha=0.7, ax=ax)
ax.set_xscale("log")
ax.set_xlabel("attribute cardinality (log scale)")
ax.set_ylabel("")
ax.set_title("Attribute-cardinality profile of the registered datasets")
save_figure(fig, "00_cardinality_profile")
