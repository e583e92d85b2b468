"""Resolve the class a problem-file table names, read its constructor's parameters, and build it.

Kinds come from the :mod:`~cmab_milp.catalogue` (the library's own and those
registered by trusted code), or a ``--plugin`` module's ``"MODULE:Class"``. A
constructor's :class:`~cmab_milp.described.ParameterError` becomes a
:class:`~cmab_milp.experiments.problem.schema.ProblemError` at the key of the
parameter it names (``.param``); any other ``ValueError`` at the table's key.

>>> "Cardinality" in space_kinds()
True
>>> import cmab_milp as cm
>>> from cmab_milp.experiments.problem.schema import Table
>>> build_kind(Table({"kind": "Cardinality", "d": 3, "m": 4}, "space", "f.toml"), cm.Cardinality, {"d": 3, "m": 4}, "")
Traceback (most recent call last):
...
cmab_milp.experiments.problem.schema.ProblemError: f.toml: space.m: m must be <= d, got m=4 > d=3
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ... import catalogue
from ...described import ParameterError, constructor_parameters
from .registry import check_name, plugin_class
from .schema import ProblemError, Table


# --------------------------------------------------------------------- kinds
def _library(family: str) -> dict[str, str]:
    """The library's own kinds of ``family`` in the catalogue: class name -> module."""
    return {name: path.partition(":")[0] for name, path in catalogue.table(family).items()}


def space_kinds() -> list[str]:
    """Names of the action-space families a problem file may use (side rules are tables of their own)."""
    from ...spaces.rules import RuleSpace

    out = []
    for name in catalogue.names("space"):
        try:
            cls = catalogue.lookup("space", name)
        except ImportError:
            continue
        if not issubclass(cls, RuleSpace):
            out.append(name)
    return sorted(out)


def environment_kinds() -> dict[str, str]:
    """Environment classes a problem file may name (the catalogue's): class name -> module."""
    return _library("environment")


def policy_kinds() -> dict[str, str]:
    """Policy classes a problem file may name (the catalogue's): class name -> module."""
    return _library("policy")


#: Kinds spelled as in the papers where the class name cannot be (contract section 9): kind -> class name.
KIND_ALIASES = {"Epoch-ESCB": "EpochESCB", "AROQ-ESCB": "AROQESCB"}


def _resolve_class(table: Table, key: str, family: str) -> type:
    """The class named by ``table[key]``: a kind of the catalogue, or a ``--plugin`` module's class.

    Nothing named by the file is imported: ``"module:Class"`` resolves only when
    the module was loaded with :func:`~cmab_milp.experiments.problem.registry.load_plugins`.
    """
    what = f"{family} kind"
    name = table.string(key)
    if family == "policy" and name in KIND_ALIASES:
        name = KIND_ALIASES[name]
    if ":" in name:
        try:
            return plugin_class(name)
        except ValueError as exc:
            raise table.error(key, f"refused: {exc}") from None
    try:
        check_name(name)
    except ValueError as exc:
        raise table.error(key, f"refused: {exc}") from None
    known = space_kinds() if family == "space" else catalogue.names(family)
    if name not in known:
        raise table.error(key, f"unknown {what} {name!r}; known: {', '.join(sorted(known))}")
    try:
        return catalogue.lookup(family, name)
    except ImportError as exc:
        raise table.error(key, f"{what} {name!r} is not available in this installation ({exc})") from None


# ------------------------------------------------------- constructor errors
def _refused(table: Table, exc: ValueError | TypeError, keys: Any, what: str) -> ProblemError:
    """The :class:`ProblemError` for a constructor's refusal: at the key its ``ParameterError`` names."""
    message = str(exc) or type(exc).__name__
    param = exc.param if isinstance(exc, ParameterError) else None
    if isinstance(exc, TypeError):
        message = f"{what} rejected its parameters: {message}"
    return table.error(param if param in keys else None, message)


def build_kind(table: Table, cls: type, params: dict[str, Any], what: str, keys: Any = None) -> Any:
    """``cls.from_params(params)``; a refused value becomes a :class:`ProblemError` at its key.

    ``keys``: the parameters written as keys of ``table`` (default: all of ``params``).
    """
    try:
        return cls.from_params(params) if hasattr(cls, "from_params") else cls(**params)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ProblemError):
            raise
        raise _refused(table, exc, params if keys is None else keys, what) from None


def _construct(table: Table, factory: Callable[..., Any], args: tuple, kwargs: dict, what: str) -> Any:
    """Call ``factory`` (a side rule's method); turn ``ValueError`` / ``TypeError`` into a :class:`ProblemError`."""
    try:
        return factory(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ProblemError):
            raise
        raise _refused(table, exc, kwargs, what) from None


def _parameters(cls: type) -> tuple[list[str], bool]:
    """Keyword-passable parameter names of ``cls``'s constructor and whether it takes ``**kwargs``."""
    names, var_keyword = [], False
    for p in constructor_parameters(cls):
        if p.kind is p.VAR_KEYWORD:
            var_keyword = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.append(p.name)
    return names, var_keyword


def _has_default(cls: type, name: str) -> bool:
    return inspect.signature(cls).parameters[name].default is not inspect.Parameter.empty
