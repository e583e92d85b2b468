"""ESCB's exact routes, AESCB and Epoch-ESCB against enumeration and the authors' definitions, on every space."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.aescb import budget_levels
from cmab_milp.policies.escb_cardinality import ListedSubsets, SubsetTable, maximise_on_cardinality
from cmab_milp.policies.escb_search import index_value, maximise_index


def paper_f(t: int, m: int) -> float:
    """ESCB-1's f(t) = log t + 4 m log log t (log log t as 0 while log t <= 1), from the paper."""
    log_t = math.log(t)
    return log_t + 4 * m * (math.log(log_t) if log_t > 1 else 0.0)


def indices(actions: np.ndarray, mu: np.ndarray, n: np.ndarray, t: int, m: int) -> np.ndarray:
    acts = actions.astype(float)
    return (acts * mu).sum(axis=1) + np.sqrt(paper_f(t, m) / 2 * (acts * (1.0 / n)).sum(axis=1))


def spaces() -> dict[str, cm.ActionSpace]:
    grid = nx.DiGraph()
    for u, v in nx.grid_2d_graph(3, 3).edges():
        grid.add_edge(u, v)
        grid.add_edge(v, u)
    return {
        "at most m": cm.Cardinality(9, 3),
        "exactly m": cm.Cardinality(8, 4, exact=True),
        "partition matroid": cm.PartitionMatroid([[0, 1, 2], [3, 4, 5], [6, 7]], [2, 1, 1]),
        "graphic matroid": cm.GraphicMatroid(nx.complete_graph(4)),
        "matchings": cm.Matchings(nx.complete_bipartite_graph(3, 4)),
        "paths": cm.STPaths(grid, (0, 0), (2, 2)),
        "spanning trees": cm.SpanningTrees(nx.complete_graph(5)),
        "with conflicts": cm.Cardinality(7, 3).with_conflicts([(0, 1), (2, 3)]),
    }


@pytest.mark.parametrize("route", ["auto", "search"])
@pytest.mark.parametrize("name", list(spaces()))
def test_escb_decisions_equal_enumeration_over_whole_runs(name, route) -> None:
    space = spaces()[name]
    actions = space.enumerate()
    checked = 0
    for seed in range(3):
        means = np.random.default_rng(seed).uniform(0.05, 0.95, space.d)
        env = cm.UniformNoise(means, width=0.3, seed=seed)
        policy = cm.ESCB(space, None, oracle="auto", route=route)
        rng = np.random.default_rng(100 + seed)
        for _ in range(150):
            observed = policy.index.observed | policy.unreachable  # unreachable: on no action (path spaces)
            mu, n, t = policy.index.means.copy(), np.maximum(policy.index.counts, 1), policy.t
            action = policy.select()
            if observed.all() and t > 1:
                values = indices(actions, mu, n, t, space.m)
                best = values.max()
                chosen = indices(action[None], mu, n, t, space.m)[0]
                assert chosen >= best - 1e-9 * (1 + abs(best)), (seed, t, chosen, best)
                second = np.sort(values)[-2] if len(values) > 1 else -np.inf
                if best - second > 1e-7:  # a unique maximiser: the very action
                    assert np.array_equal(action, actions[int(np.argmax(values))])
                checked += 1
            policy.observe(action, env.sample(action, rng))
    assert checked > 300


def test_the_cardinality_ranking_is_exact_with_restrictions_and_incumbents() -> None:
    rng = np.random.default_rng(0)
    for trial in range(300):
        d = int(rng.integers(4, 10))
        k, exact = int(rng.integers(1, d)), bool(trial % 2)
        mu = rng.random(d) * rng.choice([0.2, 1.0]) - (0.3 if trial % 3 == 0 else 0.0)
        w, g = 1.0 / rng.integers(1, 60, d), float(rng.random() * 4)
        include = tuple(rng.choice(d, size=int(rng.integers(0, 2)), replace=False).tolist())
        exclude = tuple(
            i for i in rng.choice(d, size=int(rng.integers(0, 3)), replace=False).tolist() if i not in include
        )
        actions = cm.Cardinality(d, k, exact=exact).enumerate()
        keep = actions[:, list(include)].all(axis=1) & ~actions[:, list(exclude)].any(axis=1)
        actions = actions[keep]
        incumbent = actions[rng.integers(len(actions))] if len(actions) and trial % 4 == 0 else None
        guess = float(rng.random() * 3) if trial % 5 == 0 else None
        action, _ = maximise_on_cardinality(
            mu, w, g, k, exact, include=include, exclude=exclude, incumbent=incumbent, c=guess
        )
        if not len(actions):
            assert action is None
            continue
        best = max(index_value(mu, w, g, a) for a in actions)
        assert any(np.array_equal(action, a) for a in actions)
        assert index_value(mu, w, g, action) >= best - 1e-9 * (1 + abs(best))


