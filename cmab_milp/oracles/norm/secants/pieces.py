"""Piecewise secants of ``-f sqrt(max(L, 0))`` (sign -1) and the window they cover.

``-sqrt(max(L, 0))`` is linear on ``L <= 0`` and convex on ``L >= 0``, so between
breakpoints (``0`` among them) its secants lie above it: an incremental
piecewise-linear block (:class:`PiecewiseSqrt`, a binary per breakpoint) values
every ``L`` of the window at the secant of its piece, and the MILP's bound is an
upper bound on the index of every action whose ``L`` is in the window (an action
may enter with an ``L`` inflated past its own, which only lowers its secant
value); the true value of its answer is a lower bound. HiGHS explores the pieces
in one tree, pruning all of them against the incumbent (a separate MILP per
interval solved each to optimality took 5x longer).

The window ``[min(l_lo, 0), hi)`` holds every action that beats the incumbent
``v``: such an action has ``f sqrt(L) < mu @ a - v <= top - v`` with ``top`` the
linear optimum, so ``L < ((top - v) / f)^2`` (:func:`window_top`), usually half the
range of :func:`~cmab_milp.oracles.norm.lifting.quadratic_form_bounds`. While the
bound is unproven, the answer's ``L`` becomes a breakpoint (the secants are then
exact there, :meth:`PiecewiseSqrt.add_point`), or, when the incumbent improved,
the window shrinks and the secants are rebuilt with every ``L`` seen as a
breakpoint (:func:`sqrt_grid`).

Example
-------
>>> window_top(100.0, 5.0, 2.0, 1.0)
9.0
"""

from __future__ import annotations

import math

import numpy as np

from ...core.base import OracleError
from ...core.engine import Engine

__all__ = ["PiecewiseSqrt", "sqrt_grid", "window_top"]

#: Breakpoints closer than this (relative to the window) are merged.
_MIN_PIECE = 1e-9


def window_top(l_hi: float, top: float, incumbent: float, f: float) -> float:
    """Every action worth more than ``incumbent`` has ``L`` below the returned value.

    Such an action has ``f sqrt(L) < mu @ a - incumbent <= top - incumbent`` (``top``:
    the largest ``mu @ a``), so ``L < ((top - incumbent) / f)^2``; ``l_hi`` bounds
    every ``L``.

    >>> window_top(100.0, 5.0, 2.0, 1.0), window_top(4.0, 5.0, 2.0, 1.0)
    (9.0, 4.0)
    """
    return min(l_hi, ((top - incumbent) / f) ** 2)


def sqrt_grid(lo: float, hi: float, n: int, extra: set[float], least: float = 0.0) -> list[float]:
    """Breakpoints from ``lo`` to ``hi > lo``: ``n`` pieces even in ``sqrt(L)``, and ``extra``.

    ``lo``, ``hi`` and, inside, ``0`` (the kink of ``-sqrt(max(L, 0))``) always stay;
    other points go when closer than ``_MIN_PIECE * (1 + |hi|)`` to a kept one or in
    ``(0, least)`` (a steep first secant, see :class:`PiecewiseSqrt`).

    >>> [round(x, 3) for x in sqrt_grid(-1.0, 4.0, 2, {3.0})]
    [-1.0, 0.0, 1.0, 3.0, 4.0]
    >>> sqrt_grid(-1.0, 1e-12, 16, {5e-13})
    [-1.0, 0.0, 1e-12]
    >>> sqrt_grid(0.0, 4.0, 2, {0.5}, least=2.0)
    [0.0, 4.0]
    """
    gap = _MIN_PIECE * (1.0 + abs(hi))
    kept = [lo, 0.0, hi] if lo < 0.0 < hi else [lo, hi]
    start = max(lo, 0.0)
    r0, r1 = math.sqrt(start), math.sqrt(hi)
    for p in sorted([*((r0 + (r1 - r0) * i / n) ** 2 for i in range(1, n)), *map(float, extra)]):
        if lo < p < hi and not 0.0 < p < least and min(abs(p - x) for x in kept) > gap:
            kept.append(p)
    return sorted(kept)


