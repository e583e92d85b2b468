"""General-reward policies without a given support: learned supports, Algorithm 8 fallback, upper, pessimistic.

Truth: the same policy built with ``support=env.support`` (same outcomes, same
decisions), counts taken by hand from the outcomes fed, Algorithm 8's binning
written out here, and closed forms computed by hand on tiny instances.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import test_policy_conformance as kit

import cmab_milp as cm
from cmab_milp.environments.base import FeedbackStats
from cmab_milp.environments.continuous import BetaArms
from cmab_milp.nonlinear import CallableReward, OutcomeGrid, make_reward
from cmab_milp.policies.general import DistributionIndex

VALUES = [0.2, 0.4, 0.6, 0.8, 1.0]
CLASSES = [cm.SDCB, cm.AROQGR, cm.SROQGR]


def spread_env(d: int = 5, seed: int = 3) -> cm.DiscreteArms:
    """Every arm puts visible mass on every value: all values are observed within a few rounds."""
    return cm.DiscreteArms(VALUES, np.random.default_rng(seed).dirichlet(np.ones(5), size=d), seed=0)


def rare_env() -> cm.DiscreteArms:
    """Figure 4's shape: mass 0.99 on one value per arm, so some values appear only late."""
    probs = np.array([np.roll([0.99, 0.0025, 0.0025, 0.0025, 0.0025], k) for k in (0, 1, 3, 2, 1)])
    return cm.DiscreteArms(VALUES, probs, seed=0)


def beta_env(d: int = 5) -> BetaArms:
    alpha = [8.0, 6.0, 1.0, 1.5, 1.0, 2.0][:d]
    beta = [1.0, 1.5, 6.0, 6.0, 8.0, 2.0][:d]
    return BetaArms(alpha, beta, reward="sqrt_sum", seed=0)


def traces_equal(a: cm.SimulationResult, b: cm.SimulationResult) -> bool:
    ta, tb = a.info["trace"], b.info["trace"]
    return len(ta) == len(tb) and all(
        x[0] == y[0] and x[1] == y[1] and np.array_equal(x[2], y[2]) for x, y in zip(ta, tb, strict=True)
    )


# ------------------------------------------------------------ the conformance kit on the learned layout
LEARNED_CASES = [
    kit.Case(cls, lambda: spread_env(d=6), constants={"reward": "sqrt_sum"}, T=120 if cls is cm.SDCB else 400)
    for cls in CLASSES
] + [
    kit.Case(cls, lambda: beta_env(d=6), constants={"reward": "sqrt_sum", "pessimistic": "zero"}, T=120)
    for cls in CLASSES
]
CHECKS = [
    kit.test_same_seed_same_numbers,
    kit.test_every_played_action_is_feasible,
    kit.test_the_ledger_counts_queries_and_rounds,
    kit.test_reset_and_clone_start_fresh,
    kit.test_bulk_play_equals_round_by_round_play,
    kit.test_unknown_horizon_runs,
]


@pytest.mark.parametrize("case", LEARNED_CASES, ids=kit.case_id)
@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__.removeprefix("test_"))
def test_the_conformance_kit_passes_with_a_learned_support(case, check):
    check(case)


@pytest.mark.parametrize("case", LEARNED_CASES, ids=kit.case_id)
@pytest.mark.parametrize("horizon", ["case", None])
def test_select_observe_replays_a_simulated_run_with_a_learned_support(case, horizon):
    kit.test_select_observe_replays_a_simulated_run(case, horizon)


@pytest.mark.parametrize("case", LEARNED_CASES, ids=kit.case_id)
def test_a_saved_learner_with_a_learned_support_continues_exactly(case, tmp_path):
    kit.test_a_saved_learner_continues_exactly(case, tmp_path)


