"""Repair of integer candidates of the s-t path model: a path plus disjoint cycles made into one path.

The degree model of :class:`~cmab_milp.spaces.graphs.STPaths` has integer points that
are an s-t path plus vertex-disjoint cycles; the lazy cuts reject them, but such a
candidate is most of a good path. :meth:`PathRepair.repair` splices each cycle into
the path (where a path edge and a cycle edge are joined by two graph edges, the
splice of largest weight first), then grows the path by detours; the result is a
MIP start of the next lazy round (:func:`~cmab_milp.oracles.mip.starts.prepare_query`).
It is only a start: the caller checks bounds and side rows, and the MILP proves or
improves it.

:class:`PathRepair` is a mixin of :class:`~.graph_starts.PathStarts` (it uses its
``_arcs``, ``_as_action`` and ``_grow``).

>>> import networkx as nx
>>> import numpy as np
>>> from cmab_milp.oracles.mip.graph_starts import PathStarts
>>> from cmab_milp.spaces.graphs import STPaths
>>> space = STPaths(nx.cycle_graph(3), 0, 1)  # edges (0,1) (0,2) (1,2)
>>> PathStarts.of(space).repair(np.array([1, 0, 0], bool), np.ones(3)).astype(int).tolist()  # detour 0-2-1
[0, 1, 1]
"""

from __future__ import annotations

import numpy as np

__all__ = ["PathRepair"]


class PathRepair:
    """Candidates of the degree model made into paths (a mixin of :class:`~.graph_starts.PathStarts`)."""

    def repair(self, action: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        """A path made of an integer candidate of the degree model (an s-t path plus disjoint cycles), or ``None``.

        Each cycle is spliced into the path where a path edge ``(p, q)`` and a
        cycle edge ``(c, e)`` have graph edges ``(p, c)`` and ``(q, e)`` (the path
        then goes round the cycle from ``c`` to ``e``; on a digraph the arcs
        ``p -> c`` and ``e -> q`` with ``e -> c`` the cycle's arc, gone round in
        its direction), the splice of largest weight first; cycles that no splice
        reaches are dropped. The path is then grown by detours through unvisited
        nodes while they add weight. The answer may break bounds or side rows:
        the caller checks it.

        >>> import networkx as nx
        >>> from cmab_milp.oracles.mip.graph_starts import PathStarts
        >>> from cmab_milp.spaces.graphs import STPaths
        >>> space = STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 2)
        >>> candidate = np.array([0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0], bool)  # path 0-1-2, square 3-4-7-6
        >>> space.path_nodes(PathStarts.of(space).repair(candidate, np.ones(space.d)))  # spliced, detour 7-8-5-4
        [0, 3, 6, 7, 8, 5, 4, 1, 2]
        >>> arcs = STPaths(nx.DiGraph([(0, 1), (1, 2), (3, 4), (4, 3), (0, 3), (4, 1)]), 0, 2)
        >>> candidate = np.array([arc in {(0, 1), (1, 2), (3, 4), (4, 3)} for arc in arcs.arms])  # 0-1-2, 3-4-3
        >>> arcs.path_nodes(PathStarts.of(arcs).repair(candidate, np.ones(6)))
        [0, 3, 4, 1, 2]
        """
        a = np.asarray(action, bool)
        if a.shape != (self.d,):
            raise ValueError(f"action must hold {self.d} arm values, got shape {a.shape}")
        w = np.asarray(weights, float)
        parts = self._directed_parts(a) if self.directed else self._undirected_parts(a)
        if parts is None:
            return None  # not a path plus disjoint cycles (e.g. an LP point integral on the arms only)
        path, cycles = parts
        arc = self._arcs()
        weight = {(u, v): w[k] for (u, v), k in arc.items()}
        # a splice (p, q, c, e): path edge p-q out, cycle edge e-c out, edges p-c and e-q in; the tour goes
        # c -> ... -> e round the cycle (on a digraph: e -> c is the cycle's arc, the tour follows its arcs)
        orientations = (False,) if self.directed else (True, False)
        spliced = True
        while cycles and spliced:
            spliced = False
            best = None
            for ci, cycle in enumerate(cycles):
                m = len(cycle)
                for i in range(len(path) - 1):
                    p, q = path[i], path[i + 1]
                    for j in range(m):
                        here, after = cycle[j], cycle[(j + 1) % m]
                        for forward in orientations:
                            c, e = (here, after) if forward else (after, here)
                            if (p, c) in weight and (e, q) in weight:
                                gain = weight[p, c] + weight[e, q] - weight[p, q] - weight[e, c]
                                if best is None or gain > best[0]:
                                    best = (gain, ci, i, j, forward)
            if best is not None:
                _, ci, i, j, forward = best
                cycle = cycles.pop(ci)
                m = len(cycle)
                # from c round the cycle away from e, ending at e
                if forward:  # c = cycle[j], e = cycle[j + 1]: go c, cycle[j - 1], ..., cycle[j + 1]
                    tour = [cycle[(j - r) % m] for r in range(m)]
                else:  # c = cycle[j + 1], e = cycle[j]: go c, cycle[j + 2], ..., cycle[j]
                    tour = [cycle[(j + 1 + r) % m] for r in range(m)]
                path = path[: i + 1] + tour + path[i + 1 :]
                spliced = True
        return self._as_action(self._grow(path, w))

    def _undirected_parts(self, a: np.ndarray) -> tuple[list[int], list[list[int]]] | None:
        """The s-t path and the cycles (node lists) of a path plus disjoint cycles, undirected; else ``None``."""
        nxt: dict[int, list[int]] = {}
        for k in np.flatnonzero(a):
            u, v = int(self.tail[k]), int(self.head[k])
            nxt.setdefault(u, []).append(v)
            nxt.setdefault(v, []).append(u)
        if any(len(n) != (1 if v in (self.s, self.t) else 2) for v, n in nxt.items()) or self.s not in nxt:
            return None

        def walk(start: int, first: int) -> list[int]:  # along the chosen edges until an end or back at start
            order, here = [start], first
            while here != start and here is not None:
                order.append(here)
                step = [v for v in nxt[here] if v != order[-2]]
                here = step[0] if step else None
            return order

        path = walk(self.s, nxt[self.s][0])
        if path[-1] != self.t:
            return None
        seen = set(path)
        cycles = []
        for v in list(nxt):
            if v not in seen:
                cycle = walk(v, nxt[v][0])
                seen.update(cycle)
                cycles.append(cycle)
        return path, cycles

    def _directed_parts(self, a: np.ndarray) -> tuple[list[int], list[list[int]]] | None:
        """The s-t path and the cycles (node lists in arc order) of a path plus disjoint cycles; else ``None``."""
        succ: dict[int, int] = {}
        into: dict[int, int] = {}
        for k in np.flatnonzero(a):
            u, v = int(self.tail[k]), int(self.head[k])
            if u in succ or v in into:
                return None
            succ[u], into[v] = v, u
        if self.s not in succ or self.s in into or self.t in succ or self.t not in into:
            return None
        path, seen = [self.s], {self.s}
        while path[-1] != self.t:
            here = succ.get(path[-1])
            if here is None or here in seen:
                return None
            path.append(here)
            seen.add(here)
        cycles = []
        for v in list(succ):
            if v not in seen:
                cycle, here = [v], succ[v]
                seen.add(v)
                while here != v:
                    if here in seen or here not in succ:
                        return None
                    cycle.append(here)
                    seen.add(here)
                    here = succ[here]
                cycles.append(cycle)
        return path, cycles
