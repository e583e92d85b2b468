"""SCIP's :class:`~cmab_milp.oracles.core.engine.Engine` against HiGHS's: the scripts of engine calls of
:mod:`engine_scripts` on both (rows, fixings, columns appended and deleted, LP duals, MIP starts, root cuts, the
certified solve, the norm methods), compared with each other and with brute force or closed forms, and what is
SCIP's own (its options, every solve cold, candidate cuts from its incumbents)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.spaces.formulation import Row
from tests.oracles.backends import engine_scripts as scripts
from tests.oracles.backends.engine_scripts import pair


@pytest.fixture(scope="module")
def scip():
    """Skip without pyscipopt."""
    pytest.importorskip("pyscipopt")
    from cmab_milp.oracles.backends.scip_engine import ScipEngine

    return ScipEngine


@pytest.mark.parametrize("script", scripts.cases())
def test_the_engine_scripts_give_highs_answers_and_brute_force_on_scip(scip, script) -> None:
    """Each script of :mod:`engine_scripts` on HiGHS and on SCIP (rows, fixings, columns, LP duals, MIP starts,
    root cuts, the certified solve, the norm methods)."""
    script("scip")


def test_options_take_scip_names_and_the_highs_names_of_the_shared_code(scip) -> None:
    model = scip(cm.Cardinality(3, 2).formulation())
    with model.options({"limits/nodes": 5, "time_limit": 7.0, "mip_allow_restart": False, "presolve": "off"}):
        assert model.model.getParam("limits/nodes") == 5 and model.model.getParam("limits/time") == 7.0
        assert model.model.getParam("presolving/maxrounds") == 0
    assert model.model.getParam("limits/nodes") == -1 and model.model.getParam("limits/time") >= 1e20
    model.set_query_options({"presolving/maxrounds": 0})
    model.undo()
    assert model.model.getParam("presolving/maxrounds") == -1
    with pytest.raises(ValueError, match="'no_such_option' is neither a SCIP parameter"):
        model.set_options({"no_such_option": 1})
    with pytest.raises(ValueError, match=r"row range \[0, 5\)"):
        model.rows(0, 5)
    with pytest.raises(ValueError, match="4 indices and 4 values must be 3 per row"):
        model.add_rows_fixed([0.0], [1.0], [0, 1, 2, 0], [1.0] * 4, 3)


def test_every_scip_lp_solve_is_cold_so_a_tie_is_never_repeated(scip) -> None:
    """HiGHS repeats a tied LP optimum cold; SCIP's solves are all cold: the same optimum, no repeat."""
    highs, model = pair("scip", cm.Cardinality(3, 1).formulation(), integer=False)
    for engine in (highs, model):
        engine.set_costs(np.array([0.5, 0.5, 0.1]))
        assert engine.solve(tie_tol=1e-9).objective == pytest.approx(0.5)
    assert highs.tie_restarts == 1 and model.tie_restarts == 0


def test_row_duals_before_any_lp_solve_and_of_a_milp_are_refused(scip) -> None:
    from cmab_milp.oracles.core.base import OracleError

    model = scip(cm.Cardinality(3, 1).formulation())
    with pytest.raises(OracleError, match="row duals only after"):
        model.row_duals()
    model.set_costs(np.array([0.5, 0.2, 0.1]))
    model.solve()
    with pytest.raises(OracleError, match="row duals only after"):
        model.row_duals()
    assert model.relaxation_arm_values() == pytest.approx([1.0, 0.0, 0.0]) and len(model.row_duals()) == 1


