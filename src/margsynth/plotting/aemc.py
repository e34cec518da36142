"""Notebook 02's figure: AEMC solve time and peak memory against the number of cells, per solver
(the MGD paper's §6 LP, min-cost flow on the full graph of Appendix A.1 and on the neighbour
graph of §6.3, ``auto``, and a reference-style flow built arc by arc in a Python loop)."""

from __future__ import annotations

import pandas as pd

from . import TWO_COLUMN, styled
from ._common import legend_below, series_styles, style_handles, subplots, suptitle
from .labels import log_axis

__all__ = ["METHOD_LABELS", "solver_scaling"]

#: solver name in :func:`margsynth.experiments.aemc_solvers.scaling` -> legend entry
METHOD_LABELS = {
    "lp": "LP (§6.1)",
    "flow (full graph)": "flow, full graph (App. A.1)",
    "flow (neighbour graph)": "flow, neighbour graph (§6.3)",
    "auto": "auto",
    "reference loop": "reference loop (Python)",
}


@styled
def solver_scaling(sc: pd.DataFrame, *, profile: str | None = None):
    """Two panels against the number of cells: solve time and peak extra resident memory."""
    order = [m for m in METHOD_LABELS if m in set(sc["method"])] + sorted(set(sc["method"]) - set(METHOD_LABELS))
    styles = series_styles(order)
    fig, axes = subplots(1, 2, width=TWO_COLUMN, height=2.9)
    for ax, (col, label) in zip(axes[0], [("seconds", "solve time (s, log scale)"), ("peak_mib", "extra memory (MiB, log scale)")]):
        for name in order:
            g = sc[sc["method"] == name].sort_values("cells")
            ax.plot(g["cells"], g[col].clip(lower=0.1) if col == "peak_mib" else g[col], **styles[name])
        log_axis(ax, "x")
        log_axis(ax, "y")
        ax.set_xlabel("cells of the marginal (log scale)")
        ax.set_ylabel(label)
    axes[0, 1].set_title("memory (0.1 MiB: below measurement)", fontweight="normal")
    axes[0, 0].set_title("time", fontweight="normal")
    handles, _ = style_handles(order, styles)
    legend_below(fig, handles, [METHOD_LABELS.get(m, m) for m in order], ncols=3)
    suptitle(fig, "AEMC solvers" + (f" ({profile} profile)" if profile else ""))
    return fig
