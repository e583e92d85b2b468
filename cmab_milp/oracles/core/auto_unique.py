"""Answers an enumeration gives only where they cannot differ from another exact backend's.

``auto`` enumerates some spaces only after its queries have paid for counting them (``replan_share``),
so a fresh ``auto`` oracle would send the same query to another backend. Exact backends agree on the
value of an answer, not on which of several (near-)optimal actions they return; so that an answer
depends on the query and the space only (the oracle kit's ``determinism`` case), such an enumeration
answers a query only when its best action beats every other allowed action by more than twice the
contract's tolerance ``1e-9 (1 + |optimum|)``: every exact backend must then return that action. Any
other query (a tie, a near-tie, no allowed action, non-finite values) is declined, and the backend the
fresh plan would use answers it. The values are elementwise products and sums (no BLAS product).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.queries import LinearQuery, make_restrictions
>>> space = cm.Cardinality(3, 1)
>>> actions = space.enumerate()
>>> def query(w):
...     return LinearQuery(np.array(w), make_restrictions(3, (), (), (), space))
>>> unique_linear(actions, actions.astype(float), query([0.1, 0.7, 0.3])).astype(int).tolist()
[0, 1, 0]
>>> unique_linear(actions, actions.astype(float), query([0.7, 0.7, 0.3]))
Traceback (most recent call last):
...
cmab_milp.oracles.core.base.UnsupportedQuery: a (near-)tie: left to the backend a fresh plan asks
"""

from __future__ import annotations

import numpy as np

from .base import UnsupportedQuery
from .queries import LinearQuery, NormQuery

__all__ = ["UNIQUE_MARGIN", "unique_linear", "unique_norm"]

#: An answer is given when the best value exceeds every other by more than this times ``1 + |best|``
#: (twice the contract's tolerance: no exact backend may then return another action).
UNIQUE_MARGIN = 2e-9


def _unique_best(actions: np.ndarray, values: np.ndarray, query: LinearQuery | NormQuery) -> np.ndarray:
    mask = query.restrictions.mask(actions)
    if mask is not None:
        values = np.where(mask, values, -np.inf)
    if len(values) == 0:
        raise UnsupportedQuery("no action enumerated: left to the backend a fresh plan asks")
    best = int(np.argmax(values))
    top = float(values[best])
    if not np.isfinite(top):
        raise UnsupportedQuery("no allowed action or a non-finite value: left to the backend a fresh plan asks")
    others = values.copy()
    others[best] = -np.inf
    if len(others) > 1 and float(others.max()) >= top - UNIQUE_MARGIN * (1.0 + abs(top)):
        raise UnsupportedQuery("a (near-)tie: left to the backend a fresh plan asks")
    return actions[best].copy()


def unique_linear(actions: np.ndarray, dense: np.ndarray, query: LinearQuery) -> np.ndarray:
    """The action (row of ``actions``; ``dense``: the same as floats) maximising ``weights @ a`` if it wins by
    the margin, else ``UnsupportedQuery``."""
    values = (dense * query.weights).sum(axis=1)
    return _unique_best(actions, values, query)


def unique_norm(actions: np.ndarray, dense: np.ndarray, quad: np.ndarray, query: NormQuery) -> np.ndarray:
    """The same for ``mu @ a + sign f sqrt(max(a M a, 0))``, given every action's ``a M a`` as ``quad``."""
    values = (dense * query.mu).sum(axis=1) + query.sign * query.f * np.sqrt(np.maximum(quad, 0.0))
    return _unique_best(actions, values, query)
