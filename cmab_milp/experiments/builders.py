"""Build action spaces, graphs, environments and policies from problem-file tables.

Kinds are resolved by name, never through an if/elif chain: a space kind is any
:class:`~cmab_milp.spaces.ActionSpace` class exported by ``cmab_milp``; an
environment or policy kind is any class exported by ``cmab_milp.environments`` /
``cmab_milp.policies``, or one registered by trusted code
(:func:`~cmab_milp.experiments.registry.register_kind`, ``--plugin``). Graph
generators come from :data:`GENERATORS` and draws from :data:`DRAWS`; nothing a
file names is ever imported. Sizes are checked against
:class:`~cmab_milp.experiments.limits.Limits` before anything is built. Keys of a
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from ..spaces.base import EmptySpaceError
from .limits import Limits
from .registry import check_name, plugin_class, registered
from .schema import ProblemError, Table, check_integer, check_number, describe, join_key

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


def _resolve_class(table: Table, key: str, known: dict[str, str], what: str, family: str) -> type:
    """The class named by ``table[key]``: a library kind, a registered kind, or a ``--plugin`` module's class.

    Nothing named by the file is imported: ``"module:Class"`` resolves only when
    the module was loaded with :func:`~cmab_milp.experiments.registry.load_plugins`.
    """
    name = table.string(key)
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


# -------------------------------------------------------------------- graphs
def _node(value: Any, key: str, file: str) -> Any:
    """A node label: an integer, a string, or an array (a tuple label such as a grid cell)."""
    if isinstance(value, list):
        return tuple(_node(v, join_key(key, k), file) for k, v in enumerate(value))
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ProblemError(file, key, f"a node is an integer, a string or an array, got {describe(value)}")
    return value


@dataclass(frozen=True)
class GraphGenerator:
    """A graph generator a problem file may name, with a size bound computed from its arguments alone.

    ``params`` are the argument names, in positional order, each with a kind:
    ``"int"`` (a count >= 0), ``"ints"`` (an array of counts), ``"prob"`` (a number
    in [0, 1]), ``"bool"`` or ``"seed"`` (an integer >= 0). ``size(values) -> (nodes,
    edges)`` bounds the graph from the checked arguments *before* it is built;
    ``variadic`` means every positional argument is an ``"int"`` (as
    ``complete_multipartite_graph(*sizes)``).
    """

    function: Callable[..., nx.Graph]
    params: tuple[tuple[str, str], ...]
    size: Callable[[dict[str, Any]], tuple[int, int]]
    variadic: bool = False


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def _tree_nodes(v: dict[str, Any]) -> int:
    r, h, total, level = v["r"], v["h"], 0, 1
    for _ in range(h + 1):
        total += level
        level *= r
        if total > 10**12:
            break
    return total


def _gnp_edges(n: int, p: float) -> int:
    mean = p * _pairs(n)
    return min(_pairs(n), int(mean + 6 * mean**0.5 + 6))


def _grid_size(v: dict[str, Any]) -> tuple[int, int]:
    nodes = int(np.prod([max(x, 1) for x in v["dim"]], dtype=object)) if v["dim"] else 0
    return nodes, len(v["dim"]) * nodes


_N = (("n", "int"),)
_NAMED_GRAPHS = {
    "petersen_graph": (10, 15),
    "karate_club_graph": (34, 78),
    "dodecahedral_graph": (20, 30),
    "cubical_graph": (8, 12),
    "octahedral_graph": (6, 12),
    "icosahedral_graph": (12, 30),
    "tetrahedral_graph": (4, 6),
    "heawood_graph": (14, 21),
    "frucht_graph": (12, 18),
    "tutte_graph": (46, 69),
    "florentine_families_graph": (15, 20),
    "les_miserables_graph": (77, 254),
}

#: Graph generators a problem file may name as ``space.graph.generator`` (add with :func:`register_generator`).
GENERATORS: dict[str, GraphGenerator] = {
    "complete_graph": GraphGenerator(nx.complete_graph, _N, lambda v: (v["n"], _pairs(v["n"]))),
    "cycle_graph": GraphGenerator(nx.cycle_graph, _N, lambda v: (v["n"], v["n"])),
    "path_graph": GraphGenerator(nx.path_graph, _N, lambda v: (v["n"], v["n"])),
    "star_graph": GraphGenerator(nx.star_graph, _N, lambda v: (v["n"] + 1, v["n"])),
    "wheel_graph": GraphGenerator(nx.wheel_graph, _N, lambda v: (v["n"], 2 * v["n"])),
    "ladder_graph": GraphGenerator(nx.ladder_graph, _N, lambda v: (2 * v["n"], 3 * v["n"])),
    "circular_ladder_graph": GraphGenerator(nx.circular_ladder_graph, _N, lambda v: (2 * v["n"], 3 * v["n"])),
    "hypercube_graph": GraphGenerator(
        nx.hypercube_graph, _N, lambda v: (2 ** min(v["n"], 64), min(v["n"], 64) * 2 ** min(v["n"], 64))
    ),
    "grid_2d_graph": GraphGenerator(
        nx.grid_2d_graph,
        (("m", "int"), ("n", "int"), ("periodic", "bool")),
        lambda v: (v["m"] * v["n"], 2 * v["m"] * v["n"]),
    ),
    "grid_graph": GraphGenerator(nx.grid_graph, (("dim", "ints"), ("periodic", "bool")), _grid_size),
    "complete_bipartite_graph": GraphGenerator(
        nx.complete_bipartite_graph, (("n1", "int"), ("n2", "int")), lambda v: (v["n1"] + v["n2"], v["n1"] * v["n2"])
    ),
    "complete_multipartite_graph": GraphGenerator(
        nx.complete_multipartite_graph,
        (("subset_sizes", "int"),),
        lambda v: (sum(v["subset_sizes"]), _pairs(sum(v["subset_sizes"]))),
        variadic=True,
    ),
    "balanced_tree": GraphGenerator(
        nx.balanced_tree, (("r", "int"), ("h", "int")), lambda v: (_tree_nodes(v), _tree_nodes(v))
    ),
    "barbell_graph": GraphGenerator(
        nx.barbell_graph,
        (("m1", "int"), ("m2", "int")),
        lambda v: (2 * v["m1"] + v["m2"], 2 * _pairs(v["m1"]) + v["m2"] + 1),
    ),
    "lollipop_graph": GraphGenerator(
        nx.lollipop_graph, (("m", "int"), ("n", "int")), lambda v: (v["m"] + v["n"], _pairs(v["m"]) + v["n"])
    ),
    "turan_graph": GraphGenerator(nx.turan_graph, (("n", "int"), ("r", "int")), lambda v: (v["n"], _pairs(v["n"]))),
    "gnm_random_graph": GraphGenerator(
        nx.gnm_random_graph,
        (("n", "int"), ("m", "int"), ("seed", "seed"), ("directed", "bool")),
        lambda v: (v["n"], min(v["m"], 2 * _pairs(v["n"]))),
    ),
    "fast_gnp_random_graph": GraphGenerator(
        nx.fast_gnp_random_graph,
        (("n", "int"), ("p", "prob"), ("seed", "seed"), ("directed", "bool")),
        lambda v: (v["n"], 2 * _gnp_edges(v["n"], v["p"])),
    ),
    "random_regular_graph": GraphGenerator(
        nx.random_regular_graph, (("d", "int"), ("n", "int"), ("seed", "seed")), lambda v: (v["n"], v["n"] * v["d"])
    ),
    "barabasi_albert_graph": GraphGenerator(
        nx.barabasi_albert_graph, (("n", "int"), ("m", "int"), ("seed", "seed")), lambda v: (v["n"], v["n"] * v["m"])
    ),
    "watts_strogatz_graph": GraphGenerator(
        nx.watts_strogatz_graph,
        (("n", "int"), ("k", "int"), ("p", "prob"), ("seed", "seed")),
        lambda v: (v["n"], v["n"] * v["k"]),
    ),
    "connected_watts_strogatz_graph": GraphGenerator(
        nx.connected_watts_strogatz_graph,
        (("n", "int"), ("k", "int"), ("p", "prob"), ("tries", "int"), ("seed", "seed")),
        lambda v: (v["n"], v["n"] * v["k"]),
    ),
    **{name: GraphGenerator(getattr(nx, name), (), lambda v, size=size: size) for name, size in _NAMED_GRAPHS.items()},
}


def register_generator(
    name: str,
    function: Callable[..., nx.Graph],
    params: Sequence[tuple[str, str]],
    size: Callable[[dict[str, Any]], tuple[int, int]],
    variadic: bool = False,
) -> None:
    """Make ``space.graph.generator = name`` call ``function`` (see :class:`GraphGenerator`).

    ``size(values)`` must bound ``(nodes, edges)`` from the arguments alone, so a
    graph too large for the limits is refused before it is built.
    """
    check_name(name)
    kinds = {"int", "ints", "prob", "bool", "seed"}
    for param, kind in params:
        check_name(param)
        if kind not in kinds:
            raise ValueError(f"parameter {param!r}: kind must be one of {sorted(kinds)}, got {kind!r}")
    if not callable(function) or not callable(size):
        raise ValueError("function and size must be callables")
    GENERATORS[name] = GraphGenerator(function, tuple(params), size, variadic)


def _generator_value(value: Any, kind: str, key: str, file: str) -> Any:
    if kind in ("int", "seed"):
        return check_integer(value, key, file, minimum=0)
    if kind == "ints":
        return _int_list(value, key, file, minimum=0)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProblemError(file, key, f"expected true or false, got {describe(value)}")
        return value
    x = check_number(value, key, file)
    if not 0 <= x <= 1:
        raise ProblemError(file, key, f"a probability lies in [0, 1], got {x}")
    return x


def _generator_arguments(table: Table, name: str, spec: GraphGenerator) -> tuple[list[Any], dict[str, Any]]:
    """The checked positional and keyword arguments of ``spec`` from ``args`` / ``kwargs``."""
    file = table.file
    args = table.array("args", [])
    kwargs_table = table.table("kwargs", None)
    kwargs = {} if kwargs_table is None else dict(kwargs_table.data)
    names = [p for p, _ in spec.params]
    kinds = dict(spec.params)
    if spec.variadic:
        if kwargs:
            raise table.error("kwargs", f"{name} takes positional arguments only")
        values = [_generator_value(a, "int", join_key(table.path("args"), k), file) for k, a in enumerate(args)]
        return values, {}
    if len(args) > len(names):
        takes = ", ".join(names) or "no arguments"
        raise table.error("args", f"{name} takes at most {len(names)} positional arguments ({takes}), got {len(args)}")
    checked_args = [
        _generator_value(a, kinds[p], join_key(table.path("args"), k), file)
        for k, (a, p) in enumerate(zip(args, names, strict=False))
    ]
    checked_kwargs = {}
    for key, value in kwargs.items():
        where = join_key(table.path("kwargs"), key)
        if key not in kinds:
            takes = ", ".join(names) or "none"
            raise ProblemError(file, where, f"{name} takes no argument {key!r} (it takes: {takes})")
        if key in names[: len(args)]:
            raise ProblemError(file, where, "given twice (also in args)")
        checked_kwargs[key] = _generator_value(value, kinds[key], where, file)
    return checked_args, checked_kwargs


def _generate(table: Table, limits: Limits) -> nx.Graph:
    """Call the named generator after checking its arguments and its size bound against ``limits``."""
    name = table.string("generator")
    spec = GENERATORS.get(name) if isinstance(name, str) and name[:1].isalpha() else None
    if spec is None:
        try:
            check_name(name)
        except ValueError as exc:
            raise table.error("generator", f"refused: {exc}") from None
        known = ", ".join(sorted(GENERATORS))
        raise table.error("generator", f"unknown networkx generator {name!r}; known: {known}")
    args, kwargs = _generator_arguments(table, name, spec)
    names = [p for p, _ in spec.params]
    if spec.variadic:
        values = {names[0]: args}
    else:
        values = dict(zip(names, args, strict=False)) | kwargs
        missing = [p for p, kind in spec.params if p not in values and kind in ("int", "ints", "prob")]
        params = inspect.signature(spec.function).parameters
        missing = [p for p in missing if p not in params or params[p].default is inspect.Parameter.empty]
        if missing:
            raise table.error("args", f"{name} needs {', '.join(missing)}")
        for p, _ in spec.params:
            if p not in values:
                default = inspect.signature(spec.function).parameters.get(p)
                values[p] = None if default is None else default.default
    nodes, edges = spec.size(values)
    where, call = table.path("args"), f"{name}({', '.join(map(str, args))})"
    limits.check("graph_nodes", nodes, where, table.file, f"{call} has {nodes} nodes, which")
    limits.check("arms", edges, where, table.file, f"{call} may have {edges} edges (arms), which")
    try:
        graph = spec.function(*args, **kwargs)
    except Exception as exc:  # a generator's own complaint, e.g. a degree sequence that cannot exist
        raise table.error("args", f"networkx.{name}{tuple(args)} failed: {exc}") from None
    if not isinstance(graph, nx.Graph):
        raise table.error("generator", f"{name} did not return a graph")
    return graph


def build_graph(table: Table, limits: Limits | None = None) -> tuple[nx.Graph, dict[Any, Any]]:
    """A networkx graph from ``generator`` (+ ``args``, ``kwargs``) or ``edges``.

    Returns the graph and the map from original node labels to the labels in
    the graph (the identity unless ``relabel``). ``directed = true`` orients each
    edge as written (edge lists) or as networkx lists it (generators). A
    generator is one of :data:`GENERATORS`; its size is checked against
    ``limits`` before it runs.

    >>> g, labels = build_graph(Table({"generator": "grid_2d_graph", "args": [2, 2]}, "space.graph", "x.toml"))
    >>> sorted(g.edges())[:2], labels[(1, 1)]
    ([((0, 0), (0, 1)), ((0, 0), (1, 0))], (1, 1))
    >>> g, labels = build_graph(
    ...     Table({"generator": "grid_2d_graph", "args": [2, 2], "relabel": True}, "space.graph", "x.toml")
    ... )
    >>> sorted(g.edges()), labels[(1, 1)]
    ([(0, 1), (0, 2), (1, 3), (2, 3)], 3)
    """
    limits = Limits() if limits is None else limits
    file = table.file
    sources = [k for k in ("generator", "edges", "topohub") if k in table]
    if len(sources) != 1:
        raise table.error(
            None, "give exactly one of 'generator' (a networkx generator name), 'edges' or 'topohub' (a topology name)"
        )
    directed = table.boolean("directed", False)
    attributes: dict[tuple, dict] = {}
    if sources == ["topohub"]:
        graph = _topohub_graph(table, limits)
        relabel = table.boolean("relabel", False)
        edges = list(graph.edges())
        nodes = list(graph.nodes())
        attributes = {(u, v): data for u, v, data in graph.edges(data=True)}
    elif sources == ["generator"]:
        graph = _generate(table, limits)
        relabel = table.boolean("relabel", False)
        edges = list(graph.edges())
        nodes = list(graph.nodes())
    else:
        raw_edges = table.array("edges")
        limits.check("arms", len(raw_edges), table.path("edges"), file)
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
    out.add_edges_from((labels[u], labels[v], attributes.get((u, v), {})) for u, v in edges)
    return out, labels


def _topohub_graph(table: Table, limits: Limits) -> nx.Graph:
    """``topohub = "GROUP/NAME"``: a topology of topohub's catalogue, nodes named, edge attributes kept."""
    from ..topologies import load_topology

    name = table.string("topohub")
    try:
        graph = load_topology(name)
    except ImportError as exc:
        raise table.error("topohub", str(exc)) from None
    except ValueError as exc:
        raise table.error("topohub", str(exc)) from None
    where = table.path("topohub")
    limits.check(
        "graph_nodes", graph.number_of_nodes(), where, table.file, f"{name} has {graph.number_of_nodes()} nodes, which"
    )
    limits.check(
        "arms", graph.number_of_edges(), where, table.file, f"{name} has {graph.number_of_edges()} links (arms), which"
    )
    return graph


