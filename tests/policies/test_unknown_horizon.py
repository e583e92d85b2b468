"""Unknown horizons (``T=None``): the anytime threshold, the phases of the SROQ family, and their counts.

Every policy running with ``T=None`` (feasible actions, bulk equal to
round-by-round play) is checked in ``test_policy_conformance.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.policies.anytime import anytime_scale, first_horizon, next_horizon
from cmab_milp.policies.schedules import default_epochs, sroq_grid

SPACE = cm.Cardinality(6, 2)
MEANS = np.array([0.9, 0.85, 0.2, 0.4, 0.6, 0.1])


def env():
    return cm.BernoulliArms(MEANS, seed=0)


def guesses_up_to(T: int) -> list[int]:
    """The horizon guesses a run of ``T`` rounds goes through, computed by hand from H_0 = 256, H' = ceil(H^1.5)."""
    out = [256]
    while out[-1] < T:
        h = out[-1]
        nxt = math.isqrt(h**3)
        out.append(nxt if nxt * nxt == h**3 else nxt + 1)
    return out


def test_the_guesses_grow_as_the_three_halves_power():
    assert first_horizon() == 256
    h = first_horizon()
    for expected in guesses_up_to(10**12)[1:]:
        h = next_horizon(h)
        assert h == expected >= math.ceil(h ** (2 / 3))  # exact integers, no float rounding
    assert next_horizon(2**52) == 2**53
    with pytest.raises(ValueError, match="2\\*\\*53"):
        next_horizon(2**53)


def test_sroq_phases_restart_the_grid_at_each_guess():
    T = 20000
    policy = cm.SROQ(SPACE, None, oracle="enumerate")
    result = cm.simulate(policy, env(), T, seed=1, trace=True)
    guesses = guesses_up_to(T)
    # independent count: each phase (start, end] runs default_epochs(end) epochs of its own grid
    starts, start = [], 1
    for h in guesses:
        grid = start - 1 + sroq_grid(h - start + 1, default_epochs(h))
        starts += [int(g) for g in grid if g <= T]
        start = h + 1
    assert [e["start"] for e in policy.history] == starts
    assert result.rounds[-1] == len(starts)
    # no stretch crosses a guess
    for first, rounds, _ in result.info["trace"]:
        assert not any(first <= h < first + rounds - 1 for h in guesses)


def test_sroq_adaptivity_grows_as_loglog_squared():
    """Adaptivity = sum over phases of ceil(log2 log2 H_k): bounded by (log2 log2 T + 2)^2."""
    for T in (10**3, 10**5, 10**7):
        rounds = 0
        for h in guesses_up_to(T):
            rounds += default_epochs(h)
        assert rounds <= (math.log2(math.log2(T)) + 2) ** 2


def test_aroq_threshold_uses_the_anytime_scale():
    policy = cm.AROQ(SPACE, None, oracle="enumerate")
    cm.simulate(policy, env(), 500, seed=0)
    scale = anytime_scale(policy.t, 0.5)  # the default anytime_log_power
    expected = 1 + np.sqrt(scale * policy.m * policy.previous / policy.d)
    assert np.allclose(policy.thresholds(), expected)
    assert anytime_scale(1) == 1 and anytime_scale(100) == pytest.approx(100 * math.log(100))


def test_aroq_unknown_horizon_learns_and_asks_rarely():
    T = 20000
    known = cm.simulate(cm.AROQ(SPACE, T, oracle="enumerate"), env(), T, seed=2)
    unknown = cm.simulate(cm.AROQ(SPACE, None, oracle="enumerate"), env(), T, seed=2)
    assert unknown.regret[-1] <= 2 * known.regret[-1]
    assert unknown.queries[-1] <= 4 * known.queries[-1] < T / 50


def test_covariance_and_general_policies_with_unknown_horizon():
    policy = cm.AROQCov(SPACE, None, oracle="enumerate")
    assert policy.warmup_rounds == 21  # one pass over the d (d + 1) / 2 pairs (the paper's log^3 T needs T)
    with pytest.raises(ValueError, match="discretise=<int>"):
        cm.AROQGR(SPACE, None, oracle="enumerate", discretise=True)
    gr = cm.SROQGR(SPACE, None, oracle="enumerate", discretise=8)
    assert len(gr.index.grid) == 8
    cov = cm.SROQCov(SPACE, None, oracle="enumerate")
    cm.simulate(cov, cm.GaussianNoise(MEANS, 0.01 * np.eye(6), seed=0), 5000, seed=0)
    assert cov.history[0]["start"] == cov.warmup_rounds + 1 == 22
    assert cov.horizon == 262144  # 256 -> 4096 -> 262144: two new guesses by round 5000


