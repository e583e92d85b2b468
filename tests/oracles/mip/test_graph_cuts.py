"""Graph MILPs at size: fractional separators, root cuts, flow rows, against brute force.

Every separator is checked on small graphs: each cut it returns is valid (every
action of the space satisfies it) and violated by the point it was given, and
the exact ones find a cut exactly when brute force over all node sets finds a
violated one. Queries with root cuts (and with the flow rows) are checked
against enumeration, with restrictions and side rows, and for determinism.
"""

from __future__ import annotations

import itertools
import zipfile

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import CompiledModel
from cmab_milp.oracles.mip.graph_cuts import (
    fractional_cuts,
    separate_connectivity_lp,
    separate_st_cut_lp,
    separate_subtours_lp,
)
from cmab_milp.oracles.mip.options import (
    FAMILY_HIGHS_OPTIONS,
    FAMILY_POSITIVE_COST_OPTIONS,
    highs_model_options,
    positive_cost_options,
)
from cmab_milp.oracles.mip.root_cuts import add_root_cuts
from cmab_milp.oracles.mip.starts import _start_hint
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.spaces.formulation import Formulation, Row, row_violation


def _grid(n: int, m: int | None = None) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, m or n))


def _small_graphs() -> list[nx.Graph]:
    out = [nx.complete_graph(5), _grid(3), nx.petersen_graph()]
    out += [nx.gnm_random_graph(7, 11, seed=s) for s in range(4)]
    return [g for g in out if nx.is_connected(g)]


def _points(d: int, rng: np.random.Generator, n: int = 30) -> list[np.ndarray]:
    """LP-like points: many zeros, some ones, the rest fractional."""
    out = []
    for _ in range(n):
        x = rng.uniform(0.0, 1.0, d) * (rng.uniform(size=d) < 0.7)
        x[rng.uniform(size=d) < 0.25] = 1.0
        out.append(x)
    return out


def _min_subtour_slack(space, x: np.ndarray) -> float:
    """min over node sets S (|S| >= 2) of |S| - x(E(S)), by brute force."""
    best = np.inf
    for r in range(2, space.n_nodes + 1):
        for nodes in itertools.combinations(range(space.n_nodes), r):
            mask = np.zeros(space.n_nodes, bool)
            mask[list(nodes)] = True
            best = min(best, r - x[mask[space.tail] & mask[space.head]].sum())
    return best


def _assert_valid(cuts: list[Row], actions: np.ndarray, x: np.ndarray) -> None:
    for row in cuts:
        assert row_violation(row, x) > 1e-6, "a returned cut is not violated by the point"
        activity = actions[:, list(row.cols)].astype(float) @ np.array(row.coefs)
        assert ((activity >= row.lb - 1e-9) & (activity <= row.ub + 1e-9)).all(), f"cut {row} removes an action"


# ------------------------------------------------------------------ subtour separation
@pytest.mark.parametrize("cls", [cm.GraphicMatroid, cm.SpanningTrees])
def test_subtour_separation_is_exact_and_valid(cls):
    rng = np.random.default_rng(3)
    for graph in _small_graphs()[:5]:
        space = cls(graph)
        actions = space.enumerate()
        for x in _points(space.d, rng, 15):
            cuts = separate_subtours_lp(space, x)
            _assert_valid(cuts, actions, x)
            assert bool(cuts) == (_min_subtour_slack(space, x) < 1.0 - 1e-4)


def test_subtour_separation_finds_a_set_inside_a_connected_support():
    # heavy triangle 0-1-2 (2.4 > 2) inside the connected support {0, 1, 2, 3} (2.9 <= 3): only min cuts see it
    space = cm.GraphicMatroid(nx.complete_graph(4))
    x = np.array([0.8, 0.8, 0.0, 0.8, 0.0, 0.5])
    (cut,) = separate_subtours_lp(space, x)
    assert set(cut.cols) == {0, 1, 3} and cut.ub == 2.0