# ---------------------------------------------------------------------- spaces
_INT_PARAMS = {"d", "m"}
_BOOL_PARAMS = {"exact", "perfect"}
_NODE_PARAMS = {"source", "target"}
_SENSES = ("<=", ">=", "==")


def _int_list(value: Any, key: str, file: str, minimum: int | None = None) -> list[int]:
    if not isinstance(value, list):
        raise ProblemError(file, key, f"expected an array of integers, got {describe(value)}")
    return [check_integer(v, join_key(key, k), file, minimum=minimum) for k, v in enumerate(value)]


def _int_matrix(value: Any, key: str, file: str) -> list[list[int]]:
    if not isinstance(value, list):
        raise ProblemError(file, key, f"expected an array of arrays, got {describe(value)}")
    return [_int_list(v, join_key(key, k), file) for k, v in enumerate(value)]


def _labels(table: Table, limits: Limits) -> list[Any]:
    """``labels = [...]``: one label per arm, each a string, an integer (its own index) or an array (a tuple)."""
    raw = table.raw("labels")
    if not isinstance(raw, list):
        raise table.error("labels", f"expected an array with one label per arm, got {describe(raw)}")
    limits.check("arms", len(raw), table.path("labels"), table.file)
    out = []
    for k, label in enumerate(raw):
        key = join_key(table.path("labels"), k)
        if isinstance(label, float | dict):
            raise ProblemError(table.file, key, f"a label is a string, an integer or an array, got {describe(label)}")
        out.append(_node(label, key, table.file))
    return out


