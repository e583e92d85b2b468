"""The tie rule's action on s-t paths of graphs with cycles, when no allowed arm has a positive weight.

The tie rule returns, among the optimal actions of a linear query, the one of least binary number
``sum_i 2^i x_i``. On a graph with cycles (directed or not) the heaviest simple s-t path is NP-hard in general,
but when every arm the restrictions leave has weight ``<= 0`` it is a shortest path, and the rule's action has
an exact polynomial answer in Python integers (the same on every machine):

**Exact costs.** Every ``float`` is a dyadic rational: with ``D`` the largest denominator of the weights,
``N_i = w_i D`` are integers (``N_i <= 0`` on the allowed arms). Let ``C_i = (-N_i) 2^(d + 1) + 2^i``. For a
set ``x`` of arms, ``C(x) = 2^(d + 1) (-D w(x)) + B(x)`` with ``0 < B(x) = sum_(i in x) 2^i < 2^d`` (for
``x`` nonempty). Two sets of different values differ in the first term by at least ``2^(d + 1) > 2^d``, more
than any difference of the second; two sets of equal value differ by ``B``, which differs between any two
different sets. So ``C`` orders sets by value (largest first), then by binary number (least first), and the
least ``C`` over a family of sets is attained once: at the rule's action of that family.

**No arm in** (:func:`least_path`): every ``C_i > 0``, so Dijkstra's shortest walk from ``s`` to ``t`` is a
simple path (a walk that repeats a node contains a closed walk of positive cost, and cutting it out leaves a
cheaper s-t walk), and its ``C`` is least among all simple s-t paths: the rule's action.

**One arm in, undirected** (:func:`least_path_through`). Let the arm be ``e = {u, v}`` (``u != v``). A simple
s-t path through ``e`` is ``P1 + e + P2`` with ``P1`` a path from ``s`` to one end of ``e`` and ``P2`` one from
the other end to ``t``, vertex-disjoint and without ``e``; conversely any two vertex-disjoint paths without ``e``
joining ``{s, t}`` to ``{u, v}`` (in either pairing: the graph is undirected) give such a simple path, and the
union of two disjoint paths determines them (its two components). So ``C(path) = C_e + C(P1) + C(P2)`` and
the rule's action is ``e`` plus the least-cost pair. That pair is a least-cost flow of 2 units in the
vertex-split network: each node ``x`` becomes ``x_in -> x_out`` (capacity 1, cost 0), each allowed edge
``{a, b} != e`` the arcs ``a_out -> b_in`` and ``b_out -> a_in`` (cost ``C``), a source feeds ``s_in`` and
``t_in`` and ``u_out``, ``v_out`` feed a sink (capacity 1 each, cost 0). The source's two arcs carry a unit
each, so ``s`` and ``t`` each start a path and no other path crosses them (capacity 1); likewise ``u`` and
``v`` each end one; ``s = u`` (or ``t = v``, ...) gives an empty path ``s_in -> s_out -> sink``. Every cycle of
the network uses an edge arc (the source has no arc in, the sink none out, the split arcs form no cycle), so
has positive cost: a least-cost flow has none and splits into two node-disjoint source-sink paths, the pair
above; and each such pair is a flow. The least-cost 2-unit flow is found exactly by two successive shortest
augmenting paths (Dijkstra on reduced costs with the first search's distances as potentials, integers).

Not ruled (``None``: the caller falls back): an allowed arm with weight ``> 0`` other than the one in, more than
one arm in, an arm in on a directed graph (two disjoint paths in a digraph is NP-hard), ``forbid_pairs``.
Spaces with side rows are other types and never reach here.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
>>> space = cm.STPaths(nx.cycle_graph(4), 0, 2)  # arms (0, 1), (0, 3), (1, 2), (2, 3): two paths, both free
>>> action, ruled = cyclic_path_ruled(space, LinearQuery(np.zeros(4), Restrictions()))
>>> action.nonzero()[0].tolist(), ruled  # binary numbers 0b0101 and 0b1010: the least holds arm 0
([0, 2], True)
>>> cyclic_path_ruled(space, LinearQuery(np.zeros(4), Restrictions(include=(3,))))[0].nonzero()[0].tolist()
[1, 3]
>>> cyclic_path_ruled(space, LinearQuery(np.array([0.5, 0.0, 0.0, 0.0]), Restrictions())) is None  # weight > 0
True
"""

from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from ...spaces import STPaths
from .queries import LinearQuery
from .ties_direct import ordered_integers

__all__ = ["cyclic_path_ruled", "exact_costs", "least_path", "least_path_through"]


def exact_costs(weights: list[float], allowed: list[bool]) -> list[int] | None:
    """``C_i = (-N_i) 2^(d + 1) + 2^i`` on the allowed arms (``N_i``: the weights scaled to exact integers by
    their largest denominator; 0 on the others); ``None`` when an allowed weight is ``> 0``.

    >>> exact_costs([-0.5, 0.0, -0.25], [True, True, True])
    [33, 2, 20]
    >>> exact_costs([-0.5, 0.75], [True, True]) is None, exact_costs([-0.5, 0.75], [True, False])
    (True, [9, 0])
    """
    if any(ok and w > 0.0 for w, ok in zip(weights, allowed, strict=True)):
        return None
    signed = ordered_integers([w if ok else 0.0 for w, ok in zip(weights, allowed, strict=True)])
    return [-x if ok else 0 for x, ok in zip(signed, allowed, strict=True)]  # C_i = -W_i


