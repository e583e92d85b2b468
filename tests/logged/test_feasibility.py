"""Bulk feasibility of logged actions agrees with each space's own ``contains``, on every kind of space."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.logged.feasibility import outside

SPACES = {
    "cardinality": lambda: cm.Cardinality(6, 3),
    "exact cardinality with a side row": lambda: cm.Cardinality(6, 3, exact=True).with_constraint(
        [1, 1, 1, 0, 0, 0], "<=", 1
    ),
    "partition matroid": lambda: cm.PartitionMatroid([[0, 1, 2], [3, 4, 5]], [1, 2]),
    "matchings (general graph)": lambda: cm.Matchings(nx.petersen_graph()),
    "perfect matchings": lambda: cm.Matchings(nx.complete_bipartite_graph(3, 3), perfect=True),
    "s-t paths (cyclic)": lambda: cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8),
    "spanning trees": lambda: cm.SpanningTrees(nx.complete_graph(4)),
    "forests": lambda: cm.GraphicMatroid(nx.cycle_graph(5)),
    "explicit actions": lambda: cm.ExplicitActions([[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 1, 1]]),
}


@pytest.mark.parametrize("name", sorted(SPACES))
def test_bulk_feasibility_agrees_with_contains(name):
    space = SPACES[name]()
    rng = np.random.default_rng(0)
    feasible = space.enumerate()[:200]
    random = rng.random((300, space.d)) < rng.uniform(0.1, 0.6, (300, 1))
    actions = np.concatenate([feasible, random])
    width = max(1, int(actions.sum(axis=1).max()))
    arms = np.full((len(actions), width), -1)
    for k, a in enumerate(actions):
        idx = np.flatnonzero(a)
        arms[k, : idx.size] = idx
    expected = np.array([not space.contains(a) for a in actions])
    assert expected[len(feasible) :].any() and not expected[: len(feasible)].any()
    assert np.array_equal(outside(space, arms), expected)
