"""The tie rule's action on s-t paths of cyclic graphs (oracles/core/paths_ruled.py) against brute force.

The truth: every simple s-t path the restrictions admit (networkx), the largest exact value (``Fraction``), and
among the paths of that value the one of least binary number ``sum_i 2^i x_i``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.paths_ruled import cyclic_path_ruled, least_path_through
from cmab_milp.oracles.core.queries import LinearQuery, Restrictions

TIED = (0.0, -0.25, -0.5, -1.0)


def _graph(rng: np.random.Generator, directed: bool) -> nx.Graph:
    """A connected-enough random graph with a cycle and a 0-(n-1) path, 6 to 9 nodes."""
    while True:
        n = int(rng.integers(6, 10))
        m = int(rng.integers(n + 1, 2 * n + 2))
        g = nx.gnm_random_graph(n, m, seed=int(rng.integers(2**31)), directed=directed)
        if nx.has_path(g, 0, n - 1) and not (directed and nx.is_directed_acyclic_graph(g)):
            return g


def _weights(rng: np.random.Generator, d: int, kind: str) -> np.ndarray:
    if kind == "tied":
        return rng.choice(TIED, d)
    return -rng.uniform(0.0, 1.0, d) * (rng.random(d) < 0.8)  # random negative floats, some zeros


def _simple_paths(space: cm.STPaths) -> list[list[int]]:
    """Every simple s-t path as its arms (networkx's search)."""
    arm = {}
    for k, (u, v) in enumerate(zip(space.tail.tolist(), space.head.tolist(), strict=True)):
        arm[u, v] = k
        if not space.directed:
            arm[v, u] = k
    return [
        [arm[u, v] for u, v in itertools.pairwise(nodes)]
        for nodes in nx.all_simple_paths(space.graph, space.s, space.t)
    ]


def _rule_action(
    space: cm.STPaths, weights: np.ndarray, res: Restrictions, paths: list[list[int]] | None = None
) -> np.ndarray | None:
    """Brute force: the admitted simple path of largest exact value, then least binary number."""
    exact = [Fraction(float(w)) for w in weights]
    scale = math.lcm(*(x.denominator for x in exact))
    numerators = [int(x * scale) for x in exact]  # exact integers: the values times a common denominator
    include, exclude = set(res.include), set(res.exclude)
    best = None
    for arms in _simple_paths(space) if paths is None else paths:
        if not include.issubset(arms) or exclude.intersection(arms):
            continue
        key = (-sum(numerators[k] for k in arms), sum(1 << k for k in arms))
        if best is None or key < best[0]:
            best = (key, arms)
    if best is None:
        return None
    action = np.zeros(space.d, bool)
    action[best[1]] = True
    return action


def _same(answer: np.ndarray | None, truth: np.ndarray | None) -> bool:
    return (answer is None and truth is None) or (
        answer is not None and truth is not None and answer.tolist() == truth.tolist()
    )


@pytest.mark.parametrize("kind", ["tied", "floats"])
@pytest.mark.parametrize("directed", [False, True])
def test_no_arm_in_gives_the_rule_action(directed: bool, kind: str) -> None:
    rng = np.random.default_rng(11 + directed + 2 * (kind == "tied"))
    for _ in range(40):
        g = _graph(rng, directed)
        space = cm.STPaths(g, 0, g.number_of_nodes() - 1)
        w = _weights(rng, space.d, kind)
        exclude = tuple(sorted(set(rng.choice(space.d, int(rng.integers(0, 3))).tolist())))
        res = Restrictions(exclude=exclude)
        w[list(exclude)] = 0.5  # excluded arms may have any weight
        answer, ruled = cyclic_path_ruled(space, LinearQuery(w, res))
        assert ruled is True
        assert _same(answer, _rule_action(space, w, res))


@pytest.mark.parametrize("kind", ["tied", "floats"])
def test_one_edge_in_on_an_undirected_graph_gives_the_rule_action(kind: str) -> None:
    rng = np.random.default_rng(5 + (kind == "tied"))
    checked = ends = 0
    for _ in range(12):
        g = _graph(rng, False)
        space = cm.STPaths(g, 0, g.number_of_nodes() - 1)
        w = _weights(rng, space.d, kind)
        for arm in range(space.d):  # every edge in turn: some touch s or t, some lie on no simple s-t path
            exclude = tuple(k for k in sorted(set(rng.choice(space.d, 2).tolist())) if k != arm)
            res = Restrictions(include=(arm,), exclude=exclude)
            weights = w.copy()
            weights[arm] = rng.choice([0.75, -0.5, 0.0])  # the arm in may have any sign
            answer, ruled = cyclic_path_ruled(space, LinearQuery(weights, res))
            assert ruled is True
            assert _same(answer, _rule_action(space, weights, res))
            checked += 1
            ends += bool({space.s, space.t} & {int(space.tail[arm]), int(space.head[arm])})
    assert checked > 100 and ends > 10


def test_the_arm_in_joining_source_and_target_is_the_whole_path() -> None:
    g = nx.cycle_graph(5)
    g.add_edge(0, 4)  # already there: arm (0, 4) joins s and t
    space = cm.STPaths(g, 0, 4)
    arm = space.arm_indices([(0, 4)], "include")[0]
    answer, ruled = cyclic_path_ruled(space, LinearQuery(np.zeros(space.d), Restrictions(include=(arm,))))
    assert ruled and answer.nonzero()[0].tolist() == [arm]


def test_queries_it_cannot_rule_are_left_to_the_caller() -> None:
    undirected = cm.STPaths(nx.cycle_graph(5), 0, 2)
    directed = cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (2, 0), (1, 0), (2, 1)]), 0, 2)
    zeros = np.zeros(5)
    positive = np.array([0.0, 0.0, 0.25, 0.0, 0.0])
    assert cyclic_path_ruled(undirected, LinearQuery(positive, Restrictions())) is None
    assert cyclic_path_ruled(undirected, LinearQuery(positive, Restrictions(include=(0,)))) is None
    assert cyclic_path_ruled(undirected, LinearQuery(zeros, Restrictions(include=(0, 1)))) is None
    assert cyclic_path_ruled(undirected, LinearQuery(zeros, Restrictions(forbid_pairs=((0, 1),)))) is None
    assert cyclic_path_ruled(directed, LinearQuery(zeros, Restrictions(include=(1,)))) is None
    assert cyclic_path_ruled(directed, LinearQuery(positive, Restrictions())) is None
    # a positive weight on an excluded arm, or on the one arm in, is fine
    assert cyclic_path_ruled(undirected, LinearQuery(positive, Restrictions(exclude=(2,))))[1] is True
    assert cyclic_path_ruled(undirected, LinearQuery(positive, Restrictions(include=(2,))))[1] is True
    # the arm in is also excluded: no path, and that is certain
    assert cyclic_path_ruled(undirected, LinearQuery(zeros, Restrictions(include=(1,), exclude=(1,)))) == (None, True)


