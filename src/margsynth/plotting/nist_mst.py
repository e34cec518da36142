"""Notebook 04's figures (R. McKenna, G. Miklau & D. Sheldon, *Winning the NIST Contest*, JPC 11(3),
2021, arXiv:2108.04978): the Table 5 analogue (the 2018 challenge's three criteria and their mean
against ε, ours on adult beside the published census numbers), the Figure 3 analogue (the
marginals NIST-MST selected, as a graph per ε) and the selection-quality table as bars."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import networkx as nx
import pandas as pd
from matplotlib.patches import Polygon

from ..experiments.nist_mst import MECHANISMS, PUBLISHED_TABLE5, SCORES
from . import TWO_COLUMN, styled
from ._common import epsilon_axis, legend_below, proxy, subplots, suptitle
from .labels import label_points

__all__ = ["draw_selection", "selection", "selection_quality", "table5"]


@styled
def table5(summary: pd.DataFrame, epsilons):
    """One panel per criterion and their mean: each mechanism's mean score over seeds against ε
    (error bars: one standard deviation), solid on adult, dashed for the published census values
    (``summary`` as :func:`margsynth.experiments.nist_mst.table5_summary` returns it)."""
    colours = dict(zip(MECHANISMS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    panels = [*SCORES, "overall"]
    fig, axes = subplots(2, 2, width=TWO_COLUMN, height=4.4, sharex=True)
    for ax, col in zip(axes.ravel(), panels):
        for mech, g in summary.groupby("mechanism", sort=False):
            g = g.sort_values("epsilon")
            ax.errorbar(g["epsilon"], g[f"{col} mean"], yerr=g[f"{col} sd"], marker="o", markersize=3.5,
                        capsize=2, elinewidth=0.8, color=colours[mech])  # fmt: skip
            pub = PUBLISHED_TABLE5[PUBLISHED_TABLE5["mechanism"] == mech]
            if len(pub):
                ax.plot(pub["epsilon"], pub[col], ls="--", marker="x", markersize=4, alpha=0.8, color=colours[mech])
        epsilon_axis(ax, epsilons)
        ax.set_title(col if col != "overall" else "overall (mean of the three)")
        ax.set_ylabel("score")
        ax.set_ylim(bottom=0)
    for ax in axes[0]:
        ax.set_xlabel("")
    mechs = [m for m in MECHANISMS if m in set(summary["mechanism"])]
    handles = [proxy(color=colours[m], marker="o") for m in mechs]
    labels = [f"{m}, adult (ours)" for m in mechs]
    pub_mechs = [m for m in mechs if m in set(PUBLISHED_TABLE5["mechanism"])]
    handles += [proxy(color=colours[m], marker="x", linestyle="--") for m in pub_mechs]
    labels += [f"{m}, census (published)" for m in pub_mechs]
    legend_below(fig, handles, labels, ncols=3)
    suptitle(fig, "Table 5 analogue: the 2018 challenge's criteria (lower is better)")
    return fig


_EDGE_STYLE = {
    "tree": ("black", "solid", 1.4),
    "extra pair": ("tab:red", "dotted", 1.3),
    "designated": ("tab:green", "solid", 2.0),
}


def draw_selection(ax, fig3: pd.DataFrame, epsilon: float, nodes, pos=None, *, designated=(), labels: bool = True):
    """Draw one ε of :func:`margsynth.experiments.nist_mst.figure3_data` as the paper's Figure 3
    does: attributes as nodes, measured pairs as edges -- the maximum spanning tree black, step-4
    extra edges dotted red with their triangles shaded, the designated clique green -- and the
    cliques not selected at every ε underlaid in yellow. Returns the layout ``pos`` (pass it back
    for the next ε, so that every panel has the same layout) and the legend handles."""
    sub = fig3[(fig3["epsilon"] == float(epsilon)) & (fig3["kind"] != "dropped")]
    union = nx.Graph()
    union.add_nodes_from(nodes)
    for c in fig3.loc[fig3["kind"] != "dropped", "clique"]:
        union.add_edges_from(itertools.combinations(c, 2))
    if pos is None:
        pos = nx.kamada_kawai_layout(union)
    drawn: dict[frozenset, str] = {}
    for _, r in sub.iterrows():
        c = r["clique"]
        if len(c) == 3:
            xy = [pos[v] for v in c]
            color = "tab:green" if r["kind"] == "designated" else "tab:red"
            ax.add_patch(Polygon(xy, closed=True, facecolor=color, alpha=0.12, edgecolor="none", zorder=0))
            for e in itertools.combinations(c, 2):
                drawn.setdefault(frozenset(e), "designated" if r["kind"] == "designated" else "extra pair")
        else:
            drawn[frozenset(c)] = r["kind"] if r["kind"] in _EDGE_STYLE else "extra pair"
    des = set(designated)
    for e in drawn:
        if e <= des:
            drawn[e] = "designated"
    changing = {frozenset(e) for c in sub.loc[~sub["all epsilons"], "clique"] for e in itertools.combinations(c, 2)}
    for e, kind in drawn.items():
        a, b = tuple(e)
        (x0, y0), (x1, y1) = pos[a], pos[b]
        if e in changing:
            ax.plot([x0, x1], [y0, y1], color="gold", lw=5, alpha=0.6, solid_capstyle="round", zorder=1)
        color, ls, lw = _EDGE_STYLE[kind]
        ax.plot([x0, x1], [y0, y1], color=color, ls=ls, lw=lw, zorder=2)
    xs = [pos[v][0] for v in nodes]
    ys = [pos[v][1] for v in nodes]
    ax.scatter(xs, ys, s=36, c=["tab:green" if v in des else "white" for v in nodes], edgecolors="0.3",
               linewidths=0.7, zorder=3)  # fmt: skip
    ax.set_title(f"ε = {float(epsilon):g}")
    ax.set_axis_off()
    ax.margins(0.08)
    if labels:
        label_points(ax, xs, ys, list(nodes), fontsize=6.0, background=True)
    handles = [
        plt.Line2D([], [], color="black", lw=1.4, label="maximum spanning tree"),
        plt.Line2D([], [], color="tab:red", ls="dotted", lw=1.3, label="extra edge (step 4); triangle: triple"),
        plt.Line2D([], [], color="tab:green", lw=2.0, label="designated sex × native-country × income"),
        plt.Line2D([], [], color="gold", lw=5, alpha=0.6, label="not selected at every ε"),
    ]
    return pos, handles


@styled
def selection(fig3: pd.DataFrame, epsilons, nodes, *, designated=()):
    """The Figure 3 analogue: one graph per ε, one layout for all."""
    fig, axes = subplots(1, len(epsilons), width=TWO_COLUMN, height=3.2)
    pos = None
    for ax, e in zip(axes[0], epsilons):
        pos, handles = draw_selection(ax, fig3, e, nodes, pos, designated=designated, labels=False)
    legend_below(fig, handles, [h.get_label() for h in handles], ncols=2)
    suptitle(fig, "Figure 3 analogue: the marginals NIST-MST selected on adult")
    for ax in axes[0]:  # once the layout is final
        label_points(ax, [pos[v][0] for v in nodes], [pos[v][1] for v in nodes], list(nodes), fontsize=6.0, background=True)
    return fig


@styled
def selection_quality(sel: pd.DataFrame):
    """Total mutual information of each strategy's 14 pairs as a share of the best tree's:
    ours on adult (error bars: one standard deviation over runs) beside the published Arizona
    numbers (``sel`` as :func:`margsynth.experiments.nist_mst.selection_quality` returns it)."""
    fig, axes = subplots(1, 1, width=TWO_COLUMN, height=2.5)
    ax = axes[0, 0]
    y = list(range(len(sel)))[::-1]
    err = sel["adult sd"] / sel["adult total MI"].iloc[0]
    ax.barh([v + 0.2 for v in y], sel["adult share of best"], height=0.4, xerr=err, capsize=2,
            error_kw={"elinewidth": 0.8}, label="adult pub/priv (ours)")  # fmt: skip
    ax.barh([v - 0.2 for v in y], sel["Arizona share of best"], height=0.4, label="Arizona (published)")
    labels = [s.replace("epsilon=", "ε = ") for s in sel["selected marginals"]]
    ax.set_yticks(y, labels)
    ax.set_xlabel("total mutual information of the selected pairs / the best tree's")
    ax.set_ylabel("selection")
    ax.set_xlim(0, 1.05)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Quality of the selected marginals")
    return fig
