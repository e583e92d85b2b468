"""The norm methods that answer by the linear argmax alone, or hand it on (both signs).

:data:`LINEAR_ONLY` (both signs): where ``a @ M @ a`` is at most 0 on every action (the bounds of
:func:`~.lifting.quadratic_form_bounds`) the square root term vanishes and the index is ``mu @ a``.

:data:`LINEAR_BOUND` (sign -1): the linear argmax ``lin``; no action has ``mu @ a`` above ``top`` (its value plus
the tolerance), and the index is at most ``mu @ a``, so ``top`` bounds every index. When ``lin``'s index is proven
within ``top`` (always at ``f = 0``) it is the answer; otherwise ``lin`` and ``top`` go to the methods after it
(:attr:`~.method.NormContext.linear`: the first incumbent, the window of the secants and tangents).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(3, 1), "highs")
>>> oracle.argmax_norm(np.array([0.1, 0.3, 0.2]), np.zeros((3, 3)), 1.0, sign=-1).astype(int).tolist()
[0, 1, 0]
>>> oracle.last_norm_stats.method
'linear'
"""

from __future__ import annotations

import numpy as np

from ..core.base import tolerance
from .method import Answer, LinearStart, NormContext

__all__ = ["LINEAR_BOUND", "LINEAR_ONLY", "LinearBound", "LinearOnly"]


class LinearOnly:
    """Both signs where the norm term vanishes on every action: the linear argmax is the answer."""

    name = "linear"

    def applies(self, context: NormContext) -> bool:
        return context.l_hi <= 0.0

    def run(self, context: NormContext) -> Answer:
        action = context.linear_argmax()
        if action is None:
            return None, -np.inf
        return action, context.query.value(action)


class LinearBound:
    """Sign -1's linear argmax: the answer when it is proven within the bound ``top``, else handed on.

    Its statistics name is the secant method's (the name its queries have always been recorded under).
    """

    name = "secants-quadratic-form"

    def applies(self, context: NormContext) -> bool:
        return True

    def run(self, context: NormContext) -> Answer | None:
        lin = context.linear_argmax()
        if lin is None:
            return None, -np.inf
        top = float(context.query.mu @ lin)
        top += tolerance(top)  # no action has mu @ a above this (HiGHS's gap is 1e-11)
        if context.settled(top, context.query.value(lin)):  # includes f = 0
            return lin, top
        context.linear = LinearStart(lin, top)
        return None


LINEAR_ONLY = LinearOnly()
LINEAR_BOUND = LinearBound()