def test_cycle_cuts_of_integer_candidates_use_the_cycles():
    space = cm.GraphicMatroid(_grid(3))
    a = np.zeros(space.d, bool)
    cycle = {(0, 1), (1, 4), (3, 4), (0, 3)}
    tail = {(0, 1), (1, 2)}  # a tree hanging off the cycle: the cut is the cycle's, not the component's
    for k, (u, v) in enumerate(space.arms):
        a[k] = (min(u, v), max(u, v)) in cycle | tail
    (cut,) = space.separate_cycles(a)
    assert cut.ub == 3.0 and len(cut.cols) == 4
    assert space.separate_cycles(np.zeros(space.d, bool)) == []


def test_cycle_cuts_see_two_opposite_arcs():
    """A directed 2-cycle u -> v -> u is no cycle of the simple undirected graph: it still gets its cut."""
    space = cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (2, 1), (2, 3)]), 0, 3)
    a = np.array([0, 1, 1, 0], bool)  # arcs 1->2 and 2->1
    (cut,) = space.separate_cycles(a)
    assert set(cut.cols) == {1, 2} and cut.ub == 1.0


# --------------------------------------------------------------- connectivity separation
def _path_spaces() -> list[cm.STPaths]:
    directed = nx.DiGraph(nx.gnm_random_graph(7, 13, seed=5, directed=True))
    s, t = next((u, v) for u in directed for v in directed if u != v and nx.has_path(directed, u, v))
    return [
        cm.STPaths(_grid(3), 0, 8),
        cm.STPaths(nx.petersen_graph(), 0, 5),
        cm.STPaths(nx.complete_graph(6), 0, 1),
        cm.STPaths(directed, s, t),
    ]


def _min_connectivity_violation(space: cm.STPaths, x: np.ndarray) -> float:
    """max over S (s, t not in S; directed: s not in S) and v in S of x(delta(v)) - x(delta(S)), brute force."""
    n, s, t = space.n_nodes, space.s, space.t
    others = [v for v in range(n) if v != s and (space.directed or v != t)]
    worst = -np.inf
    for r in range(1, len(others) + 1):
        for nodes in itertools.combinations(others, r):
            mask = np.zeros(n, bool)
            mask[list(nodes)] = True
            if space.directed:
                cut = x[~mask[space.tail] & mask[space.head]].sum()
                need = [x[space.head == v].sum() for v in nodes]
            else:
                cut = x[mask[space.tail] != mask[space.head]].sum()
                need = [x[(space.tail == v) | (space.head == v)].sum() for v in nodes]
            worst = max(worst, max(need) - cut)
    return worst


@pytest.mark.parametrize("index", range(4))
def test_connectivity_separation_is_exact_and_valid(index):
    space = _path_spaces()[index]
    actions = space.enumerate()
    rng = np.random.default_rng(index)
    for x in _points(space.d, rng, 12):
        cuts = separate_connectivity_lp(space, x, space.s, space.t, space.directed)
        _assert_valid(cuts, actions, x)
        assert bool(cuts) == (_min_connectivity_violation(space, x) > 1e-4)


def _min_st_cut(space: cm.STPaths, x: np.ndarray) -> float:
    """min over S with s in S, t not in S of x(delta(S)) (directed: x(delta_out(S))), brute force."""
    n, s, t = space.n_nodes, space.s, space.t
    others = [v for v in range(n) if v not in (s, t)]
    best = np.inf
    for r in range(len(others) + 1):
        for nodes in itertools.combinations(others, r):
            mask = np.zeros(n, bool)
            mask[[s, *nodes]] = True
            if space.directed:
                best = min(best, x[mask[space.tail] & ~mask[space.head]].sum())
            else:
                best = min(best, x[mask[space.tail] != mask[space.head]].sum())
    return best


@pytest.mark.parametrize("index", range(4))
def test_st_cut_separation_is_exact_and_valid(index):
    space = _path_spaces()[index]
    actions = space.enumerate()
    rng = np.random.default_rng(10 + index)
    found = 0
    for x in [*_points(space.d, rng, 12), np.zeros(space.d)]:
        cuts = separate_st_cut_lp(space, x, space.s, space.t, space.directed)
        _assert_valid(cuts, actions, x)
        assert bool(cuts) == (_min_st_cut(space, x) < 1.0 - 1e-4)
        found += bool(cuts)
    assert found  # the zero point at least


