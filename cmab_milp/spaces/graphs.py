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
* s-t paths (:class:`~cmab_milp.spaces.paths.STPaths`, in :mod:`~cmab_milp.spaces.paths`; importable from here):
  a degree/flow model plus the same forest cut of any cycle.
* optionally (option ``flow``) trees, forests and cyclic paths get
  single-commodity flow rows on extra columns, which make every integer point
  an action without lazy cuts; they are marked ``aux_exact_only`` so root cuts
  are separated on the LP without them.
* matchings use degree rows; they are integral as LPs on bipartite graphs.

Speed-ups that change no answer's value: spanning trees write a subtour row of a
large set on its sparse side ``a(E) - a(E(S)) >= n - |S|`` (option ``sparse_cuts``;
equal to the dense row on ``sum a = n - 1``); the formulations name their LP
separator (``"subtours"``, :mod:`cmab_milp.oracles.mip.graph_cuts`). Every option
is a keyword of the constructor (and a key of a problem file's ``[space]`` table),
checked before anything is built.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.SpanningTrees(nx.cycle_graph(4), sparse_cuts=False)
>>> len(space.enumerate()), space.m
(4, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from math import comb
from typing import Any

import networkx as nx
import numpy as np

from ..described import ParameterError
from .formulation import Formulation, NamedSeparator, Row
from .graph_base import _flag, _GraphSpace
from .graph_presolve import unusable_matching_arms
from .paths import STPaths

__all__ = ["GraphicMatroid", "Matchings", "STPaths", "SpanningTrees"]


class GraphicMatroid(_GraphSpace):
    """Forests (acyclic edge sets) of an undirected graph.

    Parameters
    ----------
    graph : networkx.Graph
        Arm ``k`` is ``list(graph.edges())[k]``; edges are also accepted by their ``(u, v)`` label.
    flow : bool
        Adds single-commodity flow rows on extra columns (every integer point is then a forest
        without lazy cuts); off by default (slower where measured: docs/performance.md, "Graphs").
    labels : iterable of hashables, optional
        Names replacing the edge labels.

    Examples
    --------
    >>> import networkx as nx
    >>> GraphicMatroid(nx.complete_graph(3)).m
    2
    >>> GraphicMatroid(nx.complete_graph(3), flow=True).formulation().n_aux
    12
    """

    helpers = (*_GraphSpace.helpers, "flow")

    def __init__(self, graph: Any, *, flow: bool = False, labels: Iterable[Hashable] | None = None):
        self.flow = _flag("flow", flow)
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
            fractional_separators=[NamedSeparator("subtours", self)],
        )
        if self.flow:
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

    Options of the formulation (the actions are the same either way): ``flow=True`` adds single-commodity
    flow rows (off by default, as for :class:`GraphicMatroid`); ``sparse_cuts`` (default ``True``) writes a
    subtour row of a large node set ``S`` on its sparse side ``a(E) - a(E(S)) >= n - |S|`` (equal to the
    dense row on ``sum a = n - 1``).

    >>> import networkx as nx
    >>> len(SpanningTrees(nx.complete_graph(4)).enumerate())
    16
    >>> SpanningTrees(nx.complete_graph(4), sparse_cuts=False).sparse_cuts
    False
    """

    helpers = (*_GraphSpace.helpers, "flow", "sparse_cuts")

    def __init__(
        self, graph: Any, *, flow: bool = False, sparse_cuts: bool = True, labels: Iterable[Hashable] | None = None
    ):
        self.flow = _flag("flow", flow)
        self.sparse_cuts = _flag("sparse_cuts", sparse_cuts)
        self._complement_cuts = self.sparse_cuts
        super().__init__(graph, labels=labels)
        if not nx.is_connected(graph):
            raise ParameterError("graph", "SpanningTrees needs a connected graph")
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
            d=self.d,
            rows=rows,
            separators=[self.separate_cycles],
            fractional_separators=[NamedSeparator("subtours", self)],
        )
        if self.flow:  # node 0 sends one unit to every other node: integer points are connected
            self._add_flow(f, 0, n1, {v: (1.0, (), ()) for v in range(1, self.n_nodes)})
        return f


class Matchings(_GraphSpace):
    """Matchings of an undirected graph (perfect matchings if ``perfect``).

    Parameters
    ----------
    graph : networkx.Graph
        Undirected, bipartite or general; arm ``k`` is ``list(graph.edges())[k]``.
    perfect : bool
        Only perfect matchings (``ValueError`` if the graph has none).
    labels : iterable of hashables, optional
        Names replacing the edge labels.

    Examples
    --------
    >>> import networkx as nx
    >>> len(Matchings(nx.complete_graph(4), perfect=True).enumerate())
    3
    """

    helpers = (*_GraphSpace.helpers, "perfect", "bipartite")

    def __init__(self, graph: Any, perfect: bool = False, *, labels: Iterable[Hashable] | None = None):
        super().__init__(graph, labels=labels)
        self.perfect = bool(perfect)
        self.bipartite = nx.is_bipartite(graph)
        size = len(nx.max_weight_matching(graph, maxcardinality=True))
        if self.perfect and 2 * size != self.n_nodes:
            raise ParameterError("graph", "the graph has no perfect matching")
        self.__dict__["m"] = size

    def _contains(self, action: np.ndarray) -> bool:
        deg = np.bincount(np.concatenate([self.tail[action], self.head[action]]), minlength=self.n_nodes)
        if self.perfect:
            return bool((deg == 1).all())
        return bool((deg <= 1).all())

    def _iter_actions(self) -> Iterator[np.ndarray]:
        used = np.zeros(self.n_nodes, bool)

        def match(k: int) -> Callable[[], None] | None:
            u, v = self.tail[k], self.head[k]
            if used[u] or used[v]:
                return None
            used[u] = used[v] = True
            return lambda: used.__setitem__([u, v], False)

        return self._iter_edge_sets(self.n_nodes // 2 if self.perfect else None, match)

    def count_upper_bound(self) -> int:
        return sum(comb(self.d, k) for k in range(self.m + 1))

    def _build_formulation(self) -> Formulation:
        rows = []
        for v in range(self.n_nodes):
            incident = np.flatnonzero((self.tail == v) | (self.head == v))
            lb = 1.0 if self.perfect else -np.inf
            rows.append(Row(tuple(int(k) for k in incident), (1.0,) * len(incident), lb, 1.0))
        fixed = np.flatnonzero(self.unusable_arms())
        if len(fixed):  # presolved by the graph: edges in no perfect matching, forced to 0 by one row
            rows.append(Row(tuple(int(k) for k in fixed), (1.0,) * len(fixed), -np.inf, 0.0))
        return Formulation(d=self.d, rows=rows, integral_lp=self.bipartite)

    def unusable_arms(self, budgets: Sequence[tuple[np.ndarray, float]] = ()) -> np.ndarray:
        """A mask of the edges in no action: for perfect matchings of a bipartite graph, the edges in no perfect
        matching (:func:`~.graph_presolve.unusable_matching_arms`); none otherwise (budgets are not read).

        >>> import networkx as nx
        >>> Matchings(nx.path_graph(4), perfect=True).unusable_arms().tolist()  # the middle edge leaves 0 and 3 alone
        [False, True, False]
        """
        return self._memo("_unusable", lambda: unusable_matching_arms(self))
