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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.base import LimitReached, OracleError
from ..core.interrupts import stoppable
from ..core.model import ModelBase, SolveResult
from ..mip.tuning import HighsTuning
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
    "solve_relaxation": None,
    "mip_allow_restart": None,
    "mip_heuristic_run_rins": None,
    "mip_heuristic_run_rens": None,
    "mip_heuristic_effort": None,
    "mip_heuristic_run_root_reduced_cost": None,
    "mip_pool_soft_limit": None,
}


class GurobiEngine(ModelBase):
    """One Gurobi model holding a formulation, edited and re-solved: the Gurobi :class:`~.core.engine.Engine`.

    Not thread-safe: use one per thread. Columns ``0..d-1`` are the arms; the model maximises. Members as
    :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel` (the module docstring lists the differences).
    ``env``: a started ``gurobipy.Env`` to build the model in (default: a new one; :meth:`new_model` shares its own).
    """

    name = "Gurobi"
    bound_name = "Gurobi's ObjBound"
    #: The tuning choices its MIP hooks read (:mod:`~cmab_milp.oracles.mip`), as on HiGHS.
    tuning: HighsTuning = HighsTuning()
    #: HiGHS's :meth:`~.highs_solve.HighsSolving.separate` and tie test read only the engine's members.
    separate = HighsSolving.separate
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
        self.lower, self.upper, self.arms_free = np.zeros(self.d), np.ones(self.d), True
        self.incumbent_on_limit = False
        self.tie_restarts = 0  # LP solves repeated from a cold start because of a possible tie
        # the query's hooks, as CompiledModel's (undo clears them)
        self.start: np.ndarray | None = None
        self.repair = self.candidate_cuts = None
        self.answer: SolveResult | None = None
        self._unfix: tuple | None = None
        self.region_bound = -math.inf
        self._pending: dict = {}
        self._query_saved: dict[str, object] = {}
        model.update()

    # ------------------------------------------------------------- editing
    def _finite(self, x) -> float:
        return float(np.clip(float(x), -self.gp.GRB.INFINITY, self.gp.GRB.INFINITY))

    @property
    def num_rows(self) -> int:
        """Rows in the model now (the formulation's and any appended; a ranged row counts once)."""
        return len(self._rows)

    @property
    def num_cols(self) -> int:
        """Columns in the model now (the formulation's and any appended)."""
        return len(self.vars)

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

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        """Fix arms in (``include``) or out (``exclude``); others free in [0, 1]."""
        lower, upper = np.zeros(self.d), np.ones(self.d)
        lower[list(include)] = 1.0
        upper[list(exclude)] = 0.0
        self._arm_bounds(lower, upper)
        self.arms_free = not include and not exclude

    def approximate(self, gap: float) -> None:
        """Let a MILP stop at relative ``gap``, and a solve stopped by its time limit return its incumbent."""
        self.incumbent_on_limit = True
        if gap:
            self.model.setParam("MIPGap", float(gap))

    def fix_arms(self, fixed: np.ndarray, values: np.ndarray, region_bound: float) -> None:
        """Fix the arms ``fixed`` (bool mask) to ``values`` for this query; ``region_bound`` bounds what it cuts off."""
        if self._unfix is None:
            self._unfix = (self.lower, self.upper, self.arms_free)
        lower, upper = self.lower.copy(), self.upper.copy()
        lower[fixed] = upper[fixed] = np.asarray(values, float)[fixed]
        self._arm_bounds(lower, upper)
        self.arms_free = False
        self.region_bound = max(self.region_bound, float(region_bound))

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

    def add_rows_fixed(self, lower: Any, upper: Any, index: Any, value: Any, width: int) -> None:
        """Append rows of ``width`` entries each (``index`` and ``value`` row after row)."""
        lower, upper = np.atleast_1d(np.asarray(lower, float)), np.atleast_1d(np.asarray(upper, float))
        index, value = np.asarray(index, int).ravel(), np.asarray(value, float).ravel()
        if not len(lower) == len(upper) or len(index) != len(value) or len(index) != width * len(lower):
            raise ValueError(
                f"rows: {len(lower)} lower and {len(upper)} upper bounds must agree, and {len(index)} indices and"
                f" {len(value)} values must be {width} per row"
            )
        cut = np.arange(len(lower)) * width
        self.add_rows(
            [
                Row(tuple(index[k : k + width].tolist()), tuple(value[k : k + width].tolist()), lo, hi)
                for k, lo, hi in zip(cut, lower.tolist(), upper.tolist(), strict=True)
            ]
        )

    def rows(self, first: int, last: int) -> list[Row]:
        """The rows ``[first, last)`` as :class:`Row` objects, read back from Gurobi (columns in increasing order).

        >>> import cmab_milp as cm
        >>> GurobiEngine(cm.Cardinality(3, 2).formulation()).rows(0, 1)
        [Row(cols=(0, 1, 2), coefs=(1.0, 1.0, 1.0), lb=-inf, ub=2.0)]
        """
        if not 0 <= first <= last <= self.num_rows:
            raise ValueError(f"row range [{first}, {last}) is not inside the model's {self.num_rows} rows")
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

    def add_cols(self, lb: np.ndarray, ub: np.ndarray, integer: np.ndarray, names: list[str]) -> int:
        """Append named empty columns (integer only on an integer model); return the index of the first."""
        n = len(lb)
        first = self._new_cols(np.zeros(n), lb, ub, np.asarray(integer, bool) & self.integer)
        self.col_names.extend(names)
        return first

    def append_cols(self, costs: Any, lb: Any, ub: Any, integer: np.ndarray | None = None) -> int:
        """Append unnamed empty columns; ``integer`` (column offsets) become integer. Return the index of the first."""
        kinds = np.zeros(len(costs), bool)
        if integer is not None and len(integer):
            kinds[np.asarray(integer, int)] = True
        return self._new_cols(costs, lb, ub, kinds)

    def delete_cols(self, first: int, last: int) -> None:
        """Delete the columns ``[first, last)`` (columns after them shift down; Gurobi drops their entries)."""
        if last > first:
            self.model.remove(self.vars[first:last])
            del self.vars[first:last]

    # ------------------------------------------------------------- solving
    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for each next run (``None``: none; Gurobi counts from each run's start)."""
        self.model.setParam("TimeLimit", self.gp.GRB.INFINITY if seconds is None else float(seconds))

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

    def relaxation_arm_values(self) -> list[float] | None:
        """The arm values of the LP relaxation of the model as it stands (``None`` unless optimal)."""
        x = self.run_relaxation()
        self.clear_solver()
        return None if x is None else x[: self.d].tolist()

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
        self.start = self.repair = self.candidate_cuts = self.answer = None
        saved, self._query_saved = self._query_saved, {}
        self.set_options(saved)  # the values before set_query_options
        if self._unfix is not None:
            self._arm_bounds(*self._unfix[:2])
            self.arms_free, self._unfix, self.region_bound = self._unfix[2], None, -math.inf
        self.delete_rows(self.base_rows, self.num_rows)
        self.model.update()

    # ------------------------------------------------------------- options
    def _gurobi(self, values: dict[str, object]) -> dict[str, object]:
        """``values`` by Gurobi's parameter names (:data:`HIGHS_NAMES` translated); ``ValueError`` for unknown ones."""
        out: dict[str, object] = {}
        for key, value in values.items():
            if key in HIGHS_NAMES:
                known = HIGHS_NAMES[key]
                if known is not None:
                    out[known[0]] = known[1](value)
                continue
            if self.model.getParamInfo(key) is None:  # (gurobipy prints "No parameters matching")
                raise ValueError(f"{key!r} is neither a Gurobi parameter nor a HiGHS option of HIGHS_NAMES")
            out[key] = value
        return out

    def set_options(self, values: dict[str, object]) -> None:
        """Set options for good (Gurobi's names, or HiGHS's of :data:`HIGHS_NAMES`)."""
        for key, value in self._gurobi(values).items():
            self.model.setParam(key, value)

    @contextmanager
    def options(self, values: dict[str, object]) -> Iterator[None]:
        """Options set for a ``with`` block, then restored.

        >>> import cmab_milp as cm
        >>> model = GurobiEngine(cm.Cardinality(3, 2).formulation())
        >>> with model.options({"presolve": "off"}):
        ...     model.model.Params.Presolve
        0
        >>> model.model.Params.Presolve
        -1
        """
        values = self._gurobi(values)
        saved = {key: self.model.getParamInfo(key)[2] for key in values}
        try:
            self.set_options(values)
            yield
        finally:
            self.set_options(saved)

    def set_query_options(self, values: dict[str, object]) -> None:
        """Set options for the query the model holds now; :meth:`undo` restores the values before."""
        for key, value in self._gurobi(values).items():
            if key not in self._query_saved:
                self._query_saved[key] = self.model.getParamInfo(key)[2]
            self.model.setParam(key, value)

    def new_model(self, formulation: Formulation, *, integer: bool = True) -> GurobiEngine:
        """A new Gurobi engine holding ``formulation`` (in this one's environment: use it on the same thread)."""
        return GurobiEngine(formulation, integer=integer, env=self.env)

    def close(self) -> None:
        """Free the Gurobi model (its environment stays, shared with the models of :meth:`new_model`)."""
        self.model.dispose()
