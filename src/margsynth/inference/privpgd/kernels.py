"""Compiled CPU kernels of PrivPGD (Donhauser et al., ICML 2024; numba): the projection step's
iterations (Eq. 5) and the optimization step's mini-batch steps (Eq. 7-8), each as one loop
over flat arrays.

Why. On a CPU both steps are bound by per-element work, not by arithmetic: a torch
expression is one pass over memory per operation, and the steps chain many of them (the
projection: gather, prefix sum, copysign, prefix sum, scatter-add per cell and direction;
the optimization: projection, bucket count, prefix sum, rank, target expansion and
gather per particle and direction). The loops here make one or two passes instead, keep
a clique's working set in cache, and process every marginal of a step in the same call
(no Python loop over marginals). They compute the same quantities as the torch code of
:mod:`.projection` and :mod:`.optimization` (which runs on GPUs, and on the CPU for
``ranking="sort"`` or with ``MARGSYNTH_NUMBA=0``), with the same float32 operations in the
same order where the tests compare them step for step; the prefix sums of Eq. 3 restart
at every marginal here (the torch code subtracts each marginal's starting value).

* :func:`projection_run` — all iterations of Eq. 5 for all marginals: per iteration the
  softmax of the logits per marginal, ``delta = p - y``, for every direction of the
  iteration's block the fused pass ``grad[cell] -= W``, ``D += delta``,
  ``W += sign(D) gap`` along the marginal's cells in sorted order (Vallender's identity,
  the gradient up to a constant per marginal), the softmax backward and an Adam step.
* :func:`sliced_w1` — Eq. 3's ``W_1`` per marginal, averaged over a block of directions.
* :func:`optimization_step` — one mini-batch step of Eq. 7-8: the dropout masks, per
  marginal and direction a bucket count of all particles' projections (the counting sort
  of :mod:`.optimization`), the ranks and targets of the particles with a kept entry, the
  gradient, and the SparseAdam update with clipping to ``[0, 1]``.
* :func:`keep_masks` — the dropout masks (SplitMix64, below), shared with the torch code.
* :func:`bank_rows` — a :class:`~.slicing.DirectionBank`'s sort orders and gaps (stable merge
  sorts; a grid's projections are runs of monotone values).

Dropout masks. Entry ``(a, i)`` of step ``t`` is kept when a 16-bit word of
SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) is below ``thr = round(keep_probability * 2**16)``: word ``i mod 4`` of output
number ``c = (t * d + a) * ceil(N / 4) + i div 4`` of the generator seeded with ``seed``
(``mix(seed + (c + 1) * 0x9E3779B97F4A7C15)``). A counter-based generator makes the mask
of any entry computable on its own: the compiled step draws its masks inside the step, the
torch code asks :func:`keep_masks` for the same bits (then moves them to its device).

numba is a dependency of the package; the kernels compile on first use (cached on disk).
``MARGSYNTH_NUMBA=0`` (:data:`margsynth.inference.pgm.kernels.AVAILABLE`) selects the torch
code everywhere.
"""

from __future__ import annotations

import numpy as np

from ..pgm.kernels import AVAILABLE

__all__ = [
    "AVAILABLE",
    "BACKENDS",
    "bank_rows",
    "bank_rows_numpy",
    "keep_masks",
    "keep_masks_numpy",
    "keep_threshold",
    "optimization_step",
    "projection_run",
    "sliced_w1",
    "use_compiled",
]

#: ``backend`` values of the projection and optimization steps
BACKENDS = ("auto", "compiled", "torch")

GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def use_compiled(backend: str, device) -> bool:
    """Whether the compiled kernels run on ``device`` (a ``torch.device``): ``backend``
    ``"compiled"`` (CPU only, numba enabled), ``"torch"``, or ``"auto"`` (compiled on the CPU
    when numba is enabled, :data:`AVAILABLE`)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "compiled":
        if device.type != "cpu" or not AVAILABLE:
            raise ValueError("backend='compiled' needs the CPU and numba (MARGSYNTH_NUMBA not 0)")
        return True
    return backend == "auto" and device.type == "cpu" and AVAILABLE


def keep_threshold(drop_fraction: float) -> int:
    """``round((1 - drop_fraction) * 2**16)``, at least 1: an entry is kept when its 16-bit
    word is below it (``65536``: every entry)."""
    return max(1, min(65536, int(round((1.0 - float(drop_fraction)) * 65536))))


def keep_masks_numpy(seed: int, step: int, attrs, d: int, n: int, thr: int) -> np.ndarray:
    """``(len(attrs), n)`` bool: the dropout masks of ``attrs`` at ``step`` (module docstring),
    computed with numpy (where numba is disabled; :func:`keep_masks` is the compiled twin)."""
    nw = (n + 3) // 4
    out = np.empty((len(attrs), n), dtype=bool)
    i = np.arange(n, dtype=np.uint64)
    shift = (i % np.uint64(4)) * np.uint64(16)
    with np.errstate(over="ignore"):
        for r, a in enumerate(attrs):
            c = np.uint64((int(step) * d + int(a)) * nw) + i // np.uint64(4)
            z = np.uint64(seed) + (c + np.uint64(1)) * np.uint64(GAMMA)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
            z = z ^ (z >> np.uint64(31))
            out[r] = ((z >> shift) & np.uint64(0xFFFF)) < np.uint64(thr)
    return out


# --------------------------------------------------------------------------- kernels (plain
# Python functions, compiled by numba on first use: see _compiled)


def _keep_row(seed, step, a, d, n, thr, out):
    """Row ``a`` of step ``step``'s masks into ``out`` (uint8, length ``n``)."""
    nw = (n + 3) // 4
    base = np.uint64((step * d + a) * nw)
    s0 = np.uint64(seed)
    g = np.uint64(GAMMA)
    m1 = np.uint64(MIX1)
    m2 = np.uint64(MIX2)
    t = np.uint64(thr)
    mask = np.uint64(0xFFFF)
    for w in range(nw):
        z = s0 + (base + np.uint64(w) + np.uint64(1)) * g
        z = (z ^ (z >> np.uint64(30))) * m1
        z = (z ^ (z >> np.uint64(27))) * m2
        z = z ^ (z >> np.uint64(31))
        i0 = 4 * w
        for q in range(4):
            i = i0 + q
            if i < n:
                out[i] = np.uint8(((z >> np.uint64(16 * q)) & mask) < t)


def _keep_masks(seed, step, attrs, d, n, thr, out):
    for r in range(attrs.shape[0]):
        _keep_row(seed, step, attrs[r], d, n, thr, out[r])


def _bank_rows(ds, c, order, gap):
    """Row ``r``: the cells ``c`` (``(K, k)``) sorted by their projection on ``ds[r]`` (stable
    merge sort) into ``order[r]``, the gaps between consecutive sorted projections into
    ``gap[r, :K-1]`` (float64 projections summed in attribute order, as :func:`bank_rows_numpy`)."""
    M, k = ds.shape
    K = c.shape[0]
    proj = np.empty(K)
    for r in range(M):
        for q in range(K):
            v = c[q, 0] * ds[r, 0]
            for j in range(1, k):
                v = v + c[q, j] * ds[r, j]
            proj[q] = v
        o = np.argsort(proj, kind="mergesort")
        for q in range(K):
            order[r, q] = o[q]
        for q in range(K - 1):
            gap[r, q] = proj[o[q + 1]] - proj[o[q]]


def _adam_constants(lr, b1, b2, eps, t):
    """float32 constants of Adam's step ``t`` (Kingma & Ba 2015; bias corrections folded in)."""
    return (np.float32(b1), np.float32(b2), np.float32(1.0 - b1), np.float32(1.0 - b2), np.float32(1.0 - b2**t),
            np.float32(eps), np.float32(-lr / (1.0 - b1**t)))


def _adam_entry(x, m, v, g, c):
    """One Adam step of one entry in float32, in the torch code's operation order; ``(x, m, v)``."""
    mm = m * c[0] + c[2] * g
    vv = v * c[1] + (c[3] * g) * g
    return x + (c[6] * mm) / (np.sqrt(vv / c[4]) + c[5]), mm, vv


def _softmax_segments(logits, off, u):
    S = off.shape[0] - 1
    for s in range(S):
        a = off[s]
        b = off[s + 1]
        mx = logits[a]
        for j in range(a + 1, b):
            if logits[j] > mx:
                mx = logits[j]
        tot = np.float32(0.0)
        for j in range(a, b):
            e = np.exp(logits[j] - mx)
            u[j] = e
            tot += e
        for j in range(a, b):
            u[j] = u[j] / tot


