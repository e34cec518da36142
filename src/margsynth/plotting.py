"""One figure style for every notebook, and the one way figures and tables are saved.

``save_figure`` writes ``figures/<name>.pdf`` and ``.png``; ``save_table``
writes ``results/tables/<name>.csv``. Both write atomically, and both mark
their output when any dataset this process loaded was an offline surrogate
(a banner in the figure, a ``data_source`` column in the table).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import pandas as pd
import seaborn as sns

from .data import provenance
from .paths import atomic_path, figures_dir, results_dir

__all__ = ["PALETTE", "save_figure", "save_table", "use_style"]

PALETTE = "colorblind"
SURROGATE_BANNER = "SURROGATE DATA (real data unavailable) - not the papers' data"


def use_style() -> None:
    """Apply the project's figure style (seaborn paper context, colour-blind palette)."""
    sns.set_theme(context="paper", style="whitegrid", palette=PALETTE, font_scale=1.2)
    mpl.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 200,
            "savefig.bbox": "tight",
            "axes.titleweight": "bold",
            "figure.constrained_layout.use": True,
            "pdf.fonttype": 42,
        }
    )


def save_figure(fig, name: str, *, directory: str | Path | None = None) -> list[Path]:
    """Save ``fig`` as PDF and PNG under ``figures/`` (or ``directory``)."""
    if provenance.surrogate_used():
        title = fig._suptitle.get_text() if fig._suptitle is not None else ""
        fig.suptitle(f"{title}\n[{SURROGATE_BANNER}]" if title else f"[{SURROGATE_BANNER}]", color="crimson")
    out_dir = Path(directory) if directory is not None else figures_dir()
    paths = []
    for ext in ("pdf", "png"):
        target = out_dir / f"{name}.{ext}"
        with atomic_path(target, suffix=f".{ext}") as tmp:
            fig.savefig(tmp, format=ext)
        paths.append(target)
    return paths


def save_table(df: pd.DataFrame, name: str, *, directory: str | Path | None = None, index: bool = False) -> Path:
    """Save ``df`` as ``results/tables/<name>.csv`` (or under ``directory``)."""
    if provenance.surrogate_used():
        df = df.copy()
        df["data_source"] = "surrogate"
    target = (Path(directory) if directory is not None else results_dir() / "tables") / f"{name}.csv"
    with atomic_path(target, suffix=".csv") as tmp:
        df.to_csv(tmp, index=index)
    return target
