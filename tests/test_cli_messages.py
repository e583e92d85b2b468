"""Messages, not tracebacks: one line per user error (exit 2), one line for a failed run (exit 1),
``--debug`` for the traceback; interrupted runs stop their workers and leave a resumable folder."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import register_executor
from cmab_milp.experiments.run import executors, storage

ROOT = Path(__file__).resolve().parents[1]

TINY = """
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

[run]
horizon = 40
seeds = 3
panels = ["regret"]
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def run(problem: Path, out: Path, *extra: str) -> int:
    return main(["run", str(problem), "--out", str(out), "--jobs", "1", *extra])


# ------------------------------------------------------------ bad input: exit 2
def test_non_utf8_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(TINY.replace("CUCB", "CUCB\xe9").encode("latin-1"))
    assert main(["validate", str(path)]) == 2
    assert "not a UTF-8 text file" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("bound", ["high = inf", "low = -inf", "high = nan", "low = -1e308, high = 1e308"])
def test_draw_with_infinite_or_unbounded_range(bound: str, tiny: Path, capsys) -> None:
    tiny.write_text(TINY.replace("seed = 3", f"seed = 3, {bound}"))
    assert main(["validate", str(tiny)]) == 2
    line = one_line(capsys.readouterr().err)
    assert ": environment.means." in line and ("finite" in line or "low < high" in line), line


def test_regular_file_as_out(tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "a_file"
    out.write_text("mine")
    assert run(tiny, out) == 2
    assert "is not a folder" in one_line(capsys.readouterr().err)
    assert out.read_text() == "mine"


def test_unwritable_out(tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # the tests may run as root, for whom chmod 0o555 changes nothing: refuse the probe file instead
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    import cmab_milp.experiments.run.runner as runner

    monkeypatch.setattr(runner.tempfile, "TemporaryFile", refuse)
    assert run(tiny, tmp_path / "out") == 2
    assert "cannot write to --out" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("name", ["summary.json", "figure.png", "notes.txt"])
def test_out_holding_someone_elses_files_is_refused(name: str, tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_text("precious")
    assert run(tiny, out) == 2
    assert "holds no cmab-milp run" in one_line(capsys.readouterr().err)
    assert sorted(p.name for p in out.iterdir()) == [name] and (out / name).read_text() == "precious"


def test_nothing_is_written_through_a_symlinked_panels_folder(tiny: Path, tmp_path: Path, capsys) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    assert run(tiny, out) == 0
    elsewhere.mkdir()
    for png in (out / "panels").iterdir():
        png.unlink()
    (out / "panels").rmdir()
    (out / "panels").symlink_to(elsewhere)
    capsys.readouterr()
    assert main(["plot", str(out)]) == 2
    assert "panels is a symbolic link" in one_line(capsys.readouterr().err)
    assert list(elsewhere.iterdir()) == []
    assert run(tiny, out, "--resume") == 2  # a run refuses the folder as well
    assert "symbolic link" in one_line(capsys.readouterr().err)
    assert list(elsewhere.iterdir()) == []


def test_ragged_csv_in_plot(tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(tiny, out, "--no-plots") == 0
    csv = out / "runs" / "CUCB" / "seed_1.csv"
    lines = csv.read_text().splitlines()
    lines[3] = ",".join(lines[3].split(",")[:4])
    csv.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["plot", str(out)]) == 2
    line = one_line(capsys.readouterr().err)
    assert "seed_1.csv: line 4 has 4 values, expected 6" in line


def test_plot_of_a_folder_without_a_run(tmp_path: Path, capsys) -> None:
    (tmp_path / "problem.json").write_text("[1, 2")
    assert main(["plot", str(tmp_path)]) == 2
    assert "not a run folder" in one_line(capsys.readouterr().err)


def test_debug_shows_the_traceback(tmp_path: Path, capsys) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"title = '\xe9'\n")
    assert main(["validate", str(path), "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().endswith("(byte 9: invalid continuation byte)")


def test_an_unexpected_error_is_one_line_and_exit_1(tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import cmab_milp.experiments as experiments

    def broken(*args, **kwargs):
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(experiments, "load_problem", broken)
    assert main(["validate", str(tiny)]) == 1
    line = one_line(capsys.readouterr().err)
    assert "unexpected RuntimeError: something nobody foresaw" in line and "--debug" in line


# ------------------------------------------------------------ failed runs: exit 1
def test_full_disk_stops_the_run_and_resume_completes_it(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    out = tmp_path / "out"
    real = storage.write_curve
    written = []

    def fill_up(path, curve):
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(path)
        real(path, curve)

    import cmab_milp.experiments.run.jobs as jobs

    monkeypatch.setattr(jobs, "write_curve", fill_up)
    assert run(tiny, out, "--no-plots") == 1
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]
    assert "Traceback" not in err and "No space left on device" in line and "--resume" in line
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and len(summary["missing_jobs"]) == 2
    monkeypatch.setattr(jobs, "write_curve", real)
    assert run(tiny, out, "--no-plots", "--resume") == 0
    assert json.loads((out / "summary.json").read_text())["complete"] is True


class _LosesItsCluster:
    """An executor that returns one job and then loses its connection, as a Dask client does."""

    name = "flaky"
    workers = 1

    def run(self, function, tasks):
        yield 0, function(*tasks[0])
        raise OSError("Timed out trying to connect to tcp://10.0.0.9:8786 after 30 s")

    def close(self, cancel=False):
        pass


def test_a_lost_executor_ends_the_run_with_a_resumable_folder(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setitem(executors.EXECUTORS, "flaky", None)
    register_executor("flaky", lambda address, jobs: _LosesItsCluster())
    out = tmp_path / "out"
    assert main(["run", str(tiny), "--out", str(out), "--executor", "flaky://x", "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert "the executor 'flaky://x' failed: OSError: Timed out" in err and "Traceback" not in err
    assert "--resume" in err.splitlines()[-1]
    assert len(list((out / "runs" / "CUCB").glob("*.json"))) == 1
    assert run(tiny, out, "--no-plots", "--resume") == 0


def test_a_lost_dask_cluster_ends_the_run(tiny: Path, tmp_path: Path, capsys) -> None:
    distributed = pytest.importorskip("distributed")
    tiny.write_text(TINY.replace("horizon = 40", "horizon = 30000"))
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    address = cluster.scheduler_address
    import threading

    stopper = threading.Timer(1.0, cluster.close)
    stopper.start()
    try:
        code = main(["run", str(tiny), "--out", str(tmp_path / "out"), "--executor", f"dask://{address}", "--no-plots"])
    finally:
        stopper.join()
        cluster.close()
    assert code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "the executor" in err and "--resume" in err


# ------------------------------------------------------------ signals
SLOW = TINY.replace("horizon = 40", "horizon = 20000").replace("seeds = 3", "seeds = 5")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_workers_and_resume_completes_the_run(signum, code, tmp_path: Path) -> None:
    problem, out = tmp_path / "slow.toml", tmp_path / "out"
    problem.write_text(SLOW)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "cmab_milp.cli", "run", str(problem), "--out", str(out), "--jobs", "2"]
    process = subprocess.Popen([*command, "--no-plots"], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list((out / "runs").glob("*/*.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = psutil.Process(process.pid).children(recursive=True)
    assert workers, "the pool's workers should be running"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert "Traceback" not in err and "--resume" in err
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, alive
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["interrupted"] is True and not summary["complete"]
    done = len(list((out / "runs").glob("*/*.json")))
    assert 1 <= done < 5
    finished = subprocess.run([*command, "--resume", "--no-plots"], env=env, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert json.loads((out / "summary.json").read_text())["complete"] is True
