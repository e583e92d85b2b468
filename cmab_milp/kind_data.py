"""A registered kind as JSON-ready data, and back: ``{"kind": name, **get_params()}``.

The one way a space (or any :class:`~cmab_milp.described.Described` kind of
the :mod:`~cmab_milp.catalogue`) becomes data: the kind's catalogue name and its
constructor parameters (:meth:`~cmab_milp.described.Described.get_params`),
those left at ``None`` left out; a parameter that is itself a kind nests
(``Intersection``'s spaces, a rule's parent); a graph is its node and edge
lists (node labels: ints, strings or tuples of them). Reading builds only
kinds of the catalogue (:func:`from_data`): nothing a file names is imported.
Leaves (arrays, tuples, non-finite floats) go through the ``encode`` /
``decode`` the caller gives (saved learners: tagged values and ``.npy``
members, :mod:`cmab_milp.policies.persistence`).

A space relabelled after it was built (``with_labels`` on a rule space) keeps
its labels under ``"labels"`` beside the parameters. Saved learners written
before this module (their graph spaces' options under ``"options"``) read the
same.

Example
-------
>>> import cmab_milp as cm
>>> data = to_data(cm.Cardinality(4, 2, labels=list("abcd")))
>>> data
{'kind': 'Cardinality', 'd': 4, 'm': 2, 'exact': False, 'labels': ['a', 'b', 'c', 'd']}
>>> from_data(data).labels
['a', 'b', 'c', 'd']
>>> from_data({"kind": "Cardinality", "d": 3, "m": 5})
Traceback (most recent call last):
...
cmab_milp.described.ParameterError: m must be <= d, got m=5 > d=3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import catalogue
from .described import Described, constructor_parameters

__all__ = ["from_data", "to_data"]

_GRAPH_KEYS = frozenset({"directed", "nodes", "edges"})


def _plain(value: Any, where: str) -> Any:
    """The default leaf encoding: tuples as ``{"__tuple__": [...]}``, numpy scalars and arrays as Python values."""
    if isinstance(value, tuple):
        return {"__tuple__": [_plain(v, where) for v in value]}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _unplain(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"__tuple__"}:
        return tuple(_unplain(v) for v in value["__tuple__"])
    return [_unplain(v) for v in value] if isinstance(value, list) else value


def _label(value: Any, where: str) -> Any:
    """A node or arm label as data: an int, a string or a tuple of them (else ``ValueError`` naming ``where``)."""
    ok = isinstance(value, (int, np.integer, str, tuple)) and not isinstance(value, (bool, np.bool_))
    if not ok:
        raise ValueError(f"cannot save {where}: node label {value!r} is not an int, a string or a tuple of them")
    if isinstance(value, tuple):
        return {"__tuple__": [_label(v, where) for v in value]}
    return int(value) if isinstance(value, np.integer) else value


def _is_graph(value: Any) -> bool:
    return callable(getattr(value, "is_directed", None)) and hasattr(value, "edges") and hasattr(value, "nodes")


def to_data(obj: Any, encode: Callable[[Any, str], Any] = _plain, where: str = "the space") -> dict:
    """``obj`` as data: ``{"kind": name, **parameters}`` (see the module docstring).

    Raises ``ValueError`` for an object whose class is not a kind of the catalogue (e.g. a user's subclass) or a
    graph whose node labels are not ints, strings or tuples of them.
    """
    name = catalogue.name_of(obj)
    if name is None or not isinstance(obj, Described):
        family = "space" if hasattr(obj, "formulation") else "object"
        storable = ", ".join(sorted(catalogue.names("space")))
        raise ValueError(
            f"cannot save a policy over a {type(obj).__name__}: its {family} kind cannot be stored as data "
            f"(storable: {storable})"
        )
    parameters = {p.name: p for p in constructor_parameters(type(obj))}
    data: dict[str, Any] = {"kind": name}
    for key, value in obj.get_params().items():
        p = parameters[key]
        if value is None and p.default is None:
            continue
        if p.kind is p.VAR_POSITIONAL:
            data[key] = [_value(v, encode, f"{where}.{key}") for v in value]
        elif key == "labels":
            data[key] = [_label(v, "the arm labels") for v in value]
        else:
            data[key] = _value(value, encode, f"{where}.{key}")
    relabelled = getattr(obj, "given_labels", lambda: None)()
    if "labels" not in parameters and relabelled is not None:
        data["labels"] = [_label(v, "the arm labels") for v in relabelled]
    return data


def _value(value: Any, encode: Callable[[Any, str], Any], where: str) -> Any:
    if isinstance(value, Described):
        return to_data(value, encode, where)
    if _is_graph(value):
        return {
            "directed": bool(value.is_directed()),
            "nodes": [_label(v, "the graph") for v in value.nodes()],
            "edges": [[_label(u, "the graph"), _label(v, "the graph")] for u, v in value.edges()],
        }
    return encode(value, where)


def from_data(data: Any, decode: Callable[[Any], Any] = _unplain, family: str = "space") -> Any:
    """The kind ``data`` describes, built from the catalogue's class with ``from_params`` (nothing else).

    Raises ``ValueError`` for an unknown kind, an unknown parameter
    (:class:`~cmab_milp.described.ParameterError`) or a value its constructor refuses.
    """
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ValueError(f"expected a {family} table with a kind")
    try:
        cls = catalogue.lookup(family, data["kind"])
    except catalogue.UnknownKind:
        raise ValueError(f"unknown {family} kind {data['kind']!r:.60}") from None
    takes = {p.name for p in constructor_parameters(cls)}
    params = {k: _from_value(v, decode, family) for k, v in data.items() if k not in ("kind", "options")}
    options = data.get("options", {})  # files written before the catalogue: graph spaces' non-default options
    if not isinstance(options, dict):
        raise ValueError(f"the space's options must be a table, got {type(options).__name__}")
    params.update(options)
    labels = params.pop("labels", None) if "labels" not in takes else None
    obj = cls.from_params(params)
    return obj if labels is None else obj.with_labels(labels)


def _from_value(value: Any, decode: Callable[[Any], Any], family: str) -> Any:
    if isinstance(value, dict) and "kind" in value:
        return from_data(value, decode, family)
    if isinstance(value, dict) and set(value) == _GRAPH_KEYS:
        import networkx as nx

        graph = nx.DiGraph() if value["directed"] else nx.Graph()
        graph.add_nodes_from(decode(value["nodes"]))
        graph.add_edges_from(tuple(e) for e in decode(value["edges"]))
        return graph
    if isinstance(value, list) and value and all(isinstance(v, dict) and "kind" in v for v in value):
        return [from_data(v, decode, family) for v in value]
    return decode(value)