def _space_parameter(table: Table, name: str, labels: dict | None, limits: Limits) -> Any:
    """Read and convert one constructor parameter of a space family (sizes checked against ``limits``)."""
    file, key = table.file, table.path(name)
    if name in _INT_PARAMS:
        value = table.integer(name, minimum=1)
        if name == "d":
            limits.check("arms", value, key, file)
        return value
    if name in _BOOL_PARAMS:
        return table.boolean(name)
    if name == "capacities":
        value = table.raw(name)
        if isinstance(value, list):
            limits.check("arms", len(value), key, file)
        return _int_list(value, key, file)
    if name in ("blocks", "actions"):
        value = table.raw(name)
        if isinstance(value, list):
            limits.check("actions" if name == "actions" else "arms", len(value), key, file)
            width = max((len(row) for row in value if isinstance(row, list)), default=0)
            limits.check("arms", width, join_key(key, 0), file)
        return _int_matrix(value, key, file)
    if name == "labels":
        return _labels(table, limits)
    if name in _NODE_PARAMS:
        node = _node(table.raw(name), key, file)
        if labels is not None and isinstance(node, tuple):
            if node not in labels:
                raise ProblemError(file, key, f"node {list(node)} is not in the graph")
            return labels[node]
        return node
    return table.raw(name)


