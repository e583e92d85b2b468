"""Checks of a logged-feedback table's columns, in bulk: every bad row found at once, named by row and column.

A :class:`Problems` collects, per check, the rows that fail it. In ``"raise"``
mode the first failing row of the first failing check becomes a one-line
``ValueError`` (``"log.csv: line 7, column 'reward': 'abc' is not a number"``);
in ``"drop"`` mode the whole rounds holding a bad row are dropped and counted
per reason.

Example
-------
>>> import numpy as np
>>> numbers, bad = number_column(np.array(["0.5", "x", "1"], dtype=object))
>>> numbers.tolist()[0], bad.tolist()
(0.5, [False, True, False])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._names import close_names

__all__ = ["Problems", "RowNames", "arm_codes", "number_column"]


@dataclass(frozen=True)
class RowNames:
    """How rows and columns are named in messages: the source, the column names, and row numbering.

    ``first_line`` is the file line of row 0 (2 for a CSV with a header), or ``None`` to say ``row k``.

    >>> RowNames("log.csv", {"reward": "clicks"}, 2).where(3, "reward")
    "log.csv: line 5, column 'clicks'"
    >>> RowNames("the arrays", {}, None).where(3, "reward")
    "the arrays: row 3, column 'reward'"
    """

    source: str
    columns: dict[str, str] = field(default_factory=dict)
    first_line: int | None = None

    def column(self, role: str) -> str:
        """The column's name as the user gave it (its role name when the table came from arrays)."""
        return self.columns.get(role, role)

    def row(self, k: int) -> str:
        return f"row {k}" if self.first_line is None else f"line {k + self.first_line}"

    def where(self, k: int, role: str) -> str:
        return f"{self.source}: {self.row(k)}, column {self.column(role)!r}"


def number_column(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as floats, and which rows are not numbers at all (NaN there; text, ``None``, objects)."""
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return array.astype(float), np.zeros(array.shape, bool)
    try:
        return array.astype(float), np.zeros(array.shape, bool)
    except (TypeError, ValueError):
        pass
    out = np.full(array.shape, np.nan)
    bad = np.zeros(array.shape, bool)
    for k, value in enumerate(array.tolist()):
        try:
            out[k] = float(value)
        except (TypeError, ValueError):
            bad[k] = True
    return out, bad


def _key(value: Any) -> Any:
    """A hashable, canonical arm key: numpy scalars as Python ones, lists and arrays as tuples."""
    if isinstance(value, np.ndarray | list | tuple):
        return tuple(_key(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def arm_codes(space: Any, keys: Sequence[Any], codes: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Arm indices of rows whose arm is ``keys[codes[k]]``; and, per unknown key's code, why it is refused.

    A key is an arm index (an int ``0..d-1``, also as a whole float or digit text) or one of the
    space's labels (an edge ``(u, v)`` on graph spaces); unknown keys get ``-1``.
    """
    lookup = np.full(len(keys), -1, np.int64)
    unknown: dict[int, str] = {}
    labels = space.arm_labels
    for j, raw in enumerate(keys):
        key = _key(raw)
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if isinstance(key, str) and key.strip().lstrip("-").isdigit() and key not in labels.table:
            key = int(key)
        if isinstance(key, int) and not isinstance(key, bool):
            if 0 <= key < space.d:
                lookup[j] = key
            else:
                unknown[j] = f"arm index {key} is outside 0..{space.d - 1}"
            continue
        try:
            lookup[j] = space.arm_index(key, "arm")
        except (ValueError, TypeError):
            by_text = {str(label): label for label in labels.display}
            near = [by_text[text] for text in close_names(str(key), list(by_text), n=3)]
            hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
            unknown[j] = f"unknown arm {key!r} (the space's arms are indices 0..{space.d - 1} or its labels){hint}"
    return lookup[codes], {j: unknown[j] for j in unknown}


class Problems:
    """Bad rows found by the checks, in the order the checks ran; raise the first, or drop their rounds.

    >>> problems = Problems(RowNames("log.csv", {}, 2), "raise")
    >>> problems.add(np.array([False, True]), "reward", lambda k: "nan is not a finite number", "NaN reward")
    Traceback (most recent call last):
    ...
    ValueError: log.csv: line 3, column 'reward': nan is not a finite number
    """

    def __init__(self, names: RowNames, on_bad_rows: str):
        if on_bad_rows not in ("raise", "drop"):
            raise ValueError(f"on_bad_rows must be 'raise' or 'drop', got {on_bad_rows!r}")
        self.names = names
        self.mode = on_bad_rows
        #: Per reason, the bad rows' mask (drop mode).
        self.masks: dict[str, np.ndarray] = {}

    def add(self, bad: np.ndarray, role: str, message: Callable[[int], str], reason: str) -> None:
        """Rows ``bad`` fail a check of column ``role``; ``message(k)`` says why row ``k`` fails."""
        if not bad.any():
            return
        if self.mode == "raise":
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{self.names.where(k, role)}: {message(k)}")
        self.masks[reason] = self.masks[reason] | bad if reason in self.masks else bad.copy()

    def fail(self, k: int, role: str | None, message: str, reason: str, rows: np.ndarray | None = None) -> None:
        """One problem at row ``k`` (``role`` None: the row as a whole); ``rows`` are all rows to drop for it."""
        if self.mode == "raise":
            where = f"{self.names.source}: {self.names.row(k)}" if role is None else self.names.where(k, role)
            raise ValueError(f"{where}: {message}")
        mask = np.zeros(0, bool) if rows is None else rows
        self.masks[reason] = self.masks[reason] | mask if reason in self.masks else mask.copy()

    def bad_rows(self, n: int) -> np.ndarray:
        """Rows failing any check so far."""
        out = np.zeros(n, bool)
        for mask in self.masks.values():
            out |= mask
        return out

    def dropped_rounds(self, round_index: np.ndarray) -> dict[str, int]:
        """Per reason, how many rounds hold a row failing it (a round with several reasons counts once for each)."""
        return {
            reason: int(np.unique(round_index[mask]).size)
            for reason, mask in self.masks.items()
            if mask.size and mask.any()
        }
