"""The action-space protocol shared by every family, and its combinators.

An action is a ``numpy`` bool vector of length ``d``. A space knows which
actions are feasible (:meth:`ActionSpace.contains`), can list them
(:meth:`ActionSpace.enumerate`, capped), and declares a mixed-integer linear
:class:`~cmab_milp.spaces.formulation.Formulation` that model-based oracles
compile.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(4, 2).with_constraint([1, 1, 0, 0], "<=", 1)
>>> space.contains(np.array([1, 1, 0, 0], bool))
False
>>> len(space.enumerate())
10
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from .formulation import Formulation, Row

__all__ = ["MAX_ENUMERATE", "ActionSpace", "ConstrainedSpace", "Intersection", "as_action"]

#: Default cap on :meth:`ActionSpace.enumerate`.
MAX_ENUMERATE = 1_000_000

_SENSES = ("<=", ">=", "==")


def as_action(action: Any, d: int) -> np.ndarray:
    """Validate ``action`` as a 0/1 vector of length ``d``; return it as bool.

    >>> as_action([1, 0, 1], 3)
    array([ True, False,  True])
    """
    a = np.asarray(action)
    if a.shape != (d,):
        raise ValueError(f"action must have shape ({d},), got {a.shape}")
    if a.dtype == bool:
        return a
    if not np.isin(a, (0, 1)).all():
        raise ValueError("action must be 0/1 (or bool); found other values")
    return a.astype(bool)


def check_arm(i: Any, d: int, what: str = "arm") -> int:
    """Return ``i`` as an int arm index in ``range(d)`` or raise ``ValueError``."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{what} must be an integer arm index, got {i!r}")
    if not 0 <= int(i) < d:
        raise ValueError(f"{what} {int(i)} is out of range for d={d}")
    return int(i)


class ActionSpace(ABC):
    """A finite set of feasible actions over arms ``0..d-1``.

    Subclasses set ``self.d`` and ``self.arms`` and implement
    :meth:`_contains`, :meth:`_iter_actions` and :meth:`_build_formulation`.
    """

    d: int
    arms: list

    # ----------------------------------------------------------- membership
    def contains(self, action: Any) -> bool:
        """Whether ``action`` (length-``d`` 0/1 vector) is a feasible action."""
        return bool(self._contains(as_action(action, self.d)))

    @abstractmethod
    def _contains(self, action: np.ndarray) -> bool: ...

    # ---------------------------------------------------------- enumeration
    @abstractmethod
    def _iter_actions(self) -> Iterator[np.ndarray]:
        """Yield every feasible action once, as bool vectors."""

    def count_upper_bound(self) -> int | None:
        """A cheap upper bound on the number of actions, or None if unknown."""
        return None

    def enumerate(self, max_actions: int | None = None) -> np.ndarray:
        """Every feasible action as a ``(n, d)`` bool array.

        Raises ``ValueError`` when the space has more than ``max_actions``
        actions (default :data:`MAX_ENUMERATE`).
        """
        cap = MAX_ENUMERATE if max_actions is None else int(max_actions)
        key = cap
        cache = self.__dict__.setdefault("_enum_cache", {})
        if "all" in cache:
            if len(cache["all"]) > cap:
                raise ValueError(self._too_many(cap))
            return cache["all"]
        if key in cache.get("too_many", ()):
            raise ValueError(self._too_many(cap))
        rows: list[np.ndarray] = []
        for action in self._iter_actions():
            rows.append(action)
            if len(rows) > cap:
                cache.setdefault("too_many", set()).add(key)
                raise ValueError(self._too_many(cap))
        out = np.array(rows, dtype=bool).reshape(len(rows), self.d)
        out.setflags(write=False)
        cache["all"] = out
        return out

    def _too_many(self, cap: int) -> str:
        return (
            f"{type(self).__name__} has more than {cap} actions; enumeration refused "
            "(raise max_actions or use a model-based oracle backend)"
        )

    # ---------------------------------------------------------- formulation
    @abstractmethod
    def _build_formulation(self) -> Formulation: ...

    def formulation(self) -> Formulation:
        """The exact MILP description that model-based oracles compile (cached)."""
        if "_formulation" not in self.__dict__:
            self.__dict__["_formulation"] = self._build_formulation()
        return self.__dict__["_formulation"]

    # ------------------------------------------------------------- size m
    @cached_property
    def m(self) -> int:
        """Largest number of arms in any action."""
        return int(self._max_arms())

    def _max_arms(self) -> int:
        from ..oracles import make_oracle  # local import: oracles sit above spaces

        best = make_oracle(self, "highs").argmax(np.ones(self.d))
        if best is None:
            raise ValueError(f"{type(self).__name__} has no feasible action")
        return int(best.sum())

    # ------------------------------------------------------------ combinators
    def with_constraint(self, coeffs: Sequence[float], sense: str, rhs: float) -> ConstrainedSpace:
        """This space plus the linear constraint ``coeffs @ a  sense  rhs``."""
        return ConstrainedSpace(self, coeffs, sense, rhs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d})"


