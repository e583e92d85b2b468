"""``outcome_bounds``: per-arm indices clipped to the known outcome range (CUCB, AROQ, SROQ, CTS)."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.described import ParameterError
from cmab_milp.environments.base import FeedbackStats
from cmab_milp.experiments import load_problem, parse_problem
from cmab_milp.experiments.problem.schema import ProblemError
from cmab_milp.policies.linear import LinearIndex
from cmab_milp.policies.thompson import PosteriorIndex

PER_ARM = [cm.CUCB, cm.AROQ, cm.SROQ, cm.CTS]
PROBLEMS = Path(__file__).resolve().parents[2] / "problems"


def test_the_clipped_ucb_and_lcb_are_the_closed_form() -> None:
    counts, sums = np.array([1, 4, 9, 25]), np.array([-1.0, -1.0, -3.0, -24.0])
    index = LinearIndex(4, C=0.5, outcome_bounds=(-1.0, 0.0))
    index.update(FeedbackStats(25, counts, sum=sums))
    t = 50
    for i in range(4):
        mean, radius = sums[i] / counts[i], math.sqrt(0.5 * math.log(t) / counts[i])
        assert index.upper_weights(t)[i] == pytest.approx(min(max(mean + radius, -1.0), 0.0), abs=1e-15)
        assert index.lower_weights(t)[i] == pytest.approx(min(max(mean - radius, -1.0), 0.0), abs=1e-15)
    # arm 0 (mean -1, one observation) has a UCB above 0 without the bounds: clipped to 0
    plain = LinearIndex(4, C=0.5)
    plain.update(FeedbackStats(25, counts, sum=sums))
    assert plain.upper_weights(t)[0] > 0.0 and index.upper_weights(t)[0] == 0.0
    assert plain.lower_weights(t)[0] < -1.0 and index.lower_weights(t)[0] == -1.0
    actions = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], bool)
    expected = [index.upper_weights(t)[:2].sum(), index.upper_weights(t)[2:].sum()]
    assert index.upper_values(t, actions).tolist() == pytest.approx(expected)


@pytest.mark.parametrize("prior", ["beta", "gaussian"])
def test_cts_samples_are_the_same_draws_clipped(prior) -> None:
    stream = np.array([5, 6], np.uint64)
    clipped = PosteriorIndex(3, prior=prior, stream=stream, outcome_bounds=(0.2, 0.6))
    plain = PosteriorIndex(3, prior=prior, stream=stream)
    stats = FeedbackStats(2, np.array([2, 1, 1]), sum=np.array([1.0, 1.0, 0.0]))
    for index in (clipped, plain):
        index.update(stats)
        index.add_successes(np.array([1.0, 1.0, 0.0]))
    for _ in range(50):
        assert np.array_equal(clipped.sample(), np.clip(plain.sample(), 0.2, 0.6))


@pytest.mark.parametrize("cls", PER_ARM)
def test_wide_bounds_change_no_decision_and_no_bounds_change_no_params(cls) -> None:
    space, env = cm.Cardinality(6, 2), cm.UniformNoise([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0)
    plain, wide = cls(space, 400, oracle="enumerate"), cls(space, 400, oracle="enumerate", outcome_bounds=(-9, 9))
    assert "outcome_bounds" not in plain.params and wide.params["outcome_bounds"] == (-9.0, 9.0)
    a, b = cm.simulate(plain, env, 400, seed=3), cm.simulate(wide, env, 400, seed=3)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.queries, b.queries)


def test_clipped_cucb_asks_only_shortest_path_queries_on_costs(monkeypatch) -> None:
    graph = nx.DiGraph()
    for u, v in nx.grid_2d_graph(3, 3).edges():
        graph.add_edge(u, v)
        graph.add_edge(v, u)
    space = cm.STPaths(graph, (0, 0), (2, 2))
    env = cm.BernoulliCosts(np.random.default_rng(0).uniform(size=space.d), seed=1)
    asked: dict[bool, list[np.ndarray]] = {True: [], False: []}
    query = LinearIndex.query

    def spy(self, t, sign, include=(), exclude=()):
        entry = query(self, t, sign, include, exclude)
        asked[self.outcome_bounds is not None].append(entry["weights"])
        return entry

    monkeypatch.setattr(LinearIndex, "query", spy)
    for bounds in (None, (-1, 0)):
        cm.simulate(cm.CUCB(space, 300, oracle="auto", C=0.5, outcome_bounds=bounds), env, 300, seed=2)
    assert len(asked[True]) >= 250 and max(float(w.max()) for w in asked[True]) <= 0.0
    assert max(float(w.max()) for w in asked[False]) > 0.0  # unclipped: longest-path queries


@pytest.mark.parametrize("bad", [(1, 0), (0, 0), [0], (0, 1, 2), "ab", 3, (float("nan"), 1), (True, 2), ("a", 1)])
@pytest.mark.parametrize("cls", PER_ARM)
def test_bad_bounds_are_refused_naming_the_key(cls, bad) -> None:
    with pytest.raises(ParameterError, match="outcome_bounds") as caught:
        cls(cm.Cardinality(4, 2), 10, oracle="enumerate", outcome_bounds=bad)
    assert caught.value.param == "outcome_bounds"


@pytest.mark.parametrize("cls", PER_ARM)
def test_a_saved_learner_keeps_its_bounds(cls, tmp_path) -> None:
    policy = cls(cm.Cardinality(4, 2), 50, oracle="enumerate", outcome_bounds=(0, 1))
    cm.simulate(policy, cm.BernoulliArms([0.2, 0.4, 0.6, 0.8], seed=0), 20, seed=1)
    policy.save(tmp_path / "learner")
    loaded = cm.load_policy(tmp_path / "learner")
    assert loaded.params == policy.params and loaded.index.outcome_bounds == (0.0, 1.0)


def test_problem_files_take_the_bounds_and_refuse_bad_ones_naming_the_key() -> None:
    problem = load_problem(PROBLEMS / "perrault_shortest_path.toml")
    space = problem.build_space()
    for spec in problem.policies:
        if spec.kind in ("CUCB", "CTS", "AROQ", "SROQ"):
            assert spec.constants["outcome_bounds"] == [-1.0, 0.0]
            assert problem.build_policy(spec.name, space).index.outcome_bounds == (-1.0, 0.0)
    data = load_problem(PROBLEMS / "baselines.toml").to_dict()
    data["policies"] = [{"name": "CUCB", "kind": "CUCB", "oracle": "auto", "constants": {"outcome_bounds": [1, 0]}}]
    with pytest.raises(ProblemError, match=r"policies\[0\].constants.outcome_bounds"):
        parse_problem(data, "bad.toml")
