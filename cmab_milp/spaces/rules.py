"""Side rules on a space: linear constraints, budgets, groups and conflicting pairs.

Each rule is a new space over its parent (``space.with_constraint``,
``with_budget``, ``with_group``, ``with_at_least``, ``with_conflicts``):
``contains`` checks the rule then the parent, ``enumerate`` filters the parent's
actions and the formulation appends the rule's rows. Every rule carries a short
description, so an empty space can say which rules together leave no action
(:func:`explain_empty`).

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(3, 2).with_conflicts([(0, 1)])
>>> sorted(a.astype(int).tolist() for a in space.enumerate() if a.sum() == 2)
[[0, 1, 1], [1, 0, 1]]
>>> from cmab_milp.spaces import EmptySpaceError
>>> try:
...     space.with_at_least(2, [0, 1]).m
... except EmptySpaceError as exc:
...     print(exc)
no action satisfies conflicts [(0, 1)] together with at least 2 of [0, 1] in Cardinality(d=3, m=2)
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..described import ParameterError
from .base import ActionSpace
from .formulation import Formulation, Row
from .graph_presolve import budgets_of
from .labels import ArmLabels
from .solve import best_action

__all__ = ["ConflictSpace", "ConstrainedSpace", "RuleSpace", "explain_empty"]

_SENSES = ("<=", ">=", "==")


def _short(items: list, limit: int = 6) -> str:
    shown = ", ".join(repr(x) for x in items[:limit])
    return "[" + shown + (f", ... ({len(items)} in all)]" if len(items) > limit else "]")


class RuleSpace(ActionSpace):
    """A parent space plus linear rows over the arms (the base of every side rule)."""

    #: A short description of the rule, used in messages (``"at least 2 of [0, 1]"``).
    rule: str

    def __init__(self, parent: ActionSpace):
        if not isinstance(parent, ActionSpace):
            raise ParameterError("parent", f"parent must be an ActionSpace, got {type(parent).__name__}")
        self.parent = parent
        self.d = parent.d
        self.arms = parent.arms

    def _make_labels(self) -> ArmLabels:
        return self.parent.arm_labels

    @property
    def helpers(self) -> tuple[str, ...]:  # type: ignore[override]
        """The wrapped space's helpers (``path_edges``, ``graph``...), answered by it."""
        parent = self.__dict__.get("parent")
        return () if parent is None else parent.helpers

    def _helper_owner(self, name: str) -> ActionSpace | None:
        parent = self.__dict__.get("parent")
        return parent if parent is not None and name in parent.helpers else None

    @property
    def rows(self) -> list[Row]:
        """The rule's rows (over arm columns only)."""
        return self._rows()

    def _rows(self) -> list[Row]:
        raise NotImplementedError

    def _satisfied(self, action: np.ndarray) -> bool:
        raise NotImplementedError

    def _contains(self, action: np.ndarray) -> bool:
        return self._satisfied(action) and self.parent._contains(action)

    def _iter_actions(self) -> Iterator[np.ndarray]:
        return (a for a in self.parent._iter_actions() if self._satisfied(a))

    def count_upper_bound(self) -> int | None:
        return self.parent.count_upper_bound()

    def _build_formulation(self) -> Formulation:
        out = self.parent.formulation().shifted(0, self.d)
        # the first rule over a base names it: rows after its own are side rows (oracles/mip/side_starts.py)
        out.solver_hints.setdefault("side", {"space": self.parent, "rows": out.n_rows})
        out.rows.extend(self._rows())
        out.integral_lp = False
        out.rows.extend(self._presolved())
        return out

    def _presolved(self) -> list[Row]:
        """One row fixing to 0 the arms the base's graph rules out under this rule's budget rows (a hop limit;
        :mod:`.graph_presolve`) and not already under the parents'; none for other rules and spaces."""
        base, below, mine = self.parent, [], self._rows()
        while isinstance(base, RuleSpace):
            below = [*base._rows(), *below]
            base = base.parent
        unusable = getattr(base, "unusable_arms", None)
        budgets = budgets_of(mine, self.d)
        if unusable is None or not budgets:
            return []
        before = budgets_of(below, self.d)
        fixed = np.flatnonzero(unusable([*before, *budgets]) & ~unusable(before))
        return [Row(tuple(int(k) for k in fixed), (1.0,) * len(fixed), -np.inf, 0.0)] if len(fixed) else []

    def _on(self, parent: ActionSpace) -> RuleSpace:
        """This rule applied to another parent (same arms); caches are not shared."""
        out = copy.copy(self)
        for cached in ("_enum_cache", "_formulation", "m", "_arm_labels"):
            out.__dict__.pop(cached, None)
        out.parent = parent
        return out

    def _shown(self, arms: Any) -> list:
        labels = self.arm_labels.display
        return [labels[i] for i in arms]

    def __repr__(self) -> str:
        return f"{self.parent!r} + [{self.rule}]"


