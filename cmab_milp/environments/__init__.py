"""Environments: true reward distributions with exact expected rewards (contract section 3)."""

from .._lazy import lazy_names

_LAZY = {
    "Environment": ".base",
    "FeedbackStats": ".base",
    "UniformNoise": ".basic",
    "BernoulliArms": ".basic",
    "BernoulliCosts": ".costs",
    "GaussianNoise": ".basic",
    "DiscreteArms": ".discrete",
    "BetaArms": ".continuous",
    "CopulaNoise": ".correlated",
    "PaperGaussianNoise": ".correlated",
    "paper_covariance": ".correlated",
}


__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)
