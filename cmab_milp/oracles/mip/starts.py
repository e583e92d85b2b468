"""MIP starts of restricted queries: a heuristic action of the space, read off the model as the query set it.

:func:`query_start` looks for the start heuristic a formulation names
(``solver_hints["start"] = {"space": space, "rows": n}``: the s-t paths of
:mod:`~cmab_milp.spaces.paths`, from the sizes ``path_start_min_arms`` / ``path_start_min_arcs`` of
:class:`~.tuning.HighsTuning`; the heuristics live in
:mod:`~cmab_milp.oracles.mip.graph_starts`), reads the query from the model (arm
costs and bounds, and the side rows: the formulation's rows after the first
``n`` and the query's rows), and returns the heuristic's action when it obeys
every side row. Side rows the heuristic understands: conflicting pairs
``a_i + a_j <= 1`` and one knapsack row ``c @ a <= b`` with ``c >= 0``; any
other side row (or a row on other columns) means no start. :func:`query_plan`
also fixes out, for the query, the edges that the start's Lagrangian walk
bounds prove no path at least as good as the start uses
(:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.start_plan`: shortest paths,
and paths with a few weights above 0, which the bound adds up; only on
formulations that are the space plus side rows, :func:`_fixing_applies`).
The fixing's figures (``bench/graphs_large.py``, variant ``highs-nofix``) are in
``docs/performance.md``, section "Oracles".

A space built from a base with a combinatorial oracle by side rules
(``with_constraint``, ``with_budget``, ``with_group``, ``with_conflicts``;
``solver_hints["side"]`` names the base) gets, per query, the Lagrangian plan of
:mod:`~cmab_milp.oracles.mip.side_starts` (:func:`side_query_plan`): its action as
the MIP start, and on cardinality and partition bases the arms its flip bounds
prove, fixed for the query (``Engine.fix_arms``, whose bound joins the
certificate); when few arms stay free, their enumeration is the answer
(``tuning.solve_cores``, :class:`~.tuning.HighsTuning`), checked by the certified solve against the bound the
fixing and the enumeration prove, without a HiGHS run. Such models run without
HiGHS's restarts and RINS/RENS (:data:`SIDE_HIGHS_OPTIONS`, set before their
first query: a rule of the space alone). The figures (``bench/side_rows.py``):
docs/performance.md, sections "Oracles" and "Graphs".

A start changes no optimum: it is an action, and the MILP still proves the
answer against its bound; a fixing excludes only actions its bound puts below
the start. Both depend on the query alone (the tie rule).

Example
-------
>>> import numpy as np
>>> import networkx as nx
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.engine import new_engine
>>> space = cm.STPaths(nx.grid_2d_graph(8, 8), (0, 0), (7, 7)).with_constraint(np.ones(112), "<=", 16)
>>> model = new_engine(space.formulation())
>>> model.set_costs(-np.linspace(0.1, 1.0, space.d))
>>> start = query_start(model, space.formulation())
>>> bool(space.contains(start)), int(start.sum())
(True, 14)
"""

from __future__ import annotations

import math

import numpy as np

from ...portable import dot
from ...spaces.formulation import Formulation, Row
from ..core.engine import Engine
from ..core.model import SolveResult
from .cover_cuts import cover_cuts
from .graph_starts import PathStarts
from .options import positive_cost_options
from .side_starts import SidePlan, as_side_rows, side_plan, supported_base
from .tuning import HighsTuning

__all__ = [
    "SIDE_MAX_ROWS",
    "prepare_query",
    "query_plan",
    "query_start",
    "side_query_plan",
    "side_query_start",
    "side_rows",
    "side_rule_applies",
]

#: Side plans for queries with at most this many side rows (conflicting pairs alone get none: HiGHS's clique
#: table handles them, and a plan measured slower there; docs/performance.md, "Oracles").
SIDE_MAX_ROWS = 16
#: HiGHS options of models whose queries get side starts: with a near-optimal start and most arms fixed,
#: HiGHS's restarts and sub-MIP heuristics cost more than they find (docs/performance.md, "Oracles").
SIDE_HIGHS_OPTIONS: dict[str, object] = {
    "mip_allow_restart": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
}


def side_rows(rows: list[Row], d: int) -> tuple[list[tuple[int, int]], tuple[np.ndarray, float] | None] | None:
    """``rows`` as ``(conflicting pairs, knapsack row or None)``, or ``None`` when some row is neither.

    >>> side_rows([Row((0, 2), (1.0, 1.0), -math.inf, 1.0), Row((1,), (2.0,), -math.inf, 1.5)], 3)
    ([(0, 2)], (array([0., 2., 0.]), 1.5))
    """
    pairs: list[tuple[int, int]] = []
    knapsack = None
    for row in rows:
        if any(c >= d for c in row.cols) or row.lb > 0.0:
            return None
        if row.ub == 0.0 and min(row.coefs, default=0.0) > 0.0:
            continue  # arms fixed to 0 (the graph's presolve under a budget: the starts obey it; _obeys checks)
        if len(row.cols) == 2 and row.coefs == (1.0, 1.0) and row.ub == 1.0:
            pairs.append((row.cols[0], row.cols[1]))
        elif knapsack is None and min(row.coefs, default=0.0) >= 0.0 and math.isfinite(row.ub):
            c = np.zeros(d)
            np.add.at(c, list(row.cols), row.coefs)
            knapsack = (c, float(row.ub))
        else:
            return None
    return pairs, knapsack


