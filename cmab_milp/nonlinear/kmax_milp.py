"""Exact K-MAX index queries on any space with a MILP formulation (outer approximation on HiGHS).

With grid values ``v_0 < ... < v_{G-1}`` and ``delta_k = v_k - v_{k-1}``
(``delta_0 = v_0``), the K-MAX reward under independent arms is

    E[max_{i in a} Y_i] = sum_k delta_k (1 - exp(z_k)),   z_k = sum_i a_i log P(Y_i < v_k),

a concave function of the linear expressions ``z_k``. The model is the space's
formulation plus columns ``z_k`` (defined by one row each, rebuilt per query)
and ``w_k <= delta_k (1 - exp(z_k))``, maximising ``sum_k w_k``; the concave
constraint is represented by tangent cuts added until the solution's ``w`` is
exact (Kelley's cutting planes), together with the formulation's lazy cuts. At
the end the MILP optimum over-estimates every action and exceeds the returned
action's value by at most ``2e-9`` per grid level (rows hold to HiGHS's
feasibility tolerance ``1e-9``; gap ``1e-12``): optimal to within ``2e-9 G``,
slightly looser than the contract's ``1e-9 (1 + |optimum|)``. A probability
``P(Y_i < v_k) = 0`` enters as ``log = -50`` (``exp(-50) < 2e-22``, far below
the contract's tolerance).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.nonlinear import OutcomeGrid
>>> solver = KMaxMilp(cm.Cardinality(4, 2), OutcomeGrid([0.0, 1.0]))
>>> pmf = np.array([[0.9, 0.1], [0.5, 0.5], [0.4, 0.6], [0.0, 1.0]])
>>> np.flatnonzero(solver.solve(pmf, (), (3,), ())).tolist()
[1, 2]
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..oracles.backends.highs_model import CompiledModel
from ..oracles.core.model import ModelBase, SolveResult
from ..oracles.core.pipeline import certified_solve
from ..oracles.core.queries import Restrictions
from ..portable import exp, log
from ..spaces.base import ActionSpace
from ..spaces.formulation import Row
from .grid import OutcomeGrid

__all__ = ["KMaxMilp"]

_LOG_ZERO = -50.0
_INITIAL_TANGENTS = (0.0, -0.05, -0.2, -0.5, -1.0, -2.0, -4.0, -8.0)
_MAX_CUT_PASSES = 500
#: Per-level excess of ``w`` over the exact bound accepted at convergence (HiGHS feasibility
#: tolerance is 1e-9 per row, so a tighter test could cycle on the same action).
_SLACK = 2e-9


class KMaxMilp:
    """Maximise ``E[max_{i in a} Y_i]`` over a space's MILP, one HiGHS model per thread."""

    def __init__(self, space: ActionSpace, grid: OutcomeGrid):
        self.space = space
        self.d = space.d
        self.grid = grid
        values = grid.values
        self.delta = np.diff(values, prepend=0.0)
        self.levels = [k for k in range(len(values)) if self.delta[k] > 0]
        self.formulation = space.formulation()
        self._local = threading.local()

    def reset(self) -> None:
        """Drop every thread's model (answers do not depend on them: each query's rows are removed after it)."""
        self._local = threading.local()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_local", None)  # the HiGHS models stay with their threads
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def _model(self) -> CompiledModel:
        model = getattr(self._local, "model", None)
        if model is not None:
            return model
        model = CompiledModel(self.formulation, integer=True)
        K = len(self.levels)
        z = model.add_cols(np.full(K, -np.inf), np.zeros(K), np.zeros(K, bool), [f"z{k}" for k in self.levels])
        w = model.add_cols(np.zeros(K), self.delta[self.levels], np.zeros(K, bool), [f"w{k}" for k in self.levels])
        self.z_cols, self.w_cols = np.arange(z, z + K, dtype=np.int32), np.arange(w, w + K, dtype=np.int32)
        model.set_costs(np.ones(K), self.w_cols)
        self._local.model = model
        return model

    def _tangent(self, k: int, at: float) -> Row:
        """``w <= delta (1 - e^at - e^at (z - at))``, the tangent of the concave bound at ``z = at``."""
        slope = float(self.delta[self.levels[k]]) * math.exp(at)
        rhs = float(self.delta[self.levels[k]]) * (1.0 - math.exp(at)) + slope * at
        return Row((int(self.w_cols[k]), int(self.z_cols[k])), (1.0, float(slope)), -np.inf, float(rhs))

    def solve(self, pmf: np.ndarray, include: tuple, exclude: tuple, forbid_pairs: tuple) -> np.ndarray | None:
        """The optimal action under ``pmf`` and the restrictions, or ``None``."""
        model = self._model()
        below = np.concatenate([np.zeros((self.d, 1)), np.cumsum(pmf, axis=1)[:, :-1]], axis=1)  # P(Y_i < v_k)
        logs = np.where(below > 0, log(np.maximum(below, 1e-300)), _LOG_ZERO)  # math.log: the same bits anywhere
        query = _KMaxQuery(self, logs, Restrictions(tuple(include), tuple(exclude), tuple(forbid_pairs)))
        rows = [
            Row((*range(self.d), int(self.z_cols[j])), (*(-logs[:, k]).tolist(), 1.0), 0.0, 0.0)
            for j, k in enumerate(self.levels)
        ]
        rows += [self._tangent(j, at) for j in range(len(self.levels)) for at in _INITIAL_TANGENTS]
        found = certified_solve(
            _KMaxModel(model, query),
            query,
            self.formulation,
            rows=rows,
            rescale=False,
            slack=len(self.levels) * _SLACK,
            max_rounds=_MAX_CUT_PASSES,
        )
        return None if found is None else found[0]