def _arm_error(exc: ValueError, key: str, file: str) -> ProblemError:
    """A space's arm-lookup ``ValueError`` (whose message starts with ``key``) as a :class:`ProblemError` at ``key``."""
    message = str(exc)
    if message.startswith(f"{key}: "):
        message = message[len(key) + 2 :]
    elif message.startswith(key):
        message = message[len(key) :].lstrip(": ")
    return ProblemError(file, key, message)


def _arm(space: Any, value: Any, key: str, file: str) -> int:
    """The index of the arm ``value`` names: an integer index, a string label or an edge ``[u, v]``."""
    if isinstance(value, float) or isinstance(value, dict):
        raise ProblemError(file, key, f"an arm is an integer index, a label or an edge [u, v], got {describe(value)}")
    try:
        return space.arm_index(value, key)
    except ValueError as exc:
        error = _arm_error(exc, key, file)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():  # a TOML table key is a string
            hint = f"; {value!r} is a string, not the index {int(value)}: give indices in an array"
            error = ProblemError(file, key, error.message + hint)
        raise error from None


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
    """``table[name]`` as one number per arm: an array of ``d`` numbers or a table ``{ "label" = x }``."""
    raw = table.raw(name)
    key, file = table.path(name), table.file
    if isinstance(raw, dict):
        for label, value in raw.items():
            _arm(space, label, join_key(key, label), file)
            check_number(value, join_key(key, label), file)
        try:
            return space.arm_vector(raw, default=0.0, what=key).tolist()
        except ValueError as exc:
            raise _arm_error(exc, key, file) from None
    if not isinstance(raw, list):
        raise table.error(name, f"expected {space.d} numbers or a table {{ label = number }}, got {describe(raw)}")
    values = _numbers(table, name)
    if len(values) != space.d:
        raise table.error(name, f"needs one number per arm: d={space.d}, got {len(values)}")
    return values


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
    sense = table.string("sense", choices=_SENSES)
    rhs = table.number("rhs")
    table.finish()
    return _construct(table, space.with_constraint, (coeffs, sense, rhs), {}, "with_constraint")


