"""CUCB, AROQ and SROQ against naive per-round implementations and the paper's bounds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.schedules import default_epochs, sroq_grid


def played_actions(result: cm.SimulationResult) -> np.ndarray:
    rows = [actions[np.arange(rounds) % len(actions)] for _, rounds, actions in result.info["trace"]]
    return np.concatenate(rows)


# ----------------------------------------------------------- naive references
def naive_ucb(oracle, counts, sums, log_term, C, include=(), exclude=()):
    """Brute UCB argmax: infinite index for unobserved arms, then the finite index (two plain queries)."""
    unseen = counts == 0
    unseen[list(exclude)] = False
    if unseen.any():
        action = oracle.argmax(unseen.astype(float), include=include, exclude=exclude)
        if action is None or action[unseen].any():
            return action
        exclude = tuple(exclude) + tuple(np.flatnonzero(unseen))
    n = np.maximum(counts, 1)
    weights = np.where(counts > 0, sums / n + np.sqrt(C * log_term / n), 0.0)
    return oracle.argmax(weights, include=include, exclude=exclude)


def naive_aroq(space, env, T, seed, C=1.5):
    """Algorithm 1 written round by round, straight from the paper."""
    oracle = cm.make_oracle(space, "enumerate")
    d, m = space.d, space.m
    rng = np.random.default_rng(seed)
    counts, sums = np.zeros(d, int), np.zeros(d)
    current, previous, epochs = np.zeros(d, int), np.zeros(d, int), np.ones(d, int)
    action, played = None, []
    for t in range(1, T + 1):
        update = False
        for i in range(d):
            if current[i] >= 1 + math.sqrt(T * m * previous[i] / d):
                epochs[i] += 1
                previous[i], current[i] = current[i], 0
                update = True
        if update or action is None:
            action = naive_ucb(oracle, counts, sums, math.log(t), C)
        y = env.sample(action, rng)
        counts += action
        sums[action] += y[action]
        current += action
        played.append(action)
    return np.array(played), epochs


def naive_sroq(space, env, T, seed, C=1.5, M=None):
    """Algorithm 2 written round by round, with its own grid."""
    oracle = cm.make_oracle(space, "enumerate")
    d = space.d
    M = M or max(2, math.ceil(math.log2(math.log2(T))))
    eta = T ** (1 / (2 - 2 ** (1 - M)))
    starts = [1]
    while len(starts) < M:
        starts.append(max(math.floor(eta * math.sqrt(starts[-1])), starts[-1] + 1))
    starts = [s for s in starts if s <= T]
    rng = np.random.default_rng(seed)
    counts, sums = np.zeros(d, int), np.zeros(d)
    active = np.ones(d, bool)
    played = []
    for k, start in enumerate(starts):
        end = starts[k + 1] - 1 if k + 1 < len(starts) else T
        eliminated = tuple(np.flatnonzero(~active))
        reps = {i: naive_ucb(oracle, counts, sums, math.log(T), C, (i,), eliminated) for i in np.flatnonzero(active)}
        n = np.maximum(counts, 1)
        radius = np.sqrt(C * math.log(T) / n)
        unseen = tuple(np.flatnonzero(counts == 0))
        lcb_action = oracle.argmax(np.where(counts > 0, sums / n - radius, 0.0), exclude=eliminated + unseen)
        lcb = -np.inf if lcb_action is None else float((sums / n - radius)[lcb_action].sum())
        cycle = []
        for i, rep in reps.items():
            if rep is None:
                active[i] = False
                continue
            ucb = np.inf if (counts[rep] == 0).any() else float((sums / n + radius)[rep].sum())
            if ucb >= lcb - 1e-9 * (1 + abs(lcb)):
                cycle.append(rep)
            else:
                active[i] = False
        for t in range(start, end + 1):
            action = cycle[(t - start) % len(cycle)]
            y = env.sample(action, rng)
            counts += action
            sums[action] += y[action]
            played.append(action)
    return np.array(played), len(starts)


SPACE = cm.Cardinality(7, 3).with_constraint([1, 1, 1, 0, 0, 0, 0], "<=", 2)
MEANS = np.array([0.75, 0.7, 0.72, 0.3, 0.5, 0.45, 0.6])


@pytest.mark.parametrize("seed", [0, 1])
def test_aroq_equals_algorithm_1_run_round_by_round(seed):
    env = cm.UniformNoise(MEANS, width=0.5)
    T = 3000
    policy = cm.AROQ(SPACE, T, oracle="enumerate")
    result = cm.simulate(policy, env, seed=seed, trace=True)
    expected, epochs = naive_aroq(SPACE, env, T, seed)
    assert np.array_equal(played_actions(result), expected)
    assert np.array_equal(policy.epochs, epochs)
    # stretches are the holds: as many as oracle consultations
    assert result.stretches == policy.updates


@pytest.mark.parametrize(("seed", "M"), [(0, None), (1, 4)])
def test_sroq_equals_algorithm_2_run_round_by_round(seed, M):
    env = cm.BernoulliArms(MEANS)
    T = 5000
    policy = cm.SROQ(SPACE, T, oracle="enumerate", M=M)
    result = cm.simulate(policy, env, seed=seed, trace=True)
    expected, epochs = naive_sroq(SPACE, env, T, seed, M=M)
    assert np.array_equal(played_actions(result), expected)
    assert result.rounds[-1] == epochs == len(policy.grid)


def test_cucb_asks_every_round_and_sees_every_arm_first():
    space = cm.Cardinality(9, 3, exact=True)
    env = cm.UniformNoise(np.linspace(0.1, 0.9, 9))
    result = cm.simulate(cm.CUCB(space, 60, oracle="enumerate"), env, seed=0, trace=True)
    actions = played_actions(result)
    # the unobserved arms have infinite indices: three disjoint actions cover all nine arms
    assert actions[:3].sum(axis=0).tolist() == [1] * 9
    assert result.stretches == 60
    # from round 4 on every arm is observed: one query per round (plus one extra per early round at most)
    assert 60 <= result.queries[-1] <= 60 + 3


@pytest.mark.parametrize("T", [10**3, 10**4, 10**5, 10**6])
def test_lemma_1_bounds_the_number_of_aroq_epochs(T):
    d, m = 12, 3
    space = cm.Cardinality(d, m)
    bound = d * math.log2(math.log2(T * m / d)) + 3 * d
    for seed in range(2):
        means = np.random.default_rng(seed).uniform(size=d)
        policy = cm.AROQ(space, T, oracle="enumerate")
        result = cm.simulate(policy, cm.UniformNoise(means), seed=seed, exact_stats=False)
        assert policy.epochs.sum() <= bound
        # one consultation at round 1, then one per round where some epoch ends
        assert policy.updates <= 1 + (policy.epochs - 1).sum()
        # a consultation asks at most two queries (the unobserved-arms query first)
        assert policy.updates <= result.queries[-1] <= 2 * policy.updates


@pytest.mark.parametrize("T", [10**3, 10**4, 10**5, 10**6])
def test_sroq_adaptivity_is_the_number_of_epochs(T):
    space = cm.Cardinality(10, 3)
    env = cm.UniformNoise(np.random.default_rng(T).uniform(size=10))
    policy = cm.SROQ(space, T, oracle="enumerate")
    result = cm.simulate(policy, env, seed=0, exact_stats=True)
    M = default_epochs(T)
    assert M == max(2, math.ceil(math.log2(math.log2(T))))
    assert len(policy.grid) == M == result.rounds[-1] == len(policy.history)
    # per epoch: one representative per surviving arm and one max-LCB query (more only with unobserved arms)
    survivors_before = [10] + [len(h["survivors"]) for h in policy.history[:-1]]
    assert result.queries[-1] >= sum(s + 1 for s in survivors_before)
    assert result.queries[-1] <= sum(2 * s + 1 for s in survivors_before)


def test_sroq_grid_follows_the_recursion():
    for T, M in [(10**4, 3), (10**6, 4), (10**8, 5), (50, 6)]:
        grid = sroq_grid(T, M)
        eta = T ** (1 / (2 - 2 ** (1 - M)))
        assert grid[0] == 1 and (np.diff(grid) > 0).all() and grid[-1] <= T
        for prev, nxt in itertools.pairwise(grid):
            assert nxt == max(math.floor(eta * math.sqrt(prev)), prev + 1)
        if T >= 10**4:
            assert len(grid) == M
            # the recursion's next point is T itself (eta^(2 - 2^(1-M)) = T)
            assert eta * math.sqrt(grid[-1]) == pytest.approx(T, rel=0.05)


@pytest.mark.parametrize("policy_class", [cm.AROQ, cm.SROQ])
def test_regret_is_sublinear_on_a_clear_gap_instance(policy_class):
    space = cm.Cardinality(8, 2)
    means = np.array([0.9, 0.85, 0.3, 0.35, 0.4, 0.2, 0.25, 0.1])
    ratios = []
    for T in (10**3, 10**4, 10**5, 10**6):
        runs = [
            cm.simulate(policy_class(space, T, oracle="enumerate"), cm.UniformNoise(means), seed=s).regret[-1]
            for s in range(2)
        ]
        ratios.append(np.mean(runs) / T)
    assert all(b < a for a, b in itertools.pairwise(ratios)), ratios
    assert ratios[-1] < 0.2 * ratios[0]


def test_cucb_regret_per_round_falls():
    space = cm.Cardinality(6, 2)
    means = np.array([0.9, 0.8, 0.2, 0.3, 0.1, 0.25])
    env = cm.BernoulliArms(means)
    result = cm.simulate(cm.CUCB(space, 2000, oracle="enumerate"), env, seed=0, record=[200, 2000])
    per_round = result.regret / result.t
    assert per_round[-1] < 0.5 * per_round[0]


def test_alpha_regret_of_aroq_with_an_exact_oracle():
    env = cm.UniformNoise(MEANS)
    result = cm.simulate(cm.AROQ(SPACE, 2000, oracle="enumerate", alpha=0.8), env, seed=0)
    assert result.alpha == 0.8
    assert np.allclose(result.alpha_regret, result.regret - 0.2 * result.optimum * result.t)
    exact = cm.simulate(cm.AROQ(SPACE, 2000, oracle="enumerate"), env, seed=0)
    assert exact.alpha_regret is None and np.allclose(exact.regret, result.regret)


class HalfOracle(cm.Oracle):
    """A 1/2-approximate oracle: the best single arm the exact answer holds (weights >= 0)."""

    name = "half"

    def __init__(self, space):
        super().__init__(space)
        self.exact = cm.make_oracle(space, "enumerate")

    def _linear(self, query):
        r = query.restrictions
        best = self.exact.argmax(query.weights, r.include, r.exclude, r.forbid_pairs)
        if best is None or r.include or best.sum() <= 1:
            return best
        keep = np.flatnonzero(best)[np.argmax(query.weights[best])]
        single = np.zeros(self.d, bool)
        single[keep] = True
        return single


def test_aroq_with_an_approximate_oracle_has_sublinear_alpha_regret():
    space = cm.Cardinality(6, 2)
    means = np.array([0.9, 0.8, 0.3, 0.35, 0.2, 0.1])
    ratios = []
    for T in (10**3, 10**5):
        oracle = HalfOracle(space)
        result = cm.simulate(cm.AROQ(space, T, oracle=oracle, alpha=0.5), cm.UniformNoise(means), seed=0)
        assert result.queries[-1] == oracle.ledger.queries
        ratios.append(result.alpha_regret[-1] / T)
    # the single best arm is worth 0.9 >= alpha * 1.7: alpha-regret per round goes to <= 0
    assert ratios[1] < ratios[0] and ratios[1] < 0.01


def test_arms_in_no_action_cost_no_extra_queries():
    # arms 2 and 3 are in no action: unobservable forever, found once and not asked about again
    space = cm.ExplicitActions(np.array([[1, 0, 0, 0, 1], [0, 1, 0, 0, 1], [1, 1, 0, 0, 0]]))
    env = cm.UniformNoise([0.9, 0.2, 0.5, 0.5, 0.6])
    result = cm.simulate(cm.CUCB(space, 200, oracle="enumerate"), env, seed=0, trace=True)
    assert result.queries[-1] <= 200 + 3
    best = (played_actions(result)[-100:] == [True, False, False, False, True]).all(axis=1)
    assert best.mean() > 0.7
