"""The certified approximate mode of norm queries: ``make_oracle(space, "highs", norm_gap=...)``.

Judged against brute force: every approximate answer's proven ratio is at
most its true ratio to the optimum (so its value is at least ``ratio *
optimum``), the ledger counts it and keeps the worst ratio, a time limit
returns the best action found with its ratio instead of raising, and without
``norm_gap`` nothing changes (exact answers, ``LimitReached`` on the limit).
"""

from __future__ import annotations

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import LimitReached
from cmab_milp.oracles.core.queries import norm_objective
from cmab_milp.oracles.norm import solver as norm_solver


def instance(seed: int, d: int = 16, m: int = 6):
    """A cardinality space, positive means and a PSD ``M`` whose norm term matters (f = 1)."""
    rng = np.random.default_rng(seed)
    space = cm.Cardinality(d, m)
    a = rng.normal(size=(d, d))
    return space, rng.uniform(0.2, 1.0, d), a @ a.T / d, space.enumerate()


def optimum(mu, M, f, sign, actions) -> float:
    return max(norm_objective(mu, M, f, sign, x) for x in actions)


@pytest.mark.parametrize("sign", [1, -1])
def test_norm_gap_answers_keep_their_proven_ratio_against_brute_force(sign: int) -> None:
    seen_approximate = 0
    for seed in range(6):
        space, mu, M, actions = instance(seed)
        f = 1.0 if sign > 0 else 0.3
        oracle = cm.make_oracle(space, "highs", norm_gap=0.3)
        best = optimum(mu, M, f, sign, actions)
        answer = oracle.argmax_norm(mu, M, f, sign)
        value = norm_objective(mu, M, f, sign, answer)
        assert space.contains(answer)
        ratio = oracle.proven_ratio
        assert 0.7 - 1e-12 <= ratio <= 1.0
        assert ratio <= value / best + 1e-9  # proven, so never above the true ratio
        assert value >= ratio * best - 1e-9 * (1 + abs(best))
        seen_approximate += oracle.ledger.approximate
    if sign > 0:  # the outer approximation stops at its first MILP here: the mode is exercised
        assert seen_approximate > 0, "no early stop: the instances no longer exercise the mode"


@pytest.mark.parametrize("sign", [1, -1])
def test_norm_gap_zero_is_exact(sign: int) -> None:
    space, mu, M, actions = instance(7)
    oracle = cm.make_oracle(space, "highs", norm_gap=0.0)
    best = optimum(mu, M, 1.0, sign, actions)
    value = norm_objective(mu, M, 1.0, sign, oracle.argmax_norm(mu, M, 1.0, sign))
    assert value >= best - 1e-9 * (1 + abs(best))
    assert oracle.proven_ratio == 1.0 and oracle.ledger.approximate == 0


def _expired_clock(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """The solver's clock jumps an hour ahead after ``after`` readings (a time limit that ends mid-query)."""
    readings = {"n": 0}
    real = norm_solver._clock

    def clock() -> float:
        readings["n"] += 1
        return real() + (3600.0 if readings["n"] > after else 0.0)

    monkeypatch.setattr(norm_solver, "_clock", clock)


def test_time_limit_with_norm_gap_returns_the_best_action_with_its_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    space, mu, M, actions = instance(11, d=18, m=7)
    best = optimum(mu, M, 2.0, 1, actions)
    _expired_clock(monkeypatch, after=2)  # the deadline passes during the first MILP
    oracle = cm.make_oracle(space, "highs", norm_gap=0.0, time_limit=30.0)
    answer = oracle.argmax_norm(mu, M, 2.0, 1)
    value = norm_objective(mu, M, 2.0, 1, answer)
    ratio = oracle.proven_ratio
    assert space.contains(answer)
    assert 0.0 < ratio <= value / best + 1e-9
    assert value >= ratio * best - 1e-9 * (1 + best)


def test_time_limit_without_norm_gap_still_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    space, mu, M, _ = instance(11, d=18, m=7)
    _expired_clock(monkeypatch, after=2)
    oracle = cm.make_oracle(space, "highs", time_limit=30.0)
    with pytest.raises(LimitReached):
        oracle.argmax_norm(mu, M, 2.0, 1)


def test_norm_gap_leaves_linear_queries_exact() -> None:
    space, mu, _, actions = instance(3)
    oracle = cm.make_oracle(space, "highs", norm_gap=0.5)
    w = mu - 0.6
    assert float(w @ oracle.argmax(w)) == pytest.approx(float((actions @ w).max()), abs=1e-9)
    assert oracle.ledger.approximate == 0


@pytest.mark.parametrize("bad", [1.0, -0.1, "0.1", True, float("nan")])
def test_bad_norm_gap_is_refused_before_any_work(bad) -> None:
    with pytest.raises(ValueError, match=r"norm_gap must be a number in \[0, 1\)"):
        cm.make_oracle(cm.Cardinality(4, 2), "highs", norm_gap=bad)


def test_norm_gap_on_a_backend_without_it_is_refused() -> None:
    with pytest.raises(ValueError, match="norm_gap"):
        cm.make_oracle(cm.Cardinality(4, 2), "enumerate", norm_gap=0.1)


def _cov_problem(policy: dict) -> dict:
    return {
        "space": {"kind": "Cardinality", "d": 8, "m": 3},
        "environment": {"kind": "PaperGaussianNoise", "means": [0.1, 0.3, 0.5, 0.7, 0.8, 0.2, 0.6, 0.4], "cov_seed": 1},
        "policies": [{"name": "P", "kind": "OLSUCBC", "oracle": "highs", **policy}],
        "run": {"horizon": 60, "seeds": 1},
    }


def test_problem_file_norm_gap_reaches_the_oracle_and_summary_reports_alpha(tmp_path) -> None:
    import json

    from cmab_milp.experiments import parse_problem, run_problem

    problem = parse_problem(_cov_problem({"norm_gap": 0.5, "time_limit": 5}), "ngap.toml")
    built = problem.build_policy("P")
    assert built.oracle.norm_gap == 0.5 and built.oracle.gap is None
    assert problem.to_dict()["policies"][0]["norm_gap"] == 0.5
    run_problem(problem, tmp_path / "out", jobs=1, plots=False)
    stored = json.loads((tmp_path / "out" / "summary.json").read_text())
    summary = stored["policies"]["P"]
    assert 0.5 <= summary["alpha"]["mean"] <= 1.0  # whatever ratio the oracle proved, at least 1 - norm_gap
    assert "alpha_regret" in summary
    assert stored["policy_info"]["P"]["oracle_options"] == {"norm_gap": 0.5, "time_limit": 5.0}


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [({"oracle": "enumerate", "norm_gap": 0.1}, "takes no norm_gap option"), ({"norm_gap": 1.0}, "in [0, 1)")],
)
def test_problem_file_refuses_a_bad_norm_gap(entry, fragment) -> None:
    from cmab_milp.experiments import parse_problem

    with pytest.raises(ValueError, match=r"ngap\.toml") as info:
        parse_problem(_cov_problem(entry), "ngap.toml")
    assert "policies[0].norm_gap" in str(info.value) and fragment in str(info.value)
