"""Hard queries in one tree: SCIP's constraint handler, CP-SAT's circuit, the max-flow engines.

* ``scip`` answers lazily separated families (s-t paths, spanning trees, forests, with side rows)
  in one solve, the separators running in a PySCIPOpt constraint handler; answers match brute
  force, and a query's answer does not depend on the queries asked before (the tie rule).
* ``ortools`` models directed s-t paths with ``AddCircuit``: one solve, answers match brute force
  (graphs with an arc ``t -> s``, arcs into ``s``, side rows, every restriction).
* ``scip`` without the orientation columns of undirected paths (``oriented=False``, as ``auto`` builds it)
  and CP-SAT's hop limits rounded to the paths' parity give the same answers as brute force.
* The min cuts of the connectivity separators are the same on OR-Tools' max flow and scipy's.
"""

from __future__ import annotations

import pickle

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm

pytest.importorskip("pyscipopt")
pytest.importorskip("ortools")

from cmab_milp.oracles.backends.scip import _ScipModel
from cmab_milp.oracles.mip.maxflow import FlowEngine


def grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def cyclic_digraph() -> nx.DiGraph:
    """Arcs both ways, an arc t -> s, arcs into s and out of t, a 2-cycle: every case the circuit must handle."""
    g = grid(3).to_directed()
    g.add_edge(8, 0)
    g.add_edge(4, 0)
    return g


SPACES = {
    "paths 3x3": lambda: cm.STPaths(grid(3), 0, 8),
    "paths 3x3 + hop limit": lambda: cm.STPaths(grid(3), 0, 8).with_constraint(np.ones(12), "<=", 6),
    "paths digraph": lambda: cm.STPaths(cyclic_digraph(), 0, 8),
    "paths digraph + knapsack": lambda: cm.STPaths(cyclic_digraph(), 0, 8).with_constraint(
        np.linspace(0.5, 1.5, 26), "<=", 5.5
    ),
    "trees 3x3": lambda: cm.SpanningTrees(grid(3)),
    "trees 3x3 + knapsack": lambda: cm.SpanningTrees(grid(3)).with_constraint(np.linspace(0.5, 1.5, 12), "<=", 7.0),
    "forests K5": lambda: cm.GraphicMatroid(nx.complete_graph(5)),
}


