"""Side rows on a base space with a combinatorial oracle: starts, flip bounds, fixing, cover cuts.

Truth is brute force over small spaces: a start is an action obeying every row and bound; a flip
bound is the exact best value with one arm flipped; a fixing loses no action near the optimum; a
cover cut holds for every action and cuts the point it was separated from; every ``highs`` answer
has the enumerated optimum's value, whatever the restrictions and the queries before it.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.backends.combinatorial import _SOLVERS
from cmab_milp.oracles.backends.highs_model import CompiledModel
from cmab_milp.oracles.core.queries import LinearQuery, make_restrictions
from cmab_milp.oracles.mip import starts as mip_starts
from cmab_milp.oracles.mip.cover_cuts import cover_cuts
from cmab_milp.oracles.mip.side_starts import (
    as_side_rows,
    flip_bounds,
    side_plan,
    solve_core,
    supported_base,
)
from tests.instances import admitted


def _side_start(*args):
    """The start alone (no fixing), as the MIP asks for it."""
    return side_plan(*args, fix=False).start


BASES = {
    "cardinality": lambda: cm.Cardinality(9, 4),
    "cardinality-exact": lambda: cm.Cardinality(8, 3, exact=True),
    "partition": lambda: cm.PartitionMatroid([[0, 3, 5], [1, 2, 8], [4, 6, 7]], [2, 1, 2]),
    "forests": lambda: cm.GraphicMatroid(nx.complete_graph(5)),
    "trees": lambda: cm.SpanningTrees(nx.wheel_graph(5)),
    "matchings": lambda: cm.Matchings(nx.complete_bipartite_graph(3, 3)),
    "paths-dag": lambda: cm.STPaths(nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 3), (1, 3), (0, 3)]), 0, 3),
}


def random_rows(rng: np.random.Generator, d: int, k: int, mixed: bool) -> tuple[np.ndarray, np.ndarray]:
    """``k`` rows ``G a <= h``: knapsack rows (some with negative entries when ``mixed``)."""
    G = rng.uniform(0.2, 2.0, (k, d))
    if mixed:
        G[0] -= 1.0
    h = G.clip(0).sum(axis=1) * rng.uniform(0.2, 0.5, k)
    return G, h


def random_bounds(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray]:
    lower, upper = np.zeros(d), np.ones(d)
    arms = rng.permutation(d)
    if rng.random() < 0.5:
        lower[arms[0]] = 1.0
    upper[arms[1]] = 0.0
    return lower, upper


def brute(actions: np.ndarray, w, G, h, lower, upper) -> np.ndarray:
    ok = (actions @ G.T <= h + 1e-9).all(axis=1) & (actions >= lower - 0.5).all(axis=1)
    ok &= (actions <= upper + 0.5).all(axis=1)
    return actions[ok]


@pytest.mark.parametrize("name", sorted(BASES))
@pytest.mark.parametrize("rows", [1, 3])
def test_starts_are_feasible_and_exact_when_the_base_optimum_fits(name, rows):
    base = BASES[name]()
    actions = base.enumerate()
    rng = np.random.default_rng(len(name) + rows)
    found = solvable = 0
    for trial in range(25):
        w = rng.normal(size=base.d)
        G, h = random_rows(rng, base.d, rows, mixed=trial % 3 == 0)
        lower, upper = random_bounds(rng, base.d) if trial % 2 else (np.zeros(base.d), np.ones(base.d))
        start = _side_start(base, w, G, h, lower, upper)
        feasible = brute(actions, w, G, h, lower, upper)
        solvable += len(feasible) > 0
        if start is None:
            continue
        found += 1
        assert base.contains(start)
        assert (G @ start <= h + 1e-9).all() and (start >= lower - 0.5).all() and (start <= upper + 0.5).all()
        assert len(feasible) and w @ start <= (feasible @ w).max() + 1e-9
        base_best = LinearQuery(
            w, make_restrictions(base.d, tuple(np.flatnonzero(lower)), tuple(np.flatnonzero(upper < 1)), ())
        )
        top = _SOLVERS[type(base)](base, base_best)
        if top is not None and (G @ top <= h + 1e-9).all():  # the base's optimum fits: the start is optimal
            assert w @ start == pytest.approx((feasible @ w).max(), abs=1e-9)
    assert found >= 0.5 * solvable  # the heuristic finds starts on most draws that have an action


@pytest.mark.parametrize("base", [cm.Cardinality(9, 4), cm.Cardinality(8, 3, exact=True), BASES["partition"]()])
def test_flip_bounds_match_brute_force(base):
    actions = base.enumerate()
    rng = np.random.default_rng(7)
    for trial in range(30):
        reduced = rng.normal(size=base.d)
        lower, upper = random_bounds(rng, base.d) if trial % 2 else (np.zeros(base.d), np.ones(base.d))
        forced, banned = lower > 0.5, upper < 0.5
        res = make_restrictions(base.d, tuple(np.flatnonzero(forced)), tuple(np.flatnonzero(banned)), ())
        relaxed = _SOLVERS[type(base)](base, LinearQuery(reduced, res))
        if relaxed is None:
            continue
        allowed = actions[admitted(actions, np.flatnonzero(forced), np.flatnonzero(banned))]
        change = flip_bounds(base, reduced, relaxed, forced, banned)
        top = reduced @ relaxed
        assert top == pytest.approx((allowed @ reduced).max(), abs=1e-12)
        for j in np.flatnonzero(~forced & ~banned):
            others = allowed[allowed[:, j] != relaxed[j]]
            truth = (others @ reduced).max() - top if len(others) else -np.inf
            assert change[j] == pytest.approx(truth, abs=1e-9), (trial, j)
        assert np.isinf(change[forced | banned]).all()


@pytest.mark.parametrize("base", [cm.Cardinality(10, 4), BASES["partition"](), cm.Cardinality(8, 3, exact=True)])
@pytest.mark.parametrize("rows", [1, 2])
def test_fixing_loses_no_action_near_the_start(base, rows):
    actions = base.enumerate()
    rng = np.random.default_rng(11 + rows)
    fixed_any = 0
    for trial in range(30):
        w = rng.normal(size=base.d)
        G, h = random_rows(rng, base.d, rows, mixed=False)
        lower, upper = random_bounds(rng, base.d) if trial % 2 else (np.zeros(base.d), np.ones(base.d))
        plan = side_plan(base, w, G, h, lower, upper)
        feasible = brute(actions, w, G, h, lower, upper)
        if not len(feasible):
            assert plan.start is None
            continue
        assert plan.bound >= (feasible @ w).max() - 1e-9  # a valid Lagrangian bound
        if plan.start is None or plan.fixed is None:
            continue
        fixed_any += 1
        value = w @ plan.start
        differ = (feasible[:, plan.fixed] != plan.start[plan.fixed]).any(axis=1)
        assert plan.region_bound < value
        if differ.any():  # every action the fixing excludes is below the region bound, hence below the start
            assert (feasible[differ] @ w).max() <= plan.region_bound + 1e-9
    assert fixed_any >= 10


@pytest.mark.parametrize("base", [cm.Cardinality(10, 4), BASES["partition"](), cm.Cardinality(8, 3, exact=True)])
def test_solve_core_is_the_best_action_agreeing_on_the_fixed_arms(base):
    actions = base.enumerate()
    rng = np.random.default_rng(17)
    for trial in range(30):
        w = rng.normal(size=base.d)
        G, h = random_rows(rng, base.d, 1 + trial % 2, mixed=trial % 5 == 0)
        fixed = rng.random(base.d) < 0.4
        values = actions[rng.integers(len(actions))] & fixed
        forced = np.zeros(base.d, bool)
        forced[rng.integers(base.d)] = trial % 3 == 0
        fixed |= forced
        agree = actions[(actions[:, fixed] == (values | forced)[fixed]).all(axis=1)]
        agree = agree[(agree @ G.T <= h + 1e-9).all(axis=1)]
        got = solve_core(base, w, G, h, values, fixed, forced)
        if not len(agree):
            assert got is None
            continue
        assert got is not None and base.contains(got) and (G @ got <= h + 1e-9).all()
        assert (got[fixed] == (values | forced)[fixed]).all()
        assert w @ got == pytest.approx((agree @ w).max(), abs=1e-12)
    assert (
        solve_core(cm.Cardinality(40, 3), np.ones(40), np.ones((1, 40)), np.ones(1), *[np.zeros(40, bool)] * 3) is None
    )


def test_side_start_refuses_bad_input():
    with pytest.raises(ValueError, match="combinatorial oracle"):
        _side_start(cm.STPaths(nx.cycle_graph(4), 0, 2), np.ones(4), np.ones((1, 4)), np.ones(1))
    with pytest.raises(ValueError, match="weights must be 3"):
        _side_start(cm.Cardinality(3, 1), np.ones(4), np.ones((1, 3)), np.ones(1))
    with pytest.raises(ValueError, match="G must be"):
        _side_start(cm.Cardinality(3, 1), np.ones(3), np.ones((2, 3)), np.ones(1))
    assert not supported_base(cm.ExplicitActions(np.eye(3)))
    assert as_side_rows([cm.spaces.formulation.Row((0, 5), (1.0, 1.0), -np.inf, 1.0)], 3) is None


@pytest.mark.parametrize("seed", range(4))
def test_cover_cuts_hold_for_every_action_and_cut_the_point(seed):
    rng = np.random.default_rng(seed)
    d = 9
    base = cm.Cardinality(d, 6)
    G = rng.uniform(0.5, 3.0, (2, d))
    h = np.array([7.0, 6.0])
    lower, upper = random_bounds(rng, d) if seed % 2 else (np.zeros(d), np.ones(d))
    feasible = brute(base.enumerate(), np.zeros(d), G, h, lower, upper)
    seen = 0
    for _ in range(40):
        x = np.clip(rng.uniform(-0.3, 1.3, d), 0, 1) * upper
        x = np.maximum(x, lower)
        for cut in cover_cuts(x, G, h, lower, upper):
            seen += 1
            cols = list(cut.cols)
            assert x[cols].sum() > cut.ub + 1e-4  # it cuts the point
            assert (feasible[:, cols].sum(axis=1) <= cut.ub).all()  # and no action
    assert seen > 0


def test_cover_cuts_refuse_bad_input():
    with pytest.raises(ValueError, match="G has 2 rows but h 1"):
        cover_cuts(np.ones(3), np.ones((2, 3)), np.ones(1))
    with pytest.raises(ValueError, match="min_violation"):
        cover_cuts(np.ones(3), np.ones((1, 3)), np.ones(1), min_violation=0.0)
    assert cover_cuts(np.ones(3), -np.ones((1, 3)), np.ones(1)) == []  # not a knapsack row: skipped


SPACES = {
    "cardinality+knapsack": lambda: cm.Cardinality(10, 4).with_budget(np.arange(1.0, 11.0) / 3, 4.0),
    "cardinality+2 rows": lambda: (
        cm.Cardinality(10, 5)
        .with_budget(np.linspace(0.5, 1.5, 10), 3.2)
        .with_constraint(np.linspace(1.5, 0.5, 10), "<=", 3.0)
    ),
    "exact+ge+eq": lambda: (
        cm.Cardinality(9, 4, exact=True)
        .with_constraint(np.arange(9.0) % 3, ">=", 3)
        .with_constraint(np.arange(9) % 2, "==", 2)
    ),
    "partition+knapsack": lambda: BASES["partition"]().with_budget([1, 2, 1, 3, 1, 2, 2, 1, 1], 4),
    "partition+group+conflicts": lambda: BASES["partition"]().with_at_least(1, [0, 1, 2]).with_conflicts([(0, 4)]),
    "trees+knapsack": lambda: cm.SpanningTrees(nx.wheel_graph(6)).with_budget(np.linspace(0.5, 2.0, 10), 7.0),
    "matchings+knapsack": lambda: cm.Matchings(nx.complete_bipartite_graph(3, 4)).with_budget(np.ones(12), 2),
    "intersection": lambda: cm.Intersection(
        cm.Cardinality(8, 3).with_budget(np.arange(8.0), 9.0), cm.PartitionMatroid([[0, 1, 2, 3], [4, 5, 6, 7]], [2, 2])
    ),
}


def queries(rng: np.random.Generator, d: int, n: int) -> list[dict]:
    out = []
    for k in range(n):
        w = rng.integers(-3, 4, d).astype(float) if k % 3 == 0 else rng.normal(size=d)  # integer weights tie
        q = {"weights": w}
        if k % 2:
            arms = rng.permutation(d)
            q.update(include=[int(arms[0])], exclude=[int(arms[1])], forbid_pairs=[(int(arms[2]), int(arms[3]))])
        out.append(q)
    return out


#: The small spaces here are below the ``side_min_arms`` gate of ``HighsTuning``: let them have side plans anyway.
SMALL = {"side_min_arms": 0}


@pytest.fixture
def small_spaces_get_plans(monkeypatch):
    """Count the side plans made (the oracles of the tests that use it set :data:`SMALL`)."""
    made = []
    original = mip_starts.side_query_plan

    def counted(*args, **kwargs):
        plan = original(*args, **kwargs)
        made.append(plan)
        return plan

    monkeypatch.setattr(mip_starts, "side_query_plan", counted)
    return made


@pytest.mark.parametrize("cores", [True, False])
@pytest.mark.parametrize("name", sorted(SPACES))
def test_highs_answers_restricted_queries_as_enumeration_does(name, cores, small_spaces_get_plans, monkeypatch):
    space = SPACES[name]()
    # the enumerated core, or HiGHS on the fixed model
    highs = cm.make_oracle(space, "highs", verify=True, tuning={**SMALL, "solve_cores": cores})
    truth = cm.make_oracle(space, "enumerate")
    for q in queries(np.random.default_rng(3), space.d, 16):
        got, want = highs.argmax(**q), truth.argmax(**q)
        assert (got is None) == (want is None), q
        if got is not None:
            assert q["weights"] @ got == pytest.approx(q["weights"] @ want, abs=1e-9)
    assert any(plan is not None and plan.start is not None for plan in small_spaces_get_plans)


@pytest.mark.parametrize("name", ["cardinality+knapsack", "cardinality+2 rows", "partition+knapsack"])
def test_answers_do_not_depend_on_earlier_queries(name, small_spaces_get_plans):
    """The tie rule: one oracle asked a sequence, and a fresh oracle per query, give the same actions."""
    space = SPACES[name]()
    qs = queries(np.random.default_rng(5), space.d, 12)
    long_lived = cm.make_oracle(space, "highs", tuning=SMALL)
    answers = [long_lived.argmax(**q) for q in qs]
    for q, answer in zip(reversed(qs), reversed(answers), strict=True):
        fresh = cm.make_oracle(space, "highs", tuning=SMALL).argmax(**q)
        assert (fresh is None and answer is None) or (fresh == answer).all()


def test_the_side_start_is_used_and_its_fixing_is_undone(monkeypatch):
    """The start and the fixing run on the bench's family; after the query the model's bounds are free again."""
    rng = np.random.default_rng(0)
    space = cm.Cardinality(60, 8).with_budget(rng.uniform(0.5, 1.5, 60), 4.0)
    formulation = space.formulation()
    model = CompiledModel(formulation)
    w = rng.normal(size=60)
    model.set_costs(w)
    model.set_arm_bounds((), ())
    plan = mip_starts.side_query_plan(model, formulation)
    assert plan is not None and plan.fixed is not None and plan.fixed.sum() > 30
    model.fix_arms(plan.fixed, plan.start.astype(float), plan.region_bound)
    _, lower, upper = model.arm_columns()
    assert (lower[plan.fixed] == upper[plan.fixed]).all()
    result = model.solve()
    assert result.bound >= plan.region_bound
    model.undo()
    _, lower, upper = model.arm_columns()
    assert (lower == 0).all() and (upper == 1).all() and model.region_bound == -np.inf
    answer = cm.make_oracle(space, "highs").argmax(w)
    assert w @ answer == pytest.approx(result.objective, abs=1e-9)
    alone = cm.make_oracle(space, "highs", tuning={"side_starts": False})  # the MILP alone agrees
    assert w @ alone.argmax(w) == pytest.approx(w @ answer, abs=1e-9)


def test_a_fixing_that_empties_the_model_is_an_error_not_an_infeasible_answer():
    model = CompiledModel(cm.Cardinality(3, 1, exact=True).formulation())
    model.set_costs(np.ones(3))
    model.fix_arms(np.ones(3, bool), np.zeros(3), 0.0)  # (a wrong fixing: no arm may be chosen)
    with pytest.raises(cm.oracles.core.base.OracleError, match="fix_arms"):
        model.solve()


def test_side_plans_are_a_rule_of_the_space():
    """Small spaces, conflicting pairs alone, and intersections get no plan; a large budgeted space does."""
    rng = np.random.default_rng(2)
    small = cm.Cardinality(20, 3).with_budget(np.ones(20), 2).formulation()
    assert not mip_starts.side_rule_applies(small)
    assert mip_starts.side_rule_applies(small, min_arms=20) and not mip_starts.side_rule_applies(small, min_arms=21)
    pairs = [(k, k + 1) for k in range(0, 98, 2)]
    assert not mip_starts.side_rule_applies(cm.Cardinality(100, 5).with_conflicts(pairs).formulation())
    budget = cm.Cardinality(100, 5).with_budget(rng.uniform(0.5, 1.5, 100), 3)
    assert mip_starts.side_rule_applies(budget.formulation())
    assert mip_starts.side_rule_applies(budget.with_conflicts(pairs).formulation())
    halves = cm.PartitionMatroid([list(range(50)), list(range(50, 100))], [3, 3])
    assert mip_starts.side_rule_applies(cm.Intersection(budget, halves).formulation())  # its rows come after
    assert not mip_starts.side_rule_applies(cm.Intersection(halves, budget).formulation())  # its rows come first
    paths = cm.STPaths(nx.cycle_graph(60), 0, 30).with_budget(np.ones(60), 40)  # no oracle for the base
    assert not mip_starts.side_rule_applies(paths.formulation())


@pytest.mark.parametrize("kind", ["cardinality", "partition"])
def test_large_side_spaces_agree_with_the_plain_milp(kind, monkeypatch):
    """d = 120: plans, fixing and cores (the default) against the HiGHS MILP alone, restricted queries too."""
    rng = np.random.default_rng(8)
    base = (
        cm.Cardinality(120, 12)
        if kind == "cardinality"
        else cm.PartitionMatroid([list(range(k * 12, (k + 1) * 12)) for k in range(10)], [2] * 10)
    )
    space = base.with_budget(rng.uniform(0.5, 1.5, 120), 8.0)
    planned = cm.make_oracle(space, "highs", verify=True)
    plain = cm.make_oracle(space, "highs", tuning={"side_starts": False})
    used = []
    original = mip_starts.side_query_plan
    monkeypatch.setattr(mip_starts, "side_query_plan", lambda *a, **k: used.append(original(*a, **k)) or used[-1])
    for q in queries(rng, 120, 8):
        got, want = planned.argmax(**q), plain.argmax(**q)
        assert (got is None) == (want is None)
        if got is not None:
            assert q["weights"] @ got == pytest.approx(q["weights"] @ want, abs=1e-9)
    assert sum(plan is not None and plan.optimum is not None for plan in used) >= 3  # cores answered some
