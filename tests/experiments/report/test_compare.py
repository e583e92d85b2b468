"""Solver swap: recorded queries replayed on every backend; agreement judged against brute force,
and deliberately wrong backends (registered with cm.register_backend) are caught, never hidden."""

from __future__ import annotations

import argparse
import importlib.util
import io
import json

import numpy as np
import pytest
from recorded_queries import NORM_QUERY_F, NORM_QUERY_M, NORM_QUERY_MU, NORM_QUERY_SIGN

import cmab_milp as cm
from cmab_milp.experiments import parse_problem
from cmab_milp.experiments.report.compare import (
    RecordingOracle,
    add_command,
    compare_backends,
    compare_oracles,
    record_queries,
)
from cmab_milp.oracles import BACKENDS
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.core.base import tolerance
from cmab_milp.oracles.core.queries import LinearQuery

MEANS = [0.1, 0.35, 0.5, 0.52, 0.7, 0.9]


def _problem(policy="SROQ", oracle="enumerate", space=None, environment=None, horizon=300):
    return parse_problem(
        {
            "space": space or {"kind": "Cardinality", "d": 6, "m": 2},
            "environment": environment or {"kind": "BernoulliArms", "means": MEANS},
            "policies": [{"name": "P", "kind": policy, "oracle": oracle}],
            "run": {"horizon": horizon, "seeds": 1},
        },
        "test.toml",
    )


# ------------------------------------------------------------- wrong backends
class Worst(EnumerateOracle):
    """Returns a feasible action of the *lowest* value: wrong whenever values differ."""

    name = "worst"

    def _linear(self, query):
        return self._best(-(self._dense @ query.weights), query)


class LastTie(EnumerateOracle):
    """Exact, but breaks ties the other way (the last maximiser): must agree."""

    name = "last_tie"

    def _linear(self, query):
        values = self._dense @ query.weights
        mask = query.restrictions.mask(self.actions)
        if mask is not None:
            values = np.where(mask, values, -np.inf)
        if not np.isfinite(values).any():
            return None
        best = values.max()
        return self.actions[np.flatnonzero(values >= best - 1e-12)[-1]].copy()


class AllArms(EnumerateOracle):
    name = "all_arms"

    def _linear(self, query):
        return np.ones(self.d, bool)


class Nothing(EnumerateOracle):
    name = "nothing"

    def _linear(self, query):
        return None


class Broken(EnumerateOracle):
    name = "broken"

    def _linear(self, query):
        raise RuntimeError("solver crashed")


@pytest.fixture
def wrong_backends():
    added = {
        "worst": Worst,
        "last_tie": LastTie,
        "all_arms": AllArms,
        "nothing": Nothing,
        "broken": Broken,
        "tiny_enumerate": lambda space: EnumerateOracle(space, max_actions=2),
    }
    for name, target in added.items():
        cm.register_backend(name, target, description="test backend")
    yield list(added)
    for name in added:
        BACKENDS.pop(name, None)


def _brute(space, query):
    """(max, min) of the query's value over the feasible actions, or None if none qualifies."""
    actions = space.enumerate()
    mask = query.restrictions.mask(actions)
    actions = actions if mask is None else actions[mask]
    if len(actions) == 0:
        return None
    values = [query.value(a) for a in actions]
    return max(values), min(values)


# ---------------------------------------------------------------------- tests
def test_recording_keeps_every_query_including_batches():
    problem = _problem("SROQ")
    _, queries, facts = record_queries(problem, seed=3)
    again = cm.simulate(problem.build_policy("P"), problem.build_environment(), problem.horizon, seed=3)
    assert len(queries) == int(again.queries[-1]) > 0  # SROQ asks in batches: all are kept
    assert facts["regret"] == pytest.approx(float(again.regret[-1]))
    assert all(isinstance(q, LinearQuery) for q in queries)


def test_honest_backends_agree_and_counts_add_up(tmp_path, wrong_backends):
    problem = _problem("SROQ")
    backends = ["highs", "enumerate", "combinatorial", "auto", "last_tie"]
    report = compare_oracles(problem, tmp_path, backends=backends, stream=io.StringIO())
    assert report["all_agree"] is True
    n = report["queries"]
    assert n == report["recorded"]["queries"] > 0
    for name in backends:
        b = report["backends"][name]
        assert b["agree"] + b["disagree"] + b["declined"] + b["errors"] == n
        assert b["agree"] == n and b["median_seconds"] <= b["p95_seconds"]
    assert json.loads((tmp_path / "oracles.json").read_text()) == json.loads(json.dumps(report))
    assert (tmp_path / "oracles.png").stat().st_size > 0


