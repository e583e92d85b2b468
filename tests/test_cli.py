"""``cmab-milp run`` end to end on a tiny problem: files, summary format, resume, determinism,
overrides, plots, refusals."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import METRICS
from cmab_milp.experiments.run.storage import CURVE_COLUMNS, read_curve

TINY = """
title = "tiny"

[space]
kind = "Cardinality"
d = 5
m = 2

[environment]
kind = "UniformNoise"
means = { draw = "uniform", seed = 3 }
width = 0.3

[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"

[[policies]]
name = "AROQ-CMAB"
kind = "AROQ"
oracle = "enumerate"

[[policies]]
name = "SROQ-CMAB"
kind = "SROQ"
oracle = "enumerate"
constants = { C = 1.5 }

[run]
horizon = 80
seeds = 2
panels = ["regret", "total_rounds"]
"""
NAMES = ["CUCB", "AROQ-CMAB", "SROQ-CMAB"]


@pytest.fixture
def problem_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def run(problem: Path, out: Path, *extra: str) -> int:
    return main(["run", str(problem), "--out", str(out), "--jobs", "1", "--no-plots", *extra])


def job_files(out: Path) -> dict[str, tuple[int, bytes]]:
    files = sorted(p for p in (out / "runs").rglob("*") if p.is_file())
    return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.read_bytes()) for p in files}


def test_run_writes_every_file_and_a_contract_summary(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out) == 0
    captured = capsys.readouterr()
    assert "[6/6]" in captured.err  # plain progress lines when stderr is not a terminal
    assert "CUCB" in captured.out  # the closing table
    for name in ("summary.json", "problem.json", "problem.toml"):
        assert (out / name).is_file()
    assert (out / "problem.toml").read_text() == TINY
    umask = os.umask(0)
    os.umask(umask)
    assert (out / "summary.json").stat().st_mode & 0o777 == 0o666 & ~umask  # atomic writes keep usual permissions
    assert not (out / "figure.png").exists()  # --no-plots

    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["policies"]) == NAMES
    for name in NAMES:
        finals = []
        for seed in (0, 1):
            curve = read_curve(out / "runs" / name / f"seed_{seed}.csv")
            record = json.loads((out / "runs" / name / f"seed_{seed}.json").read_text())
            assert tuple(curve) == CURVE_COLUMNS and curve["t"][-1] == 80
            assert np.all(np.diff(curve["t"]) > 0) and np.all(np.diff(curve["queries"]) >= 0)
            for metric in ("regret", "queries", "rounds"):  # totals are the curves' last values
                assert record["totals"][metric] == pytest.approx(curve[metric][-1])
            finals.append(record["totals"])
        for metric in METRICS:  # contract: {"policies": {NAME: {metric: {"mean", "std"}}}}
            values = np.array([f[metric] for f in finals], dtype=float)
            stats = summary["policies"][name][metric]
            assert stats["mean"] == pytest.approx(values.mean())
            assert stats["std"] == pytest.approx(values.std(ddof=1))
    # CUCB asks its oracle every round; the rare-query policies far less often
    assert summary["policies"]["CUCB"]["queries"]["mean"] >= 80
    assert summary["policies"]["SROQ-CMAB"]["rounds"]["mean"] < 10
    assert summary["complete"] is True and summary["problem"]["horizon"] == 80
    assert summary["policy_info"]["SROQ-CMAB"] == {
        "kind": "SROQ",
        "oracle": "enumerate",
        "constants": {"C": 1.5},
        "horizon": 80,
        "seeds": [0, 1],
    }


def test_same_seeds_give_identical_numbers(problem_file: Path, tmp_path: Path) -> None:
    assert run(problem_file, tmp_path / "a", "--seeds", "1") == 0
    assert run(problem_file, tmp_path / "b", "--seeds", "1") == 0
    for name in NAMES:
        a = read_curve(tmp_path / "a" / "runs" / name / "seed_0.csv")
        b = read_curve(tmp_path / "b" / "runs" / name / "seed_0.csv")
        for column in ("t", "regret", "queries", "rounds"):
            assert np.array_equal(a[column], b[column]), (name, column)


def test_overrides_change_horizon_and_seeds(problem_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out, "--horizon", "30", "--seeds", "3") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problem"]["horizon"] == 30 and summary["problem"]["seeds"] == [0, 1, 2]
    assert summary["policies"]["CUCB"]["queries"]["mean"] >= 30
    assert sorted(p.name for p in (out / "runs" / "CUCB").glob("*.csv")) == [f"seed_{k}.csv" for k in range(3)]
    assert read_curve(out / "runs" / "AROQ-CMAB" / "seed_2.csv")["t"][-1] == 30


def test_resume_reruns_only_the_missing_job(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out) == 0
    before = job_files(out)
    lost = out / "runs" / "AROQ-CMAB" / "seed_1.json"
    lost.unlink()
    capsys.readouterr()
    assert run(problem_file, out, "--resume") == 0
    assert "1 jobs to run (5 already complete)" in capsys.readouterr().err
    after = job_files(out)
    assert after.keys() == before.keys()
    rerun = {"runs/AROQ-CMAB/seed_1.json", "runs/AROQ-CMAB/seed_1.csv"}
    for key in before.keys() - rerun:
        assert after[key] == before[key], key  # untouched: same bytes, same modification time
    assert after["runs/AROQ-CMAB/seed_1.csv"][0] != before["runs/AROQ-CMAB/seed_1.csv"][0]
    first, again = (
        np.loadtxt(io.BytesIO(files["runs/AROQ-CMAB/seed_1.csv"][1]), delimiter=",", skiprows=1)
        for files in (before, after)
    )
    assert np.array_equal(first[:, :4], again[:, :4])  # same seed: same t, regret, queries, rounds
    assert json.loads((out / "summary.json").read_text())["run"]["jobs_resumed"] == 5


def test_resume_with_more_seeds_runs_only_the_new_ones(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out, "--seeds", "1") == 0
    capsys.readouterr()
    assert run(problem_file, out, "--seeds", "2", "--resume") == 0
    assert "3 jobs to run (3 already complete)" in capsys.readouterr().err


def test_an_existing_run_is_never_overwritten(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out, "--seeds", "1") == 0
    capsys.readouterr()
    assert run(problem_file, out, "--seeds", "1") == 2
    assert "--resume" in capsys.readouterr().err


def test_resume_refuses_a_changed_problem(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out, "--seeds", "1") == 0
    before = job_files(out)
    capsys.readouterr()
    assert run(problem_file, out, "--seeds", "1", "--resume", "--horizon", "40") == 2
    err = capsys.readouterr().err
    assert "different problem" in err and "run.horizon (80 -> 40)" in err and "Traceback" not in err
    assert job_files(out) == before


def test_plots_are_written(problem_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(problem_file), "--out", str(out), "--jobs", "1", "--seeds", "1"]) == 0
    png = b"\x89PNG\r\n\x1a\n"
    assert (out / "figure.png").read_bytes()[:8] == png
    panels = sorted(p.name for p in (out / "panels").glob("*.png"))
    assert panels == ["a_regret.png", "b_total_rounds.png"]
    assert all((out / "panels" / p).read_bytes()[:8] == png for p in panels)
    (out / "figure.png").unlink()
    assert main(["plot", str(out), "--panels", "queries"]) == 0  # redraw from the saved runs
    assert (out / "figure.png").read_bytes()[:8] == png and (out / "panels" / "a_queries.png").is_file()


BROKEN = """
class Broken:
    # Accepts the policy constructor (so validation passes) but cannot be simulated.
    def __init__(self, space, T, *, oracle="highs", **constants):
        self.space = space
"""


def test_a_failing_job_is_reported_and_the_others_are_kept(
    problem_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (tmp_path / "broken_policy.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    text = TINY.split("[[policies]]")[0] + '[[policies]]\nname = "CUCB"\nkind = "CUCB"\noracle = "enumerate"\n'
    text += '[[policies]]\nname = "Broken"\nkind = "broken_policy:Broken"\n' + TINY[TINY.index("[run]") :]
    problem_file.write_text(text)
    out = tmp_path / "out"
    assert run(problem_file, out, "--seeds", "1", "--plugin", "broken_policy") == 1
    err = capsys.readouterr().err
    assert "job Broken seed 0 failed" in err and "Traceback" in err  # the job's own traceback, for debugging
    assert "1 job(s) failed: Broken seed 0" in err
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["policies"]) == ["CUCB"]
    assert summary["complete"] is False and summary["missing_jobs"] == ["Broken seed 0"]
    assert (out / "runs" / "CUCB" / "seed_0.json").is_file()


@pytest.mark.slow  # spawning worker processes costs seconds
def test_process_pool_gives_the_serial_numbers(problem_file: Path, tmp_path: Path) -> None:
    assert run(problem_file, tmp_path / "serial", "--seeds", "1") == 0
    argv = ["run", str(problem_file), "--out", str(tmp_path / "pool"), "--jobs", "2", "--seeds", "1", "--no-plots"]
    assert main(argv) == 0
    for name in NAMES:
        a = read_curve(tmp_path / "serial" / "runs" / name / "seed_0.csv")
        b = read_curve(tmp_path / "pool" / "runs" / name / "seed_0.csv")
        assert np.array_equal(a["regret"], b["regret"]) and np.array_equal(a["queries"], b["queries"])


def test_validate_and_bad_arguments(problem_file: Path, tmp_path: Path, capsys) -> None:
    assert main(["validate", str(problem_file)]) == 0
    assert "ok" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["run", str(problem_file), "--out", str(tmp_path / "o"), "--horizon", "0"])
    assert info.value.code == 2
    assert main(["run", str(problem_file), "--out", str(tmp_path / "o"), "--executor", "cloud"]) == 2
    assert "unknown executor" in capsys.readouterr().err
    assert main(["run", str(problem_file), "--out", str(tmp_path / "o"), "--executor", "serial://host"]) == 2
    assert "cannot start the executor" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before anything was written
    with pytest.raises(SystemExit) as info:
        main(["compare-oracles", "--help"])
    assert info.value.code == 0 and "compare-oracles" in capsys.readouterr().out


def test_an_interrupted_run_keeps_finished_jobs_and_resumes(
    problem_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from cmab_milp.experiments.run import runner

    real_job, calls = runner.run_job, []

    def interrupted_on_the_third(*args):
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_job(*args)

    monkeypatch.setattr(runner, "run_job", interrupted_on_the_third)
    out = tmp_path / "out"
    assert run(problem_file, out) == 130
    assert "continue with --resume" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and len(summary["missing_jobs"]) == 4
    assert summary["run"]["interrupted"] is True
    monkeypatch.setattr(runner, "run_job", real_job)
    assert run(problem_file, out, "--resume") == 0
    assert "4 jobs to run (2 already complete)" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["complete"] is True


def test_alpha_regret_is_summarised_for_approximate_oracle_policies(problem_file: Path, tmp_path: Path) -> None:
    text = problem_file.read_text().replace(
        'name = "AROQ-CMAB"\nkind = "AROQ"\noracle = "enumerate"',
        'name = "AROQ-CMAB"\nkind = "AROQ"\noracle = "enumerate"\nconstants = { alpha = 0.5 }',
    )
    path = tmp_path / "alpha.toml"
    path.write_text(text)
    out = tmp_path / "alpha-out"
    assert run(path, out) == 0
    summary = json.loads((out / "summary.json").read_text())["policies"]
    assert "alpha_regret" in summary["AROQ-CMAB"] and "alpha_regret" not in summary["CUCB"]
    # alpha-regret = regret - (1 - alpha) * T * r(a*): below the regret for alpha < 1
    assert summary["AROQ-CMAB"]["alpha_regret"]["mean"] < summary["AROQ-CMAB"]["regret"]["mean"]


def test_policies_option_runs_a_subset_and_resume_adds_the_rest(problem_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(problem_file, out, "--policies", "CUCB") == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["CUCB"]
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["policies"]) == ["CUCB"] and not summary["complete"]
    assert run(problem_file, out, "--policies", "SROQ-CMAB,AROQ-CMAB", "--resume") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and list(summary["policies"]) == NAMES
    capsys.readouterr()
    assert run(problem_file, tmp_path / "other", "--policies", "CUCB,UCB") == 2
    err = capsys.readouterr().err
    assert "no policy named UCB" in err and "its policies: CUCB, AROQ-CMAB, SROQ-CMAB" in err
    assert not (tmp_path / "other").exists()


def test_summary_table_uses_one_number_format_and_notes_equal_seeds(tmp_path: Path, capsys) -> None:
    text = TINY.replace('means = { draw = "uniform", seed = 3 }\nwidth = 0.3', "means = [0.0, 0.0, 0.0, 1.0, 1.0]")
    text = text.replace('kind = "UniformNoise"', 'kind = "BernoulliArms"')  # outcomes are certain: no seed matters
    path = tmp_path / "certain.toml"
    path.write_text(text)
    assert run(path, tmp_path / "out", "--policies", "CUCB") == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("CUCB"))
    cells = [c for c in row.split("  ") if c.strip()][2:]  # after the name and the seed count
    for cell in cells:
        mean, std = cell.strip().split(" ± ")
        decimals = [len(x.partition(".")[2]) for x in (mean, std)]
        assert decimals[0] == decimals[1], cell  # mean and std in the same format
    assert "note: CUCB's regret is the same on all 2 seeds" in "\n".join(lines)
