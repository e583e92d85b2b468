"""Independent Beta-distributed arms with a monotone reward: continuous outcomes (Appendix A.10).

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Policies learn these through Algorithm 8's discretisation (``discretise=True``
on SDCB / AROQ-GR / SROQ-GR). Expected rewards are computed numerically
exactly, never sampled:

- ``"linear"``: the sum of the means ``alpha_i / (alpha_i + beta_i)``;
- ``"max"``: ``E[max] = int_0^1 (1 - prod_i F_i(x)) dx`` by adaptive quadrature
  (absolute error below ``1e-11``);
- any other reward: a product Gauss-Jacobi rule with ``nodes`` points per
  selected arm (exact for rewards polynomial of degree ``< 2 nodes`` in each
  outcome; about ``1e-7`` for ``sqrt_sum`` with the default 48 nodes), refused
  past :data:`~cmab_milp.nonlinear.rewards.MAX_PRODUCT` points.

Example
-------
>>> import cmab_milp as cm
>>> env = BetaArms([2.0, 1.0], [2.0, 1.0], reward="max", seed=0)
>>> round(env.expected_reward([0, 1]), 12), round(env.expected_reward([1, 1]), 6)
(0.5, 0.65)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import integrate, special

from ..described import ParameterError, parameter
from ..nonlinear.grid import OutcomeGrid
from ..nonlinear.oracles import ENUMERATION_CAP
from ..nonlinear.rewards import (
    MAX_PRODUCT,
    CallableReward,
    LinearReward,
    MaxReward,
    Reward,
    check_monotone,
    make_reward,
)
from ..portable import dot
from ..spaces.base import ActionSpace, as_action
from .base import Environment

__all__ = ["BetaArms"]


def _positive_vector(x: Any, name: str) -> np.ndarray:
    v = np.asarray(x, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ParameterError(name, f"{name} must be a non-empty 1-D array, got shape {v.shape}")
    if not np.isfinite(v).all() or (v <= 0).any():
        raise ParameterError(name, f"{name} must hold finite numbers > 0")
    return v


class BetaArms(Environment):
    """Arm ``i`` draws from ``Beta(alpha[i], beta[i])`` on [0, 1], independently.

    Parameters
    ----------
    alpha, beta : arrays of shape (d,), entries > 0
    reward : str, callable or Reward
        As for :class:`~cmab_milp.environments.discrete.DiscreteArms`.
    nodes : int
        Gauss-Jacobi nodes per arm for rewards other than linear and max.
    seed : int or None

    Examples
    --------
    >>> BetaArms([2, 1], [2, 3], reward="linear", seed=0).expected_reward([1, 1])  # 2/4 + 1/4
    0.75
    """

    support = None

    def __init__(self, alpha: Any, beta: Any, reward: Any = "sqrt_sum", nodes: int = 48, seed: int | None = None):
        a = _positive_vector(alpha, "alpha")
        b = _positive_vector(beta, "beta")
        if a.shape != b.shape:
            raise ParameterError("alpha", f"alpha and beta must have the same length, got {a.size} and {b.size}")
        if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 2:
            raise ParameterError("nodes", f"nodes must be an integer >= 2, got {nodes!r}")
        super().__init__(a.size, seed)
        self.alpha, self.beta, self.nodes = a, b, int(nodes)
        self._means = a / (a + b)
        with parameter("reward"):
            self.reward: Reward = make_reward(reward)
        if isinstance(self.reward, CallableReward):
            check_monotone(self.reward, self.d, OutcomeGrid(np.linspace(0.0, 1.0, 11)), seed=0)
        self._memo: dict[bytes, float] = {}
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ truth
    def expected_reward(self, action: Any) -> float:
        """Numerically exact ``E[r(a, Y)]`` for one action (memoised)."""
        a = as_action(action, self.d)
        key = a.tobytes()
        if key not in self._memo:
            self._memo[key] = self._expectation(a)
        return self._memo[key]

    def expected_rewards(self, actions: Any) -> np.ndarray:
        acts = np.atleast_2d(self._check_actions(actions))
        return np.array([self.expected_reward(a) for a in acts])

    def _expectation(self, action: np.ndarray) -> float:
        arms = np.flatnonzero(action)
        if isinstance(self.reward, LinearReward):
            return float(self._means[arms].sum())
        if isinstance(self.reward, MaxReward):
            if arms.size == 0:
                return 0.0

            def tail(x: float) -> float:
                return 1.0 - float(np.prod(special.betainc(self.alpha[arms], self.beta[arms], x)))

            value, _ = integrate.quad(tail, 0.0, 1.0, epsabs=1e-13, epsrel=1e-12, limit=200)
            return float(value)
        return self._gauss_jacobi(action, arms)

    def _rule(self, arm: int) -> tuple[np.ndarray, np.ndarray]:
        """Nodes in [0, 1] and probability weights of the Beta(alpha, beta) Gauss-Jacobi rule."""
        if arm not in self._rules:
            t, w = special.roots_jacobi(self.nodes, self.beta[arm] - 1.0, self.alpha[arm] - 1.0)
            self._rules[arm] = ((1.0 + t) / 2.0, w / w.sum())
        return self._rules[arm]

    def _gauss_jacobi(self, action: np.ndarray, arms: np.ndarray) -> float:
        if arms.size == 0:
            return float(self.reward.realised(action, np.zeros((1, self.d)))[0])
        size = self.nodes**arms.size
        if size > MAX_PRODUCT:
            raise ValueError(
                f"the expected {self.reward.name!r} reward of a {arms.size}-arm action needs {size} quadrature "
                f"points (more than {MAX_PRODUCT}); lower nodes= or use a linear or max reward"
            )
        rules = [self._rule(int(i)) for i in arms]
        grids = np.meshgrid(*[x for x, _ in rules], indexing="ij")
        weights = np.ones(())
        for _, w in rules:
            weights = np.multiply.outer(weights, w)
        y = np.zeros((size, self.d))
        for col, i in enumerate(arms):
            y[:, i] = grids[col].ravel()
        return dot(weights.ravel(), self.reward.realised(action, y))

    def optimal(self, space: ActionSpace, oracle: Any = "enumerate") -> tuple[np.ndarray, float]:
        """An optimal action (by enumeration; linear rewards use ``oracle``) and its expected reward."""
        if space.d != self.d:
            raise ValueError(f"space has d={space.d} arms but the environment has d={self.d}")
        if isinstance(self.reward, LinearReward):
            return super().optimal(space, "highs" if oracle == "enumerate" else oracle)
        actions = space.enumerate(ENUMERATION_CAP)
        values = self.expected_rewards(actions)
        k = int(np.argmax(values))
        return actions[k].copy(), float(values[k])

    # --------------------------------------------------------------- feedback
    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.random(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return special.betaincinv(self.alpha[arms], self.beta[arms], draws)

    def __repr__(self) -> str:
        return f"BetaArms(d={self.d}, reward={self.reward.name!r})"
