"""ESCB and AROQ-ESCB: the index of the chosen action against enumeration, f(t), exploration, regret, bad input."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.environments.base import FeedbackStats
from cmab_milp.experiments import load_problem, parse_problem
from cmab_milp.experiments.problem.schema import ProblemError


def brute_index(mu, n, t, m, actions, C=1.0, loglog=4.0) -> np.ndarray:
    """ESCB-1's index of every row, written from the paper's formula (independent of the library)."""
    log_t = math.log(t)
    f = C * log_t + loglog * m * (math.log(log_t) if log_t > 1 else 0.0)
    acts = actions.astype(float)
    return acts @ mu + np.sqrt(f / 2 * (acts @ (1.0 / n)))


def spaces():
    grid = nx.DiGraph()
    for u, v in nx.grid_2d_graph(3, 3).edges():
        grid.add_edge(u, v)
        grid.add_edge(v, u)
    return {
        "cardinality": cm.Cardinality(7, 3),
        "matchings": cm.Matchings(nx.complete_bipartite_graph(3, 3)),
        "paths": cm.STPaths(grid, (0, 0), (2, 2)),
        "spanning trees": cm.SpanningTrees(nx.complete_graph(4)),
    }


@pytest.mark.parametrize("name", list(spaces()))
@pytest.mark.parametrize(("backend", "route"), [("highs", "oracle"), ("auto", "oracle"), ("auto", "auto")])
def test_the_chosen_action_maximises_the_index_over_every_action(name, backend, route) -> None:
    space = spaces()[name]
    actions = space.enumerate()
    rng = np.random.default_rng(len(name))
    for trial in range(4):
        policy = cm.ESCB(space, None, oracle=backend, route=route)
        n = rng.integers(1, 60, space.d)
        mu = rng.random(space.d) * (1.0 if trial % 2 else 0.2)  # small means: the width decides
        policy.index.update(FeedbackStats(int(n.max()), n, sum=mu * n))
        policy.t = t = int(rng.integers(3, 5000))
        chosen = policy.plan().actions[0]
        values = brute_index(mu, n, t, space.m, actions)
        best = values.max()
        value = brute_index(mu, n, t, space.m, chosen[None])[0]
        assert space.contains(chosen)
        assert value >= best - 1e-9 * (1 + abs(best)), (trial, value, best)
        assert np.isclose(policy.index.upper_values(t, chosen[None])[0], value)


def test_the_cardinality_route_counts_its_queries_in_the_ledger() -> None:
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 8), seed=0)
    routed = cm.simulate(cm.ESCB(cm.Cardinality(8, 3), 200, oracle="auto"), env, seed=0)
    asked = cm.simulate(cm.ESCB(cm.Cardinality(8, 3), 200, oracle="auto", route="oracle"), env, seed=0)
    assert routed.queries[-1] == asked.queries[-1] and routed.rounds[-1] == asked.rounds[-1]
    assert np.isclose(routed.regret[-1], asked.regret[-1], rtol=0.2)  # exact both: ties may differ


def test_f_is_the_papers_with_a_guard_for_small_t() -> None:
    index = cm.ESCB(cm.Cardinality(5, 3), None, oracle="enumerate").index
    assert index.f(100) == pytest.approx(math.log(100) + 4 * 3 * math.log(math.log(100)))
    assert index.f(1) == 0.0 and index.f(2) == pytest.approx(math.log(2))  # log log t < 0 taken as 0
    custom = cm.ESCB(cm.Cardinality(5, 3), None, oracle="enumerate", C=2.0, loglog=0.0).index
    assert custom.f(100) == pytest.approx(2 * math.log(100))


def test_norm_gap_answers_are_within_the_gap() -> None:
    space = cm.Cardinality(8, 3)
    rng = np.random.default_rng(1)
    n = rng.integers(1, 30, 8)
    mu = rng.random(8)
    oracle = cm.make_oracle(space, "highs", norm_gap=0.05)
    policy = cm.ESCB(space, None, oracle=oracle, route="oracle")
    policy.index.update(FeedbackStats(30, n, sum=mu * n))
    policy.t = 500
    chosen = policy.plan().actions[0]
    values = brute_index(mu, n, 500, 3, space.enumerate())
    assert brute_index(mu, n, 500, 3, chosen[None])[0] >= (1 - 0.05) * values.max() - 1e-9


def test_unobserved_arms_are_played_first() -> None:
    policy = cm.ESCB(cm.Cardinality(6, 2), 50, oracle="enumerate")
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 6), seed=0)
    rng = np.random.default_rng(0)
    first = []
    for _ in range(3):
        a = policy.select()
        first.append(a)
        policy.observe(a, env.sample(a, rng))
    assert np.array(first).sum(axis=0).tolist() == [1] * 6


def test_aroq_escb_epochs_double_and_queries_stay_logarithmic() -> None:
    space = cm.Cardinality(8, 3)
    env = cm.UniformNoise(np.linspace(0.05, 0.95, 8), seed=0)
    policy = cm.AROQESCB(space, 20000, oracle="auto")
    result = cm.simulate(policy, env, seed=0)
    # every arm's epoch ends when its count in the epoch reaches 1 + 2 x the previous epoch's:
    # at most log2(T + 1) + 1 epochs per arm, one query per update (plus unobserved-arm queries)
    assert (policy.epochs <= math.log2(20000 + 1) + 1).all()
    assert result.queries[-1] <= policy.epochs.sum() + 8
    assert result.regret[-1] < 0.02 * 20000


def _mean_regret(cls, space, env, T, seeds=(0, 1, 2)) -> float:
    return float(np.mean([cm.simulate(cls(space, T, oracle="auto"), env, seed=s).regret[-1] for s in seeds]))


def matching_instance():
    """Perfect matchings of K_{4,4} (d = 16, m = 4), Bernoulli arms: the optimal matching's arms 0.7, others 0.5."""
    graph = nx.complete_bipartite_graph(4, 4)
    best = {(i, 4 + i) for i in range(4)}
    means = np.array([0.7 if edge in best else 0.5 for edge in graph.edges()])
    return cm.Matchings(graph, perfect=True), cm.BernoulliArms(means, seed=0)


