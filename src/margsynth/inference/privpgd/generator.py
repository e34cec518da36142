"""PrivPGD: particle gradient descent on sliced Wasserstein distances (Algorithm 3).

Donhauser, Abad, Hulkund, Yang — "Privacy-preserving data release leveraging optimal
transport and particle gradient descent" (ICML 2024); equations numbered as in the paper.

Pipeline of :meth:`PrivPGD.run` (Algorithm 1 with PrivPGD as the generation step)::

    SELECT    all k-way marginals (k = degree = 2, §4.1)
    MEASURE   y_C = M_C(D) + N(0, sigma^2 / w^2)  -- Algorithm 1 via margsynth.privacy.measure,
              one Gaussian mechanism of L2 sensitivity 1 (``measure_marginals``) charged to a zCDP
              BudgetLedger;
              optional constraint target c~ = count + N(0, sigma_c^2) with its own rho share
    GENERATE  embedding (Eq. 4) -> projection (Eq. 5) -> quantization (Eq. 6)
              -> optimization (Eq. 7, 8) -> finalization (§3.3)

Equations settled on (the extracted paper text lost its symbols; rebuilt from the
text, the authors' description in §4.1 and the particle-GD / sliced-W literature):

* Eq. 4   e_i(k) = (2k+1)/(2 n_i)  (bin midpoints in [0,1], order preserving)
* Eq. 1   SW_p^p(mu, nu) = E_{theta ~ U(S^{k-1})} W_p^p(theta#mu, theta#nu)
* Eq. 3   W_1(alpha, beta) = ``int |F_alpha - F_beta| dt``   (Vallender; extends to signed)
* Eq. 5   p_C = argmin_{p in simplex} SW_1(p, y_C / n~),   n~ = mean_C sum y_C
* Eq. 6   n_k = largest-remainder rounding of N p_k,  nu_C = (1/N) sum_k n_k delta_{c_k}
* Eq. 7   min_X sum_C SW_2^2(X_C, nu_C) + gamma R(X)
* Eq. 8   W_2^2 = (1/N) sum_r (z_(r) - t_(r))^2  -> grad_i = (2/N)(z_i - t_(rank i)) theta
* final   x_i -> nearest grid point, k_j = min(floor(n_j x_ij), n_j - 1)

Paper defaults (§4.1, "Implementation of PrivPGD", checked against the text): all
2-way marginals; N = 100,000 particles; projection step: 200 MC projections, 1,750
iterations of Adam, lr 0.1, step decay x0.8 every 100 iterations, initialised by
clipping negatives and renormalising; optimization step: 10 projections, 1,000 epochs
(each marginal seen once per epoch), mini-batches of 5 marginals, 80% of gradient
entries set to zero (Sparse Adam), lr 0.1 with step decay x0.75 every 50 epochs.
Not stated in the paper and taken from the authors' code: Adam betas (0.9, 0.999),
particles initialised uniformly on [0,1]^d (``init="uniform"``; ``"marginals"`` is an
option of ours) and clipped to it after every step,
sigmoid sharpness 5 and the penalty's form (see :mod:`.constraints`).

Ours, not the paper's, off in the ``default`` preset: ``consistency=True`` rakes the
projected measures to one consensus 1-way marginal per attribute before quantization
(post-processing, :func:`.projection.make_consistent`); without it the particles fit
91 separately projected adult marginals that disagree on their shared 1-way marginals
and stall at twice PGM+MST's TV (see ``PRESETS``); ``init="marginals"``.

Ours, not the paper's (documented deviations for CPU speed; same hyperparameters):
directions come from a per-clique bank of ``direction_bank`` precomputed directions
(golden-angle quasi-random for 2-way marginals, sort orders of the grid cells
precomputed once) and particle ranks from a bucketed counting sort
(``ranking="buckets"``; ``"sort"`` gives the exact torch.sort ranks); gradient entries
are dropped independently with probability ``drop_fraction`` (the authors zero exactly
that fraction by a random permutation); the penalty strength ``gamma`` multiplies
``R`` in Eq. 7 with the particle-scaled gradient (authors' ``scale_reg = gamma N / 100``,
see :mod:`.constraints`). The evaluation metrics (Eq. 9-11) live in
:mod:`margsynth.metrics.evaluation`. Privacy: the
project's neighbouring relation is add/remove-one (sensitivity 1 for the stacked,
normalised marginal query), accounted in zCDP and converted to (eps, delta).

Devices: ``device="cpu"`` (default) or ``"cuda"``/``"cuda:N"``; a requested GPU that is
absent raises ``ValueError`` (never a silent CPU fallback). All random numbers are drawn
from CPU generators derived from the numpy ``rng``, so a GPU run uses the same
directions, masks and initial particles and agrees with the CPU run up to floating
point; the same seed gives byte-identical output on the CPU.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch

from ...dataset import Dataset
from ...mechanisms.base import NO_RNG, SynthesisResult, check_run_inputs
from ...privacy import BudgetLedger, gaussian_mechanism, measure_marginals
from ...privacy.accounting import gaussian_sigma
from .constraints import ThresholdConstraint, ThresholdPenalty
from .embedding import check_domain, clique_centres
from .finalize import finalize
from .optimization import RANKINGS, optimize_particles
from .projection import make_consistent, project_measures
from .quantization import quantize
from .slicing import DirectionBank

__all__ = ["INITS", "PRESETS", "PrivPGD", "initial_particles", "resolve_device"]

#: Particle initialisations: ``"uniform"`` (i.i.d. uniform on [0,1]^d, the authors' code) or
#: ``"marginals"`` (ours: each coordinate drawn independently from the 1-way marginal implied
#: by the projected measures, uniformly inside its bin — a product-distribution start that
#: leaves only the dependencies to the optimization; used by the ``fast`` preset).
INITS = ("uniform", "marginals")


def initial_particles(probs, cliques, sizes, n: int, generator: torch.Generator) -> torch.Tensor:
    """``(d, n)`` particles for ``init="marginals"``: attribute ``a`` takes code ``k`` with the
    average over the cliques containing ``a`` of their projected measure's ``a``-marginal,
    then a uniform position inside bin ``k`` (``[k/n_a, (k+1)/n_a)``, whose centre is Eq. 4's)."""
    d = len(sizes)
    marg = [np.zeros(s) for s in sizes]
    seen = np.zeros(d)
    for p, c in zip(probs, cliques):
        t = np.asarray(p).reshape([sizes[i] for i in c])
        for j, a in enumerate(c):
            marg[a] += t.sum(axis=tuple(x for x in range(len(c)) if x != j))
            seen[a] += 1
    out = torch.rand(d, n, generator=generator, dtype=torch.float64)
    for a in range(d):
        w = marg[a] / marg[a].sum() if seen[a] else np.full(sizes[a], 1.0 / sizes[a])
        codes = torch.multinomial(torch.as_tensor(w), n, replacement=True, generator=generator)
        out[a] = (codes.double() + out[a]) / sizes[a]
    return out.float().clamp_(0.0, 1.0)


def resolve_device(device) -> torch.device:
    """``torch.device`` for ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; ``ValueError`` for anything
    else or for a GPU that is not present (no silent fallback)."""
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but no CUDA GPU is available (no silent CPU fallback)")
        dev = torch.device(device)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} requested but only {torch.cuda.device_count()} GPU(s) present")
        return dev
    raise ValueError(f"unknown device {device!r}; expected 'cpu', 'cuda' or 'cuda:N'")