def _apply_budget(space: Any, table: Table) -> Any:
    """``space.with_budget``: ``costs`` (d numbers or {label = cost}, or one per ``arms``) and ``budget``."""
    if "arms" in table:
        costs = _listed_vector(table, space, "costs", None)
    else:
        costs = _arm_vector(table, space, "costs")
    budget = table.number("budget")
    table.finish()
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
    at_least = table.integer("at_least", None, minimum=0)
    at_most = table.integer("at_most", None, minimum=0)
    table.finish()
    if at_least is None and at_most is None:
        raise table.error(None, "give at_least, at_most or both")
    if at_least is not None and at_least > len(set(arms)):
        raise table.error("at_least", f"at least {at_least} of a group of {len(set(arms))} arms is impossible")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise table.error("at_most", f"at_least={at_least} exceeds at_most={at_most}")
    return _construct(table, space.with_group, (arms,), {"at_least": at_least, "at_most": at_most}, "with_group")


def _apply_conflicts(space: Any, table: Table) -> Any:
    """``space.with_conflicts`` from ``pairs = [[a, b], ...]`` (arms by index, label or edge)."""
    raw = table.raw("pairs")
    table.finish()
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
    """Apply the side rules in :data:`RULES` order; the first that leaves no action is refused at its key."""
    for name, tables in rules:
        for rule in tables:
            space = RULES[name](space, rule)
            word = name.removesuffix("s") if name != "conflicts" else "list of conflicts"
            _check_feasible(space, rule, f"no action of the space satisfies this {word} (with the rules before it)")
    return space