def test_a_wrong_backend_is_caught(tmp_path, wrong_backends):
    problem = _problem("AROQ")
    space, queries, _ = record_queries(problem)
    report = compare_backends(space, queries, ["highs", "enumerate", "worst"])
    # independent truth: the worst action is wrong exactly where the best and worst values differ
    expected = 0
    for query in queries:
        high, low = _brute(space, query)
        expected += high - low > tolerance(high)
    worst = report["backends"]["worst"]
    assert expected > 0
    assert worst["disagree"] == expected and worst["agree"] == len(queries) - expected
    assert report["all_agree"] is False
    example = worst["disagreements"][0]
    assert example["problem"] == "suboptimal" and example["gap"] > 0 and example["best_by"] in ("highs", "enumerate")
    assert report["backends"]["highs"]["disagree"] == report["backends"]["enumerate"]["disagree"] == 0
    # the example holds what is needed to ask the query again
    asked = example["asked"]
    value = np.asarray(asked["weights"])[example["action"]].sum()
    assert value == pytest.approx(example["value"])


def test_infeasible_missing_and_failing_backends_are_reported(wrong_backends):
    space = cm.Cardinality(6, 2)
    recorder = RecordingOracle(cm.make_oracle(space, "enumerate"))
    rng = np.random.default_rng(0)
    for _ in range(5):
        recorder.argmax(rng.normal(size=6), exclude=[0])
    report = compare_backends(space, recorder.queries, ["enumerate", "all_arms", "nothing", "broken"])
    b = report["backends"]
    assert b["enumerate"]["agree"] == 5
    assert b["all_arms"]["disagree"] == 5 and b["all_arms"]["disagreements"][0]["problem"] == "infeasible"
    assert b["nothing"]["disagree"] == 5 and b["nothing"]["disagreements"][0]["problem"] == "missed"
    assert b["broken"]["errors"] == 5 and "solver crashed" in b["broken"]["error_examples"][0]["error"]
    assert report["all_agree"] is False


def test_declines_are_counted_never_taken_for_agreement(wrong_backends):
    # a budget row: combinatorial has no algorithm for it; tiny_enumerate refuses the space
    space = cm.Cardinality(6, 3).with_constraint([3, 1, 2, 2, 1, 3], "<=", 4)
    recorder = RecordingOracle(cm.make_oracle(space, "highs"))
    for k in range(4):
        recorder.argmax(np.linspace(-1, 1, 6) * (k + 1))
    report = compare_backends(space, recorder.queries, ["highs", "combinatorial", "tiny_enumerate"])
    b = report["backends"]
    assert b["combinatorial"]["declined"] == 4 and b["combinatorial"]["agree"] == 0
    assert b["tiny_enumerate"]["declined"] == 4 and "refused" in next(iter(b["tiny_enumerate"]["declined_reasons"]))
    assert b["tiny_enumerate"]["refused"]
    assert report["unverified_queries"] == 4  # only highs answered
    assert report["all_agree"] is True


def test_norm_queries_replayed_and_declined_where_unsupported():
    problem = _problem(
        "OLSUCBC",
        oracle="highs",
        space={"kind": "Cardinality", "d": 4, "m": 2},
        environment={"kind": "GaussianNoise", "means": MEANS[:4], "cov": np.eye(4).tolist()},
        horizon=40,
    )
    space, queries, _ = record_queries(problem)
    report = compare_backends(space, queries, ["highs", "enumerate", "pulp:HiGHS"])
    assert report["kinds"]["norm"] > 0
    assert report["all_agree"]
    assert report["backends"]["pulp:HiGHS"]["declined"] == report["kinds"]["norm"]
    assert report["backends"]["enumerate"]["agree"] == len(queries)


