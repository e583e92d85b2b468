"""Lower bounds on the number of actions of a space, found without listing them.

``auto`` enumerates a space's actions when there are few enough (its ``norm_enumerate_cap``,
150,000): before this module it found out by listing them (:func:`~.tally.tally`), which on
spaces far past the limit meant listing ``limit + 1`` actions only to throw them away (2-4 CPU s on
the s-t paths of an 8x8 grid, 15-30 s on the spanning trees of 6x6 and 8x8 grids). A lower bound
above the limit settles the question in milliseconds; below it, the listing is still needed.

:func:`actions_at_least` bounds, for a family without side rules (with rules: 0, nothing known):

* :class:`~.sets.Cardinality`, :class:`~.sets.PartitionMatroid`, :class:`~.sets.ExplicitActions`:
  the exact count (closed forms);
* :class:`~.graphs.SpanningTrees`: Kirchhoff's matrix-tree theorem (a log-determinant, less a 0.1 %
  margin for rounding); :class:`~.graphs.GraphicMatroid`: ``2^r``, the subsets of one spanning forest;
* :class:`~.graphs.Matchings` (not perfect): ``k`` pairwise disjoint edges can be picked in order in
  at least ``prod_{i<k} (E - B_i)`` ways, ``B_i`` the most edges ``i`` chosen edges can rule out;
* :class:`~.paths.STPaths`: on a DAG the exact count (dynamic programming); with cycles the exact
  number of simple s-t paths of at most ``2h`` arcs, by meeting in the middle: the simple paths of ``h``
  arcs from ``s`` joined to those of at most ``h`` arcs into ``t`` that share only their junction
  (:func:`short_paths`), ``h`` growing while the work stays within its cap.

Each answer is cached on the space (its ``_enum_cache``).

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(4, 4))
>>> actions_at_least(cm.STPaths(grid, 0, 15), 100), len(cm.STPaths(grid, 0, 15).enumerate())  # paths of <= 10 arcs
(104, 184)
>>> actions_at_least(cm.SpanningTrees(grid), 100_000)  # 100,352 spanning trees, less the margin
100251
>>> actions_at_least(cm.Cardinality(6, 2).with_conflicts([(0, 1)]), 100)  # side rules: nothing known
0
"""

from __future__ import annotations

import math
from collections import defaultdict
from math import factorial

import numpy as np

from .base import ActionSpace
from .graphs import GraphicMatroid, Matchings, SpanningTrees
from .paths import STPaths
from .sets import Cardinality, ExplicitActions, PartitionMatroid

__all__ = ["actions_at_least", "short_paths"]

#: The largest graph (nodes) whose spanning trees are counted by a dense determinant (~0.1 s at 1,500).
_MAX_DETERMINANT_NODES = 1500


