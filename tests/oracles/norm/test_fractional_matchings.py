"""General matchings' norm branches on the fractional matching polytope (prepare_fractional_matching): the linear
relaxation against an LP solver, the rounding, node bounds against brute force and K15 against the blossom runs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from instances import check_norm_answer, correlated, norm_values, oracle_and_actions, psd, random_node
from scipy.optimize import linprog

import cmab_milp as cm
from cmab_milp.oracles.backends.combinatorial import prepare_fractional_matching
from cmab_milp.oracles.core.queries import Restrictions
from cmab_milp.oracles.norm.branch.minus import LinearOracleBranch, _Node
from cmab_milp.oracles.norm.branch.plus import ConcaveBranch
from cmab_milp.oracles.norm.solver import last_stats


def _incidence(space: cm.Matchings) -> np.ndarray:
    A = np.zeros((space.n_nodes, space.d))
    A[space.tail, np.arange(space.d)] = A[space.head, np.arange(space.d)] = 1.0
    return A


@pytest.mark.parametrize("perfect", [False, True])
def test_the_relaxation_is_the_fractional_matching_lp(perfect):
    """Its value is the LP optimum over ``x(delta(v)) <= 1`` (``= 1``: perfect) with the restrictions as bounds
    (HiGHS through scipy, an independent solver); the point is feasible and half-integral."""
    rng = np.random.default_rng(int(perfect))
    checked = infeasible = 0
    for trial in range(120):
        n = int(rng.integers(3, 9))
        graph = nx.gnp_random_graph(2 * (n // 2) if perfect else n, 0.6, seed=trial)
        if graph.number_of_edges() < 2 or (perfect and 2 * len(nx.max_weight_matching(graph)) < len(graph)):
            continue
        space = cm.Matchings(graph, perfect=perfect)
        w = rng.normal(size=space.d)
        arms = rng.permutation(space.d)
        include = (int(arms[0]),) if trial % 2 else ()
        res = Restrictions(include=include, exclude=tuple(int(k) for k in arms[1:3]))
        x = prepare_fractional_matching(space, res)(w)
        A = _incidence(space)
        bounds = [(float(k in res.include), 0.0 if k in res.exclude else 1.0) for k in range(space.d)]
        ones = np.ones(space.n_nodes)
        lp = linprog(-w, A_eq=A, b_eq=ones, bounds=bounds) if perfect else linprog(-w, A_ub=A, b_ub=ones, bounds=bounds)
        if lp.status == 2:
            assert x is None, trial
            infeasible += 1
            continue
        assert x is not None and float(w @ x) == pytest.approx(-lp.fun, abs=1e-9), trial
        assert np.all(np.isin(x, [0.0, 0.5, 1.0])) and np.all(A @ x <= 1.0 + 1e-12)
        assert all(lo <= v <= hi for v, (lo, hi) in zip(x, bounds, strict=True))
        if perfect:
            assert np.allclose(A @ x, 1.0)
        checked += 1
    assert checked >= 20 and (infeasible or not perfect)


def test_a_half_integral_point_rounds_to_a_matching():
    space = cm.Matchings(nx.complete_graph(7))
    oracle = cm.make_oracle(space, "highs")
    rng = np.random.default_rng(2)
    rounded = 0
    for _ in range(30):
        w = rng.normal(size=space.d)
        search = LinearOracleBranch(
            space, oracle.norm_query(w, np.eye(space.d), 1.0, -1), np.arange(space.d), None, None
        )
        x = search.linear(w, Restrictions())
        action = search.round_matching(x)
        assert space.contains(action) and np.all(action[x == 1.0]) and not np.any(action[x == 0.0])
        rounded += bool(np.any(x == 0.5))
    assert rounded  # some points were fractional (odd cycles)


@pytest.mark.parametrize("family", ["matchings-general", "perfect-general"])
@pytest.mark.parametrize("sign", [1, -1])
def test_node_bounds_cover_every_action_of_the_node(family, sign):
    """Random nodes of random queries: the bound over the fractional polytope is at least the best index among
    the node's matchings (brute force); nodes without a matching may keep a finite bound (a relaxation)."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([len(family), sign + 1])
    d = oracle.d
    checked = 0
    for trial in range(30):
        f = float(rng.choice([0.1, 1.0, 3.0, 10.0]))
        mu = rng.uniform(-1, 1, d)
        M = correlated(rng, d) if trial % 2 else psd(rng, d)
        kind = ConcaveBranch if sign > 0 else LinearOracleBranch
        search = kind(oracle.space, oracle.norm_query(mu, M, f, sign), np.arange(d), None, None)
        assert search.fractional
        include, exclude, ok = random_node(rng, actions, trial % 4)
        bound, _ = search.relax(_Node(-np.inf, 0, include, exclude))
        if not ok.any():
            continue
        truth = norm_values(actions[ok], mu, M, f, sign)
        assert bound >= float(truth.max()) - 1e-12, (family, sign, trial)
        checked += 1
    assert checked >= 12


@pytest.mark.parametrize("family", ["matchings-general", "perfect-general"])
@pytest.mark.parametrize("sign", [1, -1])
def test_answers_match_brute_force_with_restrictions(family, sign):
    from instances import random_restrictions

    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([len(family), sign + 5])
    for k, f in enumerate([0.1, 0.5, 2.0, 5.0, 1.0, 0.3, 10.0]):
        mu, M = rng.uniform(-0.5, 1.0, oracle.d), correlated(rng, oracle.d) if k % 2 else psd(rng, oracle.d)
        res = random_restrictions(rng, actions, k % 3)
        answer = oracle.argmax_norm(mu, M, f, sign, **res)
        if check_norm_answer(actions, answer, res, mu, M, f, sign, (family, sign, k)):
            assert last_stats(oracle).method == ("branch-concave" if sign > 0 else "branch-linear-oracle")


@pytest.mark.parametrize("sign", [1, -1])
def test_k15_agrees_with_the_blossom_search(sign):
    """At d = 105 (no brute force): the same values as the searches on the blossom algorithm (exact linear
    queries; sign +1 then by its budgeted trial and the outer approximation), with restrictions."""
    space = cm.Matchings(nx.complete_graph(15))
    rng = np.random.default_rng(sign + 7)
    for k in range(3):
        a = rng.normal(size=(space.d, space.d))
        query = {"mu": rng.uniform(0, 1, space.d), "M": a @ a.T / space.d + 0.1 * np.eye(space.d), "f": 0.3}
        if k % 2:
            query |= {"include": [4], "exclude": [9, 30], "forbid_pairs": [(50, 61)]}
        oracle = cm.make_oracle(space, "highs")
        ours = oracle.argmax_norm(**query, sign=sign)
        assert last_stats(oracle).method == ("branch-concave" if sign > 0 else "branch-linear-oracle")
        blossom = cm.make_oracle(space, "highs", tuning={"fractional_matchings": False})
        theirs = blossom.argmax_norm(**query, sign=sign)
        q = oracle.norm_query(**query, sign=sign)
        assert q.value(ours) == pytest.approx(q.value(theirs), rel=1e-9, abs=1e-9), k
