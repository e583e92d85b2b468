"""Sign -1 by branch and bound on the linear oracle (:mod:`cmab_milp.oracles.norm.branch.minus`) against brute force.

Truth is every action of the space valued in numpy (``enumerate``'s list); answers are compared
by value within ``1e-9 * (1 + |optimum|)``, and every node bound must be at least the best index
of the node's actions.
"""

from __future__ import annotations

import numpy as np
import pytest
from instances import check_norm_answer, norm_values, oracle_and_actions, psd, random_node, random_restrictions

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import LimitReached
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.oracles.norm import solver
from cmab_milp.oracles.norm.branch.minus import LinearOracleBranch, _Node, applies, line_maximum, relaxation_matrix
from cmab_milp.oracles.norm.solver import last_stats

BRANCH = ["cardinality", "cardinality-exact", "partition", "graphic", "spanning-trees", "paths-dag"]
BRANCH += ["matchings-bipartite", "perfect-bipartite", "matchings-general", "perfect-general", "explicit"]
OTHERS = ["paths-cyclic-undirected", "paths-cyclic-directed", "with-constraint", "intersection"]


def values(actions: np.ndarray, mu, M, f) -> np.ndarray:
    return norm_values(actions, mu, M, f, -1)


@pytest.mark.parametrize("family", BRANCH)
def test_answers_match_brute_force(family):
    oracle, actions = oracle_and_actions(family)
    assert applies(oracle.space)
    rng = np.random.default_rng([len(family), 3])
    for k, f in enumerate([0.1, 0.5, 2.0, 5.0, 1.0, 0.3]):
        mu, M = rng.uniform(-0.5, 1.0, oracle.d), psd(rng, oracle.d)
        res = random_restrictions(rng, actions, k % 3)
        answer = oracle.argmax_norm(mu, M, f, -1, **res)
        if check_norm_answer(actions, answer, res, mu, M, f, -1, (family, k, f)):
            assert last_stats(oracle).method == "branch-linear-oracle"


@pytest.mark.parametrize("family", ["cardinality", "spanning-trees", "matchings-bipartite", "matchings-general"])
def test_without_local_search_the_branch_finds_the_optimum(family):
    """No first incumbent but the linear argmax: the search itself must reach the optimum."""
    oracle, actions = oracle_and_actions(family, minus_local_checks=0)
    rng = np.random.default_rng([len(family), 4])
    beaten = 0
    for f in (0.5, 1.0, 2.0, 4.0, 8.0):
        mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d)
        answer = oracle.argmax_norm(mu, M, f, -1)
        truth = values(actions, mu, M, f)
        best = float(truth.max())
        assert float(values(answer[None, :], mu, M, f)[0]) >= best - 1e-9 * (1 + abs(best))
        beaten += float(values(oracle.argmax(mu)[None, :], mu, M, f)[0]) < best - 1e-6
    assert beaten >= 2  # the linear argmax was not the answer: the search had work to do


