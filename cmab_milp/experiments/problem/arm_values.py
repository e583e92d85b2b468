"""Arms and per-arm numbers as a problem file writes them: by index, label, edge, edge name or edge attribute.

An arm is an integer index, a label, an edge ``[u, v]`` or, as a table key (TOML keys are strings),
an edge named ``"u-v"`` (``"A-B"``: the edge between nodes ``"A"`` and ``"B"``, either orientation when
the graph is undirected; a node name that holds ``-`` itself is found by trying each split).

One number per arm (``means``, ``coeffs``, ``costs``, a ``diagonal``) is written as

* ``d`` numbers, in arm order (arm ``k`` is ``list(graph.edges())[k]`` for graph spaces: networkx lists
  the edges node by node, nodes in the order they first appear, so the arms need not follow the order
  the edges are written in, and an undirected edge's label ``(u, v)`` has ``u`` the node that appears
  first; ``load_problem(path).build_space().arms`` shows them);
* a table by arm, ``{ "A-B" = 0.3, "B-C" = 0.5 }`` (labels, edge names);
* rows ``[["A", "B", 0.3], ["B", "C", 0.5]]``, one ``[u, v, value]`` per edge;
* an edge attribute, ``{ attribute = "km", scale = a, offset = b }``: ``offset + scale * km`` per arm
  (``edge_attribute`` is the same key; a nested attribute as ``"ecmp_fwd.uni"``).

Arms a table or rows leave out get ``default`` (an error when there is none, as for ``means``).

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> graph = nx.Graph()
>>> graph.add_edge("A", "B", km=10)
>>> graph.add_edge("B", "C", km=30)
>>> space = cm.STPaths(graph, "A", "C")
>>> arm_values({"A-B": 0.25, "C-B": 0.5}, "means", "f.toml", space, None)
[0.25, 0.5]
>>> arm_values([["B", "C", 2.0]], "costs", "f.toml", space, 0.0)
[0.0, 2.0]
>>> arm_values({"attribute": "km", "scale": 0.01}, "means", "f.toml", space, None)
[0.1, 0.3]
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from .schema import ProblemError, Table, check_number, describe, join_key

__all__ = ["arm_index", "arm_values", "is_edge_rows"]


def _arm_error(exc: ValueError, key: str, file: str) -> ProblemError:
    """A space's arm-lookup ``ValueError`` (whose message starts with ``key``) as a :class:`ProblemError` at ``key``."""
    message = str(exc)
    if message.startswith(f"{key}: "):
        message = message[len(key) + 2 :]
    elif message.startswith(key):
        message = message[len(key) :].lstrip(": ")
    return ProblemError(file, key, message)


def _edge_named(space: Any, name: str) -> int | None:
    """The arm of the edge named ``"u-v"`` (exactly one split of ``name`` at a ``-`` names an edge), else None."""
    if space.arm_labels.edges is None or "-" not in name:
        return None
    found = set()
    for k, char in enumerate(name):
        if char != "-" or k == 0 or k == len(name) - 1:
            continue
        u, v = name[:k], name[k + 1 :]
        for edge in ((u, v), _integer_nodes(u, v)):
            if edge is None:
                continue
            try:
                found.add(space.arm_index(edge, "arm"))
            except ValueError:
                pass
    return found.pop() if len(found) == 1 else None


def _integer_nodes(u: str, v: str) -> tuple[int, int] | None:
    """``("3", "7")`` as the integer nodes ``(3, 7)`` (a TOML key is a string; generated graphs number nodes)."""
    if u.isdigit() and v.isdigit():
        return int(u), int(v)
    return None


def arm_index(space: Any, value: Any, key: str, file: str) -> int:
    """The index of the arm ``value`` names: an integer index, a string label, an edge ``[u, v]`` or ``"u-v"``."""
    if isinstance(value, float) or isinstance(value, dict):
        raise ProblemError(file, key, f"an arm is an integer index, a label or an edge [u, v], got {describe(value)}")
    try:
        return space.arm_index(value, key)
    except ValueError as exc:
        if isinstance(value, str):
            edge = _edge_named(space, value)
            if edge is not None:
                return edge
        error = _arm_error(exc, key, file)
        if isinstance(value, str) and "-" in value.strip("-") and space.arm_labels.edges is not None:
            hint = f"; as an edge name 'u-v', no edge joins nodes named by {value!r}"
            error = ProblemError(file, key, error.message + hint)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():  # a TOML table key is a string
            hint = f"; {value!r} is a string, not the index {int(value)}: give indices in an array"
            error = ProblemError(file, key, error.message + hint)
        raise error from None