class PiecewiseSqrt:
    """Secants of ``-f sqrt(max(L, 0))`` between breakpoints, as an incremental MILP block.

    ``L = points[0] + sum_k delta_k`` with ``0 <= delta_k <= width_k`` and binaries
    ``z_k`` that make the pieces fill in order (``delta_k >= width_k z_k``,
    ``delta_{k+1} <= width_{k+1} z_k``); the objective (or, with ``link``, the cap on the
    column ``link``) gets ``f slope_k delta_k`` plus
    :attr:`const`. Every ``L`` in range is representable with the value of the secant
    of its piece, which is at least ``-f sqrt(max(L, 0))`` (the function is linear on
    ``L <= 0`` and convex on ``L >= 0``). A piece ``[0, p]`` with ``p < least`` would
    have a slope steeper than ``-f / sqrt(least)``, which multiplies HiGHS's row
    tolerance into the objective: it is flat instead (``0 >= -f sqrt(L)``, still
    above the curve), and its actions are set aside when found (no breakpoint goes
    into ``(0, least)``).
    """

    def __init__(
        self, model: Engine, L: int, f: float, points: list[float], least: float = 0.0, link: int | None = None
    ):
        self.model = model
        self.L = L
        #: With ``link`` (a column), the block's value caps that column (``w <= value``: a row of the
        #: block) instead of entering the objective, so other rows can cap ``w`` too.
        self.link = link
        self.f = f
        self.least = least
        self.points = points
        self.cols = self.rows = (0, 0)
        self._build()

    @staticmethod
    def phi(x):
        return -np.sqrt(np.maximum(x, 0.0))

    @property
    def const(self) -> float:
        return self.f * float(self.phi(self.points[0]))

    def slopes(self) -> np.ndarray:
        p = np.asarray(self.points)
        slope = np.diff(self.phi(p)) / np.diff(p)
        slope[(p[:-1] >= 0.0) & (p[1:] < self.least)] = 0.0
        return slope

    def values(self) -> np.ndarray:
        """The block's value (per unit of ``f``) at each breakpoint."""
        p = np.asarray(self.points)
        return self.phi(p[0]) + np.r_[0.0, np.cumsum(self.slopes() * np.diff(p))]

    def overshoot(self, l: float) -> float:
        """How far the block values ``l`` above ``-sqrt(max(l, 0))`` (per unit of ``f``)."""
        return float(np.interp(l, self.points, self.values()) - self.phi(l))

    def can_split(self, l: float) -> bool:
        """Whether ``l`` lies inside the window, outside ``(0, least)`` and away from every breakpoint."""
        p = self.points
        inside = p[0] < l < p[-1] and not 0.0 < l < self.least
        return inside and min(abs(x - l) for x in p) > _MIN_PIECE * (1.0 + abs(p[-1]))

    def add_point(self, l: float) -> None:
        """Split the piece holding ``l`` there: the secants become exact at ``l``."""
        if not self.can_split(l):
            raise OracleError("norm secants: breakpoint outside the window or already present")
        self.remove()
        self.points = sorted([*self.points, l])
        self._build()

    def remove(self) -> None:
        """Delete the block's rows and columns (rows appended after it only shift)."""
        self.model.delete_rows(*self.rows)
        self.model.delete_cols(*self.cols)

    def _build(self) -> None:
        model = self.model
        p = np.asarray(self.points)
        width = np.diff(p)
        slope = self.slopes()
        k = len(width)
        first = model.num_cols
        delta = first + np.arange(k)
        z = first + k + np.arange(k - 1)
        model.append_cols(
            np.r_[self.f * slope if self.link is None else np.zeros(k), np.zeros(k - 1)],
            np.zeros(2 * k - 1),
            np.r_[width, np.ones(k - 1)],
            integer=k + np.arange(k - 1) if k > 1 else None,
        )
        self.cols = (first, model.num_cols)
        row0 = model.num_rows
        model.add_rows_fixed([p[0]], [p[0]], np.r_[self.L, delta], np.r_[1.0, -np.ones(k)], k + 1)
        if self.link is not None:  # w - sum_k f slope_k delta_k <= const
            model.add_rows_fixed([-np.inf], [self.const], np.r_[self.link, delta], np.r_[1.0, -self.f * slope], k + 1)
        if k > 1:
            ones = np.ones(k - 1)
            model.add_rows_fixed(
                np.zeros(k - 1),
                np.full(k - 1, np.inf),
                np.stack([delta[:-1], z], 1).ravel(),
                np.stack([ones, -width[:-1]], 1).ravel(),
                2,
            )
            model.add_rows_fixed(
                np.full(k - 1, -np.inf),
                np.zeros(k - 1),
                np.stack([delta[1:], z], 1).ravel(),
                np.stack([ones, -width[1:]], 1).ravel(),
                2,
            )
        self.rows = (row0, model.num_rows)