@dataclass(frozen=True)
class PrivPGD:
    """PrivPGD hyperparameters (defaults = the paper's §4.1; see module docstring).

    ``gamma`` is the penalty strength of Eq. 7 (``constraint`` must be given when
    ``gamma > 0``); ``constraint_share`` the fraction of the zCDP budget spent on the
    constraint's target (App. B splits the budget the same way). ``threads`` sets
    ``torch.set_num_threads`` during :meth:`run` (restored afterwards; ``None`` leaves it):
    1 by default, because most kernels here are memory-bound or serial (prefix sums,
    scatter-adds) and on the project's shared 2-core machine two threads measured 6x
    slower per epoch (9.2 s vs 1.5 s) than one.
    """

    n_particles: int = 100_000
    degree: int = 2
    # projection step (Eq. 5)
    projection_iters: int = 1_750
    projection_projections: int = 200
    projection_lr: float = 0.1
    projection_lr_step: int = 100
    projection_lr_gamma: float = 0.8
    # optimization step (Eq. 7-8)
    epochs: int = 1_000
    projections: int = 10
    batch_size: int = 5
    drop_fraction: float = 0.8
    lr: float = 0.1
    lr_step: int = 50
    lr_gamma: float = 0.75
    # domain-specific constraint (§4.4)
    constraint: ThresholdConstraint | None = None
    gamma: float = 0.0
    constraint_share: float = 0.1
    # implementation (not in the paper)
    consistency: bool = False
    consistency_iters: int = 50
    init: str = "uniform"
    direction_bank: int = 512
    ranking: str = "buckets"
    rank_buckets: float = 1.0
    threads: int | None = 1

    def __post_init__(self) -> None:
        if not isinstance(self.consistency, (bool, np.bool_)):
            raise ValueError(f"consistency must be True or False, got {self.consistency!r}")
        for name in ("n_particles", "degree", "projection_iters", "projection_projections", "projection_lr_step",
                     "consistency_iters", "epochs", "projections", "batch_size", "lr_step", "direction_bank"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name in ("projection_lr", "lr", "rank_buckets"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        for name in ("projection_lr_gamma", "lr_gamma"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ValueError(f"{name} must be in (0, 1], got {v!r}")
        if not (isinstance(self.drop_fraction, (int, float)) and 0 <= self.drop_fraction < 1):
            raise ValueError(f"drop_fraction must be in [0, 1), got {self.drop_fraction!r}")
        if not (isinstance(self.gamma, (int, float)) and math.isfinite(self.gamma)) or self.gamma < 0:
            raise ValueError(f"gamma (penalty strength) must be a finite number >= 0, got {self.gamma!r}")
        if self.constraint is not None and not isinstance(self.constraint, ThresholdConstraint):
            raise ValueError(f"constraint must be a ThresholdConstraint or None, got {type(self.constraint).__name__}")
        if self.gamma > 0 and self.constraint is None:
            raise ValueError("gamma > 0 needs a constraint")
        if not (isinstance(self.constraint_share, (int, float)) and 0 < self.constraint_share < 1):
            raise ValueError(f"constraint_share must be in (0, 1), got {self.constraint_share!r}")
        if self.direction_bank < max(self.projection_projections, self.projections):
            raise ValueError(
                f"direction_bank ({self.direction_bank}) must be at least the number of projections per "
                f"iteration/step ({self.projection_projections}, {self.projections})"
            )
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {RANKINGS}, got {self.ranking!r}")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"threads must be a positive integer or None, got {self.threads!r}")

    # ------------------------------------------------------------------ presets
    @classmethod
    def preset(cls, preset: str = "default", **overrides) -> PrivPGD:
        """``"default"`` (the paper's hyperparameters) or ``"fast"`` (see ``PRESETS``),
        with ``overrides`` replacing fields (the registry's ``privpgd`` factory)."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
        return replace(PRESETS[preset], **overrides)

    # ------------------------------------------------------------------ run
    def validate(
        self, data: Dataset, epsilon: float, delta: float, *, rng: Any = NO_RNG, device: str = "cpu", **_: object
    ) -> None:
        """Every check of :meth:`run`, before any noise: ``ValueError`` for bad privacy
        parameters, a non-Generator ``rng``, a non-Dataset, an attribute of size 1, codes
        that do not match the domain, a degree above the number of attributes or a bad device."""
        resolve_device(device)
        _check_data(data)
        check_run_inputs(data, epsilon, delta, rng)
        if self.degree > len(data.domain):
            raise ValueError(f"degree {self.degree} exceeds the number of attributes ({len(data.domain)})")

    def run(
        self, data: Dataset, epsilon: float, delta: float, rng: np.random.Generator, device: str = "cpu", **kw: object
    ) -> SynthesisResult:
        """Synthesise ``n_particles`` records from ``data`` under (``epsilon``, ``delta``)-DP
        (:meth:`validate` first)."""
        self.validate(data, epsilon, delta, rng=rng, device=device, **kw)
        dev = resolve_device(device)
        old_threads = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            return self._run(data, float(epsilon), float(delta), rng, dev)
        finally:
            if self.threads is not None:
                torch.set_num_threads(old_threads)

    def _run(self, data, epsilon, delta, rng, dev) -> SynthesisResult:
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        domain = data.domain
        sizes = domain.shape
        # SELECT: all degree-way marginals (§4.1)
        cliques = list(itertools.combinations(range(len(domain)), self.degree))
        names = [tuple(domain.names[i] for i in c) for c in cliques]
        # MEASURE (Algorithm 1), budget split named here
        ledger = BudgetLedger.from_dp(epsilon, delta)
        use_constraint = self.constraint is not None
        share_marginals = 1.0 - self.constraint_share if use_constraint else 1.0
        sigma = gaussian_sigma(ledger.portion(share_marginals))
        noisy = measure_marginals(data, [(c, 1.0) for c in names], sigma, rng, ledger=ledger, label=f"{self.degree}-way marginals")
        estimates = [m.estimate for m in noisy]
        n_hat = max(float(np.mean([e.sum() for e in estimates])), 1.0)  # equal variances: plain mean
        targets = [e / n_hat for e in estimates]
        constraint_target = None
        if use_constraint:
            sigma_c = gaussian_sigma(ledger.portion(self.constraint_share))
            c_noisy = gaussian_mechanism(
                [float(self.constraint.count(data))], sigma=sigma_c, l2_sensitivity=1.0, rng=rng,
                ledger=ledger, label="constraint target",
            )[0]
            constraint_target = float(np.clip(c_noisy / n_hat, 0.0, 1.0))
        seconds["measure"] = time.perf_counter() - t0
        # GENERATE: randomness for the generator derived from rng (CPU generators)
        seed_bank, seed_torch = (int(x) for x in rng.integers(0, 2**63 - 1, size=2))
        gen = torch.Generator().manual_seed(seed_torch)
        t1, c1 = time.perf_counter(), time.process_time()
        centres = [clique_centres([sizes[i] for i in c]) for c in cliques]
        bank = DirectionBank.build(centres, self.direction_bank, np.random.default_rng(seed_bank))
        seconds["bank"] = time.perf_counter() - t1
        seconds["bank_cpu"] = time.process_time() - c1
        t1, c1 = time.perf_counter(), time.process_time()
        probs, proj_diag = project_measures(
            targets, bank, iters=self.projection_iters, projections=self.projection_projections,
            lr=self.projection_lr, lr_step=self.projection_lr_step, lr_gamma=self.projection_lr_gamma,
            generator=gen, device=dev,
        )
        seconds["projection"] = time.perf_counter() - t1
        seconds["projection_cpu"] = time.process_time() - c1
        if self.consistency:
            t1 = time.perf_counter()
            probs = make_consistent(probs, cliques, sizes, iters=self.consistency_iters)
            seconds["consistency"] = time.perf_counter() - t1
        counts = [quantize(p, self.n_particles) for p in probs]
        penalty = None
        if use_constraint and self.gamma > 0:
            penalty = ThresholdPenalty(self.constraint, domain, constraint_target, dev)
        init = None
        if self.init == "marginals":
            init = initial_particles(probs, cliques, sizes, self.n_particles, gen)
        t1, c1 = time.perf_counter(), time.process_time()
        Xt, trace = optimize_particles(
            counts, cliques, centres, bank, len(domain), n_particles=self.n_particles, epochs=self.epochs,
            projections=self.projections, batch_size=self.batch_size, drop_fraction=self.drop_fraction,
            lr=self.lr, lr_step=self.lr_step, lr_gamma=self.lr_gamma, generator=gen, device=dev,
            ranking=self.ranking, rank_buckets=self.rank_buckets, penalty=penalty, gamma=self.gamma, init=init,
        )
        seconds["optimization"] = time.perf_counter() - t1
        seconds["optimization_cpu"] = time.process_time() - c1
        t1 = time.perf_counter()
        synth = finalize(Xt.T, domain)
        seconds["finalize"] = time.perf_counter() - t1
        seconds["total"] = time.perf_counter() - t0
        params = asdict(self)
        if self.constraint is not None:
            params["constraint"] = {"weights": dict(self.constraint.weights), "tau": self.constraint.tau,
                                    "sharpness": self.constraint.sharpness, "width": self.constraint.width}
        extras = {
            "cliques": names,
            "sigma": sigma,
            "n_hat": n_hat,
            "projection_sw1_init": proj_diag["sw1_init"],
            "projection_sw1_final": proj_diag["sw1_final"],
            "projected": probs,
            "seconds_per_epoch": trace.seconds_per_epoch,
            "cpu_seconds_per_epoch": trace.cpu_seconds_per_epoch,
            "device": str(dev),
            "bank_bytes": bank.nbytes(),
        }
        if constraint_target is not None:
            extras["constraint_target"] = constraint_target
        if penalty is not None:
            extras["constraint_smooth_answer"] = penalty.smooth_answer(Xt)
        return SynthesisResult.from_ledger(synth, "privpgd", params, ledger, seconds, extras)


def _check_data(data: Dataset) -> None:
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a margsynth Dataset, got {type(data).__name__}")
    sizes = np.asarray(check_domain(data.domain))
    codes = data.codes
    if codes.ndim != 2 or codes.shape[1] != sizes.size:
        raise ValueError(f"data has {codes.shape[1] if codes.ndim == 2 else '?'} columns but the domain has {sizes.size} attributes")
    if len(data) == 0:
        raise ValueError("data has no records")
    c = codes.astype(np.int64, copy=False)
    bad = np.flatnonzero(((c < 0) | (c >= sizes)).any(axis=0))
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"data does not match its domain: column {data.domain.names[j]!r} has codes outside 0..{sizes[j] - 1} "
            f"(max {int(c[:, j].max())})"
        )


#: ``default``: the paper's §4.1 hyperparameters (uniform initialisation, as the authors,
#: no consistency step).
#: ``fast``: 30,000 particles, 200 epochs (lr x0.75 every 13), 300 projection iterations
#: (lr x0.8 every 20), a 256-direction bank, ``init="marginals"`` and ``consistency=True``
#: (the projected measures raked to common 1-way marginals, :func:`.projection.make_consistent`);
#: everything else as the paper. Measured on full adult at eps = 2.5, delta = 1e-5, seed 0
#: (2-core CPU, 1 thread): ~105 s of process CPU (bank 3 s, projection 44 s, optimization
#: 56 s; 6.5 min wall on a machine at load 7), average 2-way TV 0.038 and sliced W1 0.0022
#: (the projected-and-raked targets themselves are at TV 0.038; PGM+MST 0.041). The
#: previous fast preset (150 epochs, lr x0.75 every 10, uniform init, no consistency) gave
#: TV 0.085 / SW1 0.0029 (at eps = 0.2: 0.310 / 0.0256 before, 0.130 / 0.0165 now); on the
#: 80% split, 3 seeds, it beats PGM+MST on SW1, counting queries and TV
#: (benchmarks/bench_privpgd_vs_mst.py). Without the consistency step even 600 epochs stall at TV 0.081:
#: the 13 measures sharing each attribute imply 13 different noisy 1-way marginals, and
#: the particles' coordinate, pulled to conflicting quantiles at every step, never
#: settles into its bin (the particles fit those targets no better than they fit the truth).
PRESETS: dict[str, PrivPGD] = {
    "default": PrivPGD(),
    "fast": PrivPGD(
        n_particles=30_000,
        projection_iters=300,
        projection_lr_step=20,
        epochs=200,
        lr_step=13,
        direction_bank=256,
        init="marginals",
        consistency=True,
    ),
}
