"""Build action spaces, graphs, environments and policies from problem-file tables.

Kinds are resolved by name, never through an if/elif chain: a space kind is any
:class:`~cmab_milp.spaces.ActionSpace` class exported by ``cmab_milp``; an
environment or policy kind is any class exported by ``cmab_milp.environments`` /
``cmab_milp.policies`` (or ``"package.module:Class"`` for your own). Keys of a
kind's table are its constructor's parameters, so a new family needs no change
here. A constructor's ``ValueError`` is re-raised as a
:class:`~cmab_milp.experiments.schema.ProblemError` naming the key it concerns.

Example
-------
>>> from cmab_milp.experiments.schema import Table
>>> space = build_space(Table({"kind": "Cardinality", "d": 5, "m": 2}, "space", "demo.toml"))
>>> space.d, space.m
(5, 2)
>>> build_space(Table({"kind": "Cardinality", "d": 3, "m": 4}, "space", "demo.toml"))
Traceback (most recent call last):
...
cmab_milp.experiments.schema.ProblemError: demo.toml: space.m: m must be <= d, got m=4 > d=3
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from .schema import ProblemError, Table, check_integer, check_number, describe, join_key

__all__ = [
    "DRAWS",
    "build_environment",
    "build_graph",
    "build_policy",
    "build_space",
    "environment_kinds",
    "policy_kinds",
    "resolve_parameter",
    "space_kinds",
]


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


def _resolve_class(table: Table, key: str, known: dict[str, str], what: str) -> type:
    """The class named by ``table[key]``: a known name or ``"package.module:Class"``."""
    name = table.string(key)
    if ":" in name:
        module_path, _, attr = name.partition(":")
        try:
            obj = getattr(importlib.import_module(module_path), attr)
        except (ImportError, AttributeError) as exc:
            raise table.error(key, f"cannot import {what} {name!r}: {exc}") from None
    else:
        if name not in known:
            raise table.error(key, f"unknown {what} {name!r}; known: {', '.join(sorted(known))}")
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


# -------------------------------------------------------------------- graphs
def _node(value: Any, key: str, file: str) -> Any:
    """A node label: an integer, a string, or an array (a tuple label such as a grid cell)."""
    if isinstance(value, list):
        return tuple(_node(v, join_key(key, k), file) for k, v in enumerate(value))
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ProblemError(file, key, f"a node is an integer, a string or an array, got {describe(value)}")
    return value


#: Modules whose public functions may be named as ``space.graph.generator``.
GENERATOR_MODULES = (nx.generators, nx.algorithms.bipartite.generators)


def _generator(name: str) -> Any:
    """The networkx graph generator called ``name`` (``nx.generators`` or the bipartite ones), or None."""
    if name.startswith("_"):
        return None
    for module in GENERATOR_MODULES:
        func = getattr(module, name, None)
        if callable(func):
            return func
    return None


def build_graph(table: Table) -> tuple[nx.Graph, dict[Any, Any]]:
    """A networkx graph from ``generator`` (+ ``args``, ``kwargs``) or ``edges``.

    Returns the graph and the map from original node labels to the labels in
    the graph (the identity unless ``relabel``). ``directed = true`` orients each
    edge as written (edge lists) or as networkx lists it (generators).

    >>> g, labels = build_graph(Table({"generator": "grid_2d_graph", "args": [2, 2]}, "space.graph", "x.toml"))
    >>> sorted(g.edges()), labels[(1, 1)]
    ([(0, 1), (0, 2), (1, 3), (2, 3)], 3)
    """
    file = table.file
    has_gen, has_edges = "generator" in table, "edges" in table
    if has_gen == has_edges:
        raise table.error(None, "give exactly one of 'generator' (a networkx generator name) or 'edges'")
    directed = table.boolean("directed", False)
    if has_gen:
        name = table.string("generator")
        func = _generator(name)
        if func is None:
            raise table.error("generator", f"unknown networkx generator {name!r} (e.g. grid_2d_graph, complete_graph)")
        args = table.array("args", [])
        kwargs_table = table.table("kwargs", None)
        kwargs = {} if kwargs_table is None else dict(kwargs_table.data)
        try:
            graph = func(*args, **kwargs)
        except Exception as exc:  # a generator's own complaint, e.g. a negative size
            raise table.error("args", f"networkx.{name}{tuple(args)} failed: {exc}") from None
        if not isinstance(graph, nx.Graph):
            raise table.error("generator", f"networkx.{name} did not return a graph")
        relabel = table.boolean("relabel", True)
        edges = list(graph.edges())
        nodes = list(graph.nodes())
    else:
        raw_edges = table.array("edges")
        edges = []
        for k, edge in enumerate(raw_edges):
            key = join_key(table.path("edges"), k)
            if not isinstance(edge, list) or len(edge) != 2:
                raise ProblemError(file, key, f"an edge is a pair [u, v], got {describe(edge)}")
            edges.append((_node(edge[0], join_key(key, 0), file), _node(edge[1], join_key(key, 1), file)))
        relabel = table.boolean("relabel", False)
        nodes = list(dict.fromkeys(v for e in edges for v in e))
    table.finish()
    labels = {v: k for k, v in enumerate(nodes)} if relabel else {v: v for v in nodes}
    out = nx.DiGraph() if directed else nx.Graph()
    out.add_nodes_from(labels[v] for v in nodes)
    out.add_edges_from((labels[u], labels[v]) for u, v in edges)
    return out, labels


# ---------------------------------------------------------------------- spaces
_INT_PARAMS = {"d", "m"}
_BOOL_PARAMS = {"exact", "perfect"}
_NODE_PARAMS = {"source", "target"}
_SENSES = ("<=", ">=", "==")


def _int_list(value: Any, key: str, file: str) -> list[int]:
    if not isinstance(value, list):
        raise ProblemError(file, key, f"expected an array of integers, got {describe(value)}")
    return [check_integer(v, join_key(key, k), file) for k, v in enumerate(value)]


def _int_matrix(value: Any, key: str, file: str) -> list[list[int]]:
    if not isinstance(value, list):
        raise ProblemError(file, key, f"expected an array of arrays, got {describe(value)}")
    return [_int_list(v, join_key(key, k), file) for k, v in enumerate(value)]


def _space_parameter(table: Table, name: str, labels: dict | None) -> Any:
    """Read and convert one constructor parameter of a space family."""
    file, key = table.file, table.path(name)
    if name in _INT_PARAMS:
        return table.integer(name, minimum=1)
    if name in _BOOL_PARAMS:
        return table.boolean(name)
    if name == "capacities":
        return _int_list(table.raw(name), key, file)
    if name in ("blocks", "actions"):
        return _int_matrix(table.raw(name), key, file)
    if name in _NODE_PARAMS:
        node = _node(table.raw(name), key, file)
        if labels is not None and isinstance(node, tuple):
            if node not in labels:
                raise ProblemError(file, key, f"node {list(node)} is not in the graph")
            return labels[node]
        return node
    return table.raw(name)


def _apply_constraint(space: Any, table: Table) -> Any:
    """``space.with_constraint`` from ``coeffs`` (length d) or ``arms`` (+ optional ``weights``)."""
    file = table.file
    if ("coeffs" in table) == ("arms" in table):
        raise table.error(None, "give exactly one of 'coeffs' (one number per arm) or 'arms' (arm indices)")
    if "coeffs" in table:
        coeffs = [check_number(v, join_key(table.path("coeffs"), k), file) for k, v in enumerate(table.array("coeffs"))]
        if len(coeffs) != space.d:
            raise table.error("coeffs", f"needs one number per arm: d={space.d}, got {len(coeffs)}")
    else:
        arms = _int_list(table.raw("arms"), table.path("arms"), file)
        weights = table.array("weights", [1.0] * len(arms))
        weights = [check_number(v, join_key(table.path("weights"), k), file) for k, v in enumerate(weights)]
        if len(weights) != len(arms):
            raise table.error("weights", f"needs one weight per listed arm ({len(arms)}), got {len(weights)}")
        coeffs = [0.0] * space.d
        for k, (i, w) in enumerate(zip(arms, weights, strict=True)):
            if not 0 <= i < space.d:
                raise ProblemError(file, join_key(table.path("arms"), k), f"arm {i} is out of range for d={space.d}")
            coeffs[i] += w
    sense = table.string("sense", choices=_SENSES)
    rhs = table.number("rhs")
    table.finish()
    return _construct(table, space.with_constraint, (coeffs, sense, rhs), {}, "with_constraint")


def build_space(table: Table) -> Any:
    """An action space from a ``[space]`` table (see :mod:`cmab_milp.experiments.problem`)."""
    import cmab_milp

    kinds = space_kinds()
    kind = table.string("kind")
    if kind not in kinds:
        raise table.error("kind", f"unknown space kind {kind!r}; known: {', '.join(kinds)}")
    cls = getattr(cmab_milp, kind)
    if kind == "Intersection":
        parts = table.tables("parts")
        if not parts:
            raise table.error("parts", "an Intersection needs at least one part")
        spaces = [build_space(part) for part in parts]
        constraints = table.tables("constraints", [])
        table.finish()
        space = _construct(table, cls, tuple(spaces), {}, kind)
        for c in constraints:
            space = _apply_constraint(space, c)
        return space
    names, _ = _parameters(cls)
    kwargs: dict[str, Any] = {}
    labels = None
    if "graph" in names:
        graph, labels = build_graph(table.table("graph"))
        kwargs["graph"] = graph
    for name in names:
        if name == "graph":
            continue
        param = inspect.signature(cls).parameters[name]
        if name in table or param.default is inspect.Parameter.empty:
            kwargs[name] = _space_parameter(table, name, labels)
    constraints = table.tables("constraints", [])
    table.finish()
    space = _construct(table, cls, (), kwargs, kind)
    for c in constraints:
        space = _apply_constraint(space, c)
    return space


# ------------------------------------------------------------------- draws
def _draw_uniform(table: Table, d: int) -> np.ndarray:
    low, high = table.number("low", 0.0), table.number("high", 1.0)
    if not low < high:
        raise table.error("high", f"needs low < high, got low={low}, high={high}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    return np.random.default_rng(seed).uniform(low, high, size=size)


#: Random parameter draws ``{ draw = NAME, ..., seed = S }``: name -> ``f(table, d) -> array``.
#: Each draw reads its own keys from ``table`` (and calls ``table.finish()``).
DRAWS: dict[str, Callable[[Table, int], np.ndarray]] = {"uniform": _draw_uniform}


def resolve_parameter(value: Any, key: str, file: str, d: int) -> Any:
    """A parameter value with every ``{ draw = ... }`` table replaced by its drawn values (a list).

    >>> resolve_parameter({"draw": "uniform", "seed": 7, "size": 2}, "environment.means", "x.toml", 5)
    [0.625095466604667, 0.8972138009695755]
    """
    if isinstance(value, dict) and "draw" in value:
        table = Table(value, key, file)
        name = table.string("draw", choices=sorted(DRAWS))
        return DRAWS[name](table, d).tolist()
    return value


# -------------------------------------------------------------- environments
def build_environment(table: Table, space: Any) -> tuple[Any, dict[str, Any]]:
    """An environment from ``[environment]``: ``kind`` plus constructor parameters.

    Returns the environment and the resolved table (draws replaced by values),
    which rebuilds the same environment without drawing again.
    """
    cls = _resolve_class(table, "kind", environment_kinds(), "environment kind")
    names, var_keyword = _parameters(cls)
    resolved: dict[str, Any] = {"kind": table.data["kind"]}
    for key, value in table.data.items():
        if key == "kind":
            continue
        if key not in names and not var_keyword:
            raise table.error(key, f"unknown parameter of {cls.__name__} (it takes: {', '.join(names)})")
        resolved[key] = resolve_parameter(value, table.path(key), table.file, space.d)
        table.used.add(key)
    table.finish()
    means = resolved.get("means")
    if isinstance(means, list) and len(means) != space.d:
        raise table.error("means", f"needs one mean per arm: the space has d={space.d}, got {len(means)}")
    kwargs = {k: v for k, v in resolved.items() if k != "kind"}
    env = _construct(table, cls, (), kwargs, cls.__name__)
    env_d = getattr(env, "d", space.d)
    if env_d != space.d:
        raise table.error(None, f"{cls.__name__} has d={env_d} arms but the space has d={space.d}")
    return env, resolved


# ------------------------------------------------------------------ policies
def build_policy(table: Table, kind: str, space: Any, horizon: int, oracle: str, constants: dict[str, Any]) -> Any:
    """``Policy(space, horizon, oracle=oracle, **constants)`` for the policy kind named ``kind``.

    ``table`` is the ``[[policies]]`` entry, used to name keys in errors.
    """
    cls = _resolve_class(Table({"kind": kind}, table.key, table.file), "kind", policy_kinds(), "policy kind")
    constants_table = Table(constants, table.path("constants"), table.file)
    try:
        return cls(space, horizon, oracle=oracle, **constants)
    except TypeError as exc:
        raise constants_table.error(None, f"{cls.__name__} rejected its constants: {exc}") from None
    except ValueError as exc:
        message = str(exc)
        key = _key_of_message(message, list(constants))
        if key is not None:
            raise constants_table.error(key, message) from None
        if _key_of_message(message, ["oracle", "backend"]) is not None:
            raise table.error("oracle", message) from None
        raise table.error(None, message) from None
