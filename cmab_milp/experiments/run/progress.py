"""Progress of a run: jobs done, and time steps done inside the jobs still running.

The parent process shows a ``tqdm`` bar of finished jobs on a terminal, with
the running jobs' steps and estimated time left as its postfix; when the stream
is not a terminal (a log file, CI) it prints one plain line per finished job and,
once a job has run ``line_seconds`` and then at most that often, one line per running job.

Inside a job, :func:`job_reporter` turns :func:`cmab_milp.simulate`'s
``progress(t, T)`` callback into messages on a *channel* (a queue the executor
shares with its workers, see :func:`set_channel`), at most one every
``report_seconds`` per job, so a one-minute CUCB job is no longer a minute of
silence. Executors without a channel (Dask) report finished jobs only. Both
intervals are the options of :class:`ProgressOptions` (``cmab-milp run
--progress-seconds S``).

Example
-------
>>> import io
>>> stream = io.StringIO()
>>> progress = Progress(2, stream=stream, clock=iter([0.0, 1.0, 11.0, 12.0]).__next__)
>>> progress.job("CUCB seed 1", 100, 2000)  # first seen: no line yet
>>> progress.job("CUCB seed 1", 500, 2000)  # 400 steps in 10 s: 1,500 left take ~38 s
>>> progress.advance("CUCB seed 0 (5.0 s)")
>>> print(stream.getvalue(), end="")
  CUCB seed 1: 500/2,000 steps (25%), ~0:38 left
[1/2] CUCB seed 0 (5.0 s) | elapsed 0:12
"""

from __future__ import annotations

import math
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

__all__ = ["Progress", "ProgressOptions", "format_seconds", "job_reporter", "set_channel"]


@dataclass(frozen=True)
class ProgressOptions:
    """How often a run reports the steps of its running jobs (seconds, finite, >= 0; 0: every message).

    >>> ProgressOptions()
    ProgressOptions(report_seconds=1.0, line_seconds=10.0)
    >>> ProgressOptions.every(2.0), ProgressOptions.every(30.0).report_seconds
    (ProgressOptions(report_seconds=1.0, line_seconds=2.0), 1.0)
    >>> ProgressOptions(line_seconds=-1)
    Traceback (most recent call last):
    ...
    ValueError: line_seconds must be a finite number of seconds >= 0, got -1
    """

    #: A running job sends its steps to the parent at most this often.
    report_seconds: float = 1.0
    #: Without a terminal, a running job's line is printed at most this often.
    line_seconds: float = 10.0

    def __post_init__(self) -> None:
        for name in ("line_seconds", "report_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")

    @classmethod
    def every(cls, seconds: float) -> ProgressOptions:
        """A line per running job at most every ``seconds``; jobs report at least that often."""
        return cls(report_seconds=min(cls.report_seconds, seconds), line_seconds=seconds)


_channel: Any = None  # where this process's jobs report: a queue, or None (no in-job progress)


def set_channel(channel: Any) -> None:
    """Make the jobs of this process report their steps on ``channel`` (``put``-able; None: silent).

    Executors call this in each worker (a pool initializer) or in the calling process.
    """
    global _channel
    _channel = channel


def job_reporter(
    label: str, clock: Callable[[], float] = time.monotonic, *, every: float = ProgressOptions.report_seconds
) -> Callable[[int, int], None] | bool:
    """A ``progress(t, T)`` callback for :func:`cmab_milp.simulate` that reports ``label``'s steps.

    ``False`` (no progress at all: not ``simulate``'s own bar, which would cut through the run's)
    when this process has no channel. The first call, the last step
    and then at most one call every ``every`` seconds send ``(label, t, T)``.

    >>> sent = queue.SimpleQueue()
    >>> set_channel(sent)
    >>> report = job_reporter("AROQ seed 0", clock=iter([0.0, 0.1, 5.0]).__next__)
    >>> for t in (10, 20, 30):
    ...     report(t, 100)
    >>> [sent.get() for _ in range(sent.qsize())]
    [('AROQ seed 0', 10, 100), ('AROQ seed 0', 30, 100)]
    >>> set_channel(None)
    """
    channel = _channel
    if channel is None:
        return False
    last = [-float("inf")]

    def report(t: int, T: int) -> None:
        now = clock()
        if t >= T or now - last[0] >= every:
            last[0] = now
            try:
                channel.put((label, int(t), int(T)))
            except Exception:  # a closed channel (the run is stopping) must not fail the job
                pass

    return report