def test_simulate_needs_a_horizon_and_respects_a_known_one():
    with pytest.raises(ValueError, match="pass the number of rounds"):
        cm.simulate(cm.AROQ(SPACE, None, oracle="enumerate"), env())
    with pytest.raises(ValueError, match="exceeds the horizon"):
        cm.simulate(cm.SROQ(SPACE, 100, oracle="enumerate"), env(), 101)


def test_a_saved_unknown_horizon_learner_continues_across_guesses(tmp_path):
    """Saved inside the first phase, restored, and continued past two new guesses."""
    original = cm.SROQ(SPACE, None, oracle="enumerate")
    rng = np.random.default_rng(5)
    draws = rng.random((5000, 6))
    for t in range(5000):
        if t == 200:
            original.save(tmp_path / "p.npz")
            restored = cm.load_policy(tmp_path / "p.npz")
        a = original.select()
        y = np.where(a, (draws[t] < MEANS).astype(float), np.nan)
        original.observe(a, y)
        if t >= 200:
            assert np.array_equal(restored.select(), a)
            restored.observe(a, y)
    assert restored.horizon == original.horizon == 262144
    assert restored.history == original.history


@pytest.mark.slow
def test_unknown_horizon_targets_in_the_figure_2_setting():
    """The targets at T = 10^5 (bench/unknown_horizon.py measures 10^4 .. 10^7)."""
    means = np.random.default_rng(0).uniform(size=20)
    space, figure = cm.Cardinality(20, 3), cm.UniformNoise(means, width=0.5)
    T = 10**5
    for cls in (cm.AROQ, cm.SROQ):
        known = [cm.simulate(cls(space, T, oracle="combinatorial"), figure, T, seed=s) for s in range(5)]
        unknown = [cm.simulate(cls(space, None, oracle="combinatorial"), figure, T, seed=s) for s in range(5)]
        regret = np.mean([r.regret[-1] for r in unknown]) / np.mean([r.regret[-1] for r in known])
        queries = np.mean([r.queries[-1] for r in unknown]) / np.mean([r.queries[-1] for r in known])
        assert regret <= 1.5 and queries <= 4, (cls.name, regret, queries)


def test_aroq_anytime_log_power_sets_the_threshold_scale():
    """``g(t) = t max(1, ln t)^p``: the threshold of a run with ``p = 0.5`` is that closed form, and ``p``
    survives a save and load; the default is ``p = 1/2``, recorded in ``params`` when ``T=None`` only."""
    policy = cm.AROQ(SPACE, None, oracle="enumerate", anytime_log_power=0.5)
    cm.simulate(policy, env(), 500, seed=0)
    g = policy.t * math.sqrt(math.log(policy.t))
    assert np.allclose(policy.thresholds(), 1 + np.sqrt(g * policy.m * policy.previous / policy.d))
    assert policy.params["anytime_log_power"] == 0.5
    assert cm.AROQ(SPACE, None, oracle="enumerate").params["anytime_log_power"] == 0.5
    assert "anytime_log_power" not in cm.AROQ(SPACE, 100, oracle="enumerate").params  # unused with T
    assert policy.clone().params == policy.params
    assert anytime_scale(100, 0.0) == 100 and anytime_scale(100, 0.5) == pytest.approx(100 * math.log(100) ** 0.5)


def test_aroq_with_a_smaller_anytime_scale_asks_more_but_holds_less():
    """Shorter late epochs: at least as many queries as ``p = 1`` on the same run (the thresholds are
    pointwise smaller), still far fewer than one a round."""
    T = 20000
    runs = {
        p: cm.simulate(cm.AROQ(SPACE, None, oracle="enumerate", anytime_log_power=p), env(), T, seed=2)
        for p in (1.0, 0.5)
    }
    assert runs[1.0].queries[-1] <= runs[0.5].queries[-1] < T / 50


@pytest.mark.parametrize("bad", [-0.5, float("inf"), "half", True])
def test_aroq_anytime_log_power_refuses_bad_values(bad):
    with pytest.raises(ValueError, match="anytime_log_power"):
        cm.AROQ(SPACE, None, oracle="enumerate", anytime_log_power=bad)
