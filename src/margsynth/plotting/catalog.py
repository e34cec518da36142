"""Every figure each notebook saves, made from the notebook's results without running the notebook.

:data:`NOTEBOOKS` maps a notebook (``"05_privpgd_benchmark"``) to an :class:`Entry`: the names of
the figures it saves, those it saves in the ``full`` profile only, and ``build(profile)``, which
asks :mod:`margsynth.experiments` for the results with the notebook's default parameters -- read
from the on-disk cache when the notebook has run (``MARGSYNTH_CACHE=require`` makes a miss an
error instead of a computation) -- and returns ``{name: Figure}`` from the same figure functions
the notebook calls. The figure check (tests/test_notebooks.py) renders them all and runs
:func:`margsynth.plotting.check.layout_problems` on each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data import load
from ..experiments import adagrid as exp07
from ..experiments import aemc_solvers as exp02
from ..experiments import byod as exp09
from ..experiments import datasets as exp00
from ..experiments import mgd_table1 as exp01
from ..experiments import nist_mst as exp04
from ..experiments import pgm_examples as exp03
from ..experiments import privpgd_benchmark as exp05
from ..experiments import privpgd_constraints as exp06
from ..experiments import privsyn as exp08
from ..experiments import privsyn_baltimore as ps
from ..experiments import snapshots
from ..metrics.suite import designated_triple
from ..tabular import draft_schema
from . import adagrid, aemc, byod, datasets, mgd, nist_mst, pgm_examples, privpgd, privsyn

__all__ = ["NOTEBOOKS", "Entry", "build"]


@dataclass(frozen=True)
class Entry:
    """A notebook's figures: their names, those of the full profile only, and how to make them."""

    names: tuple[str, ...]
    build: Callable[[str], dict]
    full_only: tuple[str, ...] = ()
    #: ``(figure, dataset)``: figures of real data that has no surrogate, made only where it is at hand
    needs: tuple[tuple[str, str], ...] = ()


def _nb00(profile: str) -> dict:
    return {"00_cardinality_profile": datasets.cardinality_profile(exp00.cardinalities(load_unavailable=False))}


def _nb01(profile: str) -> dict:
    ours = exp01.table1(profile, seed=0, progress=False)
    eps = ps.EPSILONS if profile == "full" else (1.0,)
    rows = ps.scores(eps, seed=0)
    return {
        "01_mgd_figure3": mgd.figure3(ours, profile=profile),
        "01_mgd_figure3_with_privsyn": mgd.figure3(ours, rows, profile=profile),
    }


def _nb02(profile: str) -> dict:
    return {"02_aemc_lp_vs_flow": aemc.solver_scaling(exp02.scaling(profile, seed=0), profile=profile)}


def _nb03(profile: str) -> dict:
    n = exp03.PROFILES[profile]["seeds"]
    errors = exp03.error_study(seeds=n, sample_seed=0)
    return {"03_pgm_examples": pgm_examples.examples(errors, records=exp03.RECORDS, sigma=exp03.SIGMA, seeds=n)}


def _nb04(profile: str) -> dict:
    cfg = exp04.PROFILES[profile]
    epsilons, seeds, iters = (0.3, 1.0, 8.0), tuple(cfg["seeds"]), int(cfg["iters"])
    runs = exp04.table5(epsilons=epsilons, seeds=seeds, iters=iters, workers=cfg["workers"], progress=False)
    fig3 = exp04.figure3_data(epsilons=epsilons, seed=seeds[0], iters=iters)
    dom = load("adult-priv").domain
    return {
        "04_table5": nist_mst.table5(exp04.table5_summary(runs), epsilons),
        "04_figure3_selection": nist_mst.selection(fig3, epsilons, dom.names, designated=designated_triple(dom)),
        "04_selection_quality": nist_mst.selection_quality(exp04.selection_quality(epsilons=epsilons, seeds=seeds)),
    }


def _nb05(profile: str) -> dict:
    runs = exp05.benchmark(profile, workers=2)
    snap = snapshots.load("05_privpgd_benchmark", "05_runs")
    return {
        "05_relative_performance": privpgd.relative_performance(exp05.relative_performance(runs)),
        "05_distances": privpgd.distances(exp05.distance_table(runs)),
        "05_published_relative_performance": privpgd.relative_performance(exp05.relative_performance(snap)),
        "05_published_distances": privpgd.distances(exp05.distance_table(snap)),
    }


def _nb06(profile: str) -> dict:
    snap = snapshots.load("06_privpgd_constraints", "06_runs")
    return {
        "06_constraint_figure3": privpgd.constraint_figure3(exp06.figure3(profile)),
        "06_published_constraint_figure3": privpgd.constraint_figure3(snap),
    }


