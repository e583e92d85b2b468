"""The cost models of ``auto``: estimated seconds per query of each backend, by space and query shape.

A cost model is ``cost(space, shape, facts) -> seconds`` (``math.inf``: cannot answer); a backend names
its own in its :class:`~cmab_milp.oracles.core.registry.Capabilities`. The estimates were fitted on
``bench/auto_dispatch.py`` and ``bench/graphs_large.py`` (figures in ``docs/performance.md``); they only
need to order backends whose costs differ by more than 2x.

Example
-------
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.auto_facts import QueryShape, SpaceFacts
>>> space = cm.Cardinality(30, 3)
>>> facts = SpaceFacts(space, {"linear": 0, "norm": 0})
>>> combinatorial_cost(space, QueryShape("linear"), facts) < highs_cost(space, QueryShape("linear"), facts)
True
"""

from __future__ import annotations

import math

from ...spaces import ExplicitActions, Matchings
from ...spaces.base import ActionSpace
from .auto_facts import QueryShape, SpaceFacts, cyclic_paths_base, enumeration_base

__all__ = ["combinatorial_cost", "enumerate_cost", "highs_cost", "ortools_cost", "scip_cost"]

# Seconds per query, fitted on bench/auto_dispatch.py (the fit and its figures: docs/performance.md).
_ENUM_BASE, _ENUM_ENTRY = 5e-6, 1.5e-9
# Norm queries walk the actions' prefix tree (oracles/backends/enumerate_norm.py): a few numpy calls a depth,
# then about one node an action; fitted on bench/enumerate_norm.py (Cardinality, partition matroids, matchings).
_ENUM_NORM_BASE, _ENUM_NORM_DEPTH, _ENUM_NORM_NODE = 2e-5, 1e-5, 2e-8
_HIGHS_LP, _HIGHS_MILP, _HIGHS_PER_ENTRY = 1e-4, 3e-4, 5e-6
_HIGHS_SIDE_MILP = 2e-3  # a MILP over a family plus side rules (budgets, conflicts, groups): measured 2e-3 to 7e-3 s
_HIGHS_ROOT_ROUNDS = 0.012  # LP cut rounds before a MILP with fractional separators (trees, forests)
_HIGHS_NORM = 0.1  # an exact norm query on 30 arms (secants, cuts: many MILP solves), growing as d^1.5


def enumerate_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """Brute force: a matrix-vector product over n actions; norm queries walk the actions' prefix tree instead.

    A norm query costs ``2e-5 + 1e-5 m`` seconds (the tree's depths) plus ``2e-8`` an action on top of the
    linear query's per-entry cost (the tree keeps a row of ``d`` partial sums per inner node).
    """
    d = facts.d
    per_action = _ENUM_ENTRY * (d + shape.include + shape.exclude + 2 * shape.forbid_pairs)
    base = _ENUM_BASE
    if shape.kind == "norm":
        per_action += _ENUM_NORM_NODE
        base = _ENUM_NORM_BASE
    affordable = (facts.budget - base) / per_action if math.isfinite(facts.budget) else math.inf
    limit = int(min(facts.caps[shape.kind], max(affordable, 0)))
    n = facts.count(limit)
    if n is None:
        return math.inf
    if shape.kind == "norm":
        base += _ENUM_NORM_DEPTH * facts.max_size()
    return base + n * per_action


def highs_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """A re-solve of the compiled model (LP when integral); the norm index runs many MILP solves.

    Norm queries: ``0.1 s * (d / 30)^1.5``, fitted on cardinality, matching, path, tree and side-row
    spaces of 20 to 60 arms.
    """
    size, integral, separators = facts.formulation_size()
    factor = 3.0 if separators else 1.0
    base = cyclic_paths_base(space) if shape.positive or shape.mixed else None
    if base is not None:  # queries with weights > 0 on cyclic s-t paths: a branching MILP per cut round
        if shape.mixed:
            return _mixed_path_seconds(base)
        return _longest_path_seconds(base, "highs", _has_rules(space))
    if shape.kind == "linear":
        lp = integral and not shape.forbid_pairs
        base = _HIGHS_LP if lp else (_HIGHS_SIDE_MILP if _has_rules(space) else _HIGHS_MILP)
        rounds = _HIGHS_ROOT_ROUNDS if not lp and facts.root_cuts() else 0.0
        return factor * (base + _HIGHS_PER_ENTRY * size) + rounds
    return _HIGHS_NORM * (facts.d / 30.0) ** 1.5


def _longest_path_seconds(base, solver: str, side_rows: bool = False) -> float:
    """Seconds per longest-path-like query (most weights > 0) on cyclic s-t paths, by solver.

    Fitted on ``bench/graphs_large.py`` (grids; the figures: ``docs/performance.md``): on digraphs
    CP-SAT's circuit leads, then HiGHS's lazy-cut loop, then SCIP's one tree; on undirected grids HiGHS
    leads without side rows and SCIP's one tree with them; CP-SAT has no circuit there. The time
    doubles per 6 more nodes on digraphs, per 16 on undirected grids.
    """
    if base.directed:
        return {"ortools": 0.15, "highs": 0.8, "scip": 2.0}[solver] * 2.0 ** ((base.n_nodes - 36) / 6.0)
    table = (
        {"ortools": math.inf, "highs": 0.4, "scip": 0.225}
        if side_rows
        else {"ortools": math.inf, "highs": 0.05, "scip": 0.125}
    )
    return table[solver] * 2.0 ** ((base.n_nodes - 36) / 16.0)


def _mixed_path_seconds(base) -> float:
    """Seconds per query with some weights > 0 but most < 0 on cyclic s-t paths (HiGHS's lazy cycle cuts).

    ``0.05 s * 2^((nodes - 36) / 16)``, directed or not: measured 0.04 s on the 6x6 grid digraph, 0.08 s on
    the 8x8 grid and 0.03-0.15 s on GEANT (37 nodes; ``problems/routing_geant.toml``), three weights > 0.
    """
    return 0.05 * 2.0 ** ((base.n_nodes - 36) / 16.0)


def _has_rules(space: ActionSpace) -> bool:
    return bool(enumeration_base(space)[1])


def ortools_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """CP-SAT: picked for longest-path-like queries on directed s-t paths (its circuit constraint) only.

    Elsewhere its solve-separate loop is far slower than HiGHS on every bench family (declared as
    ten times HiGHS's estimate).
    """
    base = cyclic_paths_base(space)
    if shape.kind != "linear" or base is None or not base.directed:
        return math.inf
    if not shape.positive:
        return 10.0 * highs_cost(space, shape, facts)
    return _longest_path_seconds(base, "ortools", _has_rules(space))


def scip_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """SCIP (one tree with the separators): first on longest paths of undirected graphs with side rows.

    Elsewhere it is slower than HiGHS or CP-SAT on the bench's families: declared (as three times
    HiGHS's estimate) so that ``auto`` uses it where nothing faster is installed.
    """
    base = cyclic_paths_base(space)
    if shape.kind == "linear" and shape.positive and base is not None:
        return _longest_path_seconds(base, "scip", _has_rules(space))
    return 3.0 * highs_cost(space, shape, facts)


def combinatorial_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """Sorting, greedy, dynamic programming, assignment: a small cost per arm."""
    if shape.kind != "linear":
        return math.inf
    if isinstance(space, ExplicitActions):
        return _ENUM_BASE + _ENUM_ENTRY * len(space.actions) * facts.d
    if isinstance(space, Matchings) and not space.bipartite:
        return 1e-4 + 2e-5 * facts.d  # blossom in pure Python
    return 1e-5 + 5e-7 * facts.d
