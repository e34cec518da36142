"""Notebook 08's figures: PrivSyn (Z. Zhang, T. Wang, N. Li, J. Honorio, M. Backes, S. He, J. Chen &
Y. Zhang, *PrivSyn: Differentially Private Data Synthesis*, USENIX Security 2021, arXiv:2012.15128)
-- Algorithm 1's selection trace, the budget per measured marginal (Eq. 1), PrivSyn + GUM against
PrivSyn's selection + Private-PGM, MST and MST + GUM, and GUM's convergence."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from ..experiments.privsyn import MECHANISMS
from . import TWO_COLUMN, styled
from ._common import epsilon_axis, legend_below, lines_with_sd, proxy, series_styles, style_handles, subplots, suptitle
from .labels import log_axis

__all__ = ["METRIC_LABELS", "budget", "gum_convergence", "selection_trace", "versus_mst"]

METRIC_LABELS = {
    "tv_2way": "2-way TV",
    "tv_3way": "3-way TV",
    "range_queries": "range-query error",
    "counting_queries": "counting-query error",
}
QUANTITY_LABELS = {
    "mean_tv": "mean TV to the targets",
    "max_tv": "largest TV to a target",
    "changed_fraction": "records changed",
}


@styled
def selection_trace(selection: pd.DataFrame, *, seed: int):
    """Algorithm 1's error estimate E_t / E_0 after each greedy step, one line per ε, one panel
    per dataset; the open marker is the rejected step where the selection stops."""
    sel = selection[selection["seed"] == seed].copy()
    sel["ratio"] = sel["error"] / sel.groupby(["dataset", "epsilon", "seed"])["error"].transform("first")
    datasets = list(dict.fromkeys(sel["dataset"]))
    epsilons = sorted(set(sel["epsilon"]))
    colours = mpl.colormaps["viridis"](np.linspace(0.1, 0.85, len(epsilons)))
    fig, axes = subplots(1, len(datasets), width=TWO_COLUMN, height=2.5)
    for ax, ds in zip(axes[0], datasets):
        handles, labels = [], []
        for c, eps in zip(colours, epsilons):
            g = sel[(sel["dataset"] == ds) & (sel["epsilon"] == eps)]
            acc, stop = g[g["accepted"]], g[~g["accepted"]]
            ax.plot(acc["step"], acc["ratio"], marker=".", color=c)
            ax.plot(stop["step"], stop["ratio"], marker="o", mfc="none", color=c, ls="none")
            handles.append(proxy(color=c, marker="."))
            labels.append(f"ε = {eps:g}: {len(acc) - 1} pairs")
        ax.set(title=ds, xlabel="greedy step t", ylabel="$E_t \\, / \\, E_0$")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    suptitle(fig, "PrivSyn Algorithm 1: error estimate per greedy step (open marker: the rejected step)")
    return fig


@styled
def budget(budget: pd.DataFrame, *, epsilon: float, seed: int):
    """Each measured marginal's share of the marginals' ρ, largest first (Eq. 1: ρ_i ∝ c_i^(2/3);
    the 1-way marginals share 10% evenly), coloured by kind, one panel per dataset."""
    b = budget[(budget["epsilon"] == epsilon) & (budget["seed"] == seed)].copy()
    kinds = {"combined clique (Alg. 2)": "C1", "pair": "C0", "1-way": "0.55"}
    b["kind"] = np.where(b["order"] == 1, "1-way", np.where(b["order"] == 2, "pair", "combined clique (Alg. 2)"))
    datasets = list(dict.fromkeys(b["dataset"]))
    fig, axes = subplots(1, len(datasets), width=TWO_COLUMN, height=2.5)
    for ax, ds in zip(axes[0], datasets):
        g = b[b["dataset"] == ds].sort_values("rho", ascending=False)
        ax.bar(np.arange(1, len(g) + 1), g["share"], color=g["kind"].map(kinds), width=0.8)
        ax.set_yscale("log")
        log_axis(ax, "y")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(title=f"{ds}, ε = {epsilon:g}: {len(g)} marginals", xlabel="measured marginal, by budget",
               ylabel="share of ρ (log scale)")  # fmt: skip
    legend_below(fig, [Patch(color=c) for c in kinds.values()], list(kinds), ncols=3)
    suptitle(fig, "Budget per measured marginal (Eq. 1: $\\rho_i \\propto c_i^{2/3}$; the 1-way marginals share 10%)")
    return fig


@styled
def versus_mst(runs: pd.DataFrame, *, delta: float):
    """One panel per dataset and metric: each mechanism's error against ε (log-log; mean over
    seeds, error bars: one standard deviation); runs that were refused (model too large) are
    missing points (``runs`` as :func:`margsynth.experiments.privsyn.compare` returns it)."""
    ok = runs[runs["status"] == "ok"]
    metrics = [m for m in METRIC_LABELS if m in runs and runs[m].notna().any()]
    order = [v for v in MECHANISMS.values() if v in set(runs["label"])]
    datasets = list(dict.fromkeys(runs["dataset"]))
    epsilons = sorted(set(runs["epsilon"]))
    styles = series_styles(order)
    fig, axes = subplots(len(datasets), len(metrics), width=TWO_COLUMN, height=1.75 * len(datasets) + 0.95,
                         sharex=True)  # fmt: skip
    for row, ds in zip(axes, datasets):
        for ax, metric in zip(row, metrics):
            lines_with_sd(ax, ok[ok["dataset"] == ds], "epsilon", metric, "label", order, styles)
            epsilon_axis(ax, epsilons)
            log_axis(ax, "y")
            ax.set_title(f"{ds}: {METRIC_LABELS[metric]}")
            ax.set_ylabel("error (log scale)")
    for ax in axes[:-1].ravel():
        ax.set_xlabel("")
    handles, labels = style_handles(order, styles)
    legend_below(fig, handles, labels, ncols=2, title="mechanism")
    suptitle(fig, f"PrivSyn against MST, GUM against Private-PGM (δ = {delta:g})")
    return fig


@styled
def gum_convergence(traces: pd.DataFrame, *, seed: int):
    """GUM's distance to its targets and the share of records it changes, per round (log y), one
    panel per dataset and quantity; colour: ε, line style: the mechanism."""
    tr = traces[traces["seed"] == seed]
    datasets = list(dict.fromkeys(tr["dataset"]))
    epsilons = sorted(set(tr["epsilon"]))
    labels = list(dict.fromkeys(tr["label"]))
    colours = dict(zip(epsilons, mpl.colormaps["viridis"](np.linspace(0.1, 0.85, len(epsilons)))))
    dashes = dict(zip(labels, ["-", "--", ":", "-."]))
    fig, axes = subplots(len(datasets), len(QUANTITY_LABELS), width=TWO_COLUMN,
                         height=1.7 * len(datasets) + 1.0, sharex=True)  # fmt: skip
    for row, ds in zip(axes, datasets):
        for ax, (q, qlabel) in zip(row, QUANTITY_LABELS.items()):
            for (eps, lab), g in tr[tr["dataset"] == ds].groupby(["epsilon", "label"], sort=False):
                g = g.sort_values("round")
                if q == "changed_fraction":
                    g = g[g["round"] > 0]
                ax.plot(g["round"], g[q], color=colours[eps], linestyle=dashes[lab], marker="none")
            log_axis(ax, "y")
            ax.set_title(f"{ds}: {qlabel}")
            ax.set_ylabel("share of the records (log scale)" if q == "changed_fraction" else "TV (log scale)")
    for ax in axes[-1]:
        ax.set_xlabel("GUM round")
    handles = [proxy(color=colours[e]) for e in epsilons] + [proxy(color="0.3", linestyle=dashes[lab]) for lab in labels]
    legend_below(fig, handles, [f"ε = {e:g}" for e in epsilons] + labels, ncols=len(epsilons) + len(labels))
    suptitle(fig, "GUM convergence")
    return fig