def _neighbours(space: STPaths) -> list[list[tuple[int, int]]]:
    """Per node, the ``(arm, node)`` pairs it can go to (both ways when undirected; self-loops left out; cached)."""
    table = space.__dict__.get("_ruled_neighbours")
    if table is None:
        table = [[] for _ in range(space.n_nodes)]
        for k, (a, b) in enumerate(zip(space.tail.tolist(), space.head.tolist(), strict=True)):
            if a == b:
                continue
            table[a].append((k, b))
            if not space.directed:
                table[b].append((k, a))
        space.__dict__["_ruled_neighbours"] = table
    return table


def least_path(space: STPaths, costs: list[int], allowed: list[bool]) -> np.ndarray | None:
    """The s-t path of least total ``costs`` (all ``> 0`` on the allowed arms) by Dijkstra; ``None``: no path."""
    n = space.n_nodes
    dist: list[int | None] = [None] * n
    via = [-1] * n
    prev = [-1] * n
    done = [False] * n
    s, t = space.s, space.t
    dist[s] = 0
    heap = [(0, s)]
    table = _neighbours(space)
    while heap:
        du, x = heappop(heap)
        if done[x]:
            continue
        done[x] = True
        if x == t:
            break
        for k, y in table[x]:
            if done[y] or not allowed[k]:
                continue
            dy = du + costs[k]
            old = dist[y]
            if old is None or dy < old:
                dist[y], via[y], prev[y] = dy, k, x
                heappush(heap, (dy, y))
    if not done[t]:
        return None
    action = np.zeros(space.d, bool)
    x = t
    while x != s:
        action[via[x]] = True
        x = prev[x]
    return action


def least_path_through(space: STPaths, costs: list[int], allowed: list[bool], arm: int) -> np.ndarray | None:
    """The simple s-t path through ``arm`` of least total ``costs`` (undirected graphs; all costs ``> 0`` on the
    allowed arms): ``arm`` plus the least-cost 2-unit flow of the module docstring; ``None``: no such path."""
    if space.directed:
        raise ValueError("least_path_through needs an undirected graph (two disjoint paths in a digraph: NP-hard)")
    u, v = int(space.tail[arm]), int(space.head[arm])
    if u == v or not allowed[arm]:
        return None
    n = space.n_nodes
    source, sink = 2 * n, 2 * n + 1
    to: list[int] = []  # arc j and j ^ 1 are each other's reverse
    cap: list[int] = []
    cost: list[int] = []
    label: list[int] = []  # the arm of an edge arc, -1 otherwise
    out: list[list[int]] = [[] for _ in range(2 * n + 2)]

    def add(a: int, b: int, c: int, k: int) -> None:
        out[a].append(len(to))
        out[b].append(len(to) + 1)
        to.extend((b, a))
        cap.extend((1, 0))
        cost.extend((c, -c))
        label.extend((k, -1))

    for x in range(n):
        add(2 * x, 2 * x + 1, 0, -1)
    for k, (a, b) in enumerate(zip(space.tail.tolist(), space.head.tolist(), strict=True)):
        if k != arm and a != b and allowed[k]:
            add(2 * a + 1, 2 * b, costs[k], k)
            add(2 * b + 1, 2 * a, costs[k], k)
    for x in (space.s, space.t):
        add(source, 2 * x, 0, -1)
    for x in (u, v):
        add(2 * x + 1, sink, 0, -1)
    potential = [0] * (2 * n + 2)
    for _ in range(2):
        dist, via = _reduced_dijkstra(out, to, cap, cost, potential, source)
        if dist[sink] is None:
            return None
        x = sink
        while x != source:
            j = via[x]
            cap[j] -= 1
            cap[j ^ 1] += 1
            x = to[j ^ 1]
        potential = [p + dx if dx is not None else p for p, dx in zip(potential, dist, strict=True)]
    action = np.zeros(space.d, bool)
    action[arm] = True
    for j in range(0, len(to), 2):
        if label[j] >= 0 and cap[j] == 0:
            action[label[j]] = True
    return action


def _reduced_dijkstra(out, to, cap, cost, potential, source) -> tuple[list[int | None], list[int]]:
    """Distances from ``source`` under the reduced costs ``cost + p(tail) - p(head)`` (``>= 0`` on the residual
    arcs between nodes reached before: successive shortest paths) and each node's arc in; ``None``: unreached."""
    dist: list[int | None] = [None] * len(out)
    via = [-1] * len(out)
    done = [False] * len(out)
    dist[source] = 0
    heap = [(0, source)]
    while heap:
        dx, x = heappop(heap)
        if done[x]:
            continue
        done[x] = True
        px = potential[x]
        for j in out[x]:
            if not cap[j]:
                continue
            y = to[j]
            if done[y]:
                continue
            dy = dx + cost[j] + px - potential[y]
            old = dist[y]
            if old is None or dy < old:
                dist[y], via[y] = dy, j
                heappush(heap, (dy, y))
    return dist, via


def cyclic_path_ruled(space: STPaths, q: LinearQuery) -> tuple[np.ndarray | None, bool] | None:
    """``(the rule's action, True)`` (action ``None``: no admitted path) for the queries of the module docstring;
    ``None`` for the others (not ruled: the caller answers them its usual way)."""
    res = q.restrictions
    if res.forbid_pairs or len(res.include) > 1 or (res.include and space.directed):
        return None
    weights = q.weights_list if q.weights_list is not None else q.weights.tolist()
    allowed = [True] * space.d
    for k in res.exclude:
        allowed[k] = False
    if res.include:
        arm = res.include[0]
        if not allowed[arm]:
            return None, True
        allowed[arm] = False  # its own weight may have any sign: every path here holds it
        costs = exact_costs(weights, allowed)
        if costs is None:
            return None
        allowed[arm] = True
        return least_path_through(space, costs, allowed, arm), True
    costs = exact_costs(weights, allowed)
    if costs is None:
        return None
    return least_path(space, costs, allowed), True
