"""Bernoulli costs as rewards: arm ``i`` gives -1 with probability ``costs[i]``, else 0 (shortest-path setups).

A linear reward then is minus the number of costly arms played, so maximising it
over ``STPaths`` finds the path of least expected cost, as in the shortest-path
experiments of Perrault et al. (NeurIPS 2020), whose edges are Bernoulli costs.

>>> env = BernoulliCosts([0.0, 1.0], seed=0)
>>> env.sample([1, 1]).tolist(), env.means.tolist()
([0.0, -1.0], [-0.0, -1.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import FeedbackStats
from .basic import BernoulliArms

__all__ = ["BernoulliCosts"]


class BernoulliCosts(BernoulliArms):
    """Arm ``i`` is -1 with probability ``costs[i]`` (in [0, 1]), else 0, independently (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> env = cm.BernoulliCosts([0.2, 0.5, 0.9], seed=0)
    >>> env.expected_reward(np.array([True, True, False]))
    -0.7
    >>> env.optimal(cm.Cardinality(3, 1, exact=True))[1]
    -0.2
    """

    support = np.array([-1.0, 0.0])

    def __init__(self, costs: Any, seed: int | None = None):
        super().__init__(costs, seed)
        #: The probability of a cost per arm (the means are their negatives).
        self.costs = self._means
        self._means = -self.costs

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return 0.0 - (draws < self.costs[arms]).astype(float)

    def _sum_outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return 0.0 - np.count_nonzero(draws < self.costs[arms], axis=0).astype(float)

    def _exact_stats(
        self, actions: np.ndarray, per_action: np.ndarray, rng: np.random.Generator, stats: FeedbackStats
    ) -> None:
        ones = rng.binomial(stats.counts, self.costs)
        if stats.sum is not None:
            stats.sum -= ones
        if stats.hist is not None:
            stats.hist[:, 0] += ones
            stats.hist[:, 1] += stats.counts - ones

    def __repr__(self) -> str:
        return f"BernoulliCosts(d={self.d})"