def _w1_grad_rows(order, gap, off, delta, o, P, grad):
    """``grad[cell] -= W_{pos(cell)-1}`` summed over rows ``o .. o+P-1``, per marginal; two
    rows at a time (their running sums are independent: twice the instruction-level parallelism)."""
    S = off.shape[0] - 1
    for s in range(S):
        a = off[s]
        b = off[s + 1]
        d = delta[a:b]
        g = grad[a:b]
        r = o
        while r < o + P:
            r1 = r + 1 if r + 1 < o + P else r
            o0 = order[r, a:b]
            q0 = gap[r, a:b]
            o1 = order[r1, a:b]
            q1 = gap[r1, a:b]
            two = r1 != r
            D0 = np.float32(0.0)
            W0 = np.float32(0.0)
            D1 = np.float32(0.0)
            W1 = np.float32(0.0)
            if two:
                for j in range(b - a):
                    p0 = np.int64(o0[j])
                    p1 = np.int64(o1[j])
                    g[p0] -= W0
                    D0 += d[p0]
                    W0 += np.copysign(q0[j], D0)
                    g[p1] -= W1
                    D1 += d[p1]
                    W1 += np.copysign(q1[j], D1)
            else:
                for j in range(b - a):
                    p0 = np.int64(o0[j])
                    g[p0] -= W0
                    D0 += d[p0]
                    W0 += np.copysign(q0[j], D0)
            r += 2


