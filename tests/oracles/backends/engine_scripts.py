"""Scripts of :class:`~cmab_milp.oracles.core.engine.Engine` calls run on HiGHS and on another engine (``other``:
a key of :data:`~cmab_milp.oracles.core.engine.ENGINES`), compared with each other and with brute force or closed
forms; ``test_gurobi_engine.py`` and ``test_scip_engine.py`` run them (small spaces: Gurobi's pip licence)."""

from __future__ import annotations

import math
from functools import partial

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.engine import Engine, new_engine
from cmab_milp.spaces.formulation import Formulation, Row

TOL = 1e-7
#: The spaces of :func:`check_mip_starts_and_new_models_give_the_brute_force_optimum`.
START_SPACES = {
    "matchings": cm.Matchings(nx.complete_graph(5)),
    "paths": cm.STPaths(nx.cycle_graph(6), 0, 3),
    "forests": cm.GraphicMatroid(nx.complete_graph(4)),
}
#: The spaces and method chains of :func:`check_norm_methods_run_on_the_engine_to_the_brute_force_index`.
NORM_SPACES = {
    "cardinality": cm.Cardinality(8, 3),
    "matchings": cm.Matchings(nx.complete_graph(6)),
    "paths": cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2)),
}
NORM_CHAINS = {
    "outer-plus": (1, ("OUTER_PLUS",)),
    "outer-minus": (-1, ("LINEAR_BOUND", "MINUS_OUTER")),
    "secants-minus": (-1, ("LINEAR_BOUND", "SECANTS_MINUS")),
}


def pair(other: str, formulation: Formulation, integer: bool = True) -> tuple[Engine, Engine]:
    return new_engine(formulation, integer=integer), new_engine(formulation, integer=integer, engine=other)


def best(space: cm.ActionSpace, w: np.ndarray, keep=lambda a: True) -> tuple[float, np.ndarray]:
    """Brute force: the best action of ``space`` under ``w`` among those ``keep`` admits (the maximiser unique)."""
    actions = [a for a in space.enumerate().astype(float) if keep(a)]
    values = np.array([float(w @ a) for a in actions])
    order = np.argsort(-values)
    assert len(values) == 1 or values[order[0]] - values[order[1]] > 1e-6, "the test needs a unique maximiser"
    return float(values[order[0]]), actions[order[0]]


def same_answer(result, value: float, action: np.ndarray, d: int) -> None:
    assert result.status == "optimal"
    assert result.objective == pytest.approx(value, abs=TOL)
    assert np.allclose(result.x[:d], action, atol=1e-6)


def check_rows_fixings_and_undo_script_on_cardinality(other: str) -> None:
    space = cm.Cardinality(6, 3)
    w = np.array([0.9, -0.2, 0.7, 0.65, 0.1, 0.3])

    def keep(a: np.ndarray) -> bool:
        return a[0] + a[2] <= 1 and 1 <= a[3] + a[5] <= 2

    for model in pair(other, space.formulation()):
        model.set_costs(w)
        same_answer(model.solve(), *best(space, w), space.d)
        first, last = model.add_rows([Row((0, 2), (1.0, 1.0), -math.inf, 1.0), Row((3, 5), (1.0, 1.0), 1.0, 2.0)])
        assert (first, last) == (model.base_rows, model.base_rows + 2) == (1, 3)
        same_answer(model.solve(), *best(space, w, keep), space.d)
        assert model.rows(1, 3) == [Row((0, 2), (1.0, 1.0), -math.inf, 1.0), Row((3, 5), (1.0, 1.0), 1.0, 2.0)]
        fixed = np.array([False, True, False, False, False, False])
        model.fix_arms(fixed, np.ones(6), region_bound=-5.0)
        same_answer(model.solve(), *best(space, w, lambda a: keep(a) and a[1]), space.d)
        costs, lower, upper = model.arm_columns()
        assert np.allclose(costs, w) and lower[1] == upper[1] == 1.0
        model.set_query_options({"time_limit": 30.0})
        model.start, model.answer = np.zeros(6), None
        model.undo()
        assert model.num_rows == 1 and model.start is None and model.region_bound == -math.inf
        assert np.array_equal(model.arm_columns()[1], np.zeros(6)) and np.array_equal(
            model.arm_columns()[2], np.ones(6)
        )
        same_answer(model.solve(), *best(space, w), space.d)
        model.set_arm_bounds((4,), (0,))
        same_answer(model.solve(), *best(space, w, lambda a: a[4] and not a[0]), space.d)