def test_escb_regret_is_sublinear_and_below_cucbs_on_matchings() -> None:
    """Combes et al. (2015): ESCB's width sqrt(sum 1/n_i) is up to sqrt(m) below CUCB's sum of widths."""
    space, env = matching_instance()
    early = _mean_regret(cm.ESCB, space, env, 500)
    late = _mean_regret(cm.ESCB, space, env, 2000)
    cucb = _mean_regret(cm.CUCB, space, env, 2000)
    assert late < 0.85 * cucb
    assert late < 2.5 * early  # 4x the rounds


@pytest.mark.slow
def test_aroq_escb_regret_is_close_to_escbs_with_far_fewer_queries() -> None:
    space, env = matching_instance()
    escb = [cm.simulate(cm.ESCB(space, 4000, oracle="auto"), env, seed=s) for s in range(3)]
    rare = [cm.simulate(cm.AROQESCB(space, 4000, oracle="auto"), env, seed=s) for s in range(3)]
    assert np.mean([r.regret[-1] for r in rare]) < 1.5 * np.mean([r.regret[-1] for r in escb])
    assert max(r.queries[-1] for r in rare) < 0.05 * 4000


@pytest.mark.parametrize("cls", [cm.ESCB, cm.AROQESCB])
def test_a_saved_learner_continues_identically(cls, tmp_path) -> None:
    space, env = matching_instance()
    rng = np.random.default_rng(4)
    policy = cls(space, 400, oracle="auto")
    for _ in range(120):
        a = policy.select()
        policy.observe(a, env.sample(a, rng))
    policy.save(tmp_path / "escb.npz")
    restored = cm.load_policy(tmp_path / "escb.npz")
    assert restored.params == policy.params and restored.t == policy.t
    for _ in range(100):
        a, b = policy.select(), restored.select()
        assert np.array_equal(a, b)
        y = env.sample(a, rng)
        policy.observe(a, y)
        restored.observe(b, y)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"C": 0.0}, "C"),
        ({"C": -1.0}, "C"),
        ({"loglog": -0.5}, "loglog"),
        ({"loglog": "x"}, "loglog"),
        ({"route": "fast"}, "route"),
    ],
)
@pytest.mark.parametrize("cls", [cm.ESCB, cm.AROQESCB])
def test_bad_constants_name_the_key(cls, kwargs, key) -> None:
    with pytest.raises(ValueError, match=key):
        cls(cm.Cardinality(4, 2), 10, oracle="enumerate", **kwargs)


PROBLEMS = Path(__file__).resolve().parents[2] / "problems"


def test_the_baselines_file_is_figure_2_with_the_five_policies() -> None:
    problem = load_problem(PROBLEMS / "baselines.toml")
    space = problem.build_space()
    assert (space.d, space.m) == (20, 3)
    assert problem.build_environment(space).means.tolist() == np.random.default_rng(7).uniform(0, 1, 20).tolist()
    assert [p.kind for p in problem.policies] == ["CUCB", "CTS", "ESCB", "AROQ", "SROQ"]


@pytest.mark.parametrize(
    ("kind", "constants", "key"),
    [("CTS", {"prior": "poisson"}, "prior"), ("ESCB", {"loglog": -1}, "loglog"), ("CTS", {"sigma": 0}, "sigma")],
)
def test_problem_files_refuse_bad_constants_naming_the_key(kind, constants, key) -> None:
    data = load_problem(PROBLEMS / "baselines.toml").to_dict()
    data["policies"] = [{"name": kind, "kind": kind, "oracle": "auto", "constants": constants}]
    with pytest.raises(ProblemError, match=f"policies\\[0\\].constants.{key}"):
        parse_problem(data, "bad.toml")
