"""GEM — Generative networks with the Exponential Mechanism.

Liu, Vietri & Wu, "Iterative Methods for Private Synthetic Data: Unifying Framework and New
Methods", NeurIPS 2021 (arXiv:2106.07153); §3 (the Adaptive Measurements framework,
Algorithm 1) and §4 (GEM: the generator network, the loss, the exponential moving average).

Pipeline of :meth:`GEM.run` (workload: all ``degree``-way marginals, as the PrivPGD paper §4
ran it)::

    MEASURE   n̂ = n + N(0, σ²)                  (share ``total_share``; normalises counts)
    for t = 1..T
      SELECT    the worst-answered candidate by the exponential mechanism (Alg. 1 line 4):
                a whole marginal (``select="marginal"``, quality = its L1 error in counts) or
                one query (``select="query"``, as the authors' code), share ``select_share``/T
      MEASURE   its counts with Gaussian noise (Alg. 1 line 5), the rest of the round's share
      GENERATE  gradient steps (Adam) on the generator's parameters θ, loss = mean over all
                measured queries of |â_q − q(G_θ(z))| (§4, the L1 loss), early-stopped;
                EMA ← β EMA + (1 − β) G_θ(z)   (§4, exponential moving average of the
                synthetic distributions: a mixture of the rounds' outputs, weights β^(T−t)(1−β))
    OUTPUT    records sampled from that mixture

The generator ``G_θ`` maps a fixed batch of ``batch_size`` Gaussian vectors ``z`` through an
MLP with residual blocks (Linear → BatchNorm → ReLU, concatenated with the input, as the
CTGAN generator the authors build on) to ``D`` logits, softmaxed per attribute: each output
row is a product distribution and the synthetic distribution is their uniform mixture, so a
marginal query's answer is the differentiable average of products of softmax entries
(:meth:`~margsynth.mechanisms.queries.MarginalQueries.relaxed_answers`).

Privacy is accounted in zCDP under the project's add/remove-one relation (counts, a private
``n̂``; ``docs/notes/query_baselines.md``) and converted to (ε, δ) as for MST and AIM; every
selection and measurement is charged before its draw. ``device="cpu"|"cuda"`` (a missing GPU
is an error, never a silent CPU fallback); the network is initialised and ``z`` drawn from
CPU generators seeded from ``rng``, so the same seed gives the same bytes on the CPU.

Rules (public, no budget; not in the paper): the records drawn from the mixture that break one
get the attribute each broken rule determines drawn again from the mixture's conditional
(:meth:`GEM.synthesize`). Where the rules' numeric thresholds split bins, the network fits on
the bins before the split and its rows are spread onto the parts by a
:class:`~margsynth.rules.Refinement`: the generator starts near uniform over each attribute's
bins, and thin bins cut into equal-mass ones cost its fit more than the rules give back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..dataset import Dataset
from ..inference.torch_utils import resolve_device, with_torch_threads
from ..privacy import BudgetLedger
from ..rules import Refinement, RuleSet
from ..timing import Stopwatch, timed
from .base import Mechanism, SynthesisResult, bounded_records, check_positive_int, preset_of
from .queries import (
    MarginalQueries,
    clique_scores,
    measure_queries,
    measure_total,
    query_scores,
    select_queries,
)
from .rap import adam_steps, check_shared

__all__ = ["PRESETS", "SELECTIONS", "GEM", "build_generator"]

#: Rounds whose moving-average weight falls below this are dropped from the output mixture.
_EMA_FLOOR = 1e-9

SELECTIONS = ("marginal", "query")


def build_generator(embedding_dim: int, hidden: tuple[int, ...], out_dim: int, seed: int):
    """The generator MLP: residual blocks ``x ↦ [ReLU(BN(Wx + b)), x]`` of widths ``hidden``
    then a linear map to ``out_dim`` logits (GEM §4, after CTGAN's generator). Parameters
    are initialised from a torch generator seeded with ``seed`` (the global torch RNG is left
    as it was)."""
    import torch
    from torch import nn

    class Residual(nn.Module):
        def __init__(self, i: int, o: int) -> None:
            super().__init__()
            self.fc = nn.Linear(i, o)
            self.bn = nn.BatchNorm1d(o)

        def forward(self, x):
            return torch.cat([torch.relu(self.bn(self.fc(x))), x], dim=1)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers, dim = [], embedding_dim
        for h in hidden:
            layers.append(Residual(dim, h))
            dim += h
        layers.append(nn.Linear(dim, out_dim))
        return nn.Sequential(*layers)


@dataclass(frozen=True)
class GEM(Mechanism):
    """GEM hyperparameters (budget split in named fields; see the module docstring).

    Parameters
    ----------
    degree:
        Workload: all ``degree``-way marginals (2, as the PrivPGD paper).
    rounds:
        ``T``, adaptive rounds (capped at the number of candidates).
    select:
        ``"marginal"`` (measure the selected marginal whole) or ``"query"`` (one query a round,
        as the authors' code).
    batch_size:
        Rows of ``z`` (the synthetic mixture's components; the authors' ``syndata_size`` 1000).
    embedding_dim, hidden:
        Width of ``z`` and of the residual blocks.
    lr, iters, tol, patience:
        Adam learning rate, at most ``iters`` steps per round, early-stopping rule.
    ema_beta:
        β of the exponential moving average of the generator's outputs across rounds.
    total_share:
        Share of ρ spent on the record count ``n̂``.
    select_share:
        Share of each round's budget spent on selection.
    synthetic_records, conversion, threads, progress:
        As for :class:`~margsynth.mechanisms.rap.RAP`.
    """

    degree: int = 2
    rounds: int = 30
    select: str = "marginal"
    batch_size: int = 1000
    embedding_dim: int = 128
    hidden: tuple[int, ...] = (256, 256)
    lr: float = 1e-3
    iters: int = 100
    tol: float = 1e-4
    patience: int = 10
    ema_beta: float = 0.5
    total_share: float = 0.01
    select_share: float = 0.5
    synthetic_records: int | None = None
    conversion: str = "cks"
    threads: int | None = 1
    progress: bool = True

    name = "gem"
    takes_refinement = True

    def __post_init__(self) -> None:
        if isinstance(self.hidden, list):
            object.__setattr__(self, "hidden", tuple(self.hidden))

    @classmethod
    def preset(cls, preset: str = "default", **overrides: Any) -> GEM:
        """``"default"`` or ``"fast"`` (see :data:`PRESETS`) with ``overrides`` replacing fields
        (the registry's ``gem`` factory; ``margsynth synth gem --preset NAME``)."""
        return preset_of(cls, PRESETS, preset, overrides)

    def parameters(self) -> dict[str, Any]:
        p = asdict(self)
        p["hidden"] = list(self.hidden)
        return p

    def check(
        self, data: Dataset, budget: BudgetLedger, *, device: Any = "cpu", refinement: Any = None, **_: object
    ) -> None:
        """GEM's own checks, before any noise: its fields, then :func:`~.rap.check_shared`
        (common fields, the refinement, the workload's, network's and mixture's memory over
        the finer domain, the output size, the device). Raises ``ValueError``."""
        for f in ("rounds", "batch_size", "embedding_dim"):
            check_positive_int(f, getattr(self, f))
        if not isinstance(self.hidden, tuple) or not all(
            not isinstance(h, bool) and isinstance(h, (int, np.integer)) and h >= 1 for h in self.hidden
        ):
            raise ValueError(f"hidden must be a tuple of positive integers, got {self.hidden!r}")
        if self.batch_size < 2:
            raise ValueError(f"batch_size must be at least 2 (batch normalisation), got {self.batch_size!r}")
        if isinstance(self.ema_beta, bool) or not isinstance(self.ema_beta, (int, float)) or not 0 <= self.ema_beta < 1:
            raise ValueError(f"ema_beta must be in [0, 1), got {self.ema_beta!r}")
        if self.select not in SELECTIONS:
            raise ValueError(f"select must be one of {SELECTIONS}, got {self.select!r}")
        check_shared(self, data, device, refinement)

    def memory_bytes(self, domain) -> tuple[int, int]:
        """``(bytes per query, other bytes)`` a run allocates: per query the exact counts, the
        query's columns, its target, current answer and score; besides, the network's
        parameters with their gradients and Adam's moments, a batch's activations, the
        ``D x D`` Gram matrix of the 2-way answers and the rounds' output batches (float64)."""
        D = int(sum(domain.shape))
        widths = [self.embedding_dim, *self.hidden]
        params = sum(sum(widths[: i + 1]) * h for i, h in enumerate(self.hidden)) + sum(widths) * D
        acts = self.batch_size * (sum(widths) + 2 * D)
        return 64 + 8 * self.degree, 16 * params + 12 * acts + 12 * D * D + 8 * self.rounds * self.batch_size * D

    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        device: str = "cpu",
        rules: RuleSet | None = None,
        refinement: Refinement | None = None,
        **_: object,
    ) -> SynthesisResult:
        """Synthesise records from ``data`` spending ``budget`` (see the module docstring):
        MEASURE ``n̂``, rounds of SELECT / MEASURE / fit, and GENERATE records from the
        moving-average mixture. ``rules`` (public, no budget): records drawn from the
        mixture that break one get the attribute each broken rule determines drawn again from
        the mixture's conditional, then the repair for what is left
        (:meth:`~.queries.MarginalQueries.sample_obeying` with ``whole=False,
        keep_counts=False``; ``extras["rules"]``). ``refinement`` (public, a
        :class:`~margsynth.rules.Refinement` whose fine domain is ``data``'s: the bins the
        rules' thresholds split): the network fits on the coarse domain
        (:meth:`~margsynth.rules.Refinement.coarsen`, so the rules' thin bins cost the fit
        nothing) and the mixture's rows are spread onto the fine domain by the refinement's
        shares (:meth:`~margsynth.rules.Refinement.expand`) before records are drawn and the
        rules enforced on them."""
        dev = resolve_device(device)
        return with_torch_threads(self.threads, lambda: self._run(data, rng, budget, dev, rules, refinement))

    def _run(
        self,
        data: Dataset,
        rng: np.random.Generator,
        ledger: BudgetLedger,
        dev,
        rules: RuleSet | None = None,
        refinement: Refinement | None = None,
    ) -> SynthesisResult:
        import torch
        from tqdm.auto import tqdm

        clock = Stopwatch()
        if refinement is not None:  # fit on the bins before the rules' cuts
            data = refinement.coarsen(data)
        seconds = {"select": 0.0, "measure": 0.0, "fit": 0.0}
        workload = MarginalQueries.all_kway(data.domain, self.degree)
        counts = workload.counts(data)  # sensitive; touched only through the mechanisms below
        n_candidates = len(workload.cliques) if self.select == "marginal" else workload.n_queries
        rounds = min(self.rounds, n_candidates)  # candidates are not re-selected

        # budget: named shares of the ledger's rho
        round_share = (1.0 - self.total_share) / rounds
        rho_total = ledger.portion(self.total_share)
        rho_select = ledger.portion(round_share * self.select_share)
        rho_measure = ledger.portion(round_share * (1.0 - self.select_share))

        # MEASURE the record count
        n_hat = measure_total(data, rho_total, rng, ledger=ledger, label="measure total")

        # the generator and its fixed noise batch, from CPU generators seeded by rng
        seed_net, seed_z = (int(x) for x in rng.integers(0, 2**63 - 1, size=2))
        net = build_generator(self.embedding_dim, self.hidden, workload.n_columns, seed_net).to(dev)
        z = torch.randn(self.batch_size, self.embedding_dim, generator=torch.Generator().manual_seed(seed_z)).to(dev)

        def output() -> torch.Tensor:
            return workload.block_softmax(net(z))

        measured = np.zeros(0, np.int64)
        picked: list[int] = []
        targets = torch.zeros(0, device=dev)
        mixture: list[np.ndarray] = []  # generator outputs of past rounds ...
        ema_weights = np.zeros(0)  # ... and their exponential-moving-average weights
        trace = []
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)  # one optimiser across rounds (GEM keeps its state)
        bar = tqdm(range(rounds), desc="GEM rounds", unit="round", disable=not self.progress, mininterval=0.5)
        for t in bar:
            with torch.no_grad():
                current = workload.relaxed_answers(output()).double().cpu().numpy()
            # SELECT by the exponential mechanism
            with timed(seconds, "select"):
                if self.select == "marginal":
                    scores = clique_scores(workload, counts, current, n_hat)
                    j = select_queries(
                        scores, 1, rho_select, rng, ledger=ledger, exclude=picked, label=f"select round {t + 1}"
                    )
                    ids = workload.ids_of(j)
                else:
                    scores = query_scores(counts, current, n_hat)
                    j = select_queries(
                        scores, 1, rho_select, rng, ledger=ledger, exclude=measured, label=f"select round {t + 1}"
                    )
                    ids = j
                picked.extend(int(x) for x in j)
            # MEASURE
            with timed(seconds, "measure"):
                m = measure_queries(workload, counts, ids, rho_measure, rng, ledger=ledger, label=f"measure round {t + 1}")
            measured = np.concatenate([measured, m.ids])
            targets = torch.cat([targets, torch.as_tensor(m.y / n_hat, dtype=torch.float32, device=dev)])
            # GENERATE: gradient steps on the L1 loss over all measured queries
            with timed(seconds, "fit"):
                sel = measured.copy()

                def loss_fn(sel=sel, tg=targets):
                    return (workload.relaxed_answers(output(), sel) - tg).abs().mean()

                steps, loss = adam_steps(
                    opt,
                    loss_fn,
                    iters=self.iters,
                    tol=self.tol,
                    patience=self.patience,
                    progress=f"GEM round {t + 1}" if self.progress else None,
                )
                with torch.no_grad():
                    mixture.append(output().double().cpu().numpy())
                ema_weights = np.append(self.ema_beta * ema_weights, 1.0 if t == 0 else 1.0 - self.ema_beta)
                keep = ema_weights >= _EMA_FLOOR  # rounds whose weight has decayed away are dropped
                mixture = [p for p, k in zip(mixture, keep) if k]
                ema_weights = ema_weights[keep]
            trace.append(
                {
                    "round": t + 1,
                    "selected": [int(x) for x in j],
                    "measured": int(measured.size),
                    "sigma": m.sigma,
                    "steps": steps,
                    "loss": loss,
                }
            )
            bar.set_postfix(measured=int(measured.size), steps=steps, loss=f"{loss:.3g}")

        # OUTPUT: sample records from the EMA of the generator's product distributions
        with timed(seconds, "sample"):
            probs = np.concatenate(mixture)
            row_weights = np.repeat(ema_weights / ema_weights.sum(), self.batch_size) / self.batch_size
            records, note = (
                (self.synthetic_records, {}) if self.synthetic_records else bounded_records(n_hat, len(data.domain))
            )
            synth, report = workload.sample_obeying(probs, records, rng, rules, weights=row_weights, whole=False,
                                                    keep_counts=False, refinement=refinement)  # fmt: skip
        seconds["total"] = clock.elapsed()
        return SynthesisResult.from_ledger(
            synth,
            self.name,
            self.parameters(),
            ledger,
            seconds,
            {
                "rho": ledger.total,
                "n_hat": n_hat,
                "selected": picked,
                "measured": measured,
                "trace": trace,
                "device": str(dev),
                "relaxed": probs,
                "relaxed_weights": row_weights,
                **note,
                **({} if report is None else {"rules": report}),
                **({} if refinement is None else {"fitted_coarse": sorted(refinement.parent)}),
            },
        )


#: ``default``: T = 30 rounds, each measuring one whole 2-way marginal chosen by the exponential
#: mechanism; a 1000-row batch (the authors' ``syndata_size``), z of width 128, residual blocks
#: (256, 256) (the authors' class defaults), Adam lr 1e-3, at most 100 steps per round (the
#: authors' ``max_iters``), EMA beta 0.5.
#: ``fast``: T = 30 rounds, 300 rows, z of width 64, blocks (128, 128), at most 40 steps per round.
#: The rounds stay at the default's 30: a round measures one marginal, and a column no measured
#: marginal holds keeps the network's near-uniform start. Measured 2026-11-29 (2 cores shared
#: with other jobs): on adult (15 attributes) at eps = 2.5, seeds 0 / 1, tv-2way 0.042 / 0.040
#: in 29-30 CPU s (15 rounds: 0.063 / 0.054 in 13-16 s; PGM+MST 0.041); on the NIST excerpt
#: ``ma2018`` (24 attributes) at eps = 1, seeds 0-4, k-marginal 786 (15 rounds: 667, below
#: the independent baseline's 788).
PRESETS: dict[str, GEM] = {
    "default": GEM(),
    "fast": GEM(rounds=30, batch_size=300, embedding_dim=64, hidden=(128, 128), iters=40),
}
