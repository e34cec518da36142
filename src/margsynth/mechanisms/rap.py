"""RAP — Relaxed Adaptive Projection.

Aydore, Brown, Kearns, Kenthapadi, Melis, Roth & Siva, "Differentially Private Query Release
Through Adaptive Projection", ICML 2021 (arXiv:2103.06641); Algorithm 1 (relaxed projection)
and Algorithm 2 (adaptive RAP), with the softmax parameterisation of the relaxed rows that
Liu, Vietri & Wu (NeurIPS 2021, arXiv:2106.07153, §5 "RAP^softmax") found better.

Pipeline of :meth:`RAP.run` (workload: all ``degree``-way marginals, as the PrivPGD paper §4
ran it)::

    MEASURE   n̂ = n + N(0, σ²)                    (share ``total_share``; normalises counts)
    for t = 1..T  (adaptive; ``one_shot=True``: a single round measuring the whole workload)
      SELECT    K queries with the largest |c_q(D) − n̂ q(X)|, by K exponential mechanisms
                without replacement (RAP Alg. 2 line 5, top-K), share ``select_share`` / T
      MEASURE   their counts, one Gaussian mechanism of L2 sensitivity sqrt(#marginals
                touched) (RAP Alg. 2 line 6), the rest of the round's share
      GENERATE  project: Adam on  Σ_{measured q} (q(X) − â_q)²  over the relaxed matrix X
                (n' rows, softmax per attribute block; RAP Alg. 1), warm-started
    OUTPUT    records sampled from the mixture of the n' relaxed rows, ``synthetic_records``
              of them (default n̂)

Relaxed answers ``q(X) = (1/n') Σ_r Π_j X[r, j]`` (RAP Eq. (2)) come from
:class:`~margsynth.mechanisms.queries.MarginalQueries`. Privacy is accounted in zCDP under the
project's add/remove-one relation (counts, a private ``n̂``; see
``docs/notes/query_baselines.md``) and converted to (ε, δ) as for MST and AIM; every selection
and measurement is charged to the ledger before its draw.

Defaults: ``n' = 1000`` rows (RAP §6 and the PrivPGD paper), Adam; the class defaults are
adaptive (T = 20, K = 200), the ``default`` preset is the one-shot variant, which measured
better on adult (see :data:`PRESETS`); projection stops early when the loss stops improving
(RAP's code stops on a plateau). Devices: ``"cpu"`` or ``"cuda"``
(a missing GPU is an error, never a silent CPU fallback); all random numbers come from CPU
generators seeded from ``rng``, so the same seed gives the same bytes on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..inference.torch_utils import resolve_device, with_torch_threads
from ..privacy import BudgetLedger
from ..rules import Refinement, RuleSet
from ..timing import Stopwatch, timed
from .base import (
    Mechanism,
    SynthesisResult,
    bounded_records,
    check_conversion,
    check_positive_int,
    check_records,
    preset_of,
)
from .queries import (
    MarginalQueries,
    check_workload_fits,
    measure_queries,
    measure_total,
    query_scores,
    select_queries,
)

__all__ = ["PRESETS", "RAP", "adam_steps", "check_shared"]


def _pos_float(name: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}")


def _fraction(name: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not 0 < v < 1:
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")


def check_shared(mech, data: Dataset, device: Any, refinement: Any = None) -> None:
    """The checks RAP and GEM share, made by their ``validate`` after
    :func:`~.base.check_run_inputs` and their own fields, before any noise: the common fields
    (``degree``, ``iters``, ``patience``, ``lr``, ``tol``, the budget shares, ``progress``,
    ``synthetic_records``, ``conversion``, ``threads``), the refinement of a mechanism that
    takes one (a :class:`~margsynth.rules.Refinement` over ``data``'s domain, or ``None``),
    the workload's and the mechanism's memory (:func:`~.queries.check_workload_fits` with
    ``mech.memory_bytes(domain)``, over the finer domain), the output size, and the device (a
    missing GPU is refused, never replaced by the CPU)."""
    if refinement is not None and (not isinstance(refinement, Refinement) or refinement.fine != data.domain):
        raise ValueError("refinement must be a Refinement whose fine domain is the data's")
    for f in ("degree", "iters", "patience"):
        check_positive_int(f, getattr(mech, f))
    for f in ("lr", "tol"):
        _pos_float(f, getattr(mech, f))
    for f in ("total_share", "select_share"):
        _fraction(f, getattr(mech, f))
    if not isinstance(mech.progress, (bool, np.bool_)):
        raise ValueError(f"progress must be True or False, got {mech.progress!r}")
    check_records(mech.synthetic_records)
    check_conversion(mech.conversion)
    if mech.threads is not None:
        check_positive_int("threads", mech.threads)
    d = len(data.domain)
    if mech.degree > d:
        raise ValueError(f"degree {mech.degree} exceeds the number of attributes ({d})")
    per_query, extra = mech.memory_bytes(data.domain)
    check_workload_fits(data.domain, mech.degree, type(mech).__name__, per_query_bytes=per_query, extra_bytes=extra)
    check_records(mech.synthetic_records, columns=d)
    resolve_device(device)


def adam_steps(
    opt, loss_fn, *, iters: int, tol: float, patience: int, progress: str | None = None
) -> tuple[int, float]:
    """At most ``iters`` steps of the optimiser ``opt`` (Adam, Kingma & Ba 2015) on
    ``loss_fn()``, stopping early once the loss has failed to improve on its best by a relative
    ``tol`` for ``patience`` consecutive steps (RAP's code stops on such a plateau). A tqdm bar
    titled ``progress`` follows the steps when given. Returns (steps taken, last loss)."""
    from tqdm.auto import tqdm

    best, bad, loss_v, steps = math.inf, 0, math.nan, 0
    bar = tqdm(total=iters, desc=progress, unit="step", leave=False, mininterval=0.5, disable=progress is None)
    try:
        while steps < iters:
            steps += 1
            opt.zero_grad(set_to_none=True)
            loss = loss_fn()
            loss.backward()
            opt.step()
            loss_v = float(loss.detach())
            bar.update(1)
            if loss_v < best * (1.0 - tol):
                best, bad = loss_v, 0
            else:
                bad += 1
                if bad >= patience:
                    break
    finally:
        bar.close()
    return steps, loss_v


@dataclass(frozen=True)
class RAP(Mechanism):
    """RAP hyperparameters (budget split in named fields; see the module docstring).

    Parameters
    ----------
    degree:
        Workload: all ``degree``-way marginals (2, as the PrivPGD paper).
    n_rows:
        ``n'``, rows of the relaxed synthetic matrix (RAP §6: 1000).
    rounds:
        ``T``, adaptive rounds (ignored when ``one_shot``).
    top_k:
        ``K``, queries selected and measured per round.
    one_shot:
        Measure the whole workload once and project once (RAP's non-adaptive variant).
    iters, lr, tol, patience:
        Adam steps per projection (at most), learning rate, early-stopping rule.
    total_share:
        Share of ρ spent on the record count ``n̂``.
    select_share:
        Share of what remains spent on selection (0.5: half, as RAP's code splits each round).
    synthetic_records:
        Records to output (default ``round(n̂)``).
    conversion:
        zCDP → (ε, δ): ``"cks"`` (as MST/AIM here) or ``"prop4"``.
    threads:
        ``torch.set_num_threads`` during :meth:`run` (restored after; ``None`` leaves it).
    progress:
        Show a tqdm bar over the rounds.
    """

    degree: int = 2
    n_rows: int = 1000
    rounds: int = 20
    top_k: int = 200
    one_shot: bool = False
    iters: int = 1000
    lr: float = 0.05
    tol: float = 1e-4
    patience: int = 25
    total_share: float = 0.01
    select_share: float = 0.5
    synthetic_records: int | None = None
    conversion: str = "cks"
    threads: int | None = 1
    progress: bool = True

    name = "rap"

    # ------------------------------------------------------------------ presets
    @classmethod
    def preset(cls, preset: str = "default", **overrides: Any) -> RAP:
        """``"default"``, ``"adaptive"`` or ``"fast"`` (see :data:`PRESETS`) with ``overrides``
        replacing fields (the registry's ``rap`` factory; ``margsynth synth rap --preset NAME``)."""
        return preset_of(cls, PRESETS, preset, overrides)

    def parameters(self) -> dict[str, Any]:
        return asdict(self)

    # ------------------------------------------------------------------ checks
    def check(self, data: Dataset, budget: BudgetLedger, *, device: Any = "cpu", **_: object) -> None:
        """RAP's own checks, before any noise: its fields, then :func:`check_shared`
        (common fields, the workload's and the relaxed matrix's memory, the output size,
        the device). Raises ``ValueError``."""
        for f in ("n_rows", "rounds", "top_k"):
            check_positive_int(f, getattr(self, f))
        if not isinstance(self.one_shot, (bool, np.bool_)):
            raise ValueError(f"one_shot must be True or False, got {self.one_shot!r}")
        check_shared(self, data, device)

    def memory_bytes(self, domain) -> tuple[int, int]:
        """``(bytes per query, other bytes)`` a run allocates: per query the exact and noisy
        counts, the query's columns, its target and current answers; besides, the ``n' x D``
        relaxed matrix with its gradient, Adam's moments and softmax (float32), the ``D x D``
        Gram matrix of the 2-way answers, the float64 output rows."""
        D = int(sum(domain.shape))
        return 64 + 8 * self.degree, 40 * self.n_rows * D + 12 * D * D

    # ------------------------------------------------------------------ run
    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        device: str = "cpu",
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """Synthesise records from ``data`` spending ``budget`` (see the module docstring):
        MEASURE ``n̂``, rounds of SELECT / MEASURE / project, and GENERATE records from the
        relaxed rows. ``rules`` (public, no budget): records drawn from the relaxed rows
        that break one are drawn again from them, then repaired
        (:meth:`~.queries.MarginalQueries.sample_obeying`; ``extras["rules"]``)."""
        dev = resolve_device(device)
        return with_torch_threads(self.threads, lambda: self._run(data, rng, budget, dev, rules))

    def _run(
        self, data: Dataset, rng: np.random.Generator, ledger: BudgetLedger, dev, rules: RuleSet | None = None
    ) -> SynthesisResult:
        import torch
        from tqdm.auto import tqdm

        clock = Stopwatch()
        seconds = {"select": 0.0, "measure": 0.0, "project": 0.0}
        workload = MarginalQueries.all_kway(data.domain, self.degree)
        counts = workload.counts(data)  # sensitive; touched only through the mechanisms below

        # budget: named shares of the ledger's rho
        rounds = 1 if self.one_shot else self.rounds
        round_share = (1.0 - self.total_share) / rounds
        rho_total = ledger.portion(self.total_share)
        rho_select = 0.0 if self.one_shot else ledger.portion(round_share * self.select_share)
        rho_measure = ledger.portion(round_share if self.one_shot else round_share * (1.0 - self.select_share))

        # MEASURE the record count (normalises every noisy count)
        n_hat = measure_total(data, rho_total, rng, ledger=ledger, label="measure total")

        # the relaxed matrix: softmax logits, CPU-generated start
        seed = int(rng.integers(0, 2**63 - 1))
        gen = torch.Generator().manual_seed(seed)
        logits = (torch.rand(self.n_rows, workload.n_columns, generator=gen) * 2 - 1).to(dev).requires_grad_(True)

        def relaxed() -> torch.Tensor:
            return workload.relaxed_answers(workload.block_softmax(logits))

        measured = np.zeros(0, np.int64)
        targets = torch.zeros(0, device=dev)
        trace = []
        bar = tqdm(range(rounds), desc="RAP rounds", unit="round", disable=not self.progress, mininterval=0.5)
        for t in bar:
            with torch.no_grad():
                current = relaxed().double().cpu().numpy()
            # SELECT (adaptive: top-K by the exponential mechanism) or the whole workload (one-shot)
            with timed(seconds, "select"):
                if self.one_shot:
                    ids = np.arange(workload.n_queries)
                else:
                    scores = query_scores(counts, current, n_hat)
                    ids = select_queries(
                        scores, self.top_k, rho_select, rng, ledger=ledger, exclude=measured, label=f"select round {t + 1}"
                    )
            if ids.size == 0:
                break
            # MEASURE them with one Gaussian mechanism
            with timed(seconds, "measure"):
                label = "measure workload" if self.one_shot else f"measure round {t + 1}"
                m = measure_queries(workload, counts, ids, rho_measure, rng, ledger=ledger, label=label)
            measured = np.concatenate([measured, m.ids])
            targets = torch.cat([targets, torch.as_tensor(m.y / n_hat, dtype=torch.float32, device=dev)])
            # GENERATE: project onto the measured answers (RAP Alg. 1), warm-started
            with timed(seconds, "project"):
                sel = measured.copy()

                def loss_fn(sel=sel, tg=targets):
                    a = workload.relaxed_answers(workload.block_softmax(logits), sel)
                    return ((a - tg) ** 2).sum()

                opt = torch.optim.Adam([logits], lr=self.lr)  # a fresh Adam per projection, as RAP's code
                steps, loss = adam_steps(
                    opt, loss_fn, iters=self.iters, tol=self.tol, patience=self.patience,
                    progress="RAP projection" if self.progress else None,
                )  # fmt: skip
            trace.append(
                {
                    "round": t + 1,
                    "measured": int(measured.size),
                    "sigma": m.sigma,
                    "marginals_touched": int(m.sensitivity**2 + 0.5),
                    "steps": steps,
                    "loss": loss,
                    "max_error_before": float(np.max(np.abs(current[ids] - m.y / n_hat))),
                }
            )
            bar.set_postfix(measured=int(measured.size), steps=steps, loss=f"{loss:.3g}")

        # GENERATE records from the relaxed rows (post-processing)
        with timed(seconds, "sample"):
            with torch.no_grad():
                probs = workload.block_softmax(logits).double().cpu().numpy()
            records, note = (
                (self.synthetic_records, {}) if self.synthetic_records else bounded_records(n_hat, len(data.domain))
            )
            synth, report = workload.sample_obeying(probs, records, rng, rules)
        seconds["total"] = clock.elapsed()
        return SynthesisResult.from_ledger(
            synth, self.name, self.parameters(), ledger, seconds,
            {"rho": ledger.total, "n_hat": n_hat, "measured": measured, "trace": trace, "device": str(dev),
             "relaxed": probs, **note, **({} if report is None else {"rules": report})},
        )  # fmt: skip


#: ``default``: RAP's non-adaptive variant (``one_shot``: T = 1, K = the whole workload), n' = 1000
#: relaxed rows (RAP §6), Adam lr 0.05, at most 1000 steps. The PrivPGD paper tuned T and K per
#: dataset; on adult with all 2-way marginals and add/remove-one accounting the adaptive rounds
#: lose: measured at eps = 2.5 (seed 0, 300 rows, 200 steps per projection), adaptive T = 5,
#: K = 100 gave tv-2way 0.091 and T = 10, K = 1000 gave 0.099, the one-shot variant 0.059 (the
#: independent baseline 0.077, PGM+MST 0.041). A round's K queries touch most of the 91 marginals,
#: so their Gaussian noise costs almost as much as measuring every marginal whole.
#: ``adaptive``: RAP's Algorithm 2 with T = 20 rounds of K = 200 queries (the class defaults).
#: ``fast``: one-shot with 300 rows and at most 200 steps (tests, notebooks' quick profile).
PRESETS: dict[str, RAP] = {
    "default": RAP(one_shot=True),
    "adaptive": RAP(),
    "fast": RAP(one_shot=True, n_rows=300, iters=200),
}
