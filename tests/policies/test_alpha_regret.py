"""Alpha-regret with a proven ratio (Algorithm 5): AROQ(alpha="proven"), the runner, problem files.

A stand-in approximate backend plays the certified approximate mode before
the real one is merged: it answers the best single arm of the exact answer
(weights >= 0 make that at least 1/m of the optimum) and proves the ratio
value / optimum of every answer, keeping the smallest as ``proven_ratio``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments import parse_problem, run_problem
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.core.registry import BACKENDS, Capabilities, register_backend

MEANS = [0.1, 0.3, 0.5, 0.7, 0.85, 0.9]


class SingleArmOracle(cm.Oracle):
    """Best single arm of the exact answer; each answer's ratio value / optimum goes to the ledger."""

    name = "single_arm"

    def __init__(self, space, gap=None, time_limit=None):
        super().__init__(space)
        self.exact = EnumerateOracle(space)
        self.gap, self.time_limit = gap, time_limit

    def _linear(self, query):
        best = self.exact._linear(query)
        if best is None:
            return None
        arms = np.flatnonzero(best)
        one = np.zeros(self.d, bool)
        one[arms[np.argmax(query.weights[arms])]] = True
        optimum = float(query.weights @ best)
        if optimum > 0:
            self.ledger.record_ratio(float(query.weights @ one) / optimum)  # read back as oracle.proven_ratio
        return one


@pytest.fixture
def stand_in():
    register_backend(
        "single_arm",
        SingleArmOracle,
        capabilities=Capabilities(norm=False, exact=False, approximate=True, time_limit=True),
    )
    yield "single_arm"
    del BACKENDS["single_arm"]


def test_aroq_takes_the_proven_ratio_and_the_runner_reports_alpha_regret(stand_in) -> None:
    space = cm.Cardinality(6, 3)
    env = cm.UniformNoise(MEANS, seed=0)
    policy = cm.AROQ(space, 3000, oracle=stand_in, alpha="proven")
    result = cm.simulate(policy, env, 3000, seed=1)
    proven = policy.oracle.proven_ratio
    assert 1 / 3 - 1e-12 <= proven < 1.0  # a single arm of three: at least a third of the optimum
    assert result.alpha == pytest.approx(proven) and policy.alpha == pytest.approx(proven)
    # independent truth: sum_t (alpha r(a*) - r(a_t)) from the played actions
    trace = cm.simulate(policy, env, 3000, seed=1, trace=True, record=[3000]).info["trace"]
    best = env.optimal(space)[1]
    played = sum(n * np.mean([env.expected_reward(a) for a in acts]) if len(acts) == 1 else 0 for _, n, acts in trace)
    assert all(len(acts) == 1 for _, _, acts in trace)
    assert result.alpha_regret[-1] == pytest.approx(proven * best * 3000 - played, rel=1e-9, abs=1e-6)
    assert result.alpha_regret[-1] < result.regret[-1]


def test_an_approximate_oracle_alone_makes_the_run_report_alpha_regret(stand_in) -> None:
    result = cm.simulate(cm.CUCB(cm.Cardinality(6, 3), 500, oracle=stand_in), cm.UniformNoise(MEANS), seed=0)
    assert result.alpha_regret is not None and result.alpha < 1.0
    exact = cm.simulate(cm.CUCB(cm.Cardinality(6, 3), 500, oracle="enumerate"), cm.UniformNoise(MEANS), seed=0)
    assert exact.alpha_regret is None and exact.alpha == 1.0


@pytest.mark.parametrize("alpha", ["measured", 0.0, 1.5, True])
def test_aroq_refuses_a_bad_alpha(alpha) -> None:
    with pytest.raises(ValueError, match="alpha"):
        cm.AROQ(cm.Cardinality(3, 1), 10, oracle="enumerate", alpha=alpha)


def _problem(policy: dict) -> dict:
    return {
        "space": {"kind": "Cardinality", "d": 6, "m": 3},
        "environment": {"kind": "UniformNoise", "means": MEANS},
        "policies": [{"name": "P", "kind": "AROQ", "constants": {"alpha": "proven"}, **policy}],
        "run": {"horizon": 400, "seeds": 2},
    }


def test_problem_file_gap_reaches_make_oracle_and_summary_has_alpha_regret(stand_in, tmp_path) -> None:
    problem = parse_problem(_problem({"oracle": stand_in, "gap": 0.01, "time_limit": 2}), "gap.toml")
    built = problem.build_policy("P")
    assert built.oracle.gap == 0.01 and built.oracle.time_limit == 2.0
    assert problem.to_dict()["policies"][0]["gap"] == 0.01
    run_problem(problem, tmp_path / "out", jobs=1, plots=False)
    stored = json.loads((tmp_path / "out" / "summary.json").read_text())
    summary = stored["policies"]["P"]
    assert summary["alpha_regret"]["mean"] < summary["regret"]["mean"]
    assert 1 / 3 - 1e-12 <= summary["alpha"]["mean"] < 1.0  # the ratio the stand-in proved, per seed
    assert stored["policy_info"]["P"]["oracle_options"] == {"gap": 0.01, "time_limit": 2.0}


@pytest.mark.parametrize(
    ("entry", "key", "fragment"),
    [
        ({"oracle": "enumerate", "gap": 0.01}, "policies[0].gap", "takes no gap option"),
        ({"oracle": "single_arm", "gap": 1.0}, "policies[0].gap", "in [0, 1)"),
        ({"oracle": "single_arm", "gap": "small"}, "policies[0].gap", "expected a number"),
        ({"oracle": "single_arm", "time_limit": 0}, "policies[0].time_limit", "> 0"),
    ],
)
def test_problem_file_refuses_bad_oracle_options(stand_in, entry, key, fragment) -> None:
    with pytest.raises(ValueError, match=r"gap\.toml") as info:
        parse_problem(_problem(entry), "gap.toml")
    assert key in str(info.value) and fragment in str(info.value)


def test_run_steps_is_the_time_step_key_and_rounds_its_former_name() -> None:
    """docs/glossary.md: steps are time steps, rounds are adaptivity rounds; [run] rounds keeps working."""
    base = _problem({"oracle": "enumerate"})
    new = parse_problem({**base, "run": {"horizon": "unknown", "steps": 300, "seeds": 1}}, "s.toml")
    old = parse_problem({**base, "run": {"horizon": "unknown", "rounds": 300, "seeds": 1}}, "s.toml")
    assert new.steps == old.steps == 300 and new.horizon is None and new.unknown_horizon
    assert new.digest() == old.digest()
    with pytest.raises(ValueError, match="give steps = N only"):
        parse_problem({**base, "run": {"horizon": "unknown", "steps": 3, "rounds": 3, "seeds": 1}}, "s.toml")
    with pytest.raises(ValueError, match=r"run\.steps: only with horizon"):
        parse_problem({**base, "run": {"horizon": 100, "steps": 30, "seeds": 1}}, "s.toml")
