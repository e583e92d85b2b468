"""Off-policy estimators against the truth of synthetic logs: interval coverage, mean error, refusals.

The acceptance check (slow): on cardinality, matching and path spaces, under uniform, non-uniform and
drifting logging (three phases with different distributions, so an arm's inclusion changes within the
log and the per-arm estimators differ), each estimator's 95% interval covers the true value
``pi @ means`` in at least 92 of 100 seeds and its mean error over the seeds is within 3 standard
errors of 0. The default run checks a smaller version (25 seeds, shorter logs) with binomial bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
from logged_synthetic import setting

import cmab_milp as cm
from cmab_milp.logged.estimators import ESTIMATORS

CONFIGS = [(s, g) for s in ("cardinality", "matching", "paths") for g in ("uniform", "nonuniform", "drifting")]


def _coverage(space: str, logging: str, seeds: int, rounds: int) -> dict[str, tuple[int, float, float]]:
    """Per estimator: seeds covered, mean error, standard error of the mean error."""
    st = setting(space, logging)
    target = st.actions[0]  # the action the non-uniform logging policy plays least: the hardest to value
    truth = float(st.means @ target)
    covered = dict.fromkeys(ESTIMATORS, 0)
    errors: dict[str, list[float]] = {e: [] for e in ESTIMATORS}
    for seed in range(seeds):
        log, _ = st.draw(rounds, seed)
        for estimator in ESTIMATORS:
            est = cm.offline_value(target, log, estimator=estimator, level=0.95)
            covered[estimator] += est.low <= truth <= est.high
            errors[estimator].append(est.value - truth)
    return {e: (covered[e], float(np.mean(x)), float(np.std(x, ddof=1) / np.sqrt(seeds))) for e, x in errors.items()}


def _check(space: str, logging: str, seeds: int, rounds: int, min_covered: int) -> None:
    for estimator, (covered, mean_error, se) in _coverage(space, logging, seeds, rounds).items():
        assert covered >= min_covered, f"{estimator} on {space}/{logging}: covered {covered} of {seeds}"
        assert abs(mean_error) <= 3 * se, f"{estimator} on {space}/{logging}: mean error {mean_error} (se {se})"


@pytest.mark.slow
@pytest.mark.parametrize(("space", "logging"), CONFIGS)
def test_every_interval_covers_the_truth_in_92_of_100_seeds(space, logging):
    _check(space, logging, seeds=100, rounds=4000, min_covered=92)


def test_intervals_cover_the_truth_on_a_smaller_run():
    """25 seeds per setting: a correct 95% interval covers fewer than 20 of 25 with probability 0.12%, and
    fewer than 204 of the 225 seeds pooled over the nine settings with probability 0.22% (binomial)."""
    pooled = dict.fromkeys(ESTIMATORS, 0)
    for space, logging in CONFIGS:
        for estimator, (covered, mean_error, se) in _coverage(space, logging, seeds=25, rounds=1000).items():
            assert covered >= 20, f"{estimator} on {space}/{logging}: covered {covered} of 25"
            assert abs(mean_error) <= 3 * se, f"{estimator} on {space}/{logging}: mean error {mean_error} (se {se})"
            pooled[estimator] += covered
    assert min(pooled.values()) >= 204, pooled


def test_targets_given_three_ways_agree():
    st = setting("cardinality", "nonuniform")
    log, _ = st.draw(2000, 0)
    a, b = st.actions[0], st.actions[5]
    mixture = [(a, 0.25), (b, 0.75)]
    inclusion = 0.25 * a + 0.75 * b
    for estimator in ("ips", "snips", "dm", "dr", "pseudoinverse"):
        one = cm.offline_value(mixture, log, estimator=estimator)
        two = cm.offline_value(inclusion, log, estimator=estimator)
        assert one.value == pytest.approx(two.value, rel=1e-12)
        # linear in the target: the mixture's value is the mixture of the values
        va = cm.offline_value(a, log, estimator=estimator).value
        vb = cm.offline_value(b, log, estimator=estimator).value
        assert one.value == pytest.approx(0.25 * va + 0.75 * vb, rel=1e-9)


def test_ips_by_hand_and_the_interval_is_the_normal_one():
    space = cm.Cardinality(2, 1, exact=True)
    log = cm.LoggedFeedback(space, [0, 1, 2, 3], [0, 1, 0, 1], [1.0, 0.0, 0.0, 1.0], inclusion=[0.5, 0.5, 0.25, 0.75])
    est = cm.offline_value(np.array([True, False]), log, estimator="ips", level=0.9)
    terms = np.array([1.0 / 0.5, 0.0, 0.0, 0.0])
    assert est.value == pytest.approx(terms.mean())
    se = terms.std(ddof=1) / 2
    assert est.se == pytest.approx(se)
    assert est.high - est.value == pytest.approx(1.6448536269514722 * se)
    assert (est.n, est.estimator, est.level) == (4, "ips", 0.9)


def test_dm_is_the_sum_of_the_arm_means_and_snips_weights_by_inverse_inclusion():
    space = cm.Cardinality(2, 1, exact=True)
    log = cm.LoggedFeedback(space, [0, 1, 2], [0, 0, 1], [1.0, 0.0, 0.5], inclusion=[0.5, 0.25, 0.5])
    assert cm.offline_value(np.array([True, False]), log, estimator="dm").value == pytest.approx(0.5)
    # weights 2 and 4: (2 * 1 + 4 * 0) / 6
    assert cm.offline_value(np.array([True, False]), log, estimator="snips").value == pytest.approx(1 / 3)


def test_whole_action_ips_uses_action_propensities():
    space = cm.Cardinality(2, 1, exact=True)
    log = cm.LoggedFeedback(space, [0, 1, 2], [0, 1, 0], [1.0, 1.0, 0.0], action_propensity=[0.5, 0.5, 0.5])
    est = cm.offline_value(np.array([True, False]), log, estimator="ips")
    assert est.value == pytest.approx((1 / 0.5 + 0 + 0) / 3)
    assert any("whole-action" in note for note in est.notes)


def test_a_target_needing_an_arm_never_logged_is_refused():
    space = cm.Cardinality(3, 1, exact=True)
    log = cm.LoggedFeedback(space, [0, 1], [0, 1], [1.0, 0.0])
    for estimator in ESTIMATORS:
        with pytest.raises(ValueError, match=r"never includes: \[2\]"):
            cm.offline_value(np.array([False, False, True]), log, estimator=estimator)
        with pytest.raises(ValueError, match="never includes"):
            cm.offline_value(np.array([0.5, 0.0, 0.5]), log, estimator=estimator)


def test_pseudoinverse_refuses_arms_the_log_never_separates():
    space = cm.Cardinality(4, 2)
    # arms 0 and 1 always together, 2 and 3 always together: arm 0 alone cannot be valued from whole rewards
    log = cm.LoggedFeedback(space, [0, 0, 1, 1], [0, 1, 2, 3], [1.0, 0.0, 0.5, 0.5])
    with pytest.raises(ValueError, match="not identified"):
        cm.offline_value(np.array([1.0, 0.0, 0.0, 0.0]), log, estimator="pseudoinverse")
    pair = cm.offline_value(np.array([True, True, False, False]), log, estimator="pseudoinverse")
    assert pair.value == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (np.array([True, True, True]), "not an action of the space"),
        ([(np.array([True, False, False]), 0.5)], "sum to 1"),
        (np.array([0.5, 1.5, 0.0]), r"\[0, 1\]"),
        ("abc", "target must be"),
    ],
)
def test_bad_targets_are_refused(target, message):
    space = cm.Cardinality(3, 1)
    log = cm.LoggedFeedback(space, [0, 1, 2], [0, 1, 2], [1.0, 0.0, 0.5])
    with pytest.raises(ValueError, match=message):
        cm.offline_value(target, log)


def test_bad_estimator_and_level_are_refused():
    space = cm.Cardinality(2, 1)
    log = cm.LoggedFeedback(space, [0, 1], [0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="unknown estimator 'ipw'"):
        cm.offline_value(np.array([True, False]), log, estimator="ipw")
    with pytest.raises(ValueError, match="level"):
        cm.offline_value(np.array([True, False]), log, level=95)