class ConstrainedSpace(RuleSpace):
    """A parent space with one extra linear constraint ``coeffs @ a  sense  rhs`` (see ``with_constraint``).

    ``coeffs`` is a length-``d`` sequence or a mapping ``{arm: coefficient}``
    (arms by index or label; missing arms 0). ``rule`` names the constraint
    in messages (default: the constraint written out).
    """

    def __init__(self, parent: ActionSpace, coeffs: Any, sense: str, rhs: float, *, rule: str | None = None):
        super().__init__(parent)
        c = parent.arm_vector(coeffs, default=0.0, what="coeffs")
        if sense not in _SENSES:
            raise ParameterError("sense", f"sense must be one of {_SENSES}, got {sense!r}")
        if isinstance(rhs, bool) or not isinstance(rhs, int | float | np.integer | np.floating):
            raise ParameterError("rhs", f"rhs must be a finite number, got {rhs!r}")
        if not np.isfinite(float(rhs)):
            raise ParameterError("rhs", "rhs must be a finite number")
        self.coeffs = c
        self.sense = sense
        self.rhs = float(rhs)
        self._tol = 1e-9 * (1.0 + abs(self.rhs))
        self.rule = rule if rule is not None else self._written()

    def _written(self) -> str:
        nz = np.flatnonzero(self.coeffs)
        labels = self.arm_labels.display
        terms = ", ".join(f"{labels[i]!r}: {self.coeffs[i]:g}" for i in nz[:6])
        more = f", ... ({len(nz)} terms)" if len(nz) > 6 else ""
        return f"constraint {{{terms}{more}}} @ a {self.sense} {self.rhs:g}"

    def _satisfied(self, action: np.ndarray) -> bool:
        lhs = float(self.coeffs[action].sum())
        if self.sense == "<=":
            return lhs <= self.rhs + self._tol
        if self.sense == ">=":
            return lhs >= self.rhs - self._tol
        return abs(lhs - self.rhs) <= self._tol

    def _rows(self) -> list[Row]:
        nz = np.flatnonzero(self.coeffs)
        lb = -np.inf if self.sense == "<=" else self.rhs
        ub = np.inf if self.sense == ">=" else self.rhs
        return [Row(tuple(int(i) for i in nz), tuple(float(self.coeffs[i]) for i in nz), lb, ub)]


class ConflictSpace(RuleSpace):
    """A parent space in which the two arms of each pair are never both chosen (see ``with_conflicts``).

    ``pairs`` holds pairs of arms by index or label; ``self.pairs`` keeps them
    as sorted index pairs ``(i, j)``, ``i < j``.
    """

    def __init__(self, parent: ActionSpace, pairs: Any):
        super().__init__(parent)
        self.pairs = parent.arm_pairs(pairs, what="conflicts")
        both = np.array(self.pairs, dtype=np.int64).reshape(-1, 2)
        self._first, self._second = both[:, 0], both[:, 1]
        self.rule = "conflicts " + _short([tuple(self._shown(p)) for p in self.pairs])

    def _satisfied(self, action: np.ndarray) -> bool:
        return not (action[self._first] & action[self._second]).any()

    def _rows(self) -> list[Row]:
        return [Row((i, j), (1.0, 1.0), -np.inf, 1.0) for i, j in self.pairs]

    def _presolved(self) -> list[Row]:
        return []  # a pair rules out no arm alone (and its rows are no budgets worth a shortest-path pass each)


