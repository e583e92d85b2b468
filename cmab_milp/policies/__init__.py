"""Policies: the paper's nine algorithms (contract section 4) and the baselines CTS, ESCB, Epoch-ESCB, AESCB."""

from .. import catalogue
from .._lazy import lazy_names

_LAZY = {
    "Policy": ".base",
    # the policies themselves: the catalogue's lines (cmab_milp.catalogue.BUILT_IN), the one place they are named
    **{name: path.partition(":")[0] for name, path in catalogue.table("policy").items()},
    "load_policy": ".persistence",
    "save_policy": ".persistence",
}


__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)
