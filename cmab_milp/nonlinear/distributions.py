"""Empirical, optimistic and pessimistic per-arm distributions (Appendix A.7).

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Each arm's observations are a row of counts over an
:class:`~cmab_milp.nonlinear.grid.OutcomeGrid`. With ``w_i = sqrt(C ln t / n_i)``
(the DKW radius of Lemma 10):

- the **optimistic** distribution has CDF ``max(F_hat_i(x) - w_i, 0)`` below
  the last grid value and ``1`` there: mass ``w_i`` is moved from the lowest
  values to the last grid value (the paper's value 1; the policies' ``upper``);
- the **pessimistic** distribution has CDF ``min(F_hat_i(x) + w_i, 1)``: mass
  ``w_i`` is moved from the highest values to the **first grid value**.

By monotonicity of the reward (Lemma 9 (1)), the expected reward under the
product of optimistic distributions is at least the true one whenever every
empirical CDF is within ``w_i`` of the truth, and the pessimistic one is at
most it.

The pessimistic distribution: the paper and the library
--------------------------------------------------------
Appendix A.7.2 (used by SROQ-GR only: Algorithm 7's LCB, eq. (11)) defines
``F_bar(x) = min(F_hat(x) + sqrt(C ln T / n), 1)`` for ``0 <= x < 1`` and
``F_bar(1) = 1``: as a CDF on ``[0, 1]`` it has ``F_bar(0) >= w``, i.e. the
mass ``w`` goes to the **value 0**, whatever the support. The functions here
move it to the first grid value, and the policies choose the grid
(``pessimistic=`` of :mod:`cmab_milp.policies.general`):

- ``"lowest"`` (the library's default, a deviation from the paper): the grid
  starts at the lowest support value (given, or the lowest outcome observed
  on any arm so far), so the mass goes there. With a given support every
  outcome is at least that value, so ``F_bar >= F`` still holds on the DKW
  event and the LCB stays valid, and it is tighter (higher) than the paper's
  when 0 is not a possible outcome. With a *learned* support an outcome below
  every one seen so far is possible, and the LCB is guaranteed only once the
  lowest possible outcome has been observed (on any arm);
- ``"zero"`` (the paper's version): the value 0 is added to the grid, so the
  mass goes to 0 and this function computes exactly the paper's ``F_bar``.

Example
-------
>>> import numpy as np
>>> counts = np.array([[2, 2, 0]])                  # 4 draws on the grid {0, 0.5, 1}
>>> optimistic_pmf(counts, np.array([0.25])).tolist()
[[0.25, 0.5, 0.25]]
>>> pessimistic_pmf(counts, np.array([0.25])).tolist()
[[0.75, 0.25, 0.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["confidence_radius", "empirical_pmf", "optimistic_pmf", "pessimistic_pmf"]


def confidence_radius(counts: Any, t: float, C: float = 1.5) -> np.ndarray:
    """``sqrt(C ln t / n_i)`` per arm; ``inf`` where ``n_i = 0``.

    >>> confidence_radius(np.array([0, 4]), math.e ** 2, C=2.0).tolist()
    [inf, 1.0]
    """
    n = np.asarray(counts, dtype=float)
    log_t = math.log(max(float(t), 1.0))
    with np.errstate(divide="ignore"):
        return np.where(n > 0, np.sqrt(C * log_t / np.maximum(n, 1.0)), np.inf)


def empirical_pmf(counts: Any) -> np.ndarray:
    """Row-normalised counts (rows without observations stay all zero)."""
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2 or (c < 0).any():
        raise ValueError(f"counts must be a non-negative (d, G) array, got shape {c.shape}")
    total = c.sum(axis=1, keepdims=True)
    return np.divide(c, total, out=np.zeros_like(c), where=total > 0)


def _pmf_from_cdf(cdf: np.ndarray) -> np.ndarray:
    pmf = cdf.copy()
    pmf[:, 1:] -= cdf[:, :-1]
    return np.maximum(pmf, 0.0, out=pmf)


def optimistic_pmf(counts: Any, radius: Any) -> np.ndarray:
    """Lower the empirical CDF by ``radius`` (floored at 0), the last grid value (1) taking the rest.

    Arms without observations (or with an infinite radius) get a point mass at the last value.
    """
    p = empirical_pmf(counts)
    w = np.broadcast_to(np.asarray(radius, dtype=float), (p.shape[0],))
    cdf = np.maximum(np.cumsum(p, axis=1) - w[:, None], 0.0)
    cdf[:, -1] = 1.0
    return _pmf_from_cdf(np.minimum(cdf, 1.0))


def pessimistic_pmf(counts: Any, radius: Any) -> np.ndarray:
    """Raise the empirical CDF by ``radius`` (capped at 1): the mass goes to the first grid value.

    Arms without observations (or with an infinite radius) get a point mass at
    the first value. On a grid starting at 0 this is the paper's ``F_bar``
    (module docstring): 3 draws of 0.5 and one of 1 on ``{0, 0.5, 1}``, radius 0.25:

    >>> pessimistic_pmf(np.array([[0, 3, 1]]), 0.25).tolist()
    [[0.25, 0.75, 0.0]]
    """
    p = empirical_pmf(counts)
    w = np.broadcast_to(np.asarray(radius, dtype=float), (p.shape[0],))
    cdf = np.minimum(np.cumsum(p, axis=1) + w[:, None], 1.0)
    cdf[:, -1] = 1.0
    return _pmf_from_cdf(cdf)
