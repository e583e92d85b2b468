"""Replay against logs: per-arm replay equals simulate on the same outcomes; exact-match replay by Li et al."""

from __future__ import annotations

import numpy as np
import pytest
from logged_synthetic import setting

import cmab_milp as cm
from cmab_milp.environments.base import Environment, FeedbackStats


class TableOutcomes(Environment):
    """Round ``t`` (counted from the first round played) sees row ``t`` of a fixed outcome table.

    An environment for tests only: ``simulate`` on it plays exactly the outcomes a full-information log of
    the same table holds.
    """

    def __init__(self, outcomes: np.ndarray, means: np.ndarray):
        super().__init__(outcomes.shape[1], None)
        self.table = outcomes
        self._means = np.asarray(means, float)
        self.played = 0

    def observe(self, actions, rounds, rng=None, needs=("sum",), exact_stats=False):
        acts = np.atleast_2d(np.asarray(actions, bool))
        sequence = acts[np.arange(rounds) % len(acts)]
        block = self.table[self.played : self.played + rounds]
        self.played += rounds
        return FeedbackStats.of_rounds(sequence, block, needs)

    def _base_draws(self, rng, size):
        raise AssertionError("not drawn")

    def _outcomes(self, arms, draws):
        raise AssertionError("not drawn")


def full_information_log(space, outcomes):
    rounds, arms = np.nonzero(np.ones_like(outcomes, dtype=bool))
    return cm.LoggedFeedback(space, rounds, arms, outcomes[rounds, arms], full_information=True)


@pytest.mark.parametrize("space_name", ["cardinality", "matching", "paths"])
@pytest.mark.parametrize("policy_class", [cm.CUCB, cm.SROQ])
def test_per_arm_replay_of_a_full_information_log_equals_simulate_on_the_same_outcomes(space_name, policy_class):
    st = setting(space_name, "uniform")
    rng = np.random.default_rng(1)
    T = 400
    outcomes = (rng.random((T, st.space.d)) < st.means).astype(float)
    log = full_information_log(st.space, outcomes)

    simulated = cm.simulate(policy_class(st.space, T, oracle="highs"), TableOutcomes(outcomes, st.means), T, trace=True)
    replayed = cm.replay(policy_class(st.space, T, oracle="highs"), log, means=st.means, trace=True)

    actions = np.concatenate([a[np.arange(steps) % len(a)] for _, steps, a in simulated.info["trace"]])
    assert np.array_equal(actions, np.array([a for _, a in replayed.info["trace"]]))
    points = np.searchsorted(simulated.t, replayed.t)  # replay records at its own steps; compare where both do
    assert replayed.accepted == T == replayed.logged_rounds and replayed.mode.startswith("per-arm")
    assert np.array_equal(replayed.t, simulated.t[points])
    np.testing.assert_allclose(replayed.regret, simulated.regret[points], rtol=1e-12, atol=1e-9)
    assert np.array_equal(replayed.queries, simulated.queries[points])
    assert np.array_equal(replayed.rounds, simulated.rounds[points])
    assert replayed.optimum == pytest.approx(simulated.optimum)


def test_exact_match_replay_accepts_the_rounds_whose_logged_action_the_policy_chose():
    st = setting("matching", "uniform")
    log, _ = st.draw(3000, 0)
    policy = cm.CUCB(st.space, None, oracle="enumerate")
    result = cm.replay(policy, log, trace=True)
    # Li et al.: under uniform logging over k actions, each round is accepted with probability 1/k
    k = len(st.actions)
    expected, sd = log.n / k, np.sqrt(log.n * (1 / k) * (1 - 1 / k))
    assert abs(result.accepted - expected) < 4 * sd
    assert result.acceptance == result.accepted / log.n and result.t[-1] == result.accepted
    # an independent recount: walk the log with a fresh policy through select/observe on accepted rounds only
    fresh = cm.CUCB(st.space, None, oracle="enumerate")
    kept, queries = [], 0
    for t in range(log.n):
        if np.array_equal(fresh.act(), log.action(t)):
            action = fresh.select()
            fresh.observe(action, log.outcomes(t))
            kept.append(action)
            queries = fresh.oracle.ledger.queries  # as simulate counts: the queries behind the rounds played
    assert np.array_equal(np.array(kept), np.array([a for _, a in result.info["trace"]]))
    assert result.queries[-1] == queries
    # the mean reward per accepted round is the logged reward of those rounds
    assert result.mean_reward == pytest.approx(result.reward[-1] / result.accepted)


