"""The action-space protocol shared by every family, and its combinators.

An action is a ``numpy`` bool vector of length ``d``. A space knows which
actions are feasible (:meth:`ActionSpace.contains`), can list them
(:meth:`ActionSpace.enumerate`, capped), and declares a mixed-integer linear
:class:`~cmab_milp.spaces.formulation.Formulation` that model-based oracles
compile. Arms are accepted by index or by label (:mod:`.labels`) wherever an
arm is asked for; side rules (:mod:`~cmab_milp.spaces.rules`) make new spaces.

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

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator
from functools import cached_property
from typing import Any

import numpy as np

from ..described import Described, ParameterError
from .formulation import Formulation
from .labels import ArmLabels
from .solve import best_action

__all__ = ["MAX_ENUMERATE", "ActionSpace", "EmptySpaceError", "Intersection", "as_action"]

#: Default cap on :meth:`ActionSpace.enumerate`.
MAX_ENUMERATE = 1_000_000


def as_action(action: Any, d: int) -> np.ndarray:
    """Validate ``action`` as a 0/1 vector of length ``d``; return it as bool.

    >>> as_action([1, 0, 1], 3)
    array([ True, False,  True])
    """
    a = np.asarray(action)
    if a.shape != (d,):
        raise ValueError(f"action must have shape ({d},), got {a.shape}")
    return _as_bool(a, "action")


def as_actions(actions: Any, d: int) -> np.ndarray:
    """Validate ``actions`` as 0/1 rows of length ``d`` (shape ``(n, d)`` or one ``(d,)``); return them as bool.

    >>> as_actions([[1, 0], [0, 1]], 2).tolist()
    [[True, False], [False, True]]
    """
    a = np.asarray(actions)
    if a.ndim not in (1, 2) or a.shape[-1] != d:
        raise ValueError(f"actions must have shape (n, {d}) or ({d},), got {a.shape}")
    return _as_bool(a, "actions")


def _as_bool(a: np.ndarray, what: str) -> np.ndarray:
    if a.dtype == bool:
        return a
    if not np.isin(a, (0, 1)).all():
        raise ValueError(f"{what} must be 0/1 (or bool); found other values")
    return a.astype(bool)


def check_arm(i: Any, d: int, what: str = "arm") -> int:
    """Return ``i`` as an int arm index in ``range(d)`` or raise ``ValueError``."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{what} must be an integer arm index, got {i!r}")
    if not 0 <= int(i) < d:
        raise ValueError(f"{what} {int(i)} is out of range for d={d}")
    return int(i)


class EmptySpaceError(ValueError):
    """A space (with its side rules) has no action; the message names the rules that empty it.

    >>> from cmab_milp import Cardinality
    >>> try:
    ...     Cardinality(3, 2).with_conflicts([(0, 1)]).with_at_least(2, [0, 1]).m
    ... except EmptySpaceError as exc:
    ...     print(exc)
    no action satisfies conflicts [(0, 1)] together with at least 2 of [0, 1] in Cardinality(d=3, m=2)
    """


