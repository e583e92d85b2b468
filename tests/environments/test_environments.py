"""Environments: exact truth, one feedback stream, bulk statistics, validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.environments.base import FeedbackStats

D = 5
MEANS = np.array([0.05, 0.3, 0.5, 0.72, 0.97])
COV = np.array(
    [
        [1.0, 0.5, 0.0, 0.0, 0.2],
        [0.5, 1.0, 0.3, 0.0, 0.0],
        [0.0, 0.3, 1.0, -0.4, 0.0],
        [0.0, 0.0, -0.4, 1.0, 0.1],
        [0.2, 0.0, 0.0, 0.1, 0.5],
    ]
)


def make_envs(seed: int = 0) -> list[cm.environments.Environment]:
    return [
        cm.UniformNoise(MEANS, width=0.5, seed=seed),
        cm.BernoulliArms(MEANS, seed=seed),
        cm.GaussianNoise(MEANS, COV, seed=seed),
    ]


ENV_IDS = ["uniform", "bernoulli", "gaussian"]
CYCLE = np.array([[1, 1, 0, 0, 1], [0, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 0, 0, 1, 0]], bool)


@pytest.mark.parametrize("index", range(3), ids=ENV_IDS)
def test_expected_rewards_are_the_sums_of_means(index):
    env = make_envs()[index]
    actions = cm.Cardinality(D, 3).enumerate()
    looped = np.array([env.expected_reward(a) for a in actions])
    assert np.allclose(looped, [MEANS[a].sum() for a in actions], atol=1e-12)
    assert np.allclose(env.expected_rewards(actions), looped, atol=1e-12)


@pytest.mark.parametrize("index", range(3), ids=ENV_IDS)
def test_optimal_matches_brute_force(index):
    env = make_envs()[index]
    space = cm.Cardinality(D, 2).with_constraint([1, 0, 0, 0, 1], "<=", 1)
    actions = space.enumerate()
    best = max(MEANS[a].sum() for a in actions)
    for backend in ("highs", "enumerate"):
        action, value = env.optimal(space, oracle=backend)
        assert space.contains(action)
        assert value == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("index", range(3), ids=ENV_IDS)
def test_bulk_statistics_equal_the_round_by_round_stream(index):
    env = make_envs()[index]
    rounds = 1003  # not a multiple of the cycle length
    stats = env.observe(CYCLE, rounds, np.random.default_rng(7), needs=("sum", "outer", "pairs", "samples"))
    rng = np.random.default_rng(7)
    rows = np.array([env.sample(CYCLE[j % len(CYCLE)], rng) for j in range(rounds)])
    observed = ~np.isnan(rows)
    y = np.nan_to_num(rows)
    assert stats.rounds == rounds
    assert stats.counts.tolist() == observed.sum(axis=0).tolist()
    assert np.allclose(stats.sum, y.sum(axis=0), rtol=1e-12, atol=1e-9)
    assert np.allclose(stats.outer, y.T @ y, rtol=1e-12, atol=1e-9)
    assert (stats.pairs == observed.T.astype(int) @ observed.astype(int)).all()
    # same draws; the Gaussian's matrix product may differ in the last bits between block shapes
    assert np.allclose(stats.samples, rows, rtol=1e-13, atol=1e-13, equal_nan=True)


@pytest.mark.parametrize("index", range(3), ids=ENV_IDS)
@pytest.mark.parametrize("cycle", [CYCLE[:1], CYCLE], ids=["held", "cycle"])
def test_sum_only_fast_paths_follow_the_same_stream(index, cycle, monkeypatch):
    monkeypatch.setattr("cmab_milp.environments.base.CHUNK_DRAWS", 50)  # several chunks
    env = make_envs()[index]
    bulk_rng, rng = np.random.default_rng(3), np.random.default_rng(3)
    stats = env.observe(cycle, 777, bulk_rng, needs=("sum",))
    rows = np.array([env.sample(cycle[j % len(cycle)], rng) for j in range(777)])
    assert np.allclose(stats.sum, np.nansum(rows, axis=0), rtol=1e-12, atol=1e-9)
    assert stats.counts.tolist() == (~np.isnan(rows)).sum(axis=0).tolist()
    assert bulk_rng.random() == rng.random()  # both streams stopped at the same place


def test_chunked_draws_equal_one_draw(monkeypatch):
    env = cm.UniformNoise(MEANS, seed=0)
    whole = env.observe(CYCLE, 5000, np.random.default_rng(1), needs=("sum", "samples"))
    monkeypatch.setattr("cmab_milp.environments.base.CHUNK_DRAWS", 7)
    chunked = env.observe(CYCLE, 5000, np.random.default_rng(1), needs=("sum", "samples"))
    assert np.array_equal(whole.samples, chunked.samples, equal_nan=True)
    assert np.allclose(whole.sum, chunked.sum, rtol=1e-12)


def test_uniform_outcomes_stay_in_range_with_the_exact_mean():
    env = cm.UniformNoise(MEANS, width=0.5, seed=0)
    draws = env.observe(np.ones(D, bool), 20000, needs=("samples",)).samples
    half = np.minimum(0.5, np.minimum(MEANS, 1 - MEANS))
    assert (draws >= MEANS - half - 1e-12).all() and (draws <= MEANS + half + 1e-12).all()
    assert (draws >= 0).all() and (draws <= 1).all()
    # mean within 5 standard errors of a uniform of half-width w (variance w^2/3)
    assert (np.abs(draws.mean(axis=0) - MEANS) <= 5 * half / np.sqrt(3 * 20000) + 1e-12).all()


def test_bernoulli_histogram_counts_zeros_and_ones():
    env = cm.BernoulliArms(MEANS, seed=0)
    stats = env.observe(CYCLE, 999, np.random.default_rng(2), needs=("sum", "hist"))
    assert (stats.hist.sum(axis=1) == stats.counts).all()
    assert np.allclose(stats.hist[:, 1], stats.sum)


@pytest.mark.parametrize("needs", [("sum",), ("sum", "hist")])
def test_bernoulli_exact_statistics_have_binomial_moments(needs):
    env = cm.BernoulliArms(MEANS, seed=0)
    k = 400
    sums = np.array(
        [env.observe(CYCLE[0], k, np.random.default_rng(s), needs, exact_stats=True).sum for s in range(300)]
    )
    arms = np.flatnonzero(CYCLE[0])
    p = MEANS[arms]
    assert (np.abs(sums[:, arms].mean(axis=0) - k * p) <= 5 * np.sqrt(k * p * (1 - p) / 300)).all()
    assert np.allclose(sums[:, arms].var(axis=0), k * p * (1 - p), rtol=0.3)
    assert (sums[:, ~CYCLE[0]] == 0).all()


def test_gaussian_exact_statistics_have_the_right_moments():
    env = cm.GaussianNoise(MEANS, COV, seed=0)
    k, reps = 50, 400
    action = np.array([1, 1, 1, 0, 0], bool)
    arms = np.flatnonzero(action)
    sums, outers = [], []
    for s in range(reps):
        st = env.observe(action, k, np.random.default_rng(s), ("sum", "outer"), exact_stats=True)
        sums.append(st.sum[arms])
        outers.append(st.outer[np.ix_(arms, arms)])
    sums = np.array(sums)
    sub = COV[np.ix_(arms, arms)]
    assert np.allclose(sums.mean(axis=0), k * MEANS[arms], atol=5 * np.sqrt(k * np.diag(sub).max() / reps))
    assert np.allclose(np.cov(sums.T), k * sub, atol=0.25 * k)
    expected_outer = k * (sub + np.outer(MEANS[arms], MEANS[arms]))
    assert np.allclose(np.mean(outers, axis=0), expected_outer, atol=0.1 * k)


def test_feedback_stats_add_merges_consecutive_stretches():
    env = cm.UniformNoise(MEANS, seed=0)
    rng = np.random.default_rng(4)
    merged = FeedbackStats.empty(D, ("sum", "samples"))
    for rounds in (3, 0, 10):
        merged.add(env.observe(CYCLE[:2], rounds, rng, ("sum", "samples")))
    whole = env.observe(CYCLE[:2], 13, np.random.default_rng(4), ("sum", "samples"))
    # the second stretch restarts the cycle, so compare round counts and totals per round
    assert merged.rounds == 13 and merged.samples.shape == whole.samples.shape
    assert np.allclose(merged.sum, np.nansum(merged.samples, axis=0))


def test_same_seed_same_draws_and_own_generator():
    a, b = cm.UniformNoise(MEANS, seed=11), cm.UniformNoise(MEANS, seed=11)
    assert np.array_equal(a.sample(CYCLE[0]), b.sample(CYCLE[0]), equal_nan=True)
    assert not np.array_equal(a.sample(CYCLE[0]), cm.UniformNoise(MEANS, seed=12).sample(CYCLE[0]), equal_nan=True)


BAD = [
    (lambda: cm.UniformNoise([0.2, 1.2]), "[0, 1]"),
    (lambda: cm.UniformNoise([0.2, -0.1]), "[0, 1]"),
    (lambda: cm.UniformNoise([[0.2, 0.3]]), "1-D"),
    (lambda: cm.UniformNoise([]), "non-empty"),
    (lambda: cm.UniformNoise([0.2, np.nan]), "finite"),
    (lambda: cm.UniformNoise([0.2], width=-1), "width"),
    (lambda: cm.BernoulliArms([0.5, 2.0]), "[0, 1]"),
    (lambda: cm.GaussianNoise([0.0, 1.0], np.eye(3)), "shape"),
    (lambda: cm.GaussianNoise([0.0, 1.0], [[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
    (lambda: cm.GaussianNoise([0.0, 1.0], [[1.0, 2.0], [2.0, 1.0]]), "semidefinite"),
    (lambda: cm.GaussianNoise([0.0, 1.0], [[1.0, np.inf], [np.inf, 1.0]]), "finite"),
    (lambda: cm.UniformNoise(MEANS).observe(CYCLE[:, :3], 5), "shape"),
    (lambda: cm.UniformNoise(MEANS).observe(CYCLE, -1), "rounds"),
    (lambda: cm.UniformNoise(MEANS).observe(CYCLE * 2, 5), "0/1"),
    (lambda: cm.UniformNoise(MEANS).observe(CYCLE, 5, needs=("moments",)), "unknown statistics"),
    (lambda: cm.UniformNoise(MEANS).observe(CYCLE, 5, needs=("hist",)), "samples"),
    (lambda: cm.UniformNoise(MEANS).optimal(cm.Cardinality(3, 1)), "d=3"),
    (lambda: cm.UniformNoise(MEANS).sample([1, 0]), "shape"),
]


@pytest.mark.parametrize(("build", "message"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_raises_value_error(build, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build()


def test_sample_marks_unchosen_arms_nan():
    env = cm.BernoulliArms(MEANS, seed=0)
    for action in itertools.islice(cm.Cardinality(D, 2).enumerate(), 8):
        y = env.sample(action)
        assert np.isnan(y[~action]).all() and np.isin(y[action], (0.0, 1.0)).all()
