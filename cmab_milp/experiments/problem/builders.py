"""Build action spaces, graphs, environments and policies from problem-file tables.

Kinds are resolved by name, never through an if/elif chain: a space,
environment or policy kind is one of the :mod:`~cmab_milp.catalogue` (the
library's own, or one registered by trusted code:
:func:`~cmab_milp.experiments.problem.registry.register_kind`, ``--plugin``). Graph
generators come from :data:`GENERATORS` and draws from :data:`DRAWS`; nothing a
file names is ever imported. Sizes are checked against
:class:`~cmab_milp.experiments.problem.limits.Limits` before anything is built. Keys of a
kind's table are its constructor's parameters, so a new family needs no change
here. A constructor's :class:`~cmab_milp.described.ParameterError` is re-raised as a
:class:`~cmab_milp.experiments.problem.schema.ProblemError` at the key of the parameter it names.

This module builds environments and policies and re-exports the rest from the
modules with one job each: :mod:`.kinds` (class lookup, constructor calls),
:mod:`~cmab_milp.experiments.problem.graphs`, :mod:`~cmab_milp.experiments.problem.spaces`,
:mod:`~cmab_milp.experiments.problem.rules` (side rules, arm lookups) and
:mod:`.draws`.

Example
-------
>>> from cmab_milp.experiments.problem.schema import Table
>>> space = build_space(Table({"kind": "Cardinality", "d": 5, "m": 2}, "space", "demo.toml"))
>>> space.d, space.m
(5, 2)
>>> build_space(Table({"kind": "Cardinality", "d": 3, "m": 4}, "space", "demo.toml"))
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: demo.toml: space.m: m must be <= d, got m=4 > d=3
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .arm_values import arm_values, is_edge_rows
from .draws import DRAWS, register_draw, resolve_parameter
from .graphs import GENERATORS, GraphGenerator, build_graph, register_generator
from .kinds import _parameters, _resolve_class, build_kind, environment_kinds, policy_kinds, space_kinds
from .limits import Limits
from .logged_env import LOGGED_KIND, build_logged_environment
from .matrices import MATRIX_KEYS, matrix_value
from .rules import _arm_vector
from .schema import ProblemError, Table, check_number, join_key
from .spaces import build_space

__all__ = [
    "DRAWS",
    "GENERATORS",
    "GraphGenerator",
    "build_environment",
    "build_graph",
    "build_policy",
    "build_space",
    "environment_kinds",
    "policy_kinds",
    "policy_warnings",
    "register_draw",
    "register_generator",
    "resolve_parameter",
    "space_kinds",
]


# -------------------------------------------------------------- environments
def _bad_entry(value: Any, key: str) -> str | None:
    """The key of the first non-number inside an array parameter (``means[1]``), or None."""
    if isinstance(value, list):
        for k, item in enumerate(value):
            found = _bad_entry(item, join_key(key, k))
            if found is not None:
                return found
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return key
    return None


def _diagonal(table: Table, space: Any, limits: Limits) -> list[list[float]]:
    """``{ diagonal = x }``: a d x d diagonal matrix (e.g. ``cov``): x a number, d numbers or ``{ label = x }``."""
    limits.check("draw_size", space.d * space.d, table.key, table.file, f"a {space.d} x {space.d} matrix, which")
    raw = table.raw("diagonal")
    table.finish()
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        values = [check_number(raw, table.path("diagonal"), table.file)] * space.d
    else:
        values = _arm_vector(Table({"diagonal": raw}, table.key, table.file), space, "diagonal")
    return np.diag(values).tolist()


def _means_table(value: Any, key: str, file: str, space: Any) -> list[float]:
    """``means`` by arm: ``{ "A-B" = 0.3, ... }``, ``[u, v, mean]`` rows or ``{ attribute = "km", ... }``."""
    return arm_values(value, key, file, space, None)


def build_environment(table: Table, space: Any, limits: Limits | None = None) -> tuple[Any, dict[str, Any]]:
    """An environment from ``[environment]``: ``kind`` plus constructor parameters.

    Returns the environment and its table as stored (draws kept as recipes, not
    values: every rebuild draws the same values from the stated seed).
    """
    limits = Limits() if limits is None else limits
    if table.data.get("kind") == LOGGED_KIND:  # means and outcomes from a log file (experiments/problem/logged_env.py)
        return build_logged_environment(table, space, limits)
    cls = _resolve_class(table, "kind", "environment")
    names, var_keyword = _parameters(cls)
    kwargs: dict[str, Any] = {}
    for key, value in table.data.items():
        if key == "kind":
            continue
        if key not in names and not var_keyword:
            raise table.error(key, f"unknown parameter of {cls.__name__} (it takes: {', '.join(names)})")
        if key == "means" and ((isinstance(value, dict) and "draw" not in value) or is_edge_rows(value)):
            kwargs[key] = _means_table(value, table.path(key), table.file, space)
        elif isinstance(value, dict) and any(k in value for k in MATRIX_KEYS):
            # a data file, factors or shared shocks (+ diagonal); stored with each file's SHA-256
            kwargs[key], table.data[key] = matrix_value(Table(dict(value), table.path(key), table.file), space, limits)
        elif isinstance(value, dict) and "diagonal" in value:
            kwargs[key] = _diagonal(Table(dict(value), table.path(key), table.file), space, limits)
        else:
            kwargs[key] = resolve_parameter(value, table.path(key), table.file, space.d, limits)
        table.used.add(key)
    table.finish()
    means = kwargs.get("means")
    if isinstance(means, list):
        if len(means) != space.d:
            raise table.error("means", f"needs one mean per arm: the space has d={space.d}, got {len(means)}")
        for k, mean in enumerate(means):
            check_number(mean, join_key(table.path("means"), k), table.file)
    try:
        env = build_kind(table, cls, kwargs, cls.__name__)
    except ProblemError as exc:
        if exc.key != table.key:
            raise
        arrays = [k for k, v in kwargs.items() if isinstance(v, list)]
        bad = [k for k in arrays if _bad_entry(kwargs[k], "") is not None]
        if len(bad) == 1:  # the one array holding a non-number is what the constructor refused
            raise ProblemError(table.file, _bad_entry(kwargs[bad[0]], table.path(bad[0])), exc.message) from None
        if len(arrays) == 1:  # e.g. a ragged array: the only array parameter is the one at fault
            raise table.error(arrays[0], exc.message) from None
        raise
    env_d = getattr(env, "d", space.d)
    if env_d != space.d:
        raise table.error(None, f"{cls.__name__} has d={env_d} arms but the space has d={space.d}")
    return env, dict(table.data)


# ------------------------------------------------------------------ policies
def build_policy(
    table: Table, kind: str, space: Any, horizon: int | None, oracle: Any, constants: dict[str, Any]
) -> Any:
    """``Policy(space, horizon, oracle=oracle, **constants)`` for the policy kind named ``kind``.

    ``table`` is the ``[[policies]]`` entry, used to name keys in errors;
    ``horizon=None`` builds the policy without a known horizon.
    """
    kind_table = Table({"kind": kind}, table.key, table.file)
    cls = _resolve_class(kind_table, "kind", "policy")
    constants_table = Table(constants, table.path("constants"), table.file)
    try:
        return cls(space, horizon, oracle=oracle, **constants)
    except TypeError as exc:
        raise constants_table.error(None, f"{cls.__name__} rejected its constants: {exc}") from None
    except ValueError as exc:  # a ParameterError names the constant (or the oracle) it refuses
        param = getattr(exc, "param", None)
        if param in constants:
            raise constants_table.error(param, str(exc)) from None
        raise table.error("oracle" if param == "oracle" else None, str(exc)) from None


def _reward_name(spec: Any) -> str | None:
    from ...nonlinear.rewards import make_reward

    try:
        return make_reward(spec).name
    except (ValueError, TypeError):
        return None


def policy_warnings(table: Table, kind: str, constants: dict[str, Any], env: Any) -> list[str]:
    """Warnings (``FILE: KEY: message``) for a policy whose reward or support differs from the environment's.

    Not errors: the run is well defined (regret is always measured with the
    environment's reward), but probably not what was meant; a support that
    misses some of the environment's outcome values makes the jobs fail when
    such an outcome is observed.
    """
    kind_table = Table({"kind": kind}, table.key, table.file)
    cls = _resolve_class(kind_table, "kind", "policy")
    params = inspect.signature(cls).parameters
    env_reward = getattr(env, "reward", None)
    env_name = getattr(env_reward, "name", None) if env_reward is not None else "linear"
    out: list[str] = []
    constants_key = table.path("constants")
    if "reward" in params:
        given = "reward" in constants
        spec = constants["reward"] if given else params["reward"].default
        name = _reward_name(spec)
        where = join_key(constants_key, "reward") if given else table.key
        if name is not None and env_name is not None and name != env_name:
            said = f"reward {name!r}" + ("" if given else " (its default)")
            out.append(
                f"{table.file}: {where}: {kind} optimises the {said} but the environment's reward is "
                f"{env_name!r} (regret is measured with the environment's)"
            )
    elif env_name not in (None, "linear"):
        out.append(
            f"{table.file}: {table.path('kind')}: {kind} optimises a linear reward (the sum of the arms' means) "
            f"but the environment's reward is {env_name!r} (regret is measured with the environment's)"
        )
    support = constants.get("support")
    if "support" in params and isinstance(support, list) and support:
        where = join_key(constants_key, "support")
        env_support = getattr(env, "support", None)
        if env_support is None:
            out.append(
                f"{table.file}: {where}: the environment's outcomes are continuous, not on this support "
                "(an outcome off it stops the job)"
            )
        else:
            given = np.asarray([v for v in support if isinstance(v, int | float) and not isinstance(v, bool)], float)
            missing = [float(v) for v in np.asarray(env_support, float) if not np.isclose(given, v).any()]
            if missing:
                shown = ", ".join(f"{v:g}" for v in missing[:6]) + (", ..." if len(missing) > 6 else "")
                out.append(
                    f"{table.file}: {where}: misses the environment's outcome values {shown} "
                    "(a job stops at the first such outcome: list every value the environment can produce)"
                )
    return out
