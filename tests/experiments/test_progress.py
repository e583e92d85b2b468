"""Progress inside long jobs: running jobs report their rounds, serial and in worker processes."""

from __future__ import annotations

import io
import queue
from pathlib import Path

import pytest

from cmab_milp.cli import main
from cmab_milp.experiments import progress as progress_module
from cmab_milp.experiments.progress import Progress, job_reporter, set_channel

PROBLEM = """
[space]
kind = "Cardinality"
d = 8
m = 2

[environment]
kind = "UniformNoise"
means = {{ draw = "uniform", seed = 3 }}

[[policies]]
name = "CUCB"
kind = "CUCB"
oracle = "{oracle}"

[run]
horizon = {horizon}
seeds = {seeds}
"""


def test_job_reporter_sends_first_last_and_throttled_rounds() -> None:
    sent: queue.SimpleQueue = queue.SimpleQueue()
    set_channel(sent)
    try:
        clock = iter([0.0, 0.5, 1.2, 1.3, 1.4]).__next__
        report = job_reporter("CUCB seed 0", clock=clock)
        for t in (1, 2, 3, 4, 5):
            report(t, 5)
    finally:
        set_channel(None)
    got = [sent.get() for _ in range(sent.qsize())]
    assert got == [("CUCB seed 0", 1, 5), ("CUCB seed 0", 3, 5), ("CUCB seed 0", 5, 5)]
    assert job_reporter("x") is None  # no channel: simulate gets no callback


def test_late_messages_of_a_finished_job_are_ignored() -> None:
    channel: queue.SimpleQueue = queue.SimpleQueue()
    stream = io.StringIO()
    progress = Progress(1, stream=stream, channel=channel)
    progress.advance("CUCB seed 0 (1.0 s)", label="CUCB seed 0")
    channel.put(("CUCB seed 0", 10, 100))
    progress._drain()
    progress.close()
    assert progress.running == {} and "steps" not in stream.getvalue()


@pytest.mark.parametrize(("jobs", "seeds"), [(1, 1), (2, 2)], ids=["serial", "worker processes"])
def test_a_run_prints_the_rounds_of_running_jobs(tmp_path: Path, monkeypatch, capsys, jobs: int, seeds: int) -> None:
    # every message becomes a line (in the parent); the workers keep their 1 s throttle, so jobs last ~2 s
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)
    monkeypatch.setattr(progress_module, "REPORT_SECONDS", 0.0)
    horizon = 400 if jobs == 1 else 40_000
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.format(oracle="enumerate", horizon=horizon, seeds=seeds))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", str(jobs), "--no-plots"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("  CUCB seed ")]
    assert lines, err
    assert all(f"/{horizon:,} steps (" in line for line in lines)
    assert f"[{seeds}/{seeds}] CUCB seed" in err
