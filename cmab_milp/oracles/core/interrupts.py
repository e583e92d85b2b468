"""Ctrl-C and SIGTERM stop a solve, on every backend: the oracles' names for :mod:`cmab_milp._interrupts`.

The mechanism (a watcher thread on Python's wakeup fd calls the ``stop`` of every solve running; the workers
of a stopped batch stay halted) lives below every layer, so that the spaces' own solves (``space.m``) use it
too; its documentation is there. The names here are the ones the backends and the command line import.

>>> with stoppable(lambda: None) as solve:
...     pass
>>> solve.stopped
False
"""

from __future__ import annotations

from ..._interrupts import Terminated, Termination, halting, raise_if_halted, stop_all, stoppable, terminating

__all__ = ["Terminated", "Termination", "halting", "raise_if_halted", "stop_all", "stoppable", "terminating"]
