"""The shared schedules: every policy's behaviour pinned bit for bit, and the hooks they expose.

``tests/data/schedules/`` holds fingerprints of runs made by the code *before*
the covariance policies moved onto the shared schedules (commit 1723349): for
all nine policies, several instances and seeds, known and unknown horizons,
bulk simulation and online ``select`` / ``observe`` with late feedback, a
SHA-256 of every stretch played (start, length, actions), the query and
adaptivity counts and the regret (exact floats). Learners saved mid-run by that
code must still load and continue exactly as it did. Regenerate (only when a
change of behaviour is intended, and say so) with
``PYTHONPATH=. python tests/policies/test_schedules.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm

DATA = Path(__file__).resolve().parents[1] / "data" / "schedules"
FINGERPRINTS = DATA / "fingerprints.json"

SPACE = cm.Cardinality(6, 2).with_constraint([1, 1, 0, 0, 0, 0], "<=", 1)
MEANS = np.array([0.9, 0.85, 0.2, 0.4, 0.6, 0.1])
COV = 0.02 * (np.eye(6) + 0.5 * np.ones((6, 6)))
VALUES = [0.2, 0.4, 0.6, 0.8, 1.0]
PROBS = np.array([np.roll([0.99, 0.0025, 0.0025, 0.0025, 0.0025], k) for k in (4, 3, 0, 1, 2, 0)])
GENERAL = {"reward": "sqrt_sum", "support": np.array(VALUES)}
PATHS = cm.STPaths(nx.DiGraph([(0, 1), (1, 3), (0, 2), (2, 3), (1, 2), (0, 3)]), 0, 3)


def uniform(seed: int) -> Any:
    return cm.UniformNoise(MEANS, width=0.5, seed=seed)


def gaussian(seed: int) -> Any:
    return cm.GaussianNoise(MEANS, COV, seed=seed)


def discrete(seed: int) -> Any:
    return cm.DiscreteArms(VALUES, PROBS, reward="sqrt_sum", seed=seed)


def path_gaussian(seed: int) -> Any:
    d = PATHS.d
    return cm.GaussianNoise(np.linspace(0.2, 0.8, d), 0.03 * (np.eye(d) + 0.3), seed=seed)


#: name -> (policy class, constants, space, environment builder)
CASES: dict[str, tuple[type, dict[str, Any], Any, Callable[[int], Any]]] = {
    "CUCB": (cm.CUCB, {}, SPACE, uniform),
    "AROQ": (cm.AROQ, {}, SPACE, uniform),
    # AROQ's anytime default until December 2026 (p = 1): its files were saved by that code, without the key
    "AROQ-p1": (cm.AROQ, {"anytime_log_power": 1.0}, SPACE, uniform),
    "AROQ-alpha": (cm.AROQ, {"alpha": 0.5, "C": 2.0, "anytime_log_power": 1.0}, SPACE, uniform),
    "SROQ": (cm.SROQ, {}, SPACE, uniform),
    "SROQ-M4": (cm.SROQ, {"M": 4}, SPACE, uniform),
    "OLS-UCB-C": (cm.OLSUCBC, {}, SPACE, gaussian),
    "AROQ-C": (cm.AROQCov, {}, SPACE, gaussian),
    "AROQ-C-w2": (cm.AROQCov, {"warmup_cycles": 2}, SPACE, gaussian),
    "AROQ-C-w0.5-paths": (cm.AROQCov, {"warmup_cycles": 0.5, "f_scale": 0.5}, PATHS, path_gaussian),
    "SROQ-C": (cm.SROQCov, {}, SPACE, gaussian),
    "SROQ-C-M3": (cm.SROQCov, {"M": 3}, SPACE, gaussian),
    "SROQ-C-half-paths": (cm.SROQCov, {"pair_fraction": 0.5, "warmup_cycles": 2, "M": 4}, PATHS, path_gaussian),
    "SROQ-C-w0": (cm.SROQCov, {"warmup_cycles": 0, "pair_fraction": 0.3}, SPACE, gaussian),
    "SDCB": (cm.SDCB, GENERAL, SPACE, discrete),
    "AROQ-GR": (cm.AROQGR, GENERAL, SPACE, discrete),
    "SROQ-GR": (cm.SROQGR, GENERAL, SPACE, discrete),
}
RUNS = [(T, seed) for T in (700, None) for seed in (0, 4)]
ROUNDS = 700  # rounds played (with T=None: past the first horizon guess, 256)
SAVE_AT, DELAY = 300, 3


def build(name: str, T: int | None) -> Any:
    cls, constants, space, _ = CASES[name]
    return cls(space, T, oracle="enumerate", **constants)


def digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(np.ascontiguousarray(part).tobytes() if isinstance(part, np.ndarray) else repr(part).encode())
    return h.hexdigest()


def simulated(name: str, T: int | None, seed: int) -> str:
    """Fingerprint of a bulk simulation: every stretch, the counts and the regret curve."""
    policy, env = build(name, T), CASES[name][3](seed)
    result = cm.simulate(policy, env, ROUNDS, seed=seed, trace=True, record=50)
    stretches = [(int(t), int(n), a) for t, n, a in result.info["trace"]]
    parts: list[Any] = [result.t, result.regret, result.queries, result.rounds]
    for t, n, a in stretches:
        parts += [t, n, a]
    return digest(*parts)


def outcomes(policy: Any, action: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if isinstance(policy, (cm.SDCB, cm.AROQGR, cm.SROQGR)):
        y = rng.choice(VALUES, size=policy.d)
    else:
        y = rng.random(policy.d)
    return np.where(action, y, np.nan)


def online(policy: Any, rounds: int, rng: np.random.Generator, queue: list) -> list[np.ndarray]:
    """``rounds`` selections, each observed ``DELAY`` selections later (late feedback)."""
    selected = []
    for _ in range(rounds):
        a = policy.select()
        selected.append(a)
        queue.append((a, outcomes(policy, a, rng)))
        if len(queue) > DELAY:
            policy.observe(*queue.pop(0))
    return selected


def online_run(name: str, T: int | None, seed: int, path: Path | None = None) -> tuple[str, str]:
    """Fingerprints of an online run before and after ``SAVE_AT`` (saving the learner at that point to ``path``)."""
    policy, rng, queue = build(name, T), np.random.default_rng(seed), []
    first = online(policy, SAVE_AT, rng, queue)
    if path is not None:
        policy.save(path)
    rest = online(policy, ROUNDS - SAVE_AT, rng, queue)
    return digest(*first, policy.oracle.ledger.queries), digest(*rest)


def saved_name(name: str, T: int | None) -> str:
    return f"{name}-T{T}.npz"


def write() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    table: dict[str, Any] = {}
    for name in CASES:
        for T, seed in RUNS:
            path = DATA / saved_name(name, T) if seed == 0 else None
            before, after = online_run(name, T, seed, path)
            table[f"{name}|{T}|{seed}"] = {"simulate": simulated(name, T, seed), "online": before, "resumed": after}
    FINGERPRINTS.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


def golden() -> dict[str, Any]:
    return json.loads(FINGERPRINTS.read_text())


KEYS = [(name, T, seed) for name in CASES for T, seed in RUNS]


@pytest.mark.parametrize(("name", "T", "seed"), KEYS, ids=[f"{n}-T{T}-s{s}" for n, T, s in KEYS])
def test_simulation_is_unchanged_bit_for_bit(name, T, seed):
    assert simulated(name, T, seed) == golden()[f"{name}|{T}|{seed}"]["simulate"]


@pytest.mark.parametrize(("name", "T", "seed"), KEYS, ids=[f"{n}-T{T}-s{s}" for n, T, s in KEYS])
def test_online_play_with_late_feedback_is_unchanged(name, T, seed):
    before, after = online_run(name, T, seed)
    expected = golden()[f"{name}|{T}|{seed}"]
    assert (before, after) == (expected["online"], expected["resumed"])


SAVED = [(name, T) for name in CASES for T in (700, None)]


@pytest.mark.parametrize(("name", "T"), SAVED, ids=[f"{n}-T{T}" for n, T in SAVED])
def test_learners_saved_by_the_old_code_load_and_continue(name, T):
    policy = cm.load_policy(DATA / saved_name(name, T))
    assert type(policy) is CASES[name][0] and policy.pending == DELAY
    # the generator's rng and queue at the save point: replay the first part to rebuild them
    rng, queue = np.random.default_rng(0), []
    online(build(name, T), SAVE_AT, rng, queue)
    rest = online(policy, ROUNDS - SAVE_AT, rng, queue)
    assert digest(*rest) == golden()[f"{name}|{T}|0"]["resumed"]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: PYTHONPATH=. python tests/policies/test_schedules.py --write")
    write()


# ------------------------------------------------------------------ the hooks themselves
class WarmAROQ(cm.policies.schedules.AdaptiveEpochs):
    """AROQ with an arm warm-up: a combination the shared schedule allows and no library class uses."""

    name = "AROQ-warm"

    def __init__(self, space, T, *, oracle="enumerate", warmup_cycles=1.0):
        super().__init__(space, T, oracle=oracle, warmup_cycles=warmup_cycles)

    def make_index(self):
        return cm.policies.linear.LinearIndex(self.d)


class PairSROQ(cm.policies.schedules.ScheduledElimination):
    """SROQ's linear index on the pair schedule of Algorithm 4 (pair representatives, forbidden pairs)."""

    name = "SROQ-pairs"
    unit = "pair"

    def __init__(self, space, T, *, oracle="enumerate", M=None, warmup_cycles=1.0, pair_fraction=0.5):
        super().__init__(space, T, oracle=oracle, M=M, warmup_cycles=warmup_cycles, pair_fraction=pair_fraction)

    def make_index(self):
        return cm.policies.linear.LinearIndex(self.d)


