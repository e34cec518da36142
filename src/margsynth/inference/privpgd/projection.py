"""Projection step of PrivPGD (paper §3.2, Eq. 5; hyperparameters §4.1).

Each privatised marginal is a *signed* measure ``mu_C = sum_k y_k delta_{c_k}`` on the
embedded grid of clique ``C`` (``y`` = noisy counts / estimated total, so entries
can be negative). It is turned into a probability measure by

    p_C = argmin_{p in Delta_K} SW_1(p, mu_C),
    SW_1(p, mu) = E_theta W_1(theta#p, theta#mu)                          (Eq. 5)

with ``W_1`` of signed measures on the line given by Vallender's identity (Eq. 3):
``W_1 = sum_{r<K} |D_r| (v_(r+1) - v_(r))``, ``D_r = sum_{r'<=r} (p - y)_(r')`` over the
cells sorted by their projection ``v = <c_k, theta>``. As in the authors' code, ``p`` is
parametrised by logits, ``p = softmax(l)`` (so it stays in the simplex), initialised
at the clipped-and-renormalised measure ``p0 = max(y, 0) / sum max(y, 0)``
(``l0 = log(p0 + 1e-9)``), and ``l`` follows Adam (lr 0.1, betas (0.9, 0.999)) for
1,750 iterations with the learning rate multiplied by 0.8 every 100 iterations; each
iteration uses 200 projections (a random block of consecutive rows of a
:class:`~.slicing.DirectionBank`, i.e. randomised quasi-Monte-Carlo).

Gradient (closed form, no autograd). With ``w_r = sign(D_r) gap_r``,
``dW_1/d(p - y)_(j) = sum_{r >= j} w_r`` (a suffix sum); subtracting a constant per
clique does not change the softmax gradient ``p * (g - <p, g>)``, so we use
``-sum_{r < j} w_r``. All cliques of an iteration are processed at once, no Python loop
over marginals: on the CPU by the compiled loop of :func:`.kernels.projection_run` (one
fused pass per cell and direction: gather, running sums, scatter), elsewhere (GPUs,
``MARGSYNTH_NUMBA=0``) by torch over the bank's rows in chunks, the cells of all cliques
side by side, each prefix sum restarted at its clique by subtracting the clique's
starting value (five passes: gather, prefix sum, copysign, prefix sum, scatter-add).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from . import kernels
from .slicing import DirectionBank

__all__ = ["init_measure", "project_measures", "sliced_w1_bank"]

def init_measure(y: np.ndarray) -> np.ndarray:
    """Initialisation of §4.1: negative weights set to zero, then normalised (uniform if
    nothing positive is left)."""
    p = np.maximum(np.asarray(y, dtype=np.float64), 0.0)
    s = p.sum()
    return p / s if s > 0 else np.full(p.shape, 1.0 / p.size)


class _Flat:
    """The bank's rows on one device, with each clique's segment bookkeeping (torch code)."""

    def __init__(self, bank: DirectionBank, device: torch.device):
        self.bank = bank
        self.device = device
        self.n_cells = bank.n_cells
        self.S = len(bank.dirs)
        sizes = np.diff(bank.cell_offsets)
        seg = np.repeat(np.arange(self.S), sizes)
        self.seg_id = torch.as_tensor(seg, device=device)
        self.start = torch.as_tensor(bank.cell_offsets[:-1], device=device)
        starts = np.repeat(bank.cell_offsets[:-1], sizes)
        self.perm = torch.as_tensor(bank.order.astype(np.int32) + starts.astype(np.int32)[None, :], device=device)
        self.gap = torch.as_tensor(bank.gap, device=device)
        self.M = bank.M

    def segment_sum(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(self.S, dtype=x.dtype, device=x.device)
        return out.index_add_(0, self.seg_id, x)

    def softmax(self, logits: torch.Tensor) -> torch.Tensor:
        mx = torch.full((self.S,), -torch.inf, dtype=logits.dtype, device=logits.device)
        mx = mx.scatter_reduce(0, self.seg_id, logits, reduce="amax")
        e = torch.exp(logits - mx[self.seg_id])
        return e / self.segment_sum(e)[self.seg_id]

    def restart(self, c: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Row-wise prefix sums ``c`` of ``x`` restarted at every clique."""
        base = c.index_select(1, self.start) - x.index_select(1, self.start)
        return c - base.index_select(1, self.seg_id)


def _prefix_rows(flat: _Flat, delta: torch.Tensor, rows: slice) -> tuple[torch.Tensor, torch.Tensor]:
    """``(perm, D)`` for the bank rows ``rows``: the global cell index at every sorted
    position and Eq. 3's running sum ``D_r`` of ``delta`` within each clique."""
    pm = flat.perm[rows]
    g = delta.index_select(0, pm.reshape(-1)).view(pm.shape)
    return pm, flat.restart(torch.cumsum(g, 1), g)


