"""Building blocks shared by the figure modules (not public API)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from . import TWO_COLUMN
from .labels import plain_number

MARKERS = "osD^vPX<>"


def subplots(nrows: int = 1, ncols: int = 1, *, width: float = TWO_COLUMN, height: float = 2.6, **kwargs):
    """``plt.subplots`` at a paper's width (constrained layout, ``squeeze=False``)."""
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kwargs)


def _text_width(fig, artist) -> float:
    """Width of ``artist`` in inches, as the figure's renderer draws it."""
    return artist.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi


def legend_below(fig, handles, labels, *, ncols: int | None = None, title: str | None = None):
    """One legend for the whole figure, under the panels (constrained layout makes room for it), in
    as many columns (at most ``ncols``, default 4) as fit the figure's width."""
    width = fig.get_size_inches()[0] - 0.1
    ncols = min(ncols or 4, len(labels))
    while True:
        legend = fig.legend(handles, labels, loc="outside lower center", ncols=ncols, title=title, frameon=False)
        if ncols == 1 or _text_width(fig, legend) <= width:
            return legend
        legend.remove()
        ncols -= 1


def suptitle(fig, text: str):
    """The figure's title, broken into lines at spaces where it would be wider than the figure."""
    width = fig.get_size_inches()[0] - 0.1
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            trial = f"{line} {word}" if line else word
            title = fig.suptitle(trial)
            if line and _text_width(fig, title) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return fig.suptitle("\n".join(lines))


def proxy(color=None, marker=None, linestyle="-", **kwargs) -> Line2D:
    """A legend handle: a line and/or a marker, never an error-bar glyph."""
    return Line2D([], [], color=color, marker=marker, linestyle=linestyle, **kwargs)


def epsilon_axis(ax, epsilons, *, label: str = "ε") -> None:
    """A log x axis with one tick per ε run, labelled as plain numbers."""
    eps = sorted({float(e) for e in epsilons})
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(eps))
    ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.xaxis.set_minor_locator(NullLocator())
    if len(eps) > 1:
        span = np.log10(eps[-1] / eps[0])
        pad = 10 ** (0.08 * span)
        ax.set_xlim(eps[0] / pad, eps[-1] * pad)
    else:
        ax.set_xlim(eps[0] / 1.5, eps[0] * 1.5)
    ax.set_xlabel(label)


def mean_sd(df: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """Mean and standard deviation (0 for one seed) of ``value`` per group ``by``."""
    g = df.groupby(by, sort=False)[value]
    return g.mean().rename("mean").to_frame().join(g.std(ddof=0).fillna(0.0).rename("sd")).reset_index()


def lines_with_sd(ax, df: pd.DataFrame, x: str, value: str, series: str, order, styles: dict) -> None:
    """One line per ``series`` value (in ``order``): the mean of ``value`` against ``x`` over the rows
    (seeds), with error bars of one standard deviation when there is more than one row."""
    stats = mean_sd(df, [series, x], value)
    for name in order:
        s = stats[stats[series] == name].sort_values(x)
        if s.empty:
            continue
        st = styles[name]
        ax.plot(s[x], s["mean"], **st)
        if (s["sd"] > 0).any():
            ax.errorbar(s[x], s["mean"], yerr=s["sd"], fmt="none", ecolor=st.get("color"), elinewidth=0.8, capsize=2)


def series_styles(order, *, dashes: bool = True) -> dict:
    """Colour, marker and line style per series, in the palette's order."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ("-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 1)))
    return {
        name: {"color": colours[i % len(colours)], "marker": MARKERS[i % len(MARKERS)],
               "linestyle": styles[i % len(styles)] if dashes else "-"}
        for i, name in enumerate(order)
    }  # fmt: skip


def style_handles(order, styles: dict):
    return [proxy(**styles[name]) for name in order], list(order)
