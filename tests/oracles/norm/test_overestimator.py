"""The sign +1 branch's concave overestimator (:mod:`cmab_milp.oracles.norm.branch.overestimator`) against brute force.

Truth is every action of a small space: the overestimator must be concave on the free arms, at least
``a @ M @ a`` on every action and equal on the actions of ``m`` arms; the declared conflict pairs must
be exactly the pairs no action holds; the branch built on it must answer like enumeration.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from instances import (
    admitted,
    check_norm_answer,
    correlated,
    norm_values,
    oracle_and_actions,
    psd,
    random_restrictions,
)

import cmab_milp as cm
from cmab_milp._threads import blas_single_thread
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm.branch.overestimator import concave_overestimator, conflict_pairs
from cmab_milp.oracles.norm.solver import last_stats

FAMILIES = ["matchings-bipartite", "matchings-general", "perfect-bipartite", "cardinality", "graphic", "partition"]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_overestimator_is_concave_above_every_action_and_tight_at_m_arms(family):
    oracle, actions = oracle_and_actions(family)
    space, d = oracle.space, oracle.d
    m = int(actions.sum(axis=1).max())
    rng = np.random.default_rng([len(family), 41])
    x = actions.astype(float)
    for trial in range(12):
        M = correlated(rng, d) if trial % 2 else psd(rng, d)
        arms = np.sort(rng.choice(d, size=d - trial % 3, replace=False))
        A, b = concave_overestimator(M, arms, m, conflict_pairs(space))
        assert np.linalg.eigvalsh(A[np.ix_(arms, arms)])[-1] <= 1e-12 * np.abs(M).max()
        inside = ~actions[:, np.setdiff1d(np.arange(d), arms)].any(axis=1)
        q = np.einsum("ni,ij,nj->n", x, A, x) + x @ b
        exact = np.einsum("ni,ij,nj->n", x, M, x)
        tol = 1e-9 * (1 + np.abs(exact))
        assert (q[inside] >= exact[inside] - tol[inside]).all()
        full = inside & (actions.sum(axis=1) == m)
        assert np.allclose(q[full], exact[full], rtol=1e-9, atol=1e-9)


def test_without_the_size_term_it_is_exact_on_every_action():
    oracle, actions = oracle_and_actions("matchings-bipartite")
    rng = np.random.default_rng(2)
    M = correlated(rng, oracle.d)
    A, b = concave_overestimator(M, np.arange(oracle.d), 99, conflict_pairs(oracle.space), size=False)
    x = actions.astype(float)
    q = np.einsum("ni,ij,nj->n", x, A, x) + x @ b
    assert np.allclose(q, np.einsum("ni,ij,nj->n", x, M, x), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("graph", [nx.complete_bipartite_graph(3, 4), nx.complete_graph(5), nx.petersen_graph()])
def test_conflict_pairs_are_exactly_the_pairs_no_matching_holds(graph):
    space = cm.Matchings(graph)
    actions = space.enumerate().astype(int)
    together = (actions.T @ actions) > 0
    C = conflict_pairs(space)
    assert C.dtype == bool and (C == C.T).all() and not C.diagonal().any()
    assert (C == ~together).all()  # no action holds a conflict pair; every other pair is in some action


def test_only_matchings_declare_conflicts():
    assert conflict_pairs(cm.Cardinality(5, 2)) is None
    assert conflict_pairs(cm.GraphicMatroid(nx.cycle_graph(4))) is None


@pytest.mark.parametrize("family", ["graphic", "matchings-bipartite", "matchings-general"])
def test_negative_means_where_the_empty_action_is_allowed(family):
    """Found by this work: with every mean negative the root started at the empty action, where ``q = 0``
    has no tangent, and the branch took ``mu @ a`` as a bound there (not one: the norm was left out),
    pruning better actions (forests of a 3x3 grid: 19 wrong answers in 200). It now takes the triangle
    inequality's plane ``mu + f sqrt(diag M)`` there."""
    oracle, actions = oracle_and_actions(family, plus_branch="always")
    rng = np.random.default_rng([len(family), 9])
    for _ in range(25):
        mu, M, f = -rng.uniform(0, 1, oracle.d), psd(rng, oracle.d), float(rng.uniform(0.1, 3.0))
        answer = oracle.argmax_norm(mu, M, f, 1)
        assert last_stats(oracle).method == "branch-concave"
        truth = norm_values(actions, mu, M, f, 1)
        got = float(norm_values(answer[None, :], mu, M, f, 1)[0])
        assert got >= truth.max() - 1e-9 * (1 + abs(truth.max()))


