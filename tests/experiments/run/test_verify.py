"""``cmab-milp verify`` / ``cm.verify``: a results folder re-run and compared run by run, never written to.

One small problem (a covariance read from ``data/cov.npy``, CUCB and OLS-UCB-C, 120 steps,
seeds 0 and 1) is run once per module; each test works on its own copy of the folder,
edits it the way a folder gets damaged, and checks what ``verify`` says and its exit code.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.cli import main
from cmab_milp.experiments.run.manifest import MANIFEST, sha256_file
from cmab_milp.experiments.run.storage import read_curve

PROBLEM = """
title = "verify"

[space]
kind = "Cardinality"
d = 5
m = 2

[environment]
kind = "GaussianNoise"
means = [0.1, 0.2, 0.3, 0.4, 0.5]
cov = { file = "data/cov.npy" }

[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"

[[policies]]
name = "OLS"
kind = "OLSUCBC"
oracle = "enumerate"

[run]
horizon = 120
seeds = 2
curve_points = 50
"""

JOBS = [("CUCB", 0), ("CUCB", 1), ("OLS", 0), ("OLS", 1)]


def _cli(*args: str) -> int:
    return main([*args])


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The problem's folder (problem file + data/cov.npy) and its results folder ``results``."""
    root = tmp_path_factory.mktemp("verify")
    (root / "data").mkdir()
    np.save(root / "data" / "cov.npy", 0.01 * np.eye(5) + 0.002)
    (root / "problem.toml").write_text(PROBLEM)
    assert _cli("run", str(root / "problem.toml"), "--out", str(root / "results"), "--jobs", "1", "--no-plots") == 0
    return root


@pytest.fixture
def folder(original: Path, tmp_path: Path) -> Path:
    """A copy of the results folder, beside a copy of the problem and its data (as the run left them)."""
    shutil.copytree(original, tmp_path / "src")
    return tmp_path / "src" / "results"


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _verify(folder: Path, capsys: pytest.CaptureFixture, *options: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = _cli("verify", str(folder), *options)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _rewrite_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


# ----------------------------------------------------------------- identical
def test_a_fresh_run_verifies_identical_and_the_folder_is_not_written(folder: Path, capsys) -> None:
    before = _tree(folder)
    code, out, _ = _verify(folder, capsys)
    assert code == 0
    assert "4 runs checked (4 identical): identical" in out
    for policy, seed in JOBS:
        assert f"{policy:<6}  {seed:<4}  identical" in out
    assert "recorded with: cmab_milp" in out and "re-run with:" in out
    assert _tree(folder) == before  # same names, same bytes: nothing written, no temporary file left


def test_verify_from_python_returns_a_table(folder: Path) -> None:
    report = cm.verify(folder)
    assert report.exit_code == 0 and report.identical
    assert [(r.policy, r.seed, r.status) for r in report.runs] == [(p, s, "identical") for p, s in JOBS]
    assert report.runs[0].recorded["software"]["numpy"] == np.__version__
    assert "CUCB seed 0: identical" == str(report.runs[0])
    assert "policy  seed  result" in str(report)


def test_a_folder_copied_alone_verifies_and_runs(folder: Path, tmp_path: Path, capsys) -> None:
    alone = tmp_path / "elsewhere" / "published"
    shutil.copytree(folder, alone)
    shutil.rmtree(folder.parent)  # the original problem file and its data are gone
    code, out, _ = _verify(alone, capsys)
    assert code == 0, out
    assert "note: data files read from beside" not in out
    assert _cli("run", str(alone / "problem.toml"), "--out", str(tmp_path / "again"), "--jobs", "1", "--no-plots") == 0
    for policy, seed in JOBS:
        old = read_curve(alone / "runs" / policy / f"seed_{seed}.csv")
        new = read_curve(tmp_path / "again" / "runs" / policy / f"seed_{seed}.csv")
        for column in ("t", "regret", "queries", "rounds"):
            np.testing.assert_array_equal(old[column], new[column])


def test_the_covariance_file_is_copied_with_its_hash(original: Path) -> None:
    results = original / "results"
    source = original / "data" / "cov.npy"
    copy = results / "data" / "cov.npy"
    assert copy.read_bytes() == source.read_bytes()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    stored = json.loads((results / "problem.json").read_text())
    assert stored["problem"]["environment"]["cov"]["sha256"] == digest
    manifest = json.loads((results / MANIFEST).read_text())
    assert manifest["files"]["data/cov.npy"] == digest
    assert manifest["seeds"] == [0, 1] and sorted(map(tuple, manifest["jobs"])) == sorted(JOBS)
    for name, recorded in manifest["files"].items():
        assert sha256_file(results / name) == recorded
    record = json.loads((results / "runs" / "OLS" / "seed_1.json").read_text())
    assert record["curve_sha256"] == sha256_file(results / "runs" / "OLS" / "seed_1.csv")
    assert record["provenance"]["machine"]["cores"] >= 1


# ---------------------------------------------------------- subsets, arguments
def test_seeds_and_policies_choose_the_runs(folder: Path, capsys) -> None:
    code, out, _ = _verify(folder, capsys, "--seeds", "1", "--policies", "OLS")
    assert code == 0 and "1 run checked (1 identical)" in out
    assert [(r.policy, r.seed) for r in cm.verify(folder, seeds=[0]).runs] == [("CUCB", 0), ("OLS", 0)]
    assert [(r.policy, r.seed) for r in cm.verify(folder, policies=["CUCB"]).runs] == [("CUCB", 0), ("CUCB", 1)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--seeds", "7"], "seed 7 is not among the folder's seeds [0, 1]"),
        (["--seeds", "a,b"], "--seeds: expected comma-separated seeds, got 'a,b'"),
        (["--seeds", ","], "seeds: give at least one seed"),
        (["--policies", "CUCB,X"], "no policy named 'X' in the folder's problem; its policies: CUCB, OLS"),
        (["--jobs", "0"], "jobs must be a positive integer, got 0"),
    ],
)
def test_bad_arguments_are_refused(folder: Path, capsys, options: list[str], message: str) -> None:
    before = _tree(folder)
    code, out, err = _verify(folder, capsys, *options)
    assert code == 2 and message in err and out == ""
    assert _tree(folder) == before


def test_a_path_that_is_not_a_results_folder_cannot_be_checked(tmp_path: Path, capsys) -> None:
    code, _, err = _verify(tmp_path / "nowhere", capsys)
    assert code == 2 and "is not a folder" in err
    (tmp_path / "empty").mkdir()
    code, _, err = _verify(tmp_path / "empty", capsys)
    assert code == 2 and "holds no readable problem.json" in err
    with pytest.raises(ValueError, match="not a folder"):
        cm.verify(tmp_path / "nowhere")


# ------------------------------------------------------------------- edits
def test_an_edited_summary_is_reported(folder: Path, capsys) -> None:
    _rewrite_json(folder / "summary.json", lambda d: d["policies"]["CUCB"]["regret"].update(mean=1.5))
    code, out, _ = _verify(folder, capsys)
    assert code == 1
    assert "problem: summary.json was edited after the run (sha256 differs from manifest.json)" in out
    (folder / MANIFEST).unlink()  # without the manifest the summary is recomputed from its runs
    code, out, _ = _verify(folder, capsys)
    assert code == 1
    assert "problem: summary.json does not match its runs: CUCB regret mean is 1.5, the runs give" in out


@pytest.mark.parametrize("cut", ["mid_line", "line_boundary"])
def test_a_truncated_run_file_is_reported(folder: Path, capsys, cut: str) -> None:
    path = folder / "runs" / "CUCB" / "seed_1.csv"
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[:20]) + (lines[20][:7] if cut == "mid_line" else ""))
    code, out, _ = _verify(folder, capsys)
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("CUCB    1"))
    assert "truncated" in row
    if cut == "mid_line":
        assert "runs/CUCB/seed_1.csv is cut short or damaged: line 21 has" in row
    else:
        assert f"runs/CUCB/seed_1.csv has 19 of its {len(lines) - 1} rows" in row
    assert sum("identical" in line for line in out.splitlines()[3:]) == 3