@pytest.mark.parametrize("family", ["cardinality", "partition", "spanning-trees", "matchings-bipartite", "paths-dag"])
def test_node_bounds_are_at_least_the_best_index_of_the_node(family):
    """Random nodes (include / exclude sets) of random queries: the relaxation's bound covers every action."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([len(family), 5])
    d = oracle.d
    checked = 0
    for trial in range(30):
        f = float(rng.choice([0.1, 0.5, 1.0, 3.0, 10.0]))
        mu, M = rng.uniform(-1, 1, d), psd(rng, d, ridge=float(rng.choice([1e-3, 0.1, 1.0])))
        q = oracle.norm_query(mu, M, f, -1)
        search = LinearOracleBranch(oracle.space, q, np.arange(d), None, None)
        include, exclude, ok = random_node(rng, actions, trial % 4)
        bound, x = search.relax(_Node(-np.inf, 0, include, exclude))
        if not ok.any():
            assert bound == -np.inf and x is None
            continue
        assert bound >= float(values(actions[ok], mu, M, f).max())
        assert x[include].min(initial=1.0) == 1.0 and x[exclude].max(initial=0.0) == 0.0
        checked += 1
    assert checked >= 15


def test_bounds_hold_on_the_benchmarks_covariances_and_tighten_with_steps():
    """``M = A A'/d + 0.1 I`` on Cardinality(12, 4): the root bound, at 1, 12 and 200 steps, is at least the
    optimum and does not grow with more steps."""
    space = cm.Cardinality(12, 4)
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "highs")
    rng = np.random.default_rng(9)
    for f in (0.3, 1.0, 3.0):
        mu, M = rng.uniform(0, 1, 12), psd(rng, 12)
        best = float(values(actions, mu, M, f).max())
        bounds = []
        for steps in (1, 12, 200):
            tuning = HighsTuning(branch_steps=steps)
            search = LinearOracleBranch(space, oracle.norm_query(mu, M, f, -1), np.arange(12), None, None, tuning)
            bounds.append(search.relax(_Node(-np.inf, 0, np.zeros(12, bool), np.zeros(12, bool)))[0])
        assert min(bounds) >= best
        assert bounds[0] >= bounds[1] >= bounds[2]


def test_relaxation_matrix_is_psd_and_at_most_m_s_form_on_every_small_action():
    """On every subset of ``arms`` of at most ``m`` arms the form is at most ``M``'s (all subsets enumerated)."""
    from itertools import combinations

    rng = np.random.default_rng(21)
    d = 8
    for trial in range(12):
        ridge = [1e-3, 0.1, 1.0][trial % 3]
        M = psd(rng, d, ridge)
        scale = rng.uniform(0.2, 3.0, d)  # heterogeneous variances: the scaled shift
        M = M * np.sqrt(scale)[:, None] * np.sqrt(scale)[None, :]
        arms = np.sort(rng.choice(d, size=int(rng.integers(3, d + 1)), replace=False))
        m = int(rng.integers(1, len(arms) + 1))
        R = relaxation_matrix(M, arms, m)
        assert np.linalg.eigvalsh(R[np.ix_(arms, arms)])[0] >= -1e-12
        for k in range(1, m + 1):
            for subset in combinations(arms.tolist(), k):
                a = np.zeros(d)
                a[list(subset)] = 1.0
                lhs, rhs = float(a @ R @ a), float(a @ M @ a)
                assert lhs <= rhs + 1e-12 * (1 + abs(rhs))


def test_relaxation_matrix_of_an_indefinite_matrix_is_the_matrix():
    M = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert np.array_equal(relaxation_matrix(M, np.arange(2), 2), M)


def test_the_shifted_bound_is_exact_for_equal_variances_on_actions_of_one_size():
    """``M = 2 I`` on Cardinality(10, 3, exact): every action has the same norm, and the shifted
    relaxation's root bound is the optimum; ``M``'s own is above it (spreading ``x`` pays)."""
    space = cm.Cardinality(10, 3, exact=True)
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "highs")
    mu, M, f = np.linspace(0.1, 1.0, 10), 2.0 * np.eye(10), 1.5
    best = float(values(actions, mu, M, f).max())
    root = {}
    for shift in (True, False):
        tuning = HighsTuning(branch_shift=shift)
        search = LinearOracleBranch(space, oracle.norm_query(mu, M, f, -1), np.arange(10), None, None, tuning)
        root[shift] = search.relax(_Node(-np.inf, 0, np.zeros(10, bool), np.zeros(10, bool)))[0]
    assert root[True] == pytest.approx(best, rel=1e-9)
    assert root[False] > best + 0.1


def test_line_maximum_against_a_fine_grid():
    rng = np.random.default_rng(2)
    for _ in range(40):
        d = 5
        M, f = psd(rng, d), float(rng.uniform(0, 3))
        mu, x, step = rng.normal(size=d), rng.uniform(0, 1, d), rng.normal(size=d)
        grid = np.linspace(0, 1, 20001)
        pts = x[None, :] + grid[:, None] * step[None, :]
        curve = pts @ mu - f * np.sqrt(np.maximum(np.einsum("ni,ij,nj->n", pts, M, pts), 0.0))
        t = line_maximum(mu, M, f, x, step)
        assert 0.0 <= t <= 1.0
        p = x + t * step
        assert mu @ p - f * np.sqrt(max(p @ M @ p, 0.0)) >= curve.max() - 1e-9


