"""Sign -1 on s-t paths of cyclic graphs (:mod:`cmab_milp.oracles.norm.paths.minus`) against brute force.

Truth is every simple s-t path (``STPaths.enumerate``) valued in numpy; answers are compared by value
within ``1e-9 * (1 + |optimum|)``; node bounds must be at least the best index of the node's actions.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from instances import admitted, check_norm_answer, norm_values, psd, random_restrictions

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import LimitReached
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.mip.graph_starts import PathStarts
from cmab_milp.oracles.norm import solver
from cmab_milp.oracles.norm.lifting import quadratic_form_bounds
from cmab_milp.oracles.norm.paths.cuts import component_cuts
from cmab_milp.oracles.norm.paths.local_search import improve_path, path_sequence
from cmab_milp.oracles.norm.paths.lp import safe_bound
from cmab_milp.oracles.norm.paths.minus import PathBranch, _Node, applies
from cmab_milp.oracles.norm.solver import last_stats


def _grid(n: int, k: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, k))


def _digraph(seed: int) -> nx.DiGraph:
    """A random digraph with cycles (both directions of some edges) and several 0 -> 6 paths."""
    g = nx.gnp_random_graph(7, 0.45, seed=seed, directed=True)
    g.add_edges_from([(0, 1), (1, 6), (0, 3), (3, 6)])
    g.remove_edges_from([(u, v) for u, v in list(g.edges()) if v == 0 or u == 6])
    return g


GRAPHS = {
    "grid-3x4": lambda: cm.STPaths(_grid(3, 4), 0, 11),
    "petersen": lambda: cm.STPaths(nx.petersen_graph(), 0, 7),
    "wheel": lambda: cm.STPaths(nx.wheel_graph(7), 1, 4),
    "digraph-a": lambda: cm.STPaths(_digraph(1), 0, 6),
    "digraph-b": lambda: cm.STPaths(_digraph(4), 0, 6),
}
_CACHE: dict = {}


def space_and_actions(name: str):
    if name not in _CACHE:
        space = GRAPHS[name]()
        _CACHE[name] = (space, cm.make_oracle(space, "highs"), space.enumerate())
    return _CACHE[name]


def values(actions: np.ndarray, mu, M, f) -> np.ndarray:
    return norm_values(actions, mu, M, f, -1)


restrictions = random_restrictions


def test_the_graphs_are_cyclic_with_many_paths():
    for name in GRAPHS:
        space, _, actions = space_and_actions(name)
        assert applies(space) and len(actions) >= 5, name
    assert not applies(cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (0, 2)]), 0, 2))  # a DAG: minus_branch's
    assert not applies(cm.Cardinality(4, 2))


@pytest.mark.parametrize("name", list(GRAPHS))
def test_answers_match_brute_force(name):
    space, oracle, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 7])
    for k, f in enumerate([0.1, 0.3, 1.0, 3.0, 5.0, 0.5, 2.0, 0.2, 1.5]):
        mu = rng.uniform(-0.3, 1.0, space.d) if k % 2 else rng.uniform(0.0, 1.0, space.d)
        M = psd(rng, space.d)
        res = restrictions(rng, actions, k % 3)
        ok = admitted(actions, **res)
        answer = oracle.argmax_norm(mu, M, f, -1, **res)
        assert last_stats(oracle).method == "branch-path-lp"
        if not ok.any():
            assert answer is None, (name, k)
            continue
        best = float(values(actions[ok], mu, M, f).max())
        got = float(values(answer[None, :], mu, M, f)[0])
        assert got >= best - 1e-9 * (1 + abs(best)), (name, k, f, got, best)
        assert space.contains(answer) and admitted(answer[None, :], **res)[0]


def test_instances_of_the_shared_families():
    """The shared cyclic path families of tests/instances.py (one with a cycle off every path)."""
    from instances import oracle_and_actions

    rng = np.random.default_rng(11)
    for family in ("paths-cyclic-directed", "paths-cyclic-undirected"):
        oracle, actions = oracle_and_actions(family)
        for f in (0.1, 1.0, 5.0):
            mu, M = rng.uniform(-0.2, 1.0, oracle.d), psd(rng, oracle.d)
            answer = oracle.argmax_norm(mu, M, f, -1)
            assert last_stats(oracle).method == "branch-path-lp"
            best = float(values(actions, mu, M, f).max())
            assert float(values(answer[None, :], mu, M, f)[0]) >= best - 1e-9 * (1 + abs(best))


def test_no_path_left_gives_none():
    space, oracle, _actions = space_and_actions("grid-3x4")
    first = [k for k in range(space.d) if space.tail[k] == space.s or space.head[k] == space.s]
    M = psd(np.random.default_rng(0), space.d)
    assert oracle.argmax_norm(np.ones(space.d), M, 1.0, -1, exclude=first) is None
    a, b = first  # both edges at the source: no simple path takes both
    assert oracle.argmax_norm(np.ones(space.d), M, 1.0, -1, include=[a, b]) is None


def test_indefinite_or_badly_scaled_queries_keep_the_secant_milps():
    space, oracle, actions = space_and_actions("wheel")
    rng = np.random.default_rng(2)
    mu = rng.uniform(0, 1, space.d)
    a = rng.normal(size=(space.d, 2))
    M = a @ a.T  # rank 2: not definite
    answer = oracle.argmax_norm(mu, M, 1.0, -1)
    assert last_stats(oracle).method == "secants-quadratic-form"
    best = float(values(actions, mu, M, 1.0).max())
    assert float(values(answer[None, :], mu, M, 1.0)[0]) >= best - 1e-9 * (1 + abs(best))


def _branch(space, mu, M, f, **res) -> PathBranch:
    oracle = cm.make_oracle(space, "highs")
    q = oracle.norm_query(mu, M, f, -1, **res)
    arms = np.setdiff1d(np.arange(space.d), q.restrictions.exclude)
    _, hi = quadratic_form_bounds(q.M, space.m, arms)
    return PathBranch(space, q, arms, hi, None, time.perf_counter)


def random_path_node(rng: np.random.Generator, search, actions: np.ndarray, res: dict):
    """A node of up to 3 random branchable columns of ``search`` (arms and, undirected, visits), each included (40%)
    or excluded: ``(include, exclude, ok)``, ``ok`` marking the rows of ``actions`` the node and ``res`` admit."""
    lp, space = search.lp, search.space
    include, exclude = np.zeros(lp.n, bool), np.zeros(lp.n, bool)
    for c in rng.permutation(np.flatnonzero(search.branchable))[: rng.integers(0, 4)]:
        (include if rng.random() < 0.4 else exclude)[c] = True
    ok = admitted(actions, **res)
    ok &= (actions | ~include[: space.d]).all(axis=1) & ~(actions & exclude[: space.d]).any(axis=1)
    for col, node in zip(lp.visits, lp.visit_nodes, strict=True):  # the node's degree is 2 z (0 or 2)
        deg = actions[:, (space.tail == node) | (space.head == node)].sum(axis=1)
        ok &= ~(include[col] & (deg == 0)) & ~(exclude[col] & (deg > 0))
    return include, exclude, ok


@pytest.mark.parametrize("name", ["grid-3x4", "petersen", "digraph-a"])
def test_every_node_bound_is_at_least_its_best_action(name):
    """Random nodes (arms and, undirected, visited nodes fixed in or out): the relaxation bounds their actions."""
    space, _, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 5])
    checked = 0
    for trial in range(30):
        f = [0.1, 1.0, 3.0][trial % 3]
        mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
        res = restrictions(rng, actions, trial % 3)
        search = _branch(space, mu, M, f, **res)
        include, exclude, ok = random_path_node(rng, search, actions, res)
        node = _Node(-np.inf, 0, include, exclude)
        bound, x = search.kelley(node, rounds=1 + trial % 4)
        if not ok.any():
            continue
        best = float(values(actions[ok], mu, M, f).max())
        assert x is not None and bound >= best - 1e-12, (name, trial, bound, best)
        checked += 1
    assert checked >= 10


def test_safe_bound_is_an_upper_bound_for_any_prices():
    rng = np.random.default_rng(3)
    for _ in range(20):
        m, n = 6, 8
        A = rng.normal(size=(m, n))
        row_lo = np.where(rng.random(m) < 0.5, -np.inf, -rng.uniform(0, 2, m))
        row_hi = np.where(np.isinf(row_lo), rng.uniform(0, 2, m), np.inf)
        lo, hi, c = -rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.normal(size=n)
        res = scipy.optimize.linprog(
            -c,
            A_ub=np.vstack([A[np.isfinite(row_hi)], -A[np.isfinite(row_lo)]]),
            b_ub=np.concatenate([row_hi[np.isfinite(row_hi)], -row_lo[np.isfinite(row_lo)]]),
            bounds=list(zip(lo, hi, strict=True)),
            method="highs",
        )
        assert res.status == 0
        opt = -res.fun
        for y in (rng.normal(size=m), np.zeros(m)):  # any prices: valid
            assert safe_bound(c, [sp.csr_matrix(A)], row_lo, row_hi, lo, hi, y) >= opt - 1e-9
        duals = np.zeros(m)  # the optimal prices: tight (linprog's marginals of the <= rows)
        marg, k = res.ineqlin.marginals, int(np.isfinite(row_hi).sum())
        duals[np.isfinite(row_hi)] = -marg[:k]
        duals[np.isfinite(row_lo)] = marg[k:]
        tight = safe_bound(c, [A[:3], A[3:]], row_lo, row_hi, lo, hi, duals)
        assert opt - 1e-9 <= tight <= opt + 1e-7


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="row prices"):
        safe_bound(np.ones(2), [np.ones((1, 2))], np.zeros(1), np.ones(1), np.zeros(2), np.ones(2), np.ones(2))
    space = cm.Cardinality(4, 2)
    q = cm.make_oracle(space, "highs").norm_query(np.ones(4), np.eye(4), 1.0, -1)
    with pytest.raises(ValueError, match="s-t paths of a graph with cycles"):
        PathBranch(space, q, np.arange(4), 2.0, None, time.perf_counter)


def test_component_cuts_cut_off_a_cycle_beside_the_path():
    space = cm.STPaths(_grid(3, 3), 0, 2)
    x = np.zeros(space.d)
    edges = {frozenset(e): k for k, e in enumerate(space.arms)}
    for u, v in [(0, 1), (1, 2), (3, 4), (4, 7), (7, 6), (6, 3)]:
        x[edges[frozenset((u, v))]] = 1.0
    cuts = component_cuts(space, x)
    assert cuts and all(float(np.dot(r.coefs, x[list(r.cols)])) < r.lb for r in cuts)
    for a in space.enumerate():  # valid for every path
        assert all(float(np.dot(r.coefs, a[list(r.cols)])) >= r.lb - 1e-12 for r in cuts)
    path = np.zeros(space.d)
    path[[edges[frozenset((0, 1))], edges[frozenset((1, 2))]]] = 1.0
    assert component_cuts(space, path) == []


def test_answers_depend_on_the_query_alone():
    space, oracle, actions = space_and_actions("petersen")
    rng = np.random.default_rng(9)
    queries = [
        (rng.uniform(0, 1, space.d), psd(rng, space.d), f, restrictions(rng, actions, k % 3))
        for k, f in enumerate([0.3, 1.0, 3.0, 0.5])
    ]
    first = [oracle.argmax_norm(mu, M, f, -1, **res) for mu, M, f, res in queries]
    fresh = cm.make_oracle(space, "highs")
    for (mu, M, f, res), answer in zip(reversed(queries), reversed(first), strict=True):
        again = fresh.argmax_norm(mu, M, f, -1, **res)
        assert (again is None and answer is None) or np.array_equal(again, answer)
    assert np.array_equal(oracle.argmax_norm(*queries[0][:3], -1, **queries[0][3]), first[0])


def test_ties_are_broken_the_same_way_whatever_came_before():
    """Two paths of equal index (a symmetric graph): the answer is the same after other queries."""
    space = cm.STPaths(nx.cycle_graph(6), 0, 3)  # two paths of three edges
    mu, M = np.ones(6), np.eye(6)
    oracle = cm.make_oracle(space, "highs")
    first = oracle.argmax_norm(mu, M, 0.5, -1)
    oracle.argmax_norm(np.arange(6.0), M + 0.5, 1.0, -1)
    assert np.array_equal(oracle.argmax_norm(mu, M, 0.5, -1), first)


def test_time_limit_stops_a_hard_query():
    space = cm.STPaths(_grid(8, 8), 0, 63)
    rng = np.random.default_rng(1)
    oracle = cm.make_oracle(space, "highs", time_limit=0.3)
    mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
    start = time.perf_counter()
    with pytest.raises(LimitReached):
        oracle.argmax_norm(mu, M, 3.0, -1)
    assert time.perf_counter() - start < 5.0  # stopped near its limit (the machine may be loaded)
    assert issubclass(LimitReached, OracleError)


@pytest.mark.slow
def test_8x8_grid_agrees_with_the_secant_milps():
    space = cm.STPaths(_grid(8, 8), 0, 63)
    rng = np.random.default_rng(4)
    oracle = cm.make_oracle(space, "highs", time_limit=120)
    plain = cm.make_oracle(space, "highs", time_limit=120, tuning={"minus_paths": False})
    for k, f in enumerate([0.1, 0.3]):
        mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
        res = {} if k == 0 else {"exclude": [3, 50], "forbid_pairs": [(10, 11), (60, 70)]}
        ours = oracle.argmax_norm(mu, M, f, -1, **res)
        assert last_stats(oracle).method == "branch-path-lp"
        secants = plain.argmax_norm(mu, M, f, -1, **res)
        assert last_stats(plain).method == "secants-quadratic-form"
        a, b = (float(values(z[None, :], mu, M, f)[0]) for z in (ours, secants))
        assert abs(a - b) <= 1e-9 * (1 + abs(b)), (f, a, b)


def test_the_option_off_restores_the_secants():
    space = space_and_actions("wheel")[0]
    oracle = cm.make_oracle(space, "highs", tuning={"minus_paths": False})
    rng = np.random.default_rng(6)
    mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
    oracle.argmax_norm(mu, M, 1.0, -1)
    assert last_stats(oracle).method == "secants-quadratic-form"


def test_approximate_mode_returns_a_certified_path_on_its_time_limit(monkeypatch):
    """A clock that runs out after a few reads: the answer's proven ratio holds against brute force."""
    space, _, actions = space_and_actions("petersen")
    rng = np.random.default_rng(8)
    stopped = approximate = 0
    for reads in (3, 6, 10, 20, 40):
        ticks = iter(range(10**6))
        monkeypatch.setattr(solver, "_clock", lambda ticks=ticks: float(next(ticks)))
        mu, M, f = rng.uniform(0.5, 1.5, space.d), psd(rng, space.d), 1.0
        oracle = cm.make_oracle(space, "highs", time_limit=reads - 0.5, norm_gap=1e-6)
        try:
            answer = oracle.argmax_norm(mu, M, f, -1)
        except LimitReached:  # stopped before any path was found: nothing to certify
            continue
        assert last_stats(oracle).method == "branch-path-lp"
        best = float(values(actions, mu, M, f).max())
        value = float(values(answer[None, :], mu, M, f)[0])
        assert space.contains(answer) and 0.0 < oracle.proven_ratio <= 1.0
        assert value >= oracle.proven_ratio * best - 1e-9 * (1 + abs(best)), (reads, value, best)
        approximate += oracle.proven_ratio < 1.0
        exact = cm.make_oracle(space, "highs", time_limit=reads - 0.5)
        ticks = iter(range(10**6))
        monkeypatch.setattr(solver, "_clock", lambda ticks=ticks: float(next(ticks)))
        try:
            assert float(values(exact.argmax_norm(mu, M, f, -1)[None, :], mu, M, f)[0]) >= best - 1e-9 * (1 + best)
        except LimitReached:
            stopped += 1
    assert stopped and approximate  # the clock did stop some searches, some with a certified path


