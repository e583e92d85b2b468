"""Progress inside long jobs: running jobs report their rounds, serial and in worker processes."""

from __future__ import annotations

import io
import queue
from pathlib import Path

import pytest

from cmab_milp.cli import main
from cmab_milp.experiments.run.progress import Progress, ProgressOptions, job_reporter, set_channel

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
    assert job_reporter("x") is False  # no channel: simulate shows nothing (None would mean its own bar)


def test_the_report_interval_is_an_option_of_the_reporter() -> None:
    sent: queue.SimpleQueue = queue.SimpleQueue()
    set_channel(sent)
    try:
        for every, expected in ((0.0, [1, 2, 3, 4, 5]), (0.2, [1, 3, 4, 5]), (10.0, [1, 5])):
            report = job_reporter("J", clock=iter([0.0, 0.1, 0.25, 0.5, 0.6]).__next__, every=every)
            for t in (1, 2, 3, 4, 5):
                report(t, 5)
            assert [sent.get()[1] for _ in range(sent.qsize())] == expected, every
    finally:
        set_channel(None)


@pytest.mark.parametrize(("line_seconds", "lines"), [(10.0, 1), (2.0, 2), (0.0, 5)])
def test_the_line_interval_is_an_option_of_the_progress(line_seconds: float, lines: int) -> None:
    """A job reporting at 0, 1, 3, 11 and 12 s: a line once line_seconds have passed since it was seen or last shown."""
    stream = io.StringIO()
    clock = iter([0.0, 0.0, 1.0, 3.0, 11.0, 12.0]).__next__
    progress = Progress(1, stream=stream, clock=clock, line_seconds=line_seconds)
    for t in (1, 2, 3, 4, 5):
        progress.job("CUCB seed 0", t, 100)
    assert stream.getvalue().count("  CUCB seed 0: ") == lines, stream.getvalue()


def test_progress_options_are_checked_and_the_flag_sets_them(tmp_path: Path, capsys) -> None:
    assert ProgressOptions() == ProgressOptions(report_seconds=1.0, line_seconds=10.0)  # today's intervals
    assert ProgressOptions.every(0.0) == ProgressOptions(0.0, 0.0)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="line_seconds must be a finite number of seconds >= 0"):
            ProgressOptions(line_seconds=bad)
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.format(oracle="enumerate", horizon=10, seeds=1))
    with pytest.raises(SystemExit):
        main(["run", str(path), "--out", str(tmp_path / "out"), "--progress-seconds", "-2"])
    assert "--progress-seconds must be a finite number of seconds >= 0, got -2.0" in capsys.readouterr().err


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
def test_a_run_prints_the_rounds_of_running_jobs(tmp_path: Path, capsys, jobs: int, seeds: int) -> None:
    # every message becomes a line, and every step is a message: --progress-seconds 0
    horizon = 400 if jobs == 1 else 40_000
    path = tmp_path / "p.toml"
    path.write_text(PROBLEM.format(oracle="enumerate", horizon=horizon, seeds=seeds))
    command = ["run", str(path), "--out", str(tmp_path / "out"), "--jobs", str(jobs), "--no-plots"]
    assert main([*command, "--progress-seconds", "0"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("  CUCB seed ")]
    assert lines, err
    assert all(f"/{horizon:,} steps (" in line for line in lines)
    assert f"[{seeds}/{seeds}] CUCB seed" in err
