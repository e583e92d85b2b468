"""The ``auto`` backend: the fastest exact method for each query.

Linear queries, in order of preference:

1. a specialised combinatorial algorithm when one answers the query exactly
   (sorting, matroid greedy, DAG dynamic programme, assignment);
2. an LP solve on HiGHS when the formulation is integral (totally unimodular
   structures, DAG paths) and the query adds no ``forbid_pairs`` rows;
3. vectorised enumeration when the space has at most ``enumerate_cap`` actions;
4. the compiled HiGHS MILP.

Norm queries go to enumeration for spaces of at most ``norm_enumerate_cap``
actions and to the exact HiGHS norm solver otherwise. :attr:`AutoOracle.routes`
counts which method answered how many queries.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(6, 2), "auto")
>>> oracle.argmax(np.arange(6.0), forbid_pairs=[(4, 5)]).nonzero()[0].tolist()
[3, 5]
>>> sorted(oracle.routes)
['enumerate']
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..spaces.base import ActionSpace
from .base import LinearQuery, NormQuery, Oracle
from .combinatorial import CombinatorialOracle, supports
from .enumerate import EnumerateOracle
from .highs import HighsOracle

__all__ = ["AutoOracle"]


class AutoOracle(Oracle):
    """Dispatch each query to the cheapest exact backend (see module docstring).

    Parameters
    ----------
    enumerate_cap:
        Largest action count for which linear queries may be enumerated.
    norm_enumerate_cap:
        Largest action count for which norm queries are enumerated.
    """

    name = "auto"

    def __init__(self, space: ActionSpace, enumerate_cap: int = 20_000, norm_enumerate_cap: int = 60_000):
        super().__init__(space)
        self.enumerate_cap = int(enumerate_cap)
        self.norm_enumerate_cap = int(norm_enumerate_cap)
        self.combinatorial = CombinatorialOracle(space)
        self.highs = HighsOracle(space)
        self._enumerator: EnumerateOracle | None = None
        self._enumerable: bool | None = None
        self.routes: Counter[str] = Counter()

    def _enumeration(self, cap: int) -> EnumerateOracle | None:
        """The enumeration oracle if the space has at most ``cap`` actions."""
        if self._enumerator is not None:
            return self._enumerator if len(self._enumerator.actions) <= cap else None
        if self._enumerable is False:
            return None
        bound = self.space.count_upper_bound()
        limit = max(self.norm_enumerate_cap, self.enumerate_cap)
        if bound is not None and bound > limit:
            small = None
        else:
            try:
                small = EnumerateOracle(self.space, max_actions=limit)
            except ValueError:
                small = None
        self._enumerable = small is not None
        self._enumerator = small
        return small if small is not None and len(small.actions) <= cap else None

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        if supports(self.space, query):
            self.routes["combinatorial"] += 1
            return self.combinatorial._linear(query)
        if self.highs.lp_when_integral and not query.restrictions.forbid_pairs:
            self.routes["highs-lp"] += 1
            return self.highs._linear(query)
        small = self._enumeration(self.enumerate_cap)
        if small is not None:
            self.routes["enumerate"] += 1
            return small._linear(query)
        self.routes["highs"] += 1
        return self.highs._linear(query)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        small = self._enumeration(self.norm_enumerate_cap)
        if small is not None:
            self.routes["enumerate"] += 1
            return small._norm(query)
        self.routes["highs"] += 1
        return self.highs._norm(query)