def sliced_w1_bank(flat: _Flat, delta: torch.Tensor, rows: slice) -> np.ndarray:
    """Per-clique mean over ``rows`` of Eq. 3's ``W_1`` for the signed measures ``delta``."""
    _, D = _prefix_rows(flat, delta, rows)
    contrib = (D.abs() * flat.gap[rows]).sum(0)
    out = torch.zeros(flat.S, dtype=contrib.dtype, device=contrib.device).index_add_(0, flat.seg_id, contrib)
    return (out / D.shape[0]).double().cpu().numpy()


def _bank_w1_grad(flat: _Flat, delta: torch.Tensor, o: int, P: int, R: int, grad: torch.Tensor) -> torch.Tensor:
    """``grad[j] = -sum_rows W_{pos(j)-1}`` (``W`` restarted at every clique): the gradient
    of ``sum_rows W_1`` (rows ``o .. o+P-1``) w.r.t. the signed measure, up to a constant
    per clique; ``R`` rows at a time."""
    grad.zero_()
    for c in range(o, o + P, R):
        pm, D = _prefix_rows(flat, delta, slice(c, min(c + R, o + P)))
        w = torch.copysign(flat.gap[c : c + pm.shape[0]], D)
        W = flat.restart(torch.cumsum(w, 1), w) - w  # W_{r-1} at position r
        grad.index_add_(0, pm.reshape(-1), W.reshape(-1), alpha=-1.0)
    return grad


def project_measures(
    targets: Sequence[np.ndarray],
    bank: DirectionBank,
    *,
    iters: int,
    projections: int,
    lr: float,
    lr_step: int,
    lr_gamma: float,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    chunk_rows: int = 25,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    backend: str = "auto",
) -> tuple[list[np.ndarray], dict]:
    """Solve Eq. 5 for every clique at once; returns the probability vectors (float64,
    summing to 1, in the cliques' cell order) and diagnostics (``sw1_init``/``sw1_final``:
    per-clique SW1 to the signed target on a fixed block of directions).

    ``targets[s]`` is the signed measure of clique ``s`` (length ``K_s``, any total mass).
    Randomness: the block offsets are drawn from ``generator`` (a CPU torch.Generator),
    so CPU and GPU runs use the same directions. ``backend``:
    ``"auto"``, ``"compiled"`` or ``"torch"`` (:func:`.kernels.use_compiled`); both compute the
    same iterations in float32.
    """
    device = torch.device(device)
    S = len(bank.dirs)
    if len(targets) != S:
        raise ValueError(f"{len(targets)} targets for a bank of {S} cliques")
    y64 = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in targets])
    if y64.size != bank.n_cells:
        raise ValueError(f"targets have {y64.size} cells in total, the bank {bank.n_cells}")
    if not np.all(np.isfinite(y64)):
        raise ValueError("targets contain non-finite values")
    compiled = kernels.use_compiled(backend, device)
    p0 = np.concatenate([init_measure(t) for t in targets])
    P = min(int(projections), bank.M)
    offsets = torch.randint(0, bank.M - P + 1, (int(iters),), generator=generator)
    if compiled:
        u, sw_init, sw_final = _project_compiled(y64, p0, bank, offsets.numpy(), P, lr, lr_step, lr_gamma, betas, eps)
    else:
        u, sw_init, sw_final = _project_torch(y64, p0, bank, offsets.tolist(), P, lr, lr_step, lr_gamma, betas, eps,
                                              device, chunk_rows)
    out = []
    for s in range(S):
        seg = u[bank.cell_offsets[s] : bank.cell_offsets[s + 1]]
        out.append(seg / seg.sum())
    return out, {"sw1_init": sw_init, "sw1_final": sw_final}


def _project_compiled(y64, p0, bank, offsets, P, lr, lr_step, lr_gamma, betas, eps):
    n = bank.n_cells
    off = bank.cell_offsets
    y = y64.astype(np.float32)
    logits = np.log(p0.astype(np.float32) + np.float32(1e-9))
    m1, m2, u, delta, grad = (np.zeros(n, dtype=np.float32) for _ in range(5))
    sw_init, sw_final = np.zeros(len(bank.dirs)), np.zeros(len(bank.dirs))

    def run(its: np.ndarray) -> None:  # ``its`` iterations, then u = softmax(logits)
        kernels.projection_run(logits, y, bank.order, bank.gap, off, its, P, float(lr), int(lr_step), float(lr_gamma),
                               float(betas[0]), float(betas[1]), float(eps), m1, m2, u, delta, grad)

    run(np.zeros(0, dtype=np.int64))
    kernels.sliced_w1(bank.order, bank.gap, off, u - y, 0, P, sw_init)
    run(offsets.astype(np.int64))
    kernels.sliced_w1(bank.order, bank.gap, off, u - y, 0, P, sw_final)
    return u.astype(np.float64), sw_init, sw_final


