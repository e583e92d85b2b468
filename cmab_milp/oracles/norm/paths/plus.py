"""Sign +1 on s-t paths of graphs with cycles: LP branch and bound with tangents of a concave overestimator.

The query is ``max mu @ a + f n(a)``, ``n(a) = sqrt(a @ M @ a)``, ``M`` positive definite, over the simple
s-t paths ``a`` its restrictions admit. A linear query here is a longest path (NP-hard), so neither
:mod:`.branch.plus` (Frank-Wolfe on a combinatorial linear oracle) nor the outer approximation's MILPs
(longest-path models with a lifted quadratic form) are cheap; this module bounds nodes by the linear program
of :mod:`.paths.minus` instead, whose search, rows, proven bounds and incumbent heuristics it shares
(:class:`~.paths.minus.PathBranch`).

The bound. Let ``q(x) = x @ A @ x + b @ x`` be the concave overestimator of :mod:`.branch.plus`
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
proven bound by :func:`~.paths.lp.safe_bound`) bounds the node, whatever subset of the rows the LP holds.
This is Kelley's method on ``max_{x in P} mu @ x + f sqrt(q(x))``, as in :mod:`.paths.minus` with ``-n``.

The star terms (:func:`vertex_parts`). On a path every node's edges hold 0 or ``r_v`` of its arms (2 at an
inner node, 1 at ``s`` and ``t``; directed: the arcs into a node and those out of it, 1 each), so
``g_v(a) = r_v a(S_v) - a(S_v)^2`` is 0 on every path, and ``a @ M @ a = a @ (M - tau N' N) @ a + tau (N' r) @ a``
there. The diagonal then needs only ``D - M + tau N' N`` PSD: ``N' N`` takes the smooth directions (paths
are long runs of adjacent arms) out of what ``D`` must cover. ``tau`` is the tuning option ``paths_vertex_taus``
times the mean ``M_ii``; between paths the form gains ``tau sum_v g_v(x)`` (0 where the LP point's degree at ``v``
is 0 or ``r_v``) against less ``sum_i d_i x_i (1 - x_i)``.

Forms bound ``t`` together (the LP takes the least of them at every point): the one with the star terms,
the diagonal alone (both have ``q(a) = a @ M @ a`` on every path) and, when ``M``'s mean
off-diagonal entry ``kappa`` is positive, the one with the size term ``kappa |a| (m - |a|)``, which is not
exact on paths shorter than ``m``. The first one's plane at each new incumbent enters the LP, so a node
holding a single path is bounded by that path's index and closes (with the size term's form alone no node
ever closes). Each extra form adds tangent rows to every LP, so the diagonal alone is made only where the star
forms' diagonal shift (its trace) is above ``tuning.paths_plain_share`` of its own (with a diagonal ``M`` its own
is the least; with ``A A' / d + 0.1 I`` the stars' is ~0.77 of it), and the size term's only where its diagonal
saves more (by trace) than ``kappa m^2``, four times what its size term may add on an action. These choose effort
only: every form is valid.

Measured figures and the ideas tried: ``docs/performance.md``, "Norm queries".

Example: both signs' path searches through the ``highs`` backend, :mod:`.norm.method`.
"""

from __future__ import annotations

import numpy as np

from ..branch.overestimator import overestimator_parts, shifted_form
from ..branch.plus import psd_majorant
from ..scaling import arms_bound
from .lp import _EPS, _ROUND, _PathLP
from .minus import PathBranch

__all__ = ["ConcavePathBranch"]

#: ``q(x0)`` below this share of its scale has no tangent worth taking (the triangle row serves there).
_Q_FLOOR = 1e-12


