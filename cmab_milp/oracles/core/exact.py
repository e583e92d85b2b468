"""The exact linear argmax of each structured space family: the algorithms under the ``combinatorial`` backend.

Solver-neutral (numpy, scipy, networkx): the ``combinatorial`` backend answers with them, and the MIP starts
(:mod:`~cmab_milp.oracles.mip.side_starts`) and norm methods (Glover's row bounds, the branch and bound on a
linear oracle) call them for starts and bounds, so they live below both. :data:`ALGORITHMS` maps a space's type
to its ``(space, LinearQuery) -> action | None`` function; the ``prepare_*`` functions fix one restriction for
many weights. The table of the ``combinatorial`` backend's module docstring says which algorithm each family gets.

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(4, 2)
>>> ALGORITHMS[type(space)](space, LinearQuery(np.array([0.3, -0.2, 0.9, 0.4]), Restrictions())).nonzero()[0].tolist()
[2, 3]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import linear_sum_assignment

from ...portable import selected_sums
from ...spaces import (
    ActionSpace,
    Cardinality,
    ExplicitActions,
    GraphicMatroid,
    Matchings,
    PartitionMatroid,
    SpanningTrees,
    STPaths,
)
from .exact_matchings import assignment_tables, matching_argmax
from .exact_paths import path_argmax
from .queries import LinearQuery, Restrictions

__all__ = ["ALGORITHMS", "Solver", "prepare_fractional_matching", "prepare_kruskal", "prepare_linear"]

Solver = Callable[[ActionSpace, LinearQuery], "np.ndarray | None"]


def _cardinality(space: Cardinality, q: LinearQuery) -> np.ndarray | None:
    w = q.weights
    res = q.restrictions
    d, m = space.d, space.m
    action = np.zeros(d, bool)
    if res.empty:
        if space.exact:
            top = np.argpartition(-w, m - 1)[:m]
        else:
            positive = np.flatnonzero(w > 0)
            if len(positive) <= m:
                action[positive] = True
                return action
            top = positive[np.argpartition(-w[positive], m - 1)[:m]]
        action[top] = True
        return action
    need = m - len(res.include)
    if need < 0:
        return None
    allowed = np.ones(d, bool)
    allowed[list(res.include)] = False
    allowed[list(res.exclude)] = False
    candidates = np.flatnonzero(allowed if space.exact else allowed & (w > 0))
    action[list(res.include)] = True
    if space.exact and len(candidates) < need:
        return None
    take = min(need, len(candidates))
    if take > 0:
        action[candidates[np.argsort(-w[candidates], kind="stable")[:take]]] = True
    return action


def _block_table(space: PartitionMatroid) -> np.ndarray:
    """Arms of each block as rows of a matrix padded with the dummy arm ``d`` (cached)."""
    table = space.__dict__.get("_block_table")
    if table is None:
        width = max(len(b) for b in space.blocks)
        table = np.full((len(space.blocks), width), space.d, dtype=np.intp)
        for k, block in enumerate(space.blocks):
            table[k, : len(block)] = block
        space.__dict__["_block_table"] = table
        space.__dict__["_capacities"] = np.asarray(space.capacities, dtype=np.intp)[:, None]
    return table


def _partition(space: PartitionMatroid, q: LinearQuery) -> np.ndarray | None:
    res = q.restrictions
    if res.empty and space.d <= 256:  # small spaces: plain Python beats a handful of numpy calls
        weights = q.weights.tolist()
        chosen: list[int] = []
        for block, cap in zip(space.blocks, space.capacities, strict=True):
            positive = [i for i in block if weights[i] > 0]
            if len(positive) > cap:
                positive = sorted(positive, key=weights.__getitem__, reverse=True)[:cap]
            chosen.extend(positive)
        action = np.zeros(space.d, bool)
        action[chosen] = True
        return action
    table = _block_table(space)
    room = space.__dict__["_capacities"]
    padded = np.append(q.weights, -np.inf)  # the dummy arm is never chosen
    action = np.zeros(space.d + 1, bool)
    if not res.empty:
        if res.include:
            inc = list(res.include)
            action[inc] = True
            room = room - action[table].sum(axis=1, keepdims=True)
            if (room < 0).any():
                return None
            padded[inc] = -np.inf  # already chosen
        if res.exclude:
            padded[list(res.exclude)] = -np.inf
    values = padded[table]
    order = np.argsort(-values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, order, axis=1)
    take = (ranked > 0) & (np.arange(table.shape[1]) < room)
    action[np.take_along_axis(table, order, axis=1)[take]] = True
    return action[: space.d]


def _edge_lists(space: GraphicMatroid | SpanningTrees) -> tuple[list[int], list[int]]:
    """The arms' end nodes as Python lists (cached): the union-find below indexes them a scalar at a time."""
    lists = space.__dict__.get("_edge_lists")
    if lists is None:
        lists = (space.tail.tolist(), space.head.tolist())
        space.__dict__["_edge_lists"] = lists
    return lists


