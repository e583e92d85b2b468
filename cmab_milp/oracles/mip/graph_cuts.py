"""Separators of LP points for the graph spaces: subtour and connectivity rows by min cuts (root cuts).

A graph space's formulation names its fractional separator
(:class:`~cmab_milp.spaces.formulation.NamedSeparator`: ``"subtours"`` for forests
and spanning trees, ``"st_paths"`` for s-t paths, with the space as its data);
:func:`fractional_separators` resolves the names through :data:`SEPARATORS` to the
functions here, for every user of LP cuts (the root cuts of
:mod:`~cmab_milp.oracles.mip.root_cuts`, SCIP's one tree, the norm index):

* :func:`separate_subtours_lp` (forests and trees): exact, by contraction, support
  components and Padberg-Wolsey min cuts;
* :func:`separate_connectivity_lp` and :func:`separate_st_cut_lp` (paths), combined
  by :func:`separate_paths_lp`;

with max flows on :class:`~.maxflow.FlowEngine`, capacities scaled to integers.
They strengthen the LP only: the lazy cycle cuts of the space
(:meth:`~cmab_milp.spaces.graph_rows.GraphRows.separate_cycles`) keep the model exact.
Every row returned is valid for every action of the space (tested against brute
force over node sets in ``tests/oracles/mip/test_graph_cuts.py``).

>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> f = cm.GraphicMatroid(nx.complete_graph(3)).formulation()
>>> [(r.cols, r.ub) for r in fractional_cuts(f, np.full(3, 0.9))]
[((0, 1, 2), 2.0)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

from ...portable import dot
from ...spaces.formulation import Formulation, FractionalSeparator, NamedSeparator, Row, row_violation
from .maxflow import FlowEngine

__all__ = [
    "MAX_FLOWS_PER_CALL",
    "SEPARATORS",
    "fractional_cuts",
    "fractional_separators",
    "separate_connectivity_lp",
    "separate_paths_lp",
    "separate_st_cut_lp",
    "separate_subtours_lp",
    "without_orientation",
]

#: LP values are scaled by this and rounded for the integer max-flow; cuts are then checked in floats.
_FLOW_SCALE = 2.0**20
_FLOW_INF = 2**30
#: A point violates a cut when it is more than this outside it (the separators' own threshold).
_SEP_TOL = 1e-6
#: Max-flow runs per separation call (most violated sets are found by the first ones).
MAX_FLOWS_PER_CALL = 400


def _source_side(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, source: int, sink: int):
    """Max flow ``source -> sink`` on arcs ``tails -> heads`` with float ``caps``: (value, source-side mask)."""
    return _FlowNetwork(n, tails, heads, caps).cut(source, sink)


class _FlowNetwork:
    """Arcs ``tails -> heads`` with float ``caps`` (scaled to integers), built once for many max flows.

    :meth:`cut` gives what :func:`_source_side` gives; a separator asking for one min cut per node
    builds the network once. The flows run on :class:`~.maxflow.FlowEngine` (OR-Tools' C++ max flow
    when installed, else scipy's).
    """

    def __init__(self, n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, engine: str | None = None):
        c = np.minimum(np.round(np.asarray(caps, float) * _FLOW_SCALE), _FLOW_INF).astype(np.int64)
        self.n = n
        self.engine = FlowEngine(n, np.asarray(tails), np.asarray(heads), c, engine)

    def cut(self, source: int, sink: int) -> tuple[float, np.ndarray]:
        """(max flow value ``source -> sink``, mask of the nodes the residual network reaches from ``source``)."""
        value, side = self.engine.cut(source, sink)
        return value / _FLOW_SCALE, side


def separate_subtours_lp(space: Any, x: np.ndarray) -> list[Row]:
    """Subtour cuts ``a(E(S)) <= |S| - 1`` violated by the LP point ``x`` (exact separation).

    Edges at 1 are contracted first (if ``u`` is in a violated ``S`` and
    ``x_uv = 1``, adding ``v`` keeps it violated); then a contracted node or a
    support component may be violated itself; else Padberg-Wolsey min cuts
    find the set minimising ``|S| - x(E(S))`` (at most
    :data:`MAX_FLOWS_PER_CALL` of them).

    >>> import networkx as nx
    >>> from cmab_milp.spaces.graphs import GraphicMatroid, STPaths
    >>> space = GraphicMatroid(nx.complete_graph(4))
    >>> x = np.array([0.8, 0.8, 0.0, 0.8, 0.0, 0.5])  # a heavy triangle 0-1-2 and the edge 2-3
    >>> [(r.cols, r.ub) for r in separate_subtours_lp(space, x)]
    [((0, 1, 3), 2.0)]
    """
    x = np.clip(np.asarray(x, float), 0.0, 1.0)
    sparse = space._on_tree_plane(x)
    n, tail, head = space.n_nodes, space.tail, space.head
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
            row = space._subtour_row(mask, sparse)
            if row_violation(row, x) > _SEP_TOL:
                cuts.append(row)

    cuts.extend(space._cycle_rows(one))  # the edges at 1 hold cycles: cut each cycle's nodes
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


def separate_connectivity_lp(
    space: Any, x: np.ndarray, s: int, t: int, directed: bool, network: _FlowNetwork | None = None
) -> list[Row]:
    """Cuts ``x(delta(S)) >= x(delta(v))`` (``v in S``; ``s, t`` not in ``S``) violated by ``x``.

    Directed: ``x(delta_in(S)) >= x(delta_in(v))`` with ``s`` not in ``S``.
    Each node ``v`` reached by ``x`` gets one min cut (between ``v`` and
    ``{s, t}``, or from ``s`` to ``v``), largest ``x(delta(v))`` first, nodes
    inside a set already found skipped, at most :data:`MAX_FLOWS_PER_CALL`.
    ``network``: the flow network of ``x`` (undirected: :func:`_undirected_network`), when the caller has it.
    """
    x = np.clip(np.asarray(x, float), 0.0, 1.0)
    n, tail, head = space.n_nodes, space.tail, space.head
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
        if dot(coef[cols], x[cols]) < -_SEP_TOL:  # the row is built only when violated
            cuts.append(Row(tuple(cols.tolist()), tuple(coef[cols].tolist()), 0.0, np.inf))
            covered[mask] = True

    # components of the edges above a threshold that hold neither s nor t (directed: that s cannot reach)
    seen = set()
    by_tail = np.argsort(tail, kind="stable")  # CSR rows built directly: no COO conversion per threshold
    sorted_tail, sorted_head, sorted_x = tail[by_tail], head[by_tail], x[by_tail]
    kept = -1
    for theta in (_SEP_TOL, 0.3, 0.5, 0.7):
        keep = sorted_x > theta
        if int(keep.sum()) == kept:  # the same edges as the last threshold (the sets shrink): the same components
            continue
        kept = int(keep.sum())
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(sorted_tail[keep], minlength=n), out=indptr[1:])
        graph = sp.csr_matrix((sorted_x[keep], sorted_head[keep], indptr), shape=(n, n))
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
    # one network for every node's min cut (the point is the same)
    for v in candidates:
        if covered[v] or flows >= MAX_FLOWS_PER_CALL:
            continue
        flows += 1
        if directed:
            network = network or _FlowNetwork(n, tail, head, x)
            value, side = network.cut(s, v)
            mask = ~side
        else:
            network = network or _undirected_network(space, x, s, t)
            value, side = network.cut(v, n)
            mask = side[:n]
        if value < need[v] - 1e-4:
            add(mask, v)
    return cuts


def _undirected_network(space: Any, x: np.ndarray, s: int, t: int) -> _FlowNetwork:
    """Both directions of every edge at capacity ``x``, and arcs ``s -> n``, ``t -> n`` of no limit into an extra
    node ``n``: min cuts between a node and ``{s, t}``; an s-t max flow on it is the graph's (``n`` has no arc
    out, so no flow passes it, and the nodes the residual network reaches from ``s`` are the same)."""
    n, tail, head = space.n_nodes, space.tail, space.head
    tails = np.concatenate([tail, head, [s, t]])
    heads = np.concatenate([head, tail, [n, n]])
    return _FlowNetwork(n + 1, tails, heads, np.concatenate([x, x, [np.inf, np.inf]]))


def separate_st_cut_lp(
    space: Any, x: np.ndarray, s: int, t: int, directed: bool, network: _FlowNetwork | None = None
) -> list[Row]:
    """The cut ``x(delta(S)) >= 1`` (``s`` in ``S``, ``t`` not) most violated by ``x``, if any (one max flow).

    Directed: ``x(delta_out(S)) >= 1``. Every s-t path leaves ``S``; without
    these rows the LP of the degree model sends its unit into two dead-end
    stubs at ``s`` and ``t`` (a visit variable at 1/2 gives a node degree 1).

    >>> import networkx as nx
    >>> from cmab_milp.spaces.graphs import GraphicMatroid, STPaths
    >>> space = STPaths(nx.path_graph(4), 0, 3)
    >>> [(r.cols, r.lb) for r in separate_st_cut_lp(space, np.array([1.0, 0.0, 1.0]), 0, 3, False)]
    [((1,), 1.0)]

    ``network`` (undirected): :func:`_undirected_network` of ``x``, when the caller has it.
    """
    x = np.clip(np.asarray(x, float), 0.0, 1.0)
    n, tail, head = space.n_nodes, space.tail, space.head
    if directed:
        value, side = _source_side(n, tail, head, x, s, t)
        crossing = side[tail] & ~side[head]
    else:
        value, side = (network or _undirected_network(space, x, s, t)).cut(s, t)
        crossing = side[tail] != side[head]
    if value >= 1.0 - 1e-4:
        return []
    cols = tuple(int(k) for k in np.flatnonzero(crossing))
    if x[list(cols)].sum() > 1.0 - _SEP_TOL:  # pragma: no cover - the flow's rounding
        return []
    return [Row(cols, (1.0,) * len(cols), 1.0, np.inf)]


def separate_paths_lp(space: Any, x: np.ndarray, st_cut: bool | None = None) -> list[Row]:
    """The rows of an s-t path space violated by the LP point ``x``: connectivity cuts, and the s-t cut of
    undirected paths without the orientation columns (which imply it); none at a path. ``st_cut``: whether to
    look for the s-t cut (default: when the space's formulation has no orientation columns;
    :func:`without_orientation` drops them).

    >>> import networkx as nx
    >>> from cmab_milp.spaces.graphs import STPaths
    >>> space = STPaths(nx.path_graph(4), 0, 3, oriented=False)
    >>> space.formulation().n_aux, [(r.cols, r.lb) for r in separate_paths_lp(space, np.array([1.0, 0.0, 1.0]))]
    (2, [((1,), 1.0)])
    """
    chosen = x > 0.5
    if np.all(np.abs(x - chosen) <= _SEP_TOL) and space._contains(chosen):
        return []  # an integral point that is a path violates no valid row: no max flow needed
    cuts = []
    if st_cut is None:
        st_cut = not space.__dict__.get("_oriented", False)  # the orientation's flow rows imply them
    network = None
    if not space.directed and st_cut:  # one flow network for the s-t cut and the nodes' min cuts
        network = _undirected_network(space, np.clip(np.asarray(x, float), 0.0, 1.0), space.s, space.t)
        cuts = separate_st_cut_lp(space, x, space.s, space.t, space.directed, network)
    return cuts + separate_connectivity_lp(space, x, space.s, space.t, space.directed, network)


def _separate_paths_st(space: Any, x: np.ndarray) -> list[Row]:
    """:func:`separate_paths_lp` with the s-t cut (the formulation of :func:`without_orientation`)."""
    return separate_paths_lp(space, x, st_cut=True)


#: The fractional separators a formulation may name (:class:`~cmab_milp.spaces.formulation.NamedSeparator`):
#: name -> function of (the named data, the LP point over the arms).
SEPARATORS: dict[str, Callable[[Any, np.ndarray], list[Row]]] = {
    "subtours": separate_subtours_lp,
    "st_paths": separate_paths_lp,
    "st_paths_unoriented": _separate_paths_st,
}


def without_orientation(formulation: Formulation) -> Formulation:
    """``formulation`` without its optional columns (the orientation columns of undirected s-t paths) and
    with a separator that finds the s-t cuts they implied: the same actions, a smaller model.

    SCIP's one tree answered hop-limited longest paths on the 10x10 grid about 1.8x faster so
    (``docs/performance.md``, "Graphs"). A formulation without optional columns is returned as it is.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> f = cm.STPaths(nx.cycle_graph(4), 0, 2, cuts_min_edges=1).formulation()
    >>> g = without_orientation(f)
    >>> (f.n_aux, g.n_aux), [s.kind for s in g.fractional_separators]
    ((6, 2), ['st_paths_unoriented'])
    """
    if not formulation.aux_optional.any():
        return formulation
    out = formulation.without_optional()
    out.fractional_separators = [
        NamedSeparator("st_paths_unoriented", s.data) if isinstance(s, NamedSeparator) and s.kind == "st_paths" else s
        for s in out.fractional_separators
    ]
    out.solver_hints.pop("root_cuts", None)  # (its rows no longer hold every s-t cut)
    return out


def resolve(separator: FractionalSeparator | NamedSeparator) -> FractionalSeparator:
    """The function of a named separator (:data:`SEPARATORS`), or a callable separator itself."""
    if isinstance(separator, NamedSeparator):
        try:
            separate = SEPARATORS[separator.kind]
        except KeyError:
            raise ValueError(
                f"unknown fractional separator {separator.kind!r}; known: {', '.join(SEPARATORS)}"
            ) from None
        data = separator.data
        return lambda x: separate(data, x)
    return separator


def fractional_separators(formulation: Formulation) -> list[FractionalSeparator]:
    """The formulation's fractional separators as functions of an LP point (names resolved)."""
    return [resolve(separator) for separator in formulation.fractional_separators]


def fractional_cuts(formulation: Formulation, x: np.ndarray, min_violation: float = 1e-6) -> list[Row]:
    """Rows of the formulation's fractional separators that ``x`` (arm values) violates by more than
    ``min_violation``."""
    x = np.asarray(x, dtype=float)
    if x.shape != (formulation.d,):
        raise ValueError(f"x must hold the d={formulation.d} arm values, got shape {x.shape}")
    cuts: list[Row] = []
    for separate in fractional_separators(formulation):
        cuts.extend(r for r in separate(x) if row_violation(r, x) > min_violation)
    return cuts
