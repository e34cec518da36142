"""Notebook 01's figure: the MGD paper's Figure 3 (Z. Li, T. Wang, T. Dang & N. Li, *MGD: A Utility
Metric for Private Data Publication*, NSysS 2021, §5): the range-query error of every scored
Baltimore file against Inv Pie, MGD and the 3-way AEMC, with optionally our PrivSyn-ε rows.

Each point is one file; its kind (Laplace release, sample, "privatized" file, PrivSyn) is its
marker and colour, its parameter (ε or the sampling rate) its label. The panel titles carry
Pearson's r of the logs and Spearman's ρ (:func:`margsynth.experiments.mgd_table1.correlations`).
"""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd

from ..experiments.mgd_table1 import correlations
from . import TWO_COLUMN, styled
from ._common import legend_below, proxy, subplots, suptitle
from .labels import label_points, log_axis

__all__ = ["KINDS", "SCORES", "figure3", "point_kind", "with_privsyn"]

#: Figure 3's panels: score column -> axis label.
SCORES = {"inv_pie": "Inv Pie", "mgd": "MGD", "aemc_3way": "AEMC (3-way)"}
#: kind -> (legend entry, marker, colour index)
KINDS = {
    "lap": ("Laplace release (label: ε)", "o", 0),
    "sample": ("sample (label: rate)", "s", 1),
    "privatized": ("privatized file", "^", 2),
    "PrivSyn": ("PrivSyn, ours (label: ε)", "D", 3),
}


def point_kind(name: str) -> tuple[str, str]:
    """A Table 1 row name -> (kind, point label): ``lap-0.5`` -> ("lap", "0.5"),
    ``sample-0.25`` -> ("sample", "0.25"), ``very-poor`` -> ("privatized", "very poor"),
    ``PrivSyn-1`` -> ("PrivSyn", "1")."""
    head, _, tail = name.partition("-")
    if head in ("lap", "sample", "PrivSyn") and tail:
        return head, f"{float(tail):g}"
    return "privatized", name.replace("-", " ")


def with_privsyn(ours: pd.DataFrame, privsyn: pd.DataFrame | None) -> pd.DataFrame:
    """Figure 3's points: our Table 1 rows (range-query error and the three scores) and, when given,
    the PrivSyn-ε rows of :func:`~margsynth.experiments.privsyn_baltimore.score_tables` as
    ``PrivSyn-<ε>``."""
    cols = ["range_query", *SCORES]
    points = ours[cols].copy()
    if privsyn is not None and len(privsyn):
        extra = privsyn.rename(columns={"3way": "aemc_3way"})
        extra.index = [f"PrivSyn-{e:g}" for e in extra["epsilon"]]
        points = pd.concat([points, extra[cols]])
    return points


@styled
def figure3(ours: pd.DataFrame, privsyn: pd.DataFrame | None = None, *, profile: str | None = None):
    """Figure 3 from our Table 1 (``ours``: indexed by row name, columns ``range_query`` and the
    three scores) and optionally the PrivSyn-ε rows (``privsyn``: columns ``epsilon``,
    ``range_query``, ``mgd``, ``3way``, ``inv_pie``, as :func:`~margsynth.experiments.privsyn_baltimore.score_tables`
    returns them)."""
    cols = ["range_query", *SCORES]
    points = with_privsyn(ours, privsyn)
    corr = correlations(points).set_index("score")
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = subplots(1, 3, width=TWO_COLUMN, height=3.3, sharey=True)
    kinds = pd.Series({n: point_kind(n) for n in points.index})
    for ax, (col, label) in zip(axes[0], SCORES.items()):
        sub = points[["range_query", col]].dropna()
        for kind, (_, marker, ci) in KINDS.items():
            names = [n for n in sub.index if kinds[n][0] == kind]
            if names:
                ax.scatter(sub.loc[names, col], sub.loc[names, "range_query"], marker=marker, color=colours[ci],
                           s=22, edgecolor="white", linewidth=0.4, zorder=3)  # fmt: skip
        log_axis(ax, "y")
        if col != "inv_pie":
            log_axis(ax, "x")
        ax.margins(0.12)
        c = corr.loc[col]
        ax.set_title(f"{label}: r = {c.pearson_log:.2f}, ρ = {c.spearman:.2f}")
        ax.set_xlabel(label + (" (log scale)" if col != "inv_pie" else ""))
    axes[0, 0].set_ylabel("range-query error (log scale)")
    used = [k for k in KINDS if any(kinds[n][0] == k for n in points.index)]
    handles = [proxy(color=colours[KINDS[k][2]], marker=KINDS[k][1], linestyle="none", markersize=5) for k in used]
    legend_below(fig, handles, [KINDS[k][0] for k in used], ncols=len(used))
    n_files = int(ours[cols].dropna().shape[0])
    n_ps = len(points) - len(ours)
    what = f"{n_files} scored files" + (f" and {n_ps} PrivSyn table{'s' if n_ps > 1 else ''}" if n_ps else "")
    where = f" ({profile} profile)" if profile else ""
    suptitle(fig, f"Range-query error against three scores, {what}{where}\n(r: Pearson correlation of the logs, ρ: Spearman correlation)")
    for ax, col in zip(axes[0], SCORES):
        sub = points[["range_query", col]].dropna()
        label_points(ax, sub[col], sub["range_query"], [kinds[n][1] for n in sub.index], fontsize=6.0)
    return fig
