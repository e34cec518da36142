"""Notebook 04 — NIST-MST vs MST: the computations behind the Table-5, Figure-3 and
selection-quality analogues of McKenna, Miklau & Sheldon, "Winning the NIST Contest: A
scalable and general approach to differentially private synthetic data", Journal of Privacy
and Confidentiality 11(3), 2021, arXiv:2108.04978 (§5 Figure 3, §7 Table 5, the appendix table).

The 1940 census data of the 2018 challenge is not available, so both tables are
reproduced *in kind* on the adult public/private split (``adult-pub`` = the
"provisional" public data, 3,238 records; ``adult-priv`` = the sensitive data,
32,384 records), δ = 1e-9 (about 1/n², as the contest's δ ≈ 2.3e-12 was for its
661k records), ε ∈ {0.3, 1, 8}. The contest's SEX × CITY × INCWAGE analogue is
sex × native-country × income>50K (:func:`margsynth.metrics.suite.designated_triple`).

- :func:`table5` — NIST-MST, MST (configured as in §7: the designated pairs as
  Algorithm 6's initial cliques, the designated triple measured too, Algorithm 5's
  weights) and the independent baseline, all with ρ from Prop. 4 for each (ε, δ); the three
  criteria of the 2018 challenge scored as the challenge scored them
  (:mod:`margsynth.metrics.nist2018`; docs/notes/nist2018.md) and their mean, plus our
  designated-marginal stand-in, per seed. :func:`table5_summary` gives mean ± sd next to the
  published numbers; :func:`table5_ordering` the order of the mechanisms per criterion and ε.
- :func:`figure3_data` — the marginals NIST-MST selected (Algorithm 5 on the compressed public
  data) per ε: the maximum spanning tree, the step-4 triangles, the designated clique, and
  which edges change across ε; :func:`margsynth.plotting.nist_mst.draw_selection` draws one as Figure 3 does.
- :func:`selection_quality` — total mutual information (on the private data) of the
  pairs chosen by the best tree, the public tree (Algorithm 5 steps 1–2 on the public
  data, without boosts or step 4), Algorithm 6 at each ε, and a random spanning tree.

Every run is memoized on disk (``margsynth.experiments.cache``).
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd

from ..data import load
from ..mechanisms.baselines import Independent
from ..mechanisms.generators import PGMGenerator
from ..mechanisms.mst import MST
from ..mechanisms.nist_mst import NISTMST, contest_weights, mutual_information
from ..metrics import nist2018
from ..metrics.suite import designated_triple
from ..timing import Stopwatch
from .cache import memoize
from .sweep import map_jobs

__all__ = [
    "EXTRA_SCORES",
    "MECHANISMS",
    "PUBLISHED_SELECTION",
    "PUBLISHED_TABLE5",
    "PROFILES",
    "SCORES",
    "figure3_data",
    "run_one",
    "selection_quality",
    "table5",
    "table5_ordering",
    "table5_summary",
]

DELTA = 1e-9
#: zCDP -> (ε, δ) conversion for MST and the baseline here: Prop. 4, as the paper's appendix
#: states and as NIST-MST's Eq. 5.1 is, so all three mechanisms get the same ρ for each (ε, δ).
#: (``MST()``'s default is the authors' tighter CKS conversion, about 25 % more ρ.)
CONVERSION = "prop4"
#: Seed of the scoring queries: the same random triples and test cases for every synthetic dataset.
SCORE_SEED = 2018
MECHANISMS = ("NIST-MST", "MST", "Independent")
#: Table 5's three criteria (the challenge's), then our designated-marginal stand-in for the third.
SCORES = ("3-way marginals", "high-order conjunctions", "income inequality")
EXTRA_SCORES = ("target marginal (ours)",)

#: Profiles of notebook 04: seeds, Private-PGM iterations and the local worker processes of
#: :func:`table5` (quick: its 18 independent runs on two processes, as many as the CI machine's cores).
PROFILES = {
    "quick": {"seeds": (0, 1), "iters": 1000, "workers": 2},
    "full": {"seeds": (0, 1, 2, 3, 4), "iters": 5000, "workers": 1},
}

#: NIST-MST paper Table 5 (averaged over Arizona and Vermont; ``published/nist_mst_table5.csv``).
PUBLISHED_TABLE5 = pd.DataFrame(
    [
        (0.3, "NIST-MST", 0.12, 0.17, 0.10, 0.13),
        (0.3, "MST", 0.11, 0.16, 0.10, 0.12),
        (0.3, "DPSyn", 0.15, 0.31, 0.07, 0.18),
        (0.3, "PrivBayes", 0.19, 0.29, 0.18, 0.22),
        (0.3, "Gardn999", 0.21, 0.32, 0.25, 0.26),
        (0.3, "UCLANESL", 0.57, 0.72, 0.22, 0.50),
        (1.0, "NIST-MST", 0.09, 0.15, 0.04, 0.09),
        (1.0, "MST", 0.09, 0.15, 0.05, 0.10),
        (1.0, "DPSyn", 0.11, 0.23, 0.05, 0.13),
        (1.0, "PrivBayes", 0.17, 0.26, 0.09, 0.17),
        (1.0, "Gardn999", 0.18, 0.28, 0.22, 0.23),
        (1.0, "UCLANESL", 0.42, 0.53, 0.28, 0.41),
        (8.0, "NIST-MST", 0.07, 0.14, 0.04, 0.08),
        (8.0, "MST", 0.08, 0.14, 0.05, 0.09),
        (8.0, "DPSyn", 0.09, 0.20, 0.02, 0.10),
        (8.0, "PrivBayes", 0.13, 0.23, 0.09, 0.15),
        (8.0, "Gardn999", 0.17, 0.26, 0.24, 0.22),
        (8.0, "UCLANESL", 0.35, 0.41, 0.25, 0.34),
    ],
    columns=["epsilon", "mechanism", *SCORES, "overall"],
)

#: NIST-MST paper appendix table (``published/nist_mst_selection_quality.csv``).
PUBLISHED_SELECTION = pd.DataFrame(
    [
        ("Best", 73.64, 63.32),
        ("Public (Algorithm 5)", 72.81, 62.79),
        ("epsilon=0.3 (Algorithm 6)", 70.53, 61.15),
        ("epsilon=1.0 (Algorithm 6)", 72.27, 62.35),
        ("epsilon=8.0 (Algorithm 6)", 73.05, 63.09),
        ("Random", 8.55, 6.95),
    ],
    columns=["selected marginals", "Arizona", "Vermont"],
)


def _data():
    return load("adult-pub"), load("adult-priv")


def mst_contest(domain, epsilon: float, iters: int) -> MST:
    """MST as §7 instantiates it: the designated pairs as initial cliques, the designated
    triple added, Algorithm 5's ε-dependent weights; ρ by Prop. 4 (:data:`CONVERSION`)."""
    des = designated_triple(domain)
    pairs = tuple(itertools.combinations(des, 2))
    cl = [*pairs, des]
    w = contest_weights(cl, epsilon, pairs, [des])
    return MST(
        initial_cliques=pairs,
        extra_cliques=(des,),
        clique_weights=tuple(zip(cl, w)),
        generator=PGMGenerator(iters=iters),
        conversion=CONVERSION,
    )


