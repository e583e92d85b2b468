"""Sign +1 of the norm index: the first incumbent's restarts and swaps, and the answers they lead to.

Truth is every action of the space valued in numpy (``enumerate``'s list); answers are
compared by value within ``1e-9 * (1 + |optimum|)``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from instances import oracle_and_actions

import cmab_milp as cm
from cmab_milp.oracles.norm import solver as norm_solver
from cmab_milp.oracles.norm.starts.incumbents import ascend_from_uniform, first_incumbent_plus
from cmab_milp.oracles.norm.starts.local_search import ascend, ascend_from_neighbours, improve_locally

FAMILIES = ["cardinality", "partition", "spanning-trees", "paths-cyclic-undirected", "matchings-bipartite"]


def values_of(actions: np.ndarray, mu: np.ndarray, M: np.ndarray, f: float) -> np.ndarray:
    x = actions.astype(float)
    return x @ mu + f * np.sqrt(np.maximum(np.einsum("ni,ij,nj->n", x, M, x), 0.0))


def crew_like(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The crew problem's regime in small: ``mu`` in [0.17, 0.8], small positive covariances, large ``f``."""
    a = rng.uniform(0.0, 1.0, (d, 3))
    M = 1e-4 * (a @ a.T) + np.diag(rng.uniform(1e-3, 2e-3, d))
    return rng.uniform(0.17, 0.8, d), M, 23.5


def restricted_linear(oracle: cm.Oracle, query):
    res = query.restrictions

    def linear(weights: np.ndarray, arm: int | None) -> np.ndarray | None:
        exclude = res.exclude if arm is None else (*res.exclude, arm)
        return oracle.argmax(weights, include=res.include, exclude=exclude, forbid_pairs=res.forbid_pairs)

    return linear


@pytest.mark.parametrize("family", FAMILIES)
def test_restarts_never_lose_stay_feasible_and_value_exactly(family):
    oracle, _ = oracle_and_actions(family)
    rng = np.random.default_rng([11, len(family)])
    for k in range(6):
        mu, M, f = crew_like(rng, oracle.d)
        res = {} if k % 2 == 0 else {"exclude": [int(rng.integers(oracle.d))]}
        query = oracle.norm_query(mu, M, f, **res)
        linear = restricted_linear(oracle, query)
        start, start_value, _ = ascend(query, lambda w, linear=linear: linear(w, None), None, 8)
        if start is None:
            continue
        found, value, calls = ascend_from_neighbours(query, linear, start, start_value, 8, 40)
        assert oracle.space.contains(found) and query.restrictions.admits(found)
        assert value == query.value(found) >= start_value
        assert calls <= 40 + 8  # the budget is checked before each restart, whose ascent may take 8 more


def test_restarts_escape_a_fixed_point_of_the_ascent():
    """From ``e0`` the gradient step returns ``e0``; without arm 0 it goes to ``e1``, whose ascent reaches ``e2``."""
    oracle = cm.make_oracle(cm.Cardinality(3, 1), "enumerate")
    M = np.array([[0.01, 0.0, 0.0], [0.0, 0.01, 0.1], [0.0, 0.1, 1.0]])
    query = oracle.norm_query(np.array([0.5, 0.4, 0.0]), M, 1.0)
    start = np.array([True, False, False])
    stuck, stuck_value, _ = ascend(query, oracle.argmax, start, 5)
    assert stuck.tolist() == start.tolist() and stuck_value == pytest.approx(0.6)
    linear = restricted_linear(oracle, query)
    found, value, calls = ascend_from_neighbours(query, linear, start, stuck_value, 5, 10)
    assert found.tolist() == [False, False, True] and value == pytest.approx(1.0)
    assert calls >= 2


@pytest.mark.parametrize(("rounds", "budget", "message"), [(-1, 5, "rounds"), (3, -2, "budget"), (2.5, 5, "rounds")])
def test_restarts_refuse_bad_counts(rounds, budget, message):
    oracle = cm.make_oracle(cm.Cardinality(3, 1), "enumerate")
    query = oracle.norm_query(np.zeros(3), np.eye(3), 1.0)
    start = np.array([True, False, False])
    with pytest.raises(ValueError, match=message):
        ascend_from_neighbours(query, restricted_linear(oracle, query), start, 1.0, rounds, budget)


