"""Environments: true reward distributions with exact expected rewards (contract section 3)."""

from .. import catalogue
from .._lazy import lazy_names

_LAZY = {
    "Environment": ".base",
    "FeedbackStats": ".base",
    # the environment kinds: the catalogue's lines (cmab_milp.catalogue.BUILT_IN), the one place they are named
    **{name: path.partition(":")[0] for name, path in catalogue.table("environment").items()},
    "paper_covariance": ".correlated",
}


__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)