def queries(space: cm.ActionSpace, n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        w = rng.uniform(0.1, 1.0, space.d) if k % 2 == 0 else rng.normal(size=space.d)
        q: dict = {"weights": w}
        arms = rng.permutation(space.d)
        if k % 3 == 1:
            q["exclude"] = [int(arms[0])]
        if k % 4 == 3:
            q["forbid_pairs"] = [(int(arms[1]), int(arms[2]))]
        out.append(q)
    return out


def best(actions: np.ndarray, q: dict) -> float | None:
    ok = np.ones(len(actions), bool)
    for i in q.get("exclude", ()):
        ok &= ~actions[:, i]
    for i, j in q.get("forbid_pairs", ()):
        ok &= ~(actions[:, i] & actions[:, j])
    return float((actions[ok] @ q["weights"]).max()) if ok.any() else None


@pytest.fixture
def scip_solves(monkeypatch):
    """How many SCIP solves each query ran."""
    count = [0]
    original = _ScipModel.solve

    def spy(self, tie_tol=None):
        count[0] += 1
        return original(self, tie_tol)

    monkeypatch.setattr(_ScipModel, "solve", spy)
    return count


@pytest.mark.parametrize("family", list(SPACES))
def test_scip_one_tree_matches_brute_force_in_one_solve(family: str, scip_solves) -> None:
    space = SPACES[family]()
    oracle = cm.make_oracle(space, "scip", verify=True)
    assert oracle.one_tree
    actions = space.enumerate()
    for q in queries(space, 8):
        before = scip_solves[0]
        answer = oracle.argmax(**q)
        assert scip_solves[0] - before == 1  # no re-solve: the cuts entered the tree
        optimum = best(actions, q)
        if optimum is None:
            assert answer is None
        else:
            assert float(q["weights"] @ answer) == pytest.approx(optimum, abs=1e-9)
    if family in ("paths 3x3", "paths digraph"):  # (the others' compile-time short-cycle rows suffice here)
        assert oracle._model().handler.rows_added > 0  # the handler's rows were needed, and entered the tree


def test_scip_without_one_tree_resolves() -> None:
    """``one_tree=False``: the old re-solve loop, same answers."""
    space = SPACES["trees 3x3"]()
    one, loop = cm.make_oracle(space, "scip"), cm.make_oracle(space, "scip", one_tree=False)
    assert one.one_tree and not loop.one_tree and loop._model().handler is None
    for q in queries(space, 6, seed=3):
        a, b = one.argmax(**q), loop.argmax(**q)
        assert float(q["weights"] @ a) == pytest.approx(float(q["weights"] @ b), abs=1e-9)
    with pytest.raises(ValueError, match="sepa_freq"):
        cm.make_oracle(space, "scip", sepa_freq=-2)


@pytest.mark.parametrize("backend", ["scip", "ortools"])
def test_tie_rule_holds_in_one_tree(backend: str) -> None:
    """Same query, same answer, whatever was asked before (ties: integer weights on a grid)."""
    space = cm.STPaths(grid(4).to_directed(), 0, 15)
    tied = {"weights": np.ones(space.d)}
    first = cm.make_oracle(space, backend).argmax(**tied)
    oracle = cm.make_oracle(space, backend)
    for q in queries(space, 3, seed=5):
        oracle.argmax(**q)
    assert np.array_equal(oracle.argmax(**tied), first)


@pytest.mark.parametrize("family", [f for f in SPACES if "digraph" in f])
def test_cpsat_circuit_matches_brute_force(family: str) -> None:
    space = SPACES[family]()
    oracle = cm.make_oracle(space, "ortools", verify=True)
    assert oracle.circuit
    actions = space.enumerate()
    for q in queries(space, 10, seed=1):
        answer = oracle.argmax(**q)
        optimum = best(actions, q)
        if optimum is None:
            assert answer is None
        else:
            assert float(q["weights"] @ answer) == pytest.approx(optimum, abs=1e-9)
    include = {"weights": np.ones(space.d), "include": [space.arms.index((4, 5))]}
    assert oracle.argmax(**include)[space.arms.index((4, 5))]


def test_cpsat_circuit_only_for_directed_paths() -> None:
    assert not cm.make_oracle(SPACES["paths 3x3"](), "ortools").circuit
    assert not cm.make_oracle(SPACES["paths digraph"](), "ortools", native=False).circuit
    with pytest.raises(ValueError, match="CP-SAT parameter"):
        cm.make_oracle(SPACES["paths digraph"](), "ortools", parameters={"no_such_parameter": 1})


def test_cpsat_circuit_longest_path_beats_the_cut_loop() -> None:
    """5x5 grid digraph, longest paths: one circuit solve against the formulation's lazy-cut loop (same values)."""
    space = cm.STPaths(grid(5).to_directed(), 0, 24)
    circuit, loop = cm.make_oracle(space, "ortools"), cm.make_oracle(space, "ortools", native=False)
    w = np.random.default_rng(0).uniform(0.1, 1.0, space.d)
    assert float(w @ circuit.argmax(w)) == pytest.approx(float(w @ loop.argmax(w)), abs=1e-9)


@pytest.mark.parametrize("family", ["paths 3x3", "paths 3x3 + hop limit"])
def test_scip_without_orientation_matches_brute_force(family: str, scip_solves) -> None:
    """``oriented=False``: the orientation columns dropped, the s-t cuts separated in the tree instead."""
    space = SPACES[family]()
    oracle = cm.make_oracle(space, "scip", oriented=False, verify=True)
    assert oracle.formulation.n_aux == space.formulation().n_aux - space.d  # one orientation column an edge
    kinds = [s.kind for s in oracle.formulation.fractional_separators]
    assert kinds == ["st_paths_unoriented"] or not space.formulation().fractional_separators
    actions = space.enumerate()
    for q in queries(space, 8, seed=2):
        before = scip_solves[0]
        answer = oracle.argmax(**q)
        assert scip_solves[0] - before == 1
        optimum = best(actions, q)
        if optimum is None:
            assert answer is None
        else:
            assert float(q["weights"] @ answer) == pytest.approx(optimum, abs=1e-9)
    with pytest.raises(ValueError, match="oriented"):
        cm.make_oracle(space, "scip", oriented="no")


def test_scip_params_are_set_and_checked() -> None:
    """``params``: SCIP's own parameter names, set on the model; unknown names, bad values and the parameters the
    backend owns (tolerances, the tie rule, the time limit) are refused at construction."""
    space = SPACES["paths 3x3 + hop limit"]()
    oracle = cm.make_oracle(space, "scip", params={"branching/relpscost/maxlookahead": 4})
    assert oracle._model().model.getParam("branching/relpscost/maxlookahead") == 4
    w = np.random.default_rng(1).uniform(0.1, 1.0, space.d)
    assert float(w @ oracle.argmax(w)) == pytest.approx(float((space.enumerate() @ w).max()), abs=1e-9)
    bad = [
        {"no/such/parameter": 1},
        {"branching/relpscost/maxlookahead": 0},
        {"limits/gap": 0.1},
        {"limits/maxorigsol": 5},
        ["branching/relpscost/maxlookahead"],
    ]
    for params in bad:
        with pytest.raises(ValueError, match=r"SCIP parameter|params must"):
            cm.make_oracle(space, "scip", params=params)


def test_unoriented_separator_finds_the_st_cut() -> None:
    """Without the orientation columns the LP may split its unit into stubs at s and t: the s-t cut is found."""
    from cmab_milp.oracles.mip.graph_cuts import fractional_cuts, without_orientation

    space = cm.STPaths(nx.path_graph(4), 0, 3, cuts_min_edges=1)
    x = np.array([1.0, 0.0, 1.0])  # the edges at s and t, not the middle one
    assert fractional_cuts(space.formulation(), x) == []  # the oriented formulation's rows imply the cut
    (cut,) = fractional_cuts(without_orientation(space.formulation()), x)
    assert cut.cols == (1,) and cut.lb == 1.0


@pytest.mark.parametrize("parity", [True, False])
def test_cpsat_hop_limit_parity_matches_brute_force(parity: bool) -> None:
    """A hop limit of 7 arcs on a 3x3 grid digraph (paths have 4, 6 or 8): the circuit model gets 6 with parity."""
    base = cm.STPaths(grid(3).to_directed(), 0, 8)
    space = base.with_constraint(np.ones(base.d), "<=", 7)
    oracle = cm.make_oracle(space, "ortools", parity=parity, verify=True)
    linear = [ct.linear for ct in oracle._base.proto.constraints if ct.has_linear()]
    hop = [row for row in linear if len(row.vars) == base.d]
    assert [ct.domain[1] for ct in hop] == [6 if parity else 7]
    actions = space.enumerate()
    for q in queries(space, 8, seed=4):
        answer = oracle.argmax(**q)
        optimum = best(actions, q)
        assert (answer is None) == (optimum is None)
        if optimum is not None:
            assert float(q["weights"] @ answer) == pytest.approx(optimum, abs=1e-9)
    with pytest.raises(ValueError, match="parity"):
        cm.make_oracle(space, "ortools", parity=1)


def test_auto_gives_scip_its_options() -> None:
    """``auto`` builds SCIP without the orientation columns (``AUTO_BACKEND_OPTIONS``); ``backend_options``
    replaces that, and a malformed mapping is refused at construction."""
    space = SPACES["paths 3x3 + hop limit"]()
    w = np.random.default_rng(0).uniform(0.1, 1.0, space.d)
    default = cm.make_oracle(space, "auto")
    given = cm.make_oracle(space, "auto", backend_options={"scip": {"oriented": True, "sepa_freq": 0}})
    for oracle, oriented in ((default, False), (given, True)):
        scip = oracle._oracle("scip")
        assert scip.oriented is oriented
        assert float(w @ scip.argmax(w)) == pytest.approx(float((space.enumerate() @ w).max()), abs=1e-9)
    assert given._oracle("scip").sepa_freq == 0
    assert default._oracle("scip").params == {"branching/relpscost/maxlookahead": 4}
    copy = pickle.loads(pickle.dumps(default._oracle("scip")))  # the unoriented formulation travels with it
    assert copy.formulation.n_aux == default._oracle("scip").formulation.n_aux
    assert float(w @ copy.argmax(w)) == pytest.approx(float((space.enumerate() @ w).max()), abs=1e-9)
    for bad in ({"scip": "oriented"}, ["scip"], {"scip": {1: True}}):
        with pytest.raises(ValueError, match="backend_options"):
            cm.make_oracle(space, "auto", backend_options=bad)


@pytest.mark.parametrize("seed", range(6))
def test_max_flow_engines_give_the_same_minimal_cut(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 12
    g = nx.gnp_random_graph(n, 0.4, seed=seed, directed=True)
    tails = np.array([u for u, _ in g.edges()], dtype=np.int64)
    heads = np.array([v for _, v in g.edges()], dtype=np.int64)
    caps = rng.integers(0, 5, len(tails)).astype(np.int64)  # zeros and ties: many minimum cuts
    engines = [FlowEngine(n, tails, heads, caps, e) for e in ("scipy", "ortools")]
    for source in range(n):
        for sink in range(n):
            if source != sink:
                (v1, s1), (v2, s2) = (e.cut(source, sink) for e in engines)
                assert v1 == v2
                assert np.array_equal(s1, s2)
                reference = nx.maximum_flow_value(_capacitated(n, tails, heads, caps), source, sink)
                assert v1 == reference


def _capacitated(n, tails, heads, caps) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u, v, c in zip(tails.tolist(), heads.tolist(), caps.tolist(), strict=True):
        g.add_edge(u, v, capacity=c + g.get_edge_data(u, v, {"capacity": 0})["capacity"])
    return g
