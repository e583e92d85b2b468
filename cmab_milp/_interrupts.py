"""Ctrl-C during a solver call: the solve is stopped and ``KeyboardInterrupt`` raised, on every backend.

Its public face is :mod:`cmab_milp.oracles.core.interrupts`; it lives below every layer so that the spaces'
own solves (``space.m``, :mod:`cmab_milp.spaces.solve`) are stopped the same way.

A solver runs in C. Python runs its SIGINT handler only when the main thread is back in Python code,
so a Ctrl-C during a long solve would wait for the solve's end (HiGHS), and a solver that catches
SIGINT itself reports it as a status of its own (SCIP ``userinterrupt``, Gurobi status 11, CP-SAT as
if its time limit were reached). Every solver call of the backends runs inside :class:`stoppable`:

* the solvers are told not to catch SIGINT themselves (SCIP ``misc/catchctrlc``, CP-SAT
  ``catch_sigint_signal``), so Python's handler sees it;
* from the main thread's first solve (Python's SIGINT handler then the default one), a SIGINT is
  noticed at once: Python's wakeup fd is a pipe that a watcher thread reads (the bytes are forwarded
  to a wakeup fd set before, e.g. an event loop's), and the watcher calls the ``stop`` of every solve
  running (HiGHS's interrupt callback, SCIP ``interruptSolve``, Gurobi ``terminate``, CP-SAT
  ``stop_search``). Python's handler becomes one that raises ``KeyboardInterrupt`` as the default one
  does, except during a solve of the main thread, where it only counts the signal (a
  ``KeyboardInterrupt`` raised inside a solver's callback would be swallowed by the solver as an
  error). Both stay in place: setting them around each solve cost ten times the block (docs/performance.md);
* when a SIGINT arrived during the call (or :func:`stop_all` stopped it), leaving the block raises
  ``KeyboardInterrupt``, whatever the solver returned: never an ``OracleError`` nor a time limit;
* in other threads (the workers of ``argmax_batch``) nothing is installed: the main thread, waiting for
  their answers, gets the ``KeyboardInterrupt`` and stops them (:func:`halting`: every later solve of those
  workers is stopped before it starts, so that none of them works on after the interrupt; long Python loops
  between two solves, the tie search's, call :func:`raise_if_halted` to stop as their next solve would);
* inside :func:`terminating` (the command line's runs), SIGTERM is heard the same way and raises
  :class:`Terminated` (a ``KeyboardInterrupt``): a handler that raised inside a solver's callback instead had
  its exception swallowed, and the run went on as if never told to stop.

A SIGINT handler of the user's, set before the first solve, is left alone: solves are not stopped then.

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
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["Terminated", "Termination", "halting", "raise_if_halted", "stop_all", "stoppable", "terminating"]

_lock = threading.Lock()
_active: set[stoppable] = set()  # the solves running now, in every thread
_sigints = 0  # SIGINTs recorded while the main thread was in a solve
_depth = 0  # blocks of the main thread open now (nested solves count once)
_installed = False  # the recording handler and the wakeup pipe are in place (from the main thread's first solve)
_pipe: tuple[int, int] | None = None  # (read, write) ends of the watcher's wakeup pipe
_forward = -1  # the wakeup fd set before ours: what the watcher reads is written on to it
_halting = 0  # open blocks of :func:`halting`: a solve starting then is stopped before it starts
_halted: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # threads whose every solve is stopped before it starts
_ever_halted = False  # some thread was given to :func:`halting` (until then the check costs nothing)
_termination: Termination | None = None  # the open :func:`terminating` block: SIGTERM is heard as Ctrl-C is
_MAIN = threading.main_thread().ident


class Terminated(KeyboardInterrupt):
    """SIGTERM during :func:`terminating`: raised where Ctrl-C raises ``KeyboardInterrupt``."""


class Termination:
    """What a :func:`terminating` block heard: ``heard`` is True once a SIGTERM arrived during it."""

    __slots__ = ("heard",)

    def __init__(self) -> None:
        self.heard = False


class stoppable:  # a context manager, named like one
    """A solver call that Ctrl-C (or :func:`stop_all`) stops: ``with stoppable(stop): solver.run()``.

    ``stop()`` asks the solver to stop; it may be called from another thread while the call runs (and
    should do nothing once it has ended). Leaving the block raises ``KeyboardInterrupt`` when a SIGINT
    arrived or :func:`stop_all` was called during it (:class:`Terminated` once :func:`terminating` heard a
    SIGTERM); ``stopped`` tells whether that happened.
    """

    __slots__ = ("_main", "_sigints", "stop", "stopped")

    def __init__(self, stop: Callable[[], Any]):
        self.stop = stop
        self.stopped = False
        self._main = False
        self._sigints = 0

    def __enter__(self) -> stoppable:
        with _lock:
            raise_if_halted()  # winding down after a Ctrl-C
            _active.add(self)
        if threading.get_ident() == _MAIN:
            self._main = _listen()
            self._sigints = _sigints
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        with _lock:
            _active.discard(self)
        if self._main:
            _unlisten()  # first: a SIGINT still pending now raises KeyboardInterrupt itself
            if _sigints != self._sigints:
                self.stopped = True
        if self.stopped and not isinstance(value, KeyboardInterrupt):
            raise Terminated if _termination is not None and _termination.heard else KeyboardInterrupt

    def _halt(self) -> None:
        self.stopped = True
        try:
            self.stop()
        except Exception:  # a solver that has just ended may refuse; the flag is what counts
            pass


def raise_if_halted() -> None:
    """Raise ``KeyboardInterrupt`` where a solve would be stopped before it starts: in a thread given to
    :func:`halting`, or during its block. Long Python loops between two solves call it at each step, so that a
    halted worker ends within one step (the tie search's candidates and restricted solves). Otherwise one read.

    >>> raise_if_halted()  # nothing halted: returns
    """
    if _halting or (_ever_halted and threading.current_thread() in _halted):
        raise KeyboardInterrupt


def stop_all() -> None:
    """Stop every solve running now (in any thread); each raises ``KeyboardInterrupt`` when it returns."""
    with _lock:
        running = list(_active)
    for solve in running:
        solve._halt()


@contextlib.contextmanager
def halting(threads: Iterable[threading.Thread] = ()) -> Iterator[None]:
    """Stop every solve running now, and every solve that starts during the block (the workers of an
    ``argmax_batch`` winding down after a Ctrl-C: their queries end at their next solver call).

    ``threads`` (the workers of a pool being shut down) stay halted after the block too: every solve they
    start later is stopped before it starts, however long their query spends between two solves.
    """
    global _halting, _ever_halted
    with _lock:
        for thread in threads:
            _halted.add(thread)
            _ever_halted = True
        _halting += 1
    try:
        stop_all()
        yield
    finally:
        with _lock:
            _halting -= 1


@contextlib.contextmanager
def terminating() -> Iterator[Termination]:
    """During the block (in the main thread), SIGTERM acts as Ctrl-C: solves stop, :class:`Terminated` is raised.

    Yields a :class:`Termination` that tells whether a SIGTERM arrived. In another thread, where Python
    cannot set signal handlers, the block changes nothing.

    >>> with terminating() as termination:
    ...     pass
    >>> termination.heard
    False
    """
    global _termination
    termination = Termination()
    if threading.current_thread() is not threading.main_thread():
        yield termination
        return
    outer = _termination
    _watcher()  # SIGTERM stops solves of any backend at once, as SIGINT does
    previous = signal.signal(signal.SIGTERM, _record)
    _termination = termination
    try:
        yield termination
    finally:
        _termination = outer
        signal.signal(signal.SIGTERM, previous)


def _record(signum: int, frame: Any) -> None:
    """Python's SIGINT handler once the main thread has solved (and SIGTERM's in :func:`terminating`): the default
    one's ``KeyboardInterrupt`` outside solves; during a solve of the main thread only counted (the watcher stops
    the solve and the block raises when it ends), so that no ``KeyboardInterrupt`` is raised inside a solver's
    callback, which swallows it."""
    global _sigints
    term = signum == signal.SIGTERM
    if term and _termination is not None:
        _termination.heard = True
    if not _depth:
        raise Terminated if term else KeyboardInterrupt
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
        if (_installed and signal.SIGINT in data) or (_termination is not None and signal.SIGTERM in data):
            stop_all()
        if _forward != -1:
            try:
                os.write(_forward, data)
            except OSError:
                pass


def _listen() -> bool:
    """Count a block of the main thread; the first one installs the watcher (False: a handler of the user's)."""
    global _depth, _installed
    if not _installed:
        if signal.getsignal(signal.SIGINT) not in (signal.default_int_handler, _record) or not _watcher():
            if _termination is None:
                return False
            # SIGINT is the user's, SIGTERM is ours: counted during the block, never raised in a solver's callback
        else:
            signal.signal(signal.SIGINT, _record)  # kept: setting handlers per solve cost ten times more
            _installed = True
    _depth += 1
    return True


def _watcher() -> bool:
    """The wakeup pipe, its watcher thread and Python's wakeup fd on it, set once (False: not possible here)."""
    global _pipe, _forward
    if _pipe is None:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        _pipe = (read_end, write_end)
        threading.Thread(target=_watch, args=(read_end,), name="cmab-milp-sigint", daemon=True).start()
    try:
        previous = signal.set_wakeup_fd(_pipe[1], warn_on_full_buffer=False)
    except ValueError:  # pragma: no cover - not the main thread of the main interpreter
        return False
    if previous != _pipe[1]:
        _forward = previous
    return True


def _unlisten() -> None:
    global _depth
    _depth -= 1


def _after_fork() -> None:
    """A forked child has no watcher thread: it makes its own pipe when it first solves."""
    global _pipe, _depth, _installed, _forward, _MAIN, _lock, _halting
    if _pipe is not None:
        for end in _pipe:
            os.close(end)
    _pipe, _depth, _installed, _forward = None, 0, False, -1
    with contextlib.suppress(ValueError):  # forked from another thread: the child's first solve sets it
        signal.set_wakeup_fd(-1)
    _lock = threading.Lock()
    _halting = 0
    _MAIN = threading.main_thread().ident
    _active.clear()
    _halted.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
