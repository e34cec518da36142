"""Deterministic offline surrogates with the real datasets' schemas.

When no real data can be fetched, loaders fall back to these so every
notebook still runs end to end (and says, in its figures and tables, that it
ran on surrogate data). A surrogate is *not* the data: it only has the same
attributes, domain sizes and roughly the same number of records, with a
random tree-structured dependence so that marginal-based methods have
something to find. Everything is seeded from the dataset's name, so the same
name gives the same bytes on every machine.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..dataset import Dataset
from ..domain import Attribute, Domain

__all__ = ["surrogate_baltimore", "surrogate_records", "surrogate_rng"]


def surrogate_rng(name: str) -> np.random.Generator:
    seed = int.from_bytes(hashlib.sha256(f"margsynth-surrogate:{name}".encode()).digest()[:8], "little")
    return np.random.default_rng(seed)


def _conditional(rng: np.random.Generator, n_parent: int, size: int, ordinal: bool) -> np.ndarray:
    """Rows: P(child | parent value); smooth along the value axis for ordinal attributes."""
    base = rng.dirichlet(np.full(size, 0.7))
    tables = rng.dirichlet(np.full(size, 0.5), size=n_parent) * 0.6 + base * 0.4
    if ordinal and size > 2:
        kernel = np.exp(-0.5 * (np.arange(-3, 4) / 1.5) ** 2)
        tables = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="same"), 1, tables)
    return tables / tables.sum(axis=1, keepdims=True)


def surrogate_records(name: str, domain: Domain, n: int) -> Dataset:
    """``n`` records over ``domain`` from a random tree-structured model seeded by ``name``."""
    rng = surrogate_rng(name)
    d = len(domain)
    codes = np.zeros((n, d), dtype=np.int64)
    for j, attr in enumerate(domain.attributes):
        if j == 0:
            p = _conditional(rng, 1, attr.size, attr.ordinal)[0]
            codes[:, 0] = rng.choice(attr.size, size=n, p=p)
            continue
        parent = int(rng.integers(0, j))
        pvals = codes[:, parent]
        table = _conditional(rng, domain.attributes[parent].size, attr.size, attr.ordinal)
        # inverse-CDF sampling, vectorised over records
        cdf = np.cumsum(table, axis=1)
        u = rng.random(n)
        col = (u[:, None] > cdf[pvals]).sum(axis=1) if attr.size <= 64 else _searchsorted_rows(cdf, pvals, u)
        codes[:, j] = np.minimum(col, attr.size - 1)
    return Dataset._trusted(codes.astype(np.uint16 if max(domain.shape) > 255 else np.uint8), domain)


def _searchsorted_rows(cdf: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = np.empty(rows.shape[0], dtype=np.int64)
    for r in np.unique(rows):
        m = rows == r
        out[m] = np.searchsorted(cdf[r], u[m], side="right")
    return out


def surrogate_baltimore(
    n_neighborhoods: int = 278, n_months: int = 12, n_types: int = 174, total: int = 1_455_608
) -> tuple[np.ndarray, Domain]:
    """A surrogate ground-truth count table (neighborhood x month x incident type)."""
    rng = surrogate_rng("baltimore911")
    nb = rng.lognormal(0.0, 0.9, n_neighborhoods)
    month = 1.0 + 0.15 * np.sin(2 * np.pi * (np.arange(n_months) - 3) / 12)
    types = 1.0 / np.arange(1, n_types + 1) ** 1.3
    rng.shuffle(types)
    inter = rng.lognormal(0.0, 0.6, (n_neighborhoods, 1, n_types))
    rate = nb[:, None, None] * month[None, :, None] * types[None, None, :] * inter
    rate *= total / rate.sum()
    counts = rng.poisson(rate).astype(np.int64)
    domain = Domain(
        (
            Attribute("neighborhood", n_neighborhoods, labels=tuple(f"Neighborhood {i:03d}" for i in range(n_neighborhoods))),
            Attribute("month", n_months, ordinal=True, labels=tuple(str(m + 1) for m in range(n_months))),
            Attribute("incident_type", n_types, labels=tuple(f"Type {i:03d}" for i in range(n_types))),
        )
    )
    return counts, domain


def surrogate_baltimore_synthetic(name: str, truth: np.ndarray) -> tuple[np.ndarray, float | None]:
    """A surrogate version of one scored file, made by the documented process:
    ``lap_epsE`` = Laplace(20/E) noise, clipped at 0 and rounded; ``F_sampling``
    = incidents subsampled with probability F and scaled back up; the two
    challenge examples = Laplace noise at ε 4 (mediocre) and 0.5 (very poor)."""
    rng = surrogate_rng(f"baltimore911/{name}")
    if name.startswith("lap_eps"):
        eps = float(name[len("lap_eps"):])
    elif name.endswith("_sampling"):
        frac = float(name.split("_")[0])
        return np.round(rng.binomial(truth, frac) / frac).astype(np.int64), None
    elif "mediocre" in name:
        eps = 4.0
    elif "very-poor" in name:
        eps = 0.5
    else:
        raise ValueError(f"no surrogate recipe for Baltimore file {name!r}")
    noisy = truth + rng.laplace(0.0, 20.0 / eps, truth.shape)
    return np.round(np.clip(noisy, 0, None)).astype(np.int64), eps
