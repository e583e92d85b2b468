"""One conformance kit every registered policy runs.

The policies come from the registry (:func:`cmab_milp.testing.registered_kinds`: the library's
policy kinds and those registered with :func:`cmab_milp.experiments.register_kind`). ``CASES``
adds variants: a :class:`Case` says how to build a policy (any constants), an environment it can
run on and the bad input it must refuse; a registered policy without a case here runs on the
environment :func:`cmab_milp.testing.policy_setup` fits to it. Every case is checked
for: same seed -> same numbers; every played action feasible; queries and
rounds counted by the oracle ledger; ``reset`` and ``clone`` start fresh; bulk
play equal to round-by-round play; bad constructor input raising ``ValueError``;
``select`` / ``observe`` fed a simulated run's outcomes replaying that run;
``save`` / ``load_policy`` mid-run (selections outstanding) continuing exactly;
``T=None`` runs; refusing to play past a known horizon.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.persistence import policy_classes
from cmab_milp.testing import policy_setup, registered_kinds

SPACE = cm.Cardinality(6, 2).with_constraint([1, 1, 0, 0, 0, 0], "<=", 1)
MEANS = np.array([0.9, 0.85, 0.2, 0.4, 0.6, 0.1])


@dataclass
class Case:
    """A policy class, its constants, and the environment it is tested on."""

    policy: type
    make_env: Callable[[], cm.environments.Environment]
    space: cm.ActionSpace = SPACE
    constants: dict[str, Any] = field(default_factory=dict)
    T: int = 400
    # constructor keyword arguments that must be refused, with a fragment of the message
    bad: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    # bad inputs of the common table a family is known to accept (reported), by message fragment
    known_accepted: tuple[str, ...] = ()

    def build(self, T: Any = "case", oracle: Any = "enumerate", **overrides: Any):
        """The policy for horizon ``T`` (default: the case's; ``None``: unknown horizon)."""
        return self.policy(self.space, self.T if T == "case" else T, oracle=oracle, **{**self.constants, **overrides})


def uniform_env() -> cm.environments.Environment:
    return cm.UniformNoise(MEANS, width=0.5, seed=0)


COMMON_BAD = [({"C": 0.0}, "C"), ({"C": -1.0}, "C"), ({"C": float("nan")}, "C"), ({"C": "big"}, "C")]

CASES = [
    Case(cm.CUCB, uniform_env, T=150, bad=COMMON_BAD),
    Case(cm.AROQ, uniform_env, bad=[*COMMON_BAD, ({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha")]),
    Case(cm.AROQ, uniform_env, constants={"alpha": 0.5, "C": 2.0}),
    Case(cm.SROQ, uniform_env, bad=[*COMMON_BAD, ({"M": 0}, "M"), ({"M": 2.5}, "M"), ({"M": True}, "M")]),
    Case(cm.SROQ, uniform_env, constants={"M": 4}, T=1000),
    Case(cm.AROQ, lambda: cm.BernoulliArms(MEANS, seed=1)),
    Case(cm.SROQ, lambda: cm.GaussianNoise(MEANS, 0.1 * np.eye(6), seed=1)),
]

# --- covariance-adaptive family (policies/covariance.py)
COV = 0.02 * (np.eye(6) + 0.5 * np.ones((6, 6)))


def gaussian_env() -> cm.environments.Environment:
    return cm.GaussianNoise(MEANS, COV, seed=0)


CASES += [Case(cls, gaussian_env, bad=COMMON_BAD) for cls in (cm.OLSUCBC, cm.AROQCov, cm.SROQCov)]
CASES[-3].T = 120
# the paper's warm-up covers all of T=400; a short one exercises the adaptive pair epochs
CASES += [
    Case(
        cm.AROQCov,
        gaussian_env,
        constants={"warmup_cycles": 2},
        bad=[({"warmup_cycles": -1}, "warmup_cycles"), ({"warmup_cycles": "x"}, "warmup_cycles")],
    ),
    Case(
        cm.SROQCov, gaussian_env, constants={"M": 3}, bad=[({"M": 0}, "M"), ({"pair_fraction": 2.0}, "pair_fraction")]
    ),
]

# --- general-reward family (policies/general.py)
VALUES = [0.2, 0.4, 0.6, 0.8, 1.0]
PROBS = np.array([np.roll([0.99, 0.0025, 0.0025, 0.0025, 0.0025], k) for k in (4, 3, 0, 1, 2, 0)])


def discrete_env() -> cm.environments.Environment:
    return cm.DiscreteArms(VALUES, PROBS, reward="sqrt_sum", seed=0)


CASES += [
    Case(
        cls,
        discrete_env,
        constants={"reward": "sqrt_sum", "support": np.array(VALUES)},
        bad=COMMON_BAD,
    )
    for cls in (cm.SDCB, cm.AROQGR, cm.SROQGR)
]
CASES[-3].T = 120

# --- baselines (policies/thompson.py, policies/escb.py)
BASELINE_BAD = [({"C": 0.0}, "C"), ({"loglog": -1.0}, "loglog"), ({"C": "big"}, "C")]
CASES += [
    Case(
        cm.CTS, uniform_env, T=150, constants={"seed": 3}, bad=[({"prior": "poisson"}, "prior"), ({"seed": -1}, "seed")]
    ),
    Case(
        cm.CTS,
        lambda: cm.GaussianNoise(MEANS, 0.1 * np.eye(6), seed=1),
        T=150,
        constants={"prior": "gaussian", "seed": 2, "sigma": 0.5},
        bad=[({"sigma": -1.0}, "sigma"), ({"sigma": 0.0}, "sigma")],
    ),
    Case(cm.ESCB, uniform_env, T=150, bad=BASELINE_BAD),
    Case(cm.AROQESCB, uniform_env, bad=BASELINE_BAD),
    Case(cm.EpochESCB, uniform_env, T=150, bad=[*BASELINE_BAD, ({"growth": 1.0}, "growth")]),
    Case(cm.AESCB, uniform_env, T=150, bad=[*BASELINE_BAD, ({"eps": 0.0}, "eps")]),
]


def case_id(case: Case) -> str:
    consts = ",".join(f"{k}={v}" for k, v in case.constants.items())
    return f"{case.policy.__name__}[{consts}]-{type(case.make_env()).__name__}"


def registered_cases(cases: list[Case]) -> list:
    """``cases``, then a default case for each registered policy they miss (skipped saying why if it cannot run)."""
    params = [pytest.param(case, id=case_id(case)) for case in cases]
    covered = {case.policy for case in cases}
    for kind in registered_kinds("policy"):
        if not kind.available:
            params.append(pytest.param(None, marks=pytest.mark.skip(reason=kind.unavailable), id=kind.name))
        elif kind.obj not in covered:
            make_env, constants = policy_setup(kind.obj, SPACE)
            case = Case(kind.obj, make_env, constants=constants)
            params.append(pytest.param(case, id=case_id(case)))
    return params


pytestmark = pytest.mark.parametrize("case", registered_cases(CASES))


def played_actions(result: cm.SimulationResult) -> np.ndarray:
    """Per-round actions from a traced run."""
    rows = []
    for _, rounds, actions in result.info["trace"]:
        rows.append(actions[np.arange(rounds) % len(actions)])
    return np.concatenate(rows)


def same_numbers(a: cm.SimulationResult, b: cm.SimulationResult) -> bool:
    return (
        np.array_equal(a.t, b.t)
        and np.allclose(a.regret, b.regret, rtol=1e-12, atol=1e-9)
        and np.array_equal(a.queries, b.queries)
        and np.array_equal(a.rounds, b.rounds)
    )


def test_same_seed_same_numbers(case):
    env = case.make_env()
    first = cm.simulate(case.build(), env, seed=3, trace=True)
    second = cm.simulate(case.build(), env, seed=3, trace=True)
    assert same_numbers(first, second)
    assert np.array_equal(played_actions(first), played_actions(second))


def test_every_played_action_is_feasible(case):
    result = cm.simulate(case.build(), case.make_env(), seed=1, trace=True)
    actions = played_actions(result)
    assert len(actions) == case.T
    distinct = np.unique(actions, axis=0)
    assert all(case.space.contains(a) for a in distinct)


def test_the_ledger_counts_queries_and_rounds(case):
    policy = case.build()
    result = cm.simulate(policy, case.make_env(), seed=2)
    ledger = policy.oracle.ledger
    assert result.queries[-1] == ledger.queries > 0
    assert result.rounds[-1] == ledger.rounds <= ledger.queries
    assert result.oracle_seconds == pytest.approx(ledger.seconds)
    for curve in (result.queries, result.rounds, result.oracle_runtime, result.runtime):
        assert (np.diff(curve) >= 0).all()
    assert result.t[-1] == case.T and len(result.t) == len(result.regret)


def test_reset_and_clone_start_fresh(case):
    env = case.make_env()
    policy = case.build()
    first = cm.simulate(policy, env, seed=5)
    # a half-played policy, then reset, replays the same run
    policy.reset()
    stretch = policy.plan()
    policy.update(1, env.observe(stretch.actions, 1, np.random.default_rng(99), policy.needs))
    assert policy.t == 2
    policy.reset()
    assert policy.t == 1
    again = cm.simulate(policy, env, seed=5)
    clone = policy.clone()
    assert type(clone) is type(policy) and clone.params == policy.params and clone.t == 1
    cloned = cm.simulate(clone, env, seed=5)
    assert same_numbers(first, again) and same_numbers(first, cloned)


def test_bulk_play_equals_round_by_round_play(case):
    env = case.make_env()
    bulk = cm.simulate(case.build(), env, seed=8, trace=True, record=case.T)
    single = cm.simulate(case.build(), env, seed=8, trace=True, record=case.T, bulk=False)
    assert np.array_equal(played_actions(bulk), played_actions(single))
    assert np.array_equal(bulk.t, single.t)
    assert np.allclose(bulk.regret, single.regret, rtol=1e-10, atol=1e-9)
    assert np.array_equal(bulk.queries, single.queries) and np.array_equal(bulk.rounds, single.rounds)


def test_bad_constructor_input_raises_value_error(case):
    common = [
        (lambda: case.policy(case.space, 0, oracle="enumerate", **case.constants), "T"),
        (lambda: case.policy(case.space, 10.5, oracle="enumerate", **case.constants), "T"),
        (lambda: case.policy("not a space", 10, oracle="enumerate", **case.constants), "space"),
        (lambda: case.policy(case.space, 10, oracle=42, **case.constants), "oracle"),
        (lambda: case.policy(case.space, 10, oracle="no-such-backend", **case.constants), "no-such-backend"),
        (
            lambda: case.policy(
                case.space, 10, oracle=cm.make_oracle(cm.Cardinality(3, 1), "enumerate"), **case.constants
            ),
            "d=",
        ),
    ]
    accepted = []
    for k, (build, fragment) in enumerate(common):
        if fragment in case.known_accepted:
            try:
                build()
            except ValueError:
                continue
            accepted.append(fragment)
            continue
        with pytest.raises(ValueError, match=fragment):
            build()
            pytest.fail(f"bad input {k} was accepted")
    for overrides, fragment in case.bad:
        with pytest.raises(ValueError, match=fragment):
            case.build(T=10, **overrides)
    if accepted:
        pytest.xfail(f"known defect: {case.policy.__name__} accepts bad input {accepted}")


def served(policy, env, rounds: int, rng: np.random.Generator, delay: int = 0, queue: list | None = None) -> list:
    """Serve ``rounds`` rounds through select/observe; outcomes drawn at selection, delivered ``delay`` rounds later."""
    queue = [] if queue is None else queue
    actions = []
    for _ in range(rounds):
        action = policy.select()
        actions.append(action)
        queue.append((action, env.sample(action, rng)))
        while len(queue) > delay:
            policy.observe(*queue.pop(0))
    return actions


@pytest.mark.parametrize("horizon", ["case", None])
def test_select_observe_replays_a_simulated_run(case, horizon):
    env = case.make_env()
    result = cm.simulate(case.build(T=horizon), env, case.T, seed=5, trace=True, bulk=False)
    policy = case.build(T=horizon)
    actions = served(policy, env, case.T, np.random.default_rng(5))  # the same stream of outcomes
    assert np.array_equal(np.array(actions), played_actions(result))
    assert policy.oracle.ledger.queries == result.queries[-1]
    assert policy.oracle.ledger.rounds == result.rounds[-1]
    assert policy.t == case.T + 1 and policy.pending == 0 and policy.observed_rounds == case.T


def test_a_saved_learner_continues_exactly(case, tmp_path):
    if policy_classes().get(case.policy.__name__) is not case.policy:
        pytest.skip(f"{case.policy.__name__}: only the library's policies can be saved (save_policy)")
    env = case.make_env()
    half = case.T // 2
    original, rng, queue = case.build(), np.random.default_rng(7), []
    served(original, env, half, rng, delay=3, queue=queue)
    assert original.pending == 3
    path = tmp_path / "learner.npz"
    original.save(path)
    restored = cm.load_policy(path)
    assert type(restored) is type(original) and restored.t == original.t and restored.pending == 3
    assert restored.oracle.ledger.queries == original.oracle.ledger.queries
    rng_copy = np.random.default_rng()
    rng_copy.bit_generator.state = rng.bit_generator.state
    rest = case.T - half
    a = served(original, env, rest, rng, delay=3, queue=list(queue))
    b = served(restored, env, rest, rng_copy, delay=3, queue=list(queue))
    assert np.array_equal(np.array(a), np.array(b))
    assert original.oracle.ledger.queries == restored.oracle.ledger.queries
    assert np.array_equal(original.index.counts, restored.index.counts)


def test_unknown_horizon_runs(case):
    env = case.make_env()
    first = cm.simulate(case.build(T=None), env, case.T, seed=4, trace=True, record=case.T)
    single = cm.simulate(case.build(T=None), env, case.T, seed=4, trace=True, record=case.T, bulk=False)
    actions = played_actions(first)
    assert len(actions) == case.T
    assert all(case.space.contains(a) for a in np.unique(actions, axis=0))
    assert np.array_equal(actions, played_actions(single))
    assert np.array_equal(first.queries, single.queries)
    with pytest.raises(ValueError, match="unknown horizon"):
        cm.simulate(case.build(T=None), env)


def test_playing_past_a_known_horizon_is_refused(case):
    policy = case.build(T=5)
    served(policy, case.make_env(), 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="T=5 rounds and all of them have been played"):
        policy.select()
    with pytest.raises(ValueError, match="exceeds the horizon"):
        cm.simulate(case.build(T=5), case.make_env(), 6)


def test_absurd_horizons_are_refused(case):
    with pytest.raises(ValueError, match="2\\*\\*53"):
        case.build(T=2**70)
    case.build(T=2**53)  # the largest accepted horizon builds (grids, warm-ups and thresholds stay finite)