class ActionSpace(Described, ABC):
    """A finite set of feasible actions over arms ``0..d-1``.

    Subclasses set ``self.d`` and ``self.arms`` and implement
    :meth:`_contains`, :meth:`_iter_actions` and :meth:`_build_formulation`.
    """

    d: int
    arms: list

    #: Public attributes and methods particular to this kind of space (``STPaths.path_edges``,
    #: ``PartitionMatroid.blocks``...). Every space built from it keeps them: side rules, conflicts,
    #: budgets, groups, labels and intersections answer them from the space they wrap.
    helpers: tuple[str, ...] = ()

    def _helper_owner(self, name: str) -> ActionSpace | None:
        """The wrapped space that answers helper ``name`` (``None``: none; only wrapping spaces have one)."""
        return None

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: a wrapped space's helper, else the usual error
        if not name.startswith("_"):
            owner = self._helper_owner(name)
            if owner is not None:
                return getattr(owner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.helpers))

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
        actions (default :data:`MAX_ENUMERATE`), or none (naming the rules
        that leave no action).
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
        if not rows:
            raise EmptySpaceError(self._empty_message())
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
        return self._memo("_formulation", self._build_formulation)

    def _memo(self, key: str, build: Callable[[], Any]) -> Any:
        """``self.__dict__[key]``, built by ``build()`` on first use (spaces are immutable once built)."""
        if key not in self.__dict__:
            self.__dict__[key] = build()
        return self.__dict__[key]

    # ------------------------------------------------------------- size m
    @cached_property
    def m(self) -> int:
        """Largest number of arms in any action (``ValueError`` naming the culprit rules if there is none)."""
        return int(self._max_arms())

    def _max_arms(self) -> int:
        best = best_action(self)  # enumeration or scipy's MILP on the formulation: no oracle needed
        if best is None:
            raise EmptySpaceError(self._empty_message())
        return int(best.sum())

    def check_feasible(self) -> None:
        """Raise ``ValueError`` naming the rules that leave no action, if the space has none."""
        self.m  # noqa: B018 (computing m finds the largest action, or refuses an empty space)

    def _empty_message(self) -> str:
        from .. import spaces  # the rule spaces subclass this one: reached through the package

        return spaces.rules.explain_empty(self) or f"{self!r} has no action"

    # -------------------------------------------------------------- labels
    def _make_labels(self) -> ArmLabels:
        """The labels this space has unless given others (indices only; graph spaces add edges)."""
        return ArmLabels(self.d)

    def _set_labels(self, labels: Iterable[Hashable] | None) -> None:
        """Validate and keep user ``labels`` (constructors call this after setting ``d``)."""
        if labels is not None:
            self.__dict__["_arm_labels"] = self._make_labels().relabelled(labels)

    def given_labels(self) -> list | None:
        """The labels given to this space (``labels=`` or :meth:`with_labels`), or None if it has its own."""
        custom = self.arm_labels.custom
        return None if custom == self._make_labels().custom else list(custom)

    def _param_value(self, name: str) -> Any:
        """Constructor parameter ``name`` for :meth:`get_params` (``labels``: those given, else None)."""
        return self.given_labels() if name == "labels" else getattr(self, name)

    @property
    def arm_labels(self) -> ArmLabels:
        """How arms are named and looked up (see :mod:`cmab_milp.spaces.labels`)."""
        return self._memo("_arm_labels", self._make_labels)

    @property
    def labels(self) -> list:
        """One label per arm: the labels given, else the edges (graph spaces), else the indices."""
        return list(self.arm_labels.display)

    def with_labels(self, labels: Iterable[Hashable]) -> ActionSpace:
        """The same space with arms named ``labels`` (one per arm; graph edges keep resolving too).

        >>> import cmab_milp as cm
        >>> space = cm.Cardinality(3, 1).with_labels(["red", "green", "blue"])
        >>> space.arm_index("blue"), space.label_of(0)
        (2, 'red')
        """
        out = copy.copy(self)
        out.__dict__["_arm_labels"] = self.arm_labels.relabelled(labels)
        return out

    def arm_index(self, arm: Any, what: str = "arm") -> int:
        """The index of ``arm``: an int is an index; anything else a label (an edge ``(u, v)`` on graphs).

        ``what`` names the argument in the ``ValueError`` raised for an unknown arm.
        """
        return self.arm_labels.index(arm, what)

    def arm_indices(self, arms: Any, what: str = "arms") -> tuple[int, ...]:
        """Sorted distinct indices of an iterable of arms (indices or labels)."""
        return self.arm_labels.indices(arms, what)

    def arm_pairs(self, pairs: Any, what: str = "pairs") -> tuple[tuple[int, int], ...]:
        """Sorted distinct index pairs ``(i, j)``, ``i < j``, from pairs of arms (indices or labels)."""
        return self.arm_labels.pairs(pairs, what)

    def arm_vector(self, values: Any, default: float | None = 0.0, what: str = "values") -> np.ndarray:
        """A length-``d`` float vector from ``{arm: value}`` or a sequence of ``d`` numbers.

        Arms missing from a mapping get ``default`` (``None``: every arm must be given).

        >>> import networkx as nx
        >>> import cmab_milp as cm
        >>> space = cm.SpanningTrees(nx.Graph([("a", "b"), ("b", "c"), ("c", "a")]))
        >>> space.arm_vector({("b", "a"): 2.0, ("c", "b"): 1.0}).tolist()
        [2.0, 0.0, 1.0]
        """
        return self.arm_labels.vector(values, default, what)

    def label_of(self, arm: int) -> Any:
        """The label of arm index ``arm``."""
        return self.arm_labels.display[self.arm_index(arm)]

    def labels_of(self, action: Any) -> list:
        """The labels of the arms an action chooses, in index order."""
        display = self.arm_labels.display
        return [display[i] for i in np.flatnonzero(as_action(action, self.d))]

    # ------------------------------------------------------------ combinators
    def with_constraint(self, coeffs: Any, sense: str, rhs: float) -> ActionSpace:
        """This space plus ``coeffs @ a  sense  rhs``; ``coeffs`` may be a mapping ``{arm: coefficient}``.

        >>> import cmab_milp as cm
        >>> cm.Cardinality(4, 3).with_constraint({0: 1, 3: 1}, "<=", 1).m
        3
        """
        from .. import spaces  # the rule spaces subclass this one: reached through the package

        return spaces.rules.ConstrainedSpace(self, coeffs, sense, rhs)

    def with_conflicts(self, pairs: Any) -> ActionSpace:
        """This space where the two arms of each pair (by index or label) are never both chosen.

        >>> import cmab_milp as cm
        >>> cm.Cardinality(3, 3).with_conflicts([(0, 1), (1, 2)]).m
        2
        """
        from .. import spaces  # the rule spaces subclass this one: reached through the package

        return spaces.rules.ConflictSpace(self, pairs)

    def with_budget(self, costs: Any, budget: float) -> ActionSpace:
        """This space with total cost ``costs @ a <= budget`` (a knapsack row; costs >= 0, by arm or mapping).

        >>> import cmab_milp as cm
        >>> cm.Cardinality(4, 4).with_budget([3, 1, 1, 2], 4).m
        3
        """
        from .. import spaces  # the rule spaces subclass this one: reached through the package

        return spaces.rules.budget_rule(self, costs, budget)

    def with_group(self, group: Any, at_least: int | None = None, at_most: int | None = None) -> ActionSpace:
        """This space with at least ``at_least`` and/or at most ``at_most`` arms of ``group``.

        >>> import cmab_milp as cm
        >>> len(cm.Cardinality(4, 2, exact=True).with_group([0, 1], at_least=1, at_most=1).enumerate())
        4
        """
        from .. import spaces  # the rule spaces subclass this one: reached through the package

        return spaces.rules.group_rule(self, group, at_least, at_most)

    def with_at_least(self, k: int, group: Any) -> ActionSpace:
        """This space with at least ``k`` arms of ``group`` (arms by index or label)."""
        return self.with_group(group, at_least=k)

    def with_at_most(self, k: int, group: Any) -> ActionSpace:
        """This space with at most ``k`` arms of ``group`` (arms by index or label)."""
        return self.with_group(group, at_most=k)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d})"


