"""MIP starts of path queries, repaired candidates, collected candidate cuts and sparse tree rows.

Heuristics are checked against brute force on small graphs: every start is an
action obeying the bounds and side rows it was given, the Dijkstra start is the
optimum when the weights are <= 0 and no side row binds, the repair of a path
plus disjoint cycles is a path worth at least its path part, and detours never
lose weight. Queries with the starts and hooks on are checked against
enumeration (restrictions and knapsack rows included) and for history
independence; the sparse form of a spanning tree's subtour row is checked to
be the same inequality as the dense one on the tree hyperplane.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import CompiledModel
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.mip import starts as mip_starts
from cmab_milp.oracles.mip.graph_cuts import separate_subtours_lp
from cmab_milp.oracles.mip.graph_starts import PathStarts
from cmab_milp.oracles.mip.options import positive_cost_options
from cmab_milp.oracles.mip.starts import prepare_query, query_start, side_rows
from cmab_milp.oracles.mip.tuning import HighsTuning
from cmab_milp.spaces.formulation import Row, row_violation

#: Starts on every s-t path space, however small (the ``highs`` backend's size gates at 0).
STARTS = {"path_start_min_arms": 0}
#: Root cuts on every s-t path space, however small (the space's size gate at 0).
CUTS = {"cuts_min_edges": 0}


def _starting(model: CompiledModel) -> CompiledModel:
    """``model`` with the start heuristic on whatever its size."""
    model.tuning = HighsTuning(**STARTS)
    return model


def _grid(n: int, m: int | None = None) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, m or n))


def _path_spaces() -> list[cm.STPaths]:
    out = [cm.STPaths(_grid(3), 0, 8), cm.STPaths(_grid(3, 4), 0, 11), cm.STPaths(nx.petersen_graph(), 0, 7)]
    out += [
        cm.STPaths(nx.gnm_random_graph(8, 14, seed=s), 0, 5)
        for s in range(3)
        if nx.has_path(nx.gnm_random_graph(8, 14, seed=s), 0, 5)
    ]
    out.append(cm.STPaths(nx.gnm_random_graph(7, 16, seed=1, directed=True), 0, 6))
    return out


def _adjacent_pairs(space, rng, k=2) -> list[tuple[int, int]]:
    pairs = []
    while len(pairs) < k:
        i, j = sorted(rng.choice(space.d, 2, replace=False).tolist())
        if set(space.arms[i]) & set(space.arms[j]):
            pairs.append((i, j))
    return pairs


def _feasible(actions, lower=None, upper=None, pairs=(), knapsack=None) -> np.ndarray:
    keep = np.ones(len(actions), bool)
    if lower is not None:
        keep &= (actions >= (lower > 0.5)).all(axis=1)
    if upper is not None:
        keep &= ~(actions & (upper < 0.5)).any(axis=1)
    for i, j in pairs:
        keep &= ~(actions[:, i] & actions[:, j])
    if knapsack is not None:
        keep &= actions @ knapsack[0] <= knapsack[1] + 1e-9
    return actions[keep]


# ------------------------------------------------------------------ start_action
def test_dijkstra_start_is_the_optimum_for_weights_below_zero():
    rng = np.random.default_rng(0)
    for space in _path_spaces():
        actions = space.enumerate()
        for _ in range(5):
            w = -rng.uniform(0.1, 1.0, space.d)
            start = PathStarts.of(space).start_action(w)
            assert space.contains(start)
            assert w @ start == pytest.approx((actions @ w).max(), abs=1e-9)


def test_starts_obey_bounds_conflicts_and_knapsack_rows():
    rng = np.random.default_rng(1)
    for space in _path_spaces():
        actions = space.enumerate()
        for trial in range(6):
            w = rng.normal(size=space.d) if trial % 2 else -rng.uniform(0.1, 1.0, space.d)
            upper = np.ones(space.d)
            upper[rng.choice(space.d, 2, replace=False)] = 0.0
            pairs = _adjacent_pairs(space, rng)
            c = rng.uniform(0.5, 1.5, space.d)
            b = float(np.quantile(actions @ c, 0.4))
            start = PathStarts.of(space).start_action(w, None, upper, pairs, (c, b))
            left = _feasible(actions, None, upper, pairs, (c, b))
            if start is None:
                continue  # a heuristic may find nothing; when it finds something, it is feasible
            assert space.contains(start) and any((start == a).all() for a in left)
            assert w @ start <= (left @ w).max() + 1e-9


def test_lagrangian_start_fits_a_binding_knapsack_row():
    space = cm.STPaths(_grid(4), 0, 15)
    actions = space.enumerate()
    rng = np.random.default_rng(2)
    found = 0
    for _ in range(8):
        w = -rng.uniform(0.1, 1.0, space.d)
        c = rng.uniform(0.5, 1.5, space.d)
        b = float(np.quantile(actions @ c, 0.05))
        unconstrained = PathStarts.of(space).start_action(w)
        start = PathStarts.of(space).start_action(w, knapsack=(c, b))
        if c @ unconstrained > b and start is not None:  # the row binds and the search found a fitting path
            found += 1
            assert c @ start <= b + 1e-9 and space.contains(start)
    assert found >= 4


def test_start_refuses_bad_input_and_impossible_bounds():
    space = cm.STPaths(_grid(3), 0, 8)
    with pytest.raises(ValueError, match="weights must be 12 finite numbers"):
        PathStarts.of(space).start_action(np.ones(3))
    with pytest.raises(ValueError, match="weights must be"):
        PathStarts.of(space).start_action(np.full(space.d, np.nan))
    with pytest.raises(ValueError, match="knapsack row needs d coefficients >= 0"):
        PathStarts.of(space).start_action(-np.ones(space.d), knapsack=(-np.ones(space.d), 1.0))
    lower, upper = np.zeros(space.d), np.ones(space.d)
    lower[0] = upper[0] = 0.5  # neither fixed in nor out: no contradiction
    assert (
        PathStarts.of(space).start_action(-np.ones(space.d), np.ones(space.d), np.zeros(space.d)) is None
    )  # in and out at once
    upper[:] = 0.0
    assert PathStarts.of(space).start_action(-np.ones(space.d), None, upper) is None  # every edge excluded: no path


# ------------------------------------------------------------------ repair and detours
def _candidates_with_cycles(space, rng, n=20) -> list[np.ndarray]:
    """Integer points of the degree model: a path plus vertex-disjoint cycles (by brute force)."""
    paths = space.enumerate()
    cycles = []
    graph, shortest = (space.graph, 2) if space.directed else (space.graph.to_directed(), 3)
    for cycle in nx.simple_cycles(graph):
        if len(cycle) >= shortest and space.s not in cycle and space.t not in cycle:
            a = np.zeros(space.d, bool)
            for u, v in zip(cycle, cycle[1:] + cycle[:1], strict=True):
                a[PathStarts.of(space)._arcs()[u, v]] = True
            cycles.append((set(cycle), a))
    out = []
    for _ in range(200):
        if len(out) >= n or not cycles:
            break
        path = paths[rng.integers(len(paths))]
        nodes = set(space.tail[path]) | set(space.head[path])
        nodes_c, cyc = cycles[rng.integers(len(cycles))]
        if not nodes & nodes_c:
            out.append(path | cyc)
    return out


def test_repair_turns_a_path_plus_cycles_into_a_path_worth_at_least_the_path():
    rng = np.random.default_rng(3)
    checked = directed = 0
    spaces = [cm.STPaths(_grid(4), 0, 3), cm.STPaths(_grid(3, 5), 0, 4), cm.STPaths(nx.petersen_graph(), 0, 1)]
    spaces += [cm.STPaths(_grid(3, 4).to_directed(), 0, 3), cm.STPaths(nx.DiGraph(_grid(4).to_directed()), 0, 15)]
    for space in spaces:
        for candidate in _candidates_with_cycles(space, rng):
            w = rng.uniform(0.1, 1.0, space.d)
            assert not space.contains(candidate)
            fixed = PathStarts.of(space).repair(candidate, w)
            path_part = candidate.copy()
            roots = space._components(candidate)[0]
            path_part &= roots[space.tail] == roots[space.s]
            assert space.contains(fixed)
            assert w @ fixed >= w @ path_part - 1e-12
            checked += 1
            directed += space.directed
    assert checked >= 30 and directed >= 20


def test_repair_splices_every_cycle_on_a_grid_square():
    space = cm.STPaths(_grid(3), 0, 2)
    candidate = np.zeros(space.d, bool)
    arcs = PathStarts.of(space)._arcs()
    for u, v in [(0, 1), (1, 2), (3, 4), (4, 7), (7, 6), (6, 3)]:
        candidate[arcs[u, v]] = True
    fixed = PathStarts.of(space).repair(candidate, np.ones(space.d))
    assert space.contains(fixed) and int(fixed.sum()) == 8  # all 9 nodes: a Hamiltonian path


def test_repair_refuses_what_is_no_path_plus_cycles_and_bad_shapes():
    directed = cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (2, 0), (1, 3)]), 0, 3)
    assert PathStarts.of(directed).repair(np.ones(directed.d, bool), np.ones(directed.d)) is None  # node 1 leaves twice
    split = cm.STPaths(nx.DiGraph([(0, 1), (1, 3), (0, 2), (2, 3)]), 0, 3)
    dead_end = np.array([arc in {(0, 1), (2, 3)} for arc in split.arms])
    assert PathStarts.of(split).repair(dead_end, np.ones(split.d)) is None  # the walk from s stops at 1
    space = cm.STPaths(_grid(3), 0, 8)
    with pytest.raises(ValueError, match="action must hold 12 arm values"):
        PathStarts.of(space).repair(np.ones(3, bool), np.ones(space.d))
    assert PathStarts.of(space).repair(np.zeros(space.d, bool), np.ones(space.d)) is None  # no path from s


def test_detours_keep_a_path_and_never_lose_weight():
    rng = np.random.default_rng(4)
    for space in [*_path_spaces()[:4], cm.STPaths(_grid(3).to_directed(), 0, 8), _path_spaces()[-1]]:
        for a in space.enumerate()[:15]:
            w = rng.normal(size=space.d)
            grown = PathStarts.of(space)._as_action(PathStarts.of(space)._grow(PathStarts.of(space)._path_order(a), w))
            assert space.contains(grown) and w @ grown >= w @ a - 1e-12


# ------------------------------------------------------------------ side rows and the model's hooks
def test_side_rows_reads_pairs_and_one_knapsack_row_and_refuses_the_rest():
    inf = np.inf
    pairs, knapsack = side_rows([Row((0, 2), (1.0, 1.0), -inf, 1.0), Row((1, 2), (2.0, 0.5), -inf, 1.5)], 3)
    assert pairs == [(0, 2)] and knapsack[1] == 1.5 and knapsack[0].tolist() == [0.0, 2.0, 0.5]
    assert side_rows([Row((0,), (1.0,), 1.0, inf)], 3) is None  # a >= row
    assert side_rows([Row((0, 1), (1.0, -1.0), -inf, 0.0)], 3) is None  # a negative coefficient
    assert side_rows([Row((0, 5), (1.0, 1.0), -inf, 1.0)], 3) is None  # another column
    two = [Row((0,), (1.0,), -inf, 1.0), Row((1,), (1.0,), -inf, 1.0)]
    assert side_rows(two, 3) is None  # two knapsack rows


def test_query_start_obeys_the_query_rows_and_skips_other_objectives():
    rng = np.random.default_rng(5)
    space = cm.STPaths(_grid(4), 0, 15)
    actions = space.enumerate()
    formulation = space.formulation()
    model = _starting(CompiledModel(formulation))
    for _ in range(5):
        w = -rng.uniform(0.1, 1.0, space.d)
        pairs = _adjacent_pairs(space, rng, 3)
        model.set_costs(w)
        model.add_rows([Row(p, (1.0, 1.0), -np.inf, 1.0) for p in pairs])
        start = query_start(model, formulation)
        assert start is not None and any((start == a).all() for a in _feasible(actions, pairs=pairs))
        model.undo()
    model.append_cols([0.0], [0.0], [1.0])  # a column of another objective (as the norm index adds)
    assert query_start(model, formulation) is None
    prepare_query(model, formulation)
    assert model.start is None and model.candidate_cuts is None


def test_no_start_below_the_size_gate():
    small = cm.STPaths(_grid(3), 0, 8)  # 12 edges
    large = cm.STPaths(_grid(8), 0, 63)  # 112 edges
    w = -np.ones(small.d)
    for space, tuning, started in (
        (small, HighsTuning(), False),
        (small, HighsTuning(path_start_min_arms=12), True),
        (large, HighsTuning(), True),
        (large, HighsTuning(path_start_min_arms=113), False),
    ):
        model = CompiledModel(space.formulation())
        model.tuning = tuning
        model.set_costs(-np.ones(space.d) if space is large else w)
        assert (query_start(model, space.formulation()) is not None) == started
    assert "start" not in cm.SpanningTrees(_grid(8)).formulation().solver_hints  # trees: measured no gain
    for bad in (-1, 1.5, True, "100"):
        with pytest.raises(ValueError, match="path_start_min_arms"):
            HighsTuning.of({"path_start_min_arms": bad})
    with pytest.raises(ValueError, match="side_min_arms"):
        cm.make_oracle(cm.Cardinality(4, 2), "highs", tuning={"side_min_arms": -2})


def test_directed_cyclic_paths_pass_the_start_gate_from_the_arc_gate():
    cyclic = cm.STPaths(_grid(3).to_directed(), 0, 8)  # 24 arcs with cycles
    dag = cm.STPaths(nx.DiGraph([(u, v) for u, v in _grid(5).edges() if u < v]), 0, 24)  # 40 arcs, acyclic
    for space, arcs, started in ((cyclic, 24, True), (cyclic, 25, False), (dag, 0, False)):
        model = CompiledModel(space.formulation())
        model.tuning = HighsTuning(path_start_min_arcs=arcs)
        model.set_costs(-np.ones(space.d))
        assert (query_start(model, space.formulation()) is not None) == started


def test_collected_candidate_cuts_are_valid_and_only_used_when_the_answer_is_no_action():
    space = cm.STPaths(_grid(4), 0, 1, **CUTS)
    actions = space.enumerate()
    formulation = space.formulation()
    model = _starting(CompiledModel(formulation))
    square = {(10, 11), (11, 15), (14, 15), (10, 14)}
    w = np.array([5.0 if e in square else -3.0 for e in space.arms])  # a far square worth more than any detour
    model.set_costs(w)
    prepare_query(model, formulation)
    result = model.solve()
    chosen = np.asarray(result.values[: space.d]) > 0.5
    own = formulation.violated_rows(chosen)
    assert own, "the first MILP answer should hold a cycle"
    extra = model.separate(result.values, chosen)
    for row in [*own, *extra]:
        activity = actions[:, list(row.cols)].astype(float) @ np.array(row.coefs)
        assert ((activity >= row.lb - 1e-9) & (activity <= row.ub + 1e-9)).all()
    assert model.start is not None and space.contains(model.start)  # the repaired candidate
    assert model.separate(result.values, chosen) == []  # consumed
    path = actions[0]
    values = np.concatenate([path.astype(float), np.zeros(model.num_cols - space.d)])
    model._pending = {own[0]: None}
    assert model.separate(values, path) == []  # an answer that is an action: nothing added
    model.undo()
    assert model.start is None and model.repair is None and model.candidate_cuts is None


# ------------------------------------------------------------------ queries against enumeration
def _oracle_pair(space, tuning=None):
    return cm.make_oracle(space, "highs", verify=True, tuning=tuning), cm.make_oracle(space, "enumerate")


@pytest.mark.parametrize("sign", [1.0, -1.0, 0.0])
def test_path_queries_with_starts_match_enumeration(sign):
    rng = np.random.default_rng(6)
    resource = rng.uniform(0.5, 1.5, 24)
    spaces = [
        cm.STPaths(_grid(4), 0, 15, **CUTS),
        cm.STPaths(_grid(4), 0, 3, **CUTS).with_constraint(resource, "<=", 7.0),
    ]
    for space in spaces:
        highs, brute = _oracle_pair(space, STARTS)
        for _ in range(6):
            w = rng.uniform(0.1, 1.0, space.d) * sign if sign else rng.normal(size=space.d)
            query = {"weights": w, "forbid_pairs": _adjacent_pairs(space, rng, 2), "exclude": [int(rng.integers(24))]}
            a, b = highs.argmax(**query), brute.argmax(**query)
            assert (a is None) == (b is None)
            if a is not None:
                assert w @ a == pytest.approx(w @ b, abs=1e-9)


def test_starts_change_no_value_and_keep_answers_independent_of_history():
    space = cm.STPaths(_grid(5), 0, 24, **CUTS)
    rng = np.random.default_rng(7)
    queries = [{"weights": rng.uniform(0.1, 1.0, space.d)} for _ in range(3)]
    queries += [{"weights": -rng.uniform(0.1, 1.0, space.d), "forbid_pairs": _adjacent_pairs(space, rng)}]
    fresh = [cm.make_oracle(space, "highs", tuning=STARTS).argmax(**q) for q in queries]
    busy = cm.make_oracle(space, "highs", tuning=STARTS)
    for q in reversed(queries):
        busy.argmax(**q)
    again = [busy.argmax(**q) for q in queries]
    assert all((a == b).all() for a, b in zip(fresh, again, strict=True))
    off = cm.make_oracle(space, "highs", tuning={"prepare_queries": False})
    for q, a in zip(queries, fresh, strict=True):
        assert q["weights"] @ off.argmax(**q) == pytest.approx(q["weights"] @ a, abs=1e-9)


def test_collection_switch_keeps_answers():
    space = cm.STPaths(_grid(4), 0, 15, **CUTS)
    w = np.random.default_rng(8).uniform(0.1, 1.0, space.d)
    on = cm.make_oracle(space, "highs", tuning=STARTS).argmax(w)
    off = cm.make_oracle(space, "highs", tuning={**STARTS, "candidate_cuts": False}).argmax(w)
    assert w @ on == pytest.approx(w @ off, abs=1e-9)


# ------------------------------------------------------------------ sparse spanning-tree rows
def _all_sets(n: int):
    for r in range(2, n):
        yield from itertools.combinations(range(n), r)


def test_sparse_tree_rows_are_the_dense_rows_on_the_tree_hyperplane():
    space = cm.SpanningTrees(nx.complete_graph(5))
    trees = space.enumerate()
    rng = np.random.default_rng(9)
    sparse_seen = 0
    for nodes in _all_sets(space.n_nodes):
        mask = np.zeros(space.n_nodes, bool)
        mask[list(nodes)] = True
        dense, sparse = space._subtour_row(mask), space._subtour_row(mask, sparse=True)
        sparse_seen += sparse.lb > -np.inf
        activity = trees[:, list(sparse.cols)].astype(float).sum(axis=1)
        assert (activity >= sparse.lb - 1e-9).all()  # valid for every spanning tree
        for _ in range(5):  # points with sum x = n - 1: same violation
            x = rng.dirichlet(np.ones(space.d)) * (space.n_nodes - 1)
            assert row_violation(dense, x) == pytest.approx(row_violation(sparse, x), abs=1e-9)
    assert sparse_seen > 0


def test_tree_separators_write_sparse_rows_only_on_the_hyperplane():
    space = cm.SpanningTrees(_grid(3))
    x_off = np.full(space.d, 0.9)  # sum 10.8 != 8
    assert all(r.lb == -np.inf for r in separate_subtours_lp(space, x_off))
    cycle_heavy = np.zeros(space.d, bool)
    cycle_heavy[: space.n_nodes - 1] = True  # 8 edges of the 3x3 grid: they close a cycle
    for row in space.separate_cycles(cycle_heavy):
        assert row_violation(row, cycle_heavy.astype(float)) > 0


# ------------------------------------------------------------------ root cuts skipped for weights <= 0
def test_root_cuts_skip_nonpositive_path_queries_only():
    from cmab_milp.oracles.mip.root_cuts import add_root_cuts

    space = cm.STPaths(_grid(4), 0, 3, **CUTS)
    formulation = space.formulation()
    assert formulation.solver_hints["root_cuts"] == {"skip_nonpositive": True}
    model = CompiledModel(formulation)
    model.set_costs(-np.ones(space.d))
    assert add_root_cuts(model, formulation) == 0 and model.num_rows == model.base_rows
    model.set_costs(np.ones(space.d))  # longest paths: the LP holds cycles, the separators cut them
    assert add_root_cuts(model, formulation) > 0
    model.undo()
    model.set_costs(-np.ones(space.d))
    model.append_cols([1.0], [0.0], [1.0])  # another objective's column: no skipping on the arm costs alone
    from cmab_milp.oracles.mip.root_cuts import _nonpositive

    assert not _nonpositive(model, formulation)
    unoriented = cm.STPaths(_grid(4), 0, 3, oriented=False)
    assert "root_cuts" not in unoriented.formulation().solver_hints  # unoriented: s-t cuts needed
    model.undo()
    model.set_costs(-np.ones(space.d))
    calls = []
    formulation.fractional_separators.append(lambda x: calls.append(1) or [])  # (this formulation only)
    model.tuning = HighsTuning(root_cuts_nonpositive=True)  # the option: the rounds run (and find nothing here)
    add_root_cuts(model, formulation)
    assert calls


def test_trees_and_small_paths_get_no_query_hooks():
    for space in (cm.SpanningTrees(_grid(8)), cm.STPaths(_grid(3), 0, 8)):
        formulation = space.formulation()
        model = CompiledModel(formulation)
        model.set_costs(np.ones(space.d))
        prepare_query(model, formulation)
        assert model.start is None and model.candidate_cuts is None and model.repair is None


def test_a_start_that_is_no_action_changes_no_answer():
    from cmab_milp.oracles.core.pipeline import certified_solve

    space = cm.STPaths(_grid(4), 0, 15)
    formulation = space.formulation()
    brute = cm.make_oracle(space, "enumerate")
    rng = np.random.default_rng(10)
    for _ in range(4):
        w = rng.normal(size=space.d)
        query = brute.linear_query(w)
        for bad in (np.ones(space.d, bool), np.zeros(space.d, bool)):
            model = CompiledModel(formulation)
            original = model.solve  # every cold solve gets the bad start

            def solve(*args, _model=model, _bad=bad, _original=original, **kwargs):
                _model.start = _bad
                return _original(*args, **kwargs)

            model.solve = solve
            action, _ = certified_solve(model, query, formulation)
            assert w @ action == pytest.approx(w @ brute.argmax(w), abs=1e-9)


def test_positive_path_queries_run_with_their_own_options_and_restore_them(monkeypatch):
    """The family's options for positive costs hold during a query with a positive weight only (unless the
    ``positive_cost_options`` option is off); answers agree."""
    seen: list[bool] = []
    original = CompiledModel.solve

    def solve(self, *args, **kwargs):
        if self.integer:
            seen.append(self.h.getOptionValue("mip_allow_restart")[1])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CompiledModel, "solve", solve)
    rng = np.random.default_rng(11)
    directed = nx.DiGraph(_grid(3).to_directed())
    for space in (cm.STPaths(_grid(4), 0, 15, **CUTS), cm.STPaths(directed, 0, 8, **CUTS)):
        assert positive_cost_options(space.formulation()) == {"mip_allow_restart": False}
        highs, brute = _oracle_pair(space, STARTS)
        for weights, restarts in ((rng.uniform(0.1, 1.0, space.d), False), (-rng.uniform(0.1, 1.0, space.d), True)):
            seen.clear()
            a, b = highs.argmax(weights), brute.argmax(weights)
            assert weights @ a == pytest.approx(weights @ b, abs=1e-9)
            assert seen and set(seen) == {restarts}
        assert highs.model(True).h.getOptionValue("mip_allow_restart")[1] is True  # restored after the query
        plain = cm.make_oracle(space, "highs", tuning={**STARTS, "positive_cost_options": False})
        seen.clear()
        weights = rng.uniform(0.1, 1.0, space.d)
        assert weights @ plain.argmax(weights) == pytest.approx(weights @ brute.argmax(weights), abs=1e-9)
        assert seen and set(seen) == {True}


def test_query_options_are_restored_by_undo_and_refuse_unknown_names():
    model = CompiledModel(cm.Cardinality(4, 2).formulation())
    model.set_query_options({"mip_allow_restart": False, "mip_heuristic_effort": 0.5})
    model.set_query_options({"mip_heuristic_effort": 0.25})  # the value before the query is kept once
    model.undo()
    assert model.h.getOptionValue("mip_allow_restart")[1] is True
    assert model.h.getOptionValue("mip_heuristic_effort")[1] == pytest.approx(0.05)
    with pytest.raises(OracleError, match="no_such_option"):
        model.set_query_options({"no_such_option": 1})


# ------------------------------------------------------------------ reduced-cost fixing of shortest-path queries
def _fixing_spaces() -> list[cm.STPaths]:
    return [
        cm.STPaths(_grid(3, 4), 0, 11),
        cm.STPaths(_grid(4), 0, 15),
        cm.STPaths(nx.petersen_graph(), 0, 7),
        cm.STPaths(_grid(3, 4).to_directed(), 0, 11),
        cm.STPaths(nx.gnm_random_graph(8, 22, seed=2, directed=True), 0, 5),
    ]


def test_fixed_edges_are_used_by_no_path_above_the_region_bound():
    """Brute force: every path that obeys the bounds and the knapsack row and uses a fixed edge is worth at most
    ``region_bound``, which is below the start's value; the start itself keeps every row."""
    rng = np.random.default_rng(13)
    fixed_any = checked = forced_trials = forced_starts = forced_fixed = 0
    for space in _fixing_spaces():
        actions = space.enumerate()
        for trial in range(18):
            w = -rng.uniform(0.0, 1.0, space.d) * (rng.random(space.d) < 0.9)  # some zero lengths too
            if trial >= 12:  # a few positive weights (an optimistic index): bounded by their sum
                w[rng.random(space.d) < 0.15] = rng.uniform(0.0, 0.3)
            upper = np.ones(space.d)
            upper[rng.choice(space.d, 2, replace=False)] = 0.0
            c = rng.uniform(0.5, 1.5, space.d)
            paths = actions[~(actions & (upper < 0.5)).any(axis=1)]
            lower = np.zeros(space.d)
            if trial % 4 == 1:  # one arm forced in (an AROQ / SROQ restriction): the paths through it
                lower[rng.choice(np.flatnonzero(paths[rng.integers(len(paths))]))] = 1.0
                paths = paths[(paths >= (lower > 0.5)).all(axis=1)]
                forced_trials += 1
            knapsack = (c, float(np.median(paths @ c))) if trial % 2 else None
            pairs = _adjacent_pairs(space, rng, 1) if trial % 3 == 0 else []
            start, fixed, bound = PathStarts.of(space).start_plan(w, lower, upper, pairs, knapsack)
            if start is None:
                continue
            assert (start >= (lower > 0.5)).all()
            forced_starts += bool(lower.any())
            feasible = _feasible(paths, pairs=pairs, knapsack=knapsack)
            assert (feasible == start).all(axis=1).any()  # the start is one of them
            if fixed is None:
                assert bound == -np.inf
                continue
            fixed_any += 1
            value = float(w @ start)
            assert bound < value and not (fixed & start).any() and not (fixed & (upper < 0.5)).any()
            using = feasible[(feasible & fixed).any(axis=1)]
            checked += len(using)
            assert (using @ w <= bound + 1e-12).all()
            forced_fixed += bool(lower.any())
    assert fixed_any >= 20 and checked >= 50
    assert forced_starts >= forced_trials // 2 and forced_fixed >= 3