# ------------------------------------------------------------ learned support vs support=env.support
@pytest.mark.parametrize(("cls", "T"), [(cm.SDCB, 600), (cm.AROQGR, 20_000), (cm.SROQGR, 20_000)])
@pytest.mark.parametrize("make_env", [spread_env, rare_env], ids=["spread", "rare"])
def test_a_learned_support_decides_as_the_given_support(cls, T, make_env):
    """Same outcomes, same decisions at every round, and in the end the same histograms on the same grid."""
    env, space = make_env(), cm.Cardinality(5, 2)
    for seed in (0, 1):
        given = cls(space, T, oracle="enumerate", support=env.support)
        learned = cls(space, T, oracle="enumerate")
        a = cm.simulate(given, env, seed=seed, trace=True)
        b = cm.simulate(learned, env, seed=seed, trace=True)
        assert traces_equal(a, b)
        assert np.array_equal(a.regret, b.regret) and np.array_equal(a.queries, b.queries)
        assert np.array_equal(given.index.hist, learned.index.hist)
        assert learned.index.grid == given.index.grid == OutcomeGrid(VALUES)
        assert learned.oracle.grid == learned.index.grid and learned.oracle.ledger.queries == b.queries[-1]


def test_the_learned_grid_starts_at_upper_and_grows_with_the_outcomes():
    policy = cm.AROQGR(cm.Cardinality(3, 3), 100, oracle="enumerate", reward="max")
    assert policy.index.grid.values.tolist() == [1.0] and policy.needs == frozenset({"samples"})
    fed = {0: [], 1: [], 2: []}
    for row in ([0.5, 0.5, 0.25], [0.75, 0.5, 1.0], [0.0, 0.25, 0.5]):
        a = policy.select()
        y = np.where(a, row, np.nan)
        policy.observe(a, y)
        for i in np.flatnonzero(a):
            fed[int(i)].append(row[i])
    seen = sorted({v for vs in fed.values() for v in vs} | {1.0})
    assert policy.index.grid.values.tolist() == seen
    by_hand = np.array([[fed[i].count(v) for v in seen] for i in range(3)])
    assert np.array_equal(policy.index.hist, by_hand)
    assert policy.oracle.grid == policy.index.grid


def test_pessimistic_lowest_agrees_with_the_given_support_once_the_lowest_value_is_seen():
    """Before 0.2 is observed the learned LCB puts the shifted mass on 0.4 (higher LCB); the UCB never differs."""
    reward, t = make_reward("sqrt_sum"), 50
    given = DistributionIndex(2, reward, OutcomeGrid(VALUES), OutcomeGrid(VALUES))
    learned = DistributionIndex(2, reward, OutcomeGrid([1.0]), learn=True, fallback=100)
    actions = np.array([[1, 0], [0, 1], [1, 1]], bool)

    def feed(rows):
        rows = np.array(rows, dtype=float)
        given.update(FeedbackStats.of_rounds(~np.isnan(rows), rows, ("hist",), np.array(VALUES)))
        learned.update(FeedbackStats.of_rounds(~np.isnan(rows), rows, ("samples",)))

    feed([[0.4, 0.8], [0.6, 1.0], [0.4, 0.4]])
    assert np.allclose(given.upper_values(t, actions), learned.upper_values(t, actions), rtol=0, atol=1e-12)
    assert (learned.lower_values(t, actions) > given.lower_values(t, actions) + 1e-3).all()
    feed([[0.2, np.nan]])
    assert np.allclose(given.upper_values(t, actions), learned.upper_values(t, actions), rtol=0, atol=1e-12)
    assert np.allclose(given.lower_values(t, actions), learned.lower_values(t, actions), rtol=0, atol=1e-12)


# ------------------------------------------------------------ continuous outcomes: Algorithm 8
@pytest.mark.parametrize("cls", CLASSES)
def test_without_a_support_beta_arms_run_algorithm_8(cls):
    """Beta outcomes are not simple fractions: the first observation switches to s = ceil(sqrt(m T)) intervals."""
    env, space, T = beta_env(), cm.Cardinality(5, 2), 1500
    learned = cls(space, T, oracle="enumerate")
    explicit = cls(space, T, oracle="enumerate", discretise=True)
    a = cm.simulate(learned, env, seed=2, trace=True)
    b = cm.simulate(explicit, env, seed=2, trace=True)
    assert learned.index.intervals == math.ceil(math.sqrt(2 * T)) == len(explicit.index.grid)
    assert learned.index.grid == explicit.index.grid and np.array_equal(learned.index.hist, explicit.index.hist)
    assert traces_equal(a, b) and np.array_equal(a.regret, b.regret)


