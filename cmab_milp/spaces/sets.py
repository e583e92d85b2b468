"""Spaces defined on plain arm sets: cardinality, partition matroids, explicit lists.

Example
-------
>>> import cmab_milp as cm
>>> cm.Cardinality(5, 2).m, len(cm.Cardinality(5, 2, exact=True).enumerate())
(2, 10)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from itertools import combinations, product
from math import comb
from typing import Any

import numpy as np

from ..described import ParameterError
from .base import ActionSpace
from .formulation import Formulation, Row
from .labels import ArmLabels

__all__ = ["Cardinality", "ExplicitActions", "PartitionMatroid"]


def _positive_int(x: Any, name: str, minimum: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ParameterError(name.partition("[")[0], f"{name} must be an integer, got {x!r}")
    if int(x) < minimum:
        raise ParameterError(name.partition("[")[0], f"{name} must be >= {minimum}, got {int(x)}")
    return int(x)


def _subsets(arms: Sequence[int], sizes: Sequence[int]) -> Iterator[tuple[int, ...]]:
    for k in sizes:
        yield from combinations(arms, k)


class Cardinality(ActionSpace):
    """Subsets of at most ``m`` of ``d`` arms (exactly ``m`` if ``exact``).

    Parameters
    ----------
    d, m : int
        Arms ``0..d-1``; at most (or exactly) ``m <= d`` of them per action.
    exact : bool
        Exactly ``m`` arms (default: at most ``m``).
    labels : iterable of hashables, optional
        A name per arm, accepted wherever an arm index is (``include``, rules, ``observe``).

    Raises
    ------
    ValueError
        ``d`` or ``m`` not a positive integer, or ``m > d``.

    Examples
    --------
    >>> import numpy as np
    >>> Cardinality(3, 2).contains(np.array([1, 1, 1], bool))
    False
    """

    helpers = ("exact",)

    def __init__(self, d: int, m: int, exact: bool = False, *, labels: Iterable[Hashable] | None = None):
        self.d = _positive_int(d, "d")
        m = _positive_int(m, "m")
        if m > self.d:
            raise ParameterError("m", f"m must be <= d, got m={m} > d={self.d}")
        self.__dict__["m"] = m
        self.exact = bool(exact)
        self.arms = list(range(self.d))
        self._set_labels(labels)

    def _sizes(self) -> range:
        return range(self.m, self.m + 1) if self.exact else range(self.m + 1)

    def _contains(self, action: np.ndarray) -> bool:
        k = int(action.sum())
        return k == self.m if self.exact else k <= self.m

    def _iter_actions(self) -> Iterator[np.ndarray]:
        for subset in _subsets(range(self.d), self._sizes()):
            a = np.zeros(self.d, bool)
            a[list(subset)] = True
            yield a

    def count_upper_bound(self) -> int:
        return sum(comb(self.d, k) for k in self._sizes())

    def _build_formulation(self) -> Formulation:
        lb = float(self.m) if self.exact else -np.inf
        row = Row(tuple(range(self.d)), (1.0,) * self.d, lb, float(self.m))
        return Formulation(d=self.d, rows=[row], integral_lp=True)

    def __repr__(self) -> str:
        return f"Cardinality(d={self.d}, m={self.m}{', exact=True' if self.exact else ''})"


class PartitionMatroid(ActionSpace):
    """At most ``capacities[k]`` arms from block ``k``; the blocks partition ``range(d)``.

    Parameters
    ----------
    blocks : sequence of sequences of arms
        A partition of ``range(d)`` (with ``labels``, blocks may name arms by label).
    capacities : sequence of int
        ``capacities[k]``: the most arms an action takes from block ``k``.
    labels : iterable of hashables, optional
        A name per arm.

    Raises
    ------
    ValueError
        Blocks that do not partition ``range(d)``, or one capacity per block missing.

    Examples
    --------
    >>> PartitionMatroid([[0, 1], [2]], [1, 1]).m
    2
    >>> PartitionMatroid([["ann", "bob"], ["cy"]], [1, 1], labels=["ann", "bob", "cy"]).blocks
    [[0, 1], [2]]
    """

    helpers = ("blocks", "capacities")

    def __init__(
        self,
        blocks: Sequence[Sequence[int]],
        capacities: Sequence[int],
        *,
        labels: Iterable[Hashable] | None = None,
    ):
        blocks = [list(b) for b in blocks]
        if labels is not None:  # blocks may then name arms by label
            labels = list(labels)
            names = ArmLabels(len(labels), custom=labels)
            blocks = [[names.index(i, f"block {k}") for i in b] for k, b in enumerate(blocks)]
        if not blocks:
            raise ParameterError("blocks", "blocks must hold at least one block")
        caps = list(capacities)
        if len(caps) != len(blocks):
            raise ParameterError("capacities", f"capacities has {len(caps)} entries but there are {len(blocks)} blocks")
        seen: set[int] = set()
        for k, block in enumerate(blocks):
            if not block:
                raise ParameterError("blocks", f"block {k} is empty")
            for i in block:
                if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
                    raise ParameterError("blocks", f"block {k} holds a non-integer arm {i!r}")
                if int(i) in seen:
                    raise ParameterError("blocks", f"arm {int(i)} appears in more than one block (or twice)")
                seen.add(int(i))
        d = len(seen)
        if seen != set(range(d)):
            missing = sorted(set(range(max(seen) + 1)) - seen)[:5]
            raise ParameterError("blocks", f"blocks must partition range(d); arms missing: {missing}")
        self.blocks = [sorted(int(i) for i in b) for b in blocks]
        self.capacities = [_positive_int(c, f"capacities[{k}]", minimum=0) for k, c in enumerate(caps)]
        self.d = d
        self.arms = list(range(d))
        self.block_of = np.empty(d, dtype=np.int64)
        for k, block in enumerate(self.blocks):
            self.block_of[block] = k
        if sum(min(c, len(b)) for b, c in zip(self.blocks, self.capacities, strict=True)) == 0:
            raise ParameterError("capacities", "all capacities are zero: the only action would be empty")
        self._set_labels(labels)

    def _max_arms(self) -> int:
        return sum(min(c, len(b)) for b, c in zip(self.blocks, self.capacities, strict=True))

    def _contains(self, action: np.ndarray) -> bool:
        counts = np.bincount(self.block_of[action], minlength=len(self.blocks))
        return bool((counts <= np.asarray(self.capacities)).all())

    def _iter_actions(self) -> Iterator[np.ndarray]:
        per_block = [
            list(_subsets(b, range(min(c, len(b)) + 1))) for b, c in zip(self.blocks, self.capacities, strict=True)
        ]
        for choice in product(*per_block):
            a = np.zeros(self.d, bool)
            for subset in choice:
                a[list(subset)] = True
            yield a

    def count_upper_bound(self) -> int:
        total = 1
        for b, c in zip(self.blocks, self.capacities, strict=True):
            total *= sum(comb(len(b), k) for k in range(min(c, len(b)) + 1))
        return total

    def _build_formulation(self) -> Formulation:
        rows = [
            Row(tuple(b), (1.0,) * len(b), -np.inf, float(c)) for b, c in zip(self.blocks, self.capacities, strict=True)
        ]
        return Formulation(d=self.d, rows=rows, integral_lp=True)

    def __repr__(self) -> str:
        return f"PartitionMatroid({len(self.blocks)} blocks, capacities={self.capacities})"


class ExplicitActions(ActionSpace):
    """Exactly the rows of a 2-D 0/1 array (duplicate rows are kept once).

    Parameters
    ----------
    actions : 2-D array of 0/1 (or bool), shape (n, d)
        The feasible actions, one per row.
    labels : iterable of hashables, optional
        A name per arm.

    Raises
    ------
    ValueError
        An empty array, not 2-D, or entries other than 0 and 1.

    Examples
    --------
    >>> space = ExplicitActions([[1, 0, 1], [0, 1, 0]])
    >>> space.d, space.m
    (3, 2)
    """

    helpers = ("actions",)

    def __init__(self, actions: Any, *, labels: Iterable[Hashable] | None = None):
        arr = np.asarray(actions)
        if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
            raise ParameterError("actions", f"actions must be a non-empty 2-D 0/1 array, got shape {arr.shape}")
        if arr.dtype != bool:
            bad = ~np.isin(arr, (0, 1))
            if bad.any():
                r, c = np.argwhere(bad)[0]
                raise ParameterError("actions", f"actions must be 0/1; row {r} column {c} holds {arr[r, c]!r}")
        arr = arr.astype(bool)
        _, first = np.unique(arr, axis=0, return_index=True)
        self.actions = arr[np.sort(first)]
        self.actions.setflags(write=False)
        self.d = int(arr.shape[1])
        self.arms = list(range(self.d))
        self._index = {row.tobytes(): k for k, row in enumerate(self.actions)}
        self._set_labels(labels)

    def _max_arms(self) -> int:
        return int(self.actions.sum(axis=1).max())

    def _contains(self, action: np.ndarray) -> bool:
        return action.tobytes() in self._index

    def _iter_actions(self) -> Iterator[np.ndarray]:
        return iter(self.actions)

    def count_upper_bound(self) -> int:
        return len(self.actions)

    def enumerate(self, max_actions: int | None = None) -> np.ndarray:
        if max_actions is not None and len(self.actions) > max_actions:
            raise ValueError(self._too_many(max_actions))
        return self.actions

    def _build_formulation(self) -> Formulation:
        # a = sum_k z_k * row_k with z a one-hot row selector: the selector
        # polytope is a simplex, so the LP is exact for linear objectives.
        f = Formulation(d=self.d, integral_lp=True)
        z = [f.add_aux(0.0, 1.0, True, f"z{k}") for k in range(len(self.actions))]
        f.rows.append(Row(tuple(z), (1.0,) * len(z), 1.0, 1.0))
        for i in range(self.d):
            holders = np.flatnonzero(self.actions[:, i])
            cols = (i, *(z[k] for k in holders))
            f.rows.append(Row(cols, (1.0, *(-1.0,) * len(holders)), 0.0, 0.0))
        return f

    def __repr__(self) -> str:
        return f"ExplicitActions({len(self.actions)} actions, d={self.d})"