@pytest.mark.parametrize("family", ["matchings-bipartite", "perfect-bipartite", "matchings-general"])
@pytest.mark.parametrize("overestimator", [True, False])
def test_correlated_queries_answer_like_enumeration(family, overestimator):
    oracle, actions = oracle_and_actions(family, plus_branch="always", concave_overestimator=overestimator)
    rng = np.random.default_rng([len(family), 17])
    for k, f in enumerate([0.1, 0.5, 1.0, 3.0, 10.0, 0.3]):
        mu, M = rng.uniform(-0.2, 1.0, oracle.d), correlated(rng, oracle.d)
        res = random_restrictions(rng, actions, k % 3)
        check_norm_answer(actions, oracle.argmax_norm(mu, M, f, 1, **res), res, mu, M, f, 1, (family, k, f))


def test_bipartite_matchings_take_the_branch_for_sign_plus_one():
    oracle, _ = oracle_and_actions("matchings-bipartite")
    rng = np.random.default_rng(4)
    oracle.argmax_norm(rng.uniform(0, 1, oracle.d), correlated(rng, oracle.d), 1.0, 1)
    assert last_stats(oracle).method == "branch-concave"


def test_blas_runs_on_one_thread_inside_the_block():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with blas_single_thread():
        blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert blas and all(i["num_threads"] == 1 for i in blas)


@pytest.mark.parametrize(
    "space",
    [
        cm.Matchings(nx.complete_bipartite_graph(3, 4)),
        cm.Matchings(nx.complete_bipartite_graph(3, 3), perfect=True),
        cm.Matchings(nx.Graph([(0, 3), (0, 4), (1, 3), (2, 4), (2, 5), (1, 5)])),  # bipartite, not complete
        cm.Matchings(nx.petersen_graph()),  # general: the solver itself
        cm.Cardinality(6, 2),
    ],
)
def test_prepared_linear_queries_give_the_solvers_action(space):
    """``prepare_linear`` (one restriction, many weights) returns exactly the action of the space's solver,
    ties included (integer weights, zeros and negatives), or ``None`` with it."""
    from cmab_milp.oracles.backends.combinatorial import _SOLVERS, prepare_linear
    from cmab_milp.oracles.core.queries import LinearQuery, Restrictions

    rng = np.random.default_rng(space.d)
    solver = _SOLVERS[type(space)]
    for trial in range(60):
        arms = rng.permutation(space.d)
        k_in, k_out = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        res = Restrictions(tuple(sorted(arms[:k_in].tolist())), tuple(sorted(arms[k_in : k_in + k_out].tolist())))
        argmax = prepare_linear(space, res)
        for _ in range(4):
            w = rng.integers(-2, 3, space.d).astype(float) if trial % 2 else rng.normal(size=space.d)
            want, got = solver(space, LinearQuery(w, res)), argmax(w)
            assert (want is None and got is None) or (want.tolist() == got.tolist())


def _reference_kruskal(space, w: np.ndarray, include, exclude, spanning: bool) -> np.ndarray | None:
    """Kruskal's algorithm written plainly (the library's before it was inlined): include, then by decreasing
    weight, ties by index."""
    parent = list(range(space.n_nodes))

    def root(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    action = np.zeros(space.d, bool)
    for k in include:
        ru, rv = root(int(space.tail[k])), root(int(space.head[k]))
        if ru == rv:
            return None
        parent[ru] = rv
        action[k] = True
    for k in sorted(range(space.d), key=lambda k: (-w[k], k)):
        if action[k] or k in exclude or (not spanning and w[k] <= 0):
            continue
        ru, rv = root(int(space.tail[k])), root(int(space.head[k]))
        if ru != rv:
            parent[ru] = rv
            action[k] = True
    return None if spanning and action.sum() != space.n_nodes - 1 else action


@pytest.mark.parametrize("spanning", [True, False])
@pytest.mark.parametrize("graph", ["grid", "petersen", "random"])
def test_prepared_kruskal_gives_the_plain_algorithms_action_and_the_best_value(spanning, graph):
    """Trees and forests: the same action as Kruskal's algorithm written plainly, ties included (integer weights,
    zeros, negatives), and the best value among the admitted actions (brute force where they are few)."""
    from cmab_milp.oracles.backends.combinatorial import prepare_linear
    from cmab_milp.oracles.core.queries import Restrictions

    g = {
        "grid": lambda: nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)),
        "petersen": nx.petersen_graph,
        "random": lambda: nx.gnp_random_graph(7, 0.5, seed=2),
    }[graph]()
    if spanning and not nx.is_connected(g):
        pytest.skip("no spanning tree")
    space = cm.SpanningTrees(g) if spanning else cm.GraphicMatroid(g)
    actions = space.enumerate() if graph != "petersen" else None
    rng = np.random.default_rng([space.d, spanning])
    for trial in range(80):
        arms = rng.permutation(space.d)
        k_in, k_out = int(rng.integers(0, 3)), int(rng.integers(0, 4))
        include, exclude = arms[:k_in].tolist(), arms[k_in : k_in + k_out].tolist()
        w = rng.integers(-2, 3, space.d).astype(float) if trial % 2 else rng.normal(size=space.d)
        got = prepare_linear(space, Restrictions(tuple(sorted(include)), tuple(sorted(exclude))))(w)
        want = _reference_kruskal(space, w, include, set(exclude), spanning)
        assert (want is None and got is None) or want.tolist() == got.tolist(), trial
        if actions is not None:
            ok = actions[:, include].all(axis=1) & ~actions[:, exclude].any(axis=1)
            assert (got is None) == (not ok.any())
            if got is not None:
                assert float(w @ got) == pytest.approx(float((actions[ok] @ w).max()), abs=1e-12)


