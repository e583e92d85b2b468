"""Gurobi's :class:`~cmab_milp.oracles.core.engine.Engine` against HiGHS's: the scripts of engine calls of
:mod:`engine_scripts` on both, compared with each other and with brute force or closed forms (small spaces: the pip
licence's 2000 columns), and what is Gurobi's own (its options, the LP tie restart)."""

from __future__ import annotations

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.engine import ENGINE_MEMBERS, Engine, new_engine
from tests.oracles.backends import engine_scripts as scripts
from tests.oracles.backends.engine_scripts import pair


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


def test_the_gurobi_engine_has_every_member_and_the_protocol(gurobi) -> None:
    model = gurobi(cm.Cardinality(3, 1).formulation())
    assert isinstance(model, Engine) and model.name == "Gurobi"
    assert not [name for name in ENGINE_MEMBERS if not hasattr(model, name)]
    lp = model.new_model(cm.Cardinality(3, 1).formulation(), integer=False)
    assert isinstance(lp, gurobi) and not lp.integer and lp.env is model.env


@pytest.mark.parametrize("script", scripts.cases())
def test_the_engine_scripts_give_highs_answers_and_brute_force_on_gurobi(gurobi, script) -> None:
    """Each script of :mod:`engine_scripts` on HiGHS and on Gurobi (rows, fixings, columns, LP duals, MIP starts,
    root cuts, the certified solve, the norm methods)."""
    script("gurobi")


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


def test_a_tied_lp_optimum_is_solved_again_cold_and_a_unique_one_is_not(gurobi) -> None:
    for model in pair("gurobi", cm.Cardinality(3, 1).formulation(), integer=False):
        model.set_costs(np.array([0.5, 0.2, 0.1]))
        assert model.solve(tie_tol=1e-9).objective == pytest.approx(0.5) and model.tie_restarts == 0
        model.set_costs(np.array([0.5, 0.5, 0.1]))  # x0 or x1: a possible tie
        assert model.solve(tie_tol=1e-9).objective == pytest.approx(0.5) and model.tie_restarts == 1


def test_new_engine_refuses_an_unknown_engine() -> None:
    with pytest.raises(ValueError, match="unknown engine 'cplex'; the engines are 'highs', 'gurobi', 'scip'"):
        new_engine(cm.Cardinality(3, 1).formulation(), engine="cplex")