def test_an_edited_value_is_named_with_its_step(folder: Path, capsys) -> None:
    path = folder / "runs" / "OLS" / "seed_0.csv"
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[30].split(",")
    t, regret = fields[0], float(fields[1])
    fields[1] = repr(regret + 0.25)
    lines[30] = ",".join(fields)
    path.write_text("".join(lines))
    code, out, _ = _verify(folder, capsys)
    assert code == 1
    assert (
        f"runs/OLS/seed_0.csv was edited after the run; against the re-run: regret differs first at t={t} "
        f"(recorded {regret + 0.25!r}, re-run {regret!r})"
    ) in out


def test_a_consistent_forgery_is_still_caught_by_the_re_run(folder: Path) -> None:
    """Hashes rewritten to match the edit (record and manifest): the re-run is what tells."""
    path = folder / "runs" / "CUCB" / "seed_0.csv"
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[12].split(",")
    fields[2] = str(int(fields[2]) + 1)  # queries
    lines[12] = ",".join(fields)
    path.write_text("".join(lines))
    digest = sha256_file(path)
    _rewrite_json(folder / "runs" / "CUCB" / "seed_0.json", lambda d: d.update(curve_sha256=digest))
    manifest = folder / MANIFEST
    _rewrite_json(manifest, lambda d: d["files"].update({"runs/CUCB/seed_0.csv": digest}))
    _rewrite_json(
        manifest,
        lambda d: d["files"].update({"runs/CUCB/seed_0.json": sha256_file(folder / "runs" / "CUCB" / "seed_0.json")}),
    )
    report = cm.verify(folder)
    assert report.exit_code == 1
    check = report.runs[0]
    assert (check.policy, check.seed, check.status) == ("CUCB", 0, "differs")
    assert check.detail == (
        f"queries differs first at t={fields[0]} (recorded {int(fields[2])}, re-run {int(fields[2]) - 1})"
    )


