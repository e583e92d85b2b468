"""Outer approximation of the norm (sign -1, ``M`` positive semidefinite) on disaggregated tangents.

An alternative to the secant method of :mod:`.solver` for sign -1 (used where
:mod:`.branch.minus` does not apply), **off by default** (the ``highs`` tuning option ``minus_outer``):
exact, with 1-6 MILPs per query at d = 100, but each MILP is slower (measured below).
With ``M_arms = R^T R`` (:func:`square_root_rows`, the eigen-decomposition ``R_k =
sqrt(lambda_k) v_k^T``), ``n(a) = sqrt(a @ M @ a) = |R a|`` and the model is the space's
formulation plus the columns of :class:`Disaggregated`: ``y = R a``, ``t >= 0`` and
``s`` (cost ``-f``, so the objective is ``mu @ a - f s``), the row ``sum_k t_k <= s``
and tangents ``t_k >= 2 r y_k - r^2 s`` (the perspective ``y_k^2 / s``, separated per
component: Vielma, Dunning, Huchette and Lubin 2017, extended formulations for
mixed-integer conic programs; far tighter at fractional points than gradient rows in
``a``).

Exactness
    Validity: at an action ``a`` with ``n = n(a) > 0`` take ``y = R a``, ``s = n`` and
    ``t_k = y_k^2 / n``; then ``sum t_k = n = s`` and every tangent holds, since
    ``y^2 / s - 2 r y + r^2 s = (y - r s)^2 / s >= 0`` (at ``n = 0``: everything 0). So
    the MILP's bound is an upper bound on the index of every action it admits. Also
    admitted are all actions that can beat the incumbent ``v``: such an action has
    ``f n(a) < mu @ a - v <= top - v`` (``top`` the linear optimum), which is the
    window ``s <= (top - v) / f``; actions set aside (:class:`~.cuts.Exclusions`) were
    valued exactly and the incumbent is at least as good.

    Exact at an answer: :meth:`Disaggregated.exact_at` adds the tangents at
    ``r_k = y_k / n`` of the action; summing them, ``s >= sum t_k >= 2 n - s``, so the
    model's ``s`` at that action is ``n(a)`` and its value the true index. Each unproven
    answer gets these tangents or, when they are all in the model already (the gap is
    solver noise), is set aside; no answer repeats, so the loop ends (Duran and
    Grossmann 1986, finite for binaries). The query ends when the incumbent is within
    :func:`~cmab_milp.oracles.core.certify.proven` of the MILP's bound.

Measured (f = 0.3, bench/norm_large.py's queries, side by side with the secants)
    Cardinality(100, 10): 1-6 MILPs, median 4.0 s against the secants' 0.66 s (each MILP
    ~0.8 s: the ``d`` dense rows ``y = R a``, with or without presolve); trees of a 6x6
    grid: 1.2 s against 1.0 s. At f = 1 both stop at 20 s on Cardinality(100, 10).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm import solver
>>> tuning = {"minus_outer": True, "minus_branch": False}
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs", tuning=tuning)
>>> M = np.diag([1.0, 4.0, 0.25, 0.5])
>>> oracle.argmax_norm(np.array([0.5, 0.0, 0.6, 0.55]), M, 1.0, sign=-1).astype(int)
array([0, 0, 1, 1])
>>> solver.last_stats(oracle).method
'outer-approximation'
"""

from __future__ import annotations

import numpy as np

from ...core.base import OracleError
from ...core.certify import proven
from ...core.engine import Engine
from ..cuts import Exclusions, separate_at_relaxations
from ..gradient import well_scaled
from ..method import Answer, NormContext
from ..starts.incumbents import first_incumbent_minus

__all__ = ["MINUS_OUTER", "Disaggregated", "MinusOuter", "outer_approximation", "square_root_rows"]

#: LP rounds of tangent rows at relaxation points before the first MILP.
_ROOT_ROUNDS = 40
#: MILP solves before the query is declared unproven.
_MAX_SOLVES = 500
#: Eigenvalues below this fraction of the largest are dropped (``M`` positive semidefinite: see
#: :func:`square_root_rows`).
_EIG_FLOOR = 1e-12
#: A component's tangent is added at an LP point where ``t_k`` is this far below ``y_k^2 / s``
#: (relative to ``s``).
_VIOLATION = 1e-7
#: Initial tangent points ``r`` of every component (``|y_k| <= s``, so ``r`` in ``[-1, 1]``).
_GRID = (-0.5, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.5)


def square_root_rows(M: np.ndarray, arms: np.ndarray) -> np.ndarray | None:
    """``R`` with ``x @ M_arms @ x = |R x|^2`` (rows ``sqrt(lambda_k) v_k``), or ``None`` if ``M`` is not PSD.

    >>> R = square_root_rows(np.array([[2.0, 1.0], [1.0, 2.0]]), np.arange(2))
    >>> x = np.array([1.0, 1.0])
    >>> bool(np.isclose(x @ R.T @ R @ x, 6.0))
    True
    >>> square_root_rows(np.array([[0.0, 1.0], [1.0, 0.0]]), np.arange(2)) is None
    True
    """
    sub = M[np.ix_(arms, arms)]
    lam, vec = np.linalg.eigh(sub)
    scale = float(np.abs(lam).max(initial=0.0))
    if scale == 0.0 or lam[0] < -_EIG_FLOOR * scale:
        return None
    keep = lam > _EIG_FLOOR * scale
    return (vec[:, keep] * np.sqrt(lam[keep])).T


