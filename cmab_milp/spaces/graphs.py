"""Graph action spaces: forests, spanning trees, s-t paths and matchings.

Arm ``k`` is the edge ``list(graph.edges())[k]``; ``space.arms`` holds those
edge tuples. Wherever an arm is accepted, an edge ``(u, v)`` (node labels as in
the graph; either orientation if undirected) names it too, and ``labels=``
adds names of your own.

Exactness of the formulations:

* forests and spanning trees use subtour-elimination cuts
  ``sum_{e in E(S)} a_e <= |S| - 1``, separated lazily on integer candidates
  (a candidate whose chosen edges contain a cycle gets the cut of that cycle's
  component); with all cuts the integer hull is exactly the forests. The model
  starts with the cuts of the triangles and 4-cycles (at most ``2 d`` of them).
  On LP points the same cuts are separated exactly (Padberg-Wolsey min cuts on
  the support graph after contracting edges at 1, which keeps a most violated
  set whole): with all of them the LP is the forest polytope itself.
* s-t paths use a degree/flow model whose integer solutions are one simple
  s-t path plus vertex-disjoint cycles; the same forest cut (valid because a
  simple path is a forest) removes any cycle, so the loop ends on a simple
  path. On a DAG no cycle exists and the flow LP is integral. On undirected
  graphs (:data:`ORIENTED_PATHS`) ``d`` continuous columns orient the chosen
  edges as a unit flow from ``s`` to ``t``: the degree rows alone let the LP
  put its unit on two dead-end stubs at ``s`` and ``t`` (bound -0.73 against a
  shortest path of -11.8 on a 17x17 grid); with the flow every s-t cut holds
  1 and shortest-path LPs are exact. The columns are ``aux_optional`` (dropped
  for solvers that take integer columns only). On LP points the
  connectivity cuts ``a(delta(S)) >= a(delta(v))`` for ``v in S``, ``s, t``
  outside ``S`` (directed: ``a(delta_in(S)) >= a(delta_in(v))``, ``s`` outside)
  are separated by min cuts: a path through ``v`` enters ``S`` (and leaves it).
* optionally (:data:`FLOW_FORMULATION`) trees, forests and cyclic paths get
  single-commodity flow rows on extra columns, which make every integer point
  an action without lazy cuts; they are marked ``aux_exact_only`` so root cuts
  are separated on the LP without them.
* matchings use degree rows; they are integral as LPs on bipartite graphs.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.cycle_graph(4), 0, 2)
>>> len(space.enumerate()), space.m
(2, 2)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from itertools import pairwise
from math import comb
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components, maximum_flow

from .base import ActionSpace, as_action
from .formulation import Formulation, Row
from .labels import ArmLabels

__all__ = ["GraphicMatroid", "Matchings", "STPaths", "SpanningTrees"]

#: LP values are scaled by this and rounded for the integer max-flow; cuts are then checked in floats.
_FLOW_SCALE = 2.0**20
_FLOW_INF = 2**30
#: A point violates a cut when it is more than this outside it (the separators' own threshold).
_SEP_TOL = 1e-6
#: Max-flow runs per separation call (most violated sets are found by the first ones).
MAX_FLOWS_PER_CALL = 400
#: Add the single-commodity flow rows (trees, forests, paths on cyclic graphs) to formulations built from now on.
#: Off by default: with root cuts they did not pay on the measured families (forests 40x slower), and their
#: columns put a 20x20 grid past the size-limited Gurobi licence (bench/graphs_large.py, variant highs-flow).
FLOW_FORMULATION = False
#: Give paths of undirected graphs an orientation (a unit flow from s to t on the chosen edges; d columns):
#: the LP of the degree model alone puts its unit on two dead-end stubs at s and t.
ORIENTED_PATHS = True
#: Paths on graphs with fewer edges get no fractional separator (no root cuts): a space-only rule (the tie rule
#: holds). Measured side by side: root cuts made 5x5-grid paths (40 edges, bench/oracle.py) 2.4x slower and
#: 10x10-grid longest paths (180 edges) 1.9x faster.
PATH_ROOT_CUTS_MIN_EDGES = 100
#: HiGHS options of path MILPs on cyclic graphs (``Formulation.solver_hints``): after the root cuts HiGHS's own
#: cut generation dominated path solves (4,781 cuts in 1.2 s of one 1.7 s solve); a smaller cut pool
#: measured ~1.25x faster on longest paths of a 10x10 grid (bench/graphs_large.py).
PATH_HIGHS_HINTS: dict[str, object] = {"mip_pool_soft_limit": 200}


def _source_side(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, source: int, sink: int):
    """Max flow ``source -> sink`` on arcs ``tails -> heads`` with float ``caps``: (value, source-side mask)."""
    c = np.minimum(np.round(np.asarray(caps, float) * _FLOW_SCALE), _FLOW_INF).astype(np.int64)
    keep = c > 0
    a = sp.csr_matrix((c[keep], (tails[keep], heads[keep])), shape=(n, n), dtype=np.int64)
    a.sum_duplicates()
    a.data = np.minimum(a.data, _FLOW_INF)
    a = a.astype(np.int32)
    res = maximum_flow(a, source, sink, method="dinic")
    residual = (a - res.flow).tocsr()
    residual.data = (residual.data > 0).astype(np.int8)
    residual.eliminate_zeros()
    reach = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    side = np.zeros(n, bool)
    side[reach] = True
    return res.flow_value / _FLOW_SCALE, side


class _GraphSpace(ActionSpace):
    """Common storage: the graph, its edge list (arms) and integer endpoints."""

    def __init__(self, graph: Any, *, allow_directed: bool = False, labels: Iterable[Hashable] | None = None):
        if not isinstance(graph, nx.Graph):
            raise ValueError(f"graph must be a networkx graph, got {type(graph).__name__}")
        if graph.is_multigraph():
            raise ValueError("multigraphs are not supported: parallel edges would share a label")
        if graph.is_directed() and not allow_directed:
            raise ValueError(f"{type(self).__name__} needs an undirected graph")
        if graph.number_of_edges() == 0:
            raise ValueError("graph has no edges, so there are no arms")
        loops = list(nx.selfloop_edges(graph))
        if loops:
            raise ValueError(f"graph has self-loops (e.g. {loops[0]}); remove them")
        self.graph = graph
        self.arms = list(graph.edges())
        self.d = len(self.arms)
        self.nodes = list(graph.nodes())
        self.node_index = {v: k for k, v in enumerate(self.nodes)}
        self.tail = np.array([self.node_index[u] for u, _ in self.arms], dtype=np.int64)
        self.head = np.array([self.node_index[v] for _, v in self.arms], dtype=np.int64)
        self.n_nodes = len(self.nodes)
        self._set_labels(labels)

    def _make_labels(self) -> ArmLabels:
        return ArmLabels(self.d, edges=self.arms, undirected=not self.graph.is_directed())

    def _components(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Union-find over chosen edges: (component root per node, edges per root, nodes per root)."""
        parent = np.arange(self.n_nodes)

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for k in np.flatnonzero(action):
            ru, rv = find(self.tail[k]), find(self.head[k])
            if ru != rv:
                parent[ru] = rv
        roots = np.array([find(v) for v in range(self.n_nodes)])
        edges = np.bincount(roots[self.tail[action]], minlength=self.n_nodes)
        touched = np.zeros(self.n_nodes, bool)
        touched[self.tail[action]] = True
        touched[self.head[action]] = True
        nodes = np.bincount(roots[touched], minlength=self.n_nodes)
        return roots, edges, nodes

    def _is_forest(self, action: np.ndarray) -> bool:
        _, edges, nodes = self._components(action)
        return bool((edges < np.maximum(nodes, 1)).all())

    def _subtour_row(self, node_mask: np.ndarray) -> Row:
        inside = np.flatnonzero(node_mask[self.tail] & node_mask[self.head])
        size = int(node_mask.sum())
        return Row(tuple(int(k) for k in inside), (1.0,) * len(inside), -np.inf, float(size - 1))

    def separate_cycles(self, action: np.ndarray) -> list[Row]:
        """Subtour cuts on the node sets of the cycles of a cycle basis of the chosen edges.

        (The cut of a cycle's nodes is stronger than that of its whole component.)

        >>> import networkx as nx
        >>> space = GraphicMatroid(nx.complete_graph(4))
        >>> [(r.cols, r.ub) for r in space.separate_cycles(np.array([1, 1, 1, 1, 0, 0], bool))]
        [((0, 1, 3), 2.0)]
        """
        return self._cycle_rows(np.asarray(action, bool))

    def _cycle_rows(self, chosen: np.ndarray) -> list[Row]:
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
                rows.append(self._subtour_row(mask))
                done.add(int(roots[key[0]]))
        # a component whose only cycle the simple graph cannot show (two opposite arcs u->v, v->u): its own cut
        rows.extend(self._subtour_row(roots == r) for r in cyclic if int(r) not in done)
        return rows

    def separate_subtours_lp(self, x: np.ndarray) -> list[Row]:
        """Subtour cuts ``a(E(S)) <= |S| - 1`` violated by the LP point ``x`` (exact separation).

        Edges at 1 are contracted first (if ``u`` is in a violated ``S`` and
        ``x_uv = 1``, adding ``v`` keeps it violated); then a contracted node or a
        support component may be violated itself; else Padberg-Wolsey min cuts
        find the set minimising ``|S| - x(E(S))`` (at most
        :data:`MAX_FLOWS_PER_CALL` of them).

        >>> import networkx as nx
        >>> space = GraphicMatroid(nx.complete_graph(4))
        >>> x = np.array([0.8, 0.8, 0.0, 0.8, 0.0, 0.5])  # a heavy triangle 0-1-2 and the edge 2-3
        >>> [(r.cols, r.ub) for r in space.separate_subtours_lp(x)]
        [((0, 1, 3), 2.0)]
        """
        x = np.clip(np.asarray(x, float), 0.0, 1.0)
        n, tail, head = self.n_nodes, self.tail, self.head
        one = x >= 1.0 - _SEP_TOL
        _, label = connected_components(sp.csr_matrix((np.ones(one.sum()), (tail[one], head[one])), shape=(n, n)))
        size = np.bincount(label)
        inner = label[tail] == label[head]
        slack = size - np.bincount(label[tail[inner]], weights=x[inner], minlength=len(size))
        cuts, seen = [], set()

        def add(mask: np.ndarray) -> None:
            key = mask.tobytes()
            if key not in seen and mask.sum() >= 2:
                seen.add(key)
                row = self._subtour_row(mask)
                if np.dot(row.coefs, x[list(row.cols)]) > row.ub + _SEP_TOL:
                    cuts.append(row)

        cuts.extend(self._cycle_rows(one))  # the edges at 1 hold cycles: cut each cycle's nodes
        if cuts:
            return cuts
        sup = x > _SEP_TOL
        _, comp = connected_components(sp.csr_matrix((x[sup], (tail[sup], head[sup])), shape=(n, n)))
        for c in range(comp.max() + 1):
            add(comp == c)
        if cuts:
            return cuts
        # Padberg-Wolsey on the contracted support: f(S) = sum_{v in S} w_v + x(delta(S)) / 2, w = slack - b / 2
        cross = sup & ~inner
        lt, lh, xc = label[tail[cross]], label[head[cross]], x[cross]
        k = len(size)
        b = np.bincount(lt, weights=xc, minlength=k) + np.bincount(lh, weights=xc, minlength=k)
        w = slack - b / 2.0
        src, snk = k, k + 1
        neg, pos = np.flatnonzero(w < 0), np.flatnonzero(w > 0)
        base_t = np.concatenate([lt, lh, np.full(len(neg), src), pos])
        base_h = np.concatenate([lh, lt, neg, np.full(len(pos), snk)])
        base_c = np.concatenate([xc / 2.0, xc / 2.0, -w[neg], w[pos]])
        offset = -w[neg].sum()
        order = np.unique(np.concatenate([lt, lh]))
        for i, v in enumerate(order[:MAX_FLOWS_PER_CALL]):
            earlier = order[:i]
            tails = np.concatenate([base_t, [src], earlier])
            heads = np.concatenate([base_h, [v], np.full(len(earlier), snk)])
            caps = np.concatenate([base_c, np.full(1 + len(earlier), np.inf)])
            value, side = _source_side(k + 2, tails, heads, caps, src, snk)
            if value - offset < 1.0 - 1e-4:
                add(np.isin(label, np.flatnonzero(side[:k])))
        return cuts

    def separate_connectivity_lp(self, x: np.ndarray, s: int, t: int, directed: bool) -> list[Row]:
        """Cuts ``x(delta(S)) >= x(delta(v))`` (``v in S``; ``s, t`` not in ``S``) violated by ``x``.

        Directed: ``x(delta_in(S)) >= x(delta_in(v))`` with ``s`` not in ``S``.
        Each node ``v`` reached by ``x`` gets one min cut (between ``v`` and
        ``{s, t}``, or from ``s`` to ``v``), largest ``x(delta(v))`` first, nodes
        inside a set already found skipped, at most :data:`MAX_FLOWS_PER_CALL`.
        """
        x = np.clip(np.asarray(x, float), 0.0, 1.0)
        n, tail, head = self.n_nodes, self.tail, self.head
        into = np.bincount(head, weights=x, minlength=n)
        need = into if directed else into + np.bincount(tail, weights=x, minlength=n)
        cuts: list[Row] = []
        covered = np.zeros(n, bool)
        covered[[s, t]] = True

        def add(mask: np.ndarray, v: int) -> None:
            if directed:
                enter = ~mask[tail] & mask[head]
                coef = enter.astype(float) - (head == v)
            else:
                coef = (mask[tail] != mask[head]).astype(float) - ((tail == v) | (head == v))
            cols = np.flatnonzero(coef)
            row = Row(tuple(int(c) for c in cols), tuple(float(c) for c in coef[cols]), 0.0, np.inf)
            if np.dot(coef[cols], x[cols]) < -_SEP_TOL:
                cuts.append(row)
                covered[mask] = True

        # components of the edges above a threshold that hold neither s nor t (directed: that s cannot reach)
        seen = set()
        for theta in (_SEP_TOL, 0.3, 0.5, 0.7):
            keep = x > theta
            graph = sp.csr_matrix((x[keep], (tail[keep], head[keep])), shape=(n, n))
            _, comp = connected_components(graph, directed=False)
            outside = np.ones(n, bool)
            if directed:
                outside[breadth_first_order(graph, s, directed=True, return_predecessors=False)] = False
            else:
                outside[comp == comp[s]] = outside[comp == comp[t]] = False
            for c in np.unique(comp[outside & (need > _SEP_TOL)]):
                mask = (comp == c) & outside
                key = mask.tobytes()
                if key not in seen:
                    seen.add(key)
                    add(mask, int(np.flatnonzero(mask)[np.argmax(need[mask])]))
        if cuts:
            return cuts
        candidates = [int(v) for v in np.argsort(-need, kind="stable") if need[v] > _SEP_TOL and v not in (s, t)]
        flows = 0
        for v in candidates:
            if covered[v] or flows >= MAX_FLOWS_PER_CALL:
                continue
            flows += 1
            if directed:
                value, side = _source_side(n, tail, head, x, s, v)
                mask = ~side
            else:
                sink = n
                tails = np.concatenate([tail, head, [s, t]])
                heads = np.concatenate([head, tail, [sink, sink]])
                caps = np.concatenate([x, x, [np.inf, np.inf]])
                value, side = _source_side(n + 1, tails, heads, caps, v, sink)
                mask = side[:n]
            if value < need[v] - 1e-4:
                add(mask, v)
        return cuts

    def separate_st_cut_lp(self, x: np.ndarray, s: int, t: int, directed: bool) -> list[Row]:
        """The cut ``x(delta(S)) >= 1`` (``s`` in ``S``, ``t`` not) most violated by ``x``, if any (one max flow).

        Directed: ``x(delta_out(S)) >= 1``. Every s-t path leaves ``S``; without
        these rows the LP of the degree model sends its unit into two dead-end
        stubs at ``s`` and ``t`` (a visit variable at 1/2 gives a node degree 1).

        >>> import networkx as nx
        >>> space = STPaths(nx.path_graph(4), 0, 3)
        >>> [(r.cols, r.lb) for r in space.separate_st_cut_lp(np.array([1.0, 0.0, 1.0]), 0, 3, False)]
        [((1,), 1.0)]
        """
        x = np.clip(np.asarray(x, float), 0.0, 1.0)
        n, tail, head = self.n_nodes, self.tail, self.head
        if directed:
            value, side = _source_side(n, tail, head, x, s, t)
            crossing = side[tail] & ~side[head]
        else:
            tails, heads = np.concatenate([tail, head]), np.concatenate([head, tail])
            value, side = _source_side(n, tails, heads, np.concatenate([x, x]), s, t)
            crossing = side[tail] != side[head]
        if value >= 1.0 - 1e-4:
            return []
        cols = tuple(int(k) for k in np.flatnonzero(crossing))
        if x[list(cols)].sum() > 1.0 - _SEP_TOL:  # pragma: no cover - the flow's rounding
            return []
        return [Row(cols, (1.0,) * len(cols), 1.0, np.inf)]

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

    def _iter_forests(self, size: int | None) -> Iterator[np.ndarray]:
        """Backtracking over edges with union-find; only forests of ``size`` edges if given."""
        d = self.d
        chosen = np.zeros(d, bool)
        parent = list(range(self.n_nodes))

        def find(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        def rec(k: int, count: int) -> Iterator[np.ndarray]:
            if size is not None and count + (d - k) < size:
                return
            if k == d:
                if size is None or count == size:
                    yield chosen.copy()
                return
            if size is None or count < size:
                ru, rv = find(self.tail[k]), find(self.head[k])
                if ru != rv:
                    parent[ru] = rv
                    chosen[k] = True
                    yield from rec(k + 1, count + 1)
                    chosen[k] = False
                    parent[ru] = ru
            yield from rec(k + 1, count)

        return rec(0, 0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n_nodes} nodes, {self.d} edges)"