def test_a_changed_seed_list_is_reported(folder: Path, capsys) -> None:
    before = _tree(folder)
    _rewrite_json(folder / "problem.json", lambda d: d["problem"]["run"].update(seeds=[0, 1, 2]))
    code, out, err = _verify(folder, capsys)
    assert code == 2 and out == ""
    assert "cannot be checked:" in err and "problem.json was edited after the run" in err
    assert len(err.strip().splitlines()) == 1
    (folder / MANIFEST).unlink()  # an older folder: the summary still holds the seed list
    code, out, _ = _verify(folder, capsys)
    assert code == 1
    assert "problem: the seed list changed: summary.json records [0, 1], problem.json [0, 1, 2]" in out
    assert "CUCB    2     missing    no complete run in the folder" in out
    assert set(_tree(folder)) == set(before) - {MANIFEST}


def test_a_deleted_run_and_a_stray_run_file_are_reported(folder: Path, capsys) -> None:
    for suffix in ("csv", "json"):
        (folder / "runs" / "OLS" / f"seed_1.{suffix}").unlink()
    shutil.copy(folder / "runs" / "OLS" / "seed_0.csv", folder / "runs" / "OLS" / "seed_9.csv")
    code, out, _ = _verify(folder, capsys)
    assert code == 1
    assert "OLS     1     missing    deleted after the run (listed in manifest.json)" in out
    assert "problem: runs/OLS/seed_9.csv is not a file the recorded run wrote" in out


def test_an_edited_data_file_cannot_be_checked(folder: Path, capsys) -> None:
    path = folder / "data" / "cov.npy"
    matrix = np.load(path)
    matrix[0, 0] += 1e-3
    np.save(path, matrix)
    code, out, err = _verify(folder, capsys)
    assert code == 2 and out == ""
    assert "cannot be checked: data file data/cov.npy was edited after the run" in err
    (folder / MANIFEST).unlink()  # without a manifest the recorded sha256 in problem.json still refuses it
    code, _, err = _verify(folder, capsys)
    assert code == 2 and "the data file changed since the problem was read" in err


def test_a_damaged_manifest_cannot_be_checked(folder: Path, capsys) -> None:
    (folder / MANIFEST).write_text("{")
    code, _, err = _verify(folder, capsys)
    assert code == 2 and "manifest.json is damaged" in err


# ---------------------------------------------------------- older folders
def _make_old(folder: Path) -> None:
    """As a results folder written before manifests, recorded versions and data copies."""
    (folder / MANIFEST).unlink()
    shutil.rmtree(folder / "data")
    for record in folder.glob("runs/*/seed_*.json"):
        _rewrite_json(record, lambda d: (d.pop("provenance"), d.pop("curve_sha256")))