@memoize(version=3)
def run_one(mechanism: str, epsilon: float, seed: int, iters: int = 5000, delta: float = DELTA) -> dict:
    """One synthetic dataset of ``adult-priv``, its NIST 2018 scores (the same scoring
    queries, seed :data:`SCORE_SEED`, for every run; the challenge's three and their mean,
    plus our designated-marginal stand-in) and, under ``"selection"``, the cliques the
    mechanism measured (NIST-MST: also Algorithm 5's tree, step-4 triples and dropped cliques)."""
    pub, priv = _data()
    rng = np.random.default_rng(seed)
    clock = Stopwatch()
    if mechanism == "NIST-MST":
        res = NISTMST(generator=PGMGenerator(iters=iters)).run(priv, epsilon, delta, rng, public=pub)
    elif mechanism == "MST":
        res = mst_contest(priv.domain, epsilon, iters).run(priv, epsilon, delta, rng)
    elif mechanism == "Independent":
        res = Independent(generator=PGMGenerator(iters=min(iters, 1000)), conversion=CONVERSION).run(priv, epsilon, delta, rng)
    else:
        raise ValueError(f"unknown mechanism {mechanism!r}; expected one of {MECHANISMS}")
    seconds = clock.elapsed()
    scores = nist2018.nist2018_scores(priv, res.synthetic, designated_triple(priv.domain), seed=SCORE_SEED)
    info = res.extras.get("selection", {})
    selection = {
        "cliques": [tuple(c) for c in res.extras.get("cliques", ())],
        "tree": [tuple(c) for c in info.get("tree", res.extras.get("selected", ()))],
        "triples": [tuple(c) for c in info.get("triples", ())],
        "dropped": [tuple(c) for c in info.get("dropped", ())],
    }
    return {
        "epsilon": float(epsilon),
        "mechanism": mechanism,
        "seed": int(seed),
        "3-way marginals": scores["nist-3way"],
        "high-order conjunctions": scores["nist-conjunctions"],
        "income inequality": scores["nist-income-inequality"],
        "target marginal (ours)": scores["nist-target"],
        "overall": scores["nist-mean"],
        "epsilon spent": res.epsilon,
        "seconds": seconds,
        "selection": selection,
    }


