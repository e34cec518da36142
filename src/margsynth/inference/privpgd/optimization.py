"""Optimization step of PrivPGD (paper §3.3, Eq. 7 and 8; hyperparameters §4.1).

Particles ``X = (x_1, ..., x_N)``, ``x_i in [0, 1]^d``, minimise

    J(X) = sum_C SW_2^2(X_C, nu_C) + gamma R(X)                              (Eq. 7)

where ``X_C`` is the empirical measure of the particles' coordinates in clique ``C``,
``nu_C`` the quantized projected marginal (Eq. 6, ``N`` atoms) and ``R`` an optional
differentiable penalty (:mod:`~margsynth.inference.privpgd.constraints`). For a direction ``theta`` the 1-D
distance has the sorting closed form (Eq. 8)
``W_2^2 = (1/N) sum_r (z_(r) - t_(r))^2``, ``z_i = <x_i,C, theta>``, ``t`` the sorted
projected atoms of ``nu_C``, so the gradient for particle ``i`` is
``(2/N) (z_i - t_(rank(z_i))) theta``. We use the particle-scaled gradient
``g_i = N grad_{x_i} J`` (Adam is invariant to the scale):
``g_i = (2/P) sum_p (z_ip - t_p(rank_p(i))) theta_p + gamma N grad_{x_i} R``.

Algorithm (mini-batch particle gradient descent, §4.1 defaults in brackets):
particles start i.i.d. uniform on ``[0,1]^d``; every epoch [1,000] shuffles the cliques
and splits them into batches [5]; every batch is one step with, per clique, ``P`` [10]
fresh directions (a random block of the clique's :class:`~.slicing.DirectionBank`);
each gradient entry ``(i, j)`` is dropped independently with probability [0.8] (the
keep probability rounded to a multiple of ``2^-16``: the masks are 16-bit words of a
counter-based generator, :mod:`~margsynth.inference.privpgd.kernels`); the kept entries take an Adam step with torch
``SparseAdam`` semantics (dropped entries keep their value and moments; bias correction
by the global step count) at learning rate [0.1] multiplied by [0.75] every [50] epochs;
finally the particles are clipped to ``[0, 1]^d`` (the authors' projection onto the domain).

Ranks. ``ranking="sort"`` computes ``rank_p(i)`` by ``torch.sort`` (exact Eq. 8, used by
the tests and cheap on a GPU). ``ranking="buckets"`` (default; on a CPU sorting 100k
floats costs ~20 ms) is a counting sort at resolution ``1/B`` of the projected range,
``B = rank_buckets * N`` (``rank_buckets = 0.25`` by default: about four particles per
bucket, a count table that stays in cache): with ``f_i`` the particle's fractional bucket coordinate,
``rank(i) = #{z < bucket(i)} + floor(frac(f_i) * #bucket(i))``, i.e. the empirical CDF
linearly interpolated inside a bucket. It equals the exact rank whenever each bucket
holds at most one particle and otherwise differs only among particles closer than
``range / B`` (about 6e-5 for the defaults), whose order matters for the gradient
only where a target atom boundary falls between them. Targets never need sorting:
their sort orders come from the bank. Only particles with at least one kept gradient
entry in a clique are ranked past the counting pass, so the 80% dropout also saves work.

Two implementations of the step, the same float32 operations in the same order (the
tests compare them step by step): on the CPU with bucket ranks, the compiled loop
:func:`.kernels.optimization_step` (all marginals of a step in one call: per marginal
and direction one pass over the particles to count, one over the particles with a kept
entry to rank, look up the target and accumulate the gradient, then the Adam step);
otherwise (a GPU, ``ranking="sort"``, ``MARGSYNTH_NUMBA=0`` or ``backend="torch"``) the
torch code below, marginal by marginal. Both draw the same random numbers: the clique
order and direction blocks from the torch ``generator``, the dropout masks from the
counter-based generator of :mod:`~margsynth.inference.privpgd.kernels` seeded from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ...timing import Stopwatch
from . import kernels
from .slicing import DirectionBank

__all__ = ["OptimizationTrace", "OptimizerConfig", "optimize_particles"]

RANKINGS = ("buckets", "sort")


@dataclass
class OptimizationTrace:
    epochs: int = 0
    steps: int = 0
    seconds_per_epoch: list = field(default_factory=list)
    cpu_seconds_per_epoch: list = field(default_factory=list)  # process CPU time (all threads)
    loss: list = field(default_factory=list)  # per-epoch SW2^2 summed over the batches' cliques
    backend: str = ""  # "compiled" or "torch"


def _integer(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _number(name: str, value: object, low: float, high: float = math.inf, *, closed_low: bool = False) -> None:
    """A finite real in ``(low, high)`` (``[low, high)`` with ``closed_low``), else ``ValueError``."""
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    v = float(value) if real else math.nan
    if not (math.isfinite(v) and (v >= low if closed_low else v > low) and v < high):
        raise ValueError(f"{name} must be a finite number in {'[' if closed_low else '('}{low:g}, {high:g}), got {value!r}")


@dataclass(frozen=True)
class OptimizerConfig:
    """Hyperparameters of :func:`optimize_particles` (module docstring; PrivPGD paper §4.1
    defaults in brackets there). Validated on construction (``ValueError`` naming the field).

    ``n_particles`` N; ``epochs``; ``projections`` P directions per clique and step;
    ``batch_size`` cliques per step; ``drop_fraction`` probability of dropping a gradient
    entry; ``lr``, ``lr_step``, ``lr_gamma``: learning rate ``lr * lr_gamma ** (epoch //
    lr_step)``; ``ranking`` ``"buckets"`` or ``"sort"`` and ``rank_buckets`` (B = rank_buckets
    * N); ``gamma`` the penalty weight of Eq. 7; ``betas``, ``eps`` Adam's constants;
    ``track_loss`` records the per-epoch SW2^2 in the trace; ``backend`` ``"auto"``
    (compiled on the CPU with bucket ranks), ``"compiled"`` or ``"torch"``.
    """

    n_particles: int
    epochs: int
    projections: int
    batch_size: int
    drop_fraction: float
    lr: float
    lr_step: int
    lr_gamma: float
    ranking: str = "buckets"
    rank_buckets: float = 0.25
    gamma: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    track_loss: bool = False
    backend: str = "auto"

    def __post_init__(self) -> None:
        _integer("n_particles", self.n_particles, 1)
        _integer("epochs", self.epochs, 0)
        _integer("projections", self.projections, 1)
        _integer("batch_size", self.batch_size, 1)
        _number("drop_fraction", self.drop_fraction, 0.0, 1.0, closed_low=True)
        _number("lr", self.lr, 0.0)
        _integer("lr_step", self.lr_step, 1)
        _number("lr_gamma", self.lr_gamma, 0.0)
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {RANKINGS}, got {self.ranking!r}")
        _number("rank_buckets", self.rank_buckets, 0.0)
        _number("gamma", self.gamma, 0.0, closed_low=True)
        if len(tuple(self.betas)) != 2:
            raise ValueError(f"betas must be a pair, got {self.betas!r}")
        for b in self.betas:
            _number("betas", b, 0.0, 1.0, closed_low=True)
        _number("eps", self.eps, 0.0)
        if self.backend not in kernels.BACKENDS:
            raise ValueError(f"backend must be one of {kernels.BACKENDS}, got {self.backend!r}")

    @property
    def buckets(self) -> int:
        """``B``: the number of rank buckets per direction."""
        return max(1, int(round(self.rank_buckets * self.n_particles)))


class _Cliques:
    """The cliques' static data as flat numpy arrays (shared by both implementations)."""

    def __init__(self, counts, cliques, centres, bank: DirectionBank, P: int):
        self.S = len(cliques)
        self.k = np.array([len(c) for c in cliques], dtype=np.int64)
        kmax = int(self.k.max()) if self.S else 1
        self.attrs = np.zeros((self.S, kmax), dtype=np.int64)
        for s, c in enumerate(cliques):
            self.attrs[s, : len(c)] = c
        self.cell0 = bank.cell_offsets[:-1].astype(np.int64)
        self.K = np.diff(bank.cell_offsets).astype(np.int64)
        n = bank.n_cells
        self.centres = np.zeros((n, kmax), dtype=np.float32)
        self.counts = np.zeros(n, dtype=np.int64)
        for s in range(self.S):
            a, b = bank.cell_offsets[s], bank.cell_offsets[s + 1]
            if centres[s].shape != (b - a, self.k[s]):
                raise ValueError(f"clique {s}: centres of shape {centres[s].shape}, the bank has {b - a} cells")
            self.centres[a:b, : self.k[s]] = centres[s]
            self.counts[a:b] = np.asarray(counts[s]).ravel()
        self.P = np.where(self.k > 1, P, 1).astype(np.int64)  # one direction for a 1-way marginal
        self.bank = bank

    def directions(self, s: int, o: int) -> np.ndarray:
        """``(P_s, k_s)`` float64: clique ``s``'s directions of bank rows ``o .. o + P_s - 1``."""
        ds = self.bank.dirs[s]
        return ds[np.arange(o, o + self.P[s]) % ds.shape[0]]