def algorithm_8_counts(outcomes: dict[int, list[float]], s: int, d: int) -> np.ndarray:
    """Per arm, how many outcomes fall in each interval I_j = ((j-1)/s, j/s] (I_1 = [0, 1/s])."""
    counts = np.zeros((d, s), np.int64)
    for arm, ys in outcomes.items():
        for y in ys:
            j = max(1, math.ceil(y * s - 1e-12))
            counts[arm, j - 1] += 1
    return counts


def test_too_many_values_switch_to_algorithm_8_with_the_counts_rebinned_exactly():
    index = DistributionIndex(2, make_reward("sqrt_sum"), OutcomeGrid([1.0]), learn=True, fallback=4)
    fed: dict[int, list[float]] = {0: [], 1: []}
    batches = [[[0.1, 0.3], [0.3, 1.0]], [[0.5, np.nan], [0.0, 0.3]], [[0.7, 0.9], [0.26, np.nan]]]
    for k, rows in enumerate(batches):
        rows = np.array(rows)
        index.update(FeedbackStats.of_rounds(~np.isnan(rows), rows, ("samples",)))
        for r in rows:
            for arm in (0, 1):
                if not np.isnan(r[arm]):
                    fed[arm].append(float(r[arm]))
        # 0.1, 0.3, 1.0 | + 0.5, 0.0 = 5 distinct values > 4: Algorithm 8 from the second batch on
        assert (index.intervals is None) == (k == 0)
    assert index.grid.values.tolist() == [0.25, 0.5, 0.75, 1.0]
    assert np.array_equal(index.hist, algorithm_8_counts(fed, 4, 2))
    assert np.array_equal(index.hist.sum(axis=1), index.counts)


def test_a_value_that_is_not_a_simple_fraction_switches_at_once_keeping_the_zero_anchor():
    index = DistributionIndex(1, make_reward("max"), OutcomeGrid([0.0, 1.0]), learn=True, fallback=3)
    index.update(FeedbackStats.of_rounds([[True]], [[0.5]], ("samples",)))
    assert index.intervals is None and index.grid.values.tolist() == [0.0, 0.5, 1.0]
    index.update(FeedbackStats.of_rounds([[True], [True]], [[1 / math.pi], [0.0]], ("samples",)))
    assert index.intervals == 3 and index.grid.values.tolist() == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    # 0.5 -> 2/3, 1/pi -> 1/3, 0 -> 1/3 (I_1 is closed at 0); the anchor 0 keeps no mass
    assert index.hist.tolist() == [[0, 2, 1, 0]]


def test_with_an_unknown_horizon_the_switch_uses_the_horizon_guess():
    policy = cm.SDCB(cm.Cardinality(5, 2), None, oracle="enumerate")
    cm.simulate(policy, beta_env(), 50, seed=0)
    assert policy.index.intervals == math.ceil(math.sqrt(2 * policy.horizon))


# ------------------------------------------------------------ upper and pessimistic: closed forms
def fed_index(policy, rows: list[list[float]]) -> None:
    """Deliver the outcome rows (NaN: arm not played) as one batch of feedback through ``policy.update``."""
    y = np.array(rows, dtype=float)
    grid = policy.index.observed_grid
    if grid is None:
        stats = FeedbackStats.of_rounds(~np.isnan(y), y, ("samples",))
    else:
        stats = FeedbackStats.of_rounds(~np.isnan(y), y, ("hist",), grid.values)
    policy.update(1, stats)


@pytest.mark.parametrize("upper", [1.0, 0.5])
def test_the_optimistic_mass_goes_to_upper(upper):
    """Four draws of 0.25, radius 0.25: CDF 0.75 below upper, so the mean is 0.75 * 0.25 + 0.25 * upper."""
    t = 100
    C = 0.25**2 * 4 / math.log(t)
    policy = cm.AROQGR(cm.Cardinality(1, 1), 10, oracle="enumerate", reward="linear", upper=upper, C=C)
    fed_index(policy, [[0.25]] * 4)
    value = policy.index.upper_values(t, np.array([[True]]))[0]
    assert value == pytest.approx(0.75 * 0.25 + 0.25 * upper, abs=1e-12)