def _lp_value(space: cm.STPaths, w: np.ndarray) -> float:
    model = CompiledModel(space.formulation())
    model.set_costs(w)
    return float(w @ np.array(model.relaxation_arm_values()))


def test_oriented_paths_close_the_shortest_path_lp_gap():
    """Shortest paths (negative weights): with the orientation the root LP equals Dijkstra's length;
    the degree model alone splits the unit into two dead-end stubs at s and t (a far weaker bound)."""
    g = _grid(9)
    rng = np.random.default_rng(3)
    lengths = rng.uniform(0.1, 1.0, g.number_of_edges())
    for k, (u, v) in enumerate(g.edges()):
        g[u][v]["w"] = lengths[k]
    shortest = nx.shortest_path_length(g, 0, 80, weight="w")
    assert _lp_value(cm.STPaths(g, 0, 80), -lengths) == pytest.approx(-shortest, abs=1e-7)
    plain = cm.STPaths(g, 0, 80, oriented=False)
    assert plain.formulation().n_aux == g.number_of_nodes() - 2  # the visit columns only
    assert _lp_value(plain, -lengths) > -shortest + 1.0


def test_fractional_cuts_filters_and_refuses_bad_points():
    f = cm.GraphicMatroid(nx.complete_graph(3)).formulation()
    assert fractional_cuts(f, np.full(3, 0.9))  # 2.7 > 2
    assert fractional_cuts(f, np.full(3, 0.9), min_violation=1.0) == []
    with pytest.raises(ValueError, match="d=3"):
        fractional_cuts(f, np.ones(4))


# ------------------------------------------------------------------- flow formulation
def _with_flow(make):
    """The space ``make`` builds, with the single-commodity flow rows (its ``flow`` option)."""
    return make(flow=True)


FLOW_SPACES = [
    lambda **kw: cm.SpanningTrees(_grid(3), **kw),
    lambda **kw: cm.GraphicMatroid(nx.gnm_random_graph(6, 10, seed=1), **kw),
    lambda **kw: cm.STPaths(_grid(3), 0, 8, **kw),
    lambda **kw: cm.STPaths(nx.DiGraph(nx.complete_graph(5)), 0, 4, **kw),
]


@pytest.mark.parametrize("cls", [cm.GraphicMatroid, cm.SpanningTrees])
def test_flow_option_is_refused_unless_a_flag_and_kept_by_copies(cls):
    import copy
    import pickle

    with pytest.raises(ValueError, match="flow must be true or false"):
        cls(_grid(3), flow=1)
    space = cls(_grid(3), flow=True)
    for twin in (copy.copy(space), pickle.loads(pickle.dumps(space))):
        assert twin.flow and twin.formulation().n_aux == space.formulation().n_aux > 0
    rule = space.with_constraint(np.ones(space.d), "<=", 5)
    assert rule.flow and rule.formulation().n_aux == space.formulation().n_aux


@pytest.mark.parametrize("index", range(len(FLOW_SPACES)))
def test_flow_rows_alone_make_integer_points_actions(index):
    """Without any lazy cut, the MILP with the flow rows answers with an action of the space, optimally."""
    space = _with_flow(FLOW_SPACES[index])
    f = space.formulation()
    assert f.aux_exact_only.any() and f.lp_core().n_cols == space.d + (f.n_aux - int(f.aux_exact_only.sum()))
    bare = Formulation(
        d=f.d, rows=f.rows, aux_lb=f.aux_lb, aux_ub=f.aux_ub, aux_integer=f.aux_integer, aux_names=f.aux_names
    )
    model = CompiledModel(bare)
    actions = space.enumerate()
    rng = np.random.default_rng(index)
    for _ in range(15):
        w = rng.normal(size=space.d)
        model.set_costs(w)
        a = model.solve().x[: space.d] > 0.5
        assert space.contains(a)
        assert w @ a == pytest.approx((actions @ w).max(), abs=1e-9)


