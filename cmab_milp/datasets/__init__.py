"""Readers of public logged-feedback datasets, each returning ``(space, log)``.

* :func:`open_bandit`: the Open Bandit Dataset (ZOZOTOWN fashion recommendations).

Reached as ``cm.datasets`` (imported on first use).

>>> import cmab_milp as cm
>>> callable(cm.datasets.open_bandit)
True
"""

import sys

from .._lazy import lazy_names

_LAZY = {"open_bandit": ".open_bandit"}

__getattr__, __dir__ = lazy_names(globals(), __name__, _LAZY)

#: This package itself, so that ``cmab_milp``'s table of lazy names can serve ``cm.datasets``.
datasets = sys.modules[__name__]
