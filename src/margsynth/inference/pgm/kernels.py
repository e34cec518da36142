"""Compiled kernels of the Private-PGM engine (numba): the sum-product passes of
:class:`~.inference.BeliefPropagation` (:func:`calibrate_flat`), the L2 loss's sub-clique
terms (:class:`L2Terms`, summed through shared intermediate tables, :func:`marginal_plan`)
and the greedy triangulation (:func:`triangulate`: elimination with each heuristic, maximal
cliques, the smallest).

The numpy schedule of :meth:`~.inference.BeliefPropagation.calibrate` makes ~10 array
calls per junction-tree edge; on the small trees that AIM and MST fit thousands of times
(10-20 cliques, 10^3-10^4 cells) the per-call overhead of numpy, not the arithmetic,
is the cost. This module runs the *same* two passes — collect in log space with the
per-separator-value maximum subtracted, Hugin-style distribution ``mu_C = mu_S * P(x_{C\\S} |
x_S)`` with the same floors (``LOG_FLOOR``, ``PROB_FLOOR``) — as one compiled loop over flat
arrays: every clique table is a slice of one flat vector, and each edge carries two index
vectors mapping a child cell and a parent cell to its separator cell (gathers and
scatters instead of reshaped reductions). Koller & Friedman, *Probabilistic Graphical
Models* (2009), §10.2-10.3 (clique-tree calibration).

The numerical differences from the numpy path are the order of floating-point additions
inside a reduction (numpy sums pairwise, this loop sequentially) and the exponential, which
is computed in vectorised loops (:func:`_exp_cells`, within 2 ulp of the C library's) rather
than one call per cell: results agree to rounding (``tests/test_pgm_kernels.py`` checks
1e-12 relative on random trees). Every loop runs over slice views of the flat arrays (one
clique's cells, one edge's index vector): the compiler then vectorises what it can and
hoists the address arithmetic (1.6x faster than the same loops indexing the flat arrays
with offsets, the same numbers bit for bit).

numba is a dependency of the package; ``MARGSYNTH_NUMBA=0`` in the environment (read at
import) selects the numpy path everywhere, e.g. to compare the two. Small fits (``iterations
x cells < WORTH``) use the numpy path anyway unless the process has loaded the kernels
already: there, importing numba would cost more than it saves. The elimination loop, too,
runs compiled only in a process that has loaded the kernels (its results are identical).
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Sequence

import numpy as np

__all__ = [
    "AVAILABLE",
    "EdgeIndex",
    "calibrate_flat",
    "extrapolate",
    "load",
    "marginal_plan",
    "mirror_step",
    "sub_map",
    "triangulate",
]

#: numba installed and not disabled by ``MARGSYNTH_NUMBA=0``; numba itself is imported (about
#: a second) and the kernels compiled (a few seconds, then cached on disk) on first use only
AVAILABLE = os.environ.get("MARGSYNTH_NUMBA", "1").strip().lower() not in ("0", "false", "no", "off") and (
    importlib.util.find_spec("numba") is not None
)
_JIT: dict = {}
_JIT_LOCK = threading.Lock()
#: kernels allowed to fuse ``a * b + c`` into one FMA instruction (one rounding instead of
#: two; nothing else of IEEE arithmetic is relaxed): the polynomial of the exponential
_FASTMATH = {"_calibrate": {"contract"}}
#: helpers called from inside kernels (the name is rebound to its compiled version on first use)
_INLINE = ("_exp_cells", "_scatter_add", "_eliminate")
#: a fit uses the kernels when ``iterations x cells`` reaches this: below it numpy's per-call
#: overhead costs less than importing numba and loading the compiled code (~1 s per process)
WORTH = 2_000_000


def worth(iterations: int, cells: int) -> bool:
    """Whether a fit of ``iterations`` iterations on a model of ``cells`` cells should use
    the compiled kernels: when the fit is large enough to pay for loading them, or when
    this process has loaded them already (a sequence of fits such as AIM's rounds: the
    small early fits then run compiled too, they cost nothing more to load)."""
    return AVAILABLE and (iterations * cells >= WORTH or bool(_JIT))


def load() -> bool:
    """Make every later fit of this process run compiled (:func:`worth`), for callers that
    know they will fit many times (AIM's rounds); the kernels load on their first call.
    Returns :data:`AVAILABLE`."""
    if AVAILABLE:
        for func in (_calibrate, _l2_terms, _triangulate, _extrapolate, _mirror_step):
            _jit(func)
    return AVAILABLE


def _jit(func):
    """The compiled version of one of this module's kernels (compiled once per process,
    from numba's on-disk cache when it holds one)."""
    fn = _JIT.get(func.__name__)
    if fn is not None:
        return fn
    with _JIT_LOCK:  # threads (AIM's scoring) may ask for a kernel at the same time
        fn = _JIT.get(func.__name__)
        if fn is not None:
            return fn
        import numba  # optional and heavy (about a second to import): loaded on the first compiled call only

        for name in _INLINE:  # helpers the kernels call: compiled functions before the kernels
            if name not in _JIT:
                _JIT[name] = globals()[name] = numba.njit(inline="always", error_model="numpy")(globals()[name])
        fn = _JIT[func.__name__] = numba.njit(
            cache=True, nogil=True, error_model="numpy", fastmath=_FASTMATH.get(func.__name__, False)
        )(func)
    return fn


class EdgeIndex:
    """The flat edge tables of one junction tree's schedule (collect order: children first).

    For edge ``k`` (child ``c``, parent ``p``): the child's cells are
    ``[c_off[k], c_off[k] + c_len[k])`` of the flat vector, the parent's
    ``[p_off[k], p_off[k] + p_len[k])``; ``cidx[ci[k]: ci[k] + c_len[k]]`` is the separator
    cell of each child cell, ``pidx[pi[k]: pi[k] + p_len[k]]`` that of each parent cell;
    separator cells are numbered ``[s_off[k], s_off[k] + s_len[k])`` in a scratch vector.
    """

    def __init__(self, bp) -> None:
        tree = bp.tree
        shapes = bp.shapes
        offsets = bp.offsets
        edges = []  # (child, parent) in collect order
        for c in reversed(tree.order[1:]):
            edges.append((c, tree.parent[c]))
        cidx, pidx = [], []
        c_off, c_len, p_off, p_len, s_off, s_len, ci, pi = ([] for _ in range(8))
        s_pos = ci_pos = pi_pos = 0
        for c, p in edges:
            cl, pl = tree.cliques[c], tree.cliques[p]
            sep = tuple(a for a in cl if a in set(tree.separator(c)))
            sep_shape = tuple(tree.domain[a].size for a in sep)
            n_sep = int(np.prod(sep_shape, dtype=np.int64))
            for clique, shape, out in ((cl, shapes[c], cidx), (pl, shapes[p], pidx)):
                # both cliques list the separator in domain order, as ``sep`` does
                out.append(sub_map(shape, frozenset(range(len(shape))), frozenset(clique.index(a) for a in sep)))
            c_off.append(offsets[c])
            c_len.append(offsets[c + 1] - offsets[c])
            p_off.append(offsets[p])
            p_len.append(offsets[p + 1] - offsets[p])
            s_off.append(s_pos)
            s_len.append(n_sep)
            ci.append(ci_pos)
            pi.append(pi_pos)
            s_pos += n_sep
            ci_pos += c_len[-1]
            pi_pos += p_len[-1]
        as64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
        self.c_off, self.c_len, self.p_off, self.p_len = as64(c_off), as64(c_len), as64(p_off), as64(p_len)
        self.s_off, self.s_len, self.ci, self.pi = as64(s_off), as64(s_len), as64(ci), as64(pi)
        # int32 separator indices: half the bytes of the passes that gather and scatter
        self.cidx = (np.concatenate(cidx) if cidx else np.zeros(0, np.int64)).astype(np.int32)
        self.pidx = (np.concatenate(pidx) if pidx else np.zeros(0, np.int64)).astype(np.int32)
        self.root_off = int(offsets[tree.root])
        self.root_len = int(offsets[tree.root + 1] - offsets[tree.root])
        self.n_sep = s_pos
        # scratch: upward beliefs, exponentials, per-separator max / sum / parent marginal,
        # the exponent bits of one clique's exponentials (:func:`_calibrate`)
        self.acc = np.empty(bp.size)
        self.e = np.empty(bp.size)
        self.bits = np.empty(max(int(np.max(c_len, initial=0)), self.root_len, 1))
        self.mx = np.empty(max(s_pos, 1))
        self.sums = np.empty(max(s_pos, 1))
        self.ps = np.empty(max(s_pos, 1))


#: ``exp`` in :func:`_calibrate`: x = k ln 2 + r with k = round(x / ln 2), |r| <= ln(2)/2
#: (ln 2 split in two, Cody & Waite), exp(r) by its Taylor polynomial to degree 13 (truncation
#: below 4e-18 relative) and 2^k written into the exponent bits. The rounding of x / ln 2 to an
#: integer is the addition of MAGIC = 1.5 * 2^52, whose low mantissa bits then hold k.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_MAGIC = 6755399441055744.0
_MAGIC_BITS = int(np.array([_MAGIC]).view(np.int64)[0])


def _exp_cells(e, start, n, bits):
    """``e[start: start + n] = exp(e[start: start + n])`` for arguments in ``[LOG_FLOOR, 0]``
    (``2^k`` is then a normal number), in three branch-free loops that the compiler
    vectorises; ``bits`` is scratch of at least ``n`` cells. Compiled inline into
    :func:`_calibrate`: ~1.4 ns a cell against ~5.7 for the C library's scalar ``exp`` on the
    2-core test machine, within ~1 ulp of it (``tests/test_pgm_kernels.py``)."""
    kb = bits.view(np.int64)
    ee = e[start : start + n]  # a view: the loops then vectorise (3x faster than indexing e)
    for i in range(n):
        x = ee[i]
        t = x * _INV_LN2 + _MAGIC
        kf = t - _MAGIC
        r = (x - kf * _LN2_HI) - kf * _LN2_LO
        q = 1.0 / 6227020800.0
        q = q * r + 1.0 / 479001600.0
        q = q * r + 1.0 / 39916800.0
        q = q * r + 1.0 / 3628800.0
        q = q * r + 1.0 / 362880.0
        q = q * r + 1.0 / 40320.0
        q = q * r + 1.0 / 5040.0
        q = q * r + 1.0 / 720.0
        q = q * r + 1.0 / 120.0
        q = q * r + 1.0 / 24.0
        q = q * r + 1.0 / 6.0
        q = q * r + 0.5
        q = q * r + 1.0
        ee[i] = q * r + 1.0
        bits[i] = t
    for i in range(n):
        kb[i] = (kb[i] - _MAGIC_BITS + 1023) << 52
    for i in range(n):
        ee[i] *= bits[i]


def _scatter_add(dst, idx, src):
    """``dst[idx[i]] += src[i]`` for every ``i`` in order, the running value kept in a
    register while consecutive ``idx`` are equal (the same additions in the same order,
    without a store and reload per cell: 0.6 instead of 3.6 ns a cell on runs). Compiled
    inline into :func:`_calibrate`."""
    n = idx.shape[0]
    if n == 0:
        return
    cur = idx[0]
    run = dst[cur]
    for i in range(n):
        s = idx[i]
        if s != cur:
            dst[cur] = run
            cur = s
            run = dst[s]
        run += src[i]
    dst[cur] = run


def _calibrate(
    theta, zeros, out, acc, e, bits, mx, sums, ps, c_off, c_len, p_off, p_len, s_off, s_len, ci, pi, cidx, pidx,
    root_off, root_len, log_floor, prob_floor,
):  # fmt: skip
    """The two passes of :meth:`~.inference.BeliefPropagation.calibrate` on flat arrays;
    returns ``log Z``. ``theta`` is not modified. The exponentials: :func:`_exp_cells`.

    ``zeros`` (empty: none) is added to ``theta``: ``0`` or ``-inf`` per cell, the
    structural zeros of a model with rules. With it, cells whose upward belief is ``-inf``
    (their own zero, or a child's message ``log 0``) get probability exactly 0 instead of
    the floor ``exp(log_floor)``, a separator value of probability 0 is not floored, and
    a separator value no child cell reaches gives its cells 0 (no ``0 / 0``); these passes
    run only then, so the arithmetic without zeros is unchanged.

    Every loop runs over slice views of the flat arrays (one clique's cells, one edge's
    index vector, one separator's cells), not over the flat arrays with an offset: the
    compiler then hoists the address arithmetic and vectorises what it can (1.6x faster on
    AIM's 65k-cell models, same numbers bit for bit). Sums into a separator cell keep the
    running value in a register while consecutive cells map to the same separator cell
    (the same additions in the same order, without a store and reload per cell)."""
    n = theta.shape[0]
    exact = zeros.shape[0] > 0
    if exact:
        for i in range(n):
            acc[i] = theta[i] + zeros[i]
    else:
        for i in range(n):
            acc[i] = theta[i]
    n_edges = c_off.shape[0]
    # collect: child -> parent messages, log space
    for k in range(n_edges):
        co, cn, po, pn, so, sn = c_off[k], c_len[k], p_off[k], p_len[k], s_off[k], s_len[k]
        cb, pb = ci[k], pi[k]
        a = acc[co : co + cn]
        ee = e[co : co + cn]
        ix = cidx[cb : cb + cn]
        m = mx[so : so + sn]
        sm = sums[so : so + sn]
        for s in range(sn):
            m[s] = -np.inf
            sm[s] = 0.0
        for i in range(cn):
            s = ix[i]
            v = a[i]
            if v > m[s]:
                m[s] = v
        for i in range(cn):
            v = a[i] - m[ix[i]]
            ee[i] = v if v > log_floor else log_floor
        _exp_cells(e, co, cn, bits)
        if exact:
            for i in range(cn):
                if a[i] == -np.inf:
                    ee[i] = 0.0
        _scatter_add(sm, ix, ee)
        for s in range(sn):  # the message, once per separator cell (m holds it now)
            m[s] += np.log(sm[s])
        pa = acc[po : po + pn]
        px = pidx[pb : pb + pn]
        for j in range(pn):
            pa[j] += m[px[j]]
    # root
    ra = acc[root_off : root_off + root_len]
    re = e[root_off : root_off + root_len]
    ro = out[root_off : root_off + root_len]
    top = -np.inf
    for i in range(root_len):
        if ra[i] > top:
            top = ra[i]
    for i in range(root_len):
        v = ra[i] - top
        re[i] = v if v > log_floor else log_floor
    _exp_cells(e, root_off, root_len, bits)
    if exact:
        for i in range(root_len):
            if ra[i] == -np.inf:
                re[i] = 0.0
    z = 0.0
    for i in range(root_len):
        z += re[i]
    inv = 1.0 / z
    for i in range(root_len):
        ro[i] = re[i] * inv
    # distribute: parents before children (reverse collect order)
    for k in range(n_edges - 1, -1, -1):
        co, cn, po, pn, so, sn = c_off[k], c_len[k], p_off[k], p_len[k], s_off[k], s_len[k]
        cb, pb = ci[k], pi[k]
        q = ps[so : so + sn]
        sm = sums[so : so + sn]
        px = pidx[pb : pb + pn]
        pv = out[po : po + pn]
        for s in range(sn):
            q[s] = 0.0
        _scatter_add(q, px, pv)
        if exact:
            for s in range(sn):
                d = sm[s]
                v = q[s] / d if d > 0.0 else 0.0
                if 0.0 < v < prob_floor:
                    v = prob_floor
                q[s] = v
        else:
            for s in range(sn):
                v = q[s] / sm[s]
                if v < prob_floor:
                    v = prob_floor
                q[s] = v
        ix = cidx[cb : cb + cn]
        ee = e[co : co + cn]
        o = out[co : co + cn]
        for i in range(cn):
            o[i] = ee[i] * q[ix[i]]
    return np.log(z) + top


#: ``zeros`` of :func:`_calibrate` for a model without structural zeros
_NO_ZEROS = np.zeros(0)


def calibrate_flat(
    ix: EdgeIndex,
    theta: np.ndarray,
    out: np.ndarray,
    log_floor: float,
    prob_floor: float,
    zeros: np.ndarray | None = None,
) -> float:
    """Clique marginals of ``theta`` (flat) into ``out`` (flat); returns ``log Z``.
    ``zeros``: ``0`` / ``-inf`` per cell added to ``theta``, the cells at ``-inf`` of
    probability exactly 0 (:func:`_calibrate`)."""
    return float(
        _jit(_calibrate)(
            theta,
            _NO_ZEROS if zeros is None else zeros,
            out,
            ix.acc,
            ix.e,
            ix.bits,
            ix.mx,
            ix.sums,
            ix.ps,
            ix.c_off,
            ix.c_len,
            ix.p_off,
            ix.p_len,
            ix.s_off,
            ix.s_len,
            ix.ci,
            ix.pi,
            ix.cidx,
            ix.pidx,
            ix.root_off,
            ix.root_len,
            log_floor,
            prob_floor,
        )  # fmt: skip
    )


def _l2_terms(
    p, G, terms, cmap, perm, seg, ps, g, a, b, a_inv, q_ptr, q_idx, q_val, qt_ptr, qt_idx, qt_val, y, r, backward
):
    """The sub-clique terms of the L2 objective of :class:`~.objective.Objective`.

    ``terms[k] = (co, cn, mo, fo, m, kind, ro, rows, pr, pt, src)``: the term's source cells
    ``p[co: co + cn]`` (``src == 0``: a clique) or ``ps[co: co + cn]`` (``src == 1``: the
    marginal of an earlier term over a superset of its attributes, see
    :func:`marginal_plan`), ``cmap[mo + i]`` the marginal cell of source cell ``i``, its
    marginal cells ``ps[fo: fo + m]``. Terms come sources first; the gradient flows back
    in reverse order (a term's gradient is complete when it is passed on to its source).
    Terms with ``a = b = 0`` are pure intermediates (no loss). Identity terms (``kind == 0``): ``g = a*ps - b``, loss
    ``0.5 g^2 / a``. Matrix terms (``kind == 1``): ``r = Q ps - y`` (``rows`` rows from
    ``y[ro:]``; CSR row pointers ``q_ptr[pr: pr + rows + 1]``, absolute), loss
    ``0.5 r^2``, ``g = Q^T r`` (CSR of ``Q^T``: ``qt_ptr[pt: pt + m + 1]``). The gradient
    is scattered back onto the clique cells of ``G`` (added; not with ``backward=False``,
    which computes the loss alone). Returns the loss (without constants)."""
    val = 0.0
    # marginals: per marginal cell, a sum over its clique cells (``perm`` lists each term's
    # clique cells grouped by marginal cell, ``seg[fo + j + k]`` where group ``j`` starts):
    # accumulated in a register rather than scattered. Loops run over slice views (see
    # :func:`_calibrate`).
    for k in range(terms.shape[0]):
        co, cn, mo, fo, m = terms[k, 0], terms[k, 1], terms[k, 2], terms[k, 3], terms[k, 4]
        sg = seg[fo + k : fo + k + m + 1]
        pm = perm[mo : mo + cn]
        dst = ps[fo : fo + m]
        src = p[co : co + cn] if terms[k, 10] == 0 else ps[co : co + cn]
        for j in range(m):
            acc = 0.0
            for i in range(sg[j], sg[j + 1]):
                acc += src[pm[i]]
            dst[j] = acc
    for k in range(terms.shape[0]):
        fo, m, kind = terms[k, 3], terms[k, 4], terms[k, 5]
        if kind == 0:
            pj, gj, aj, bj, ij = ps[fo : fo + m], g[fo : fo + m], a[fo : fo + m], b[fo : fo + m], a_inv[fo : fo + m]
            for j in range(m):
                d = aj[j] * pj[j] - bj[j]
                gj[j] = d
                val += 0.5 * d * d * ij[j]
        else:
            ro, rows, pr, pt = terms[k, 6], terms[k, 7], terms[k, 8], terms[k, 9]
            for row in range(rows):
                acc = 0.0
                for e in range(q_ptr[pr + row], q_ptr[pr + row + 1]):
                    acc += q_val[e] * ps[fo + q_idx[e]]
                rr = acc - y[ro + row]
                r[ro + row] = rr
                val += 0.5 * rr * rr
            for j in range(m):
                acc = 0.0
                for e in range(qt_ptr[pt + j], qt_ptr[pt + j + 1]):
                    acc += qt_val[e] * r[ro + qt_idx[e]]
                g[fo + j] = acc
    if not backward:
        return val
    for k in range(terms.shape[0] - 1, -1, -1):
        co, cn, mo, fo, m = terms[k, 0], terms[k, 1], terms[k, 2], terms[k, 3], terms[k, 4]
        cm = cmap[mo : mo + cn]
        gv = g[fo : fo + m]
        dst = G[co : co + cn] if terms[k, 10] == 0 else g[co : co + cn]
        for i in range(cn):
            dst[i] += gv[cm[i]]
    return val


def _extrapolate(x, z, beta, out):
    """``out = (x - z) * beta + x``, rounded as numpy's three passes (no fused multiply-add)."""
    for i in range(x.shape[0]):
        d = x[i] - z[i]
        d = d * beta
        out[i] = d + x[i]


def _mirror_step(g, scale, y, out):
    """``out = g * scale + y``, rounded as numpy's two passes (no fused multiply-add)."""
    for i in range(g.shape[0]):
        out[i] = g[i] * scale + y[i]


def extrapolate(x: np.ndarray, z: np.ndarray, beta: float, out: np.ndarray) -> None:
    """The momentum point ``out = x + beta (x - z)`` of the accelerated descent in one pass
    (bit for bit numpy's ``subtract``, ``*=``, ``+=``)."""
    _jit(_extrapolate)(x, z, float(beta), out)


def mirror_step(g: np.ndarray, eta: float, y: np.ndarray, out: np.ndarray) -> None:
    """The mirror step ``out = y - eta * g`` in one pass (bit for bit numpy's
    ``multiply(g, -eta)``, ``+=``)."""
    _jit(_mirror_step)(g, -float(eta), y, out)


def sub_map(sizes: Sequence[int], source: frozenset, axes: frozenset) -> np.ndarray:
    """For each cell of the table over the axes ``source`` (of a clique with axis sizes
    ``sizes``; C order), its cell in the table over ``axes`` (a subset of ``source``):
    ``ravel_multi_index`` of the kept coordinates, built by broadcasting one stride vector
    per kept axis (no coordinate arrays)."""
    src = sorted(source)
    out = np.zeros([sizes[i] for i in src], dtype=np.int64)
    stride = 1
    for i in sorted(axes, reverse=True):
        shape = [1] * len(src)
        shape[src.index(i)] = sizes[i]
        out += (np.arange(sizes[i], dtype=np.int64) * stride).reshape(shape)
        stride *= sizes[i]
    return out.ravel()


def marginal_plan(sizes: Sequence[int], kept: Sequence[frozenset]) -> list[tuple[frozenset, int, int | None]]:
    """The order in which to sum a clique's table (axis sizes ``sizes``) down to the
    marginals over the axis sets ``kept`` (proper subsets of the clique's axes), sharing
    intermediate tables: returns ``(axes, source, term)`` in topological order, ``source``
    the index of an earlier entry (``-1``: the clique), ``term`` the index into ``kept``
    or ``None`` for an intermediate that is no term. A sum reads every cell of its source
    once (and the gradient flows back the same way), so a plan costs the sum of its
    sources' cells. Greedy: from a source, the terms that miss some axis ``a`` are served
    by one intermediate over the union of their axes when that is cheaper than reading
    the source once per term; recursively, the best ``a`` first. (The data-cube problem
    of computing many group-bys from one table: S. Agarwal, R. Agrawal, P. Deshpande,
    A. Gupta, J. F. Naughton, R. Ramakrishnan and S. Sarawagi, "On the computation of
    multidimensional aggregates", VLDB 1996 — here a simple greedy.)"""
    sizes = [int(x) for x in sizes]

    def cells(axes) -> int:
        return math.prod(sizes[i] for i in axes)

    out: list[tuple[frozenset, int, int | None]] = []

    def place(src_axes: frozenset, src: int, items: list[tuple[frozenset, int]]) -> None:
        remaining = list(items)
        while len(remaining) >= 2:
            best = None
            for a in sorted(src_axes):
                group = [it for it in remaining if a not in it[0]]
                if len(group) < 2:
                    continue
                union = frozenset().union(*(it[0] for it in group))
                saving = len(group) * cells(src_axes) - cells(src_axes) - len(group) * cells(union)
                if saving > 0 and (best is None or saving > best[0]):
                    best = (saving, union, group)
            if best is None:
                break
            _, union, group = best
            remaining = [it for it in remaining if it not in group]
            hub = next((it for it in group if it[0] == union), None)
            out.append((union, src, None if hub is None else hub[1]))
            place(union, len(out) - 1, [it for it in group if it is not hub])
        for axes, t in remaining:
            out.append((axes, src, t))

    full = frozenset(range(len(sizes)))
    place(full, -1, [(frozenset(k), t) for t, k in enumerate(kept)])
    return out


class L2Terms:
    """The packed arrays of :func:`_l2_terms` for one objective: ``add(p, G) -> loss``.

    ``identity`` is a list of ``(clique offset, clique cells, marginal-cell map, a, b)`` or
    ``(None, source, map, a, b)`` with ``source`` the index of an earlier identity entry whose
    marginal the map reads (``a = 0``, ``b = 0``: an intermediate without loss);
    ``matrix`` of ``(clique offset, clique cells, marginal-cell map, Q (CSR), y)``.
    """

    def __init__(self, identity, matrix) -> None:
        rows, cmaps, a_l, b_l, qp, qi, qv, tp, ti, tv, ys = ([] for _ in range(11))
        mo = fo = ro = pr = pt = qe = te = 0
        for co, cn, cmap, a, b in identity:
            m = int(cmap.max()) + 1 if cmap.size else 0
            src = 0
            if co is None:  # another term's marginal is the source
                _, _, _, co, cn = rows[cn][:5]
                src = 1
                if cmap.size != cn:
                    raise ValueError("intermediate map does not match its source term")
            rows.append((co, cn, mo, fo, m, 0, 0, 0, 0, 0, src))
            cmaps.append(cmap)
            a_l.append(np.broadcast_to(np.asarray(a, dtype=np.float64), (m,)))
            b_l.append(np.asarray(b, dtype=np.float64).ravel())
            mo += cn
            fo += m
        for co, cn, cmap, Q, y in matrix:
            m = Q.shape[1]
            Q = Q.tocsr()
            QT = Q.T.tocsr()
            rows.append((co, cn, mo, fo, m, 1, ro, Q.shape[0], pr, pt, 0))
            cmaps.append(cmap)
            a_l.append(np.zeros(m))
            b_l.append(np.zeros(m))
            qp.append(Q.indptr[:-1] + qe if Q.shape[0] else Q.indptr[:0])
            qp.append(np.array([qe + Q.nnz]))
            qi.append(Q.indices)
            qv.append(Q.data)
            tp.append(QT.indptr[:-1] + te if m else QT.indptr[:0])
            tp.append(np.array([te + QT.nnz]))
            ti.append(QT.indices)
            tv.append(QT.data)
            ys.append(np.asarray(y, dtype=np.float64).ravel())
            mo += cn
            fo += m
            ro += Q.shape[0]
            pr += Q.shape[0] + 1
            pt += m + 1
            qe += Q.nnz
            te += QT.nnz
        i64 = lambda parts: np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)  # noqa: E731
        f64 = lambda parts: np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)  # noqa: E731
        self.terms = np.asarray(rows, dtype=np.int64).reshape(-1, 11)
        self.cmap = i64(cmaps)
        # the same maps grouped by marginal cell: perm (clique cells, stable order) and the
        # group starts seg (term k's m + 1 pointers at seg[fo_k + k:], relative to its perm)
        perms, segs = [], []
        for row, cmap in zip(rows, cmaps):
            order = np.argsort(cmap, kind="stable")
            perms.append(order)
            segs.append(np.searchsorted(cmap[order], np.arange(row[4] + 1)))
        self.perm, self.seg = i64(perms), i64(segs)
        self.a, self.b = f64(a_l), f64(b_l)
        self.a_inv = np.zeros_like(self.a)
        np.divide(1.0, self.a, out=self.a_inv, where=self.a > 0)
        self.q_ptr, self.q_idx, self.q_val = i64(qp), i64(qi), f64(qv)
        self.qt_ptr, self.qt_idx, self.qt_val = i64(tp), i64(ti), f64(tv)
        self.y = f64(ys)
        self.ps, self.g, self.r = np.zeros(fo), np.zeros(fo), np.zeros(ro)

    def add(self, p: np.ndarray, G: np.ndarray, backward: bool = True) -> float:
        """Adds the terms' gradient to ``G`` (flat; ``backward=False``: ``G`` is not
        touched); returns their loss (no constants)."""
        return float(
            _jit(_l2_terms)(
                p,
                G,
                self.terms,
                self.cmap,
                self.perm,
                self.seg,
                self.ps,
                self.g,
                self.a,
                self.b,
                self.a_inv,
                self.q_ptr,
                self.q_idx,
                self.q_val,
                self.qt_ptr,
                self.qt_idx,
                self.qt_val,
                self.y,
                self.r,
                backward,
            )  # fmt: skip
        )


