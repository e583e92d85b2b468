"""Gradient cuts of the norm ``f sqrt(a @ M @ a)`` for a positive definite ``M`` (sign -1).

When ``M`` (on the free arms) is positive definite, ``n(x) = sqrt(x @ M @ x)`` is a
norm, convex on all of ``R^d``, and Cauchy-Schwarz in the ``M`` inner product gives,
for every point ``x0`` with ``n(x0) > 0`` and every ``x``,

    ``n(x) >= (M x0) @ x / n(x0)``  (equality at ``x = x0``).

The sign -1 model's objective is ``mu @ a + w`` where the column ``w`` is capped by
the secant block (:class:`~.secants.pieces.PiecewiseSqrt` with ``link``) and by the rows
``w <= -f (M x0) @ a / n(x0)`` of :class:`GradientCuts`. At the true representation
of any action both caps are at least ``-f n(a)`` (the secants lie above the curve;
the cuts below the norm), so ``w`` can reach ``-f n(a)`` and the MILP's bound stays an
upper bound on the index of every action in the window: the cuts add nothing to the
exactness argument of :mod:`.secants.pieces` and take nothing from it. They tighten the LP
relaxation: the secant block alone relaxes to its chord over the whole window, the
cuts (separated at LP points, Kelley's method) bring the root close to the convex
relaxation ``max mu @ x - f n(x)`` (outer approximation, Duran and Grossmann 1986).

Only queries whose terms are of order 1 get the cuts (:func:`well_scaled`).
Positive definiteness is decided with margin: the least eigenvalue on the free arms
must exceed ``1e-9`` times the largest entry (``eigvalsh`` errs by about ``1e-16 d``
times that); otherwise no gradient cut is added. Covariance matrices of the policies
(inverse Gram matrices) are positive definite.

Example
-------
>>> M = np.array([[2.0, 0.5], [0.5, 1.0]])
>>> cuts = GradientCuts(M, np.arange(2), f=1.0)
>>> bool(cuts.coefficients(np.array([1.0, 1.0])) @ np.array([1.0, 0.0]) <= np.sqrt(2.0))
True
"""

from __future__ import annotations

import numpy as np

from ..core.engine import Engine
from ..core.queries import NormQuery
from .cuts import separate_at_relaxations

__all__ = ["GradientCuts", "positive_definite", "well_scaled"]

#: Least eigenvalue, relative to the largest entry, for ``M`` to count as positive definite.
_PD_MARGIN = 1e-9
#: An LP point gets a cut when its ``w`` is this far (relative) above ``-f n(x)``.
_VIOLATION = 1e-6


def well_scaled(query: NormQuery) -> bool:
    """Whether the query's terms (``max |mu|`` and ``f sqrt(max |M|)``) lie within ``2^+-10`` of 1.

    With ``f = 1e4``, ``M ~ 1e6`` and ``mu ~ 1e4`` HiGHS proved a wrong optimum (gap 7e6) of the
    sign -1 model once gradient cuts (coefficients ``~f``) were in it; such queries go without.

    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(2, 1), "enumerate")
    >>> [well_scaled(oracle.norm_query(np.ones(2), np.eye(2), f)) for f in (3.0, 1e4)]
    [True, False]
    """
    terms = (float(np.abs(query.mu).max(initial=0.0)), query.f * float(np.sqrt(np.abs(query.M).max(initial=0.0))))
    size = max(terms)
    return bool(np.isfinite(size)) and 2.0**-10 <= size <= 2.0**10


def positive_definite(M: np.ndarray, arms: np.ndarray) -> bool:
    """Whether ``M`` restricted to ``arms`` is positive definite beyond rounding (see the module docstring).

    >>> positive_definite(np.eye(2), np.arange(2)), positive_definite(np.ones((2, 2)), np.arange(2))
    (True, False)
    """
    if not len(arms):
        return False
    sub = M[np.ix_(arms, arms)]
    scale = float(np.abs(sub).max(initial=0.0))
    return scale > 0.0 and float(np.linalg.eigvalsh(sub)[0]) > _PD_MARGIN * scale


class GradientCuts:
    """Rows ``w + f (M x0) @ a / sqrt(x0 @ M @ x0) <= 0`` on the free ``arms``."""

    def __init__(self, M: np.ndarray, arms: np.ndarray, f: float):
        self.sub = M[np.ix_(arms, arms)]
        self.arms = arms
        self.f = f
        self.cuts = 0

    def coefficients(self, x: np.ndarray) -> np.ndarray:
        """``f M x / sqrt(x @ M @ x)`` for the arm values ``x`` (zeros where ``x @ M @ x`` is 0)."""
        mx = self.sub @ x
        norm = float(np.sqrt(max(float(x @ mx), 0.0)))
        return self.f * mx / norm if norm > 0.0 else np.zeros(len(x))

    def add(self, model: Engine, w: int, action: np.ndarray) -> None:
        """The cut at ``action`` (a bool vector of length ``d``): exact there."""
        self._row(model, w, action[self.arms].astype(float))

    def separate(self, model: Engine, w: int, rounds: int) -> None:
        """Cuts at LP-relaxation points while ``w > -f n(x)`` there, up to ``rounds`` LP solves."""
        if not len(self.arms):
            return

        def cut(x: np.ndarray) -> bool:
            point = x[self.arms]
            cap = -self.f * float(np.sqrt(max(float(point @ self.sub @ point), 0.0)))
            if x[w] <= cap + _VIOLATION * (1.0 + abs(cap)):
                return False
            self._row(model, w, point)
            return True

        separate_at_relaxations(model, rounds, cut)

    def _row(self, model: Engine, w: int, x: np.ndarray) -> None:
        coef = self.coefficients(x)
        if not coef.any():
            return
        model.add_rows_fixed([-np.inf], [0.0], np.r_[w, self.arms], np.r_[1.0, coef], len(self.arms) + 1)
        self.cuts += 1
