"""The catalogue of kinds: every space, environment, policy and backend the library can name, registered once.

A kind is looked up here by its family and name: a problem file's ``kind =``,
a saved learner's space and policy, the conformance checks' lists. The
library's own kinds are the lines of :data:`BUILT_IN` (``"module:Class"``
paths, imported on first use, so this module imports nothing of the package
and every layer can read it); trusted code adds its own with
:func:`register` (one signature for every family). Backends are the oracle
registry's (:func:`cmab_milp.register_backend`): :func:`register` and
:func:`names` delegate to it. Nothing a file names is ever imported: a name
resolves only to what was registered.

Example
-------
>>> from cmab_milp import catalogue
>>> catalogue.lookup("space", "Cardinality").__name__
'Cardinality'
>>> "CUCB" in catalogue.names("policy"), "highs" in catalogue.names("backend")
(True, True)
>>> catalogue.name_of(catalogue.lookup("policy", "AROQ"))
'AROQ'
>>> catalogue.lookup("space", "os")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
cmab_milp.catalogue.UnknownKind: unknown space kind 'os'; known: Cardinality, ConflictSpace, ...
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

__all__ = [
    "BUILT_IN",
    "FAMILIES",
    "UnknownKind",
    "added",
    "check_name",
    "lookup",
    "name_of",
    "names",
    "register",
    "table",
    "unregister",
]

#: The families of kinds, and what :func:`register` takes for each.
FAMILIES: dict[str, str] = {
    "space": "an ActionSpace subclass",
    "environment": "an Environment class",
    "policy": "a Policy class",
    "backend": "an Oracle factory (space, **options) -> Oracle, or 'module:attr'",
}

_S, _E, _P = "cmab_milp.spaces.", "cmab_milp.environments.", "cmab_milp.policies."
#: The library's own kinds, one line each: family -> name -> ``"module:Class"`` (backends: the oracle registry).
BUILT_IN: dict[str, dict[str, str]] = {
    "space": {
        "Cardinality": _S + "sets:Cardinality",
        "PartitionMatroid": _S + "sets:PartitionMatroid",
        "ExplicitActions": _S + "sets:ExplicitActions",
        "GraphicMatroid": _S + "graphs:GraphicMatroid",
        "SpanningTrees": _S + "graphs:SpanningTrees",
        "Matchings": _S + "graphs:Matchings",
        "STPaths": _S + "paths:STPaths",
        "Intersection": _S + "base:Intersection",
        "ConstrainedSpace": _S + "rules:ConstrainedSpace",
        "ConflictSpace": _S + "rules:ConflictSpace",
    },
    "environment": {
        "UniformNoise": _E + "basic:UniformNoise",
        "BernoulliArms": _E + "basic:BernoulliArms",
        "GaussianNoise": _E + "basic:GaussianNoise",
        "BetaArms": _E + "continuous:BetaArms",
        "PaperGaussianNoise": _E + "correlated:PaperGaussianNoise",
        "CopulaNoise": _E + "correlated:CopulaNoise",
        "BernoulliCosts": _E + "costs:BernoulliCosts",
        "DiscreteArms": _E + "discrete:DiscreteArms",
    },
    "policy": {
        "CUCB": _P + "linear:CUCB",
        "AROQ": _P + "linear:AROQ",
        "SROQ": _P + "linear:SROQ",
        "OLSUCBC": _P + "covariance:OLSUCBC",
        "AROQCov": _P + "covariance:AROQCov",
        "SROQCov": _P + "covariance:SROQCov",
        "SDCB": _P + "general:SDCB",
        "AROQGR": _P + "general:AROQGR",
        "SROQGR": _P + "general:SROQGR",
        "CTS": _P + "thompson:CTS",
        "ESCB": _P + "escb:ESCB",
        "AROQESCB": _P + "escb:AROQESCB",
        "EpochESCB": _P + "escb:EpochESCB",
        "AESCB": _P + "aescb:AESCB",
    },
    "backend": {},  # the oracle registry's (cmab_milp.oracles.core.registry.BACKENDS)
}

_ORACLE_REGISTRY = "cmab_milp.oracles.core.registry"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_ADDED: dict[str, dict[str, Any]] = {family: {} for family in FAMILIES}


class UnknownKind(ValueError):
    """A name that is no registered kind of its family (the message lists the known ones)."""


def check_name(name: Any) -> str:
    """``name`` if it is a plain identifier not starting with ``_``; else ``ValueError``.

    >>> check_name("__class__")
    Traceback (most recent call last):
    ...
    ValueError: '__class__' is not a plain name (letters, digits and _, not starting with _)
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{name!r} is not a plain name (letters, digits and _, not starting with _)")
    return name