class GraphicMatroid(_GraphSpace):
    """Forests (acyclic edge sets) of an undirected graph.

    >>> import networkx as nx
    >>> GraphicMatroid(nx.complete_graph(3)).m
    2
    """

    def __init__(self, graph: Any, *, labels: Iterable[Hashable] | None = None):
        super().__init__(graph, labels=labels)

    def _max_arms(self) -> int:
        return self.n_nodes - nx.number_connected_components(self.graph)

    def _contains(self, action: np.ndarray) -> bool:
        return self._is_forest(action)

    def _iter_actions(self) -> Iterator[np.ndarray]:
        return self._iter_forests(None)

    def count_upper_bound(self) -> int:
        return sum(comb(self.d, k) for k in range(self.m + 1))

    def _build_formulation(self) -> Formulation:
        rank = Row(tuple(range(self.d)), (1.0,) * self.d, -np.inf, float(self.m))
        f = Formulation(
            d=self.d,
            rows=[rank, *self._short_cycle_rows()],
            separators=[self.separate_cycles],
            fractional_separators=[self.separate_subtours_lp],
        )
        if FLOW_FORMULATION:
            self._add_forest_flow(f)
        return f

    def _add_forest_flow(self, f: Formulation) -> None:
        """A forest plus one binary root edge per component is a spanning tree of the graph plus a root node.

        Binary ``r_v`` marks the component roots (``sum a + sum r = n``); a
        virtual root sends one unit to every node through the chosen edges and
        up to ``n r_v`` into ``v``. An integer point with a cycle has more
        components than ``n - sum a`` roots, so some component gets no flow.
        """
        n = self.n_nodes
        roots = [f.add_aux(0.0, 1.0, True, f"root{v}", exact_only=True) for v in range(n)]
        f.rows.append(Row((*range(self.d), *roots), (1.0,) * (self.d + n), float(n), float(n)))
        feed = [f.add_aux(0.0, float(n), False, f"feed{v}", exact_only=True) for v in range(n)]
        f.rows.extend(Row((feed[v], roots[v]), (1.0, -float(n)), -np.inf, 0.0) for v in range(n))
        # the feed enters v: it counts as flow in, i.e. v's demand is 1 - feed_v
        self._add_flow(f, -1, float(n), {v: (1.0, (feed[v],), (-1.0,)) for v in range(n)})


