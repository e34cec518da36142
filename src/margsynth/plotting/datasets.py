"""Notebook 00's figure: the attribute-cardinality profile of the registered record datasets."""

from __future__ import annotations

import pandas as pd
import seaborn as sns

from . import ONE_COLUMN, styled
from ._common import legend_below, subplots
from .labels import log_axis

__all__ = ["cardinality_profile"]


@styled
def cardinality_profile(card: pd.DataFrame):
    """One row per dataset (by median attribute size), one point per attribute at its number of
    values (log scale), coloured by whether the attribute is ordinal; ``card`` as
    :func:`margsynth.experiments.datasets.cardinalities` returns it."""
    card = card.assign(kind=card["ordinal"].map({True: "ordinal", False: "categorical"}))
    order = list(card.groupby("dataset")["size"].median().sort_values().index)
    fig, axes = subplots(1, 1, width=ONE_COLUMN, height=0.22 * len(order) + 1.1)
    ax = axes[0, 0]
    sns.stripplot(data=card, x="size", y="dataset", hue="kind", hue_order=["categorical", "ordinal"], order=order,
                  jitter=0.25, alpha=0.75, size=3, ax=ax, legend=False)  # fmt: skip
    log_axis(ax, "x")
    ax.set_xlabel("values per attribute (log scale)")
    ax.set_ylabel("dataset")
    colours = sns.color_palette()
    handles = [ax.scatter([], [], color=colours[i], s=9) for i in range(2)]
    legend_below(fig, handles, ["categorical attribute", "ordinal attribute"], ncols=2)
    return fig
