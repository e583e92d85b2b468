"""Arms named by index, label or edge, and the side rules of a ``[space]`` table (constraints, budgets, ...).

>>> list(RULES)
['conflicts', 'constraints', 'budgets', 'groups']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...spaces.base import EmptySpaceError
from .arm_values import arm_index, arm_values
from .kinds import _construct
from .schema import ProblemError, ProblemErrors, Table, check_number, describe, join_key
from .schema_data import BUDGETS, CONFLICTS, CONSTRAINTS, GROUPS, finish, read

_arm = arm_index  # the names this module's users import


def _arms(table: Table, space: Any, name: str = "arms") -> list[int]:
    """The arms listed at ``table[name]`` (indices, labels or edges), in the order written."""
    raw = table.raw(name)
    if not isinstance(raw, list):
        raise table.error(name, f"expected an array of arms (indices, labels or edges), got {describe(raw)}")
    return [_arm(space, v, join_key(table.path(name), k), table.file) for k, v in enumerate(raw)]


def _numbers(table: Table, name: str, default: Any = None) -> list[float]:
    values = table.array(name) if default is None else table.array(name, default)
    return [check_number(v, join_key(table.path(name), k), table.file) for k, v in enumerate(values)]


def _arm_vector(table: Table, space: Any, name: str) -> list[float]:
    """``table[name]`` as one number per arm (arms left out: 0); the forms: :func:`~.arm_values.arm_values`."""
    value = arm_values(table.raw(name), table.path(name), table.file, space, 0.0)
    table.used.add(name)
    return value


def _listed_vector(table: Table, space: Any, values_name: str, default: float | None) -> list[float]:
    """One number per arm from ``arms = [...]`` and ``values_name = [...]`` (one per listed arm, summed)."""
    arms = _arms(table, space)
    if default is None and values_name not in table:
        raise table.error(values_name, f"needs one number per listed arm ({len(arms)})")
    values = _numbers(table, values_name, [default] * len(arms))
    if len(values) != len(arms):
        raise table.error(values_name, f"needs one number per listed arm ({len(arms)}), got {len(values)}")
    out = [0.0] * space.d
    for i, w in zip(arms, values, strict=True):
        out[i] += w
    return out


def _apply_constraint(space: Any, table: Table) -> Any:
    """``space.with_constraint`` from ``coeffs`` (d numbers or {label = x}) or ``arms`` (+ optional ``weights``)."""
    if ("coeffs" in table) == ("arms" in table):
        raise table.error(None, "give exactly one of 'coeffs' (one number per arm, or a table by label) or 'arms'")
    if "coeffs" in table:
        coeffs = _arm_vector(table, space, "coeffs")
    else:
        coeffs = _listed_vector(table, space, "weights", 1.0)
    sense = read(table, CONSTRAINTS, "sense")
    rhs = read(table, CONSTRAINTS, "rhs")
    finish(table, CONSTRAINTS)
    return _construct(table, space.with_constraint, (coeffs, sense, rhs), {}, "with_constraint")


def _apply_budget(space: Any, table: Table) -> Any:
    """``space.with_budget``: ``costs`` (d numbers or {label = cost}, or one per ``arms``) and ``budget``."""
    if "arms" in table:
        costs = _listed_vector(table, space, "costs", None)
    else:
        costs = _arm_vector(table, space, "costs")
    budget = read(table, BUDGETS, "budget")
    finish(table, BUDGETS)
    for i, c in enumerate(costs):
        if c < 0:
            raise table.error("costs", f"costs must be >= 0; arm {space.arm_labels.display[i]!r} costs {c:g}")
    if budget < 0:
        raise table.error("budget", f"must be >= 0, got {budget:g}")
    return _construct(table, space.with_budget, (costs, budget), {}, "with_budget")


def _apply_group(space: Any, table: Table) -> Any:
    """``space.with_group``: ``arms`` and ``at_least`` and/or ``at_most``."""
    arms = _arms(table, space)
    if not arms:
        raise table.error("arms", "a group needs at least one arm")
    at_least = read(table, GROUPS, "at_least")
    at_most = read(table, GROUPS, "at_most")
    finish(table, GROUPS)
    if at_least is None and at_most is None:
        raise table.error(None, "give at_least, at_most or both")
    if at_least is not None and at_least > len(set(arms)):
        raise table.error("at_least", f"at least {at_least} of a group of {len(set(arms))} arms is impossible")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise table.error("at_most", f"at_least={at_least} exceeds at_most={at_most}")
    return _construct(table, space.with_group, (arms,), {"at_least": at_least, "at_most": at_most}, "with_group")


def _apply_conflicts(space: Any, table: Table) -> Any:
    """``space.with_conflicts`` from ``pairs = [[a, b], ...]`` (arms by index, label or edge)."""
    raw = read(table, CONFLICTS, "pairs")
    finish(table, CONFLICTS)
    if not isinstance(raw, list) or not raw:
        raise table.error("pairs", f"expected a non-empty array of pairs [a, b], got {describe(raw)}")
    pairs = []
    for k, pair in enumerate(raw):
        key = join_key(table.path("pairs"), k)
        if not isinstance(pair, list) or len(pair) != 2:
            raise ProblemError(table.file, key, f"a pair is [a, b] (two arms), got {describe(pair)}")
        i, j = (_arm(space, v, join_key(key, n), table.file) for n, v in enumerate(pair))
        if i == j:
            raise ProblemError(table.file, key, f"names arm {space.arm_labels.display[i]!r} twice")
        pairs.append((i, j))
    return _construct(table, space.with_conflicts, (pairs,), {}, "with_conflicts")


#: Side rules of a ``[space]`` table, applied in this order: key -> how one table of it is applied.
RULES: dict[str, Callable[[Any, Table], Any]] = {
    "conflicts": _apply_conflicts,
    "constraints": _apply_constraint,
    "budgets": _apply_budget,
    "groups": _apply_group,
}


def _apply_rules(space: Any, rules: list[tuple[str, list[Table]]]) -> Any:
    """Apply the side rules in :data:`RULES` order; the first that leaves no action is refused at its key.

    Every rule table is read: a rule with a mistake is reported and left out, the rules after it are still
    checked, and all the mistakes are raised together (:class:`~.schema.ProblemErrors`).
    """
    errors: list[ProblemError] = []
    for name, tables in rules:
        for rule in tables:
            try:
                ruled = RULES[name](space, rule)
            except ProblemErrors as exc:
                errors.extend(exc.errors)
                continue
            except ProblemError as exc:
                errors.append(exc)
                continue
            if errors:  # feasibility with a rule left out would be judged on the wrong space
                continue
            space = ruled
            word = name.removesuffix("s") if name != "conflicts" else "list of conflicts"
            _check_feasible(space, rule, f"no action of the space satisfies this {word} (with the rules before it)")
    if errors:
        raise errors[0] if len(errors) == 1 else ProblemErrors(errors)
    return space


def _check_feasible(space: Any, table: Table, message: str) -> None:
    """Refuse, at ``table``'s key, a space without a feasible action (``space.m`` solves for it)."""
    try:
        space.m  # noqa: B018 -- computing m finds a feasible action or raises
    except EmptySpaceError as exc:
        raise table.error(None, f"{message}: {exc}") from None