class Disaggregated:
    """The columns ``y = R a``, ``t >= 0``, ``s`` and the rows ``sum t <= s``, ``t_k >= 2 r y_k - r^2 s``."""

    def __init__(self, model: Engine, R: np.ndarray, arms: np.ndarray, f: float, s_hi: float):
        self.model, self.R, self.arms = model, R, arms
        k = self.k = len(R)
        bound = np.abs(R).sum(axis=1)
        first = model.append_cols(
            np.r_[np.zeros(2 * k), -f], np.r_[-bound, np.zeros(k), 0.0], np.r_[bound, np.full(k, s_hi), s_hi]
        )
        self.y = first + np.arange(k)
        self.t = first + k + np.arange(k)
        self.s = first + 2 * k
        n = len(arms)
        idx = np.c_[self.y, np.tile(arms, (k, 1))].ravel()
        model.add_rows_fixed(np.zeros(k), np.zeros(k), idx, np.c_[np.ones(k), -R].ravel(), n + 1)
        model.add_rows_fixed([-np.inf], [0.0], np.r_[self.t, self.s], np.r_[np.ones(k), -1.0], k + 1)
        self.points: list[set[float]] = [set() for _ in range(k)]
        self.tangents = 0
        for r in _GRID:
            self.add(np.arange(k), np.full(k, r))

    def add(self, comps: np.ndarray, r: np.ndarray) -> int:
        """Tangents ``t_k >= 2 r_k y_k - r_k^2 s`` not yet in the model; return how many were added."""
        new = [i for i, (c, x) in enumerate(zip(comps, r, strict=True)) if float(x) not in self.points[c]]
        if not new:
            return 0
        comps, r = comps[new], r[new]
        for c, x in zip(comps, r, strict=True):
            self.points[c].add(float(x))
        n = len(new)
        idx = np.c_[self.t[comps], self.y[comps], np.full(n, self.s)].ravel()
        val = np.c_[np.ones(n), -2.0 * r, r * r].ravel()
        self.model.add_rows_fixed(np.zeros(n), np.full(n, np.inf), idx, val, 3)
        self.tangents += n
        return n

    def exact_at(self, action: np.ndarray) -> int:
        """The tangents at ``r = R a / |R a|``: with them the model's ``s`` at ``action`` is ``|R a|``."""
        y = self.R @ action[self.arms].astype(float)
        norm = float(np.sqrt(y @ y))
        if norm == 0.0:
            return 0
        return self.add(np.arange(self.k), y / norm)

    def separate(self, rounds: int) -> None:
        """Tangents at LP-relaxation points where ``t_k < y_k^2 / s``, up to ``rounds`` LP solves."""

        def cut(x: np.ndarray) -> bool:
            s = x[self.s]
            if s <= 0.0:
                return False
            y, t = x[self.y], x[self.t]
            bad = np.flatnonzero(t < y * y / s - _VIOLATION * s)
            return bool(len(bad)) and bool(self.add(bad, y[bad] / s))

        separate_at_relaxations(self.model, rounds, cut)


class MinusOuter:
    """Sign -1 by disaggregated tangents (``tuning.minus_outer``, i.e. ``tuning.norm.minus_outer.enabled``) for a
    positive semidefinite ``M`` on a well scaled query, after :data:`~.linear.LINEAR_BOUND`."""

    name = "outer-approximation"

    def applies(self, context: NormContext) -> bool:
        q = context.query
        enabled = context.tuning.norm.minus_outer.enabled and well_scaled(q) and len(context.arms)
        return bool(enabled) and square_root_rows(q.M, context.arms) is not None

    def run(self, context: NormContext) -> Answer:
        lin, top = context.linear.action, context.linear.top
        best, best_value = first_incumbent_minus(context, lin, context.query.value(lin))
        R = square_root_rows(context.query.M, context.arms)  # (again: a method holds no query's state)
        return outer_approximation(context, context.model, R, top, best, best_value, [lin])


def outer_approximation(
    solver: NormContext,
    model: Engine,
    R: np.ndarray,
    top: float,
    best: np.ndarray,
    best_value: float,
    extra: list[np.ndarray],
) -> tuple[np.ndarray, float]:
    """The best action and a proven upper bound; ``best`` (value ``best_value``) is the first incumbent.

    ``R`` from :func:`square_root_rows`; ``top`` bounds ``mu @ a`` over the actions; ``extra``
    are actions whose tangents go in first.
    """
    q = solver.query
    f = q.f
    s_hi = float(np.sqrt(max(solver.l_hi, 0.0)))
    cone = Disaggregated(model, R, solver.arms, f, s_hi)

    def narrow() -> None:  # the window: f s <= top - v
        model.set_col_bounds(cone.s, 0.0, min(s_hi, max((top - best_value) / f, 0.0) * (1.0 + 1e-9) + 1e-12))

    for action in [*extra, best]:
        cone.exact_at(action)
    narrow()
    cone.separate(_ROOT_ROUNDS)
    excluded = Exclusions(solver)
    bound = best_value
    solves = 0
    for _ in range(_MAX_SOLVES):
        solves += 1
        found = solver.solve(model, excluded.start(best))
        if found is None:  # nothing left in the window
            bound = best_value
            break
        action, result = found
        value = q.value(action)
        bound = result.bound
        if value > best_value:
            best, best_value = action, value
            narrow()
        if proven(value=best_value, bound=bound, measured_at="bound"):
            break
        if not cone.exact_at(action):  # the model values it exactly already: noise, set it aside
            excluded.add(model, action)
    else:
        raise OracleError("norm outer approximation (sign -1) did not converge")
    solver.stats.extra.update(oa_solves=solves, tangents=cone.tangents, components=cone.k, excluded=excluded.count)
    return best, max(bound, best_value)


MINUS_OUTER = MinusOuter()