def test_command_exit_codes(tmp_path, wrong_backends, capsys):
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    path = tmp_path / "p.toml"
    path.write_text(
        '[space]\nkind = "Cardinality"\nd = 5\nm = 2\n'
        '[environment]\nkind = "BernoulliArms"\nmeans = [0.1, 0.2, 0.5, 0.6, 0.9]\n'
        '[[policies]]\nname = "A"\nkind = "AROQ"\noracle = "enumerate"\n'
        "[run]\nhorizon = 100\nseeds = 1\n"
    )
    args = parser.parse_args(
        ["compare-oracles", str(path), "--out", str(tmp_path / "ok"), "--backends", "highs,enumerate"]
    )
    assert args.handler(args) == 0
    args = parser.parse_args(
        ["compare-oracles", str(path), "--out", str(tmp_path / "bad"), "--backends", "highs,worst"]
    )
    assert args.handler(args) == 1
    assert "DISAGREEMENTS" in capsys.readouterr().err
    args = parser.parse_args(["compare-oracles", str(path), "--out", str(tmp_path / "x"), "--policy", "nope"])
    assert args.handler(args) == 2
    # the same through the cmab-milp entry point
    from cmab_milp.cli import main

    out = tmp_path / "cli"
    assert main(["compare-oracles", str(path), "--out", str(out), "--backends", "enumerate,worst", "--no-plot"]) == 1
    assert json.loads((out / "oracles.json").read_text())["backends"]["worst"]["disagree"] > 0
    assert not (out / "oracles.png").exists()
    assert main(["compare-oracles", str(path), "--out", str(out), "--backends", "enumerate,highs"]) == 0
    assert (out / "oracles.png").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backends": ["highs", "no_such"]}, "unknown oracle backend 'no_such'"),
        ({"backends": ["pulp:NO_SUCH_SOLVER"]}, "PuLP solver 'NO_SUCH_SOLVER' is not available"),
        ({"backends": []}, "no backends to compare"),
        ({"policy": "Q"}, "policy 'Q' is not in"),
        ({"max_queries": 0}, "max_queries must be >= 1"),
        ({"horizon": 0}, "horizon must be >= 1"),
    ],
)
def test_invalid_input(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        compare_oracles(_problem(), tmp_path, stream=io.StringIO(), **kwargs)


def test_recording_oracle_refuses_non_oracles():
    with pytest.raises(ValueError, match="inner must be an Oracle"):
        RecordingOracle("highs")


# A query recorded by `compare-oracles problems/routing_geant.toml --policy SROQ-CMAB --horizon 2000`
# (SROQ's representative for link 47): pulp:SCIP_PY answered a simple path worth 3.1214 where the
# optimum is 3.8861 (highs, scip, pulp:HiGHS, pulp:PULP_CBC_CMD agree). Kept as a regression test.
GEANT_QUERY_WEIGHTS = [
    0.290413534992,
    0.138050459808,
    0.432755059898,
    0.043059745989,
    -0.178932393035,
    0.144239120534,
    -0.039089078334,
    0.0,
    -0.021741314211,
    -0.094072049349,
    0.0,
    0.293233589026,
    0.632884973181,
    0.07167018179,
    0.327156733404,
    0.150802338038,
    -0.134990407778,
    -0.012229380992,
    0.821240525192,
    0.182803136699,
    0.078497825195,
    -0.26375331076,
    -0.128736257213,
    0.00586088136,
    0.21887903179,
    0.109203222301,
    0.038777212612,
    0.061227980373,
    0.0,
    0.042280127428,
    0.0,
    0.151851919908,
    0.069479620988,
    0.309704914865,
    0.09560176401,
    0.367138749316,
    0.152688237935,
    -0.029388361832,
    0.200035946395,
    0.111906839188,
    0.269891192248,
    0.181020407211,
    -0.136786215491,
    -0.043116182775,
    0.014252709129,
    0.0,
    -0.219307745172,
    0.010810052746,
    0.003579691019,
    0.0,
    0.127587228422,
    -0.012901359013,
    -0.039246010294,
    0.0,
    0.255919902826,
    -0.093796084245,
    0.0,
    0.300380160669,
]
GEANT_QUERY_INCLUDE = [47]
GEANT_QUERY_EXCLUDE = [7, 10, 28, 30, 45, 49, 53, 56]


@pytest.fixture(scope="module")
def geant_space():
    """GEANT's PT -> TR paths; one space object, so its 17,023 paths are enumerated once."""
    from pathlib import Path

    from cmab_milp.experiments import load_problem

    return load_problem(Path(__file__).resolve().parents[3] / "problems" / "routing_geant.toml").build_space()


@pytest.mark.slow_backend
@pytest.mark.parametrize(
    "backend",
    [
        "highs",
        "scip",
        "pulp:HiGHS",
        "pulp:SCIP_PY",
    ],
)
def test_recorded_geant_query_is_answered_exactly(backend, geant_space):
    if backend.partition(":")[0] not in cm.available_backends():
        pytest.skip(f"{backend} is not installed")
    if backend == "pulp:SCIP_PY" and importlib.util.find_spec("pyscipopt") is None:
        pytest.skip("PuLP's SCIP_PY solver needs pyscipopt (the scip extra)")
    space = geant_space
    weights = np.asarray(GEANT_QUERY_WEIGHTS)
    recorder = RecordingOracle(cm.make_oracle(space, "enumerate"))
    recorder.argmax(weights, include=GEANT_QUERY_INCLUDE, exclude=GEANT_QUERY_EXCLUDE)
    report = compare_backends(space, recorder.queries, ["enumerate", backend])
    assert report["backends"]["enumerate"]["agree"] == 1
    assert report["backends"][backend]["agree"] == 1, report["backends"][backend]["disagreements"]


# A norm query recorded from an OLS-UCB-C run on Cardinality(10, 3) (tests/recorded_queries.py).


@pytest.mark.parametrize(
    "backend",
    [
        "enumerate",
        "highs",
    ],
)
def test_recorded_norm_query_is_answered_exactly(backend):
    space = cm.Cardinality(10, 3)
    recorder = RecordingOracle(cm.make_oracle(space, "enumerate"))
    recorder.argmax_norm(NORM_QUERY_MU, NORM_QUERY_M, NORM_QUERY_F, NORM_QUERY_SIGN)
    report = compare_backends(space, recorder.queries, ["enumerate", backend])
    assert report["backends"][backend]["errors"] == 0, report["backends"][backend]["error_examples"]
    assert report["backends"][backend]["agree"] == 1
