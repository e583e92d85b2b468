"""An environment whose arms are drawn from a log: means and outcome distributions estimated from logged data.

:class:`LoggedEnvironment` gives each arm the empirical distribution of its
logged outcomes, each observation weighted by ``1 / inclusion`` when the log
records inclusion probabilities (so an arm the logging policy favoured in
some rounds is not over-represented by them; with constant inclusion this is
the plain empirical distribution). Arms are independent; the reward is
linear; expected rewards and the optimum are exact for these distributions.
Every policy and tool of the library then runs on a problem whose means come
from data (``cmab-milp run`` with ``[environment] kind = "logged"``).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(3, 1)
>>> log = cm.LoggedFeedback(space, [0, 1, 2, 3], [0, 0, 1, 2], [1.0, 0.0, 1.0, 0.25])
>>> env = cm.LoggedEnvironment(log, seed=0)
>>> env.means.tolist(), env.optimal(space, "enumerate")[1]
([0.5, 1.0, 0.25], 1.0)
>>> sorted(set(env.sample(np.array([1, 0, 0], bool))[:1].tolist()) | {0.0, 1.0})
[0.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..environments.base import Environment
from .table import LoggedFeedback

__all__ = ["LoggedEnvironment"]


class LoggedEnvironment(Environment):
    """Arm ``i`` draws from the (inclusion-weighted) empirical distribution of its outcomes in ``log``.

    Parameters
    ----------
    log : LoggedFeedback
    prior : float, optional
        The outcome given (as a point mass) to an arm the log never includes; without it such a log is
        refused, naming the arms.
    max_support : int
        With at most this many distinct outcome values in the log, ``support`` lists them (policies that
        need histograms, e.g. SDCB, can then run); with more, outcomes are continuous (``support`` None).
    seed : int or None

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> log = cm.LoggedFeedback(cm.Cardinality(3, 1), rounds=[0, 1, 2], arms=[0, 1, 0], rewards=[1.0, 0.0, 0.0])
    >>> env = cm.LoggedEnvironment(log, prior=0.5, seed=0)  # arm 2 is never logged: its outcome is the prior
    >>> env.expected_reward(np.array([True, False, False])), env.expected_reward(np.array([False, False, True]))
    (0.5, 0.5)
    """

    columnwise = True

    def __init__(self, log: LoggedFeedback, prior: float | None = None, max_support: int = 1000, seed: Any = None):
        if not isinstance(log, LoggedFeedback):
            raise ValueError(f"log must be a LoggedFeedback, got {type(log).__name__}")
        super().__init__(log.d, seed)
        counts = log.arm_counts()
        unseen = np.flatnonzero(counts == 0)
        if unseen.size and prior is None:
            shown = [log.space.label_of(int(i)) for i in unseen[:10]]
            more = f" and {unseen.size - 10} more" if unseen.size > 10 else ""
            raise ValueError(
                f"the log never includes arms {shown}{more}: give prior= (their outcome) to use it as an environment"
            )
        if prior is not None and (isinstance(prior, bool) or not np.isfinite(float(prior))):
            raise ValueError(f"prior must be a finite number, got {prior!r}")
        weights = 1.0 / log.inclusion if log.inclusion is not None else np.ones(log.n_rows)
        order = np.lexsort((log.reward, log.arm))
        arm, value, weight = log.arm[order], log.reward[order], weights[order]
        if unseen.size:
            arm = np.r_[arm, unseen]
            value = np.r_[value, np.full(unseen.size, float(prior))]
            weight = np.r_[weight, np.ones(unseen.size)]
            order = np.lexsort((value, arm))
            arm, value, weight = arm[order], value[order], weight[order]
        self.log = log
        self.prior = prior
        #: Per arm, where its sorted outcomes start in ``values`` / ``cdf``.
        self.starts = np.searchsorted(arm, np.arange(self.d + 1))
        #: The outcomes, sorted by arm then value.
        self.values = value
        mass = np.bincount(arm, weights=weight, minlength=self.d)
        cumulative = np.cumsum(weight)
        before = np.r_[0.0, cumulative][self.starts[:-1]]
        #: Per outcome, its arm's cumulative probability up to and including it.
        self.cdf = (cumulative - before[arm]) / mass[arm]
        self.cdf[self.starts[1:] - 1] = 1.0
        self._means = np.bincount(arm, weights=weight * value, minlength=self.d) / mass
        distinct = np.unique(value)
        self.support = distinct if distinct.size <= max_support else None

    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.random(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        out = np.empty(draws.shape)
        for col, arm in enumerate(arms):
            lo, hi = self.starts[arm], self.starts[arm + 1]
            k = np.minimum(np.searchsorted(self.cdf[lo:hi], draws[:, col], side="right"), hi - lo - 1)
            out[:, col] = self.values[lo + k]
        return out

    def __repr__(self) -> str:
        return f"LoggedEnvironment({self.log.source}: {self.log.n:,} rounds, d={self.d})"
