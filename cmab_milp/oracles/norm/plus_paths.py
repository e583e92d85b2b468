"""Sign +1 on s-t paths of graphs with cycles: LP branch and bound with tangents of a concave overestimator.

The query is ``max mu @ a + f n(a)``, ``n(a) = sqrt(a @ M @ a)``, ``M`` positive definite, over the simple
s-t paths ``a`` its restrictions admit. A linear query here is a longest path (NP-hard), so neither
:mod:`.plus_branch` (Frank-Wolfe on a combinatorial linear oracle) nor the outer approximation's MILPs
(longest-path models with a lifted quadratic form, ~2 s each on an 8x8 grid) are cheap; this module bounds
nodes by the linear program of :mod:`.minus_paths` instead, whose search, rows, proven bounds and incumbent
heuristics it shares (:class:`~.minus_paths.PathBranch`).

The bound. Let ``q(x) = x @ A @ x + b @ x`` be the concave overestimator of :mod:`.plus_branch`
(``A = B - D`` negative semidefinite on the arms not excluded, ``q(a) >= a @ M @ a`` on every action:
:func:`~.overestimator.overestimator_parts` and :func:`~.overestimator.shifted_form`). ``sqrt(q)`` is concave on
the convex set ``{q >= 0}``, which holds every action, so for every ``x0`` with ``q(x0) > 0`` and every action
``a`` (the tangent plane lies above a concave graph)

    ``n(a) <= sqrt(q(a)) <= sqrt(q(x0)) + grad @ (a - x0)``,  ``grad = (2 A x0 + b) / (2 sqrt(q(x0)))``.

The LP's column ``t`` (cost ``-f``, bounds ``[-sqrt(l_hi), 0]``) stands for ``-n(a)``, and each such plane is
the row ``t >= -grad @ a + (grad @ x0 - sqrt(q(x0)))``; the triangle inequality ``n(a) <= sum_i a_i
sqrt(M_ii)`` gives the row ``t >= -sqrt(diag M) @ a``, valid everywhere, which starts every query. Every
action ``a`` of a node gives the LP point ``(a, -n(a))``: it satisfies every row (each plane is above
``n(a)``) and the column bounds, and its LP value is ``mu @ a + f n(a)``, the index. So the LP optimum (a
proven bound by :func:`~.minus_paths.safe_bound`) bounds the node, whatever subset of the rows the LP holds.
This is Kelley's method on ``max_{x in P} mu @ x + f sqrt(q(x))``, as in :mod:`.minus_paths` with ``-n``.

Two forms bound ``t``: the diagonal alone (``q(a) = a @ M @ a`` on every action) and, when ``M``'s mean
off-diagonal entry ``kappa`` is positive, the one with the size term ``kappa |a| (m - |a|)``, which is not
exact on paths shorter than ``m``. The exact one's plane at each new incumbent enters the LP, so a node
holding a single path is bounded by that path's index and closes. With the size term's form alone no node
ever closed: a query on the 8x8 grid at f = 0.01, root bound 39.3098 against the optimum 39.2829, took 343
nodes down to its leaves; now 1. (On bench/norm_large.py's covariances ``kappa ~ 0``.)

Measured (bench/norm_large.py's s-t queries, 8x8 grid, d = 112, every other one restricted; ``bench/norm_crew.py
--large "s-t paths" --variants no-plus-paths,new --backends highs --time-limit 10``, interleaved per query),
median / max s, outer approximation -> this module::

    f     before                 after
    0.1   0.95 / 1.53            0.05 / 0.16   (5-91 nodes)
    0.3   10.01 / 10.07 (2*)     0.18 / 0.43   (35-91 nodes)
    1     10.01 / 10.05 (3*)     10.00 / 10.00 (3*)
    3     10.01 / 10.04 (3*)     10.01 / 10.01 (3*)

At f = 1 the one query that finishes in 20 s takes 2,087 nodes (root bound 46.94 against 44.54): the
diagonal of this ``M`` (``A A' / d + 0.1 I``) must be ~3.5 an arm against ``M_ii ~ 1.1`` for ``M - D`` to be
negative semidefinite, so mixtures of paths gain ``sum_i d_i x_i (1 - x_i)``. Tried and dropped: the root's
diagonal tuned to its LP points (weighted max-cut diagonals, 4 rounds, each a further form): root 46.94 ->
46.23, yet 2,251 nodes against 2,087 and 27 s against 19 s. A node's own form lowered on its free arms (as
:mod:`.plus_branch` does) would need rows scoped to a subtree in the shared LP; by the eigenvalues it would
lower ``d`` by 0.05-0.3 of ~3.5 at 10-40 fixed arms, so it was not built.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import last_stats
>>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)  # 0-1-2 or 0-4-3-2
>>> oracle = cm.make_oracle(space, "highs")
>>> mu, M = np.array([0.5, 0.1, 0.5, 0.6, 0.6]), np.eye(5)
>>> oracle.argmax_norm(mu, M, 1.0, sign=1).astype(int).tolist(), last_stats(oracle).method
([0, 1, 0, 1, 1], 'branch-path-concave')
"""