def test_an_older_folder_is_verified_with_notes(folder: Path, capsys, monkeypatch) -> None:
    _make_old(folder)
    monkeypatch.chdir(folder.parent.parent)  # the recorded problem file's path is as the run was given it
    stored = json.loads((folder / "problem.json").read_text())
    stored["file"] = str(folder.parent / "problem.toml")
    (folder / "problem.json").write_text(json.dumps(stored))  # (the test's copy moved the original)
    report = cm.verify(folder)
    assert report.exit_code == 0, str(report)
    assert any("data files read from beside the original problem file" in n for n in report.notes)
    assert any("no manifest.json (written by an older cmab_milp)" in n for n in report.notes)
    assert "(as summary.json records)" in str(report)
    shutil.rmtree(folder.parent / "data")  # and without the original data: cannot be checked
    with pytest.raises(ValueError, match=r"data file data/cov.npy is not in .* nor beside the original problem file"):
        cm.verify(folder)


def test_resume_says_which_versions_differ_before_any_work(folder: Path, capsys) -> None:
    _rewrite_json(
        folder / "runs" / "CUCB" / "seed_0.json", lambda d: d["provenance"]["software"].update(numpy="1.26.4")
    )
    capsys.readouterr()
    problem = folder.parent / "problem.toml"
    assert _cli("run", str(problem), "--out", str(folder), "--resume", "--jobs", "1", "--no-plots") == 0
    err = capsys.readouterr().err
    assert f"numpy 1.26.4 -> {np.__version__} (1 of 4 runs)" in err.splitlines()[0]
    report = cm.verify(folder)
    assert report.exit_code == 0
    assert report.notes == [f"versions differ from the recorded ones: numpy 1.26.4 -> {np.__version__}"]


def test_a_data_file_named_like_the_results_own_files_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "runs").mkdir()
    np.save(tmp_path / "runs" / "cov.npy", 0.01 * np.eye(5))
    (tmp_path / "p.toml").write_text(PROBLEM.replace("data/cov.npy", "runs/cov.npy"))
    capsys.readouterr()
    assert _cli("run", str(tmp_path / "p.toml"), "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots") == 2
    assert "data file 'runs/cov.npy' would be copied onto the results folder's own runs" in capsys.readouterr().err


# ------------------------------------------------------------ re-runs, locks
def test_a_re_run_that_fails_here_leaves_the_run_unchecked(folder: Path, capsys, monkeypatch) -> None:
    import cmab_milp.experiments.run.verify as verify_module
    from cmab_milp.experiments.run.jobs import run_job

    def failing(problem, policy, seed, *rest):
        if policy == "OLS":
            return {"error": "Traceback (most recent call last):\nImportError: no solver here\n"}
        return run_job(problem, policy, seed)

    monkeypatch.setattr(verify_module, "run_job", failing)  # jobs=1: the re-runs run in this process
    code, out, _ = _verify(folder, capsys)
    assert code == 2
    assert "OLS     0     failed     the re-run failed here: ImportError: no solver here" in out
    assert "CUCB    0     identical" in out


def test_parallel_re_runs_give_the_same_report(folder: Path) -> None:
    serial, parallel = cm.verify(folder), cm.verify(folder, jobs=2)
    assert [(r.policy, r.seed, r.status) for r in parallel.runs] == [(r.policy, r.seed, r.status) for r in serial.runs]
    assert parallel.exit_code == 0


def test_a_folder_a_run_is_writing_into_is_not_checked(folder: Path) -> None:
    import fcntl
    import os

    from cmab_milp.experiments.run.storage import lock_folder

    fd = lock_folder(folder)  # as `cmab-milp run` holds it
    try:
        with pytest.raises(ValueError, match="is in use by a cmab-milp run"):
            cm.verify(folder)
    finally:
        os.close(fd)
    shared = os.open(folder, os.O_RDONLY)
    fcntl.flock(shared, fcntl.LOCK_SH)  # another check reading it at the same time
    try:
        assert cm.verify(folder, seeds=[0], policies=["CUCB"]).exit_code == 0
    finally:
        os.close(shared)


def test_a_difference_under_other_versions_names_them(folder: Path) -> None:
    """A run recorded with another numpy that the re-run does not reproduce: the difference and the versions."""
    record = folder / "runs" / "CUCB" / "seed_1.json"
    _rewrite_json(
        record, lambda d: (d["provenance"]["software"].update(numpy="1.26.4"), d["totals"].update(regret=1.0))
    )
    (folder / MANIFEST).unlink()
    report = cm.verify(folder, seeds=[1], policies=["CUCB"])
    (check,) = report.runs
    assert check.status == "differs" and report.exit_code == 1
    assert check.detail.startswith("totals.regret differs (recorded 1.0, re-run ")
    assert check.detail.endswith(f"; versions differ: numpy 1.26.4 -> {np.__version__}")