def _projection_run(logits, y, order, gap, off, offsets, P, lr, lr_step, lr_gamma, b1, b2, eps, m1, m2, u, delta,
                    grad):
    n = logits.shape[0]
    S = off.shape[0] - 1
    Pf = np.float32(P)
    for it in range(offsets.shape[0]):
        _softmax_segments(logits, off, u)
        for j in range(n):
            delta[j] = u[j] - y[j]
            grad[j] = np.float32(0.0)
        _w1_grad_rows(order, gap, off, delta, offsets[it], P, grad)
        for s in range(S):  # softmax backward, per marginal
            a = off[s]
            b = off[s + 1]
            dot = np.float32(0.0)
            for j in range(a, b):
                grad[j] = grad[j] / Pf
                dot += u[j] * grad[j]
            for j in range(a, b):
                grad[j] = u[j] * (grad[j] - dot)
        c = _adam_constants(lr * lr_gamma ** (it // lr_step), b1, b2, eps, it + 1)
        for j in range(n):
            logits[j], m1[j], m2[j] = _adam_entry(logits[j], m1[j], m2[j], grad[j], c)
    _softmax_segments(logits, off, u)


def _sliced_w1(order, gap, off, delta, o, P, out):
    S = off.shape[0] - 1
    for s in range(S):
        a = off[s]
        b = off[s + 1]
        d = delta[a:b]
        tot = 0.0
        for r in range(o, o + P):
            orow = order[r, a:b]
            grow = gap[r, a:b]
            D = np.float32(0.0)
            for j in range(b - a):
                D += d[np.int64(orow[j])]
                tot += abs(D) * grow[j]
        out[s] = tot / P


def _atom_of_rank(f, b, entry, cum, K, N):
    """The atom of a particle at bucket coordinate ``f`` in bucket ``b`` whose ranks span an
    atom boundary (``entry``: the bucket's first rank, count and first atom): its rank is the
    counting sort's interpolation ``first + floor(frac(f) * count)``; the atom, the one whose
    cumulative counts ``cum`` bracket it (binary search from the bucket's first atom)."""
    rank = min(np.int64(np.float32(entry[0]) + (f - np.float32(b)) * np.float32(entry[1])), N - 1)
    lo = np.int64(entry[2])  # cum[lo] <= rank
    hi = K - 1
    while lo < hi:  # the largest atom q <= hi with cum[q] <= rank
        mid = (lo + hi + 1) // 2
        if cum[mid] <= rank:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _optimization_step(X, m1, m2, grad, keep, seed, step, thr, upd,
                       cl_attrs, cl_k, cl_P, cl_cell0, cl_K, cl_row,
                       dW, dB, dG, dT, dS,
                       centres, counts, order,
                       B, cnt, side, fbuf, vs, cum, U, xU, gU, fU, cU, neg,
                       pen_attrs, pen_rows, gamma,
                       lr, b1, b2, eps, track_loss):
    d, N = X.shape
    cum[0] = 0
    for r in range(upd.shape[0]):  # masks of the updated attributes; their gradient rows zeroed
        a = upd[r]
        _keep_row(seed, step, a, d, N, thr, keep[a])
        ga = grad[a]
        for i in range(N):
            ga[i] = np.float32(0.0)
    loss = 0.0
    for c in range(cl_k.shape[0]):
        k = cl_k[c]
        P = cl_P[c]
        c0 = cl_cell0[c]
        K = cl_K[c]
        attrs = cl_attrs[c]
        # the particles U with a kept entry in one of the marginal's attributes, their coordinates
        # gathered into xU and their gradient summed over the directions in gU (contiguous rows)
        nu = 0
        for i in range(N):
            kk = 0
            for j in range(k):
                kk |= keep[attrs[j], i]
            U[nu] = i
            nu += kk
        for j in range(k):
            xj = X[attrs[j]]
            xu = xU[j]
            gu = gU[j]
            for u in range(nu):
                xu[u] = xj[U[u]]
                gu[u] = np.float32(0.0)
        closs = 0.0
        for p in range(P):
            w = dW[c, p]
            bias = dB[c, p]
            # bucket coordinates of all particles (float32, fixed operation order) and their counts
            x0 = X[attrs[0]]
            w0 = w[0]
            if k == 2:
                x1 = X[attrs[1]]
                w1 = w[1]
                for i in range(N):
                    fbuf[i] = x0[i] * w0 + x1[i] * w1 + bias
            else:
                for i in range(N):
                    fbuf[i] = x0[i] * w0
                for j in range(1, k):
                    xj = X[attrs[j]]
                    wj = w[j]
                    for i in range(N):
                        fbuf[i] = fbuf[i] + xj[i] * wj
                for i in range(N):
                    fbuf[i] = fbuf[i] + bias
            for b in range(B):
                cnt[b] = 0
            for i in range(N):
                cnt[np.int64(fbuf[i])] += 1
            # the target atoms in sorted order (bank), in bucket coordinates, and their cumulative counts
            th = dT[c, p]
            sc = dS[c, p]
            orow = order[cl_row[c] + p, c0 : c0 + K]
            for q in range(K):
                cell = c0 + np.int64(orow[q])
                v = centres[cell, 0] * th[0]
                for j in range(1, k):
                    v = v + centres[cell, j] * th[j]
                vs[q] = v * sc + bias
                cum[q + 1] = cum[q] + counts[cell]
            # per bucket, in place of its count: the atom of all ranks its particles can get (>= 0), or,
            # where an atom boundary falls inside the bucket, -(e + 1) for entry e of the side table
            # (the bucket's first rank and count, and the atom of its first rank)
            s = 0
            a = 0
            end = cum[1]
            ne = 0
            for b in range(B):
                cb = cnt[b]
                while end <= s and a < K - 1:
                    a += 1
                    end = cum[a + 1]
                if min(s + cb, N - 1) < end:
                    cnt[b] = a
                else:
                    side[ne, 0] = s
                    side[ne, 1] = cb
                    side[ne, 2] = a
                    ne += 1
                    cnt[b] = -ne
                s += cb
            # the particles of U: bucket coordinate (as above), target atom, gradient
            gw = dG[c, p]
            if k == 2 and not track_loss:  # the common case, in simple loops (more of them in flight: faster)
                xu0 = xU[0]
                xu1 = xU[1]
                w1 = w[1]
                for u in range(nu):
                    fU[u] = xu0[u] * w0 + xu1[u] * w1 + bias
                nneg = 0
                for u in range(nu):
                    code = cnt[np.int64(fU[u])]
                    cU[u] = code
                    neg[nneg] = u
                    nneg += code < 0
                for q in range(nneg):  # buckets an atom boundary falls in (rare)
                    u = neg[q]
                    f = fU[u]
                    cU[u] = _atom_of_rank(f, np.int64(f), side[-cU[u] - 1], cum, K, N)
                gu0 = gU[0]
                gu1 = gU[1]
                gw0 = gw[0]
                gw1 = gw[1]
                for u in range(nu):
                    diff = fU[u] - vs[cU[u]]
                    gu0[u] += gw0 * diff
                    gu1[u] += gw1 * diff
                continue
            for u in range(nu):
                f = xU[0, u] * w0
                if k == 2:
                    f = f + xU[1, u] * w[1] + bias
                else:
                    for j in range(1, k):
                        f = f + xU[j, u] * w[j]
                    f = f + bias
                b = np.int64(f)
                code = np.int64(cnt[b])
                if code < 0:
                    code = _atom_of_rank(f, b, side[-code - 1], cum, K, N)
                diff = f - vs[code]
                for j in range(k):
                    gU[j, u] += gw[j] * diff
                if track_loss:
                    err = diff / sc
                    closs += err * err
        for j in range(k):  # the marginal's gradient, summed over its directions, into the gradient rows
            gj = grad[attrs[j]]
            gu = gU[j]
            for u in range(nu):
                gj[U[u]] += gu[u]
        if track_loss and nu > 0:
            loss += closs / (P * nu)
    gf = np.float32(gamma)
    for r in range(pen_attrs.shape[0]):
        ga = grad[pen_attrs[r]]
        pr = pen_rows[r]
        for i in range(N):
            ga[i] = ga[i] + gf * pr[i]
    # SparseAdam on the kept entries, then the particles clipped to [0, 1]
    ac = _adam_constants(lr, b1, b2, eps, step)
    zero = np.float32(0.0)
    one = np.float32(1.0)
    for r in range(upd.shape[0]):
        a = upd[r]
        ka = keep[a]
        ga = grad[a]
        xa = X[a]
        ma = m1[a]
        va = m2[a]
        for i in range(N):
            x, mm, vv = _adam_entry(xa[i], ma[i], va[i], ga[i], ac)
            if ka[i]:
                ma[i] = mm
                va[i] = vv
                xa[i] = min(max(x, zero), one)
    return loss


_SOURCES = {
    "bank_rows": _bank_rows,
    "keep_masks": _keep_masks,
    "projection_run": _projection_run,
    "sliced_w1": _sliced_w1,
    "optimization_step": _optimization_step,
}
_HELPERS = ("_keep_row", "_adam_constants", "_adam_entry", "_softmax_segments", "_w1_grad_rows", "_atom_of_rank")
_COMPILED: dict = {}


def _compiled(name: str):
    """The compiled kernel ``name`` (numba, compiled once per process or read from its
    on-disk cache; the helpers it calls are compiled first)."""
    fn = _COMPILED.get(name)
    if fn is None:
        import numba  # compiled on first use only: importing numba costs about a second

        for h in _HELPERS:
            if h not in _COMPILED:
                _COMPILED[h] = globals()[h] = numba.njit(inline="always", error_model="numpy")(globals()[h])
        fn = _COMPILED[name] = numba.njit(cache=True, nogil=True, error_model="numpy")(_SOURCES[name])
    return fn


def bank_rows(ds: np.ndarray, c: np.ndarray, order: np.ndarray, gap: np.ndarray) -> None:
    """The sort orders and gaps of a direction bank's rows (compiled when :data:`AVAILABLE`,
    else :func:`bank_rows_numpy`; the same numbers either way)."""
    if AVAILABLE:
        _compiled("bank_rows")(ds, c, order, gap)
    else:
        bank_rows_numpy(ds, c, order, gap)


def bank_rows_numpy(ds: np.ndarray, c: np.ndarray, order: np.ndarray, gap: np.ndarray) -> None:
    """numpy twin of the compiled bank rows (stable sorts of the same float64 projections)."""
    proj = np.zeros((ds.shape[0], c.shape[0]))
    for j in range(ds.shape[1]):
        proj = proj + ds[:, j : j + 1] * c[None, :, j] if j else ds[:, :1] * c[None, :, 0]
    o = np.argsort(proj, axis=1, kind="stable")
    order[:] = o
    gap[:, : c.shape[0] - 1] = np.diff(np.take_along_axis(proj, o, axis=1), axis=1)


def keep_masks(seed: int, step: int, attrs, d: int, n: int, thr: int) -> np.ndarray:
    """``(len(attrs), n)`` bool: the dropout masks of ``attrs`` at ``step`` (module docstring),
    compiled when :data:`AVAILABLE` (the torch code's masks, on any device), else
    :func:`keep_masks_numpy` (the same bits)."""
    if not AVAILABLE:
        return keep_masks_numpy(seed, step, attrs, d, n, thr)
    out = np.empty((len(attrs), n), dtype=np.uint8)
    _compiled("keep_masks")(seed, step, np.asarray(attrs, dtype=np.int64), d, n, thr, out)
    return out.view(bool)


def projection_run(*args) -> None:
    """All iterations of the projection step (module docstring); arrays updated in place."""
    _compiled("projection_run")(*args)


def sliced_w1(*args) -> None:
    """Per-marginal mean ``W_1`` over a block of directions into the last argument."""
    _compiled("sliced_w1")(*args)


def optimization_step(*args) -> float:
    """One mini-batch step of the optimization (module docstring); returns the loss term
    when tracked (else 0)."""
    return _compiled("optimization_step")(*args)
