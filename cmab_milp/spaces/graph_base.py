"""The common storage of the graph spaces: the graph, its edge list (the arms), integer endpoints.

:class:`_GraphSpace` validates the graph (a networkx graph without parallel edges or
self-loops), numbers nodes and edges, and offers the union-find helpers the spaces
of :mod:`~cmab_milp.spaces.graphs` and :mod:`~cmab_milp.spaces.paths` share (forest test, forest enumeration); with
:class:`~.graph_rows.GraphRows` it writes their subtour rows. :func:`_flag` and
:func:`_count` check the formulation options of the constructors.

>>> import networkx as nx
>>> from cmab_milp.spaces.graphs import GraphicMatroid
>>> space = GraphicMatroid(nx.complete_graph(3))
>>> space.arms, bool(space._is_forest(np.array([1, 1, 0], bool)))
([(0, 1), (0, 2), (1, 2)], True)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

import networkx as nx
import numpy as np

from ..described import ParameterError
from .base import ActionSpace
from .graph_rows import GraphRows
from .labels import ArmLabels


def _flag(name: str, value: Any) -> bool:
    """A formulation option that must be ``True`` or ``False``."""
    if not isinstance(value, bool | np.bool_):
        raise ParameterError(name, f"{name} must be true or false, got {value!r}")
    return bool(value)


def _count(name: str, value: Any) -> int:
    """A size threshold: a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ParameterError(name, f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


class _GraphSpace(GraphRows, ActionSpace):
    """Common storage: the graph, its edge list (arms) and integer endpoints."""

    helpers: tuple[str, ...] = ("graph", "nodes", "n_nodes", "node_index")

    def __init__(self, graph: Any, *, allow_directed: bool = False, labels: Iterable[Hashable] | None = None):
        if not isinstance(graph, nx.Graph):
            raise ParameterError("graph", f"graph must be a networkx graph, got {type(graph).__name__}")
        if graph.is_multigraph():
            raise ParameterError("graph", "multigraphs are not supported: parallel edges would share a label")
        if graph.is_directed() and not allow_directed:
            raise ParameterError("graph", f"{type(self).__name__} needs an undirected graph")
        if graph.number_of_edges() == 0:
            raise ParameterError("graph", "graph has no edges, so there are no arms")
        loops = list(nx.selfloop_edges(graph))
        if loops:
            raise ParameterError("graph", f"graph has self-loops (e.g. {loops[0]}); remove them")
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

    def _iter_forests(self, size: int | None) -> Iterator[np.ndarray]:
        """Backtracking over edges with union-find; only forests of ``size`` edges if given."""
        parent = list(range(self.n_nodes))

        def find(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        def join(k: int) -> Callable[[], None] | None:
            ru, rv = find(self.tail[k]), find(self.head[k])
            if ru == rv:
                return None
            parent[ru] = rv
            return lambda: parent.__setitem__(ru, ru)

        return self._iter_edge_sets(size, join)

    def _iter_edge_sets(
        self, size: int | None, take: Callable[[int], Callable[[], None] | None]
    ) -> Iterator[np.ndarray]:
        """Every edge set the rule ``take`` allows, by backtracking over the edges in index order (edge ``k`` in,
        then out); ``size``: only sets of that many edges.

        ``take(k)`` adds edge ``k`` to the rule's state and returns how to undo it, or None if it cannot join.
        """
        d = self.d
        chosen = np.zeros(d, bool)

        def rec(k: int, count: int) -> Iterator[np.ndarray]:
            if size is not None and count + (d - k) < size:
                return
            if k == d:
                if size is None or count == size:
                    yield chosen.copy()
                return
            undo = take(k) if size is None or count < size else None
            if undo is not None:
                chosen[k] = True
                yield from rec(k + 1, count + 1)
                chosen[k] = False
                undo()
            yield from rec(k + 1, count)

        return rec(0, 0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n_nodes} nodes, {self.d} edges)"