class SpanningTrees(_GraphSpace):
    """Spanning trees of a connected undirected graph.

    >>> import networkx as nx
    >>> len(SpanningTrees(nx.complete_graph(4)).enumerate())
    16
    """

    def __init__(self, graph: Any, *, labels: Iterable[Hashable] | None = None):
        super().__init__(graph, labels=labels)
        if not nx.is_connected(graph):
            raise ValueError("SpanningTrees needs a connected graph")
        self.__dict__["m"] = self.n_nodes - 1

    def _contains(self, action: np.ndarray) -> bool:
        return int(action.sum()) == self.n_nodes - 1 and self._is_forest(action)

    def _iter_actions(self) -> Iterator[np.ndarray]:
        return self._iter_forests(self.n_nodes - 1)

    def count_upper_bound(self) -> int:
        return comb(self.d, self.n_nodes - 1)

    def _build_formulation(self) -> Formulation:
        n1 = float(self.n_nodes - 1)
        rows = [Row(tuple(range(self.d)), (1.0,) * self.d, n1, n1)]
        for v in range(self.n_nodes):  # every node is touched by a spanning tree
            incident = np.flatnonzero((self.tail == v) | (self.head == v))
            rows.append(Row(tuple(int(k) for k in incident), (1.0,) * len(incident), 1.0, np.inf))
        rows.extend(self._short_cycle_rows())
        f = Formulation(
            d=self.d, rows=rows, separators=[self.separate_cycles], fractional_separators=[self.separate_subtours_lp]
        )
        if FLOW_FORMULATION:  # node 0 sends one unit to every other node: integer points are connected
            self._add_flow(f, 0, n1, {v: (1.0, (), ()) for v in range(1, self.n_nodes)})
        return f


