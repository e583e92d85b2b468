"""A run told to stop (SIGTERM, as ``timeout`` sends it, or Ctrl-C) stops at once, its job in a long solve included.

The problem's second job asks HiGHS for a longest path on a 7x7 grid digraph (seconds to minutes a query);
the signal comes while it solves. Before, SIGTERM's handler raised inside HiGHS's callback, which swallowed
the exception: with ``--jobs 1`` the run went on as if never told (found under ``timeout 900``, still working
ten minutes later). The test asks that the whole process tree is gone within seconds, with the documented
exit code, a true message, the finished job saved and the folder resumable.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

#: Seconds a run may take to stop after the signal (it stops in well under one; the machine may be loaded).
STOP_SECONDS = 10.0

PLUGIN = '''
"""A policy kind of the test: every step asks the oracle for the best path under fixed random weights."""
import threading
import time

import numpy as np

from cmab_milp.experiments import register_kind
from cmab_milp.policies.linear import CUCB


class FixedPath(CUCB):
    """``longest = true``: a longest path on a digraph with cycles (a hard MILP); else a shortest path.

    ``linger = true``: the first step also starts a thread that works for two minutes (as a worker thread of a
    batch query may, in Python code between two solver calls).
    """

    def __init__(self, space, T=None, oracle="highs", longest=False, linger=False, **constants):
        space.__dict__["m"] = space.d  # a bound: skips the longest-path solve of the true m (unused here)
        super().__init__(space, T, oracle=oracle, **constants)
        self.weights = np.random.default_rng(0).uniform(0.5, 1.0, space.d) * (1.0 if longest else -1.0)
        self.longest, self.linger = longest, linger

    def best_upper(self, t, include=(), exclude=()):
        if self.linger:
            self.linger = False
            threading.Thread(target=time.sleep, args=(120,)).start()
        if self.longest:
            print("solving", flush=True)
        return self.oracle.argmax(self.weights)


register_kind("policy", "FixedPath", FixedPath)
'''


def _problem(folder: Path, linger: bool = False) -> Path:
    """Two jobs: ``Short`` (shortest paths, done in a moment), then ``Long`` (a longest path every step)."""
    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(7, 7)).to_directed()
    edges = ", ".join(f"[{u}, {v}]" for u, v in graph.edges())
    costs = ", ".join(["0.5"] * graph.number_of_edges())
    (folder / "fixedpaths.py").write_text(PLUGIN)
    path = folder / "long.toml"
    path.write_text(
        f"""
[space]
kind = "STPaths"
source = 0
target = 48
[space.graph]
directed = true
edges = [{edges}]
[environment]
kind = "BernoulliCosts"
costs = [{costs}]
[[policies]]
name = "Short"
kind = "FixedPath"
oracle = "highs"
[[policies]]
name = "Long"
kind = "FixedPath"
oracle = "highs"
constants = {{ longest = true, linger = {str(linger).lower()} }}
[run]
horizon = 20
seeds = 1
"""
    )
    return path


def _command(problem: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "cmab_milp.cli", "run", str(problem), "--plugin", "fixedpaths", "--out", str(out)]


def _wait_for_line(process: subprocess.Popen, expected: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready and process.stdout.readline().strip() == expected:
            return
        if process.poll() is not None:
            break
    raise AssertionError(f"the run never printed {expected!r}: {process.stderr.read() if process.poll() else ''}")


@pytest.mark.parametrize(
    ("jobs", "signum", "code", "linger"),
    [
        pytest.param(1, signal.SIGTERM, 143, False, id="sigterm-jobs1"),
        pytest.param(2, signal.SIGTERM, 143, False, id="sigterm-jobs2"),
        pytest.param(1, signal.SIGTERM, 143, True, id="sigterm-jobs1-a-thread-works-on"),
        pytest.param(1, signal.SIGINT, 130, False, id="sigint-jobs1", marks=pytest.mark.slow),
    ],
)
def test_a_signal_during_a_long_solve_stops_every_process_of_the_run(
    jobs: int, signum: int, code: int, linger: bool, tmp_path: Path
) -> None:
    problem, out = _problem(tmp_path, linger), tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    command = [*_command(problem, out), "--jobs", str(jobs), "--no-plots"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _wait_for_line(process, "solving", 60)
        deadline = time.monotonic() + 30
        while not list((out / "runs").glob("Short/*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # well inside the Long job's first solve
        workers = psutil.Process(process.pid).children(recursive=True)  # none with --jobs 1
        sent = time.monotonic()
        os.killpg(process.pid, signum)  # the whole group, as timeout and a terminal's Ctrl-C do
        try:
            _, err = process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run still works {STOP_SECONDS:.0f} s after the signal") from None
        _, alive = psutil.wait_procs(workers, timeout=max(0.0, sent + STOP_SECONDS - time.monotonic()))
        stopped = time.monotonic() - sent
        assert not alive, f"workers still alive {STOP_SECONDS:.0f} s after the signal: {alive}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert stopped < STOP_SECONDS
    assert process.returncode == code, err
    assert "Traceback" not in err
    assert "interrupted after" in err and "1 of 2 jobs not finished" in err and f"--resume --out {out}" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["interrupted"] is True
    assert summary["missing_jobs"] == ["Long seed 0"] and summary["policies"]["Short"]["queries"]["mean"] == 20
    resumed = subprocess.run(
        [*_command(problem, out), "--resume", "--policies", "Short", "--no-plots"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "0 jobs to run (1 already complete)" in resumed.stderr
