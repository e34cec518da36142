"""PrivPGD's generator: particle gradient descent on sliced Wasserstein distances (Algorithm 3).

Donhauser, Abad, Hulkund, Yang — "Privacy-preserving data release leveraging optimal
transport and particle gradient descent" (ICML 2024, arXiv:2401.17823); equations
numbered as in the paper. :class:`PrivPGDGenerator` is the GENERATE step: it turns a
set of noisy marginals (:class:`~margsynth.privacy.NoisyMarginals`) into records. The
mechanism — SELECT and MEASURE, then this generator — is
:class:`margsynth.mechanisms.privpgd.PrivPGD`.

Pipeline of the mechanism (Algorithm 1 with PrivPGD as the generation step)::

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
sigmoid sharpness 5 and the penalty's form (see :mod:`~margsynth.inference.privpgd.constraints`).

Ours, not the paper's, off in the ``default`` preset: ``consistency=True`` rakes the
projected measures to one consensus 1-way marginal per attribute before quantization
(post-processing, :func:`.projection.make_consistent`); without it the particles fit
91 separately projected adult marginals that disagree on their shared 1-way marginals
and stall at twice PGM+MST's TV (see ``PRESETS``); ``init="marginals"``.

Ours, not the paper's (documented deviations for CPU speed; same hyperparameters):
directions come from a per-clique bank of ``direction_bank`` precomputed directions
(golden-angle quasi-random for 2-way marginals, sort orders of the grid cells
precomputed once) and particle ranks from a bucketed counting sort
(``ranking="buckets"``, ``rank_buckets * N`` buckets per direction, a quarter of the
particles by default; ``"sort"`` gives the exact torch.sort ranks); gradient entries
are dropped independently with probability ``drop_fraction`` rounded to a multiple of
``2^-16`` (the authors zero exactly that fraction by a random permutation; our masks are
16-bit words of a counter-based generator, :mod:`~margsynth.inference.privpgd.kernels`); the penalty strength ``gamma`` multiplies
``R`` in Eq. 7 with the particle-scaled gradient (authors' ``scale_reg = gamma N / 100``,
see :mod:`~margsynth.inference.privpgd.constraints`). The evaluation metrics (Eq. 9-11) live in
:mod:`margsynth.metrics.evaluation`. Privacy: the
project's neighbouring relation is add/remove-one (sensitivity 1 for the stacked,
normalised marginal query), accounted in zCDP and converted to (eps, delta).

Devices: ``device="cpu"`` (default) or ``"cuda"``/``"cuda:N"``; a requested GPU that is
absent raises ``ValueError`` (never a silent CPU fallback). On the CPU the projection and
optimization steps run as compiled loops (:mod:`~margsynth.inference.privpgd.kernels`: every marginal of an iteration
or step in one call, float32 particles; about 5 CPU-minutes for the paper's settings on
adult instead of 20-30); on a GPU, with ``ranking="sort"`` or with ``MARGSYNTH_NUMBA=0``
they run as torch code that computes the same float32 operations. All random numbers are
drawn from CPU generators derived from the numpy ``rng``, so a GPU run uses the same
directions, masks and initial particles and agrees with the CPU run up to floating
point; the same seed gives byte-identical output on the CPU.

Rules (:mod:`margsynth.rules`; ``generate(..., rules=...)``, not in the paper; public, no
budget): each projected measure over attributes that hold a rule is projected onto the
allowed cells (forbidden cells emptied, the rest rescaled: :meth:`~margsynth.rules.RuleSet.project`)
before the consistency step, whose raking keeps zero cells, so the particles fit measures
that agree on their one-way marginals and are never pulled towards a forbidden cell of a
marginal they fit (projecting after the raking left the measures disagreeing: on the NIST
excerpts at ε = 10 that scored 1.5 ± 0.3 k-marginal points lower on ``tx2018`` and 0.4 ± 0.4
on ``ma2018``, at ε = 1 about a point higher, within two errors). After finalization the
records that still break a rule (across marginals, or a rule no measured marginal holds)
get every attribute of each broken rule redrawn, one after the other, among the values the
rules allow, from its conditional given the rest under the projected measures
(:func:`~margsynth.inference.repair.marginals_log_conditional`); what that leaves gets the
attributes of its broken rules redrawn weighted by the measures' one-way marginals; then
the redrawn attributes' one-way counts are moved back to the particles' by changing them in
records the redraw left alone, where they stay lawful
(:func:`~margsynth.inference.repair.enforce` with ``whole`` and ``keep_counts``, as RAP).
The particles break the rules 16,000-48,000 times a run on the NIST excerpts (a particle
rounds to a cell next to the one its measures hold), both ways round: redrawing only the
attribute each rule determines shifts that attribute's counts, and cost 2.9 points on
``tx2018`` at ε = 10; rejection (the particles conditioned on the rules) cost 27
(docs/notes/rules.md). The number of records stays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from ...dataset import Dataset
from ...domain import Domain
from ...privacy import NoisyMarginals
from ...rules import RuleSet, as_rules
from ...timing import timed
from ..generated import Generated
from ..repair import enforce, marginals_log_conditional
from ..torch_utils import resolve_device
from .constraints import ThresholdPenalty
from .embedding import clique_centres
from .finalize import finalize
from .optimization import RANKINGS, optimize_particles
from .projection import make_consistent, project_measures
from .quantization import quantize
from .slicing import DirectionBank

__all__ = ["INITS", "PrivPGDGenerator", "initial_particles"]

#: Particle initialisations: ``"uniform"`` (i.i.d. uniform on [0,1]^d, the authors' code) or
#: ``"marginals"`` (ours: each coordinate drawn independently from the 1-way marginal implied
#: by the projected measures, uniformly inside its bin — a product-distribution start that
#: leaves only the dependencies to the optimization; used by the ``fast`` preset).
INITS = ("uniform", "marginals")


def one_way_measures(probs, cliques, sizes) -> list[np.ndarray]:
    """Per attribute ``a`` (index), the average over the cliques containing ``a`` of their
    projected measure's ``a``-marginal, normalised (uniform when no clique contains ``a``)."""
    d = len(sizes)
    marg = [np.zeros(s) for s in sizes]
    seen = np.zeros(d)
    for p, c in zip(probs, cliques):
        t = np.asarray(p).reshape([sizes[i] for i in c])
        for j, a in enumerate(c):
            marg[a] += t.sum(axis=tuple(x for x in range(len(c)) if x != j))
            seen[a] += 1
    return [marg[a] / marg[a].sum() if seen[a] else np.full(sizes[a], 1.0 / sizes[a]) for a in range(d)]


