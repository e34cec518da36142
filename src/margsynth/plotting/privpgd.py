"""Notebooks 05 and 06's figures (K. Donhauser, J. Abad, N. Hulkund & F. Yang, *Privacy-preserving
data release leveraging optimal transport and particle gradient descent*, ICML 2024,
arXiv:2401.17823): the Figure 1 analogue (each method's value relative to the best, per metric,
dataset and ε), the Figure 2 analogue (sliced W1 against TV) and the Figure 3 analogue (a
protected query against γ)."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd

from ..experiments.privpgd_benchmark import METHOD_ORDER, METRIC_LABELS
from ..experiments.privpgd_constraints import SERIES
from ..experiments.privpgd_constraints import summary as constraint_summary
from . import ONE_COLUMN, TWO_COLUMN, styled
from ._common import MARKERS, legend_below, proxy, subplots, suptitle
from .labels import log_axis, plain_number

__all__ = ["constraint_figure3", "distances", "relative_label", "relative_performance"]


def relative_label(ratio: float) -> str:
    """A cell's label in Figure 1: ``best`` for the best method, else ``×`` the ratio to the best
    with as many decimals as it takes not to print ``×1.00`` (``×1.04``, ``×1.004``, ``×2.3``, ``×17``)."""
    if not np.isfinite(ratio):
        return "∞"
    if ratio == 1:
        return "best"
    if ratio >= 10:
        return f"×{ratio:.0f}"
    for decimals in (1, 2, 3, 4):
        text = f"{ratio:.{decimals}f}"
        if float(text) != 1.0 and (decimals > 1 or ratio >= 2):
            return f"×{text}"
    return f"×{ratio:.2g}"


@styled
def relative_performance(rel: pd.DataFrame):
    """Figure 1: one heat map per metric; rows are the methods, columns the datasets and ε; the
    colour is the method's rank there (1 = best), the label its value relative to the best
    (``rel`` as :func:`margsynth.experiments.privpgd_benchmark.relative_performance` returns it)."""
    metrics = [m for m in METRIC_LABELS if m in set(rel["metric"])]
    rel = rel.copy()
    if "rank" not in rel:
        rel["rank"] = rel.groupby(["dataset", "epsilon", "metric"])["value"].rank(method="average")
    datasets = list(dict.fromkeys(rel["dataset"]))
    epsilons = sorted(set(rel["epsilon"]))
    wheres = [(d, e) for d in datasets for e in epsilons if ((rel["dataset"] == d) & (rel["epsilon"] == e)).any()]
    methods = [m for m in dict.fromkeys((*METHOD_ORDER, *rel["method"])) if m in set(rel["method"])]
    n_m, n_w = len(methods), len(wheres)
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig, axes = subplots(nrows, ncols, width=TWO_COLUMN, height=nrows * (0.19 * n_m + 0.75) + 0.8,
                         sharex=True, sharey=True)  # fmt: skip
    cmap = mpl.colormaps["viridis"].resampled(max(n_m, 2))
    image = None
    for ax, metric in zip(axes.ravel(), metrics):
        sub = rel[rel["metric"] == metric].set_index(["method", "dataset", "epsilon"])
        rank = np.full((n_m, n_w), np.nan)
        ratio = np.full((n_m, n_w), np.nan)
        for i, m in enumerate(methods):
            for j, (d, e) in enumerate(wheres):
                if (m, d, e) in sub.index:
                    rank[i, j] = sub.loc[(m, d, e), "rank"]
                    ratio[i, j] = sub.loc[(m, d, e), "relative"]
        image = ax.imshow(rank, cmap=cmap, vmin=0.5, vmax=max(n_m, 2) + 0.5, aspect="auto")
        for i in range(n_m):
            for j in range(n_w):
                if np.isfinite(rank[i, j]):
                    ax.text(j, i, relative_label(ratio[i, j]), ha="center", va="center", fontsize=6,
                            color="white" if rank[i, j] <= (n_m + 1) / 2 else "black")  # fmt: skip
        ax.set_xticks(range(n_w), [f"{d}\nε = {plain_number(e)}" for d, e in wheres], fontsize=6.5)
        ax.set_yticks(range(n_m), methods)
        ax.tick_params(length=0)
        ax.set_title(METRIC_LABELS.get(metric, metric))
        ax.grid(False)
        for j in range(1, n_w):  # thin white lines between the columns, thicker between datasets
            ax.axvline(j - 0.5, color="white", lw=1.5 if wheres[j][0] != wheres[j - 1][0] else 0.5)
    for ax in axes.ravel()[len(metrics):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("method")
    for ax in axes[-1]:
        ax.set_xlabel("dataset and ε")
    if image is not None:
        bar = fig.colorbar(image, ax=axes, location="right", shrink=0.9, aspect=30, pad=0.02,
                           ticks=range(1, max(n_m, 2) + 1))  # fmt: skip
        bar.set_label(f"rank among the {n_m} methods (1 = best)")
        bar.ax.tick_params(length=0)
    suptitle(fig, "Figure 1 analogue: each method's value relative to the best (lower is better for every metric)")
    return fig


@styled
def distances(dist: pd.DataFrame):
    """Figure 2: average sliced W1 (x) against average TV (y) over the 2-way marginals, one panel per
    dataset; the marker is the method, its size the ε (a method's points joined in order of ε);
    error bars of one standard deviation over seeds where there are several (``dist`` as
    :func:`margsynth.experiments.privpgd_benchmark.distance_table` returns it)."""
    datasets = list(dict.fromkeys(dist["dataset"]))
    methods = [m for m in METHOD_ORDER if m in set(dist["method"])]
    methods += [m for m in dict.fromkeys(dist["method"]) if m not in methods]
    epsilons = sorted(set(dist["epsilon"]))
    sizes = dict(zip(epsilons, np.linspace(12, 48, len(epsilons)) if len(epsilons) > 1 else [26]))
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    ncols = min(len(datasets), 3)
    nrows = -(-len(datasets) // ncols)
    width = TWO_COLUMN if ncols > 1 else ONE_COLUMN
    fig, axes = subplots(nrows, ncols, width=width, height=nrows * 2.3 + 0.9)
    for ax, ds in zip(axes.ravel(), datasets):
        sub = dist[dist["dataset"] == ds]
        for k, meth in enumerate(methods):
            s = sub[sub["method"] == meth].sort_values("epsilon")
            if s.empty:
                continue
            c = colours[k % len(colours)]
            if len(s) > 1:
                ax.plot(s["sw-2way mean"], s["tv-2way mean"], color=c, lw=0.7, alpha=0.6, zorder=1)
            if (s[["sw-2way sd", "tv-2way sd"]].to_numpy() > 0).any():
                ax.errorbar(s["sw-2way mean"], s["tv-2way mean"], xerr=s["sw-2way sd"], yerr=s["tv-2way sd"],
                            fmt="none", ecolor=c, elinewidth=0.7, zorder=1)  # fmt: skip
            ax.scatter(s["sw-2way mean"], s["tv-2way mean"], s=[sizes[e] for e in s["epsilon"]], color=c,
                       marker=MARKERS[k % len(MARKERS)], edgecolor="white", linewidth=0.4, zorder=2)  # fmt: skip
        ax.margins(0.15)
        log_axis(ax, "x")
        log_axis(ax, "y")
        ax.set_xlabel("average sliced W1, 2-way (log scale)")
        ax.set_ylabel("average TV, 2-way (log scale)")
        ax.set_title(ds)
    for ax in axes.ravel()[len(datasets):]:
        ax.set_visible(False)
    handles = [proxy(color=colours[k % len(colours)], marker=MARKERS[k % len(MARKERS)], linestyle="none",
                     markersize=5) for k in range(len(methods))]  # fmt: skip
    labels = list(methods)
    if len(epsilons) > 1:
        handles += [proxy(color="0.45", marker="o", linestyle="none", markersize=np.sqrt(sizes[e])) for e in epsilons]
        labels += [f"ε = {plain_number(e)}" for e in epsilons]
    legend_below(fig, handles, labels, ncols=min(len(labels), 5))
    suptitle(fig, "Figure 2 analogue: distances over the 2-way marginals (lower is better)")
    return fig


_SERIES_LABELS = {
    "protected error": "protected query (larger: protected)",
    "downstream": "downstream error",
    "counting error": "counting-query error",
    "thresholding error": "thresholding-query error",
}


@styled
def constraint_figure3(runs: pd.DataFrame):
    """Figure 3 of §4.4: the four series against γ (symlog x, so that γ = 0 shows), the mean over
    seeds with error bars of one standard deviation where there are several (``runs`` as
    :func:`margsynth.experiments.privpgd_constraints.figure3` returns it)."""
    s = constraint_summary(runs)
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = subplots(1, 1, width=ONE_COLUMN, height=3.0)
    ax = axes[0, 0]
    for k, name in enumerate(SERIES):
        ax.plot(s["gamma"], s[f"{name} mean"], marker=MARKERS[k], color=colours[k])
        if (s[f"{name} sd"] > 0).any():
            ax.errorbar(s["gamma"], s[f"{name} mean"], yerr=s[f"{name} sd"], fmt="none", ecolor=colours[k],
                        elinewidth=0.8, capsize=2)  # fmt: skip
    pos = s["gamma"][s["gamma"] > 0]
    ax.set_xscale("symlog", linthresh=float(pos.min()) if len(pos) else 1.0)
    ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(plain_number))
    ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
    log_axis(ax, "y")
    ax.set_xlabel("regularisation strength γ (symlog scale)")
    ax.set_ylabel("absolute error (log scale)")
    ax.set_title(f"{runs['dataset'].iloc[0]}, ε = {runs['epsilon'].iloc[0]:g}")
    handles = [proxy(color=colours[k], marker=MARKERS[k]) for k in range(len(SERIES))]
    legend_below(fig, handles, [_SERIES_LABELS.get(n, n) for n in SERIES], ncols=2)
    return fig
