"""Answers carried between norm queries (``oracles.norm.carry``), judged against brute force.

The drift bound must hold for every pair of queries (any drift of ``mu``, ``M``
and ``f``, indefinite ``M``, restrictions); a carried answer must be within the
oracle's ``norm_gap`` of the new query's optimum; exact oracles ignore the carry;
OLS-UCB-C with ``reuse`` gives the same numbers for the same seed and continues
exactly after a save and load.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.queries import norm_objective
from cmab_milp.oracles.norm.carry import NormCarry, drift_bound

SPACES = {
    "cardinality": cm.Cardinality(8, 3),
    "matchings": cm.Matchings(nx.complete_bipartite_graph(3, 4)),
    "trees": cm.SpanningTrees(nx.grid_2d_graph(2, 4)),
}


def optimum(query, actions) -> float:
    return max(query.value(a) for a in actions if query.restrictions.admits(a))


def drifted(rng, mu, M, f, size: float):
    """A query a few rounds later: means, matrix and ``f`` moved by about ``size`` (relative)."""
    d = len(mu)
    noise = rng.normal(size=(d, d)) * size * np.abs(M).max()
    return mu + size * rng.normal(size=d), M + 0.5 * (noise + noise.T), f * (1 + size * rng.uniform(-1, 1))


def base_query(rng, d: int, indefinite: bool):
    a = rng.normal(size=(d, d))
    M = a @ a.T / d
    if indefinite:
        M -= 0.3 * np.eye(d) * np.abs(np.diag(M)).mean()
    return rng.uniform(-0.2, 1.0, d), M, float(rng.uniform(0.3, 2.0))


@pytest.mark.parametrize("name", list(SPACES))
def test_the_drift_bound_holds_for_every_pair_of_queries(name: str) -> None:
    space = SPACES[name]
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "enumerate")
    rng = np.random.default_rng(3)
    tight = 0
    for k in range(40):
        mu, M, f = base_query(rng, space.d, indefinite=k % 3 == 0)
        exclude = [int(rng.integers(space.d))] if k % 4 == 1 else []
        before = oracle.norm_query(mu, M, f, exclude=exclude)
        loose = 0.0 if k % 2 else float(rng.uniform(0, 0.5))  # the previous bound need not be tight
        bound_before = optimum(before, actions) + loose
        for size in (1e-4, 1e-2, 0.3):
            after = oracle.norm_query(*drifted(rng, mu, M, f, size), exclude=exclude)
            free = np.setdiff1d(np.arange(space.d), exclude)
            bound = drift_bound(before, bound_before, after, space.m, free)
            best = optimum(after, actions)
            assert bound >= best - 1e-12, (k, size)
            tight += size == 1e-4 and loose == 0.0 and bound <= best * 1.01 + 1e-9
    assert tight >= 10, "the bound should be close after a small drift"


def test_an_unchanged_query_keeps_its_bound() -> None:
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "enumerate")
    query = oracle.norm_query(np.array([0.5, -0.1, 0.3, 0.2]), np.diag([1.0, 2.0, 0.5, 0.1]), 0.7)
    assert drift_bound(query, 2.0, query, 2) == pytest.approx(2.0, abs=1e-8)


@pytest.mark.parametrize("name", list(SPACES))
def test_carried_answers_are_within_the_gap_of_each_optimum(name: str) -> None:
    space = SPACES[name]
    actions = space.enumerate()
    gap = 0.1
    oracle = cm.make_oracle(space, "highs", norm_gap=gap)
    carry = NormCarry(reuse=0.6)
    rng = np.random.default_rng(5)
    mu, M, f = base_query(rng, space.d, indefinite=False)
    mu = np.abs(mu) + 0.1  # positive indices: the ratio is defined
    for _ in range(30):
        mu, M, f = drifted(rng, mu, M, f, 2e-3)
        answer = oracle.argmax_norm(mu, M, f, carry=carry)
        best = optimum(oracle.norm_query(mu, M, f), actions)
        assert space.contains(answer)
        assert norm_objective(mu, M, f, 1, answer) >= (1 - gap) * best - 1e-9
    assert carry.reused > 0 and carry.solved > 0
    assert carry.reused + carry.solved == 30
    assert 1 - gap - 1e-12 <= oracle.proven_ratio <= 1.0
    assert oracle.ledger.queries == 30


def test_other_restrictions_or_sign_are_solved_not_carried() -> None:
    space = SPACES["cardinality"]
    oracle = cm.make_oracle(space, "highs", norm_gap=0.1)
    carry = NormCarry()
    mu, M = np.linspace(0.2, 1.0, 8), 0.05 * np.eye(8)
    oracle.argmax_norm(mu, M, 1.0, carry=carry)
    oracle.argmax_norm(mu, M, 1.0, exclude=[7], carry=carry)  # other restrictions: a solve
    oracle.argmax_norm(mu, M, 1.0, sign=-1, carry=carry)  # sign -1: not carried at all
    assert (carry.solved, carry.reused) == (2, 0)
    answer = oracle.argmax_norm(mu, M, 1.0, exclude=[7], carry=carry)  # the same again: carried
    assert (carry.solved, carry.reused) == (2, 1) and not answer[7]


def test_an_exact_oracle_ignores_the_carry() -> None:
    space = SPACES["matchings"]
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "highs")
    carry = NormCarry()
    rng = np.random.default_rng(2)
    mu, M, f = base_query(rng, space.d, indefinite=False)
    for _ in range(3):
        answer = oracle.argmax_norm(mu, M, f, carry=carry)
        query = oracle.norm_query(mu, M, f)
        assert query.value(answer) >= optimum(query, actions) - 1e-9
    assert (carry.solved, carry.reused) == (0, 0)


@pytest.mark.parametrize("bad", [1.0, -0.1, True, "0.5", float("nan")])
def test_bad_reuse_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="reuse"):
        NormCarry(bad)
    with pytest.raises(ValueError, match="reuse"):
        cm.OLSUCBC(cm.Cardinality(3, 1), 10, oracle="enumerate", reuse=bad)


def test_a_carry_must_be_a_norm_carry() -> None:
    oracle = cm.make_oracle(cm.Cardinality(3, 1), "highs", norm_gap=0.1)
    with pytest.raises(ValueError, match="carry must be a NormCarry"):
        oracle.argmax_norm(np.ones(3), np.eye(3), 1.0, carry={"reuse": 0.5})


def test_a_carry_state_round_trips_and_a_bad_one_is_refused() -> None:
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs", norm_gap=0.1)
    carry = NormCarry(0.3)
    oracle.argmax_norm(np.linspace(0.1, 0.4, 4), 0.1 * np.eye(4), 1.0, exclude=[0], carry=carry)
    restored = NormCarry()
    restored.set_state(carry.get_state())
    query = oracle.norm_query(np.linspace(0.1, 0.4, 4), 0.1 * np.eye(4), 1.0, exclude=[0])
    assert restored.offer(query, 0.1, 2) is not None and carry.offer(query, 0.1, 2) is not None
    state = carry.get_state()
    state["M"] = np.eye(3)
    with pytest.raises(ValueError, match="NormCarry state"):
        NormCarry().set_state(state)


# ------------------------------------------------------------------ OLS-UCB-C
def _noise() -> cm.GaussianNoise:
    a = np.random.default_rng(0).normal(size=(8, 8))
    return cm.GaussianNoise(np.linspace(0.2, 0.8, 8), 0.02 * (a @ a.T) / 8, seed=1)


def _ols_run(reuse: float | None, T: int, seed: int = 4):
    space = cm.Cardinality(8, 3)
    env = _noise()
    oracle = cm.make_oracle(space, "highs", norm_gap=0.1)
    policy = cm.OLSUCBC(space, T, oracle=oracle, reuse=reuse)
    return policy, env, cm.simulate(policy, env, T, seed=seed)


def _checked_oracle(space, gap: float) -> tuple[cm.Oracle, dict]:
    """A highs oracle with ``norm_gap=gap`` whose every sign +1 answer is checked against brute force (``n``)."""
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "highs", norm_gap=gap)
    answer = oracle._answer
    checked = {"n": 0}

    def checked_answer(query):
        out = answer(query)
        if getattr(query, "sign", 0) == 1:
            assert query.value(out) >= (1 - gap) * optimum(query, actions) - 1e-9
            checked["n"] += 1
        return out

    oracle._answer = checked_answer
    return oracle, checked


def test_ols_ucb_c_reuses_answers_within_the_gap_and_repeats_its_numbers() -> None:
    policy, _, first = _ols_run(0.5, 600)  # every round answered: carried or solved
    carries = list(policy.index._carries.values())
    assert len(carries) == 1 and carries[0].reused > 100, carries
    assert policy.oracle.proven_ratio >= 0.9 - 1e-12
    _, _, again = _ols_run(0.5, 600)
    assert np.array_equal(first.regret, again.regret)
    # every answer (carried or solved) within the gap: brute force on a replay of the queries
    space = cm.Cardinality(8, 3)
    oracle, checked = _checked_oracle(space, 0.1)
    cm.simulate(cm.OLSUCBC(space, 300, oracle=oracle, reuse=0.5), _noise(), 300, seed=4)
    assert checked["n"] > 250


def test_ols_ucb_c_with_reuse_continues_exactly_after_save_and_load(tmp_path) -> None:
    space = cm.Cardinality(8, 3)
    oracle = cm.make_oracle(space, "highs", norm_gap=0.1)
    rng = np.random.default_rng(9)
    means = np.linspace(0.2, 0.8, 8)

    def play(policy, rounds, rng):
        out = []
        for _ in range(rounds):
            a = policy.select()
            policy.observe(a, np.where(a, means + 0.1 * rng.normal(size=8), np.nan))
            out.append(a)
        return np.array(out)

    policy = cm.OLSUCBC(space, 1000, oracle=oracle, reuse=0.5)
    play(policy, 150, rng)
    path = tmp_path / "ols.npz"
    policy.save(path)
    state = rng.bit_generator.state
    straight = play(policy, 150, rng)
    restored = cm.load_policy(path, oracle=cm.make_oracle(space, "highs", norm_gap=0.1))
    rng.bit_generator.state = state
    resumed = play(restored, 150, rng)
    assert np.array_equal(straight, resumed)
    assert restored.index._carries and next(iter(restored.index._carries.values())).reused > 0


def test_a_carry_keeps_runners_up_and_offers_the_best_of_them() -> None:
    space = cm.SpanningTrees(nx.grid_2d_graph(2, 4))  # the concave branch answers: it keeps what it met
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "highs", norm_gap=0.1)
    rng = np.random.default_rng(8)
    mu, M, f = base_query(rng, space.d, indefinite=False)
    mu = np.abs(mu) + 0.2
    carry = NormCarry(reuse=0.5)
    answer = oracle.argmax_norm(mu, M, f, carry=carry)
    kept = carry._actions
    query = oracle.norm_query(mu, M, f)
    values = [query.value(a) for a in kept]
    assert len(kept) > 1 and np.array_equal(kept[0], answer)
    assert all(space.contains(a) for a in kept) and len({a.tobytes() for a in kept}) == len(kept)
    assert values[0] == max(values)
    # the answer's own arms lose value (as when it is played): the runner-up is offered, within the gap
    lower = mu - (values[0] - values[1] + 0.05) * (answer & ~kept[1])
    later = oracle.norm_query(lower, M, f)
    offered = oracle.argmax_norm(lower, M, f, carry=carry)
    assert carry.reused == 1
    assert later.value(offered) == max(later.value(a) for a in kept)
    assert not np.array_equal(offered, answer)
    assert later.value(offered) >= 0.9 * optimum(later, actions) - 1e-9


def test_ols_ucb_c_without_reuse_solves_every_round() -> None:
    policy, _, result = _ols_run(None, 200)
    assert policy.params["reuse"] is None and not policy.index._carries
    assert policy.oracle.proven_ratio >= 0.9 - 1e-12 and result.queries[-1] >= 200


def test_an_index_keeps_at_most_a_few_carries() -> None:
    from cmab_milp.policies.cov_index import _MAX_CARRIES, CovarianceIndex

    index = CovarianceIndex(12, reuse=0.5)
    oracle = cm.make_oracle(cm.Cardinality(12, 2), "enumerate")
    for arm in range(12):
        query = {"kind": "norm", "mu": np.ones(12), "M": np.eye(12), "f": 1.0, "sign": 1, "exclude": [arm]}
        index.ask(oracle, [query])
    keys = list(index._carries)
    assert len(keys) == _MAX_CARRIES and keys[-1][2] == (11,)  # the newest kept, the oldest dropped


def test_aroq_c_with_reuse_carries_its_updates_within_the_gap() -> None:
    space = cm.Cardinality(8, 3)
    oracle, checked = _checked_oracle(space, 0.1)
    policy = cm.AROQCov(space, 6000, oracle=oracle, warmup_cycles=1, reuse=0.5)
    first = cm.simulate(policy, _noise(), 6000, seed=2)
    (carry,) = policy.index._carries.values()
    assert carry.reused > 0 and checked["n"] > 20
    again = cm.simulate(
        cm.AROQCov(space, 6000, oracle=cm.make_oracle(space, "highs", norm_gap=0.1), warmup_cycles=1, reuse=0.5),
        _noise(),
        6000,
        seed=2,
    )
    assert np.array_equal(first.regret, again.regret)
    with pytest.raises(ValueError, match="reuse"):
        cm.AROQCov(space, 100, oracle="enumerate", reuse=1.0)
    assert cm.AROQCov(space, 100, oracle="enumerate").params["reuse"] is None  # off by default
