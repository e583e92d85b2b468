"""Rows every s-t path satisfies, found at an LP point, and the fewest arms of a path.

:func:`component_cuts` separates connectivity rows without a max flow: a component ``S`` of the support of
an LP point ``x`` (its edges above a threshold) that holds neither ``s`` nor ``t`` gives
``x(delta(S)) >= x(delta(v))`` for a node ``v`` of ``S`` (directed: ``x(delta_in(S)) >= x(delta_in(v))``,
``s`` not in ``S``): a path through ``v`` enters ``S`` and leaves it, so every path satisfies the row and
adding it never cuts an action off. :func:`shortest_length` is the fewest arms of an s-t path avoiding
some arms (a lower bound on the size of every action there; the chord form of :mod:`.paths.chord` uses it).

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> shortest_length(cm.STPaths(nx.cycle_graph(5), 0, 2), np.arange(5))  # 0-1-2
2
"""

from __future__ import annotations

import numpy as np

from ....spaces import STPaths
from ....spaces.formulation import Row
from ...mip.graph_starts import PathStarts

__all__ = ["component_cuts", "shortest_length"]

#: A space row enters when the LP point violates it by more than this.
_CUT_VIOLATION = 1e-6
#: Support thresholds of :func:`component_cuts`.
_THRESHOLDS = (1e-6, 0.1, 0.3, 0.5, 0.7, 0.9)


def component_cuts(space: STPaths, x: np.ndarray) -> list[Row]:
    """Connectivity rows violated at ``x`` by a component of its support at a few thresholds (no max flow).

    A component ``S`` of the edges with ``x > theta`` that holds neither ``s`` nor ``t`` (directed: that ``s``
    does not reach) gives ``x(delta(S)) >= x(delta(v))`` (directed ``x(delta_in(S)) >= x(delta_in(v))``) for
    its node ``v`` of largest degree: a path through ``v`` enters ``S`` and leaves it (the rows of
    :func:`~cmab_milp.oracles.mip.graph_cuts.separate_connectivity_lp`).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 2)
    >>> x = np.zeros(space.d)
    >>> x[[space.arms.index(e) for e in [(0, 1), (1, 2), (3, 4), (4, 7), (6, 7), (3, 6)]]] = 1.0  # a path, a square
    >>> [(r.cols, r.coefs, r.lb) for r in component_cuts(space, x)]  # a(delta(S)) >= a(delta(3)), S the square
    [((2, 5, 6, 8, 11), (1.0, -1.0, -1.0, 1.0, 1.0), 0.0)]
    """
    x = np.clip(np.asarray(x, float), 0.0, 1.0)
    n, tail, head, s, t, directed = space.n_nodes, space.tail, space.head, space.s, space.t, space.directed
    into = np.bincount(head, weights=x, minlength=n)
    need = into if directed else into + np.bincount(tail, weights=x, minlength=n)
    rows: list[Row] = []
    seen: set[bytes] = set()
    for _theta, comp, kept in _support_components(n, tail, head, x):
        outside = np.ones(n, bool)
        if directed:  # the nodes s reaches along kept arcs are inside
            out: list[list[int]] = [[] for _ in range(n)]
            for e in kept:
                out[tail[e]].append(int(head[e]))
            stack, outside[s] = [s], False
            while stack:
                for w in out[stack.pop()]:
                    if outside[w]:
                        outside[w] = False
                        stack.append(w)
        else:
            outside[comp == comp[s]] = outside[comp == comp[t]] = False
        for c in np.unique(comp[outside & (need > 1e-6)]):
            mask = (comp == c) & outside
            key = mask.tobytes()
            if key in seen:
                continue
            seen.add(key)
            v = int(np.flatnonzero(mask)[np.argmax(need[mask])])
            if directed:
                coef = (~mask[tail] & mask[head]).astype(float) - (head == v)
            else:
                coef = (mask[tail] != mask[head]).astype(float) - ((tail == v) | (head == v))
            cols = np.flatnonzero(coef)
            if float(coef[cols] @ x[cols]) < -_CUT_VIOLATION:
                rows.append(Row(tuple(cols.tolist()), tuple(coef[cols].tolist()), 0.0, np.inf))
    return rows


def _support_components(n: int, tail: np.ndarray, head: np.ndarray, x: np.ndarray):
    """``(theta, component label per node, edges kept)`` for each threshold of :data:`_THRESHOLDS` that keeps other
    edges than the next larger one, ascending:
    the components of the edges with ``x > theta`` (undirected), by one union-find pass over the edges in
    decreasing ``x``."""
    order = np.argsort(-x, kind="stable").tolist()
    parent = list(range(n))
    tails, heads, xs = tail.tolist(), head.tolist(), x.tolist()

    def find(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    out, k = [], 0
    for theta in sorted(_THRESHOLDS, reverse=True):
        while k < len(order) and xs[order[k]] > theta:
            ru, rv = find(tails[order[k]]), find(heads[order[k]])
            if ru != rv:
                parent[ru] = rv
            k += 1
        if not out or k != len(out[-1][2]):  # (the same edges as the previous threshold: skipped)
            out.append((theta, np.array([find(v) for v in range(n)]), order[:k]))
    return out[::-1]


def shortest_length(space: STPaths, arms: np.ndarray) -> int:
    """The fewest arms of an s-t path of ``space`` on ``arms`` (0 when there is none): a lower bound on the size of
    every action that avoids the other arms.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)  # 0-1-2 or 0-4-3-2
    >>> shortest_length(space, np.arange(5)), shortest_length(space, np.array([1, 3, 4]))  # arms: (0, 1), (0, 4), ...
    (2, 3)
    """
    ban = np.ones(space.d, bool)
    ban[np.asarray(arms, int)] = False
    path = PathStarts.of(space)._shortest(np.ones(space.d), ban, space.directed)
    return 0 if path is None else int(np.count_nonzero(path))


def _violation(row: Row, x: np.ndarray) -> float:
    value = float(np.dot(row.coefs, x[list(row.cols)]))
    return max(row.lb - value, value - row.ub, 0.0)
