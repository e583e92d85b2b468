"""The one certified solve (cmab_milp.oracles.core.pipeline): honest models pass, lying models are refused.

A fake :class:`SolverModel` answers by brute force over the space's actions and
can be told to lie in each way a solver can: a bound above its answer, a NaN
bound, fractional arm values, a time-limit stop, a false "infeasible", an
error status, an answer that ignores the restrictions, or one that ignores
the cuts. The pipeline must answer the honest model exactly and refuse every lie.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.base import Ledger, LimitReached, OracleError, tolerance
from cmab_milp.oracles.core.model import ModelBase, SolveResult, SolverModel
from cmab_milp.oracles.core.pipeline import FractionalAnswer, certified_solve, proven, proven_ratio
from cmab_milp.spaces.formulation import Row


class FakeModel(ModelBase):
    """Brute force over ``actions`` under the current costs, bounds and rows; ``lie`` says how to cheat."""

    name = "Fake"
    integer = True

    def __init__(self, actions: np.ndarray, base_rows=(), lie: str = "", confirm: bool = False) -> None:
        self.actions = actions.astype(bool)
        self.d = actions.shape[1]
        self.base_rows = list(base_rows)
        self.rows: list[Row] = list(base_rows)
        self.lie = lie
        self.costs = np.zeros(self.d)
        self.include: tuple[int, ...] = ()
        self.exclude: tuple[int, ...] = ()
        self.costs_seen: list[np.ndarray] = []
        self.solves = 0
        self.confirm = confirm

    # the protocol
    def set_costs(self, costs):
        self.costs = np.asarray(costs, float)
        self.costs_seen.append(self.costs)

    def set_arm_bounds(self, include, exclude):
        self.include, self.exclude = include, exclude

    def add_rows(self, rows):
        self.rows.extend(rows)

    def undo(self):
        self.rows = list(self.base_rows)

    def _feasible(self) -> np.ndarray:
        ok = self.actions[:, list(self.include)].all(axis=1) & ~self.actions[:, list(self.exclude)].any(axis=1)
        x = self.actions.astype(float)
        for row in self.rows:
            lhs = x[:, list(row.cols)] @ np.asarray(row.coefs, float)
            ok &= (lhs >= row.lb - 1e-9) & (lhs <= row.ub + 1e-9)
        return ok

    def solve(self, tie_tol=None) -> SolveResult:
        self.solves += 1
        lie = self.lie
        if lie == "error":
            return SolveResult("error", message="fake trouble")
        ok = np.ones(len(self.actions), bool) if lie in ("ignore rows", "ignore cuts") else self._feasible()
        if lie == "ignore rows":  # also ignores the arm bounds
            ok = np.ones(len(self.actions), bool)
        if lie == "infeasible" or not ok.any():
            return SolveResult("infeasible")
        values = self.actions[ok].astype(float) @ self.costs
        order = np.argsort(-values, kind="stable")
        best = self.actions[ok][order[0]]
        top = float(values[order[0]])
        if lie in ("bound above", "limit", "limit no incumbent", "approximate") and len(order) > 1:
            worse = self.actions[ok][order[-1]]  # the worst action, with the true optimum as the bound
            if lie == "limit no incumbent":
                return SolveResult("limit", None, message="fake time limit")
            status = "limit" if lie == "limit" else "optimal"
            return SolveResult(status, worse.astype(float).tolist(), float(values[order[-1]]), top)
        x = best.astype(float).tolist()
        if lie == "fractional":
            x[0] = 0.5
        bound = math.nan if lie == "nan bound" else top
        return SolveResult("optimal", x, top, bound)

    def confirm_infeasible(self, restrictions) -> None:
        if not self.confirm:
            return
        self.lie, saved = "", self.lie
        try:
            if self._feasible().any():
                raise OracleError("Fake reported 'Infeasible' but the query has feasible actions")
        finally:
            self.lie = saved


@pytest.fixture
def space():
    return cm.Cardinality(6, 3)


def query(space, w, **restrictions):
    return cm.make_oracle(space, "enumerate").linear_query(np.asarray(w, float), **restrictions)


def truth(space, w, **restrictions):
    oracle = cm.make_oracle(space, "enumerate")
    answer = oracle.argmax(np.asarray(w, float), **restrictions)
    return None if answer is None else float(np.asarray(w) @ answer)


def test_an_honest_model_is_answered_exactly_with_restrictions(space) -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        w = rng.normal(size=6)
        include = [int(rng.integers(6))] if rng.random() < 0.5 else []
        pairs = [(0, 1), (2, 3)] if rng.random() < 0.5 else []
        q = query(space, w, include=include, forbid_pairs=pairs)
        model = FakeModel(space.enumerate())
        found = certified_solve(model, q, space.formulation())
        best = truth(space, w, include=include, forbid_pairs=pairs)
        action, bound = found
        assert float(w @ action) >= best - tolerance(best)
        assert bound == pytest.approx(best)
        assert model.rows == []  # the forbid_pairs rows were undone


@pytest.mark.parametrize("scale", [1e-30, 1e25])
def test_costs_far_from_one_are_rescaled_by_a_power_of_two(space, scale: float) -> None:
    w = np.array([0.3, -0.2, 0.9, 0.4, 0.1, -0.5]) * scale
    model = FakeModel(space.enumerate())
    action, bound = certified_solve(model, query(space, w), space.formulation())
    seen = model.costs_seen[-1]
    assert 2.0**-16 <= np.abs(seen).max() <= 2.0**16
    ratio = w / seen
    assert np.all(ratio == ratio[0]) and math.log2(ratio[0]).is_integer()  # exact: a power of two
    assert bound == pytest.approx(truth(space, w), rel=1e-12)  # the bound is scaled back
    assert float(w @ action) == pytest.approx(truth(space, w), rel=1e-12)


@pytest.mark.parametrize(
    ("lie", "error", "message"),
    [
        ("bound above", OracleError, "optimality not proven"),
        ("nan bound", OracleError, "optimality not proven"),
        ("fractional", FractionalAnswer, "fractional"),
        ("limit", LimitReached, "time limit"),
        ("limit no incumbent", LimitReached, "time limit"),
        ("error", OracleError, "fake trouble"),
        ("ignore rows", OracleError, "violates the space or the restrictions"),
    ],
)
def test_a_lying_model_is_refused(space, lie: str, error: type, message: str) -> None:
    model = FakeModel(space.enumerate(), lie=lie)
    q = query(space, [0.3, -0.2, 0.9, 0.4, 0.1, -0.5], exclude=[2])
    with pytest.raises(error, match=message):
        certified_solve(model, q, space.formulation())
    assert model.rows == []  # undone on the way out


def test_a_false_infeasible_claim_is_refused_by_the_confirm_hook(space) -> None:
    model = FakeModel(space.enumerate(), lie="infeasible", confirm=True)
    with pytest.raises(OracleError, match="has feasible actions"):
        certified_solve(model, query(space, np.ones(6)), space.formulation())
    honest = FakeModel(space.enumerate(), confirm=True)
    assert certified_solve(honest, query(space, np.ones(6), include=[0, 1, 2, 3]), space.formulation()) is None


def test_lazy_cuts_are_added_for_the_query_only_and_a_model_ignoring_them_is_stopped() -> None:
    graph = nx.cycle_graph(4)
    graph.add_edge(0, 2)
    space = cm.GraphicMatroid(graph)  # forests: subtour cuts from the separator
    form = space.formulation()
    assert form.separators
    # the fake knows every edge subset and none of the rows (a relaxation): the cuts must bring it to a forest
    d = space.d
    subsets = np.array([[(k >> i) & 1 for i in range(d)] for k in range(2**d)], bool)
    model = FakeModel(subsets)
    w = np.ones(d)
    action, _ = certified_solve(model, query(space, w), form)
    assert space.contains(action) and action.sum() == 3
    assert model.rows == [] and model.solves > 1  # cut rounds happened, then were undone
    stubborn = FakeModel(subsets, lie="ignore cuts")
    with pytest.raises(OracleError, match="did not converge in 5 rounds"):
        certified_solve(stubborn, query(space, w), form, max_rounds=5)


def test_approximate_answers_carry_a_proven_ratio_in_the_ledger(space) -> None:
    w = np.array([0.3, 0.2, 0.9, 0.4, 0.1, 0.5])
    ledger = Ledger()
    model = FakeModel(space.enumerate(), lie="approximate")
    with pytest.raises(OracleError, match="optimality not proven"):  # without a gap: refused
        certified_solve(model, query(space, w, include=[0]), space.formulation())
    action, bound = certified_solve(model, query(space, w, include=[0]), space.formulation(), gap=0.5, ledger=ledger)
    opt = truth(space, w, include=[0])
    assert bound == pytest.approx(opt)
    assert ledger.approximate == 1 and ledger.worst_ratio == pytest.approx(float(w @ action) / opt)
    # a time-limit stop with an incumbent: returned with its ratio only in the approximate mode
    limit = FakeModel(space.enumerate(), lie="limit")
    certified_solve(limit, query(space, w, include=[0]), space.formulation(), gap=0.5, ledger=ledger)
    assert ledger.approximate == 2
    # a negative bound proves no ratio: refused even with a gap
    with pytest.raises(OracleError, match="value > 0 and bound > 0"):
        certified_solve(model, query(space, -w, include=[0]), space.formulation(), gap=0.5, ledger=ledger)


def test_proven_takes_the_tolerance_of_the_smallest_possible_optimum() -> None:
    assert proven(value=1.0, bound=1.0) and proven(value=2.0, bound=1.0)  # a bound below the value proves it
    assert not proven(value=0.0, bound=1e-8) and proven(value=0.0, bound=9e-10)
    big = 1e6
    assert proven(value=big, bound=big + 5e-4) and not proven(value=big, bound=big + 2e-3)
    assert proven_ratio(value=0.5, bound=1.0) == 0.5
    assert proven_ratio(value=0.0, bound=1.0) is None and proven_ratio(value=1.0, bound=0.0) is None


def test_every_model_backend_adapts_the_protocol() -> None:
    from typing import get_type_hints

    names = {n for n in dir(SolverModel) if not n.startswith("_")} | set(get_type_hints(SolverModel))
    space = cm.Cardinality(4, 2)
    models = [cm.make_oracle(space, "highs").model()]
    for backend, attribute in (("scip", "_model"), ("gurobi", "_model"), ("pulp:HiGHS", "_model")):
        try:
            oracle = cm.make_oracle(space, backend)
        except ValueError:  # the solver is not installed here
            continue
        models.append(getattr(oracle, attribute)())
    try:
        from cmab_milp.oracles.backends.ortools import _CpSatModel

        models.append(_CpSatModel(cm.make_oracle(space, "ortools")))
    except ValueError:
        pass
    for model in models:
        missing = [n for n in names if not hasattr(model, n)]
        assert not missing, f"{type(model).__name__} lacks {missing}"


def test_the_highs_model_offers_the_lp_relaxation_for_root_cuts() -> None:
    """The hook for query-scoped root cuts: the LP point's arm values, and the next solve unchanged."""
    from cmab_milp.oracles.backends.highs_model import CompiledModel

    space = cm.GraphicMatroid(nx.complete_graph(4))
    form = space.formulation()
    model = CompiledModel(form)
    w = np.array([1.0, 0.9, 0.8, 0.7, 0.6, 0.5])
    model.set_costs(w)
    relaxed = model.relaxation_arm_values()
    assert len(relaxed) == space.d and all(-1e-9 <= v <= 1 + 1e-9 for v in relaxed)
    assert float(w @ np.array(relaxed)) >= truth(space, w) - 1e-9  # a relaxation bounds the optimum
    action, _ = certified_solve(model, query(space, w), form)
    assert float(w @ action) == pytest.approx(truth(space, w))


def test_every_solver_backend_is_a_model_oracle() -> None:
    """One adapter shape: each solver backend answers through a ModelOracle over its SolverModel."""
    from cmab_milp.oracles import BACKENDS
    from cmab_milp.oracles.core.model_oracle import ModelOracle

    solvers = ["highs", "scip", "gurobi", "pulp", "ortools"]
    assert all(issubclass(BACKENDS[name].factory(), ModelOracle) for name in solvers)
    # and the hooks a model does not need have defaults, so the pipeline looks nothing up
    model = FakeModel(np.eye(2, dtype=bool))
    assert model.separate([1.0, 0.0], [True, False]) == [] and model.bound_name == "the solver's bound"
    with pytest.raises(cm.UnsupportedQuery, match="no quadratic model"):
        model.open_norm(lambda m: None, 1.0, 1.0)
