"""Finalization step of PrivPGD (paper §3.3, last paragraph of Algorithm 3).

After the optimization step every particle ``x_i in [0, 1]^d`` is mapped to the
closest point of the embedded grid ``prod_j {e_j(0), ..., e_j(n_j - 1)}``. The grid
is a product and the distance is Euclidean, so the nearest grid point is found
coordinate-wise: ``k_j = argmin_k |x_ij - (2k+1)/(2 n_j)| = min(floor(n_j x_ij), n_j - 1)``.
The result is a :class:`~margsynth.dataset.Dataset` of integer codes.
"""

from __future__ import annotations

import numpy as np

from ...dataset import Dataset
from ...domain import Domain
from .embedding import check_domain, nearest_codes

__all__ = ["finalize"]


def finalize(particles, domain: Domain) -> Dataset:
    """Codes of the grid points nearest to ``particles`` (an ``(N, d)`` numpy array or
    torch tensor in ``[0, 1]^d``), as a Dataset over ``domain``."""
    sizes = check_domain(domain)
    if hasattr(particles, "detach"):  # a torch tensor; converted without importing torch here
        particles = particles.detach().cpu().double().numpy()
    pts = np.asarray(particles, dtype=np.float64)
    codes = nearest_codes(pts, sizes)
    dtype = np.uint8 if max(sizes) <= 255 else (np.uint16 if max(sizes) <= 65535 else np.int64)
    return Dataset._trusted(codes.astype(dtype), domain)
