"""Sign +1 by branch and bound on the linear oracle (:mod:`cmab_milp.oracles.norm.branch.plus`) against brute force.

Truth is every action of the space valued in numpy; answers are compared by value within
``1e-9 * (1 + |optimum|)``; every node bound must be at least the best index of the node's actions
and every tangent plane at least the index of every action.
"""

from __future__ import annotations

import numpy as np
import pytest
from instances import check_norm_answer, norm_values, oracle_and_actions, psd, random_node, random_restrictions
from test_minus_branch import BRANCH

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import LimitReached
from cmab_milp.oracles.norm import solver
from cmab_milp.oracles.norm.branch import minus as minus_branch
from cmab_milp.oracles.norm.branch.minus import _Node
from cmab_milp.oracles.norm.branch.plus import ConcaveBranch, concave_shift, psd_majorant
from cmab_milp.oracles.norm.solver import last_stats


def values(actions: np.ndarray, mu, M, f) -> np.ndarray:
    return norm_values(actions, mu, M, f, 1)


@pytest.mark.parametrize("family", BRANCH)
def test_answers_match_brute_force(family):
    oracle, actions = oracle_and_actions(family, plus_branch="always")
    rng = np.random.default_rng([len(family), 31])
    for k, f in enumerate([0.1, 0.5, 2.0, 5.0, 1.0, 0.3]):
        mu, M = rng.uniform(-0.5, 1.0, oracle.d), psd(rng, oracle.d, ridge=float(rng.choice([1e-3, 0.1, 1.0])))
        res = random_restrictions(rng, actions, k % 3)
        answer = oracle.argmax_norm(mu, M, f, 1, **res)
        if check_norm_answer(actions, answer, res, mu, M, f, 1, (family, k, f)):
            assert last_stats(oracle).method == "branch-concave"


