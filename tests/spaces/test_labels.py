"""Arms by name: labels on every space, edges on graph spaces, paths in path order."""

from __future__ import annotations

from itertools import pairwise

import networkx as nx
import numpy as np
import pytest
from instances import SPACES

import cmab_milp as cm

NAMES = ["ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ida"]


def _graph_cases() -> list[tuple[str, nx.Graph]]:
    return [
        ("strings", nx.Graph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        ("tuples", nx.grid_2d_graph(2, 3)),
        ("ints", nx.cycle_graph(5)),
        ("directed", nx.DiGraph([("s", "x"), ("x", "s"), ("x", "t"), ("s", "t")])),
    ]


@pytest.mark.parametrize(("name", "graph"), _graph_cases())
def test_graph_arms_resolve_by_edge_in_either_orientation_when_undirected(name: str, graph: nx.Graph) -> None:
    space = cm.GraphicMatroid(graph) if not graph.is_directed() else cm.STPaths(graph, "s", "t")
    edges = list(graph.edges())
    assert space.arms == edges == space.labels
    for k, (u, v) in enumerate(edges):
        assert space.arm_index((u, v)) == k
        assert space.arm_index([u, v]) == k  # an edge written as a list (as a problem file gives it)
        if not graph.is_directed():
            assert space.arm_index((v, u)) == k
        elif graph.has_edge(v, u):
            assert space.arm_index((v, u)) == edges.index((v, u))
        else:
            with pytest.raises(ValueError, match="unknown arm"):
                space.arm_index((v, u))
        assert space.arm_index(k) == k  # ints keep meaning indices
        assert space.label_of(k) == (u, v)


def test_ints_are_always_indices_even_where_nodes_are_ints() -> None:
    space = cm.SpanningTrees(nx.cycle_graph(4))  # edges (0, 1), (0, 3), (1, 2), (2, 3)
    assert space.arm_index(1) == 1
    assert space.arm_index((0, 3)) == 1 and space.arm_index((3, 0)) == 1
    assert space.arm_index(np.int64(3)) == 3
    assert space.arm_indices([(2, 3), 0, (1, 0)]) == (0, 3)
    # a pair is two arms: (0, 3) here means arms 0 and 3, not the edge (0, 3)
    assert space.arm_pairs([(0, 3)]) == ((0, 3),)
    assert space.arm_pairs([((0, 3), (2, 3))]) == ((1, 3),)


def _labelled_spaces() -> dict[str, cm.spaces.ActionSpace]:
    return {
        "cardinality": cm.Cardinality(5, 2, labels=NAMES[:5]),
        "partition": cm.PartitionMatroid([["ann", "cy"], ["bob", "dee", "eve"]], [1, 2], labels=NAMES[:5]),
        "explicit": cm.ExplicitActions([[1, 0, 1, 0, 0], [0, 1, 0, 1, 1]], labels=NAMES[:5]),
        "graph": cm.Matchings(nx.complete_graph(4), labels=NAMES[:6]),
        "with_labels": cm.Cardinality(5, 2).with_labels(NAMES[:5]),
        "intersection": cm.Intersection(cm.Cardinality(5, 3), cm.Cardinality(5, 2, labels=NAMES[:5])),
        "derived": cm.Cardinality(5, 3).with_labels(NAMES[:5]).with_conflicts([("ann", "bob")]),
    }


@pytest.mark.parametrize("family", sorted(_labelled_spaces()))
def test_custom_labels_name_arms_everywhere(family: str) -> None:
    space = _labelled_spaces()[family]
    d = space.d
    assert space.labels == NAMES[:d]
    assert space.arms == list(range(d)) or space.arms == list(space.graph.edges())  # arms as the contract lists
    for k, name in enumerate(NAMES[:d]):
        assert space.arm_index(name) == k == space.arm_index(k)
        assert space.label_of(k) == name
    assert space.arm_indices(["cy", 0, "ann"]) == (0, 2)
    assert space.arm_vector({"bob": 2.5, 3: 1.0}).tolist() == [0.0, 2.5, 0.0, 1.0] + [0.0] * (d - 4)
    action = space.enumerate()[-1]
    assert space.labels_of(action) == [NAMES[i] for i in np.flatnonzero(action)]


def test_graph_spaces_take_names_of_their_own_and_edges_still_resolve() -> None:
    g = nx.Graph([("a", "b"), ("b", "c"), ("c", "a")])
    assert list(g.edges()) == [("a", "b"), ("a", "c"), ("b", "c")]
    space = cm.SpanningTrees(g, labels=["ab", "ac", "bc"])
    assert space.arms == list(g.edges()) and space.labels == ["ab", "ac", "bc"]
    assert space.arm_index("bc") == space.arm_index(("c", "b")) == 2


def test_with_labels_keeps_the_space_and_leaves_the_original_alone() -> None:
    for family in sorted(SPACES):
        space = SPACES[family]()
        before = space.enumerate()
        named = space.with_labels([f"arm{k}" for k in range(space.d)])
        assert type(named) is type(space)  # so specialised oracles still recognise it
        assert np.array_equal(named.enumerate(), before) and named.m == space.m
        assert named.arm_index(f"arm{space.d - 1}") == space.d - 1
        assert space.labels == space.arms  # the original keeps its labels
        with pytest.raises(ValueError, match="unknown arm"):
            space.arm_index("arm0")


def test_labelled_spaces_still_go_to_the_specialised_oracle() -> None:
    space = cm.Cardinality(4, 2, labels=["w", "x", "y", "z"])
    oracle = cm.make_oracle(space, "combinatorial")
    assert space.labels_of(oracle.argmax(np.array([0.1, 0.9, -1.0, 0.5]))) == ["x", "z"]


def test_int_labels_only_at_their_own_position() -> None:
    assert cm.Cardinality(3, 1, labels=range(3)).arm_index(2) == 2
    assert cm.Cardinality(3, 1, labels=[0, "b", 2]).arm_index("b") == 1


def test_intersection_takes_labels_from_the_member_that_has_them() -> None:
    g = nx.Graph([("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    both = cm.Intersection(cm.Cardinality(4, 3), cm.STPaths(g, "a", "c"))
    assert both.labels == both.arms == list(g.edges())
    assert both.arm_index(("b", "a")) == 0
    chosen = cm.Intersection(cm.Cardinality(4, 3, labels=list("pqrs")), cm.STPaths(g, "a", "c"), labels=list("wxyz"))
    assert chosen.arm_index("x") == 1


def test_partition_blocks_by_label_match_blocks_by_index() -> None:
    by_name = cm.PartitionMatroid([["bob", "ann"], ["cy"]], [1, 1], labels=["ann", "bob", "cy"])
    by_index = cm.PartitionMatroid([[1, 0], [2]], [1, 1])
    assert np.array_equal(by_name.enumerate(), by_index.enumerate())


def test_arm_vector_from_mapping_and_sequence() -> None:
    space = cm.STPaths(nx.Graph([("s", "a"), ("a", "t"), ("s", "t")]), "s", "t")
    assert space.arm_vector({("t", "a"): 3, ("s", "a"): 1.5}).tolist() == [1.5, 0.0, 3.0]
    assert space.arm_vector({("t", "a"): 3}, default=-1.0).tolist() == [-1.0, -1.0, 3.0]
    assert space.arm_vector([1, 2, 3]).tolist() == [1.0, 2.0, 3.0]
    assert space.arm_vector({0: 1, 1: 2, 2: 3}, default=None).tolist() == [1.0, 2.0, 3.0]


_PATHS = [
    (nx.Graph([("c", "t"), ("s", "b"), ("b", "c"), ("s", "c"), ("b", "t")]), "s", "t"),
    (nx.grid_2d_graph(3, 3), (0, 0), (2, 2)),
    (nx.DiGraph([(0, 1), (1, 2), (2, 1), (2, 3), (1, 3), (3, 0), (0, 2)]), 0, 3),
]


@pytest.mark.parametrize(("graph", "s", "t"), _PATHS)
def test_path_edges_walk_from_source_to_target(graph: nx.Graph, s, t) -> None:
    space = cm.STPaths(graph, s, t)
    walks = set()
    for action in space.enumerate():
        nodes = space.path_nodes(action)
        edges = space.path_edges(action)
        assert nodes[0] == s and nodes[-1] == t
        assert edges == list(pairwise(nodes))
        assert all(graph.has_edge(u, v) for u, v in edges)  # oriented as travelled (directed: as the arcs)
        assert sorted(space.arm_index(e) for e in edges) == np.flatnonzero(action).tolist()
        walks.add(tuple(nodes))
    assert walks == {tuple(p) for p in nx.all_simple_paths(graph, s, t)}


def test_path_edges_refuse_a_non_path() -> None:
    space = cm.STPaths(nx.cycle_graph(4), 0, 2)
    with pytest.raises(ValueError, match="not a path from 0 to 2"):
        space.path_edges([1, 0, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        space.path_edges([1, 0])


def _tri() -> cm.spaces.ActionSpace:
    return cm.SpanningTrees(nx.Graph([("a", "b"), ("b", "c"), ("c", "a")]))


BAD = [
    (lambda: cm.Cardinality(3, 1, labels=["x", "y"]), "one label per arm: d=3, got 2"),
    (lambda: cm.Cardinality(3, 1, labels=["x", "x", "y"]), r"labels\[0\] and labels\[1\] are both 'x'"),
    (lambda: cm.Cardinality(3, 1, labels=[10, 11, 12]), "ints always mean arm indices"),
    (lambda: cm.Cardinality(3, 1, labels=["x", True, "y"]), "bool"),
    (lambda: cm.Cardinality(3, 1, labels=["x", {}, "y"]), "not hashable"),
    (lambda: cm.Cardinality(3, 1, labels="xyz"), "sequence of 3 labels"),
    (lambda: _tri().with_labels(["ab", ("c", "b"), "x"]), r"labels\[1\] = \('c', 'b'\) is also the edge of arm 2"),
    (lambda: cm.Cardinality(3, 1).arm_index("x", "include"), "include: unknown arm 'x'.*has no labels"),
    (lambda: _tri().arm_index(("a", "z"), "exclude"), r"exclude: unknown arm \('a', 'z'\).*labels such as"),
    (lambda: cm.Cardinality(3, 1).arm_index(3, "include"), "include: arm index 3 is out of range for d=3"),
    (lambda: cm.Cardinality(3, 1).arm_index(-1), "arm index -1 is out of range"),
    (lambda: cm.Cardinality(3, 1).arm_index(True), "is a bool"),
    (lambda: cm.Cardinality(3, 1).arm_index([{}]), "not hashable"),
    (lambda: cm.Cardinality(3, 1).arm_indices([[{}]], "exclude"), "exclude: arm .* is not hashable"),
    (lambda: cm.Cardinality(3, 1).arm_indices("ab", "include"), "include must be a list of arms, got 'ab'"),
    (lambda: cm.Cardinality(3, 1).arm_indices(2, "include"), "include must be a list of arms, got 2"),
    (
        lambda: _tri().arm_indices(("a", "b"), "include"),
        r"include must be a list of arms; \('a', 'b'\) is one arm: write \[\('a', 'b'\)\]",
    ),
    (lambda: cm.Cardinality(3, 1).arm_pairs([(0, 0)], "forbid_pairs"), "forbid_pairs: the pair .* names arm 0 twice"),
    (lambda: _tri().arm_pairs([(("a", "b"), ("b", "a"))]), "names arm 0 twice"),
    (lambda: cm.Cardinality(3, 1).arm_pairs([(0, 1, 2)]), r"pairs of two arms, got \(0, 1, 2\) \(3 items\)"),
    (lambda: cm.Cardinality(3, 1).arm_pairs([0, 1]), "pairs of two arms, got 0"),
    (lambda: cm.Cardinality(3, 1).arm_pairs([(0, "q")], "forbid_pairs"), "forbid_pairs: unknown arm 'q'"),
    (lambda: cm.Cardinality(3, 1).arm_vector([1, 2], what="coeffs"), r"coeffs must have length d=3, got shape \(2,\)"),
    (lambda: cm.Cardinality(3, 1).arm_vector({"z": 1}, what="coeffs"), "coeffs: unknown arm 'z'"),
    (lambda: cm.Cardinality(3, 1).arm_vector({0: "x"}), r"values\[0\] must be a number"),
    (lambda: cm.Cardinality(3, 1).arm_vector({0: 1, 1: 2}, None, "means"), r"means: no value for arms 2"),
    (lambda: _tri().arm_vector({("a", "b"): 1, ("b", "a"): 2}), r"arm 0 is given twice"),
    (lambda: cm.Cardinality(3, 1).arm_vector([1, np.inf, 0]), "must be finite; arm 1 has inf"),
    (lambda: cm.Cardinality(3, 1).arm_vector("abc"), "mapping"),
    (lambda: cm.Cardinality(3, 1).arm_vector([[1, 2, 3]]), "length d=3"),
    (lambda: cm.PartitionMatroid([["a", "q"]], [1], labels=["a", "b"]), "block 0: unknown arm 'q'"),
    (lambda: cm.Intersection(cm.Cardinality(3, 1, labels=list("xyz")), _tri()), "label arm 0 differently"),
]


@pytest.mark.parametrize(("build", "message"), BAD)
def test_bad_labels_raise_value_error_naming_the_argument(build, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()
