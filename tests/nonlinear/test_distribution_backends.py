"""The distribution-index backends (dist_*) as registered backends, checked against brute force.

The truth is computed here from first principles: the expected reward of an
action is the sum over every outcome vector of its arms (itertools.product of
the grid) of the reward times the product of the arms' probabilities.
"""

from __future__ import annotations

import itertools
import math
from functools import partial

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.report.compare import compare_backends
from cmab_milp.nonlinear import OutcomeGrid
from cmab_milp.nonlinear import oracles as gen_oracles
from cmab_milp.nonlinear.backends import build, distribution_backend, registered_names
from cmab_milp.oracles.core.registry import BACKENDS, Capabilities, capabilities, register_backend

GRID = OutcomeGrid([0.0, 0.5, 1.0])
REWARDS = {"max": max, "sqrt_sum": lambda ys: math.sqrt(sum(ys))}


def brute_force(space, reward: str, pmf: np.ndarray, include=(), exclude=()) -> tuple[float, dict]:
    """The optimal expected reward and every action's value, by summing over all outcome vectors."""
    values = {}
    for action in space.enumerate():
        arms = np.flatnonzero(action)
        if any(i not in arms for i in include) or any(i in arms for i in exclude):
            continue
        total = 0.0
        for outcome in itertools.product(range(len(GRID)), repeat=len(arms)):
            p = math.prod(pmf[i, k] for i, k in zip(arms, outcome, strict=True))
            ys = [GRID.values[k] for k in outcome]
            total += p * (REWARDS[reward](ys) if ys else 0.0)
        values[tuple(arms)] = total
    return max(values.values()), values


def random_pmf(rng: np.random.Generator, d: int) -> np.ndarray:
    return rng.dirichlet(np.ones(len(GRID)) * 0.6, size=d)


def test_every_distribution_backend_is_registered_with_its_capabilities() -> None:
    assert set(registered_names()) <= set(BACKENDS)
    for name in registered_names():
        caps = capabilities(name)
        assert caps.distribution and caps.cost is None  # `auto` (linear) never picks them
        assert caps.exact == (name != "dist_greedy")
    assert distribution_backend("dist_branch_bound") == "branch_bound" and distribution_backend("greedy") is None


@pytest.mark.parametrize("reward", ["max", "sqrt_sum"])
@pytest.mark.parametrize("name", ["dist_auto", "dist_enumerate", "dist_branch_bound", "dist_milp"])
def test_exact_backends_match_brute_force(name: str, reward: str) -> None:
    if name == "dist_milp" and reward != "max":
        pytest.skip("the K-MAX MILP answers 'max' only (refusal tested below)")
    space = cm.Cardinality(6, 3)
    oracle = cm.make_oracle(space, name, reward=reward, grid=GRID)
    rng = np.random.default_rng(5)
    for k in range(8):
        pmf = random_pmf(rng, space.d)
        include, exclude = ((k % 6,), ((k + 2) % 6,)) if k % 2 else ((), ())
        best, values = brute_force(space, reward, pmf, include, exclude)
        answer = oracle.argmax_index(pmf, include=include, exclude=exclude)
        assert space.contains(answer)
        got = values[tuple(np.flatnonzero(answer))]
        assert got >= best - 1e-9 * (1 + abs(best)), (name, k, got, best)
    assert oracle.ledger.queries == 8


def test_greedy_meets_its_declared_ratio_and_says_so() -> None:
    space = cm.Cardinality(6, 3)
    oracle = cm.make_oracle(space, "dist_greedy", reward="max", grid=GRID)
    assert oracle.proven_ratio == pytest.approx(1 - 1 / math.e)
    rng = np.random.default_rng(2)
    for _ in range(10):
        pmf = random_pmf(rng, space.d)
        best, values = brute_force(space, "max", pmf)
        got = values[tuple(np.flatnonzero(oracle.argmax_index(pmf)))]
        assert got >= oracle.proven_ratio * best - 1e-12


def test_make_oracle_refuses_unfit_combinations_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(*args, **kwargs):
        raise AssertionError("a model was built before the refusal")

    monkeypatch.setattr(gen_oracles, "KMaxMilp", no_model)
    with pytest.raises(ValueError, match="answers K-MAX"):
        cm.make_oracle(cm.Cardinality(5, 2), "dist_milp", reward="sqrt_sum", grid=GRID)
    import networkx as nx

    with pytest.raises(ValueError, match="does not accept Matchings"):
        cm.make_oracle(cm.Matchings(nx.complete_graph(4)), "dist_branch_bound", reward="max", grid=GRID)
    with pytest.raises(ValueError, match="submodular"):
        cm.make_oracle(cm.Cardinality(5, 2), "dist_greedy", reward="threshold:1", grid=GRID)
    with pytest.raises(ValueError, match="takes no option"):
        cm.make_oracle(cm.Cardinality(5, 2), "dist_enumerate", rewrad="max")
    with pytest.raises(ValueError, match="grid must be an OutcomeGrid"):
        cm.make_oracle(cm.Cardinality(5, 2), "dist_enumerate", grid=[0.0, 1.0])


