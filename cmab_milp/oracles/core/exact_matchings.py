"""Matchings for the ``combinatorial`` backend: an assignment on bipartite graphs, blossom otherwise.

A bipartite graph's heaviest matching is an assignment between its two sides
(``scipy.optimize.linear_sum_assignment``; missing edges cost nothing, or are forbidden for perfect
matchings); a general graph's is Edmonds' blossom algorithm (``networkx.max_weight_matching``, with
maximum cardinality for perfect ones). Included edges are fixed first and their nodes removed.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Matchings(nx.path_graph(4))  # edges 01, 12, 23
>>> query = cm.make_oracle(space, "enumerate").linear_query(np.array([0.4, 0.5, 0.3]))
>>> matching_argmax(space, query).tolist()
[True, False, True]
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment

from ...spaces import Matchings
from .queries import LinearQuery

__all__ = ["assignment_tables", "matching_argmax"]


def _bipartite_sides(space: Matchings) -> tuple[np.ndarray, np.ndarray]:
    sides = space.__dict__.get("_sides")
    if sides is None:
        color = nx.bipartite.color(space.graph)
        left = np.array([color[space.nodes[v]] == 0 for v in range(space.n_nodes)])
        sides = (np.flatnonzero(left), np.flatnonzero(~left))
        space.__dict__["_sides"] = sides
    return sides


def matching_argmax(space: Matchings, q: LinearQuery) -> np.ndarray | None:
    """The heaviest (perfect, for ``space.perfect``) matching admitted by ``q``'s restrictions (``None``: none)."""
    w, res = q.weights, q.restrictions
    action = np.zeros(space.d, bool)
    used = np.zeros(space.n_nodes, bool)
    for k in res.include:
        u, v = space.tail[k], space.head[k]
        if used[u] or used[v]:
            return None
        used[u] = used[v] = True
        action[k] = True
    if res.empty and space.bipartite:
        chosen = _assignment(space, w, None, used)
        if chosen is None:
            return None
        action[chosen] = True
        return action
    allowed = ~(used[space.tail] | used[space.head])
    allowed[list(res.exclude)] = False
    if not space.perfect:
        allowed &= w > 0
    edges = np.flatnonzero(allowed)
    if space.bipartite:
        chosen = _assignment(space, w, edges, used)
    else:
        chosen = _blossom(space, w, edges)
    if chosen is None:
        return None
    action[chosen] = True
    if space.perfect and not space._contains(action):
        return None
    return action


def assignment_tables(space: Matchings) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Left/right node lists and each arm's (row, column) in the assignment matrix (cached)."""
    tables = space.__dict__.get("_assignment_tables")
    if tables is None:
        left, right = _bipartite_sides(space)
        pos = np.empty(space.n_nodes, np.intp)
        pos[left] = np.arange(len(left))
        pos[right] = np.arange(len(right))
        on_left = np.isin(space.tail, left)
        rows = np.where(on_left, pos[space.tail], pos[space.head])
        cols = np.where(on_left, pos[space.head], pos[space.tail])
        tables = (left, right, rows, cols)
        space.__dict__["_assignment_tables"] = tables
    return tables


def _assignment(space: Matchings, w: np.ndarray, edges: np.ndarray | None, used: np.ndarray) -> list[int] | None:
    """Heaviest (perfect) matching of the ``edges`` (None: all arms) avoiding ``used`` nodes."""
    left, right, rows, cols = assignment_tables(space)
    fill = np.inf if space.perfect else 0.0
    cost = np.full((len(left), len(right)), fill)
    arm = np.full((len(left), len(right)), -1)
    if edges is None:  # no restrictions: every arm, weights clipped at 0 unless perfect
        cost[rows, cols] = -w if space.perfect else -np.maximum(w, 0.0)
        arm[rows, cols] = np.arange(space.d)
    else:
        free_left, free_right = ~used[left], ~used[right]
        if space.perfect and free_left.sum() != free_right.sum():
            return None
        if not free_left.any() or not free_right.any():
            return []
        cost[rows[edges], cols[edges]] = -w[edges]
        arm[rows[edges], cols[edges]] = edges
        cost = cost[np.ix_(free_left, free_right)]
        arm = arm[np.ix_(free_left, free_right)]
    try:
        r, c = linear_sum_assignment(cost)
    except ValueError:  # no perfect assignment exists
        return None
    chosen = arm[r, c]
    chosen = chosen[chosen >= 0]
    if not space.perfect:
        chosen = chosen[w[chosen] > 0]
    return chosen.tolist()


def _blossom(space: Matchings, w: np.ndarray, edges: np.ndarray) -> list[int] | None:
    # for perfect matchings: the heaviest maximum-cardinality matching is the
    # heaviest perfect one when one exists (the caller checks perfection)
    graph = nx.Graph()
    for k in edges:
        graph.add_edge(int(space.tail[k]), int(space.head[k]), weight=float(w[k]), arm=int(k))
    matching = nx.max_weight_matching(graph, maxcardinality=space.perfect)
    return [graph.edges[u, v]["arm"] for u, v in matching]
