"""s-t paths for the ``combinatorial`` backend: a longest-path dynamic programme on a DAG, Dijkstra otherwise.

On a DAG the heaviest path through the included edges is a chain of longest-path segments between them,
each a dynamic programme over the edges in topological order. On a graph with cycles the longest simple
path is NP-hard; when no allowed edge has positive weight it is the shortest path under the costs ``-w``
(Dijkstra), through one included edge of an undirected graph the least-cost pair of disjoint paths
(:mod:`~cmab_milp.oracles.core.paths_ruled`, exact integers), and any other query is declined with
:class:`~cmab_milp.oracles.core.base.UnsupportedQuery`.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.DiGraph([(0, 1), (0, 2), (1, 2)]), 0, 2)
>>> query = cm.make_oracle(space, "enumerate").linear_query(np.array([0.4, 0.5, 0.8]))
>>> path_argmax(space, query).tolist()  # 0 -> 1 -> 2 (1.2) beats 0 -> 2 (0.5)
[True, False, True]
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np

from ...spaces import STPaths
from .base import UnsupportedQuery
from .dag_programme import dag_tables, longest_from, waypoints
from .paths_ruled import cyclic_path_ruled
from .queries import LinearQuery

__all__ = ["path_argmax"]


def _dag_path(space: STPaths, q: LinearQuery) -> np.ndarray | None:
    w, res = q.weights, q.restrictions
    rank, edges = dag_tables(space)
    banned = set(res.exclude)
    segments, action = waypoints(space, res.include, rank)
    weights = w.tolist()
    for a, b in segments:
        if rank[a] > rank[b]:
            return None
        segment = _dag_segment(edges, weights, banned, rank, a, b, space.n_nodes, space.tail)
        if segment is None:
            return None
        action[segment] = True
    return action


def _dag_segment(edges, weights, banned, rank, a: int, b: int, n_nodes: int, tail: np.ndarray) -> list[int] | None:
    """Longest a-b path by dynamic programming over edges in topological order."""
    if a == b:
        return []
    best, via = longest_from(edges, weights, banned, rank, a, b, n_nodes, 0.0)
    if best[b] is None:
        return None
    path, v = [], b
    while v != a:
        k = via[v]
        path.append(k)
        v = int(tail[k])
    return path


def _cyclic_path(space: STPaths, q: LinearQuery) -> np.ndarray | None:
    w, res = q.weights, q.restrictions
    if res.include:  # one edge in, undirected, no other weight > 0: two disjoint paths (paths_ruled.py)
        answer = cyclic_path_ruled(space, q)
        if answer is None:
            raise UnsupportedQuery(
                "include on s-t paths in a cyclic graph needs the MILP backend (but one edge of an undirected"
                " graph when no other allowed weight is > 0)"
            )
        return answer[0]
    allowed = np.ones(space.d, bool)
    allowed[list(res.exclude)] = False
    if (w[allowed] > 0).any():
        raise UnsupportedQuery("longest simple path with positive weights is NP-hard; use a MILP backend")
    graph = nx.DiGraph() if space.directed else nx.Graph()
    graph.add_nodes_from(range(space.n_nodes))
    for k in np.flatnonzero(allowed):
        graph.add_edge(int(space.tail[k]), int(space.head[k]), cost=-float(w[k]), arm=int(k))
    try:
        nodes = nx.dijkstra_path(graph, space.s, space.t, weight="cost")
    except nx.NetworkXNoPath:
        return None
    action = np.zeros(space.d, bool)
    for u, v in itertools.pairwise(nodes):
        action[graph.edges[u, v]["arm"]] = True
    return action


def path_argmax(space: STPaths, q: LinearQuery) -> np.ndarray | None:
    """The heaviest s-t path admitted by ``q``'s restrictions (``None``: none); :class:`UnsupportedQuery` when
    the graph has cycles and an allowed edge has positive weight, or with ``include`` on a cyclic graph (but one
    edge of an undirected graph)."""
    return _dag_path(space, q) if space.acyclic else _cyclic_path(space, q)
