"""The rows of the graph spaces' formulations: subtour rows, lazy cycle cuts, short cycles and flow rows.

:class:`GraphRows` is a mixin of the graph spaces of :mod:`~cmab_milp.spaces.graphs`
(it reads their ``tail``, ``head``, ``n_nodes``, ``d`` and ``_components``):

* the lazy separator (``separate_cycles``): the subtour row ``a(E(S)) <= |S| - 1``
  of each cycle's own nodes in an integral candidate; with all of them the
  formulation is exact (a forest, or a simple path plus cycles, has no chosen cycle);
* compile-time rows: the triangles and 4-cycles (``_short_cycle_rows``), the only
  cut pool that depends on the space alone (so answers keep the tie rule), and the
  optional single-commodity flow rows (``_add_flow``).

The separators of LP points (root cuts: min cuts on the support graph) are solver
tuning and live on the oracle side, :mod:`cmab_milp.oracles.mip.graph_cuts`; a
formulation names them by :class:`~cmab_milp.spaces.formulation.NamedSeparator`.
Every row returned is valid for every action of the space (tested against brute
force over node sets in ``tests/oracles/mip/test_graph_cuts.py``).

>>> import networkx as nx
>>> import numpy as np
>>> from cmab_milp.spaces.graphs import GraphicMatroid
>>> space = GraphicMatroid(nx.complete_graph(4))
>>> [(r.cols, r.ub) for r in space.separate_cycles(np.array([1, 1, 0, 1, 0, 0], bool))]  # the triangle 0-1-2
[((0, 1, 3), 2.0)]
>>> space.separate_cycles(np.array([1, 1, 1, 0, 0, 0], bool))  # a star: a forest
[]
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from .formulation import Formulation, Row

__all__ = ["GraphRows"]


class GraphRows:
    """Subtour rows and flow rows of a graph space (a mixin; see the module docstring)."""

    #: Spanning trees (``sum a = n - 1``) may write ``a(E(S)) <= |S| - 1`` as ``a(E) - a(E(S)) >= n - |S|``
    #: (their ``sparse_cuts`` option).
    _complement_cuts = False

    def _on_tree_plane(self, x: np.ndarray) -> bool:
        """Whether both forms of a subtour row are violated alike at ``x`` (spanning trees, ``sum x = n - 1``)."""
        return self._complement_cuts and abs(float(np.sum(x)) - (self.n_nodes - 1)) <= 1e-9

    def _subtour_row(self, node_mask: np.ndarray, sparse: bool = False) -> Row:
        """``a(E(S)) <= |S| - 1``; with ``sparse``, for spanning trees, written on the side with fewer entries.

        (Subtour rows of large sets hold most edges; the sparse side is the ``sparse_cuts`` option of
        :class:`~cmab_milp.spaces.graphs.SpanningTrees`: docs/performance.md, "Graphs".)
        """
        within = node_mask[self.tail] & node_mask[self.head]
        inside = np.flatnonzero(within)
        size = int(node_mask.sum())
        if sparse and 2 * len(inside) > self.d:
            other = np.flatnonzero(~within)
            return Row(tuple(int(k) for k in other), (1.0,) * len(other), float(self.n_nodes - size), np.inf)
        return Row(tuple(int(k) for k in inside), (1.0,) * len(inside), -np.inf, float(size - 1))

    def separate_cycles(self, action: np.ndarray) -> list[Row]:
        """Subtour cuts on the node sets of the cycles of a cycle basis of the chosen edges.

        (The cut of a cycle's nodes is stronger than that of its whole component.)

        >>> import networkx as nx
        >>> from cmab_milp.spaces.graphs import GraphicMatroid, STPaths
        >>> space = GraphicMatroid(nx.complete_graph(4))
        >>> [(r.cols, r.ub) for r in space.separate_cycles(np.array([1, 1, 1, 1, 0, 0], bool))]
        [((0, 1, 3), 2.0)]
        """
        return self._cycle_rows(np.asarray(action, bool))

    def _cycle_rows(self, chosen: np.ndarray) -> list[Row]:
        sparse = self._on_tree_plane(chosen)
        roots, edges, nodes = self._components(chosen)
        cyclic = np.flatnonzero((edges >= nodes) & (edges > 0))
        if not len(cyclic):
            return []
        sub = nx.Graph()
        sub.add_edges_from(zip(self.tail[chosen].tolist(), self.head[chosen].tolist(), strict=True))
        rows, seen, done = [], set(), set()
        for cycle in nx.cycle_basis(sub):
            key = tuple(sorted(cycle))
            if key not in seen:
                seen.add(key)
                mask = np.zeros(self.n_nodes, bool)
                mask[list(key)] = True
                rows.append(self._subtour_row(mask, sparse))
                done.add(int(roots[key[0]]))
        # a component whose only cycle the simple graph cannot show (two opposite arcs u->v, v->u): its own cut
        rows.extend(self._subtour_row(roots == r, sparse) for r in cyclic if int(r) not in done)
        return rows

    def _add_flow(self, f: Formulation, root: int, supply: float, demand: dict[int, tuple]) -> None:
        """Single-commodity flow from ``root`` on the chosen edges, ``supply`` units at most per edge.

        Node ``v`` in ``demand`` consumes ``const + sum(coefs * x[cols])`` units
        (``demand[v] = (const, cols, coefs)``); other nodes conserve flow. Every
        integer point then has each consuming node reachable from ``root`` over
        chosen edges: no chosen cycle can stand apart from the root's component.
        Directed graphs carry flow along their arcs only.
        """
        directed = self.graph.is_directed()
        arcs_in: list[list[int]] = [[] for _ in range(self.n_nodes)]
        arcs_out: list[list[int]] = [[] for _ in range(self.n_nodes)]
        for k in range(self.d):
            u, v = int(self.tail[k]), int(self.head[k])
            g = f.add_aux(0.0, supply, False, f"flow{k}", exact_only=True)
            arcs_out[u].append(g)
            arcs_in[v].append(g)
            cols, coefs = [g], [1.0]
            if not directed:
                back = f.add_aux(0.0, supply, False, f"flowback{k}", exact_only=True)
                arcs_out[v].append(back)
                arcs_in[u].append(back)
                cols.append(back)
                coefs.append(1.0)
            f.rows.append(Row((*cols, k), (*coefs, -supply), -np.inf, 0.0))
        for v in range(self.n_nodes):
            if v == root or v not in demand:
                if v != root and (arcs_in[v] or arcs_out[v]):
                    cols = (*arcs_in[v], *arcs_out[v])
                    f.rows.append(Row(cols, (1.0,) * len(arcs_in[v]) + (-1.0,) * len(arcs_out[v]), 0.0, 0.0))
                continue
            const, dcols, dcoefs = demand[v]
            cols = (*arcs_in[v], *arcs_out[v], *dcols)
            coefs = (1.0,) * len(arcs_in[v]) + (-1.0,) * len(arcs_out[v]) + tuple(-c for c in dcoefs)
            f.rows.append(Row(cols, coefs, const, const))

    def _short_cycle_rows(self, limit: int | None = None) -> list[Row]:
        """Subtour cuts of the triangles and 4-cycles, at most ``limit`` (default ``2 d``) of them."""
        limit = 2 * self.d if limit is None else limit
        adj = [set() for _ in range(self.n_nodes)]
        for u, v in zip(self.tail.tolist(), self.head.tolist(), strict=True):
            adj[u].add(v)
            adj[v].add(u)
        cycles: list[tuple[int, ...]] = []
        for u in range(self.n_nodes):  # u is the smallest node of the cycle
            higher = sorted(v for v in adj[u] if v > u)
            for i, v in enumerate(higher):
                cycles.extend((u, v, w) for w in higher[i + 1 :] if w in adj[v])
            opposite = sorted({w for v in higher for w in adj[v] if w > u} - {u})
            for w in opposite:  # 4-cycles u - v1 - w - v2 with u < v1 < v2, both u and w adjacent to both
                common = [v for v in higher if v in adj[w] and v != w]
                cycles.extend((u, v1, w, v2) for i, v1 in enumerate(common) for v2 in common[i + 1 :])
            if len(cycles) >= limit:
                break
        rows = []
        for cycle in cycles[:limit]:
            mask = np.zeros(self.n_nodes, bool)
            mask[list(cycle)] = True
            rows.append(self._subtour_row(mask))
        return rows