def _nb07(profile: str) -> dict:
    s = exp07.PROFILES[profile]
    res = exp07.compare(exp07.datasets_present(include_larger=s["larger"]), list(s["epsilons"]), list(s["seeds"]),
                      delta=1e-9, iters=int(s["iters"]), threshold=1.0, workers=s["workers"], progress=False)  # fmt: skip
    return {
        "07_adagrid_workload_error": adagrid.workload_error(res["errors"], delta=1e-9),
        "07_adagrid_error_by_round": adagrid.error_by_round(res["errors"]),
        "07_adagrid_rows_per_round": adagrid.rows_per_round(res["rounds"], seed=s["seeds"][0]),
    }


def _nb08(profile: str) -> dict:
    s = exp08.PROFILES[profile]
    epsilons = [float(e) for e in s["epsilons"]]
    seeds = [int(x) for x in s["seeds"]]
    res = exp08.compare(["adult", "nltcs"], epsilons, seeds, workers=s["workers"], delta=1e-9,
                      mst_iters=s["mst_iters"], pgm_iters=s["pgm_iters"], memory_limit_mb=float(s["memory_limit_mb"]),
                      n_queries=s["n_queries"], counting=s["counting_queries"], progress=False)  # fmt: skip
    trace_epsilon = min(epsilons, key=lambda e: abs(np.log(e / 1.0)))
    return {
        "08_privsyn_selection_trace": privsyn.selection_trace(res["selection"], seed=seeds[0]),
        "08_privsyn_budget": privsyn.budget(res["budget"], epsilon=trace_epsilon, seed=seeds[0]),
        "08_privsyn_vs_mst": privsyn.versus_mst(res["runs"], delta=1e-9),
        "08_privsyn_gum_convergence": privsyn.gum_convergence(res["gum_traces"], seed=seeds[0]),
    }


def _nb09(profile: str) -> dict:
    s = exp09.PROFILES[profile]
    raw = exp09.load_demo()
    schema = exp09.edit_schema(draft_schema(raw))
    synthetic, _ = exp09.run(raw, schema, "mst", epsilon=1.0, delta=1e-9, seed=0, iters=s["iters"],
                           select_iters=s["select_iters"])  # fmt: skip
    out = {
        "09_distributions": byod.distributions(
            raw, synthetic, exp09.SHOWN, title="Real against synthetic (mst, ε = 1, preprocessing included)"),
        "09_scatter": byod.scatter(raw, synthetic, *exp09.PAIR, seed=0,
                                   title=f"{exp09.PAIR[1]} against {exp09.PAIR[0]}: real and synthetic (mst, ε = 1)"),
    }
    if profile == "full":
        runs = exp09.sweep(raw, schema, s["mechanisms"], s["epsilons"], s["seeds"], delta=1e-9, iters=s["iters"],
                         select_iters=s["select_iters"])  # fmt: skip
        out["09_sweep"] = byod.sweep(runs)
    if exp09.acs_available():
        acs = exp09.ACS_PROFILES[profile]
        runs, base, examples = exp09.acs_scores(epsilons=acs["epsilons"], seeds=acs["seeds"])
        out["09_acs_kmarginal"] = byod.kmarginal_vs_epsilon(runs, base)
        shown = exp09.ACS_SHOWN
        out["09_acs_distributions"] = byod.distributions(
            exp09.acs_values(examples["real"], shown), exp09.acs_values(examples["dictionary"], shown), shown,
            title=f"{exp09.ACS}, dictionary schema, MST, ε = {max(acs['epsilons']):g}")  # fmt: skip
    return out


#: notebook (file stem) -> its figures
NOTEBOOKS: dict[str, Entry] = {
    "00_datasets": Entry(("00_cardinality_profile",), _nb00),
    "01_mgd_range_query": Entry(("01_mgd_figure3", "01_mgd_figure3_with_privsyn"), _nb01),
    "02_aemc_lp_vs_flow": Entry(("02_aemc_lp_vs_flow",), _nb02),
    "03_pgm_examples": Entry(("03_pgm_examples",), _nb03),
    "04_nist_mst_vs_mst": Entry(("04_table5", "04_figure3_selection", "04_selection_quality"), _nb04),
    "05_privpgd_benchmark": Entry(("05_relative_performance", "05_distances", "05_published_relative_performance",
                                   "05_published_distances"), _nb05),
    "06_privpgd_constraints": Entry(("06_constraint_figure3", "06_published_constraint_figure3"), _nb06),
    "07_adaptive_grid": Entry(("07_adagrid_workload_error", "07_adagrid_error_by_round", "07_adagrid_rows_per_round"), _nb07),
    "08_privsyn": Entry(("08_privsyn_selection_trace", "08_privsyn_budget", "08_privsyn_vs_mst", "08_privsyn_gum_convergence"), _nb08),
    "09_bring_your_own_data": Entry(("09_distributions", "09_scatter", "09_sweep", "09_acs_kmarginal", "09_acs_distributions"),
                                    _nb09, full_only=("09_sweep",),
                                    needs=(("09_acs_kmarginal", exp09.ACS), ("09_acs_distributions", exp09.ACS))),
}  # fmt: skip


def build(notebook: str, profile: str = "quick") -> dict:
    """``{figure name: Figure}`` of ``notebook`` (its stem) in ``profile``."""
    return NOTEBOOKS[notebook].build(profile)
