"""The tie search counts the candidates the query's restrictions refuse against its budget (``leaves``).

Before, only admitted candidates were counted: a query through one link of a cyclic graph (``include``)
first walks every way of leaving that link out, as many as the ties allow (906,315 candidates in one query of
SROQ's first epoch on ``problems/routing_geant.toml`` with ``ties = "classes"``; the job of 300 steps did not end in
400 s, against 2.3 s now). Past the budget the open arms are settled by restricted solves, which give the same
action (the rule's, checked here by brute force).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from test_interrupts_ties import CountedRestrictions, _grid_paths, _rule  # the halted-search tests' helpers

import cmab_milp as cm
from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
from cmab_milp.oracles.core.ties import first_optimum, open_arms


@pytest.mark.parametrize("leaves", [1, 5, 20])
@pytest.mark.parametrize("include", [(0,), (1,), (0, 16)])
def test_refused_candidates_count_against_the_budget(leaves: int, include: tuple[int, ...]) -> None:
    space = _grid_paths()
    oracle = cm.make_oracle(space, "enumerate", ties="classes")
    weights = np.ones(space.d)
    restrictions = CountedRestrictions(include=include)
    answer = oracle._linear(LinearQuery(weights, Restrictions(include=include)))
    order = open_arms(weights.tolist(), answer.tolist())[0]
    action = first_optimum(oracle, LinearQuery(weights, restrictions), answer, leaves=leaves)
    assert len(restrictions.checked) <= leaves + len(order) + 1
    assert np.flatnonzero(action).tolist() == _rule(space, weights, include)


@pytest.mark.parametrize("seed", range(6))
def test_every_budget_gives_the_rules_action(seed: int) -> None:
    """Search, settling, or both: the same action, the brute-force rule's, on tied weights with restrictions.

    The weights are 0, 1, pi and -e: two sums of them are equal only with as many arms of each (the ties the
    ``"classes"`` rule settles; equal sums of different weights are ``"exact"``'s)."""
    rng = np.random.default_rng(seed)
    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
    space = cm.STPaths(graph.to_directed() if seed % 2 else graph, 0, 8)
    oracle = cm.make_oracle(space, "enumerate", ties="classes")
    for _ in range(5):
        weights = rng.choice([0.0, 1.0, np.pi, -np.e], size=space.d)
        include = tuple(int(i) for i in rng.choice(space.d, size=1))
        actions = space.enumerate()
        if not actions[:, list(include)].all(axis=1).any():
            continue
        query = LinearQuery(weights, Restrictions(include=include))
        answer = oracle._linear(query)
        truth = _rule(space, weights, include)
        for leaves in (0, 1, 3, 10_000):
            assert np.flatnonzero(first_optimum(oracle, query, answer, leaves=leaves)).tolist() == truth
