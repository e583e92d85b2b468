"""Directed s-t paths on CP-SAT as one circuit constraint (``AddCircuit``), for the ``ortools`` backend.

A simple directed s-t path plus a fixed return arc ``t -> s`` is a circuit
through the nodes it visits; every other node takes its self-loop. CP-SAT's
circuit constraint propagates exactly that, so no subtour rows, no lazy loop
and no no-good cuts are needed: one solve answers a longest-path query (the
lazy-cut loop on the flow rows re-solved 13-19 times on a 6x6 grid digraph).

The model: one literal per arc (the arms, columns ``0..d-1`` as in the
formulation), one self-loop literal per node other than ``s`` and ``t``
("not visited"), an extra node ``r`` with the arcs ``t -> r`` and ``r -> s``
fixed to 1 (the return; a separate node, so a graph arc ``t -> s`` is not
confused with it), and every arc into ``s`` or out of ``t`` fixed to 0 (a
simple s-t path uses none), as every arc the graph rules out under the side rows' budgets
(:meth:`~cmab_milp.spaces.paths.STPaths.unusable_arms`). The space's side rows (``with_constraint``,
``with_budget``, ...) are added over the arm literals (:func:`circuit_rows`: a hop limit on a bipartite
graph rounded to the paths' parity, :mod:`~cmab_milp.oracles.mip.path_parity`); rows with fractional
coefficients are relaxed as in :mod:`~cmab_milp.oracles.backends.ortools`, which also scales the
weights to integers and states the rounding certificate.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> g = nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 0), (1, 0)])
>>> model = circuit_model(cm.STPaths(g, 0, 2))
>>> model is not None
True
>>> oracle = cm.make_oracle(cm.STPaths(g, 0, 2), "ortools")
>>> oracle.circuit, oracle.space.arms
(True, [(0, 1), (0, 2), (1, 2), (1, 0), (2, 0)])
>>> oracle.argmax(np.ones(5)).astype(int).tolist()  # the longest path 0 -> 1 -> 2
[1, 0, 1, 0, 0]
"""

from __future__ import annotations

from typing import Any

from ...spaces.base import ActionSpace
from ...spaces.formulation import Row
from ...spaces.graph_presolve import budgets_of
from ..mip.path_parity import tighten_by_parity

__all__ = ["circuit_model", "circuit_rows", "side_rows"]


def side_rows(space: ActionSpace) -> tuple[ActionSpace, list[Row]]:
    """``(base, rows)``: the family under ``space``'s side rules and the rules' rows (over arm columns).

    >>> import cmab_milp as cm
    >>> base, rows = side_rows(cm.Cardinality(3, 2).with_conflicts([(0, 1)]))
    >>> base, [row.cols for row in rows]
    (Cardinality(d=3, m=2), [(0, 1)])
    """
    from ...spaces.rules import RuleSpace

    rows: list[Row] = []
    while isinstance(space, RuleSpace):
        rows = [*space.rows, *rows]
        space = space.parent
    return space, rows


def circuit_rows(space: ActionSpace, parity: bool = True) -> list[Row]:
    """The side rows the circuit model gets: :func:`side_rows`'s, those of an s-t path space tightened by parity
    (``parity=False``: as they are).

    >>> import networkx as nx
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> grid = cm.STPaths(nx.grid_2d_graph(3, 3).to_directed(), (0, 0), (2, 2))
    >>> [row.ub for row in circuit_rows(grid.with_constraint(np.ones(grid.d), "<=", 7))]  # paths: 4, 6 or 8 arcs
    [6.0]
    """
    from ...spaces import STPaths

    base, rows = side_rows(space)
    return tighten_by_parity(base, rows) if parity and type(base) is STPaths else rows


def circuit_model(space: ActionSpace, parity: bool = True) -> Any | None:
    """The CP-SAT model (``cp_model.CpModel``) of ``space`` when it is directed s-t paths (with side rules), else None.

    Columns ``0..d-1`` are the arm literals; the side rows are *not* added (the
    backend adds :func:`circuit_rows`, relaxing fractional ones).
    """
    from ...spaces import STPaths

    base, _ = side_rows(space)
    if type(base) is not STPaths or not base.directed:
        return None
    rows = circuit_rows(space, parity)
    from ortools.sat.python import cp_model

    unusable = base.unusable_arms(budgets_of(rows, base.d))  # the graph's presolve (a hop limit among the budgets)

    model = cp_model.CpModel()
    arcs = [model.new_bool_var(f"a{i}") for i in range(base.d)]
    n, s, t = base.n_nodes, base.s, base.t
    circuit: list[tuple[int, int, Any]] = []
    for k, lit in enumerate(arcs):
        u, v = int(base.tail[k]), int(base.head[k])
        if v == s or u == t or u == v or unusable[k]:  # never on a simple s-t path (within the budgets)
            model.add(lit == 0)
        else:
            circuit.append((u, v, lit))
    for v in range(n):
        if v not in (s, t):
            circuit.append((v, v, model.new_bool_var(f"skip{v}")))
    ret = n  # the return node: t -> r -> s, always taken
    for u, v in ((t, ret), (ret, s)):
        lit = model.new_bool_var(f"return{u}_{v}")
        model.add(lit == 1)
        circuit.append((u, v, lit))
    model.add_circuit(circuit)
    return model