def _check_feasible(space: Any, table: Table, message: str) -> None:
    """Refuse, at ``table``'s key, a space without a feasible action (``space.m`` solves for it)."""
    try:
        space.m  # noqa: B018 -- computing m finds a feasible action or raises
    except EmptySpaceError as exc:
        raise table.error(None, f"{message}: {exc}") from None


def build_space(table: Table, limits: Limits | None = None) -> Any:
    """An action space from a ``[space]`` table (see :mod:`cmab_milp.experiments.problem`).

    Sizes are checked against ``limits`` (default :class:`~.limits.Limits`) before anything is built.
    """
    limits = Limits() if limits is None else limits
    cls = _resolve_class(table, "kind", dict.fromkeys(space_kinds(), "cmab_milp"), "space kind", "space")
    kind = cls.__name__
    if kind == "Intersection" and "parts" in table:
        parts = table.tables("parts")
        if not parts:
            raise table.error("parts", "an Intersection needs at least one part")
        spaces = [build_space(part, limits) for part in parts]
        rules = [(name, table.tables(name, [])) for name in RULES]
        labels_kw = {"labels": _labels(table, limits)} if "labels" in table else {}
        table.finish()
        space = _construct(table, cls, tuple(spaces), labels_kw, kind)
        _check_feasible(space, table, "the parts have no action in common")
    else:
        names, _ = _parameters(cls)
        kwargs: dict[str, Any] = {}
        labels = None
        if "graph" in names:
            graph, labels = build_graph(table.table("graph"), limits)
            kwargs["graph"] = graph
        for name in names:
            if name == "graph":
                continue
            param = inspect.signature(cls).parameters[name]
            if name in table or param.default is inspect.Parameter.empty:
                kwargs[name] = _space_parameter(table, name, labels, limits)
        rules = [(name, table.tables(name, [])) for name in RULES]
        table.finish()
        space = _construct(table, cls, (), kwargs, kind)
    limits.check("arms", int(space.d), table.key, table.file)
    return _apply_rules(space, rules)