def prepare_query(model: Engine, formulation: Formulation) -> None:
    """Set the model's hooks for the query it holds now: a MIP start, the repair of candidates, candidate cuts,
    and the formulation's HiGHS options for queries with a positive arm cost (:func:`~.options.positive_cost_options`).

    Only for formulations that name a start heuristic. Call it after the query's costs, bounds and rows
    are set (the model's ``undo`` clears the hooks).
    """
    if not _own_objective(model, formulation):
        return  # columns of another objective (the norm index's): its own loop, no hooks
    tuning = model.tuning
    hint = _start_hint(formulation, tuning)
    if not hint:
        if tuning.side_starts and side_rule_applies(formulation, tuning.side_min_arms):
            if not model.__dict__.get("_side_options"):  # before the first query: a rule of the space alone
                model.set_options(SIDE_HIGHS_OPTIONS)
                model.__dict__["_side_options"] = True
            plan = side_query_plan(model, formulation)
            if plan is not None:
                model.start = plan.start
                if tuning.fix_arms and plan.fixed is not None:
                    model.fix_arms(plan.fixed, plan.start.astype(float), plan.region_bound)
                    if tuning.solve_cores and plan.optimum is not None:
                        value = dot(model.arm_columns()[0], plan.optimum)
                        bound = max(value, plan.region_bound)
                        model.answer = SolveResult("optimal", plan.optimum.astype(float).tolist(), value, bound)
                if tuning.side_cover_cuts:
                    _add_cover_cuts(model, formulation)
        return  # (no candidate cuts on trees: slower where measured, docs/performance.md, "Graphs")
    start, fixed, region_bound = query_plan(model, formulation, fix=tuning.fix_arms)
    model.start = start
    if fixed is not None:
        model.fix_arms(fixed, start.astype(float), region_bound)
    positive = positive_cost_options(formulation) if tuning.positive_cost_options else None
    if positive and float(model.arm_columns()[0].max(initial=0.0)) > 0.0:
        model.set_query_options(positive)
    d = formulation.d
    if tuning.candidate_cuts and formulation.separators:
        violated = formulation.violated_rows
        model.candidate_cuts = lambda values: violated(np.asarray(values[:d]) > 0.5)
    if model.candidate_cuts is not None:
        space, rows = hint["space"], _side_rows_of(model, formulation, hint)
        _, lower, upper = model.arm_columns()

        def repair(values) -> np.ndarray | None:
            action = PathStarts.of(space).repair(np.asarray(values[:d]) > 0.5, model.arm_columns()[0])
            return action if action is not None and _obeys(action, rows, lower, upper) else None

        model.repair = repair


def query_start(model: Engine, formulation: Formulation) -> np.ndarray | None:
    """The start heuristic's action for the query the model holds now, or ``None`` (see the module docstring)."""
    return query_plan(model, formulation, fix=False)[0]


def query_plan(
    model: Engine, formulation: Formulation, fix: bool = True
) -> tuple[np.ndarray | None, np.ndarray | None, float]:
    """``(start, fixed, region_bound)`` for the query the model holds now: the start heuristic's action (or
    ``None``) and, with ``fix`` on formulations that are the hint's space plus side rows only
    (:func:`_fixing_applies`), the arms its reduced-cost fixing proves out
    (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.start_plan`; ``None``: none) and the bound of the
    actions they exclude."""
    none = (None, None, -math.inf)
    hint = _start_hint(formulation, model.tuning)
    if not hint or not _own_objective(model, formulation):
        return none
    rows = _side_rows_of(model, formulation, hint)
    found = side_rows(rows, formulation.d)
    if found is None:
        return none
    costs, lower, upper = model.arm_columns()
    space = hint["space"]
    if fix and _fixing_applies(formulation, hint):
        start, fixed, region_bound = PathStarts.of(space).start_plan(costs, lower, upper, *found)
    else:
        start, fixed, region_bound = PathStarts.of(space).start_action(costs, lower, upper, *found), None, -math.inf
    if start is None or not _obeys(start, rows, lower, upper):
        return none
    return start, fixed, region_bound


def _start_hint(formulation: Formulation, tuning: HighsTuning) -> dict | None:
    """The start heuristic the formulation names, when its space is large enough for it (``tuning``'s
    ``path_start_min_arms``; digraphs with cycles: ``path_start_min_arcs`` too); else ``None``."""
    hint = formulation.solver_hints.get("start")
    if not hint:
        return None
    space = hint["space"]
    gate = tuning.path_start_min_arms
    if space.directed and not space.acyclic:
        gate = min(gate, tuning.path_start_min_arcs)
    return hint if space.d >= gate else None