def per_round(result: Any) -> np.ndarray:
    return np.concatenate([a[np.arange(n) % len(a)] for _, n, a in result.info["trace"]])


@pytest.mark.parametrize("unit", ["arm", "pair"])
def test_unit_counts_match_counting_the_rounds(unit):
    policy = (WarmAROQ if unit == "arm" else PairSROQ)(SPACE, 100)
    rng = np.random.default_rng(0)
    for p, rounds in [(1, 7), (3, 1), (3, 8), (4, 4), (5, 13)]:
        actions = rng.random((p, policy.d)) < 0.5
        got = policy.unit_counts(cm.policies.base.Stretch(actions, rounds), rounds)
        played = actions[np.arange(rounds) % p].astype(int)
        expected = played.sum(axis=0) if unit == "arm" else played.T @ played
        assert np.array_equal(got, expected)


def test_an_arm_warm_up_plays_one_action_per_arm_then_algorithm_1_runs():
    T, cycles, d, m = 3000, 2.5, SPACE.d, SPACE.m
    policy = WarmAROQ(SPACE, T, warmup_cycles=cycles)
    result = cm.simulate(policy, uniform(0), seed=0, trace=True)
    warm = math.ceil(cycles * d)
    assert policy.warmup_rounds == warm
    actions = per_round(result)
    feasible = SPACE.enumerate()
    for t in range(warm):  # round t + 1 plays, for arm t % d, an action holding it with the most arms
        arm = t % d
        assert actions[t][arm] and actions[t].sum() == max(a.sum() for a in feasible if a[arm])
    # Algorithm 1 recounted from the rounds played: the warm-up is epoch 0, then epochs end at the threshold
    epochs, previous, current, updates = np.ones(d, int), actions[:warm].sum(axis=0), np.zeros(d, int), 0
    for t in range(warm, T):
        due = current >= 1 + np.sqrt(T * m * previous / d)
        if due.any() or t == warm:
            epochs[due] += 1
            previous[due], current[due] = current[due], 0
            updates += 1
        else:
            assert np.array_equal(actions[t], actions[t - 1]), f"the action changed without an update at round {t + 1}"
        current += actions[t]
    assert np.array_equal(policy.epochs, epochs) and policy.updates == updates
    assert result.rounds[-1] == 1 + updates  # the warm-up batch, then one round per update


