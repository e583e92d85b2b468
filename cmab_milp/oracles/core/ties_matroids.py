"""The tie rule's action on matroids: one greedy pass, and exchanges when a near tie stops it.

The rule (:mod:`~cmab_milp.oracles.core.ties`): among the optimal actions, the one of least binary number
``sum_i 2^i x_i``, the optimum of the weights lowered by ``eps 2^i`` on arm ``i`` (``eps`` tiny). On a matroid
(cardinality, partition matroids, forests, spanning trees; ``include`` and ``exclude`` keep one: contraction
and deletion) those perturbed weights order the arms by decreasing weight, the lower arm first among equal
weights (``2^i`` grows with ``i``), and make every arm of weight 0 negative. So :func:`greedy` (that order;
arms of weight ``<= 0`` never taken on independent-set families, where actions need not be bases) returns
their unique optimum, the rule's action (the matroid greedy theorem; the perturbed weights are distinct).

On *bases* (spanning trees, ``Cardinality(exact=True)``) an optimal basis depends only on the order of the
arms, and the order is the one of the weights raised by ``eps 2^-i`` as well, so the rule's answer is the
same as the lexicographically largest optimum's there; on independent-set families (forests, cardinality
and partition capacities "at most") the arms of weight 0 are left out.

Example
-------
>>> greedy(Cardinality(4, 3), Restrictions(), [0.0, 0.9, 0.0, 0.5])  # weight 0: left out
[False, True, False, True]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...spaces import Cardinality, GraphicMatroid, PartitionMatroid, SpanningTrees
from .queries import Restrictions

__all__ = ["MATROIDS", "exchanges", "greedy"]

#: Spaces whose actions are the independent sets or bases of a matroid: settled by :func:`greedy`.
MATROIDS = (Cardinality, PartitionMatroid, GraphicMatroid, SpanningTrees)


def exchanges(space: Any, res: Restrictions, held: list[bool], order: list[int], classes: list[int]) -> list[bool]:
    """The rule's action from an optimum ``held``: moves that keep the value and lower the binary number, until none.

    ``order``: the open arms (ascending), ``classes[k]`` the class of ``order[k]`` (``-1``: weight 0). A move drops
    a held arm of weight 0, or exchanges an arm of a class for a higher-numbered held arm of the same class, while
    the action stays feasible. At the end no single addition, removal or exchange raises the perturbed value
    (the others change the exact value, downwards from an optimum, or raise the binary number), and on a matroid
    such a local optimum is the optimum (max-weight independent sets and bases: local optimality suffices).

    >>> exchanges(Cardinality(4, 2), Restrictions(), [False, True, False, True], [0, 1, 2, 3], [0, 0, 0, -1])
    [True, False, False, False]
    """
    current = list(held)
    members: dict[int, list[int]] = {}
    for arm, c in zip(order, classes, strict=True):
        members.setdefault(c, []).append(arm)

    def feasible(trial: list[bool]) -> bool:
        action = np.array(trial)
        return res.admits(action) and bool(space._contains(action))

    moved = True
    while moved:
        moved = False
        for arm, c in zip(order, classes, strict=True):
            trial = list(current)
            if current[arm]:
                trial[arm] = False
                if c < 0 and feasible(trial):  # an arm of weight 0 dropped
                    current, moved = trial, True
                continue
            trial[arm] = True
            for other in reversed(members[c]):
                if other <= arm:
                    break
                if current[other]:
                    trial[other] = False
                    if feasible(trial):
                        current, moved = trial, True
                        break
                    trial[other] = True
    return current


def _independence(space: Any) -> Any:
    """A function ``add(arm)``: whether ``arm`` keeps the held arms independent in ``space``'s matroid (then held)."""
    if type(space) is Cardinality:
        count = [0]

        def add(arm: int) -> bool:
            count[0] += 1
            return count[0] <= space.m

        return add
    if type(space) is PartitionMatroid:
        room = list(space.capacities)
        block_of = space.block_of.tolist()

        def add(arm: int) -> bool:
            room[block_of[arm]] -= 1
            return room[block_of[arm]] >= 0

        return add
    parent = list(range(space.n_nodes))  # forests: union-find over the graph's nodes
    tail, head = space.tail.tolist(), space.head.tolist()

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def add(arm: int) -> bool:
        u, v = find(tail[arm]), find(head[arm])
        if u == v:
            return False
        parent[u] = v
        return True

    return add


def greedy(space: Any, res: Restrictions, weights: list[float]) -> list[bool] | None:
    """The rule's action on a matroid in one pass: the greedy over arms by decreasing weight, lower arm first.

    The arms of ``res.include`` come first (a contraction is a matroid), those of ``res.exclude`` never; arms of
    weight ``<= 0`` only where actions are bases. ``None`` when an included arm is dependent. The caller checks
    the result (feasible, the answer's nonzero weights).

    >>> greedy(Cardinality(4, 2), Restrictions(), [0.5, 0.9, 0.5, 0.5])
    [True, True, False, False]
    """
    add = _independence(space)
    bases = type(space) is SpanningTrees or (type(space) is Cardinality and space.exact)
    held = [False] * len(weights)
    for arm in res.include:
        if not add(arm):
            return None
        held[arm] = True
    excluded = set(res.exclude)
    for arm in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        if weights[arm] <= 0.0 and not bases:
            break
        if not held[arm] and arm not in excluded and add(arm):
            held[arm] = True
    return held
