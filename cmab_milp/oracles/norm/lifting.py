"""Lifting the quadratic form: columns ``L`` (and ``s``) for ``a @ M @ a`` with their rows.

Both signs use Glover's linearisation (``z_i`` for ``a_i sum_{j != i} M_ij a_j``, two
rows per arm), on the side the objective pushes against:

Sign +1 (:meth:`Lifted.glover_upper`, outer approximation)
    the model's ``L`` can reach ``a @ M @ a`` and never exceeds it on binary actions.
    (A column per pair ``w_ij = a_i a_j`` with McCormick and RLT rows, used before,
    has a tighter LP but 7,140 columns at d = 120: its MILPs were 5x slower on the
    matchings of K(10, 12).)

Sign -1 (:meth:`Lifted.glover`)
    the model's ``L`` can reach ``a @ M @ a`` and never goes below it.

:func:`quadratic_form_bounds` gives the column bounds of ``L``. The rows' constants (the bounds of
``g_i`` on actions with and without arm ``i``) are sorted-row sums, tightened by
:func:`exact_row_bounds` where the space's combinatorial algorithm is cheap: on the matchings of
K(10, 12) they are ~20% tighter and sign +1 queries at f = 1 ran 2-2.7x faster (interleaved,
bench/norm_large.py's queries); on the crew problem's late queries, ~25% faster.

Example
-------
>>> quadratic_form_bounds(np.eye(3), 2, np.arange(3))
(0.0, 2.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...spaces import Cardinality, ExplicitActions, Matchings
from ..core.engine import Engine
from ..core.exact import ALGORITHMS
from ..core.queries import LinearQuery, Restrictions

#: The :class:`~cmab_milp.oracles.norm.solver.NormSolver` running the query (not imported: the solver imports
#: this module).
NormSolver = Any

__all__ = ["Lifted", "exact_row_bounds", "quadratic_form_bounds"]


def quadratic_form_bounds(M: np.ndarray, m: int, arms: np.ndarray) -> tuple[float, float]:
    """Cheap bounds ``(lo, hi)`` on ``a @ M @ a`` over sets of at most ``m`` of ``arms``.

    For a set ``S``, ``a @ M @ a = sum_{i in S} (M_ii + sum_{j in S, j != i} M_ij)``;
    each term is bounded by the row's diagonal plus its ``m - 1`` largest (smallest)
    off-diagonal entries, and the sum by the ``m`` largest (smallest) such terms.

    >>> quadratic_form_bounds(np.array([[1.0, -2.0], [-2.0, 1.0]]), 2, np.arange(2))
    (-2.0, 2.0)
    """
    sub = M[np.ix_(arms, arms)]
    k = len(arms)
    if k == 0 or m == 0:
        return 0.0, 0.0
    off = sub - np.diag(np.diag(sub))
    take = min(m - 1, k - 1)
    ordered = np.sort(off, axis=1)  # ascending; the diagonal zero sits among them
    top = np.clip(ordered[:, ::-1][:, :take], 0.0, None).sum(axis=1) if take else np.zeros(k)
    bottom = np.clip(ordered[:, :take], None, 0.0).sum(axis=1) if take else np.zeros(k)
    high = np.sort(np.diag(sub) + top)[::-1][:m]
    low = np.sort(np.diag(sub) + bottom)[:m]
    return float(np.clip(low, None, 0.0).sum()), float(np.clip(high, 0.0, None).sum())


def exact_row_bounds(
    space, arms: np.ndarray, res: Restrictions, off: np.ndarray, upper: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(near, far)`` of Glover's rows over the query's actions, by ``2 k`` linear queries; ``None`` when not cheap.

    ``g_i(a) = off[k] @ a[arms]`` for ``i = arms[k]`` (``off``: the free arms' block of ``M``, zero
    diagonal). ``near_i`` is the largest (``upper``) or least ``g_i`` over the actions holding ``i``,
    ``far_i`` the least (``upper``) or largest over those without ``i``; all under the query's include
    and exclude (``forbid_pairs`` left out: a superset, so the bounds stay valid). Each is one exact
    linear query of the space's combinatorial algorithm (assignment for bipartite matchings, greedy
    for matroids and trees, dynamic programming on DAG paths). Spaces without one, or whose algorithm
    is not cheap (blossom on general matchings, explicit lists), return ``None`` and keep the
    sorted-row bounds. An arm no action holds gets ``near = 0`` (its ``z`` is 0 anyway). Each bound is
    widened by a few ulps of its row's magnitude (rounding of the sums).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.Matchings(nx.complete_bipartite_graph(2, 2))  # arms: edges (0,2) (0,3) (1,2) (1,3)
    >>> off = np.ones((4, 4)) - np.eye(4)
    >>> near, far = exact_row_bounds(space, np.arange(4), Restrictions(), off, upper=True)
    >>> (near.round(9) + 0.0).tolist(), (far.round(9) + 0.0).tolist()  # one partner at most; none needed
    ([1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0])
    """
    kind = type(space)
    if kind not in ALGORITHMS or kind in (Cardinality, ExplicitActions):  # Cardinality: the sorted rows are exact
        return None
    if kind is Matchings and not space.bipartite:
        return None
    if kind.__name__ == "STPaths" and not space.acyclic:
        return None
    algorithm = ALGORITHMS[kind]
    sign = 1.0 if upper else -1.0
    near = np.zeros(len(arms))
    far = np.zeros(len(arms))
    d = space.d
    for k, i in enumerate(arms):
        w = np.zeros(d)
        w[arms] = sign * off[k]
        held = algorithm(space, LinearQuery(w, Restrictions(tuple(sorted({*res.include, int(i)})), res.exclude)))
        near[k] = 0.0 if held is None else sign * float(w @ held)
        without = algorithm(space, LinearQuery(-w, Restrictions(res.include, tuple(sorted({*res.exclude, int(i)})))))
        far[k] = 0.0 if without is None else sign * float(w @ without)
    # rounding of the sums (and of the algorithms on float weights): widen by a few ulps of the row's magnitude
    slack = 8.0 * len(arms) * np.finfo(float).eps * np.abs(off).sum(axis=1)
    return near + sign * slack, far - sign * slack