class STPaths(_GraphSpace):
    """Simple paths from ``source`` to ``target`` (directed if the graph is).

    >>> import networkx as nx
    >>> g = nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 0)])
    >>> sorted(STPaths(g, 0, 2).enumerate().astype(int).tolist())
    [[0, 1, 0, 0], [1, 0, 1, 0]]
    """

    def __init__(self, graph: Any, source: Any, target: Any, *, labels: Iterable[Hashable] | None = None):
        super().__init__(graph, allow_directed=True, labels=labels)
        for name, v in (("source", source), ("target", target)):
            if v not in graph:
                raise ValueError(f"{name} {v!r} is not a node of the graph")
        if source == target:
            raise ValueError("source and target must differ")
        if not nx.has_path(graph, source, target):
            raise ValueError(f"there is no path from {source!r} to {target!r}")
        self.source, self.target = source, target
        self.s, self.t = self.node_index[source], self.node_index[target]
        self.directed = graph.is_directed()
        self.acyclic = self.directed and nx.is_directed_acyclic_graph(graph)

    def _max_arms(self) -> int:
        if self.acyclic:
            best = {self.source: 0}
            for v in nx.topological_sort(self.graph):
                if v not in best:
                    continue
                for w in self.graph.successors(v):
                    best[w] = max(best.get(w, -1), best[v] + 1)
            return best[self.target]
        return super()._max_arms()

    def _contains(self, action: np.ndarray) -> bool:
        k = int(action.sum())
        if k == 0:
            return False
        tail, head = self.tail[action], self.head[action]
        if self.directed:
            out_deg = np.bincount(tail, minlength=self.n_nodes)
            in_deg = np.bincount(head, minlength=self.n_nodes)
            balance = np.zeros(self.n_nodes, np.int64)
            balance[self.s], balance[self.t] = 1, -1
            if in_deg[self.s] != 0 or (out_deg - in_deg != balance).any() or (in_deg > 1).any():
                return False
        else:
            deg = np.bincount(np.concatenate([tail, head]), minlength=self.n_nodes)
            if deg[self.s] != 1 or deg[self.t] != 1:
                return False
            inner = np.ones(self.n_nodes, bool)
            inner[[self.s, self.t]] = False
            if not np.isin(deg[inner], (0, 2)).all():
                return False
        # degrees fit one s-t path plus disjoint cycles; a forest has no cycle
        return self._is_forest(action)

    def path_nodes(self, action: Any) -> list:
        """The nodes of a path action, from source to target.

        >>> import networkx as nx
        >>> space = STPaths(nx.Graph([("c", "t"), ("s", "b"), ("b", "c")]), "s", "t")
        >>> space.path_nodes([1, 1, 1])
        ['s', 'b', 'c', 't']
        """
        a = as_action(action, self.d)
        if not self._contains(a):
            raise ValueError(f"action is not a path from {self.source!r} to {self.target!r} of this space")
        step: dict[int, list[int]] = {}
        for k in np.flatnonzero(a):
            u, v = int(self.tail[k]), int(self.head[k])
            step.setdefault(u, []).append(v)
            if not self.directed:
                step.setdefault(v, []).append(u)
        order, previous = [self.s], -1
        while order[-1] != self.t:
            here = order[-1]
            order.append(next(w for w in step[here] if w != previous))
            previous = here
        return [self.nodes[i] for i in order]

    def path_edges(self, action: Any) -> list[tuple]:
        """The edges of a path action in path order, each written ``(from, to)`` as travelled.

        >>> import networkx as nx
        >>> space = STPaths(nx.Graph([("c", "t"), ("s", "b"), ("b", "c")]), "s", "t")
        >>> space.path_edges([1, 1, 1])
        [('s', 'b'), ('b', 'c'), ('c', 't')]
        """
        nodes = self.path_nodes(action)
        return list(pairwise(nodes))

    def _iter_actions(self) -> Iterator[np.ndarray]:
        index = {e: k for k, e in enumerate(self.arms)}
        for path in nx.all_simple_edge_paths(self.graph, self.source, self.target):
            a = np.zeros(self.d, bool)
            for u, v in path:
                a[index[(u, v)] if (u, v) in index else index[(v, u)]] = True
            yield a

    def _build_formulation(self) -> Formulation:
        f = Formulation(d=self.d)
        ones = np.ones(self.d)
        if self.directed:
            for v in range(self.n_nodes):
                out_e = np.flatnonzero(self.tail == v)
                in_e = np.flatnonzero(self.head == v)
                rhs = 1.0 if v == self.s else (-1.0 if v == self.t else 0.0)
                cols = tuple(int(k) for k in np.concatenate([out_e, in_e]))
                coefs = tuple(np.concatenate([ones[out_e], -ones[in_e]]))
                f.rows.append(Row(cols, coefs, rhs, rhs))
                if not self.acyclic and len(in_e):
                    cap = 0.0 if v == self.s else 1.0
                    f.rows.append(Row(tuple(int(k) for k in in_e), (1.0,) * len(in_e), -np.inf, cap))
            if self.acyclic:
                f.integral_lp = True
            else:
                f.separators.append(self.separate_cycles)
                if self.d >= PATH_ROOT_CUTS_MIN_EDGES:
                    f.fractional_separators.append(self._separate_paths_lp)
                f.solver_hints["highs"] = dict(PATH_HIGHS_HINTS)
                if FLOW_FORMULATION:  # s reaches every entered node: no cycle apart from the path
                    n1 = float(self.n_nodes - 1)
                    demand = {}
                    for v in range(self.n_nodes):
                        in_e = tuple(int(k) for k in np.flatnonzero(self.head == v))
                        if v != self.s and in_e:
                            demand[v] = (0.0, in_e, (1.0,) * len(in_e))
                    self._add_flow(f, self.s, n1, demand)
        else:
            visit: dict[int, int] = {}
            for v in range(self.n_nodes):
                incident = np.flatnonzero((self.tail == v) | (self.head == v))
                cols = tuple(int(k) for k in incident)
                if v in (self.s, self.t):
                    f.rows.append(Row(cols, (1.0,) * len(cols), 1.0, 1.0))
                else:
                    z = f.add_aux(0.0, 1.0, True, f"visit{v}")
                    f.rows.append(Row((*cols, z), (*(1.0,) * len(cols), -2.0), 0.0, 0.0))
                    visit[v] = z
            self._oriented = ORIENTED_PATHS
            if ORIENTED_PATHS:
                self._add_orientation(f)
            f.separators.append(self.separate_cycles)
            if self.d >= PATH_ROOT_CUTS_MIN_EDGES:
                f.fractional_separators.append(self._separate_paths_lp)
            f.solver_hints["highs"] = dict(PATH_HIGHS_HINTS)
            if FLOW_FORMULATION:  # s sends one unit to every visited node and to t: no cycle apart from the path
                demand = {v: (0.0, (z,), (1.0,)) for v, z in visit.items()}
                demand[self.t] = (1.0, (), ())
                self._add_flow(f, self.s, float(self.n_nodes - 1), demand)
        return f

    def _add_orientation(self, f: Formulation) -> None:
        """Orient the chosen edges: a unit of flow from ``s`` to ``t`` on them (``d`` columns, ``d + n`` rows).

        Column ``y_e`` in ``[0, x_e]`` is the part of edge ``e = (u, v)`` travelled
        ``u -> v`` (the rest, ``x_e - y_e``, goes ``v -> u``); every node but ``s``
        and ``t`` conserves the net flow ``2 y_e - x_e``. Every path plus disjoint
        cycles can be oriented so, hence the integer points are unchanged; the LP
        loses the points that split the unit into dead ends at ``s`` and ``t``
        (every s-t cut now holds at least 1).
        """
        names = [f"dir{k}" for k in range(self.d)]
        first = f.add_aux_block(np.zeros(self.d), np.ones(self.d), False, names, optional=True)
        f.rows.extend(Row((first + k, k), (1.0, -1.0), -np.inf, 0.0) for k in range(self.d))
        for v in range(self.n_nodes):
            out_e, in_e = np.flatnonzero(self.tail == v), np.flatnonzero(self.head == v)
            cols = [first + int(k) for k in out_e] + [int(k) for k in out_e]
            cols += [first + int(k) for k in in_e] + [int(k) for k in in_e]
            coefs = [2.0] * len(out_e) + [-1.0] * len(out_e) + [-2.0] * len(in_e) + [1.0] * len(in_e)
            rhs = 1.0 if v == self.s else (-1.0 if v == self.t else 0.0)
            f.rows.append(Row(tuple(cols), tuple(coefs), rhs, rhs))

    def _separate_paths_lp(self, x: np.ndarray) -> list[Row]:
        chosen = x > 0.5
        if np.all(np.abs(x - chosen) <= _SEP_TOL) and self._contains(chosen):
            return []  # an integral point that is a path violates no valid row: no max flow needed
        cuts = []
        if not self.directed and not self.__dict__.get("_oriented", False):  # else the flow rows imply them
            cuts = self.separate_st_cut_lp(x, self.s, self.t, self.directed)
        return cuts + self.separate_connectivity_lp(x, self.s, self.t, self.directed)


