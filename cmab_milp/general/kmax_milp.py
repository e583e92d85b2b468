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
>>> from cmab_milp.general import OutcomeGrid
>>> solver = KMaxMilp(cm.Cardinality(4, 2), OutcomeGrid([0.0, 1.0]))
>>> pmf = np.array([[0.9, 0.1], [0.5, 0.5], [0.4, 0.6], [0.0, 1.0]])
>>> np.flatnonzero(solver.solve(pmf, (), (3,), ())).tolist()
[1, 2]
"""

from __future__ import annotations

import threading

import numpy as np

from ..oracles import OracleError
from ..oracles.base import tolerance
from ..oracles.highs_model import CompiledModel
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

    def _model(self) -> tuple[CompiledModel, np.ndarray, np.ndarray]:
        cached = getattr(self._local, "model", None)
        if cached is not None:
            return cached
        model = CompiledModel(self.formulation, integer=True)
        K = len(self.levels)
        z = model.add_cols(np.full(K, -np.inf), np.zeros(K), np.zeros(K, bool), [f"z{k}" for k in self.levels])
        w = model.add_cols(np.zeros(K), self.delta[self.levels], np.zeros(K, bool), [f"w{k}" for k in self.levels])
        z_cols, w_cols = np.arange(z, z + K, dtype=np.int32), np.arange(w, w + K, dtype=np.int32)
        model.set_costs(np.zeros(self.d))
        model.set_costs(np.ones(K), w_cols)
        self._local.model = (model, z_cols, w_cols)
        return self._local.model

    def _tangent(self, k: int, z_col: int, w_col: int, at: float) -> Row:
        """``w <= delta (1 - e^at - e^at (z - at))``, the tangent of the concave bound at ``z = at``."""
        slope = self.delta[self.levels[k]] * np.exp(at)
        rhs = self.delta[self.levels[k]] * (1.0 - np.exp(at)) + slope * at
        return Row((int(w_col), int(z_col)), (1.0, float(slope)), -np.inf, float(rhs))

    def solve(self, pmf: np.ndarray, include: tuple, exclude: tuple, forbid_pairs: tuple) -> np.ndarray | None:
        """The optimal action under ``pmf`` and the restrictions, or ``None``."""
        model, z_cols, w_cols = self._model()
        below = np.concatenate([np.zeros((self.d, 1)), np.cumsum(pmf, axis=1)[:, :-1]], axis=1)  # P(Y_i < v_k)
        with np.errstate(divide="ignore"):
            logs = np.where(below > 0, np.log(np.maximum(below, 1e-300)), _LOG_ZERO)
        rows = [
            Row((*range(self.d), int(z_cols[j])), (*(-logs[:, k]).tolist(), 1.0), 0.0, 0.0)
            for j, k in enumerate(self.levels)
        ]
        rows += [Row((i, j), (1.0, 1.0), -np.inf, 1.0) for i, j in forbid_pairs]
        rows += [
            self._tangent(j, z_cols[j], w_cols[j], at) for j in range(len(self.levels)) for at in _INITIAL_TANGENTS
        ]
        model.set_arm_bounds(tuple(include), tuple(exclude))
        first, _ = model.add_rows(rows)
        try:
            for _ in range(_MAX_CUT_PASSES):
                result = model.solve()
                if result.status == "infeasible":
                    return None
                x = result.x  # one conversion of HiGHS's column values per solve
                arms = x[: self.d]
                action = arms > 0.5
                if np.abs(arms - action).max(initial=0.0) > 1e-6:
                    raise OracleError("HiGHS returned a fractional arm vector for a K-MAX query")
                cuts = self.formulation.violated_rows(action) if self.formulation.separators else []
                if cuts:
                    model.add_rows(cuts)
                    continue
                z = logs[action].sum(axis=0)[self.levels] if action.any() else np.zeros(len(self.levels))
                w = x[w_cols]
                exact = self.delta[self.levels] * (1.0 - np.exp(z))
                loose = np.flatnonzero(w > exact + _SLACK)
                if loose.size == 0:
                    value, bound = float(exact.sum()), result.bound
                    if value < bound - len(self.levels) * _SLACK - tolerance(bound):
                        raise OracleError(
                            f"K-MAX answer has value {value!r} but the MILP bound is {bound!r}:"
                            f" optimality not proven within {_SLACK:g} per grid level"
                        )
                    return action
                model.add_rows([self._tangent(j, z_cols[j], w_cols[j], float(z[j])) for j in loose])
            raise OracleError(f"the K-MAX cutting-plane loop did not converge in {_MAX_CUT_PASSES} passes")
        finally:
            model.delete_rows(first, model.num_rows)