def test_the_subset_table_is_exact_and_keeps_a_tied_incumbent() -> None:
    rng = np.random.default_rng(1)
    for trial in range(200):
        d = int(rng.integers(2, 9))
        k, exact = int(rng.integers(1, d + 1)), bool(trial % 2)
        table = SubsetTable(d, k, exact)
        actions = cm.Cardinality(d, k, exact=exact).enumerate()
        assert len(table) == len(actions) == SubsetTable.size(d, k, exact)
        mu = rng.random(d) - (0.5 if trial % 3 == 0 else 0.0)
        w, g = 1.0 / rng.integers(1, 60, d), float(rng.random() * 4)
        incumbent = actions[rng.integers(len(actions))] if trial % 4 == 0 else None
        action = table.best(mu, w, g, incumbent)
        best = max(index_value(mu, w, g, a) for a in actions)
        assert any(np.array_equal(action, a) for a in actions)
        assert index_value(mu, w, g, action) >= best - 1e-9 * (1 + abs(best))
    table = SubsetTable(4, 2, exact=False)
    mu, w = np.array([0.5, 0.5, 0.1, 0.1]), np.array([0.1, 0.1, 1.0, 1.0])  # arms 0 and 1 alike: ties
    first = table.best(mu, w, 0.0, None)
    assert first.tolist() == [True, True, False, False]
    assert table.best(mu, w, 1.0, np.array([False, True, False, True])).tolist() == [False, True, False, True]


def test_escb_on_the_subset_table_plays_what_the_ranking_finds() -> None:
    space = cm.Cardinality(9, 3)
    policy = cm.ESCB(space, None, oracle="auto")
    assert policy.index.subset_table is not None  # 130 subsets: the table route
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 9), width=0.3, seed=2)
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(400):
        index, t = policy.index, policy.t
        mu, w, g = index.means.copy(), index.inverse_counts(), index.scale(max(t, 1))
        action = policy.select()
        if index.observed.all() and t > 1:
            ranked, _ = maximise_on_cardinality(mu, w, g, 3, False)
            value, best = index_value(mu, w, g, action), index_value(mu, w, g, ranked)
            assert value >= best - 1e-9 * (1 + abs(best))
            compared += 1
        policy.observe(action, env.sample(action, rng))
    assert compared > 350


def test_listed_subsets_answer_as_enumeration_while_means_counts_and_g_move() -> None:
    """A learner-like sequence of queries (counts grow, means move, g grows), with fresh learners between."""
    rng = np.random.default_rng(4)
    listings = queries = 0
    for trial in range(12):
        d = int(rng.integers(6, 11))
        k, exact = int(rng.integers(2, min(d, 5) + 1)), bool(trial % 2)
        actions = cm.Cardinality(d, k, exact=exact).enumerate()
        listed = ListedSubsets(d, k, exact)
        incumbent, c = None, None
        for episode in range(2):  # the second episode restarts the counts: w grows, a new listing
            truth = rng.random(d) - (0.4 if trial % 3 == 0 else 0.0)
            counts = rng.integers(1, 4, d).astype(float)
            sums = truth * counts
            for t in range(2 + 400 * episode, 150 + 400 * episode):
                mu, w, g = sums / counts, 1.0 / counts, math.sqrt(paper_f(t, k) / 2)
                action, c = listed.best(mu, w, g, incumbent, c)
                values = np.array([index_value(mu, w, g, a) for a in actions])
                best = values.max()
                assert index_value(mu, w, g, action) >= best - 1e-9 * (1 + abs(best)), (trial, t)
                if best - np.sort(values)[-2] > 1e-7:
                    assert np.array_equal(action, actions[int(np.argmax(values))])
                incumbent, queries = action, queries + 1
                played = action if rng.random() < 0.8 else actions[rng.integers(len(actions))]
                counts[played] += 1
                sums[played] += truth[played] + rng.uniform(-0.3, 0.3, int(played.sum()))
        listings += listed.listings
    assert listings < queries / 2  # most answers came from a listing


