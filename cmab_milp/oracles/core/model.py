"""The model protocol: what :func:`~cmab_milp.oracles.core.pipeline.certified_solve` calls on a solver's model.

A model backend adapts its solver to :class:`SolverModel` (set the arm costs and bounds, add rows, undo
the query's edits, solve) and returns each solve's outcome as a :class:`SolveResult`; :class:`ModelBase`
gives the defaults of the optional hooks.

Example
-------
>>> result = SolveResult("optimal", [1.0, 0.0], 1.0, 1.0)
>>> result.x.tolist(), ModelBase().separate(result.values, [True, False])
([1.0, 0.0], [])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...spaces.formulation import Row
from .base import UnsupportedQuery

__all__ = ["ModelBase", "SolveResult", "SolverModel"]


@dataclass(slots=True)
class SolveResult:
    """Outcome of one solve.

    ``status`` is ``'optimal'``, ``'infeasible'``, ``'limit'`` (stopped by a time
    limit; ``values`` holds the incumbent or is ``None``) or ``'error'``.
    ``values`` are the column values (a list: the per-query path reads the arm
    columns in plain Python; arms first); ``bound`` is the solver's dual bound on
    the maximum, ``None`` when the solver gives none. ``message`` says what
    happened, for errors.
    """

    status: str
    values: list[float] | None = None
    objective: float = float("nan")
    bound: float | None = float("nan")
    message: str = ""

    @property
    def x(self) -> np.ndarray | None:
        return None if self.values is None else np.asarray(self.values)


class SolverModel(Protocol):
    """What :func:`certified_solve` and :class:`ModelOracle` call on a compiled model (one per thread).

    Columns ``0..d-1`` are the arms; the model maximises. Every member is called
    (none is looked up); :class:`ModelBase` gives the defaults of the optional
    ones, so an adapter writes the five edits and ``solve``, and overrides a hook
    only when its solver needs it:

    * ``separate(values, chosen) -> list[Row]``: cuts of the model's own, such as
      K-MAX tangents or CP-SAT's relaxed rows (default none);
    * ``confirm_infeasible(restrictions)``: raise unless an ``'infeasible'`` status
      is proven (PuLP's re-check on HiGHS; default: the status is believed);
    * ``open_norm(quad, s_coef, s_ub)``: add the quadratic row ``quad(model)`` on the
      model's column ``s`` and open ``s`` with objective ``s_coef`` for one norm query
      (SCIP, Gurobi; default: :class:`UnsupportedQuery`);
    * ``bound_name``: how messages name the bound.
    """

    name: str
    #: ``False``: ``solve`` runs an LP (over a formulation declared integral).
    integer: bool
    bound_name: str

    def set_costs(self, costs: np.ndarray) -> None: ...

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None: ...

    def add_rows(self, rows: list[Row]) -> Any: ...

    def undo(self) -> None:
        """Back to the formulation's rows (and its own columns and costs of other columns)."""

    def solve(self, tie_tol: float | None = None) -> SolveResult: ...

    def separate(self, values: list[float], chosen: list[bool]) -> list[Row]: ...

    def confirm_infeasible(self, restrictions: Any) -> None: ...

    def open_norm(self, quad: Callable[[Any], Any], s_coef: float, s_ub: float) -> None: ...

    def set_time_limit(self, seconds: float | None) -> None: ...


class ModelBase:
    """The defaults of a :class:`SolverModel`'s optional hooks; adapters subclass it.

    >>> ModelBase().separate([1.0, 0.0], [True, False])
    []
    """

    name = "model"
    integer = True
    bound_name = "the solver's bound"

    def separate(self, values: list[float], chosen: list[bool]) -> list[Row]:
        """No cuts of the model's own."""
        return []

    def confirm_infeasible(self, restrictions: Any) -> None:
        """The solver's ``'infeasible'`` is its proof."""

    def open_norm(self, quad: Callable[[Any], Any], s_coef: float, s_ub: float) -> None:
        """No quadratic row: norm queries are not answered on this model."""
        raise UnsupportedQuery(f"{self.name} has no quadratic model for norm queries")

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next solves (what is left of the query's limit); by default each solve keeps its own."""
