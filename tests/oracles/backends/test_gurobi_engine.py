"""Gurobi's :class:`~cmab_milp.oracles.core.engine.Engine` against HiGHS's: the same scripts of engine calls,
compared with each other and with brute force or closed forms (small spaces: the pip licence's 2000 columns)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.engine import ENGINE_MEMBERS, Engine, new_engine
from cmab_milp.spaces.formulation import Formulation, Row

TOL = 1e-7


@pytest.fixture(scope="module")
def gurobi():
    """Skip without gurobipy or without a licence that solves a small model."""
    gp = pytest.importorskip("gurobipy")
    try:
        with gp.Env(empty=True) as env:
            env.setParam("OutputFlag", 0)
            env.start()
            with gp.Model(env=env) as probe:
                probe.addVar(ub=1.0, obj=1.0)
                probe.optimize()
    except gp.GurobiError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no usable Gurobi licence: {exc}")
    from cmab_milp.oracles.backends.gurobi_engine import GurobiEngine

    return GurobiEngine


def pair(formulation: Formulation, integer: bool = True) -> tuple[Engine, Engine]:
    return new_engine(formulation, integer=integer), new_engine(formulation, integer=integer, engine="gurobi")


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


def test_the_gurobi_engine_has_every_member_and_the_protocol(gurobi) -> None:
    model = gurobi(cm.Cardinality(3, 1).formulation())
    assert isinstance(model, Engine) and model.name == "Gurobi"
    assert not [name for name in ENGINE_MEMBERS if not hasattr(model, name)]
    lp = model.new_model(cm.Cardinality(3, 1).formulation(), integer=False)
    assert isinstance(lp, gurobi) and not lp.integer and lp.env is model.env


def test_rows_fixings_and_undo_script_on_cardinality(gurobi) -> None:
    space = cm.Cardinality(6, 3)
    w = np.array([0.9, -0.2, 0.7, 0.65, 0.1, 0.3])

    def keep(a: np.ndarray) -> bool:
        return a[0] + a[2] <= 1 and 1 <= a[3] + a[5] <= 2

    for model in pair(space.formulation()):
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


def test_an_lp_with_unique_primal_and_dual_solutions_agrees_with_the_closed_form(gurobi) -> None:
    """max .9 x0 + .5 x1 + .3 x2 with x0 + x1 + x2 <= 1.5 and 0.2 <= x0 - x2 <= 0.8 (a ranged row):
    x = (1, 0.3, 0.2), both rows tight at x1, x2 strictly inside: duals (0.5, 0.2), unique."""
    form = Formulation(d=3, rows=[Row((0, 1, 2), (1.0, 1.0, 1.0), -math.inf, 1.5)])
    ranged = Row((0, 2), (1.0, -1.0), 0.2, 0.8)
    for model in pair(form, integer=False):
        model.set_costs(np.array([0.9, 0.5, 0.3]))
        model.add_rows([ranged])
        result = model.solve(tie_tol=1e-9)
        assert result.objective == pytest.approx(1.11, abs=TOL) and result.bound == pytest.approx(1.11, abs=TOL)
        assert np.allclose(result.x, [1.0, 0.3, 0.2], atol=1e-7)
        assert np.allclose(model.row_duals(), [0.5, 0.2], atol=1e-7)
        assert model.rows(1, 2) == [ranged]
    # the same LP as the relaxation of an integer model; no integer point has 0.2 <= x0 - x2 <= 0.8
    for model in pair(form, integer=True):
        model.set_costs(np.array([0.9, 0.5, 0.3]))
        model.add_rows([ranged])
        assert np.allclose(model.relaxation_arm_values(), [1.0, 0.3, 0.2], atol=1e-7)
        with model.options({"solve_relaxation": True}):
            assert np.allclose(model.run_relaxation(), [1.0, 0.3, 0.2], atol=1e-7)
        model.clear_solver()
        assert model.solve().status == "infeasible"


def test_appended_columns_model_a_bonus_and_deleting_them_restores_the_model(gurobi) -> None:
    """An integer column ``y <= a_0 + a_1`` with cost 0.7 adds ``0.7 min(a_0 + a_1, 1)`` (brute force); a
    continuous column and a row in between are deleted again, and the indices after them shift down."""
    space = cm.Cardinality(4, 2)
    w = np.array([0.1, -0.05, 0.6, 0.5])
    bonus = max(float(w @ a) + 0.7 * min(a[0] + a[1], 1) for a in space.enumerate())
    for model in pair(space.formulation()):
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


@pytest.mark.parametrize(
    "space",
    [cm.Matchings(nx.complete_graph(5)), cm.STPaths(nx.cycle_graph(6), 0, 3), cm.GraphicMatroid(nx.complete_graph(4))],
    ids=["matchings", "paths", "forests"],
)
def test_mip_starts_and_new_models_give_the_brute_force_optimum(gurobi, space) -> None:
    """A cold solve with the query's start, a warm one after set_mip_start, and the LP of new_model; rows of
    the formulation read back equal (the separators' rows are the cut loop's, so forests run its loop)."""
    rng = np.random.default_rng(5)
    w = rng.normal(size=space.d)
    value, action = best(space, w)
    form = space.formulation()
    highs, grb = pair(form)
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


def test_options_take_gurobi_names_and_the_highs_names_of_the_shared_code(gurobi) -> None:
    model = gurobi(cm.Cardinality(3, 2).formulation())
    with model.options({"MIPFocus": 1, "time_limit": 7.0, "mip_allow_restart": False}):
        assert model.model.Params.MIPFocus == 1 and model.model.Params.TimeLimit == 7.0
    assert model.model.Params.MIPFocus == 0 and model.model.Params.TimeLimit > 1e99
    model.set_query_options({"Presolve": 0})
    model.undo()
    assert model.model.Params.Presolve == -1
    with pytest.raises(ValueError, match="'no_such_option' is neither a Gurobi parameter"):
        model.set_options({"no_such_option": 1})
    with pytest.raises(ValueError, match=r"row range \[0, 5\)"):
        model.rows(0, 5)
    with pytest.raises(ValueError, match="4 indices and 4 values must be 3 per row"):
        model.add_rows_fixed([0.0], [1.0], [0, 1, 2, 0], [1.0] * 4, 3)


def test_a_fixing_that_leaves_no_action_is_an_error_not_an_infeasible_query(gurobi) -> None:
    from cmab_milp.oracles.core.base import OracleError

    model = gurobi(cm.Cardinality(3, 1).formulation())
    model.fix_arms(np.ones(3, bool), np.ones(3), region_bound=0.0)
    with pytest.raises(OracleError, match="fix_arms"):
        model.solve()
    model.undo()
    assert model.solve().status == "optimal"


def test_root_cuts_run_on_the_gurobi_engine_as_on_highs(gurobi) -> None:
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
    for model in pair(form):
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


@pytest.mark.parametrize("hooks", [False, True], ids=["plain", "path-starts"])
def test_the_certified_pipeline_with_root_cuts_and_query_hooks_answers_on_the_gurobi_engine(gurobi, hooks) -> None:
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
    engines = pair(form)
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
    assert ("Gurobi" in starts) == hooks  # HiGHS takes its starts another way


def test_a_named_column_priced_alone_and_a_time_limit_of_zero_on_both_engines(gurobi) -> None:
    """The path LP's pattern: a named column ``t`` with its own cost (``t <= x_0``: worth ``0.4 x_0`` more);
    then a time limit of 0 raises :class:`LimitReached`, or in approximate mode returns ``'limit'``."""
    from cmab_milp.oracles.core.base import LimitReached

    space = cm.Cardinality(5, 2)
    w = np.array([0.3, 0.5, 0.45, -0.1, 0.2])
    value = max(float(w @ a) + 0.4 * a[0] for a in space.enumerate().astype(float))
    for model in pair(space.formulation()):
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


def test_a_tied_lp_optimum_is_solved_again_cold_and_a_unique_one_is_not(gurobi) -> None:
    for model in pair(cm.Cardinality(3, 1).formulation(), integer=False):
        model.set_costs(np.array([0.5, 0.2, 0.1]))
        assert model.solve(tie_tol=1e-9).objective == pytest.approx(0.5) and model.tie_restarts == 0
        model.set_costs(np.array([0.5, 0.5, 0.1]))  # x0 or x1: a possible tie
        assert model.solve(tie_tol=1e-9).objective == pytest.approx(0.5) and model.tie_restarts == 1


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


@pytest.mark.parametrize(
    "space",
    [cm.Cardinality(8, 3), cm.Matchings(nx.complete_graph(6)), cm.STPaths(nx.grid_2d_graph(3, 3), (0, 0), (2, 2))],
    ids=["cardinality", "matchings", "paths"],
)
@pytest.mark.parametrize(
    ("sign", "methods"),
    [(1, ("OUTER_PLUS",)), (-1, ("LINEAR_BOUND", "MINUS_OUTER")), (-1, ("LINEAR_BOUND", "SECANTS_MINUS"))],
    ids=["outer-plus", "outer-minus", "secants-minus"],
)
def test_norm_methods_run_on_the_gurobi_engine_to_the_brute_force_index(gurobi, space, sign, methods) -> None:
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
    for engine in ("highs", "gurobi"):
        wrapped = NormModelOn(oracle, engine, HighsTuning.of({"minus_outer": True}))
        norm = solver.NormSolver(wrapped, query)
        action, _ = norm.run(chain)
        assert norm.stats.method == chain[-1].name and wrapped._model.name.lower() == engine
        assert float(index[(actions == action).all(axis=1)][0]) == pytest.approx(index.max(), abs=1e-9), engine


def test_new_engine_refuses_an_unknown_engine() -> None:
    with pytest.raises(ValueError, match="unknown engine 'cplex'; the engines are 'highs', 'gurobi'"):
        new_engine(cm.Cardinality(3, 1).formulation(), engine="cplex")
