"""Brute force over ``space.enumerate()``, vectorised in numpy.

The action matrix is enumerated once, with a padded index table of each action's arms.
Linear values are ``m`` gathers summed slot by slot (arm order, left to right: the bits of
:func:`cmab_milp.portable.selected_sums`, on every machine; a BLAS product's last bits depend on
the CPU's kernel and decide among near-ties); quadratic forms use the same table (``n x m x m``
gathers of ``M`` instead of ``n x d x d`` products, and ``n x m`` when ``M`` is diagonal,
as ESCB's and a diagonal covariance's are: the off-diagonal terms are zeros).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "enumerate")
>>> int(oracle.argmax_norm(np.zeros(3), np.eye(3), 1.0).sum())
2
"""

from __future__ import annotations

import math

import numpy as np

from ...portable import gathered_sums
from ...spaces.base import ActionSpace
from ..core.base import Oracle
from ..core.queries import LinearQuery, NormQuery

__all__ = ["EnumerateOracle"]


class EnumerateOracle(Oracle):
    """Exact by listing every action; refuses spaces past ``max_actions``."""

    name = "enumerate"

    def __init__(self, space: ActionSpace, max_actions: int | None = None):
        super().__init__(space)
        self.actions = space.enumerate(max_actions)
        self._dense = self.actions.astype(np.float64)  # for callers (tests, benches) that take products themselves
        sizes = self.actions.sum(axis=1)
        width = max(1, int(sizes.max()) if len(sizes) else 1)
        # padded index table: unused slots point at a dummy arm d
        self._index = np.full((len(self.actions), width), self.d, dtype=np.intp)
        rows, cols = np.nonzero(self.actions)
        slot = np.arange(len(rows)) - np.repeat(np.r_[0, np.cumsum(sizes)[:-1]], sizes)
        self._index[rows, slot] = cols

    def _best(self, values: np.ndarray, query: LinearQuery | NormQuery) -> np.ndarray | None:
        mask = query.restrictions.mask(self.actions)
        if mask is not None:
            if not mask.any():
                return None
            values = np.where(mask, values, -np.inf)
        if len(values) == 0:
            return None
        return self.actions[int(np.argmax(values))].copy()

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        weights = query.weights
        top = float(np.abs(weights).max(initial=0.0))
        if top > 2.0**900:  # sums of weights near 1e308 overflow: scale by a power of 2 (exact, no tie changes)
            weights = np.ldexp(weights, -math.frexp(top)[1])
        return self._best(self.linear_values(weights), query)

    def linear_values(self, weights: np.ndarray) -> np.ndarray:
        """``weights @ a`` for every enumerated action, summed in arm order (the same bits on every machine).

        >>> import cmab_milp as cm
        >>> EnumerateOracle(cm.Cardinality(3, 2)).linear_values(np.array([1.0, 2.0, 4.0])).tolist()
        [0.0, 1.0, 2.0, 4.0, 3.0, 5.0, 6.0]
        """
        padded = np.zeros(self.d + 1)
        padded[: self.d] = weights
        return gathered_sums(self._index, padded)

    def quadratic_forms(self, M: np.ndarray) -> np.ndarray:
        """``a @ M @ a`` for every enumerated action.

        A diagonal ``M`` takes ``m`` gathers an action instead of ``m^2``, summed in the same order
        (the terms left out are exact zeros), so the values are the same bits either way.

        >>> import cmab_milp as cm
        >>> oracle = EnumerateOracle(cm.Cardinality(3, 2))
        >>> oracle.quadratic_forms(np.diag([1.0, 2.0, 4.0])).tolist()
        [0.0, 1.0, 2.0, 4.0, 3.0, 5.0, 6.0]
        """
        idx = self._index
        total = np.zeros(len(idx))
        diagonal = np.diagonal(M)
        if np.count_nonzero(M) == np.count_nonzero(diagonal):  # no entry off the diagonal
            padded_diagonal = np.zeros(self.d + 1)
            padded_diagonal[: self.d] = diagonal
            for p in range(idx.shape[1]):
                total += padded_diagonal[idx[:, p]]
            return total
        padded = np.zeros((self.d + 1, self.d + 1))
        padded[: self.d, : self.d] = M
        for p in range(idx.shape[1]):
            total += padded[idx[:, p][:, None], idx].sum(axis=1)
        return total

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        quad = self.quadratic_forms(query.M)
        values = self.linear_values(query.mu) + query.sign * query.f * np.sqrt(np.maximum(quad, 0.0))
        return self._best(values, query)
