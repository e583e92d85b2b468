"""Policies: the paper's nine algorithms (contract section 4)."""

from .._lazy import lazy_names

_LAZY = {
    "Policy": ".base",
    "CUCB": ".linear",
    "AROQ": ".linear",
    "SROQ": ".linear",
    "OLSUCBC": ".covariance",
    "AROQCov": ".covariance",
    "SROQCov": ".covariance",
    "SDCB": ".general",
    "AROQGR": ".general",
    "SROQGR": ".general",
    "load_policy": ".persistence",
}


__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)