class Matchings(_GraphSpace):
    """Matchings of an undirected graph (perfect matchings if ``perfect``).

    >>> import networkx as nx
    >>> len(Matchings(nx.complete_graph(4), perfect=True).enumerate())
    3
    """

    def __init__(self, graph: Any, perfect: bool = False, *, labels: Iterable[Hashable] | None = None):
        super().__init__(graph, labels=labels)
        self.perfect = bool(perfect)
        self.bipartite = nx.is_bipartite(graph)
        size = len(nx.max_weight_matching(graph, maxcardinality=True))
        if self.perfect and 2 * size != self.n_nodes:
            raise ValueError("the graph has no perfect matching")
        self.__dict__["m"] = size

    def _contains(self, action: np.ndarray) -> bool:
        deg = np.bincount(np.concatenate([self.tail[action], self.head[action]]), minlength=self.n_nodes)
        if self.perfect:
            return bool((deg == 1).all())
        return bool((deg <= 1).all())

    def _iter_actions(self) -> Iterator[np.ndarray]:
        d = self.d
        chosen = np.zeros(d, bool)
        used = np.zeros(self.n_nodes, bool)
        target = self.n_nodes // 2 if self.perfect else None

        def rec(k: int, count: int) -> Iterator[np.ndarray]:
            if target is not None and count + (d - k) < target:
                return
            if k == d:
                if target is None or count == target:
                    yield chosen.copy()
                return
            u, v = self.tail[k], self.head[k]
            if not used[u] and not used[v]:
                used[u] = used[v] = chosen[k] = True
                yield from rec(k + 1, count + 1)
                used[u] = used[v] = chosen[k] = False
            yield from rec(k + 1, count)

        return rec(0, 0)

    def count_upper_bound(self) -> int:
        return sum(comb(self.d, k) for k in range(self.m + 1))

    def _build_formulation(self) -> Formulation:
        rows = []
        for v in range(self.n_nodes):
            incident = np.flatnonzero((self.tail == v) | (self.head == v))
            lb = 1.0 if self.perfect else -np.inf
            rows.append(Row(tuple(int(k) for k in incident), (1.0,) * len(incident), lb, 1.0))
        return Formulation(d=self.d, rows=rows, integral_lp=self.bipartite)