def test_a_known_horizon_stops_the_replay_and_cts_is_seeded():
    st = setting("cardinality", "uniform")
    _, outcomes = st.draw(100, 0)
    full = full_information_log(st.space, outcomes)
    assert cm.replay(cm.CUCB(st.space, 30, oracle="enumerate"), full).accepted == 30
    a = cm.replay(cm.CTS(st.space, None, oracle="enumerate"), full, seed=3)
    b = cm.replay(cm.CTS(st.space, None, oracle="enumerate"), full, seed=3)
    assert np.array_equal(a.regret, b.regret)


def test_replay_refusals():
    st = setting("cardinality", "uniform")
    log, _ = st.draw(50, 0)
    with pytest.raises(ValueError, match="d=6 arms but the policy's space has d=3"):
        cm.replay(cm.CUCB(cm.Cardinality(3, 1), None, oracle="enumerate"), log)
    with pytest.raises(ValueError, match="means must have shape"):
        cm.replay(cm.CUCB(st.space, None, oracle="enumerate"), log, means=[0.5])
    sparse = cm.LoggedFeedback(cm.Cardinality(3, 1), [0, 1], [0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"never includes arms \[2\]"):
        cm.replay(cm.CUCB(cm.Cardinality(3, 1), None, oracle="enumerate"), sparse)


def test_logged_environment_means_and_outcomes_follow_the_log():
    st = setting("cardinality", "nonuniform")
    log, _ = st.draw(4000, 0)
    env = cm.LoggedEnvironment(log, seed=0)
    np.testing.assert_allclose(env.means, log.arm_means())
    # outcomes are the arm's logged values, at their logged frequencies
    stats = env.observe(np.ones((1, st.space.d), bool)[:, :] & st.actions[:1], 20000, needs=("sum", "hist"))
    arm = int(np.flatnonzero(st.actions[0])[0])
    assert set(env.support.tolist()) == {0.0, 1.0}
    assert stats.sum[arm] / 20000 == pytest.approx(env.means[arm], abs=4 * 0.5 / np.sqrt(20000))
    _, value = env.optimal(st.space, "enumerate")
    assert value == pytest.approx(np.sort(env.means)[-3:].sum())
    # the same seed, the same outcomes; policies run on it as on any environment
    r1 = cm.simulate(cm.CUCB(st.space, 500, oracle="enumerate"), cm.LoggedEnvironment(log), 500, seed=4)
    r2 = cm.simulate(cm.CUCB(st.space, 500, oracle="enumerate"), cm.LoggedEnvironment(log), 500, seed=4)
    assert np.array_equal(r1.regret, r2.regret)


def test_logged_environment_weights_by_inverse_inclusion_and_needs_a_prior_for_unseen_arms():
    space = cm.Cardinality(3, 1)
    # arm 0 seen twice: outcome 1 with inclusion 0.5 (weight 2), outcome 0 with inclusion 0.25 (weight 4)
    log = cm.LoggedFeedback(space, [0, 1, 2], [0, 0, 1], [1.0, 0.0, 0.5], inclusion=[0.5, 0.25, 0.5])
    with pytest.raises(ValueError, match=r"never includes arms \[2\]: give prior="):
        cm.LoggedEnvironment(log)
    env = cm.LoggedEnvironment(log, prior=0.2, seed=0)
    np.testing.assert_allclose(env.means, [1 / 3, 0.5, 0.2])
    draws = np.array([env.sample(np.array([True, False, False]))[0] for _ in range(3000)])
    assert set(draws.tolist()) == {0.0, 1.0} and abs(draws.mean() - 1 / 3) < 4 * np.sqrt(2 / 9 / 3000)


def test_exact_match_replay_stops_when_the_policy_wants_an_action_the_log_never_plays():
    space = cm.ExplicitActions([[1, 1, 0, 0], [0, 0, 1, 1]])
    log = cm.LoggedFeedback(space, [0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    means = [0.5, 0.5, 0.9, 0.9]
    # CUCB first tries an action of unobserved arms; once {0, 1} is observed it wants {2, 3}, which no round
    # holds: nothing can ever be accepted again
    result = cm.replay(cm.CUCB(space, None, oracle="enumerate"), log, means=means)
    assert result.accepted == 1 and "chose [2, 3], an action the log never plays" in result.stopped
    only_the_other = cm.LoggedFeedback(space, [0, 0], [2, 3], [1.0, 0.0])  # the first choice is never logged
    with pytest.raises(ValueError, match=r"CUCB chose \[0, 1\], an action the log never plays"):
        cm.replay(cm.CUCB(space, None, oracle="enumerate"), only_the_other, means=means)
