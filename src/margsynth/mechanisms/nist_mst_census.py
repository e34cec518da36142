"""The census transform of NIST-MST: Algorithm 3 (forward) and Algorithms 9–10
(reverse) of McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and
general approach to differentially private synthetic data", Journal of Privacy and
Confidentiality 11(3), 2021, arXiv:2108.04978, §5 Steps 3 and 8.

The 2018 challenge's data were IPUMS 1940 census records; this transform is specific
to their VALUEH and INCWAGE columns and plugs into :class:`~.nist_mst.NISTMST` as one
of its ``transforms`` (the :class:`~.nist_mst.Transform` protocol: record-local
``forward``, exact ``reverse`` on its image). It lives apart from the generic mechanism
because nothing else in the mechanism depends on the census schema.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..domain import Attribute, Domain

__all__ = ["DIGIT_MODULI", "IncwageValuehTransform", "digits_class"]


#: Algorithm 10's moduli: INCWAGE_B = the first ``i`` with ``digits ≡ 0 (mod m_i)``.
DIGIT_MODULI = (100, 20, 50, 25, 10, 5, 2, 1)


def digits_class(digits: np.ndarray) -> np.ndarray:
    """INCWAGE_B of Algorithm 3: for the last two digits ``l`` (0..99), the first index
    ``k`` of ``m = [100, 20, 50, 25, 10, 5, 2, 1]`` with ``l ≡ 0 (mod m_k)`` (Algorithm 10)."""
    d = np.asarray(digits, dtype=np.int64)
    out = np.full(d.shape, len(DIGIT_MODULI) - 1, dtype=np.int64)
    for k in range(len(DIGIT_MODULI) - 1, -1, -1):
        out[d % DIGIT_MODULI[k] == 0] = k
    return out


_CLASS_MEMBERS = [np.flatnonzero(digits_class(np.arange(100)) == k) for k in range(len(DIGIT_MODULI))]


@dataclass(frozen=True)
class IncwageValuehTransform:
    """Algorithm 3 (forward) and Algorithms 9–10 (reverse) of the NIST-MST paper.

    On raw codes (``VALUEH``, ``INCWAGE`` ∈ 0..9,999,999; 9,999,998 / 9,999,999 special):

    - ``VALUEH ↦ 5001`` (9,999,998), ``5002`` (9,999,999), else ``min(VALUEH, 25000) // 5``
      (5,003 values; 99.7 % of the provisional values were multiples of 5 ≤ 25,000);
    - ``INCWAGE ↦ (INCWAGE_A, INCWAGE_B)``: ``A = 51`` for 9,999,998, else
      ``min(INCWAGE, 5000) // 100`` (52 values); ``B`` = :func:`digits_class` of the last
      two digits (8 values; 0 for the special code).

    Reverse (Algorithm 9): ``VALUEH = 5·v`` (``v ≤ 5000``) or the special codes;
    ``INCWAGE = 100·A + DIGITS`` (``A ≤ 50``) or 9,999,998, DIGITS drawn uniformly from
    the values of class ``B`` (Algorithm 10). Exact on the image of ``forward``:
    values that are multiples of 5 ≤ 25,000 (VALUEH) and multiples of 50 ≤ 5,000 or the
    special code (INCWAGE) come back unchanged; other values come back as a value of
    the same class (the information Algorithm 3 chose to discard).

    The paper's text renders the reverse's conditions as ``INCWAGE_A ≤ 500`` /
    ``= 5100``; with ``A``'s 52 values (Table 4) they can only be ``≤ 50`` / ``= 51``.
    """

    valueh: str = "VALUEH"
    incwage: str = "INCWAGE"
    special_1: int = 9_999_998
    special_2: int = 9_999_999

    @property
    def a_name(self) -> str:
        return f"{self.incwage}_A"

    @property
    def b_name(self) -> str:
        return f"{self.incwage}_B"

    def transform_domain(self, domain: Domain) -> Domain:
        for a in (self.valueh, self.incwage):
            if a not in domain:
                raise ValueError(f"transform needs attribute {a!r}; domain has {list(domain.names)}")
            need = (self.special_2 if a == self.valueh else self.special_1) + 1
            if domain[a].size < need:
                raise ValueError(f"attribute {a!r} needs the raw domain of >= {need:,} values, has {domain[a].size:,}")
        attrs = []
        for attr in domain.attributes:
            if attr.name == self.valueh:
                attrs.append(Attribute(self.valueh, 5003))
            elif attr.name == self.incwage:
                attrs.append(Attribute(self.a_name, 52))
                attrs.append(Attribute(self.b_name, len(DIGIT_MODULI)))
            else:
                attrs.append(attr)
        return Domain(tuple(attrs))

    def forward(self, data: Dataset) -> Dataset:
        new = self.transform_domain(data.domain)
        cols = {}
        for a in data.domain.names:
            x = data.column(a).astype(np.int64)
            if a == self.valueh:
                v = np.minimum(x, 25_000) // 5
                v = np.where(x == self.special_1, 5001, np.where(x == self.special_2, 5002, v))
                cols[a] = v
            elif a == self.incwage:
                special = x == self.special_1
                capped = np.minimum(x, 5000)
                cols[self.a_name] = np.where(special, 51, capped // 100)
                cols[self.b_name] = np.where(special, 0, digits_class(capped % 100))
            else:
                cols[a] = x
        codes = np.stack([cols[a] for a in new.names], axis=1)
        return Dataset._trusted(codes, new, data.weights)

    def reverse(self, data: Dataset, rng: np.random.Generator, domain: Domain | None = None) -> Dataset:
        """Algorithms 9-10 (see the class docstring); ``domain``: the original domain
        (default: the two raw attributes with 10,000,000 values, others as they are)."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError("reverse needs an explicit numpy.random.Generator as rng")
        names = []
        cols = []
        for a in data.domain.names:
            x = data.column(a).astype(np.int64)
            if a == self.valueh:
                names.append(a)
                cols.append(np.where(x == 5001, self.special_1, np.where(x == 5002, self.special_2, 5 * x)))
            elif a == self.a_name:
                b = data.column(self.b_name).astype(np.int64)
                digits = np.empty(x.size, dtype=np.int64)
                for k, members in enumerate(_CLASS_MEMBERS):
                    sel = np.flatnonzero(b == k)
                    digits[sel] = rng.choice(members, size=sel.size)
                names.append(self.incwage)
                cols.append(np.where(x == 51, self.special_1, 100 * x + digits))
            elif a == self.b_name:
                continue
            else:
                names.append(a)
                cols.append(x)
        if domain is None:
            domain = Domain(
                tuple(Attribute(n, 10_000_000) if n in (self.valueh, self.incwage) else data.domain[n] for n in names)
            )
        codes = np.stack(cols, axis=1)
        return Dataset._trusted(codes, domain.project(names) if domain.names != tuple(names) else domain, data.weights)