# ------------------------------------------------------------------- draws
def _bounds(table: Table, low: float, high: float) -> tuple[float, float]:
    low, high = table.number("low", low), table.number("high", high)
    if not low < high:
        raise table.error("high", f"needs low < high, got low={low}, high={high}")
    if not high - low < np.finfo(float).max:
        raise table.error("high", f"high - low must be a finite number, got low={low}, high={high}")
    return low, high


def _draw_uniform(table: Table, d: int) -> np.ndarray:
    low, high = _bounds(table, 0.0, 1.0)
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    return np.random.default_rng(seed).uniform(low, high, size=size)


def _draw_integers(table: Table, d: int) -> np.ndarray:
    """Integers uniform in ``[low, high]`` (both included)."""
    low, high = table.integer("low", 0), table.integer("high")
    if not low <= high:
        raise table.error("high", f"needs low <= high, got low={low}, high={high}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    if high - low >= 2**63:
        raise table.error("high", "high - low must be below 2**63")
    return np.random.default_rng(seed).integers(low, high, size=size, endpoint=True)


def _draw_normal(table: Table, d: int) -> np.ndarray:
    """Gaussian values: ``mean`` (default 0) and ``std`` (> 0, default 1)."""
    mean, std = table.number("mean", 0.0), table.number("std", 1.0)
    if not std > 0:
        raise table.error("std", f"must be > 0, got {std}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    return np.random.default_rng(seed).normal(mean, std, size=size)


def _draw_dirichlet(table: Table, d: int) -> np.ndarray:
    """One probability vector per row (``size`` rows, default d): a probability table per arm."""
    alpha = [check_number(a, join_key(table.path("alpha"), k), table.file) for k, a in enumerate(table.array("alpha"))]
    if len(alpha) < 2 or len(alpha) > 10_000:
        raise table.error("alpha", f"needs between 2 and 10000 concentrations, got {len(alpha)}")
    for k, a in enumerate(alpha):
        if not a > 0:
            raise ProblemError(table.file, join_key(table.path("alpha"), k), f"must be > 0, got {a}")
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    if size * len(alpha) > 10**7:
        raise table.error("size", f"{size} rows x {len(alpha)} entries is too many values (more than 10^7)")
    return np.random.default_rng(seed).dirichlet(alpha, size=size)


def _draw_choice(table: Table, d: int) -> np.ndarray:
    """Values picked from ``values`` (numbers), with probabilities ``p`` (default uniform)."""
    values = [
        check_number(v, join_key(table.path("values"), k), table.file) for k, v in enumerate(table.array("values"))
    ]
    if not values:
        raise table.error("values", "needs at least one value")
    p = None
    if "p" in table:
        p = [check_number(v, join_key(table.path("p"), k), table.file) for k, v in enumerate(table.array("p"))]
        if len(p) != len(values) or min(p) < 0 or not np.isclose(sum(p), 1.0):
            raise table.error("p", f"needs {len(values)} probabilities >= 0 summing to 1, got {p}")
        p = np.asarray(p) / sum(p)
    replace = table.boolean("replace", True)
    seed = table.integer("seed", minimum=0)
    size = table.integer("size", d, minimum=1)
    table.finish()
    if not replace and size > len(values):
        raise table.error("size", f"cannot pick {size} of {len(values)} values without replacement")
    return np.random.default_rng(seed).choice(np.asarray(values), size=size, replace=replace, p=p)


#: Random parameter draws ``{ draw = NAME, ..., seed = S }``: name -> ``f(table, d) -> array``.
#: Each draw reads its own keys from ``table`` (and calls ``table.finish()``); its ``size``
#: (default d) is checked against the limits before it is called.
DRAWS: dict[str, Callable[[Table, int], np.ndarray]] = {
    "uniform": _draw_uniform,
    "integers": _draw_integers,
    "normal": _draw_normal,
    "dirichlet": _draw_dirichlet,
    "choice": _draw_choice,
}


def register_draw(name: str, draw: Callable[[Table, int], np.ndarray]) -> None:
    """Make ``{ draw = name, ... }`` call ``draw(table, d)`` (it reads its keys from ``table``)."""
    check_name(name)
    if not callable(draw):
        raise ValueError(f"draw must be a callable, got {type(draw).__name__}")
    DRAWS[name] = draw


def resolve_parameter(value: Any, key: str, file: str, d: int, limits: Limits | None = None) -> Any:
    """A parameter value with every ``{ draw = ... }`` table replaced by its drawn values (a list).

    >>> resolve_parameter({"draw": "uniform", "seed": 7, "size": 2}, "environment.means", "x.toml", 5)
    [0.625095466604667, 0.8972138009695755]
    """
    if isinstance(value, dict) and "draw" in value:
        limits = Limits() if limits is None else limits
        table = Table(dict(value), key, file)
        name = table.string("draw")
        if name not in DRAWS:
            try:
                check_name(name)
            except ValueError as exc:
                raise table.error("draw", f"refused: {exc}") from None
            raise table.error("draw", f"unknown draw {name!r}; expected one of: {', '.join(sorted(DRAWS))}")
        size = value.get("size", d)
        if isinstance(size, int) and not isinstance(size, bool):
            limits.check("draw_size", size, table.path("size") if "size" in value else key, file)
        return np.asarray(DRAWS[name](table, d)).tolist()
    return value


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


def _graph_of(space: Any) -> nx.Graph | None:
    """The graph a space's arms are the edges of (through side rules), or None."""
    while space is not None:
        graph = getattr(space, "graph", None)
        if isinstance(graph, nx.Graph):
            return graph
        space = getattr(space, "parent", None)
    return None


def _edge_means(table: Table, space: Any) -> list[float]:
    """``{ edge_attribute = "dist", scale = a, offset = b }``: mean of arm (u, v) = offset + scale * attribute."""
    attribute = table.string("edge_attribute")
    scale, offset = table.number("scale", 1.0), table.number("offset", 0.0)
    table.finish()
    graph = _graph_of(space)
    edges = space.arm_labels.edges
    if graph is None or edges is None:
        raise table.error("edge_attribute", "needs a space whose arms are the edges of a graph ([space.graph])")
    path = attribute.split(".")  # "ecmp_fwd.uni": a nested attribute
    out = []
    for u, v in edges:
        value: Any = graph.edges[u, v]
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            known = ", ".join(sorted(k for k, x in graph.edges[u, v].items() if isinstance(x, int | float | dict)))
            raise table.error(
                "edge_attribute",
                f"edge {(u, v)!r} has no number {attribute!r}" + (f" (its attributes: {known})" if known else ""),
            )
        out.append(offset + scale * float(value))
    return out


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


def _means_table(value: dict, key: str, file: str, space: Any) -> list[float]:
    """``means`` given as a table: ``{ edge_attribute = ... }`` or one mean per arm label ``{ "a" = 0.3, ... }``."""
    if "edge_attribute" in value:
        return _edge_means(Table(dict(value), key, file), space)
    for label, mean in value.items():
        _arm(space, label, join_key(key, label), file)
        check_number(mean, join_key(key, label), file)
    try:
        return space.arm_vector(value, default=None, what=key).tolist()
    except ValueError as exc:
        raise _arm_error(exc, key, file) from None


def build_environment(table: Table, space: Any, limits: Limits | None = None) -> tuple[Any, dict[str, Any]]:
    """An environment from ``[environment]``: ``kind`` plus constructor parameters.

    Returns the environment and its table as stored (draws kept as recipes, not
    values: every rebuild draws the same values from the stated seed).
    """
    limits = Limits() if limits is None else limits
    cls = _resolve_class(table, "kind", environment_kinds(), "environment kind", "environment")
    names, var_keyword = _parameters(cls)
    kwargs: dict[str, Any] = {}
    for key, value in table.data.items():
        if key == "kind":
            continue
        if key not in names and not var_keyword:
            raise table.error(key, f"unknown parameter of {cls.__name__} (it takes: {', '.join(names)})")
        if key == "means" and isinstance(value, dict) and "draw" not in value:
            kwargs[key] = _means_table(value, table.path(key), table.file, space)
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
        env = _construct(table, cls, (), kwargs, cls.__name__)
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
    cls = _resolve_class(kind_table, "kind", policy_kinds(), "policy kind", "policy")
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


def _reward_name(spec: Any) -> str | None:
    from ..general.rewards import make_reward

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
    cls = _resolve_class(kind_table, "kind", policy_kinds(), "policy kind", "policy")
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
