"""Running estimators of the means and covariance of semi-bandit feedback (paper Section 4).

:class:`CovarianceEstimator` keeps the sufficient statistics of everything
observed so far: per-arm counts ``n_i``, pair counts ``n_ij`` (``n_ii = n_i``),
per-arm outcome sums and, per pair, the sum of ``y_i y_j`` over the rounds
that observed both. One played action costs ``O(m^2)``; a held stretch is
added in bulk from its :class:`~cmab_milp.environments.base.FeedbackStats`
(``"sum"`` and ``"outer"``; pair counts follow from the held action).

From them it derives the paper's estimators (eq. (3) and Section 4.2):

* ``mu_hat_i = sum_i / n_i``;
* ``S_hat_ij = outer_ij / n_ij`` and ``Sigma_hat = S_hat - mu_hat mu_hat^T``;
* ``Sigma_bar_ij = Sigma_hat_ij + (5 h / sqrt(n_ij) + h^2 / n_ij + 1 / n_ij^2) / 4``;
* ``G_bar = sum_s D_{a_s} Sigma_bar D_{a_s} + D_{Sigma_bar} D_n + I``, i.e.
  ``G_bar_ij = n_ij Sigma_bar_ij`` off the diagonal and
  ``2 n_i Sigma_bar_ii + 1`` on it;
* ``M = D_n^{-1} G_bar D_n^{-1}``, so that ``||D_n^{-1} a||_{G_bar} = sqrt(a @ M @ a)``.

Entries whose count is zero are undefined in the paper; here they are 0 in
``mu_hat``, ``S_hat``, ``Sigma_hat`` and ``M`` and ``NaN`` in ``Sigma_bar``
(``G_bar`` gets 0 for a never co-observed pair: no round contributes to that
entry of the sum). Policies give unobserved arms an infinite index separately.
``Sigma_bar`` need not be positive semidefinite.

Example
-------
>>> import numpy as np
>>> est = CovarianceEstimator(3)
>>> est.add(np.array([1, 1, 0], bool), np.array([0.2, 0.6, np.nan]))
>>> est.add(np.array([1, 1, 0], bool), np.array([0.4, 0.2, np.nan]))
>>> est.means().round(3).tolist()
[0.3, 0.4, 0.0]
>>> est.covariance().round(3).tolist()
[[0.01, -0.02, 0.0], [-0.02, 0.04, 0.0], [0.0, 0.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CovarianceEstimator"]


class CovarianceEstimator:
    """Incremental means, second moments, covariance and its upper confidence bound.

    Parameters
    ----------
    d : int
        Number of arms.

    Attributes
    ----------
    counts : (d,) int array
        ``n_i``: rounds that observed arm ``i``.
    pair_counts : (d, d) int array
        ``n_ij``: rounds that observed both ``i`` and ``j`` (``n_ii = n_i``).
    sums : (d,) float array
        Sum of the outcomes of each arm.
    outer_sums : (d, d) float array
        Sum of ``y_i y_j`` over the rounds that observed both.

    >>> est = CovarianceEstimator(2)
    >>> est.add_bulk(np.array([1, 1], bool), 4, np.array([2.0, 1.0]), np.array([[1.5, 0.5], [0.5, 0.5]]))
    >>> est.counts.tolist(), est.pair_counts.tolist()
    ([4, 4], [[4, 4], [4, 4]])
    """

    def __init__(self, d: int):
        d = int(d)
        if d < 1:
            raise ValueError(f"d must be a positive number of arms, got {d}")
        self.d = d
        self.counts = np.zeros(d, np.int64)
        self.pair_counts = np.zeros((d, d), np.int64)
        self.sums = np.zeros(d)
        self.outer_sums = np.zeros((d, d))

    # ------------------------------------------------------------- updates
    def add(self, action: np.ndarray, outcomes: np.ndarray) -> None:
        """Add one round: ``action`` (bool, ``(d,)``) and its outcomes (``(d,)``, read on the action's arms)."""
        arms = np.flatnonzero(action)
        if arms.size == 0:
            return
        y = np.asarray(outcomes, dtype=float)[arms]
        if not np.isfinite(y).all():
            raise ValueError("outcomes of the played arms must be finite")
        block = np.ix_(arms, arms)
        self.counts[arms] += 1
        self.pair_counts[block] += 1
        self.sums[arms] += y
        self.outer_sums[block] += np.outer(y, y)

    def add_bulk(self, action: np.ndarray, rounds: int, sums: np.ndarray, outer: np.ndarray) -> None:
        """Add ``rounds`` rounds that all played ``action``, from their summed statistics.

        ``sums`` is the per-arm sum of outcomes and ``outer`` the sum of
        ``y_t y_t^T`` over the stretch (both zero off the action's arms), as
        in :class:`~cmab_milp.environments.base.FeedbackStats`.
        """
        rounds = int(rounds)
        if rounds < 0:
            raise ValueError(f"rounds must be >= 0, got {rounds}")
        arms = np.flatnonzero(action)
        if rounds == 0 or arms.size == 0:
            return
        block = np.ix_(arms, arms)
        self.counts[arms] += rounds
        self.pair_counts[block] += rounds
        self.sums[arms] += np.asarray(sums, dtype=float)[arms]
        self.outer_sums[block] += np.asarray(outer, dtype=float)[block]

    def add_stats(self, stats: Any, actions: np.ndarray | None = None) -> None:
        """Add a :class:`~cmab_milp.environments.base.FeedbackStats` of a stretch.

        Uses its ``counts``, ``sum`` and ``outer``, and its ``pairs`` (the pair
        counts); without ``pairs``, ``actions`` must be the single action held
        during the stretch.
        """
        if stats.sum is None or stats.outer is None:
            raise ValueError("the feedback statistics must include 'sum' and 'outer'")
        if stats.pairs is not None:
            pairs = stats.pairs
        elif actions is not None and np.asarray(actions).reshape(-1, self.d).shape[0] == 1:
            held = np.asarray(actions, dtype=bool).reshape(self.d)
            pairs = np.outer(held, held).astype(np.int64) * int(stats.rounds)
        else:
            raise ValueError("the feedback statistics need 'pairs' unless one held action is given")
        self.counts += stats.counts
        self.pair_counts += pairs
        self.sums += stats.sum
        self.outer_sums += stats.outer

    # ------------------------------------------------------------ estimates
    @property
    def observed(self) -> np.ndarray:
        """Bool mask of the arms observed at least once."""
        return self.counts > 0

    def means(self) -> np.ndarray:
        """``mu_hat``: empirical mean of each arm (0 for unobserved arms)."""
        return np.divide(self.sums, self.counts, out=np.zeros(self.d), where=self.counts > 0)

    def second_moments(self) -> np.ndarray:
        """``S_hat_ij``: mean of ``y_i y_j`` over the rounds observing both (0 where ``n_ij = 0``)."""
        return np.divide(self.outer_sums, self.pair_counts, out=np.zeros((self.d, self.d)), where=self.pair_counts > 0)

    def covariance(self) -> np.ndarray:
        """``Sigma_hat = S_hat - mu_hat mu_hat^T`` on co-observed pairs (0 elsewhere)."""
        mu = self.means()
        return np.where(self.pair_counts > 0, self.second_moments() - np.outer(mu, mu), 0.0)

    def confidence_widths(self, h: float) -> np.ndarray:
        """``(5 h / sqrt(n_ij) + h^2 / n_ij + 1 / n_ij^2) / 4`` (``NaN`` where ``n_ij = 0``)."""
        h = _check_h(h)
        n = self.pair_counts.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            width = 0.25 * (5.0 * h / np.sqrt(n) + h * h / n + 1.0 / (n * n))
        return np.where(n > 0, width, np.nan)

    def covariance_ucb(self, h: float) -> np.ndarray:
        """``Sigma_bar = Sigma_hat + confidence_widths(h)`` (``NaN`` where ``n_ij = 0``)."""
        return self.covariance() + self.confidence_widths(h)

    def gram_ucb(self, h: float) -> np.ndarray:
        """``G_bar``: ``n_ij Sigma_bar_ij`` off the diagonal, ``2 n_i Sigma_bar_ii + 1`` on it.

        Computed as ``outer_ij - n_ij mu_i mu_j + (5 h sqrt(n_ij) + h^2 + 1 / n_ij) / 4``
        (``n_ij`` times ``Sigma_bar_ij``, no division by zero; 0 where ``n_ij = 0``).
        """
        h = _check_h(h)
        n = self.pair_counts
        safe = np.maximum(n, 1).astype(float)
        mu = self.sums / np.maximum(self.counts, 1)
        gram = self.outer_sums - n * (mu[:, None] * mu) + 0.25 * (5.0 * h * np.sqrt(safe) + h * h + 1.0 / safe)
        gram *= n > 0
        diag = gram.reshape(-1)[:: self.d + 1]  # a view of the diagonal
        diag *= 2.0
        diag += 1.0
        return gram

    def index_matrix(self, h: float) -> np.ndarray:
        """``M = D_n^{-1} G_bar D_n^{-1}`` (rows and columns of unobserved arms are 0).

        ``sqrt(a @ M @ a)`` is the paper's ``||D_n^{-1} a||_{G_bar}``.

        >>> est = CovarianceEstimator(2)
        >>> est.add_bulk(np.array([1, 0], bool), 4, np.array([2.0, 0.0]), np.diag([1.0, 0.0]))
        >>> est.index_matrix(h=0.0).tolist()  # Sigma_hat = 0, Sigma_bar = 1/64: (2*4/64 + 1) / 4**2
        [[0.0703125, 0.0], [0.0, 0.0]]
        """
        inv = (self.counts > 0) / np.maximum(self.counts, 1)
        matrix = self.gram_ucb(h) * (inv[:, None] * inv)
        return 0.5 * (matrix + matrix.T)

    def copy(self) -> CovarianceEstimator:
        """An independent copy (to freeze the statistics of an epoch start)."""
        other = CovarianceEstimator(self.d)
        other.counts = self.counts.copy()
        other.pair_counts = self.pair_counts.copy()
        other.sums = self.sums.copy()
        other.outer_sums = self.outer_sums.copy()
        return other


def _check_h(h: float) -> float:
    h = float(h)
    if not np.isfinite(h) or h < 0:
        raise ValueError(f"h must be a finite number >= 0, got {h}")
    return h
