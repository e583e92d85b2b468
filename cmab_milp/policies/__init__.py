"""Policies: the paper's nine algorithms (contract section 4)."""

import importlib

_LAZY = {
    "Policy": "base",
    "CUCB": "linear",
    "AROQ": "linear",
    "SROQ": "linear",
    "OLSUCBC": "covariance",
    "AROQCov": "covariance",
    "SROQCov": "covariance",
    "SDCB": "general",
    "AROQGR": "general",
    "SROQGR": "general",
    "load_policy": "persistence",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cmab_milp.policies' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