def test_a_node_stopped_by_the_clock_keeps_its_bound():
    """norm_gap past the deadline: a node ends without an LP, and the bound returned still covers it."""
    space, _, actions = space_and_actions("grid-3x4")
    rng = np.random.default_rng(12)
    mu, M, f = rng.uniform(0.5, 1.5, space.d), psd(rng, space.d), 1.0
    truth = values(actions, mu, M, f)
    worst = actions[int(np.argmin(truth))]
    search = _branch(space, mu, M, f)
    ticks = iter([0.0] + [10.0] * 100)  # the node starts in time; its first LP round is past the deadline
    search.clock, search.deadline = lambda: next(ticks), 5.0
    best, _, bound = search.run(worst, float(truth.min()), settled=lambda top, v: False)
    assert np.array_equal(best, worst) and bound >= float(truth.max()) - 1e-12


def test_repair_refuses_a_candidate_that_is_no_path_plus_cycles():
    """An LP point integral on the arms only (a visit column at 1/2) can hold a dangling path: repair used to
    walk it as a cycle and fail with a KeyError; it now returns None."""
    space = cm.STPaths(_grid(3, 4), 0, 11)
    edges = [(0, 1), (1, 2), (2, 3), (3, 7), (7, 11), (4, 8), (4, 5), (5, 6), (6, 10), (9, 10)]
    chosen = np.zeros(space.d, bool)
    chosen[[space.arms.index(e) for e in edges]] = True
    assert PathStarts.of(space).repair(chosen, np.ones(space.d)) is None
    ok = chosen.copy()  # the path plus a square: still repaired (spliced in)
    ok[[space.arms.index(e) for e in [(4, 8), (4, 5), (5, 6), (6, 10), (9, 10)]]] = False
    ok[[space.arms.index(e) for e in [(4, 5), (5, 9), (8, 9), (4, 8)]]] = True
    assert space.contains(PathStarts.of(space).repair(ok, np.ones(space.d)))