def format_seconds(seconds: float) -> str:
    """``h:mm:ss`` or ``m:ss``.

    >>> format_seconds(3725), format_seconds(42)
    ('1:02:05', '0:42')
    """
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Reports ``done / total`` jobs and the running jobs' steps on ``stream`` (stderr by default).

    ``channel``, if given, is drained every second for ``(label, t, T)``
    messages of running jobs (see :func:`job_reporter`). Without a terminal, a
    running job's line is printed at most every ``line_seconds``. A job's time
    left is its steps left at the rate of its last ``rate_seconds`` (a job whose
    steps slow down, or speed up, is not judged by its start).
    """

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        channel: Any = None,
        line_seconds: float = ProgressOptions.line_seconds,
        rate_seconds: float = 30.0,
    ):
        self.total = total
        self.line_seconds = line_seconds
        #: The time left is estimated from the steps of the last ``rate_seconds`` (the recent rate).
        self.rate_seconds = rate_seconds
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.channel = channel
        self.start = clock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        #: Running jobs: label -> (t, T, first time seen, t then, last line printed, recent (time, t) samples).
        self.running: dict[str, list[float]] = {}
        self.finished: set[str] = set()  # late messages of these jobs are ignored
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar = None
        if self.tty:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="job", file=self.stream, dynamic_ncols=True, leave=True)
        self._ticker: threading.Thread | None = None
        if self.tty or channel is not None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    # ------------------------------------------------------------ in-job rounds
    def job(self, label: str, t: int, T: int) -> None:
        """Job ``label`` has played ``t`` of its ``T`` time steps."""
        with self._lock:
            now = self.clock()
            state = self.running.get(label)
            if state is None:
                state = self.running[label] = [t, T, now, t, now, [(now, t)]]  # a line once it has run line_seconds
            state[0], state[1] = t, T
            samples = state[5]
            samples.append((now, t))
            while len(samples) > 2 and samples[1][0] <= now - self.rate_seconds:
                samples.pop(0)  # keep one sample at or before the window's start
            if not self.tty and now - state[4] >= self.line_seconds and t < T:
                state[4] = now
                self.stream.write(f"  {label}: {self._rounds(state, now)}\n")
                self.stream.flush()
            elif self._bar is not None:
                self._bar.set_postfix_str(self._postfix(now), refresh=False)

    def _rounds(self, state: list, now: float) -> str:
        t, T = state[0], state[1]
        since, t0 = state[5][0]  # the oldest sample in the window: the rate of the last rate_seconds
        text = f"{int(t):,}/{int(T):,} steps ({100 * t / max(T, 1):.0f}%)"
        rate = (t - t0) / (now - since) if now > since and t > t0 else 0.0
        if rate > 0 and t < T:
            text += f", ~{format_seconds((T - t) / rate)} left"
        return text

    def _postfix(self, now: float) -> str:
        if not self.running:
            return ""
        # the job furthest from its end first: it decides when the run ends
        order = sorted(self.running.items(), key=lambda kv: kv[1][0] / max(kv[1][1], 1))
        shown = [f"{label} {self._rounds(state, now)}" for label, state in order[:2]]
        more = f" (+{len(order) - 2} running)" if len(order) > 2 else ""
        return "; ".join(shown) + more

    def _drain(self) -> None:
        if self.channel is None:
            return
        while True:
            try:
                label, t, T = self.channel.get_nowait()
            except queue.Empty:
                return
            except (EOFError, OSError, ValueError):  # the channel closed with its executor
                self.channel = None
                return
            if label not in self.finished:
                self.job(label, t, T)

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._drain()
            with self._lock:
                if self._bar is not None:
                    self._bar.set_postfix_str(self._postfix(self.clock()), refresh=False)
                    self._bar.refresh()

    # ---------------------------------------------------------------- jobs done
    def advance(self, message: str = "", label: str | None = None) -> None:
        """One more job finished; ``message`` says which (``label``: its in-job progress name)."""
        self._drain()  # rounds reported before the job ended come first
        with self._lock:
            self.done += 1
            if label is not None:
                self.running.pop(label, None)
                self.finished.add(label)
            if self._bar is not None:
                self._bar.set_postfix_str(self._postfix(self.clock()), refresh=False)
                self._bar.update(1)
            else:
                elapsed = format_seconds(self.clock() - self.start)
                self.stream.write(f"[{self.done}/{self.total}] {message} | elapsed {elapsed}\n")
            self.stream.flush()

    def note(self, message: str) -> None:
        """A line of its own (e.g. a failed job), without breaking the bar."""
        with self._lock:
            if self._bar is not None:
                self._bar.write(message, file=self.stream)
            else:
                self.stream.write(message + "\n")
            self.stream.flush()

    def close(self) -> None:
        """Stop refreshing; end the bar's line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self._bar is not None:
                self._bar.set_postfix_str("", refresh=False)
                self._bar.close()