@pytest.mark.parametrize("family", ["cardinality", "partition", "matchings-bipartite"])
def test_swaps_of_sign_plus_one_end_at_a_local_optimum(family):
    """:func:`improve_locally` with sign +1: feasible, never loses, and no add, drop or swap (brute force) gains."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([13, len(family)])
    for _ in range(6):
        mu, M, f = crew_like(rng, oracle.d)
        values = values_of(actions, mu, M, f)
        start = actions[int(rng.integers(len(actions)))]
        query = oracle.norm_query(mu, M, f)
        found, value, checks = improve_locally(
            query, np.arange(oracle.d), oracle.space.contains, start, query.value(start)
        )
        assert oracle.space.contains(found)
        assert value == query.value(found) >= query.value(start)
        if checks >= 200:  # stopped on its budget: no claim of local optimality
            continue
        differ = (found ^ actions).sum(axis=1)
        swap = ((differ == 2) | (differ == 4)) & (actions.sum(axis=1) == found.sum())
        moves = (differ == 1) | swap
        assert values[moves].max(initial=-np.inf) <= value + 1e-9 * (1 + abs(value))


@pytest.mark.parametrize("family", FAMILIES)
def test_crew_like_queries_match_brute_force(family):
    """Large ``f``, small positive covariances (the covariance policies' queries), with restrictions and hints."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([17, len(family)])
    for k in range(4):
        mu, M, f = crew_like(rng, oracle.d)
        values = values_of(actions, mu, M, f)
        res: dict = {}
        ok = np.ones(len(actions), bool)
        if k >= 2:
            arm = int(np.flatnonzero(actions[int(rng.integers(len(actions)))])[0])
            res["include"] = [arm]
            ok &= actions[:, arm]
        if k == 3:
            other = int(rng.integers(oracle.d))
            if other not in res["include"]:
                res["exclude"] = [other]
                ok &= ~actions[:, other]
        hints = [actions[int(rng.integers(len(actions)))]]
        best = values[ok].max(initial=-np.inf)
        answers = [oracle.argmax_norm(mu, M, f, **res, hints=given) for given in ((), hints, hints)]
        if best == -np.inf:
            assert all(a is None for a in answers)
            continue
        for answer in answers:
            assert oracle.space.contains(answer)
            assert oracle.norm_query(mu, M, f, **res).value(answer) >= best - 1e-9 * (1 + abs(best))
        assert answers[1].tolist() == answers[2].tolist()  # same query, same hints: same answer


def test_the_first_incumbent_reaches_the_optimum_where_one_ascent_does_not():
    """On crew-like matchings of K(4, 5) the restarts and swaps find the optimum before any MILP.

    Counted over 12 queries: the plain ascent misses some optima that the full first incumbent finds,
    and with it the query needs a single outer-approximation MILP more often.
    """
    space = cm.Matchings(nx.complete_bipartite_graph(4, 5))
    plain = {"plus_restart_budget": 0, "plus_local_checks": 0}
    oracles = {"plain": cm.make_oracle(space, "highs", tuning=plain), "full": cm.make_oracle(space, "highs")}
    actions = cm.make_oracle(space, "enumerate").actions
    rng = np.random.default_rng(19)
    hits = {"plain": 0, "full": 0}
    for _ in range(12):
        mu, M, f = crew_like(rng, space.d)
        best = values_of(actions, mu, M, f).max()
        for name, oracle in oracles.items():
            _, value = first_incumbent_plus(norm_solver.NormSolver(oracle, oracle.norm_query(mu, M, f)))
            hits[name] += value >= best - 1e-9 * (1 + abs(best))
    assert hits["full"] > hits["plain"]  # measured: 12 against 9
    assert hits["full"] >= 11


@pytest.mark.parametrize(("family", "restarts"), [("cardinality", True), ("spanning-trees", False)])
def test_restarts_only_where_linear_queries_are_lps_and_options_are_restored(family, restarts):
    """Trees (lazy rows) skip the restarts; after the query the norm model has HiGHS's presolve back (the
    outer approximation's first incumbent: the branch's trial is off)."""
    oracle, actions = oracle_and_actions(family, plus_branch_try=0)
    mu, M, f = crew_like(np.random.default_rng(23), oracle.d)
    model = oracle.norm_model()
    before = model.h.getOptionValue("presolve")[1]
    answer = oracle.argmax_norm(mu, M, f)
    best = values_of(actions, mu, M, f).max()
    assert oracle.norm_query(mu, M, f).value(answer) >= best - 1e-9 * (1 + abs(best))
    assert ("restart_steps" in norm_solver.last_stats(oracle).extra) is restarts
    assert model.h.getOptionValue("presolve")[1] == before != "off"


@pytest.mark.parametrize("family", ["cardinality", "partition", "matchings-bipartite"])
def test_the_uniform_start_is_feasible_valued_exactly_and_skipped_without_curvature(family):
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng([29, len(family)])
    for k in range(4):
        mu, M, f = crew_like(rng, oracle.d)
        res = {} if k % 2 == 0 else {"exclude": [int(rng.integers(oracle.d))]}
        query = oracle.norm_query(mu, M, f, **res)
        action, value = ascend_from_uniform(norm_solver.NormSolver(oracle, query))
        assert oracle.space.contains(action) and query.restrictions.admits(action)
        best = values_of(actions[[query.restrictions.admits(a) for a in actions]], mu, M, f).max()
        assert value == query.value(action) <= best + 1e-9 * (1 + abs(best))
    flat = oracle.norm_query(np.ones(oracle.d), -np.eye(oracle.d), 1.0)  # x @ M @ x < 0: no gradient step
    assert ascend_from_uniform(norm_solver.NormSolver(oracle, flat)) == (None, -np.inf)