def check_an_lp_with_unique_primal_and_dual_solutions_agrees_with_the_closed_form(other: str) -> None:
    """max .9 x0 + .5 x1 + .3 x2 with x0 + x1 + x2 <= 1.5 and 0.2 <= x0 - x2 <= 0.8 (a ranged row):
    x = (1, 0.3, 0.2), both rows tight at x1, x2 strictly inside: duals (0.5, 0.2), unique."""
    form = Formulation(d=3, rows=[Row((0, 1, 2), (1.0, 1.0, 1.0), -math.inf, 1.5)])
    ranged = Row((0, 2), (1.0, -1.0), 0.2, 0.8)
    for model in pair(other, form, integer=False):
        model.set_costs(np.array([0.9, 0.5, 0.3]))
        model.add_rows([ranged])
        result = model.solve(tie_tol=1e-9)
        assert result.objective == pytest.approx(1.11, abs=TOL) and result.bound == pytest.approx(1.11, abs=TOL)
        assert np.allclose(result.x, [1.0, 0.3, 0.2], atol=1e-7)
        assert np.allclose(model.row_duals(), [0.5, 0.2], atol=1e-7)
        assert model.rows(1, 2) == [ranged]
    # the same LP as the relaxation of an integer model; no integer point has 0.2 <= x0 - x2 <= 0.8
    for model in pair(other, form, integer=True):
        model.set_costs(np.array([0.9, 0.5, 0.3]))
        model.add_rows([ranged])
        assert np.allclose(model.relaxation_arm_values(), [1.0, 0.3, 0.2], atol=1e-7)
        with model.options({"solve_relaxation": True}):
            assert np.allclose(model.run_relaxation(), [1.0, 0.3, 0.2], atol=1e-7)
        model.clear_solver()
        assert model.solve().status == "infeasible"


def check_appended_columns_model_a_bonus_and_deleting_them_restores_the_model(other: str) -> None:
    """An integer column ``y <= a_0 + a_1`` with cost 0.7 adds ``0.7 min(a_0 + a_1, 1)`` (brute force); a
    continuous column and a row in between are deleted again, and the indices after them shift down."""
    space = cm.Cardinality(4, 2)
    w = np.array([0.1, -0.05, 0.6, 0.5])
    bonus = max(float(w @ a) + 0.7 * min(a[0] + a[1], 1) for a in space.enumerate())
    for model in pair(other, space.formulation()):
        model.set_costs(w)
        n_cols, n_rows = model.num_cols, model.num_rows
        z = model.append_cols([0.0], [0.0], [np.inf])
        y = model.append_cols([0.7], [0.0], [1.0], integer=[0])
        assert (z, y, model.num_cols) == (n_cols, n_cols + 1, n_cols + 2)
        model.add_rows([Row((z,), (1.0,), -np.inf, 3.0)])
        model.add_rows_fixed([-np.inf], [0.0], [y, 0, 1], [1.0, -1.0, -1.0], 3)
        assert model.solve().objective == pytest.approx(bonus, abs=TOL)
        model.delete_rows(n_rows, n_rows + 1)
        model.delete_cols(z, z + 1)
        assert model.num_cols == n_cols + 1
        assert model.rows(n_rows, model.num_rows) == [Row((0, 1, n_cols), (-1.0, -1.0, 1.0), -np.inf, 0.0)]
        assert model.solve().objective == pytest.approx(bonus, abs=TOL)
        model.undo()
        model.delete_cols(n_cols, model.num_cols)
        assert (model.num_cols, model.num_rows) == (n_cols, n_rows)
        assert model.solve().objective == pytest.approx(best(space, w)[0], abs=TOL)


def check_mip_starts_and_new_models_give_the_brute_force_optimum(other: str, space) -> None:
    """A cold solve with the query's start, a warm one after set_mip_start, and the LP of new_model; rows of
    the formulation read back equal (the separators' rows are the cut loop's, so forests run its loop)."""
    rng = np.random.default_rng(5)
    w = rng.normal(size=space.d)
    value, action = best(space, w)
    form = space.formulation()
    highs, grb = pair(other, form)
    assert highs.rows(0, highs.num_rows) == grb.rows(0, grb.num_rows)
    for model in (highs, grb):
        model.set_costs(w)
        model.start = space.enumerate()[0].astype(float)  # an action, not the optimum (unless it is)
        result = model.solve()
        while form.separators and form.violated_rows(result.x[: space.d] > 0.5):
            model.add_rows(form.violated_rows(result.x[: space.d] > 0.5))
            result = model.solve()
        same_answer(result, value, action, space.d)
        model.set_mip_start(action)
        same_answer(model.solve(cold=False), value, action, space.d)
        model.undo()
        lp = model.new_model(form, integer=False)
        lp.set_costs(w)
        assert lp.solve().objective >= value - TOL
    lp_values = [m.new_model(form, integer=False) for m in (highs, grb)]
    for lp in lp_values:
        lp.set_costs(w)
    assert lp_values[0].solve().objective == pytest.approx(lp_values[1].solve().objective, abs=TOL)


