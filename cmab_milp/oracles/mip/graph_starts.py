"""Good s-t paths, fast: the MIP starts of restricted path queries (Dijkstra, splicing, detours).

:class:`PathStarts` works on one :class:`~cmab_milp.spaces.graphs.STPaths`
(it reads its ``tail``, ``head``, ``n_nodes``, ``d``, ``s``, ``t``, ``directed`` and
``_contains``); :meth:`PathStarts.of` gives the one kept with a space:

* :meth:`~PathStarts.start_action` answers ``max w @ a`` heuristically under
  arm bounds (excluded arms; one included arm: the shortest path to one of its
  ends, the arm, then the shortest path on from the other avoiding the first
  part; more included arms get no start),
  conflicting pairs (``forbid_pairs``) and at most one knapsack row
  ``c @ a <= b`` (``c >= 0``): Dijkstra on the lengths ``max(-w, 0)`` (the exact
  shortest path when ``w <= 0`` and there are no side rows), a path holding a
  conflicting pair re-run with one of its two edges removed (a small search),
  the knapsack row by a Lagrangian search (lengths of ``w - lam c``, ``lam``
  bisected to the least value whose path fits), and with some weight > 0 the
  path grown by detours through unvisited nodes;
* :meth:`~PathStarts.repair` (:mod:`.path_repair`) turns an integer candidate of the degree model (a
  path plus disjoint cycles, which the lazy cuts reject) into a path: the
  cycles spliced in, then detours.

The answer is an action of the space that obeys the bounds and side rows it
was given, or ``None``. It is only a start: the MILP proves or improves it, so
a poor start costs time, never exactness. Trees get no start (HiGHS's own
heuristics find them at once; what was tried: docs/performance.md, "Graphs").

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.cycle_graph(4), 0, 2)  # edges (0,1) (0,3) (1,2) (2,3)
>>> w = np.array([-1.0, -2.0, -1.0, -2.0])
>>> starts = PathStarts.of(space)
>>> starts.start_action(w).astype(int).tolist()  # the shortest path 0-1-2
[1, 0, 1, 0]
>>> starts.start_action(w, conflicts=[(0, 2)]).astype(int).tolist()
[0, 1, 0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ...spaces.graphs import STPaths
from .path_repair import PathRepair

__all__ = ["BISECTION_STEPS", "MAX_PATH_BRANCHES", "PathStarts"]

#: Bisection steps of the Lagrangian multiplier of a knapsack row.
BISECTION_STEPS = 24
#: Dijkstra runs per path start when conflicting pairs must be branched on.
MAX_PATH_BRANCHES = 32
#: Added to every length given to Dijkstra (scipy's csgraph drops explicit zeros); a distance over ``k`` edges
#: is then at most ``k * _EPS`` too long, which :meth:`PathStarts.start_plan` adds back to its bounds.
_EPS = 1e-12


class PathStarts(PathRepair):
    """Heuristic s-t paths of one :class:`~cmab_milp.spaces.graphs.STPaths` (see the module docstring)."""

    def __init__(self, space: STPaths):
        self.space = space
        self.tail, self.head, self.n_nodes, self.d = space.tail, space.head, space.n_nodes, space.d
        self.s, self.t, self.directed = space.s, space.t, space.directed
        self._contains = space._contains

    @classmethod
    def of(cls, space: STPaths) -> PathStarts:
        """The path starts of ``space``, built on first use and kept with it (its tables are built once)."""
        return space._memo("_path_starts", lambda: cls(space))

    def start_action(
        self,
        weights: np.ndarray,
        lower: np.ndarray | None = None,
        upper: np.ndarray | None = None,
        conflicts: Sequence[tuple[int, int]] = (),
        knapsack: tuple[np.ndarray, float] | None = None,
    ) -> np.ndarray | None:
        """A good action for ``max weights @ a`` (bool vector), or ``None``; see the module docstring.

        ``lower`` / ``upper`` are arm bounds in {0, 1} (1 / 0 fix an arm), ``conflicts`` pairs of arms
        never both chosen, ``knapsack = (c, b)`` the row ``c @ a <= b`` with ``c >= 0``.
        """
        return self._start(weights, lower, upper, conflicts, knapsack)[0]

    def _start(self, weights, lower, upper, conflicts, knapsack) -> tuple[np.ndarray | None, float]:
        """(:meth:`start_action`'s action, the knapsack row's multiplier it ended with; 0 without a row)."""
        w = np.asarray(weights, float)
        if w.shape != (self.d,) or not np.isfinite(w).all():
            raise ValueError(f"weights must be {self.d} finite numbers, got shape {w.shape}")
        lower = np.zeros(self.d) if lower is None else np.asarray(lower, float)
        upper = np.ones(self.d) if upper is None else np.asarray(upper, float)
        forced, banned = lower > 0.5, upper < 0.5
        if (forced & banned).any():
            return None, 0.0
        pairs = [(int(i), int(j)) for i, j in conflicts]
        if knapsack is None:
            return self._checked(self._greedy(w, forced, banned, pairs), forced, banned, pairs, None), 0.0
        c, b = np.asarray(knapsack[0], float), float(knapsack[1])
        if c.shape != (self.d,) or (c < 0).any():
            raise ValueError("a knapsack row needs d coefficients >= 0")
        return self._lagrangian(w, forced, banned, pairs, c, b)

    def _lagrangian(self, w, forced, banned, pairs, c, b) -> tuple[np.ndarray | None, float]:
        """(best path found that fits ``c @ a <= b``, the least multiplier ``lam`` met whose path fits; 0 if none)."""
        best, best_value = None, -np.inf

        def attempt(lam: float) -> bool | None:  # True: fits the row, False: does not, None: no action
            nonlocal best, best_value
            a = self._greedy(w - lam * c, forced, banned, pairs)
            if a is None:
                return None
            if c[a].sum() <= b + 1e-9 * (1.0 + abs(b)):
                if self._checked(a, forced, banned, pairs, None) is not None and w[a].sum() > best_value:
                    best, best_value = a, float(w[a].sum())
                return True
            return False

        fits = attempt(0.0)
        if fits is None or fits:
            return best, 0.0
        top = float(np.abs(w).max(initial=0.0)) / max(float(c[c > 0].min(initial=1.0)), 1e-12) * 2.0 + 1.0
        if not attempt(top):
            return best, 0.0
        lo, hi = 0.0, top
        for _ in range(BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            fits = attempt(mid)
            if fits is None:
                return best, hi
            lo, hi = (lo, mid) if fits else (mid, hi)
        return best, hi

    def start_plan(
        self,
        weights: np.ndarray,
        lower: np.ndarray | None = None,
        upper: np.ndarray | None = None,
        conflicts: Sequence[tuple[int, int]] = (),
        knapsack: tuple[np.ndarray, float] | None = None,
        margin: float = 1e-7,
    ) -> tuple[np.ndarray | None, np.ndarray | None, float]:
        """:meth:`start_action`'s action, the arms that reduced-cost fixing proves out, and their region's bound.

        Take the start's multiplier ``lam`` of the knapsack row (0 without one),
        ``g = w - lam c``, lengths ``l = max(-g, 0)`` and ``G`` the sum of ``max(g, 0)`` over the edges
        the bounds allow (0 for shortest paths, whose weights are ``<= 0``). Every path ``a`` that fits
        the row and uses edge ``e = (u, v)`` has ``w @ a <= lam b + g @ a <= lam b + G - l @ a <= lam b +
        G - (ds(u) + l_e + dt(v))`` (``ds``, ``dt``: shortest distances from ``s`` and to ``t`` over the
        allowed edges; a simple path is a walk; undirected edges either way round; ``forbid_pairs``
        relaxed); with forced arms, every admitted path holds them too, so ``l @ a`` is also at least
        their own ``ds + l + dt``. Edges whose bound ``B_e`` (widened by the distances' rounding) is below the start's
        value less ``margin * (1 + |value|)`` are returned in ``fixed`` (to fix at 0), with
        ``region_bound = max B_e`` over them, below the start's value. Returns ``(start, None, -inf)``
        when nothing is fixed (as for longest paths, where ``G`` bounds nothing).

        >>> import networkx as nx
        >>> from cmab_milp.spaces.graphs import STPaths
        >>> space = STPaths(nx.cycle_graph(6), 0, 1)  # the edge 0-1, or round the other way
        >>> start, fixed, bound = PathStarts.of(space).start_plan(-np.ones(6))
        >>> start.astype(int).tolist(), int(fixed.sum()), round(bound, 6)  # the long way fixed out; walks bound it
        ([1, 0, 0, 0, 0, 0], 5, -3.0)
        """
        w = np.asarray(weights, float)
        start, lam = self._start(w, lower, upper, conflicts, knapsack)
        forced = np.zeros(self.d, bool) if lower is None else np.asarray(lower, float) > 0.5
        banned = np.zeros(self.d, bool) if upper is None else np.asarray(upper, float) < 0.5
        if start is None:
            return start, None, -np.inf
        c, b = (np.zeros(self.d), 0.0) if knapsack is None else (np.asarray(knapsack[0], float), float(knapsack[1]))
        g = w - lam * c
        gain = float(np.maximum(g, 0.0)[~banned].sum())
        value = float(w[start].sum())
        length = np.maximum(-g, 0.0)
        ds, dt = self._distances(length, banned)
        through = ds[self.tail] + length + dt[self.head]
        if not self.directed:
            through = np.minimum(through, ds[self.head] + length + dt[self.tail])
        if forced.any():  # every admitted path holds the forced arms too: bound it by them as well
            through = np.maximum(through, through[forced].max())
        finite = np.isfinite(through)
        top = float(np.max(through[finite], initial=0.0))
        slack = 1e-9 * (1.0 + abs(lam * b) + gain + top) + 2 * self.n_nodes * _EPS  # ds and dt: n - 1 edges each
        bound = np.where(finite, lam * b + gain - through + slack, -np.inf)
        fixed = (bound < value - margin * (1.0 + abs(value))) & ~banned
        if not fixed.any():
            return start, None, -np.inf
        return start, fixed, float(bound[fixed].max())

    def _distances(self, length: np.ndarray, ban: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Shortest distances from ``s`` and to ``t`` on ``length + eps`` over the arms not banned (inf: none)."""
        keep = np.flatnonzero(~ban)
        n = self.n_nodes
        tails, heads = self.tail[keep], self.head[keep]
        if not self.directed:
            tails, heads, keep = np.concatenate([tails, heads]), np.concatenate([heads, tails]), np.tile(keep, 2)
        weights = length[keep] + _EPS  # csgraph drops explicit zeros: keep every edge present
        forward = sp.csr_matrix((weights, (tails, heads)), shape=(n, n))
        backward = sp.csr_matrix((weights, (heads, tails)), shape=(n, n))
        ds = dijkstra(forward, directed=True, indices=self.s)
        dt = dijkstra(backward, directed=True, indices=self.t)
        return ds, dt

    def _arcs(self) -> dict[tuple[int, int], int]:
        """``(u, v) -> edge index`` for both orientations of undirected edges (cached)."""
        arc = self.__dict__.get("_arc_index")
        if arc is None:
            arc = {(int(u), int(v)): k for k, (u, v) in enumerate(zip(self.tail, self.head, strict=True))}
            if not self.directed:
                arc.update({(v, u): k for (u, v), k in list(arc.items())})
            self.__dict__["_arc_index"] = arc
        return arc

    def _checked(self, a, forced, banned, pairs, knapsack) -> np.ndarray | None:
        """``a`` when it is an action obeying the bounds and conflicts, else ``None``."""
        if a is None or (forced & ~a).any() or (banned & a).any() or any(a[i] and a[j] for i, j in pairs):
            return None
        return a if self._contains(a) else None

    def _greedy(self, w, forced, banned, pairs) -> np.ndarray | None:
        a = self._dijkstra_path(w, forced, banned, pairs)
        if a is None or not (w > 0).any() or forced.any():
            return a  # (with weights <= 0 no detour adds weight; a detour might drop a forced arm)
        nodes = self._path_order(a)
        return None if nodes is None else self._as_action(self._grow(nodes, w, banned, pairs))

    def _path_order(self, a: np.ndarray) -> list[int] | None:
        """The node order of a bool edge vector that is one s-t path, else ``None`` (read undirected: on a digraph
        an action's arcs run along that order)."""
        step: dict[int, list[int]] = {}
        for k in np.flatnonzero(a):
            u, v = int(self.tail[k]), int(self.head[k])
            step.setdefault(u, []).append(v)
            step.setdefault(v, []).append(u)
        order, previous = [self.s], -1
        while order[-1] != self.t:
            ahead = [v for v in step.get(order[-1], ()) if v != previous]
            if len(ahead) != 1 or len(order) > len(step):
                return None
            previous = order[-1]
            order.append(ahead[0])
        return order if len(order) == len(step) else None

    def _as_action(self, nodes: list[int]) -> np.ndarray:
        arc = self._arcs()
        out = np.zeros(self.d, bool)
        for u, v in pairwise(nodes):
            out[arc[u, v]] = True
        return out

    def _grow(self, nodes: list[int], w: np.ndarray, banned=None, pairs=()) -> list[int]:
        """Local search on a path: replace an edge ``(p, q)`` by a detour ``p-x-q`` or ``p-x-y-q`` (arcs on a digraph)
        through unvisited nodes while that adds weight (first improvement), keeping off ``banned`` edges and
        conflicting pairs."""
        arc = self._arcs()
        adj = self.__dict__.get("_adjacency")
        if adj is None:
            adj = [[] for _ in range(self.n_nodes)]
            for (u, v), k in arc.items():
                adj[u].append((v, k))
            self.__dict__["_adjacency"] = adj
        partners: dict[int, set[int]] = {}
        for i, j in pairs:
            partners.setdefault(i, set()).add(j)
            partners.setdefault(j, set()).add(i)
        nodes = list(nodes)
        on = set(nodes)
        chosen = {arc[u, v] for u, v in pairwise(nodes)}

        def free(k: int, drop: int, new: tuple[int, ...]) -> bool:
            if banned is not None and banned[k]:
                return False
            clash = partners.get(k)
            return not clash or (not any(j in clash and j != drop for j in chosen) and not clash.intersection(new))

        for _ in range(4 * self.n_nodes):  # each step adds a node: at most n steps, the cap is a safety net
            best = None
            for i in range(len(nodes) - 1):
                p, q = nodes[i], nodes[i + 1]
                pq = arc[p, q]
                for x, px in adj[p]:
                    if x in on or not free(px, pq, ()):
                        continue
                    xq = arc.get((x, q))
                    if xq is not None and free(xq, pq, (px,)):
                        gain = w[px] + w[xq] - w[pq]
                        if gain > 1e-12 and (best is None or gain > best[0]):
                            best = (gain, i, (x,), (px, xq))
                    for y, xy in adj[x]:
                        yq = arc.get((y, q))
                        if y in on or yq is None or not free(xy, pq, (px,)) or not free(yq, pq, (px, xy)):
                            continue
                        gain = w[px] + w[xy] + w[yq] - w[pq]
                        if gain > 1e-12 and (best is None or gain > best[0]):
                            best = (gain, i, (x, y), (px, xy, yq))
            if best is None:
                break
            _, i, inserted, edges = best
            chosen.discard(arc[nodes[i], nodes[i + 1]])
            chosen.update(edges)
            on.update(inserted)
            nodes[i + 1 : i + 1] = list(inserted)
        return nodes

    def _dijkstra_path(self, w, forced, banned, pairs) -> np.ndarray | None:
        """Shortest s-t path on lengths ``-w >= 0`` avoiding banned arms; conflicts by branching on a pair.

        With one forced arm, a path through it (:meth:`_shortest_via`, a heuristic); with more, none.
        """
        if forced.sum() > 1:
            return None  # a path through given edges is no shortest-path problem
        via = int(np.flatnonzero(forced)[0]) if forced.any() else None
        directed = self.directed
        length = np.maximum(-w, 0.0) + _EPS  # csgraph drops explicit zeros: keep every edge present
        best, best_value, runs = None, -np.inf, 0
        stack = [banned.copy()]
        while stack and runs < MAX_PATH_BRANCHES:
            ban = stack.pop()
            runs += 1
            a = self._shortest(length, ban, directed) if via is None else self._shortest_via(length, ban, via)
            if a is None:
                continue
            value = float(w[a].sum())
            if value <= best_value:
                continue  # more bans only lengthen the path
            clash = next(((i, j) for i, j in pairs if a[i] and a[j]), None)
            if clash is None:
                best, best_value = a, value
                continue
            for k in clash:
                more = ban.copy()
                more[k] = True
                stack.append(more)
        return best

    def _shortest(self, length: np.ndarray, ban: np.ndarray, directed: bool) -> np.ndarray | None:
        nodes = self._node_path(length, ban, self.s, self.t)
        return None if nodes is None else self._as_action(nodes)

    def _shortest_via(self, length: np.ndarray, ban: np.ndarray, via: int) -> np.ndarray | None:
        """A short simple s-t path through arm ``via``: the shortest ``s -> p`` path avoiding ``q``, the edge
        ``p -> q``, then the shortest ``q -> t`` path avoiding the nodes before (each way round an undirected
        edge; the shorter of the two). A heuristic: ``None`` when that greedy split finds no path."""
        if ban[via]:
            return None
        u, v = int(self.tail[via]), int(self.head[via])
        ban = ban.copy()
        ban[via] = True
        best, best_length = None, np.inf
        for p, q in ((u, v),) if self.directed else ((u, v), (v, u)):
            if q == self.s or p == self.t:
                continue
            avoid = np.zeros(self.n_nodes, bool)
            avoid[q] = True
            first = [p] if p == self.s else self._node_path(length, ban, self.s, p, avoid)
            if first is None:
                continue
            avoid[:] = False
            avoid[first] = True
            second = [q] if q == self.t else self._node_path(length, ban, q, self.t, avoid)
            if second is None:
                continue
            a = self._as_action(first + second)
            total = float(length[a].sum())
            if total < best_length:
                best, best_length = a, total
        return best

    def _node_path(
        self, length: np.ndarray, ban: np.ndarray, source: int, target: int, avoid: np.ndarray | None = None
    ) -> list[int] | None:
        """The nodes of a shortest ``source -> target`` path on ``length`` over the arms not banned and the nodes
        not avoided (``source`` and ``target`` excepted), or ``None``."""
        keep = ~ban
        if avoid is not None:
            blocked = avoid.copy()
            blocked[[source, target]] = False
            keep &= ~blocked[self.tail] & ~blocked[self.head]
        keep = np.flatnonzero(keep)
        n = self.n_nodes
        tails, heads = self.tail[keep], self.head[keep]
        if not self.directed:
            tails, heads, keep = np.concatenate([tails, heads]), np.concatenate([heads, tails]), np.tile(keep, 2)
        # parallel arcs cannot occur (simple graphs); an undirected edge gives one arc each way
        graph = sp.csr_matrix((length[keep], (tails, heads)), shape=(n, n))
        _, pred = dijkstra(graph, directed=True, indices=source, return_predecessors=True)
        if pred[target] < 0:
            return None
        nodes = [target]
        while nodes[-1] != source:
            nodes.append(int(pred[nodes[-1]]))
        return nodes[::-1]
