"""Private-PGM: graphical-model estimation from noisy marginals, and synthetic data.

Written from the math of McKenna, Sheldon & Miklau (ICML 2019) and §4 of the
NIST-MST/MST paper (Eq. 4.1-4.2, Fact 1, Algorithms 7-8):

* :mod:`.factor` — log-space factors; the one axis-alignment primitive.
* :mod:`.junction_tree` — triangulation, maximal cliques, clique tree, size estimate.
* :mod:`.inference` — belief propagation and variable elimination.
* :mod:`.kernels` — the compiled (numba) belief propagation and objective of the hot loop.
* :mod:`.measurement` — noisy linear measurements of marginals.
* :mod:`.objective` — the loss of Eq. (4.2) compiled onto a junction tree.
* :mod:`.descent` — mirror descent on Eq. (4.2) (accelerated, plain, subgradient; Armijo steps).
* :mod:`.certificate` — the certified gap of a fit to the optimum of Eq. (4.2).
* :mod:`.estimation` — :func:`estimate`, the driver of the three above.
* :mod:`.exact` — the exact optimum of Eq. (4.2) by an interior-point QP (the certificate's
  reference, and ``estimate(..., method="interior_point")``).
* :mod:`.blas` — BLAS limited to one thread around a fit.
* :mod:`.model` — the fitted model: marginals and synthetic data.

Typical use (what MST/AIM do)::

    model = estimate(domain, measurements, iters=1000)
    counts = model.project(("sex", "income>50K"))
    synth = model.synthetic_data(rng=np.random.default_rng(0))
"""

from . import kernels
from .blas import single_threaded_blas
from .estimation import METHODS, estimate, estimation_summary, evaluate_loss
from .exact import ExactSolution, exact_optimum
from .factor import Factor
from .inference import BeliefPropagation, marginal, variable_elimination
from .junction_tree import (
    JunctionTree,
    ModelTooLargeError,
    build_junction_tree,
    check_junction_tree,
    junction_tree_size,
    splice_clique,
)
from .measurement import Measurement, compile_measurements, estimate_total, from_noisy_marginals
from .model import GraphicalModel, synthetic_column

__all__ = [
    "METHODS",
    "BeliefPropagation",
    "ExactSolution",
    "Factor",
    "GraphicalModel",
    "JunctionTree",
    "Measurement",
    "ModelTooLargeError",
    "build_junction_tree",
    "check_junction_tree",
    "compile_measurements",
    "estimate",
    "estimate_total",
    "estimation_summary",
    "evaluate_loss",
    "exact_optimum",
    "from_noisy_marginals",
    "junction_tree_size",
    "kernels",
    "splice_clique",
    "marginal",
    "single_threaded_blas",
    "synthetic_column",
    "variable_elimination",
]