def _eliminate(nbm, size, heuristic, order, formed):
    """Greedy vertex elimination on bitmask neighbourhoods (vertex ``v`` is bit ``v``, in
    tie-break order): the loop of :func:`~.junction_tree.triangulate`, compiled (inlined
    into :func:`_triangulate`). ``heuristic``: 0 min_fill, 1 weighted_min_fill, 2 min_weight. Writes the elimination
    order and each eliminated vertex's clique (mask) into ``order`` and ``formed``."""
    n = size.shape[0]
    remaining = (np.int64(1) << n) - 1
    for step in range(n):
        best = -1
        bf = 0
        bc = 0
        for v in range(n):
            if not (remaining >> v) & 1:
                continue
            nb = nbm[v]
            cells = size[v]
            fill = 0
            for a in range(n):
                if (nb >> a) & 1:
                    cells *= size[a]
                    if heuristic != 2:
                        missing = nb & ~nbm[a] & ~(np.int64(1) << a)
                        if missing:
                            if heuristic == 1:
                                w = 0
                                for b in range(n):
                                    if (missing >> b) & 1:
                                        w += size[b]
                                fill += size[a] * w
                            else:
                                while missing:
                                    missing &= missing - 1
                                    fill += 1
            if best < 0 or fill < bf or (fill == bf and cells < bc):
                best, bf, bc = v, fill, cells
        nb = nbm[best]
        for a in range(n):
            if (nb >> a) & 1:
                nbm[a] = (nbm[a] | nb) & ~(np.int64(1) << a) & ~(np.int64(1) << best)
        order[step] = best
        formed[step] = nb | (np.int64(1) << best)
        remaining &= ~(np.int64(1) << best)