class _KMaxQuery:
    """A K-MAX query as the pipeline reads it: no arm costs, the exact K-MAX value, the restrictions."""

    weights_list = None

    def __init__(self, solver: KMaxMilp, logs: np.ndarray, restrictions: Restrictions) -> None:
        self.solver = solver
        self.logs = logs
        self.weights = np.zeros(solver.d)
        self.restrictions = restrictions

    def levels_z(self, action: np.ndarray) -> np.ndarray:
        """``z_k = sum_{i in a} log P(Y_i < v_k)`` at the grid levels."""
        levels = self.solver.levels
        return self.logs[action].sum(axis=0)[levels] if action.any() else np.zeros(len(levels))

    def value(self, chosen: list[bool]) -> float:
        solver = self.solver
        z = self.levels_z(np.array(chosen, dtype=bool))
        return float((solver.delta[solver.levels] * (1.0 - exp(z))).sum())


class _KMaxModel(ModelBase):
    """The K-MAX MILP as a :class:`~cmab_milp.oracles.core.model.SolverModel`: the HiGHS model of the
    formulation plus the ``z`` and ``w`` columns; its :meth:`separate` step adds the tangent cuts
    (Kelley's cutting planes) where a solution's ``w`` exceeds the concave bound."""

    name = "HiGHS (K-MAX MILP)"
    integer = True
    bound_name = "the MILP bound (less 2e-9 per grid level)"

    def __init__(self, model: CompiledModel, query: _KMaxQuery) -> None:
        self.model = model
        self.query = query
        self.set_arm_bounds = model.set_arm_bounds
        self.add_rows = model.add_rows
        self.undo = model.undo

    def set_costs(self, costs: np.ndarray) -> None:
        self.model.set_costs(costs)  # zero on the arms; the w columns keep cost 1

    def solve(self, tie_tol: float | None = None) -> SolveResult:
        return self.model.solve()

    def separate(self, values: list[float], chosen: list[bool]) -> list[Row]:
        solver = self.query.solver
        z = self.query.levels_z(np.array(chosen, dtype=bool))
        w = np.asarray(values)[solver.w_cols]
        exact = solver.delta[solver.levels] * (1.0 - exp(z))
        return [solver._tangent(j, float(z[j])) for j in np.flatnonzero(w > exact + _SLACK)]
