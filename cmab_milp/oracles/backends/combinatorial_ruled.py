"""The ``combinatorial`` algorithms with a certificate: whether their answer already is the tie rule's action.

The one tie rule (:mod:`~cmab_milp.oracles.core.ties`, ``ties="classes"``) returns, among the optimal actions, the
one of least binary number ``sum_i 2^i x_i`` (the optimum of the weights lowered by ``eps 2^i`` on arm ``i``).
Checking that a backend's answer already is that action costs a look at every weight (a ``set`` of ``d`` floats, a
visible share of a microsecond answer: ``docs/guide/reproducibility.md``). The algorithms here know it from the
work they do anyway, and say so (``(action, ruled)``; ``ruled`` False: the rule settles it as usual):

* **sorts and matroid greedies** (cardinality, partition matroids, forests, spanning trees): a stable greedy
  by decreasing weight takes the lower arm first among equal weights and, where actions need not be bases,
  only arms of positive weight: the rule's action on a matroid (the perturbed weights order the arms that
  way and make the arms of weight 0 negative; :mod:`~cmab_milp.oracles.core.ties_matroids`), whatever the
  zeros. Cardinality's ``argpartition`` (not stable) is proven when the ``m``-th and ``(m + 1)``-th largest
  weights differ (the top set is then the only optimum), or when at most ``m`` weights are positive (all of
  them); otherwise the stable greedy answers, the rule's action itself;
* **longest paths in a DAG**: each node of the answer's path beats the runner-up way into it by more than
  the dynamic programme's rounding bound, so every other path is worse in exact arithmetic (a unique optimum);
* **matchings**: the assignment solver gives no runner-up; the answer is kept when it holds no arm of weight
  0 and no arm it leaves out has the weight of an arm it holds (then its only open arms are arms of weight 0
  it leaves out, and every other candidate adds some: a larger binary number), one numpy comparison of the
  held weights against all weights. For ``ties="exact"`` no cheap dual certificate exists
  here (``linear_sum_assignment`` returns no potentials): the shifted solve of ``ties._unique`` (held arms down
  by ``delta``, others up: it returns the answer only when no other action is within the tolerance) runs on
  the cached layout, one more assignment without the generic path's Python shifting.

For ``ties="exact"`` the flag is a certificate instead of ``True`` where the work done proves more: that every
other action is below the answer by more than :func:`~cmab_milp.oracles.core.ties_unique.exact_margin`
(cardinality and partition matroids: the gaps of the sorted weights; forests and spanning trees: distinct
weights beyond it; DAG paths: the margins beyond it; bipartite matchings: the shifted solve, on the cached
layout), so the generic shifted solve is skipped (:mod:`~cmab_milp.oracles.core.ties_unique`; called only
under ``"exact"``).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
>>> space = cm.Cardinality(4, 2)
>>> action, ruled = RULED[cm.Cardinality](space, LinearQuery(np.array([0.5, 0.9, 0.5, 0.1]), Restrictions()))
>>> action.nonzero()[0].tolist(), ruled  # 0.5 twice at the boundary: the stable greedy, lower arm first
([0, 1], True)
>>> certificate = RULED[cm.Cardinality](space, LinearQuery(np.array([0.5, 0.9, 0.4, 0.1]), Restrictions()))[1]
>>> bool(certificate), certificate()  # the rule's action, and for ties="exact" the only one within 0.1
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import linear_sum_assignment

from ...spaces import ActionSpace, Cardinality, GraphicMatroid, Matchings, PartitionMatroid, SpanningTrees, STPaths
from ..core.dag_programme import dag_tables, longest_from, waypoints
from ..core.exact import ALGORITHMS, prepare_kruskal
from ..core.exact_matchings import assignment_tables
from ..core.paths_ruled import cyclic_path_ruled
from ..core.queries import LinearQuery
from ..core.ties_unique import exact_margin, sorted_gap

__all__ = ["RULED", "Ruled"]

Ruled = Callable[[ActionSpace, LinearQuery], "tuple[np.ndarray | None, bool]"]

_EPS = float(np.finfo(float).eps)
#: Up to this many arms a cardinality query is answered by Python's (stable) sort, cheaper there than numpy's
#: ``argpartition`` (``docs/guide/reproducibility.md``, "What it costs"), and the rule's action itself.
_SORTED_UP_TO = 64


def _cardinality(space: Cardinality, q: LinearQuery) -> tuple[np.ndarray | None, bool]:
    """The rule's greedy itself (a stable sort, lower arm first among equal weights) for short vectors, under
    restrictions, and where ``argpartition`` (longer vectors) cannot prove its top ``m`` unique (the ``m``-th and
    ``(m + 1)``-th weights equal)."""
    w, res = q.weights, q.restrictions
    d, m = space.d, space.m
    action = np.zeros(d, bool)
    weights = q.weights_list
    if res.empty and weights is not None and d <= _SORTED_UP_TO:  # short: the greedy itself, in Python
        order = sorted(range(d), key=weights.__getitem__, reverse=True)  # stable: lower arm first
        chosen = order[:m] if space.exact else [i for i in order[:m] if weights[i] > 0.0]
        action[chosen] = True

        def unique() -> bool:  # the gaps of the sorted weights (ties_unique.sorted_gap), for ties="exact"
            total = d * max(abs(weights[order[0]]), abs(weights[order[-1]]))  # >= sum |w|
            ranked = [weights[i] for i in order[: m + 1]]  # sorted_gap reads no further
            return sorted_gap(ranked, m, space.exact) > exact_margin(total, d)

        return action, unique
    if res.empty and 0 < m < d:
        if space.exact:
            top = _top(w, None, m, action, w if q.weights_list is None else q.weights_list)
        else:
            positive = np.flatnonzero(w > 0)
            if len(positive) <= m:  # all positive arms (the rule leaves out those of weight 0): its action
                action[positive] = True
                return action, True
            top = _top(w[positive], positive, m, action, w if q.weights_list is None else q.weights_list)
        if top[1] > 0.0:  # the m-th largest weight beats the (m + 1)-th: the only optimum
            gap = top[1]  # also the gap to every other action (ties_unique.sorted_gap; the (m + 1)-th is positive)
            return top[0], lambda: gap > exact_margin(float(np.abs(w).sum()), d)
        action[:] = False
    return _stable_greedy(space, q, action), True


def _stable_greedy(space: Cardinality, q: LinearQuery, action: np.ndarray) -> np.ndarray | None:
    """The rule's action on a cardinality space: the included arms, then the allowed arms by decreasing weight
    (lower arm first among equal ones; arms of weight ``<= 0`` only when exactly ``m`` are held)."""
    w, res = q.weights, q.restrictions
    need = space.m - len(res.include)
    if need < 0:
        return None
    allowed = np.ones(space.d, bool)
    allowed[list(res.include)] = False
    allowed[list(res.exclude)] = False
    candidates = np.flatnonzero(allowed if space.exact else allowed & (w > 0))
    if space.exact and len(candidates) < need:
        return None
    action[list(res.include)] = True
    action[candidates[np.argsort(-w[candidates], kind="stable")[:need]]] = True
    return action


def _top(
    values: np.ndarray, arms: np.ndarray | None, m: int, action: np.ndarray, weights: list[float] | np.ndarray
) -> tuple[np.ndarray, float]:
    """The ``m`` largest ``values`` held (``arms``: their arms, ``None``: the identity), and by how much the
    ``m``-th largest beats the ``(m + 1)``-th (positive: no other ``m`` values sum as high, the only optimum).

    One ``argpartition`` at ``m`` (the ``m`` largest before position ``m``, the ``(m + 1)``-th at it); the
    comparison on ``weights``, all the query's weights (a list for short vectors).
    """
    head = np.argpartition(-values, m)[: m + 1]
    if arms is not None:
        head = arms[head]
    ranked = [weights[i] for i in head.tolist()] if type(weights) is list else weights[head].tolist()
    action[head[:m]] = True
    return action, min(ranked[:m]) - ranked[m]


def _partition(space: PartitionMatroid, q: LinearQuery) -> tuple[np.ndarray | None, bool]:
    """Per block, the positive arms by decreasing weight (a stable sort): the rule's action, whatever the zeros.

    Unrestricted (up to 256 arms: plain Python, as the plain algorithm), each block is sorted whole, which gives
    the certificate for ``ties="exact"``: each block's gap (:func:`~.ties_unique.sorted_gap`, at most its
    capacity) beyond the margin. The blocks are independent: another action is below the answer by the sum of
    its blocks' shortfalls, each ``>= 0``, and one block at least differs (its gap or more).
    """
    weights = q.weights_list
    if not (q.restrictions.empty and space.d <= 256):
        return ALGORITHMS[PartitionMatroid](space, q), True  # a stable greedy over the positive arms too
    if weights is None:
        weights = q.weights.tolist()
    orders = [sorted(block, key=weights.__getitem__, reverse=True) for block in space.blocks]
    chosen: list[int] = []
    held: list[int] = []
    for order, cap in zip(orders, space.capacities, strict=True):
        taken = [i for i in order[:cap] if weights[i] > 0.0]
        chosen.extend(taken)
        held.append(len(taken))
    action = np.zeros(space.d, bool)
    action[chosen] = True

    def unique() -> bool:  # each block's sorted_gap, read at its boundary (k held of at most cap)
        gap = low = float("inf")
        for order, cap, k in zip(orders, space.capacities, held, strict=True):
            if k:
                low = weights[order[k - 1]]  # dropping the lowest held weight
                if low < gap:
                    gap = low
            if k < len(order):
                step = low - weights[order[k]] if k == cap else -weights[order[k]]  # a swap, or an arm added
                if step < gap:
                    gap = step
            low = float("inf")
        return gap > exact_margin(sum(map(abs, weights)), space.d)

    return action, unique


def _kruskal(space: GraphicMatroid | SpanningTrees, q: LinearQuery) -> tuple[np.ndarray | None, bool]:
    """Kruskal's stable greedy (forests: over the positive arms): the rule's action, whatever the zeros.

    The certificate for ``ties="exact"``: the sorted weights (with 0 among them, for forests) differ pairwise by
    more than the margin. Then every exchange of the answer (a tree arm ``e`` on the cycle a left-out arm ``f``
    closes: ``w_e > w_f``) loses more than it, and so does dropping a held arm (``w_e > 0``) or adding a left-out
    one of weight ``<= 0``; another action differs from the answer by such moves, each losing (Brualdi's
    bijection between two bases of a matroid; for forests, restrict to the positive arms and extend).
    """
    spanning = type(space) is SpanningTrees
    w = q.weights
    action = prepare_kruskal(space, q.restrictions, spanning)(w)
    if action is None:
        return action, True

    def unique() -> bool:
        ranked = np.sort(w if spanning else np.append(w, 0.0))
        gap = float((ranked[1:] - ranked[:-1]).min(initial=np.inf))
        return gap > exact_margin(len(ranked) * max(-float(ranked[0]), float(ranked[-1])), space.d)  # >= sum |w|

    return action, unique


def _incoming(space: STPaths) -> list[list[tuple[int, int]]]:
    """Per node, its incoming ``(arm, tail)`` pairs (cached)."""
    table = space.__dict__.get("_incoming_arms")
    if table is None:
        table = [[] for _ in range(space.n_nodes)]
        for k, (u, v) in enumerate(zip(space.tail.tolist(), space.head.tolist(), strict=True)):
            table[v].append((k, u))
        space.__dict__["_incoming_arms"] = table
    return table


def _dag_path(space: STPaths, q: LinearQuery) -> tuple[np.ndarray | None, bool]:
    """The longest path by segments between included arms, each with its margin certificate.

    A segment's dynamic programme keeps each node's best value and the arm it came by; then, at each node
    ``v`` of the traced segment, the runner-up way in (the best value over ``v``'s other allowed incoming
    arms) must be below ``v``'s value by more than ``tau = 4 (n + 1) eps sum |w|``: each value is a float
    sum of at most ``n`` terms, within ``1.01 n eps sum |w|`` of the exact value of the path it traces,
    and of the exact best path's value to that node. Then any other path (it leaves the answer's path
    for good at some node, arriving by another arm) is worse in exact arithmetic: the answer is the only
    optimum, hence the rule's action.
    """
    if not space.acyclic:  # weights <= 0 (at most one edge in, undirected): exact integers (paths_ruled.py)
        ruled = cyclic_path_ruled(space, q)
        return ruled if ruled is not None else (ALGORITHMS[STPaths](space, q), False)
    w, res = q.weights, q.restrictions
    rank, edges = dag_tables(space)
    banned = set(res.exclude)
    segments, action = waypoints(space, res.include, rank)
    weights = q.weights_list if q.weights_list is not None else w.tolist()
    total = float(np.add.reduce(np.abs(w)))
    tau = 4.0 * (space.n_nodes + 1) * _EPS * total
    incoming = _incoming(space)
    closest = -float("inf")  # the largest (runner-up way in - node's value) over the answer's nodes
    for a, b in segments:
        if rank[a] > rank[b]:
            return None, True
        segment = _segment(edges, weights, banned, rank, a, b, space.n_nodes, space.tail, incoming, tau)
        if segment is None:
            return None, True
        path, excess = segment
        closest = max(closest, excess)
        action[path] = True
    if closest >= -tau:
        return action, False
    # ties="exact": every other path leaves the answer's for good at some node, by a way in below the node's
    # value by more than -closest - tau in exact arithmetic: the gap to every other path (ties_unique.py)
    return action, lambda: -closest - tau > exact_margin(total, space.d)


def _segment(edges, weights, banned, rank, a, b, n_nodes, tail, incoming, tau) -> tuple[list[int], float] | None:
    """Longest a-b path (the dynamic programme of :mod:`~cmab_milp.oracles.core.exact_paths`) and its certificate:
    the largest excess of a runner-up way in over its node's value (``>= -tau``: not proven; then not exact)."""
    if a == b:
        return [], -float("inf")
    lo = rank[a]
    best, via = longest_from(edges, weights, banned, rank, a, b, n_nodes, 0.0)
    if best[b] is None:
        return None
    path, v = [], b
    excess = -float("inf")
    while v != a:
        k = via[v]
        path.append(k)
        if excess < -tau:
            here = best[v]
            for other, u in incoming[v]:
                bu = best[u]
                if other == k or bu is None or other in banned or rank[u] < lo:
                    continue
                gain = bu + weights[other] - here
                if gain > excess:
                    excess = gain
                    if gain >= -tau:  # a way in as good, up to rounding: not proven
                        break
        v = int(tail[k])
    return path, excess