def check_a_fixing_that_leaves_no_action_is_an_error_not_an_infeasible_query(other: str) -> None:
    from cmab_milp.oracles.core.base import OracleError

    model = new_engine(cm.Cardinality(3, 1).formulation(), engine=other)
    model.fix_arms(np.ones(3, bool), np.ones(3), region_bound=0.0)
    with pytest.raises(OracleError, match="fix_arms"):
        model.solve()
    model.undo()
    assert model.solve().status == "optimal"


def check_root_cuts_run_on_the_engine_as_on_highs(other: str) -> None:
    """The solver-neutral root cuts (:func:`~cmab_milp.oracles.mip.root_cuts.add_root_cuts`, with the query's
    hooks of :func:`~cmab_milp.oracles.mip.starts.prepare_query`) on both engines: the same cuts (the LP points
    are unique under these costs), then the cut loop's optimum, the maximum-weight forest (Kruskal)."""
    from cmab_milp.oracles.mip.root_cuts import add_root_cuts

    graph = nx.petersen_graph()
    space = cm.GraphicMatroid(graph)
    form = space.formulation()
    w = np.random.default_rng(3).uniform(-0.2, 1.0, size=space.d)
    positive = nx.Graph()
    positive.add_weighted_edges_from((u, v, w[k]) for k, (u, v) in enumerate(graph.edges) if w[k] > 0)
    value = sum(data["weight"] for *_, data in nx.maximum_spanning_edges(positive, data=True))
    cuts = []
    for model in pair(other, form):
        model.set_costs(w)
        n = model.num_rows
        assert add_root_cuts(model, form) == model.num_rows - n > 0
        cuts.append(sorted(model.rows(n, model.num_rows), key=repr))
        result = model.solve()
        while form.violated_rows(result.x[: space.d] > 0.5):
            model.add_rows(form.violated_rows(result.x[: space.d] > 0.5))
            result = model.solve()
        assert result.status == "optimal" and result.objective == pytest.approx(value, abs=TOL)
        model.undo()
        assert model.num_rows == n
    assert cuts[0] == cuts[1]


def check_the_certified_pipeline_with_root_cuts_and_query_hooks_answers_on_the_engine(other: str, hooks) -> None:
    """:func:`~cmab_milp.oracles.core.pipeline.certified_solve` as the ``highs`` backend calls it (root cuts,
    the cut loop, the certificate; with ``hooks`` :func:`~cmab_milp.oracles.mip.starts.prepare_query`'s path MIP
    start, arm fixing, HiGHS's positive-cost options and candidate cuts, turned on for this small grid) on s-t
    paths: the brute-force path on either engine, under restrictions too."""
    from cmab_milp.oracles.core.pipeline import certified_solve
    from cmab_milp.oracles.mip.root_cuts import add_root_cuts
    from cmab_milp.oracles.mip.tuning import HighsTuning

    space = cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2), cuts_min_edges=1)  # s-t cuts at fractional points
    form, oracle = space.formulation(), cm.make_oracle(space, "highs")
    rng = np.random.default_rng(11)
    engines = pair(other, form)
    starts = []
    for model in engines:
        model.tuning = HighsTuning.of({"path_start_min_arms": 1} if hooks else {})
        model.set_mip_start = lambda arms, model=model: (
            starts.append(model.name) or type(model).set_mip_start(model, arms)
        )
    for k in range(6):
        w = rng.normal(size=space.d)
        include, exclude = ((), ()) if k % 2 else ((int(rng.integers(space.d)),), (int(rng.integers(space.d)),))
        forbid = [(0, 1)] if k % 3 == 0 else []
        query = oracle.linear_query(w, include, exclude, forbid)

        def keep(a, include=include, exclude=exclude, forbid=forbid) -> bool:
            return (
                all(a[i] for i in include)
                and not any(a[i] for i in exclude)
                and all(a[i] + a[j] <= 1 for i, j in forbid)
            )

        if not any(keep(a) for a in space.enumerate().astype(float)):
            continue
        value, action = best(space, w, keep)
        for model in engines:
            found = certified_solve(model, query, form, root_cuts=add_root_cuts)
            assert found is not None and np.array_equal(found[0], action > 0.5), model.name
            assert found[1] >= value - TOL
            assert model.num_rows == model.base_rows  # the query's rows and cuts are gone
    assert (engines[1].name in starts) == hooks  # HiGHS takes its starts another way


