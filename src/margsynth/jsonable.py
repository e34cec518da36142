"""Run descriptions as JSON: numpy values, tuples and sets made JSON values, and non-finite
floats (which strict JSON has no word for) made ``null``. The one encoding of a run's
sidecar, a saved model's description and the command line's ``--json`` output."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

__all__ = ["finite_json", "json_default", "plain_json"]


def json_default(o: Any) -> Any:
    """``json.dumps``'s ``default`` for run descriptions: numpy scalars and arrays as numbers and
    lists, sets as lists, anything else by its ``repr``."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return repr(o)


def plain_json(obj: Any) -> Any:
    """``obj`` as JSON values (dicts, lists, strings, numbers, booleans, ``None``), converted
    by :func:`json_default`; non-finite floats stay (see :func:`finite_json`)."""
    return json.loads(json.dumps(obj, default=json_default))


def finite_json(obj: Any, undefined: list | None = None, where: str = "") -> Any:
    """JSON values ``obj`` with every non-finite float as ``None``; each one's place and value
    is appended to ``undefined`` when given (so that a caller can say which)."""
    undefined = [] if undefined is None else undefined
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        undefined.append((where, obj))
        return None
    if isinstance(obj, dict):
        return {k: finite_json(v, undefined, f"{where}.{k}" if where else str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v, undefined, f"{where}[{i}]") for i, v in enumerate(obj)]
    return obj