def test_lp_core_and_stacking_keep_the_exact_only_flags():
    space = _with_flow(lambda **kw: cm.SpanningTrees(_grid(3), **kw))
    f = space.formulation()
    core = f.lp_core()
    assert not core.aux_exact_only.any() and core.n_cols == space.d
    assert all(max(r.cols) < core.n_cols for r in core.rows)
    assert len(core.rows) < len(f.rows) and core.fractional_separators == f.fractional_separators
    stacked = Formulation.stack([f, cm.Cardinality(space.d, 4).formulation()])
    assert stacked.aux_exact_only.sum() == f.aux_exact_only.sum()
    assert stacked.fractional_separators == f.fractional_separators
    plain = Formulation(d=2, aux_lb=np.zeros(1), aux_ub=np.ones(1), aux_integer=np.zeros(1, bool), aux_names=["z"])
    assert plain.lp_core() is plain  # aux columns set directly: none is exact-only


# -------------------------------------------------------------- queries with root cuts
def _queries(space, rng, n=12):
    out = []
    for k in range(n):
        q = {"weights": rng.normal(size=space.d)}
        if k % 3 == 1:
            i, j = rng.choice(space.d, 2, replace=False)
            q["forbid_pairs"] = [(int(i), int(j))]
        if k % 3 == 2:
            q["exclude"] = [int(rng.integers(space.d))]
        out.append(q)
    return out


def _brute(space, q):
    actions = space.enumerate()
    ok = np.ones(len(actions), bool)
    for i, j in q.get("forbid_pairs", []):
        ok &= ~(actions[:, i] & actions[:, j])
    for i in q.get("exclude", []):
        ok &= ~actions[:, i]
    return (actions[ok] @ q["weights"]).max() if ok.any() else None


#: Root cuts on the small paths too (the space's size gate at 0).
CUTS = {"cuts_min_edges": 0}
SPACES = {
    "trees": lambda **kw: cm.SpanningTrees(_grid(3), **kw),
    "forests": lambda **kw: cm.GraphicMatroid(nx.gnm_random_graph(6, 10, seed=2), **kw),
    "paths": lambda **kw: cm.STPaths(nx.petersen_graph(), 0, 5, **CUTS, **kw),
    "paths-directed": lambda **kw: cm.STPaths(nx.DiGraph(nx.complete_graph(5)), 0, 4, **CUTS, **kw),
    "trees+knapsack": lambda **kw: cm.SpanningTrees(_grid(3), **kw).with_constraint(np.arange(12) % 3 + 1.0, "<=", 14),
    "paths+knapsack": lambda **kw: cm.STPaths(_grid(3), 0, 8, **CUTS, **kw).with_constraint(
        np.arange(12) % 4 + 1.0, "<=", 9
    ),
}


@pytest.mark.parametrize("flow", [False, True])
@pytest.mark.parametrize("name", list(SPACES))
def test_restricted_queries_match_enumeration(name, flow):
    space = SPACES[name](flow=flow)
    oracle = cm.make_oracle(space, "highs", verify=True)
    rng = np.random.default_rng(len(name))
    for q in _queries(space, rng):
        best = _brute(space, q)
        a = oracle.argmax(**q)
        if best is None:
            assert a is None
        else:
            assert q["weights"] @ a == pytest.approx(best, abs=1e-9)
        assert oracle.model().num_rows == oracle.model().base_rows  # the query's cuts are gone


def test_root_cuts_answer_does_not_depend_on_history():
    """Tied weights, forbid_pairs: the answer of a fresh oracle equals the answer after other queries."""
    space = cm.SpanningTrees(_grid(4))
    rng = np.random.default_rng(7)
    queries = [
        {"weights": rng.integers(-1, 2, space.d) / 2.0, "forbid_pairs": [(0, 1), (2, 5)]},
        {"weights": np.ones(space.d), "exclude": [3]},
        {"weights": rng.integers(0, 2, space.d) * 1.0},
    ]
    fresh = [cm.make_oracle(space, "highs").argmax(**q) for q in queries]
    used = cm.make_oracle(space, "highs")
    for _ in range(2):
        for q, expected in zip(queries[::-1], fresh[::-1], strict=True):
            np.testing.assert_array_equal(used.argmax(**q), expected)


