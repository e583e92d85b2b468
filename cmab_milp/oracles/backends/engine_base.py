"""What the Gurobi and SCIP engines share: the query's bookkeeping and the options by HiGHS's names.

:class:`EngineBase` holds the members of :class:`~cmab_milp.oracles.core.engine.Engine` that read no solver:
the query hooks and what :meth:`~EngineBase.undo` restores, arm fixing, columns and rows given in bulk, and the
options. A subclass keeps ``vars`` (its columns, arms first) and ``_rows`` (one entry per engine row) and gives
the solver's part: ``_arm_bounds``, ``add_rows``, ``delete_rows``, ``_new_cols``, ``run_relaxation``,
``clear_solver``, and its parameters (``HIGHS_NAMES``, ``_param``, ``_set_param``, ``_has_param``).

Example
-------
The HiGHS names of the solver-neutral code that set nothing on another solver (they change no optimum):

>>> "mip_heuristic_effort" in HIGHS_TUNING_ONLY, "time_limit" in HIGHS_TUNING_ONLY
(True, False)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from ...spaces.formulation import Row
from ..core.model import ModelBase, SolveResult
from ..mip.tuning import HighsTuning
from .highs_solve import HighsSolving

__all__ = ["HIGHS_TUNING_ONLY", "EngineBase"]

#: HiGHS options the solver-neutral code sets that have nothing to set elsewhere: ``run_relaxation`` always
#: relaxes, and HiGHS's MIP tuning switches change no optimum.
HIGHS_TUNING_ONLY = (
    "solve_relaxation",
    "mip_allow_restart",
    "mip_heuristic_run_rins",
    "mip_heuristic_run_rens",
    "mip_heuristic_effort",
    "mip_heuristic_run_root_reduced_cost",
    "mip_pool_soft_limit",
)


class EngineBase(ModelBase):
    """The solver-free members of an engine (see the module docstring for what a subclass gives)."""

    #: HiGHS option names as ``(the solver's parameter, value -> its value)``; ``None``: nothing to set.
    HIGHS_NAMES: ClassVar[dict[str, tuple[str, Callable[[Any], Any]] | None]] = {}
    #: The tuning choices its MIP hooks read (:mod:`~cmab_milp.oracles.mip`), as on HiGHS.
    tuning: HighsTuning = HighsTuning()
    #: HiGHS's :meth:`~.highs_solve.HighsSolving.separate` reads only the engine's members.
    separate = HighsSolving.separate
    vars: list
    _rows: list
    d: int
    integer: bool

    def _start_query_state(self) -> None:
        """Free arms, no query hooks, no saved options (the state :meth:`undo` returns to)."""
        self.lower, self.upper, self.arms_free = np.zeros(self.d), np.ones(self.d), True
        self.incumbent_on_limit = False
        self.tie_restarts = 0  # LP solves repeated from a cold start because of a possible tie
        self.start: np.ndarray | None = None
        self.repair = self.candidate_cuts = None
        self.answer: SolveResult | None = None
        self._unfix: tuple | None = None
        self.region_bound = -math.inf
        self._pending: dict = {}
        self._query_saved: dict[str, object] = {}

    # ------------------------------------------------------------- the solver's part
    def _arm_bounds(self, lower: np.ndarray, upper: np.ndarray) -> None:
        raise NotImplementedError

    def add_rows(self, rows: list[Row]) -> tuple[int, int]:
        raise NotImplementedError

    def delete_rows(self, first: int, last: int) -> None:
        raise NotImplementedError

    def _new_cols(self, costs, lb, ub, integer: np.ndarray) -> int:
        raise NotImplementedError

    def run_relaxation(self) -> np.ndarray | None:
        raise NotImplementedError

    def clear_solver(self) -> None:
        raise NotImplementedError

    def _param(self, key: str) -> object:
        raise NotImplementedError

    def _set_param(self, key: str, value: object) -> None:
        raise NotImplementedError

    def _has_param(self, key: str) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------- shared members
    @property
    def num_rows(self) -> int:
        """Rows in the model now (the formulation's and any appended)."""
        return len(self._rows)

    @property
    def num_cols(self) -> int:
        """Columns in the model now (the formulation's and any appended)."""
        return len(self.vars)

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        """Fix arms in (``include``) or out (``exclude``); others free in [0, 1]."""
        lower, upper = np.zeros(self.d), np.ones(self.d)
        lower[list(include)] = 1.0
        upper[list(exclude)] = 0.0
        self._arm_bounds(lower, upper)
        self.arms_free = not include and not exclude

    def fix_arms(self, fixed: np.ndarray, values: np.ndarray, region_bound: float) -> None:
        """Fix the arms ``fixed`` (bool mask) to ``values`` for this query; ``region_bound`` bounds what it cuts off."""
        if self._unfix is None:
            self._unfix = (self.lower, self.upper, self.arms_free)
        lower, upper = self.lower.copy(), self.upper.copy()
        lower[fixed] = upper[fixed] = np.asarray(values, float)[fixed]
        self._arm_bounds(lower, upper)
        self.arms_free = False
        self.region_bound = max(self.region_bound, float(region_bound))

    def approximate(self, gap: float) -> None:
        """Let a MILP stop at relative ``gap``, and a solve stopped by its time limit return its incumbent."""
        self.incumbent_on_limit = True
        if gap:
            self.set_options({"mip_rel_gap": float(gap)})

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for each next run (``None``: none; the solver counts from each run's start)."""
        self.set_options({"time_limit": math.inf if seconds is None else float(seconds)})

    def _row_range(self, first: int, last: int) -> None:
        if not 0 <= first <= last <= self.num_rows:
            raise ValueError(f"row range [{first}, {last}) is not inside the model's {self.num_rows} rows")

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

    def relaxation_arm_values(self) -> list[float] | None:
        """The arm values of the LP relaxation of the model as it stands (``None`` unless optimal)."""
        x = self.run_relaxation()
        self.clear_solver()
        return None if x is None else x[: self.d].tolist()

    def undo(self) -> None:
        """Delete every row beyond the formulation's; free fixed arms; clear the query's hooks and options."""
        self.start = self.repair = self.candidate_cuts = self.answer = None
        saved, self._query_saved = self._query_saved, {}
        self.set_options(saved)  # the values before set_query_options
        if self._unfix is not None:
            self._arm_bounds(*self._unfix[:2])
            self.arms_free, self._unfix, self.region_bound = self._unfix[2], None, -math.inf
        self.delete_rows(self.base_rows, self.num_rows)

    # ------------------------------------------------------------- options
    def _native(self, values: dict[str, object]) -> dict[str, object]:
        """``values`` by the solver's parameter names (``HIGHS_NAMES`` translated); ``ValueError`` for unknown ones."""
        out: dict[str, object] = {}
        for key, value in values.items():
            if key in self.HIGHS_NAMES:
                known = self.HIGHS_NAMES[key]
                if known is not None:
                    out[known[0]] = known[1](value)
                continue
            if not self._has_param(key):
                raise ValueError(f"{key!r} is neither a {self.name} parameter nor a HiGHS option of HIGHS_NAMES")
            out[key] = value
        return out

    def set_options(self, values: dict[str, object]) -> None:
        """Set options for good (the solver's names, or HiGHS's of ``HIGHS_NAMES``)."""
        for key, value in self._native(values).items():
            self._set_param(key, value)

    @contextmanager
    def options(self, values: dict[str, object]) -> Iterator[None]:
        """Options set for a ``with`` block, then restored."""
        values = self._native(values)
        saved = {key: self._param(key) for key in values}
        try:
            self.set_options(values)
            yield
        finally:
            self.set_options(saved)

    def set_query_options(self, values: dict[str, object]) -> None:
        """Set options for the query the model holds now; :meth:`undo` restores the values before."""
        for key, value in self._native(values).items():
            if key not in self._query_saved:
                self._query_saved[key] = self._param(key)
            self._set_param(key, value)
