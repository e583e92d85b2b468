"""Ctrl-C during a solver call: the solve is stopped and ``KeyboardInterrupt`` raised, on every backend.

A solver runs in C. Python runs its SIGINT handler only when the main thread is back in Python code,
so a Ctrl-C during a long solve would wait for the solve's end (HiGHS), and a solver that catches
SIGINT itself reports it as a status of its own (SCIP ``userinterrupt``, Gurobi status 11, CP-SAT as
if its time limit were reached). Every solver call of the backends runs inside :class:`stoppable`:

* the solvers are told not to catch SIGINT themselves (SCIP ``misc/catchctrlc``, CP-SAT
  ``catch_sigint_signal``), so Python's handler sees it;
* in the main thread (Python's SIGINT handler the default one), a SIGINT is noticed at once: Python's
  wakeup fd is a pipe that a watcher thread reads (the byte is forwarded to a wakeup fd set before,
  e.g. an event loop's), and the watcher calls the ``stop`` of every solve running (HiGHS's interrupt
  callback, SCIP ``interruptSolve``, Gurobi ``terminate``, CP-SAT ``stop_search``); Python's handler is
  replaced for the call by one that only records the signal, so that no ``KeyboardInterrupt`` is raised
  inside a solver's callback (which the solver would swallow as an error);
* when a SIGINT arrived during the call (or :func:`stop_all` stopped it), leaving the block raises
  ``KeyboardInterrupt``, whatever the solver returned: never an ``OracleError`` nor a time limit;
* in other threads (the workers of ``argmax_batch``) nothing is installed: the main thread, waiting for
  their answers, gets the ``KeyboardInterrupt`` and calls :func:`stop_all`.

A SIGINT handler other than Python's default one (the user's) is left alone: the solve is not stopped.

>>> with stoppable(lambda: None) as solve:
...     pass
>>> solve.stopped
False
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["halting", "stop_all", "stoppable"]

_lock = threading.Lock()
_active: set[stoppable] = set()  # the solves running now, in every thread
_sigints = 0  # SIGINTs recorded while the main thread was in a solve
_depth = 0  # blocks of the main thread open now (nested solves count once)
_saved: tuple[Any, int] | None = None  # the main thread's handler and wakeup fd, restored by its outermost block
_pipe: tuple[int, int] | None = None  # (read, write) ends of the watcher's wakeup pipe
_forward = -1  # the wakeup fd set before ours: what the watcher reads is written on to it
_halting = 0  # open blocks of :func:`halting`: a solve starting then is stopped before it starts
_MAIN = threading.main_thread().ident


class stoppable:  # a context manager, named like one
    """A solver call that Ctrl-C (or :func:`stop_all`) stops: ``with stoppable(stop): solver.run()``.

    ``stop()`` asks the solver to stop; it may be called from another thread while the call runs (and
    should do nothing once it has ended). Leaving the block raises ``KeyboardInterrupt`` when a SIGINT
    arrived or :func:`stop_all` was called during it; ``stopped`` tells whether that happened.
    """

    __slots__ = ("_main", "_sigints", "stop", "stopped")

    def __init__(self, stop: Callable[[], Any]):
        self.stop = stop
        self.stopped = False
        self._main = False
        self._sigints = 0

    def __enter__(self) -> stoppable:
        with _lock:
            if _halting:  # a batch winding down after a Ctrl-C: this solve does not start
                raise KeyboardInterrupt
            _active.add(self)
        if threading.get_ident() == _MAIN:
            self._main = _listen()
            self._sigints = _sigints
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        with _lock:
            _active.discard(self)
        if self._main:
            _unlisten()  # first: a SIGINT still pending now meets Python's own handler
            if _sigints != self._sigints:
                self.stopped = True
        if self.stopped and not isinstance(value, KeyboardInterrupt):
            raise KeyboardInterrupt

    def _halt(self) -> None:
        self.stopped = True
        try:
            self.stop()
        except Exception:  # a solver that has just ended may refuse; the flag is what counts
            pass


def stop_all() -> None:
    """Stop every solve running now (in any thread); each raises ``KeyboardInterrupt`` when it returns."""
    with _lock:
        running = list(_active)
    for solve in running:
        solve._halt()


@contextlib.contextmanager
def halting() -> Iterator[None]:
    """Stop every solve running now, and every solve that starts during the block (the workers of an
    ``argmax_batch`` winding down after a Ctrl-C: their queries end at their next solver call)."""
    global _halting
    with _lock:
        _halting += 1
    try:
        stop_all()
        yield
    finally:
        with _lock:
            _halting -= 1


def _record(signum: int, frame: Any) -> None:
    """The main thread's SIGINT handler during a solve: count it (the watcher stops the solves; no exception)."""
    global _sigints
    _sigints += 1


def _watch(read_end: int) -> None:
    """The watcher thread: every SIGINT byte on the wakeup pipe stops the running solves at once."""
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            stop_all()
        if _forward != -1:
            try:
                os.write(_forward, data)
            except OSError:
                pass


def _listen() -> bool:
    """Install the recording handler and the wakeup pipe (outermost block only); False: left alone."""
    global _depth, _saved, _pipe, _forward
    if _depth:
        _depth += 1
        return True
    handler = signal.getsignal(signal.SIGINT)
    if handler is not signal.default_int_handler:
        return False
    if _pipe is None:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        _pipe = (read_end, write_end)
        threading.Thread(target=_watch, args=(read_end,), name="cmab-milp-sigint", daemon=True).start()
    try:
        previous = signal.set_wakeup_fd(_pipe[1], warn_on_full_buffer=False)
    except ValueError:  # pragma: no cover - not the main thread of the main interpreter
        return False
    _forward = previous
    signal.signal(signal.SIGINT, _record)
    _saved = (handler, previous)
    _depth = 1
    return True


def _unlisten() -> None:
    global _depth, _saved, _forward
    _depth -= 1
    if _depth or _saved is None:
        return
    handler, previous = _saved
    _saved = None
    signal.signal(signal.SIGINT, handler)
    signal.set_wakeup_fd(previous)
    _forward = -1


def _after_fork() -> None:
    """A forked child has no watcher thread: it makes its own pipe when it first solves."""
    global _pipe, _depth, _saved, _forward, _MAIN, _lock, _halting
    if _pipe is not None:
        for end in _pipe:
            os.close(end)
    _pipe, _depth, _saved, _forward = None, 0, None, -1
    _lock = threading.Lock()
    _halting = 0
    _MAIN = threading.main_thread().ident
    _active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