def initial_particles(probs, cliques, sizes, n: int, generator: torch.Generator) -> torch.Tensor:
    """``(d, n)`` particles for ``init="marginals"``: attribute ``a`` takes code ``k`` with the
    average over the cliques containing ``a`` of their projected measure's ``a``-marginal
    (:func:`one_way_measures`), then a uniform position inside bin ``k`` (``[k/n_a, (k+1)/n_a)``,
    whose centre is Eq. 4's)."""
    d = len(sizes)
    weights = one_way_measures(probs, cliques, sizes)
    out = torch.rand(d, n, generator=generator, dtype=torch.float64)
    for a in range(d):
        w = weights[a]
        codes = torch.multinomial(torch.as_tensor(w), n, replacement=True, generator=generator)
        out[a] = (codes.double() + out[a]) / sizes[a]
    return out.float().clamp_(0.0, 1.0)


@dataclass(frozen=True)
class PrivPGDGenerator:
    """PrivPGD's generation step (Algorithm 3) and its hyperparameters (defaults = the
    paper's §4.1; see the module docstring): the noisy marginals, normalised by the mean
    noisy total ``n~``, are projected onto the simplex (Eq. 5), optionally raked to common
    1-way marginals (``consistency``), quantised (Eq. 6), and ``n_particles`` particles
    follow the sliced-Wasserstein gradient (Eq. 7-8) before finalisation (§3.3)."""

    n_particles: int = 100_000
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
    # implementation (not in the paper)
    consistency: bool = False
    consistency_iters: int = 50
    init: str = "uniform"
    direction_bank: int = 512
    ranking: str = "buckets"
    rank_buckets: float = 0.25

    name: ClassVar[str] = "privpgd"

    def __post_init__(self) -> None:
        if not isinstance(self.consistency, (bool, np.bool_)):
            raise ValueError(f"consistency must be True or False, got {self.consistency!r}")
        for name in ("n_particles", "projection_iters", "projection_projections", "projection_lr_step",
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
        if self.direction_bank < max(self.projection_projections, self.projections):
            raise ValueError(
                f"direction_bank ({self.direction_bank}) must be at least the number of projections per "
                f"iteration/step ({self.projection_projections}, {self.projections})"
            )
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {RANKINGS}, got {self.ranking!r}")

    def generate(
        self,
        domain: Domain,
        marginals: NoisyMarginals,
        rng: np.random.Generator,
        *,
        records: int | None = None,
        device: Any = "cpu",
        penalty: ThresholdPenalty | None = None,
        gamma: float = 0.0,
        rules: RuleSet | None = None,
        **_: Any,
    ) -> Generated:
        """``records`` (default ``n_particles``) synthetic records from ``marginals``
        (all over distinct attribute sets). ``penalty``/``gamma``: the §4.4 term
        ``gamma R(X)`` of Eq. 7. ``rules``: see the module docstring (report in
        ``extras["rules"]``). The generator's randomness is derived from ``rng``
        (two draws, then CPU torch generators, then the repair's draws); ``extras`` hold
        its diagnostics."""
        dev = resolve_device(device)
        rules = as_rules(rules, domain)
        n_particles = self.n_particles if records is None else int(records)
        seconds: dict[str, float] = {}
        sizes = domain.shape
        cliques = [tuple(domain.index(a) for a in c) for c in marginals.cliques]
        n_hat = max(marginals.mean_total(), 1.0)
        targets = [m.estimate / n_hat for m in marginals]
        seed_bank, seed_torch = (int(x) for x in rng.integers(0, 2**63 - 1, size=2))
        gen = torch.Generator().manual_seed(seed_torch)
        with timed(seconds, "bank", cpu=True):
            centres = [clique_centres([sizes[i] for i in c]) for c in cliques]
            bank = DirectionBank.build(centres, self.direction_bank, np.random.default_rng(seed_bank))
        with timed(seconds, "projection", cpu=True):
            probs, proj_diag = project_measures(
                targets, bank, iters=self.projection_iters, projections=self.projection_projections,
                lr=self.projection_lr, lr_step=self.projection_lr_step, lr_gamma=self.projection_lr_gamma,
                generator=gen, device=dev,
            )
        def lawful(ps: list[np.ndarray]) -> list[np.ndarray]:
            return ps if rules is None else [rules.project(p, c, domain) for p, c in zip(ps, marginals.cliques)]

        probs = lawful(probs)
        if self.consistency:
            with timed(seconds, "consistency"):
                probs = make_consistent(probs, cliques, sizes, iters=self.consistency_iters)
            probs = lawful(probs)  # the raking spreads an empty row's mass evenly, forbidden cells too
        counts = [quantize(p, n_particles) for p in probs]
        init = None
        if self.init == "marginals":
            init = initial_particles(probs, cliques, sizes, n_particles, gen)
        with timed(seconds, "optimization", cpu=True):
            Xt, trace = optimize_particles(
                counts, cliques, centres, bank, len(domain), n_particles=n_particles, epochs=self.epochs,
                projections=self.projections, batch_size=self.batch_size, drop_fraction=self.drop_fraction,
                lr=self.lr, lr_step=self.lr_step, lr_gamma=self.lr_gamma, generator=gen, device=dev,
                ranking=self.ranking, rank_buckets=self.rank_buckets, penalty=penalty, gamma=gamma, init=init,
            )
        with timed(seconds, "finalize"):
            synth: Dataset = finalize(Xt.T, domain)
        extras: dict[str, Any] = {
            "n_hat": n_hat,
            "projection_sw1_init": proj_diag["sw1_init"],
            "projection_sw1_final": proj_diag["sw1_final"],
            "projected": probs,
            "seconds_per_epoch": trace.seconds_per_epoch,
            "cpu_seconds_per_epoch": trace.cpu_seconds_per_epoch,
            "device": str(dev),
            "optimization_backend": trace.backend,
            "bank_bytes": bank.nbytes(),
        }
        if penalty is not None:
            extras["constraint_smooth_answer"] = penalty.smooth_answer(Xt)
        if rules is not None:
            weights = one_way_measures(probs, cliques, sizes)
            weights = {a: weights[domain.index(a)] for a in rules.attributes}
            conditional = marginals_log_conditional(domain, list(zip(marginals.cliques, probs)))
            synth, extras["rules"] = enforce(
                synth, rules, rng, weights=weights, conditional=conditional, whole=True, keep_counts=True
            )
        return Generated(synth, extras, seconds)
