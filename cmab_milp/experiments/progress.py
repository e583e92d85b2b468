"""A small progress reporter for runs: a redrawn bar on a terminal, plain lines otherwise.

On a terminal the bar shows jobs done / total, elapsed time and an estimate of
the time left, refreshed every second. When the stream is not a terminal (a log
file, CI) it prints one plain line per finished job instead.

Example
-------
>>> import io
>>> stream = io.StringIO()
>>> progress = Progress(2, stream=stream, clock=iter([0.0, 5.0, 10.0]).__next__)
>>> progress.advance("CUCB seed 0 (5.0 s)")
>>> print(stream.getvalue().strip())
[1/2] CUCB seed 0 (5.0 s) | elapsed 0:05
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress", "format_seconds"]


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
    """Reports ``done / total`` jobs on ``stream`` (stderr by default)."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        width: int = 28,
    ):
        self.total = total
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.width = width
        self.start = clock()
        self.last = ""
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.tty:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _elapsed(self) -> float:
        return self.clock() - self.start

    def _bar(self) -> str:
        elapsed = self._elapsed()
        filled = int(self.width * self.done / max(self.total, 1))
        eta = ""
        if 0 < self.done < self.total:
            eta = f" | ~{format_seconds(elapsed / self.done * (self.total - self.done))} left"
        bar = "#" * filled + "-" * (self.width - filled)
        last = f" | last: {self.last}" if self.last else ""
        return f"\r[{bar}] {self.done}/{self.total} jobs | {format_seconds(elapsed)} elapsed{eta}{last}\033[K"

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                self.stream.write(self._bar())
                self.stream.flush()

    def advance(self, message: str = "") -> None:
        """One more job finished; ``message`` says which."""
        with self._lock:
            self.done += 1
            self.last = message
            if self.tty:
                self.stream.write(self._bar())
            else:
                self.stream.write(f"[{self.done}/{self.total}] {message} | elapsed {format_seconds(self._elapsed())}\n")
            self.stream.flush()

    def note(self, message: str) -> None:
        """A line of its own (e.g. a failed job), without breaking the bar."""
        with self._lock:
            self.stream.write(("\r\033[K" if self.tty else "") + message + "\n")
            if self.tty:
                self.stream.write(self._bar())
            self.stream.flush()

    def close(self) -> None:
        """Stop refreshing; end the bar's line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.tty:
                self.stream.write(self._bar() + "\n")
                self.stream.flush()
