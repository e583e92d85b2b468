"""SIGTERM under ``terminating()`` stops a solve as Ctrl-C does; the workers of a stopped batch stay stopped.

Before: the command line's SIGTERM handler raised inside HiGHS's interrupt callback, which swallowed the
exception, so a run with ``--jobs 1`` went on as if never told to stop; and the workers of a batch stopped
by Ctrl-C started their next solves normally once ``halting()``'s block had ended (2 s), so a worker whose
query was between two solves then ran its query to the end, keeping the process alive at exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from cmab_milp.oracles.core.interrupts import Terminated, halting, stoppable, terminating

ROOT = Path(__file__).resolve().parents[3]
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _solve_in_thread(before: threading.Event, go_on: threading.Event, outcome: list[str]) -> threading.Thread:
    """A thread that waits (between two solves) until ``go_on``, then solves; ``outcome`` says how it ended."""

    def work() -> None:
        before.set()
        go_on.wait(10)
        try:
            with stoppable(lambda: None):
                outcome.append("solved")
        except KeyboardInterrupt:
            outcome.append("stopped")

    thread = threading.Thread(target=work)
    thread.start()
    before.wait(10)
    return thread


@pytest.mark.parametrize(("halted", "expected"), [(True, "stopped"), (False, "solved")])
def test_the_threads_given_to_halting_stay_halted_after_the_block(halted: bool, expected: str) -> None:
    before, go_on, outcome = threading.Event(), threading.Event(), []
    thread = _solve_in_thread(before, go_on, outcome)
    with halting([thread] if halted else []):
        pass
    go_on.set()  # its next solve starts after the block
    thread.join(10)
    assert outcome == [expected]
    other = _solve_in_thread(threading.Event(), go_on, outcome)  # a thread not given solves as before
    other.join(10)
    assert outcome[-1] == "solved"


@posix
def test_sigterm_in_terminating_stops_a_solve_of_the_main_thread_and_raises_after_it() -> None:
    stops: list[int] = []
    before = signal.getsignal(signal.SIGTERM)
    with terminating() as termination:
        with pytest.raises(Terminated), stoppable(lambda: stops.append(1)) as solve:
            os.kill(os.getpid(), signal.SIGTERM)  # counted here, not raised: a solver's callback would swallow it
            deadline = time.monotonic() + 10
            while not stops and time.monotonic() < deadline:  # the watcher thread stops the solve
                time.sleep(0.01)
        assert stops and solve.stopped and termination.heard
        with pytest.raises(Terminated):  # outside solves: raised at once
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is before  # restored after the block


def test_terminating_outside_the_main_thread_changes_nothing() -> None:
    seen: list[object] = []

    def work() -> None:
        with terminating() as termination:
            seen.append(signal.getsignal(signal.SIGTERM))
        seen.append(termination.heard)

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    assert seen == [before, False]


CHILD = """
import sys, time
import numpy as np, networkx as nx
import cmab_milp as cm
from cmab_milp.oracles.core.interrupts import Terminated, terminating

g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(9, 9)).to_directed()
space = cm.STPaths(g, 0, 80)
w = np.random.default_rng(0).uniform(0.5, 1.0, space.d)
oracle = cm.make_oracle(space, "highs", ties="off")
with terminating() as termination:
    print("solving", flush=True)
    try:
        oracle.argmax(w)  # a longest path: minutes
        print("answered", flush=True)
    except Terminated:
        print("Terminated", termination.heard, flush=True)
"""


@posix
def test_sigterm_during_a_highs_solve_in_terminating_stops_it_at_once(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    child = subprocess.Popen(
        [sys.executable, str(script)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "solving"
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        child.kill()
        child.wait()
    assert out.split() == ["Terminated", "True"], out
    assert seconds < 5.0, seconds  # the solve stopped (alone it runs for minutes)
