"""Resolve the class a problem-file table names, read its constructor's parameters, and call it.

A constructor's ``ValueError`` / ``TypeError`` becomes a
:class:`~cmab_milp.experiments.problem.schema.ProblemError` naming the key it concerns.

>>> "Cardinality" in space_kinds()
True
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from typing import Any

from .registry import check_name, plugin_class, registered
from .schema import ProblemError, Table


# --------------------------------------------------------------------- kinds
def _family(package_name: str, base_path: str) -> dict[str, str]:
    """Concrete subclasses of ``base_path`` ("module:Class") in the modules of a package: name -> module.

    Every module of the package is looked at, so a family placed beside the
    others is usable by name before anyone exports it; a module that fails to
    import offers no kinds (its exported names then report the import error).
    """
    module_path, _, base_name = base_path.partition(":")
    base = getattr(importlib.import_module(module_path), base_name)
    package = importlib.import_module(package_name)
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(package.__path__):
        try:
            module = importlib.import_module(f"{package_name}.{info.name}")
        except Exception:  # someone's half-written module must not break the other kinds
            continue
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, base)
                and obj is not base
                and obj.__module__ == module.__name__
                and not name.startswith("_")
                and not inspect.isabstract(obj)
            ):
                found.setdefault(name, module.__name__)
    exported = [n for n in dir(package) if n[:1].isupper()]
    for name in exported:
        found.setdefault(name, package_name)
    found.pop(base_name, None)
    return found


def space_kinds() -> list[str]:
    """Names of the action-space families a problem file may use."""
    import cmab_milp
    from cmab_milp.spaces import ActionSpace, ConstrainedSpace

    out = []
    for name in dir(cmab_milp):
        obj = getattr(cmab_milp, name, None) if name in cmab_milp.__dict__ else None
        if inspect.isclass(obj) and issubclass(obj, ActionSpace) and obj not in (ActionSpace, ConstrainedSpace):
            out.append(name)
    return sorted(out)


def environment_kinds() -> dict[str, str]:
    """Environment classes a problem file may name: class name -> module."""
    found = _family("cmab_milp.environments", "cmab_milp.environments.base:Environment")
    found.pop("FeedbackStats", None)
    return found


def policy_kinds() -> dict[str, str]:
    """Policy classes a problem file may name: class name -> module."""
    return _family("cmab_milp.policies", "cmab_milp.policies.base:Policy")


#: Kinds spelled as in the papers where the class name cannot be (contract section 9): kind -> class name.
KIND_ALIASES = {"Epoch-ESCB": "EpochESCB", "AROQ-ESCB": "AROQESCB"}


def _resolve_class(table: Table, key: str, known: dict[str, str], what: str, family: str) -> type:
    """The class named by ``table[key]``: a library kind, a registered kind, or a ``--plugin`` module's class.

    Nothing named by the file is imported: ``"module:Class"`` resolves only when
    the module was loaded with :func:`~cmab_milp.experiments.problem.registry.load_plugins`.
    """
    name = table.string(key)
    if family == "policy" and name in KIND_ALIASES:
        name = KIND_ALIASES[name]
    if ":" in name:
        try:
            obj = plugin_class(name)
        except ValueError as exc:
            raise table.error(key, f"refused: {exc}") from None
        return obj
    try:
        check_name(name)
    except ValueError as exc:
        raise table.error(key, f"refused: {exc}") from None
    extra = registered(family)
    if name in extra:
        return extra[name]
    if name not in known:
        names = ", ".join(sorted({*known, *extra}))
        raise table.error(key, f"unknown {what} {name!r}; known: {names}")
    try:
        obj = getattr(importlib.import_module(known[name]), name)
    except ImportError as exc:
        raise table.error(key, f"{what} {name!r} is not available in this installation ({exc})") from None
    if not inspect.isclass(obj):
        raise table.error(key, f"{name!r} is not a class")
    return obj


# ------------------------------------------------------- constructor errors
def _key_of_message(message: str, keys: list[str]) -> str | None:
    """The parameter a constructor's error message is about: the key it starts with, else the first named."""
    first = None
    for key in keys:
        match = re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", message)
        if match is None:
            continue
        if match.start() == 0:
            return key
        if first is None or match.start() < first[0]:
            first = (match.start(), key)
    return first[1] if first else None


def _construct(table: Table, factory: Callable[..., Any], args: tuple, kwargs: dict, what: str) -> Any:
    """Call ``factory``; turn ``ValueError`` / ``TypeError`` into a :class:`ProblemError` at the right key."""
    try:
        return factory(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ProblemError):
            raise
        message = str(exc) or type(exc).__name__
        key = _key_of_message(message, [k for k in kwargs if isinstance(k, str)])
        if isinstance(exc, TypeError):
            message = f"{what} rejected its parameters: {message}"
        raise table.error(key, message) from None


def _parameters(cls: type) -> tuple[list[str], bool]:
    """Keyword-passable parameter names of ``cls.__init__`` and whether it takes ``**kwargs``."""
    signature = inspect.signature(cls)
    names, var_keyword = [], False
    for p in signature.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_keyword = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.append(p.name)
    return names, var_keyword
