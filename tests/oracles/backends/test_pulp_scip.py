"""The ``pulp`` / ``pulp:<SOLVER>`` and ``scip`` backends against brute force.

Random instances of every family (fresh graphs and arrays from a seed, unlike
the fixed instances of the conformance kit), random include / exclude /
forbid_pairs, and SCIP's norm index for both signs and for semidefinite and
indefinite ``M``. The truth is ``make_oracle(space, "enumerate")``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles import OracleError, UnsupportedQuery, norm_objective

pytest.importorskip("pulp")

LINEAR_BACKENDS = ["pulp:PULP_CBC_CMD", "pulp:HiGHS", "scip"]


def _needs(backend: str):
    if backend == "scip" or backend.endswith("SCIP_PY"):
        pytest.importorskip("pyscipopt")
    if backend.startswith("pulp:"):
        from cmab_milp.oracles.backends.pulp import available_pulp_solvers

        if backend.split(":")[1] not in available_pulp_solvers():
            pytest.skip(f"PuLP solver {backend} not available here")


# ------------------------------------------------------------------ instances
def _connected_gnp(n: int, p: float, rng: np.random.Generator) -> nx.Graph:
    while True:
        g = nx.gnp_random_graph(n, p, seed=int(rng.integers(2**31)))
        if nx.is_connected(g):
            return g


def _dag(n: int, p: float, rng: np.random.Generator) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u in range(n):
        for v in range(u + 1, n):
            if v == u + 1 or rng.random() < p:
                g.add_edge(u, v)
    return g


def _bipartite(k: int, p: float, rng: np.random.Generator, perfect: bool) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(2 * k))
    for u in range(k):
        for v in range(k, 2 * k):
            if rng.random() < p:
                g.add_edge(u, v)
    if perfect:
        g.add_edges_from((u, k + int(v)) for u, v in enumerate(rng.permutation(k)))
    return g


def _partition(d: int, rng: np.random.Generator) -> cm.PartitionMatroid:
    cut = np.sort(rng.choice(np.arange(1, d), size=2, replace=False))
    blocks = [list(b) for b in np.split(rng.permutation(d), cut)]
    return cm.PartitionMatroid(blocks, [int(rng.integers(0, len(b) + 1)) for b in blocks])


FAMILIES = {
    "cardinality": lambda r: cm.Cardinality(int(r.integers(5, 9)), int(r.integers(1, 4)), exact=bool(r.random() < 0.5)),
    "partition": lambda r: _partition(int(r.integers(6, 9)), r),
    "graphic": lambda r: cm.GraphicMatroid(_connected_gnp(6, 0.5, r)),
    "spanning-trees": lambda r: cm.SpanningTrees(_connected_gnp(6, 0.5, r)),
    "paths-dag": lambda r: cm.STPaths(_dag(7, 0.4, r), 0, 6),
    "paths-cyclic-undirected": lambda r: cm.STPaths(_connected_gnp(7, 0.45, r), 0, 6),
    "matchings-bipartite": lambda r: cm.Matchings(_bipartite(4, 0.5, r, perfect=False)),
    "matchings-general": lambda r: cm.Matchings(_connected_gnp(7, 0.4, r)),
    "matchings-perfect": lambda r: cm.Matchings(_bipartite(4, 0.4, r, perfect=True), perfect=True),
    "explicit": lambda r: cm.ExplicitActions(r.random((int(r.integers(5, 15)), 7)) < 0.4),
    "with-constraint": lambda r: cm.Cardinality(8, 4).with_constraint(r.integers(1, 5, 8), "<=", 7),
    "intersection": lambda r: cm.Intersection(cm.Cardinality(8, 3), _partition(8, r)),
}


def random_restrictions(rng: np.random.Generator, d: int, kind: int) -> dict:
    arms = [int(a) for a in rng.permutation(d)]
    out: dict = {}
    if kind % 3 >= 1:
        out["include"] = arms[:1]
        out["exclude"] = arms[1 : 1 + int(rng.integers(0, 3))]
    if kind % 3 == 2 and d >= 5:
        out["forbid_pairs"] = [(arms[2], arms[3]), (arms[4], arms[0])]
    return out


def random_weights(rng: np.random.Generator, d: int, kind: int) -> np.ndarray:
    if kind % 2 == 0:  # near-ties: a coarse grid plus noise at the contract's tolerance
        return rng.integers(-2, 5, d) / 4 + rng.normal(scale=3e-9, size=d)
    return rng.normal(size=d)


def assert_optimal(space, restrictions: dict, answer, truth, value) -> None:
    """``answer`` is a feasible action within 1e-9 * (1 + |opt|) of brute force's ``truth``."""
    if truth is None:
        assert answer is None, "the query is infeasible but an action was returned"
        return
    assert answer is not None, "a feasible query returned None"
    assert answer.dtype == bool and answer.shape == (space.d,)
    assert space.contains(answer)
    assert answer[restrictions.get("include", [])].all()
    assert not answer[restrictions.get("exclude", [])].any()
    assert not any(answer[i] and answer[j] for i, j in restrictions.get("forbid_pairs", []))
    best = value(truth)
    assert value(answer) >= best - 1e-9 * (1 + abs(best)), f"value {value(answer)!r} < optimum {best!r}"


