"""Notebook 03's figure: Examples 1-3 of the NIST-MST/MST paper's §4.2 (R. McKenna, G. Miklau &
D. Sheldon, *Winning the NIST Contest*, JPC 11(3), 2021, arXiv:2108.04978) over many noise seeds:
L1 errors of the noisy and Private-PGM marginals (measured and unmeasured) and the distance of
rounded and i.i.d.-sampled synthetic data to the model's marginals."""

from __future__ import annotations

import warnings

import pandas as pd
import seaborn as sns

from . import TWO_COLUMN, styled
from ._common import subplots, suptitle
from .labels import log_axis

__all__ = ["PANELS", "examples"]

#: example -> (panel title, x label)
PANELS = {
    "1: measured": ("Example 1: measured marginals", "L1 error against the true marginal"),
    "2: unmeasured": ("Example 2: unmeasured marginals", "L1 error against the true marginal"),
    "3: synthetic vs model": ("Example 3: synthetic data against the model", "L1 distance to the model's marginal (log scale)"),
}


@styled
def examples(errors: pd.DataFrame, *, records: int, sigma: float, seeds: int):
    """Box plots of the L1 errors per marginal and estimate, one panel per example (``errors`` as
    :func:`margsynth.experiments.pgm_examples.error_study` returns it)."""
    examples = [e for e in PANELS if e in set(errors["example"])]
    heights = [errors[errors["example"] == e]["marginal"].nunique() * 2 + 1.5 for e in examples]
    fig, axes = subplots(len(examples), 1, width=TWO_COLUMN, height=1.0 + 0.16 * sum(heights),
                         gridspec_kw={"height_ratios": heights})  # fmt: skip
    estimates = list(dict.fromkeys(errors["estimate"]))
    palette = dict(zip(estimates, sns.color_palette(n_colors=len(estimates))))
    for ax, example in zip(axes[:, 0], examples):
        sub = errors[errors["example"] == example]
        with warnings.catch_warnings():  # seaborn 0.13 passes matplotlib 3.11's deprecated ``vert`` to bxp
            warnings.filterwarnings("ignore", message="vert: bool was deprecated", category=DeprecationWarning)
            sns.boxplot(data=sub, x="l1", y="marginal", hue="estimate", palette=palette, ax=ax, fliersize=1.5,
                        linewidth=0.7, width=0.7)  # fmt: skip
        title, xlabel = PANELS[example]
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("marginal")
        if example.startswith("3"):
            log_axis(ax, "x")
        ax.legend(title="estimate", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    suptitle(fig, f"Private-PGM on a {records:,}-record adult sample, σ = {sigma:g}, {seeds} noise seeds")
    return fig
