"""``auto`` counts again once queries have paid for it (ski rental), and prices mixed-sign path queries honestly.

Found: ``routing_geant.toml``'s quick check took ~10 minutes (66 s when written). Since planning was bounded by a
share of one query's estimate, ``auto`` no longer enumerated GEANT's 17,023 PT -> TR paths (~2 s once) and sent
every query with a positive weight to HiGHS's lazy-cut loop (~30-150 ms each, estimated as an LP at 5 ms).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.auto_facts import QueryShape


def grid_paths(n: int) -> cm.STPaths:
    return cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n)), 0, n * n - 1)


def mixed_weights(space: cm.ActionSpace, rng: np.random.Generator) -> np.ndarray:
    """Mostly negative weights (delays) with two positive ones: no shortest-path algorithm answers these."""
    w = -rng.uniform(0.1, 1.0, space.d)
    w[rng.choice(space.d, 2, replace=False)] = 0.5
    return w


def brute_force_value(space: cm.ActionSpace, w: np.ndarray) -> float:
    paths = nx.all_simple_edge_paths(space.graph, space.source, space.target)
    index = {frozenset(arm): k for k, arm in enumerate(space.arms)}
    return max(sum(w[index[frozenset(e)]] for e in path) for path in paths)


def test_a_count_stopped_at_its_bound_is_tried_again_once_queries_paid_for_it() -> None:
    space = grid_paths(4)  # 184 s-t paths: more partial paths than one query's planning share pays for
    auto = cm.make_oracle(space, "auto")
    rng = np.random.default_rng(0)
    first = mixed_weights(space, rng)
    shape = QueryShape.of(auto.linear_query(first), auto._signed)
    assert shape.mixed and not shape.positive
    assert "enumerate" not in auto.plan(shape) and auto.facts.actions is None  # the first plan could not count
    answers = []
    for w in [first, *(mixed_weights(space, rng) for _ in range(5))]:
        answers.append((w, auto.argmax(w)))
    assert auto.routes["enumerate"] >= 1 and len(auto.facts.actions) == 184
    plan = auto.plan(shape)
    assert plan.index("enumerate") < plan.index("highs")  # (the combinatorial one may come first: it declines these)
    for w, a in answers:  # exact on either route
        assert float(w @ a) == pytest.approx(brute_force_value(space, w), abs=1e-9)
    spent, _due, allowance = auto._ledger
    assert allowance <= auto.replan_share * spent  # planning never outran what the queries cost


def test_replan_share_zero_never_counts_again() -> None:
    space = grid_paths(4)
    auto = cm.make_oracle(space, "auto", replan_share=0.0)
    rng = np.random.default_rng(0)
    for _ in range(6):
        auto.argmax(mixed_weights(space, rng))
    assert "enumerate" not in auto.routes and auto.facts.actions is None


@pytest.mark.parametrize("bad", [-0.5, "half", True, float("nan")])
def test_replan_share_refuses_bad_values(bad) -> None:
    with pytest.raises(ValueError, match="replan_share"):
        cm.make_oracle(grid_paths(3), "auto", replan_share=bad)


def test_no_count_is_tried_again_where_the_space_is_known_too_large() -> None:
    """``Cardinality(20, 8)``: 125,970 actions; once counting proves more than enumeration could beat the
    sorting oracle with, the ledger stops (no re-planning for the rest of the run)."""
    auto = cm.make_oracle(cm.Cardinality(20, 8), "auto")
    rng = np.random.default_rng(1)
    for _ in range(3000):
        auto.argmax(rng.random(20))
    assert auto.routes["combinatorial"] == 3000
    assert auto._ledger[1] == np.inf and auto.facts.actions is None  # decided: nothing left to count again


@pytest.mark.parametrize(
    ("weights", "positive", "mixed"),
    [([-1.0, -2.0, -0.5], False, False), ([-1.0, 2.0, -0.5], False, True), ([1.0, 2.0, -0.5], True, False)],
)
def test_query_shape_records_the_sign_on_cyclic_paths_only(weights, positive, mixed) -> None:
    cyclic = cm.STPaths(nx.cycle_graph(3), 0, 1)
    auto = cm.make_oracle(cyclic, "auto")
    shape = QueryShape.of(auto.linear_query(np.array(weights)), auto._signed)
    assert (shape.positive, shape.mixed) == (positive, mixed)
    plain = QueryShape.of(auto.linear_query(np.array(weights)), False)
    assert not plain.positive and not plain.mixed


def test_answers_after_counting_again_are_a_fresh_oracles_even_on_ties() -> None:
    """Enumeration reached by re-planning answers only queries whose optimum is unique by twice the
    contract's tolerance; ties go to the backend a fresh plan asks, so an answer depends on the query only."""
    space = grid_paths(4)
    auto = cm.make_oracle(space, "auto")
    rng = np.random.default_rng(0)
    for _ in range(6):
        auto.argmax(mixed_weights(space, rng))
    assert auto.routes["enumerate"] >= 1
    before = auto.routes["enumerate"]
    ties = [rng.choice([-1.0, 0.0, 0.5], size=space.d) for _ in range(8)]
    fresh = [cm.make_oracle(space, "auto").argmax(w) for w in ties]
    for w, expected in zip(ties, fresh, strict=True):
        assert np.array_equal(auto.argmax(w), expected)
        assert float(w @ expected) == pytest.approx(brute_force_value(space, w), abs=1e-9)
    assert auto.routes["enumerate"] >= before  # (unique optima among these may still be answered by enumeration)