def group_rule(parent: ActionSpace, group: Any, at_least: int | None, at_most: int | None) -> ActionSpace:
    """``parent`` with at least / at most so many arms of ``group`` (arms by index or label)."""
    arms = parent.arm_indices(group, what="group")
    if not arms:
        raise ParameterError("group", "group must hold at least one arm")
    if at_least is None and at_most is None:
        raise ParameterError("at_least", "give at_least, at_most or both")
    for name, k in (("at_least", at_least), ("at_most", at_most)):
        if k is not None and (isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0):
            raise ParameterError(name, f"{name} must be a non-negative integer, got {k!r}")
    if at_least is not None and at_least > len(arms):
        raise ParameterError("at_least", f"at least {at_least} of a group of {len(arms)} arms is impossible")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise ParameterError("at_least", f"at_least={at_least} exceeds at_most={at_most}")
    coeffs = np.zeros(parent.d)
    coeffs[list(arms)] = 1.0
    shown = _short([parent.arm_labels.display[i] for i in arms])
    out = parent
    if at_least is not None:
        out = ConstrainedSpace(out, coeffs, ">=", int(at_least), rule=f"at least {int(at_least)} of {shown}")
    if at_most is not None:
        out = ConstrainedSpace(out, coeffs, "<=", int(at_most), rule=f"at most {int(at_most)} of {shown}")
    return out


def budget_rule(parent: ActionSpace, costs: Any, budget: float) -> ConstrainedSpace:
    """``parent`` with ``costs @ a <= budget`` (costs >= 0; a mapping gives missing arms cost 0)."""
    c = parent.arm_vector(costs, default=0.0, what="costs")
    if (c < 0).any():
        bad = int(np.flatnonzero(c < 0)[0])
        raise ParameterError("costs", f"costs must be >= 0; arm {parent.arm_labels.display[bad]!r} costs {c[bad]:g}")
    if isinstance(budget, bool) or not isinstance(budget, int | float | np.integer | np.floating):
        raise ParameterError("budget", f"budget must be a number, got {budget!r}")
    if not np.isfinite(budget) or budget < 0:
        raise ParameterError("budget", f"budget must be a finite number >= 0, got {budget!r}")
    return ConstrainedSpace(parent, c, "<=", float(budget), rule=f"budget (total cost <= {float(budget):g})")


# ------------------------------------------------------------ explanation
def _empty(space: ActionSpace) -> bool:
    return best_action(space) is None


def explain_empty(space: ActionSpace) -> str | None:
    """Why ``space`` has no action (None if it has one): a smallest set of its rules that leaves no action.

    The rules are the side rules stacked on the space (innermost first); the
    first rule whose addition empties the space is named with the fewest
    earlier rules it needs, found by dropping each earlier rule in turn.
    """
    chain: list[RuleSpace] = []
    root = space
    while isinstance(root, RuleSpace):
        chain.append(root)
        root = root.parent
    chain.reverse()

    def build(rules: list[RuleSpace]) -> ActionSpace:
        out = root
        for r in rules:
            out = r._on(out)
        return out

    if _empty(root):
        return f"no action lies in {root!r}"
    culprit = next((k for k in range(len(chain)) if _empty(build(chain[: k + 1]))), None)
    if culprit is None:
        return None
    needed = list(chain[:culprit])
    for r in list(needed):
        trial = [x for x in needed if x is not r]
        if _empty(build([*trial, chain[culprit]])):
            needed = trial
    names = [r.rule for r in [*needed, chain[culprit]]]
    return f"no action satisfies {' together with '.join(names)} in {root!r}"
