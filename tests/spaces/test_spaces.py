"""Action spaces against independent truth: closed-form counts, networkx, brute force."""

from __future__ import annotations

import itertools
from math import comb

import networkx as nx
import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm


def subsets(d: int):
    for bits in itertools.product((False, True), repeat=d):
        yield np.array(bits)


@pytest.mark.parametrize("family", sorted(SPACES))
def test_contains_agrees_with_enumerate_and_m_is_the_largest_action(family: str) -> None:
    space = SPACES[family]()
    actions = space.enumerate()
    assert actions.dtype == bool and actions.shape[1] == space.d
    assert len({a.tobytes() for a in actions}) == len(actions), "enumerate repeats an action"
    assert all(space.contains(a) for a in actions)
    listed = {a.tobytes() for a in actions}
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = rng.random(space.d) < rng.uniform(0.1, 0.6)
        assert space.contains(a) == (a.tobytes() in listed)
    assert space.m == int(actions.sum(axis=1).max())
    assert len(space.arms) == space.d


def test_cardinality_and_partition_counts_are_binomial() -> None:
    assert len(cm.Cardinality(9, 4).enumerate()) == sum(comb(9, k) for k in range(5))
    assert len(cm.Cardinality(9, 4, exact=True).enumerate()) == comb(9, 4)
    blocks, caps = [[0, 1, 2, 3], [4, 5], [6, 7, 8]], [2, 1, 3]
    expected = (1 + 4 + 6) * (1 + 2) * 8
    assert len(cm.PartitionMatroid(blocks, caps).enumerate()) == expected


@pytest.mark.parametrize("graph", [nx.complete_graph(4), nx.cycle_graph(5), nx.petersen_graph()])
def test_forests_and_spanning_trees_match_networkx(graph: nx.Graph) -> None:
    forests = cm.GraphicMatroid(graph)
    edges = list(graph.edges())
    if len(edges) <= 12:
        brute = sum(
            (not a.any()) or nx.is_forest(nx.Graph([edges[k] for k in np.flatnonzero(a)])) for a in subsets(len(edges))
        )
        assert len(forests.enumerate()) == brute
    trees = cm.SpanningTrees(graph)
    assert len(trees.enumerate()) == round(nx.number_of_spanning_trees(graph))
    assert forests.m == trees.m == graph.number_of_nodes() - 1


@pytest.mark.parametrize(
    ("graph", "s", "t"),
    [
        (nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)), 0, 11),
        (nx.DiGraph(nx.complete_graph(5)), 0, 4),
        (nx.gnp_random_graph(9, 0.45, seed=2, directed=True), 0, 8),
    ],
)
def test_paths_match_networkx_simple_paths(graph: nx.Graph, s: int, t: int) -> None:
    space = cm.STPaths(graph, s, t)
    expected = list(nx.all_simple_paths(graph, s, t))
    assert len(space.enumerate()) == len(expected)
    assert space.m == max(len(p) - 1 for p in expected)


@pytest.mark.parametrize("perfect", [False, True])
@pytest.mark.parametrize("graph", [nx.complete_bipartite_graph(2, 3), nx.complete_graph(4), nx.cycle_graph(6)])
def test_matchings_match_brute_force(graph: nx.Graph, perfect: bool) -> None:
    edges = list(graph.edges())
    check = nx.is_perfect_matching if perfect else nx.is_matching

    def is_ok(a: np.ndarray) -> bool:
        return check(graph, {edges[k] for k in np.flatnonzero(a)})

    brute = sum(is_ok(a) for a in subsets(len(edges)))
    if perfect and brute == 0:
        with pytest.raises(ValueError, match="no perfect matching"):
            cm.Matchings(graph, perfect=True)
        return
    assert len(cm.Matchings(graph, perfect=perfect).enumerate()) == brute


def test_enumerate_refuses_past_the_cap() -> None:
    with pytest.raises(ValueError, match="more than 50 actions"):
        cm.Cardinality(20, 3).enumerate(max_actions=50)
    assert len(cm.Cardinality(20, 3).enumerate()) == 1 + 20 + 190 + 1140


def test_graph_spaces_label_arms_by_edges() -> None:
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    space = cm.STPaths(g, "a", "c")
    assert space.arms == [("a", "b"), ("a", "c"), ("b", "c")] or space.arms == list(g.edges())
    assert space.contains(np.array([space.arms.index(("a", "c")) == k for k in range(3)]))


BAD_SPACES = [
    (lambda: cm.Cardinality(0, 1), "d must be >= 1"),
    (lambda: cm.Cardinality(3, 4), "m must be <= d"),
    (lambda: cm.Cardinality(3, 1.5), "m must be an integer"),
    (lambda: cm.PartitionMatroid([[0, 1], [1, 2]], [1, 1]), "more than one block"),
    (lambda: cm.PartitionMatroid([[0, 1], [3]], [1, 1]), "partition range"),
    (lambda: cm.PartitionMatroid([[0, 1]], [1, 1]), "capacities has 2 entries"),
    (lambda: cm.PartitionMatroid([[0], []], [1, 1]), "block 1 is empty"),
    (lambda: cm.PartitionMatroid([[0, 1]], [-1]), "capacities"),
    (lambda: cm.GraphicMatroid(nx.DiGraph([(0, 1)])), "undirected"),
    (lambda: cm.GraphicMatroid(nx.Graph([(0, 0), (0, 1)])), "self-loops"),
    (lambda: cm.GraphicMatroid(nx.MultiGraph([(0, 1), (0, 1)])), "multigraph"),
    (lambda: cm.GraphicMatroid([(0, 1)]), "networkx graph"),
    (lambda: cm.SpanningTrees(nx.Graph([(0, 1), (2, 3)])), "connected"),
    (lambda: cm.STPaths(nx.path_graph(3), 0, 7), "target 7 is not a node"),
    (lambda: cm.STPaths(nx.path_graph(3), 9, 1), "source 9 is not a node"),
    (lambda: cm.STPaths(nx.path_graph(3), 1, 1), "must differ"),
    (lambda: cm.STPaths(nx.DiGraph([(1, 0), (1, 2)]), 0, 2), "no path"),
    (lambda: cm.Matchings(nx.path_graph(3), perfect=True), "no perfect matching"),
    (lambda: cm.ExplicitActions([[0, 1], [1, 2]]), "row 1 column 1"),
    (lambda: cm.ExplicitActions([0, 1, 1]), "2-D"),
    (lambda: cm.ExplicitActions(np.zeros((0, 3))), "non-empty"),
    (lambda: cm.Cardinality(3, 1).with_constraint([1, 1], "<=", 1), "length d=3"),
    (lambda: cm.Cardinality(3, 1).with_constraint([1, 1, 1], "<", 1), "sense must be"),
    (lambda: cm.Cardinality(3, 1).with_constraint([1, 1, np.nan], "<=", 1), "finite"),
    (lambda: cm.Intersection(cm.Cardinality(3, 1), cm.Cardinality(4, 1)), "same d"),
    (lambda: cm.Intersection(), "at least one space"),
    (lambda: cm.Intersection(cm.Cardinality(3, 1), "x"), "not an ActionSpace"),
]


@pytest.mark.parametrize(("build", "message"), BAD_SPACES)
def test_bad_space_input_raises_value_error_naming_the_problem(build, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize(("action", "message"), [([1, 0], "shape"), ([1, 0, 2], "0/1"), ([[1, 0, 1]], "shape")])
def test_contains_rejects_malformed_actions(action, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cm.Cardinality(3, 2).contains(action)
