"""The norm engine's methods: one ordered tuple per sign, and each method exact on its own where it applies."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.norm.linear import LINEAR_BOUND, LINEAR_ONLY
from cmab_milp.oracles.norm.method import NormMethod
from cmab_milp.oracles.norm.solver import MINUS_METHODS, PLUS_METHODS, NormSolver

_GRID = nx.convert_node_labels_to_integers(nx.grid_2d_graph(2, 3))
SPACES = {
    "cardinality": lambda: cm.Cardinality(7, 3),
    "trees": lambda: cm.SpanningTrees(_GRID),
    "matchings": lambda: cm.Matchings(nx.complete_bipartite_graph(3, 3)),
    "general-matchings": lambda: cm.Matchings(nx.complete_graph(5)),
    "paths-cyclic": lambda: cm.STPaths(_GRID, 0, 5),
    "side-row": lambda: cm.Cardinality(6, 3).with_constraint([1, 2, 1, 2, 1, 2], "<=", 4),
}


def test_the_methods_are_walked_in_a_fixed_order_and_the_last_always_applies():
    assert [m.name for m in PLUS_METHODS] == [
        "linear",
        "branch-path-concave",
        "branch-concave",
        "branch-concave",
        "oa-quadratic-form",
    ]
    assert [m.name for m in MINUS_METHODS] == [
        "linear",
        "branch-path-lp",
        "secants-quadratic-form",
        "branch-linear-oracle",
        "outer-approximation",
        "secants-quadratic-form",
    ]
    assert all(isinstance(m, NormMethod) for m in PLUS_METHODS + MINUS_METHODS)
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
    solver = NormSolver(oracle, oracle.norm_query(np.ones(4), np.eye(4), 1.0, -1))
    assert PLUS_METHODS[-1].applies(solver) and MINUS_METHODS[-1].applies(solver)
    assert not LINEAR_ONLY.applies(solver)  # the norm term does not vanish: a method on the model answers


def _chain(method, sign: int) -> tuple:
    """``method`` with what it needs: sign -1's methods after the linear bound read its argmax; the linear bound
    and a budgeted try may pass the query on (to the sign's last method)."""
    if sign < 0 and MINUS_METHODS.index(method) > MINUS_METHODS.index(LINEAR_BOUND):
        return (LINEAR_BOUND, method)
    passes_on = method is LINEAR_BOUND or method is PLUS_METHODS[3]
    return (method, (PLUS_METHODS if sign > 0 else MINUS_METHODS)[-1]) if passes_on else (method,)


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("family", sorted(SPACES))
def test_every_method_that_applies_answers_exactly_on_its_own(family, sign):
    """Each method of the sign's tuple, run alone where it applies (not only where the walk would reach it), returns
    the brute-force optimum and a bound at least its value; a method that does not apply is never run."""
    space = SPACES[family]()
    tuning = {"minus_outer": True, "plus_branch": "always"}  # (the off-by-default tangents are in the tuple too)
    oracle = cm.make_oracle(space, "highs", tuning=tuning)
    actions = cm.make_oracle(space, "enumerate").actions.astype(float)
    rng = np.random.default_rng([len(family), sign + 1])
    ran: set[str] = set()
    for f in (0.3, 2.0):
        mu = rng.uniform(0, 1, space.d)
        A = rng.normal(size=(space.d, space.d))
        M = A @ A.T / space.d + 0.1 * np.eye(space.d)
        values = actions @ mu + sign * f * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", actions, M, actions), 0.0))
        best = float(values.max())
        for method in PLUS_METHODS if sign > 0 else MINUS_METHODS:
            solver = NormSolver(oracle, oracle.norm_query(mu, M, f, sign))
            if not method.applies(solver):
                continue
            ran.add(method.name)
            answer, bound = solver.run(_chain(method, sign))
            value = float(answer @ mu + sign * f * np.sqrt(max(answer @ M @ answer, 0.0)))
            assert value >= best - 1e-9 * (1 + abs(best)), (method.name, value, best)
            assert bound * solver.value_scale >= value - 1e-9 * (1 + abs(value)), method.name
    assert ran and "linear" not in ran  # (M is definite: the norm term never vanishes)


def test_a_walk_where_no_method_answers_is_refused_and_the_model_restored():
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
    model = oracle.norm_model()
    size = (model.num_cols, model.num_rows)
    solver = NormSolver(oracle, oracle.norm_query(np.ones(4), np.eye(4), 1.0, forbid_pairs=[(0, 1)]))
    with pytest.raises(OracleError, match="no norm method answered"):
        solver.run((LINEAR_ONLY,))  # (it does not apply: the norm term does not vanish)
    assert (model.num_cols, model.num_rows) == size
