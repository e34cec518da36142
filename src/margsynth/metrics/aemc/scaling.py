"""Exact integer scaling of costs and capacities for the integer flow solver
(MGD paper §6.2 and Appendix A: the min-cost flow is solved over integers).

OR-Tools' min-cost flow works on 64-bit integers. A float input is scaled
exactly when every value is a rational whose denominator divides one common
scale ``s``, up to the last bits of float arithmetic: a value is read as the
simplest rational within ``ULPS`` units in the last place of it (so that
``0.9/3 = 0.30000000000000004`` is read as 3/10); then ``round(s·x)/s ≈ x`` to
those few ulps for each value and the optimum, an integer ``C``, gives the AEMC as the exact
fraction ``C/(s_cost·s_cap)``. Values that are not such rationals (or need a
scale that overflows 64 bits) are refused with a ``ValueError``: they must go
to the LP, or be rounded on purpose with a reported error bound — never
silently (non-integer counts are scored exactly).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["exact_scale", "scale_to_int", "INT_LIMIT"]

#: Head-room below 2**63: OR-Tools multiplies costs by the number of nodes
#: during cost scaling, and sums flows; we keep every product below this.
INT_LIMIT = 2**62
_MAX_DEN = 10**7
#: float values are read as the simplest rational this many ulps away at most
ULPS = 4


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(np.abs(a - b) <= ULPS * np.spacing(np.abs(b))))


def _den_of(x: float) -> int | None:
    if x == int(x):
        return 1
    fr = Fraction(x).limit_denominator(_MAX_DEN)
    return fr.denominator if abs(float(fr) - x) <= ULPS * np.spacing(abs(x)) else None


def exact_scale(values: np.ndarray, what: str) -> int:
    """Smallest common scale ``s`` with ``s·x`` an integer for every value
    (values read as the rationals they are nearest to). ``ValueError`` when
    there is none within 64-bit range."""
    v = np.unique(np.abs(np.asarray(values, dtype=np.float64).ravel()))
    v = v[np.isfinite(v)]
    if v.size == 0 or np.all(v == np.round(v)):
        return 1
    # fast paths: decimal and binary scales
    for s in [10**e for e in range(1, 13)] + [2**e for e in range(1, 41)]:
        sv = v * s
        r = np.round(sv)
        if np.all(np.abs(r) < 2**53) and _close(r / s, v):
            # minimise s: reduce by the gcd of the integers
            g = int(np.gcd.reduce(np.append(r.astype(np.int64), s)))
            return s // g if g > 1 else s
    scale = 1
    frac = v[v != np.round(v)]
    for x in frac.tolist():
        d = _den_of(x)
        if d is None:
            raise ValueError(
                f"{what}: value {x!r} is not a rational with denominator <= {_MAX_DEN}, so it cannot be scaled to an "
                "integer exactly; use solver='lp' or pass tolerance= to round with a reported error bound"
            )
        scale = scale * d // math.gcd(scale, d)
        if scale > 2**53:
            raise ValueError(
                f"{what}: the common denominator of the values exceeds 2**53 ({scale}); they cannot be scaled "
                "exactly within 64-bit limits; use solver='lp' or pass tolerance="
            )
    return scale


def scale_to_int(values: np.ndarray, scale: int, what: str) -> np.ndarray:
    """``values·scale`` as int64, checking exactness and range."""
    v = np.asarray(values, dtype=np.float64)
    sv = v * scale
    if sv.size and float(np.max(np.abs(sv))) >= INT_LIMIT:
        raise ValueError(f"{what}: scaled values reach {float(np.max(np.abs(sv))):.3g}, beyond the 64-bit limit 2**62")
    r = np.round(sv)
    if sv.size and np.max(np.abs(r)) < 2**53 and not _close(r / scale, v):
        raise ValueError(f"{what}: values are not exact multiples of 1/{scale}")
    return r.astype(np.int64)
