"""Compile a :class:`~cmab_milp.spaces.formulation.Formulation` into a HiGHS model.

This module and :mod:`~cmab_milp.oracles.backends.highs_solve` (running a model and reading its
answer) are the only places that talk to ``highspy``; this one builds, edits (rows, columns, bounds,
costs, options, MIP starts) and reads back models. The linear oracle
(:mod:`~cmab_milp.oracles.backends.highs`) and the norm index (:mod:`~cmab_milp.oracles.norm`) both
work through :class:`CompiledModel`.

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
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.base import LimitReached, OracleError
from ..core.model import ModelBase, SolveResult
from ..mip.options import highs_model_options
from ..mip.tuning import HighsTuning
from .highs_solve import HighsSolving, new_highs

__all__ = ["CompiledModel", "LimitReached", "SolveResult"]


class CompiledModel(HighsSolving, ModelBase):
    """One HiGHS instance holding a formulation, re-solved with new costs and bounds.

    Not thread-safe: use one per thread. Columns ``0..d-1`` are the arms;
    callers may append columns and rows (:meth:`add_cols`, :meth:`add_rows`).
    It is the HiGHS :class:`~cmab_milp.oracles.core.model.SolverModel` and
    :class:`~cmab_milp.oracles.core.engine.Engine` (every member).

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
        self._stop_asked = False  # Ctrl-C: the interrupt callbacks stop the run (HighsSolving._ask_stop)
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

    def new_model(self, formulation: Formulation, *, integer: bool = True) -> CompiledModel:
        """A new HiGHS model holding ``formulation`` (the :class:`~cmab_milp.oracles.core.engine.Engine` factory)."""
        return CompiledModel(formulation, integer=integer)

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
