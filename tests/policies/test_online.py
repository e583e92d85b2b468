"""Online use: select / observe, late and batched feedback, and what observe refuses.

The replay of simulated runs through select/observe, for all nine policies,
lives in ``test_policy_conformance.py``; here: the semantics of outstanding
selections (plays drive the schedule, observations drive the estimates), the
order-independence of batched feedback, mappings keyed by arm labels, and one
table of bad input per entry point.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm

SPACE = cm.Cardinality(5, 2)
MEANS = np.array([0.1, 0.9, 0.3, 0.8, 0.5])


def outcomes_for(action: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli outcomes (exact sums, so the order of feedback cannot change a float)."""
    return np.where(action, (rng.random(len(action)) < MEANS).astype(float), np.nan)


def test_schedule_counts_plays_and_estimates_count_observations():
    policy = cm.AROQ(SPACE, 1000, oracle="enumerate")
    actions = [policy.select() for _ in range(7)]
    assert policy.t == 8 and policy.pending == 7 and policy.observed_rounds == 0
    # the epoch counters saw the 7 plays; the index has seen nothing yet
    assert policy.current.sum() + policy.previous.sum() == sum(int(a.sum()) for a in actions)
    assert policy.index.counts.sum() == 0
    rng = np.random.default_rng(0)
    for a in actions[::-1]:
        policy.observe(a, outcomes_for(a, rng))
    assert policy.pending == 0 and policy.observed_rounds == 7
    assert np.array_equal(policy.index.counts, np.sum(actions, axis=0))


def test_batched_feedback_in_any_order_gives_the_same_learner():
    rng = np.random.default_rng(1)
    first, second = cm.AROQ(SPACE, 2000, oracle="enumerate"), cm.AROQ(SPACE, 2000, oracle="enumerate")
    for _ in range(60):
        batch = [(a, outcomes_for(a, rng)) for a in [first.select() for _ in range(5)]]
        assert all(np.array_equal(a, second.select()) for a, _ in batch)
        for a, y in batch:
            first.observe(a, y)
        for k in rng.permutation(len(batch)):
            second.observe(*batch[k])
    assert np.array_equal(first.index.sums, second.index.sums)
    assert np.array_equal(first.select(), second.select())


@pytest.mark.parametrize("delay", [0, 25, 400])
def test_delays_keep_the_sroq_adaptivity(delay):
    """SROQ's grid counts plays, so late feedback leaves its adaptivity at one round per epoch."""
    T = 3000
    policy = cm.SROQ(SPACE, T, oracle="enumerate")
    rng, queue = np.random.default_rng(2), []
    for _ in range(T):
        a = policy.select()
        queue.append((a, outcomes_for(a, rng)))
        if len(queue) > delay:
            policy.observe(*queue.pop(0))
    assert policy.oracle.ledger.rounds == len(policy.grid) == policy.epoch
    assert policy.pending == min(delay, T)


def test_a_long_delay_only_slows_learning():
    """With feedback 200 rounds late AROQ still finds the best action (arms 1 and 3)."""
    T = 4000
    policy = cm.AROQ(SPACE, T, oracle="enumerate")
    rng, queue, last = np.random.default_rng(3), [], []
    for t in range(T):
        a = policy.select()
        queue.append((a, outcomes_for(a, rng)))
        if len(queue) > 200:
            policy.observe(*queue.pop(0))
        if t >= T - 100:
            last.append(np.flatnonzero(a).tolist())
    assert last.count([1, 3]) >= 90


def test_rewards_as_a_mapping_by_index_or_edge_label():
    graph = nx.Graph([("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")])
    space = cm.STPaths(graph, "a", "d")
    by_label, by_index = cm.CUCB(space, 50, oracle="enumerate"), cm.CUCB(space, 50, oracle="enumerate")
    for k in range(10):
        a = by_label.select()
        assert np.array_equal(a, by_index.select())
        chosen = np.flatnonzero(a)
        by_label.observe(a, {space.arms[i]: 0.1 * k + 0.01 * i for i in chosen})
        by_index.observe(a, {int(i): 0.1 * k + 0.01 * i for i in chosen})
    assert np.array_equal(by_label.index.sums, by_index.index.sums)


def general_policy(**kw):
    return cm.AROQGR(SPACE, 100, oracle="enumerate", reward="max", support=[0.0, 0.5, 1.0], **kw)


