"""The solver option tables every backend starts from, and a configured HiGHS instance.

:data:`HIGHS_OPTIONS` is set on every HiGHS model (the ``highs`` backend, the norm
index, the K-MAX MILP, PuLP's ``HiGHS`` solver takes the tolerances);
:data:`SCIP_PARAMS` on every SCIP model (the ``scip`` backend, PuLP's ``SCIP_PY``).
Both make a solver prove optimality to about ``1e-11``, tighter than the contract's
``1e-9 * (1 + |optimum|)``.

A formulation may name its family (``solver_hints["family"] = {"name": ...}``: the
s-t paths of cyclic graphs say ``"cyclic_paths"``); :data:`FAMILY_HIGHS_OPTIONS` and
:data:`FAMILY_POSITIVE_COST_OPTIONS` hold the HiGHS options of each family (measured
speed-ups, none changes an answer's value), read by :func:`highs_model_options` and
:func:`positive_cost_options`.

>>> HIGHS_OPTIONS["threads"], SCIP_PARAMS["parallel/maxnthreads"]
(1, 1)
>>> import networkx as nx
>>> import cmab_milp as cm
>>> highs_model_options(cm.STPaths(nx.cycle_graph(5), 0, 2).formulation())
{'mip_pool_soft_limit': 200}
"""

from __future__ import annotations

from typing import Any

from ...spaces.formulation import Formulation

__all__ = [
    "FAMILY_HIGHS_OPTIONS",
    "FAMILY_POSITIVE_COST_OPTIONS",
    "HIGHS_OPTIONS",
    "SCIP_PARAMS",
    "highs_model_options",
    "positive_cost_options",
]

#: Options applied to every HiGHS instance: silent, single-threaded (the
#: scheduler is per OS thread; batches run one instance per thread), gaps and
#: tolerances tight enough to separate indices that differ by ~1e-9, and the
#: feasibility-jump heuristic off (it slows small MILPs; docs/performance.md, "Graphs").
HIGHS_OPTIONS: dict[str, object] = {
    "output_flag": False,
    "threads": 1,
    "mip_rel_gap": 1e-12,
    "mip_abs_gap": 1e-11,
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-10,
    "mip_heuristic_run_feasibility_jump": False,
}

#: Parameters set on every SCIP model: zero gaps, tight feasibility, one
#: thread per model (batches run one model per worker thread).
SCIP_PARAMS: dict[str, Any] = {
    "limits/gap": 0.0,
    "limits/absgap": 1e-11,
    "numerics/epsilon": 1e-12,
    "numerics/sumepsilon": 1e-10,
    "numerics/feastol": 1e-9,
    "numerics/dualfeastol": 1e-10,
    "parallel/maxnthreads": 1,
}

#: HiGHS options of the models of a formulation family, set when the model is built: s-t paths of cyclic graphs
#: keep a smaller cut pool (after the root cuts, HiGHS's own cut generation dominated their solves;
#: docs/performance.md, "Graphs").
FAMILY_HIGHS_OPTIONS: dict[str, dict[str, object]] = {"cyclic_paths": {"mip_pool_soft_limit": 200}}
#: HiGHS options of a family's queries with some positive arm cost, set per query (a rule of the query alone;
#: :func:`~cmab_milp.oracles.mip.starts.prepare_query`): paths without restarts (docs/performance.md, "Graphs").
FAMILY_POSITIVE_COST_OPTIONS: dict[str, dict[str, object]] = {"cyclic_paths": {"mip_allow_restart": False}}


def _family(formulation: Formulation) -> str | None:
    return formulation.solver_hints.get("family", {}).get("name")


def highs_model_options(formulation: Formulation) -> dict[str, object]:
    """The HiGHS options a model of ``formulation`` starts with beyond :data:`HIGHS_OPTIONS`: its family's
    (:data:`FAMILY_HIGHS_OPTIONS`), then the formulation's own ``solver_hints["highs"]``."""
    return {**FAMILY_HIGHS_OPTIONS.get(_family(formulation), {}), **formulation.solver_hints.get("highs", {})}


def positive_cost_options(formulation: Formulation) -> dict[str, object]:
    """The HiGHS options of a query with some positive arm cost (:data:`FAMILY_POSITIVE_COST_OPTIONS`, then the
    formulation's own ``solver_hints["highs_positive_costs"]``); empty when there are none."""
    own = formulation.solver_hints.get("highs_positive_costs", {})
    return {**FAMILY_POSITIVE_COST_OPTIONS.get(_family(formulation), {}), **own}
