"""Cuts the norm solver adds: convex-reformulation tangents on ``L`` and no-good rows.

Convex cuts
    With ``t`` the smallest eigenvalue of ``M``, ``a @ M @ a = a @ (M - t I) @ a + t sum(a)``
    on binary ``a`` (``a_i^2 = a_i``) and the first term is convex, so its tangents,
    separated at the LP relaxation's points before the first secant MILP
    (:class:`ConvexCuts`), are valid cuts ``L >= ...`` that tighten the bound where
    ``a`` is fractional. (The upper-bound cuts, ``side=+1``, never cut the sign +1
    relaxation in measurements, so it does not use them.)

Setting actions aside (solver noise)
    With ``f`` folded into the tangent rows, a tangent's slack moves the objective by
    at most ``1e-9`` instead of ``f * 1e-9`` (the ``sqrt`` coefficient of ``s`` once put
    a recorded OLS-UCB-C query, ``f ~ 7``, ``6e-9`` above its optimum, past the
    ``5.4e-9`` tolerance). Other slacks remain (the row defining ``L`` is multiplied by
    the slope of ``f sqrt``), so when the model already values the MILP's answer at its
    true index (sign +1: its tangent is in the model; sign -1: the secants are exact at
    its ``L`` within the tolerance) and the bound is still unproven, no more cuts can
    help: the answer is set aside by a no-good row (:class:`Exclusions`,
    :func:`add_no_good`) and the MILP solved again (sign -1 also sets aside an answer
    whose ``L`` cannot become a breakpoint). This keeps the answer exact: the incumbent
    is at least the true value of every action set aside (each was evaluated in numpy),
    and the MILP's bound covers the others, so the returned bound is
    ``max(incumbent, bound over the rest)``; every step adds a tangent, a breakpoint, a
    no-good or a better incumbent, so the loop cannot stall.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.engine import Engine

#: The :class:`~cmab_milp.oracles.norm.solver.NormSolver` running the query (not imported: the solver imports
#: this module).
NormSolver = Any

__all__ = ["ConvexCuts", "Exclusions", "add_no_good", "separate_at_relaxations"]


def separate_at_relaxations(model: Engine, rounds: int, cut: Callable[[np.ndarray], bool]) -> None:
    """Rounds of the LP relaxation: ``cut(x)`` adds rows at its point ``x`` and says whether the round goes on.

    Stops at an infeasible LP, at a round whose ``cut`` returns ``False``, or after ``rounds`` LP solves.

    >>> import cmab_milp as cm
    >>> from cmab_milp.oracles.core.engine import new_engine
    >>> model = new_engine(cm.Cardinality(3, 2).formulation(), integer=True)
    >>> points = []
    >>> separate_at_relaxations(model, 5, lambda x: points.append(x) or len(points) < 2)
    >>> len(points)
    2
    """
    with model.options({"solve_relaxation": True}):
        for _ in range(rounds):
            x = model.run_relaxation()
            if x is None or not cut(x):
                return


class ConvexCuts:
    """Cuts bounding ``L`` by tangents of a convex reformulation of ``a @ M @ a``.

    On binary ``a``, ``a_i^2 = a_i`` so ``a @ M @ a = t * sum(a) - side * a @ P @ a``
    with ``P = -side * (M - t I)`` positive semidefinite when ``t`` is the
    smallest (``side=-1``) or largest (``side=+1``) eigenvalue of ``M``: every
    tangent of the convex ``a @ P @ a`` gives a valid lower (``side=-1``) or
    upper (``side=+1``) bound on the quadratic form, linear in ``a`` (the uniform
    case of the quadratic convex reformulation). At fractional points they are
    much tighter than McCormick rows; they are separated at LP-relaxation points.

    >>> import cmab_milp as cm
    >>> from cmab_milp.oracles.norm.solver import NormSolver
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "highs")
    >>> solver = NormSolver(oracle, oracle.norm_query(np.zeros(3), np.eye(3), 1.0))
    >>> float(ConvexCuts(solver, side=-1, rounds=1).t) < 1.0 < float(ConvexCuts(solver, side=1, rounds=1).t)
    True
    """

    def __init__(self, solver: NormSolver, side: int, rounds: int):
        self.solver = solver
        self.side = side
        self.rounds = rounds
        arms = solver.arms
        sub = solver.query.M[np.ix_(arms, arms)]
        scale = float(np.abs(sub).max(initial=0.0))
        eig = np.linalg.eigvalsh(sub) if len(arms) else np.zeros(1)
        # a margin keeps P positive semidefinite despite rounding in eigvalsh
        self.t = float(eig[-1] + 1e-9 * scale) if side > 0 else float(eig[0] - 1e-9 * scale)
        self.P = -side * (sub - self.t * np.eye(len(arms)))
        self.cuts = 0

    def separate(self, model: Engine, L: int) -> None:
        """Add violated tangents at LP-relaxation points, up to ``rounds`` LP solves."""
        if not len(self.solver.arms) or self.rounds == 0:
            return
        separate_at_relaxations(model, self.rounds, lambda x: self.cut_at(model, L, x))

    def cut_at(self, model: Engine, L: int, x: np.ndarray) -> bool:
        """Add the tangent at the arm values of ``x`` if ``x[L]`` violates it; say whether it did."""
        arms, side = self.solver.arms, self.side
        if not len(arms):
            return False
        a0 = x[arms]
        curve = float(a0 @ self.P @ a0)
        quad = self.t * float(a0.sum()) - side * curve
        if side * x[L] <= side * quad + 1e-6 * (1.0 + abs(quad)):
            return False
        coefs = np.r_[side, 2.0 * (self.P @ a0) - side * self.t]
        model.add_rows_fixed([-np.inf], [curve], np.r_[L, arms], coefs, len(arms) + 1)
        self.cuts += 1
        return True


class Exclusions:
    """Actions set aside by no-good rows once their true index is recorded.

    A MILP bound then covers only the remaining actions; the set-aside ones are
    covered by the incumbent, which is at least as good as each of them.
    """

    def __init__(self, solver: NormSolver):
        self.arms = solver.arms
        self.keys: set[bytes] = set()

    @property
    def count(self) -> int:
        return len(self.keys)

    def add(self, model: Engine, action: np.ndarray) -> None:
        add_no_good(model, self.arms, action)
        self.keys.add(action.tobytes())

    def start(self, action: np.ndarray | None) -> np.ndarray | None:
        """``action`` as a MIP start, or ``None`` when it has been set aside."""
        return None if action is None or action.tobytes() in self.keys else action


def add_no_good(model: Engine, arms: np.ndarray, action: np.ndarray) -> None:
    """The row ``sum_{i in a} (1 - x_i) + sum_{i in arms \\ a} x_i >= 1``: every action but ``action``."""
    ones = np.flatnonzero(action)
    zeros = np.setdiff1d(arms, ones)
    idx = np.concatenate([ones, zeros]).astype(np.int32)
    coef = np.concatenate([-np.ones(len(ones)), np.ones(len(zeros))])
    model.add_rows_fixed([1.0 - len(ones)], [np.inf], idx, coef, len(idx))