def test_fixing_is_skipped_for_longest_paths_two_forced_arms_and_other_parts():
    space = cm.STPaths(_grid(3, 4), 0, 3)  # along one side: the far rows are fixed out
    w = -np.ones(space.d)
    assert PathStarts.of(space).start_plan(w)[1] is not None
    assert PathStarts.of(space).start_plan(-w)[1] is None  # longest paths: the positive parts' sum bounds nothing
    lower = np.zeros(space.d)
    lower[np.flatnonzero(PathStarts.of(space).start_action(w))[:2]] = 1.0  # two arms forced in: no start, nothing fixed
    assert PathStarts.of(space).start_plan(w, lower) == (None, None, -np.inf)
    formulation = space.with_constraint(np.ones(space.d), "<=", 8).formulation()
    assert mip_starts._fixing_applies(formulation, formulation.solver_hints["start"])
    rows_only = cm.Intersection(space, cm.Cardinality(space.d, 6)).formulation()  # a knapsack row after the paths'
    assert mip_starts._fixing_applies(rows_only, rows_only.solver_hints["start"])
    for other in (  # other rows first, or another part's separators: the bound over paths says nothing
        cm.Intersection(cm.Cardinality(space.d, 6), space),
        cm.Intersection(space, cm.GraphicMatroid(_grid(3, 4))),
    ):
        f = other.formulation()
        assert not mip_starts._fixing_applies(f, f.solver_hints["start"])