def check_a_named_column_priced_alone_and_a_time_limit_of_zero_on_both_engines(other: str) -> None:
    """The path LP's pattern: a named column ``t`` with its own cost (``t <= x_0``: worth ``0.4 x_0`` more);
    then a time limit of 0 raises :class:`LimitReached`, or in approximate mode returns ``'limit'``."""
    from cmab_milp.oracles.core.base import LimitReached

    space = cm.Cardinality(5, 2)
    w = np.array([0.3, 0.5, 0.45, -0.1, 0.2])
    value = max(float(w @ a) + 0.4 * a[0] for a in space.enumerate().astype(float))
    for model in pair(other, space.formulation()):
        model.set_costs(w)
        t = model.add_cols(np.array([0.0]), np.array([2.0]), np.zeros(1, bool), ["t"])
        model.set_col_cost(t, 0.4)
        model.add_rows([Row((t, 0), (1.0, -1.0), -np.inf, 0.0)])
        assert model.col_names[t] == "t" and model.num_cols == t + 1
        assert model.solve().objective == pytest.approx(value, abs=TOL)
        model.set_col_bounds(t, 0.0, 0.0)
        assert model.solve().objective == pytest.approx(best(space, w)[0], abs=TOL)
        model.set_time_limit(0.0)
        with pytest.raises(LimitReached):
            model.solve()
        model.approximate(0.0)
        assert model.solve().status == "limit"
        model.set_time_limit(None)
        assert model.solve().status == "optimal"


class NormModelOn:
    """An oracle whose norm model is a new engine of ``engine`` (else the ``highs`` oracle it wraps)."""

    def __init__(self, oracle, engine: str, tuning) -> None:
        self._oracle, self._engine, self._model, self.tuning = oracle, engine, None, tuning

    def __getattr__(self, name: str):
        return getattr(self._oracle, name)

    def norm_model(self) -> Engine:
        if self._model is None:
            self._model = new_engine(self._oracle.formulation, engine=self._engine)
            self._model.tuning = self.tuning
        return self._model


def check_norm_methods_run_on_the_engine_to_the_brute_force_index(other: str, space, sign, methods) -> None:
    """The norm methods that edit the model most (columns appended and deleted, lifting rows, presolve off,
    relaxation rounds, MIP starts) on each engine: the action of the brute-force index, by the method asked."""
    from cmab_milp.oracles.mip.tuning import HighsTuning
    from cmab_milp.oracles.norm import solver

    oracle = cm.make_oracle(space, "highs")
    rng = np.random.default_rng(1)
    A = rng.normal(size=(space.d, space.d))
    M = A @ A.T / space.d
    mu = rng.normal(size=space.d) * (0.3 if sign > 0 else 1.5)
    actions = space.enumerate().astype(float)
    index = actions @ mu + sign * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", actions, M, actions), 0.0))
    query = oracle.norm_query(mu, M, 1.0, sign=sign)
    chain = tuple(getattr(solver, name) for name in methods)
    for engine in ("highs", other):
        wrapped = NormModelOn(oracle, engine, HighsTuning.of({"minus_outer": True}))
        norm = solver.NormSolver(wrapped, query)
        action, _ = norm.run(chain)
        assert norm.stats.method == chain[-1].name and wrapped._model.name.lower() == engine
        assert float(index[(actions == action).all(axis=1)][0]) == pytest.approx(index.max(), abs=1e-9), engine


def cases() -> list:
    """Every script as a ``pytest.param`` of one argument, the other engine's name (ids name the script and case)."""
    out = [
        pytest.param(check_rows_fixings_and_undo_script_on_cardinality, id="rows-fixings-undo"),
        pytest.param(check_an_lp_with_unique_primal_and_dual_solutions_agrees_with_the_closed_form, id="lp-duals"),
        pytest.param(check_appended_columns_model_a_bonus_and_deleting_them_restores_the_model, id="columns"),
        pytest.param(check_a_fixing_that_leaves_no_action_is_an_error_not_an_infeasible_query, id="fixing-error"),
        pytest.param(check_root_cuts_run_on_the_engine_as_on_highs, id="root-cuts"),
        pytest.param(check_a_named_column_priced_alone_and_a_time_limit_of_zero_on_both_engines, id="time-limit"),
    ]
    for name, space in START_SPACES.items():
        out.append(
            pytest.param(
                partial(check_mip_starts_and_new_models_give_the_brute_force_optimum, space=space),
                id=f"mip-starts-{name}",
            )
        )
    for hooks in (False, True):
        check = check_the_certified_pipeline_with_root_cuts_and_query_hooks_answers_on_the_engine
        out.append(pytest.param(partial(check, hooks=hooks), id=f"certified-{'path-starts' if hooks else 'plain'}"))
    for chain, (sign, methods) in NORM_CHAINS.items():
        for name, space in NORM_SPACES.items():
            check = partial(
                check_norm_methods_run_on_the_engine_to_the_brute_force_index, space=space, sign=sign, methods=methods
            )
            out.append(pytest.param(check, id=f"norm-{chain}-{name}"))
    return out
