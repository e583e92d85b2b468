"""The finite set of outcome values that per-arm distributions live on.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Every distribution in :mod:`cmab_milp.nonlinear` is a probability vector over one
shared, sorted :class:`OutcomeGrid`. When the values are multiples of a common
step ``1/q`` (``q`` up to :data:`MAX_DENOMINATOR`), sums of outcomes stay on
the integer lattice ``k/q``, which is what makes sum-based rewards exactly
computable by convolution. :func:`discretise` is Algorithm 8's map of a
continuous outcome to the right end ``j/s`` of its interval.

Example
-------
>>> grid = OutcomeGrid([0.4, 0.2, 1.0])
>>> grid.values.tolist(), grid.denominator, grid.units.tolist()
([0.2, 0.4, 1.0], 5, [1, 2, 5])
>>> grid.index_of([1.0, 0.2]).tolist()
[2, 0]
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["MAX_DENOMINATOR", "OutcomeGrid", "discretisation_grid", "discretise", "n_intervals"]

#: Largest common denominator for which sums are kept on an integer lattice.
MAX_DENOMINATOR = 100_000

_TOL = 1e-9


class OutcomeGrid:
    """Sorted distinct outcome values in ``[0, 1]``.

    Parameters
    ----------
    values : array-like
        Distinct numbers in ``[0, 1]`` (any order; stored sorted).

    Attributes
    ----------
    values : ndarray (G,)
        The sorted values.
    denominator : int or None
        Smallest ``q <= MAX_DENOMINATOR`` with every ``q * v`` an integer, else ``None``.
    units : ndarray (G,) of int or None
        ``q * values`` as integers (``None`` without a common denominator).
    """

    def __init__(self, values: Any):
        v = np.asarray(values, dtype=float)
        if v.ndim != 1 or v.size == 0:
            raise ValueError(f"values must be a non-empty 1-D list of numbers, got shape {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError("values must be finite numbers")
        if v.min() < 0.0 or v.max() > 1.0:
            raise ValueError(f"values must lie in [0, 1], got min {v.min():g} and max {v.max():g}")
        order = np.argsort(v, kind="stable")
        v = v[order]
        if np.any(np.diff(v) <= _TOL):
            raise ValueError("values must be distinct")
        self.values = v
        self.order = order
        self.denominator = _common_denominator(v)
        if self.denominator is None:
            self.units = None
        else:
            self.units = np.rint(v * self.denominator).astype(np.int64)
            self.values = self.units / self.denominator

    def __len__(self) -> int:
        return len(self.values)

    def index_of(self, y: Any) -> np.ndarray:
        """Positions of the outcomes ``y`` on the grid; ``ValueError`` for a value off the grid."""
        y = np.asarray(y, dtype=float)
        pos = np.clip(np.searchsorted(self.values, y - _TOL), 0, len(self.values) - 1)
        bad = np.abs(self.values[pos] - y) > _TOL
        if bad.any():
            raise ValueError(f"outcome {float(y[bad].flat[0])!r} is not one of the grid values {self.values.tolist()}")
        return pos

    def with_value(self, value: float) -> OutcomeGrid:
        """This grid plus ``value`` (itself if already present)."""
        return self.merged([value])

    def new_values(self, y: Any) -> np.ndarray:
        """The distinct values of ``y`` that are not on the grid (within ``1e-9``), sorted.

        >>> OutcomeGrid([0.0, 1.0]).new_values([1.0, 0.5, 0.5 + 1e-12, 0.0]).tolist()
        [0.5]
        """
        y = np.unique(np.asarray(y, dtype=float).ravel())
        if y.size == 0:
            return y
        y = y[np.r_[True, np.diff(y) > _TOL]]
        pos = np.searchsorted(self.values, y)
        below = np.abs(y - self.values[np.clip(pos - 1, 0, len(self) - 1)]) <= _TOL
        above = np.abs(y - self.values[np.clip(pos, 0, len(self) - 1)]) <= _TOL
        return y[~(below | above)]

    def merged(self, y: Any) -> OutcomeGrid:
        """This grid plus the values of ``y`` not already on it (itself if there are none).

        >>> OutcomeGrid([0.5, 1.0]).merged([0.25, 1.0]).values.tolist()
        [0.25, 0.5, 1.0]
        """
        new = self.new_values(y)
        return self if new.size == 0 else OutcomeGrid(np.concatenate([self.values, new]))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, OutcomeGrid)
            and len(other) == len(self)
            and bool(np.all(np.abs(other.values - self.values) <= _TOL))
        )

    def __hash__(self) -> int:
        return hash(tuple(np.round(self.values, 9)))

    def __repr__(self) -> str:
        return f"OutcomeGrid({self.values.tolist()})"


def _common_denominator(values: np.ndarray) -> int | None:
    q = 1
    for v in values:
        frac = Fraction(float(v)).limit_denominator(MAX_DENOMINATOR)
        if abs(float(frac) - v) > 1e-12:
            return None
        q = q * frac.denominator // math.gcd(q, frac.denominator)
        if q > MAX_DENOMINATOR:
            return None
    return q


def n_intervals(m: int, T: int, C: float = 1.0) -> int:
    """Algorithm 8's number of intervals ``s = ceil(C * sqrt(m * T))``.

    ``C`` is the Lipschitz constant of Assumption 2
    (``|r(a, y) - r(a, y')| <= C sum_{i in a} |y_i - y'_i|``); the policies pass
    the reward's declared :attr:`~cmab_milp.nonlinear.rewards.Reward.lipschitz`
    (1 when it declares none).

    >>> n_intervals(2, 10_000), n_intervals(2, 10_000, C=2.0)
    (142, 283)
    """
    if m < 1 or T < 1 or not (C > 0 and math.isfinite(C)):
        raise ValueError(f"n_intervals needs m >= 1, T >= 1 and a finite C > 0, got m={m}, T={T}, C={C}")
    return math.ceil(C * math.sqrt(m * T))


def discretisation_grid(s: int, upper: float = 1.0) -> OutcomeGrid:
    """The grid ``{1/s, 2/s, ..., 1}`` of Algorithm 8 (scaled by ``upper`` for outcomes in ``[0, upper]``).

    >>> discretisation_grid(4).values.tolist()
    [0.25, 0.5, 0.75, 1.0]
    >>> discretisation_grid(2, upper=0.5).values.tolist()
    [0.25, 0.5]
    """
    if s < 1:
        raise ValueError(f"the number of intervals must be >= 1, got {s}")
    return OutcomeGrid(upper * np.arange(1, s + 1) / s)


def discretise(y: Any, s: int, upper: float = 1.0) -> np.ndarray:
    """Map outcomes in ``[0, upper]`` to the right end ``upper * j/s`` of their interval (Algorithm 8).

    ``I_1 = [0, 1/s]`` and ``I_j = ((j-1)/s, j/s]`` (times ``upper``).

    >>> discretise([0.0, 0.1, 0.25, 0.26, 1.0], 4).tolist()
    [0.25, 0.25, 0.25, 0.5, 1.0]
    """
    y = np.asarray(y, dtype=float)
    j = np.clip(np.ceil(y / upper * s - 1e-9), 1, s)
    return upper * j / s
