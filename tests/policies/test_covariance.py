"""Covariance-adaptive family: estimators, correlated environments, OLS-UCB-C, AROQ-C, SROQ-C.

Truth comes from numpy on the same samples, the paper's definitions written
out round by round, the paper's bounds (Lemma 5, Theorem 4's adaptivity) and
brute-force optima.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.environments.correlated import CopulaNoise, PaperGaussianNoise, paper_covariance
from cmab_milp.policies.cov_estimators import CovarianceEstimator
from cmab_milp.policies.covariance import OLSUCBC, AROQCov, CovarianceIndex, SROQCov, all_pairs, pair_cover
from cmab_milp.policies.schedules import default_epochs

NEEDS = ("sum", "outer", "pairs")


# ----------------------------------------------------------------- estimators
def _random_history(seed: int, d: int = 5, rounds: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    actions = rng.random((rounds, d)) < 0.5
    actions[:3] = True  # every pair observed
    outcomes = np.where(actions, rng.random((rounds, d)), np.nan)
    return actions, outcomes


def _numpy_truth(actions: np.ndarray, outcomes: np.ndarray) -> dict[str, np.ndarray]:
    """Means, second moments and covariance of the paper, from the raw samples."""
    d = actions.shape[1]
    n = actions.sum(axis=0)
    means = np.array([outcomes[actions[:, i], i].mean() for i in range(d)])
    second = np.empty((d, d))
    pairs = np.empty((d, d), int)
    for i in range(d):
        for j in range(d):
            both = actions[:, i] & actions[:, j]
            pairs[i, j] = both.sum()
            second[i, j] = np.mean(outcomes[both, i] * outcomes[both, j])
    return {"n": n, "pairs": pairs, "means": means, "second": second, "cov": second - np.outer(means, means)}


def test_estimators_match_numpy_on_the_same_samples():
    actions, outcomes = _random_history(0)
    est = CovarianceEstimator(actions.shape[1])
    for a, y in zip(actions, outcomes, strict=True):
        est.add(a, y)
    truth = _numpy_truth(actions, outcomes)
    assert est.counts.tolist() == truth["n"].tolist()
    assert est.pair_counts.tolist() == truth["pairs"].tolist()
    np.testing.assert_allclose(est.means(), truth["means"], rtol=1e-12)
    np.testing.assert_allclose(est.second_moments(), truth["second"], rtol=1e-12)
    np.testing.assert_allclose(est.covariance(), truth["cov"], atol=1e-12)


def test_estimator_of_a_fixed_action_is_numpys_biased_covariance():
    rng = np.random.default_rng(1)
    y = rng.random((200, 3))
    est = CovarianceEstimator(3)
    for row in y:
        est.add(np.ones(3, bool), row)
    np.testing.assert_allclose(est.covariance(), np.cov(y.T, bias=True), atol=1e-12)


def test_gram_matrix_matches_the_papers_definition_round_by_round():
    actions, outcomes = _random_history(2, d=4, rounds=40)
    actions[10:, 3] = False  # arm 3 rarely seen
    actions[5:8, 2] = False
    est = CovarianceEstimator(4)
    for a, y in zip(actions, outcomes, strict=True):
        est.add(a, y)
    h = 1.7
    truth = _numpy_truth(actions, np.where(actions, outcomes, np.nan))
    npair = truth["pairs"].astype(float)
    sigma_bar = truth["cov"] + 0.25 * (5 * h / np.sqrt(npair) + h * h / npair + 1 / npair**2)
    np.testing.assert_allclose(est.covariance_ucb(h), sigma_bar, rtol=1e-12)
    # G_bar = sum_s D_{a_s} Sigma_bar D_{a_s} + D_{Sigma_bar} D_n + I
    gram = sum(np.diag(a.astype(float)) @ sigma_bar @ np.diag(a.astype(float)) for a in actions)
    gram = gram + np.diag(np.diag(sigma_bar) * truth["n"]) + np.eye(4)
    np.testing.assert_allclose(est.gram_ucb(h), gram, rtol=1e-10)
    inv = np.diag(1.0 / truth["n"])
    np.testing.assert_allclose(est.index_matrix(h), inv @ gram @ inv, rtol=1e-10)


def test_unobserved_entries_are_zero_not_large_numbers():
    est = CovarianceEstimator(3)
    est.add(np.array([1, 0, 0], bool), np.array([0.5, np.nan, np.nan]))
    assert est.observed.tolist() == [True, False, False]
    assert np.isnan(est.covariance_ucb(1.0)[1, 2])
    matrix = est.index_matrix(1.0)
    assert np.isfinite(matrix).all() and (matrix[1:, :] == 0).all() and (matrix[:, 1:] == 0).all()


def test_bulk_stretch_equals_round_by_round():
    sigma = paper_covariance(4, seed=3, scale=0.1)
    action = np.array([1, 0, 1, 1], bool)
    bulk_env = cm.GaussianNoise([0.2, 0.4, 0.6, 0.8], sigma)
    stats = bulk_env.observe(action, 250, np.random.default_rng(7), NEEDS)
    bulk = CovarianceEstimator(4)
    bulk.add_stats(stats)
    held = CovarianceEstimator(4)
    held.add_bulk(action, stats.rounds, stats.sum, stats.outer)
    rng = np.random.default_rng(7)
    single = CovarianceEstimator(4)
    for _ in range(250):
        single.add(action, bulk_env.sample(action, rng))
    for other in (bulk, held):
        assert other.pair_counts.tolist() == single.pair_counts.tolist()
        np.testing.assert_allclose(other.sums, single.sums, rtol=1e-12)
        np.testing.assert_allclose(other.outer_sums, single.outer_sums, rtol=1e-12)
        np.testing.assert_allclose(other.index_matrix(2.0), single.index_matrix(2.0), rtol=1e-10)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: CovarianceEstimator(0), "d must be"),
        (lambda: CovarianceEstimator(2).covariance_ucb(-1.0), "h must be"),
        (lambda: CovarianceEstimator(2).add(np.array([1, 0], bool), np.array([np.nan, 0.0])), "finite"),
        (lambda: CovarianceEstimator(2).add_bulk(np.array([1, 0], bool), -1, np.zeros(2), np.zeros((2, 2))), "rounds"),
    ],
)
def test_estimator_rejects_bad_input(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()


# --------------------------------------------------------------- environments
def test_paper_covariance_normalisations():
    for normalise, check in [
        ("correlation", lambda s: np.allclose(np.diag(s), 2.0)),
        ("max", lambda s: math.isclose(s.max(), 2.0)),
        ("trace", lambda s: math.isclose(np.trace(s), 2.0 * 6)),
    ]:
        sigma = paper_covariance(6, seed=4, normalise=normalise, scale=2.0)
        assert check(sigma), normalise
        assert np.allclose(sigma, sigma.T) and np.linalg.eigvalsh(sigma).min() > 0
    np.testing.assert_array_equal(paper_covariance(5, seed=9), paper_covariance(5, seed=9))
    # it is A A^T + I up to a positive diagonal scaling
    a = np.random.default_rng(4).standard_normal((6, 6))
    raw = a @ a.T + np.eye(6)
    scaled = paper_covariance(6, seed=4)
    np.testing.assert_allclose(scaled, raw / np.sqrt(np.outer(np.diag(raw), np.diag(raw))), rtol=1e-12)


@pytest.mark.parametrize("marginal", ["uniform", "beta"])
def test_copula_outcomes_are_bounded_with_exact_means_and_covariance(marginal):
    means = np.array([0.15, 0.5, 0.8, 0.35])
    env = CopulaNoise(means, paper_covariance(4, seed=5), marginal=marginal, width=0.3, concentration=6.0)
    rounds = 40_000
    stats = env.observe(np.ones(4, bool), rounds, np.random.default_rng(0), ("sum", "outer", "samples"))
    assert np.nanmin(stats.samples) >= 0.0 and np.nanmax(stats.samples) <= 1.0
    true_cov = env.covariance()
    sd = np.sqrt(np.diag(true_cov))
    # sample means within 5 standard errors of the exact means
    assert (np.abs(stats.sum / rounds - means) < 5 * sd / math.sqrt(rounds)).all()
    empirical = np.cov(stats.samples.T, bias=True)
    np.testing.assert_allclose(empirical, true_cov, atol=2e-3)
    assert env.expected_reward([1, 0, 1, 0]) == pytest.approx(0.95)


def test_copula_with_identity_is_independent_uniform_noise():
    env = CopulaNoise([0.3, 0.7], None, marginal="uniform", width=0.2)
    np.testing.assert_allclose(env.covariance(), np.diag([0.2**2 / 3, 0.2**2 / 3]), atol=1e-15)
    samples = env.observe(np.ones(2, bool), 20_000, np.random.default_rng(1), ("samples",)).samples
    assert abs(np.corrcoef(samples.T)[0, 1]) < 0.03
    assert samples[:, 0].min() >= 0.1 and samples[:, 0].max() <= 0.5


def test_copula_bulk_equals_round_by_round():
    env = CopulaNoise([0.2, 0.6, 0.9], paper_covariance(3, seed=2), marginal="beta", concentration=8)
    action = np.array([1, 1, 0], bool)
    stats = env.observe(action, 30, np.random.default_rng(3), ("sum", "outer"))
    rng = np.random.default_rng(3)
    rows = np.array([env.sample(action, rng) for _ in range(30)])[:, :2]
    np.testing.assert_allclose(stats.sum[:2], rows.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats.outer[:2, :2], rows.T @ rows, rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"means": [0.2, 1.2]}, "means must lie"),
        ({"means": [0.0, 0.5], "marginal": "beta"}, "strictly inside"),
        ({"corr": [[1.0, 0.5], [0.5, 2.0]]}, "unit diagonal"),
        ({"corr": [[1.0, 0.9], [0.5, 1.0]]}, "symmetric"),
        ({"corr": [[1.0, 1.5], [1.5, 1.0]]}, "semidefinite"),
        ({"marginal": "gamma"}, "marginal must be"),
        ({"width": 0.7}, "width"),
        ({"concentration": 0}, "concentration"),
    ],
)
def test_copula_rejects_bad_input(kwargs, fragment):
    args = {"means": [0.2, 0.5], **kwargs}
    with pytest.raises(ValueError, match=fragment):
        CopulaNoise(**args)


@pytest.mark.parametrize(
    ("kwargs", "fragment"), [({"d": 0}, "d must be"), ({"normalise": "unit"}, "normalise"), ({"scale": 0}, "scale")]
)
def test_paper_covariance_rejects_bad_input(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        paper_covariance(**{"d": 3, **kwargs})


# -------------------------------------------------------------------- index
def test_index_values_are_the_norm_objective_and_the_oracle_maximises_them():
    space = cm.Cardinality(5, 2)
    env = CopulaNoise([0.1, 0.3, 0.5, 0.7, 0.9], paper_covariance(5, seed=1), width=0.1)
    index = CovarianceIndex(5)
    actions = space.enumerate()
    index.update(env.observe(actions, 200, np.random.default_rng(0), NEEDS))
    oracle = cm.make_oracle(space, "enumerate")
    for sign, values_of in ((1, index.upper_values), (-1, index.lower_values)):
        query = index.upper_query(500) if sign == 1 else index.lower_query(500)
        values = values_of(500, actions)
        mu, matrix = index.means, index.matrix(500)
        brute = [mu @ a + sign * index.f(500) * math.sqrt(max(a @ matrix @ a, 0.0)) for a in actions.astype(float)]
        np.testing.assert_allclose(values, brute, rtol=1e-12)
        answer = oracle.argmax_norm(query["mu"], query["M"], query["f"], query["sign"])
        assert values_of(500, answer[None])[0] == pytest.approx(values.max(), abs=1e-9)
    assert index.upper_values(500, np.ones((1, 5), bool))[0] > index.lower_values(500, np.ones((1, 5), bool))[0]


def test_radii_follow_the_documented_formulas():
    index = CovarianceIndex(4, C=2.0, f_scale=0.5, h_scale=3.0)
    t = 1000
    assert index.h(t) == pytest.approx(3.0 * math.sqrt(math.log(t) + math.log(4)))
    assert index.f(t) == pytest.approx(0.5 * math.sqrt(2 * (2.0 * math.log(t) + 4 * math.log(math.log(t)))))
    assert index.f(1) == 0.0


# ------------------------------------------------------------------ policies
def _instance(d: int = 6, m: int = 2, seed: int = 0):
    means = np.linspace(0.1, 0.9, d)
    env = CopulaNoise(means, paper_covariance(d, seed=seed), marginal="uniform", width=0.1)
    return cm.Cardinality(d, m), env


POLICIES = [
    pytest.param(OLSUCBC, {}, id="OLSUCBC"),
    pytest.param(AROQCov, {"warmup_cycles": 2}, id="AROQCov"),
    pytest.param(SROQCov, {}, id="SROQCov"),
]


@pytest.mark.parametrize(("cls", "kwargs"), POLICIES)
def test_policies_are_deterministic_feasible_and_bulk_equals_round_by_round(cls, kwargs):
    space, env = _instance()
    T = 200
    policy = cls(space, T, oracle="enumerate", **kwargs)
    bulk = cm.simulate(policy, env, T, seed=5)
    again = cm.simulate(policy.clone(), env, T, seed=5)
    rounds = cm.simulate(cls(space, T, oracle="enumerate", **kwargs), env, T, seed=5, bulk=False)
    np.testing.assert_array_equal(bulk.regret, again.regret)
    np.testing.assert_allclose(bulk.regret, rounds.regret, rtol=1e-12)
    np.testing.assert_array_equal(bulk.queries, rounds.queries)
    policy.reset()
    t = 1
    while t <= T:
        stretch = policy.plan()
        assert all(space.contains(a) for a in stretch.actions)
        n = min(stretch.length, T - t + 1)
        policy.update(n, env.observe(stretch.actions, n, np.random.default_rng(t), NEEDS))
        t += n


@pytest.mark.parametrize(("cls", "kwargs"), POLICIES)
def test_policies_reject_bad_constants(cls, kwargs):
    space, _ = _instance()
    for bad in ({"C": 0}, {"f_scale": -1}, {"h_scale": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            cls(space, 100, oracle="enumerate", **kwargs, **bad)


def test_warmup_validation():
    space, _ = _instance()
    with pytest.raises(ValueError, match="warmup_cycles"):
        AROQCov(space, 100, oracle="enumerate", warmup_cycles=-1)
    with pytest.raises(ValueError, match="pair_fraction"):
        SROQCov(space, 100, oracle="enumerate", pair_fraction=1.5)


def test_olsucbc_plays_unobserved_arms_first():
    space, env = _instance(d=7, m=3)
    policy = OLSUCBC(space, 50, oracle="enumerate")
    seen = np.zeros(7, bool)
    for _ in range(3):  # ceil(7 / 3) rounds observe every arm
        stretch = policy.plan()
        assert stretch.actions[0][~seen].sum() == min(3, (~seen).sum())
        seen |= stretch.actions[0]
        policy.update(1, env.observe(stretch.actions, 1, np.random.default_rng(0), NEEDS))
    assert seen.all()


def test_pair_cover_holds_every_feasible_pair():
    space = cm.Cardinality(5, 3).with_constraint([1, 1, 0, 0, 0], "<=", 1)  # arms 0 and 1 never together
    pairs, actions = pair_cover(CovarianceIndex(5), cm.make_oracle(space, "enumerate"))
    assert (0, 1) not in pairs and len(pairs) == len(all_pairs(5)) - 1
    for (i, j), a in zip(pairs, actions, strict=True):
        assert a[i] and a[j] and space.contains(a)


def test_aroqcov_warmup_plays_every_pair_then_respects_lemma_5():
    d, m, T = 6, 2, 20_000
    space, env = _instance(d, m)
    policy = AROQCov(space, T, oracle="enumerate", warmup_cycles=3)
    result = cm.simulate(policy, env, T, seed=1)
    assert policy.warmup_rounds == math.ceil(3 * d * (d + 1) / 2)
    bound = math.log2(T * m) + 2
    # Lemma 5: every pair's epoch counter, and the queries beyond the warm-up
    assert policy.epochs.max() <= bound
    assert result.queries[-1] - policy.warmup_queries <= d**2 * bound
    assert policy.updates <= policy.epochs.sum()  # each update closes at least one pair epoch
    assert result.queries[-1] < T / 20


def test_aroqcov_default_warmup_is_the_papers():
    policy = AROQCov(cm.Cardinality(3, 2), 10**6, oracle="enumerate")
    assert policy.warmup_rounds == math.ceil(3 * 4 / 2 * math.log(10**6) ** 3)
    assert AROQCov(cm.Cardinality(3, 2), 100, oracle="enumerate").warmup_rounds == 100  # capped at T


def test_sroqcov_adaptivity_is_log_log_T():
    d, m = 5, 2
    space = cm.Cardinality(d, m)
    env = cm.GaussianNoise(np.linspace(0.1, 0.9, d), 0.01 * np.eye(d))
    for T in (10**3, 10**5, 10**7):
        policy = SROQCov(space, T, oracle="enumerate")
        result = cm.simulate(policy, env, T, seed=0, exact_stats=True, record=3)
        epochs = len(policy.history)
        assert epochs == len(policy.grid) == default_epochs(T)  # M = max(2, ceil(log2 log2 T))
        # one warm-up batch, then one adaptivity round per epoch
        assert result.rounds[-1] == epochs + 1
        assert result.queries[-1] <= len(all_pairs(d)) + epochs * (d + d * (d - 1) // 2 + 2)


def test_sroqcov_never_eliminates_the_optimal_action_and_eliminates_others():
    d, m, T = 6, 2, 50_000
    space = cm.Cardinality(d, m)
    means = np.array([0.05, 0.1, 0.15, 0.2, 0.9, 0.95])
    env = CopulaNoise(means, paper_covariance(d, seed=3), width=0.05)
    policy = SROQCov(space, T, oracle="enumerate", pair_fraction=0.5)
    result = cm.simulate(policy, env, T, seed=2)
    best, _ = env.optimal(space, "enumerate")
    assert policy.active[best].all()
    assert (4, 5) in policy.active_pairs and (4, 5) not in policy.forbidden
    assert not policy.active.all()  # the test can fail: bad arms must go
    assert result.regret[-1] < 0.2 * T


@pytest.mark.parametrize(("cls", "kwargs"), POLICIES)
def test_regret_is_sublinear(cls, kwargs):
    space, env = _instance(d=5, m=2, seed=4)
    T = 2000 if cls is OLSUCBC else 40_000  # OLS-UCB-C asks the oracle every round
    result = cm.simulate(cls(space, T, oracle="enumerate", **kwargs), env, T, seed=3, record=[T // 10])
    early, late = result.regret[0] / (T // 10), result.regret[-1] / T
    assert late < 0.6 * early, (early, late)


def test_paper_gaussian_noise_and_copula_seed_use_the_papers_covariance():
    env = PaperGaussianNoise([0.1, 0.5, 0.9, 0.3], cov_seed=4, normalise="max", scale=0.25)
    np.testing.assert_allclose(env.cov, paper_covariance(4, seed=4, normalise="max", scale=0.25))
    copula = CopulaNoise([0.1, 0.5, 0.9, 0.3], corr_seed=4)
    np.testing.assert_allclose(copula.corr, paper_covariance(4, seed=4))
    with pytest.raises(ValueError, match="not both"):
        CopulaNoise([0.1, 0.5], np.eye(2), corr_seed=1)
    with pytest.raises(ValueError, match="cov_seed"):
        PaperGaussianNoise([0.1, 0.5], cov_seed=-1)


def _naive_index(samples: np.ndarray, t: int, d: int, C: float = 1.5) -> tuple[np.ndarray, np.ndarray, float]:
    """mu_hat, M and f_t of eq. (3) straight from the raw samples (NaN = arm not played)."""
    played = ~np.isnan(samples)
    y = np.nan_to_num(samples)
    n = played.sum(axis=0).astype(float)
    npair = played.T.astype(float) @ played.astype(float)
    mu = y.sum(axis=0) / n
    second = (y.T @ y) / np.where(npair > 0, npair, 1)
    h = math.sqrt(math.log(t) + math.log(d))
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma_bar = second - np.outer(mu, mu) + 0.25 * (5 * h / np.sqrt(npair) + h * h / npair + 1 / npair**2)
    gram = np.where(npair > 0, npair * sigma_bar, 0.0)
    gram[np.diag_indices(d)] = 2 * np.diag(gram) + 1
    matrix = gram / np.outer(n, n)
    log_t = math.log(t)
    f = math.sqrt(2 * (C * log_t + d * (math.log(log_t) if log_t > 1 else 0.0)))
    return mu, matrix, f


def test_aroqcov_equals_algorithm_3_run_round_by_round():
    d, m, T = 5, 2, 400
    space, env = _instance(d, m, seed=6)
    oracle = cm.make_oracle(space, "enumerate")
    _, cover = pair_cover(CovarianceIndex(d), oracle)
    warmup = math.ceil(2 * d * (d + 1) / 2)
    rng = np.random.default_rng(11)
    samples, played = [], []
    tau, previous, current = np.zeros((d, d), int), np.zeros((d, d), int), np.zeros((d, d), int)
    action = None
    for t in range(1, T + 1):
        update = False
        if t <= warmup:
            action = cover[(t - 1) % len(cover)]
        else:
            if t == warmup + 1:
                tau[:], previous, current, update = 1, current, np.zeros((d, d), int), True
            due = current >= 1 + 2 * previous
            if due.any():
                tau[due] += 1
                previous[due], current[due] = current[due], 0
                update = True
            if update:
                mu, matrix, f = _naive_index(np.array(samples), t, d)
                action = oracle.argmax_norm(mu, 0.5 * (matrix + matrix.T), f)
        samples.append(env.sample(action, rng))
        current += np.outer(action, action)
        played.append(action.copy())

    policy = AROQCov(space, T, oracle="enumerate", warmup_cycles=2)
    rng = np.random.default_rng(11)
    for t in range(1, T + 1):  # the policy played round by round, on the same stream
        action = policy.plan().actions[0]
        assert np.array_equal(action, played[t - 1]), f"round {t}"
        policy.update(1, env.observe(action, 1, rng, NEEDS))
    np.testing.assert_array_equal(policy.epochs, tau)


def _naive_algorithm_4(space, env, T, fraction, seed):
    """Algorithm 4 written out round by round from raw samples (warm-up, then the grid epochs)."""
    d = space.d
    oracle = cm.make_oracle(space, "enumerate")
    _, cover = pair_cover(CovarianceIndex(d), oracle)
    warmup = d * (d + 1) // 2
    grid = [warmup + 1] + [int(g) for g in cm.policies.schedules.sroq_grid(T, default_epochs(T)) if g > warmup + 1]
    rng = np.random.default_rng(seed)
    samples, played = [], []
    active, pairs, forbidden = set(range(d)), [(i, j) for i in range(d) for j in range(i + 1, d)], set()
    schedule: list[np.ndarray] = []  # actions of the rounds of the current epoch
    start = 0
    for t in range(1, T + 1):
        if t <= warmup:
            action = cover[(t - 1) % len(cover)]
        else:
            if t in grid:
                mu, matrix, f = _naive_index(np.array(samples), T, d)
                matrix = 0.5 * (matrix + matrix.T)
                forbid = sorted(forbidden)

                def value(a, sign, mu=mu, matrix=matrix, f=f):
                    return mu @ a + sign * f * math.sqrt(max(a @ matrix @ a, 0.0))

                def best(sign, include, eliminated, mu=mu, matrix=matrix, f=f, forbid=forbid):
                    return oracle.argmax_norm(mu, matrix, f, sign, include, sorted(set(range(d)) - eliminated), forbid)

                arm_reps = {i: best(1, [i], active) for i in sorted(active)}
                pair_reps = {p: best(1, list(p), active) for p in pairs}
                lcb = value(best(-1, [], active), -1)
                keep = [i for i in sorted(active) if arm_reps[i] is not None and value(arm_reps[i], 1) >= lcb - 1e-9]
                if set(keep) != active:  # the paper's second, sequential max-LCB query over A'_tau
                    lcb = value(best(-1, [], set(keep)), -1)
                active = set(keep)
                kept = []
                for (i, j), rep in pair_reps.items():
                    if i in active and j in active and rep is not None:
                        if value(rep, 1) >= lcb - 1e-9:
                            kept.append((i, j))
                        else:
                            forbidden.add((i, j))
                pairs = kept
                forbidden = {p for p in forbidden if p[0] in active and p[1] in active}
                end = next((g for g in grid if g > t), T + 1)
                length = end - t
                pair_rounds = round(fraction * length) if pairs else 0
                arm_cycle = [arm_reps[i] for i in keep]
                pair_cycle = [pair_reps[p] for p in pairs]
                schedule = [arm_cycle[k % len(arm_cycle)] for k in range(length - pair_rounds)]
                schedule += [pair_cycle[k % len(pair_cycle)] for k in range(pair_rounds)]
                start = t
            action = schedule[t - start]
        samples.append(env.sample(action, rng))
        played.append(action.copy())
    return np.array(played), active, pairs, forbidden


def test_sroqcov_equals_algorithm_4_run_round_by_round():
    d, T, fraction, seed = SROQ_C_CASE["d"], SROQ_C_CASE["T"], 0.3, 5
    space = cm.Cardinality(d, SROQ_C_CASE["m"])
    env = CopulaNoise(SROQ_C_CASE["means"], paper_covariance(d, seed=8), width=0.02)
    played, active, pairs, forbidden = _naive_algorithm_4(space, env, T, fraction, seed)
    policy = SROQCov(space, T, oracle="enumerate", pair_fraction=fraction)
    rng = np.random.default_rng(seed)
    for t in range(1, T + 1):
        action = policy.plan().actions[0]
        assert np.array_equal(action, played[t - 1]), f"round {t}"
        policy.update(1, env.observe(action, 1, rng, NEEDS))
    assert set(np.flatnonzero(policy.active).tolist()) == active
    assert set(policy.active_pairs) == set(pairs) and set(policy.forbidden) == forbidden
    # not vacuous: arms and pairs were eliminated before the last epoch
    assert len(policy.history[-1]["survivors"]) < d and policy.history[-2]["pairs"] < d * (d - 1) // 2


SROQ_C_CASE = {"d": 5, "m": 2, "T": 3000, "means": [0.02, 0.3, 0.6, 0.9, 0.97]}


def test_index_width_adapts_to_the_noise_variance_and_correlation():
    """Same plays, different noise: the confidence width follows the variance and the correlation."""
    d = 4
    pair = np.array([[1, 1, 0, 0]], bool)
    means = [0.3, 0.4, 0.5, 0.6]
    strong = np.full((d, d), 0.9) + 0.1 * np.eye(d)
    widths = {}
    for name, env in {
        "wide": CopulaNoise(means, None, width=0.25),
        "narrow": CopulaNoise(means, None, width=0.05),
        "wide-correlated": CopulaNoise(means, strong, width=0.25),
    }.items():
        index = CovarianceIndex(d)
        index.update(env.observe(pair, 200_000, np.random.default_rng(0), NEEDS))
        widths[name] = float(index.upper_values(10**5, pair)[0] - index.means[:2].sum())
    assert widths["narrow"] < 0.8 * widths["wide"]
    assert widths["wide"] < 0.95 * widths["wide-correlated"]


def test_covariance_adaptive_regret_falls_with_the_noise():
    means = np.random.default_rng(7).uniform(0.4, 0.6, 10)
    space, T = cm.Cardinality(10, 3), 50_000

    def mean_regret(make, width):
        env = cm.UniformNoise(means, width=width)
        return np.mean([cm.simulate(make(), env, T, seed=s, record=2).regret[-1] for s in range(2)])

    def aroq_cov():
        return AROQCov(space, T, oracle="enumerate", warmup_cycles=1)

    assert mean_regret(aroq_cov, 0.05) < 0.95 * mean_regret(aroq_cov, 0.5)
