"""Graphs for graph spaces: named networkx generators with size bounds, edge lists, topohub topologies.

>>> sorted(GENERATORS)[:2]
['balanced_tree', 'barabasi_albert_graph']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from ...untrusted_limits import MAX_GENERATOR_TRIES
from .limits import Limits
from .registry import check_name
from .schema import ProblemError, Table, _int_list, check_integer, check_number, describe, join_key, plain
from .schema_data import GRAPH, finish, read


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
    ``complete_multipartite_graph(*sizes)``). ``size`` must be a closed form (no
    loop that runs as many times as an argument says), so that it answers at once
    for any arguments. ``refuse(values)`` returns why arguments that would make
    the generator retry without end (or fail only after long work) are refused,
    or None; a ``"tries"`` parameter (a retry count) is at most :data:`MAX_TRIES`.
    """

    function: Callable[..., nx.Graph]
    params: tuple[tuple[str, str], ...]
    size: Callable[[dict[str, Any]], tuple[int, int]]
    variadic: bool = False
    refuse: Callable[[dict[str, Any]], str | None] | None = None


#: The most attempts a retrying generator may be given (``tries`` of connected_watts_strogatz_graph).
MAX_TRIES = MAX_GENERATOR_TRIES
#: Sizes are computed up to this many nodes or edges (far above any limit a run can take); larger is this.
_SIZE_CAP = 2**64


def _pairs(n: int) -> int:
    n = min(n, _SIZE_CAP)
    return n * (n - 1) // 2


def _tree_nodes(v: dict[str, Any]) -> int:
    """Nodes of ``balanced_tree(r, h)``: ``1 + r + ... + r**h`` in closed form (capped at ``_SIZE_CAP``)."""
    r, h = min(v["r"], _SIZE_CAP), v["h"]
    if r <= 1:
        return min(1 + r * h, _SIZE_CAP)
    if h + 1 > _SIZE_CAP.bit_length():  # r**(h+1) >= 2**(h+1) is beyond the cap
        return _SIZE_CAP
    return min((r ** (h + 1) - 1) // (r - 1), _SIZE_CAP)


def _gnp_edges(n: int, p: float) -> int:
    pairs = _pairs(n)
    if pairs >= _SIZE_CAP:
        return pairs
    mean = p * pairs
    return min(pairs, int(mean + 6 * mean**0.5 + 6))


def _grid_size(v: dict[str, Any]) -> tuple[int, int]:
    if not v["dim"]:
        return 0, 0
    nodes = 1
    for x in v["dim"]:  # one factor per dimension written in the file (not per node)
        nodes = min(nodes * max(x, 1), _SIZE_CAP)
    return nodes, min(len(v["dim"]) * nodes, _SIZE_CAP)


def _connected_ws_refusal(v: dict[str, Any]) -> str | None:
    """``connected_watts_strogatz_graph`` retries ``tries`` times; with k < 2 (no ring edges) it never succeeds."""
    if v["n"] > 1 and (v["k"] is None or v["k"] < 2):
        return f"k = {v['k']} gives a graph without edges, never connected: connected_watts_strogatz_graph needs k >= 2"
    return None


_N = (("n", "int"),)
#: Named graphs of networkx and their sizes (nodes, edges), known before building them.
_NAMED_GRAPHS = {
    name: (int(nodes), int(edges))
    for name, nodes, edges in (
        row.split()
        for row in """
    petersen_graph              10   15
    karate_club_graph           34   78
    dodecahedral_graph          20   30
    cubical_graph                8   12
    octahedral_graph             6   12
    icosahedral_graph           12   30
    tetrahedral_graph            4    6
    heawood_graph               14   21
    frucht_graph                12   18
    tutte_graph                 46   69
    florentine_families_graph   15   20
    les_miserables_graph        77  254
""".strip().splitlines()
    )
}

#: Graph generators a problem file may name as ``space.graph.generator`` (add with :func:`register_generator`).
GENERATORS: dict[str, GraphGenerator] = {
    "complete_graph": GraphGenerator(nx.complete_graph, _N, lambda v: (v["n"], _pairs(v["n"]))),
    "cycle_graph": GraphGenerator(nx.cycle_graph, _N, lambda v: (v["n"], v["n"])),
    "path_graph": GraphGenerator(nx.path_graph, _N, lambda v: (v["n"], v["n"])),
    "star_graph": GraphGenerator(nx.star_graph, _N, lambda v: (v["n"] + 1, v["n"])),
    "wheel_graph": GraphGenerator(nx.wheel_graph, _N, lambda v: (v["n"], 2 * v["n"])),
    "ladder_graph": GraphGenerator(nx.ladder_graph, _N, lambda v: (2 * v["n"], 3 * v["n"])),
    "circular_ladder_graph": GraphGenerator(
        nx.circular_ladder_graph, _N, lambda v: (max(2 * v["n"], 2), max(3 * v["n"], 1))
    ),
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
        (("n", "int"), ("k", "int"), ("p", "prob"), ("tries", "tries"), ("seed", "seed")),
        lambda v: (v["n"], v["n"] * v["k"]),
        refuse=_connected_ws_refusal,
    ),
    **{name: GraphGenerator(getattr(nx, name), (), lambda v, size=size: size) for name, size in _NAMED_GRAPHS.items()},
}


