"""Action spaces from ``[space]`` tables: the kind, its constructor parameters, then the side rules.

>>> from cmab_milp.experiments.problem.schema import Table
>>> build_space(Table({"kind": "Cardinality", "d": 4, "m": 2}, "space", "demo.toml")).d
4
"""

from __future__ import annotations

from typing import Any

from .graphs import _node, build_graph
from .kinds import _has_default, _parameters, _resolve_class, build_kind
from .limits import Limits
from .rules import RULES, _apply_rules, _check_feasible
from .schema import ProblemError, Table, _int_list, _int_matrix, describe, join_key

_INT_PARAMS = {"d", "m"}
_BOOL_PARAMS = {"exact", "perfect"}
_NODE_PARAMS = {"source", "target"}


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


def build_space(table: Table, limits: Limits | None = None) -> Any:
    """An action space from a ``[space]`` table (see :mod:`cmab_milp.experiments.problem.problem_file`).

    Sizes are checked against ``limits`` (default :class:`~.limits.Limits`) before anything is built.
    """
    limits = Limits() if limits is None else limits
    cls = _resolve_class(table, "kind", "space")
    kind = cls.__name__
    if kind == "Intersection" and "parts" in table:
        parts = table.tables("parts")
        if not parts:
            raise table.error("parts", "an Intersection needs at least one part")
        spaces = [build_space(part, limits) for part in parts]
        rules = [(name, table.tables(name, [])) for name in RULES]
        labels_kw = {"labels": _labels(table, limits)} if "labels" in table else {}
        table.finish()
        space = build_kind(table, cls, {"spaces": spaces, **labels_kw}, kind, keys=labels_kw)
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
            if name in table or not _has_default(cls, name):
                kwargs[name] = _space_parameter(table, name, labels, limits)
        rules = [(name, table.tables(name, [])) for name in RULES]
        table.finish()
        space = build_kind(table, cls, kwargs, kind)
    limits.check("arms", int(space.d), table.key, table.file)
    return _apply_rules(space, rules)