@pytest.mark.parametrize("sign", [1, -1])
def test_norm_queries_on_cyclic_paths_bound_the_size_without_the_longest_path_milp(sign):
    """``space.m`` on cyclic s-t paths is a longest-path MILP (16 s on a 10x10 grid); the norm
    queries use ``nodes - 1`` instead (:func:`~cmab_milp.oracles.norm.scaling.arms_bound`), at least
    the exact ``m`` (brute force), and answer exactly."""
    from cmab_milp.oracles.norm.scaling import arms_bound

    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
    space = cm.STPaths(graph, 0, 8)
    bound = arms_bound(space)
    assert "m" not in vars(space)
    rng = np.random.default_rng(3)
    a = rng.normal(size=(space.d, space.d))
    mu, M = rng.uniform(0, 1, space.d), a @ a.T / space.d + 0.1 * np.eye(space.d)
    answer = cm.make_oracle(space, "highs").argmax_norm(mu, M, 0.5, sign)
    assert "m" not in vars(space)
    actions = space.enumerate().astype(float)
    values = actions @ mu + sign * 0.5 * np.sqrt(np.einsum("ni,ij,nj->n", actions, M, actions))
    got = float(answer @ mu + sign * 0.5 * np.sqrt(answer @ M @ answer))
    assert got >= values.max() - 1e-9 * (1 + abs(values.max()))
    assert bound >= int(actions.sum(axis=1).max())