def _family(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return family


def register(family: str, name: str, obj: Any) -> None:
    """Make ``obj`` the kind ``name`` of ``family`` (replacing one of that name); trusted code only.

    A space, environment or policy kind is a class; a backend is what
    :func:`cmab_milp.register_backend` takes (a factory or ``"module:attr"``),
    handed to the oracle registry.

    >>> class Mine: ...
    >>> register("environment", "Mine", Mine)
    >>> lookup("environment", "Mine") is Mine
    True
    >>> unregister("environment", "Mine")
    """
    _family(family)
    check_name(name)
    if family == "backend":
        importlib.import_module(_ORACLE_REGISTRY).register_backend(name, obj)
        return
    if not inspect.isclass(obj):
        raise ValueError(f"a {family} kind must be {FAMILIES[family]}, got {type(obj).__name__}")
    _ADDED[family][name] = obj


def unregister(family: str, name: str) -> None:
    """Forget a kind added with :func:`register` (the library's own stay)."""
    if _family(family) == "backend":
        importlib.import_module(_ORACLE_REGISTRY).BACKENDS.pop(name, None)
    _ADDED[family].pop(name, None)


def names(family: str) -> list[str]:
    """Every name of ``family``: the library's own (in :data:`BUILT_IN` order, backends in registry order), then
    those added by :func:`register`."""
    if _family(family) == "backend":
        return list(importlib.import_module(_ORACLE_REGISTRY).BACKENDS)
    return list(dict.fromkeys([*BUILT_IN[family], *_ADDED[family]]))


def added(family: str) -> dict[str, Any]:
    """The kinds of ``family`` added by :func:`register` (name -> class), a copy."""
    return dict(_ADDED[_family(family)])


def lookup(family: str, name: str) -> Any:
    """The class (a backend: its registry entry) registered as ``name`` in ``family``.

    Raises :class:`UnknownKind` for a name that is not registered; ``ImportError`` when a library kind's
    module cannot be imported here (an optional dependency missing).
    """
    if _family(family) == "backend":
        entry = importlib.import_module(_ORACLE_REGISTRY).BACKENDS.get(name)
        if entry is None:
            raise UnknownKind(f"unknown backend {name!r}; known: {', '.join(names(family))}")
        return entry
    if isinstance(name, str) and name in _ADDED[family]:
        return _ADDED[family][name]
    path = BUILT_IN[family].get(name) if isinstance(name, str) else None
    if path is None:
        raise UnknownKind(f"unknown {family} kind {name!r:.60}; known: {', '.join(sorted(names(family)))}")
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def table(family: str) -> dict[str, str]:
    """``name -> "module:Class"`` of the library's own kinds of ``family``, a copy."""
    return dict(BUILT_IN[_family(family)])


def name_of(obj: Any, family: str | None = None) -> str | None:
    """The name ``obj``'s class (or ``obj``, a class) is registered under, or None (a subclass is not its parent).

    Only families whose modules are already imported are searched when ``family`` is None.
    """
    cls = obj if inspect.isclass(obj) else type(obj)
    for fam in [family] if family is not None else [f for f in FAMILIES if f != "backend"]:
        for name, added_cls in _ADDED[_family(fam)].items():
            if added_cls is cls:
                return name
        for name, path in BUILT_IN[fam].items():
            module, _, attr = path.partition(":")
            if module == cls.__module__ and attr == cls.__qualname__:
                return name
    return None
