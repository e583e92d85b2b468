"""Policies: the paper's nine algorithms (contract section 4) and the baselines CTS, ESCB, Epoch-ESCB, AESCB."""

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
    "CTS": ".thompson",
    "ESCB": ".escb",
    "AROQESCB": ".escb",
    "EpochESCB": ".escb",
    "AESCB": ".aescb",
    "load_policy": ".persistence",
    "save_policy": ".persistence",
}


__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)