def register_generator(
    name: str,
    function: Callable[..., nx.Graph],
    params: Sequence[tuple[str, str]],
    size: Callable[[dict[str, Any]], tuple[int, int]],
    variadic: bool = False,
    refuse: Callable[[dict[str, Any]], str | None] | None = None,
) -> None:
    """Make ``space.graph.generator = name`` call ``function`` (see :class:`GraphGenerator`).

    ``size(values)`` must bound ``(nodes, edges)`` from the arguments alone, in
    closed form, so a graph too large for the limits is refused before it is
    built; ``refuse(values)`` names arguments the generator would retry on
    without end (or None).
    """
    check_name(name)
    kinds = {"int", "ints", "prob", "bool", "seed", "tries"}
    for param, kind in params:
        check_name(param)
        if kind not in kinds:
            raise ValueError(f"parameter {param!r}: kind must be one of {sorted(kinds)}, got {kind!r}")
    if not callable(function) or not callable(size):
        raise ValueError("function and size must be callables")
    GENERATORS[name] = GraphGenerator(function, tuple(params), size, variadic, refuse)


def _generator_value(value: Any, kind: str, key: str, file: str) -> Any:
    if kind in ("int", "seed"):
        return check_integer(value, key, file, minimum=0)
    if kind == "tries":
        tries = check_integer(value, key, file, minimum=1)
        if tries > MAX_TRIES:
            raise ProblemError(file, key, f"at most {MAX_TRIES} attempts, got {tries} (each builds a whole graph)")
        return tries
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
    args = read(table, GRAPH, "args")
    kwargs_table = read(table, GRAPH, "kwargs")
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
    name = read(table, GRAPH, "generator")
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
    reason = spec.refuse(values) if spec.refuse is not None else None
    if reason is not None:
        raise table.error("args", f"{name}: {reason}")
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
    the graph (the identity unless ``relabel``). An edge of ``edges`` is ``[u, v]`` or
    ``[u, v, { km = 10 }]`` (its attributes, read by ``means = { attribute = "km" }``,
    :mod:`~cmab_milp.experiments.problem.arm_values`). ``directed = true`` orients each
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
    directed = read(table, GRAPH, "directed")
    attributes: dict[tuple, dict] = {}
    if sources == ["topohub"]:
        graph = _topohub_graph(table, limits)
        relabel = read(table, GRAPH, "relabel")
        edges = list(graph.edges())
        nodes = list(graph.nodes())
        attributes = {(u, v): data for u, v, data in graph.edges(data=True)}
    elif sources == ["generator"]:
        graph = _generate(table, limits)
        relabel = read(table, GRAPH, "relabel")
        edges = list(graph.edges())
        nodes = list(graph.nodes())
    else:
        raw_edges = read(table, GRAPH, "edges")
        limits.check("arms", len(raw_edges), table.path("edges"), file)
        edges = []
        for k, edge in enumerate(raw_edges):
            key = join_key(table.path("edges"), k)
            if (
                not isinstance(edge, list)
                or len(edge) not in (2, 3)
                or (len(edge) == 3 and not isinstance(edge[2], dict))
            ):
                raise ProblemError(
                    file, key, f"an edge is [u, v] or [u, v, {{ attribute = value, ... }}], got {describe(edge)}"
                )
            u, v = _node(edge[0], join_key(key, 0), file), _node(edge[1], join_key(key, 1), file)
            if len(edge) == 3:
                attributes[(u, v)] = _edge_attributes(edge[2], join_key(key, 2), file)
            edges.append((u, v))
        relabel = read(table, GRAPH, "relabel")
        nodes = list(dict.fromkeys(v for e in edges for v in e))
    finish(table, GRAPH)
    labels = {v: k for k, v in enumerate(nodes)} if relabel else {v: v for v in nodes}
    out = nx.DiGraph() if directed else nx.Graph()
    out.add_nodes_from(labels[v] for v in nodes)
    out.add_edges_from((labels[u], labels[v], attributes.get((u, v), {})) for u, v in edges)
    return out, labels


def _edge_attributes(value: dict, key: str, file: str) -> dict[str, Any]:
    """An edge's attributes, ``{ km = 10, kind = "fibre" }`` (numbers, strings, booleans, arrays, tables)."""
    return plain(value, key, file)


def _topohub_graph(table: Table, limits: Limits) -> nx.Graph:
    """``topohub = "GROUP/NAME"``: a topology of topohub's catalogue, nodes named, edge attributes kept."""
    from ...topologies import load_topology

    name = read(table, GRAPH, "topohub")
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
