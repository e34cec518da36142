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
``-sum_{r < j} w_r``. All cliques and all projections of an iteration are processed
as rows of one flat tensor (cells of all cliques concatenated, one separator slot per
clique that cancels the previous clique's running sum), in chunks of rows with
preallocated buffers: five passes (gather, prefix sum, copysign, prefix sum,
scatter-add) per cell and projection, no Python loop over marginals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from .slicing import DirectionBank

__all__ = ["init_measure", "project_measures", "sliced_w1_bank"]


def init_measure(y: np.ndarray) -> np.ndarray:
    """Initialisation of §4.1: negative weights set to zero, then normalised (uniform if
    nothing positive is left)."""
    p = np.maximum(np.asarray(y, dtype=np.float64), 0.0)
    s = p.sum()
    return p / s if s > 0 else np.full(p.shape, 1.0 / p.size)


class _Flat:
    """Per-clique bookkeeping over the bank's flat layout, on one device."""

    def __init__(self, bank: DirectionBank, device: torch.device):
        self.bank = bank
        self.device = device
        self.n_cells = bank.n_cells
        self.S = len(bank.dirs)
        sizes = np.diff(bank.cell_offsets)
        self.seg_id = torch.as_tensor(np.repeat(np.arange(self.S), sizes), device=device)
        self.perm = bank.perm.to(device)
        self.gap = bank.gap.to(device)
        self.M, self.L = self.perm.shape
        self.seg_of_pos = torch.as_tensor(np.repeat(np.arange(self.S), np.diff(bank.seg_offsets)), device=device)

    def segment_sum(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(self.S, dtype=x.dtype, device=x.device)
        return out.index_add_(0, self.seg_id, x)

    def softmax(self, logits: torch.Tensor) -> torch.Tensor:
        mx = torch.full((self.S,), -math.inf, dtype=logits.dtype, device=logits.device)
        mx = mx.scatter_reduce(0, self.seg_id, logits, reduce="amax")
        e = torch.exp(logits - mx[self.seg_id])
        return e / self.segment_sum(e)[self.seg_id]

    def extended(self, delta: torch.Tensor) -> torch.Tensor:
        """``delta`` followed by the separators ``-total(previous clique)``."""
        tot = self.segment_sum(delta)
        sep = torch.zeros(self.S, dtype=delta.dtype, device=delta.device)
        sep[1:] = -tot[:-1]
        return torch.cat([delta, sep])


def sliced_w1_bank(flat: _Flat, delta_ext: torch.Tensor, rows: slice) -> np.ndarray:
    """Per-clique mean over ``rows`` of Eq. 3's ``W_1`` for the signed measures ``delta``."""
    perm = flat.perm[rows]
    g = delta_ext.index_select(0, perm.reshape(-1)).view(perm.shape)
    d = torch.cumsum(g, 1)
    contrib = (d.abs() * flat.gap[rows]).sum(0)  # (L,)
    out = torch.zeros(flat.S, dtype=contrib.dtype, device=contrib.device).index_add_(0, flat.seg_of_pos, contrib)
    return (out / perm.shape[0]).double().cpu().numpy()


def _bank_w1_grad(flat: _Flat, dext, o: int, P: int, R: int, buf_a, buf_b, grad_ext) -> torch.Tensor:
    """``grad_ext[j] = -sum_rows W_{pos(j)-1}``: the gradient of ``sum_rows W_1`` (rows
    ``o .. o+P-1``) w.r.t. the extended signed measure, up to a constant per clique."""
    grad_ext.zero_()
    for c in range(o, o + P, R):
        r = min(R, o + P - c)
        n = r * flat.L
        pm = flat.perm[c : c + r].reshape(-1)
        a = buf_a[:n].view(r, flat.L)
        b = buf_b[:n].view(r, flat.L)
        torch.index_select(dext, 0, pm, out=buf_a[:n])
        torch.cumsum(a, 1, out=b)  # D_r
        torch.copysign(flat.gap[c : c + r], b, out=a)  # w_r = sign(D_r) gap_r
        torch.cumsum(a, 1, out=b)  # W_r = sum_{r'<=r} w_r'
        grad_ext.index_add_(0, pm[1:], buf_b[: n - 1], alpha=-1.0)  # -W_{j-1} at position j
    return grad_ext


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
) -> tuple[list[np.ndarray], dict]:
    """Solve Eq. 5 for every clique at once; returns the probability vectors (float64,
    summing to 1, in the cliques' cell order) and diagnostics (``sw1_init``/``sw1_final``:
    per-clique SW1 to the signed target on a fixed block of directions).

    ``targets[s]`` is the signed measure of clique ``s`` (length ``K_s``, any total mass).
    Randomness: the block offsets are drawn from ``generator`` (a CPU torch.Generator),
    so CPU and GPU runs use the same directions.
    """
    device = torch.device(device)
    flat = _Flat(bank, device)
    if len(targets) != flat.S:
        raise ValueError(f"{len(targets)} targets for a bank of {flat.S} cliques")
    y64 = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in targets])
    if y64.size != flat.n_cells:
        raise ValueError(f"targets have {y64.size} cells in total, the bank {flat.n_cells}")
    if not np.all(np.isfinite(y64)):
        raise ValueError("targets contain non-finite values")
    y = torch.as_tensor(y64, dtype=torch.float32, device=device)
    p0 = np.concatenate([init_measure(t) for t in targets])
    logits = torch.log(torch.as_tensor(p0, dtype=torch.float32, device=device) + 1e-9)
    P = min(int(projections), flat.M)
    R = max(1, min(int(chunk_rows), P))
    buf_a = torch.empty(R * flat.L, dtype=torch.float32, device=device)
    buf_b = torch.empty(R * flat.L, dtype=torch.float32, device=device)
    grad_ext = torch.zeros(flat.L, dtype=torch.float32, device=device)
    m1 = torch.zeros_like(logits)
    m2 = torch.zeros_like(logits)
    b1, b2 = betas
    diag_rows = slice(0, P)
    with torch.no_grad():
        sw_init = sliced_w1_bank(flat, flat.extended(flat.softmax(logits) - y), diag_rows)
        offsets = torch.randint(0, flat.M - P + 1, (int(iters),), generator=generator).tolist()
        for it, o in enumerate(offsets):
            u = flat.softmax(logits)
            dext = flat.extended(u - y)
            _bank_w1_grad(flat, dext, o, P, R, buf_a, buf_b, grad_ext)
            g = grad_ext[: flat.n_cells] / P
            g = u * (g - flat.segment_sum(u * g)[flat.seg_id])  # softmax backward
            lr_t = lr * lr_gamma ** (it // lr_step)
            t = it + 1
            m1.mul_(b1).add_(g, alpha=1 - b1)
            m2.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (m2 / (1 - b2**t)).sqrt_().add_(eps)
            logits.addcdiv_(m1, denom, value=-lr_t / (1 - b1**t))
        u = flat.softmax(logits)
        sw_final = sliced_w1_bank(flat, flat.extended(u - y), diag_rows)
    u64 = u.double().cpu().numpy()
    out = []
    for s in range(flat.S):
        seg = u64[bank.cell_offsets[s] : bank.cell_offsets[s + 1]]
        out.append(seg / seg.sum())
    return out, {"sw1_init": sw_init, "sw1_final": sw_final}


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
