"""The pruned count (``spaces.tally``) lists exactly ``space.enumerate()``'s actions, in its order.

Found (issue 39): ``auto`` estimated 9,953,280 matchings of K(12, 4) (18,001 in truth) and counted a
constrained space by filtering its base family's actions, so small spaces with rules went to HiGHS
(40-440x slower than enumeration). Truth here is the space's own enumeration (filtering the base).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.spaces.tally import tally


def grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


BASES = {
    "cardinality": lambda: cm.Cardinality(9, 3),
    "cardinality exact": lambda: cm.Cardinality(9, 3, exact=True),
    "partition matroid": lambda: cm.PartitionMatroid([[0, 3, 5], [1, 2], [4, 6, 7, 8]], [2, 1, 2]),
    "bipartite matchings": lambda: cm.Matchings(nx.complete_bipartite_graph(4, 3)),
    "general matchings": lambda: cm.Matchings(nx.petersen_graph()),
    "perfect matchings": lambda: cm.Matchings(nx.complete_graph(6), perfect=True),
    "forests": lambda: cm.GraphicMatroid(grid(3)),
    "spanning trees": lambda: cm.SpanningTrees(grid(3)),
    "s-t paths": lambda: cm.STPaths(grid(3), 0, 8),
    "directed s-t paths": lambda: cm.STPaths(grid(3).to_directed(), 0, 8),
    "DAG paths": lambda: cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 3), (1, 3)]), 0, 3),
    "explicit": lambda: cm.ExplicitActions(np.random.default_rng(0).integers(0, 2, (30, 8))),
}


def with_rules(space: cm.ActionSpace, kind: str) -> cm.ActionSpace:
    rng = np.random.default_rng(1)
    d = space.d
    if kind == "none":
        return space
    if kind == "conflicts":
        return space.with_conflicts([(0, 1), (2, d - 1)])
    if kind == "budget":
        return space.with_budget(rng.uniform(0.5, 1.5, d), 2.5)
    if kind == "mixed signs":
        return space.with_constraint(rng.normal(size=d), "<=", 0.5)
    if kind == "at least and excluded":
        return space.with_constraint(np.ones(d), ">=", 2).with_constraint(np.eye(d)[1], "==", 0)
    return space.with_group([0, 2, 4], at_most=1).with_conflicts([(1, 3)])


@pytest.mark.parametrize("rules", ["none", "conflicts", "budget", "mixed signs", "at least and excluded", "group"])
@pytest.mark.parametrize("family", list(BASES))
def test_tally_lists_the_space_s_actions_in_its_order(family: str, rules: str) -> None:
    space = with_rules(BASES[family](), rules)
    try:
        truth = space.enumerate(10**6)
    except ValueError:  # no action left: tally does not count an empty space (enumerate names the rules)
        assert tally(space, 10**6, 10**7).status == "unknown"
        return
    found = tally(with_rules(BASES[family](), rules), 10**6, 10**7)
    assert found.status == "exact"
    assert found.actions.shape == truth.shape
    assert (found.actions == truth).all()  # same rows, same order: auto's enumeration breaks ties as enumerate's


def test_matchings_of_k12_4_are_counted_exactly_and_the_rules_prune() -> None:
    space = cm.Matchings(nx.complete_bipartite_graph(12, 4))
    # closed form: sum_k C(12, k) C(4, k) k! (k slots matched to k ads)
    closed_form = sum(math.comb(12, k) * math.comb(4, k) * math.factorial(k) for k in range(5))  # k ads in k slots
    assert tally(space, 20_000, 10**6).count == closed_form == 18_001
    exclusive = [1.0 if ad in (0, 1) else 0.0 for ad, _ in space.arms]
    ads = space.with_constraint(exclusive, "<=", 1).with_budget([1.0 + ad for ad, _ in space.arms], 23)
    found = tally(ads, 20_000, 10**6)
    assert found.count == len(ads.enumerate(10**6)) == 7_669
    assert found.visits == found.count  # every partial matching the rules leave is itself an action


def test_tally_stops_at_its_limit_and_its_visit_cap() -> None:
    space = cm.Matchings(nx.complete_bipartite_graph(12, 4))
    over = tally(space, 1_000, 10**6)
    assert over.status == "over" and over.actions is None and over.visits <= 1_001
    unknown = tally(space, 20_000, 500)
    assert unknown.status == "unknown" and unknown.visits == 501


def test_a_hop_limit_prunes_the_path_search() -> None:
    """Paths of at most 6 hops: the search never goes deeper (its visits stay far below the unlimited ones)."""
    graph = nx.gnm_random_graph(20, 35, seed=25)
    space = cm.STPaths(graph, 0, 19)
    limited = space.with_constraint(np.ones(space.d), "<=", 6).with_constraint({(0, 15): 1.0}, "==", 0)
    found = tally(limited, 10**6, 10**7)
    assert found.count == 13 == len(limited.enumerate())
    assert found.visits < tally(space, 10**6, 10**7).visits / 10


def test_paths_skip_the_arms_the_graph_presolve_rules_out() -> None:
    """A 15x15 grid whose target hangs off the source: one path, found in one visit (not a search of the grid)."""
    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(15, 15))
    graph.add_edge(0, 1000)
    space = cm.STPaths(graph, 0, 1000).with_constraint(np.ones(graph.number_of_edges()), "<=", 40)
    found = tally(space, 20_000, 1_000_000)
    assert found.status == "exact" and len(found.actions) == 1 and found.visits == 1
    assert space.labels_of(found.actions[0]) == [(0, 1000)]
