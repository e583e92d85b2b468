"""Certificates of a unique optimum, so that ``ties="exact"`` skips its shifted solve on the usual query.

``ties="exact"`` returns, among the actions within the tolerance ``tol = 1e-9 (1 + |v(a)|)`` of the optimum
``v(a)``, the one of least binary number ``sum_i 2^i x_i`` (:mod:`~cmab_milp.oracles.core.ties`). When no action
other than the backend's answer ``a`` lies within ``tol`` of it, that is ``a`` itself: the shifted solve
(``ties._unique``) returns ``a``, or the settling by restricted solves finds no other action within ``tol`` and
keeps ``a``. So a backend that *proves* that every other action is below ``v(a)`` by more than

    ``exact_margin(S, n) = 1e-9 (1 + S) + 4 (n + 1) eps S``   (``S >= sum |w|``, ``n >= d``)

in exact arithmetic may return ``a`` at once, and the answer is the one the solves would give: ``S`` bounds
``|v(a)|`` (so the first term is at least ``tol``), and the second bounds twice the rounding of any float
sum of at most ``n`` weights (``query.value``'s, the solves' own comparisons), so the comparisons the
settling makes in floating point would reject every other action too.

How a backend says so: :meth:`~cmab_milp.oracles.core.base.Oracle._linear_ruled` returns ``(a, ruled)``;
``ruled`` is ``False`` (nothing proven), ``True`` (``a`` is the rule's action under class ties, ``"classes"``),
or a *certificate*: a function of no arguments, truthy as ``True`` is, whose call says whether every other
action is below ``a`` by more than :func:`exact_margin` (:func:`proves_unique`). The call is made only under
``ties="exact"``, so ``"classes"`` pays nothing for it. The certificates and their proofs:
:mod:`~cmab_milp.oracles.backends.combinatorial_ruled` (cardinality and partition matroids: gaps of the sorted
weights; DAG paths: the margins of the dynamic programme) and ``enumerate`` (no other value near the best).

>>> exact_margin(0.0, 3)
1e-09
>>> proves_unique(True), proves_unique(lambda: True), proves_unique(lambda: False)
(False, True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["exact_margin", "proves_unique", "sorted_gap"]

_EPS = float(np.finfo(float).eps)


def exact_margin(total: float, terms: int) -> float:
    """Below the answer by more than this, in exact arithmetic, no action is within ``"exact"``'s tolerance.

    ``total``: at least ``sum |w|`` (hence at least ``|v(a)|``); ``terms``: at least the number of weights.
    """
    return 1e-9 * (1.0 + total) + 4.0 * (terms + 1) * _EPS * total


def proves_unique(ruled: Any) -> bool:
    """Whether ``ruled`` (the flag of ``Oracle._linear_ruled``) is a certificate that holds (module docstring)."""
    return callable(ruled) and bool(ruled())


def sorted_gap(ranked: list[float], room: int, exact: bool) -> float:
    """How far below the best every other choice of at most ``room`` (exactly ``room``: ``exact``) of the values
    ``ranked`` (decreasing) falls, in exact arithmetic up to one rounding of a difference; ``inf``: one choice.

    The best holds the ``k`` first values (``k = room`` when ``exact``, else ``min(room, count of positive)``;
    arms of weight 0 are optional, so a 0 gives gap 0). Another choice ``b`` drops some held values and takes
    others: ``v(a) - v(b)`` is a sum over the values ``a`` holds and ``b`` does not (each ``>= s_k``) minus those
    ``b`` holds and ``a`` does not (each ``<= s_(k+1)``), at least one term. When ``k = room`` there are no more
    taken than dropped, so pair each taken with a dropped one (``>= s_k - s_(k+1)``); the unpaired dropped ones
    give ``>= s_k`` (only without ``exact``). When ``k < room`` (without ``exact``) every value left out is
    ``<= 0`` and each term is ``>= min(s_k, -s_(k+1))``. A subtraction rounds once (relative ``eps``): far
    below :func:`exact_margin`'s rounding term, which callers compare the gap with.

    >>> sorted_gap([0.9, 0.5, 0.4, -0.2], 2, False), sorted_gap([0.9, 0.5], 2, True)
    (0.09999999999999998, inf)
    >>> sorted_gap([0.9, 0.5, -0.25], 3, False), sorted_gap([0.9, 0.0], 1, False)
    (0.25, 0.9)
    """
    n = len(ranked)
    if room <= 0:
        return float("inf")
    if exact:
        return ranked[room - 1] - ranked[room] if 0 < room < n else float("inf")
    k = 0
    while k < min(room, n) and ranked[k] > 0.0:
        k += 1
    gaps = []
    if k:
        gaps.append(ranked[k - 1])  # drop the lowest held value
    if k < n:
        gaps.append(ranked[k - 1] - ranked[k] if k == room else -ranked[k])  # swap, or add the best left out
    return min(gaps, default=float("inf"))
