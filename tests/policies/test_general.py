"""SDCB, AROQ-GR (Algorithm 6) and SROQ-GR (Algorithm 7) against the paper's bounds.

Lemma 1 (epochs of the adaptive schedule), SROQ-GR's adaptivity = its number of
epochs = Theta(log log T), sublinear regret, Algorithm 8 on continuous arms,
Algorithm 5's alpha with the greedy oracle, determinism and bad input. The
shared conformance kit (tests/policies/test_policy_conformance.py) also runs all three.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.environments.continuous import BetaArms
from cmab_milp.policies.schedules import default_epochs

VALUES = [0.2, 0.4, 0.6, 0.8, 1.0]


def figure4_env(d=5, seed=0, reward="sqrt_sum"):
    """Figure 4: one value per arm with mass 0.99, the other four share 0.01."""
    rng = np.random.default_rng(seed)
    probs = np.full((d, 5), 0.01 / 4)
    probs[np.arange(d), rng.integers(0, 5, size=d)] = 0.99
    return cm.DiscreteArms(VALUES, probs, reward=reward, seed=seed)


def gap_env():
    """Arms 0 and 1 sit near 1, the rest near 0.2: a clear optimum for sqrt_sum and max."""
    probs = np.array([[0.0, 0.0, 0.0, 0.3, 0.7]] * 2 + [[0.6, 0.3, 0.1, 0.0, 0.0]] * 4)
    return cm.DiscreteArms(VALUES, probs, reward="sqrt_sum", seed=0)


@pytest.mark.parametrize("T", [10**3, 10**4, 10**5])
def test_lemma_1_bounds_the_epochs_of_aroq_gr(T):
    env = figure4_env()
    space = cm.Cardinality(5, 2)
    d, m = 5, 2
    policy = cm.AROQGR(space, T, oracle="enumerate", support=env.support)
    result = cm.simulate(policy, env, T, seed=1)
    bound = d * math.log2(math.log2(T * m / d)) + 3 * d
    assert policy.epochs.sum() <= bound
    # one oracle consultation per update; an update costs one or two queries (unobserved arms first)
    assert policy.updates <= 1 + (policy.epochs - 1).sum()
    assert result.rounds[-1] <= result.queries[-1] <= 2 * policy.updates


@pytest.mark.parametrize("T", [10**3, 10**4, 10**5, 10**6])
def test_sroq_gr_adaptivity_is_its_number_of_epochs(T):
    env = figure4_env()
    policy = cm.SROQGR(cm.Cardinality(5, 2), T, oracle="enumerate", support=env.support)
    result = cm.simulate(policy, env, T, seed=2, exact_stats=True)
    M = default_epochs(T)
    assert M == max(2, math.ceil(math.log2(math.log2(T))))
    assert result.rounds[-1] == len(policy.grid) == M  # Theta(log log T): one batch per epoch
    # per epoch: a representative per surviving arm (plus its unobserved-arm query) and the max-LCB query
    assert result.queries[-1] <= M * (2 * 5 + 1)


@pytest.mark.parametrize(("policy_class", "T"), [(cm.SDCB, 250), (cm.AROQGR, 1000), (cm.SROQGR, 1000)])
def test_regret_is_sublinear_on_a_clear_gap_instance(policy_class, T):
    """Eight times the horizon, less than half the regret per round (sqrt(T) scaling predicts 0.35)."""
    env = gap_env()
    space = cm.Cardinality(6, 2)

    def rate(horizon):
        runs = [cm.simulate(policy_class(space, horizon, oracle="enumerate", support=env.support), env, seed=s)
                for s in range(2)]  # fmt: skip
        return np.mean([r.regret[-1] for r in runs]) / horizon

    short, long = rate(T), rate(8 * T)
    assert long < 0.5 * short
    worst = env.optimal(space)[1] - env.expected_rewards(space.enumerate()).min()
    assert long < 0.05 * worst


def test_sdcb_asks_the_oracle_every_round():
    env = figure4_env()
    result = cm.simulate(cm.SDCB(cm.Cardinality(5, 2), 200, oracle="enumerate", support=env.support), env, seed=0)
    assert result.rounds[-1] == 200 and 200 <= result.queries[-1] <= 205


def test_same_seed_same_run_and_other_seed_other_feedback():
    env = gap_env()
    build = lambda: cm.AROQGR(cm.Cardinality(6, 2), 3000, oracle="enumerate", support=env.support)  # noqa: E731
    policies = [build(), build(), build()]
    a, b = cm.simulate(policies[0], env, seed=4), cm.simulate(policies[1], env, seed=4)
    cm.simulate(policies[2], env, seed=5)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.queries, b.queries)
    assert np.array_equal(policies[0].index.hist, policies[1].index.hist)
    assert not np.array_equal(policies[0].index.hist, policies[2].index.hist)


def test_algorithm_8_learns_continuous_beta_arms():
    env = BetaArms([8.0, 6.0, 1.0, 1.5, 1.0], [1.0, 1.5, 6.0, 6.0, 8.0], reward="sqrt_sum", seed=0)
    space = cm.Cardinality(5, 2)
    T = 8_000
    policy = cm.AROQGR(space, T, oracle="enumerate", discretise=True)
    assert len(policy.index.grid) == math.ceil(math.sqrt(2 * T))
    result = cm.simulate(policy, env, T, seed=0)
    best, _ = env.optimal(space)
    assert np.flatnonzero(best).tolist() == [0, 1]
    assert result.regret[-1] < 0.02 * T
    assert result.queries[-1] < 60


def test_greedy_oracle_gives_algorithm_5_with_alpha_regret():
    rng = np.random.default_rng(0)
    d = 12
    probs = rng.dirichlet(np.full(5, 0.3), size=d)
    env = cm.DiscreteArms(VALUES, probs, reward="max", seed=0)
    space = cm.Cardinality(d, 3)
    policy = cm.AROQGR(space, 5_000, oracle="greedy", reward="max", support=env.support)
    assert policy.alpha == pytest.approx(1 - 1 / math.e)
    result = cm.simulate(policy, env, seed=0)
    assert result.alpha_regret is not None
    assert result.alpha_regret[-1] < result.regret[-1]
    assert result.regret[-1] < 0.05 * 5_000


def test_sroq_gr_eliminates_arms_of_a_clear_gap_instance():
    env = gap_env()
    policy = cm.SROQGR(cm.Cardinality(6, 2), 10**5, oracle="enumerate", support=env.support)
    cm.simulate(policy, env, seed=0, exact_stats=True)
    assert policy.active[:2].all() and policy.active.sum() < 6


def test_branch_and_bound_policy_on_a_space_too_large_to_enumerate():
    rng = np.random.default_rng(1)
    d = 40
    probs = np.full((d, 5), 0.01 / 4)
    probs[np.arange(d), rng.integers(0, 5, size=d)] = 0.99
    env = cm.DiscreteArms(VALUES, probs, reward="max", seed=0)
    space = cm.Cardinality(d, 4)
    policy = cm.SROQGR(space, 2000, oracle="branch_bound", reward="max", support=env.support)
    result = cm.simulate(policy, env, seed=0, optimum=env.optimal(space, "branch_bound"))
    assert result.rounds[-1] == len(policy.grid)


BAD = [
    ({"support": VALUES, "discretise": True}, "not both"),
    ({"discretise": 0}, "discretise"),
    ({"discretise": "yes"}, "discretise"),
    ({"support": [0.2, 0.2]}, "distinct"),
    ({"support": VALUES, "reward": "cube"}, "unknown reward"),
    ({"support": VALUES, "reward": lambda a, y: -y[:, a].sum(axis=1)}, "not monotone"),
    ({"support": VALUES, "oracle": "greedy", "reward": "threshold:1"}, "submodular"),
    ({"support": VALUES, "C": -1.0}, "C"),
    ({"upper": 0.0}, "upper"),
    ({"upper": 1.5}, "upper"),
    ({"upper": "top"}, "upper"),
    ({"upper": 1 / np.pi}, "simple fraction"),
    ({"support": VALUES, "upper": 0.5}, "upper=0.5"),
    ({"pessimistic": "low"}, "pessimistic"),
    ({"pessimistic": None}, "pessimistic"),
    (
        {
            "oracle": cm.nonlinear.DistributionOracle(
                cm.Cardinality(5, 2), "sqrt_sum", cm.nonlinear.OutcomeGrid([1.0])
            ),
            "reward": "sqrt_sum",
        },
        "learns its support",
    ),
    ({"reward": cm.nonlinear.CallableReward(lambda a, y: 2 * y[:, a].sum(axis=1), lipschitz=1.5)}, "Lipschitz"),
]


@pytest.mark.parametrize("policy_class", [cm.SDCB, cm.AROQGR, cm.SROQGR])
@pytest.mark.parametrize(("kwargs", "message"), BAD)
def test_general_policies_refuse_bad_input(policy_class, kwargs, message):
    kwargs = {"oracle": "enumerate", **kwargs}
    with pytest.raises(ValueError, match=message):
        policy_class(cm.Cardinality(5, 2), 100, **kwargs)


def test_a_support_that_does_not_match_the_environment_is_refused_at_the_first_feedback():
    env = figure4_env()
    policy = cm.AROQGR(cm.Cardinality(5, 2), 100, oracle="enumerate", support=[0.0, 1.0])
    with pytest.raises(ValueError, match=r"support=env\.support"):
        cm.simulate(policy, env, seed=0)


FAMILY = [
    "space",
    "T",
    "oracle",
    "reward",
    "support",
    "discretise",
    "method",
    "C",
    "upper",
    "pessimistic",
    "sample_budget",
]


@pytest.mark.parametrize(
    ("policy_class", "own", "refused"),
    [(cm.SDCB, [], "alpha"), (cm.AROQGR, ["alpha"], "M"), (cm.SROQGR, ["M"], "alpha")],
)
def test_each_general_policy_states_its_parameters_and_refuses_others(policy_class, own, refused):
    import inspect

    params = inspect.signature(policy_class).parameters
    assert list(params) == FAMILY + own  # what the problem-file loader reads
    assert params["reward"].default == "sqrt_sum" and params["pessimistic"].default == "lowest"
    with pytest.raises(
        TypeError, match=rf"{policy_class.__name__}.__init__\(\) got an unexpected keyword.*'{refused}'"
    ):
        policy_class(cm.Cardinality(3, 1), 10, oracle="enumerate", support=VALUES, **{refused: 1})

    class Mine(policy_class):  # a subclass with its own constructor shows that one
        def __init__(self, space, T, *, extra=0, **kwargs):
            super().__init__(space, T, **kwargs)

    assert list(inspect.signature(Mine).parameters) == ["space", "T", "extra", "kwargs"]
    assert Mine(cm.Cardinality(3, 1), 10, oracle="enumerate", support=VALUES).params["support"] == VALUES