def _project_torch(y64, p0, bank, offsets, P, lr, lr_step, lr_gamma, betas, eps, device, chunk_rows):
    flat = _Flat(bank, device)
    y = torch.as_tensor(y64, dtype=torch.float32, device=device)
    logits = torch.log(torch.as_tensor(p0, dtype=torch.float32, device=device) + 1e-9)
    R = max(1, min(int(chunk_rows), P))
    grad = torch.zeros(flat.n_cells, dtype=torch.float32, device=device)
    m1 = torch.zeros_like(logits)
    m2 = torch.zeros_like(logits)
    b1, b2 = betas
    diag_rows = slice(0, P)
    with torch.no_grad():
        sw_init = sliced_w1_bank(flat, flat.softmax(logits) - y, diag_rows)
        for it, o in enumerate(offsets):
            u = flat.softmax(logits)
            _bank_w1_grad(flat, u - y, o, P, R, grad)
            g = grad / P
            g = u * (g - flat.segment_sum(u * g)[flat.seg_id])  # softmax backward
            lr_t = lr * lr_gamma ** (it // lr_step)
            t = it + 1
            m1.mul_(b1).add_(g, alpha=1 - b1)
            m2.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (m2 / (1 - b2**t)).sqrt_().add_(eps)
            logits.addcdiv_(m1, denom, value=-lr_t / (1 - b1**t))
        u = flat.softmax(logits)
        sw_final = sliced_w1_bank(flat, u - y, diag_rows)
    return u.double().cpu().numpy(), sw_init, sw_final


def make_consistent(probs: Sequence[np.ndarray], cliques: Sequence[Sequence[int]], sizes: Sequence[int],
                    iters: int = 50) -> list[np.ndarray]:
    """Post-processing (ours, ``consistency=True``; not in the paper): make the projected
    2-way measures agree on their shared 1-way marginals.

    The measures are projected one by one from independently noised marginals, so the
    ``d - 1`` measures containing attribute ``a`` imply ``d - 1`` different 1-way marginals
    of ``a``; the particles, whose coordinate ``a`` serves all of them, are then pulled
    towards conflicting quantiles at every step. Here every attribute gets one consensus
    1-way marginal — the inverse-variance weighted mean of the implied ones (the 1-way
    marginal of clique ``(a, b)`` sums ``n_b`` noisy cells, so its weight is ``1 / n_b``) —
    and every measure is raked to its attributes' consensus marginals by ``iters``
    rounds of iterative proportional fitting (multiplicative, so it stays a probability
    measure with the same zero cells; a row that is all zero receives its consensus mass
    spread uniformly). No data are touched, so this costs no privacy (post-processing).
    """
    d = len(sizes)
    acc = [np.zeros(s) for s in sizes]
    wsum = np.zeros(d)
    tables = []
    for p, c in zip(probs, cliques):
        t = np.asarray(p, dtype=np.float64).reshape([sizes[i] for i in c])
        tables.append(t)
        for j, a in enumerate(c):
            other = int(np.prod([sizes[i] for i in c])) // sizes[a]
            acc[a] += t.sum(axis=tuple(x for x in range(len(c)) if x != j)) / other
            wsum[a] += 1.0 / other
    target = [acc[a] / acc[a].sum() if wsum[a] > 0 else None for a in range(d)]
    out = []
    for t, c in zip(tables, cliques):
        t = t.copy()
        k = len(c)
        for _ in range(int(iters)):
            for j, a in enumerate(c):
                axes = tuple(x for x in range(k) if x != j)
                cur = t.sum(axis=axes)
                shape = [1] * k
                shape[j] = -1
                empty = cur <= 0
                if np.any(empty & (target[a] > 0)):
                    fill = np.zeros_like(t)
                    idx = [slice(None)] * k
                    idx[j] = empty
                    fill[tuple(idx)] = 1.0 / (t.size // t.shape[j])
                    t = t + fill
                    cur = t.sum(axis=axes)
                scale = np.divide(target[a], cur, out=np.zeros_like(cur), where=cur > 0)
                t = t * scale.reshape(shape)
        t = t.ravel()
        out.append(t / t.sum())
    return out
