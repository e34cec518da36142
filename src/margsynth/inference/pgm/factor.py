"""Log-space factors over named attributes.

A :class:`Factor` is a table ``values`` over a tuple of attribute names
``attrs`` (axis ``k`` of ``values`` is attribute ``attrs[k]``). In this
package factors hold *log*-potentials: the product of two factors is the sum
of their values and marginalising an attribute out is a log-sum-exp over its
axis (Koller & Friedman 2009, §9.2-9.3; the sum-product algebra behind
Private-PGM's marginal inference, McKenna, Sheldon & Miklau, ICML 2019, §3).

All axis bookkeeping (transposes to a target order, size-1 axes for
broadcasting, sums with reordering) goes through one function, :func:`align`,
built on ``einsum`` subscripts (its sibling :func:`contract` does sum-products
of several tables the same way); nothing else in the package permutes axes by
hand. Arrays are numpy by default; torch tensors are accepted too (the same
code runs on them through the small backend shim :func:`backend`), which is
useful for large models on a GPU.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from types import SimpleNamespace

import numpy as np

__all__ = ["Factor", "align", "backend", "contract", "logsumexp"]

_LETTERS = string.ascii_letters


def _is_torch(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch")


def backend(x) -> SimpleNamespace:
    """The array namespace for ``x`` (numpy, or torch for torch tensors).

    Exposes ``einsum, exp, log, amax, sum, where, isfinite, zeros_like,
    asarray`` with numpy-style keyword ``axis``/``keepdims``.
    """
    if _is_torch(x):  # imported lazily: torch is optional
        import torch

        def amax(a, axis=None, keepdims=False):
            if axis is None:
                return torch.amax(a) if not keepdims else torch.amax(a).reshape((1,) * a.ndim)
            return torch.amax(a, dim=axis, keepdim=keepdims)

        def tsum(a, axis=None, keepdims=False):
            if axis is None:
                return torch.sum(a) if not keepdims else torch.sum(a).reshape((1,) * a.ndim)
            return torch.sum(a, dim=axis, keepdim=keepdims)

        return SimpleNamespace(
            name="torch",
            einsum=torch.einsum,
            exp=torch.exp,
            log=torch.log,
            amax=amax,
            sum=tsum,
            where=torch.where,
            isfinite=torch.isfinite,
            zeros_like=torch.zeros_like,
            asarray=lambda v, like=x: torch.as_tensor(v, dtype=like.dtype, device=like.device),
        )
    return SimpleNamespace(
        name="numpy",
        einsum=lambda sub, *ops: np.einsum(sub, *ops, optimize=len(ops) > 2),
        exp=np.exp,
        log=np.log,
        amax=lambda a, axis=None, keepdims=False: np.amax(a, axis=axis, keepdims=keepdims),
        sum=lambda a, axis=None, keepdims=False: np.sum(a, axis=axis, keepdims=keepdims),
        where=np.where,
        isfinite=np.isfinite,
        zeros_like=np.zeros_like,
        asarray=lambda v, like=None: np.asarray(v, dtype=np.float64),
    )


def align(values, src: Sequence[str], dst: Sequence[str], *, reduce: bool = False):
    """THE axis-alignment primitive of the package.

    ``values`` has one axis per name in ``src``. Returns an array whose axes
    follow ``dst``:

    * ``reduce=False`` (broadcast): every name of ``src`` must be in ``dst``;
      the result is ``values`` transposed into ``dst`` order with a size-1 axis
      for each name of ``dst`` missing from ``src`` — ready to broadcast
      against a full ``dst`` table.
    * ``reduce=True`` (marginalise): every name of ``dst`` must be in ``src``;
      the axes of ``src`` not in ``dst`` are *summed* and the rest transposed
      into ``dst`` order (one einsum; a linear-space marginal).

    >>> a = np.arange(6.0).reshape(2, 3)
    >>> align(a, ("x", "y"), ("y", "z", "x")).shape
    (3, 1, 2)
    >>> align(a, ("x", "y"), ("y",), reduce=True).tolist()
    [3.0, 5.0, 7.0]
    """
    src, dst = tuple(src), tuple(dst)
    if len(set(src) | set(dst)) > len(_LETTERS):
        raise ValueError(f"too many attributes to align ({len(set(src) | set(dst))} > {len(_LETTERS)})")
    letter = {a: _LETTERS[i] for i, a in enumerate(dict.fromkeys(src + dst))}
    xp = backend(values)
    if reduce:
        missing = [a for a in dst if a not in src]
        if missing:
            raise ValueError(f"cannot marginalise {list(src)} onto {list(dst)}: {missing} not present")
        if src == dst:
            return values
        return xp.einsum("".join(letter[a] for a in src) + "->" + "".join(letter[a] for a in dst), values)
    missing = [a for a in src if a not in dst]
    if missing:
        raise ValueError(f"cannot broadcast {list(src)} into {list(dst)}: {missing} not present")
    order = tuple(a for a in dst if a in src)
    if order != src:
        values = xp.einsum("".join(letter[a] for a in src) + "->" + "".join(letter[a] for a in order), values)
    shape = tuple(values.shape[order.index(a)] if a in src else 1 for a in dst)
    return values.reshape(shape)


def contract(operands: Sequence[tuple[Sequence[str], object]], out: Sequence[str]):
    """Sum-product of probability-space tables: ``sum over all other attributes of
    the product of the operands``, with axes ``out`` (variable elimination as one
    ``einsum``; numpy picks the elimination order with its greedy path optimiser).

    ``operands`` are ``(attrs, array)`` pairs. Like :func:`align`, this builds the
    einsum subscripts from attribute names — the only other place that does.

    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> contract([(("x", "y"), a), (("y",), np.array([1.0, 0.0]))], ("x",)).tolist()
    [1.0, 3.0]
    """
    out = tuple(out)
    names = dict.fromkeys(a for attrs, _ in operands for a in attrs)
    missing = [a for a in out if a not in names]
    if missing:
        raise ValueError(f"contract: output attribute(s) {missing} in no operand")
    if len(names) > len(_LETTERS):
        raise ValueError(f"contract: {len(names)} attributes exceed einsum's {len(_LETTERS)} letters")
    letter = {a: _LETTERS[i] for i, a in enumerate(names)}
    subs = ",".join("".join(letter[a] for a in attrs) for attrs, _ in operands)
    xp = backend(operands[0][1])
    arrays = [arr for _, arr in operands]
    sub = subs + "->" + "".join(letter[a] for a in out)
    if xp.name == "numpy":
        # numpy's greedy path search costs more than the contraction on small tables: the
        # path depends only on the subscripts and shapes, so it is searched once per pair
        key = (sub, tuple(a.shape for a in arrays))
        path = _PATHS.get(key)
        if path is None:
            # numpy's default bound on the intermediates is the largest operand: where no
            # pairwise step stays under it, the path is one contraction of all operands at
            # once, a nested loop over every index (on AIM's ACS models, 348 million
            # iterations for a 3-way marginal that pairwise steps get in 2 million; 1.9 s
            # against 0.02 s, docs/notes/aim.md)
            limit = max(_MAX_INTERMEDIATE, *(a.size for a in arrays))
            path = np.einsum_path(sub, *arrays, optimize=("greedy", limit))[0]
            if len(_PATHS) >= _MAX_PATHS:
                _PATHS.clear()
            _PATHS[key] = path
        return np.einsum(sub, *arrays, optimize=path)
    return xp.einsum(sub, *arrays)


#: einsum contraction paths of :func:`contract`, by (subscripts, shapes)
_PATHS: dict[tuple, list] = {}
_MAX_PATHS = 8192
#: cells an intermediate table of :func:`contract`'s path may have (64 MiB of float64), or
#: the largest operand's if that is more
_MAX_INTERMEDIATE = 2**23


def logsumexp(values, axis=None, keepdims: bool = False):
    """Numerically stable ``log(sum(exp(values)))`` over ``axis`` (numpy or torch).

    Slices that are entirely ``-inf`` give ``-inf`` (not NaN).
    """
    xp = backend(values)
    if axis is not None and not isinstance(axis, tuple):
        axis = (axis,) if not isinstance(axis, list) else tuple(axis)
    if axis == ():
        return values
    m = xp.amax(values, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    if xp.name == "numpy":
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(values - m), axis=axis, keepdims=True)) + m
    else:
        out = xp.log(xp.sum(xp.exp(values - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        if axis is None:
            out = out.reshape(())
        else:
            keep = tuple(s for i, s in enumerate(out.shape) if i not in {a % values.ndim for a in axis})
            out = out.reshape(keep)
    return out


class Factor:
    """A log-potential table over named attributes.

    Parameters
    ----------
    attrs:
        Attribute names, one per axis of ``values`` (no repeats).
    values:
        numpy array (or torch tensor) of log-values; ``values.ndim == len(attrs)``.

    Notes
    -----
    Products (``f + g`` in log space, also spelled ``f * g``) align both
    operands onto the union of their attributes (order: ``f``'s attributes,
    then ``g``'s new ones); :meth:`logsumexp` sums attributes out;
    :meth:`transpose` reorders. Every alignment goes through :func:`align`.

    >>> f = Factor(("a",), np.log([1.0, 3.0]))
    >>> g = Factor(("b", "a"), np.zeros((2, 2)))
    >>> h = (f * g).logsumexp(["b"])
    >>> h.attrs, np.exp(h.values).round(6).tolist()
    (('a',), [2.0, 6.0])
    """

    __slots__ = ("attrs", "values")

    def __init__(self, attrs: Iterable[str], values) -> None:
        attrs = tuple(attrs)
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"factor attributes repeat: {list(attrs)}")
        if values.ndim != len(attrs):
            raise ValueError(
                f"factor over {list(attrs)} needs {len(attrs)} axes, values have shape {tuple(values.shape)}"
            )
        self.attrs = attrs
        self.values = values

    # -- constructors ----------------------------------------------------------
    @classmethod
    def zeros(cls, attrs: Iterable[str], shape: Sequence[int]) -> Factor:
        """The uniform (all log-values 0) factor."""
        return cls(tuple(attrs), np.zeros(tuple(shape)))

    @classmethod
    def from_probabilities(cls, attrs: Iterable[str], probs) -> Factor:
        """``log(probs)`` with ``log 0 = -inf`` (no warning)."""
        with np.errstate(divide="ignore"):
            return cls(tuple(attrs), backend(probs).log(probs))

    # -- algebra ---------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def expand(self, attrs: Sequence[str]) -> object:
        """``values`` aligned (transposed, size-1 axes added) to broadcast over ``attrs``."""
        return align(self.values, self.attrs, attrs)

    def transpose(self, attrs: Sequence[str]) -> Factor:
        attrs = tuple(attrs)
        if set(attrs) != set(self.attrs) or len(attrs) != len(self.attrs):
            raise ValueError(f"transpose to {list(attrs)} from {list(self.attrs)}: not a permutation")
        return Factor(attrs, align(self.values, self.attrs, attrs))

    def _combine(self, other: Factor | float, sign: float) -> Factor:
        if not isinstance(other, Factor):
            return Factor(self.attrs, self.values + sign * other)
        union = self.attrs + tuple(a for a in other.attrs if a not in self.attrs)
        a = self.expand(union)
        b = other.expand(union)
        return Factor(union, a + b if sign > 0 else a - b)

    def __add__(self, other: Factor | float) -> Factor:  # log-space product
        return self._combine(other, 1.0)

    __mul__ = __add__
    __radd__ = __add__

    def __sub__(self, other: Factor | float) -> Factor:  # log-space quotient
        return self._combine(other, -1.0)

    __truediv__ = __sub__

    def logsumexp(self, out: Iterable[str]) -> Factor:
        """Marginalise (sum out, in probability space) the attributes ``out``."""
        out = set(out)
        unknown = out - set(self.attrs)
        if unknown:
            raise ValueError(f"cannot sum out {sorted(unknown)}: factor is over {list(self.attrs)}")
        axes = tuple(i for i, a in enumerate(self.attrs) if a in out)
        keep = tuple(a for a in self.attrs if a not in out)
        return Factor(keep, logsumexp(self.values, axis=axes))

    def project(self, attrs: Sequence[str]) -> Factor:
        """Marginal over ``attrs`` (in that order), still in log space."""
        attrs = tuple(attrs)
        f = self.logsumexp([a for a in self.attrs if a not in attrs])
        return f.transpose(attrs)

    def normalize(self) -> Factor:
        """Shift so that ``exp(values)`` sums to one."""
        return Factor(self.attrs, self.values - logsumexp(self.values))

    def exp(self):
        """``exp(values)`` (a probability-space array)."""
        return backend(self.values).exp(self.values)

    def probabilities(self):
        """Normalised ``exp(values)``."""
        return self.normalize().exp()

    def __repr__(self) -> str:
        return f"Factor({list(self.attrs)}, shape={self.shape})"
