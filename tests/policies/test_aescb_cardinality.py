"""AESCB's combinatorial budget routes on Cardinality spaces against brute force, and whole AESCB runs on them
equal to the action-table route (identical decisions, ties included)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.aescb_cardinality import BudgetedTop, budgeted_top, dual_multiplier
from cmab_milp.policies.aescb_levels import LevelAnswers


def random_instance(rng: np.random.Generator, trial: int) -> tuple:
    """A small Cardinality space with values (some tied), weights (some zero), and restrictions."""
    d = int(rng.integers(1, 9))
    m = int(rng.integers(1, d + 1))
    exact = bool(rng.integers(2))
    mu = (rng.normal(size=d), rng.integers(-2, 3, d) / 4.0, rng.random(d))[trial % 3]  # the middle one ties
    w = 1.0 / rng.integers(1, 50, d) if trial % 2 else rng.integers(0, 4, d).astype(float)
    include = tuple(int(i) for i in rng.choice(d, int(rng.integers(0, 2)), replace=False)) if trial % 5 == 1 else ()
    exclude = (
        tuple(int(i) for i in rng.choice(d, min(d, int(rng.integers(0, 3))), replace=False)) if trial % 5 == 2 else ()
    )
    if trial % 5 == 3 and d > 1:  # an arm both included and excluded: nothing qualifies
        include = exclude = (0,)
    space = cm.Cardinality(d, m, exact=exact)
    actions = space.enumerate()
    allowed = np.ones(len(actions), bool)
    for i in include:
        allowed &= actions[:, i]
    for i in exclude:
        allowed &= ~actions[:, i]
    return space, actions, mu, w, include, exclude, allowed


def table_answer(actions, mu, w, rhs, allowed) -> np.ndarray | None:
    """The action table's answer: the first row of largest ``mu . a`` among those with ``w . a >= rhs``."""
    dense = actions.astype(float)
    ok = allowed & ((dense * w).sum(axis=1) >= rhs)
    if not ok.any():
        return None
    return actions[int(np.argmax(np.where(ok, (dense * mu).sum(axis=1), -np.inf)))]


def brute_value(actions, mu, w, rhs, allowed) -> float:
    """The largest ``mu . a`` (summed exactly, ``math.fsum``) over every allowed action meeting the row (summed as
    the table sums it), by enumeration; ``-inf``: none."""
    meets = (actions.astype(float) * w).sum(axis=1) >= rhs
    values = [math.fsum(mu[a]) for a, ok in zip(actions, allowed & meets, strict=True) if ok]
    return max(values, default=-math.inf)


def test_budgeted_top_equals_brute_force_with_ties_restrictions_and_infeasible_budgets() -> None:
    rng = np.random.default_rng(11)
    infeasible = feasible = 0
    for trial in range(1500):
        space, actions, mu, w, include, exclude, allowed = random_instance(rng, trial)
        s = (actions.astype(float) * w).sum(axis=1)
        # a budget at some action's weight exactly (the row met with equality), or anywhere, also above them all
        rhs = float(rng.choice(s)) if trial % 4 == 0 else float(rng.uniform(-0.5, 1.3 * s.max() + 0.1))
        answer = budgeted_top(mu, w, rhs, space.m, space.exact, include, exclude)
        expected = table_answer(actions, mu, w, rhs, allowed)
        if expected is None:
            assert answer is None, trial
            assert brute_value(actions, mu, w, rhs, allowed) == -math.inf, trial
            infeasible += 1
            continue
        assert answer is not None and np.array_equal(answer, expected), trial  # the same action, ties too
        assert space.contains(answer) and all(answer[i] for i in include) and not any(answer[i] for i in exclude)
        assert (answer.astype(float) * w).sum() >= rhs
        assert math.fsum(mu[answer]) == pytest.approx(brute_value(actions, mu, w, rhs, allowed), abs=1e-12)
        feasible += 1
    assert infeasible >= 100 and feasible >= 1000


def test_one_budgeted_top_answers_every_budget_of_its_values() -> None:
    rng = np.random.default_rng(5)
    space = cm.Cardinality(9, 4)
    actions = space.enumerate()
    mu, w = rng.normal(size=9), 1.0 / rng.integers(1, 300, 9)
    top = BudgetedTop(mu, w, 4, include=(2,), exclude=(5,))
    allowed = actions[:, 2] & ~actions[:, 5]
    for rhs in np.linspace(0.0, 1.2 * (actions.astype(float) * w).sum(axis=1).max(), 40):
        expected = table_answer(actions, mu, w, float(rhs), allowed)
        answer = top.argmax(float(rhs))
        assert (answer is None and expected is None) or np.array_equal(answer, expected), rhs