def test_two_disjoint_paths_need_an_undirected_graph() -> None:
    directed = cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (2, 0)]), 0, 2)
    with pytest.raises(ValueError, match="undirected"):
        least_path_through(directed, [1, 2, 4], [True] * 3, 1)


@pytest.mark.parametrize("backend", ["combinatorial", "auto"])
@pytest.mark.parametrize("ties", ["off", "classes"])
def test_whole_queries_through_the_oracles(backend: str, ties: str) -> None:
    rng = np.random.default_rng(3)
    for round_ in range(10):
        g = _graph(rng, False)
        space = cm.STPaths(g, 0, g.number_of_nodes() - 1)
        oracle = cm.make_oracle(space, backend, ties=ties)
        w = _weights(rng, space.d, "tied" if round_ % 2 else "floats")
        for include in [(), *((k,) for k in range(0, space.d, 3))]:
            res = Restrictions(include=include)
            truth = _rule_action(space, w, res)
            answer = oracle.argmax(w, include=list(include))
            if truth is None:
                assert answer is None
                continue
            exact = [Fraction(float(x)) for x in w]
            assert sum(exact[k] for k in np.flatnonzero(answer)) == sum(exact[k] for k in np.flatnonzero(truth))
            assert space._contains(answer) and res.admits(answer)
            if ties == "classes" and backend == "combinatorial":  # auto enumerates these small spaces
                assert answer.tolist() == truth.tolist()


@pytest.mark.parametrize("ties", ["off", "classes"])
def test_auto_sends_the_queries_of_a_grid_to_the_ruled_paths(ties: str) -> None:
    """On the 5x5 grid (8,512 corner-to-corner paths) ``auto`` asks the combinatorial backend, which rules."""
    space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(5, 5)), 0, 24)
    oracle = cm.make_oracle(space, "auto", ties=ties)
    rng = np.random.default_rng(8)
    paths = _simple_paths(space)
    for include in [(), (7,), (39,), (0,)]:
        w = rng.choice(TIED, space.d)
        truth = _rule_action(space, w, Restrictions(include=include), paths)
        answer = oracle.argmax(w, include=list(include))
        exact = [Fraction(float(x)) for x in w]
        assert sum(exact[k] for k in np.flatnonzero(answer)) == sum(exact[k] for k in np.flatnonzero(truth))
        if ties == "classes":
            assert answer.tolist() == truth.tolist()
    assert set(oracle.routes) == {"combinatorial"}


def test_the_combinatorial_backend_says_which_cyclic_path_queries_it_answers() -> None:
    from cmab_milp.oracles.backends.combinatorial import supports

    undirected = cm.STPaths(nx.cycle_graph(5), 0, 2)
    directed = cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (2, 0), (1, 0), (2, 1)]), 0, 2)
    zeros, positive = np.zeros(5), np.array([0.0, 0.0, 0.25, 0.0, 0.0])
    assert supports(undirected, LinearQuery(zeros, Restrictions(include=(1,))))
    assert supports(undirected, LinearQuery(positive, Restrictions(include=(2,))))  # the arm in: any sign
    assert not supports(undirected, LinearQuery(positive, Restrictions(include=(1,))))
    assert not supports(undirected, LinearQuery(zeros, Restrictions(include=(0, 1))))
    assert not supports(directed, LinearQuery(zeros, Restrictions(include=(1,))))
    with pytest.raises(cm.UnsupportedQuery):
        cm.make_oracle(directed, "combinatorial").argmax(zeros, include=[1])
