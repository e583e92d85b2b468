"""CTS: posteriors against closed forms, the Bernoulli trick, seeding, saved learners, regret, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.environments.base import FeedbackStats
from cmab_milp.policies.thompson import PosteriorIndex, outcome_coins

SPACE = cm.Cardinality(6, 2)
MEANS = np.array([0.1, 0.2, 0.3, 0.4, 0.8, 0.9])


def test_beta_posterior_counts_successes_of_binary_outcomes_exactly() -> None:
    """0/1 outcomes: the Bernoulli trick keeps them, so alpha = 1 + ones, beta = 1 + zeros."""
    policy = cm.CTS(SPACE, 400, oracle="enumerate", seed=0)
    env = cm.BernoulliArms(MEANS, seed=3)
    rng = np.random.default_rng(3)
    ones, plays = np.zeros(6), np.zeros(6)
    for _ in range(300):
        a = policy.select()
        y = env.sample(a, rng)
        ones += np.where(a, y, 0.0)
        plays += a
        policy.observe(a, y)
    alpha, beta = policy.index.posterior()
    assert np.array_equal(alpha, 1 + ones) and np.array_equal(beta, 1 + plays - ones)


def test_the_bernoulli_trick_counts_y_as_a_success_with_probability_y() -> None:
    """Fractional outcomes: successes ~ Binomial(n, y); the count is within 4 standard deviations of n y."""
    index = PosteriorIndex(1, stream=np.array([7, 11], np.uint64))
    policy = cm.CTS(cm.Cardinality(1, 1), None, oracle="enumerate", seed=5)
    n, y = 20000, 0.3
    for _ in range(n):
        a = policy.select()
        policy.observe(a, [y])
    successes = policy.index.successes[0]
    assert abs(successes - n * y) < 4 * math.sqrt(n * y * (1 - y))
    assert policy.index.counts[0] == n and index.successes[0] == 0


def test_beta_samples_match_the_posterior_moments() -> None:
    index = PosteriorIndex(2, stream=np.array([1, 2], np.uint64))
    index.add_successes(np.array([7.0, 0.0]))
    index.update(FeedbackStats(10, np.array([10, 3]), sum=np.array([7.0, 0.0])))
    draws = np.array([index.sample() for _ in range(20000)])
    a, b = np.array([8.0, 1.0]), np.array([4.0, 4.0])
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert np.allclose(draws.mean(axis=0), mean, atol=4 * np.sqrt(var / 20000))
    assert np.allclose(draws.var(axis=0), var, rtol=0.05)


def test_gaussian_posterior_is_the_flat_prior_closed_form() -> None:
    index = PosteriorIndex(3, prior="gaussian", sigma=0.5, stream=np.array([3, 4], np.uint64))
    index.update(FeedbackStats(4, np.array([4, 1, 0]), sum=np.array([2.0, -1.5, 0.0])))
    mean, std = index.posterior()
    assert mean.tolist() == [0.5, -1.5, 0.0]
    assert std[:2].tolist() == [0.25, 0.5] and std[2] == np.inf
    draws = np.array([index.sample() for _ in range(20000)])
    assert np.allclose(draws[:, :2].mean(axis=0), [0.5, -1.5], atol=4 * 0.5 / math.sqrt(20000))
    assert np.allclose(draws[:, :2].std(axis=0), [0.25, 0.5], rtol=0.05)


def test_gaussian_prior_plays_unobserved_arms_first_beta_prior_samples_them() -> None:
    gaussian = cm.CTS(SPACE, 10, oracle="enumerate", prior="gaussian", seed=1)
    first = [gaussian.select() for _ in range(3)]
    assert np.array(first).sum(axis=0).tolist() == [1] * 6  # d / m rounds cover every arm once
    beta = cm.CTS(SPACE, 10, oracle="enumerate", seed=1)
    beta.select()
    assert beta.oracle.ledger.queries == 1  # the prior sample only: no query for unobserved arms


def test_late_outcomes_in_any_order_give_the_same_posterior() -> None:
    def run(order):
        policy = cm.CTS(SPACE, 50, oracle="enumerate", seed=9)
        picks = [policy.select() for _ in range(6)]
        outcomes = [np.where(a, 0.37 + 0.1 * k, np.nan) for k, a in enumerate(picks)]
        for k in order:
            policy.observe(picks[k], outcomes[k])
        return policy.index.successes.copy(), policy.select()

    (s1, a1), (s2, a2) = run(range(6)), run([3, 5, 0, 4, 2, 1])
    assert np.array_equal(s1, s2) and np.array_equal(a1, a2)


def test_coins_are_a_fixed_function_of_stream_round_and_arm() -> None:
    stream = np.array([123, 456], np.uint64)
    u = outcome_coins(stream, 17, range(1000))
    assert np.array_equal(u, outcome_coins(stream, 17, range(1000))) and ((0 <= u) & (u < 1)).all()
    assert not np.array_equal(u, outcome_coins(stream, 18, range(1000)))
    assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / 1000)


def test_same_seed_same_run_and_simulate_seeds_give_independent_streams() -> None:
    env = cm.UniformNoise(MEANS, seed=0)
    runs = {s: cm.simulate(cm.CTS(SPACE, 300, oracle="enumerate"), env, seed=s, trace=True) for s in (1, 1, 2)}
    again = cm.simulate(cm.CTS(SPACE, 300, oracle="enumerate"), env, seed=1, trace=True)
    assert np.array_equal(runs[1].regret, again.regret)
    fixed = [cm.simulate(cm.CTS(SPACE, 300, oracle="enumerate", seed=4), env, seed=1).regret[-1] for _ in range(2)]
    assert fixed[0] == fixed[1]
    assert runs[1].regret[-1] != runs[2].regret[-1]


def test_a_saved_cts_continues_identically(tmp_path) -> None:
    env = cm.UniformNoise(MEANS, seed=0)
    rng = np.random.default_rng(2)
    policy = cm.CTS(SPACE, None, oracle="enumerate")  # unseeded: fresh entropy, saved with the learner
    held = []
    for _ in range(40):
        a = policy.select()
        held.append((a, env.sample(a, rng)))
        if len(held) > 2:
            policy.observe(*held.pop(0))
    policy.save(tmp_path / "cts.npz")
    restored = cm.load_policy(tmp_path / "cts.npz")
    assert np.array_equal(restored.index.stream, policy.index.stream)
    for p in (policy, restored):
        queue, r = list(held), np.random.default_rng(5)
        actions = []
        for _ in range(60):
            a = p.select()
            actions.append(a)
            queue.append((a, env.sample(a, r)))
            p.observe(*queue.pop(0))
        p.actions = np.array(actions)
    assert np.array_equal(policy.actions, restored.actions)
    assert np.array_equal(policy.index.successes, restored.index.successes)


def test_one_query_per_round() -> None:
    policy = cm.CTS(SPACE, 200, oracle="enumerate", seed=0)
    result = cm.simulate(policy, cm.UniformNoise(MEANS, seed=0), seed=0)
    assert result.queries[-1] == 200 == result.rounds[-1]


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"prior": "poisson"}, "prior"),
        ({"prior": None}, "prior"),
        ({"sigma": -1.0}, "sigma"),
        ({"sigma": "x"}, "sigma"),
        ({"seed": -3}, "seed"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_bad_input_names_the_key(kwargs, key) -> None:
    with pytest.raises(ValueError, match=key):
        cm.CTS(SPACE, 10, oracle="enumerate", **kwargs)


def test_beta_prior_refuses_outcomes_outside_the_unit_interval() -> None:
    policy = cm.CTS(SPACE, 10, oracle="enumerate", seed=0)
    a = policy.select()
    with pytest.raises(ValueError, match="prior='beta' needs outcomes in \\[0, 1\\]"):
        policy.observe(a, np.where(a, 1.5, np.nan))
    assert policy.pending == 1 and policy.index.counts.sum() == 0  # nothing changed
    with pytest.raises(ValueError, match="prior='gaussian'"):
        cm.simulate(cm.CTS(SPACE, 50, oracle="enumerate"), cm.GaussianNoise(MEANS, np.eye(6), seed=0), seed=0)


def _regret(cls, env, T, seeds, **kw) -> float:
    return float(np.mean([cm.simulate(cls(env_space(env), T, **kw), env, seed=s).regret[-1] for s in seeds]))


def env_space(env) -> cm.ActionSpace:
    return cm.Cardinality(env.d, 3)


def test_regret_is_sublinear_and_below_cucbs() -> None:
    """Wang and Chen (2018), Section 6: CTS's regret is far below CUCB's on Bernoulli arms."""
    env = cm.BernoulliArms(np.linspace(0.1, 0.9, 10), seed=0)
    seeds = (0, 1, 2)
    early = _regret(cm.CTS, env, 1000, seeds, oracle="auto")
    late = _regret(cm.CTS, env, 4000, seeds, oracle="auto")
    cucb = _regret(cm.CUCB, env, 4000, seeds, oracle="auto")
    assert late < 2.0 * early  # 4x the rounds, under 2x the regret
    assert late < 0.5 * cucb


def _reference_cts(policy: cm.CTS, rounds: int, outcomes: np.random.Generator) -> list[np.ndarray]:
    """CTS written out round by round (the Beta draws and coins every version used) beside ``policy``.

    Per round: ``2 d`` standard gammas with shapes ``[1 + S, 1 + n - S]`` from the learner's generator,
    ``theta = G_a / (G_a + G_b)``, the top ``m`` arms of ``theta`` (``Cardinality``), then each played
    arm's outcome ``y`` counts as a success when its coin ``outcome_coins(stream, t, [i])`` is below ``y``.
    Returns the actions where the reference and the policy agree; the test asserts they always do.
    """
    d, m = policy.d, policy.space.m
    stream = policy.index.stream
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(w) for w in stream])))
    successes, counts = np.zeros(d), np.zeros(d)
    agreed = []
    for t in range(1, rounds + 1):
        g = rng.standard_gamma(np.concatenate([1.0 + successes, 1.0 + counts - successes]))
        theta = g[:d] / (g[:d] + g[d:])
        expected = np.zeros(d, bool)
        expected[np.argsort(-theta, kind="stable")[:m]] = True
        action = policy.select()
        assert np.array_equal(action, expected), t
        y = np.where(action, outcomes.uniform(size=d), np.nan)
        for i in np.flatnonzero(action).tolist():
            successes[i] += float(outcome_coins(stream, t, [i])[0] < y[i])
            counts[i] += 1
        policy.observe(action, y)
        agreed.append(action)
    assert np.array_equal(policy.index.successes, successes)
    return agreed


def test_cts_draws_are_the_reference_draws_round_by_round() -> None:
    """The vectorised sampling and cached coins give the very draws of the round-by-round definition."""
    policy = cm.CTS(cm.Cardinality(12, 4), None, oracle="enumerate", seed=21)
    assert len(_reference_cts(policy, 400, np.random.default_rng(8))) == 400


def test_coin_rows_are_outcome_coins_for_any_stream_and_round() -> None:
    from cmab_milp.policies.thompson import coin_rows

    for words in ([0, 0], [2**64 - 1, 2**63 + 5], [123, 456]):
        stream = np.array(words, np.uint64)
        rounds = np.array([0, 1, 17, 10**6, 2**40])
        rows = coin_rows(stream, rounds, 30)
        for row, t in zip(rows, rounds.tolist(), strict=True):
            assert np.array_equal(row, outcome_coins(stream, t, range(30)))


def test_late_outcomes_of_rounds_before_the_cached_coins_use_their_own_round() -> None:
    """A cached block of coins starts at a later round: an earlier round's outcome still gets its own coins."""
    index = PosteriorIndex(5, stream=np.array([3, 9], np.uint64))
    late = index.coin_row(500)  # caches rounds 500 onwards
    assert np.array_equal(index.coin_row(7), outcome_coins(index.stream, 7, range(5)))
    assert np.array_equal(late, outcome_coins(index.stream, 500, range(5)))
