"""``auto`` decides its routes as the full count would, without listing actions past the enumeration limit.

Found: the first norm query of ``make_oracle(space, "auto")`` spent 2.6-3.6 CPU s on the s-t paths of an 8x8 grid
(``bench/norm_large.py``) and 12-32 s on the spanning trees of 6x6 and 8x8 grids, listing 150,001 actions to
learn that enumeration (at most 150,000) was out. A lower bound on the count
(:func:`~cmab_milp.spaces.count_bounds.actions_at_least`) now settles "more than the limit" first.

Truth: the same planning with the bound switched off (every count found by the listing search, as before):
the routes, the estimates and the actions kept must be the same for every query shape, on every family.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.problem.problem_file import load_problem
from cmab_milp.oracles.core import auto_facts
from cmab_milp.oracles.core.auto_facts import QueryShape

SHAPES = [
    QueryShape("linear"),
    QueryShape("linear", include=True, exclude=True),
    QueryShape("linear", forbid_pairs=True),
    QueryShape("linear", positive=True),
    QueryShape("linear", mixed=True),
    QueryShape("norm", 1),
    QueryShape("norm", -1),
    QueryShape("norm", 1, include=True, forbid_pairs=True),
]


def grid(n: int, m: int | None = None) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n if m is None else m))


def dag_grid(n: int) -> nx.DiGraph:
    return nx.DiGraph([(u, v) for u, v in grid(n).edges()])  # node labels grow right and down: acyclic


def cyclic_digraph() -> nx.DiGraph:
    rng = np.random.default_rng(3)
    g = nx.DiGraph((int(u), int(v)) for u, v in rng.integers(0, 12, (45, 2)) if u != v)
    g.add_edges_from([(0, 5), (5, 11)])
    return g


SPACES = {
    "cardinality": lambda: cm.Cardinality(12, 4),
    "cardinality exact": lambda: cm.Cardinality(14, 5, exact=True),
    "cardinality d=100": lambda: cm.Cardinality(100, 10),
    "partition": lambda: cm.PartitionMatroid([list(range(k, k + 5)) for k in range(0, 20, 5)], [2] * 4),
    "bipartite matchings": lambda: cm.Matchings(nx.complete_bipartite_graph(5, 6)),
    "matchings K(10,12)": lambda: cm.Matchings(nx.complete_bipartite_graph(10, 12)),
    "general matchings": lambda: cm.Matchings(nx.petersen_graph()),
    "perfect matchings": lambda: cm.Matchings(nx.complete_graph(8), perfect=True),
    "forests": lambda: cm.GraphicMatroid(grid(3)),
    "forests 5x5": lambda: cm.GraphicMatroid(grid(5)),
    "spanning trees": lambda: cm.SpanningTrees(grid(3, 4)),
    "spanning trees 4x4": lambda: cm.SpanningTrees(grid(4)),
    "s-t paths 4x4": lambda: cm.STPaths(grid(4), 0, 15),
    "s-t paths 6x6": lambda: cm.STPaths(grid(6), 0, 35),
    "directed s-t paths": lambda: cm.STPaths(grid(5).to_directed(), 0, 24),
    "s-t paths of K8": lambda: cm.STPaths(nx.complete_graph(8), 0, 7),
    "cyclic digraph paths": lambda: cm.STPaths(cyclic_digraph(), 0, 11),
    "DAG paths": lambda: cm.STPaths(dag_grid(6), 0, 35),
    "explicit": lambda: cm.ExplicitActions(np.random.default_rng(0).integers(0, 2, (300, 10))),
    "intersection": lambda: cm.Intersection(
        cm.Cardinality(10, 4), cm.PartitionMatroid([[0, 1, 2], list(range(3, 10))], [1, 3])
    ),
    "conflicts": lambda: cm.Cardinality(12, 4).with_conflicts([(0, 1), (2, 3)]),
    "hop limit": lambda: cm.STPaths(grid(5), 0, 24).with_constraint(np.ones(40), "<=", 10),
}


def plans(space: cm.ActionSpace, bound: bool, **options) -> list:
    """What ``auto`` decides for every shape, in order: routes, estimates, and the actions it kept."""
    oracle = cm.make_oracle(space, "auto", **options)
    out = [(oracle.plan(shape), oracle.estimates(shape)) for shape in SHAPES]
    actions = oracle.facts.actions
    out.append(None if actions is None else actions.tobytes())
    if bound:
        out.append("past" if oracle.facts.tallied is None else oracle.facts.tallied.status)
    return out


def full_count(monkeypatch: pytest.MonkeyPatch, make, **options) -> list:
    """The plans with the bound switched off: every count by the listing search (the behaviour before)."""
    with monkeypatch.context() as patch:
        patch.setattr(auto_facts, "actions_at_least", lambda space, limit, work=None: 0)
        return plans(make(), False, **options)


CAPS = {
    "small": {"enumerate_cap": 50, "norm_enumerate_cap": 200},
    "medium": {"enumerate_cap": 500, "norm_enumerate_cap": 5_000},
    "cheap planning": {"enumerate_cap": 2_000, "norm_enumerate_cap": 20_000, "plan_share": 0.01},
}


@pytest.mark.parametrize("caps", list(CAPS))
@pytest.mark.parametrize("family", list(SPACES))
def test_the_bound_leaves_every_decision_as_the_full_count_makes_it(
    family: str, caps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = SPACES[family]
    truth = full_count(monkeypatch, make, **CAPS[caps])
    found = plans(make(), True, **CAPS[caps])
    assert found[:-1] == truth


def test_planning_on_the_8x8_grid_lists_no_path() -> None:
    """150,001 paths were listed (2.6-3.6 CPU s); the paths of at most 18 arcs (178,044) settle it now."""
    oracle = cm.make_oracle(cm.STPaths(grid(8), 0, 63), "auto")
    for sign in (1, -1):
        assert oracle.plan(QueryShape("norm", sign))[0] == "highs"
    assert oracle.facts.tallied is None  # nothing listed
    assert "more than 150,000" in oracle.explain()


BENCH = {
    "cardinality d=100": lambda: cm.Cardinality(100, 10),
    "matchings K15": lambda: cm.Matchings(nx.complete_graph(15)),
    "trees 6x6": lambda: cm.SpanningTrees(grid(6)),
    "forests 8x8": lambda: cm.GraphicMatroid(grid(8)),
    "s-t paths 8x8": lambda: cm.STPaths(grid(8), 0, 63),
    "s-t paths 5x5": lambda: cm.STPaths(grid(5), 0, 24),
    "DAG paths 10x10": lambda: cm.STPaths(dag_grid(10), 0, 99),
    "partition": lambda: cm.PartitionMatroid([list(range(k, k + 5)) for k in range(0, 20, 5)], [2] * 4),
    "perrault_shortest_path": lambda: load_problem("problems/perrault_shortest_path.toml").build_space(),
    "routing_geant": lambda: load_problem("problems/routing_geant.toml").build_space(),
    "kmax": lambda: load_problem("problems/kmax.toml").build_space(),
}


@pytest.mark.slow
@pytest.mark.parametrize("family", list(BENCH))
def test_the_bench_spaces_keep_their_routes_at_the_default_caps(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench/norm_large.py``, ``bench/oracle.py`` and ``problems/`` spaces (the full count: up to 18 s each)."""
    make = BENCH[family]
    assert plans(make(), True)[:-1] == full_count(monkeypatch, make)
