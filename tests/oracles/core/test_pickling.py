"""Oracles pickle on every backend, before and after queries, to oracles that answer the same.

(The conformance kit's ``pickling`` case checks every registered backend on small spaces; these are the cases
it meets rarely: ``auto`` after routing a query to CP-SAT, whose compiled model does not pickle.)
"""

from __future__ import annotations

import pickle

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.registry import available_backends


def _grid_paths(n: int) -> cm.STPaths:
    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n)).to_directed()
    return cm.STPaths(graph, 0, n * n - 1)


@pytest.mark.skipif("ortools" not in available_backends(), reason="needs ortools")
def test_auto_pickles_after_sending_a_query_to_cp_sat() -> None:
    space = _grid_paths(5)
    oracle = cm.make_oracle(space, "auto", enumerate_cap=0)  # its 8,512 paths would be enumerated otherwise
    w = np.random.default_rng(0).uniform(0.1, 1.0, space.d)  # a longest path on a cyclic digraph: CP-SAT's
    first = oracle.argmax(w)
    assert oracle.routes.get("ortools") == 1
    copy = pickle.loads(pickle.dumps(oracle))
    assert np.array_equal(copy.argmax(w), first)
    assert np.array_equal(copy.argmax(-w), cm.make_oracle(space, "highs").argmax(-w))


@pytest.mark.skipif("ortools" not in available_backends(), reason="needs ortools")
@pytest.mark.parametrize("native", [True, False])
def test_ortools_pickles_before_and_after_queries(native: bool) -> None:
    space = _grid_paths(3)
    oracle = cm.make_oracle(space, "ortools", native=native)
    new_copy = pickle.loads(pickle.dumps(oracle))
    w = np.random.default_rng(1).normal(size=space.d)
    first = oracle.argmax(w)
    later_copy = pickle.loads(pickle.dumps(oracle))
    truth = max(space.enumerate(), key=lambda a: float(w @ a))
    for copy in (new_copy, later_copy):
        assert np.array_equal(copy.argmax(w), first) and np.array_equal(first, truth)
        assert copy.circuit == oracle.circuit