@pytest.mark.parametrize("family", ["matchings-bipartite", "perfect-bipartite", "matchings-general"])
def test_pair_queries_drop_the_included_arms_rivals_and_answer_like_enumeration(family):
    """SROQ-C's pair representatives: two arms included. The branch drops every arm conflicting with an
    included one from its bound (no admitted action holds it); answers still match enumeration."""
    oracle, actions = oracle_and_actions(family, plus_branch="always")
    rng = np.random.default_rng([len(family), 23])
    for _ in range(12):
        action = actions[rng.integers(len(actions))]
        on = np.flatnonzero(action)
        if len(on) < 2:
            continue
        include = sorted(rng.choice(on, 2, replace=False).tolist())
        mu, M, f = rng.uniform(-0.2, 1.0, oracle.d), correlated(rng, oracle.d), float(rng.choice([0.3, 1.0, 3.0]))
        answer = oracle.argmax_norm(mu, M, f, 1, include=include)
        ok = admitted(actions, include=include)
        best = float(norm_values(actions[ok], mu, M, f, 1).max())
        assert answer[include].all()
        assert float(norm_values(answer[None, :], mu, M, f, 1)[0]) >= best - 1e-9 * (1 + abs(best))


@pytest.mark.parametrize("family", ["matchings-bipartite", "perfect-bipartite", "matchings-general"])
def test_node_forms_bound_every_action_of_their_node(family):
    """A node whose arms shrank (included arms remove their rivals) makes its own shift; its bound must
    still be at least the best index of the node's actions (brute force)."""
    from cmab_milp.oracles.norm.branch.minus import _Node
    from cmab_milp.oracles.norm.branch.plus import ConcaveBranch

    oracle, actions = oracle_and_actions(family)
    d = oracle.d
    rng = np.random.default_rng([len(family), 5])
    checked = 0
    for trial in range(30):
        mu, M, f = rng.uniform(-0.2, 1, d), correlated(rng, d), float(rng.choice([0.3, 1.0, 3.0]))
        query = oracle.norm_query(mu, M, f, 1)
        search = ConcaveBranch(oracle.space, query, np.arange(d), None, None, HighsTuning(concave_reform=0.99))
        include, exclude = np.zeros(d, bool), np.zeros(d, bool)
        on = np.flatnonzero(actions[rng.integers(len(actions))])
        include[rng.choice(on, min(len(on), 1 + trial % 2), replace=False)] = True
        exclude[rng.choice(np.flatnonzero(~include), trial % 3, replace=False)] = True
        ok = actions[:, include].all(axis=1) & ~actions[:, exclude].any(axis=1)
        bound, _ = search.relax(_Node(-np.inf, 1, include, exclude))
        if not ok.any():
            assert bound == -np.inf
            continue
        assert bound >= float(norm_values(actions[ok], mu, M, f, 1).max()) - 1e-12
        checked += search.reforms
    assert checked >= 10


def test_batch_workers_run_blas_on_one_thread_and_the_setting_is_restored():
    """OpenBLAS takes a thread limit only from the thread that set it up: the batch sets it around its
    workers (a limit set inside a worker would leave two threads, and a rounding that depends on timing)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    oracle = cm.make_oracle(cm.Matchings(nx.complete_bipartite_graph(3, 4)), "highs")
    if oracle.max_workers() < 2:
        pytest.skip("one worker: the batch runs in the calling thread")
    inside: list[list[int]] = []
    answer = oracle._answer

    def spy(query):
        inside.append(blas_threads())
        return answer(query)

    oracle._answer = spy
    rng = np.random.default_rng(0)
    oracle.argmax_batch([{"kind": "norm", "mu": rng.uniform(size=12), "M": np.eye(12), "f": 1.0} for _ in range(4)])
    assert len(inside) == 4 and all(threads and set(threads) == {1} for threads in inside)
    assert blas_threads() == before