def test_deleting_a_column_held_by_formulation_rows_drops_its_entries_as_highs_does(scip) -> None:
    """A column ``y`` held by two rows (``a_0 + a_1 <= y``, ``y + a_2 <= 1.5``) deleted: both engines read back
    the rows without it (``a_0 + a_1 <= 0``, ``a_2 <= 1.5``) and solve to the optimum of those rows."""
    space = cm.Cardinality(4, 2)
    w = np.array([0.6, 0.5, 0.4, -0.1])
    for model in pair("scip", space.formulation()):
        model.set_costs(w)
        y = model.append_cols([0.0], [0.0], [1.0])
        model.add_rows([Row((0, 1, y), (1.0, 1.0, -1.0), -math.inf, 0.0), Row((y, 2), (1.0, 1.0), -math.inf, 1.5)])
        assert model.solve().objective == pytest.approx(0.6, abs=scripts.TOL)  # a_0 + a_1 <= y <= 1
        model.delete_cols(y, y + 1)
        assert model.rows(1, 3) == [Row((0, 1), (1.0, 1.0), -math.inf, 0.0), Row((2,), (1.0,), -math.inf, 1.5)]
        assert model.solve().objective == pytest.approx(0.4, abs=scripts.TOL)  # arms 0 and 1 out


def test_candidate_cuts_see_scip_incumbents_and_reach_the_cut_loop(scip) -> None:
    """Forests of K4 without their cycle rows: every incumbent SCIP meets goes to ``candidate_cuts``; a
    candidate with a cycle gets the formulation's cut, which :meth:`separate` hands to the cut loop."""
    space = cm.GraphicMatroid(nx.complete_graph(4))
    form = space.formulation()
    w = np.random.default_rng(2).uniform(0.1, 1.0, size=space.d)
    value = scripts.best(space, w)[0]
    model = scip(form)
    model.set_costs(w)
    seen: list[list[float]] = []

    def cuts(values: list[float]) -> list[Row]:
        seen.append(values)
        return form.violated_rows(np.asarray(values[: space.d]) > 0.5)

    model.candidate_cuts = cuts
    result = model.solve()
    assert seen and np.allclose(seen[-1][: space.d], result.x[: space.d])
    while form.violated_rows(result.x[: space.d] > 0.5):
        chosen = list(result.x[: space.d] > 0.5)
        model.add_rows([*form.violated_rows(np.array(chosen)), *model.separate(result.x, chosen)])
        result = model.solve()
    assert result.objective == pytest.approx(value, abs=scripts.TOL)
    model.undo()
    assert model.candidate_cuts is None and model.num_rows == model.base_rows


def test_each_run_gets_its_own_mip_start_and_scip_reports_no_error(scip, capfd) -> None:
    """SCIP keeps a partial solution for good, so a second start rebuilds the model first: every query of a
    sequence with a new start answers the brute-force optimum, and SCIP prints no error (as it did on a refused
    second start)."""
    space = cm.Matchings(nx.complete_graph(6))
    model = scip(space.formulation())
    rng = np.random.default_rng(4)
    actions = space.enumerate().astype(float)
    first = model.model
    for k in range(4):
        w = rng.normal(size=space.d)
        model.set_costs(w)
        model.start = actions[k]
        scripts.same_answer(model.solve(), *scripts.best(space, w), space.d)
        model.undo()
    assert model.model is not first and model.num_rows == model.base_rows
    assert "ERROR" not in "".join(capfd.readouterr())


def test_an_unbounded_column_is_an_error_and_an_empty_model_is_infeasible(scip) -> None:
    """A column with a positive cost and no upper bound: SCIP's 'unbounded' (or 'inforunbd', decided again) is an
    :class:`OracleError`, not an answer; a row no action meets gives status 'infeasible'."""
    from cmab_milp.oracles.core.base import OracleError

    model = scip(cm.Cardinality(3, 1).formulation())
    z = model.append_cols([1.0], [0.0], [np.inf])
    with pytest.raises(OracleError, match=r"SCIP returned status '(unbounded|inforunbd)'"):
        model.solve()
    model.delete_cols(z, z + 1)
    model.add_rows([Row((0, 1, 2), (1.0, 1.0, 1.0), 2.0, np.inf)])
    assert model.solve().status == "infeasible"
    model.undo()
    assert model.solve().status == "optimal"
