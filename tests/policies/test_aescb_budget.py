"""AESCB's budget route on one compiled model: the budgeted query against brute force, and whole AESCB runs
on the compiled model equal to the action-table route (identical decisions, so identical regret)."""

from __future__ import annotations

import copy
import pickle

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.aescb_budget import BudgetModel, budget_sum


def budget_spaces() -> dict[str, cm.ActionSpace]:
    grid = nx.DiGraph()
    for u, v in nx.grid_2d_graph(3, 3).edges():
        grid.add_edge(u, v)
        grid.add_edge(v, u)
    return {
        "at most m": cm.Cardinality(10, 4),
        "exactly m": cm.Cardinality(9, 3, exact=True),
        "matchings": cm.Matchings(nx.complete_bipartite_graph(3, 4)),
        "paths": cm.STPaths(grid, (0, 0), (2, 2)),
        "spanning trees": cm.SpanningTrees(nx.complete_graph(5)),
    }


def brute_force(actions: np.ndarray, mu: np.ndarray, w: np.ndarray, rhs: float, allowed: np.ndarray) -> set:
    """The set of maximisers of ``mu . a`` over the listed actions with ``w . a >= rhs`` (empty: infeasible)."""
    dense = actions.astype(float)
    ok = allowed & ((dense * w).sum(axis=1) >= rhs)
    if not ok.any():
        return set()
    values = (dense * mu).sum(axis=1)
    best = values[ok].max()
    return {k for k in np.flatnonzero(ok) if values[k] >= best - 1e-9 * (1 + abs(best))}


@pytest.mark.parametrize("name", list(budget_spaces()))
def test_budgeted_query_equals_brute_force_with_random_weights_budgets_and_restrictions(name) -> None:
    space = budget_spaces()[name]
    actions = space.enumerate()
    index = {a.tobytes(): k for k, a in enumerate(actions)}
    budget = BudgetModel(space)
    rng = np.random.default_rng(7)
    infeasible = feasible = 0
    for trial in range(40):
        mu = rng.normal(size=space.d)
        w = 1.0 / rng.integers(1, 500, space.d)
        s = (actions.astype(float) * w).sum(axis=1)
        # budgets below, inside and above the range of w . a (above: infeasible)
        rhs = float(rng.uniform(s.min() * 0.5, s.max() * 1.2))
        include, exclude, pairs = (), (), ()
        if trial % 4 == 1:
            exclude = (int(rng.integers(space.d)),)
        elif trial % 4 == 2:
            include = (int(np.flatnonzero(actions[rng.integers(len(actions))])[0]),)
        elif trial % 4 == 3:
            pairs = (tuple(int(i) for i in rng.choice(space.d, 2, replace=False)),)
        allowed = np.ones(len(actions), bool)
        for i in include:
            allowed &= actions[:, i]
        for i in exclude:
            allowed &= ~actions[:, i]
        for i, j in pairs:
            allowed &= ~(actions[:, i] & actions[:, j])
        expected = brute_force(actions, mu, w, rhs, allowed)
        answer = budget.argmax(mu, w, rhs, include=include, exclude=exclude, forbid_pairs=pairs)
        if not expected:
            assert answer is None, (trial, rhs)
            infeasible += 1
            continue
        assert answer is not None and index[answer.tobytes()] in expected, trial
        assert budget_sum(w, answer) >= rhs
        feasible += 1
    assert infeasible >= 3 and feasible >= 20  # both kinds met
    assert budget.compiled


def test_budget_row_met_exactly_where_the_solver_tolerance_would_admit_a_shortfall() -> None:
    # two arms: a (value 1) misses the budget by 1e-8, far below HiGHS's feasibility tolerance; b (value 0) meets it
    space = cm.Cardinality(2, 1, exact=True)
    budget = BudgetModel(space)
    w = np.array([1.0 - 1e-8, 1.0])
    answer = budget.argmax(np.array([1.0, 0.0]), w, 1.0)
    assert answer.tolist() == [False, True]
    assert budget.argmax(np.array([1.0, 0.0]), w, 1.0 + 1e-8) is None


def test_the_compiled_model_is_not_copied_pickled_or_saved(tmp_path) -> None:
    space = cm.Cardinality(12, 4)
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 12), seed=0)
    policy = cm.AESCB(space, 200, oracle="auto", budget_oracle="model")
    cm.simulate(policy, env, 60, seed=0)
    assert policy.index.budget_model.compiled
    for copied in (pickle.loads(pickle.dumps(policy)), copy.deepcopy(policy)):
        assert not copied.index.budget_model.compiled
        assert np.array_equal(copied.select(), copy.deepcopy(policy).select())  # rebuilt on demand, same decision
    policy.save(tmp_path / "aescb.npz")
    loaded = cm.load_policy(tmp_path / "aescb.npz")
    assert loaded.params["budget_oracle"] == "model" and not loaded.index.budget_model.compiled
    assert np.array_equal(loaded.select(), policy.select())
    assert not policy.clone().index.budget_model.compiled


def test_aescb_on_the_compiled_model_decides_as_on_the_action_table_quick() -> None:
    same_decisions(budget_spaces()["at most m"], seeds=(0,), horizon=80)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["at most m", "matchings", "paths"])
def test_aescb_on_the_compiled_model_decides_as_on_the_action_table(name) -> None:
    same_decisions(budget_spaces()[name], seeds=(0, 1, 2), horizon=250)


def same_decisions(space: cm.ActionSpace, seeds: tuple[int, ...], horizon: int) -> None:
    """AESCB on the action table and on the compiled model: the same regret, grid and ledger, seed by seed."""
    name = repr(space)
    for seed in seeds:
        means = np.random.default_rng(seed).uniform(0.05, 0.95, space.d)
        runs = {}
        for route in ("table", "model"):  # the action table (also on Cardinality), the compiled model
            env = cm.UniformNoise(means, width=0.3, seed=seed)  # continuous noise: no ties between actions
            policy = cm.AESCB(space, horizon, oracle="auto", budget_oracle=route)
            runs[route] = (cm.simulate(policy, env, seed=seed), policy)
        table, model = runs["table"], runs["model"]
        assert not table[1].index.budget_model.compiled and model[1].index.budget_model.compiled
        assert np.array_equal(table[0].regret, model[0].regret), (name, seed)
        assert table[1].index.grid == model[1].index.grid
        assert table[0].queries[-1] == model[0].queries[-1]  # the same ledger: one query per budgeted maximisation


def test_budget_model_refuses_bad_input() -> None:
    budget = BudgetModel(cm.Cardinality(3, 1))
    with pytest.raises(ValueError, match="shape"):
        budget.argmax(np.zeros(2), np.ones(3), 1.0)
    with pytest.raises(ValueError, match="w must be finite"):
        budget.argmax(np.zeros(3), np.array([1.0, np.nan, 1.0]), 1.0)
    with pytest.raises(ValueError, match="rhs"):
        budget.argmax(np.zeros(3), np.ones(3), float("inf"))
    with pytest.raises(ValueError, match="include"):
        budget.argmax(np.zeros(3), np.ones(3), 1.0, include=(5,))
    with pytest.raises(ValueError, match="unknown restriction"):
        budget.argmax(np.zeros(3), np.ones(3), 1.0, exlude=(0,))
    assert budget.argmax(np.zeros(3), np.ones(3), 0.0, include=(0,), exclude=(0,)) is None
