"""Notebook 09's figures: a raw table against its decoded synthetic version -- the distribution
of a few columns, one numeric column against another, and (full profile) the sweep over
mechanisms and ε."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.patches import Patch

from . import TWO_COLUMN, styled
from ._common import epsilon_axis, legend_below, lines_with_sd, series_styles, style_handles, subplots, suptitle

__all__ = ["SWEEP_METRICS", "distributions", "kmarginal_vs_epsilon", "scatter", "sweep"]

#: The metrics of the full profile's sweep figure.
SWEEP_METRICS = ("tv-1way", "tv-2way", "mgd", "spearman_gap")


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _verbatim(text):
    """Mark a text that shows a name from the user's table as it is (the figure check accepts its underscores)."""
    text.set_gid("verbatim")
    return text


@styled
def distributions(real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str], *, top: int = 12,
                  title: str | None = None):
    """One panel per column: the real and synthetic distributions side by side -- the ``top``
    most frequent categories of a categorical column (the rest as "(rest)"), a shared-bin density
    histogram of a numeric one -- with the share of empty cells in the panel's title; ``title``: the figure's."""
    colours = sns.color_palette()
    k = len(columns)
    ncols = min(k, 3)
    nrows = -(-k // ncols)
    fig, axes = subplots(nrows, ncols, width=TWO_COLUMN, height=1.85 * nrows + 0.7)
    for ax, col in zip(axes.ravel(), columns):
        r, s = real[col], synthetic[col]
        null_r, null_s = float(r.isna().mean()), float(s.isna().mean())
        if _is_numeric(r) and _is_numeric(s) and r.nunique() > 24:
            both = pd.concat([r, s]).dropna()
            bins = np.histogram_bin_edges(both, bins=30)
            ax.hist(r.dropna(), bins=bins, density=True, alpha=0.55, color=colours[0])
            ax.hist(s.dropna(), bins=bins, density=True, alpha=0.55, color=colours[1])
            ax.set_ylabel("density")
            ax.set_xlabel("value")
        else:
            fr = r.dropna().astype(str).value_counts(normalize=True)
            fs = s.dropna().astype(str).value_counts(normalize=True)
            keep = list(fr.index[:top])
            if len(fr) <= top:  # every category, in their natural order (numerically for numbers)
                nums = pd.to_numeric(pd.Series(keep), errors="coerce")
                keep = [keep[i] for i in np.argsort(nums.to_numpy())] if nums.notna().all() else sorted(keep)
            rows = pd.DataFrame({"real": fr.reindex(keep).fillna(0.0), "synthetic": fs.reindex(keep).fillna(0.0)})
            if len(fr) > top or len(fs.index.difference(keep)):
                rows.loc["(rest)"] = [fr.drop(keep, errors="ignore").sum(), fs.drop(keep, errors="ignore").sum()]
            x = np.arange(len(rows))
            ax.bar(x - 0.2, rows["real"], width=0.4, color=colours[0])
            ax.bar(x + 0.2, rows["synthetic"], width=0.4, color=colours[1])
            names = [str(i)[:10] for i in rows.index]
            crowded = len(rows) > 6 or sum(len(n) for n in names) > 24  # long labels side by side would overlap
            ax.set_xticks(x, names, rotation=90 if crowded else 0)
            ax.grid(axis="x", visible=False)
            ax.set_ylabel("share")
            ax.set_xlabel("value")
        empty = f"\nempty: real {null_r:.1%}, synth. {null_s:.1%}" if null_r or null_s else ""
        _verbatim(ax.set_title(f"{col}{empty}", fontsize=7, fontweight="normal"))
    for ax in axes.ravel()[k:]:
        ax.set_visible(False)
    legend_below(fig, [Patch(color=colours[0], alpha=0.7), Patch(color=colours[1], alpha=0.7)],
                 ["real", "synthetic"], ncols=2)  # fmt: skip
    if title:
        suptitle(fig, title)
    return fig


@styled
def scatter(real: pd.DataFrame, synthetic: pd.DataFrame, x: str, y: str, *, points: int = 4000, seed: int = 0,
            title: str | None = None):
    """Two panels on shared axes: ``y`` against ``x`` in the real and in the synthetic table (at
    most ``points`` rows of each, drawn with ``seed``; rows with an empty cell left out), with each
    table's Spearman correlation in the title; ``title``: the figure's."""
    colours = sns.color_palette()
    rng = np.random.default_rng(seed)
    fig, axes = subplots(1, 2, width=TWO_COLUMN, height=2.7, sharex=True, sharey=True)
    for ax, (name, frame), colour in zip(axes[0], (("real", real), ("synthetic", synthetic)), colours):
        pts = frame[[x, y]].dropna()
        rho = pts[x].corr(pts[y], method="spearman") if len(pts) > 1 else float("nan")
        if len(pts) > points:
            pts = pts.iloc[np.sort(rng.choice(len(pts), size=points, replace=False))]
        ax.scatter(pts[x], pts[y], s=3, alpha=0.35, color=colour, linewidths=0)
        ax.set_title(f"{name} (Spearman {rho:.2f})")
        _verbatim(ax.set_xlabel(x))
    _verbatim(axes[0, 0].set_ylabel(y))
    if title:
        _verbatim(suptitle(fig, title))
    return fig


@styled
def sweep(runs: pd.DataFrame, metrics: Sequence[str] = SWEEP_METRICS):
    """The full profile's sweep: each metric against ε per mechanism (mean over seeds, error bars:
    one standard deviation)."""
    order = list(dict.fromkeys(runs["mechanism"]))
    styles = series_styles(order)
    fig, axes = subplots(1, len(metrics), width=TWO_COLUMN, height=2.4)
    for ax, m in zip(axes[0], metrics):
        lines_with_sd(ax, runs, "epsilon", m, "mechanism", order, styles)
        epsilon_axis(ax, runs["epsilon"])
        _verbatim(ax.set_title(m))
        ax.set_ylabel("value")
    handles, labels = style_handles(order, styles)
    legend_below(fig, handles, labels, ncols=len(labels), title="mechanism")
    return fig


@styled
def kmarginal_vs_epsilon(runs: pd.DataFrame, baselines: pd.DataFrame, *, title: str | None = None):
    """SDNist's k-marginal score of the excerpt's synthetic data against ε, one line per schema
    (mean over seeds, error bars: one standard deviation), beside the scores of random subsamples
    of the real data (horizontal lines, labelled with their fraction)."""
    order = list(dict.fromkeys(runs["schema"]))
    styles = series_styles(order)
    fig, axes = subplots(1, 1, width=TWO_COLUMN * 0.55, height=2.6)
    ax = axes[0, 0]
    base = baselines.groupby("fraction")["score"].mean()
    for v in base.to_numpy():
        ax.axhline(v, color="0.55", linewidth=0.8, linestyle=(0, (2, 2)), zorder=0)
    lines_with_sd(ax, runs, "epsilon", "score", "schema", order, styles)
    epsilon_axis(ax, runs["epsilon"])
    ax.set_ylabel("k-marginal score (0-1000)")
    ax.grid(axis="y", visible=False)
    right = ax.twinx()  # the subsamples' fractions as the right axis' ticks, at their scores
    right.set_ylim(ax.get_ylim())
    right.set_yticks(base.to_numpy(), [f"{f:.0%}" for f in base.index])
    right.set_ylabel("random subsample of the real rows")
    right.grid(False)
    handles, labels = style_handles(order, styles)
    legend_below(fig, handles, [f"{name} schema" for name in labels], ncols=len(labels))
    if title:
        suptitle(fig, title)
    return fig
