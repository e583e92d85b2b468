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
import queue
import signal
from collections.abc import Callable, Iterator, Sequence
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


def _start_worker(channel: Any) -> None:
    # Ctrl-C reaches every process of the terminal's group; the parent handles it alone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_channel(channel)  # the worker's jobs report their rounds to the parent


def _call(packed: tuple[int, Callable[..., Any], tuple]) -> tuple[int, Any]:
    index, function, args = packed
    return index, function(*args)


class LocalPool(_Closing):
    """A pool of ``workers`` fresh (spawned) processes on this machine."""

    name = "local"

    def __init__(self, workers: int):
        self.workers = workers
        context = multiprocessing.get_context("spawn")  # no fork: solver threads do not survive it
        #: Where the workers' jobs report their rounds (see :mod:`.progress`).
        self.progress_channel = context.Queue()
        self._pool = context.Pool(processes=workers, initializer=_start_worker, initargs=(self.progress_channel,))

    def run(self, function: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        packed = [(index, function, args) for index, args in enumerate(tasks)]
        yield from self._pool.imap_unordered(_call, packed, chunksize=1)

    def close(self, cancel: bool = False) -> None:
        """Stop the workers: at once (``cancel``) or after the queued calls."""
        if cancel:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()
        self.progress_channel.close()
        self.progress_channel.cancel_join_thread()  # unread progress messages must not hold the exit


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
