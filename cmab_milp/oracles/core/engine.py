"""The engine protocol: the model that MIP starts, cuts, side rows and the norm methods edit and solve.

:class:`~.model.SolverModel` is what the certified solve needs (a dozen members). The solver-neutral code of
:mod:`~cmab_milp.oracles.mip` (starts, root cuts, side rows) and :mod:`~cmab_milp.oracles.norm` (the
covariance-norm methods) needs more: columns appended and deleted, rows read back, LP relaxations and their
duals, MIP starts, per-query options and hooks. :class:`Engine` names those members, so those packages type
against it and import no backend. Members, by group:

============================  ===================================================================================
group                         members
============================  ===================================================================================
identity and state            ``name``, ``d``, ``integer``, ``base_rows``, ``tuning``, ``num_rows``, ``num_cols``
query hooks (cleared by       ``start``, ``repair``, ``candidate_cuts``, ``answer``, ``region_bound``
``undo``)
objective and bounds          ``set_costs``, ``set_col_cost``, ``set_arm_bounds``, ``set_col_bounds``, ``fix_arms``,
                              ``arm_columns``
rows and columns              ``add_rows``, ``add_rows_fixed``, ``rows``, ``delete_rows``, ``add_cols``,
                              ``append_cols``, ``delete_cols``
solving                       ``solve``, ``run_relaxation``, ``relaxation_arm_values``, ``row_duals``,
                              ``clear_solver``, ``set_mip_start``, ``set_time_limit``, ``separate``, ``undo``,
                              ``confirm_infeasible``
options                       ``set_options``, ``options``, ``set_query_options``
new models                    ``new_model``
============================  ===================================================================================

Who implements it (:data:`ENGINE_MEMBERS`; ``tests/oracles/test_layers.py`` checks the HiGHS, Gurobi and SCIP
models; ``tests/oracles/backends/engine_scripts.py`` holds scripts of engine calls that
``test_gurobi_engine.py`` and ``test_scip_engine.py`` run on HiGHS and on the other engine):

==========  ==============================================================================================
engine      members
==========  ==============================================================================================
HiGHS       all (:class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`)
SCIP        all (:class:`~cmab_milp.oracles.backends.scip_engine.ScipEngine`;
            ``new_engine(..., engine="scip")``): every edit first frees the last solve (``freeTransform``),
            so every solve starts cold (``tie_tol`` repeats nothing); ``addSol`` of a partial solution at the
            next run for ``set_mip_start`` (SCIP keeps it for good, so the next start rebuilds the model);
            ``BESTSOLFOUND`` events for ``candidate_cuts`` (SCIP's incumbents). Differences:
            a continuous model runs without presolve or propagation, so ``row_duals`` are its LP's duals
            (``getDualsolLinear``, sign flipped); ``run_relaxation`` / ``relaxation_arm_values`` solve a new
            continuous copy of the model as it stands (no presolve, no warm LP re-solve) and ``row_duals`` then
            gives its duals; ``row_duals`` of a MILP solve is refused (``OracleError``); ``delete_cols``
            replaces each row holding a deleted column by the row without it (SCIP deletes only a variable no
            constraint holds). Options take SCIP's names, the HiGHS names of the shared code translated or
            dropped (``scip_engine.HIGHS_NAMES``). What reads no solver (query bookkeeping, options by HiGHS's
            names) is shared with Gurobi's engine (:mod:`~cmab_milp.oracles.backends.engine_base`). Not
            wired: the ``scip`` backend still answers with its own model (its one tree, its norm MIQCP).
Gurobi      all (:class:`~cmab_milp.oracles.backends.gurobi_engine.GurobiEngine`;
            ``new_engine(..., engine="gurobi")``): the edits, ``Start`` for ``set_mip_start``, ``reset()``
            for ``clear_solver``, ``Pi`` for ``row_duals`` (one per engine row: a ranged row is two Gurobi
            constraints), warm LP re-solves, ``MIPSOL`` callbacks for ``candidate_cuts``. Differences:
            ``run_relaxation`` always relaxes (integer columns made continuous for the run, which starts
            it without a basis); options take Gurobi's names, and the HiGHS names the solver-neutral code
            sets are translated or dropped (``gurobi_engine.HIGHS_NAMES``). Not wired: the ``gurobi``
            backend still answers with its own model (lazy cuts in one tree, its norm MIQCP), and the
            side-row multipliers and path LPs call ``new_engine`` with the default engine.
==========  ==============================================================================================

The option names passed to ``options`` / ``set_query_options`` are the engine's own (HiGHS's, where
:mod:`~cmab_milp.oracles.mip` and :mod:`~cmab_milp.oracles.norm` set them), so those calls are the HiGHS-only
part of the solver-neutral code (Gurobi's and SCIP's engines translate the few they meet).

Code that builds an LP without a model at hand (the side-row multipliers, the path LPs of the norm methods)
asks :func:`new_engine`, which loads an engine of :data:`ENGINES` (the default HiGHS) by its lazy
``module:Class`` path, as the registry names backends: nothing here imports a solver.

Example
-------
>>> import cmab_milp as cm
>>> model = new_engine(cm.Cardinality(3, 1).formulation(), integer=False)
>>> isinstance(model, Engine), model.name
(True, 'HiGHS')
>>> model.set_costs(np.array([0.2, 0.9, 0.4]))
>>> model.solve().x[:3].round().astype(int).tolist()
[0, 1, 0]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...spaces.formulation import Formulation, Row
from .model import SolveResult

__all__ = ["DEFAULT_ENGINE", "ENGINES", "ENGINE_MEMBERS", "Engine", "new_engine"]

#: The engines by name, as lazy ``"module:Class"`` paths (the registry's form).
ENGINES: dict[str, str] = {
    "highs": "cmab_milp.oracles.backends.highs_model:CompiledModel",
    "gurobi": "cmab_milp.oracles.backends.gurobi_engine:GurobiEngine",
    "scip": "cmab_milp.oracles.backends.scip_engine:ScipEngine",
}
#: The engine of the helpers that get no model to copy.
DEFAULT_ENGINE = ENGINES["highs"]


@runtime_checkable
class Engine(Protocol):
    """A compiled model that the solver-neutral MIP and norm code edits and re-solves (one per thread).

    Columns ``0..d-1`` are the arms; the model maximises. The members below are every one that
    :mod:`~cmab_milp.oracles.mip` and :mod:`~cmab_milp.oracles.norm` call.
    """

    #: The engine's name in messages ("HiGHS").
    name: str
    #: Arms (the first ``d`` columns).
    d: int
    #: Whether the arm and integer auxiliary columns are integer (``False``: the LP relaxation).
    integer: bool
    #: Rows of the formulation; rows beyond belong to the query being answered (``undo`` deletes them).
    base_rows: int
    #: The tuning choices its MIP hooks read (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`).
    tuning: Any
    #: This query's MIP start (arm values) for every cold MILP solve, or ``None``.
    start: np.ndarray | None
    #: ``repair(values) -> action | None``: an action made of a candidate that is no action.
    repair: Callable[[list[float]], np.ndarray | None] | None
    #: ``candidate_cuts(values) -> list[Row]``: the cuts an integer candidate violates.
    candidate_cuts: Callable[[list[float]], list[Row]] | None
    #: This query's answer proven without the solver (``solve`` returns it), or ``None``.
    answer: SolveResult | None
    #: A bound on every action that ``fix_arms`` cut off (each solve's bound is at least it).
    region_bound: float

    @property
    def num_rows(self) -> int:
        """Rows in the model now (the formulation's and any appended)."""

    @property
    def num_cols(self) -> int:
        """Columns in the model now (the formulation's and any appended)."""

    # objective and bounds
    def set_costs(self, costs: np.ndarray, cols: np.ndarray | None = None) -> None:
        """Objective coefficients of the arm columns (or of ``cols``)."""

    def set_col_cost(self, col: int, cost: float) -> None:
        """Objective coefficient of one column."""

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        """Fix arms in (``include``) or out (``exclude``); others free in [0, 1]."""

    def set_col_bounds(self, col: int, lower: float, upper: float) -> None:
        """Bounds of one column."""

    def fix_arms(self, fixed: np.ndarray, values: np.ndarray, region_bound: float) -> None:
        """Fix the arms ``fixed`` (bool mask) to ``values`` for this query; ``region_bound`` bounds what it cuts off."""

    def arm_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(costs, lower, upper)`` of the arm columns as the model holds them now."""

    # rows and columns
    def add_rows(self, rows: list[Row]) -> tuple[int, int]:
        """Append rows; return the ``[first, last)`` row range they occupy."""

    def add_rows_fixed(self, lower: Any, upper: Any, index: Any, value: Any, width: int) -> None:
        """Append rows of ``width`` entries each (``index`` and ``value`` row after row)."""

    def rows(self, first: int, last: int) -> list[Row]:
        """The rows ``[first, last)`` as :class:`~cmab_milp.spaces.formulation.Row` objects."""

    def delete_rows(self, first: int, last: int) -> None:
        """Delete the rows ``[first, last)`` (rows after them shift down)."""

    def add_cols(self, lb: np.ndarray, ub: np.ndarray, integer: np.ndarray, names: list[str]) -> int:
        """Append named columns; return the index of the first."""

    def append_cols(self, costs: Any, lb: Any, ub: Any, integer: np.ndarray | None = None) -> int:
        """Append unnamed columns (``integer``: offsets of the integer ones); return the index of the first."""

    def delete_cols(self, first: int, last: int) -> None:
        """Delete the columns ``[first, last)`` (columns after them shift down)."""

    # solving
    def solve(self, cold: bool = True, tie_tol: float | None = None) -> SolveResult:
        """Solve the model as it stands (``cold``: from no basis; ``tie_tol``: the tie check of the LP answer)."""

    def run_relaxation(self) -> np.ndarray | None:
        """One LP run as the options stand, warm; the column values when optimal, else ``None``."""

    def relaxation_arm_values(self) -> list[float] | None:
        """The arm values of the LP relaxation of the model as it stands (``None`` unless optimal)."""

    def row_duals(self) -> np.ndarray:
        """The row duals of the last solve (HiGHS's sign convention)."""

    def clear_solver(self) -> None:
        """Forget the last solve's basis and solution (the next solve starts cold)."""

    def set_mip_start(self, arms: np.ndarray) -> None:
        """A partial MIP start on the arm columns."""

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next runs (``None``: none)."""

    def separate(self, values: list[float], chosen: list[bool]) -> list[Row]:
        """The model's own cuts of a solve's answer that is no action."""

    def undo(self) -> None:
        """Delete the query's rows, free fixed arms, clear the query hooks and options."""

    def confirm_infeasible(self, restrictions: Any) -> None:
        """Raise when an 'infeasible' status may hide an admitted action the solver missed."""

    # options
    def set_options(self, values: dict[str, object]) -> None:
        """Set engine options for good (for rules of the space alone)."""

    def options(self, values: dict[str, object]) -> AbstractContextManager[None]:
        """Set engine options for a ``with`` block; restore them after."""

    def set_query_options(self, values: dict[str, object]) -> None:
        """Set engine options for the query the model holds now (``undo`` restores them)."""

    # new models
    def new_model(self, formulation: Formulation, *, integer: bool = True) -> Engine:
        """A new model of the same engine holding ``formulation`` (a core LP, a relaxation)."""


#: Every member of :class:`Engine`, in the order of the module docstring's table.
ENGINE_MEMBERS: tuple[str, ...] = (
    *("name", "d", "integer", "base_rows", "tuning", "num_rows", "num_cols"),
    *("start", "repair", "candidate_cuts", "answer", "region_bound"),
    *("set_costs", "set_col_cost", "set_arm_bounds", "set_col_bounds", "fix_arms", "arm_columns"),
    *("add_rows", "add_rows_fixed", "rows", "delete_rows", "add_cols", "append_cols", "delete_cols"),
    *("solve", "run_relaxation", "relaxation_arm_values", "row_duals", "clear_solver", "set_mip_start"),
    *("set_time_limit", "separate", "undo", "confirm_infeasible"),
    *("set_options", "options", "set_query_options", "new_model"),
)


@cache
def _engine_class(path: str) -> type:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def new_engine(formulation: Formulation, *, integer: bool = True, engine: str | None = None) -> Engine:
    """A model holding ``formulation`` of the engine named ``engine`` (a key of :data:`ENGINES`; ``None``: the
    default, :data:`DEFAULT_ENGINE`).

    >>> new_engine(Formulation(d=2, rows=[]), engine="cplex")
    Traceback (most recent call last):
    ...
    ValueError: unknown engine 'cplex'; the engines are 'highs', 'gurobi', 'scip'
    """
    if engine is not None and engine not in ENGINES:
        known = ", ".join(repr(name) for name in ENGINES)
        raise ValueError(f"unknown engine {engine!r}; the engines are {known}")
    return _engine_class(DEFAULT_ENGINE if engine is None else ENGINES[engine])(formulation, integer=integer)