def test_add_root_cuts_tightens_and_refuses_bad_input():
    space = cm.SpanningTrees(_grid(5))
    f = space.formulation()
    model = CompiledModel(f)
    w = np.random.default_rng(0).normal(size=space.d)
    model.set_costs(w)
    model.add_rows([Row((0, 1), (1.0, 1.0), -np.inf, 1.0)])  # a query row
    with model.options({"solve_relaxation": True}):
        before = model.run_relaxation()
    added = add_root_cuts(model, f)
    assert added > 0 and model.num_rows == model.base_rows + 1 + added
    with model.options({"solve_relaxation": True}):
        after = model.run_relaxation()
    assert w @ after[: space.d] <= w @ before[: space.d] + 1e-9
    assert not fractional_cuts(f, after[: space.d], 1e-3)  # converged: the LP point violates no cut
    with pytest.raises(ValueError, match="max_rounds"):
        add_root_cuts(model, f, max_rounds=-1)
    with pytest.raises(ValueError, match="min_violation"):
        add_root_cuts(model, f, min_violation=0.0)
    with pytest.raises(ValueError, match="arm columns"):
        add_root_cuts(model, cm.SpanningTrees(_grid(3)).formulation())
    assert add_root_cuts(model, f, max_rounds=0) == 0
    with pytest.raises(ValueError, match="row range"):
        model.rows(0, model.num_rows + 1)


def test_root_cuts_switch_off_gives_the_same_values():
    space = cm.GraphicMatroid(_grid(4))
    on, off = cm.make_oracle(space, "highs"), cm.make_oracle(space, "highs")
    off.root_cuts = False
    rng = np.random.default_rng(1)
    for q in _queries(space, rng, 6):
        assert q["weights"] @ on.argmax(**q) == pytest.approx(q["weights"] @ off.argmax(**q), abs=1e-9)


def test_short_cycle_rows_are_valid_and_capped():
    space = cm.GraphicMatroid(nx.complete_graph(5))
    rows = space._short_cycle_rows()
    assert 0 < len(rows) <= 2 * space.d
    actions = space.enumerate()
    for row in rows:
        assert all(row_violation(row, a.astype(float)) == 0 for a in actions)
    assert len(space._short_cycle_rows(limit=3)) == 3


@pytest.mark.slow
def test_spanning_trees_of_a_20x20_grid_answer_restricted_queries():
    """Times are measured in bench/graphs_large.py; here: the 760-edge model compiles and answers exactly."""
    space = cm.SpanningTrees(_grid(20))
    oracle = cm.make_oracle(space, "highs", time_limit=60)
    oracle.model()
    rng = np.random.default_rng(0)
    edges = space.arms
    pairs = []
    while len(pairs) < 4:
        i, j = sorted(rng.choice(space.d, 2, replace=False).tolist())
        if set(edges[i]) & set(edges[j]):
            pairs.append((i, j))
    a = oracle.argmax(rng.normal(size=space.d), forbid_pairs=pairs)
    assert space.contains(a)
    assert not any(a[i] and a[j] for i, j in pairs)


# ------------------------------------------------ orientation columns, solver hints, root-cut gate
def test_orientation_is_optional_and_changes_no_answer():
    """Without the optional columns (what CP-SAT gets) the integer optima are the same, and the
    formulation still reaches them; the path MILP carries its HiGHS hints into the compiled model."""
    space = cm.STPaths(_grid(3, 4), 0, 11)
    f = space.formulation()
    core = f.without_optional()
    assert f.aux_optional.sum() == space.d and core.n_aux == f.n_aux - space.d and not core.aux_optional.any()
    assert all(max(r.cols) < core.n_cols for r in core.rows)
    actions = space.enumerate()
    rng = np.random.default_rng(4)
    for form in (f, core):
        model = CompiledModel(form)
        for _ in range(8):
            w = rng.normal(size=space.d)
            model.set_costs(w)
            for _ in range(50):  # the lazy cycle cuts by hand
                a = model.solve().x[: space.d] > 0.5
                cuts = form.violated_rows(a)
                if not cuts:
                    break
                model.add_rows(cuts)
            model.undo()
            assert space.contains(a) and w @ a == pytest.approx((actions @ w).max(), abs=1e-9)
    pool = FAMILY_HIGHS_OPTIONS["cyclic_paths"]["mip_pool_soft_limit"]
    assert CompiledModel(f).h.getOptionValue("mip_pool_soft_limit")[1] == pool
    assert cm.Cardinality(3, 1).formulation().solver_hints == {}


