"""``cmab-milp evaluate`` and the problem-file environment ``kind = "logged"``: files written, refusals."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from cmab_milp.cli import main

pytest.importorskip("pandas", reason="log files are read with pandas (the [data] extra)")

ACTIONS = [[1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1], [1, 0, 0, 0, 1]]
MEANS = np.array([0.1, 0.3, 0.5, 0.7, 0.9])

PROBLEM = """
[space]
kind = "ExplicitActions"
actions = {actions}

[environment]
kind = "logged"
file = "{file}"
inclusion = "p"

[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"

[[policies]]
name = "CTS"
kind = "CTS"
oracle = "enumerate"

[run]
horizon = 200
seeds = 1
"""


def write_log(path: Path, rounds: int = 3000, seed: int = 0, extra: str = "") -> Path:
    rng = np.random.default_rng(seed)
    acts = np.array(ACTIONS, bool)
    chosen = rng.integers(0, len(acts), rounds)
    r, a = np.nonzero(acts[chosen])
    y = (rng.random(r.size) < MEANS[a]).astype(int)
    p = (acts.sum(0) / len(acts))[a]
    lines = ["round,arm,reward,p"] + [f"{r[k]},{a[k]},{y[k]},{float(p[k])!r}" for k in range(r.size)]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


@pytest.fixture
def problem(tmp_path: Path) -> Path:
    write_log(tmp_path / "log.csv")
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.format(actions=ACTIONS, file="log.csv"))
    return path


def test_evaluate_writes_json_csv_and_figure(problem, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["evaluate", str(problem), "--log", str(tmp_path / "log.csv"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["offline.csv", "offline.json", "offline.png"]
    report = json.loads((out / "offline.json").read_text())
    assert report["log"]["rounds"] == 3000 and set(report["policies"]) == {"CUCB", "CTS"}
    frozen = report["policies"]["CUCB"]["frozen"]
    assert frozen["action"] == ["3", "4"]  # the best action of the log's estimates: arms 3 and 4
    truth = MEANS[3] + MEANS[4]
    for estimator, est in frozen["estimates"].items():
        assert est["low"] <= truth <= est["high"], (estimator, est)
    replay = report["policies"]["CTS"]["replay"]
    assert replay["mode"] == "exact-match" and 0 < replay["accepted"] < 3000
    assert report["logging"]["value"] == pytest.approx(np.mean(np.array(ACTIONS) @ MEANS), abs=0.05)
    rows = list(csv.DictReader((out / "offline.csv").open()))
    assert {r["method"] for r in rows} == {"on-policy", "ips", "snips", "pseudoinverse", "dm", "dr", "replay"}
    assert len(rows) == 1 + 2 * 6


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("9999,2,abc,0.5\n", "column 'reward': 'abc' is not a number"),
        ("9999,7,1,0.5\n", "column 'arm': arm index 7 is outside"),
        ("9999,0,1,0.5\n9999,3,1,0.5\n", r"column 'arm': the arms of round 9999, \[0, 3\], are not an action"),
        ("9999,0,1,1.5\n", r"column 'p': probability 1.5 is outside \(0, 1\]"),
    ],
)
def test_a_refused_log_writes_nothing(problem, tmp_path, capsys, extra, message):
    bad = write_log(tmp_path / "bad.csv", rounds=50, extra=extra)
    out = tmp_path / "out"
    assert main(["evaluate", str(problem), "--log", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.csv: line " in err
    assert re.search(message, err), err
    assert not out.exists()


def test_columns_come_from_the_command_line_with_did_you_mean(problem, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["evaluate", str(problem), "--log", str(tmp_path / "log.csv"), "--out", str(out), "--reward", "rew"])
    assert code == 2 and "no column 'rew'" in capsys.readouterr().err and not out.exists()
    code = main(["evaluate", str(problem), "--log", str(tmp_path / "log.csv"), "--out", str(out), "--level", "2"])
    assert code == 2 and not out.exists()


def test_a_logged_environment_runs_like_any_other(problem, tmp_path, capsys):
    assert main(["validate", str(problem)]) == 0
    assert "logged" in capsys.readouterr().out
    out = tmp_path / "run"
    assert main(["run", str(problem), "--out", str(out), "--no-plots", "--executor", "serial"]) == 0
    stored = json.loads((out / "problem.json").read_text())
    assert len(stored["problem"]["environment"]["sha256"]) == 64


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ("../log.csv", "in the problem file's folder or below it"),
        ("/etc/passwd.csv", "relative to the problem file's folder"),
        ("log.txt", r"a \.csv or \.parquet file"),
        ("nothing.csv", "no such file"),
    ],
)
def test_a_log_outside_the_problem_folder_is_refused(tmp_path, capsys, file, message):
    inner = tmp_path / "inner"
    inner.mkdir()
    write_log(tmp_path / "log.csv")
    path = inner / "p.toml"
    path.write_text(PROBLEM.format(actions=ACTIONS, file=file))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "environment.file" in err and re.search(message, err), err


def test_a_link_leading_out_is_refused(tmp_path, capsys):
    inner = tmp_path / "inner"
    inner.mkdir()
    write_log(tmp_path / "log.csv")
    (inner / "log.csv").symlink_to(tmp_path / "log.csv")
    path = inner / "p.toml"
    path.write_text(PROBLEM.format(actions=ACTIONS, file="log.csv"))
    assert main(["validate", str(path)]) == 2
    assert "leads out of the problem file's folder" in capsys.readouterr().err


def test_a_bad_log_in_a_problem_file_names_the_key_and_the_row(tmp_path, capsys):
    write_log(tmp_path / "log.csv", rounds=20, extra="9999,2,nan,0.5\n")
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.format(actions=ACTIONS, file="log.csv"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "environment.file: log.csv: line " in err and "column 'reward': nan is not a finite number" in err


def test_a_changed_log_is_refused_when_the_problem_is_rebuilt(problem, tmp_path):
    from cmab_milp.experiments import load_problem

    stored = load_problem(problem)
    write_log(tmp_path / "log.csv", seed=5)
    with pytest.raises(ValueError, match="the data file changed"):
        stored.build_environment()
