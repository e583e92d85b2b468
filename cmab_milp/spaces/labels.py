"""Arms by name: resolve arm labels (or indices) to indices, and show arms by label.

Every space carries an :class:`ArmLabels` (``space.arm_labels``). The rule that
removes all ambiguity:

* an ``int`` (Python or numpy, never a ``bool``) always means an arm **index**;
* any other hashable key is looked up among the labels: the labels given to the
  space (``labels=`` or ``with_labels``) and, for graph spaces, the edge
  ``(u, v)`` of each arm (node labels as in the graph; either orientation when
  the graph is undirected). A list or 1-D array key is read as a tuple, so an
  edge may be written ``["a", "b"]``.

So an integer label must equal its own position (``labels=range(d)`` is fine,
``labels=[10, 11, 12]`` is refused: write ``"10"``...), and a label may not name
one arm while being the edge of another.

Example
-------
>>> names = ArmLabels(3, custom=["x", "y", "z"])
>>> names.index("y", "include"), names.index(2, "include")
(1, 2)
>>> names.vector({"z": 2.5}, default=0.0, what="coeffs").tolist()
[0.0, 0.0, 2.5]
>>> names.index("w", "include")
Traceback (most recent call last):
...
ValueError: include: unknown arm 'w'; arms are integer indices 0..2 or labels such as 'x', 'y', 'z'
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from ..described import ParameterError

__all__ = ["ArmLabels"]


def _key(key: Any) -> Any:
    """``key`` in a hashable, canonical form: lists and arrays become tuples, numpy scalars Python ones."""
    if isinstance(key, np.ndarray):
        key = key.tolist()
    if isinstance(key, list | tuple):
        return tuple(_key(k) for k in key)
    if isinstance(key, np.generic):
        return key.item()
    return key


def _is_index(key: Any) -> bool:
    return isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_)


def _short(items: Sequence[Any], limit: int = 6) -> str:
    shown = ", ".join(repr(x) for x in items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


class ArmLabels:
    """How a space's arms are named and looked up.

    Parameters
    ----------
    d:
        Number of arms.
    edges:
        For graph spaces, the edge ``(u, v)`` of each arm.
    undirected:
        Whether an edge also answers to ``(v, u)``.
    custom:
        Labels given by the user, one per arm (hashable, distinct; an int only
        at its own position).
    """

    def __init__(
        self,
        d: int,
        *,
        edges: Sequence[tuple] | None = None,
        undirected: bool = False,
        custom: Iterable[Hashable] | None = None,
    ):
        self.d = int(d)
        self.edges = None if edges is None else [tuple(e) for e in edges]
        self.undirected = bool(undirected)
        self.custom = None if custom is None else self._check_custom(custom)
        table: dict[Any, int] = {}
        if self.edges is not None:
            for k, (u, v) in enumerate(self.edges):
                table[(u, v)] = k
                if self.undirected:
                    table[(v, u)] = k
        if self.custom is not None:
            for k, label in enumerate(self.custom):
                other = table.get(label, k)
                if other != k:
                    raise ParameterError(
                        "labels", f"labels[{k}] = {label!r} is also the edge of arm {other}; a label must name one arm"
                    )
                table[label] = k
        self.table = table
        self._display: tuple | None = None

    def _check_custom(self, custom: Iterable[Hashable]) -> list:
        if isinstance(custom, str | bytes) or not isinstance(custom, Iterable):
            raise ParameterError("labels", f"labels must be a sequence of {self.d} labels, got {custom!r}")
        labels = [_key(x) for x in custom]
        if len(labels) != self.d:
            raise ParameterError("labels", f"labels must hold one label per arm: d={self.d}, got {len(labels)}")
        seen: dict[Any, int] = {}
        for k, label in enumerate(labels):
            if isinstance(label, bool):
                raise ParameterError("labels", f"labels[{k}] is the bool {label!r}; use a string")
            if _is_index(label) and label != k:
                raise ParameterError(
                    "labels",
                    f"labels[{k}] = {label!r} is an int other than its position; ints always mean arm indices, "
                    f"so use a string such as {str(label)!r}",
                )
            try:
                first = seen.setdefault(label, k)
            except TypeError:
                raise ParameterError("labels", f"labels[{k}] = {label!r} is not hashable") from None
            if first != k:
                raise ParameterError(
                    "labels", f"labels[{first}] and labels[{k}] are both {label!r}; labels must be distinct"
                )
        return labels

    # ------------------------------------------------------------- showing
    @property
    def display(self) -> tuple:
        """One label per arm: the custom labels, else the edges, else the indices."""
        if self._display is None:
            if self.custom is not None:
                self._display = tuple(self.custom)
            elif self.edges is not None:
                self._display = tuple(self.edges)
            else:
                self._display = tuple(range(self.d))
        return self._display

    def relabelled(self, custom: Iterable[Hashable] | None) -> ArmLabels:
        """The same arms (and edges) under new custom labels (``None``: none)."""
        return ArmLabels(self.d, edges=self.edges, undirected=self.undirected, custom=custom)

    # ----------------------------------------------------------- resolving
    def _unknown(self, key: Any, what: str) -> ValueError:
        examples = _short(self.display, 3) if (self.custom is not None or self.edges is not None) else ""
        hint = f" or labels such as {examples}" if examples else " (this space has no labels)"
        return ValueError(f"{what}: unknown arm {key!r}; arms are integer indices 0..{self.d - 1}{hint}")

    def index(self, key: Any, what: str = "arm") -> int:
        """The index of the arm ``key`` names (an index or a label)."""
        if _is_index(key):
            i = int(key)
            if not 0 <= i < self.d:
                raise ValueError(f"{what}: arm index {i} is out of range for d={self.d}")
            return i
        if isinstance(key, bool | np.bool_):
            raise ValueError(f"{what}: arm {key!r} is a bool; give an integer index or a label")
        key = _key(key)
        try:
            found = self.table.get(key)
        except TypeError:
            raise ValueError(f"{what}: arm {key!r} is not hashable, so it is neither an index nor a label") from None
        if found is None:
            raise self._unknown(key, what)
        return found

    def _items(self, values: Any, what: str, of: str) -> list:
        if isinstance(values, str | bytes) or not isinstance(values, Iterable) or isinstance(values, Mapping):
            raise ValueError(f"{what} must be a list of {of}, got {values!r}")
        return list(values)

    def indices(self, values: Any, what: str = "arms") -> tuple[int, ...]:
        """Sorted distinct indices of the arms in ``values`` (indices or labels)."""
        d = self.d
        if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
            if len(values) == 0 or (values.min() >= 0 and values.max() < d):
                return tuple(sorted(set(values.tolist())))
        items = self._items(values, what, "arms")
        try:  # plain in-range ints (the common case on the per-query path) skip the general lookup
            return tuple(sorted({v if type(v) is int and 0 <= v < d else self.index(v, what) for v in items}))
        except ValueError:
            whole = _key(values) if isinstance(values, tuple | list) else None
            try:
                one_arm = whole is not None and whole in self.table
            except TypeError:  # holds something unhashable: not one arm either
                one_arm = False
            if one_arm:
                raise ValueError(f"{what} must be a list of arms; {values!r} is one arm: write [{whole!r}]") from None
            raise

    def pairs(self, values: Any, what: str = "pairs") -> tuple[tuple[int, int], ...]:
        """Sorted distinct pairs ``(i, j)``, ``i < j``, from pairs of arms (indices or labels)."""
        out = set()
        for p in self._items(values, what, "pairs of arms"):
            if type(p) is not tuple and (isinstance(p, str | bytes | Mapping) or not isinstance(p, Iterable)):
                raise ValueError(f"{what} must hold pairs of two arms, got {p!r}")
            pair = p if type(p) is tuple else list(p)
            if len(pair) != 2:
                raise ValueError(f"{what} must hold pairs of two arms, got {p!r} ({len(pair)} items)")
            i, j = pair
            if not (type(i) is int and 0 <= i < self.d):
                i = self.index(i, what)
            if not (type(j) is int and 0 <= j < self.d):
                j = self.index(j, what)
            if i == j:
                raise ValueError(f"{what}: the pair {p!r} names arm {i} twice; a pair needs two different arms")
            out.add((min(i, j), max(i, j)))
        return tuple(sorted(out))

    def vector(self, values: Any, default: float | None = 0.0, what: str = "values") -> np.ndarray:
        """A length-``d`` float vector from ``{arm: value}`` (missing arms get ``default``) or a sequence.

        With ``default=None`` a mapping must give every arm. Values must be finite.
        """
        if isinstance(values, Mapping):
            out = np.full(self.d, np.nan if default is None else float(default))
            given: dict[int, Any] = {}
            for key, value in values.items():
                i = self.index(key, what)
                if i in given:
                    raise ValueError(f"{what}: arm {i} is given twice (as {given[i]!r} and {key!r})")
                given[i] = key
                if isinstance(value, bool) or not isinstance(value, Real):
                    raise ValueError(f"{what}[{key!r}] must be a number, got {value!r}")
                out[i] = float(value)
            if default is None and len(given) < self.d:
                missing = [self.display[i] for i in range(self.d) if i not in given]
                raise ValueError(f"{what}: no value for arms {_short(missing)}")
        else:
            if isinstance(values, str | bytes):
                raise ValueError(f"{what} must be a mapping {{arm: value}} or {self.d} numbers, got {values!r}")
            try:
                out = np.array(values, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{what} must be a mapping {{arm: value}} or {self.d} numbers") from None
            if out.shape != (self.d,):
                raise ValueError(f"{what} must have length d={self.d}, got shape {out.shape}")
        if not np.isfinite(out).all():
            bad = int(np.flatnonzero(~np.isfinite(out))[0])
            raise ValueError(f"{what} must be finite; arm {self.display[bad]!r} has {out[bad]}")
        return out
