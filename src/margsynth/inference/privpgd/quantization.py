"""Quantization step of PrivPGD (paper §3.2, Eq. 6).

The projected probability measure ``p_C`` on the ``K`` cells of a marginal is
replaced by an empirical measure of exactly ``N`` atoms (``N`` = number of
particles), so that the optimization step compares two empirical measures with
the same number of atoms and Eq. 8's sorting formula applies:

    n_k = floor(N p_k) + 1[k among the N - sum_k floor(N p_k) largest remainders]
    nu_C = (1/N) sum_k n_k delta_{c_k}                                   (Eq. 6)

This is the largest-remainder (Hamilton) rounding: deterministic, ``sum n_k = N``,
and ``|n_k / N - p_k| < 1 / N`` for every cell (the best possible uniform error).
Ties in the remainders go to the lower cell index. numpy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["quantize"]


def quantize(probabilities, n: int) -> np.ndarray:
    """Integer counts ``n_k >= 0`` with ``sum n_k = n`` and ``|n_k - n p_k| < 1`` (Eq. 6).

    >>> quantize([0.5, 0.25, 0.25], 3).tolist()  # remainders 0.5, 0.75, 0.75: the last two round up
    [1, 1, 1]
    """
    p = np.asarray(probabilities, dtype=np.float64).ravel()
    if p.size == 0:
        raise ValueError("cannot quantize an empty measure")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("probabilities must be finite and non-negative")
    total = p.sum()
    if total <= 0:
        raise ValueError("probabilities sum to zero")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"number of atoms must be a positive integer, got {n!r}")
    n = int(n)
    scaled = p / total * n
    base = np.floor(scaled).astype(np.int64)
    short = n - int(base.sum())
    if short > 0:
        rem = scaled - base
        order = np.argsort(-rem, kind="stable")  # largest remainder first, ties by index
        base[order[:short]] += 1
    elif short < 0:  # only from rounding when total is not exactly 1; take from largest
        order = np.argsort(-(scaled - base), kind="stable")
        for k in order:
            if short == 0:
                break
            if base[k] > 0:
                base[k] -= 1
                short += 1
    return base
