"""Hop limits tightened by parity: on a bipartite graph every s-t path has a length of one parity.

Colour the graph's nodes in two colours from ``s`` (breadth first, arcs taken either way). When no edge
joins two nodes of one colour, every s-t path alternates colours, so its number of edges is even exactly
when ``t`` has ``s``'s colour. A side row ``c @ a <= b`` (or ``>= b``) whose coefficient is an odd integer
on every arm some path may use (a hop limit: all ones) has ``c @ a`` of that same parity on every action,
so its bounds can be rounded inwards to that parity: ``at most 21 arcs`` on a 6x6 grid digraph (corner to
corner, every path even) becomes ``at most 20 arcs``. The actions are the same; the relaxations are
tighter (CP-SAT proved the bench's 6x6 hop-limited longest paths about twice as fast with the bound 20;
``docs/performance.md``, "Graphs").

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.spaces.formulation import Row
>>> grid = cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2))  # every path has 4, 6 or 8 edges
>>> hop = Row(tuple(range(grid.d)), (1.0,) * grid.d, -np.inf, 5.0)
>>> [(r.lb, r.ub) for r in tighten_by_parity(grid, [hop])]
[(-inf, 4.0)]
>>> path_parity(cm.STPaths(nx.cycle_graph(3), 0, 1)) is None  # an odd cycle: paths of either parity
True
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from ...spaces.formulation import Row

__all__ = ["path_parity", "tighten_by_parity"]

#: Bounds within this of an integer are read as that integer (the other backends' feasibility tolerance).
_SLACK = 1e-9


def path_parity(space) -> int | None:
    """The parity (0 or 1) of the number of edges of every s-t path of ``space`` (an ``STPaths``), or ``None``
    when the component of ``s`` is not bipartite or holds no ``t`` (no single parity).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> path_parity(cm.STPaths(nx.path_graph(4), 0, 3)), path_parity(cm.STPaths(nx.path_graph(4), 0, 2))
    (1, 0)
    """
    return space._memo("_path_parity", lambda: _parity(space))


def _parity(space) -> int | None:
    n = space.n_nodes
    near: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(space.tail.tolist(), space.head.tolist(), strict=True):
        near[u].append(v)
        near[v].append(u)
    colour = [-1] * n
    colour[space.s] = 0
    queue = deque([space.s])
    while queue:
        u = queue.popleft()
        for v in near[u]:
            if colour[v] < 0:
                colour[v] = 1 - colour[u]
                queue.append(v)
            elif colour[v] == colour[u]:
                return None  # an odd cycle in the component of s
    return None if colour[space.t] < 0 else colour[space.t]


def tighten_by_parity(space, rows: Sequence[Row]) -> list[Row]:
    """``rows`` with the bounds of each parity row rounded inwards to the paths' parity (see the module docstring).

    A row qualifies when it is over arm columns only and its coefficient is an odd integer on every arm
    outside ``space.unusable_arms()`` (arms in no s-t path); other rows, and every row when the graph has no
    single path parity (:func:`path_parity`), are returned as they are.
    """
    parity = path_parity(space)
    if parity is None:
        return list(rows)
    usable = ~space.unusable_arms()
    out = []
    for row in rows:
        out.append(_tightened(row, space.d, usable, parity) or row)
    return out


def _tightened(row: Row, d: int, usable: np.ndarray, parity: int) -> Row | None:
    if any(c >= d for c in row.cols) or not all(float(v).is_integer() for v in row.coefs):
        return None
    coef = np.zeros(d)
    np.add.at(coef, list(row.cols), list(row.coefs))
    if not (np.abs(coef[usable]) % 2 == 1).all():
        return None
    lb, ub = float(row.lb), float(row.ub)
    if math.isfinite(ub):
        top = math.floor(ub + _SLACK * (1.0 + abs(ub)))
        ub = float(top if top % 2 == parity else top - 1)
    if math.isfinite(lb):
        low = math.ceil(lb - _SLACK * (1.0 + abs(lb)))
        lb = float(low if low % 2 == parity else low + 1)
    if (lb, ub) == (float(row.lb), float(row.ub)):
        return None
    return Row(row.cols, row.coefs, lb, ub)
