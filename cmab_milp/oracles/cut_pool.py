"""Lazy cuts shared by every thread's model of one oracle.

A separator's cuts (subtour elimination for forests, trees and paths on
cyclic graphs) are valid for every query, so a cut found by one worker thread
is given to every thread's model before its next solve. Each model counts the
cuts it holds in ``model.cuts_synced``.

Example
-------
>>> from cmab_milp.spaces.formulation import Row
>>> class Model:
...     cuts_synced = 0
...     def add_rows(self, rows):
...         self.rows = rows
>>> pool, model = CutPool(), Model()
>>> pool.add([Row((0, 1), (1.0, 1.0), float("-inf"), 1.0)])
>>> pool.sync(model)
>>> model.cuts_synced, len(pool)
(1, 1)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..spaces.formulation import Row

__all__ = ["CutPool"]


class CutPool:
    """A thread-safe, append-only list of valid cuts; ``rounds`` counts the additions."""

    def __init__(self) -> None:
        self._rows: list[Row] = []
        self._lock = threading.Lock()
        self.rounds = 0

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, cuts: Sequence[Row]) -> None:
        """Record cuts found by a separator."""
        with self._lock:
            self._rows.extend(cuts)
            self.rounds += 1

    def sync(self, model: Any, add_rows: Callable[[list[Row]], Any] | None = None) -> None:
        """Give ``model`` every cut it does not hold yet (``add_rows`` defaults to ``model.add_rows``)."""
        if model.cuts_synced >= len(self._rows):
            return
        with self._lock:
            new = self._rows[model.cuts_synced :]
        (add_rows or model.add_rows)(new)
        model.cuts_synced += len(new)

    def __getstate__(self) -> dict:
        with self._lock:
            return {"_rows": list(self._rows), "rounds": self.rounds}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