# --------------------------------------------------------------- linear queries
@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("backend", LINEAR_BACKENDS)
def test_linear_queries_match_brute_force_on_random_instances(backend: str, family: str) -> None:
    _needs(backend)
    rng = np.random.default_rng([7, sorted(FAMILIES).index(family)])
    space = FAMILIES[family](rng)
    oracle, truth = cm.make_oracle(space, backend), cm.make_oracle(space, "enumerate")
    for kind in range(3):
        w = random_weights(rng, space.d, kind)
        res = random_restrictions(rng, space.d, kind)
        assert_optimal(space, res, oracle.argmax(w, **res), truth.argmax(w, **res), lambda a, w=w: float(w @ a))
    assert oracle.ledger.queries == 3


def test_scip_through_pulp_matches_brute_force() -> None:
    _needs("pulp:SCIP_PY")
    rng = np.random.default_rng(3)
    space = FAMILIES["paths-cyclic-undirected"](rng)
    oracle, truth = cm.make_oracle(space, "pulp:SCIP_PY"), cm.make_oracle(space, "enumerate")
    for kind in range(3):
        w, res = random_weights(rng, space.d, kind), random_restrictions(rng, space.d, kind)
        assert_optimal(space, res, oracle.argmax(w, **res), truth.argmax(w, **res), lambda a, w=w: float(w @ a))


# A 25-edge subgraph of GEANT cut out of the recorded compare-oracles query (tests/experiments/test_compare.py,
# GEANT_QUERY_*) by deleting edges while the defect stayed: with SCIP 10.0's default presolve (probing),
# pulp:SCIP_PY answered a path worth 19 where the best path through edge 17 is worth 63, and SCIP reported
# its wrong optimum with a matching dual bound. Edge order matters (it fixes the model's column order).
PROBING_GRAPH_EDGES = [
    (0, 3), (0, 4), (0, 5), (0, 6), (0, 7), (0, 2), (1, 9), (1, 5), (7, 11), (7, 12), (7, 8), (7, 19), (8, 14),
    (9, 10), (10, 11), (10, 18), (11, 12), (12, 13), (13, 14), (13, 15), (13, 16), (14, 15), (14, 17), (15, 16),
    (17, 19),
]  # fmt: skip
PROBING_WEIGHTS = [7, 15, -13, -1, 82, 18, 8, -26, -3, 20, 11, 27, 18, -14, -4, 1, -22, 1, 0, 13, -1, -4, 26, -9, 30]


def _probing_space() -> cm.STPaths:
    graph = nx.Graph()
    graph.add_nodes_from(range(20))
    graph.add_edges_from(PROBING_GRAPH_EDGES)
    space = cm.STPaths(graph, 18, 16)
    assert [
        (space.nodes[t], space.nodes[h]) for t, h in zip(space.tail, space.head, strict=True)
    ] == PROBING_GRAPH_EDGES
    return space