# ------------------------------------------------------------ local search (paths_local)


def _local_moves_from(space, a: np.ndarray, actions: np.ndarray, max_segment: int, max_detour: int) -> np.ndarray:
    """Rows of ``actions`` one move away from the path ``a`` (brute force): ``a`` minus a contiguous run of at most
    ``max_segment`` of its arms plus at most ``max_detour`` new arms."""
    _nodes, order = path_sequence(space, a)
    position = {k: p for p, k in enumerate(order)}
    near = np.zeros(len(actions), bool)
    for row, b in enumerate(actions):
        removed, added = np.flatnonzero(a & ~b), np.flatnonzero(b & ~a)
        if not len(removed) or not len(added) or len(removed) > max_segment or len(added) > max_detour:
            continue
        spots = sorted(position[k] for k in removed)
        near[row] = spots[-1] - spots[0] == len(spots) - 1
    return near


@pytest.mark.parametrize("name", ["grid-3x4", "petersen", "wheel", "digraph-a", "digraph-b"])
def test_local_search_climbs_to_a_local_optimum(name):
    """From random admitted paths: an admitted path, valued exactly, no worse, and no better path one move away."""
    space, oracle, actions = space_and_actions(name)
    rng = np.random.default_rng([len(name), 21])
    climbed = 0
    for trial in range(12):
        f = [0.1, 1.0, 3.0, 5.0][trial % 4]
        mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
        res = restrictions(rng, actions, trial % 3)
        ok = admitted(actions, **res)
        if not ok.any():
            continue
        q = oracle.norm_query(mu, M, f, -1, **res)
        truth = values(actions, mu, M, f)
        start = actions[rng.choice(np.flatnonzero(ok))]
        path, value = improve_path(space, q, start, max_passes=100)
        assert space.contains(path) and admitted(path[None, :], **res)[0]
        assert value == pytest.approx(float(values(path[None, :], mu, M, f)[0]), rel=1e-12, abs=1e-12)
        assert value >= float(values(start[None, :], mu, M, f)[0]) - 1e-12 * (1 + abs(value))
        near = ok & _local_moves_from(space, path, actions, 3, 4)
        if near.any():
            assert truth[near].max() <= value + 1e-9 * (1 + abs(value)), (name, trial)
        climbed += not np.array_equal(path, start)
    assert climbed  # some start was improved


