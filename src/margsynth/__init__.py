"""margsynth: reproducible marginal-based differentially private synthetic data.

Layers (each imports only those above it): ``domain``/``dataset`` (the
discrete data model), ``data`` (registry, fetching, loaders), ``privacy``
(accounting, noise primitives, budget ledger), ``metrics``, ``inference``,
``mechanisms``, ``experiments`` (one module per notebook), ``plotting`` and
``cli``. Importing the package has no side effects.

Seeded DP noise exists here to reproduce papers; it is not meant for
production releases.
"""

from .dataset import Dataset
from .domain import Attribute, Domain, Hierarchy

__version__ = "0.1.0"
__all__ = ["Attribute", "Dataset", "Domain", "Hierarchy", "__version__"]
