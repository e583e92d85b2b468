"""Sign +1 by branch and bound on the linear oracle: a concave overestimator bounded by Frank-Wolfe steps.

The index ``phi(a) = mu @ a + f sqrt(a @ M @ a)`` is convex, so its maximum over the convex hull of
the actions is at a vertex: the hull alone bounds nothing. Every action has ``a_i^2 = a_i``, so for a
diagonal ``D = diag(d)`` with ``D - M`` PSD (:func:`concave_shift`),

    ``q(x) = x @ (M - D) @ x + d @ x``

equals ``a @ M @ a`` on every action, is concave, and on the box ``[0, 1]^d`` is at least
``x @ M @ x >= 0`` (``d_i (x_i - x_i^2) >= 0``). Hence ``psi(x) = mu @ x + f sqrt(q(x))`` is concave
on the box (``sqrt`` is concave and increasing), equals ``phi`` on actions, and for every point ``x``
of the box and every action ``a`` (concavity: the tangent plane is above the graph)

    ``phi(a) = psi(a) <= psi(x) + g @ (a - x)``,  ``g = grad psi(x) = mu + f ((M - D) x + d / 2) / sqrt(q(x))``.

So one linear query ``max_{a in S} g @ a`` bounds the index of every action of a set ``S`` of
actions, from any ``x`` in the box (not only in ``conv S``): a child node may start from its
parent's last gradient. Minimised over ``x in conv S`` the bound is ``max_{conv S} psi``, which
Frank-Wolfe steps (exact line search on ``psi``: :func:`~.minus_branch.line_maximum` of the
homogenised form) approach; every step's bound is valid and the least is kept.

The search itself (nodes = include / exclude sets of arms, split on the most fractional arm or a
violated forbidden pair, best bound first, ties by creation order, every vertex an incumbent
valued exactly) is :class:`~.minus_branch.LinearOracleBranch`'s; only the relaxation differs.

The diagonal ``D`` is :func:`~.shifts.diagonal_shift` above ``M`` (the least by trace of
``lambda_max I``, ``lambda'_max diag(M)`` and a max-cut semidefinite bound): the last halves the
nodes on bench/norm_large.py's trees and forests at f = 1 (6x6 trees: 1,925 -> 897 nodes,
1.5 -> 0.68 s).

Where it runs (:meth:`~.solver.NormSolver._plus_branch_applies`): spaces with a combinatorial linear oracle
whose MILP needs lazy cuts (spanning trees, forests), ``M`` definite. Measured (interleaved,
bench/norm_large.py's sign +1 queries, s, outer approximation -> this branch, before the max-cut
shift): trees of a 6x6 grid, f = 1: 9.5 -> 1.0 and 13.7 -> 0.32; trees 8x8, f = 0.3: 1.13 -> 0.25,
f = 1: stopped at 20 s -> 0.28 and 2.8; forests 8x8, f = 0.3: 4.6 -> 0.78, f = 1: stopped -> 1.2
(one of two). At f = 3 most still stop at 20 s, as Gurobi does. Elsewhere the outer
approximation's compact MILPs win: the shift ``D`` is loose when actions hold few of many arms or
``M`` is strongly correlated (Cardinality(100, 10), f = 1: 0.5 s against 18 s; the crew problem's
late queries: ~1 s against over 60 s).

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import last_stats
>>> oracle = cm.make_oracle(cm.SpanningTrees(nx.cycle_graph(4)), "highs")  # trees: drop one edge of four
>>> mu, M = np.array([0.9, 0.8, 0.7, 0.1]), np.eye(4) + 0.5 * np.ones((4, 4))
>>> oracle.argmax_norm(mu, M, 0.5, sign=1).astype(int).tolist(), last_stats(oracle).method
([1, 1, 1, 0], 'branch-concave')
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base import NormQuery
from .minus_branch import _EPS, _REL_GAP, _ROUND, LinearOracleBranch, _Node, line_maximum
from .scaling import proven
from .shifts import diagonal_shift

__all__ = ["ConcaveBranch", "concave_shift"]

#: Frank-Wolfe steps per node at most.
_STEPS = 12
#: Split a node as soon as a relaxed point is worth more than the incumbent.
_EARLY = True


def concave_shift(M: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """A diagonal ``d >= 0`` on ``arms`` (zero elsewhere) with ``diag(d) - M`` PSD on ``arms``
    (:func:`~.shifts.diagonal_shift` above ``M``: the least by trace of three candidates).

    >>> M = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> d = concave_shift(M, np.arange(2))
    >>> bool(np.linalg.eigvalsh(np.diag(d) - M)[0] >= 0), bool(np.allclose(d, 3.0))
    (True, True)
    """
    return np.maximum(diagonal_shift(M, arms, above=True), 0.0)


class ConcaveBranch(LinearOracleBranch):
    """Branch and bound for ``max mu @ a + f sqrt(a @ M @ a)`` (``M`` PSD) with concave-overestimator bounds."""

    def __init__(self, space, query: NormQuery, arms: np.ndarray, deadline: float | None, clock: Callable[[], float]):
        super().__init__(space, query, arms, deadline, clock)
        d = self.d
        shift = concave_shift(query.M, arms)
        Q = np.zeros((d + 1, d + 1))  # q(x) = (x, 1) @ Q @ (x, 1)
        Q[:d, :d] = query.M
        Q[np.arange(d), np.arange(d)] -= shift
        Q[:d, d] = Q[d, :d] = shift / 2.0
        self.Q = Q
        self.mu1 = np.r_[query.mu, 0.0]
        self.row_abs = float(np.abs(Q).sum(axis=1).max(initial=0.0))

    def tangent(self, x: np.ndarray) -> tuple[np.ndarray, float, float, float]:
        """``(g, c, psi(x), err)``: the tangent plane ``g @ a + c`` of ``psi`` at ``x`` and its rounding scale."""
        q = self.q
        x1 = np.r_[x, 1.0]
        qx1 = self.Q @ x1
        n = float(np.sqrt(max(float(x1 @ qx1), 0.0)))
        psi = float(q.mu @ x) + q.f * n
        if n <= 0.0:  # only at x = 0 with M = 0 on the box: psi = mu @ x
            return q.mu, 0.0, psi, self.mu_abs
        g = q.mu + q.f * qx1[: self.d] / n
        err = self.mu_abs + q.f * self.row_abs / n
        return g, psi - float(g @ x), psi, err

    def plane_bound(self, g: np.ndarray, c: float, err: float, s: np.ndarray) -> float:
        """``g @ s + c`` (``s`` the argmax of ``g``) plus the rounding allowance."""
        k = float(self.space.m)
        scale = err + float(np.abs(g).max(initial=0.0))
        return float(g @ s) + c + _ROUND * self.d * _EPS * (scale * (k + self.d) + abs(c))

    def relax(self, node: _Node) -> tuple[float, np.ndarray | None]:
        """Frank-Wolfe steps on ``psi`` over the node: its bound (at most the parent's) and the last point."""
        q = self.q
        res = self.restrictions(node.include, node.exclude)
        bound = -node.key
        if node.gradient is None:
            g, c, err = q.mu, 0.0, 0.0  # phi <= mu @ a + f sqrt(l_hi) is not used: start from a vertex
            s = self.linear(g, res)
            if s is None:
                return -np.inf, None
            self.offer(s)
            x = s.astype(float)
        else:
            g, c, err = node.gradient, node.error[0], node.error[1]
            s = self.linear(g, res)
            if s is None:
                return -np.inf, None
            self.offer(s)
            bound = min(bound, self.plane_bound(g, c, err, s))
            x = s.astype(float)
        for _ in range(_STEPS):
            if proven(bound, self.best_value):
                break
            g, c, psi, err = self.tangent(x)
            s = self.linear(g, res)
            self.offer(s)
            bound = min(bound, self.plane_bound(g, c, err, s))
            if bound - psi <= _REL_GAP * (1.0 + abs(bound)) or (_EARLY and psi > self.best_value):
                break
            step = s - x
            t = line_maximum(self.mu1, self.Q, -q.f, np.r_[x, 1.0], np.r_[step, 0.0])
            x = x + t * step
        node.gradient, node.error = g, (c, err)
        return bound, x
