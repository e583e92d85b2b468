"""Ctrl-C during a query raises KeyboardInterrupt within a second on every solver backend, never an OracleError.

The process tests run a long query (a longest path on a 9x9 grid digraph, no time limit: minutes on every
solver) in a child Python, send it SIGINT once it is solving, and read what it printed.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from cmab_milp import _interrupts as interrupts  # the state lives there (the face re-exports it)
from cmab_milp.oracles.core.interrupts import halting, stop_all, stoppable
from cmab_milp.oracles.core.registry import available_backends

ROOT = Path(__file__).resolve().parents[3]
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CHILD = """
import os, sys, time
import numpy as np, networkx as nx
import cmab_milp as cm

backend, how = sys.argv[1], sys.argv[2]
g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(9, 9)).to_directed()
space = cm.STPaths(g, 0, 80)
w = np.random.default_rng(0).uniform(0.5, 1.0, space.d)
oracle = cm.make_oracle(space, backend)
print("solving", flush=True)
start = time.perf_counter()
try:
    if how == "batch":
        oracle.argmax_batch([{"weights": w}, {"weights": w[::-1].copy()}, {"weights": w + 0.1}])
    else:
        oracle.argmax(w)
    print("answered", flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    if how == "again":  # the oracle answers after the interrupt, and Ctrl-C is Python's again
        print(int(oracle.argmax(-np.ones(space.d)).sum()), flush=True)  # a shortest path: 16 arcs
except Exception as exc:
    print("error", type(exc).__name__, exc, flush=True)
"""


def _interrupt(backend: str, how: str, tmp_path: Path, after: float = 1.0) -> tuple[str, float]:
    """Run the child until it is solving, SIGINT it ``after`` seconds later; its output and the seconds to its end."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, str(script), backend, how],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert child.stdout.readline().strip().endswith("solving")
        time.sleep(after)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
        return out, time.perf_counter() - sent
    finally:
        child.kill()
        child.wait()


SOLVERS = [b for b in ("highs", "scip", "gurobi", "ortools") if b in available_backends()]


@posix
@pytest.mark.parametrize("backend", [pytest.param(b, marks=[] if b == "highs" else pytest.mark.slow) for b in SOLVERS])
def test_sigint_during_a_query_raises_keyboard_interrupt(backend: str, tmp_path: Path) -> None:
    out, seconds = _interrupt(backend, "single", tmp_path)
    assert "KeyboardInterrupt" in out, out
    assert "answered" not in out and "error" not in out
    assert seconds < 5.0, seconds  # the solver stopped (the query alone runs for minutes)


@posix
@pytest.mark.slow
@pytest.mark.parametrize("backend", SOLVERS)
def test_sigint_during_a_batch_stops_every_worker(backend: str, tmp_path: Path) -> None:
    out, seconds = _interrupt(backend, "batch", tmp_path)
    assert "KeyboardInterrupt" in out, out
    assert seconds < 5.0, seconds  # the process ends: no worker thread solves on


@posix
@pytest.mark.slow
@pytest.mark.parametrize("backend", SOLVERS)
def test_the_oracle_answers_after_an_interrupt(backend: str, tmp_path: Path) -> None:
    out, _ = _interrupt(backend, "again", tmp_path)
    lines = out.split()
    assert "KeyboardInterrupt" in lines and lines[-1] == "16", out


# ------------------------------------------------------------------ the mechanism, in this process
def test_stop_all_stops_a_solve_of_another_thread() -> None:
    stopped = threading.Event()
    outcome: list[str] = []

    def solve() -> None:
        try:
            with stoppable(stopped.set):
                stopped.wait(10)
            outcome.append("returned")
        except KeyboardInterrupt:
            outcome.append("KeyboardInterrupt")

    worker = threading.Thread(target=solve)
    worker.start()
    while not interrupts._active:
        time.sleep(0.001)
    stop_all()
    worker.join(5)
    assert outcome == ["KeyboardInterrupt"]


def test_no_solve_starts_while_halting() -> None:
    with halting(), pytest.raises(KeyboardInterrupt), stoppable(lambda: None):
        pytest.fail("the solve started")  # pragma: no cover
    with stoppable(lambda: None) as solve:  # and after the block, solves run again
        pass
    assert not solve.stopped and not interrupts._active


@posix
def test_sigint_in_a_solve_of_the_main_thread_is_heard_and_outside_solves_raises_as_before() -> None:
    heard = threading.Event()
    with pytest.raises(KeyboardInterrupt), stoppable(heard.set):
        os.kill(os.getpid(), signal.SIGINT)
        assert heard.wait(5)  # the watcher called the stop while this thread waited (no exception in here)
    with pytest.raises(KeyboardInterrupt):  # outside a solve: Python's default behaviour
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


@posix
def test_sigint_bytes_reach_a_wakeup_fd_set_before() -> None:
    """An event loop's wakeup fd, set before the first solve, still gets the signals (the watcher forwards)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    saved = (interrupts._installed, interrupts._forward, signal.getsignal(signal.SIGINT))
    interrupts._installed = False
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    try:
        with pytest.raises(KeyboardInterrupt), stoppable(lambda: None):
            os.kill(os.getpid(), signal.SIGINT)
            select.select([read_end], [], [], 10)  # until the watcher forwards the byte (late on a loaded machine)
        forwarded = os.read(read_end, 16)
        # SIGINT bytes only; more than one when the watcher, late on a loaded machine, still held the byte of
        # an earlier test's signal when this test set its fd (it is forwarded too, as it should be)
        assert forwarded and set(forwarded) == {signal.SIGINT}
    finally:
        signal.set_wakeup_fd(previous)
        interrupts._installed, interrupts._forward = saved[:2]
        signal.signal(signal.SIGINT, saved[2])
        os.close(read_end)
        os.close(write_end)


@posix
def test_a_custom_sigint_handler_set_before_the_first_solve_is_left_alone() -> None:
    calls: list[int] = []
    saved = interrupts._installed
    interrupts._installed = False  # as in a process whose first solve comes after the user's handler
    wakeup = signal.set_wakeup_fd(-1)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        with stoppable(lambda: None) as solve:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        assert calls == [signal.SIGINT] and not solve.stopped and not interrupts._installed
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(wakeup)
        interrupts._installed = saved