@pytest.mark.parametrize(
    ("backend", "solver_options"),
    [
        ("pulp:SCIP_PY", None),
        ("pulp:SCIP_PY", {"options": ["numerics/feastol=1e-9"]}),  # user options keep the exact ones
        ("pulp:HiGHS", None),
        ("pulp:PULP_CBC_CMD", None),
        ("scip", None),
    ],
)
def test_optimal_path_on_the_graph_where_scip_probing_lost_it(backend: str, solver_options) -> None:
    _needs(backend)
    space = _probing_space()
    weights = np.asarray(PROBING_WEIGHTS, float)
    options = {} if solver_options is None else {"solver_options": solver_options}
    oracle, truth = cm.make_oracle(space, backend, **options), cm.make_oracle(space, "enumerate")
    for restrictions in ({"include": [17]}, {}, {"include": [17], "exclude": [4]}):
        best = truth.argmax(weights, **restrictions)
        assert_optimal(space, restrictions, oracle.argmax(weights, **restrictions), best, lambda a: float(weights @ a))
    assert float(weights @ truth.argmax(weights, include=[17])) == 63.0  # the recorded optimum


@pytest.mark.parametrize("solver", ["HiGHS", "SCIP_PY"])
def test_pulp_answers_the_bound_does_not_prove_are_refused(solver: str) -> None:
    """At a 50% gap both solvers stop at an incumbent below their bound; the bound check must refuse it."""
    from cmab_milp.oracles.backends.pulp import PulpOracle

    _needs(f"pulp:{solver}")
    rng = np.random.default_rng(0)
    d = 24
    space = cm.Cardinality(d, 12).with_constraint(rng.integers(5, 40, d), "<=", 150)
    loose = PulpOracle(space, solver, solver_options={"gapRel": 0.5})
    exact, truth = PulpOracle(space, solver), cm.make_oracle(space, "highs")
    refused = 0
    for _ in range(4):
        w = rng.normal(size=d) + 1
        best = float(w @ truth.argmax(w))
        assert float(w @ exact.argmax(w)) >= best - 1e-9 * (1 + abs(best))
        try:
            answer = loose.argmax(w)
        except OracleError as exc:
            assert "bound" in str(exc)
            refused += 1
        else:  # accepted only if the bound proved it
            assert float(w @ answer) >= best - 1e-9 * (1 + abs(best))
    assert refused > 0, "a 50% gap never stopped early: the instance no longer exercises the bound check"


def test_pulp_refuses_loose_gaps_for_solvers_without_a_bound() -> None:
    from cmab_milp.oracles.backends.pulp import BOUND_SOLVERS, PulpOracle

    _needs("pulp:PULP_CBC_CMD")
    assert "PULP_CBC_CMD" not in BOUND_SOLVERS
    with pytest.raises(ValueError, match="reports no bound"):
        PulpOracle(cm.Cardinality(4, 2), "PULP_CBC_CMD", solver_options={"gapRel": 0.01})
    PulpOracle(cm.Cardinality(4, 2), "PULP_CBC_CMD", solver_options={"gapAbs": 1e-12})  # tighter is fine


@pytest.mark.parametrize("backend", LINEAR_BACKENDS)
def test_infeasible_queries_return_none(backend: str) -> None:
    _needs(backend)
    exact = cm.make_oracle(cm.Cardinality(6, 3, exact=True), backend)
    assert exact.argmax(np.ones(6), exclude=[0, 1, 2, 3]) is None  # 2 arms left, 3 needed
    assert exact.argmax(np.ones(6), include=[0], forbid_pairs=[(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)]) is None
    path = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (2, 4)])
    trees = cm.make_oracle(cm.SpanningTrees(path), backend)
    assert trees.argmax(np.ones(5), exclude=[4]) is None  # edge (2, 4) is a bridge
    assert trees.argmax(np.ones(5), exclude=[3]) is not None


def test_lazy_cuts_remove_a_disjoint_cycle() -> None:
    """Path 0-1 plus a hexagon hanging off node 0: the degree rows alone admit path + hexagon."""
    graph = nx.Graph([(0, 1), (0, 2), *((2 + k, 2 + (k + 1) % 6) for k in range(6))])
    space = cm.STPaths(graph, 0, 1)
    w = np.array([0.0, -1.0, *[1.0] * 6])
    for backend in ("scip", "pulp:HiGHS", "pulp:PULP_CBC_CMD"):
        _needs(backend)
        oracle = cm.make_oracle(space, backend)
        assert oracle.argmax(w).astype(int).tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
        assert oracle.argmax(w).astype(int).tolist() == [1, 0, 0, 0, 0, 0, 0, 0]  # cuts found again
        assert oracle.ledger.queries == 2


