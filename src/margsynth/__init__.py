"""margsynth: reproducible marginal-based differentially private synthetic data.

Layers, top to bottom; a module imports only from the layers below its own (or
from its own package). The ``layers`` contract of import-linter in
pyproject.toml states the same order and ``lint-imports`` (``make lint``, CI)
checks it:

1. ``__main__``, then ``cli`` (parsing, exit statuses), then ``commands`` (the
   parsers in ``commands.parsers``, one implementation module per command).
   ``cli`` imports a command's implementation only when that command runs, so
   ``margsynth --help`` starts without numpy.
2. ``runner`` | ``plotting`` (notebook execution; figure style), independent.
3. ``experiments`` (one module per notebook).
4. ``model_file`` (a run's fitted model in one file, with the raw table's
   encoder when it has one).
5. ``tabular`` (raw tables: schema, private discovery, encoder,
   ``synthesize``, scoring a raw table): it runs any registered mechanism.
6. ``mechanisms`` (SELECT / MEASURE / GENERATE, the registry).
7. ``inference`` (Private-PGM, GUM, PrivPGD, consistency): the generators,
   which consume the noisy marginals of the privacy layer.
8. ``metrics`` (MGD/AEMC, NIST 2018, the evaluation suites).
9. ``privacy`` (accounting, noise primitives, budget ledger, Algorithm 1's
   measurement log).
10. ``data`` (registry, fetching, loaders).
11. ``rules`` (rules the data obey, as forbidden cells over a domain's attributes:
    mechanisms, inference and metrics take them).
12. ``dataset`` (records over a domain).
13. ``domain`` | ``paths`` | ``timing`` | ``jsonable``, independent of one another
    and of everything else.

Where the code showed a better order than the first sketch: ``dataset`` sits
above ``domain`` (a dataset is records over a domain); ``cli`` sits above
``commands`` (it builds its parser from ``commands.parsers``); scoring a raw
table lives in ``tabular``, not ``metrics`` (it needs the encoder); the
conversion of noisy marginals to Private-PGM measurements lives in
``inference``, their consumer, not ``privacy``.

Importing the package has no side effects and loads nothing heavy: the names
below are imported on first use.

Seeded DP noise exists here to reproduce papers; it is not meant for
production releases.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["Attribute", "Dataset", "Domain", "Hierarchy", "__version__"]

# name -> module defining it (imported on first access, PEP 562)
_LAZY = {"Attribute": "domain", "Dataset": "dataset", "Domain": "domain", "Hierarchy": "domain"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
