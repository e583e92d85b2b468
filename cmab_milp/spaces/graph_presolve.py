"""What the graph decides before any solver sees a model: the arms in no action.

:func:`unusable_path_arms` marks the edges (arcs) of an s-t path space that no simple s-t path
uses, also under budget rows (rows ``c @ a <= b`` with ``c >= 0``, such as a hop limit):

* undirected: an edge lies on a simple s-t path exactly when it is in the block (biconnected
  component) of ``G + st`` that holds the edge ``st`` (a cycle through ``st`` and the edge is such a
  path plus ``st``); bridges, pendant trees and blocks off the s-t chain of blocks go;
* directed (a simple directed path is a simple path of the underlying graph): the same test on the
  underlying graph, then arcs into ``s`` or out of ``t``, arcs ``u -> v`` with ``u`` not reached from
  ``s`` without ``t`` or ``t`` not reached from ``v`` without ``s``;
* a budget ``c @ a <= b``: an arc ``u -> v`` whose cheapest walk ``s ~> u -> v ~> t`` (``c``-shortest
  paths, a lower bound on every path through it) costs more than ``b``.

:func:`unusable_matching_arms` marks the edges of a bipartite graph that no perfect matching uses (an
edge outside a perfect matching ``M`` is in another one exactly when it lies on an ``M``-alternating
cycle: its ends in one strongly connected component of the graph with ``M`` oriented one way).

Every arm marked is in no action, so fixing it to 0 changes no answer; the formulations of
:mod:`cmab_milp.spaces.paths` and :mod:`cmab_milp.spaces.graphs` and the rule spaces (budgets) fix them with one row.

>>> import networkx as nx
>>> from cmab_milp.spaces.paths import STPaths
>>> g = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 2), (3, 5)])  # a second triangle hangs off t = 2
>>> space = STPaths(g, 0, 2)
>>> [space.arms[k] for k in np.flatnonzero(unusable_path_arms(space))]
[(2, 3), (2, 4), (3, 4), (3, 5)]
>>> [space.arms[k] for k in np.flatnonzero(unusable_path_arms(space, [(np.ones(space.d), 1.0)]))]  # one hop
[(0, 1), (1, 2), (2, 3), (2, 4), (3, 4), (3, 5)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np

from .formulation import Row

__all__ = ["budgets_of", "unusable_matching_arms", "unusable_path_arms"]


def budgets_of(rows: Sequence[Row], d: int) -> list[tuple[np.ndarray, float]]:
    """The rows over arm columns that are budgets ``c @ a <= b`` with ``c >= 0``, as ``(c, b)``.

    >>> budgets_of([Row((0, 2), (1.0, 2.0), -np.inf, 3.0), Row((0, 1), (1.0, -1.0), -np.inf, 0.0)], 3)
    [(array([1., 0., 2.]), 3.0)]
    """
    out = []
    for row in rows:
        if np.isfinite(row.ub) and all(c < d for c in row.cols) and all(v >= 0 for v in row.coefs):
            cost = np.zeros(d)
            np.add.at(cost, list(row.cols), list(row.coefs))
            out.append((cost, float(row.ub)))
    return out


def unusable_path_arms(space: Any, budgets: Sequence[tuple[np.ndarray, float]] = ()) -> np.ndarray:
    """A mask of the arms of s-t path space ``space`` in no s-t path (within every budget ``(c, b)``)."""
    s, t, d = space.s, space.t, space.d
    tail, head = space.tail, space.head
    under = nx.Graph()
    under.add_nodes_from(range(space.n_nodes))
    under.add_edges_from(zip(tail.tolist(), head.tolist(), strict=True))
    under.add_edge(s, t)
    block = next(b for b in nx.biconnected_component_edges(under) if (s, t) in b or (t, s) in b)
    kept = {frozenset(e) for e in block}
    out = np.array([frozenset((int(u), int(v))) not in kept for u, v in zip(tail, head, strict=True)], bool)
    orientations = [(tail, head)] if space.directed else [(tail, head), (head, tail)]
    if space.directed:
        out |= (head == s) | (tail == t)
    for cost in [np.zeros(d), *(c for c, _ in budgets)]:
        bound = [b for c, b in budgets if c is cost]
        from_s, to_t = _distances(space, cost, s, t, forward=True), _distances(space, cost, t, s, forward=False)
        cheapest = np.full(d, np.inf)
        for u, v in orientations:
            cheapest = np.minimum(cheapest, from_s[u] + cost + to_t[v])
        if bound:
            out |= cheapest > bound[0] + 1e-9 * (1.0 + abs(bound[0]))
        else:  # the structural pass: arcs no walk s ~> u -> v ~> t uses
            out |= ~np.isfinite(cheapest)
    return out


def _distances(space: Any, cost: np.ndarray, root: int, avoid: int, forward: bool) -> np.ndarray:
    """``c``-shortest distances from ``root`` (``forward``) or to it, in the graph without node ``avoid``."""
    graph = nx.DiGraph() if space.directed else nx.Graph()
    graph.add_nodes_from(range(space.n_nodes))
    ends = zip(space.tail.tolist(), space.head.tolist(), cost.tolist(), strict=True)
    graph.add_weighted_edges_from((u, v, c) if forward else (v, u, c) for u, v, c in ends if avoid not in (u, v))
    found = nx.single_source_dijkstra_path_length(graph, root)
    out = np.full(space.n_nodes, np.inf)
    out[list(found)] = list(found.values())
    out[avoid] = np.inf
    return out


def unusable_matching_arms(space: Any) -> np.ndarray:
    """A mask of the edges in no perfect matching of a bipartite perfect-matching space (else none)."""
    out = np.zeros(space.d, bool)
    if not (space.perfect and space.bipartite):
        return out
    graph = nx.Graph(list(zip(space.tail.tolist(), space.head.tolist(), strict=True)))
    side = nx.bipartite.color(graph)
    matched = nx.bipartite.hopcroft_karp_matching(graph, top_nodes=[v for v in graph if side[v] == 0])
    oriented = nx.DiGraph()
    for u, v in graph.edges():
        left, right = (u, v) if side[u] == 0 else (v, u)
        oriented.add_edge(*((right, left) if matched.get(left) == right else (left, right)))
    component = {v: k for k, part in enumerate(nx.strongly_connected_components(oriented)) for v in part}
    for k, (u, v) in enumerate(zip(space.tail.tolist(), space.head.tolist(), strict=True)):
        out[k] = matched.get(u) != v and component[u] != component[v]
    return out