# -------------------------------------------------------------- pulp specifics
@pytest.mark.parametrize("name", ["pulp:NO_SUCH_SOLVER", "pulp:GUROBI_CMD", "pulp:HiGHS_CMD"])
def test_unknown_or_unavailable_pulp_solvers_are_refused(name: str) -> None:
    from cmab_milp.oracles.backends.pulp import available_pulp_solvers

    if name.split(":")[1] in available_pulp_solvers():
        pytest.skip(f"{name} happens to be available here")
    with pytest.raises(ValueError, match="unknown or unavailable PuLP solver") as info:
        cm.make_oracle(cm.Cardinality(3, 1), name)
    assert all(s in str(info.value) for s in available_pulp_solvers())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time_limit": -1.0}, "time_limit"),
        ({"time_limit": float("nan")}, "time_limit"),
        ({"solver_options": ["gapRel", 0]}, "solver_options"),
        ({"solver": "PULP_CBC_CMD", "solver_options": {"no_such_option": 1}}, "rejects the options"),
    ],
)
def test_pulp_bad_options_are_refused_before_solving(options: dict, message: str) -> None:
    from cmab_milp.oracles.backends.pulp import PulpOracle

    options = {"solver": "HiGHS", **options}
    _needs(f"pulp:{options['solver']}")
    with pytest.raises(ValueError, match=message):
        PulpOracle(cm.Cardinality(3, 1), **options)


def test_default_pulp_solver_is_cbc_then_highs() -> None:
    from cmab_milp.oracles.backends.pulp import available_pulp_solvers

    oracle = cm.make_oracle(cm.Cardinality(4, 2), "pulp")
    expected = "PULP_CBC_CMD" if "PULP_CBC_CMD" in available_pulp_solvers() else "HiGHS"
    assert oracle.solver_name == expected
    assert oracle.argmax(np.array([0.1, -1.0, 0.3, 0.2])).astype(int).tolist() == [0, 0, 1, 1]


def test_pulp_declines_norm_queries_but_answers_f_zero() -> None:
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "pulp:HiGHS")
    with pytest.raises(UnsupportedQuery, match="linear queries only"):
        oracle.argmax_norm(np.ones(4), np.eye(4), 1.0)
    mu = np.array([0.5, -0.2, 0.1, 0.4])
    assert oracle.argmax_norm(mu, np.eye(4), 0.0).astype(int).tolist() == [1, 0, 0, 1]


# -------------------------------------------------------------- scip norm index
NORM_SPACES = {
    "cardinality": lambda r: cm.Cardinality(9, 3),
    "partition": lambda r: _partition(9, r),
    "paths-cyclic-undirected": lambda r: cm.STPaths(_connected_gnp(6, 0.5, r), 0, 5),
}


def _matrix(rng: np.random.Generator, d: int, kind: str) -> np.ndarray:
    b = rng.normal(size=(d, d))
    return b @ b.T / d if kind == "psd" else (b + b.T) / 2


@pytest.mark.parametrize("family", sorted(NORM_SPACES))
@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("kind", ["psd", "indefinite"])
def test_scip_norm_queries_match_brute_force(family: str, sign: int, kind: str) -> None:
    pytest.importorskip("pyscipopt")
    rng = np.random.default_rng([11, sign + 1, kind == "psd", sorted(NORM_SPACES).index(family)])
    space = NORM_SPACES[family](rng)
    oracle, truth = cm.make_oracle(space, "scip"), cm.make_oracle(space, "enumerate")
    for k in range(2):
        mu, M, f = rng.normal(size=space.d), _matrix(rng, space.d, kind), float(rng.uniform(0.2, 2.0))
        res = random_restrictions(rng, space.d, k)
        answer = oracle.argmax_norm(mu, M, f, sign, **res)
        assert_optimal(
            space,
            res,
            answer,
            truth.argmax_norm(mu, M, f, sign, **res),
            lambda a, mu=mu, M=M, f=f: norm_objective(mu, M, f, sign, a),
        )


def test_scip_norm_where_every_action_has_negative_quadratic_form() -> None:
    """With ``M = -I`` the MIQCP for sign=+1 only admits the empty action; the index is then ``mu @ a``."""
    pytest.importorskip("pyscipopt")
    oracle = cm.make_oracle(cm.Cardinality(4, 2, exact=True), "scip")
    mu = np.array([1.0, 2.0, -1.0, 0.5])
    assert oracle.argmax_norm(mu, -np.eye(4), 3.0, +1).astype(int).tolist() == [1, 1, 0, 0]
    # sign=-1: the penalty vanishes as well, the answer is the same
    assert oracle.argmax_norm(mu, -np.eye(4), 3.0, -1).astype(int).tolist() == [1, 1, 0, 0]
    assert oracle.argmax_norm(mu, -np.eye(4), 3.0, +1, exclude=[0, 1, 2]) is None


