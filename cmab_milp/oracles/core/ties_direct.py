"""The tie rule's action in one exact solve, where the space allows it: bipartite matchings and paths in a DAG.

:func:`~cmab_milp.oracles.core.ties.first_optimum` settles a tied answer ``a`` by searching the candidates
(``a``'s class counts on its open arms) or, past its budget, by one restricted solve per open arm. On
bipartite matchings and DAG paths one exact solve does it instead. Every ``float`` is a dyadic rational, so
the weights scaled by their largest denominator are integers ``N_i``; the weights

    ``W_i = N_i 2^(d+1) - 2^i``

(Python integers, exact) order actions by value first (a value step is at least ``2^(d+1)``, more than all
the second terms together, ``2^d - 1``) and, among equal values, by least binary number ``sum_i 2^i x_i``
(the weights lowered by ``eps 2^i``, with ``eps = 2^-(d+1)`` after scaling). Their optimum ``x`` is the one
of least binary number among the actions of largest *exact* value (:func:`lexicographic_matching`: the
Hungarian algorithm on integers; :func:`lexicographic_path`: the dynamic programme on integers; the names
say the order: the binary number compares the 0/1 vectors read from the highest arm). The rule's action ``r``
is the one of least binary number among the candidates, actions with ``a``'s value. If ``x`` is a candidate
(the caller checks it: ``a``'s arms off the open ones, ``a``'s count of each class), then ``a`` is exactly
optimal, every candidate is among the actions ``x`` was chosen from, and so ``x = r``. Otherwise (a sum of
different weights ties: assumption (B) of the rule fails) the caller searches as before.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.core.queries import Restrictions
>>> space = cm.Matchings(nx.complete_bipartite_graph(2, 2))  # arms (0, 2), (0, 3), (1, 2), (1, 3)
>>> lexicographic_matching(space, [1.0, 1.0, 1.0, 1.0], Restrictions()).tolist()  # arms {1, 2}: 6 < 9 ({0, 3})
[False, True, True, False]
"""

from __future__ import annotations

import numpy as np

from ...spaces import Matchings, STPaths
from .dag_programme import dag_tables, longest_from, waypoints
from .exact_matchings import assignment_tables
from .queries import Restrictions

__all__ = ["lexicographic_matching", "lexicographic_path", "ordered_integers"]


def ordered_integers(weights: list[float]) -> list[int]:
    """``W_i = N_i 2^(d+1) - 2^i``: the weights as exact integers, then the least binary number.

    >>> ordered_integers([0.5, 0.25, 0.0])
    [31, 14, -4]
    """
    ratios = [w.as_integer_ratio() for w in weights]  # exact; each denominator a power of 2
    scale = max((den for _, den in ratios), default=1)
    step = len(weights) + 1
    return [(num * (scale // den) << step) - (1 << i) for i, (num, den) in enumerate(ratios)]


def _hungarian(cost: list[list[int]], n: int, m: int, big: int) -> list[int]:
    """The column of each row in a least-cost assignment of ``n <= m`` rows (integers, exact; potentials method)."""
    u = [0] * (n + 1)
    v = [0] * (m + 1)
    p = [0] * (m + 1)  # p[j]: the row (1-based) assigned to column j; 0 none
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [big] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            row = cost[i0 - 1]
            ui = u[i0]
            delta, j1 = big, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = row[j - 1] - ui - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    column = [0] * n
    for j in range(1, m + 1):
        if p[j]:
            column[p[j] - 1] = j - 1
    return column


def lexicographic_matching(space: Matchings, weights: list[float], res: Restrictions) -> np.ndarray | None:
    """The one of least binary number among the (perfect, for ``space.perfect``) matchings of largest exact value
    that ``res`` admits (include and exclude; ``None``: none). Bipartite graphs only; one integer assignment."""
    left, right, rows, cols = assignment_tables(space)
    tail, head = space.tail.tolist(), space.head.tolist()
    used: set[int] = set()
    action = np.zeros(space.d, bool)
    for k in res.include:
        if tail[k] in used or head[k] in used:
            return None
        used.update((tail[k], head[k]))
        action[k] = True
    free_rows = [r for r, node in enumerate(left.tolist()) if node not in used]
    free_cols = [c for c, node in enumerate(right.tolist()) if node not in used]
    if space.perfect and len(free_rows) != len(free_cols):
        return None
    if not free_rows or not free_cols:
        return action if not space.perfect or space._contains(action) else None
    values = ordered_integers(weights)
    excluded = set(res.exclude)
    row_at = {r: i for i, r in enumerate(free_rows)}
    col_at = {c: j for j, c in enumerate(free_cols)}
    gain: dict[tuple[int, int], tuple[int, int]] = {}  # (row, column) -> (value, arm)
    for k, (r, c) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
        if k in excluded or r not in row_at or c not in col_at:
            continue
        if space.perfect or values[k] > 0:
            gain[row_at[r], col_at[c]] = (values[k], k)
    transpose = len(free_rows) > len(free_cols)
    n, m = (len(free_cols), len(free_rows)) if transpose else (len(free_rows), len(free_cols))
    big = 2 * sum(abs(g) for g, _ in gain.values()) + 1  # a missing pair of a perfect matching costs more than any
    fill = big if space.perfect else 0
    cost = [[fill] * m for _ in range(n)]
    for (i, j), (g, _) in gain.items():
        if transpose:
            cost[j][i] = -g
        else:
            cost[i][j] = -g
    for i, j in enumerate(_hungarian(cost, n, m, (n + m + 2) * 4 * big)):
        pair = (j, i) if transpose else (i, j)
        if pair in gain:
            action[gain[pair][1]] = True
        elif space.perfect:
            return None
    return action


def lexicographic_path(space: STPaths, weights: list[float], res: Restrictions) -> np.ndarray | None:
    """The one of least binary number among the s-t paths of largest exact value in a DAG that ``res`` admits
    (include and exclude; ``None``: none): the longest-path dynamic programme on the integers ``W_i``."""
    rank, edges = dag_tables(space)
    values = ordered_integers(weights)
    banned = set(res.exclude)
    segments, action = waypoints(space, res.include, rank)
    tail = space.tail.tolist()
    for a, b in segments:
        if rank[a] > rank[b]:
            return None
        if a == b:
            continue
        best, via = longest_from(edges, values, banned, rank, a, b, space.n_nodes, 0)
        if best[b] is None:
            return None
        v = b
        while v != a:
            action[via[v]] = True
            v = tail[via[v]]
    return action
