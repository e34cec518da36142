"""AEMC, the Approximate Earth Mover Cost of the MGD paper (Li, Dang, Wang, Li,
NSysS 2021), Eq. (1): problem definition, semantic distances (§4.3.1, Eq. 2),
solvers (LP §6.1, min-cost flow §6.2/Appendix A on the neighbour graph §6.3,
closed forms, exact decomposition with a dual certificate) and the fine-grained
report (§4.4).

>>> import numpy as np
>>> from margsynth.domain import Domain
>>> dom = Domain.from_sizes({"x": 3}, ordinal=["x"])
>>> spec = MarginalSpec.of("x", delta=0.0, x=1.0)
>>> prob = AEMCProblem.from_spec(spec, dom, np.array([4, 5, 1]), np.array([5, 4, 1]))
>>> round(solve(prob, "flow").cost, 12)   # one unit moved one step of 1/2
0.5
"""

try:  # pin the load order: OR-Tools before highspy (both bundle HiGHS symbols)
    from ortools.graph.python import min_cost_flow as _min_cost_flow  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from .decompose import solve_decomposed
from .distance import AxisMetric, axis_metric, bin_distance
from .fast import fast_path
from .flow import solve_flow
from .lp import solve_lp
from .problem import AEMCProblem
from .result import AEMCResult, Plan
from .solve import SOLVERS, solve
from .spec import AttributeSpec, Distance, MarginalSpec, load_specs, specs_to_json

__all__ = [
    "AEMCProblem", "AEMCResult", "AttributeSpec", "AxisMetric", "Distance", "MarginalSpec", "Plan", "SOLVERS",
    "aemc", "axis_metric", "bin_distance", "fast_path", "load_specs", "solve", "solve_decomposed", "solve_flow",
    "solve_lp",
    "specs_to_json",
]


def aemc(spec: MarginalSpec, domain, p_table, q_table, solver: str = "auto", **options) -> AEMCResult:
    """AEMC of one marginal spec between leaf-level tables ``p_table`` (synthetic)
    and ``q_table`` (truth) over ``spec.names``."""
    return solve(AEMCProblem.from_spec(spec, domain, p_table, q_table), solver, **options)