def test_scip_norm_then_linear_reuse_the_same_model() -> None:
    pytest.importorskip("pyscipopt")
    oracle = cm.make_oracle(cm.Cardinality(5, 2), "scip")
    mu = np.array([0.3, 0.2, 0.1, 0.0, -0.1])
    big = np.diag([0.0, 0.0, 0.0, 4.0, 4.0])
    assert oracle.argmax_norm(mu, big, 1.0, +1).astype(int).tolist() == [0, 0, 0, 1, 1]
    assert oracle.argmax(mu).astype(int).tolist() == [1, 1, 0, 0, 0]  # the column s is closed again
    assert oracle.argmax_norm(mu, big, 1.0, -1).astype(int).tolist() == [1, 1, 0, 0, 0]


# ---------------------------------------------------- limits, batches, pickling
def test_time_limits_raise_oracle_error() -> None:
    pytest.importorskip("pyscipopt")
    rng = np.random.default_rng(0)
    d = 14
    oracle = cm.make_oracle(cm.Cardinality(d, 5), "scip", time_limit=1e-6)
    with pytest.raises(OracleError, match="timelimit"):
        oracle.argmax_norm(rng.normal(size=d), _matrix(rng, d, "indefinite"), 1.0, +1)
    with pytest.raises(ValueError, match="time_limit"):
        cm.make_oracle(cm.Cardinality(d, 5), "scip", time_limit=0)


@pytest.mark.parametrize("backend", ["scip", "pulp:HiGHS"])
def test_batches_in_threads_match_single_queries(backend: str) -> None:
    _needs(backend)
    rng = np.random.default_rng(5)
    space = FAMILIES["spanning-trees"](rng)
    oracle, truth = cm.make_oracle(space, backend), cm.make_oracle(space, "enumerate")
    queries = [dict(weights=random_weights(rng, space.d, k), **random_restrictions(rng, space.d, k)) for k in range(6)]
    answers = oracle.argmax_batch(queries)
    assert oracle.ledger.rounds == 1 and oracle.ledger.queries == 6
    for q, a in zip(queries, answers, strict=True):
        res = {k: v for k, v in q.items() if k != "weights"}
        assert_optimal(space, res, a, truth.argmax(**q), lambda x, w=q["weights"]: float(w @ x))
    oracle.close()


@pytest.mark.parametrize("sign", [1, -1])
def test_scip_norm_resolves_near_ties(sign: int) -> None:
    """The best two actions made to differ by 2e-8 in index: SCIP must pick the better one."""
    pytest.importorskip("pyscipopt")
    rng = np.random.default_rng(21 + sign)
    space = cm.Cardinality(7, 3)
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "scip")
    for _ in range(3):
        mu, M, f = rng.normal(size=7), _matrix(rng, 7, "psd"), float(rng.uniform(0.5, 2.0))
        index = np.array([norm_objective(mu, M, f, sign, a) for a in actions])
        first, second = np.argsort(index)[::-1][:2]
        gain = np.flatnonzero(actions[second] & ~actions[first])
        shift = index[first] - index[second] + 2e-8  # `second` will lead by 2e-8
        if len(gain):
            mu[gain[0]] += shift
        else:  # second is a subset of first
            mu[np.flatnonzero(actions[first] & ~actions[second])[0]] -= shift
        index = np.array([norm_objective(mu, M, f, sign, a) for a in actions])
        answer = oracle.argmax_norm(mu, M, f, sign)
        best = index.max()
        assert norm_objective(mu, M, f, sign, answer) >= best - 1e-9 * (1 + abs(best))


@pytest.mark.parametrize("backend", ["scip", "pulp:HiGHS"])
def test_models_can_be_written_for_inspection(backend: str, tmp_path) -> None:
    _needs(backend)
    space = cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)))
    oracle = cm.make_oracle(space, backend)
    oracle.argmax(np.ones(space.d))
    text = oracle.write_model(tmp_path / "trees.lp").read_text()
    assert "a0" in text and f"a{space.d - 1}" in text
