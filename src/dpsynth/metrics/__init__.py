"""metrics."""

# -- MGD / AEMC (issue 3), exported lazily: they load OR-Tools and CVXPY on first use --
_LAZY = {
    "mgd": "dpsynth.metrics.mgd", "mgd_report": "dpsynth.metrics.mgd", "MGDResult": "dpsynth.metrics.mgd",
    "MarginalSpec": "dpsynth.metrics.aemc", "AttributeSpec": "dpsynth.metrics.aemc", "Distance": "dpsynth.metrics.aemc",
    "AEMCProblem": "dpsynth.metrics.aemc", "aemc": "dpsynth.metrics.aemc",
    "marginal_l1": "dpsynth.metrics.marginal", "marginal_tv": "dpsynth.metrics.marginal",
    "inverse_pie": "dpsynth.metrics.baltimore", "range_query_error": "dpsynth.metrics.baltimore",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpsynth.metrics' has no attribute {name!r}")