def test_local_search_path_sequence_and_bad_input():
    space, oracle, actions = space_and_actions("grid-3x4")
    a = actions[0]
    nodes, arms = path_sequence(space, a)
    assert nodes[0] == space.s and nodes[-1] == space.t and sorted(arms) == np.flatnonzero(a).tolist()
    for u, v, k in zip(nodes, nodes[1:], arms, strict=False):
        assert {u, v} == {int(space.tail[k]), int(space.head[k])}
    q = oracle.norm_query(np.ones(space.d), np.eye(space.d), 1.0, -1, exclude=[arms[0]])
    with pytest.raises(ValueError, match="not an s-t path"):
        path_sequence(space, np.zeros(space.d, bool))
    with pytest.raises(ValueError, match="restrictions admit"):
        improve_path(space, q, a)  # holds the excluded arm
    with pytest.raises(ValueError, match="max_segment"):
        improve_path(space, q, actions[1], max_segment=0)


@pytest.mark.parametrize("switch", [False, True])
def test_answers_match_brute_force_with_and_without_local_search(switch):
    for name in ("grid-3x4", "digraph-b"):
        space, _, actions = space_and_actions(name)
        oracle = cm.make_oracle(space, "highs", tuning={"paths_local_search": switch})
        rng = np.random.default_rng([len(name), 31])
        for k, f in enumerate([0.1, 1.0, 3.0, 5.0]):
            mu, M = rng.uniform(-0.2, 1.0, space.d), psd(rng, space.d)
            res = restrictions(rng, actions, k % 3)
            check_norm_answer(actions, oracle.argmax_norm(mu, M, f, -1, **res), res, mu, M, f, -1, (name, k, f))