def lp_dual(y: np.ndarray, w: np.ndarray, r: float, k: int, lam: float) -> float:
    """``L(lambda) = (the k largest of y + lambda w, summed) - lambda r``, the LP dual of one covering row."""
    return float(np.sort(y + lam * w)[-k:].sum()) - lam * r


def test_dual_multiplier_reaches_the_lp_bound() -> None:
    # L(lambda) = top-k of (y + lambda w) - lambda r is convex; its minimum over a fine grid is not below ours
    rng = np.random.default_rng(3)
    for _ in range(30):
        y, w = rng.random(12), 1.0 / rng.integers(1, 100, 12)
        k, r = 4, float(np.sort(w)[-6:].sum() / 2)

        lam, feasible = dual_multiplier(y, w, r, k, exact=True)
        grid = min(lp_dual(y, w, r, k, x) for x in np.concatenate(([0.0], np.geomspace(1e-3, 1e4, 4000))))
        assert lam >= 0 and lp_dual(y, w, r, k, lam) <= grid + 1e-9
        assert all(len(a) == k and w[a].sum() >= r for a in feasible)


def test_level_answers_equal_brute_force_per_level_with_cutoff_and_hints() -> None:
    rng = np.random.default_rng(2)
    answered = below = 0
    for trial in range(800):
        space, actions, mu, w, include, exclude, allowed = random_instance(rng, trial)
        dense = actions.astype(float)
        s, y = (dense * w).sum(axis=1), (dense * mu).sum(axis=1)
        levels = sorted(float(x) for x in np.concatenate([rng.choice(s, 2), rng.uniform(-0.5, 1.3 * s.max() + 0.1, 3)]))
        cutoff = float(rng.choice(y)) if trial % 4 == 3 else -math.inf
        hints = [actions[i] for i in rng.choice(len(actions), 3)] if trial % 2 else []
        found = LevelAnswers(mu, w, levels, space.m, space.exact, include, exclude, cutoff=cutoff, hints=hints)
        for j, level in enumerate(levels):
            expected = table_answer(actions, mu, w, level, allowed)
            if expected is None or y[(s >= level) & allowed].max() < cutoff:
                assert found.answer(j) is None, (trial, j)
                below += 1
            else:
                assert np.array_equal(found.answer(j), expected), (trial, j)
                answered += 1
    assert answered >= 2000 and below >= 500


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: budgeted_top(np.zeros(2), np.array([1.0, -1.0]), 0.0, 1), "w must be finite"),
        (lambda: budgeted_top(np.zeros(2), np.ones(3), 0.0, 1), "one shape"),
        (lambda: budgeted_top(np.array([np.nan, 0.0]), np.ones(2), 0.0, 1), "mu must be finite"),
        (lambda: budgeted_top(np.zeros(2), np.ones(2), math.inf, 1), "rhs"),
        (lambda: budgeted_top(np.zeros(2), np.ones(2), 0.0, 3), "m must be"),
        (lambda: budgeted_top(np.zeros(2), np.ones(2), 0.0, 1, include=(2,)), "include"),
        (lambda: budgeted_top(np.zeros(2), np.ones(2), 0.0, 1, exclude=(-1,)), "exclude"),
        (lambda: LevelAnswers(np.zeros(2), np.ones(2), [1.0, 0.5], 1), "ascending"),
        (lambda: LevelAnswers(np.zeros(2), np.ones(2), [math.nan], 1), "finite"),
        (lambda: LevelAnswers(np.zeros(2), np.array([1.0, np.inf]), [0.0], 1), "w must be finite"),
    ],
)
def test_bad_input_is_refused_naming_it(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_unknown_budget_route_is_refused() -> None:
    with pytest.raises(ValueError, match="budget_oracle"):
        cm.AESCB(cm.Cardinality(4, 2), 10, budget_oracle="cardinalty")


def same_decisions_on_cardinality(space, seeds, horizon, environment) -> None:
    """AESCB on the action table, one combinatorial search per query, and every level at once: the same regret
    and the same number of budgeted queries, seed by seed."""
    for seed in seeds:
        means = np.random.default_rng(seed).uniform(0.05, 0.95, space.d)
        runs = {}
        for route in ("table", "cardinality", "auto"):
            policy = cm.AESCB(space, horizon, oracle="auto", budget_oracle=route)
            runs[route] = (cm.simulate(policy, environment(means, seed), seed=seed), policy)
        table = runs["table"]
        assert table[1].index.grid["budgeted"] > horizon  # the grid did ask budgeted queries
        for route in ("cardinality", "auto"):
            result, policy = runs[route]
            assert np.array_equal(result.regret, table[0].regret), (repr(space), seed, route)
            assert policy.index.grid["budgeted"] == table[1].index.grid["budgeted"], route
            assert result.queries[-1] == table[0].queries[-1]  # one ledger query per budgeted maximisation
        assert runs["cardinality"][1].index.grid == table[1].index.grid  # the same grid, level by level


def uniform(means, seed):
    return cm.UniformNoise(means, width=0.3, seed=seed)


def bernoulli(means, seed):
    return cm.BernoulliArms(means, seed=seed)  # means of few draws tie: the tie rule decides


def test_aescb_decides_on_cardinality_as_on_the_action_table_quick() -> None:
    same_decisions_on_cardinality(cm.Cardinality(10, 4), seeds=(0,), horizon=120, environment=uniform)
    same_decisions_on_cardinality(cm.Cardinality(8, 3, exact=True), seeds=(1,), horizon=120, environment=bernoulli)


@pytest.mark.slow
@pytest.mark.parametrize("environment", [uniform, bernoulli])
@pytest.mark.parametrize("space", [cm.Cardinality(10, 4), cm.Cardinality(9, 3, exact=True), cm.Cardinality(12, 5)])
def test_aescb_decides_on_cardinality_as_on_the_action_table(space, environment) -> None:
    same_decisions_on_cardinality(space, seeds=(0, 1, 2), horizon=400, environment=environment)


def test_level_search_past_its_node_limit_gives_no_answer_and_says_so() -> None:
    rng = np.random.default_rng(4)
    mu, w = rng.random(12), 1.0 / rng.integers(1, 40, 12)
    levels = [0.1, 0.2, 0.4]
    whole = LevelAnswers(mu, w, levels, 4)
    assert whole.complete and whole.nodes > 5
    stopped = LevelAnswers(mu, w, levels, 4, max_nodes=5)
    assert not stopped.complete and stopped.nodes == 6
    with pytest.raises(RuntimeError, match="max_nodes=5"):
        stopped.answer(0)
    actions = cm.Cardinality(12, 4).enumerate()
    for j, level in enumerate(levels):  # the whole search's answers, for the record
        assert np.array_equal(whole.answer(j), table_answer(actions, mu, w, level, np.ones(len(actions), bool)))


def test_a_search_past_its_state_limit_stops_and_the_default_route_asks_the_model() -> None:
    """Found: on Cardinality(200, 5) one per-level search kept millions of partial sets (a 74-second round); under
    ``budget_oracle="auto"`` a search past ``MAX_STATES`` now goes to the compiled model, whose answer has the
    same value (brute force here)."""
    from itertools import combinations

    from cmab_milp.policies.aescb_cardinality import SearchTooLarge

    d, m = 12, 4
    mu, w = np.full(d, 0.5), np.full(d, 1.0 / 3.0)  # every 4-set ties: nothing prunes (the hard case's shape)
    rhs = 1.0
    with pytest.raises(SearchTooLarge, match="max_states 2"):
        budgeted_top(mu, w, rhs, m, max_states=2)
    whole = budgeted_top(mu, w, rhs, m)
    best = max(
        (sum(mu[list(c)]) for k in range(m + 1) for c in combinations(range(d), k) if sum(w[list(c)]) >= rhs),
        default=None,
    )
    assert whole is not None and math.isclose(float(mu[whole].sum()), best, rel_tol=1e-12)

    policy = cm.AESCB(cm.Cardinality(d, m), None, oracle="auto")
    index = policy.index
    restrictions = {"include": (), "exclude": (), "forbid_pairs": ()}
    answer = index._budgeted(policy.oracle, mu, w, rhs, restrictions, per_level=True)
    assert index.grid["to_model"] == 0 and np.array_equal(answer, whole)  # within the limit: the search
    index.max_states = 2
    answer = index._budgeted(policy.oracle, mu, w, rhs, restrictions, per_level=True)
    assert index.grid["to_model"] == 1 and math.isclose(float(mu[answer].sum()), best, rel_tol=1e-9)
