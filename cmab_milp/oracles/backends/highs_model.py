"""Compile a :class:`~cmab_milp.spaces.formulation.Formulation` into a HiGHS model.

This module is the one place that talks to ``highspy``: building, editing
(rows, columns, bounds, costs, options, MIP starts), re-solving and reading back
models. The linear oracle (:mod:`~cmab_milp.oracles.backends.highs`) and the norm index
(:mod:`~cmab_milp.oracles.norm`) both work through :class:`CompiledModel`.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> model = CompiledModel(cm.Cardinality(3, 1).formulation())
>>> model.set_costs(np.array([0.2, 0.7, 0.1]))
>>> model.solve().status
'optimal'
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.base import LimitReached, OracleError
from ..core.pipeline import ModelBase, SolveResult
from ..mip.options import HIGHS_OPTIONS, highs_model_options
from ..mip.tuning import HighsTuning

__all__ = ["CompiledModel", "LimitReached", "SolveResult", "new_highs"]


_banner_lock = threading.Lock()
_banner_done = False


def new_highs(time_limit: float | None = None):  # -> highspy.Highs
    """A configured ``highspy.Highs``; the once-per-process banner is swallowed."""
    global _banner_done
    import highspy

    if not _banner_done:
        with _banner_lock:
            if not _banner_done:
                sys.stdout.flush()
                saved = os.dup(1)
                try:
                    with open(os.devnull, "w") as null:
                        os.dup2(null.fileno(), 1)
                        h = highspy.Highs()
                finally:
                    os.dup2(saved, 1)
                    os.close(saved)
                _banner_done = True
                _configure(h, time_limit)
                return h
    h = highspy.Highs()
    _configure(h, time_limit)
    return h


def _configure(h, time_limit: float | None) -> None:
    for key, value in HIGHS_OPTIONS.items():
        h.setOptionValue(key, value)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))


class CompiledModel(ModelBase):
    """One HiGHS instance holding a formulation, re-solved with new costs and bounds.

    Not thread-safe: use one per thread. Columns ``0..d-1`` are the arms;
    callers may append columns and rows (:meth:`add_cols`, :meth:`add_rows`).
    It is the HiGHS :class:`~cmab_milp.oracles.core.pipeline.SolverModel`.

    :meth:`approximate` turns on the certified approximate mode. Per-query hooks
    (set by :func:`~cmab_milp.oracles.mip.starts.prepare_query`, cleared by
    :meth:`undo`): a MIP start for every cold MILP solve, and the integer
    candidates HiGHS meets (its solution callback; it has no lazy-constraint
    callback that runs) checked for cuts, which :meth:`separate` hands to the cut
    loop with a repaired candidate as the next start. None changes an optimum.
    """

    name = "HiGHS"
    #: The tuning choices its MIP hooks read (:mod:`~cmab_milp.oracles.mip`); the ``highs`` backend sets its own.
    tuning: HighsTuning = HighsTuning()

    def __init__(self, formulation: Formulation, *, integer: bool = True, time_limit: float | None = None):
        import highspy

        self._hs = highspy
        self._error = highspy.HighsStatus.kError
        self.d = formulation.d
        self.integer = integer
        self.h = new_highs(time_limit)
        #: Seconds per run (``None``: none); see :meth:`_run` for why it is not left to HiGHS alone.
        self._time_limit = None if time_limit is None else float(time_limit)
        for key, value in highs_model_options(formulation).items():  # the formulation's own options
            self.h.setOptionValue(key, value)
        self.incumbent_on_limit = False
        a, row_lb, row_ub = formulation.matrix()
        lp = highspy.HighsLp()
        lp.num_col_ = formulation.n_cols
        lp.num_row_ = formulation.n_rows
        lp.col_cost_ = np.zeros(formulation.n_cols)
        lp.col_lower_ = np.concatenate([np.zeros(self.d), formulation.aux_lb])
        lp.col_upper_ = np.concatenate([np.ones(self.d), formulation.aux_ub])
        lp.row_lower_ = row_lb
        lp.row_upper_ = row_ub
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.col_names_ = formulation.col_names()
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = a.indptr
        lp.a_matrix_.index_ = a.indices
        lp.a_matrix_.value_ = a.data
        lp.a_matrix_.num_col_ = formulation.n_cols
        lp.a_matrix_.num_row_ = formulation.n_rows
        if integer:
            kint, kcont = highspy.HighsVarType.kInteger, highspy.HighsVarType.kContinuous
            lp.integrality_ = [kint] * self.d + [kint if t else kcont for t in formulation.aux_integer]
        self._check(self.h.passModel(lp), "passModel")
        self.col_names = formulation.col_names()
        self.arm_idx = np.arange(self.d, dtype=np.int32)
        self.lower = np.zeros(self.d)
        self.upper = np.ones(self.d)
        self.arms_free = True
        self.cold_restarts = 0  # solves retried from scratch after an 'Unknown' status
        self.tie_restarts = 0  # LP solves repeated from a cold start because of a possible tie
        self.start_restarts = 0  # MILP solves repeated without the MIP start (its values came back, not the optimum's)
        self.base_rows = formulation.n_rows  # rows beyond these belong to the query being answered
        self._optimal = highspy.HighsModelStatus.kOptimal
        # Hooks of one query (:func:`~cmab_milp.oracles.mip.starts.prepare_query` sets them; :meth:`undo` clears):
        #: ``candidate_cuts(values) -> list[Row]``: the cuts an integer candidate violates (it is no action);
        #: collected during a MILP solve from every candidate HiGHS meets, handed to the cut loop by :meth:`separate`.
        self.candidate_cuts = None
        #: ``repair(values) -> action | None``: an action made of a candidate that is no action; the best
        #: one becomes the MIP start of the query's next solves.
        self.repair = None
        #: A MIP start (arm values of an action) for every cold MILP solve of this query.
        self.start: np.ndarray | None = None
        #: Arms fixed for this query by :meth:`fix_arms`: ``(lower, upper)`` to restore, and the bound of
        #: the actions the fixing cut off (every solve's bound is at least it, so the certificate covers them).
        self._unfix: tuple[np.ndarray, np.ndarray] | None = None
        self.region_bound = -math.inf
        #: This query's answer proven without HiGHS (an exact method of the query's hooks): :meth:`solve`
        #: returns it; :meth:`undo` clears it.
        self.answer: SolveResult | None = None
        self._pending: dict = {}  # the cuts of this solve's candidates, in the order met (a dict keeps it)
        #: HiGHS options set for this query by :meth:`set_query_options`: their values before, restored by :meth:`undo`.
        self._query_saved: dict[str, object] = {}
        self._watch = False
        self._callbacks_on = False
        self._status = {self._optimal: "optimal", highspy.HighsModelStatus.kInfeasible: "infeasible"}

    # ------------------------------------------------------------- editing
    def _check(self, status, what: str) -> None:
        if status == self._error:
            raise OracleError(f"HiGHS {what} failed")

    def set_costs(self, costs: np.ndarray, cols: np.ndarray | None = None) -> None:
        """Objective coefficients of the arm columns (or of ``cols``)."""
        idx = self.arm_idx if cols is None else cols
        self.h.changeColsCost(len(idx), idx, costs)

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        """Fix arms in (``include``) or out (``exclude``); others free in [0, 1]."""
        if not include and not exclude:
            if self.arms_free:
                return
            lower, upper = np.zeros(self.d), np.ones(self.d)
        else:
            lower, upper = np.zeros(self.d), np.ones(self.d)
        if include:
            lower[list(include)] = 1.0
        if exclude:
            upper[list(exclude)] = 0.0
        changed = np.flatnonzero((lower != self.lower) | (upper != self.upper)).astype(np.int32)
        if len(changed):
            self.h.changeColsBounds(len(changed), changed, lower[changed], upper[changed])
            self.lower, self.upper = lower, upper
        self.arms_free = not include and not exclude

    def approximate(self, gap: float) -> None:
        """Let a MILP stop at relative ``gap``, and a solve stopped by the time limit return its
        incumbent (status ``'limit'``) instead of raising :class:`LimitReached`."""
        self.incumbent_on_limit = True
        if gap:
            self.h.setOptionValue("mip_rel_gap", float(gap))

    def fix_arms(self, fixed: np.ndarray, values: np.ndarray, region_bound: float) -> None:
        """Fix the arms ``fixed`` (bool mask) to ``values`` for this query; :meth:`undo` frees them again.

        ``region_bound`` must bound the value of every action the fixing excludes (reduced-cost fixing:
        :func:`~cmab_milp.oracles.mip.side_starts.side_plan`); each solve's bound is then at least it, so a
        bound check of the answer covers the excluded actions too.
        """
        if self._unfix is None:
            self._unfix = (self.lower, self.upper, self.arms_free)
        lower, upper = self.lower.copy(), self.upper.copy()
        lower[fixed] = upper[fixed] = np.asarray(values, float)[fixed]
        changed = np.flatnonzero((lower != self.lower) | (upper != self.upper)).astype(np.int32)
        if len(changed):
            self.h.changeColsBounds(len(changed), changed, lower[changed], upper[changed])
        self.lower, self.upper, self.arms_free = lower, upper, False
        self.region_bound = max(self.region_bound, float(region_bound))

    def set_query_options(self, values: dict[str, object]) -> None:
        """Set HiGHS options for the query the model holds now; :meth:`undo` restores the values before.

        For rules that read the query (a function of the query alone keeps the tie rule).

        >>> import cmab_milp as cm
        >>> model = CompiledModel(cm.Cardinality(3, 2).formulation())
        >>> model.set_query_options({"mip_allow_restart": False})
        >>> model.h.getOptionValue("mip_allow_restart")[1]
        False
        >>> model.undo()
        >>> model.h.getOptionValue("mip_allow_restart")[1]
        True
        """
        for key, value in values.items():
            if key not in self._query_saved:
                self._query_saved[key] = self.h.getOptionValue(key)[1]
            self._check(self.h.setOptionValue(key, value), f"setOptionValue({key!r})")

    def undo(self) -> None:
        """Delete every row beyond the formulation's (a query's restrictions and cuts); free fixed arms;
        restore the options of :meth:`set_query_options`."""
        self.start = self.repair = self.candidate_cuts = self.answer = None
        if self._query_saved:
            saved, self._query_saved = self._query_saved, {}
            for key, value in saved.items():
                self.h.setOptionValue(key, value)
        if self._unfix is not None:
            lower, upper, free = self._unfix
            self._unfix, self.region_bound = None, -math.inf
            changed = np.flatnonzero((lower != self.lower) | (upper != self.upper)).astype(np.int32)
            if len(changed):
                self.h.changeColsBounds(len(changed), changed, lower[changed], upper[changed])
            self.lower, self.upper, self.arms_free = lower, upper, free
        n = self.h.getNumRow()
        if n > self.base_rows:
            self.delete_rows(self.base_rows, n)

    def relaxation_arm_values(self) -> list[float] | None:
        """The arm values of the LP relaxation of the model as it stands (``None`` unless optimal).

        For query-scoped root cuts on fractional points; the next :meth:`solve` starts cold.
        """
        with self.options({"solve_relaxation": True}):
            x = self.run_relaxation()
        self.h.clearSolver()
        return None if x is None else x[: self.d].tolist()

    def add_rows(self, rows: list[Row]) -> tuple[int, int]:
        """Append rows; return the ``[first, last)`` row range they occupy."""
        if not rows:
            return 0, 0
        first = self.h.getNumRow()
        starts, index, value = [], [], []
        for row in rows:
            starts.append(len(index))
            index.extend(row.cols)
            value.extend(row.coefs)
        lb = np.array([r.lb for r in rows], float)
        ub = np.array([r.ub for r in rows], float)
        inf = self._hs.kHighsInf
        lb[np.isneginf(lb)] = -inf
        ub[np.isposinf(ub)] = inf
        self._check(
            self.h.addRows(
                len(rows),
                lb,
                ub,
                len(index),
                np.array(starts, np.int32),
                np.array(index, np.int32),
                np.array(value, float),
            ),
            "addRows",
        )
        return first, first + len(rows)

    def delete_rows(self, first: int, last: int) -> None:
        """Delete the rows ``[first, last)`` (rows after them shift down)."""
        if last > first:
            self._check(self.h.deleteRows(last - first, np.arange(first, last, dtype=np.int32)), "deleteRows")

    def delete_cols(self, first: int, last: int) -> None:
        """Delete the columns ``[first, last)`` (columns after them shift down)."""
        if last > first:
            self._check(self.h.deleteCols(last - first, np.arange(first, last, dtype=np.int32)), "deleteCols")

    def row_duals(self) -> np.ndarray:
        """The row duals of the last solve (HiGHS's sign convention), e.g. for a proven LP bound by weak duality.

        >>> import cmab_milp as cm
        >>> model = CompiledModel(cm.Cardinality(3, 1).formulation(), integer=False)
        >>> model.set_costs(np.array([0.2, 0.7, 0.1]))
        >>> model.solve().status, len(model.row_duals()) == model.num_rows
        ('optimal', True)
        """
        return np.asarray(self.h.getSolution().row_dual, float)

    def arm_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(costs, lower, upper)`` of the arm columns as the model holds them now."""
        _, _, cost, lower, upper, _ = self.h.getCols(self.d, self.arm_idx)
        return np.asarray(cost, float), np.asarray(lower, float), np.asarray(upper, float)

    def rows(self, first: int, last: int) -> list[Row]:
        """The rows ``[first, last)`` as :class:`Row` objects (HiGHS's infinity back to ``inf``).

        >>> import cmab_milp as cm
        >>> model = CompiledModel(cm.Cardinality(3, 2).formulation())
        >>> model.rows(0, 1)
        [Row(cols=(0, 1, 2), coefs=(1.0, 1.0, 1.0), lb=-inf, ub=2.0)]
        """
        if not 0 <= first <= last <= self.num_rows:
            raise ValueError(f"row range [{first}, {last}) is not inside the model's {self.num_rows} rows")
        if last == first:
            return []
        idx = np.arange(first, last, dtype=np.int32)
        _, _, lower, upper, _ = self.h.getRows(len(idx), idx)
        _, start, index, value = self.h.getRowsEntries(len(idx), idx)
        inf = self._hs.kHighsInf
        ends = [*start[1:], len(index)]
        out = []
        for k in range(len(idx)):
            lb = -np.inf if lower[k] <= -inf else float(lower[k])
            ub = np.inf if upper[k] >= inf else float(upper[k])
            cols = tuple(int(c) for c in index[start[k] : ends[k]])
            out.append(Row(cols, tuple(float(v) for v in value[start[k] : ends[k]]), lb, ub))
        return out

    @property
    def num_rows(self) -> int:
        """Rows in the model now (the formulation's and any appended)."""
        return self.h.getNumRow()

    @property
    def num_cols(self) -> int:
        """Columns in the model now (the formulation's and any appended)."""
        return self.h.getNumCol()

    def add_rows_csr(self, lower, upper, starts, index, value) -> None:
        """Append rows given in compressed row form; infinite bounds become HiGHS's infinity.

        >>> import cmab_milp as cm
        >>> model = CompiledModel(cm.Cardinality(3, 2).formulation())
        >>> n = model.num_rows
        >>> model.add_rows_csr([-np.inf], [1.0], [0], [0, 1], [1.0, 1.0])
        >>> model.num_rows - n
        1
        """
        lower = self._finite(np.atleast_1d(np.asarray(lower, float)))
        upper = self._finite(np.atleast_1d(np.asarray(upper, float)))
        index = np.asarray(index, np.int32)
        if not len(lower) == len(upper) == len(starts) or len(index) != len(value):
            raise ValueError(
                f"rows: {len(lower)} lower, {len(upper)} upper bounds and {len(starts)} starts must agree,"
                f" and {len(index)} indices and {len(value)} values"
            )
        self._check(
            self.h.addRows(
                len(lower), lower, upper, len(index), np.asarray(starts, np.int32), index, np.asarray(value, float)
            ),
            "addRows",
        )

    def add_rows_fixed(self, lower, upper, index, value, width: int) -> None:
        """Append rows of ``width`` entries each (``index`` and ``value`` row after row)."""
        n = len(np.atleast_1d(lower))
        self.add_rows_csr(lower, upper, np.arange(n) * width, index, value)

    def append_cols(self, costs, lb, ub, integer: np.ndarray | None = None) -> int:
        """Append empty columns with ``costs`` and bounds; ``integer`` (column offsets) become integer.

        Unlike :meth:`add_cols` no names are recorded: for columns a query removes again.
        Return the index of the first.
        """
        first = self.h.getNumCol()
        n = len(costs)
        self._check(
            self.h.addCols(
                n,
                np.asarray(costs, float),
                self._finite(np.asarray(lb, float)),
                self._finite(np.asarray(ub, float)),
                0,
                [],
                [],
                [],
            ),
            "addCols",
        )
        if integer is not None and len(integer):
            cols = (first + np.asarray(integer)).astype(np.int32)
            kint = self._hs.HighsVarType.kInteger
            self.h.changeColsIntegrality(len(cols), cols, np.array([kint] * len(cols)))
        return first

    def set_row_bounds(self, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Bounds of the rows ``rows`` (infinite bounds become HiGHS's infinity)."""
        rows = np.asarray(rows, np.int32)
        lower, upper = self._finite(np.asarray(lower, float)), self._finite(np.asarray(upper, float))
        self._check(self.h.changeRowsBounds(len(rows), rows, lower, upper), "changeRowsBounds")

    def set_col_bounds(self, col: int, lower: float, upper: float) -> None:
        """Bounds of one column."""
        self.h.changeColBounds(col, lower, upper)

    def set_col_cost(self, col: int, cost: float) -> None:
        """Objective coefficient of one column."""
        self.h.changeColCost(col, cost)

    def set_mip_start(self, arms: np.ndarray) -> None:
        """A partial MIP start on the arm columns (HiGHS completes it when it fits the model)."""
        self.h.setSolution(self.d, self.arm_idx, arms)

    def clear_solver(self) -> None:
        """Forget the last solve's basis and solution (the next solve starts cold)."""
        self.h.clearSolver()

    def set_options(self, values: dict[str, object]) -> None:
        """Set HiGHS options for good (for rules of the space alone; :meth:`options` sets them for a block)."""
        for key, value in values.items():
            self.h.setOptionValue(key, value)

    @contextmanager
    def options(self, values: dict[str, object]) -> Iterator[None]:
        """HiGHS options set for the duration of a ``with`` block, then restored.

        >>> import cmab_milp as cm
        >>> model = CompiledModel(cm.Cardinality(3, 2).formulation())
        >>> with model.options({"mip_heuristic_effort": 0.0}):
        ...     model.h.getOptionValue("mip_heuristic_effort")[1]
        0.0
        >>> model.h.getOptionValue("mip_heuristic_effort")[1] > 0
        True
        """
        saved = {key: self.h.getOptionValue(key)[1] for key in values}
        saved_limit = self._time_limit
        try:
            for key, value in values.items():
                self.h.setOptionValue(key, value)
            if "time_limit" in values:
                limit = float(values["time_limit"])  # type: ignore[arg-type]
                self._time_limit = limit if math.isfinite(limit) else None
            yield
        finally:
            for key, value in saved.items():
                self.h.setOptionValue(key, value)
            self._time_limit = saved_limit

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next runs (``None``: none); :func:`~.pipeline.certified_solve` gives each what is left."""
        self._time_limit = None if seconds is None else float(seconds)
        self.h.setOptionValue("time_limit", math.inf if seconds is None else float(seconds))

    def _run(self, lp: bool):  # -> highspy.HighsStatus
        """``h.run()`` with the time limit counted from this run's start.

        For an LP (``lp``: the model is continuous, or a relaxation is solved) HiGHS
        compares ``time_limit`` with the *cumulative* run time of its instance
        (ERGO-Code/HiGHS#1477, #1331; highspy 1.16 has no ``zeroAllClocks``), so a model
        re-solved for hundreds of fast queries hit a 0.2 s limit after ~900 LPs of 0.4 ms;
        there the option is set to the run time so far plus the limit, and restored. The
        MIP solver already counts from its own start (measured: a MILP stopped 0.30 s after
        its start with ``time_limit=0.3`` on an instance with 0.5 s behind it), so MILPs
        keep the option as it is.
        """
        h = self.h
        limit = self._time_limit
        if limit is None or not lp:
            return h.run()
        h.setOptionValue("time_limit", h.getRunTime() + limit)
        try:
            return h.run()
        finally:
            h.setOptionValue("time_limit", limit)

    def run_relaxation(self) -> np.ndarray | None:
        """One run as the options stand (use inside ``options({"solve_relaxation": True})``).

        Return the column values when the status is optimal, else ``None``; the run
        continues from the last basis (no cold start, no status handling).
        """
        self._run(lp=True)
        if self.h.getModelStatus() != self._optimal:
            return None
        return np.asarray(self.h.getSolution().col_value)

    def _finite(self, x: np.ndarray) -> np.ndarray:
        inf = self._hs.kHighsInf
        return np.clip(x, -inf, inf)

    def add_cols(self, lb: np.ndarray, ub: np.ndarray, integer: np.ndarray, names: list[str]) -> int:
        """Append empty columns; return the index of the first."""
        first = self.h.getNumCol()
        n = len(lb)
        self._check(
            self.h.addCols(n, np.zeros(n), np.asarray(lb, float), np.asarray(ub, float), 0, [], [], []),
            "addCols",
        )
        if self.integer and np.any(integer):
            cols = np.arange(first, first + n, dtype=np.int32)[np.asarray(integer, bool)]
            kint = self._hs.HighsVarType.kInteger
            self.h.changeColsIntegrality(len(cols), cols, np.array([kint] * len(cols)))
        self.col_names.extend(names)
        return first

    # ------------------------------------------------------------- solving
    def solve(self, cold: bool = True, tie_tol: float | None = None) -> SolveResult:
        """Run HiGHS; raise :class:`OracleError` on anything but optimal/infeasible.

        The answer depends on the model (rows, columns, costs, bounds) only, not on
        what this instance solved before (the tie rule of the ``highs`` backend):

        * a MILP starts cold (``clearSolver``; nearly free: HiGHS's branch and bound does
          not reuse a basis). ``cold=False`` keeps the state of the last solve and a MIP
          start given with ``setSolution``: for a caller whose sequence of solves
          started cold (the norm index clears once per query);
        * an LP starts warm from the last basis (the per-query path: a cold start costs
          ~60% more), and when ``tie_tol`` is given and some nonbasic variable has a
          reduced cost within ``tie_tol`` of zero (so other optimal vertices may
          exist), it is solved again from a cold start. A dual-nondegenerate optimum
          is the unique optimum, which the cold start reaches too; so every answer
          is the vertex that a cold start reaches.
        """
        if self.answer is not None:  # proven by the query's hook (its bound is checked as HiGHS's would be)
            return self.answer
        h = self.h
        if self.integer and cold:
            h.clearSolver()
        if self.integer and cold and self.start is not None:
            h.setSolution(self.d, self.arm_idx, self.start.astype(float))
        watch = self.integer and self.candidate_cuts is not None
        if watch and not self._callbacks_on:
            self._start_callbacks()
        self._pending = {}
        self._watch = watch
        run_status = self._run(lp=not self.integer)
        self._watch = False
        model_status = h.getModelStatus()
        # The per-query path: one comparison. (A run that errs never leaves the status 'Optimal'.)
        if model_status != self._optimal:
            settled = self._settle(run_status, model_status)
            if settled == "infeasible" and self._unfix is not None:  # the start obeys the fixing: cannot be
                raise OracleError("HiGHS found no action with the arms fix_arms fixed; no action is returned")
            if settled != "optimal":
                return SolveResult("infeasible") if settled == "infeasible" else self._limit_result()
        solution = h.getSolution()
        if tie_tol is not None and not self.integer and self._maybe_tied(solution, tie_tol):
            self.tie_restarts += 1
            h.clearSolver()
            run_status = self._run(lp=not self.integer)
            model_status = h.getModelStatus()
            if model_status != self._optimal:  # pragma: no cover - was optimal a moment ago
                settled = self._settle(run_status, model_status)
                if settled != "optimal":
                    return SolveResult("infeasible") if settled == "infeasible" else self._limit_result()
            solution = h.getSolution()
        objective = h.getObjectiveValue()
        if self.integer and cold and self.start is not None and self._start_kept(solution, objective):
            # HiGHS 1.16 can report the optimum's objective with the MIP start's column values (seen on a
            # shortest-path query with fixed arms and a few positive weights): solve again without the start
            self.start_restarts += 1
            h.clearSolver()
            self._watch = watch
            run_status = self._run(lp=False)
            self._watch = False
            model_status = h.getModelStatus()
            if model_status != self._optimal:  # pragma: no cover - was optimal a moment ago
                settled = self._settle(run_status, model_status)
                if settled != "optimal":
                    return SolveResult("infeasible") if settled == "infeasible" else self._limit_result()
            solution, objective = h.getSolution(), h.getObjectiveValue()
        bound = h.getInfoValue("mip_dual_bound")[1] if self.integer else objective
        if self.region_bound > bound:  # arms fixed by fix_arms: the actions they exclude
            bound = self.region_bound
        return SolveResult("optimal", solution.col_value, objective, bound)

    def _start_kept(self, solution, objective: float) -> bool:
        """Whether the arm values HiGHS returned are worth other than its objective (only arm columns carry
        costs in models that get MIP starts: :func:`~cmab_milp.oracles.mip.starts.prepare_query`)."""
        value = float(self.arm_columns()[0] @ np.asarray(solution.col_value[: self.d]))
        return abs(value - objective) > 1e-9 * (1.0 + abs(objective))

    def _start_callbacks(self) -> None:
        """Watch the integer candidates of MILP solves (HiGHS has no lazy-constraint callback: it cannot be told
        to reject one, but their cuts can join the next round of the cut loop)."""
        kinds = self._hs.cb.HighsCallbackType
        owner = weakref.ref(self)  # HiGHS holds the callback: no reference cycle through it

        def callback(kind, message, data_out, data_in, user_data) -> None:
            model = owner()
            if model is not None and model._watch:
                cuts = model.candidate_cuts(data_out.mip_solution)
                if cuts:
                    model._pending.update(dict.fromkeys(cuts))

        self.h.setCallback(callback, None)
        self.h.startCallback(kinds.kCallbackMipSolution)
        self._callbacks_on = True

    def separate(self, values, chosen) -> list[Row]:
        """The cuts of the integer candidates the last MILP solve met, when its answer is no action either.

        (The cut loop of :func:`~cmab_milp.oracles.core.pipeline.certified_solve` adds them with the answer's own.)
        """
        pending, self._pending = self._pending, {}
        if self.candidate_cuts is None:
            return []
        own = set(self.candidate_cuts(values))
        if not own:
            return []
        if self.repair is not None:
            action = self.repair(values)
            if action is not None:
                costs = self.arm_columns()[0]
                if self.start is None or costs @ action > costs @ self.start:
                    self.start = action
        return [row for row in pending if row not in own]

    def _limit_result(self) -> SolveResult:
        """A solve stopped by the time limit: its incumbent and bound when it has one (approximate mode)."""
        h = self.h
        message = "status 'Time limit reached'"
        if not self.integer or h.getInfoValue("primal_solution_status")[1] != self._hs.kSolutionStatusFeasible:
            return SolveResult("limit", None, message=message + ", no incumbent")
        bound = max(h.getInfoValue("mip_dual_bound")[1], self.region_bound)
        return SolveResult("limit", h.getSolution().col_value, h.getObjectiveValue(), bound, message)

    def _maybe_tied(self, solution, tol: float) -> bool:
        """Whether a nonbasic variable of an LP optimum has a reduced cost within ``tol`` of 0.

        The ``num_row`` basic variables have zero reduced cost; one more near-zero dual
        means a nonbasic column or row that could enter at no cost: a possible tie.
        """
        near = sum(1 for v in solution.col_dual if -tol <= v <= tol)
        near += sum(1 for v in solution.row_dual if -tol <= v <= tol)
        return near > len(solution.row_dual)

    def _settle(self, run_status, model_status) -> str:
        """``'optimal'`` or ``'infeasible'`` after an uncommon status, or raise."""
        h = self.h
        status = self._status.get(model_status)
        if status is None and model_status != self._hs.HighsModelStatus.kTimeLimit:
            # A hot-started solve occasionally ends as 'Unknown' (seen once in ~10^6 CUCB
            # queries); a cold start from the same model is the cure. The answer is checked
            # as any other (integrality, restrictions, value against the bound).
            h.clearSolver()
            run_status = self._run(lp=not self.integer)
            model_status = h.getModelStatus()
            status = self._status.get(model_status)
            self.cold_restarts += 1
        name = h.modelStatusToString(model_status)
        if model_status == self._hs.HighsModelStatus.kTimeLimit:
            if self.incumbent_on_limit:
                return "limit"
            raise LimitReached(f"HiGHS stopped on its time limit (status {name!r}); no action is returned")
        if run_status == self._error:
            raise OracleError(f"HiGHS run failed (run status 'error', model status {name!r})")
        if status is None:
            raise OracleError(
                f"HiGHS returned status {name!r} (numerical trouble or unbounded model); no action is returned"
            )
        return status

    # ----------------------------------------------------------- inspection
    def write(self, path: str | Path) -> Path:
        """Write the current model (LP or MPS by the file suffix)."""
        path = Path(path)
        self._check(self.h.writeModel(str(path)), "writeModel")
        return path

    def text(self) -> str:
        """The current model in LP format."""
        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(Path(tmp) / "model.lp")
            return path.read_text()
