"""Stopping runs from outside: a worker killed while idle, the parent SIGKILLed, two runs on one folder.

The process tests run small scripts in a child Python so that a hang fails the
test (by timeout) instead of hanging the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cmab_milp.cli import main
from cmab_milp.experiments.run.storage import lock_folder

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")


def _python(script: str, tmp_path: Path) -> subprocess.Popen:
    """Run ``script`` in a child Python (its own session, output in files ``out.txt`` / ``err.txt``)."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        return subprocess.Popen(
            [sys.executable, str(path)], cwd=tmp_path, env=env, stdout=out, stderr=err, start_new_session=True
        )


def _finish(child: subprocess.Popen, tmp_path: Path, seconds: float) -> tuple[str, str] | None:
    """The child's output once it ends within ``seconds``; None (its whole session killed) if it does not."""
    try:
        child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return None
    return (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its new parent) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return not sys.platform.startswith("linux")


TASKS = """
import os, sys, time
from pathlib import Path


def pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()


def sleeper(folder):
    Path(folder, f"{os.getpid()}.pid").write_text("x")
    for _ in range(600):
        time.sleep(0.1)
    return os.getpid()
"""


def test_cancel_returns_after_a_worker_was_killed_while_idle(tmp_path: Path) -> None:
    """An idle worker SIGKILLed (under multiprocessing.Pool it held the task queue's lock): cancel still returns."""
    script = """
    import os, signal, sys, time
    sys.path.insert(0, os.getcwd())
    from tasks import dispatch
    from cmab_milp.experiments.run.executors import LocalPool

    if __name__ == "__main__":
        pool = LocalPool(2)
        results = pool.run(dispatch, [("pid", 2.0), ("sleep", os.getcwd())])
        index, idle = next(results)
        deadline = time.time() + 30
        while not [p for p in os.listdir() if p.endswith(".pid")] and time.time() < deadline:
            time.sleep(0.05)
        busy = int([p for p in os.listdir() if p.endswith(".pid")][0].split(".")[0])
        print("idle", idle, "busy", busy, flush=True)
        assert idle != busy
        os.kill(idle, signal.SIGKILL)
        time.sleep(1.0)
        start = time.time()
        pool.close(cancel=True)
        print("closed", round(time.time() - start, 1), flush=True)
    """
    (tmp_path / "tasks.py").write_text(
        TASKS + "\n\ndef dispatch(kind, arg):\n    return pid_after(arg) if kind == 'pid' else sleeper(arg)\n"
    )
    child = _python(script, tmp_path)
    finished = _finish(child, tmp_path, 90)
    assert finished is not None, "close(cancel=True) hung after an idle worker was killed"
    out, err = finished
    assert child.returncode == 0, err
    assert "closed" in out


def test_workers_exit_at_once_and_quietly_when_the_parent_is_killed(tmp_path: Path) -> None:
    (tmp_path / "tasks.py").write_text(TASKS)
    script = """
    import os, sys, time
    sys.path.insert(0, os.getcwd())
    from tasks import sleeper
    from cmab_milp.experiments.run.executors import LocalPool

    if __name__ == "__main__":
        pool = LocalPool(2)
        for _ in pool.run(sleeper, [(os.getcwd(),), (os.getcwd(),)]):
            pass
    """
    child = _python(script, tmp_path)
    deadline = time.time() + 60
    while len(list(tmp_path.glob("*.pid"))) < 2 and time.time() < deadline:
        time.sleep(0.05)
    workers = [int(p.name.split(".")[0]) for p in tmp_path.glob("*.pid")]
    assert len(workers) == 2
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    killed = time.time()
    while [pid for pid in workers if _alive(pid)] and time.time() < killed + 10:
        time.sleep(0.05)
    gone = time.time() - killed
    left = [pid for pid in workers if _alive(pid)]
    if left:
        os.killpg(child.pid, signal.SIGKILL)
    assert not left, "the workers outlived their parent by more than 10 s"
    assert gone < 5.0, f"the workers outlived their parent by {gone:.1f} s"
    time.sleep(0.5)
    err = (tmp_path / "err.txt").read_text()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


PROBLEM = """
[space]
kind = "Cardinality"
d = 6
m = 2
[environment]
kind = "BernoulliArms"
means = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "enumerate"
[run]
horizon = HORIZON
seeds = 1
"""


def test_a_second_run_on_a_locked_folder_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.replace("HORIZON", "50"))
    out = tmp_path / "out"
    out.mkdir()
    fd = lock_folder(out)
    try:
        for extra in ([], ["--resume"]):
            assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots", *extra]) == 2
            err = capsys.readouterr().err
            assert "in use by another cmab-milp run" in err and err.count("\n") == 1
        assert list(out.iterdir()) == []  # nothing written
    finally:
        os.close(fd)
    assert main(["run", str(path), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0


def test_two_resumes_at_once_run_each_job_once(tmp_path: Path) -> None:
    """A real run holds the folder; a --resume started meanwhile is refused (exit 2); after a SIGKILL it is not."""
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.replace("HORIZON", "100000000").replace("seeds = 1", "seeds = 2"))
    out = tmp_path / "out"
    script = f"""
    import sys
    from cmab_milp.cli import main
    sys.exit(main(["run", {str(path)!r}, "--out", {str(out)!r}, "--jobs", "1", "--no-plots"]))
    """
    first = _python(script, tmp_path)
    try:
        deadline = time.time() + 60
        while not (out / "problem.json").exists() and time.time() < deadline:
            time.sleep(0.05)
        assert (out / "problem.json").exists()
        second = subprocess.run(
            [sys.executable, "-m", "cmab_milp.cli", "run", str(path), "--out", str(out), "--resume", "--no-plots"],
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        assert "in use by another cmab-milp run" in second.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    fd = lock_folder(out)  # the killed run's lock went with it
    os.close(fd)