def is_edge_rows(value: Any) -> bool:
    """Whether ``value`` is written as ``[u, v, number]`` rows (a non-empty array of 3-element arrays)."""
    return isinstance(value, list) and bool(value) and all(isinstance(r, list) and len(r) == 3 for r in value)


def arm_values(raw: Any, key: str, file: str, space: Any, default: float | None) -> list[float]:
    """One number per arm from a file's value (see the module docstring); ``default`` for arms left out."""
    if isinstance(raw, dict) and ("attribute" in raw or "edge_attribute" in raw):
        return _attribute_values(Table(dict(raw), key, file), space)
    if is_edge_rows(raw):
        found: dict[int, float] = {}
        for k, row in enumerate(raw):
            where = join_key(key, k)
            arm = arm_index(space, [_plain_node(row[0]), _plain_node(row[1])], where, file)
            if arm in found:
                raise ProblemError(file, where, f"edge {space.arms[arm]!r} is given twice")
            found[arm] = check_number(row[2], join_key(where, 2), file)
        return _complete(found, key, file, space, default)
    if isinstance(raw, dict):
        found = {}
        for label, value in raw.items():
            where = join_key(key, label)
            arm = arm_index(space, label, where, file)
            if arm in found:
                raise ProblemError(file, where, f"arm {space.arms[arm]!r} is given twice")
            found[arm] = check_number(value, where, file)
        return _complete(found, key, file, space, default)
    if not isinstance(raw, list):
        forms = f"{space.d} numbers, a table {{ label = number }} or [u, v, number] rows"
        raise ProblemError(file, key, f"expected {forms}, got {describe(raw)}")
    values = [check_number(v, join_key(key, k), file) for k, v in enumerate(raw)]
    if len(values) != space.d:
        raise ProblemError(file, key, f"needs one number per arm: d={space.d}, got {len(values)}")
    return values


def _plain_node(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _complete(found: dict[int, float], key: str, file: str, space: Any, default: float | None) -> list[float]:
    if default is None and len(found) < space.d:
        missing = [space.arm_labels.display[k] for k in range(space.d) if k not in found]
        shown = ", ".join(repr(m) for m in missing[:6]) + (f", ... ({len(missing)} in all)" if len(missing) > 6 else "")
        raise ProblemError(file, key, f"no value for arms {shown} (every arm needs one)")
    return [found.get(k, default) for k in range(space.d)]


def _graph_of(space: Any) -> nx.Graph | None:
    """The graph a space's arms are the edges of (through side rules), or None."""
    while space is not None:
        graph = getattr(space, "graph", None)
        if isinstance(graph, nx.Graph):
            return graph
        space = getattr(space, "parent", None)
    return None


def _attribute_values(table: Table, space: Any) -> list[float]:
    """``{ attribute = "dist", scale = a, offset = b }``: ``offset + scale * attribute`` of each arm's edge."""
    name = "attribute" if "attribute" in table else "edge_attribute"
    if "attribute" in table and "edge_attribute" in table:
        raise table.error("edge_attribute", "give attribute or edge_attribute, not both")
    attribute = table.string(name)
    scale, offset = table.number("scale", 1.0), table.number("offset", 0.0)
    table.finish()
    graph = _graph_of(space)
    edges = space.arm_labels.edges
    if graph is None or edges is None:
        raise table.error(name, "needs a space whose arms are the edges of a graph ([space.graph])")
    path = attribute.split(".")  # "ecmp_fwd.uni": a nested attribute
    out = []
    for u, v in edges:
        value: Any = graph.edges[u, v]
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            known = ", ".join(sorted(k for k, x in graph.edges[u, v].items() if isinstance(x, int | float | dict)))
            raise table.error(
                name, f"edge {(u, v)!r} has no number {attribute!r}" + (f" (its attributes: {known})" if known else "")
            )
        out.append(offset + scale * float(value))
    return out