def _root(parent: list[int], x: int) -> int:
    while parent[x] != x:  # path halving
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def prepare_kruskal(
    space: GraphicMatroid | SpanningTrees, restrictions: Restrictions, spanning: bool
) -> Callable[[np.ndarray], np.ndarray | None]:
    """Kruskal's algorithm under ``restrictions``, as a function of the weights: the included arms joined once, then
    each query's candidates (not excluded; forests: of positive weight) taken by decreasing weight (ties: by index)
    while they join two components. ``None`` when the included arms close a cycle or (spanning) no spanning tree
    is left. Plain Python lists, the union-find loop inlined, and a stop at ``n - 1`` arms (every later arm would
    close a cycle); the same action as the space's solver.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> argmax = prepare_kruskal(cm.SpanningTrees(nx.cycle_graph(4)), Restrictions(exclude=(0,)), spanning=True)
    >>> argmax(np.array([5.0, 1.0, 2.0, 3.0])).astype(int).tolist()  # edges 01 (out), 12, 23, 03 (order of the graph)
    [0, 1, 1, 1]
    """
    tail, head = _edge_lists(space)
    n = space.n_nodes
    parent = list(range(n))
    base = np.zeros(space.d, bool)
    for k in restrictions.include:
        ru, rv = _root(parent, tail[k]), _root(parent, head[k])
        if ru == rv:
            return lambda w: None  # included edges close a cycle
        parent[ru] = rv
        base[k] = True
    allowed = ~base
    allowed[list(restrictions.exclude)] = False
    taken = int(base.sum())

    def argmax(w: np.ndarray) -> np.ndarray | None:
        candidates = np.flatnonzero(allowed if spanning else allowed & (w > 0))
        action = base.copy()
        roots = parent.copy()
        count = taken
        for k in candidates[np.argsort(-w[candidates], kind="stable")].tolist():
            if count >= n - 1:
                break
            ru, rv = _root(roots, tail[k]), _root(roots, head[k])
            if ru != rv:
                roots[ru] = rv
                action[k] = True
                count += 1
        if spanning and count != n - 1:
            return None
        return action

    return argmax


def _kruskal(space: GraphicMatroid | SpanningTrees, q: LinearQuery, spanning: bool) -> np.ndarray | None:
    return prepare_kruskal(space, q.restrictions, spanning)(q.weights)


def _explicit(space: ExplicitActions, q: LinearQuery) -> np.ndarray | None:
    actions = space.actions
    values = selected_sums(actions, q.weights)  # arm order: the same bits on any CPU
    mask = q.restrictions.mask(actions)
    if mask is not None:
        if not mask.any():
            return None
        values = np.where(mask, values, -np.inf)
    return actions[int(np.argmax(values))].copy()


def _graphic(space: GraphicMatroid, q: LinearQuery) -> np.ndarray | None:
    return _kruskal(space, q, spanning=False)


def _trees(space: SpanningTrees, q: LinearQuery) -> np.ndarray | None:
    return _kruskal(space, q, spanning=True)


#: The exact algorithm of each space family, by the space's type.
ALGORITHMS: dict[type, Solver] = {
    Cardinality: _cardinality,
    PartitionMatroid: _partition,
    GraphicMatroid: _graphic,
    SpanningTrees: _trees,
    STPaths: path_argmax,
    Matchings: matching_argmax,
    ExplicitActions: _explicit,
}