@pytest.mark.parametrize("directed", [False, True])
def test_shortest_path_queries_with_fixing_match_enumeration(directed, monkeypatch):
    fixes = []
    original = CompiledModel.fix_arms

    def fix_arms(self, fixed, values, region_bound):
        fixes.append(int(np.sum(fixed)))
        return original(self, fixed, values, region_bound)

    monkeypatch.setattr(CompiledModel, "fix_arms", fix_arms)
    rng = np.random.default_rng(14)
    grid = _grid(4).to_directed() if directed else _grid(4)
    d = grid.number_of_edges()
    resource = rng.uniform(0.5, 1.5, d)
    spaces = [cm.STPaths(grid, 0, 15), cm.STPaths(grid, 0, 15).with_constraint(resource, "<=", 6.0)]
    for space in spaces:
        highs, brute = _oracle_pair(space, {**STARTS, "path_start_min_arcs": 0})
        for trial in range(8):
            w = -rng.uniform(0.1, 1.0, space.d)
            if trial >= 5:  # mixed signs: a few optimistic indices above 0
                w[rng.choice(space.d, 2, replace=False)] = 0.1
            query = {"weights": w, "forbid_pairs": _adjacent_pairs(space, rng, 2), "exclude": [int(rng.integers(d))]}
            if trial % 2:  # one arm in: the start goes through it
                query["include"] = [int(rng.choice(np.setdiff1d(np.arange(d), query["exclude"])))]
            a, b = highs.argmax(**query), brute.argmax(**query)
            assert (a is None) == (b is None)
            if a is not None:
                assert w @ a == pytest.approx(w @ b, abs=1e-9)
    assert len(fixes) >= 4 and max(fixes) > 0