@dataclass
class Lifted:
    """Columns for the quadratic form ``L`` (and ``s``) appended to a model, with their rows.

    :meth:`glover_upper` (sign +1) and :meth:`glover` (sign -1) lift every arm.
    """

    first_col: int
    L: int
    s: int
    first_row: int
    last_row: int

    def rows(self) -> range:
        return range(self.first_row, self.last_row)

    @staticmethod
    def glover_upper(model: Engine, solver: NormSolver, *, l_bounds: tuple[float, float]) -> Lifted:
        """Columns ``z_i`` (one per free arm), ``L`` and ``s`` with Glover's rows on the other side (sign +1).

        ``z_i`` stands for ``a_i g_i(a)``, ``g_i(a) = sum_{j != i} M_ij a_j``. With ``up_i`` the
        largest ``g_i`` on an action holding ``i`` (its ``m - 1`` largest entries) and ``lo_i``
        the least ``g_i`` on any action (its ``m`` most negative), the rows
        ``z_i <= up_i a_i`` and ``z_i <= g_i(a) - lo_i (1 - a_i)`` hold at ``z_i = a_i g_i(a)``
        on every binary action and force at most that, so
        ``L = sum_i M_ii a_i + sum_i z_i`` can reach ``a @ M @ a`` and never exceeds it.
        ``2 d`` rows instead of a column per pair (7,140 columns at d = 120).
        """
        return _glover_rows(model, solver, l_bounds, upper=True)

    @staticmethod
    def glover(model: Engine, solver: NormSolver, *, l_bounds: tuple[float, float]) -> Lifted:
        """Columns ``z_i`` (one per free arm), ``L`` and ``s``, with Glover's rows (sign -1).

        ``z_i`` stands for ``a_i g_i(a)``, ``g_i(a) = sum_{j != i} M_ij a_j``. With ``lo_i``
        the least ``g_i`` on an action holding ``i`` (its ``m - 1`` most negative entries)
        and ``up_i`` the largest ``g_i`` on any action (its ``m`` largest), the rows
        ``z_i >= lo_i a_i`` and ``z_i >= g_i(a) - up_i (1 - a_i)`` hold at ``z_i = a_i g_i(a)``
        on every binary action and force at least that, so
        ``L = sum_i M_ii a_i + sum_i z_i`` can reach ``a @ M @ a`` and never goes below
        it. ``2 d`` rows instead of a column per pair: the LPs are ~8x smaller than
        the pairwise lifting and the MILPs 2-3x faster at d=40.
        """
        return _glover_rows(model, solver, l_bounds, upper=False)