def prepare_linear(space: ActionSpace, restrictions: Restrictions) -> Callable[[np.ndarray], np.ndarray | None]:
    """The exact linear argmax over the actions that ``restrictions`` (include / exclude) admit, as a function of
    the weights: what the space's solver answers on ``LinearQuery(w, restrictions)``, the same action.

    For many queries under one restriction (a branch-and-bound node): bipartite matchings compute the
    node's assignment sub-matrix once; other spaces call their solver.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> from cmab_milp.oracles.core.queries import Restrictions
    >>> argmax = prepare_linear(cm.Matchings(nx.complete_bipartite_graph(2, 2)), Restrictions(exclude=(0,)))
    >>> argmax(np.array([5.0, 1.0, 1.0, 1.0])).astype(int).tolist()
    [0, 1, 1, 0]
    """
    solver = ALGORITHMS[type(space)]
    if type(space) in (GraphicMatroid, SpanningTrees) and not restrictions.forbid_pairs:
        return prepare_kruskal(space, restrictions, spanning=type(space) is SpanningTrees)
    if type(space) is not Matchings or not space.bipartite or restrictions.forbid_pairs:
        return lambda w: solver(space, LinearQuery(w, restrictions))
    base = np.zeros(space.d, bool)
    used = np.zeros(space.n_nodes, bool)
    for k in restrictions.include:
        u, v = space.tail[k], space.head[k]
        if used[u] or used[v]:
            return lambda w: None
        used[u] = used[v] = True
        base[k] = True
    left, right, rows, cols = assignment_tables(space)
    table = space.__dict__.get("_assignment_arms")
    if table is None:
        table = np.full((len(left), len(right)), -1)
        table[rows, cols] = np.arange(space.d)
        space.__dict__["_assignment_arms"] = table
    if restrictions.empty:  # _assignment(edges=None): every arm, clipped at 0 unless perfect
        cell = table >= 0
        arm = np.where(cell, table, 0)
        free_left = free_right = None
    else:
        allowed = ~(used[space.tail] | used[space.head])
        allowed[list(restrictions.exclude)] = False
        free_left, free_right = ~used[left], ~used[right]
        if space.perfect and free_left.sum() != free_right.sum():
            return lambda w: None
        if not free_left.any() or not free_right.any():
            return lambda w: None if space.perfect and not space._contains(base) else base.copy()
        sub = table[np.flatnonzero(free_left)][:, np.flatnonzero(free_right)]
        cell = (sub >= 0) & allowed[np.where(sub >= 0, sub, 0)]
        arm = np.where(cell, sub, 0)
    fill = np.inf if space.perfect else 0.0

    def argmax(w: np.ndarray) -> np.ndarray | None:
        weights = w[arm]
        if space.perfect:
            take = cell
            cost = np.where(cell, -weights, fill)
        elif free_left is None:
            take = cell
            cost = np.where(cell, -np.maximum(weights, 0.0), fill)
        else:  # _matching drops the arms of weight <= 0 before the assignment
            take = cell & (weights > 0)
            cost = np.where(take, -weights, fill)
        try:
            r, c = linear_sum_assignment(cost)
        except ValueError:  # no perfect assignment exists
            return None
        chosen = arm[r, c][take[r, c]]
        if not space.perfect:
            chosen = chosen[w[chosen] > 0]
        action = base.copy()
        action[chosen] = True
        if space.perfect and not space._contains(action):
            return None
        return action

    return argmax


def prepare_fractional_matching(
    space: Matchings, restrictions: Restrictions
) -> Callable[[np.ndarray], np.ndarray | None]:
    """The argmax of ``w @ x`` over the fractional matching polytope of the actions ``restrictions`` admit.

    That polytope (``0 <= x <= 1``, ``x(delta(v)) <= 1``, ``= 1`` for perfect matchings; the include arms at 1 with
    their nodes, the exclude arms at 0) holds every admitted matching, so its maximum bounds theirs: a linear
    relaxation for the branch and bound of :mod:`~cmab_milp.oracles.norm.branch.minus`, exact where the graph is
    bipartite. Its vertices are half-integral, and its maximum is half the best assignment of the bipartite double
    cover (each node ``v`` split into ``v_out`` and ``v_in``, each edge ``uv`` into ``u_out v_in`` and ``v_out
    u_in``): ``x_e`` is half the number of ``e``'s two copies assigned: one ``linear_sum_assignment``, far cheaper than
    the blossom algorithm. Returns floats (0, 1/2 or 1), or ``None`` when no admitted point exists.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> from cmab_milp.oracles.core.queries import Restrictions
    >>> triangle = cm.Matchings(nx.cycle_graph(3))  # edges 01, 12, 02 (in that order)
    >>> prepare_fractional_matching(triangle, Restrictions())(np.ones(3)).tolist()  # a matching holds one
    [0.5, 0.5, 0.5]
    >>> prepare_fractional_matching(triangle, Restrictions(include=(1,)))(np.ones(3)).tolist()
    [0.0, 1.0, 0.0]
    """
    n, d = space.n_nodes, space.d
    base = np.zeros(d)
    used = np.zeros(n, bool)
    for k in restrictions.include:
        u, v = space.tail[k], space.head[k]
        if used[u] or used[v]:
            return lambda w: None
        used[u] = used[v] = True
        base[k] = 1.0
    allowed = ~(used[space.tail] | used[space.head])
    allowed[list(restrictions.exclude)] = False
    free = np.flatnonzero(~used)
    if space.perfect and len(free) and not allowed.any():
        return lambda w: None
    pos = np.full(n, -1)
    pos[free] = np.arange(len(free))
    edges = np.flatnonzero(allowed)
    u, v = pos[space.tail[edges]], pos[space.head[edges]]
    rows, cols = np.concatenate([u, v]), np.concatenate([v, u])
    arm = np.full((len(free), len(free)), -1)
    arm[rows, cols] = np.concatenate([edges, edges])
    cell = arm >= 0
    where = np.where(cell, arm, 0)

    def argmax(w: np.ndarray) -> np.ndarray | None:
        if not len(free):
            return base.copy()
        weights = w[where]
        if space.perfect:
            cost = np.where(cell, -weights, np.inf)
        else:
            take = cell & (weights > 0)
            cost = np.where(take, -weights, 0.0)
        try:
            r, c = linear_sum_assignment(cost)
        except ValueError:  # no fractional perfect matching
            return None
        picked = cell[r, c] if space.perfect else take[r, c]
        x = base.copy()
        np.add.at(x, arm[r, c][picked], 0.5)
        return x

    return argmax