def table5(
    epsilons=(0.3, 1.0, 8.0),
    seeds=(0, 1),
    iters: int = 5000,
    mechanisms=MECHANISMS,
    *,
    workers: int | None = 1,
    scheduler: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per (ε, mechanism, seed): the three challenge scores, their mean, our stand-in,
    ε spent, seconds (the selections stay in :func:`run_one`'s cache, see :func:`figure3_data`).

    The runs go through :func:`~margsynth.experiments.sweep.map_jobs` (``workers``
    local processes, ``1``: in this process; or a Dask ``scheduler``), each cached."""
    calls = [{"mechanism": m, "epsilon": float(e), "seed": int(s), "iters": iters}
             for e in epsilons for m in mechanisms for s in seeds]  # fmt: skip
    if not calls:
        raise ValueError("nothing to run: empty epsilons, seeds or mechanisms")
    rows = map_jobs(run_one, calls, workers=workers, scheduler=scheduler, progress=progress, desc="table 5")
    return pd.DataFrame([{k: v for k, v in r.items() if k != "selection"} for r in rows])


def table5_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd over seeds per (ε, mechanism), with the published Table 5 numbers of the
    same mechanism beside ours (columns ``published …``; census data, not comparable in
    level — only the ordering of mechanisms and the trend in ε can be compared)."""
    cols = [*SCORES, "overall", *[c for c in EXTRA_SCORES if c in runs]]
    g = runs.groupby(["epsilon", "mechanism"], sort=False)[cols]
    mean, sd = g.mean(), g.std(ddof=1).fillna(0.0)
    out = mean.add_suffix(" mean").join(sd.add_suffix(" sd"))
    out["seeds"] = g.size()
    pub = PUBLISHED_TABLE5.set_index(["epsilon", "mechanism"])[[*SCORES, "overall"]].add_prefix("published ")
    out = out.join(pub, how="left")
    return out.reset_index()


def table5_ordering(summary: pd.DataFrame) -> pd.DataFrame:
    """The order of the mechanisms, best first, per criterion and ε: ``ours (adult)`` from
    :func:`table5_summary` (``<`` when the means differ by more than the larger of the two
    standard deviations over seeds, else ``≈``), ``published (census)`` for the mechanisms
    Table 5 has (``=`` for equal published values) and ``same NIST-MST/MST order`` — whether
    NIST-MST vs MST come in the same order (``tie`` when the published values are equal,
    ``within sd`` when ours differ by no more than the larger standard deviation)."""
    rows = []
    pub = PUBLISHED_TABLE5.set_index(["epsilon", "mechanism"])
    for eps, g in summary.groupby("epsilon", sort=True):
        for crit in [*SCORES, "overall"]:
            ordered = g.sort_values(f"{crit} mean", kind="stable")
            parts = [ordered["mechanism"].iloc[0]]
            for (_, a), (_, b) in zip(ordered.iloc[:-1].iterrows(), ordered.iloc[1:].iterrows()):
                gap = b[f"{crit} mean"] - a[f"{crit} mean"]
                parts.append(("< " if gap > max(a[f"{crit} sd"], b[f"{crit} sd"]) else "≈ ") + b["mechanism"])
            ours = " ".join(parts)
            have = [m for m in ordered["mechanism"] if (eps, m) in pub.index]
            pvals = sorted(((pub.loc[(eps, m), crit], m) for m in have), key=lambda t: t[0])
            published = " ".join(
                m if i == 0 else ("= " if v == pvals[i - 1][0] else "< ") + m for i, (v, m) in enumerate(pvals)
            )
            same = ""
            if {"NIST-MST", "MST"} <= set(have) and {"NIST-MST", "MST"} <= set(ordered["mechanism"]):
                p_n, p_m = pub.loc[(eps, "NIST-MST"), crit], pub.loc[(eps, "MST"), crit]
                o = ordered.set_index("mechanism")
                o_n, o_m = o.loc["NIST-MST", f"{crit} mean"], o.loc["MST", f"{crit} mean"]
                spread = max(o.loc["NIST-MST", f"{crit} sd"], o.loc["MST", f"{crit} sd"])
                if p_n == p_m:
                    same = "tie"
                elif abs(o_n - o_m) <= spread:
                    same = "within sd"
                else:
                    same = "yes" if (p_n < p_m) == (o_n < o_m) else "no"
            rows.append((eps, crit, ours, published, same))
    return pd.DataFrame(
        rows, columns=["epsilon", "criterion", "ours (adult)", "published (census)", "same NIST-MST/MST order"]
    )


def figure3_data(epsilons=(0.3, 1.0, 8.0), seed: int = 0, iters: int = 5000) -> pd.DataFrame:
    """The analogue of the NIST-MST paper's Figure 3 (§5): the marginals NIST-MST measured in
    its second round on adult at each ε (from :func:`run_one`, so the same runs as Table 5).
    One row per clique: ``kind`` is ``tree`` (a pair of Algorithm 5's maximum spanning tree),
    ``designated`` (a forced pair or the forced triple of sex × native-country × income>50K
    not already in the tree), ``extra pair`` / ``triple`` (step 4's triangles) or ``dropped``
    (step 5: too large); ``all epsilons``: whether the clique is selected at every ε. The
    selection runs on the public data, but over the domain compressed by the ε-dependent noisy
    one-way marginals (Algorithm 4), so it can change with ε."""
    from ..data import load as _load

    des = designated_triple(_load("adult-priv").domain)
    fp = {frozenset(p) for p in itertools.combinations(des, 2)}
    rows = []
    for e in epsilons:
        sel = run_one("NIST-MST", float(e), int(seed), iters)["selection"]
        tree = {frozenset(c) for c in sel["tree"]}
        triples = {frozenset(c) for c in sel["triples"]}
        for c in sel["cliques"]:
            fc = frozenset(c)
            if len(c) == 2 and fc in tree:
                kind = "tree"
            elif fc in fp or fc == frozenset(des):
                kind = "designated"
            elif len(c) == 3 and fc in triples:
                kind = "triple"
            elif len(c) == 2:
                kind = "extra pair"
            else:
                kind = "other"
            rows.append((float(e), tuple(c), kind))
        rows.extend((float(e), tuple(c), "dropped") for c in sel["dropped"])
    out = pd.DataFrame(rows, columns=["epsilon", "clique", "kind"])
    keyed = out.assign(key=out["clique"].map(frozenset))
    present = keyed[keyed["kind"] != "dropped"].groupby("key")["epsilon"].nunique()
    out["all epsilons"] = keyed["key"].map(present).eq(len(set(map(float, epsilons)))).to_numpy()
    out["designated attributes"] = out["clique"].map(lambda c: set(c) <= set(des))
    return out


def _total_mi(mi: dict, pairs) -> float:
    return float(sum(mi[frozenset(p)] for p in pairs))


def _random_tree(names, rng: np.random.Generator) -> list[tuple[str, str]]:
    """A uniformly random spanning tree (random Prüfer sequence)."""
    n = len(names)
    seq = rng.integers(0, n, size=n - 2).tolist()
    t = nx.from_prufer_sequence(seq)
    return [(names[a], names[b]) for a, b in t.edges]


@memoize(version=2)
def selection_quality(epsilons=(0.3, 1.0, 8.0), seeds=(0, 1), delta: float = DELTA) -> pd.DataFrame:
    """Total mutual information (nats, on ``adult-priv``) of the pairs each strategy picks:
    ``Best`` (the true maximum spanning tree), ``Public (Algorithm 5)`` (maximum spanning
    tree of the public data's MI), ``epsilon=… (Algorithm 6)`` (MST's private selection,
    mean ± sd over seeds) and ``Random`` (uniform spanning tree, mean ± sd over seeds).
    The paper's numbers were in its own units on census data; compare shares of Best."""
    pub, priv = _data()
    names = priv.domain.names
    mi = {frozenset((a, b)): mutual_information(priv, a, b) for a, b in itertools.combinations(names, 2)}
    g = nx.Graph()
    g.add_weighted_edges_from((a, b, mi[frozenset((a, b))]) for a, b in itertools.combinations(names, 2))
    best = _total_mi(mi, nx.maximum_spanning_tree(g).edges)
    gp = nx.Graph()
    gp.add_weighted_edges_from((a, b, mutual_information(pub, a, b)) for a, b in itertools.combinations(names, 2))
    public = _total_mi(mi, nx.maximum_spanning_tree(gp).edges)
    rows = [("Best", best, 0.0, 1), ("Public (Algorithm 5)", public, 0.0, 1)]
    for e in epsilons:
        mst = MST(conversion=CONVERSION)
        vals = [_total_mi(mi, mst.select_only(priv, e, delta, np.random.default_rng(s))) for s in seeds]
        rows.append(
            (
                f"epsilon={float(e):.1f} (Algorithm 6)",
                float(np.mean(vals)),
                float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                len(vals),
            )
        )
    rand = [_total_mi(mi, _random_tree(names, np.random.default_rng(1000 + s))) for s in range(max(len(seeds), 20))]
    rows.append(("Random", float(np.mean(rand)), float(np.std(rand, ddof=1)), len(rand)))
    out = pd.DataFrame(rows, columns=["selected marginals", "adult total MI", "adult sd", "runs"])
    out["adult share of best"] = out["adult total MI"] / best
    pubref = PUBLISHED_SELECTION.set_index("selected marginals")
    out["Arizona (published)"] = out["selected marginals"].map(pubref["Arizona"])
    out["Vermont (published)"] = out["selected marginals"].map(pubref["Vermont"])
    out["Arizona share of best"] = out["Arizona (published)"] / pubref.loc["Best", "Arizona"]
    return out