def test_solver_hints_survive_shifting_and_stacking():
    f = Formulation(d=2, solver_hints={"highs": {"presolve": "off"}})
    g = Formulation(d=2, solver_hints={"highs": {"presolve": "on", "mip_heuristic_effort": 0.0}})
    assert f.shifted(0, 2).solver_hints == f.solver_hints
    assert Formulation.stack([f, g]).solver_hints == {"highs": {"presolve": "off", "mip_heuristic_effort": 0.0}}
    paths = cm.STPaths(_grid(4), 0, 15)
    with_budget = paths.with_constraint(np.ones(24), "<=", 8).formulation()
    side = with_budget.solver_hints["side"]  # the rule names its base (oracles/mip/side_starts.py)
    assert side["space"] is paths and side["rows"] == paths.formulation().n_rows
    assert with_budget.solver_hints["start"]["space"] is paths  # the start heuristic of the paths
    others = {k: v for k, v in with_budget.solver_hints.items() if k not in ("side", "start")}
    assert others == {"family": {"name": "cyclic_paths"}, "root_cuts": {"skip_nonpositive": True}}
    assert highs_model_options(with_budget) == FAMILY_HIGHS_OPTIONS["cyclic_paths"]  # the oracle side's table
    assert positive_cost_options(with_budget) == FAMILY_POSITIVE_COST_OPTIONS["cyclic_paths"]
    assert highs_model_options(cm.Cardinality(3, 1).formulation()) == {}
    assert with_budget.aux_optional.sum() == 24


def test_root_cuts_gate_is_by_space_size():
    small, large = cm.STPaths(_grid(5), 0, 24), cm.STPaths(_grid(8), 0, 63)
    assert small.d < small.cuts_min_edges <= large.d
    assert not small.formulation().fractional_separators and large.formulation().fractional_separators
    assert cm.STPaths(_grid(5), 0, 24, cuts_min_edges=small.d).formulation().fractional_separators
    assert not cm.STPaths(_grid(8), 0, 63, cuts_min_edges=large.d + 1).formulation().fractional_separators
    for key, bad in (("cuts_min_edges", -1), ("cuts_min_arcs", 2.5), ("oriented", 0), ("cuts_min_edges", True)):
        with pytest.raises(ValueError, match=key):
            cm.STPaths(_grid(3), 0, 8, **{key: bad})


def test_directed_cyclic_paths_pass_the_gates_from_fewer_arcs():
    """Digraphs with cycles get root cuts from ``cuts_min_arcs`` arcs (and starts from the ``highs`` backend's
    ``path_start_min_arcs``); undirected graphs and DAGs of the same size keep the general gates; answers match
    enumeration."""
    cyclic = cm.STPaths(_grid(4).to_directed(), 0, 15)  # 48 arcs
    undirected = cm.STPaths(_grid(5), 0, 24)  # 40 edges
    dag = cm.STPaths(nx.DiGraph([(u, v) for u, v in _grid(6).edges() if u < v]), 0, 35)  # 60 arcs
    tiny = cm.STPaths(_grid(3).to_directed(), 0, 8)  # 24 arcs
    assert cyclic.cuts_min_arcs <= min(cyclic.d, undirected.d, dag.d) < cyclic.cuts_min_edges
    assert tiny.d < tiny.cuts_min_arcs
    tuning = HighsTuning()
    assert tuning.path_start_min_arcs <= min(cyclic.d, undirected.d, dag.d) < tuning.path_start_min_arms
    f = cyclic.formulation()
    assert f.fractional_separators and _start_hint(f, tuning)["space"] is cyclic
    for other in (undirected, dag, tiny):
        g = other.formulation()
        assert not g.fractional_separators and _start_hint(g, tuning) is None
    highs, brute = cm.make_oracle(cyclic, "highs", verify=True), cm.make_oracle(cyclic, "enumerate")
    rng = np.random.default_rng(12)
    for _ in range(4):
        w = rng.uniform(0.1, 1.0, cyclic.d)
        assert w @ highs.argmax(w) == pytest.approx(w @ brute.argmax(w), abs=1e-9)