def actions_at_least(space: ActionSpace, limit: int, work: int | None = None) -> int:
    """A number of actions ``space`` surely has (0: nothing known), found with bounded work.

    Exact for the closed-form families; on cyclic s-t paths it stops once past ``limit``, and lists at most
    ``work`` partial paths a round (default ``max(20,000, limit / 4)``; the search that lists the actions
    visits at least one partial path per action, about 10 on grids).

    >>> import cmab_milp as cm
    >>> actions_at_least(cm.Cardinality(20, 3), 10)
    1351
    """
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise ValueError(f"limit must be an integer >= 0, got {limit!r}")
    cache = space.__dict__.setdefault("_enum_cache", {}).setdefault("at_least", {})
    passed = [known for known in cache.values() if known > limit]
    if passed:
        return passed[0]
    if work is None:
        work = max(20_000, limit // 4)
    elif isinstance(work, bool) or not isinstance(work, (int, np.integer)) or work < 1:
        raise ValueError(f"work must be an integer >= 1, got {work!r}")
    key = (int(limit), int(work))
    if key not in cache:
        cache[key] = _at_least(space, *key)
    return cache[key]


def _at_least(space: ActionSpace, limit: int, work: int) -> int:
    kind = type(space)
    if kind in (Cardinality, PartitionMatroid, ExplicitActions):
        return int(space.count_upper_bound())
    if kind is SpanningTrees:
        return _spanning_trees_at_least(space.n_nodes, space.tail, space.head)
    if kind is GraphicMatroid:
        return 2**space.m
    if kind is Matchings and not space.perfect:
        return _matchings_at_least(space, limit)
    if kind is STPaths:
        return _dag_paths(space) if space.acyclic else _cyclic_paths_at_least(space, limit, work)
    return 0


def _spanning_trees_at_least(n_nodes: int, tail: np.ndarray, head: np.ndarray) -> int:
    """The spanning trees of a connected simple graph (matrix-tree theorem), rounded down past a 0.1 % margin.

    >>> _spanning_trees_at_least(4, np.array([0, 0, 0, 1, 1, 2]), np.array([1, 2, 3, 2, 3, 3]))  # K4: 16
    15
    """
    if n_nodes > _MAX_DETERMINANT_NODES:
        return 0
    if n_nodes == 1:
        return 1
    laplacian = np.zeros((n_nodes, n_nodes))
    np.add.at(laplacian, (tail, tail), 1.0)
    np.add.at(laplacian, (head, head), 1.0)
    np.add.at(laplacian, (tail, head), -1.0)
    np.add.at(laplacian, (head, tail), -1.0)
    sign, log_count = np.linalg.slogdet(laplacian[1:, 1:])
    if sign <= 0:
        return 0
    return int(math.exp(min(float(log_count), 700.0) - 1e-3))


def _matchings_at_least(space: Matchings, limit: int) -> int:
    """Matchings counted by size: ``k`` disjoint edges picked in order, each ruling out at most its own
    ``deg(u) + deg(v) - 1`` edges, in at least ``prod_{i<k} (E - B_i)`` ways (``B_i``: the ``i`` largest of
    those), each matching ``k!`` times; stops past ``limit``.

    >>> import networkx as nx
    >>> _matchings_at_least(Matchings(nx.path_graph(4)), 100)  # of 5: {}, three edges (the outer pair is missed)
    4
    >>> _matchings_at_least(Matchings(nx.complete_bipartite_graph(10, 12)), 10**5)  # 0-3 edges: 160,501 of 2.3e10
    160501
    """
    degree = np.bincount(np.concatenate([space.tail, space.head]), minlength=space.n_nodes)
    blocked = sorted((degree[space.tail] + degree[space.head] - 1).tolist(), reverse=True)
    edges, total, ordered, ruled_out = space.d, 1, 1, 0
    for k in range(1, space.m + 1):
        ordered *= edges - ruled_out
        ruled_out += blocked[k - 1]
        if ordered <= 0:
            break
        total += ordered // factorial(k)
        if total > limit:
            break
    return total


def _dag_paths(space: STPaths) -> int:
    """The s-t paths of a DAG, exactly (dynamic programming in topological order)."""
    succ = _successors(space)
    order = _topological(succ, space.s)
    paths = [0] * space.n_nodes
    paths[space.s] = 1
    for v in order:
        if v != space.t:
            for w in succ[v]:
                paths[w] += paths[v]
    return paths[space.t]


def _topological(succ: list[list[int]], start: int) -> list[int]:
    """The nodes reachable from ``start`` in a topological order (``succ`` acyclic)."""
    seen, order, stack = {start}, [], [(start, iter(succ[start]))]
    while stack:
        node, rest = stack[-1]
        nxt = next(rest, None)
        if nxt is None:
            stack.pop()
            order.append(node)
        elif nxt not in seen:
            seen.add(nxt)
            stack.append((nxt, iter(succ[nxt])))
    return order[::-1]


def _successors(space: STPaths, reverse: bool = False) -> list[list[int]]:
    tail, head = space.tail.tolist(), space.head.tolist()
    if reverse:
        tail, head = head, tail
    succ: list[list[int]] = [[] for _ in range(space.n_nodes)]
    for u, v in zip(tail, head, strict=True):
        succ[u].append(v)
        if not space.directed:
            succ[v].append(u)
    return succ


def _hops(succ: list[list[int]], start: int) -> list[int]:
    """Fewest arcs from ``start`` to each node (``n`` if none)."""
    n = len(succ)
    hops = [n] * n
    hops[start] = 0
    layer = [start]
    while layer:
        nxt = []
        for u in layer:
            for w in succ[u]:
                if hops[w] == n:
                    hops[w] = hops[u] + 1
                    nxt.append(w)
        layer = nxt
    return hops


def _cyclic_paths_at_least(space: STPaths, limit: int, work: int = 20_000) -> int:
    """The simple s-t paths of at most ``2h`` arcs (:func:`short_paths`) for ``h = 1, 2, ...`` while the work
    allows (``work`` partial paths listed from each end, ``max(10^6, 16 limit)`` junction checks a round), until
    past ``limit``. It stops early when the count grows too slowly to pass ``limit`` within two more rounds, or by
    less than half a round (the bound is then below ``limit``, and the caller lists the actions anyway).

    >>> import networkx as nx
    >>> space = STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(8, 8)), 0, 63)
    >>> _cyclic_paths_at_least(space, 150_000)  # the paths of at most 18 arcs, of 7.9e11 in all
    178044
    """
    ends = _Ends(space)
    best = 0
    for h in range(1, space.n_nodes):
        counted = short_paths(space, h, work, max(10**6, 16 * limit), ends)
        if counted is None:
            break
        before, best = best, max(best, counted)
        if best > limit or 2 * h >= space.n_nodes - 1:  # past the limit, or every simple path counted
            break
        growth = best / before if before else math.inf
        if growth < 1.5 or best * growth**2 <= limit:  # too slow to pass the limit within two more rounds
            break
    return best


class _Ends:
    """A path space's arcs out of each node (``succ``), into it (``pred``), the fewest arcs to ``t`` / from ``s``."""

    def __init__(self, space: STPaths):
        self.succ, self.pred = _successors(space), _successors(space, reverse=True)
        self.to_t, self.from_s = _hops(self.pred, space.t), _hops(self.succ, space.s)


def short_paths(
    space: STPaths, h: int, work: int = 20_000, checks: int = 10**6, ends: _Ends | None = None
) -> int | None:
    """The simple s-t paths of at most ``2h`` arcs, exactly; ``None`` if that takes listing more than ``work`` partial
    paths from either end or more than ``checks`` junction checks (64 nodes a check).

    Meeting in the middle: a path of ``L <= h`` arcs is found from ``s``; one of ``h < L <= 2h`` arcs is, once, a
    simple path of ``h`` arcs from ``s`` (never entering ``t``) and one of ``L - h`` arcs into ``t`` (never from
    ``s``) that share only their junction node. Partial paths that cannot reach the other end within ``2h`` arcs
    are dropped.

    >>> import networkx as nx
    >>> short_paths(STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(4, 4)), 0, 15), 5)  # <= 10 arcs
    104
    """
    ends = _Ends(space) if ends is None else ends
    forward = _walks(ends.succ, space.s, space.t, h, ends.to_t, work, last_only=True)
    backward = _walks(ends.pred, space.t, space.s, h, ends.from_s, work, last_only=False)
    if forward is None or backward is None:
        return None
    (joints, direct), (starts, _) = forward, backward
    words = (space.n_nodes + 63) // 64
    if sum(len(masks) * len(starts.get(x, ())) for x, masks in joints.items()) * words > checks:
        return None
    return direct + _joined(joints, starts, words)


def _walks(succ, start: int, avoid: int, h: int, hops: list[int], cap: int, last_only: bool):
    """Simple paths from ``start`` of at most ``h`` arcs that never enter ``avoid``, a node at arc ``k`` kept only
    if ``hops`` (to the other end) allows ``2h - k`` more: ``({end: [node masks]}, paths that reached avoid,
    paths listed)``, the masks of exactly ``h`` arcs if ``last_only``, else of 1 to ``h`` arcs; ``None`` past
    ``cap`` paths."""
    out: dict[int, list[int]] = defaultdict(list)
    reached = listed = 0
    stack = [(start, 1 << start, 0)]
    while stack:
        node, mask, k = stack.pop()
        for w in succ[node]:
            if mask >> w & 1:
                continue
            if w == avoid:
                reached += 1
                continue
            if hops[w] > 2 * h - k - 1:
                continue
            listed += 1
            if listed > cap:
                return None
            grown = mask | 1 << w
            if k + 1 < h:
                stack.append((w, grown, k + 1))
            if k + 1 == h or not last_only:
                out[w].append(grown)
    return out, reached


def _joined(ends: dict[int, list[int]], starts: dict[int, list[int]], words: int) -> int:
    """Pairs (path from s ending at x, path into t starting at x) whose nodes meet only at x."""
    total = 0
    full = (1 << 64) - 1
    for x, masks in ends.items():
        into = starts.get(x)
        if not into:
            continue
        drop = ~(1 << x)
        a = np.array([[(m & drop) >> (64 * w) & full for w in range(words)] for m in masks], dtype=np.uint64)
        b = np.array([[(m & drop) >> (64 * w) & full for w in range(words)] for m in into], dtype=np.uint64)
        step = max(1, (1 << 20) // (len(b) * words))
        for lo in range(0, len(a), step):
            shared = (a[lo : lo + step, None, :] & b[None, :, :]).any(axis=2)
            total += int(shared.size - np.count_nonzero(shared))
    return total
