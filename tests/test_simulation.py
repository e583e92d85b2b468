"""The runner: exact regret curves, ledger curves, bulk play, validation, cost."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.simulation import record_points

SPACE = cm.Cardinality(6, 2)
MEANS = np.array([0.9, 0.3, 0.8, 0.5, 0.2, 0.65])
OPT = 0.9 + 0.8


def played_actions(result: cm.SimulationResult) -> np.ndarray:
    rows = [actions[np.arange(rounds) % len(actions)] for _, rounds, actions in result.info["trace"]]
    return np.concatenate(rows)


@pytest.mark.parametrize("policy_class", [cm.AROQ, cm.SROQ, cm.CUCB])
def test_regret_at_every_round_is_exact(policy_class):
    T = 700
    env = cm.UniformNoise(MEANS)
    every = np.arange(1, T + 1)
    result = cm.simulate(policy_class(SPACE, T, oracle="enumerate"), env, seed=0, record=every, trace=True)
    assert result.t.tolist() == list(range(1, T + 1))
    actions = played_actions(result)
    truth = np.cumsum(OPT - actions.astype(float) @ MEANS)
    assert np.allclose(result.regret, truth, rtol=1e-12, atol=1e-9)
    assert result.optimum == pytest.approx(OPT)


def test_regret_inside_long_holds_matches_the_round_by_round_curve():
    T = 3000
    env = cm.BernoulliArms(MEANS)
    points = np.unique(np.random.default_rng(0).integers(1, T, 300))
    bulk = cm.simulate(cm.AROQ(SPACE, T, oracle="enumerate"), env, seed=4, record=points)
    single = cm.simulate(cm.AROQ(SPACE, T, oracle="enumerate"), env, seed=4, record=points, bulk=False)
    assert bulk.stretches < T // 50 and single.stretches == T
    assert np.array_equal(bulk.t, single.t)
    assert np.allclose(bulk.regret, single.regret, rtol=1e-12, atol=1e-8)
    assert np.array_equal(bulk.queries, single.queries) and np.array_equal(bulk.rounds, single.rounds)


def test_record_points_are_log_spaced_and_end_at_T():
    pts = record_points(10**8)
    assert pts[0] == 1 and pts[-1] == 10**8 and 90 <= len(pts) <= 101
    ratios = pts[1:] / pts[:-1]
    assert (ratios[10:] == pytest.approx(ratios[-1], rel=0.05)) if len(ratios) > 10 else True
    assert record_points(3).tolist() == [1, 2, 3]
    assert record_points(50, 1).tolist() == [50]


def test_result_fields_and_to_dict():
    env = cm.UniformNoise(MEANS)
    result = cm.simulate(cm.SROQ(SPACE, 5000, oracle="enumerate"), env, seed=2)
    for name in ("t", "regret", "queries", "rounds", "runtime", "oracle_runtime"):
        assert len(getattr(result, name)) == len(result.t)
    assert result.policy == "SROQ" and result.T == 5000 and result.seed == 2
    assert result.wall_seconds >= result.runtime[-1] - 1e-9 >= 0
    assert result.oracle_seconds == pytest.approx(result.oracle_runtime[-1])
    data = json.loads(json.dumps(result.to_dict()))
    assert data["regret"][-1] == pytest.approx(result.regret[-1]) and data["t"][-1] == 5000


def test_horizon_defaults_to_the_policy_and_can_be_shorter():
    env = cm.UniformNoise(MEANS)
    policy = cm.AROQ(SPACE, 1000, oracle="enumerate")
    assert cm.simulate(policy, env).t[-1] == 1000
    assert cm.simulate(policy, env, 300).t[-1] == 300


def test_progress_is_reported_up_to_T():
    seen = []
    cm.simulate(cm.SROQ(SPACE, 2000, oracle="enumerate"), cm.UniformNoise(MEANS), progress=lambda t, T: seen.append(t))
    assert seen == sorted(seen) and seen[-1] == 2000


def test_given_optimum_is_used():
    env = cm.UniformNoise(MEANS)
    result = cm.simulate(cm.AROQ(SPACE, 100, oracle="enumerate"), env, optimum=(None, OPT + 1.0))
    base = cm.simulate(cm.AROQ(SPACE, 100, oracle="enumerate"), env)
    assert np.allclose(result.regret, base.regret + result.t)


def test_exact_statistics_give_a_comparable_run():
    env = cm.BernoulliArms(MEANS)
    T = 10**5
    stream = [cm.simulate(cm.AROQ(SPACE, T, oracle="enumerate"), env, seed=s).regret[-1] for s in range(3)]
    exact = [
        cm.simulate(cm.AROQ(SPACE, T, oracle="enumerate"), env, seed=s, exact_stats=True).regret[-1] for s in range(3)
    ]
    assert 0.2 < np.mean(exact) / np.mean(stream) < 5


def test_cost_follows_oracle_calls_not_the_horizon():
    # SROQ: one stretch per epoch, whatever T
    start = time.perf_counter()
    result = cm.simulate(cm.SROQ(SPACE, 10**8, oracle="enumerate"), cm.BernoulliArms(MEANS), exact_stats=True)
    assert time.perf_counter() - start < 10
    assert result.stretches == result.rounds[-1] == 5 and result.t[-1] == 10**8
    # AROQ: one stretch per oracle consultation
    policy = cm.AROQ(SPACE, 10**6, oracle="enumerate")
    result = cm.simulate(policy, cm.UniformNoise(MEANS))
    assert result.stretches == policy.updates < 200


@pytest.mark.slow
def test_aroq_and_sroq_play_1e8_rounds_in_reasonable_time():
    env = cm.UniformNoise(MEANS)
    for policy_class in (cm.AROQ, cm.SROQ):
        start = time.perf_counter()
        result = cm.simulate(policy_class(SPACE, 10**8, oracle="enumerate"), env)
        assert time.perf_counter() - start < 60
        assert result.regret[-1] / 10**8 < 0.01


BAD = [
    (lambda: cm.simulate(cm.AROQ(SPACE, 10, oracle="enumerate"), cm.UniformNoise(MEANS), 11), "exceeds"),
    (lambda: cm.simulate(cm.AROQ(SPACE, 10, oracle="enumerate"), cm.UniformNoise(MEANS), 0), "T must"),
    (lambda: cm.simulate(cm.AROQ(SPACE, 10, oracle="enumerate"), cm.UniformNoise(MEANS[:4])), "d=4"),
    (lambda: cm.simulate("AROQ", cm.UniformNoise(MEANS)), "policy"),
    (lambda: cm.simulate(cm.AROQ(SPACE, 10, oracle="enumerate"), MEANS), "env"),
    (lambda: cm.simulate(cm.AROQ(SPACE, 10, oracle="enumerate"), cm.UniformNoise(MEANS), record=[0, 5]), "record"),
    (lambda: cm.simulate(cm.AROQ(SPACE, 10, oracle="enumerate"), cm.UniformNoise(MEANS), record=0), "points"),
]


@pytest.mark.parametrize(("run", "message"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_raises_value_error(run, message):
    with pytest.raises(ValueError, match=message):
        run()
