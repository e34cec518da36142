"""metrics."""

import importlib

# -- MGD / AEMC, exported lazily: they load OR-Tools and CVXPY on first use --
_LAZY = {
    "mgd": "margsynth.metrics.mgd", "mgd_report": "margsynth.metrics.mgd", "MGDResult": "margsynth.metrics.mgd",
    "MarginalSpec": "margsynth.metrics.aemc", "AttributeSpec": "margsynth.metrics.aemc", "Distance": "margsynth.metrics.aemc",
    "AEMCProblem": "margsynth.metrics.aemc", "aemc": "margsynth.metrics.aemc",
    "marginal_l1": "margsynth.metrics.marginal", "marginal_tv": "margsynth.metrics.marginal",
    "tv_distance": "margsynth.metrics.marginal",
    "inverse_pie": "margsynth.metrics.baltimore", "range_query_error": "margsynth.metrics.baltimore",
    "rule_violations": "margsynth.metrics.rules",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'margsynth.metrics' has no attribute {name!r}")