class ConstrainedSpace(ActionSpace):
    """A parent space with one extra linear constraint (see ``with_constraint``)."""

    def __init__(self, parent: ActionSpace, coeffs: Sequence[float], sense: str, rhs: float):
        if not isinstance(parent, ActionSpace):
            raise ValueError(f"parent must be an ActionSpace, got {type(parent).__name__}")
        c = np.asarray(coeffs, dtype=float)
        if c.shape != (parent.d,):
            raise ValueError(f"coeffs must have length d={parent.d}, got shape {c.shape}")
        if not np.isfinite(c).all():
            raise ValueError("coeffs must be finite")
        if sense not in _SENSES:
            raise ValueError(f"sense must be one of {_SENSES}, got {sense!r}")
        if not np.isfinite(float(rhs)):
            raise ValueError("rhs must be a finite number")
        self.parent = parent
        self.coeffs = c
        self.sense = sense
        self.rhs = float(rhs)
        self.d = parent.d
        self.arms = parent.arms
        self._tol = 1e-9 * (1.0 + abs(self.rhs))

    def _satisfied(self, action: np.ndarray) -> bool:
        lhs = float(self.coeffs[action].sum())
        if self.sense == "<=":
            return lhs <= self.rhs + self._tol
        if self.sense == ">=":
            return lhs >= self.rhs - self._tol
        return abs(lhs - self.rhs) <= self._tol

    def _contains(self, action: np.ndarray) -> bool:
        return self._satisfied(action) and self.parent._contains(action)

    def _iter_actions(self) -> Iterator[np.ndarray]:
        return (a for a in self.parent._iter_actions() if self._satisfied(a))

    def count_upper_bound(self) -> int | None:
        return self.parent.count_upper_bound()

    def _build_formulation(self) -> Formulation:
        base = self.parent.formulation()
        nz = np.flatnonzero(self.coeffs)
        lb = -np.inf if self.sense == "<=" else self.rhs
        ub = np.inf if self.sense == ">=" else self.rhs
        row = Row(tuple(int(i) for i in nz), tuple(float(self.coeffs[i]) for i in nz), lb, ub)
        out = base.shifted(0, self.d)
        out.rows.append(row)
        out.integral_lp = False
        return out

    def __repr__(self) -> str:
        return f"{self.parent!r}.with_constraint(..., {self.sense!r}, {self.rhs:g})"


class Intersection(ActionSpace):
    """Actions feasible in every one of several spaces over the same arms.

    >>> import cmab_milp as cm
    >>> both = cm.Intersection(cm.Cardinality(4, 2), cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1]))
    >>> len(both.enumerate())
    9
    """

    def __init__(self, *spaces: ActionSpace):
        if len(spaces) == 1 and isinstance(spaces[0], Iterable) and not isinstance(spaces[0], ActionSpace):
            spaces = tuple(spaces[0])
        if not spaces:
            raise ValueError("Intersection needs at least one space")
        for k, s in enumerate(spaces):
            if not isinstance(s, ActionSpace):
                raise ValueError(f"Intersection argument {k} is not an ActionSpace: {type(s).__name__}")
        ds = {s.d for s in spaces}
        if len(ds) != 1:
            raise ValueError(f"Intersection needs spaces with the same d, got d values {sorted(ds)}")
        self.spaces = tuple(spaces)
        self.d = spaces[0].d
        self.arms = spaces[0].arms

    def _contains(self, action: np.ndarray) -> bool:
        return all(s._contains(action) for s in self.spaces)

    def _iter_actions(self) -> Iterator[np.ndarray]:
        bounds = [s.count_upper_bound() for s in self.spaces]
        order = sorted(range(len(self.spaces)), key=lambda k: (bounds[k] is None, bounds[k] or 0))
        first = self.spaces[order[0]]
        rest = [self.spaces[k] for k in order[1:]]
        return (a for a in first._iter_actions() if all(s._contains(a) for s in rest))

    def count_upper_bound(self) -> int | None:
        bounds = [b for b in (s.count_upper_bound() for s in self.spaces) if b is not None]
        return min(bounds) if bounds else None

    def _build_formulation(self) -> Formulation:
        return Formulation.stack([s.formulation() for s in self.spaces])

    def __repr__(self) -> str:
        return "Intersection(" + ", ".join(repr(s) for s in self.spaces) + ")"
