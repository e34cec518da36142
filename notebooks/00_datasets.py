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
# licence — the Baltimore 911 incidents, the record datasets (integer codes over a domain) and the raw table of
# notebook 09 (rows and columns only: a raw table has no domain until its schema is chosen) — and the profile of
# the record datasets' attribute cardinalities. This notebook also proves the runner end to end:
# `margsynth reproduce --only 00`.
#
# **Quick profile:** the same as the full one (there is nothing to shorten); the overview is complete in both.
#
# Data are fetched (and SHA-256-verified) from the pinned URLs or a local mirror (`MARGSYNTH_DATA_MIRROR`);
# datasets that cannot be fetched are listed from their stored schema.

# %% tags=["parameters"]
profile = "quick"  # "quick" or "full": same work here, the notebook is small either way
load_unavailable = False  # True: load offline surrogates for datasets that cannot be fetched

# %%
from margsynth.experiments import datasets as exp
from margsynth.plotting import datasets as figures
from margsynth.plotting import save_figure, save_table, use_style

use_style()
overview = exp.overview(load_unavailable=load_unavailable)
save_table(overview, "00_datasets")
overview

# %%
card = exp.cardinalities(load_unavailable=load_unavailable)
fig = figures.cardinality_profile(card)
save_figure(fig, "00_cardinality_profile")
card.groupby("dataset")["size"].describe()[["count", "min", "50%", "max"]]