def _matching(space: Matchings, q: LinearQuery) -> tuple[np.ndarray | None, bool]:
    """The heaviest matching, kept when it holds no arm of weight 0 and each held weight is held by one arm only.

    Then each class it holds, it holds whole, and its only open arms are arms of weight 0 it leaves out: every
    other candidate holds some of them too, a larger binary number, so the rule keeps it. One comparison of
    every weight with the held ones (``np.equal.outer``): the count is the number held exactly then.
    Unrestricted queries on bipartite graphs solve the assignment on a cached layout of the arms (one gather
    of the weights); others the combinatorial backend's algorithm.
    """
    w, res = q.weights, q.restrictions
    weights = q.weights_list if q.weights_list is not None else w.tolist()
    if res.empty and space.bipartite:
        chosen = _free_assignment(space, w, weights)
        if chosen is None:
            return None, True
        action = np.zeros(space.d, bool)
        action[chosen] = True
    else:
        action = ALGORITHMS[Matchings](space, q)
        if action is None:
            return action, True
        chosen = np.flatnonzero(action).tolist()
    probe = [weights[k] for k in chosen]
    if 0.0 in probe or int(np.count_nonzero(np.equal.outer(w, probe))) != len(chosen):
        return action, False
    if not (res.empty and space.bipartite):
        return action, True

    def unique() -> bool:  # ties="exact": the shifted solve of ties._unique, on the cached layout
        delta = 1e-6 * (1.0 + abs(sum(probe)))
        shifted = w + np.where(action, -delta, delta)
        again = _free_assignment(space, shifted, shifted)
        return again is not None and sorted(again) == sorted(chosen)

    return action, unique


