"""Linear-mean environments: uniform noise, Bernoulli arms, Gaussian noise.

Each has exact expected rewards ``means @ a`` and draws its feedback from one
stream (see :mod:`cmab_milp.environments.base`).

Example
-------
>>> import cmab_milp as cm
>>> env = cm.UniformNoise([0.2, 0.5, 0.9], width=0.5, seed=1)
>>> env.expected_reward([1, 0, 1])
1.1
>>> action, value = env.optimal(cm.Cardinality(3, 2), oracle="enumerate")
>>> action.astype(int).tolist(), round(value, 12)
([0, 1, 1], 1.4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..described import ParameterError
from ..portable import gram, matmul, matvec
from .base import Environment, FeedbackStats, SquareRoots, check_means

__all__ = ["BernoulliArms", "GaussianNoise", "UniformNoise"]


class UniformNoise(Environment):
    """Arm ``i`` draws uniformly from ``[means[i] - w_i, means[i] + w_i]``, independently.

    ``w_i = min(width, means[i], 1 - means[i])``, so outcomes stay in [0, 1]
    and the mean is exact.

    Parameters
    ----------
    means : array of shape (d,), values in [0, 1]
    width : float >= 0
    seed : int or None

    >>> env = UniformNoise([0.1, 0.5], width=0.3, seed=0)
    >>> env.half_widths.tolist()
    [0.1, 0.3]
    """

    columnwise = True

    def __init__(self, means: Any, width: float = 0.5, seed: int | None = None):
        mu = check_means(means, unit=True)
        width = float(width)
        if not np.isfinite(width) or width < 0:
            raise ParameterError("width", f"width must be a finite number >= 0, got {width}")
        super().__init__(mu.size, seed)
        self._means = mu
        self.width = width
        self.half_widths = np.minimum(width, np.minimum(mu, 1.0 - mu))

    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.random(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return self._means[arms] + self.half_widths[arms] * (2.0 * draws - 1.0)

    def _sum_outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        n = draws.shape[0]
        return n * self._means[arms] + self.half_widths[arms] * (2.0 * draws.sum(axis=0) - n)

    def __repr__(self) -> str:
        return f"UniformNoise(d={self.d}, width={self.width})"


class BernoulliArms(Environment):
    """Arm ``i`` is 1 with probability ``means[i]``, else 0, independently.

    With ``exact_stats=True``, :meth:`observe` draws per-arm sums (and
    histograms) as binomials instead of round by round.

    >>> env = BernoulliArms([0.0, 1.0], seed=0)
    >>> env.sample([1, 1]).tolist()
    [0.0, 1.0]
    """

    support = np.array([0.0, 1.0])
    columnwise = True
    _exact_needs = frozenset({"sum", "hist", "pairs"})

    def __init__(self, means: Any, seed: int | None = None):
        mu = check_means(means, unit=True)
        super().__init__(mu.size, seed)
        self._means = mu

    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.random(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return (draws < self._means[arms]).astype(float)

    def _sum_outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return np.count_nonzero(draws < self._means[arms], axis=0).astype(float)

    def _exact_stats(
        self, actions: np.ndarray, per_action: np.ndarray, rng: np.random.Generator, stats: FeedbackStats
    ) -> None:
        ones = rng.binomial(stats.counts, self._means)
        if stats.sum is not None:
            stats.sum += ones
        if stats.hist is not None:
            stats.hist[:, 0] += stats.counts - ones
            stats.hist[:, 1] += ones

    def __repr__(self) -> str:
        return f"BernoulliArms(d={self.d})"


class GaussianNoise(Environment):
    """Outcome vector ``y ~ N(means, cov)`` each round (arms may be correlated).

    Gaussian outcomes are unbounded, outside the paper's [0, 1] reward model
    (its Figure 3 experiments use them anyway); the library allows it, and the
    concentration constants of the policies then hold only approximately.

    With ``exact_stats=True``, :meth:`observe` draws per-arm sums from their
    exact law (``sum over k rounds of y_S ~ N(k mu_S, k cov_SS)``) and the
    ``"outer"`` statistic from ``k ybar ybar^T + Wishart(k - 1, cov_SS)``.

    Parameters
    ----------
    means : array of shape (d,), finite
    cov : array of shape (d, d), symmetric positive semidefinite
    seed : int or None

    >>> env = GaussianNoise([0.0, 1.0], [[1.0, 0.5], [0.5, 1.0]], seed=0)
    >>> env.expected_reward([0, 1])
    1.0
    """

    _exact_needs = frozenset({"sum", "outer", "pairs"})

    def __init__(self, means: Any, cov: Any, seed: int | None = None):
        mu = check_means(means, unit=False)
        d = mu.size
        sigma = np.asarray(cov, dtype=float)
        if sigma.shape != (d, d):
            raise ParameterError("cov", f"cov must have shape ({d}, {d}), got {sigma.shape}")
        if not np.isfinite(sigma).all():
            raise ParameterError("cov", "cov must be finite")
        scale = 1.0 + float(np.abs(sigma).max())
        if np.abs(sigma - sigma.T).max() > 1e-9 * scale:
            raise ParameterError("cov", "cov must be symmetric")
        sigma = 0.5 * (sigma + sigma.T)
        low = float(np.linalg.eigvalsh(sigma).min())
        if low < -1e-9 * scale:
            raise ParameterError("cov", f"cov must be positive semidefinite; its smallest eigenvalue is {low:.3g}")
        super().__init__(d, seed)
        self._means = mu
        self.cov = sigma
        #: ``L`` with ``L @ L.T = cov[arms][:, arms]``, per arm set.
        self._factor = SquareRoots(self.cov)

    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.standard_normal(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return self._means[arms] + matmul(draws, self._factor(arms).T)

    def _sum_outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        return draws.shape[0] * self._means[arms] + matvec(self._factor(arms), draws.sum(axis=0))

    def _exact_stats(
        self, actions: np.ndarray, per_action: np.ndarray, rng: np.random.Generator, stats: FeedbackStats
    ) -> None:
        for action, k in zip(actions, per_action, strict=True):
            arms = np.flatnonzero(action)
            if k == 0 or arms.size == 0:
                continue
            factor = self._factor(arms)
            mean = self._means[arms] + matvec(factor, rng.standard_normal(arms.size)) / np.sqrt(k)
            if stats.sum is not None:
                stats.sum[arms] += k * mean
            if stats.outer is not None:
                scatter = matmul(matmul(factor, _wishart_identity(rng, arms.size, int(k) - 1)), factor.T)
                stats.outer[np.ix_(arms, arms)] += k * np.outer(mean, mean) + scatter

    def __repr__(self) -> str:
        return f"GaussianNoise(d={self.d})"


def _wishart_identity(rng: np.random.Generator, dim: int, dof: int) -> np.ndarray:
    """A draw of ``sum_{s <= dof} z_s z_s^T`` with ``z_s ~ N(0, I_dim)`` (Bartlett; any dof >= 0)."""
    if dof <= 0:
        return np.zeros((dim, dim))
    if dof < dim:
        z = rng.standard_normal((dof, dim))
        return gram(z)
    lower = np.zeros((dim, dim))
    lower[np.diag_indices(dim)] = np.sqrt(rng.chisquare(dof - np.arange(dim)))
    rows, cols = np.tril_indices(dim, -1)
    lower[rows, cols] = rng.standard_normal(rows.size)
    return matmul(lower, lower.T)