from __future__ import annotations

import numpy as np

from .minus_paths import _EPS, _ROUND, PathBranch, _PathLP
from .overestimator import overestimator_parts, shifted_form
from .scaling import arms_bound

__all__ = ["ConcavePathBranch"]

#: ``q(x0)`` below this share of its scale has no tangent worth taking (the triangle row serves there).
_Q_FLOOR = 1e-12
#: Also bound with the overestimator's size term (``kappa |a| (m - |a|)``, when ``kappa > 0``).
_SIZE_FORM = True


class ConcavePathBranch(PathBranch):
    """Branch and bound for ``max mu @ a + f n(a)`` on s-t paths of a cyclic graph (module docstring).

    Arguments as :class:`~.minus_paths.PathBranch`'s (``l_hi`` an upper bound of ``a @ M @ a`` on actions).
    """

    def make_bounds(self, arms: np.ndarray, l_hi: float) -> _PathLP:
        """The concave overestimator ``q`` on ``arms`` and the LP, ``t`` in ``[-sqrt(l_hi), 0]``, with the
        triangle row."""
        M = self.q.M
        self.forms, self.M_r = [], None
        self.arms = np.asarray(arms, int)
        # exact on actions (no size term): its tangent at an action is exact there, so a node holding a single
        # action is bounded by that action's index (with the size term alone, no node ever closes)
        self.parts = overestimator_parts(M, arms, arms_bound(self.space), size=False)
        self.concave: list[tuple[np.ndarray, np.ndarray, float]] = []
        self.add_form(*shifted_form(*self.parts, arms))
        if _SIZE_FORM:
            sized = overestimator_parts(M, arms, arms_bound(self.space))
            if np.any(sized[1]):  # kappa > 0
                self.add_form(*shifted_form(*sized, arms))
        lp = _PathLP(self.space, self.q, 0.0, -float(np.sqrt(max(l_hi, 0.0))))
        triangle = np.zeros(self.d)
        triangle[arms] = np.sqrt(np.maximum(np.diag(M)[arms], 0.0))
        self.triangle = -triangle
        lp.add_tangent(self.triangle, -_ROUND * self.d * _EPS * (float(triangle.sum()) + 1.0))
        return lp

    def add_form(self, A: np.ndarray, b: np.ndarray) -> None:
        """Bound ``t`` with the tangents of ``q(x) = x @ A @ x + b @ x`` too."""
        h = b / 2.0
        self.concave.append((A, h, float((np.abs(A).sum(axis=1) + np.abs(h)).max(initial=0.0))))

    def exact_tangent(self, action: np.ndarray) -> tuple[np.ndarray, float] | None:
        """The first overestimator's plane at ``action`` (exact there up to its size term)."""
        made = self.concave_tangent(action, self.concave[0])
        return None if made is None else (made[0], made[1] - made[2])

    def concave_tangent(self, x: np.ndarray, form) -> tuple[np.ndarray, float, float] | None:
        """``(coef, const, allowance)`` of the row ``t >= coef @ a + const - allowance`` (``-sqrt(q)``'s
        tangent at ``x``), or ``None`` where ``q(x)`` is about 0."""
        A, h, row_abs = form
        x = x[: self.d]
        hx = A @ x + h
        qx = float(x @ (hx + h))
        if qx <= _Q_FLOOR * (1.0 + row_abs):
            return None
        n = float(np.sqrt(qx))
        grad = hx / n
        const = float(grad @ x) - n
        slack = _ROUND * self.d * _EPS * (row_abs / n + float(np.abs(grad).sum()) + abs(const) + n + 1.0)
        return -grad, const, slack

    def tangents_at(self, x: np.ndarray) -> list[tuple[np.ndarray, float, float]]:
        """Each form's ``-sqrt(q)`` plane at ``x`` (the triangle row where ``q(x)`` is about 0)."""
        out = []
        for form in self.concave:
            made = self.concave_tangent(x, form)
            out.append((self.triangle, 0.0, 0.0) if made is None else made)
        return out

    def norm(self, x: np.ndarray) -> float:
        """``-min_k sqrt(q_k(x))``: the relaxation's ``t`` at ``x`` (its value is ``mu @ x - f t``)."""
        x = x[: self.d]
        q = min(float(x @ (A @ x + 2.0 * h)) for A, h, _ in self.concave)
        return -float(np.sqrt(max(q, 0.0)))
