"""Running a compiled HiGHS model and reading its answer.

:func:`new_highs` makes a configured ``highspy.Highs``; :class:`HighsSolving` is the solving half of
:class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`: one run under a time limit counted from
the run's start, and the status read back into a :class:`~cmab_milp.oracles.core.model.SolveResult`.
The answer depends on the model only, never on what the instance solved before: a MILP starts cold, an LP
whose optimum may be tied is solved again from a cold start, a MIP start HiGHS echoes back instead of the
optimum is dropped and the MILP solved again, an ``Unknown`` status is retried cold.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.backends.highs_model import CompiledModel
>>> model = CompiledModel(cm.Cardinality(3, 1).formulation())
>>> model.set_costs(np.array([0.2, 0.7, 0.1]))
>>> result = model.solve()
>>> result.status, (result.x[:3] > 0.5).tolist()
('optimal', [False, True, False])
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..._highs import quiet_highs
from ...portable import dot
from ...spaces.formulation import Row
from ..core.base import LimitReached, OracleError, tolerance
from ..core.interrupts import stoppable
from ..core.model import SolveResult
from ..mip.options import HIGHS_OPTIONS

__all__ = ["HighsSolving", "new_highs"]


def new_highs(time_limit: float | None = None):  # -> highspy.Highs
    """A configured ``highspy.Highs``; the once-per-process banner is swallowed
    (:func:`~cmab_milp._highs.quiet_highs`)."""
    h = quiet_highs()
    _configure(h, time_limit)
    return h


def _configure(h, time_limit: float | None) -> None:
    for key, value in HIGHS_OPTIONS.items():
        h.setOptionValue(key, value)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))


class HighsSolving:
    """The solving methods of :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel` (its state is
    set by the model's constructor: ``h``, ``integer``, ``start``, the query hooks and the counters)."""

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next runs (``None``: none); :func:`~.pipeline.certified_solve` gives each what is left."""
        self._time_limit = None if seconds is None else float(seconds)
        self.h.setOptionValue("time_limit", math.inf if seconds is None else float(seconds))

    def _run(self, lp: bool):  # -> highspy.HighsStatus
        """``h.run()`` with the time limit counted from this run's start.

        For an LP (``lp``: the model is continuous, or a relaxation is solved) HiGHS
        compares ``time_limit`` with the *cumulative* run time of its instance
        (ERGO-Code/HiGHS#1477, #1331; highspy 1.16 has no ``zeroAllClocks``), so a model
        re-solved for many fast queries would run out of its limit; there the option is
        set to the run time so far plus the limit, and restored. The MIP solver already
        counts from its own start, so MILPs keep the option as it is
        (``tests/oracles/backends/test_highs_model.py`` holds both).

        Ctrl-C stops the run through HiGHS's interrupt callbacks and raises ``KeyboardInterrupt``
        (:mod:`~cmab_milp.oracles.core.interrupts`).
        """
        h = self.h
        if not self._callbacks_on:
            self._start_callbacks()
        self._stop_asked = False
        limit = self._time_limit
        if limit is None or not lp:
            with stoppable(self._ask_stop):
                return h.run()
        h.setOptionValue("time_limit", h.getRunTime() + limit)
        try:
            with stoppable(self._ask_stop):
                return h.run()
        finally:
            h.setOptionValue("time_limit", limit)

    def _ask_stop(self) -> None:
        """Stop the run under way (called from another thread): its interrupt callbacks read the flag."""
        self._stop_asked = True

    def run_relaxation(self) -> np.ndarray | None:
        """One run as the options stand (use inside ``options({"solve_relaxation": True})``).

        Return the column values when the status is optimal, else ``None``; the run
        continues from the last basis (no cold start, no status handling).
        """
        self._run(lp=True)
        if self.h.getModelStatus() != self._optimal:
            return None
        return np.asarray(self.h.getSolution().col_value)

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
          more), and when ``tie_tol`` is given and some nonbasic variable has a
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
        value = dot(self.arm_columns()[0], np.asarray(solution.col_value[: self.d]))
        return abs(value - objective) > tolerance(objective)

    def _start_callbacks(self) -> None:
        """The callbacks of every run: HiGHS's interrupt checks (stopped on Ctrl-C, see :meth:`_ask_stop`), and
        the integer candidates of MILP solves while ``_watch`` (HiGHS has no lazy-constraint callback: it cannot
        be told to reject one, but their cuts can join the next round of the cut loop)."""
        kinds = self._hs.cb.HighsCallbackType
        found = kinds.kCallbackMipSolution
        owner = weakref.ref(self)  # HiGHS holds the callback: no reference cycle through it

        def callback(kind, message, data_out, data_in, user_data) -> None:
            model = owner()
            if model is None:
                return
            if kind != found:
                data_in.user_interrupt = model._stop_asked  # HiGHS keeps the value between runs: set it each time
            elif model._watch:
                cuts = model.candidate_cuts(data_out.mip_solution)
                if cuts:
                    model._pending.update(dict.fromkeys(cuts))

        self.h.setCallback(callback, None)
        self.h.startCallback(found)
        if self.integer:  # an LP run is short: a Ctrl-C during it is raised when it ends (checks cost ~5% there)
            self.h.startCallback(kinds.kCallbackMipInterrupt)
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
                if self.start is None or dot(costs, action) > dot(costs, self.start):
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
            # A hot-started solve occasionally ends as 'Unknown'; a cold start from the same
            # model is the cure. The answer is checked
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
