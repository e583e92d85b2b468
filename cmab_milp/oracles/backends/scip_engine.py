"""SCIP's :class:`~cmab_milp.oracles.core.engine.Engine`: the model the solver-neutral MIP and norm code edits.

:class:`ScipEngine` holds a :class:`~cmab_milp.spaces.formulation.Formulation` in a ``pyscipopt.Model`` and
gives every member of the engine protocol with :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`'s
meaning (``new_engine(formulation, engine="scip")``). What differs from HiGHS, and why:

* SCIP edits only in its problem stage: every edit first frees the last solve (``freeTransform``), so every
  solve starts cold (no warm LP re-solve; ``tie_tol`` has nothing to repeat and ``tie_restarts`` stays 0).
* A continuous model (``integer=False``) runs without presolve and propagation, so that its rows stay LP rows
  and ``row_duals`` (``getDualsolLinear``, sign flipped to HiGHS's for a maximisation) are the LP's duals.
  ``run_relaxation`` / ``relaxation_arm_values`` solve a new continuous copy of the model as it stands
  (columns, bounds, costs, rows, the time limit; no presolve), whose duals ``row_duals`` then gives.
* ``delete_cols``: SCIP deletes a variable only when no constraint holds it, so each row holding a deleted
  column is replaced (same engine index) by the row without it, then the variable is deleted.
* ``set_mip_start`` keeps the arm values; the next MILP run hands them to SCIP as a partial solution (SCIP
  completes it). ``limits/maxorigsol`` is 0 (the ``scip`` backend's tie rule: no solution survives
  ``freeTransform``), so it is raised to 1 only while the start is added.
* ``candidate_cuts``: each new incumbent SCIP finds during a MILP solve (a ``BESTSOLFOUND`` event) is handed to
  it and its cuts kept for :meth:`ScipEngine.separate`, as HiGHS's solution callback does.
* Options are SCIP's parameter names; the HiGHS names the solver-neutral code sets are translated or dropped
  (:data:`HIGHS_NAMES`); any other unknown name is refused (``ValueError``).

Solves use the ``scip`` backend's tolerances (:data:`~cmab_milp.oracles.mip.options.SCIP_PARAMS`: zero gaps,
one thread), probing presolve off and Ctrl-C left to Python, as that backend.

Example
-------
A column held by a row, deleted: the row stays, without its entry (SCIP deletes only a free variable).

>>> import cmab_milp as cm
>>> model = ScipEngine(cm.Cardinality(3, 1).formulation())
>>> y = model.append_cols([0.0], [0.0], [1.0])
>>> model.add_rows([Row((0, y), (1.0, -1.0), -np.inf, 0.0)])
(1, 2)
>>> model.delete_cols(y, y + 1)
>>> model.num_cols, model.rows(1, 2)
(3, [Row(cols=(0,), coefs=(1.0,), lb=-inf, ub=0.0)])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.base import LimitReached, OracleError
from ..core.interrupts import stoppable
from ..core.model import SolveResult
from ..mip.options import SCIP_PARAMS
from .engine_base import HIGHS_TUNING_ONLY, EngineBase
from .scip import _ranged

__all__ = ["HIGHS_NAMES", "ScipEngine"]

_INF = 1e20  # SCIP's infinity
#: HiGHS option names set by the solver-neutral code, as ``(SCIP parameter, value -> SCIP value)``; ``None``:
#: nothing to set on SCIP (``run_relaxation`` always relaxes; HiGHS's MIP tuning switches change no optimum).
HIGHS_NAMES: dict[str, tuple[str, Callable[[Any], Any]] | None] = {
    "time_limit": ("limits/time", lambda v: min(float(v), _INF)),
    "mip_rel_gap": ("limits/gap", float),
    "presolve": ("presolving/maxrounds", lambda v: 0 if str(v) == "off" else -1),
    **dict.fromkeys(HIGHS_TUNING_ONLY),
}
_STATUS = {"optimal": "optimal", "gaplimit": "optimal", "infeasible": "infeasible", "timelimit": "limit"}


def _bound(x: float) -> float | None:
    """A bound for PySCIPOpt (``None``: infinite)."""
    return None if abs(float(x)) >= _INF else float(x)


class ScipEngine(EngineBase):
    """One SCIP model holding a formulation, edited and re-solved: the SCIP :class:`~.core.engine.Engine`.

    Not thread-safe: use one per thread. Columns ``0..d-1`` are the arms; the model maximises. Members as
    :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel` (the module docstring lists the differences).
    Options take SCIP's names or the HiGHS ones of :data:`HIGHS_NAMES`:

    >>> import cmab_milp as cm
    >>> model = ScipEngine(cm.Cardinality(3, 2).formulation())
    >>> with model.options({"presolve": "off"}):
    ...     model.model.getParam("presolving/maxrounds")
    0
    >>> model.model.getParam("presolving/maxrounds")
    -1
    """

    name = "SCIP"
    bound_name = "SCIP's dual bound"
    HIGHS_NAMES = HIGHS_NAMES

    def __init__(self, formulation: Formulation, *, integer: bool = True, time_limit: float | None = None):
        import pyscipopt

        self.scip = pyscipopt
        self.model = model = pyscipopt.Model("cmab_engine")
        model.hideOutput()
        for key, value in SCIP_PARAMS.items():
            model.setParam(key, value)
        model.setParam("propagating/probing/maxprerounds", 0)  # as the scip backend (a wrong optimum in SCIP 10)
        model.setParam("limits/maxorigsol", 0)  # no solution of an earlier solve survives freeTransform
        model.setParam("misc/catchctrlc", False)  # Ctrl-C is Python's (core.interrupts)
        if not integer:  # rows stay LP rows, so their duals are the LP's
            model.setPresolve(pyscipopt.SCIP_PARAMSETTING.OFF)
            model.setHeuristics(pyscipopt.SCIP_PARAMSETTING.OFF)
            model.setParam("propagating/maxroundsroot", 0)
            model.setParam("propagating/maxrounds", 0)
        self.d, self.integer = formulation.d, integer
        self.vars: list = []
        self.solved = False  # whether the model is past SCIP's problem stage (edits free it first)
        self.costs: list[float] = []
        self._named = 0  # SCIP variable names are unique: "c<k>" for the k-th column ever added
        kinds = np.concatenate([np.ones(self.d, bool), np.asarray(formulation.aux_integer, bool)])
        lower = np.concatenate([np.zeros(self.d), formulation.aux_lb])
        upper = np.concatenate([np.ones(self.d), formulation.aux_ub])
        self._new_cols(np.zeros(len(kinds)), lower, upper, kinds & integer)
        self.col_names = formulation.col_names()
        self._rows: list = []
        self.add_rows(formulation.rows)
        self.base_rows = formulation.n_rows
        self._start_query_state()  # (tie_restarts stays 0: every SCIP solve starts cold, nothing to repeat)
        self._duals: np.ndarray | None = None
        self._mip_start: list[float] | None = None  # set_mip_start's arm values, added at the next run
        self._start_stored = False  # SCIP keeps a partial solution for good: the next start needs a new model
        self._watch = False
        self.set_time_limit(time_limit)
        model.includeEventhdlr(_candidate_handler(self), "cmab_candidates", "integer candidates to candidate_cuts")

    # ------------------------------------------------------------- editing
    def _edit(self) -> None:
        """Back to SCIP's problem stage (the last solve is freed)."""
        if self.solved:
            self.model.freeTransform()
            self.solved = False

    def set_costs(self, costs: np.ndarray, cols: np.ndarray | None = None) -> None:
        """Objective coefficients of the arm columns (or of ``cols``)."""
        for col, cost in zip(range(self.d) if cols is None else cols, np.asarray(costs, float), strict=True):
            self.costs[int(col)] = float(cost)

    def set_col_cost(self, col: int, cost: float) -> None:
        """Objective coefficient of one column."""
        self.costs[col] = float(cost)

    def set_col_bounds(self, col: int, lower: float, upper: float) -> None:
        """Bounds of one column."""
        self._edit()
        var = self.vars[col]
        self.model.chgVarLb(var, None)  # widen first, so that lb <= ub holds after each change
        self.model.chgVarUb(var, _bound(upper))
        self.model.chgVarLb(var, _bound(lower))

    def _arm_bounds(self, lower: np.ndarray, upper: np.ndarray) -> None:
        for i in np.flatnonzero((lower != self.lower) | (upper != self.upper)):
            self.set_col_bounds(int(i), float(lower[i]), float(upper[i]))
        self.lower, self.upper = lower, upper

    def arm_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(costs, lower, upper)`` of the arm columns as the model holds them now."""
        arms = self.vars[: self.d]
        lower = [-math.inf if v.getLbOriginal() <= -_INF else v.getLbOriginal() for v in arms]
        upper = [math.inf if v.getUbOriginal() >= _INF else v.getUbOriginal() for v in arms]
        return np.array(self.costs[: self.d]), np.array(lower, float), np.array(upper, float)

    def _constraint(self, cols, coefs, lb: float, ub: float):
        terms = [(float(v), self.vars[int(c)]) for c, v in zip(cols, coefs, strict=True)]
        expr = self.scip.quicksum(v * var for v, var in terms) if terms else 0.0 * self.vars[0]
        return self.model.addCons(_ranged(expr, lb, ub) if np.isfinite(lb) or np.isfinite(ub) else expr <= _INF)

    def add_rows(self, rows: list[Row]) -> tuple[int, int]:
        """Append rows; return the ``[first, last)`` row range they occupy."""
        if not rows:
            return 0, 0
        self._edit()
        first = len(self._rows)
        self._rows.extend(self._constraint(r.cols, r.coefs, float(r.lb), float(r.ub)) for r in rows)
        return first, len(self._rows)

    def _read(self, cons, index: dict[str, int]) -> Row:
        terms = sorted((index[name], coef) for name, coef in self.model.getValsLinear(cons).items())
        lb, ub = self.model.getLhs(cons), self.model.getRhs(cons)
        lb, ub = -math.inf if lb <= -_INF else float(lb), math.inf if ub >= _INF else float(ub)
        return Row(tuple(int(j) for j, _ in terms), tuple(float(v) for _, v in terms), lb, ub)

    def rows(self, first: int, last: int) -> list[Row]:
        """The rows ``[first, last)`` as :class:`Row` objects, read back from SCIP (columns in increasing order).

        >>> import cmab_milp as cm
        >>> ScipEngine(cm.Cardinality(3, 2).formulation()).rows(0, 1)
        [Row(cols=(0, 1, 2), coefs=(1.0, 1.0, 1.0), lb=-inf, ub=2.0)]
        """
        self._row_range(first, last)
        index = {v.name: j for j, v in enumerate(self.vars)}
        return [self._read(cons, index) for cons in self._rows[first:last]]

    def delete_rows(self, first: int, last: int) -> None:
        """Delete the rows ``[first, last)`` (rows after them shift down)."""
        if last > first:
            self._edit()
            for cons in self._rows[first:last]:
                self.model.delCons(cons)
            del self._rows[first:last]

    def _new_cols(self, costs, lb, ub, integer: np.ndarray) -> int:
        self._edit()
        first = len(self.vars)
        for cost, lo, hi, is_int in zip(costs, lb, ub, integer, strict=True):
            name, self._named = f"c{self._named}", self._named + 1
            kind = "I" if is_int else "C"
            self.vars.append(self.model.addVar(name, vtype=kind, lb=_bound(lo), ub=_bound(hi)))
            self.costs.append(float(cost))
        return first

    def delete_cols(self, first: int, last: int) -> None:
        """Delete the columns ``[first, last)`` (columns after them shift down; their row entries go).

        SCIP deletes only a variable no constraint holds: a row holding one is replaced by the row without it.
        """
        if last <= first:
            return
        self._edit()
        index = {v.name: j for j, v in enumerate(self.vars)}
        gone = {v.name for v in self.vars[first:last]}
        for k, cons in enumerate(self._rows):
            if gone & self.model.getValsLinear(cons).keys():
                row = self._read(cons, index)
                kept = [(c, v) for c, v in zip(row.cols, row.coefs, strict=True) if not first <= c < last]
                self.model.delCons(cons)
                self._rows[k] = self._constraint([c for c, _ in kept], [v for _, v in kept], row.lb, row.ub)
        for var in self.vars[first:last]:
            self.model.delVar(var)
        del self.vars[first:last], self.costs[first:last]

    # ------------------------------------------------------------- solving
    def _optimize(self, dual_reductions: bool = True) -> str:
        """Optimise the model as it stands (Ctrl-C raises ``KeyboardInterrupt``); return SCIP's status
        (``inforunbd`` is decided by a second run without dual reductions)."""
        self._edit()
        if self._mip_start is not None and self.integer:
            self._add_start()  # (may rebuild the model)
        model = self.model
        model.setObjective(
            self.scip.quicksum(c * v for c, v in zip(self.costs, self.vars, strict=True) if c), "maximize"
        )
        self.solved = True
        with stoppable(model.interruptSolve):
            model.optimizeNogil()
        status = model.getStatus()
        if status == "userinterrupt":
            raise KeyboardInterrupt
        if status == "inforunbd" and dual_reductions:
            with self.options({"misc/allowstrongdualreds": False, "misc/allowweakdualreds": False}):
                return self._optimize(dual_reductions=False)
        return status

    def solve(self, cold: bool = True, tie_tol: float | None = None) -> SolveResult:
        """Solve the model as it stands (always from SCIP's problem stage: cold; a MILP with the query's ``start``)."""
        if self.answer is not None:
            return self.answer
        self._edit()
        if self.integer and cold and self.start is not None:
            self.set_mip_start(self.start)
        self._pending, self._duals = {}, None
        self._watch = self.integer and self.candidate_cuts is not None
        try:
            status = self._optimize()
        finally:
            self._watch = False
        model, state = self.model, _STATUS.get(status)
        if state == "infeasible":
            if self._unfix is not None:
                raise OracleError("SCIP found no action with the arms fix_arms fixed; no action is returned")
            return SolveResult("infeasible")
        if state == "limit":
            if not self.incumbent_on_limit:
                raise LimitReached("SCIP stopped on its time limit; no action is returned")
            if model.getNSols() == 0:
                return SolveResult("limit", None, message="SCIP's time limit, no incumbent")
        elif state is None or model.getNSols() == 0:
            raise OracleError(f"SCIP returned status {status!r} (numerical trouble or unbounded model)")
        sol = model.getBestSol()
        x = [model.getSolVal(sol, v) for v in self.vars]
        if not self.integer and state == "optimal":  # HiGHS's sign: SCIP's duals of the minimised -objective
            self._duals = np.array([-model.getDualsolLinear(c) for c in self._rows], float)
        bound = max(float(model.getDualbound()), self.region_bound)
        return SolveResult(state, x, float(model.getSolObjVal(sol)), bound, f"SCIP status {status!r}")

    def run_relaxation(self) -> np.ndarray | None:
        """The LP relaxation of the model as it stands, solved as a new continuous copy (no presolve); the
        column values when optimal, else ``None``. Its row duals become :meth:`row_duals`."""
        lower, upper = (np.array([getattr(v, f"get{s}Original")() for v in self.vars[self.d :]]) for s in ("Lb", "Ub"))
        copy = ScipEngine(
            Formulation(
                d=self.d,
                rows=self.rows(0, self.num_rows),
                aux_lb=lower,
                aux_ub=upper,
                aux_integer=np.zeros(len(lower), bool),
            ),
            integer=False,
            time_limit=min(float(self.model.getParam("limits/time")), _INF),
        )
        copy.costs = list(self.costs)
        for j, var in enumerate(self.vars[: self.d]):
            copy.set_col_bounds(j, var.getLbOriginal(), var.getUbOriginal())
        try:
            result = copy.solve()
        except (LimitReached, OracleError):
            return None
        self._duals = copy._duals
        return np.asarray(result.x, float) if result.status == "optimal" else None

    def row_duals(self) -> np.ndarray:
        """The row duals of the last LP solve or relaxation run (HiGHS's sign convention)."""
        if self._duals is None:
            raise OracleError("SCIP's engine has row duals only after an optimal LP solve or run_relaxation")
        return self._duals.copy()

    def clear_solver(self) -> None:
        """Forget the last solve and any pending MIP start (``freeTransform``: the next solve starts cold)."""
        self._edit()
        self._mip_start = None

    def set_mip_start(self, arms: np.ndarray) -> None:
        """A partial MIP start on the arm columns for the next run (SCIP completes it when it fits the model; a
        later start replaces it)."""
        self._mip_start = np.asarray(arms, float).tolist()

    def _add_start(self) -> None:
        """Hand the pending start to SCIP as a partial solution (stored only while ``limits/maxorigsol`` allows).

        SCIP keeps a partial solution across solves and ``freeTransform`` (nothing removes it), so a model that
        holds one is first rebuilt (:meth:`_reload`): each run sees its own start only.
        """
        if self._start_stored:
            self._reload()
        model, arms, self._mip_start, self._start_stored = self.model, self._mip_start, None, True
        model.setParam("limits/maxorigsol", 1)
        try:
            sol = model.createPartialSol()
            for var, value in zip(self.vars[: self.d], arms, strict=True):
                model.setSolVal(sol, var, value)
            model.addSol(sol, free=True)
        finally:
            model.setParam("limits/maxorigsol", 0)

    def _reload(self) -> None:
        """The model rebuilt as it stands (parameters, columns, costs, rows) with no stored solution."""
        self._edit()
        old, rows = self.model, self.rows(0, self.num_rows)
        self.model = model = self.scip.Model("cmab_engine")
        model.hideOutput()
        model.setParams(old.getParams())
        self.vars = [
            model.addVar(v.name, vtype=v.vtype()[0], lb=_bound(v.getLbOriginal()), ub=_bound(v.getUbOriginal()))
            for v in self.vars
        ]
        self._rows = [self._constraint(r.cols, r.coefs, float(r.lb), float(r.ub)) for r in rows]
        model.includeEventhdlr(_candidate_handler(self), "cmab_candidates", "integer candidates to candidate_cuts")
        self._start_stored = False

    # ------------------------------------------------------------- options
    def _param(self, key: str) -> object:
        return self.model.getParam(key)

    def _set_param(self, key: str, value: object) -> None:
        self._edit()
        self.model.setParam(key, value)

    def _has_param(self, key: str) -> bool:
        try:
            self.model.getParam(key)
        except KeyError:
            return False
        return True

    def new_model(self, formulation: Formulation, *, integer: bool = True) -> ScipEngine:
        """A new SCIP engine holding ``formulation``."""
        return ScipEngine(formulation, integer=integer)


def _candidate_handler(engine: ScipEngine):
    """An event handler handing each new incumbent of a MILP solve to ``engine.candidate_cuts``
    (``BESTSOLFOUND``); the cuts are kept for :meth:`ScipEngine.separate`."""
    import pyscipopt

    class Candidates(pyscipopt.Eventhdlr):
        def eventinit(self):
            self.model.catchEvent(pyscipopt.SCIP_EVENTTYPE.BESTSOLFOUND, self)

        def eventexit(self):
            self.model.dropEvent(pyscipopt.SCIP_EVENTTYPE.BESTSOLFOUND, self)

        def eventexec(self, event):
            if engine._watch:
                sol = self.model.getBestSol()
                cuts = engine.candidate_cuts([self.model.getSolVal(sol, v) for v in engine.vars])
                if cuts:
                    engine._pending.update(dict.fromkeys(cuts))
            return {}

    return Candidates()
