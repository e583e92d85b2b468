"""The graph presolve: arms fixed to 0 before any model is built are in no action, and answers are unchanged.

Truth is enumeration on small graphs made to have bridges, pendant trees, blocks off the s-t chain of
blocks and arcs into s / out of t; for undirected s-t paths and bipartite perfect matchings the marked
arms are exactly the arms no action uses.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.spaces.graph_presolve import budgets_of, unusable_matching_arms, unusable_path_arms


def _decorated(seed: int, directed: bool) -> tuple[nx.Graph, int, int]:
    """A small random graph with a chain of blocks, pendant trees and a block hanging off it."""
    rng = np.random.default_rng(seed)
    g = nx.Graph()
    for b in range(3):  # three blocks (cycles with chords) joined at cut nodes 0 - 4 - 8 - 12
        nodes = list(range(4 * b, 4 * b + 5))
        nx.add_cycle(g, nodes)
        if rng.random() < 0.5:
            g.add_edge(nodes[1], nodes[3])
    g.add_edges_from([(6, 20), (20, 21), (21, 22), (22, 20), (2, 30), (30, 31), (12, 40)])  # off any path
    if directed:
        d = nx.DiGraph()
        for u, v in g.edges():
            kind = rng.integers(3)
            d.add_edges_from([(u, v)] if kind == 0 else [(v, u)] if kind == 1 else [(u, v), (v, u)])
        g = d
    return g, 0, 12


def _actions(space) -> np.ndarray:
    """Every action by brute force (none: an empty array)."""
    return np.array(list(space._iter_actions()), bool).reshape(-1, space.d)


def _used(space) -> np.ndarray:
    return _actions(space).any(axis=0)


@pytest.mark.parametrize("seed", range(6))
def test_undirected_paths_marks_exactly_the_edges_no_path_uses(seed: int) -> None:
    g, s, t = _decorated(seed, directed=False)
    space = cm.STPaths(g, s, t)
    unusable = unusable_path_arms(space)
    assert np.array_equal(unusable, ~_used(space))
    assert unusable.sum() >= 7  # the pendant trees and the hanging block


@pytest.mark.parametrize("seed", range(6))
def test_directed_paths_marks_only_arcs_no_path_uses(seed: int) -> None:
    g, s, t = _decorated(seed, directed=True)
    if not nx.has_path(g, s, t):
        g.add_edges_from([(0, 4), (4, 8), (8, 12)])
    space = cm.STPaths(g, s, t)
    unusable = unusable_path_arms(space)
    assert not (unusable & _used(space)).any()
    into_s_out_of_t = (space.head == space.s) | (space.tail == space.t)
    assert unusable[into_s_out_of_t].all()


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("hops", [2, 4, 6, 9])
def test_a_hop_limit_marks_only_arms_of_no_short_enough_path(directed: bool, hops: int) -> None:
    g = nx.grid_2d_graph(3, 4)
    g = g.to_directed() if directed else g
    base = cm.STPaths(g, (0, 0), (2, 3))
    space = base.with_constraint(np.ones(base.d), "<=", hops)
    unusable = base.unusable_arms(budgets_of(space.rows, base.d))
    assert not (unusable & _used(space)).any()
    # the shortest path has 5 hops: below that nothing is usable; far above, every arm of the base's paths is
    assert unusable.all() == (hops < 5)
    if hops >= 9 and not directed:
        assert np.array_equal(unusable, ~_used(base))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("directed", [False, True])
def test_answers_are_unchanged(seed: int, directed: bool) -> None:
    g, s, t = _decorated(seed, directed)
    if not nx.has_path(g, s, t):
        g.add_edges_from([(0, 4), (4, 8), (8, 12)])
    base = cm.STPaths(g, s, t)
    spaces = [base, base.with_constraint(np.ones(base.d), "<=", 7), base.with_budget(np.arange(base.d) % 3, 6)]
    rng = np.random.default_rng(seed)
    for space in spaces:
        actions = _actions(space)
        oracle = cm.make_oracle(space, "highs")
        for w in (rng.uniform(0.1, 1.0, space.d), rng.normal(size=space.d)):
            answer = oracle.argmax(w)
            if not len(actions):
                assert answer is None
                continue
            assert space.contains(answer)
            assert w @ answer == pytest.approx(max(actions.astype(float) @ w), abs=1e-9)


def test_the_formulation_fixes_the_arms_in_one_row() -> None:
    g, s, t = _decorated(0, directed=False)
    space = cm.STPaths(g, s, t)
    fixed = tuple(int(k) for k in np.flatnonzero(space.unusable_arms()))
    rows = [r for r in space.formulation().rows if r.cols == fixed and r.ub == 0.0]
    assert len(rows) == 1 and set(rows[0].coefs) == {1.0}
    hop = space.with_constraint(np.ones(space.d), "<=", 3)  # the rule fixes what the limit adds, in one more row
    extra = hop.formulation().rows[len(space.formulation().rows) + 1 :]
    assert len(extra) == 1 and not set(extra[0].cols) & set(fixed)
    assert not cm.STPaths(nx.cycle_graph(5), 0, 2).unusable_arms().any()  # nothing to fix: no row
    conflicts = space.with_conflicts([(0, 1)])  # pairs rule out no arm alone: no row
    assert len(conflicts.formulation().rows) == len(space.formulation().rows) + 1


@pytest.mark.parametrize("seed", range(5))
def test_bipartite_perfect_matchings_mark_exactly_the_edges_in_none(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = nx.Graph([(i, 10 + i) for i in range(5)])  # a perfect matching, then random left-right edges
    g.add_edges_from((int(i), 10 + int(j)) for i, j in rng.integers(0, 5, size=(6, 2)))
    space = cm.Matchings(g, perfect=True)
    unusable = unusable_matching_arms(space)
    assert np.array_equal(unusable, ~_used(space))
    w = rng.normal(size=space.d)
    answer = cm.make_oracle(space, "highs").argmax(w)
    assert w @ answer == pytest.approx(max(space.enumerate().astype(float) @ w), abs=1e-9)
    assert not cm.Matchings(g).unusable_arms().any()  # every edge is a matching alone


def test_one_action_spaces_answer_at_once() -> None:
    """t hangs off s on a 15x15 grid, with a hop row: the one path s-t (minutes for HiGHS before the presolve)."""
    g = nx.grid_2d_graph(15, 15)
    g.add_edge((0, 0), "t")
    for graph in (g, g.to_directed()):
        base = cm.STPaths(graph, (0, 0), "t")
        space = base.with_constraint(np.ones(base.d), "<=", 40)
        oracle = cm.make_oracle(space, "highs", time_limit=60)
        w = np.random.default_rng(0).uniform(0.1, 1.0, space.d)
        start = time.perf_counter()
        answer = oracle.argmax(w)
        assert time.perf_counter() - start < 5.0
        assert [space.arms[k] for k in np.flatnonzero(answer)] == [((0, 0), "t")]