def _direction_terms(th64: np.ndarray, B: int):
    """Per direction of ``th64`` (``(P, k)``): the float32 bucket map ``f = <x, W_p> + bias_p``
    (the projected range onto ``(0, B)``), the gradient weights ``G_p = (2/P) theta_p / sc_p``,
    the direction ``T_p`` and the scale ``sc_p``."""
    P = th64.shape[0]
    lo = np.minimum(th64, 0.0).sum(1)
    span = np.maximum(th64, 0.0).sum(1) - lo
    lo = lo - 1e-6 * span
    sc = B * (1.0 - 1e-6) / (span * (1.0 + 2e-6))
    f32 = np.float32
    return ((th64 * sc[:, None]).astype(f32), (-lo * sc).astype(f32), ((2.0 / P) * th64 / sc[:, None]).astype(f32),
            th64.astype(f32), sc.astype(f32))


def optimize_particles(
    counts: Sequence[np.ndarray],
    cliques: Sequence[Sequence[int]],
    centres: Sequence[np.ndarray],
    bank: DirectionBank,
    d: int,
    config: OptimizerConfig | None = None,
    *,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    penalty: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor, float]] | None = None,
    init: torch.Tensor | None = None,
    callback: Callable[[int, torch.Tensor], None] | None = None,
    **hyperparameters: Any,
) -> tuple[torch.Tensor, OptimizationTrace]:
    """Run the optimization step; returns the particles as a ``(d, N)`` float32 tensor
    (one row per attribute) and a trace.

    ``config``: the hyperparameters (:class:`OptimizerConfig`); or, instead, its fields
    as keyword arguments (``n_particles=…, epochs=…``), from which one is built.
    ``counts[s]`` are the quantized atom counts of clique ``s`` (summing to
    ``n_particles``), ``cliques[s]`` its attribute indices, ``centres[s]`` its embedded
    cells (``(K_s, k_s)``). ``penalty(Xt)`` returns ``(attr_index_tensor, grad_rows, value)``
    with ``grad_rows = N grad R`` restricted to those attributes (``(len(idx), N)``).
    All random numbers come from the CPU ``generator`` (identical on CPU and GPU).
    """
    if config is None:
        config = OptimizerConfig(**hyperparameters)
    elif hyperparameters:
        raise ValueError(f"pass either config or hyperparameters as keywords, not both: {sorted(hyperparameters)}")
    elif not isinstance(config, OptimizerConfig):
        raise ValueError(f"config must be an OptimizerConfig, got {type(config).__name__}")
    device = torch.device(device)
    N, P, B = int(config.n_particles), int(config.projections), config.buckets
    for s, c in enumerate(counts):
        if int(np.sum(c)) != N:
            raise ValueError(f"clique {s}: quantized counts sum to {int(np.sum(c))}, not n_particles={N}")
    if config.ranking == "buckets" and max(B, N) >= 2**24:
        raise ValueError(
            f"bucket ranks need max(buckets, particles) < 2**24 for exact float32 counts, got {max(B, N)}; "
            "lower rank_buckets or use ranking='sort'"
        )
    if P > bank.M:
        raise ValueError(f"projections ({P}) exceed the direction bank's {bank.M} rows")
    compiled = config.ranking == "buckets" and kernels.use_compiled(config.backend, device)
    if config.backend == "compiled" and not compiled:
        raise ValueError("backend='compiled' implements ranking='buckets' only")
    cl = _Cliques(counts, cliques, centres, bank, P)
    if init is None:
        Xt = torch.rand(d, N, generator=generator).to(device)
    else:
        Xt = init.to(device=device, dtype=torch.float32).clone()
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    step_fn = _CompiledSteps(cl, Xt, N, B, config) if compiled else _TorchSteps(cl, Xt, N, B, config, device)
    trace = OptimizationTrace(backend="compiled" if compiled else "torch")
    thr = kernels.keep_threshold(config.drop_fraction)
    gamma = config.gamma if penalty is not None else 0.0
    S, step = cl.S, 0
    bs = max(1, min(int(config.batch_size), S))
    rows_high = max(1, bank.M - P + 1)
    for epoch in range(int(config.epochs)):
        clock = Stopwatch()
        lr_e = config.lr * config.lr_gamma ** (epoch // config.lr_step)
        order = torch.randperm(S, generator=generator).tolist()
        offsets = torch.randint(0, rows_high, (S,), generator=generator).numpy()
        offsets[cl.k == 1] = 0
        epoch_loss = 0.0
        for start in range(0, S, bs):
            batch = np.array(order[start : start + bs], dtype=np.int64)
            attrs = _batch_attrs(cl, batch)
            pen = None
            if penalty is not None and gamma > 0:
                idx, g_pen, _ = penalty(Xt)
                pen = (idx.tolist(), g_pen)
                attrs |= set(pen[0])
            step += 1
            epoch_loss += step_fn(batch, offsets[batch], sorted(attrs), pen, gamma, seed, step, thr, lr_e)
        trace.epochs += 1
        trace.steps = step
        trace.seconds_per_epoch.append(clock.elapsed())
        trace.cpu_seconds_per_epoch.append(clock.cpu())
        if config.track_loss:
            trace.loss.append(epoch_loss)
        if callback is not None:
            callback(epoch, Xt)
    return Xt, trace


def _batch_attrs(cl: _Cliques, batch: np.ndarray) -> set:
    return {int(a) for s in batch for a in cl.attrs[s, : cl.k[s]]}


class _CompiledSteps:
    """A step by :func:`.kernels.optimization_step`: the batch's cliques, directions and
    penalty rows as flat arrays, the particles and Adam moments as numpy views."""

    def __init__(self, cl: _Cliques, Xt: torch.Tensor, N: int, B: int, config: OptimizerConfig):
        self.cl, self.N, self.B, self.config = cl, N, B, config
        self.X = Xt.numpy()  # shares memory with Xt
        d = self.X.shape[0]
        self.m1 = np.zeros_like(self.X)
        self.m2 = np.zeros_like(self.X)
        self.grad = np.zeros_like(self.X)
        self.keep = np.zeros((d, N), dtype=np.uint8)
        self.cnt = np.zeros(B, dtype=np.int32)
        self.fbuf = np.zeros(N, dtype=np.float32)
        kmax = int(cl.K.max())
        self.side = np.zeros((kmax + 1, 3), dtype=np.int32)
        self.vs = np.zeros(kmax, dtype=np.float32)
        self.cum = np.zeros(kmax + 1, dtype=np.int64)
        self.U = np.zeros(N, dtype=np.int32)
        self.xU = np.zeros((cl.attrs.shape[1], N), dtype=np.float32)
        self.gU = np.zeros_like(self.xU)
        self.fU = np.zeros(N, dtype=np.float32)
        self.cU = np.zeros(N, dtype=np.int32)
        self.neg = np.zeros(N, dtype=np.int32)
        self.no_pen = (np.zeros(0, dtype=np.int64), np.zeros((0, N), dtype=np.float32))

    def __call__(self, batch, offsets, attrs, pen, gamma, seed, step, thr, lr_e) -> float:
        cl, cfg = self.cl, self.config
        nb, kmax, Pmax = len(batch), cl.attrs.shape[1], int(cl.P[batch].max())
        dW = np.zeros((nb, Pmax, kmax), dtype=np.float32)
        dG = np.zeros_like(dW)
        dT = np.zeros_like(dW)
        dB = np.zeros((nb, Pmax), dtype=np.float32)
        dS = np.ones((nb, Pmax), dtype=np.float32)
        for c, (s, o) in enumerate(zip(batch, offsets)):
            W, bias, G, T, sc = _direction_terms(cl.directions(s, o), self.B)
            p, k = W.shape
            dW[c, :p, :k], dB[c, :p], dG[c, :p, :k], dT[c, :p, :k], dS[c, :p] = W, bias, G, T, sc
        pen_attrs, pen_rows = self.no_pen
        if pen is not None:
            pen_attrs = np.asarray(pen[0], dtype=np.int64)
            pen_rows = np.ascontiguousarray(pen[1].detach().cpu().numpy(), dtype=np.float32)
        b1, b2 = cfg.betas
        return kernels.optimization_step(
            self.X, self.m1, self.m2, self.grad, self.keep, seed, step, thr, np.asarray(attrs, dtype=np.int64),
            cl.attrs[batch], cl.k[batch], cl.P[batch], cl.cell0[batch], cl.K[batch], offsets.astype(np.int64),
            dW, dB, dG, dT, dS, cl.centres, cl.counts, cl.bank.order,
            self.B, self.cnt, self.side, self.fbuf, self.vs, self.cum, self.U, self.xU, self.gU, self.fU, self.cU,
            self.neg,
            pen_attrs, pen_rows, float(gamma),
            float(lr_e), float(b1), float(b2), float(cfg.eps), bool(cfg.track_loss),
        )


class _TorchSteps:
    """A step in torch, marginal by marginal (any device; the reference of the compiled
    step: the same float32 operations in the same order)."""

    def __init__(self, cl: _Cliques, Xt: torch.Tensor, N: int, B: int, config: OptimizerConfig, device):
        self.cl, self.Xt, self.N, self.B, self.config, self.device = cl, Xt, N, B, config, device
        self.m1 = torch.zeros_like(Xt)
        self.m2 = torch.zeros_like(Xt)
        self.centres = torch.as_tensor(cl.centres, device=device)
        self.counts = torch.as_tensor(cl.counts, device=device)

    def __call__(self, batch, offsets, attrs, pen, gamma, seed, step, thr, lr_e) -> float:
        cl, cfg, N, dev, Xt = self.cl, self.config, self.N, self.device, self.Xt
        d = Xt.shape[0]
        keep = torch.as_tensor(kernels.keep_masks(seed, step, attrs, d, N, thr)).to(dev)
        row = {a: j for j, a in enumerate(attrs)}
        grad = torch.zeros(len(attrs), N, dtype=torch.float32, device=dev)
        loss = 0.0
        for s, o in zip(batch, offsets):
            k = int(cl.k[s])
            ca = [int(a) for a in cl.attrs[s, :k]]
            W, bias, G, T, sc = (torch.as_tensor(x, device=dev) for x in _direction_terms(cl.directions(s, o), self.B))
            P = W.shape[0]
            U = keep[[row[a] for a in ca]].any(0).nonzero().squeeze(1)
            F = Xt[ca[0]][None, :] * W[:, 0:1]
            for j in range(1, k):
                F = F + Xt[ca[j]][None, :] * W[:, j : j + 1]
            F = F + bias[:, None]  # (P, N) bucket coordinates
            FU = F.index_select(1, U)
            if cfg.ranking == "sort":
                rank = torch.empty(F.shape, dtype=torch.long, device=dev)
                rank.scatter_(1, torch.argsort(F, dim=1), torch.arange(N, device=dev).expand(P, N))
                rank = rank.index_select(1, U)
            else:
                Kb = F.to(torch.int32).long()
                flat = (Kb + torch.arange(P, device=dev)[:, None] * self.B).reshape(-1)
                cnt = torch.bincount(flat, minlength=P * self.B).view(P, self.B)
                cex = (torch.cumsum(cnt, 1) - cnt).float()
                bU = FU.to(torch.int32).long()
                rank = torch.gather(cex, 1, bU) + (FU - bU.float()) * torch.gather(cnt.float(), 1, bU)
                rank = rank.to(torch.int32).long().clamp_(max=N - 1)
            c0 = int(cl.cell0[s])
            order = torch.as_tensor(cl.bank.local_order(s, slice(o, o + P)), device=dev) + c0  # (P, K) global cells
            cent = self.centres[order]  # (P, K, kmax)
            v = cent[:, :, 0] * T[:, 0:1]
            for j in range(1, k):
                v = v + cent[:, :, j] * T[:, j : j + 1]
            v = v * sc[:, None] + bias[:, None]
            texp = torch.repeat_interleave(v.reshape(-1), self.counts[order].reshape(-1), output_size=P * N).view(P, N)
            diff = FU - torch.gather(texp, 1, rank)
            for j, a in enumerate(ca):  # summed over the directions (in order), then added to the row
                acc = torch.zeros(U.numel(), dtype=torch.float32, device=dev)
                for p in range(P):
                    acc = acc + G[p, j] * diff[p]
                grad[row[a]].index_add_(0, U, acc)
            if cfg.track_loss and U.numel():
                loss += float(((diff / sc[:, None]) ** 2).double().sum()) / (P * U.numel())
        if pen is not None:
            for j, a in enumerate(pen[0]):
                grad[row[a]].add_(pen[1][j], alpha=gamma)
        b1, b2 = cfg.betas
        bc1, bc2 = 1.0 - b1**step, 1.0 - b2**step
        val = -lr_e / bc1
        for a in attrs:  # SparseAdam on the kept entries, clipped to [0, 1]
            kept = keep[row[a]].nonzero().squeeze(1)
            g = grad[row[a]].index_select(0, kept)
            mm = self.m1[a].index_select(0, kept) * b1 + g * (1.0 - b1)
            vv = self.m2[a].index_select(0, kept) * b2 + (g * (1.0 - b2)) * g
            x = Xt[a].index_select(0, kept) + (mm * val) / ((vv / bc2).sqrt() + cfg.eps)
            self.m1[a].index_copy_(0, kept, mm)
            self.m2[a].index_copy_(0, kept, vv)
            Xt[a].index_copy_(0, kept, x.clamp_(0.0, 1.0))
        return loss
