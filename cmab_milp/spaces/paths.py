"""s-t paths of a graph (directed if the graph is): the space, its formulation and its options.

Exactness of the formulation: a degree/flow model whose integer solutions are one
simple s-t path plus vertex-disjoint cycles; the forest cut of a cycle's nodes
(valid because a simple path is a forest) removes any cycle, so the lazy loop ends
on a simple path. On a DAG no cycle exists and the flow LP is integral. On
undirected graphs (option ``oriented``, default on) ``d`` continuous columns orient
the chosen edges as a unit flow from ``s`` to ``t``: the degree rows alone let the
LP put its unit on two dead-end stubs at ``s`` and ``t``; with the flow every s-t
cut holds 1 and shortest-path LPs are exact. The columns are ``aux_optional``
(dropped for solvers that take integer columns only). On LP points the
connectivity cuts ``a(delta(S)) >= a(delta(v))`` for ``v in S``, ``s, t`` outside
``S`` (directed: ``a(delta_in(S)) >= a(delta_in(v))``, ``s`` outside) hold: a path
through ``v`` enters ``S`` (and leaves it); the formulation names their separator
(``"st_paths"``, :mod:`cmab_milp.oracles.mip.graph_cuts`) from ``cuts_min_edges``
edges (digraphs with cycles: ``min(cuts_min_edges, cuts_min_arcs)`` arcs). With
``flow=True`` cyclic paths also get single-commodity flow rows (every integer
point is then a path without lazy cuts).

Every path space names its MIP-start heuristic (``solver_hints["start"]``:
:mod:`~cmab_milp.oracles.mip.graph_starts`, used by the ``highs`` backend from the
sizes in its :class:`~cmab_milp.oracles.mip.tuning.HighsTuning`), its family
(``"cyclic_paths"``: the oracle side keeps the family's HiGHS options), and, when
its rows hold every s-t cut, that queries with weights <= 0 may skip the root cuts
(``solver_hints["root_cuts"]``).

Every option is a keyword of the constructor (and a key of a problem file's
``[space]`` table), checked before anything is built:

>>> import networkx as nx
>>> STPaths(nx.cycle_graph(4), 0, 2, oriented=False).formulation().n_aux
2
>>> STPaths(nx.cycle_graph(4), 0, 2, flow="yes")
Traceback (most recent call last):
...
cmab_milp.described.ParameterError: flow must be true or false, got 'yes'
>>> space = STPaths(nx.cycle_graph(4), 0, 2)
>>> len(space.enumerate()), space.m
(2, 2)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from itertools import pairwise
from typing import Any

import networkx as nx
import numpy as np

from .._names import close_names, shown_names
from ..described import ParameterError
from .base import as_action
from .formulation import Formulation, NamedSeparator, Row
from .graph_base import _count, _flag, _GraphSpace
from .graph_presolve import unusable_path_arms

__all__ = ["STPaths"]


class STPaths(_GraphSpace):
    """Simple paths from ``source`` to ``target`` (directed if the graph is).

    Parameters
    ----------
    graph : networkx.Graph or networkx.DiGraph
        Cycles allowed (simple paths are enforced by lazily separated cuts); arm ``k`` is
        ``list(graph.edges())[k]``.
    source, target : node labels
        Nodes of ``graph`` (``ValueError`` naming the close ones otherwise).
    labels : iterable of hashables, optional
        Names replacing the edge labels. The formulation options (``oriented``, ``flow``,
        ``cuts_min_edges``, ``cuts_min_arcs``) change the model, never the actions.

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 0)])
    >>> sorted(STPaths(g, 0, 2).enumerate().astype(int).tolist())
    [[0, 1, 0, 0], [1, 0, 1, 0]]
    """

    helpers = (
        *_GraphSpace.helpers,
        *("source", "target", "directed", "path_nodes", "path_edges"),
        *("oriented", "flow", "cuts_min_edges", "cuts_min_arcs"),
    )

    def __init__(
        self,
        graph: Any,
        source: Any,
        target: Any,
        *,
        oriented: bool = True,
        flow: bool = False,
        cuts_min_edges: int = 100,
        cuts_min_arcs: int = 40,
        labels: Iterable[Hashable] | None = None,
    ):
        self.oriented = _flag("oriented", oriented)
        self.flow = _flag("flow", flow)
        self.cuts_min_edges = _count("cuts_min_edges", cuts_min_edges)
        self.cuts_min_arcs = _count("cuts_min_arcs", cuts_min_arcs)
        super().__init__(graph, allow_directed=True, labels=labels)
        missing = []
        for name, v in (("source", source), ("target", target)):
            if v not in graph:
                close = close_names(v, list(graph), n=3)
                hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
                missing.append(f"{name} {v!r} is not a node of the graph{hint}")
        if missing:
            nodes = list(graph)
            raise ParameterError(
                "source" if source not in graph else "target",
                f"{'; '.join(missing)}; its {len(nodes)} nodes: {shown_names(nodes)}",
            )
        if source == target:
            raise ParameterError("source", "source and target must differ")
        if not nx.has_path(graph, source, target):
            raise ValueError(f"there is no path from {source!r} to {target!r}")
        self.source, self.target = source, target
        self.s, self.t = self.node_index[source], self.node_index[target]
        self.directed = graph.is_directed()
        self.acyclic = self.directed and nx.is_directed_acyclic_graph(graph)

    def count_upper_bound(self) -> int:
        """A closed-form bound on the simple s-t paths (and on the simple paths from ``s`` a search visits).

        A simple path is fixed by the arm it leaves each visited node by, and never leaves
        a node back to where it came from: at most ``prod_v max(1, c_v)`` paths, with ``c_v``
        the node's out-degree, less one when every neighbour it is entered from is also
        one it may leave to (not at ``s``). On a DAG: the number of paths from ``s`` to any node
        (exact, by dynamic programming).

        >>> import networkx as nx
        >>> g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
        >>> len(STPaths(g, 0, 8).enumerate()), STPaths(g, 0, 8).count_upper_bound()
        (12, 96)
        """
        graph = self.graph
        if self.acyclic:  # a DAG: the paths from s to every node, counted exactly in topological order
            paths = {self.source: 1}
            for v in nx.topological_sort(graph):
                for w in graph.successors(v):
                    if v in paths and v != self.target:
                        paths[w] = paths.get(w, 0) + paths[v]
            return sum(paths.values())
        bound = 1
        for v in graph.nodes:
            if v == self.target:
                continue
            if self.directed:
                out, into = set(graph.successors(v)), set(graph.predecessors(v))
                choices = len(out) - (1 if v != self.source and into and into <= out else 0)
            else:
                choices = graph.degree(v) - (0 if v == self.source else 1)
            bound *= max(1, choices)
        return bound

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
                if self.d >= min(self.cuts_min_edges, self.cuts_min_arcs):
                    f.fractional_separators.append(NamedSeparator("st_paths", self))
                f.solver_hints["family"] = {"name": "cyclic_paths"}
                if self.flow:  # s reaches every entered node: no cycle apart from the path
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
            self._oriented = self.oriented
            if self.oriented:
                self._add_orientation(f)
            f.separators.append(self.separate_cycles)
            if self.d >= self.cuts_min_edges:
                f.fractional_separators.append(NamedSeparator("st_paths", self))
            f.solver_hints["family"] = {"name": "cyclic_paths"}
            if self.flow:  # s sends one unit to every visited node and to t: no cycle apart from the path
                demand = {v: (0.0, (z,), (1.0,)) for v, z in visit.items()}
                demand[self.t] = (1.0, (), ())
                self._add_flow(f, self.s, float(self.n_nodes - 1), demand)
        fixed = np.flatnonzero(self.unusable_arms())
        if len(fixed):  # presolved by the graph: arcs no simple s-t path uses (one row, forcing them all to 0)
            f.rows.append(Row(tuple(int(k) for k in fixed), (1.0,) * len(fixed), -np.inf, 0.0))
        if self.directed or self._oriented:  # the rows hold every s-t cut (unoriented: s-t cuts needed)
            f.solver_hints["root_cuts"] = {"skip_nonpositive": True}  # a query with weights <= 0 gains from no cut
        # the start heuristic of every path space (the highs backend decides from which size: HighsTuning);
        # rows added after this point are side rows to it
        f.solver_hints["start"] = {"space": self, "rows": f.n_rows}
        return f

    def unusable_arms(self, budgets: Sequence[tuple[np.ndarray, float]] = ()) -> np.ndarray:
        """A mask of the arms in no action (also under budget rows ``(c, b)``: ``c @ a <= b``, ``c >= 0``).

        See :mod:`.graph_presolve`; the formulation fixes them to 0 (the rule spaces, under their budgets).

        >>> import networkx as nx
        >>> STPaths(nx.Graph([(0, 1), (1, 2), (1, 3)]), 0, 2).unusable_arms().tolist()  # (1, 3): a pendant edge
        [False, False, True]
        """
        if not budgets:
            return self._memo("_unusable", lambda: unusable_path_arms(self))
        return unusable_path_arms(self, budgets)

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