def test_escb_on_listed_subsets_decides_as_enumeration_over_whole_runs() -> None:
    space = cm.Cardinality(14, 5)  # 3,473 subsets: above the subset table, so the listed subsets answer
    actions = space.enumerate()
    policy = cm.ESCB(space, None, oracle="auto")
    assert policy.index.subset_table is None and policy.index._listed is not None
    checked = 0
    for seed in range(2):
        env = cm.UniformNoise(np.random.default_rng(seed).uniform(0.05, 0.95, space.d), width=0.3, seed=seed)
        policy = cm.ESCB(space, None, oracle="auto")
        rng = np.random.default_rng(100 + seed)
        for _ in range(600):
            mu, n, t = policy.index.means.copy(), np.maximum(policy.index.counts, 1), policy.t
            observed = policy.index.observed.all()
            action = policy.select()
            if observed and t > 1:
                values = indices(actions, mu, n, t, space.m)
                best = values.max()
                assert indices(action[None], mu, n, t, space.m)[0] >= best - 1e-9 * (1 + abs(best)), (seed, t)
                if best - np.sort(values)[-2] > 1e-7:
                    assert np.array_equal(action, actions[int(np.argmax(values))])
                checked += 1
            policy.observe(action, env.sample(action, rng))
        assert policy.index._listed.listings < 300
    assert checked > 1100


def test_the_search_finds_a_maximiser_inside_the_hull() -> None:
    """Three single arms (s, y) = (0.01, 1), (2, 0), (1, 0.4), g = 0.8: the third wins, no linear objective picks it."""
    space = cm.Cardinality(3, 1, exact=True)
    mu, w = np.array([1.0, 0.0, 0.4]), np.array([0.01, 2.0, 1.0])
    values = [index_value(mu, w, 0.8, a) for a in space.enumerate()]
    assert int(np.argmax(values)) == 2 and values[2] > max(values[:2])
    for backend in ("enumerate", "highs", "auto"):
        action, stats = maximise_index(cm.make_oracle(space, backend), mu, w, 0.8)
        assert action.tolist() == [False, False, True] and stats.nodes > 1


def test_a_round_past_the_node_limit_asks_the_norm_oracle_and_stays_exact() -> None:
    space = spaces()["matchings"]
    policy = cm.ESCB(space, None, oracle="auto", route="search", max_nodes=0)
    env = cm.BernoulliArms(np.linspace(0.1, 0.9, space.d), seed=0)
    result = cm.simulate(policy, env, 60, seed=1)
    search = policy.index.search
    assert search["fallbacks"] == search["maximisations"] > 0
    assert result.queries[-1] == 60  # one query per round: the unobserved-arms query or the norm query


def test_the_ledger_counts_one_query_per_maximisation_whatever_the_route() -> None:
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 8), seed=0)
    space = cm.Cardinality(8, 3)
    runs = {r: cm.simulate(cm.ESCB(space, 300, oracle="auto", route=r), env, seed=0) for r in ("auto", "oracle")}
    assert runs["auto"].queries[-1] == runs["oracle"].queries[-1] == 300
    assert np.array_equal(runs["auto"].regret, runs["oracle"].regret)  # exact both, no ties with these noises


# ------------------------------------------------------------------ AESCB
def grid_reference(actions, mu, w, g, eps) -> float:
    """The AESCB index value by the definition, with each budgeted maximisation done by enumeration."""
    y, s = (actions * mu).sum(axis=1), (actions * w).sum(axis=1)
    first = int(np.argmax(y))
    best = y[first] + g * math.sqrt(s[first])
    start = max(s[first], w[w > 0].min())
    level = start
    while s.max() > start:
        level = min(level * (1 + eps), s.max())
        ok = s >= level - 1e-9 * (1 + level)
        if not ok.any():
            break
        k = int(np.flatnonzero(ok)[np.argmax(y[ok])])
        best = max(best, y[k] + g * math.sqrt(s[k]))
        if level >= s.max():
            break
    return best


@pytest.mark.parametrize("budget", ["auto", "highs"])  # the action table, or a budget row on the space's model
@pytest.mark.parametrize("name", ["at most m", "matchings", "paths", "spanning trees"])
def test_aescb_meets_its_approximation_level_and_the_grid_definition(name, budget) -> None:
    space = spaces()[name]
    actions = space.enumerate()
    rng = np.random.default_rng(3)
    for trial in range(3):
        eps = (0.1, 0.5, 1.0)[trial]
        policy = cm.AESCB(space, None, oracle="auto", eps=eps, budget_oracle=budget)
        n = rng.integers(1, 80, space.d)
        mu = rng.random(space.d) * (1.0 if trial % 2 else 0.2)
        policy.index.update(cm.environments.base.FeedbackStats(int(n.max()), n, sum=mu * n))
        policy.t = t = int(rng.integers(20, 5000))
        chosen = policy.plan().actions[0]
        values = indices(actions, mu, n, t, space.m)
        acts = actions.astype(float)
        y, s = (acts * mu).sum(axis=1), (acts * (1.0 / n)).sum(axis=1)
        g = math.sqrt(paper_f(t, space.m) / 2)
        star = int(np.argmax(values))
        value = indices(chosen[None], mu, n, t, space.m)[0]
        assert value >= y[star] + g * math.sqrt(s[star] / (1 + eps)) - 1e-9, (trial, value)
        assert value >= grid_reference(acts, mu, 1.0 / n, g, eps) - 1e-9 * (1 + value)