def test_a_pair_schedule_with_a_linear_index_plays_only_what_its_eliminations_allow():
    T = 3000
    policy, env, rng = PairSROQ(SPACE, T, M=4), uniform(3), np.random.default_rng(3)
    allowed, forbidden, epochs = set(range(SPACE.d)), set(), 0
    for _ in range(T):
        arms_before, pairs_before = set(np.flatnonzero(policy.active).tolist()), set(policy.forbidden)
        a = policy.select()
        if len(policy.history) > epochs:  # an epoch started: its batch was asked under the eliminations before it
            epochs, allowed, forbidden = len(policy.history), arms_before, pairs_before
        held = set(np.flatnonzero(a).tolist())
        assert SPACE.contains(a) and held <= allowed
        assert not any(i in held and j in held for i, j in forbidden)
        policy.observe(a, np.where(a, env.sample(a, rng), np.nan))
    assert forbidden and policy.oracle.ledger.rounds == 1 + epochs  # warm-up batch + one batch per epoch
    assert epochs == len(policy.grid) and any(h["pairs"] < SPACE.d * (SPACE.d - 1) // 2 for h in policy.history)


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: WarmAROQ(SPACE, 10, warmup_cycles=-1), "warmup_cycles"),
        (lambda: WarmAROQ(SPACE, 10, warmup_cycles="x"), "warmup_cycles"),
        (lambda: WarmAROQ(SPACE, 10, warmup_cycles=float("inf")), "warmup_cycles"),
        (lambda: PairSROQ(SPACE, 10, pair_fraction=1.5), "pair_fraction"),
        (lambda: PairSROQ(SPACE, 10, pair_fraction=-0.1), "pair_fraction"),
        (lambda: cm.SROQCov(SPACE, 10, oracle="enumerate", warmup_cycles=None), "warmup_cycles"),
        (lambda: type("Triples", (PairSROQ,), {"unit": "triple"})(SPACE, 10), "unit"),
    ],
)
def test_bad_schedule_parameters_are_refused(build, fragment):
    with pytest.raises(ValueError, match=fragment):
        build()
