"""Notebook 07's figures: the adaptive-granularity mechanism (R. McKenna, winning write-up of
sprint 3 of the NIST PSCR Differential Privacy Temporal Map Challenge, 2020-21) against identity
queries on the same marginals with the same σ: the error of the measured marginals and of all
3-way marginals, the error by round, and the identity and aggregate rows per round."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from . import TWO_COLUMN, styled
from ._common import epsilon_axis, legend_below, lines_with_sd, series_styles, style_handles, subplots, suptitle
from .labels import log_axis

__all__ = ["MIN_DECADES", "error_by_round", "rows_per_round", "workload_error"]

QUERIES = ("adaptive", "identity")
QUERY_LABELS = {"adaptive": "adaptive grid", "identity": "identity queries"}
#: Every error axis spans at least this many decades, so that equal ratios look equal in every
#: panel and a difference of a few percent looks small.
MIN_DECADES = 1.0


def _error_grid(errors: pd.DataFrame, workloads, *, title: str, height_per_row: float):
    datasets = list(dict.fromkeys(errors["dataset"]))
    epsilons = sorted(set(errors["epsilon"]))
    styles = series_styles(QUERIES)
    fig, axes = subplots(len(datasets), len(workloads), width=TWO_COLUMN,
                         height=height_per_row * len(datasets) + 0.9, sharex=True)  # fmt: skip
    for row, ds in zip(axes, datasets):
        for ax, wl in zip(row, workloads):
            sub = errors[(errors["dataset"] == ds) & (errors["workload"] == wl)]
            lines_with_sd(ax, sub, "epsilon", "error", "queries", QUERIES, styles)
            epsilon_axis(ax, epsilons)
            log_axis(ax, "y", min_decades=MIN_DECADES)
            ax.set_title(f"{ds}: {wl}")
            ax.set_ylabel("mean TV error")
    for ax in axes[:-1].ravel():
        ax.set_xlabel("")
    handles, _ = style_handles(QUERIES, styles)
    legend_below(fig, handles, [QUERY_LABELS[q] for q in QUERIES], ncols=2)
    suptitle(fig, title)
    return fig


@styled
def workload_error(errors: pd.DataFrame, *, delta: float):
    """Mean TV error of the measured marginals and of all 3-way marginals against ε (log-log; error
    bars: one standard deviation over seeds), adaptive grid against identity queries (``errors`` as
    :func:`margsynth.experiments.adagrid.compare` returns it)."""
    workloads = [w for w in ("measured marginals", "all 3-way marginals") if w in set(errors["workload"])]
    return _error_grid(errors, workloads, height_per_row=1.75,
                       title=f"Adaptive grid against identity queries (same marginals, same σ; δ = {delta:g})")


@styled
def error_by_round(errors: pd.DataFrame):
    """Mean TV error of the measured k-way marginals (round k) against ε."""
    workloads = sorted(w for w in set(errors["workload"]) if w.startswith("measured ") and w[9:10].isdigit())
    return _error_grid(errors, workloads, height_per_row=1.6, title="Error of the measured marginals by order k (round k)")


@styled
def rows_per_round(rounds: pd.DataFrame, *, seed: int):
    """Identity and aggregate rows of the adaptive query matrices per round (log scale), one panel per
    dataset and ε (``rounds`` as :func:`margsynth.experiments.adagrid.compare` returns it)."""
    ad = rounds[(rounds["queries"] == "adaptive") & (rounds["seed"] == seed)]
    datasets = list(dict.fromkeys(ad["dataset"]))
    epsilons = sorted(set(ad["epsilon"]))
    kinds = (("identity_rows", "identity rows"), ("aggregate_rows", "aggregate rows"))
    styles = series_styles([k for k, _ in kinds])
    fig, axes = subplots(len(datasets), len(epsilons), width=TWO_COLUMN, height=1.55 * len(datasets) + 0.9,
                         sharex=True, sharey="row")  # fmt: skip
    for row, ds in zip(axes, datasets):
        for ax, e in zip(row, epsilons):
            sub = ad[(ad["dataset"] == ds) & (ad["epsilon"] == e)].sort_values("round")
            x = sub["round"].to_numpy()
            for k, (col, _) in enumerate(kinds):
                ax.bar(x + (k - 0.5) * 0.38, sub[col].clip(lower=0.5), width=0.38, color=styles[col]["color"])
            ax.set_title(f"{ds}, ε = {e:g}")
            ax.set_xticks(np.unique(x))
        log_axis(row[0], "y")
        row[0].set_ylabel("rows (log scale)")
        for ax in row:
            ax.set_ylim(bottom=0.7)
    for ax in axes[-1]:
        ax.set_xlabel("round k")
    handles = [Patch(color=styles[c]["color"]) for c, _ in kinds]
    legend_below(fig, handles, [label for _, label in kinds], ncols=2)
    suptitle(fig, "Rows of the adaptive query matrices per round")
    return fig
