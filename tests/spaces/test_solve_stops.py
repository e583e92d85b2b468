"""``space.m`` (the spaces' own MILP, :mod:`cmab_milp.spaces.solve`) is stopped by Ctrl-C as the oracles' solves are.

Before, it ran :func:`scipy.optimize.milp`, outside the stop mechanism: Ctrl-C waited for the end of the solve
under way (a market split space's ``m``, one MILP, ran on 37 s after the signal; a 9 x 9 grid digraph's
longest path takes minutes of solves up to 5 s each). Now each solve is a ``stoppable`` HiGHS run whose
interrupt callback reads the stop flag. The space here is a market split instance (Cornuejols and Dawande:
subsets of 30 arms meeting 4 random equalities, feasible by construction), one MILP of a minute or more.
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

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp import _interrupts
from cmab_milp.spaces.solve import best_action

ROOT = Path(__file__).resolve().parents[2]
#: Seconds the solve may take to stop (it stops in well under one; the machine may be loaded).
STOP_SECONDS = 10.0

MARKET_SPLIT = """
import numpy as np
import cmab_milp as cm

def market_split(k, n):
    rng = np.random.default_rng(0)
    chosen = rng.random(n) < 0.5  # the equalities hold on this subset: the space is not empty
    space = cm.Cardinality(n, n)
    for _ in range(k):
        a = rng.integers(1, 100, n).astype(float)
        space = space.with_constraint(a, "==", float(a @ chosen))
    return space
"""


def _market_split(k: int, n: int) -> cm.ActionSpace:
    scope: dict = {}
    exec(MARKET_SPLIT, scope)  # the same space in this process and in the child
    return scope["market_split"](k, n)


def test_the_market_split_space_is_what_it_says() -> None:
    """Checked by enumeration on a small instance: m is the largest subset meeting every equality."""
    space = _market_split(2, 12)
    rng = np.random.default_rng(0)
    chosen = rng.random(12) < 0.5
    rows = [rng.integers(1, 100, 12).astype(float) for _ in range(2)]
    subsets = ((np.arange(1 << 12)[:, None] >> np.arange(12)) & 1).astype(bool)  # every subset of 12 arms
    fitting = subsets[np.all([subsets @ a == a @ chosen for a in rows], axis=0)]
    assert fitting.any(axis=1).any() and space.m == int(fitting.sum(axis=1).max())
    assert int(best_action(space, enumerate_below=0).sum()) == space.m  # the MILP route


def test_stop_all_stops_the_solve_of_m_in_another_thread() -> None:
    space = _market_split(4, 30)
    outcome: list[str] = []

    def work() -> None:
        try:
            outcome.append(f"m = {space.m}")
        except KeyboardInterrupt:
            outcome.append("stopped")

    thread = threading.Thread(target=work, daemon=True)  # daemon: on the old code it solves on for a minute
    thread.start()
    deadline = time.monotonic() + 60
    while not _interrupts._active and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _interrupts._active, f"the solve of m never became stoppable: {outcome}"
    time.sleep(0.3)  # well inside the solve
    sent = time.monotonic()
    _interrupts.stop_all()
    thread.join(STOP_SECONDS)
    assert not thread.is_alive(), f"m still solving {STOP_SECONDS:.0f} s after stop_all()"
    assert outcome == ["stopped"] and time.monotonic() - sent < STOP_SECONDS
    assert "m" not in space.__dict__  # nothing cached: the next read solves again


def test_a_highs_model_of_another_thread_count_run_before_is_named() -> None:
    """HiGHS keeps one scheduler per thread: after a run with ``threads=2`` a run asking 1 thread is refused."""
    import highspy

    space = cm.STPaths(nx.cycle_graph(5), 0, 2)
    outcome: list[object] = []

    def work() -> None:  # a thread of its own: the scheduler of pytest's thread is left as it was
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 2)
        h.addCols(1, np.array([-1.0]), np.zeros(1), np.ones(1), 0, [], [], [])
        h.run()
        try:
            outcome.append(best_action(space, enumerate_below=0))
        except RuntimeError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    assert len(outcome) == 1
    if isinstance(outcome[0], str):  # HiGHS refused: the message says why
        assert "another 'threads' option than 1" in outcome[0]
    else:  # a HiGHS that accepts it: the answer is right
        assert space.path_nodes(outcome[0]) == [0, 4, 3, 2]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_m_at_once() -> None:
    script = MARKET_SPLIT + textwrap.dedent(
        """
        space = market_split(4, 30)
        print("solving", flush=True)
        print(space.m, flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "solving"
        time.sleep(1.5)  # inside the one MILP (a minute or more)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"m still solving {STOP_SECONDS:.0f} s after Ctrl-C") from None
        stopped = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert stopped < STOP_SECONDS and process.returncode != 0
    assert err.rstrip().endswith("KeyboardInterrupt") and not out.strip(), (out, err)
