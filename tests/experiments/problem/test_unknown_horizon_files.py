"""Problem files with an unknown horizon: ``[run] horizon = "unknown"`` + ``rounds``, or ``horizon = "unknown"``
per policy. Jobs must give exactly what the library gives a policy built with ``T=None`` and played that long."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.cli import main
from cmab_milp.experiments import ProblemError, load_problem, parse_problem, run_problem
from cmab_milp.experiments.report.compare import record_queries
from cmab_milp.experiments.run.storage import job_paths, read_curve, read_json

MEANS = [0.9, 0.85, 0.2, 0.4, 0.6, 0.1]
HEAD = """
[space]
kind = "Cardinality"
d = 6
m = 2

[environment]
kind = "BernoulliArms"
means = [0.9, 0.85, 0.2, 0.4, 0.6, 0.1]
"""
MIXED = (
    HEAD
    + """
[[policies]]
name = "AROQ-T"
kind = "AROQ"
oracle = "enumerate"

[[policies]]
name = "AROQ-anytime"
kind = "AROQ"
oracle = "enumerate"
horizon = "unknown"

[[policies]]
name = "SROQ-anytime"
kind = "SROQ"
oracle = "enumerate"
horizon = "unknown"

[run]
horizon = 3000
seeds = 2
"""
)
UNKNOWN = (
    HEAD
    + """
[[policies]]
name = "AROQ"
kind = "AROQ"
oracle = "enumerate"

[[policies]]
name = "SROQ"
kind = "SROQ"
oracle = "enumerate"

