"""Lower bounds on the action count (``spaces.count_bounds``) hold, and the numpy listing gives the search's outcome.

Found: ``auto`` listed 150,001 s-t paths of the 8x8 grid (2.6-3.6 CPU s) and 150,001 spanning trees of the
6x6 / 8x8 grids (12-32 s) only to learn that there were more than 150,000. A bound above the limit now settles
it. Truth here: the space's own enumeration, ``networkx``'s simple paths, and closed forms.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.spaces.count_bounds import actions_at_least, short_paths
from cmab_milp.spaces.tally import tally


def grid(n: int, m: int | None = None) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n if m is None else m))


def cyclic_digraph() -> nx.DiGraph:
    rng = np.random.default_rng(3)
    g = nx.DiGraph()
    g.add_edges_from((int(u), int(v)) for u, v in rng.integers(0, 9, (30, 2)) if u != v)
    g.add_edges_from([(0, 4), (4, 8)])
    return g


SPACES = {
    "cardinality": lambda: cm.Cardinality(9, 3),
    "cardinality exact": lambda: cm.Cardinality(9, 3, exact=True),
    "partition matroid": lambda: cm.PartitionMatroid([[0, 3, 5], [1, 2], [4, 6, 7, 8]], [2, 1, 2]),
    "bipartite matchings": lambda: cm.Matchings(nx.complete_bipartite_graph(4, 5)),
    "general matchings": lambda: cm.Matchings(nx.petersen_graph()),
    "matchings of a path": lambda: cm.Matchings(nx.path_graph(7)),
    "perfect matchings": lambda: cm.Matchings(nx.complete_graph(6), perfect=True),
    "forests": lambda: cm.GraphicMatroid(grid(3)),
    "forests, two parts": lambda: cm.GraphicMatroid(nx.disjoint_union(nx.complete_graph(4), nx.cycle_graph(3))),
    "spanning trees": lambda: cm.SpanningTrees(grid(3, 4)),
    "spanning trees of K6": lambda: cm.SpanningTrees(nx.complete_graph(6)),
    "s-t paths": lambda: cm.STPaths(grid(4), 0, 15),
    "s-t paths of K7": lambda: cm.STPaths(nx.complete_graph(7), 0, 6),
    "directed s-t paths": lambda: cm.STPaths(grid(3).to_directed(), 0, 8),
    "cyclic digraph paths": lambda: cm.STPaths(cyclic_digraph(), 0, 8),
    "DAG paths": lambda: cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 3), (1, 3), (0, 3)]), 0, 3),
    "explicit": lambda: cm.ExplicitActions(np.random.default_rng(0).integers(0, 2, (30, 8))),
}
EXACT = {"cardinality", "cardinality exact", "partition matroid", "DAG paths", "explicit"}


@pytest.mark.parametrize("limit", [0, 5, 50, 10**6])
@pytest.mark.parametrize("family", list(SPACES))
def test_the_bound_never_passes_the_count(family: str, limit: int) -> None:
    space = SPACES[family]()
    truth = len(space.enumerate(10**6))
    bound = actions_at_least(space, limit)
    assert 0 <= bound <= truth, (bound, truth)
    if family in EXACT:
        assert bound == truth
    assert actions_at_least(space, limit) == bound  # cached


def test_spanning_trees_follow_cayley_and_the_matrix_tree_theorem() -> None:
    # Cayley: K_n has n^(n-2) spanning trees; the bound keeps a 0.1 % margin below the determinant
    for n in (5, 8, 12):
        count = n ** (n - 2)
        assert count * (1 - 2e-3) - 1 <= actions_at_least(cm.SpanningTrees(nx.complete_graph(n)), 10) <= count
    assert actions_at_least(cm.SpanningTrees(grid(8)), 150_000) > 10**25  # 1.26e26 spanning trees


def test_the_bound_settles_the_bench_spaces_past_the_norm_enumeration_limit() -> None:
    limit = 150_000
    assert actions_at_least(cm.STPaths(grid(8), 0, 63), limit) > limit  # 7.9e11 paths (OEIS A007764)
    assert actions_at_least(cm.GraphicMatroid(grid(8)), limit) > limit
    assert actions_at_least(cm.Matchings(nx.complete_bipartite_graph(10, 12)), limit) > limit
    assert actions_at_least(cm.Cardinality(100, 10), limit) > limit


PATH_GRAPHS = [
    (grid(4), 0, 15),
    (grid(3, 5), 0, 14),
    (nx.complete_graph(6), 0, 5),
    (grid(3).to_directed(), 0, 8),
    (cyclic_digraph(), 0, 8),
    (nx.petersen_graph(), 0, 7),
]


@pytest.mark.parametrize("graph, s, t", PATH_GRAPHS)
def test_short_paths_counts_the_simple_paths_of_at_most_2h_arcs(graph: nx.Graph, s: int, t: int) -> None:
    space = cm.STPaths(graph, s, t)
    for h in range(1, graph.number_of_nodes()):
        truth = sum(1 for _ in nx.all_simple_paths(graph, s, t, cutoff=2 * h))
        assert short_paths(space, h, 10**6, 10**8) == truth, h
    assert short_paths(cm.STPaths(grid(8), 0, 63), 9, work=100) is None  # past its work cap: no answer


def test_side_rules_and_other_families_give_no_bound() -> None:
    space = cm.Cardinality(9, 3)
    assert actions_at_least(space.with_conflicts([(0, 1)]), 10) == 0
    assert actions_at_least(cm.STPaths(grid(3), 0, 8).with_constraint(np.ones(12), "<=", 6), 10) == 0
    assert actions_at_least(cm.Intersection(space, cm.Cardinality(9, 2)), 10) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_limits_and_work_are_refused_by_name(bad: object) -> None:
    with pytest.raises(ValueError, match="limit"):
        actions_at_least(cm.Cardinality(4, 2), bad)  # type: ignore[arg-type]
    if bad != -1:
        with pytest.raises(ValueError, match="work"):
            actions_at_least(cm.Cardinality(5, 2), 10, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="work"):
        actions_at_least(cm.Cardinality(5, 2), 10, 0)


LISTED = {
    "cardinality": lambda: cm.Cardinality(8, 3),
    "cardinality, every size": lambda: cm.Cardinality(5, 5),
    "partition": lambda: cm.PartitionMatroid([[0, 3, 5], [1, 2], [4, 6, 7]], [2, 1, 2]),
    "partition, closed and loose blocks": lambda: cm.PartitionMatroid([[2, 0], [1], [3, 4, 5]], [0, 3, 1]),
}


@pytest.mark.parametrize("family", list(LISTED))
def test_the_numpy_listing_gives_the_search_s_outcome(family: str) -> None:
    """Rule-free ``Cardinality`` (at most m) and partition matroids skip the search: same status, visits, rows."""
    space = LISTED[family]()
    searched = space.with_constraint(np.ones(space.d), "<=", space.d)  # a rule that binds nothing: the search
    n = len(space.enumerate())
    for limit in (0, 1, n - 1, n, n + 5):
        for visits in (1, n - 1, n, n + 1, 10 * n):
            fast, slow = tally(space, limit, visits), tally(searched, limit, visits)
            assert (fast.status, fast.visits) == (slow.status, slow.visits), (limit, visits)
            if fast.status == "exact":
                assert (fast.actions == slow.actions).all() and (fast.actions == space.enumerate()).all()


# The tree search now keeps, per component, the arms with an end in it (the arms closing a cycle in O(1)):
# 3.7 -> 1.1 s on the 100,352 spanning trees of the 4x4 grid. It must visit the same partial forests, since the
# visits decide auto's routes (a search past its visit cap gives up). Visits recorded from the search before
# the change; forests: every partial forest is an action, so one visit per action.
TREE_VISITS = {
    "trees 3x4": (lambda: cm.SpanningTrees(grid(3, 4)), 2415, 14453),
    "trees K6": (lambda: cm.SpanningTrees(nx.complete_graph(6)), 1296, 2377),
    "trees Petersen": (lambda: cm.SpanningTrees(nx.petersen_graph()), 2000, 8039),
    "trees 3x4, conflicts": (lambda: cm.SpanningTrees(grid(3, 4)).with_conflicts([(0, 1), (2, 5)]), 722, 4834),
}


@pytest.mark.parametrize("family", list(TREE_VISITS))
def test_the_tree_search_visits_the_partial_forests_it_visited_before(family: str) -> None:
    make, count, visits = TREE_VISITS[family]
    found = tally(make(), 10**6, 10**7)
    assert (found.count, found.visits) == (count, visits)
    assert (found.actions == make().enumerate()).all()
    assert tally(make(), 10**6, visits - 1).status == "unknown"


def test_the_forest_search_visits_one_partial_forest_per_forest() -> None:
    for space in (cm.GraphicMatroid(grid(3, 4)), cm.GraphicMatroid(grid(3, 4)).with_conflicts([(0, 1), (2, 5)])):
        found = tally(space, 10**6, 10**7)
        assert found.visits == found.count == len(space.enumerate(10**6))
