"""The longest-path dynamic programme on a DAG, shared by the combinatorial algorithm and the tie rule.

:func:`dag_tables` orders a DAG's arms once; :func:`longest_from` runs the programme between two nodes on any
numbers that add (``float`` weights for the ``combinatorial`` backend, exact integers for the tie rule's one
solve, :mod:`~cmab_milp.oracles.core.ties_direct`). No import of the oracle base: both sides use it.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.DiGraph([(0, 1), (0, 2), (1, 2)]), 0, 2)  # arms 01, 02, 12
>>> rank, edges = dag_tables(space)
>>> best, via = longest_from(edges, [0.4, 0.5, 0.8], set(), rank, 0, 2, 3, 0.0)
>>> round(best[2], 2), via[2]  # 0 -> 1 -> 2 (1.2) beats 0 -> 2 (0.5): the last arm in is 12
(1.2, 2)
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from ...spaces import STPaths

__all__ = ["dag_tables", "longest_from", "waypoints"]


def dag_tables(space: STPaths) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Topological rank per node and the edges ``(arm, tail, head)`` sorted by tail rank (cached)."""
    tables = space.__dict__.get("_dag_tables")
    if tables is None:
        order = [space.node_index[v] for v in nx.topological_sort(space.graph)]
        rank = np.empty(space.n_nodes, np.int64)
        rank[order] = np.arange(space.n_nodes)
        edges = sorted(range(space.d), key=lambda k: rank[space.tail[k]])
        tables = (rank, [(k, int(space.tail[k]), int(space.head[k])) for k in edges])
        space.__dict__["_dag_tables"] = tables
    return tables


def longest_from(
    edges: list[tuple[int, int, int]], weights: list, banned: Any, rank: Any, a: int, b: int, n_nodes: int, zero: Any
) -> tuple[list, list[int]]:
    """Each node's best value from ``a`` (``None``: not reached) and the arm it is reached by, over the arms not
    ``banned`` between ``a`` and ``b`` in topological order (``zero``: the value at ``a``); ties keep the first."""
    lo, hi = rank[a], rank[b]
    best: list = [None] * n_nodes
    via = [-1] * n_nodes
    best[a] = zero
    for k, u, v in edges:
        ru = rank[u]
        if ru < lo:
            continue
        if ru >= hi:
            break
        bu = best[u]
        if bu is None or k in banned or rank[v] > hi:
            continue
        gain = bu + weights[k]
        bv = best[v]
        if bv is None or gain > bv:
            best[v] = gain
            via[v] = k
    return best, via


def waypoints(space: STPaths, include: Any, rank: Any) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The segments ``(a, b)`` a path through the ``include`` arms is made of (``s -> tail(e1)``, ``head(e1) ->
    tail(e2)``, ..., ``head(ek) -> t``, in topological order) and the action holding those arms."""
    fixed = sorted(include, key=lambda k: rank[space.tail[k]])
    starts = [space.s] + [int(space.head[k]) for k in fixed]
    ends = [int(space.tail[k]) for k in fixed] + [space.t]
    action = np.zeros(space.d, bool)
    action[fixed] = True
    return list(zip(starts, ends, strict=True)), action