def _directed_rcsp_query() -> tuple[cm.ActionSpace, dict]:
    """The query (bench/graphs_large.py's directed resource-constrained family, its second query with 3% of the
    weights made positive) on which HiGHS 1.16 reported the optimum's objective with the MIP start's values."""
    grid = _grid(17)
    resource = np.random.default_rng(1).uniform(0.5, 1.5, 2 * 17 * 16)
    for k, (u, v) in enumerate(grid.edges()):
        grid[u][v]["r"] = resource[k]
    least = nx.shortest_path_length(grid, 0, 288, weight="r")
    space = cm.STPaths(grid.to_directed(), 0, 288)
    c = np.array([grid[u][v]["r"] for u, v in space.arms])
    space = space.with_constraint(c, "<=", 0.5 * (least + 32))
    rng = np.random.default_rng(0)
    for _ in range(2):
        w = -rng.uniform(0.1, 1.0, space.d)
        pairs = _adjacent_pairs(space, rng, 4)
        w = np.where(rng.random(space.d) < 0.03, rng.uniform(0, 0.3, space.d), w)
    return space, {"weights": w, "forbid_pairs": pairs}


def test_an_answer_with_the_start_s_values_but_the_optimum_s_objective_is_solved_again(monkeypatch):
    space, query = _directed_rcsp_query()
    oracle = cm.make_oracle(space, "highs")
    value = query["weights"] @ oracle.argmax(**query)
    unfixed = cm.make_oracle(space, "highs", tuning={"fix_arms": False})
    assert value == pytest.approx(query["weights"] @ unfixed.argmax(**query), abs=1e-9)

    solution = SimpleNamespace(col_value=[1.0, 0.0, 1.0])
    model = CompiledModel(cm.Cardinality(3, 2).formulation())
    model.set_costs(np.array([1.0, 2.0, 3.0]))
    assert not model._start_kept(solution, 4.0) and model._start_kept(solution, 5.0)