def vertex_parts(space, M: np.ndarray, arms: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``(B, l)`` with ``a @ B @ a + l @ a = a @ M @ a`` on every path: ``B = M - tau N' N``, ``l = tau N' r`` on
    ``arms``, ``N`` the incidence of stars and arms and ``r_v`` the count of a star's arms on a path through it, so
    that each ``g_v(a) = r_v a(S_v) - a(S_v)^2`` is 0 on paths (``a(S_v)`` is 0 or ``r_v``). Undirected graphs: the
    edges at each node, ``r`` 1 at ``s`` and ``t``, else 2. Directed: the arcs into each node and the arcs out of
    it, ``r = 1`` (a simple path enters and leaves a node at most once).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.cycle_graph(4), 0, 2)
    >>> M = np.eye(4) + 0.5
    >>> B, l = vertex_parts(space, M, np.arange(4), 1.0)
    >>> paths = space.enumerate().astype(float)
    >>> np.allclose(np.einsum("ni,ij,nj->n", paths, B, paths) + paths @ l, np.einsum("ni,ij,nj->n", paths, M, paths))
    True
    """
    arms = np.asarray(arms, int)
    n = int(max(space.tail.max(), space.head.max())) + 1
    columns = np.arange(len(arms))
    if space.directed:
        N = np.zeros((2 * n, len(arms)))
        N[space.head[arms], columns] = 1.0  # into each node
        N[n + space.tail[arms], columns] = 1.0  # out of it
        r = np.ones(2 * n)
    else:
        N = np.zeros((n, len(arms)))
        N[space.tail[arms], columns] = 1.0
        N[space.head[arms], columns] = 1.0
        r = np.full(n, 2.0)
        r[[space.s, space.t]] = 1.0
    B = np.array(M, dtype=float)
    B[np.ix_(arms, arms)] -= tau * (N.T @ N)
    linear = np.zeros(len(M))
    linear[arms] = tau * (N.T @ r)
    return B, linear


def _shift(B: np.ndarray, A: np.ndarray, arms: np.ndarray) -> float:
    """The trace of the diagonal ``shifted_form`` moved out of ``B`` into ``A`` on ``arms``."""
    return float(np.sum(np.diag(B)[arms] - np.diag(A)[arms]))


class ConcavePathBranch(PathBranch):
    """Branch and bound for ``max mu @ a + f n(a)`` on s-t paths of a cyclic graph (module docstring).

    Arguments as :class:`~.paths.minus.PathBranch`'s (``l_hi`` an upper bound of ``a @ M @ a`` on actions).
    """

    def make_bounds(self, arms: np.ndarray, l_hi: float) -> _PathLP:
        """The concave overestimator ``q`` on ``arms`` and the LP, ``t`` in ``[-sqrt(l_hi), 0]``, with the
        triangle row. The forms are made on :func:`~.branch.plus.psd_majorant`'s ``P`` (``M`` where it is definite),
        so that they hold for an indefinite ``M`` too."""
        M = psd_majorant(self.q.M, np.asarray(arms, int))
        self.forms, self.M_r = [], None
        self.arms = np.asarray(arms, int)
        # exact on actions (no size term): its tangent at an action is exact there, so a node holding a single
        # action is bounded by that action's index (with the size term alone, no node ever closes)
        self.parts = overestimator_parts(M, arms, arms_bound(self.space), size=False)
        self.concave: list[tuple[np.ndarray, np.ndarray, float]] = []
        scale = float(np.mean(np.diag(M)[arms])) if len(arms) else 0.0
        star_shift = np.inf  # the least diagonal shift (trace) of a vertex form
        for tau in self.tuning.paths_vertex_taus:
            B, linear = vertex_parts(self.space, M, self.arms, tau * scale)
            A, b = shifted_form(B, linear, arms)
            self.add_form(A, b)
            star_shift = min(star_shift, _shift(B, A, arms))
        plain = shifted_form(*self.parts, arms)
        plain_shift = _shift(self.parts[0], plain[0], arms)
        # the plain form where the vertex forms' diagonal is not much below its own (a diagonal M: always)
        if not self.concave or (self.tuning.paths_plain and star_shift > self.tuning.paths_plain_share * plain_shift):
            self.add_form(*plain)  # (first, exact on paths, when there is no vertex form)
        if self.tuning.paths_size_form:
            sized = overestimator_parts(M, arms, arms_bound(self.space))
            kappa_m = float(sized[1][arms].max(initial=0.0))  # kappa m
            sized_form = shifted_form(*sized, arms) if kappa_m > 0.0 else None
            # kept where its diagonal saves more than its size term may cost on an action (kappa m^2 / 4), per 1/4
            if sized_form is not None and plain_shift - _shift(sized[0], sized_form[0], arms) > kappa_m * arms_bound(
                self.space
            ):
                self.add_form(*sized_form)
        lp = _PathLP(self.space, self.q, 0.0, -float(np.sqrt(max(l_hi, 0.0))), tuning=self.tuning)
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
        x = x[: len(h)]  # (a product form also sees the visit columns: :mod:`.paths.dual_form`)
        hx = A @ x + h
        qx = float(x @ (hx + h))
        if qx <= _Q_FLOOR * (1.0 + row_abs):
            return None
        n = float(np.sqrt(qx))
        grad = hx / n
        const = float(grad @ x) - n
        slack = _ROUND * len(x) * _EPS * (row_abs / n + float(np.abs(grad).sum()) + abs(const) + n + 1.0)
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
        q = min(float(x[: len(h)] @ (A @ x[: len(h)] + 2.0 * h)) for A, h, _ in self.concave)
        return -float(np.sqrt(max(q, 0.0)))