def _triangulate(nbm0, size, first, last, order, formed, nbm, best_order, best_max):
    """The greedy triangulation with each heuristic ``first .. last - 1`` (:func:`_eliminate`
    on a copy of ``nbm0``), keeping the one whose maximal cliques have the fewest cells
    (the first on ties): writes its elimination order into ``best_order`` and its maximal
    cliques (bitmasks, largest first) into ``best_max``; returns ``(heuristic, number of
    maximal cliques, total cells)``."""
    n = size.shape[0]
    best_h = -1
    best_k = 0
    best_total = np.int64(0)
    for h in range(first, last):
        for v in range(n):
            nbm[v] = nbm0[v]
        _eliminate(nbm, size, h, order, formed)
        # maximal cliques: by decreasing size, each kept unless a kept one contains it
        count = np.empty(n, np.int64)
        for i in range(n):
            c = formed[i]
            k = 0
            while c:
                c &= c - 1
                k += 1
            count[i] = k
        idx = np.argsort(-count, kind="mergesort")
        k = 0
        total = np.int64(0)
        for ii in range(n):
            c = formed[idx[ii]]
            inside = False
            for j in range(k):
                if c & ~nbm[j] == 0:
                    inside = True
                    break
            if inside:
                continue
            nbm[k] = c  # nbm is free now: it holds the maximal cliques found so far
            k += 1
            cells = np.int64(1)
            for a in range(n):
                if (c >> a) & 1:
                    cells *= size[a]
            total += cells
        if best_h < 0 or total < best_total:
            best_h, best_k, best_total = h, k, total
            for v in range(n):
                best_order[v] = order[v]
            for j in range(k):
                best_max[j] = nbm[j]
    return best_h, best_k, best_total


def triangulate(
    nbm: list[int], size: list[int], heuristics: Sequence[int]
) -> tuple[int, list[int], list[int], int] | None:
    """:func:`_triangulate` over the heuristics ``heuristics`` (consecutive codes: 0
    min_fill, 1 weighted_min_fill, 2 min_weight) when the process has loaded the kernels (a
    fresh numba load costs more than small triangulations) and every score fits an int64
    exactly (at most 40 vertices, at most 2^50 cells over all of them): ``(heuristic,
    elimination order, maximal cliques as bitmasks, total cells)``; else ``None`` (the caller
    runs the same loop in Python). Ties fall to the lower vertex, as there."""
    n = len(size)
    if not (AVAILABLE and _JIT) or n > 40 or math.prod(size) >= 2**50:
        return None
    order, formed, scratch = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    best_order, best_max = np.empty(n, np.int64), np.empty(n, np.int64)
    h, k, total = _jit(_triangulate)(
        np.asarray(nbm, np.int64), np.asarray(size, np.int64), heuristics[0], heuristics[-1] + 1,
        order, formed, scratch, best_order, best_max,
    )  # fmt: skip
    return int(h), best_order.tolist(), best_max[:k].tolist(), int(total)