def _fixing_applies(formulation: Formulation, hint: dict) -> bool:
    """Whether ``formulation`` is the hint's space's own formulation plus side rows on the arms (no other
    part's rows first, columns or separators: its actions are the space's paths that obey the rows, so a
    bound over those paths bounds them). A rule of the formulation alone, cached in the hint."""
    if hint.get("fix_owner") is not formulation:
        own = hint["space"].formulation()
        hint["fix_use"] = (
            formulation.rows[: hint["rows"]] == own.rows
            and formulation.n_cols == own.n_cols
            and len(formulation.separators) == len(own.separators)
        )
        hint["fix_owner"] = formulation
    return hint["fix_use"]


def side_rule_applies(formulation: Formulation, min_arms: int = HighsTuning.side_min_arms) -> bool:
    """Whether queries on ``formulation`` get side plans: a rule of the space alone (cached in its hint).

    The formulation must be a supported base (:func:`~cmab_milp.oracles.mip.side_starts.supported_base`) of
    at least ``min_arms`` arms (the ``side_min_arms`` option of :class:`~.tuning.HighsTuning`), whose rows come
    first and whose separators are all there are
    (an intersection stacks other parts' rows and cuts: a start might be no action), plus a side row
    that is not a conflicting pair.
    """
    hint = formulation.solver_hints.get("side")
    if not hint:
        return False
    if hint.get("owner") is not formulation:  # (a copy made by shifting or stacking: decide again)
        base, n = hint["space"], hint["rows"]
        own = base.formulation() if supported_base(base) else None
        hint["use"] = bool(
            own is not None
            and formulation.rows[:n] == own.rows
            and len(formulation.separators) == len(own.separators)
            and any(not (len(r.cols) == 2 and r.coefs == (1.0, 1.0) and r.ub == 1.0) for r in formulation.rows[n:])
        )
        hint["owner"] = formulation
    return hint["use"] and formulation.d >= min_arms


def side_query_start(model: Engine, formulation: Formulation) -> np.ndarray | None:
    """The Lagrangian start (:func:`~cmab_milp.oracles.mip.side_starts.side_plan`) for the query the model holds now.

    For formulations of a base space plus side rows (``solver_hints["side"] = {"space": base, "rows": n}``:
    rule spaces over a base with a combinatorial oracle); ``None`` when the hint names no such base, a row
    after the base's uses another column, or the formulation has rows or separators the base does not know.
    """
    plan = side_query_plan(model, formulation, fix=False)
    return None if plan is None else plan.start


def side_query_plan(model: Engine, formulation: Formulation, fix: bool = True) -> SidePlan | None:
    """:func:`side_query_start`'s :class:`~cmab_milp.oracles.mip.side_starts.SidePlan` (with ``fix``: the arms
    that reduced-cost fixing proves), or ``None``; its ``start`` obeys the bounds and every side row."""
    if not side_rule_applies(formulation, model.tuning.side_min_arms) or not _own_objective(model, formulation):
        return None
    hint = formulation.solver_hints["side"]
    rows = _side_rows_of(model, formulation, hint)
    if len(rows) > SIDE_MAX_ROWS:
        return None
    found = as_side_rows(rows, formulation.d)
    if found is None:
        return None
    costs, lower, upper = model.arm_columns()
    plan = side_plan(hint["space"], costs, *found, lower, upper, fix=fix)
    if plan.start is None or not _obeys(plan.start, rows, lower, upper):
        return None
    return plan


def _add_cover_cuts(model: Engine, formulation: Formulation) -> None:
    """Extended cover cuts of the knapsack side rows at the LP relaxation's point, as this query's rows."""
    found = as_side_rows(_side_rows_of(model, formulation, formulation.solver_hints["side"]), formulation.d)
    x = model.relaxation_arm_values()
    if found is None or x is None:
        return
    _, lower, upper = model.arm_columns()
    model.add_rows(cover_cuts(np.asarray(x), *found, lower, upper))


def _own_objective(model: Engine, formulation: Formulation) -> bool:
    """False when the model has columns of another objective (norm queries) or other arms."""
    return model.num_cols == formulation.n_cols and model.d == formulation.d


def _side_rows_of(model: Engine, formulation: Formulation, hint: dict) -> list[Row]:
    return formulation.rows[hint["rows"] :] + model.rows(model.base_rows, model.num_rows)


def _obeys(action: np.ndarray, rows: list[Row], lower: np.ndarray, upper: np.ndarray) -> bool:
    """Whether the bool arm vector ``action`` keeps the arm bounds and every (arm-only) row."""
    x = action.astype(float)
    if (x < lower - 0.5).any() or (x > upper + 0.5).any():
        return False
    for row in rows:
        if any(c >= len(x) for c in row.cols):
            return False
        activity = dot(row.coefs, x[list(row.cols)])
        if not row.lb - 1e-9 * (1.0 + abs(row.lb)) <= activity <= row.ub + 1e-9 * (1.0 + abs(row.ub)):
            return False
    return True
