"""The one tie rule where users keep their work: a problem file's ``ties`` key and a saved learner's oracle.

Found: ``make_oracle(..., ties="classes")`` gave every exact backend the same curve, but a problem file could not ask
for it and a saved learner rebuilt its oracle by name with the rule off, so a continued run (or one loaded onto
another backend) chose other actions among ties than the original.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.problem.problem_file import parse_problem
from cmab_milp.experiments.problem.schema import ProblemError
from cmab_milp.experiments.run.runner import run_problem

#: Bernoulli arms in two tied groups: with the rule off, ``highs`` and ``enumerate`` end at other regrets (checked).
SPACE = {"kind": "Cardinality", "d": 6, "m": 2}
MEANS = [0.5, 0.5, 0.5, 0.6, 0.6, 0.6]


def _problem(ties: str | None) -> dict:
    extra = {} if ties is None else {"ties": ties}
    return {
        "space": dict(SPACE),
        "environment": {"kind": "BernoulliArms", "means": MEANS, "seed": 0},
        "policies": [
            {"name": f"CUCB-{backend}", "kind": "CUCB", "oracle": backend, **extra}
            for backend in ("enumerate", "highs", "combinatorial")
        ],
        "run": {"horizon": 300, "seeds": [1]},
    }


def _final_regrets(data: dict, out: Path) -> dict[str, float]:
    problem = parse_problem(copy.deepcopy(data), str(out / "p.toml"))
    summary = run_problem(problem, out, jobs=1, plots=False)
    return {name: entry["regret"]["mean"] for name, entry in summary["policies"].items()}


def test_a_problem_file_s_ties_key_gives_every_backend_the_same_curve(tmp_path: Path) -> None:
    ruled = _final_regrets(_problem("classes"), tmp_path / "classes")
    assert len(set(ruled.values())) == 1, ruled
    off = _final_regrets(_problem("off"), tmp_path / "off")
    assert len(set(off.values())) > 1, off  # the control: without the rule the backends differ on this instance


def test_without_the_key_the_rule_is_off(tmp_path: Path) -> None:
    """The default is ``"off"`` (each backend's own choice): the rule is asked for by the key."""
    default = _final_regrets(_problem(None), tmp_path / "default")
    off = _final_regrets(_problem("off"), tmp_path / "off")
    assert default == off and len(set(default.values())) > 1, default
    assert cm.make_oracle(cm.Cardinality(6, 2), "highs").ties == "off"


def test_the_ties_key_is_recorded_and_builds_the_oracle_with_it() -> None:
    problem = parse_problem(_problem("exact"), "x.toml")
    spec = problem.policies[0]
    assert spec.oracle_options == {"ties": "exact"}
    assert spec.oracle_for(cm.Cardinality(6, 2)).ties == "exact"
    plain = parse_problem(_problem(None), "x.toml").policies[0]
    assert plain.oracle_options == {} and plain.oracle_for(cm.Cardinality(6, 2)) == "enumerate"
    off = parse_problem(_problem("off"), "x.toml").policies[0]
    assert off.oracle_options == {"ties": "off"} and off.oracle_for(cm.Cardinality(6, 2)).ties == "off"


@pytest.mark.parametrize(("value", "fragment"), [("lex", "unknown value 'lex'"), (1, "expected a string")])
def test_a_bad_ties_value_is_refused_at_its_key(value, fragment) -> None:
    data = _problem(None)
    data["policies"][0]["ties"] = value
    with pytest.raises(ProblemError) as info:
        parse_problem(data, "x.toml")
    assert "x.toml: policies[0].ties: " in str(info.value) and fragment in str(info.value)


# ------------------------------------------------------------------ saved learners
def _environment() -> cm.BernoulliArms:
    return cm.BernoulliArms(MEANS, seed=0)


def _play(policy, env, steps: int, rng: np.random.Generator) -> list[list[int]]:
    chosen = []
    for _ in range(steps):
        action = policy.select()
        chosen.append(np.flatnonzero(action).tolist())
        policy.observe(action, env.sample(action, rng))
    return chosen


@pytest.mark.parametrize("loaded_on", ["highs", "enumerate", "combinatorial"])
def test_a_saved_learner_continues_with_its_tie_rule_on_any_backend(tmp_path: Path, loaded_on: str) -> None:
    space = cm.Cardinality(6, 2)
    env = _environment()
    whole = cm.CUCB(space, None, oracle=cm.make_oracle(space, "highs", ties="classes"))
    rng = np.random.default_rng(5)
    first = _play(whole, env, 40, rng)
    path = tmp_path / "learner.npz"
    whole.save(path)
    state = rng.bit_generator.state
    rest = _play(whole, env, 80, rng)

    loaded = cm.load_policy(path, oracle=loaded_on)
    assert loaded.oracle.ties == "classes" and loaded.oracle.name == loaded_on
    rng.bit_generator.state = state
    assert _play(loaded, env, 80, rng) == rest
    assert cm.load_policy(path).oracle.ties == "classes"  # rebuilt by the saved name too
    assert len(first) == 40


def _header(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return json.loads(bytes(data["header"]).decode("utf-8"))


def _with_header(path: Path, header: dict, out: Path) -> Path:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.namelist():
            if item == "header.npy":
                blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
                with dst.open(item, "w") as handle:
                    np.lib.format.write_array(handle, blob)
            else:
                dst.writestr(item, src.read(item))
    return out


def test_the_rule_is_always_recorded_and_old_files_load_with_it_off(tmp_path: Path) -> None:
    space = cm.Cardinality(6, 2)
    plain = tmp_path / "plain.npz"
    cm.CUCB(space, None, oracle="highs").save(plain)
    header = _header(plain)
    assert header["oracle"] == {"backend": "highs", "instance": False, "ties": "off"}  # the default, recorded
    assert cm.load_policy(plain).oracle.ties == "off"
    old = copy.deepcopy(header)
    del old["oracle"]["ties"]  # as files written before the mode was always recorded: "off" then
    assert cm.load_policy(_with_header(plain, old, tmp_path / "old.npz")).oracle.ties == "off"
    on = tmp_path / "on.npz"
    cm.CUCB(space, None, oracle=cm.make_oracle(space, "highs", ties="classes")).save(on)
    assert cm.load_policy(on).oracle.ties == "classes"  # rebuilt by name with its mode
    off = tmp_path / "off.npz"
    cm.CUCB(space, None, oracle=cm.make_oracle(space, "highs", ties="off")).save(off)
    assert _header(off)["oracle"] == {"backend": "highs", "instance": True, "ties": "off"}
    assert cm.load_policy(off).oracle.ties == "off"
    ruled = tmp_path / "ruled.npz"
    cm.CUCB(space, None, oracle=cm.make_oracle(space, "highs", ties="exact")).save(ruled)
    assert _header(ruled)["oracle"] == {"backend": "highs", "instance": True, "ties": "exact"}


@pytest.mark.parametrize("bad", ["lex", 3, None])
def test_a_damaged_tie_rule_in_a_saved_learner_is_refused(tmp_path: Path, bad) -> None:
    space = cm.Cardinality(6, 2)
    path = tmp_path / "ruled.npz"
    cm.CUCB(space, None, oracle=cm.make_oracle(space, "highs", ties="classes")).save(path)
    header = _header(path)
    header["oracle"]["ties"] = bad
    damaged = _with_header(path, header, tmp_path / "damaged.npz")
    with pytest.raises(ValueError, match=r"oracle\.ties"):
        cm.load_policy(damaged)
    header["oracle"] = {"backend": "highs", "instance": True, "rule": "classes"}
    with pytest.raises(ValueError, match="oracle"):
        cm.load_policy(_with_header(path, header, tmp_path / "extra.npz"))
