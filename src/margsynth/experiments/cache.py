"""On-disk cache for experiment results.

``@memoize(version=N)`` stores a function's return value (pickled) under
``results/cache/<module.function>/<key>.pkl`` where the key hashes the
function's name, its ``version`` (bump it when the computation changes), its
arguments, the package version and the data's checksums (see
:func:`data_state`). Re-running a notebook after a plotting change
then takes seconds.

Environment: ``MARGSYNTH_CACHE=off`` disables the cache; ``MARGSYNTH_CACHE=require``
(set by ``margsynth reproduce --figures-only``) refuses to compute on a miss;
``MARGSYNTH_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import pickle
from typing import Any

from .. import __version__
from ..data.fetch import is_available
from ..data.registry import dataset_info, dataset_names
from ..paths import atomic_path, cache_dir

__all__ = ["CacheMiss", "cache_key", "data_state", "memoize"]


class CacheMiss(RuntimeError):
    """Raised in ``MARGSYNTH_CACHE=require`` mode when a result is not cached."""


def data_state() -> dict[str, str]:
    """``{dataset: checksum | "surrogate"}`` as loaders would resolve it now: for
    a dataset whose files are present (locally or in the mirror) a hash of its
    files' pinned SHA-256s, which loaders verify before use; else ``"surrogate"``."""
    state = {}
    for n in dataset_names():
        if is_available(n):
            joined = "".join(e.sha256 for e in dataset_info(n).files)
            state[n] = hashlib.sha256(joined.encode()).hexdigest()[:16]
        else:
            state[n] = "surrogate"
    return state


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "tolist"):
        return _canonical(value.tolist())
    return repr(value)


def cache_key(qualname: str, version: int, arguments: dict[str, Any]) -> str:
    payload = {
        "function": qualname,
        "version": version,
        "package": __version__,
        "arguments": _canonical(arguments),
        "data": data_state(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def memoize(version: int = 1):
    """Cache the decorated function's result on disk, keyed by its bound arguments."""

    def decorate(func):
        sig = inspect.signature(func)
        qualname = f"{func.__module__}.{func.__qualname__}"

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            mode = os.environ.get("MARGSYNTH_CACHE", "on").lower()
            if mode == "off":
                return func(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            key = cache_key(qualname, version, dict(bound.arguments))
            path = cache_dir() / qualname / f"{key}.pkl"
            if path.is_file():
                with open(path, "rb") as fh:
                    return pickle.load(fh)
            if mode == "require":
                raise CacheMiss(f"{qualname}: no cached result for these arguments (figures-only mode); run it once fully")
            result = func(*args, **kwargs)
            with atomic_path(path, suffix=".pkl") as tmp, open(tmp, "wb") as fh:
                pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
            return result

        wrapper.uncached = func
        return wrapper

    return decorate