def test_the_backend_has_one_name_no_former_method_alias() -> None:
    oracle = gen_oracles.DistributionOracle(cm.Cardinality(4, 2), "max", GRID, backend="branch_bound")
    assert oracle.backend == "branch_bound" and not hasattr(oracle, "method")
    with pytest.raises(TypeError, match="method"):
        gen_oracles.DistributionOracle(cm.Cardinality(4, 2), "max", GRID, method="branch_bound")
    assert not hasattr(gen_oracles, "METHODS") and not hasattr(cm.nonlinear, "METHODS")


def test_policies_take_a_registered_distribution_backend_by_name() -> None:
    policy = cm.AROQGR(cm.Cardinality(4, 2), 100, oracle="dist_greedy", reward="max", support=[0.0, 0.5, 1.0])
    assert policy.oracle.backend == "greedy" and policy.alpha == pytest.approx(1 - 1 / math.e)
    with pytest.raises(ValueError, match="disagree"):
        cm.AROQGR(cm.Cardinality(4, 2), 100, oracle="dist_greedy", method="enumerate", support=[0.0, 1.0])


def _greedy_short_case() -> tuple[np.ndarray, float, float]:
    """A pmf on which the greedy answer is strictly worse than the optimum (found by a seeded search)."""
    space = cm.Cardinality(5, 2)
    greedy = cm.make_oracle(space, "dist_greedy", reward="max", grid=GRID)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        pmf = random_pmf(rng, space.d)
        best, values = brute_force(space, "max", pmf)
        got = values[tuple(np.flatnonzero(greedy.argmax_index(pmf)))]
        if got < best - 1e-6:
            return pmf, got, best
    raise AssertionError("no instance where the greedy falls short")


def test_compare_replays_index_queries_and_catches_a_backend_that_lies_about_exactness() -> None:
    pmf, got, best = _greedy_short_case()
    space = cm.Cardinality(5, 2)
    recorder = cm.make_oracle(space, "dist_enumerate", reward="max", grid=GRID)
    recorder.recorded = []
    recorder.argmax_index(pmf)
    recorder.argmax_index(pmf, exclude=[0])
    # a greedy that declares itself exact: the replay must call it suboptimal
    register_backend("dist_liar", partial(build, backend="greedy"), capabilities=Capabilities(distribution=True))
    try:
        report = compare_backends(space, recorder.recorded, ["dist_enumerate", "dist_greedy", "dist_liar", "highs"])
    finally:
        del BACKENDS["dist_liar"]
    rows = report["backends"]
    assert report["kinds"]["index"] == 2 and not report["all_agree"]
    assert rows["dist_enumerate"]["agree"] == 2
    assert rows["dist_liar"]["disagree"] >= 1 and rows["dist_liar"]["disagreements"][0]["problem"] == "suboptimal"
    assert rows["dist_greedy"]["disagree"] == 0 and rows["dist_greedy"]["declared_ratio"] == pytest.approx(
        1 - 1 / math.e
    )
    assert rows["dist_greedy"]["worst_ratio"] <= got / best + 1e-12
    assert rows["highs"]["declined"] == 2  # a linear backend declines index queries, never "agrees"


def test_compare_oracles_records_a_general_reward_run_and_replays_it(tmp_path) -> None:
    import io

    from cmab_milp.experiments import parse_problem
    from cmab_milp.experiments.report.compare import compare_oracles

    probs = np.random.default_rng(3).dirichlet(np.ones(3), size=6).tolist()
    problem = parse_problem(
        {
            "space": {"kind": "Cardinality", "d": 6, "m": 2},
            "environment": {"kind": "DiscreteArms", "values": [0.0, 0.5, 1.0], "probs": probs, "reward": "max"},
            "policies": [{"name": "GR", "kind": "AROQGR", "oracle": "enumerate", "constants": {"reward": "max"}}],
            "run": {"horizon": 400, "seeds": 1},
        },
        "gr.toml",
    )
    names = ["enumerate", "dist_enumerate", "dist_branch_bound", "dist_greedy"]
    report = compare_oracles(problem, tmp_path, backends=names, plot=False, stream=io.StringIO())
    assert report["kinds"]["index"] > 0 and report["kinds"]["linear"] > 0
    assert report["backends"]["dist_branch_bound"]["agree"] == report["queries"]
    assert report["backends"]["enumerate"]["declined"] == report["kinds"]["index"]
    assert "declared_ratio" in report["backends"]["dist_greedy"] and report["all_agree"]
