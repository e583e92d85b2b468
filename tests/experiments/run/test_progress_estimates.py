"""Progress that does not mislead (issue 39, item 4).

Found: the CLI said "~1:01 left" at 14% of a job that took 215 s (the average rate since the job
started, while its steps slowed down), and ``simulate`` said nothing during a run of minutes unless
``progress=True``.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.run.progress import Progress
from cmab_milp.simulation import PROGRESS_DELAY, default_progress


def test_time_left_follows_the_recent_rate_not_the_average_since_the_start() -> None:
    """100 steps/s for 60 s, then 10 steps/s: 3,000 steps left take 300 s at the recent rate (40 s at the average)."""
    times = [0.0]  # the clock: Progress's start, then one reading per message
    stream = io.StringIO()
    progress = Progress(1, stream=stream, clock=lambda: times[-1], line_seconds=1e9, rate_seconds=30.0)
    t = 0
    for second in range(1, 121):
        t += 100 if second <= 60 else 10
        times.append(float(second))
        progress.job("CUCB seed 0", t, t + 3000 if second == 120 else 10**6)
    state = progress.running["CUCB seed 0"]
    assert progress._rounds(state, 120.0).endswith("~5:00 left")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_simulate_shows_a_bar_by_default_on_a_terminal_only_after_a_delay(monkeypatch) -> None:
    assert default_progress(FakeTerminal()) == PROGRESS_DELAY == 2.0
    assert default_progress(io.StringIO()) is None
    space = cm.Cardinality(6, 2)
    env = cm.BernoulliArms(np.linspace(0.1, 0.6, 6))
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    cm.simulate(cm.CUCB(space, 50, oracle="enumerate"), env, 50)
    assert terminal.getvalue() == ""  # shorter than the delay: nothing printed
    cm.simulate(cm.CUCB(space, 50, oracle="enumerate"), env, 50, progress=0.0)
    assert "100%" in terminal.getvalue()  # a number: the bar after that many seconds


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "yes"])
def test_a_bad_progress_value_is_refused(bad) -> None:
    space = cm.Cardinality(3, 1)
    with pytest.raises(ValueError, match="progress must be"):
        cm.simulate(cm.CUCB(space, 5, oracle="enumerate"), cm.BernoulliArms([0.1, 0.2, 0.3]), 5, progress=bad)