[run]
horizon = "unknown"
rounds = 2000
seeds = 2
"""
)


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def direct(kind: type, T: int | None, rounds: int, seed: int) -> cm.SimulationResult:
    """What the library gives without any problem file: the independent truth of a job."""
    space = cm.Cardinality(6, 2)
    policy = kind(space, T, oracle="enumerate")
    return cm.simulate(policy, cm.BernoulliArms(MEANS), rounds, seed=seed, record=200)


def test_per_policy_unknown_horizon_runs_next_to_known_t(tmp_path: Path) -> None:
    problem = load_problem(write(tmp_path, MIXED))
    assert [problem.policy_horizon(p.name) for p in problem.policies] == [3000, None, None]
    assert problem.build_policy("AROQ-anytime").T is None and problem.build_policy("AROQ-T").T == 3000
    out = tmp_path / "out"
    summary = run_problem(problem, out, jobs=1, plots=False, stream=io.StringIO())
    assert summary["policy_info"]["AROQ-anytime"]["horizon"] == "unknown"
    assert summary["policy_info"]["AROQ-T"]["horizon"] == 3000
    for name, kind, T in (("AROQ-T", cm.AROQ, 3000), ("AROQ-anytime", cm.AROQ, None), ("SROQ-anytime", cm.SROQ, None)):
        for seed in (0, 1):
            truth = direct(kind, T, 3000, seed)
            csv_path, json_path = job_paths(out, name, seed)
            record, curve = read_json(json_path), read_curve(csv_path)
            assert record["horizon"] == ("unknown" if T is None else T) and record["steps"] == 3000
            assert "rounds" not in record  # one name for the steps played: "rounds" are the oracle's
            assert curve["t"][-1] == 3000
            assert record["totals"]["regret"] == pytest.approx(float(truth.regret[-1]))
            assert record["totals"]["queries"] == int(truth.queries[-1])
            assert record["totals"]["rounds"] == int(truth.rounds[-1])
    # the unknown-horizon AROQ really is another schedule than the one told T
    told = [read_json(job_paths(out, "AROQ-T", s)[1])["totals"]["queries"] for s in (0, 1)]
    anytime = [read_json(job_paths(out, "AROQ-anytime", s)[1])["totals"]["queries"] for s in (0, 1)]
    assert told != anytime


def test_run_wide_unknown_horizon_plays_rounds_and_the_cli_horizon_sets_them(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, UNKNOWN)
    assert main(["validate", str(path)]) == 0
    assert "T unknown to the policies, 2000 steps" in capsys.readouterr().out
    out = tmp_path / "out"
    code = main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--horizon", "1500"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problem"]["horizon"] == "unknown" and summary["problem"]["steps"] == 1500
    assert "rounds" not in summary["problem"]
    stored = json.loads((out / "problem.json").read_text())["problem"]["run"]
    assert stored == {
        "horizon": "unknown",
        "steps": 1500,
        "seeds": [0, 1],
        "panels": stored["panels"],
        "curve_points": 200,
    }
    for name, kind in (("AROQ", cm.AROQ), ("SROQ", cm.SROQ)):
        assert summary["policy_info"][name]["horizon"] == "unknown"
        truth = [direct(kind, None, 1500, seed) for seed in (0, 1)]
        mean = np.mean([float(r.regret[-1]) for r in truth])
        assert summary["policies"][name]["regret"]["mean"] == pytest.approx(mean)
        assert summary["policies"][name]["queries"]["mean"] == np.mean([int(r.queries[-1]) for r in truth])


def test_resume_continues_an_unknown_horizon_run_and_refuses_other_rounds(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, UNKNOWN)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--policies", "AROQ"]) == 0
    first = json.loads((out / "summary.json").read_text())
    assert first["complete"] is False and "SROQ seed 0" in first["missing_jobs"]
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--resume"]) == 0
    assert "2 already complete" in capsys.readouterr().err
    second = json.loads((out / "summary.json").read_text())
    assert second["complete"] is True
    assert second["policies"]["AROQ"] == first["policies"]["AROQ"]
    code = main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--resume", "--horizon", "900"])
    assert code == 2
    assert "run.steps (2000 -> 900)" in capsys.readouterr().err


def test_known_horizon_digests_are_unchanged_by_the_new_keys(tmp_path: Path) -> None:
    """Results written before unknown horizons existed stay resumable: the digest of a known-T problem
    is the hash of exactly what it hashed before (space, environment, policies, horizon, curve points)."""
    problem = load_problem(write(tmp_path, MIXED.replace('horizon = "unknown"\n', "")))
    data = problem.to_dict()
    assert all("horizon" not in p for p in data["policies"])
    key = {
        "space": data["space"],
        "environment": data["environment"],
        "policies": [
            {"name": p.name, "kind": p.kind, "oracle": p.oracle, "constants": p.constants} for p in problem.policies
        ],
        "horizon": 3000,
        "curve_points": 200,
    }
    assert problem.digest() == hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    unknown = load_problem(write(tmp_path, UNKNOWN.replace('"unknown"\nrounds = 2000', "2000"), "u.toml"))
    assert unknown.digest() != load_problem(write(tmp_path, UNKNOWN, "v.toml")).digest()


def test_to_dict_round_trips_an_unknown_horizon(tmp_path: Path) -> None:
    for text in (UNKNOWN, MIXED):
        problem = load_problem(write(tmp_path, text))
        again = parse_problem(problem.to_dict(), problem.file)
        assert again.digest() == problem.digest() and again.unknown_horizon == problem.unknown_horizon
        assert [again.policy_horizon(p.name) for p in again.policies] == [
            problem.policy_horizon(p.name) for p in problem.policies
        ]
        shorter = problem.with_run(steps=700)
        assert shorter.steps == 700 and shorter.unknown_horizon == problem.unknown_horizon
        assert shorter.horizon == (None if problem.unknown_horizon else 700)


@pytest.mark.parametrize(
    ("run", "key", "message"),
    [
        ('horizon = "unknown"\nseeds = 1', "run.steps:", 'horizon = "unknown" needs steps'),
        ("horizon = 100\nrounds = 50\nseeds = 1", "run.rounds:", 'only with horizon = "unknown"'),
        ('horizon = "later"\nseeds = 1', "run.horizon:", 'a number of steps or "unknown"'),
        ('horizon = "unknown"\nrounds = 0\nseeds = 1', "run.rounds:", ">= 1"),
        ('horizon = "unknown"\nrounds = 1_000_000_000\nseeds = 1', "run.rounds:", "limit"),
    ],
)
def test_bad_unknown_horizon_runs_are_refused_at_their_key(tmp_path: Path, run: str, key: str, message: str) -> None:
    text = HEAD + '[[policies]]\nname = "A"\nkind = "AROQ"\noracle = "enumerate"\n[run]\n' + run + "\n"
    with pytest.raises(ProblemError) as info:
        load_problem(write(tmp_path, text))
    assert key in str(info.value) and message in str(info.value), str(info.value)


def test_a_policy_horizon_other_than_unknown_is_refused(tmp_path: Path) -> None:
    text = HEAD + '[[policies]]\nname = "A"\nkind = "AROQ"\nhorizon = 5\n[run]\nhorizon = 10\nseeds = 1\n'
    with pytest.raises(ProblemError, match=r"policies\[0\]\.horizon: expected a string"):
        load_problem(write(tmp_path, text))
    text = text.replace("horizon = 5", 'horizon = "soon"')
    with pytest.raises(ProblemError, match=r"policies\[0\]\.horizon: unknown value 'soon'"):
        load_problem(write(tmp_path, text))


DISCRETE = """
[space]
kind = "Cardinality"
d = 4
m = 2

