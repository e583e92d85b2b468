"""General rewards: exact expectations, shifted distributions, distribution oracles, environments.

Truth comes from brute force written here (itertools over the product support
and the action list), closed forms, adaptive quadrature and the paper's Lemma 9.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from scipy import integrate, special

import cmab_milp as cm
from cmab_milp.environments.continuous import BetaArms
from cmab_milp.nonlinear import (
    CallableReward,
    DistributionOracle,
    OutcomeGrid,
    SumReward,
    check_lipschitz,
    check_monotone,
    confidence_radius,
    discretise,
    empirical_pmf,
    make_reward,
    n_intervals,
    optimistic_pmf,
    pessimistic_pmf,
)
from cmab_milp.nonlinear import rewards as rewards_module

# ---------------------------------------------------------------- brute force

SCALAR = {
    "linear": lambda x: float(np.sum(x)),
    "sqrt_sum": lambda x: math.sqrt(float(np.sum(x))),
    "max": lambda x: float(np.max(x)) if len(x) else 0.0,
    "threshold:1.2": lambda x: float(np.sum(x) >= 1.2 - 1e-9),
    "threshold:1.5": lambda x: float(np.sum(x) >= 1.5 - 1e-9),
    "exp_utility:1": lambda x: 1.0 - math.exp(-float(np.sum(x))),
    "exp_utility:2": lambda x: 1.0 - math.exp(-2.0 * float(np.sum(x))),
}


def brute_expectation(f, action, values, pmf) -> float:
    """E[f(Y_a)] by listing every outcome vector of the selected arms."""
    arms = np.flatnonzero(action)
    total = 0.0
    for ks in itertools.product(range(len(values)), repeat=len(arms)):
        p = math.prod(pmf[i, k] for i, k in zip(arms, ks, strict=True))
        if p:
            total += p * f(np.asarray(values)[list(ks)])
    return total


def random_pmf(rng, d, g, concentration=0.5):
    return rng.dirichlet(np.full(g, concentration), size=d)


def brute_best(space, f, values, pmf, include=(), exclude=(), forbid=()):
    best = -np.inf
    for a in space.enumerate():
        if not all(a[i] for i in include) or any(a[i] for i in exclude) or any(a[i] and a[j] for i, j in forbid):
            continue
        best = max(best, brute_expectation(f, a, values, pmf))
    return best


# ----------------------------------------------------------- exact rewards


@pytest.mark.parametrize("name", ["linear", "sqrt_sum", "max", "threshold:1.2", "exp_utility:2"])
@pytest.mark.parametrize("values", [[0.2, 0.4, 0.6, 0.8, 1.0], [0.0, 0.25, 1.0], [0.1, math.sqrt(0.5), 0.9]])
def test_expected_reward_matches_product_enumeration(name, values):
    rng = np.random.default_rng(len(values) + len(name))
    grid = OutcomeGrid(values)
    d = 5
    pmf = random_pmf(rng, d, len(grid))
    actions = cm.Cardinality(d, 3).enumerate()
    got = make_reward(name).expected(actions, grid, pmf)
    want = [brute_expectation(SCALAR[name], a, grid.values, pmf) for a in actions]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_non_lattice_grid_falls_back_to_enumeration_for_sums():
    grid = OutcomeGrid([0.1, math.sqrt(0.5), 0.9])
    assert grid.denominator is None
    assert not make_reward("sqrt_sum").accumulates(grid)
    assert make_reward("max").accumulates(grid)


def test_callable_reward_matches_product_enumeration():
    rng = np.random.default_rng(3)
    grid = OutcomeGrid([0.0, 0.3, 0.5, 1.0])
    pmf = random_pmf(rng, 4, len(grid))
    reward = make_reward(lambda a, y: y[:, a].min(axis=1) if a.any() else np.zeros(len(y)))
    actions = cm.Cardinality(4, 3).enumerate()
    want = [brute_expectation(lambda x: float(np.min(x)) if len(x) else 0.0, a, grid.values, pmf) for a in actions]
    np.testing.assert_allclose(reward.expected(actions, grid, pmf), want, atol=1e-12)


def test_fft_and_loop_convolutions_agree():
    grid = cm.nonlinear.discretisation_grid(60)
    rng = np.random.default_rng(0)
    pmf = random_pmf(rng, 3, 60, 1.0)
    actions = cm.Cardinality(3, 3).enumerate()
    reward = make_reward("sqrt_sum")
    fft = reward.expected(actions, grid, pmf)
    old = rewards_module._FFT_FROM
    try:
        rewards_module._FFT_FROM = 10**9
        loop = reward.expected(actions, grid, pmf)
    finally:
        rewards_module._FFT_FROM = old
    np.testing.assert_allclose(fft, loop, atol=1e-13)


@pytest.mark.parametrize(("name", "m", "L"), [("linear", 4, 4.0), ("sqrt_sum", 4, 2.0), ("max", 4, 1.0)])
def test_bounds_hold_at_the_largest_outcomes(name, m, L):
    reward = make_reward(name)
    assert reward.bound(m) == L
    y = np.ones((1, 6))
    action = np.array([1, 1, 1, 1, 0, 0], bool)
    assert reward.realised(action, y)[0] == pytest.approx(L)


def test_product_support_cap_is_a_clear_error():
    grid = OutcomeGrid(np.linspace(0, 1, 40))
    pmf = np.full((5, 40), 1 / 40)
    reward = CallableReward(lambda a, y: y[:, a].sum(axis=1))
    with pytest.raises(ValueError, match="MAX_PRODUCT"):
        reward.expected(np.ones((1, 5), bool), grid, pmf)


# ------------------------------------------------------ shifted distributions


def test_optimistic_and_pessimistic_cdfs_follow_the_paper():
    counts = np.array([[3, 1, 0, 0, 4], [0, 0, 0, 0, 0]])
    w = np.array([0.3, np.inf])
    F_hat = np.cumsum(empirical_pmf(counts), axis=1)
    up, down = np.cumsum(optimistic_pmf(counts, w), axis=1), np.cumsum(pessimistic_pmf(counts, w), axis=1)
    np.testing.assert_allclose(up[0, :-1], np.maximum(F_hat[0, :-1] - 0.3, 0))
    np.testing.assert_allclose(down[0, :-1], np.minimum(F_hat[0, :-1] + 0.3, 1))
    assert up[0, -1] == down[0, -1] == 1.0
    assert optimistic_pmf(counts, w)[1].tolist() == [0, 0, 0, 0, 1]  # unobserved: all mass at 1
    assert pessimistic_pmf(counts, w)[1].tolist() == [1, 0, 0, 0, 0]


def test_confidence_radius():
    r = confidence_radius(np.array([0, 10]), 100, 1.5)
    assert r[0] == np.inf and r[1] == pytest.approx(math.sqrt(1.5 * math.log(100) / 10))


@pytest.mark.parametrize("name", ["sqrt_sum", "max", "threshold:1.2", "linear"])
def test_optimistic_index_dominates_truth_inside_the_dkw_band(name):
    """Lemma 9 (1) and (2): inside the band, LCB <= truth <= UCB <= truth + 2 L sum 2w."""
    rng = np.random.default_rng(11)
    grid = OutcomeGrid([0.2, 0.4, 0.6, 0.8, 1.0])
    d, m = 5, 3
    reward = make_reward(name)
    actions = cm.Cardinality(d, m).enumerate()
    checked = 0
    for trial in range(30):
        truth = random_pmf(rng, d, 5)
        n = rng.integers(5, 200, size=d)
        counts = np.array([rng.multinomial(n[i], truth[i]) for i in range(d)])
        w = confidence_radius(n, 50 + trial, 1.5)
        gap = np.abs(np.cumsum(empirical_pmf(counts), axis=1) - np.cumsum(truth, axis=1)).max(axis=1)
        if (gap > w).any():
            continue
        checked += 1
        true_values = reward.expected(actions, grid, truth)
        ucb = reward.expected(actions, grid, optimistic_pmf(counts, w))
        lcb = reward.expected(actions, grid, pessimistic_pmf(counts, w))
        assert (ucb >= true_values - 1e-12).all()
        assert (lcb <= true_values + 1e-12).all()
        slack = 2 * reward.bound(m) * (actions.astype(float) @ (2 * w))
        assert (ucb - true_values <= slack + 1e-12).all()
    assert checked >= 10


# ------------------------------------------------------------------ oracles


def _restrictions(rng, d, trial):
    include = [int(rng.integers(d))] if trial % 3 == 0 else []
    exclude = [int(x) for x in rng.choice(d, 2, replace=False) if int(x) not in include] if trial % 2 else []
    forbid = [(0, 1), (3, 7)] if trial % 4 == 0 else []
    return include, exclude, forbid


def _admits(a, include, exclude, forbid):
    return all(a[i] for i in include) and not any(a[i] for i in exclude) and not any(a[i] and a[j] for i, j in forbid)


SPACES = [
    cm.Cardinality(8, 3),
    cm.Cardinality(8, 3, exact=True),
    cm.PartitionMatroid([[0, 1, 2], [3, 4, 5], [6, 7]], [1, 2, 1]),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
@pytest.mark.parametrize("name", ["sqrt_sum", "max", "threshold:1.5", "exp_utility:1"])
def test_exact_oracles_reach_the_brute_force_optimum(space, name):
    rng = np.random.default_rng(5)
    grid = OutcomeGrid([0.0, 0.25, 0.5, 1.0])
    oracles = [DistributionOracle(space, name, grid, backend=k) for k in ("enumerate", "branch_bound")]
    for trial in range(6):
        pmf = random_pmf(rng, space.d, len(grid), 0.3)
        include, exclude, forbid = _restrictions(rng, space.d, trial)
        want = brute_best(space, SCALAR[name], grid.values, pmf, include, exclude, forbid)
        for oracle in oracles:
            a = oracle.argmax_index(pmf, include=include, exclude=exclude, forbid_pairs=forbid)
            if want == -np.inf:
                assert a is None
                continue
            assert space.contains(a) and _admits(a, include, exclude, forbid)
            assert oracle.expected(a, pmf)[0] >= want - 1e-9 * (1 + abs(want))


@pytest.mark.parametrize("name", ["max", "sqrt_sum"])
@pytest.mark.parametrize(
    ("space", "alpha"),
    [(cm.Cardinality(9, 3), 1 - 1 / math.e), (cm.GraphicMatroid(nx.complete_graph(4)), 0.5)],
    ids=["cardinality", "graphic"],
)
def test_greedy_oracle_meets_its_approximation_factor(name, space, alpha):
    rng = np.random.default_rng(2)
    grid = OutcomeGrid([0.1, 0.5, 1.0])
    greedy = DistributionOracle(space, name, grid, backend="greedy")
    exact = DistributionOracle(space, name, grid, backend="enumerate")
    assert greedy.alpha == pytest.approx(alpha)
    for _ in range(10):
        pmf = random_pmf(rng, space.d, 3, 0.3)
        a, b = greedy.argmax_index(pmf), exact.argmax_index(pmf)
        assert space.contains(a)
        assert greedy.expected(a, pmf)[0] >= alpha * exact.expected(b, pmf)[0] - 1e-12


def test_oracle_ledger_counts_index_and_linear_queries_and_batches():
    grid = OutcomeGrid([0.0, 1.0])
    oracle = DistributionOracle(cm.Cardinality(4, 2), "max", grid, backend="enumerate")
    pmf = np.tile([0.5, 0.5], (4, 1))
    oracle.argmax_index(pmf)
    answers = oracle.argmax_batch(
        [{"kind": "index", "pmf": pmf, "include": [i]} for i in range(4)] + [{"weights": np.arange(4.0)}]
    )
    assert all(a[i] for i, a in enumerate(answers[:4]))
    assert np.flatnonzero(answers[4]).tolist() == [2, 3]
    assert (oracle.ledger.queries, oracle.ledger.rounds) == (6, 2)


def test_auto_backend_picks_branch_and_bound_past_the_enumeration_cap():
    grid = OutcomeGrid([0.0, 0.5, 1.0])
    big = DistributionOracle(cm.Cardinality(60, 5), "sqrt_sum", grid)
    assert big.backend == "branch_bound"
    rng = np.random.default_rng(0)
    pmf = random_pmf(rng, 60, 3, 0.3)
    a = big.argmax_index(pmf)
    # sqrt of a sum of independent arms: with 5 slots, the optimum takes 5 arms (adding never hurts)
    assert a.sum() == 5
    # exactness on a big space: K-MAX prefers arms whose P(Y = 1) is largest, checked by sorting
    small = DistributionOracle(cm.Cardinality(12, 3), "max", OutcomeGrid([0.0, 1.0]), backend="branch_bound")
    p1 = rng.random(12)
    best = small.argmax_index(np.column_stack([1 - p1, p1]))
    assert sorted(np.flatnonzero(best).tolist()) == sorted(np.argsort(-p1)[:3].tolist())


# ----------------------------------------------------------- environments


def figure4_env(seed=0, d=5, reward="sqrt_sum"):
    rng = np.random.default_rng(seed)
    probs = np.full((d, 5), 0.01 / 4)
    probs[np.arange(d), rng.integers(0, 5, size=d)] = 0.99
    return cm.DiscreteArms([0.2, 0.4, 0.6, 0.8, 1.0], probs, reward=reward, seed=seed)


@pytest.mark.parametrize("reward", ["sqrt_sum", "max", "linear"])
def test_discrete_arms_truth_and_optimum_against_brute_force(reward):
    env = figure4_env(reward=reward)
    space = cm.Cardinality(5, 2)
    values = [brute_expectation(SCALAR[reward], a, env.support, env.pmf) for a in space.enumerate()]
    np.testing.assert_allclose(env.expected_rewards(space.enumerate()), values, atol=1e-12)
    action, value = env.optimal(space)
    assert value == pytest.approx(max(values), abs=1e-12) and space.contains(action)


def test_discrete_arms_sampling_matches_probabilities_and_histograms():
    env = cm.DiscreteArms([1.0, 0.0, 0.5], [[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]], reward="max", seed=4)
    assert env.support.tolist() == [0.0, 0.5, 1.0]
    stats = env.observe(np.array([[1, 1]], bool), 20_000, needs=("hist", "sum"))
    freq = stats.hist / 20_000
    np.testing.assert_allclose(freq[0], [0.5, 0.3, 0.2], atol=0.015)
    assert freq[1].tolist() == [0.0, 1.0, 0.0]
    np.testing.assert_allclose(stats.sum, stats.hist @ env.support)


def test_beta_arms_expectations_against_quadrature_and_closed_forms():
    env = BetaArms([2.0, 1.3, 3.0], [5.0, 1.5, 1.0], reward="sqrt_sum")

    def density(y, a, b):
        return y ** (a - 1) * (1 - y) ** (b - 1) / special.beta(a, b)

    want = integrate.dblquad(
        lambda y2, y1: math.sqrt(y1 + y2) * density(y1, 2, 5) * density(y2, 1.3, 1.5), 0, 1, 0, 1, epsabs=1e-11
    )[0]
    assert env.expected_reward([1, 1, 0]) == pytest.approx(want, abs=1e-8)
    kmax = BetaArms([2.0, 1.0], [2.0, 1.0], reward="max")
    assert kmax.expected_reward([1, 1]) == pytest.approx(1 - 3 / 4 + 2 / 5, abs=1e-10)  # int 1 - F1 F2
    linear = BetaArms([2.0, 1.0, 4.0], [2.0, 3.0, 1.0], reward="linear")
    assert linear.expected_reward([1, 1, 1]) == pytest.approx(0.5 + 0.25 + 0.8)


def test_discretisation_of_algorithm_8():
    assert n_intervals(2, 10_000, 1.0) == math.ceil(math.sqrt(20_000))
    np.testing.assert_allclose(discretise([0.0, 1e-9, 0.2, 0.2000001, 0.99, 1.0], 5), [0.2, 0.2, 0.2, 0.4, 1.0, 1.0])


# --------------------------------------------------------------- bad input

PROBS = [[0.5, 0.5], [1.0, 0.0]]
BAD_DISCRETE = [
    (([0.0, 1.5], PROBS), "lie in \\[0, 1\\]"),
    (([0.5, 0.5], PROBS), "distinct"),
    (([0.0, 1.0], [[0.5, 0.6], [1.0, 0.0]]), "sum to 1"),
    (([0.0, 1.0], [[1.5, -0.5], [1.0, 0.0]]), ">= 0"),
    (([0.0, 1.0], [[1.0, 0.0, 0.0]]), "columns"),
    (([0.0, 1.0], PROBS, "cube"), "unknown reward"),
    (([0.0, 1.0], PROBS, lambda a, y: -y[:, a].sum(axis=1)), "not monotone"),
    (([0.0, 1.0], PROBS, lambda a, y: 1.0), "shape \\(n,\\)"),
    (([0.0, 1.0], PROBS, "threshold:x"), "needs a number"),
    (([], []), "non-empty"),
]


@pytest.mark.parametrize(("args", "message"), BAD_DISCRETE)
def test_discrete_arms_refuses_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        cm.DiscreteArms(*args)


BAD_OTHER = [
    (lambda: SumReward(lambda s: -np.asarray(s)), "non-decreasing"),
    (lambda: DistributionOracle(cm.Cardinality(3, 1), "max", OutcomeGrid([0, 1]), backend="magic"), "unknown"),
    (
        lambda: DistributionOracle(cm.Cardinality(3, 1), "threshold:1", OutcomeGrid([0, 1]), backend="greedy"),
        "submodular",
    ),
    (
        lambda: DistributionOracle(cm.STPaths(nx.path_graph(3), 0, 2), "max", OutcomeGrid([0, 1]), "branch_bound"),
        "Cardinality and PartitionMatroid",
    ),
    (
        lambda: DistributionOracle(cm.Cardinality(3, 1), "max", OutcomeGrid([0, 1])).argmax_index(np.ones((3, 2))),
        "sum to 1",
    ),
    (lambda: BetaArms([1.0, -1.0], [1.0, 1.0]), "> 0"),
    (lambda: BetaArms([1.0], [1.0, 2.0]), "same length"),
    (lambda: check_monotone(CallableReward(lambda a, y: -y[:, a].max(axis=1)), 2, OutcomeGrid([0, 1])), "monotone"),
]


@pytest.mark.parametrize(("build", "message"), BAD_OTHER)
def test_general_building_blocks_refuse_bad_input(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_greedy_answers_honour_the_restrictions(space):
    rng = np.random.default_rng(8)
    grid = OutcomeGrid([0.0, 0.5, 1.0])
    greedy = DistributionOracle(space, "sqrt_sum", grid, backend="greedy")
    exact = DistributionOracle(space, "sqrt_sum", grid, backend="enumerate")
    for trial in range(8):
        pmf = random_pmf(rng, space.d, 3, 0.3)
        include, exclude, forbid = _restrictions(rng, space.d, trial)
        a = greedy.argmax_index(pmf, include=include, exclude=exclude, forbid_pairs=forbid)
        b = exact.argmax_index(pmf, include=include, exclude=exclude, forbid_pairs=forbid)
        if a is None:  # greedy may stop short of an exact-size action under forbidden pairs
            assert b is None or (isinstance(space, cm.Cardinality) and space.exact and forbid)
            continue
        assert space.contains(a) and _admits(a, include, exclude, forbid)


@pytest.mark.parametrize(
    "space",
    [
        cm.Cardinality(10, 3),
        cm.PartitionMatroid([[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]], [1, 2, 1]),
        cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))),
        cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8),
        cm.Matchings(nx.complete_graph(5)),
    ],
    ids=repr,
)
def test_kmax_milp_oracle_matches_enumeration_on_any_formulation(space):
    rng = np.random.default_rng(6)
    grid = OutcomeGrid([0.0, 0.25, 0.5, 0.75, 1.0])
    exact = DistributionOracle(space, "max", grid, backend="enumerate")
    milp = DistributionOracle(space, "max", grid, backend="milp")
    for trial in range(6):
        pmf = random_pmf(rng, space.d, 5, 0.3)
        include, exclude, forbid = _restrictions(rng, space.d, trial)
        forbid = [(i, j) for i, j in forbid if max(i, j) < space.d]
        a = exact.argmax_index(pmf, include=include, exclude=exclude, forbid_pairs=forbid)
        b = milp.argmax_index(pmf, include=include, exclude=exclude, forbid_pairs=forbid)
        if a is None:
            assert b is None
            continue
        assert space.contains(b) and _admits(b, include, exclude, forbid)
        assert exact.expected(b, pmf)[0] >= exact.expected(a, pmf)[0] - 1e-8


def test_auto_backend_uses_the_milp_for_kmax_past_the_enumeration_cap():
    oracle = DistributionOracle(cm.Cardinality(60, 5), "max", OutcomeGrid([0.0, 0.5, 1.0]))
    assert oracle.backend == "milp"
    with pytest.raises(ValueError, match="K-MAX"):
        DistributionOracle(cm.Cardinality(5, 2), "sqrt_sum", OutcomeGrid([0.0, 1.0]), backend="milp")


# ---------------------------------------------------------------- Lipschitz constants (Assumption 2)


@pytest.mark.parametrize(
    ("name", "constant"),
    [("linear", 1.0), ("max", 1.0), ("exp_utility:3", 3.0), ("sqrt_sum", None), ("threshold:1", None)],
)
def test_named_rewards_carry_their_lipschitz_constant(name, constant):
    reward = make_reward(name)
    assert reward.lipschitz == constant
    check_lipschitz(reward, 6)  # a true constant (or none) passes


def test_the_named_constants_hold_on_a_brute_force_grid_of_pairs():
    """|r(a, y) - r(a, y')| <= C sum |y_i - y'_i| on every pair of a 2-arm grid (truth: the definition)."""
    points = np.array(list(itertools.product(np.linspace(0, 1, 9), repeat=2)))
    a = np.array([True, True])
    for name in ("linear", "max", "exp_utility:3"):
        reward = make_reward(name)
        r = reward.realised(a, points)
        gaps = np.abs(r[:, None] - r[None, :])
        dist = np.abs(points[:, None, :] - points[None, :, :]).sum(axis=2)
        assert (gaps <= reward.lipschitz * dist + 1e-12).all()


BAD_CONSTANTS = [0, -1.0, float("nan"), float("inf"), "steep", True, [1.0]]


@pytest.mark.parametrize("value", BAD_CONSTANTS, ids=repr)
def test_invalid_declared_constants_are_refused(value):
    with pytest.raises(ValueError, match="Lipschitz constant of reward 'f' must be a finite number > 0"):
        CallableReward(lambda a, y: y[:, a].sum(axis=1), name="f", lipschitz=value)
    with pytest.raises(ValueError, match="bound of reward 'f' must be a finite number > 0"):
        CallableReward(lambda a, y: y[:, a].sum(axis=1), name="f", bound=value)
    with pytest.raises(ValueError, match="Lipschitz constant of reward 'g'"):
        SumReward(np.sqrt, "g", lipschitz=value)


@pytest.mark.parametrize(
    ("reward", "ok"),
    [
        (CallableReward(lambda a, y: y[:, a].min(axis=1, initial=1.0), name="min", lipschitz=1.0), True),
        (SumReward(lambda s: 2 * np.asarray(s), "double", lipschitz=2.0), True),
        (SumReward(lambda s: 2 * np.asarray(s), "double", lipschitz=1.5), False),
        (CallableReward(lambda a, y: 3 * y[:, a].max(axis=1, initial=0.0), name="triple_max", lipschitz=2.9), False),
        (SumReward(np.sqrt, "sqrt_declared", lipschitz=1.0), False),  # infinite slope at 0
    ],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_check_lipschitz_refuses_a_declared_constant_that_a_pair_breaks(reward, ok):
    if ok:
        check_lipschitz(reward, 5)
    else:
        with pytest.raises(ValueError, match=f"reward '{reward.name}' breaks its declared Lipschitz constant"):
            check_lipschitz(reward, 5)


def test_a_declared_lipschitz_constant_sets_algorithm_8_and_a_wrong_one_is_refused():
    space, T = cm.Cardinality(4, 2), 500
    steep = SumReward(lambda s: 4 * np.asarray(s), "quadruple", concave=True, lipschitz=4.0)
    policy = cm.SROQGR(space, T, oracle="enumerate", reward=steep, discretise=True)
    assert policy.index.intervals == n_intervals(2, T, 4.0) == math.ceil(4 * math.sqrt(2 * T))
    assert cm.SROQGR(space, T, oracle="enumerate", discretise=True).index.intervals == math.ceil(math.sqrt(2 * T))
    wrong = SumReward(lambda s: 4 * np.asarray(s), "quadruple", concave=True, lipschitz=1.0)
    with pytest.raises(ValueError, match="breaks its declared Lipschitz constant 1"):
        cm.SROQGR(space, T, oracle="enumerate", reward=wrong, discretise=True)