@pytest.mark.parametrize("family", OTHERS)
def test_other_spaces_and_indefinite_or_singular_m_keep_the_secants(family):
    oracle, actions = oracle_and_actions(family)
    assert not applies(oracle.space)
    rng = np.random.default_rng([len(family), 6])
    mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d)
    answer = oracle.argmax_norm(mu, M, 1.0, -1)
    assert last_stats(oracle).method != "branch-linear-oracle"
    best = float(values(actions, mu, M, 1.0).max())
    assert float(values(answer[None, :], mu, M, 1.0)[0]) >= best - 1e-9 * (1 + abs(best))
    card, card_actions = oracle_and_actions("cardinality")
    b = rng.normal(size=(card.d, 2))
    for M in (np.outer(b[:, 0], b[:, 0]) - np.outer(b[:, 1], b[:, 1]), b @ b.T):  # indefinite; rank 2 (singular)
        mu = rng.uniform(0, 1, card.d)
        answer = card.argmax_norm(mu, M, 1.0, -1)
        assert last_stats(card).method == "secants-quadratic-form"
        best = float(values(card_actions, mu, M, 1.0).max())
        assert float(values(answer[None, :], mu, M, 1.0)[0]) >= best - 1e-9 * (1 + abs(best))


@pytest.mark.parametrize("scale", [1e-12, 1e6])
def test_badly_scaled_covariances(scale):
    """``M`` scaled by 1e-12 or 1e6 with ``f`` compensated or not: exact against brute force."""
    oracle, actions = oracle_and_actions("spanning-trees")
    rng = np.random.default_rng(int(np.log10(scale)) + 20)
    for f in (1.0, 1.0 / np.sqrt(scale)):
        mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d) * scale
        answer = oracle.argmax_norm(mu, M, f, -1, exclude=[1])
        ok = ~actions[:, 1]
        best = float(values(actions[ok], mu, M, f).max())
        assert float(values(answer[None, :], mu, M, f)[0]) >= best - 1e-9 * (1 + abs(best))


def test_answers_repeat_whatever_was_solved_before():
    oracle, _ = oracle_and_actions("cardinality")
    rng = np.random.default_rng(12)
    mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d)
    first = oracle.argmax_norm(mu, M, 2.0, -1, forbid_pairs=[(0, 1)])
    nodes = last_stats(oracle).extra["nodes"]
    for _ in range(3):
        oracle.argmax_norm(rng.uniform(0, 1, oracle.d), psd(rng, oracle.d), 1.0, -1)
    assert oracle.argmax_norm(mu, M, 2.0, -1, forbid_pairs=[(0, 1)]).tolist() == first.tolist()
    assert last_stats(oracle).extra["nodes"] == nodes


def test_the_time_limit_stops_the_branch(monkeypatch):
    space = cm.Cardinality(12, 4)
    oracle = cm.make_oracle(space, "highs", time_limit=5.0)
    rng = np.random.default_rng(13)
    mu, M = rng.uniform(0, 1, 12), psd(rng, 12)
    assert oracle.argmax_norm(mu, M, 3.0, -1) is not None
    ticks = iter(np.arange(0.0, 1e6, 1.0))  # every reading of the clock: 1 s later; the 6th is past the limit
    monkeypatch.setattr(solver, "_clock", lambda: float(next(ticks)))
    with pytest.raises(LimitReached, match="time limit"):
        oracle.argmax_norm(mu, M, 3.0, -1)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["cardinality", "bipartite", "general", "trees"])
def test_d100_agrees_with_the_secant_milps_and_gurobi(family):
    """At d = 100 to 120 no brute force: the branch, the secant MILPs (``_MINUS_BRANCH`` off) and, when
    installed, Gurobi's MIQCP (independent methods) agree on the value, with restrictions."""
    import networkx as nx

    space = {
        "cardinality": lambda: cm.Cardinality(100, 10),
        "bipartite": lambda: cm.Matchings(nx.complete_bipartite_graph(10, 12)),
        "general": lambda: cm.Matchings(nx.complete_graph(15)),
        "trees": lambda: cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(8, 8))),
    }[family]()
    rng = np.random.default_rng(len(family))
    mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
    query = {"mu": mu, "M": M, "f": 0.3, "sign": -1, "exclude": [3], "forbid_pairs": [(1, 2), (5, 7)]}
    highs = cm.make_oracle(space, "highs")
    ours = highs.argmax_norm(**query)
    assert last_stats(highs).method == "branch-linear-oracle"
    theirs = [cm.make_oracle(space, "highs", tuning={"minus_branch": False}).argmax_norm(**query)]
    if "gurobi" in cm.available_backends():
        theirs.append(cm.make_oracle(space, "gurobi").argmax_norm(**query))
    q = highs.norm_query(**query)
    for other in theirs:
        assert q.value(ours) >= q.value(other) - 1e-9 * (1 + abs(q.value(other)))
        assert q.value(other) >= q.value(ours) - 1e-6 * (1 + abs(q.value(ours)))  # Gurobi's tolerance