def _layout(space: Matchings) -> tuple[np.ndarray, np.ndarray | None]:
    """Each assignment cell's arm (``-1``: no edge) and the mask of edges (``None``: every cell is one), cached."""
    layout = space.__dict__.get("_ruled_layout")
    if layout is None:
        left, right, rows, cols = assignment_tables(space)
        arm = np.full((len(left), len(right)), -1)
        arm[rows, cols] = np.arange(space.d)
        layout = (arm, None if (arm >= 0).all() else arm >= 0)
        space.__dict__["_ruled_layout"] = layout
    return layout


def _free_assignment(space: Matchings, w: np.ndarray, weights: list[float]) -> list[int] | None:
    """The arms of the heaviest (perfect, for ``space.perfect``) matching of a bipartite graph (``None``: none)."""
    arm, edges = _layout(space)
    gain = w[arm]  # a missing edge gathers arm -1's weight: replaced below
    if space.perfect:
        cost = -gain if edges is None else np.where(edges, -gain, np.inf)
    else:
        cost = -np.maximum(gain, 0.0) if edges is None else np.where(edges, -np.maximum(gain, 0.0), 0.0)
    try:
        r, c = linear_sum_assignment(cost)
    except ValueError:  # no perfect assignment exists
        return None
    picked = arm[r, c].tolist()
    if space.perfect:
        if len(picked) != min(arm.shape) or -1 in picked or 2 * len(picked) != space.n_nodes:
            return None
        return picked
    return [k for k in picked if k >= 0 and weights[k] > 0]


#: The algorithms above, by the space's type (others: the plain algorithm, nothing proven).
RULED: dict[type, Ruled] = {
    Cardinality: _cardinality,
    PartitionMatroid: _partition,
    GraphicMatroid: _kruskal,
    SpanningTrees: _kruskal,
    STPaths: _dag_path,
    Matchings: _matching,
}