def bad_observations():
    """(policy factory, what to observe given the selected action ``a``, message fragment)."""
    linear = lambda: cm.AROQ(SPACE, 100, oracle="enumerate")  # noqa: E731
    played = lambda a: np.where(a, 0.5, np.nan)  # noqa: E731
    first = lambda a: int(np.flatnonzero(a)[0])  # noqa: E731
    other = lambda a: np.roll(a, 1) if not np.array_equal(np.roll(a, 1), a) else ~a  # noqa: E731
    return [
        (linear, lambda a: (other(a), played(other(a))), "not an outstanding selection"),
        (linear, lambda a: (a, np.where(a, np.nan, 0.5)), "missing outcomes"),
        (linear, lambda a: (a, np.where(a, np.inf, np.nan)), "finite"),
        (linear, lambda a: (a, np.full(3, 0.5)), "shape"),
        (linear, lambda a: (a, "high"), "array of numbers"),
        (linear, lambda a: (a[:3], played(a)), "action must have shape"),
        (linear, lambda a: (a.astype(int) * 2, played(a)), "0/1"),
        (linear, lambda a: (a, {first(a): 0.5}), "missing outcomes"),
        (
            linear,
            lambda a: (a, {**{int(i): 0.5 for i in np.flatnonzero(a)}, int(np.flatnonzero(~a)[0]): 1.0}),
            "did not play",
        ),
        (linear, lambda a: (a, {"nope": 0.5}), "neither an index"),
        (linear, lambda a: (a, {int(i): "x" for i in np.flatnonzero(a)}), "must be a number"),
        (general_policy, lambda a: (a, np.where(a, 0.7, np.nan)), "not in the policy's support"),
        (
            lambda: cm.AROQGR(SPACE, 100, oracle="enumerate", reward="max", discretise=4),
            lambda a: (a, np.where(a, 1.5, np.nan)),
            "lie in \\[0, 1\\]",
        ),
    ]


@pytest.mark.parametrize("make, bad, fragment", bad_observations())
def test_bad_observations_are_refused_and_change_nothing(make, bad, fragment):
    policy = make()
    a = policy.select()
    before = (policy.index.counts.copy(), policy.pending, policy.observed_rounds)
    with pytest.raises(ValueError, match=fragment):
        policy.observe(*bad(a))
    assert np.array_equal(policy.index.counts, before[0]) and (policy.pending, policy.observed_rounds) == before[1:]


def test_an_action_is_observed_once():
    policy = cm.SROQ(SPACE, 100, oracle="enumerate")
    a = policy.select()
    policy.observe(a, np.where(a, 1.0, np.nan))
    with pytest.raises(ValueError, match="0 outstanding"):
        policy.observe(a, np.where(a, 1.0, np.nan))


def test_support_outcomes_within_rounding_are_accepted():
    policy = general_policy()
    a = policy.select()
    policy.observe(a, np.where(a, 0.5 + 1e-12, np.nan))
    assert policy.index.hist[a].sum() == a.sum() and (policy.index.hist[a][:, 1] == 1).all()


def test_of_rounds_matches_the_environment_statistics():
    """FeedbackStats.of_rounds gives exactly what env.observe gives for the same draws."""
    env = cm.GaussianNoise(MEANS, 0.05 * np.eye(5), seed=0)
    actions = np.array([[1, 1, 0, 0, 0], [0, 0, 1, 0, 1], [1, 0, 0, 1, 0]], bool)
    needs = ("sum", "outer", "pairs", "samples")
    stats = env.observe(actions, 7, np.random.default_rng(4), needs)
    rng = np.random.default_rng(4)
    rows = actions[np.arange(7) % 3]
    outcomes = np.array([env.sample(a, rng) for a in rows])
    mine = cm.environments.base.FeedbackStats.of_rounds(rows, outcomes, needs)
    for name in ("counts", "pairs"):
        assert np.array_equal(getattr(mine, name), getattr(stats, name))
    for name in ("sum", "outer"):
        assert np.allclose(getattr(mine, name), getattr(stats, name), rtol=1e-12, atol=1e-12)
    assert np.array_equal(np.isnan(mine.samples), np.isnan(stats.samples))


@pytest.mark.parametrize("cls", [cm.CUCB, cm.AROQ, cm.AROQCov, cm.SDCB])
def test_every_arm_is_tried_once_before_any_is_tried_again_blind(cls):
    """With no feedback yet, the first selections cover the arms (in-flight arms come last among the unobserved)."""
    kw = {"support": [0.0, 1.0]} if cls is cm.SDCB else {"warmup_cycles": 0} if cls is cm.AROQCov else {}
    policy = cls(cm.Cardinality(7, 2), 1000, oracle="enumerate", **kw)
    covered = np.sum([policy.select() for _ in range(4)], axis=0)
    assert covered.min() == 1 and covered.max() <= 2  # 7 arms in 4 actions of at most 2 arms
    assert policy.pending == 4 and policy.index.counts.sum() == 0