class Intersection(ActionSpace):
    """Actions feasible in every one of several spaces over the same arms.

    >>> import cmab_milp as cm
    >>> both = cm.Intersection(cm.Cardinality(4, 2), cm.PartitionMatroid([[0, 1], [2, 3]], [1, 1]))
    >>> len(both.enumerate())
    9
    """

    def __init__(self, *spaces: ActionSpace, labels: Iterable[Hashable] | None = None):
        if len(spaces) == 1 and isinstance(spaces[0], Iterable) and not isinstance(spaces[0], ActionSpace):
            spaces = tuple(spaces[0])
        if not spaces:
            raise ParameterError("spaces", "Intersection needs at least one space")
        for k, s in enumerate(spaces):
            if not isinstance(s, ActionSpace):
                raise ParameterError("spaces", f"Intersection argument {k} is not an ActionSpace: {type(s).__name__}")
        ds = {s.d for s in spaces}
        if len(ds) != 1:
            raise ParameterError("spaces", f"Intersection needs spaces with the same d, got d values {sorted(ds)}")
        self.spaces = tuple(spaces)
        self.d = spaces[0].d
        named = [s for s in spaces if s.arm_labels.custom is not None or s.arm_labels.edges is not None]
        self._source = named[0] if named else spaces[0]
        if labels is None:
            mine = self._source.labels
            for other in named[1:]:
                theirs = other.labels
                if theirs != mine:
                    k = next(i for i in range(self.d) if mine[i] != theirs[i])
                    raise ParameterError(
                        "spaces",
                        f"Intersection members label arm {k} differently ({mine[k]!r} and {theirs[k]!r}); "
                        "pass labels= to choose",
                    )
        self.arms = self._source.arms
        self._set_labels(labels)

    def _make_labels(self) -> ArmLabels:
        return self._source.arm_labels

    @property
    def helpers(self) -> tuple[str, ...]:  # type: ignore[override]
        """Every member's helpers (each answered by the first member that has it)."""
        spaces = self.__dict__.get("spaces", ())
        return tuple(dict.fromkeys(name for s in spaces for name in s.helpers))

    def _helper_owner(self, name: str) -> ActionSpace | None:
        return next((s for s in self.__dict__.get("spaces", ()) if name in s.helpers), None)

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