[environment]
kind = "DiscreteArms"
values = [0.0, 0.5, 1.0]
probs = [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.3, 0.3, 0.4]]
reward = "max"

[[policies]]
name = "SROQ-GR"
kind = "SROQGR"
oracle = "enumerate"
constants = { reward = "max", support = [0.0, 0.5, 1.0] }

[[policies]]
name = "AROQ-C"
kind = "AROQCov"
oracle = "enumerate"

[run]
horizon = "unknown"
rounds = 600
seeds = 1
"""


def test_general_reward_and_covariance_policies_run_without_a_horizon(tmp_path: Path) -> None:
    problem = load_problem(write(tmp_path, DISCRETE))
    out = tmp_path / "out"
    summary = run_problem(problem, out, jobs=1, plots=False, stream=io.StringIO())
    space = cm.Cardinality(4, 2)
    env = problem.build_environment(space)
    for name, policy in (
        ("SROQ-GR", cm.SROQGR(space, None, oracle="enumerate", reward="max", support=[0.0, 0.5, 1.0])),
        ("AROQ-C", cm.AROQCov(space, None, oracle="enumerate")),
    ):
        truth = cm.simulate(policy, env, 600, seed=0, record=200)
        assert summary["policies"][name]["regret"]["mean"] == pytest.approx(float(truth.regret[-1]))
        assert summary["policies"][name]["queries"]["mean"] == int(truth.queries[-1])


def test_discretise_true_needs_a_horizon_and_says_so_at_its_key(tmp_path: Path) -> None:
    text = DISCRETE.replace(
        'constants = { reward = "max", support = [0.0, 0.5, 1.0] }', 'constants = { reward = "max", discretise = true }'
    )
    with pytest.raises(ProblemError, match=r"policies\[0\]\.constants\.discretise: .*T=None"):
        load_problem(write(tmp_path, text))


def test_compare_oracles_records_an_unknown_horizon_policy_as_it_runs(tmp_path: Path) -> None:
    problem = load_problem(write(tmp_path, MIXED))
    _, queries, facts = record_queries(problem, "SROQ-anytime", seed=1, horizon=1200)
    truth = direct(cm.SROQ, None, 1200, 1)
    assert facts["horizon"] == 1200 and len(queries) == int(truth.queries[-1])
    assert facts["regret"] == pytest.approx(float(truth.regret[-1]))


def test_the_shipped_anytime_file_puts_told_and_unknown_horizons_side_by_side(tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[3] / "problems" / "paper_linear_anytime.toml"
    problem = load_problem(path, steps=400, seeds=1)
    told = {p.name: problem.policy_horizon(p.name) for p in problem.policies}
    assert told == {"AROQ-CMAB": 400, "AROQ-CMAB-anytime": None, "SROQ-CMAB": 400, "SROQ-CMAB-anytime": None}
    data = problem.to_dict()
    for p in data["policies"]:
        p["oracle"] = "enumerate"  # the same decisions as highs (exact oracles), faster for a test
    problem = parse_problem(data, problem.file)
    summary = run_problem(problem, tmp_path / "out", jobs=1, plots=False, stream=io.StringIO())
    space, env = problem.build_space(), problem.build_environment()
    for name, kind in (("AROQ-CMAB-anytime", cm.AROQ), ("SROQ-CMAB-anytime", cm.SROQ)):
        truth = cm.simulate(kind(space, None, oracle="enumerate"), env, 400, seed=0)
        assert summary["policies"][name]["queries"]["mean"] == int(truth.queries[-1])


def test_overrides_never_change_the_parsed_data_and_are_checked_like_the_file(tmp_path: Path) -> None:
    base = {
        "space": {"kind": "Cardinality", "d": 6, "m": 2},
        "environment": {"kind": "BernoulliArms", "means": MEANS},
        "policies": [{"name": "A", "kind": "AROQ", "oracle": "enumerate"}],
    }
    for run in ({"horizon": 100, "seeds": 2}, {"horizon": "unknown", "rounds": 100, "seeds": 2}):
        data = json.loads(json.dumps({**base, "run": run}))
        before = json.loads(json.dumps(data))
        problem = parse_problem(data, "o.toml", steps=7, seeds=[4, 5])
        assert data == before  # the dict as read stays as read: the overrides live in the Problem only
        assert (problem.steps, problem.seeds) == (7, [4, 5])
        assert problem.horizon == (7 if run["horizon"] == 100 else None)
        assert problem.build_policy("A").T == problem.horizon
        with pytest.raises(ProblemError, match=r"run\.seeds: seeds must be distinct"):
            parse_problem(data, "o.toml", seeds=[1, 1])
        key = "run.horizon" if run["horizon"] == 100 else "run.rounds"
        with pytest.raises(ProblemError, match=key + ": must be >= 1"):
            parse_problem(data, "o.toml", steps=0)
        with pytest.raises(ProblemError, match=key + ": .*above the limit horizon"):
            parse_problem(data, "o.toml", steps=10**9)


def test_steps_and_its_former_names_give_the_same_problem(tmp_path: Path) -> None:
    """``[run] rounds`` (documented as steps' former name) and ``--horizon`` (the flag's first name) keep working."""
    steps = load_problem(write(tmp_path, UNKNOWN.replace("rounds = 2000", "steps = 2000"), "s.toml"))
    rounds = load_problem(write(tmp_path, UNKNOWN, "r.toml"))
    assert steps.steps == rounds.steps == 2000 and steps.digest() == rounds.digest()
    for flag in ("--steps", "--horizon"):
        out = tmp_path / flag.strip("-")
        assert main(["run", str(tmp_path / "r.toml"), "--out", str(out), "--jobs", "1", "--no-plots", flag, "300"]) == 0
        assert json.loads((out / "summary.json").read_text())["problem"]["steps"] == 300


def test_a_folder_written_before_steps_had_one_name_still_resumes(tmp_path: Path, capsys) -> None:
    """Results written when problem.json said ``run.rounds`` and every record carried ``rounds`` and ``steps``."""
    path = write(tmp_path, UNKNOWN)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--policies", "AROQ"]) == 0
    stored = read_json(out / "problem.json")
    run = stored["problem"]["run"]
    stored["problem"]["run"] = {"horizon": "unknown", "rounds": run.pop("steps"), **run}
    (out / "problem.json").write_text(json.dumps(stored))
    for seed in (0, 1):
        record = read_json(job_paths(out, "AROQ", seed)[1])
        (job_paths(out, "AROQ", seed)[1]).write_text(json.dumps({**record, "rounds": record["steps"]}))
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", "--resume"]) == 0
    assert "2 already complete" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["complete"] is True
    (out / "problem.json").write_text(json.dumps(stored))
    assert main(["run", str(path), "--out", str(out), "--resume", "--no-plots", "--steps", "900"]) == 2
    assert "run.steps (2000 -> 900)" in capsys.readouterr().err


def test_the_digest_of_an_unknown_horizon_is_the_hash_it_always_was(tmp_path: Path) -> None:
    """Folders written before the one name resume: the digest still hashes the steps under "horizon"."""
    problem = load_problem(write(tmp_path, UNKNOWN))
    data = problem.to_dict()
    key = {
        "space": data["space"],
        "environment": data["environment"],
        "policies": data["policies"],
        "horizon": 2000,
        "curve_points": 200,
        "unknown_horizon": True,
    }
    assert problem.digest() == hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