def indefinite(rng: np.random.Generator, d: int) -> np.ndarray:
    """A covariance-like ``M`` with some negative eigenvalues (the paper's ``Sigma_bar`` need not be PSD), or a
    singular PSD one."""
    kind = rng.integers(3)
    if kind == 2:  # PSD of rank 2
        factor = rng.normal(size=(d, 2))
        return factor @ factor.T
    M = psd(rng, d)
    shift = np.linalg.eigvalsh(M)[int(rng.integers(1, max(2, d // 3)))]  # below some eigenvalues only
    return M - (shift + (0.05 if kind else -0.05)) * np.eye(d)


@pytest.mark.parametrize("family", BRANCH)
def test_indefinite_M_is_bounded_on_its_psd_majorant_and_answers_match_brute_force(family):
    """The index is ``mu @ a + f sqrt(max(a @ M @ a, 0))``; with ``M`` not definite the branch bounds on
    :func:`psd_majorant` and values on ``M`` (before, the outer approximation served: ~65 ms against ~9 ms on the
    crew problem's SROQ-C pair queries just after its warm-up)."""
    oracle, actions = oracle_and_actions(family, plus_branch="always")
    rng = np.random.default_rng([len(family), 41])
    for k, f in enumerate([0.3, 1.0, 3.0, 10.0, 0.5, 2.0]):
        mu, M = rng.uniform(-0.5, 1.0, oracle.d), indefinite(rng, oracle.d)
        P = psd_majorant(M, np.arange(oracle.d))
        assert np.linalg.eigvalsh(P)[0] >= -1e-12
        quad = np.einsum("ij,jk,ik->i", actions.astype(float), M, actions.astype(float))
        majorant = np.einsum("ij,jk,ik->i", actions.astype(float), P, actions.astype(float))
        assert (majorant >= np.maximum(quad, 0.0)).all()
        res = random_restrictions(rng, actions, k % 3)
        answer = oracle.argmax_norm(mu, M, f, 1, **res)
        if check_norm_answer(actions, answer, res, mu, M, f, 1, (family, k, f)):
            assert last_stats(oracle).method == "branch-concave"


@pytest.mark.parametrize(
    ("family", "method"),
    [("spanning-trees", "branch-concave"), ("graphic", "branch-concave"), ("cardinality", "oa-quadratic-form")],
)
def test_the_branch_serves_spaces_whose_milp_needs_lazy_cuts(family, method):
    """The dispatch proper (the budgeted trial of the branch elsewhere is off here: tested below)."""
    oracle, actions = oracle_and_actions(family, plus_branch_try=0)
    rng = np.random.default_rng(5)
    mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d)
    answer = oracle.argmax_norm(mu, M, 1.0, 1)
    assert last_stats(oracle).method == method
    best = float(values(actions, mu, M, 1.0).max())
    assert float(values(answer[None, :], mu, M, 1.0)[0]) >= best - 1e-9 * (1 + best)


def test_concave_shift_makes_an_overestimator_equal_on_binaries():
    """``q(x) = x (M - D) x + d x``: concave (``D - M`` PSD), at least ``x M x`` on the box, equal on 0/1 points."""
    rng = np.random.default_rng(3)
    for trial in range(20):
        d = 7
        scale = np.sqrt(rng.uniform(0.2, 3.0, d))  # heterogeneous variances: the scaled shift
        M = psd(rng, d, ridge=[1e-3, 0.1, 1.0][trial % 3]) * scale[:, None] * scale[None, :]
        arms = np.sort(rng.choice(d, size=int(rng.integers(2, d + 1)), replace=False))
        shift = concave_shift(M, arms)
        assert (shift >= 0).all() and not shift[np.setdiff1d(np.arange(d), arms)].any()
        sub = M[np.ix_(arms, arms)]
        assert np.linalg.eigvalsh(np.diag(shift[arms]) - sub)[0] >= -1e-12 * np.abs(sub).max()
        for _ in range(20):
            x = np.zeros(d)
            x[arms] = rng.uniform(0, 1, len(arms))
            q = x @ (M - np.diag(shift)) @ x + shift @ x
            assert q >= x @ M @ x - 1e-12
            b = np.round(x)
            assert b @ (M - np.diag(shift)) @ b + shift @ b == pytest.approx(b @ M @ b, abs=1e-12)


@pytest.mark.parametrize("family", ["cardinality", "spanning-trees", "matchings-bipartite", "paths-dag", "graphic"])
def test_tangent_planes_and_node_bounds_cover_every_action(family):
    """From random points of the box the tangent plane is above every action's index; random nodes'
    bounds are at least the best index of their actions."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([len(family), 7])
    d = oracle.d
    checked = 0
    for trial in range(25):
        f = float(rng.choice([0.1, 0.5, 1.0, 3.0, 10.0]))
        mu, M = rng.uniform(-1, 1, d), psd(rng, d, ridge=float(rng.choice([1e-3, 0.1, 1.0])))
        search = ConcaveBranch(oracle.space, oracle.norm_query(mu, M, f, 1), np.arange(d), None, None)
        truth = values(actions, mu, M, f)
        g, c, _, _ = search.tangent(rng.uniform(0, 1, d))
        assert (actions.astype(float) @ g + c >= truth - 1e-9 * (1 + np.abs(truth))).all()
        include, exclude, ok = random_node(rng, actions, trial % 4)
        bound, x = search.relax(_Node(-np.inf, 0, include, exclude))
        if not ok.any():
            assert bound == -np.inf and x is None
            continue
        assert bound >= float(truth[ok].max())
        checked += 1
    assert checked >= 12


def test_answers_repeat_whatever_was_solved_before():
    oracle, _ = oracle_and_actions("spanning-trees")
    rng = np.random.default_rng(14)
    mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d)
    first = oracle.argmax_norm(mu, M, 2.0, 1, forbid_pairs=[(0, 1)])
    nodes = last_stats(oracle).extra["nodes"]
    for _ in range(3):
        oracle.argmax_norm(rng.uniform(0, 1, oracle.d), psd(rng, oracle.d), 1.0, 1)
    assert oracle.argmax_norm(mu, M, 2.0, 1, forbid_pairs=[(0, 1)]).tolist() == first.tolist()
    assert last_stats(oracle).extra["nodes"] == nodes


def test_the_step_budget_is_read_when_the_branch_runs():
    """The option ``concave_steps`` takes effect where the branch runs."""
    rng = np.random.default_rng(17)
    per_node = {}
    for steps in (0, 12):
        oracle, actions = oracle_and_actions("spanning-trees", concave_tune_after=0, concave_steps=steps)
        if steps == 0:
            mu, M = rng.uniform(0, 1, oracle.d), psd(rng, oracle.d)
        check_norm_answer(actions, oracle.argmax_norm(mu, M, 2.0, 1), {}, mu, M, 2.0, 1)
        assert last_stats(oracle).method == "branch-concave"
        stats = last_stats(oracle).extra
        per_node[steps] = stats["linear_queries"] / stats["nodes"]
    # no step: the node's first plane only, one query a node (and the root's choice of form, once)
    assert per_node[0] < 1.01 and per_node[12] > 1.5, per_node


def test_the_approximate_search_stops_on_a_bound_found_after_its_nodes_were_keyed():
    """``best_first`` may stop on the branch's ``global_bound`` (a bound on every action met later, the tuned root's)
    when it is below the open nodes' keys, and returns it as the proven bound; without it, the nodes' keys."""

    class Branch:  # every relaxation bounds at 10 and splits, down to the single actions, worth 9 at most
        best, best_value, nodes = np.ones(2, bool), 9.0, 0

        def relax(self, node):
            return (9.0 if (node.include | node.exclude).all() else 10.0), np.full(2, 0.5)

        def split(self, node, x):
            free = np.flatnonzero(~(node.include | node.exclude))
            if not len(free):
                return []
            i = int(free[0])
            return [
                (node.include, minus_branch._with(node.exclude, i)),
                (minus_branch._with(node.include, i), node.exclude),
            ]

        def _check_time(self):
            pass

    def within_5_percent(bound, value):
        return value >= 0.95 * bound

    branch = Branch()
    assert minus_branch.best_first(branch, 2, within_5_percent, 100, "test")[2] == 9.0  # to the leaves: 7 nodes
    assert branch.nodes == 7
    branch = Branch()
    branch.global_bound = 9.4
    _, value, bound = minus_branch.best_first(branch, 2, within_5_percent, 100, "test")
    assert (value, bound, branch.nodes) == (9.0, 9.4, 0)


@pytest.mark.parametrize("tune_after", [2, 8])
def test_approximate_answers_stopped_by_the_tuned_root_are_within_their_ratio(tune_after):
    """With ``norm_gap`` the root is tuned after ``concave_tune_after_approximate`` nodes, the tuning stops once its
    bound settles the query, and the search may stop on that bound: the answers stay within their proven ratio of the
    optimum (brute force), and the exact mode waits ``concave_tune_after`` nodes."""
    import networkx as nx

    tuning = {"concave_tune_after_approximate": tune_after, "concave_tune_after": 1000}
    space = cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)))
    actions = space.enumerate()
    rng = np.random.default_rng(19)
    stopped_by_the_root = 0
    for gap in (0.02, 0.05, 0.1):
        oracle = cm.make_oracle(space, "highs", norm_gap=gap, tuning=tuning)
        for _ in range(4):
            mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
            best = float(values(actions, mu, M, 3.0).max())
            got = float(values(oracle.argmax_norm(mu, M, 3.0, 1)[None, :], mu, M, 3.0)[0])
            nodes = last_stats(oracle).extra["nodes"]
            assert last_stats(oracle).extra.get("tuned_at") == (tune_after if nodes >= tune_after else None)
            stopped_by_the_root += nodes == tune_after
            assert got >= (1 - gap) * best - 1e-9 and got >= oracle.proven_ratio * best - 1e-9
    assert stopped_by_the_root  # the case this test is about happened
    exact = cm.make_oracle(space, "highs", tuning=tuning)
    exact.argmax_norm(mu, M, 3.0, 1)
    assert "tuned_at" not in last_stats(exact).extra  # (fewer than 1000 nodes)


def test_the_time_limit_stops_the_branch(monkeypatch):
    import networkx as nx

    space = cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)))
    oracle = cm.make_oracle(space, "highs", time_limit=5.0)
    rng = np.random.default_rng(13)
    mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
    assert oracle.argmax_norm(mu, M, 3.0, 1) is not None
    ticks = iter(np.arange(0.0, 1e6, 1.0))  # every reading of the clock: 1 s later
    monkeypatch.setattr(solver, "_clock", lambda: float(next(ticks)))
    with pytest.raises(LimitReached, match="time limit"):
        oracle.argmax_norm(mu, M, 3.0, 1)


def test_norm_gap_answers_are_within_their_proven_ratio():
    import networkx as nx

    space = cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)))
    actions = space.enumerate()
    exact = cm.make_oracle(space, "highs")
    approx = cm.make_oracle(space, "highs", norm_gap=0.05)
    rng = np.random.default_rng(15)
    for _ in range(6):
        mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
        best = float(values(actions, mu, M, 2.0).max())
        assert float(values(exact.argmax_norm(mu, M, 2.0, 1)[None, :], mu, M, 2.0)[0]) >= best - 1e-9 * (1 + best)
        answer = approx.argmax_norm(mu, M, 2.0, 1)
        assert last_stats(approx).method == "branch-concave"
        got = float(values(answer[None, :], mu, M, 2.0)[0])
        assert got >= 0.95 * best - 1e-9
        assert got >= approx.proven_ratio * best - 1e-9


@pytest.mark.slow
def test_trees_8x8_agree_with_the_outer_approximation():
    """At d = 112 no brute force: the branch and the outer approximation (independent methods) agree."""
    import networkx as nx

    space = cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(8, 8)))
    rng = np.random.default_rng(16)
    mu, M = rng.uniform(0, 1, space.d), psd(rng, space.d)
    query = {"mu": mu, "M": M, "f": 0.3, "sign": 1, "exclude": [3], "forbid_pairs": [(1, 2), (5, 7)]}
    highs = cm.make_oracle(space, "highs")
    ours = highs.argmax_norm(**query)
    assert last_stats(highs).method == "branch-concave"
    theirs = cm.make_oracle(space, "highs", tuning={"plus_branch": False}).argmax_norm(**query)
    q = highs.norm_query(**query)
    assert q.value(ours) == pytest.approx(q.value(theirs), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("above", [True, False])
def test_diagonal_shift_keeps_the_psd_order_and_beats_the_uniform_one(above):
    """``diag(d) - M`` (above) or ``M - diag(d)`` (below, ``d >= 0``) PSD on the arms, zero elsewhere; its
    trace at most (above) / at least (below) the uniform shift's."""
    from cmab_milp.oracles.norm.shifts import diagonal_shift

    rng = np.random.default_rng(int(above))
    for trial in range(15):
        d = int(rng.integers(2, 30))
        scale = np.sqrt(rng.uniform(0.1, 5.0, d))
        M = psd(rng, d, ridge=[1e-3, 0.1, 1.0][trial % 3]) * scale[:, None] * scale[None, :]
        arms = np.sort(rng.choice(d, size=int(rng.integers(1, d + 1)), replace=False))
        shift = diagonal_shift(M, arms, above=above)
        assert not shift[np.setdiff1d(np.arange(d), arms)].any()
        sub, s = M[np.ix_(arms, arms)], shift[arms]
        order = np.diag(s) - sub if above else sub - np.diag(s)
        assert np.linalg.eigvalsh(order)[0] >= -1e-12 * np.abs(sub).max()
        ev = np.linalg.eigvalsh(sub)
        uniform = len(arms) * (ev[-1] if above else max(ev[0], 0.0))
        assert (s.sum() <= uniform * (1 + 1e-9) + 1e-12) if above else (s.sum() >= uniform * (1 - 1e-6) - 1e-12)
        if not above:
            assert (s >= 0).all()
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    if not above:
        assert not diagonal_shift(indefinite, np.arange(2), above=False).any()


@pytest.mark.parametrize("family", ["cardinality", "partition", "matchings-general"])
@pytest.mark.parametrize("budget", [1, 100])
def test_the_branch_tries_first_where_the_outer_approximation_serves(family, budget):
    """On spaces the outer approximation serves, the concave branch tries first with a node budget: easy
    queries end there, the others go on to the outer approximation with the branch's incumbent (a budget of
    one node forces the hand-over). Either way the answer is the best action (brute force)."""
    # (with fractional matchings the branch serves general matchings)
    oracle, actions = oracle_and_actions(family, fractional_matchings=False, plus_branch_try=budget)
    rng = np.random.default_rng([len(family), budget, 3])
    methods = set()
    for trial in range(12):
        mu, M, f = rng.uniform(-0.5, 1, oracle.d), psd(rng, oracle.d), float(rng.choice([0.1, 1.0, 3.0, 10.0]))
        res = random_restrictions(rng, actions, trial % 3)
        answer = oracle.argmax_norm(mu, M, f, 1, **res)
        check_norm_answer(actions, answer, res, mu, M, f, 1, (family, budget, trial))
        stats = last_stats(oracle)
        methods.add(stats.method)
        if stats.method == "oa-quadratic-form" and "tried_nodes" in stats.extra:
            assert stats.extra["tried_nodes"] == budget + 1  # the search stopped on the node past its budget
    assert "oa-quadratic-form" in methods if budget == 1 else "branch-concave" in methods


def test_without_a_trial_the_outer_approximation_serves_alone():
    oracle = cm.make_oracle(cm.Cardinality(8, 3), "highs", tuning={"plus_branch_try": 0})
    rng = np.random.default_rng(4)
    oracle.argmax_norm(rng.uniform(0, 1, 8), psd(rng, 8), 0.5, 1)
    assert last_stats(oracle).method == "oa-quadratic-form" and "tried_nodes" not in last_stats(oracle).extra