def _glover_rows(model: Engine, solver: NormSolver, l_bounds: tuple[float, float], upper: bool) -> Lifted:
    """The columns and rows of :meth:`Lifted.glover_upper` (``upper``) or :meth:`Lifted.glover`.

    ``near`` is the bound of ``g_i`` on actions holding ``i`` (its ``m - 1`` largest entries
    when ``upper``, else most negative), ``far`` the other-side bound on any action (``m``
    entries). Rows: ``L = sum_i M_ii a_i + sum_i z_i``; ``z_i - near_i a_i`` at most 0
    (``upper``) or at least 0; ``z_i - g_i(a) - far_i a_i`` at most / at least ``-far_i``.
    """
    M = solver.query.M
    arms = solver.arms
    k = len(arms)
    m = solver.m
    sub = M[np.ix_(arms, arms)]
    diag = np.diag(sub)
    off = sub - np.diag(diag)
    ordered = np.sort(off, axis=1)  # the row's own zero is among them and adds nothing
    held, anyk = max(min(m - 1, k), 0), min(m, k)
    lo_held = np.clip(ordered[:, :held], None, 0.0).sum(axis=1)
    up_held = np.clip(ordered[:, ::-1][:, :held], 0.0, None).sum(axis=1)
    if upper:
        near, far = up_held, np.clip(ordered[:, :anyk], None, 0.0).sum(axis=1)
        z_lb, z_ub = np.minimum(lo_held, 0.0), np.maximum(up_held, 0.0)
    else:
        near, far = lo_held, np.clip(ordered[:, ::-1][:, :anyk], 0.0, None).sum(axis=1)
        z_lb, z_ub = np.minimum(lo_held, 0.0), np.maximum(far, 0.0)
    exact = (
        exact_row_bounds(solver.oracle.space, arms, solver.res, off, upper) if solver.tuning.exact_row_bounds else None
    )
    if exact is not None:  # the same bounds over the space's actions: at least as tight
        near = np.minimum(near, exact[0]) if upper else np.maximum(near, exact[0])
        far = np.maximum(far, exact[1]) if upper else np.minimum(far, exact[1])
        if upper:  # z_i = a_i g_i(a) <= near_i (sign -1: far holds no action with i, so z's bounds stay)
            z_ub = np.maximum(near, 0.0)
    first_col = model.num_cols
    z = first_col + np.arange(k)
    L, s = first_col + k, first_col + k + 1
    model.append_cols(np.zeros(k + 2), np.r_[z_lb, l_bounds[0], -np.inf], np.r_[z_ub, l_bounds[1], np.inf])
    first_row = model.num_rows
    # L = sum_i M_ii a_i + sum_i z_i
    model.add_rows_fixed([0.0], [0.0], np.r_[L, arms, z], np.r_[1.0, -diag, -np.ones(k)], 2 * k + 1)
    # z_i - near_i a_i <= 0 (upper) or >= 0
    zeros, free = np.zeros(k), np.full(k, -np.inf if upper else np.inf)
    pairs = np.stack([z, arms], 1).ravel()
    coefs2 = np.stack([np.ones(k), -near], 1).ravel()
    model.add_rows_fixed(*((free, zeros) if upper else (zeros, free)), pairs, coefs2, 2)
    # z_i - sum_{j != i} M_ij a_j - far_i a_i <= -far_i (upper) or >= -far_i
    coefs = -off
    coefs[np.arange(k), np.arange(k)] = -far
    cols = np.concatenate([z[:, None], np.broadcast_to(arms, (k, k))], 1)
    bounds = (free, -far) if upper else (-far, free)
    model.add_rows_fixed(*bounds, cols.ravel(), np.concatenate([np.ones((k, 1)), coefs], 1).ravel(), k + 1)
    return Lifted(first_col, L, s, first_row, model.num_rows)
