"""One figure style for every notebook, the figures themselves, and the one way figures and tables are saved.

Every figure a notebook saves is built by a function of this package, from the result tables of
:mod:`margsynth.experiments` (one module per notebook: :mod:`~margsynth.plotting.mgd` for 01,
:mod:`~margsynth.plotting.privpgd` for 05, ...); :mod:`~margsynth.plotting.catalog` lists, per
notebook, how its figures are made from its (cached) results, and :mod:`~margsynth.plotting.check`
finds what would make a figure unprintable (text over text, text cut off by the figure or hidden by
a colour bar or a legend, a legend over data, an axis without a label).

The style (:data:`STYLE`, :func:`style`, :func:`use_style`) is seaborn's ``paper`` context and
``whitegrid`` style with the colour-blind palette, 7-9 pt text and constrained layout; figures are
sized for a paper's column (:data:`ONE_COLUMN`, 3.4 in) or its full width (:data:`TWO_COLUMN`, 7.0 in)
and printed at that size. ``save_figure`` writes ``figures/<name>.pdf`` (vector) and ``.png``;
``save_table`` writes ``results/tables/<name>.csv``. Both write atomically, and both mark their output
when any dataset this process loaded was an offline surrogate (a banner in the figure, a
``data_source`` column in the table).
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import matplotlib as mpl
import pandas as pd
import seaborn as sns
from cycler import cycler

from ..data import provenance
from ..paths import atomic_path, figures_dir, results_dir

__all__ = [
    "ONE_COLUMN", "PALETTE", "STYLE", "TWO_COLUMN", "save_figure", "save_table", "style", "styled", "use_style",
]  # fmt: skip

PALETTE = "colorblind"
#: Figure widths in inches: one column of a two-column paper, and the full text width.
ONE_COLUMN = 3.4
TWO_COLUMN = 7.0
SURROGATE_BANNER = "SURROGATE DATA (real data unavailable) - not the papers' data"


def _style() -> dict:
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper")}
    rc.update(
        {
            "axes.prop_cycle": cycler(color=sns.color_palette(PALETTE)),
            "font.size": 8.0,
            "axes.labelsize": 8.0,
            "axes.titlesize": 8.0,
            "axes.titleweight": "bold",
            "xtick.labelsize": 7.0,
            "ytick.labelsize": 7.0,
            "legend.fontsize": 7.0,
            "legend.title_fontsize": 7.5,
            "figure.titlesize": 9.0,
            "lines.markersize": 4.5,
            "lines.linewidth": 1.3,
            "figure.dpi": 110,
            "figure.constrained_layout.use": True,
            "savefig.dpi": 300,
            "savefig.bbox": "standard",  # the figure is printed at the size it was designed for
            "pdf.fonttype": 42,
            "ps.fonttype": 42,
            "axes.formatter.use_mathtext": True,
        }
    )
    return rc


#: The rcParams of the project's figure style.
STYLE: dict = _style()


def use_style() -> None:
    """Apply the project's figure style globally (what a notebook does first)."""
    mpl.rcParams.update(STYLE)


@contextlib.contextmanager
def style():
    """The project's figure style within a ``with`` block only."""
    with mpl.rc_context(STYLE):
        yield


def styled(func):
    """Build the decorated figure function's figure in the project's style, whatever the global rcParams."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with style():
            return func(*args, **kwargs)

    return wrapper


def save_figure(fig, name: str, *, directory: str | Path | None = None) -> None:
    """Save ``fig`` as ``<name>.pdf`` and ``<name>.png`` under ``figures/`` (or ``directory``).

    Returns nothing, so that a notebook cell ending with it shows the figure and no file paths."""
    if provenance.surrogate_used():
        title = fig._suptitle.get_text() if fig._suptitle is not None else ""
        fig.suptitle(f"{title}\n[{SURROGATE_BANNER}]" if title else f"[{SURROGATE_BANNER}]", color="crimson")
    out_dir = Path(directory) if directory is not None else figures_dir()
    with style():
        for ext in ("pdf", "png"):
            with atomic_path(out_dir / f"{name}.{ext}", suffix=f".{ext}") as tmp:
                fig.savefig(tmp, format=ext)


def save_table(df: pd.DataFrame, name: str, *, directory: str | Path | None = None, index: bool = False) -> Path:
    """Save ``df`` as ``results/tables/<name>.csv`` (or under ``directory``)."""
    if provenance.surrogate_used():
        df = df.copy()
        df["data_source"] = "surrogate"
    target = (Path(directory) if directory is not None else results_dir() / "tables") / f"{name}.csv"
    with atomic_path(target, suffix=".csv") as tmp:
        df.to_csv(tmp, index=index)
    return target
