"""Where jobs run: a small executor protocol and a registry of executors by name.

An executor takes a module-level function and a list of argument tuples and
yields ``(index, value)`` pairs as each call finishes, in any order. The runner
writes each result to disk as soon as it arrives, so only the calls still
running are lost if a run is interrupted. ``"local"`` (the default) is a pool of
processes on this machine (or the calling process itself for one job at a time);
``"serial"`` always runs in the calling process; ``"dask://HOST:PORT"`` sends the
calls to a Dask cluster (:mod:`.dask_executor`). Add more with
:func:`register_executor`; the spec ``"NAME://ADDRESS"`` passes ``ADDRESS`` on.

Example
-------
>>> with open_executor("serial", jobs=1) as executor:
...     sorted(executor.run(pow, [(2, 3), (3, 2)]))
[(0, 8), (1, 9)]
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any, Protocol

from .progress import set_channel

__all__ = ["EXECUTORS", "Executor", "LocalPool", "Serial", "open_executor", "register_executor"]


class Executor(Protocol):
    """Runs calls of one function, yielding ``(index, value)`` as each finishes."""

    name: str
    workers: int

    def run(self, function: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]: ...

    def close(self, cancel: bool = False) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


class _Closing:
    def __enter__(self) -> Any:
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.close(cancel=exc_type is not None)


class Serial(_Closing):
    """Runs each call in the calling process, one after the other.

    Its jobs report their rounds on ``progress_channel`` (see :mod:`.progress`).
    """

    name = "serial"
    workers = 1

    def __init__(self) -> None:
        self.progress_channel: queue.SimpleQueue = queue.SimpleQueue()

    def run(self, function: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        set_channel(self.progress_channel)
        try:
            for index, args in enumerate(tasks):
                yield index, function(*args)
        finally:
            set_channel(None)

    def close(self, cancel: bool = False) -> None:
        """Nothing to release."""


#: Seconds between a worker's checks that the process that started it is still alive.
PARENT_WATCH_SECONDS = 0.2


def _watch_parent(parent: int, every: float) -> None:
    """Exit this worker at once, quietly, when the process that started it is gone (e.g. SIGKILLed)."""
    while True:
        time.sleep(every)
        if os.getppid() != parent:
            os._exit(0)


class _PipeChannel:
    """A worker's progress channel: ``(label, t, T)`` messages go to the parent on the worker's own pipe."""

    def __init__(self, conn: Any):
        self.conn = conn

    def put(self, message: Any) -> None:
        self.conn.send(("progress", message))


def _worker(conn: Any, parent: int, watch_seconds: float) -> None:
    """A worker's loop: receive ``(index, function, args)`` on its own pipe, send ``("done", index, value)``.

    Every worker has a pipe of its own (no lock shared with other workers, so a worker
    killed at any moment cannot block the others or the parent), and a thread that
    ends it as soon as its parent is gone.
    """
    # Ctrl-C reaches every process of the terminal's group; the parent handles it alone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent, watch_seconds), daemon=True).start()
    set_channel(_PipeChannel(conn))  # the worker's jobs report their rounds to the parent
    try:
        while True:
            task = conn.recv()
            if task is None:
                return
            index, function, args = task
            conn.send(("done", index, function(*args)))
    except (EOFError, OSError):  # the parent closed the pipe or is gone: nothing left to do
        os._exit(0)


class LocalPool(_Closing):
    """A pool of ``workers`` fresh (spawned) processes on this machine.

    Each worker talks to the parent on a pipe of its own and exits by itself when
    the parent dies. Stopping (``close(cancel=True)``) never waits on a lock a
    worker may hold: it signals every worker (SIGTERM), waits at most
    ``stop_seconds``, then kills what is left.
    """

    name = "local"

    def __init__(self, workers: int, *, stop_seconds: float = 5.0, watch_seconds: float = PARENT_WATCH_SECONDS):
        self.workers = workers
        self.stop_seconds = stop_seconds
        self._context = multiprocessing.get_context("spawn")  # no fork: solver threads do not survive it
        self._watch_seconds = watch_seconds
        #: Where the workers' jobs report their rounds (see :mod:`.progress`): filled as their messages arrive.
        self.progress_channel: queue.SimpleQueue = queue.SimpleQueue()
        #: The worker processes with the parent's end of their pipes.
        self.processes: list[tuple[Any, Any]] = [self._start() for _ in range(workers)]

    def _start(self) -> tuple[Any, Any]:
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(target=_worker, args=(child_end, os.getpid(), self._watch_seconds), daemon=True)
        process.start()
        child_end.close()
        return process, parent_end

    def run(self, function: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        pending = list(enumerate(tasks))[::-1]  # popped from the end: in order
        busy: dict[Any, int] = {}  # pipe -> index of the task it runs
        workers = {conn: process for process, conn in self.processes}

        def give(conn: Any) -> None:
            if pending:
                index, args = pending.pop()
                try:
                    conn.send((index, function, args))
                except (BrokenPipeError, OSError):
                    process = workers[conn]
                    raise RuntimeError(
                        f"a worker process (pid {process.pid}) is gone (exit code {process.exitcode})"
                    ) from None
                busy[conn] = index

        for conn in list(workers):
            give(conn)
        while busy:
            ready = wait([*busy, *(workers[c].sentinel for c in busy)])
            for item in ready:
                conn = item if item in busy else next((c for c in busy if workers[c].sentinel == item), None)
                if conn is None or conn not in busy:
                    continue
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    process = workers[conn]
                    process.join(self.stop_seconds)
                    raise RuntimeError(
                        f"a worker process (pid {process.pid}) died with exit code {process.exitcode} "
                        f"while running job {busy[conn]}"
                    ) from None
                if message[0] == "progress":
                    self.progress_channel.put(message[1])
                    continue
                _, index, value = message
                del busy[conn]
                give(conn)
                yield index, value

    def close(self, cancel: bool = False) -> None:
        """Stop the workers: at once (``cancel``: SIGTERM, then SIGKILL after ``stop_seconds``) or when idle."""
        for process, conn in self.processes:
            if not cancel and process.is_alive():
                try:
                    conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
            elif process.is_alive():
                process.terminate()
        deadline = time.monotonic() + self.stop_seconds
        for process, _ in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process, conn in self.processes:
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()
        self.processes = []


def _local(address: str, jobs: int) -> Executor:
    if address:
        raise ValueError(f"the local executor takes no address, got {address!r}")
    return Serial() if jobs == 1 else LocalPool(jobs)


def _serial(address: str, jobs: int) -> Executor:
    if address:
        raise ValueError(f"the serial executor takes no address, got {address!r}")
    return Serial()


def _dask(address: str, jobs: int) -> Executor:
    from .dask_executor import dask_executor  # optional extra: imported only when asked for

    return dask_executor(address, jobs)


#: Executors by name: ``factory(address, jobs) -> Executor``.
EXECUTORS: dict[str, Callable[[str, int], Executor]] = {"local": _local, "serial": _serial, "dask": _dask}


def register_executor(name: str, factory: Callable[[str, int], Executor]) -> None:
    """Make ``--executor NAME`` (or ``NAME://ADDRESS``) build ``factory(address, jobs)``."""
    if not name.isidentifier():
        raise ValueError(f"executor name must be an identifier, got {name!r}")
    EXECUTORS[name] = factory


def open_executor(spec: str, jobs: int) -> Executor:
    """The executor named by ``spec`` (``"local"``, ``"serial"``, ``"NAME://ADDRESS"``) with ``jobs`` workers."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    name, _, address = spec.partition("://")
    factory = EXECUTORS.get(name)
    if factory is None:
        raise ValueError(f"unknown executor {spec!r}; known: {', '.join(sorted(EXECUTORS))}")
    return factory(address, jobs)
