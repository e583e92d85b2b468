"""Root cuts: tighten a compiled MILP with the formulation's fractional separators before branching.

:func:`add_root_cuts` solves the LP relaxation of the model as it stands (the
query's costs, arm bounds and rows), asks every fractional separator of the
formulation for rows the LP point violates, appends them and repeats, until no
row is violated by more than ``min_violation``, the round cap is reached, or the
LP is infeasible; then it appends every row found to the model. Every row is
valid for every action of the space, so the MILP's optimum is unchanged; only
its relaxation is tighter.

When the formulation has columns that only make integer points exact
(``aux_exact_only``: the flow columns of trees, forests and paths), the rounds
run on a separate LP of :meth:`~cmab_milp.spaces.formulation.Formulation.lp_core`
(kept per model; docs/performance.md, "Graphs"), given the model's arm costs,
arm bounds and query rows.

A formulation may say that no round pays when every arm cost is <= 0
(``solver_hints["root_cuts"] = {"skip_nonpositive": True}``: s-t paths, where
such a query never gains from a cycle); the rounds are then skipped unless the
tuning option ``root_cuts_nonpositive`` is set.

Before the rounds, :func:`~cmab_milp.oracles.mip.starts.prepare_query` gives the
model the query's MIP start and candidate hooks (``tuning.prepare_queries``, :class:`~.tuning.HighsTuning`; the
cut loop's hook for the query, as this function is).

Tie rule: the relaxation starts cold (no basis of an earlier query is kept) and
each round is a deterministic function of the query, so the set of cuts depends
on the query and the space only. The caller removes the rows with the query's
other rows.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.engine import new_engine
>>> space = cm.GraphicMatroid(nx.complete_graph(5))
>>> model = new_engine(space.formulation())
>>> import numpy as np
>>> model.set_costs(np.ones(space.d))
>>> n = model.num_rows
>>> added = add_root_cuts(model, space.formulation())
>>> added == model.num_rows - n > 0
True
"""

from __future__ import annotations

import weakref

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.engine import Engine
from .graph_cuts import fractional_cuts
from .starts import prepare_query

__all__ = ["MAX_ROUNDS", "MIN_VIOLATION", "add_root_cuts"]

#: Separation rounds per query (each is one LP re-solve from the last basis).
MAX_ROUNDS = 100
#: A row enters only when the LP point is more than this outside it.
MIN_VIOLATION = 1e-3

_cores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _core_model(model: Engine, formulation: Formulation) -> Engine | None:
    """The LP of ``formulation.lp_core()`` kept for ``model`` (None when the core is the formulation itself)."""
    if model not in _cores:
        core = formulation.lp_core()
        _cores[model] = None if core is formulation else model.new_model(core, integer=False)
    return _cores[model]


def add_root_cuts(
    model: Engine,
    formulation: Formulation,
    *,
    max_rounds: int = MAX_ROUNDS,
    min_violation: float = MIN_VIOLATION,
) -> int:
    """Add violated rows of ``formulation.fractional_separators`` to ``model``; return how many.

    ``model`` must hold ``formulation`` (columns ``0..d-1`` are the arms), possibly
    with query rows appended after its ``base_rows``. Nothing is added when the
    formulation has no fractional separator or the LP optimum violates no row.
    """
    if max_rounds < 0 or not min_violation > 0:
        raise ValueError(f"max_rounds must be >= 0 and min_violation > 0, got {max_rounds} and {min_violation}")
    if model.d != formulation.d:
        raise ValueError(f"the model has {model.d} arm columns but the formulation d={formulation.d}")
    if model.tuning.prepare_queries:
        prepare_query(model, formulation)
    if not formulation.fractional_separators or max_rounds == 0:
        return 0
    skippable = formulation.solver_hints.get("root_cuts", {}).get("skip_nonpositive")
    if skippable and not model.tuning.root_cuts_nonpositive and _nonpositive(model, formulation):
        return 0
    core = _core_model(model, formulation)
    query_rows = model.rows(model.base_rows, model.num_rows) if core is not None else []
    if any(c >= model.d for r in query_rows for c in r.cols):
        core = None  # the query's rows use other columns: separate on the model itself
    if core is None:
        return len(_rounds(model, formulation, max_rounds, min_violation, relax=True))
    costs, lower, upper = model.arm_columns()
    core.set_costs(costs)
    core.set_arm_bounds(tuple(np.flatnonzero(lower > 0.5).tolist()), tuple(np.flatnonzero(upper < 0.5).tolist()))
    core.add_rows(query_rows)
    try:
        cuts = _rounds(core, formulation, max_rounds, min_violation, relax=False)
    finally:
        core.delete_rows(core.base_rows, core.num_rows)
    model.add_rows(cuts)
    return len(cuts)


def _nonpositive(model: Engine, formulation: Formulation) -> bool:
    """Whether the model's objective is its arm costs alone (no other columns) and none is positive."""
    return model.num_cols == formulation.n_cols and float(model.arm_columns()[0].max(initial=0.0)) <= 0.0


def _rounds(lp: Engine, formulation: Formulation, max_rounds: int, min_violation: float, relax: bool):
    """Solve, separate, add; return the rows added to ``lp``."""
    added: list[Row] = []
    lp.clear_solver()  # the cut set must not depend on the basis an earlier query left
    with lp.options({"solve_relaxation": True} if relax else {}):
        for _ in range(max_rounds):
            x = lp.run_relaxation()
            if x is None:
                break
            cuts = fractional_cuts(formulation, np.asarray(x[: formulation.d]), min_violation)
            if not cuts:
                break
            lp.add_rows(cuts)
            added.extend(cuts)
    return added
