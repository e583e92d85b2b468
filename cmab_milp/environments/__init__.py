"""Environments: true reward distributions with exact expected rewards (contract section 3)."""

import importlib

_LAZY = {
    "Environment": "base",
    "FeedbackStats": "base",
    "UniformNoise": "basic",
    "BernoulliArms": "basic",
    "GaussianNoise": "basic",
    "DiscreteArms": "discrete",
    "BetaArms": "continuous",
    "CopulaNoise": "correlated",
    "PaperGaussianNoise": "correlated",
    "paper_covariance": "correlated",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cmab_milp.environments' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