def test_outcomes_above_upper_or_below_zero_are_refused_and_change_nothing():
    policy = cm.SDCB(cm.Cardinality(3, 1), 100, oracle="enumerate", upper=0.5)
    for k, bad in enumerate((0.7, -0.1, 0.5 + 1e-6)):
        a = policy.select()
        with pytest.raises(ValueError, match=r"lie in \[0, 0\.5\]"):
            policy.observe(a, np.where(a, bad, np.nan))
        assert policy.index.counts.sum() == k and policy.index.grid.values.tolist() == [0.5]
        assert policy.pending == 1
        policy.observe(a, np.where(a, 0.5, np.nan))
    with pytest.raises(ValueError, match=r"lie in \[0, 0\.5\]"):
        cm.simulate(cm.SDCB(cm.Cardinality(5, 2), 20, oracle="enumerate", upper=0.5), spread_env(), seed=0)


def tiny_pessimistic_expectations(mode: str) -> tuple[float, float]:
    """By hand: arm 0 saw 0.5, 0.5, 0.5, 1; arm 1 saw 1, 1, 1, 1; radius w = 1/4; reward sqrt of the sum.

    Paper ("zero"): F_bar(x) = min(F_hat(x) + 1/4, 1) below 1, so arm 0 is 0 w.p. 1/4 and 0.5 w.p. 3/4,
    arm 1 is 0 w.p. 1/4 and 1 w.p. 3/4. Library ("lowest", grid {0.5, 1}): arm 0 is 0.5 surely, arm 1 is
    0.5 w.p. 1/4 and 1 w.p. 3/4. Returns (E sqrt(Y0), E sqrt(Y0 + Y1)).
    """
    if mode == "zero":
        single = 0.75 * math.sqrt(0.5)
        pair = 1 / 16 * 0.0 + 3 / 16 * math.sqrt(1.0) + 3 / 16 * math.sqrt(0.5) + 9 / 16 * math.sqrt(1.5)
    else:
        single = math.sqrt(0.5)
        pair = 0.25 * math.sqrt(1.0) + 0.75 * math.sqrt(1.5)
    return single, pair


@pytest.mark.parametrize("mode", ["zero", "lowest"])
@pytest.mark.parametrize("learned", [False, True], ids=["given", "learned"])
def test_the_pessimistic_expectation_matches_the_hand_computed_closed_form(mode, learned):
    t = 100
    C = 0.25**2 * 4 / math.log(t)  # radius sqrt(C ln t / 4) = 1/4
    support = None if learned else [0.5, 1.0]
    policy = cm.SROQGR(cm.Cardinality(2, 2), 10, oracle="enumerate", support=support, C=C, pessimistic=mode)
    fed_index(policy, [[0.5, 1.0], [0.5, 1.0], [0.5, 1.0], [1.0, 1.0]])
    single, pair = tiny_pessimistic_expectations(mode)
    values = policy.index.lower_values(t, np.array([[1, 0], [1, 1]], bool))
    assert values.tolist() == pytest.approx([single, pair], abs=1e-12)
    expected_grid = [0.0, 0.5, 1.0] if mode == "zero" else [0.5, 1.0]
    assert policy.index.grid.values.tolist() == expected_grid and policy.oracle.grid == policy.index.grid


# ------------------------------------------------------------ bad input
def test_the_index_layout_is_given_exactly_once():
    grid = OutcomeGrid([0.5, 1.0])
    for kwargs in ({}, {"observed": grid, "learn": True}, {"intervals": 2, "learn": True}):
        with pytest.raises(ValueError, match="exactly one"):
            DistributionIndex(2, make_reward("max"), grid, **kwargs)


def test_continuous_outcomes_without_a_fallback_are_refused():
    index = DistributionIndex(1, make_reward("max"), OutcomeGrid([1.0]), learn=True)
    with pytest.raises(ValueError, match="discretise=<intervals>"):
        index.update(FeedbackStats.of_rounds([[True]], [[1 / math.e]], ("samples",)))


