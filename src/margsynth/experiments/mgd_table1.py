"""MGD paper Table 1 and Figure 3 (Appendix B, §5.3): scores of every scored
Baltimore 911 file — Inv Pie, RQ, the seven AEMCs and MGD — next to the
published numbers (``margsynth/experiments/published/mgd_table1.csv``).

The metric configuration is the ``baltimore-table1`` preset
(:func:`margsynth.metrics.baltimore.table1_specs`; see docs/notes/mgd_baltimore.md). The
published RQ used unseeded queries, so only its magnitude is comparable.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.baltimore import load_synthetic, load_truth, synthetic_names
from ..metrics.aemc import AEMCProblem, solve
from ..metrics.baltimore import TABLE1_COLUMNS, inverse_pie, range_query_error, table1_specs
from ..metrics.mgd import marginal_table
from ..timing import Stopwatch
from . import published
from .cache import memoize
from .sweep import map_jobs

__all__ = [
    "PROFILES", "compare_published", "correlations", "published_name", "reference_table", "score_file",
    "table1",
]

AEMC_COLUMNS = [f"aemc_{label}" for label, _ in TABLE1_COLUMNS]
#: quick: every column of every file (the 3-way AEMC, hence MGD, included: each is certified in seconds,
#: so Figure 3 has all 14 files on every panel), on two worker processes; full: the same on one
#: (``workers``: local processes scoring the files, :func:`~margsynth.experiments.sweep.map_jobs`)
PROFILES = {
    "quick": {"three_way": "all", "workers": 2},
    "full": {"three_way": "all", "workers": 1},
}


def reference_table() -> pd.DataFrame:
    """The published Table 1 (Appendix B), indexed by dataset name."""
    return published.load("mgd_table1").set_index("dataset")


def published_name(stem: str) -> str:
    """Scored-file stem -> Table 1 row name (``lap_eps1`` -> ``lap-1.0``, ``0.1_sampling`` -> ``sample-0.1``)."""
    if stem == "privatized-mediocre-quality":
        return "mediocre"
    if stem == "privatized-very-poor-quality":
        return "very-poor"
    if stem.startswith("lap_eps"):
        return f"lap-{float(stem[7:])}"
    if stem.endswith("_sampling"):
        return f"sample-{stem.split('_')[0]}"
    return stem


@memoize(version=1)
def score_file(stem: str, three_way: bool = True, seed: int = 0, authors_variant: bool = False) -> dict:
    """All Table 1 columns for one scored file (real data via the loader).

    ``authors_variant`` scores the one- and two-way marginals with the authors'
    negative lower bound too (docs/notes/mgd_baltimore.md), in ``variant_*`` columns.
    """
    truth, synth = load_truth(), load_synthetic(stem)
    row: dict = {"file": stem, "dataset": published_name(stem), "source": synth.source}
    clock = Stopwatch()
    row["inv_pie"] = inverse_pie(truth, synth)
    row["range_query"] = range_query_error(truth, synth, seed=seed)
    specs = table1_specs()
    for spec, col in zip(specs, AEMC_COLUMNS):
        if spec.label == "3way" and not three_way:
            row[col], row["seconds_3way"] = np.nan, np.nan
            continue
        prob = AEMCProblem.from_spec(spec, truth.domain, marginal_table(synth, spec.names),
                                     marginal_table(truth, spec.names))
        res = solve(prob, "auto")
        row[col] = res.value
        if spec.label == "3way":
            row["seconds_3way"] = res.seconds
        elif authors_variant:
            neg = AEMCProblem(prob.p, prob.q, prob.axes, prob.delta, prob.alpha, allow_negative=True)
            row[f"variant_{col}"] = solve(neg, "flow").value
    w = np.array([s.omega for s in specs])
    vals = np.array([row[c] for c in AEMC_COLUMNS])
    row["mgd"] = float(w @ vals / w.sum()) if np.isfinite(vals).all() else np.nan
    row["seconds"] = clock.elapsed()
    return row


def table1(profile: str = "quick", *, progress: bool = True, seed: int = 0, workers: int | None = None) -> pd.DataFrame:
    """Our Table 1: one row per scored file (the 14 of the mirror), scored by ``workers``
    local processes (``None``: the profile's; :func:`~margsynth.experiments.sweep.map_jobs`)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose from {sorted(PROFILES)}")
    which = PROFILES[profile]["three_way"]
    workers = PROFILES[profile]["workers"] if workers is None else workers
    calls = [
        {"stem": n, "three_way": which == "all" or n in which, "seed": seed, "authors_variant": True}
        for n in synthetic_names()
    ]
    rows = map_jobs(score_file, calls, workers=workers, progress=progress, desc="Table 1 files")
    return pd.DataFrame(rows).set_index("dataset")


def compare_published(ours: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    """Ours next to the published values, with differences (ours rounded to the printed decimals)."""
    ref = reference_table()
    cols = ["inv_pie", "range_query", *AEMC_COLUMNS]
    out = []
    for name, row in ours.iterrows():
        for c in cols:
            pub = ref.loc[name, c] if name in ref.index else np.nan
            v = row[c]
            out.append({
                "dataset": name, "metric": c, "ours": v, "ours_rounded": round(v, decimals) if np.isfinite(v) else v,
                "published": pub, "difference": (round(v, decimals) - pub) if np.isfinite(v) and np.isfinite(pub)
                else np.nan,
                "authors_variant": row.get(f"variant_{c}", np.nan),
            })
    df = pd.DataFrame(out)
    df["match"] = np.where(df["metric"] == "range_query", np.nan,
                           (df["difference"].abs() < 10 ** -(decimals + 2)).astype(float))
    df.loc[df["published"].isna() | df["ours"].isna(), "match"] = np.nan
    return df


def correlations(df: pd.DataFrame, x: str = "range_query", ys=("inv_pie", "mgd", "aemc_3way")) -> pd.DataFrame:
    """Figure 3's correlations of RQ with each score: Pearson on logs (log-scaled
    axes) and Spearman, over the rows where both are present."""
    from scipy import stats  # heavy import (seconds), this function only

    rows = []
    for y in ys:
        sub = df[[x, y]].dropna()
        sub = sub[(sub > 0).all(axis=1)]
        if len(sub) < 3:
            rows.append({"score": y, "n": len(sub), "pearson_log": np.nan, "spearman": np.nan})
            continue
        rows.append({
            "score": y, "n": len(sub),
            "pearson_log": stats.pearsonr(np.log(sub[x]), np.log(sub[y]))[0],
            "spearman": stats.spearmanr(sub[x], sub[y])[0],
        })
    return pd.DataFrame(rows)
