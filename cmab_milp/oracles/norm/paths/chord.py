"""A convex lower bound of ``n(a) = sqrt(a @ M @ a)`` on actions of known size range: the chord form.

For a diagonal ``D = diag(d) >= 0`` with ``A = M - D`` positive semidefinite (:func:`~.shifts.diagonal_shift`),
every 0/1 vector ``a`` has ``a @ D @ a = d @ a``, so

    ``n(a)^2 = a @ A @ a + phi(a)``,  ``phi(a) = d @ a``.

If every action has ``phi(a)`` in ``[L, U]`` (``0 <= L <= U``; e.g. ``L`` the sum of the ``k_lo`` least entries of
``d``, ``U`` of the ``k_hi`` largest, when every action has between ``k_lo`` and ``k_hi`` arms), then, ``sqrt``
being concave, it lies above its chord there: ``sqrt(phi) >= c(phi) = alpha + beta phi >= 0`` on ``[L, U]``.
Hence on every action

    ``n(a) = |(A^1/2 a, sqrt(phi(a)))| >= |(A^1/2 a, c(phi(a)))| = R(a)``,

and ``R(x) = |(A^1/2 x, alpha + beta d @ x)|``, a Euclidean norm of an affine map of ``x``, is convex. Its tangent at
any ``x0`` with ``R(x0) > 0`` is below it everywhere (Cauchy-Schwarz in ``R^(d+1)``, ``A`` PSD):

    ``R(x) >= ((A x0) @ x + c0 (alpha + beta d @ x)) / R(x0)``,  ``c0 = alpha + beta d @ x0``,

so every action has ``n(a) >= g @ a + g0`` with ``g = (A x0 + c0 beta d) / R(x0)``, ``g0 = c0 alpha / R(x0)``.

With ``L = 0`` and ``U = k_hi max(d)`` (uniform ``d``) this is the form of
:func:`~.branch.minus.relaxation_matrix` (``x @ (M - D + s s' / m) @ x``, ``s = sqrt(d)``, ``m = k_hi``); a
positive ``L`` raises the chord everywhere in ``(L, U)``: on an 8x8 grid's s-t paths (between 14 and 63 edges) at
50 edges ``c / sqrt`` is 0.97 instead of 0.89. Between actions ``R`` is larger than ``n`` (Jensen's gain of the
relaxation shrinks), on actions it is at most ``n``: bounds built from it stay valid.

Rounding: :meth:`ChordNorm.tangent` returns an allowance to subtract from ``g0`` (``_ROUND`` times ``d`` ulps of the
terms' magnitudes), and ``alpha`` is lowered by a few ulps of ``sqrt(U)`` so that the computed chord stays below
``sqrt``.

>>> M = np.array([[2.0, 0.5], [0.5, 2.0]])
>>> form = ChordNorm(M, np.arange(2), 1, 2)  # every action has one or two arms
>>> [round(form.value(np.array(a, float)), 6) for a in ([1, 0], [0, 1], [1, 1])]  # equal to n on these
[1.414214, 1.414214, 2.236068]
>>> g, g0, value, allowance = form.tangent(np.array([0.5, 0.5]))
>>> bool(g @ np.array([1.0, 1.0]) + g0 - allowance <= np.sqrt(5.0))  # below n on an action
True
"""

from __future__ import annotations

import numpy as np

from ..shifts import diagonal_shift

__all__ = ["ChordNorm", "chord"]

#: Rounding allowance of a tangent, in units of ``d * eps`` times the terms' magnitudes.
_ROUND = 8.0
_EPS = float(np.finfo(float).eps)


