"""Independent arms with finite outcome supports and a monotone, possibly non-linear reward.

:class:`DiscreteArms` is the environment of Section 5 (and Figure 4): arm ``i``
takes ``values[k]`` with probability ``probs[i][k]``, arms independent; the
reward ``r(a, y)`` is any monotone function named by
:func:`~cmab_milp.nonlinear.rewards.make_reward`. Expected rewards and the optimal
action are exact (convolution / order statistics / product enumeration, see
:mod:`cmab_milp.nonlinear.rewards`), never sampled.

Example
-------
>>> import cmab_milp as cm
>>> env = cm.DiscreteArms([0.0, 1.0], [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]], reward="max", seed=0)
>>> env.expected_reward([1, 1, 0])
0.75
>>> action, value = env.optimal(cm.Cardinality(3, 2))
>>> action.astype(int).tolist(), value
([1, 1, 0], 0.75)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..described import ParameterError, parameter
from ..nonlinear.grid import OutcomeGrid
from ..nonlinear.oracles import DistributionOracle
from ..nonlinear.rewards import CallableReward, LinearReward, Reward, check_monotone, make_reward
from ..oracles import Oracle
from ..portable import matvec
from ..spaces.base import ActionSpace, as_action
from .base import Environment, FeedbackStats

__all__ = ["DiscreteArms", "check_probs"]

#: Actions whose expected reward :meth:`DiscreteArms.expected_rewards` remembers.
_MEMO_SIZE = 100_000


def check_probs(probs: Any, n_values: int) -> np.ndarray:
    """Validate a ``(d, n_values)`` table of probabilities whose rows sum to 1."""
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or p.shape[0] == 0:
        raise ParameterError("probs", f"probs must be a (d, {n_values}) table with d >= 1, got shape {p.shape}")
    if p.shape[1] != n_values:
        raise ParameterError("probs", f"probs has {p.shape[1]} columns but there are {n_values} values")
    if not np.isfinite(p).all():
        raise ParameterError("probs", "probs must be finite")
    if (p < 0).any():
        i, k = np.argwhere(p < 0)[0]
        raise ParameterError("probs", f"probs must be >= 0; probs[{i}][{k}] = {p[i, k]}")
    sums = p.sum(axis=1)
    if np.abs(sums - 1.0).max() > 1e-9:
        i = int(np.argmax(np.abs(sums - 1.0)))
        raise ParameterError("probs", f"each row of probs must sum to 1; row {i} sums to {sums[i]!r}")
    return p / sums[:, None]


class DiscreteArms(Environment):
    """Arm ``i`` takes ``values[k]`` with probability ``probs[i][k]``, arms independent.

    Parameters
    ----------
    values : sequence of distinct numbers in [0, 1]
    probs : (d, len(values)) table, rows summing to 1
    reward : str, callable or Reward
        ``"linear"``, ``"sqrt_sum"``, ``"max"`` (K-MAX), ``"threshold:THETA"``,
        ``"exp_utility:LAMBDA"``, or a monotone callable ``f(a, y)`` mapping a
        bool action ``(d,)`` and outcomes ``(n, d)`` to ``(n,)`` rewards (its
        monotonicity is checked on random samples). See
        :mod:`cmab_milp.nonlinear.rewards` for each reward's bound ``L``.
    seed : int or None

    Attributes
    ----------
    support : ndarray
        The sorted values (``hist`` statistics count them in this order).
    pmf : ndarray (d, len(values))
        ``probs`` with columns in the order of ``support``.

    Examples
    --------
    K-MAX of two arms, one of them 0.2 or 1 with equal odds, the other always 0.2:
    the expected maximum is exact, ``0.5 * 0.2 + 0.5 * 1.0``.

    >>> import cmab_milp as cm
    >>> env = DiscreteArms([0.2, 1.0], [[0.5, 0.5], [1.0, 0.0]], reward="max", seed=0)
    >>> env.expected_reward([1, 1]), env.optimal(cm.Cardinality(2, 1))[1]
    (0.6, 0.6)
    """

    _exact_needs = frozenset({"sum", "hist", "pairs"})

    def __init__(self, values: Any, probs: Any, reward: Any = "sqrt_sum", seed: int | None = None):
        self.grid = OutcomeGrid(values)
        p = check_probs(probs, len(self.grid))
        super().__init__(p.shape[0], seed)
        self.pmf = p[:, self.grid.order]
        self.support = self.grid.values
        self._means = matvec(self.pmf, self.support)
        with parameter("reward"):
            self.reward: Reward = make_reward(reward)
        if isinstance(self.reward, CallableReward):
            check_monotone(self.reward, self.d, self.grid, seed=0)
        self._cdf = np.cumsum(self.pmf, axis=1)
        self._cdf[:, -1] = 1.0
        self._memo: dict[bytes, float] = {}

    # ------------------------------------------------------------------ truth
    def expected_reward(self, action: Any) -> float:
        """Exact ``E[r(a, Y)]`` for one action."""
        a = as_action(action, self.d)
        return float(self.expected_rewards(a[None, :])[0])

    def expected_rewards(self, actions: Any) -> np.ndarray:
        """Exact expected rewards of the rows of an ``(n, d)`` action matrix (memoised per action)."""
        acts = np.atleast_2d(self._check_actions(actions))
        keys = [row.tobytes() for row in acts]
        missing = [k for k, key in enumerate(keys) if key not in self._memo]
        if missing:
            values = self.reward.expected(acts[missing], self.grid, self.pmf)
            if len(self._memo) + len(missing) > _MEMO_SIZE:
                self._memo.clear()
            self._memo.update((keys[k], float(v)) for k, v in zip(missing, values, strict=True))
        return np.array([self._memo[key] for key in keys])

    def optimal(self, space: ActionSpace, oracle: str | Oracle = "auto") -> tuple[np.ndarray, float]:
        """An optimal action of ``space`` and its exact expected reward.

        ``oracle`` is an exact distribution-oracle method (``"auto"``, ``"enumerate"``,
        ``"branch_bound"``, ``"milp"`` for K-MAX) or, for the linear reward only, any linear backend.
        Any other backend name means ``"auto"``.
        """
        if space.d != self.d:
            raise ValueError(f"space has d={space.d} arms but the environment has d={self.d}")
        methods = ("auto", "enumerate", "branch_bound", "milp")
        if isinstance(self.reward, LinearReward) and not (isinstance(oracle, str) and oracle in methods):
            return super().optimal(space, oracle)
        method = oracle if isinstance(oracle, str) and oracle in methods else "auto"
        solver = DistributionOracle(space, self.reward, self.grid, method)
        best = solver.argmax_index(self.pmf)
        if best is None:
            raise ValueError("the action space has no feasible action")
        return best, self.expected_reward(best)

    # --------------------------------------------------------------- feedback
    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.random(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        out = np.empty(draws.shape)
        last = len(self.support) - 1
        for col, arm in enumerate(arms):
            k = np.minimum(np.searchsorted(self._cdf[arm], draws[:, col], side="right"), last)
            out[:, col] = self.support[k]
        return out

    def _exact_stats(
        self, actions: np.ndarray, per_action: np.ndarray, rng: np.random.Generator, stats: FeedbackStats
    ) -> None:
        """Per-arm histograms as multinomials (and sums from them)."""
        hist = np.zeros((self.d, len(self.support)), np.int64)
        for arm in np.flatnonzero(stats.counts):
            hist[arm] = rng.multinomial(int(stats.counts[arm]), self.pmf[arm])
        if stats.hist is not None:
            stats.hist += hist
        if stats.sum is not None:
            stats.sum += matvec(hist, self.support)

    def __repr__(self) -> str:
        return f"DiscreteArms(d={self.d}, values={self.support.tolist()}, reward={self.reward.name!r})"