def test_bulk_feedback_must_carry_samples():
    policy = cm.AROQGR(cm.Cardinality(5, 2), 50, oracle="enumerate")
    with pytest.raises(ValueError, match="samples"):
        policy.update(1, FeedbackStats(1, np.array([1, 1, 0, 0, 0]), hist=np.zeros((5, 5), np.int64)))


def test_a_damaged_learned_state_is_refused():
    def build():
        return cm.SDCB(cm.Cardinality(5, 2), 50, oracle="enumerate")

    policy = build()
    kit.served(policy, spread_env(), 10, np.random.default_rng(0))
    state = policy.get_state()
    index = state["index"]
    assert index["support"].tolist() == VALUES and index["intervals"] == 0
    bad = [
        ({"support": np.array([0.2, 0.4])}, "must hold"),
        ({"support": index["support"][2:].copy()}, "hist"),
        ({"support": np.array([0.2, 0.2, 1.0])}, "distinct"),
        ({"support": index["support"].astype(int)}, "float array"),
        ({"intervals": -1}, "intervals"),
        ({"intervals": 3}, "Algorithm 8"),
        ({"hist": index["hist"] + 1}, "sum to the counts"),
        ({"hist": index["hist"].astype(float)}, "integer array"),
    ]
    for changes, fragment in bad:
        with pytest.raises(ValueError, match=fragment):
            build().set_state({**state, "index": {**index, **changes}})
    missing = {k: v for k, v in index.items() if k != "support"}
    with pytest.raises(ValueError, match="fields"):
        build().set_state({**state, "index": missing})
    restored = build()
    restored.set_state(state)
    assert restored.oracle.grid == restored.index.grid == OutcomeGrid(VALUES)


def test_a_learned_support_needs_a_method_name_not_a_built_distribution_oracle():
    space = cm.Cardinality(3, 1)
    oracle = cm.nonlinear.DistributionOracle(space, "sqrt_sum", OutcomeGrid([0.5, 1.0]), backend="enumerate")
    assert cm.SDCB(space, 10, oracle=oracle, support=[0.5]).oracle is oracle  # a given support may use it
    with pytest.raises(ValueError, match="learns its support"):
        cm.SDCB(space, 10, oracle=oracle)


def test_a_declared_lipschitz_constant_sets_the_intervals_of_the_learned_fallback():
    reward = CallableReward(lambda a, y: 2.0 * y[:, a].max(axis=1, initial=0.0), name="twice_max", lipschitz=2.0)
    policy = cm.AROQGR(cm.Cardinality(5, 2), 1000, oracle="enumerate", reward=reward)
    assert policy.index.fallback == math.ceil(2.0 * math.sqrt(2 * 1000))
    explicit = cm.AROQGR(cm.Cardinality(5, 2), 1000, oracle="enumerate", reward=reward, discretise=True)
    assert explicit.index.intervals == len(explicit.index.grid) == math.ceil(2.0 * math.sqrt(2 * 1000))


@pytest.mark.parametrize("cls", [cm.AROQGR, cm.SROQGR])
def test_long_holds_fed_raw_outcomes_are_played_in_pieces_that_decide_the_same(cls):
    env, space, T = spread_env(), cm.Cardinality(5, 2), 5000
    whole = cm.simulate(cls(space, T, oracle="enumerate"), env, seed=0, trace=True)
    pieces = cm.simulate(cls(space, T, oracle="enumerate", sample_budget=40), env, seed=0, trace=True)  # 8 x 5 arms
    assert max(n for _, n, _ in pieces.info["trace"]) <= 8 < max(n for _, n, _ in whole.info["trace"])
    assert np.array_equal(kit.played_actions(whole), kit.played_actions(pieces))
    assert np.allclose(whole.regret, pieces.regret, rtol=1e-10) and np.array_equal(whole.queries, pieces.queries)


@pytest.mark.parametrize("budget", [0, -3, 2.5, True, "40"])
def test_a_bad_sample_budget_is_refused(budget):
    with pytest.raises(ValueError, match="sample_budget"):
        cm.AROQGR(cm.Cardinality(5, 2), 100, oracle="enumerate", sample_budget=budget)
