"""The max-flow network of the graph separators (``graph_cuts._FlowNetwork``), built once for many cuts.

Checked against a network built afresh for every cut (scipy's residual by sparse subtraction, the
implementation it replaced) and against networkx's minimum cut values, on random capacity graphs
with zero, fractional and infinite capacities, for many source/sink pairs in a row.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from cmab_milp.oracles.mip import graph_cuts
from cmab_milp.oracles.mip.graph_cuts import _FLOW_INF, _FLOW_SCALE, _FlowNetwork


def _fresh(n, tails, heads, caps, source, sink):
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
    side = np.zeros(n, bool)
    side[breadth_first_order(residual, source, directed=True, return_predecessors=False)] = True
    return res.flow_value / _FLOW_SCALE, side


def test_one_network_gives_every_cut_a_fresh_one_gives():
    rng = np.random.default_rng(0)
    for _ in range(12):
        n = int(rng.integers(4, 30))
        m = int(rng.integers(n, 4 * n))
        tails, heads = rng.integers(0, n, m), rng.integers(0, n, m)
        caps = rng.uniform(0.0, 1.0, m) * (rng.random(m) < 0.8)
        caps[rng.random(m) < 0.05] = np.inf
        network = _FlowNetwork(n, tails, heads, caps)
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        for u, v, c in zip(tails.tolist(), heads.tolist(), caps.tolist(), strict=True):
            if u != v:
                cap = g[u][v]["capacity"] + c if g.has_edge(u, v) else c
                g.add_edge(u, v, capacity=cap)
        for _ in range(8):
            source, sink = rng.choice(n, 2, replace=False).tolist()
            value, side = network.cut(source, sink)
            ref_value, ref_side = _fresh(n, tails, heads, caps, source, sink)
            assert value == ref_value and (side == ref_side).all()
            assert side[source] and not side[sink]
            if np.isfinite(value) and value < _FLOW_INF / _FLOW_SCALE / 2:
                expected = nx.minimum_cut_value(g, source, sink) if nx.has_path(g, source, sink) else 0.0
                assert abs(value - expected) <= 1e-5 * (1 + expected) + m / _FLOW_SCALE


def test_source_side_is_the_network_cut():
    tails, heads, caps = np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([0.5, 0.25, 0.125])
    value, side = graph_cuts._source_side(3, tails, heads, caps, 0, 2)
    assert value == 0.375 and side.tolist() == [True, True, False]