def chord(low: float, high: float) -> tuple[float, float]:
    """``(alpha, beta)`` with ``alpha + beta p <= sqrt(p)`` for every ``p`` in ``[low, high]`` (the chord of ``sqrt``
    there, lowered by a few ulps), ``0 <= low <= high``.

    >>> alpha, beta = chord(1.0, 4.0)  # through (1, 1) and (4, 2)
    >>> round(alpha, 9), round(beta, 9)
    (0.666666667, 0.333333333)
    >>> chord(0.0, 0.0)
    (0.0, 0.0)
    """
    if not 0.0 <= low <= high or not np.isfinite(high):
        raise ValueError(f"the chord needs 0 <= low <= high < inf, got {low}, {high}")
    root_lo, root_hi = float(np.sqrt(low)), float(np.sqrt(high))
    if high - low <= 1e-12 * max(high, 1.0):  # one value: the constant sqrt(low)
        return max(root_lo - 8 * _EPS * root_hi, 0.0), 0.0
    beta = (root_hi - root_lo) / (high - low)  # = 1 / (root_hi + root_lo): exact to a few ulps
    alpha = root_lo - beta * low
    return alpha - 8 * _EPS * (root_hi + 1.0), beta


class ChordNorm:
    """``R(x) = |(A^1/2 x, alpha + beta d @ x)|`` for ``M`` on ``arms``, every action having between ``k_lo`` and
    ``k_hi`` of them (module docstring): ``R(a) <= sqrt(a @ M @ a)`` on every such 0/1 vector ``a`` off the other arms.

    ``d``: :func:`~.shifts.diagonal_shift` below ``M`` on ``arms`` (the larger by trace of ``lambda_min I`` and its
    scaled analogue).
    """

    def __init__(self, M: np.ndarray, arms: np.ndarray, k_lo: int, k_hi: int):
        M = np.asarray(M, float)
        arms = np.asarray(arms, int)
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(f"M must be square, got shape {M.shape}")
        if not 0 <= k_lo <= k_hi:
            raise ValueError(f"the arm counts need 0 <= k_lo <= k_hi, got {k_lo}, {k_hi}")
        self.d = np.zeros(len(M))
        self.on = np.zeros(len(M), bool)  # the arms: points are read on them only (A is PSD there)
        self.on[arms] = True
        if len(arms):
            self.d[arms] = diagonal_shift(M, arms, above=False, sweeps=0)[arms]
        self.A = M - np.diag(self.d)
        if len(arms) and float(np.linalg.eigvalsh(self.A[np.ix_(arms, arms)])[0]) < 0.0:
            raise ValueError("M is not positive semidefinite on the arms: no chord form")
        on = np.sort(self.d[arms]) if len(arms) else np.zeros(0)
        k_hi = min(k_hi, len(on))
        low = float(on[:k_lo].sum()) if k_lo <= len(on) else float(on.sum())
        high = float(on[len(on) - k_hi :].sum()) if k_hi else 0.0
        self.alpha, self.beta = chord(max(low, 0.0), max(high, low, 0.0))
        self.row_abs = float(np.abs(self.A).sum(axis=1).max(initial=0.0)) + float(self.d.max(initial=0.0))

    def value(self, x: np.ndarray) -> float:
        """``R(x)`` (``x`` read on the arms)."""
        x = np.where(self.on, x, 0.0)
        c = self.alpha + self.beta * float(self.d @ x)
        return float(np.sqrt(max(float(x @ self.A @ x), 0.0) + c * c))

    def tangent(self, x0: np.ndarray) -> tuple[np.ndarray, float, float, float] | None:
        """``(g, g0, R(x0), allowance)``: ``n(a) >= g @ a + g0 - allowance`` on every action on the arms (``None`` at
        ``R = 0``; ``x0`` is read on the arms)."""
        x0 = np.where(self.on, x0, 0.0)
        ax = self.A @ x0
        c0 = self.alpha + self.beta * float(self.d @ x0)
        value = float(np.sqrt(max(float(x0 @ ax), 0.0) + c0 * c0))
        if value <= 0.0:
            return None
        g = (ax + (c0 * self.beta) * self.d) / value
        g0 = c0 * self.alpha / value
        terms = self.row_abs * (float(np.abs(x0).sum()) + abs(c0)) / value  # the entries of g, before the division
        allowance = _ROUND * (len(x0) + 1) * _EPS * (terms + float(np.abs(g).sum()) + abs(g0) + 1.0)
        return g, g0, value, allowance