def test_nonnegative_queries_relax_the_orientation_rows_and_restore_them():
    """Weights >= 0 solve without the orientation rows (they only slow such queries), answers exact
    and repeatable, and the rows' bounds come back for the next query."""
    space = cm.STPaths(_grid(3, 4), 0, 11)
    oracle = cm.make_oracle(space, "highs", verify=True)
    rows = oracle.formulation.rows
    assert len(oracle._optional_rows) == space.d + space.n_nodes
    actions = space.enumerate()
    rng = np.random.default_rng(8)
    for k in range(12):
        w = rng.uniform(0.0, 1.0, space.d) if k % 2 else rng.normal(size=space.d)
        w[rng.integers(space.d)] = 0.0  # ties with zero weights
        a = oracle.argmax(w)
        assert w @ a == pytest.approx((actions @ w).max(), abs=1e-9)
        np.testing.assert_array_equal(cm.make_oracle(space, "highs").argmax(w), a)
        held = oracle.model().rows(0, oracle.model().base_rows)
        assert [(r.lb, r.ub) for r in held] == [(r.lb, r.ub) for r in rows]


def test_formulation_options_are_keys_of_a_problem_file_space_table():
    from cmab_milp.experiments.problem.schema import ProblemError, Table
    from cmab_milp.experiments.problem.spaces import build_space

    grid = {"generator": "grid_2d_graph", "args": [3, 3], "relabel": True}
    paths = {"kind": "STPaths", "graph": grid, "source": 0, "target": 8}
    space = build_space(Table({**paths, "oriented": False, "cuts_min_edges": 0}, "space", "demo.toml"))
    assert not space.oriented and space.formulation().n_aux == 7  # the visit columns only
    assert space.formulation().fractional_separators  # 12 edges, gate at 0
    trees = build_space(Table({"kind": "SpanningTrees", "graph": grid, "sparse_cuts": False}, "space", "demo.toml"))
    assert not trees.sparse_cuts and not trees.flow
    assert build_space(Table(dict(paths), "space", "demo.toml")).oriented  # the file users write today
    with pytest.raises(ProblemError, match=r"space\.oriented: oriented must be true or false"):
        build_space(Table({**paths, "oriented": "no"}, "space", "demo.toml"))


def test_formulation_options_survive_a_saved_learner(tmp_path):
    spaces = [
        cm.STPaths(_grid(3), 0, 8, oriented=False, cuts_min_edges=0),
        cm.SpanningTrees(_grid(3), sparse_cuts=False, flow=True),
        cm.GraphicMatroid(_grid(3), flow=True).with_budget(np.ones(12), 5),
    ]
    for space in spaces:
        policy = cm.AROQ(space, 100, oracle="enumerate")
        policy.save(tmp_path / "p.npz")
        restored = cm.load_policy(tmp_path / "p.npz").space
        for key in ("oriented", "flow", "sparse_cuts", "cuts_min_edges", "cuts_min_arcs"):
            assert getattr(restored, key, None) == getattr(space, key, None), key
        assert restored.formulation().n_aux == space.formulation().n_aux
    plain = cm.STPaths(_grid(3), 0, 8)
    cm.AROQ(plain, 100, oracle="enumerate").save(tmp_path / "plain.npz")
    with zipfile.ZipFile(tmp_path / "plain.npz") as z:
        assert b"options" not in z.read("header.npy")  # defaults: the file is as before
