"""Gurobi's :class:`~cmab_milp.oracles.core.engine.Engine`: the model the solver-neutral MIP and norm code edits.

:class:`GurobiEngine` holds a :class:`~cmab_milp.spaces.formulation.Formulation` in a ``gurobipy.Model`` and
gives every member of the engine protocol with :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`'s
meaning, so :mod:`~cmab_milp.oracles.mip` and :mod:`~cmab_milp.oracles.norm` run on it
(``new_engine(formulation, engine="gurobi")``). What differs from HiGHS, and why:

* Rows keep HiGHS's indices: engine row ``i`` is one formulation or query row; a ranged row (both sides finite
  and apart) is two Gurobi constraints (``addRange`` would add a column), a free row one ``<= inf`` constraint.
  ``row_duals`` gives one dual per engine row (the sum over its constraints); Gurobi's ``Pi`` of a maximisation
  has HiGHS's sign.
* ``run_relaxation`` always solves the LP relaxation (HiGHS needs its ``solve_relaxation`` option for that): an
  integer model's integer columns are made continuous for the run, which drops Gurobi's basis, so that run
  starts cold; a continuous model re-solves warm from its last basis.
* Options are Gurobi's parameter names. The HiGHS names that the solver-neutral code sets are translated
  (:data:`HIGHS_NAMES`: ``time_limit``, ``presolve``) or have nothing to set on Gurobi (``solve_relaxation``,
  HiGHS's MIP tuning switches, which change no optimum); any other name is passed to Gurobi, which refuses an
  unknown one (``ValueError``).
* A cold MILP solve is ``reset(1)`` (no solution, basis or MIP start of an earlier solve), then the query's
  ``start``; HiGHS's echo of a MIP start (its ``start_restarts``) does not happen on Gurobi.

The solves use the ``gurobi`` backend's parameters (:data:`~cmab_milp.oracles.backends.gurobi.GUROBI_PARAMS`:
zero gaps, tolerances ``1e-9``, one thread, a fixed seed). The pip licence limits a model to 2000 columns and
2000 constraints (a larger formulation is refused when the licence is size-limited, as by the backend).

Example
-------
The LP of "one arm" with arm 0 capped at 0.5: half of arm 0 and half of arm 1, the row priced at arm 1's cost.

>>> from cmab_milp import Cardinality
>>> from cmab_milp.oracles.core.engine import new_engine
>>> lp = new_engine(Cardinality(3, 1).formulation(), integer=False, engine="gurobi")
>>> lp.set_costs(np.array([0.9, 0.5, 0.3]))
>>> lp.set_col_bounds(0, 0.0, 0.5)
>>> round(lp.solve().objective, 9), lp.row_duals().round(9).tolist()
(0.7, [0.5])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.base import LimitReached, OracleError
from ..core.interrupts import stoppable
from ..core.model import SolveResult
from .engine_base import HIGHS_TUNING_ONLY, EngineBase
from .gurobi import _LICENCE, GUROBI_PARAMS, SIZE_LIMIT, _n_constraints, size_limited
from .highs_solve import HighsSolving

__all__ = ["HIGHS_NAMES", "GurobiEngine"]

_PRESOLVE = {"off": 0, "on": 2, "choose": -1}
#: HiGHS option names set by the solver-neutral code, as ``(Gurobi parameter, value -> Gurobi value)``;
#: ``None``: nothing to set on Gurobi (``run_relaxation`` always relaxes; HiGHS's MIP tuning switches change no
#: optimum and have no Gurobi twin).
HIGHS_NAMES: dict[str, tuple[str, Callable[[Any], Any]] | None] = {
    "time_limit": ("TimeLimit", lambda v: min(float(v), 1e100)),
    "mip_rel_gap": ("MIPGap", float),
    "presolve": ("Presolve", lambda v: _PRESOLVE[str(v)]),
    **dict.fromkeys(HIGHS_TUNING_ONLY),
}


class GurobiEngine(EngineBase):
    """One Gurobi model holding a formulation, edited and re-solved: the Gurobi :class:`~.core.engine.Engine`.

    Not thread-safe: use one per thread. Columns ``0..d-1`` are the arms; the model maximises. Members as
    :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel` (the module docstring lists the differences).
    ``env``: a started ``gurobipy.Env`` to build the model in (default: a new one; :meth:`new_model` shares its own).
    Options take Gurobi's names or the HiGHS ones of :data:`HIGHS_NAMES`:

    >>> import cmab_milp as cm
    >>> model = GurobiEngine(cm.Cardinality(3, 2).formulation())
    >>> with model.options({"presolve": "off"}):
    ...     model.model.Params.Presolve
    0
    >>> model.model.Params.Presolve
    -1
    """

    name = "Gurobi"
    bound_name = "Gurobi's ObjBound"
    HIGHS_NAMES = HIGHS_NAMES
    #: HiGHS's tie test reads only the engine's members.
    _maybe_tied = HighsSolving._maybe_tied

    def __init__(self, formulation: Formulation, *, integer: bool = True, time_limit: float | None = None, env=None):
        import gurobipy as gp

        n_cons = sum(_n_constraints(r) for r in formulation.rows)
        if (formulation.n_cols > SIZE_LIMIT[0] or n_cons > SIZE_LIMIT[1]) and size_limited():
            raise ValueError(
                f"{_LICENCE}; this formulation has {formulation.n_cols} variables and {n_cons} constraints"
            )
        self.gp, grb = gp, gp.GRB
        if env is None:
            env = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
        self.env = env
        self.model = model = gp.Model("cmab_engine", env=env)
        for key, value in GUROBI_PARAMS.items():
            model.setParam(key, value)
        self.set_time_limit(time_limit)
        model.ModelSense = grb.MAXIMIZE
        self.d, self.integer = formulation.d, integer
        kint = grb.INTEGER if integer else grb.CONTINUOUS
        self.vars: list = [model.addVar(lb=0.0, ub=1.0, vtype=kint) for _ in range(self.d)]
        for lb, ub, is_int in zip(formulation.aux_lb, formulation.aux_ub, formulation.aux_integer, strict=True):
            kind = grb.INTEGER if integer and is_int else grb.CONTINUOUS
            self.vars.append(model.addVar(lb=self._finite(lb), ub=self._finite(ub), vtype=kind))
        self.col_names = formulation.col_names()
        self._rows: list[tuple] = []  # each engine row's Gurobi constraints (two for a ranged row)
        self.add_rows(formulation.rows)
        self.base_rows = formulation.n_rows  # rows beyond these belong to the query being answered
        self._start_query_state()  # the query's hooks, as CompiledModel's (undo clears them)
        model.update()

    # ------------------------------------------------------------- editing
    def _finite(self, x) -> float:
        return float(np.clip(float(x), -self.gp.GRB.INFINITY, self.gp.GRB.INFINITY))

    def set_costs(self, costs: np.ndarray, cols: np.ndarray | None = None) -> None:
        """Objective coefficients of the arm columns (or of ``cols``)."""
        idx = range(self.d) if cols is None else cols
        self.model.setAttr("Obj", [self.vars[int(i)] for i in idx], np.asarray(costs, float).tolist())

    def set_col_cost(self, col: int, cost: float) -> None:
        """Objective coefficient of one column."""
        self.vars[col].Obj = float(cost)

    def set_col_bounds(self, col: int, lower: float, upper: float) -> None:
        """Bounds of one column."""
        self.vars[col].LB, self.vars[col].UB = self._finite(lower), self._finite(upper)

    def _arm_bounds(self, lower: np.ndarray, upper: np.ndarray) -> None:
        changed = np.flatnonzero((lower != self.lower) | (upper != self.upper))
        if len(changed):
            arms = [self.vars[i] for i in changed]
            self.model.setAttr("LB", arms, lower[changed].tolist())
            self.model.setAttr("UB", arms, upper[changed].tolist())
        self.lower, self.upper = lower, upper

    def arm_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(costs, lower, upper)`` of the arm columns as the model holds them now."""
        self.model.update()
        arms = self.vars[: self.d]
        return tuple(np.asarray(self.model.getAttr(key, arms), float) for key in ("Obj", "LB", "UB"))  # type: ignore[return-value]

    def add_rows(self, rows: list[Row]) -> tuple[int, int]:
        """Append rows; return the ``[first, last)`` row range they occupy."""
        if not rows:
            return 0, 0
        first, grb, model = len(self._rows), self.gp.GRB, self.model
        for row in rows:
            expr = self.gp.LinExpr([float(v) for v in row.coefs], [self.vars[int(c)] for c in row.cols])
            lb, ub = float(row.lb), float(row.ub)
            if lb == ub:
                sides = [(grb.EQUAL, ub)]
            else:
                sides = [(grb.GREATER_EQUAL, lb)] if lb > -math.inf else []
                if ub < math.inf or not sides:  # a free row: one constraint <= infinity keeps its index
                    sides.append((grb.LESS_EQUAL, self._finite(ub)))
            self._rows.append(tuple(model.addLConstr(expr, sense, rhs) for sense, rhs in sides))
        return first, len(self._rows)

    def rows(self, first: int, last: int) -> list[Row]:
        """The rows ``[first, last)`` as :class:`Row` objects, read back from Gurobi (columns in increasing order).

        >>> import cmab_milp as cm
        >>> GurobiEngine(cm.Cardinality(3, 2).formulation()).rows(0, 1)
        [Row(cols=(0, 1, 2), coefs=(1.0, 1.0, 1.0), lb=-inf, ub=2.0)]
        """
        self._row_range(first, last)
        self.model.update()
        grb, out = self.gp.GRB, []
        for constrs in self._rows[first:last]:
            expr = self.model.getRow(constrs[0])
            terms = sorted((expr.getVar(k).index, expr.getCoeff(k)) for k in range(expr.size()))
            lb, ub = -math.inf, math.inf
            for c in constrs:
                rhs = c.RHS
                if c.Sense in (grb.EQUAL, grb.GREATER_EQUAL):
                    lb = rhs
                if c.Sense in (grb.EQUAL, grb.LESS_EQUAL):
                    ub = rhs if rhs < grb.INFINITY else math.inf
            out.append(Row(tuple(int(j) for j, _ in terms), tuple(float(v) for _, v in terms), lb, ub))
        return out

    def delete_rows(self, first: int, last: int) -> None:
        """Delete the rows ``[first, last)`` (rows after them shift down)."""
        if last > first:
            self.model.remove([c for constrs in self._rows[first:last] for c in constrs])
            del self._rows[first:last]

    def _new_cols(self, costs, lb, ub, integer: np.ndarray) -> int:
        first, grb = len(self.vars), self.gp.GRB
        for cost, lo, hi, is_int in zip(costs, lb, ub, integer, strict=True):
            kind = grb.INTEGER if is_int else grb.CONTINUOUS
            self.vars.append(self.model.addVar(lb=self._finite(lo), ub=self._finite(hi), obj=float(cost), vtype=kind))
        return first

    def delete_cols(self, first: int, last: int) -> None:
        """Delete the columns ``[first, last)`` (columns after them shift down; Gurobi drops their entries)."""
        if last > first:
            self.model.remove(self.vars[first:last])
            del self.vars[first:last]

    # ------------------------------------------------------------- solving
    def _optimize(self, watch: bool = False) -> int:
        """``optimize`` (integer candidates to ``candidate_cuts`` while ``watch``); Ctrl-C raises
        ``KeyboardInterrupt`` as on the backend. Return Gurobi's status."""
        gp, model = self.gp, self.model
        try:
            with stoppable(model.terminate):
                model.optimize(self._callback if watch else None)
        except gp.GurobiError as exc:
            if exc.errno == gp.GRB.Error.SIZE_LIMIT_EXCEEDED:
                raise OracleError(f"{_LICENCE}: {exc}") from None
            raise OracleError(f"Gurobi failed: {exc}") from None
        if model.Status == gp.GRB.INTERRUPTED:
            raise KeyboardInterrupt
        if model.Status == gp.GRB.INF_OR_UNBD:  # decide which, without the dual reductions
            model.reset(0)
            with self.options({"DualReductions": 0}):
                return self._optimize(watch)
        return model.Status

    def _callback(self, model, where) -> None:
        if where == self.gp.GRB.Callback.MIPSOL:
            cuts = self.candidate_cuts(model.cbGetSolution(self.vars))
            if cuts:
                self._pending.update(dict.fromkeys(cuts))

    def solve(self, cold: bool = True, tie_tol: float | None = None) -> SolveResult:
        """Solve the model as it stands; the answer depends on the model only (a MILP starts cold with the
        query's ``start``; an LP starts warm and, when ``tie_tol`` finds a possible tie, is solved again cold)."""
        if self.answer is not None:
            return self.answer
        model, grb = self.model, self.gp.GRB
        if self.integer and cold:
            model.reset(1)
            if self.start is not None:
                self.set_mip_start(self.start)
        self._pending = {}
        status = self._optimize(watch=self.integer and self.candidate_cuts is not None)
        if status == grb.OPTIMAL and tie_tol is not None and not self.integer and self._tied(tie_tol):
            self.tie_restarts += 1
            model.reset(0)
            status = self._optimize()
        if status == grb.INFEASIBLE:
            if self._unfix is not None:
                raise OracleError("Gurobi found no action with the arms fix_arms fixed; no action is returned")
            return SolveResult("infeasible")
        if status == grb.TIME_LIMIT:
            if not self.incumbent_on_limit:
                raise LimitReached("Gurobi stopped on its time limit; no action is returned")
            if model.SolCount == 0:
                return SolveResult("limit", None, message="Gurobi's time limit, no incumbent")
        elif status not in (grb.OPTIMAL, grb.SUBOPTIMAL) or model.SolCount == 0:  # SUBOPTIMAL: the bound decides
            raise OracleError(f"Gurobi returned status {status} (numerical trouble or unbounded model)")
        objective = float(model.ObjVal)
        bound = max(float(model.ObjBound) if model.IsMIP else objective, self.region_bound)
        state = "optimal" if status != grb.TIME_LIMIT else "limit"
        return SolveResult(state, model.getAttr("X", self.vars), objective, bound)

    def _tied(self, tol: float) -> bool:
        duals = [d for constrs in self._rows for d in self.model.getAttr("Pi", list(constrs))]
        return self._maybe_tied(SimpleNamespace(col_dual=self.model.getAttr("RC", self.vars), row_dual=duals), tol)

    def run_relaxation(self) -> np.ndarray | None:
        """One run of the LP relaxation as the options stand; the column values when optimal, else ``None``.

        A continuous model continues from its last basis; an integer model's integer columns are continuous
        for the run (Gurobi then starts from no basis).
        """
        model, grb = self.model, self.gp.GRB
        model.update()
        integral = [v for v in self.vars if v.VType != grb.CONTINUOUS]
        kinds = model.getAttr("VType", integral)
        model.setAttr("VType", integral, [grb.CONTINUOUS] * len(integral))
        try:
            status = self._optimize()
            x = np.asarray(model.getAttr("X", self.vars)) if status == grb.OPTIMAL else None
        finally:
            if integral:
                model.setAttr("VType", integral, kinds)
        return x

    def row_duals(self) -> np.ndarray:
        """The row duals of the last solve, one per engine row (a ranged row's two summed; HiGHS's signs)."""
        return np.array([sum(self.model.getAttr("Pi", list(constrs))) for constrs in self._rows], float)

    def clear_solver(self) -> None:
        """Forget the last solve's basis and solution (the next solve starts cold)."""
        self.model.reset(0)

    def set_mip_start(self, arms: np.ndarray) -> None:
        """A partial MIP start on the arm columns (Gurobi completes it when it fits the model)."""
        self.model.setAttr("Start", self.vars[: self.d], np.asarray(arms, float).tolist())

    def undo(self) -> None:
        """Delete every row beyond the formulation's; free fixed arms; clear the query's hooks and options."""
        super().undo()
        self.model.update()

    # ------------------------------------------------------------- options
    def _param(self, key: str) -> object:
        return self.model.getParamInfo(key)[2]

    def _set_param(self, key: str, value: object) -> None:
        self.model.setParam(key, value)

    def _has_param(self, key: str) -> bool:
        return self.model.getParamInfo(key) is not None  # (gurobipy prints "No parameters matching")

    def new_model(self, formulation: Formulation, *, integer: bool = True) -> GurobiEngine:
        """A new Gurobi engine holding ``formulation`` (in this one's environment: use it on the same thread)."""
        return GurobiEngine(formulation, integer=integer, env=self.env)

    def close(self) -> None:
        """Free the Gurobi model (its environment stays, shared with the models of :meth:`new_model`)."""
        self.model.dispose()