def test_budget_levels_and_aescb_regret_beside_escb() -> None:
    assert budget_levels(1.0, 1.0, 0.5) == [] and budget_levels(1.0, 2.0, 1.0) == [2.0]
    space = cm.Cardinality(6, 2)
    env = cm.UniformNoise([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0)
    exact = cm.simulate(cm.ESCB(space, 400, oracle="enumerate"), env, seed=2)
    approx = cm.simulate(cm.AESCB(space, 400, oracle="enumerate"), env, seed=2)
    assert approx.regret[-1] < 0.2 * 400 and approx.regret[-1] < 3 * exact.regret[-1] + 20


@pytest.mark.parametrize("bad", [{"eps": 0.0}, {"eps": -1}, {"budget_oracle": 3}, {"budget_oracle": "gurobbi"}])
def test_aescb_refuses_bad_constants(bad) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        cm.AESCB(cm.Cardinality(4, 2), 10, **bad)


# ------------------------------------------------------------------ Epoch-ESCB
@pytest.mark.parametrize("rule", ["counts", "time"])
def test_epoch_escb_recomputes_only_at_epoch_starts(rule) -> None:
    space = cm.Cardinality(6, 2)
    env = cm.BernoulliArms([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0)
    policy = cm.EpochESCB(space, 3000, oracle="auto", growth=2.0, epochs=rule)
    rng = np.random.default_rng(0)
    starts, held, nxt = [], None, None
    for t in range(1, 3001):
        counts = policy.index.counts.copy()
        before = policy.updates
        action = policy.select()
        if policy.updates > before:
            if nxt is not None:
                assert t == nxt  # an epoch starts exactly where the rule ends the last one
            starts.append(t)
            if not counts.all():
                nxt = t + 1
            elif rule == "time":
                nxt = max(t + 1, math.ceil(2.0 * t))
            else:  # the least-played arm of the new action has doubled its count
                nxt = t + max(1, int(counts[action].min()))
            held = action
        else:
            assert t < nxt and np.array_equal(action, held)  # within an epoch the action is held
        policy.observe(action, env.sample(action, rng))
    assert starts[:3] == [1, 2, 3]  # 6 arms, 2 a round: three one-round epochs explore them
    assert len(starts) <= (15 if rule == "time" else 60)


def test_epoch_escb_queries_beside_escb() -> None:
    space = cm.Cardinality(8, 3)
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 8), seed=1)
    escb = cm.simulate(cm.ESCB(space, 4000, oracle="auto"), env, seed=0)
    epoch = cm.simulate(cm.EpochESCB(space, 4000, oracle="auto"), env, seed=0)
    assert escb.queries[-1] == 4000 and epoch.queries[-1] < 200
    assert epoch.regret[-1] < 2 * escb.regret[-1] + 50


def test_epoch_escb_refuses_a_growth_of_one_and_reads_as_a_problem_kind() -> None:
    with pytest.raises(ValueError, match="growth"):
        cm.EpochESCB(cm.Cardinality(4, 2), 10, growth=1.0)
    with pytest.raises(ValueError, match="epochs"):
        cm.EpochESCB(cm.Cardinality(4, 2), 10, epochs="rounds")
    from cmab_milp.experiments import parse_problem

    data = {
        "title": "t",
        "space": {"kind": "Cardinality", "d": 5, "m": 2},
        "environment": {"kind": "BernoulliArms", "means": [0.1, 0.2, 0.3, 0.4, 0.5]},
        "policies": [
            {"name": "E", "kind": "Epoch-ESCB", "oracle": "auto", "constants": {"growth": 1.5}},
            {"name": "A", "kind": "AESCB", "oracle": "auto", "constants": {"eps": 0.2}},
        ],
        "run": {"horizon": 50, "seeds": 1},
    }
    problem = parse_problem(data)
    space = problem.build_space()
    assert [type(problem.build_policy(p.name, space)).__name__ for p in problem.policies] == ["EpochESCB", "AESCB"]
