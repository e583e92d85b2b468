"""The norm index's newer code paths against brute force: Glover's upper lifting, the ascent incumbent, hints.

Truth is every action of the space valued in numpy (``enumerate``'s list);
answers are compared by value within ``1e-9 * (1 + |optimum|)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from instances import SPACES, admitted, oracle_and_actions

import cmab_milp as cm
from cmab_milp.oracles.core.queries import LinearQuery
from cmab_milp.oracles.norm.gradient import GradientCuts, positive_definite, well_scaled
from cmab_milp.oracles.norm.lifting import Lifted
from cmab_milp.oracles.norm.outer.minus import square_root_rows
from cmab_milp.oracles.norm.solver import NormSolver, last_stats
from cmab_milp.oracles.norm.starts.local_search import ascend

FAMILIES = ["cardinality", "spanning-trees", "paths-cyclic-undirected", "matchings-general", "with-constraint"]


def random_query(rng: np.random.Generator, d: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    a = rng.normal(size=(d, d))
    if kind == "psd":
        M = a @ a.T / d + 0.1 * np.eye(d)
    else:  # indefinite, entries of both signs
        M = (a + a.T) / 2
    return rng.uniform(-0.5, 1.0, d), M


def truth(actions: np.ndarray, mu, M, f, sign, include=(), exclude=(), forbid_pairs=()) -> float:
    x = actions.astype(float)
    values = x @ mu + sign * f * np.sqrt(np.maximum(np.einsum("ni,ij,nj->n", x, M, x), 0.0))
    ok = admitted(actions, include, exclude, forbid_pairs)
    return float(values[ok].max()) if ok.any() else -np.inf


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", ["psd", "indefinite"])
def test_glover_upper_reaches_and_never_exceeds_the_quadratic_form(family, kind):
    """With the arms fixed to an action, the largest ``L`` of the sign +1 lifting is ``a @ M @ a``."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng(len(family) + (kind == "psd"))
    mu, M = random_query(rng, oracle.d, kind)
    solver = NormSolver(oracle, oracle.norm_query(mu, M, 1.0))
    model = oracle.norm_model()
    n_cols, n_rows = model.num_cols, model.num_rows
    try:
        model.set_costs(np.zeros(oracle.d))
        lift = Lifted.glover_upper(model, solver, l_bounds=(-1e6, 1e6))
        model.set_col_cost(lift.L, 1.0)
        for action in actions[rng.permutation(len(actions))[:12]]:
            on = tuple(np.flatnonzero(action).tolist())
            model.set_arm_bounds(on, tuple(np.flatnonzero(~action).tolist()))
            result = model.solve()
            quad = float(action @ solver.query.M @ action)
            assert result.status == "optimal"
            assert result.x[lift.L] == pytest.approx(quad, abs=1e-7 * (1 + abs(quad)))
    finally:
        model.set_arm_bounds((), ())
        model.set_costs(np.zeros(oracle.d))
        model.delete_rows(n_rows, model.num_rows)
        model.delete_cols(n_cols, model.num_cols)
        model.clear_solver()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("sign", [1, -1])
def test_answers_with_restrictions_and_hints_match_brute_force(family, sign):
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng(7 + len(family) + sign)
    for k in range(4):
        mu, M = random_query(rng, oracle.d, "psd" if k % 2 == 0 else "indefinite")
        f = [0.1, 0.5, 2.0, 5.0][k]
        arms = rng.permutation(oracle.d)
        res = {} if k == 0 else {"exclude": [int(arms[0])], "forbid_pairs": [(int(arms[1]), int(arms[2]))]}
        if k == 3:
            res["include"] = [int(np.flatnonzero(actions[rng.integers(len(actions))])[0])]
        # hints: a feasible action, one that may break the restrictions, and a non-action
        hints = [actions[rng.integers(len(actions))], actions[rng.integers(len(actions))], np.ones(oracle.d, bool)]
        best = truth(actions, mu, M, f, sign, **res)
        for given in ((), hints):
            answer = oracle.argmax_norm(mu, M, f, sign, **res, hints=given)
            if best == -np.inf:
                assert answer is None
                continue
            value = oracle.norm_query(mu, M, f, sign, **res).value(answer)
            assert value >= best - 1e-9 * (1 + abs(best)), (family, sign, k, given != ())
            assert oracle.space.contains(answer)


def test_the_optimal_hint_is_kept_and_answers_repeat():
    oracle, actions = oracle_and_actions("cardinality")
    rng = np.random.default_rng(3)
    mu, M = random_query(rng, oracle.d, "psd")
    for sign in (1, -1):
        x = actions.astype(float)
        values = x @ mu + sign * np.sqrt(np.einsum("ni,ij,nj->n", x, M, x))
        optimum = actions[int(np.argmax(values))]
        first = oracle.argmax_norm(mu, M, 1.0, sign, hints=[optimum])
        assert first.tolist() == optimum.tolist() or np.isclose(
            oracle.norm_query(mu, M, 1.0, sign).value(first), values.max(), rtol=0, atol=1e-9 * (1 + values.max())
        )
        oracle.argmax_norm(rng.normal(size=oracle.d), M, 2.0, sign)  # history in between
        again = oracle.argmax_norm(mu, M, 1.0, sign, hints=[optimum])
        assert again.tolist() == first.tolist()  # same query and hints, same answer


@pytest.mark.parametrize(
    ("hints", "message"),
    [
        ([[1, 0, 2, 0, 0, 0, 0, 0]], "only 0/1"),
        ([[1, 0]], "shape"),
        (np.ones(8), "not one vector"),
        (3, "sequence of actions"),
        ("10000000", "sequence of actions"),
        ([["a"] * 8], "real numbers"),
        ([[np.nan] * 8], "only 0/1"),
    ],
)
def test_bad_hints_are_refused(hints, message):
    oracle, _ = oracle_and_actions("cardinality")
    with pytest.raises(ValueError, match=message):
        oracle.argmax_norm(np.zeros(8), np.eye(8), 1.0, hints=hints)
    with pytest.raises(ValueError, match=message):
        oracle.argmax_batch([{"kind": "norm", "mu": np.zeros(8), "M": np.eye(8), "f": 1.0, "hints": hints}])


def test_hints_accepted_by_every_norm_backend_and_ignored_by_enumerate():
    space = cm.Cardinality(5, 2)
    mu, M = np.array([0.3, 0.1, 0.5, 0.0, 0.2]), np.eye(5)
    enum = cm.make_oracle(space, "enumerate")
    assert enum.norm_query(mu, M, 1.0, hints=[[1, 1, 0, 0, 0]]).hints[0].tolist() == [1, 1, 0, 0, 0]
    assert enum.argmax_norm(mu, M, 1.0, hints=[[1, 1, 0, 0, 0]]).tolist() == enum.argmax_norm(mu, M, 1.0).tolist()


@pytest.mark.parametrize("family", FAMILIES)
def test_ascent_never_loses_and_values_exactly(family):
    """Each step is a linear query; the kept value is the exact index and at least the start's."""
    oracle, actions = oracle_and_actions(family)
    rng = np.random.default_rng(11)
    for kind in ("psd", "indefinite"):
        mu, M = random_query(rng, oracle.d, kind)
        q = oracle.norm_query(mu, M, 1.5)
        calls = []

        def linear(w, q=q, calls=calls):
            calls.append(w)
            return oracle.solve_linear(LinearQuery(w, q.restrictions))

        start = oracle.argmax(mu)
        action, value, n = ascend(q, linear, None, 6)
        assert n == len(calls) <= 6
        assert value == q.value(action) >= q.value(start)
        assert value <= truth(actions, mu, M, 1.5, 1) + 1e-12
        assert oracle.space.contains(action)
    none = ascend(q, lambda w: None, None, 6)
    assert none[0] is None and none[1] == -np.inf


def test_ascent_reaches_the_optimum_of_a_rank_one_form():
    """``M = v v'`` with ``v >= 0``: from any start, one step argmax (mu + f v) is optimal."""
    space = cm.Cardinality(9, 3)
    rng = np.random.default_rng(2)
    v = rng.uniform(0, 1, 9)
    mu = rng.uniform(0, 1, 9)
    oracle = cm.make_oracle(space, "enumerate")
    q = oracle.norm_query(mu, np.outer(v, v), 2.0)
    action, value, _ = ascend(q, oracle.argmax, None, 5)
    assert space.contains(action)
    assert value == pytest.approx(truth(oracle.actions, mu, np.outer(v, v), 2.0, 1), abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sign", [1, -1])
def test_d100_cardinality_agrees_with_gurobi(sign):
    """At d = 100 no brute force: ours and Gurobi's MIQCP (independent method) agree on the value."""
    pytest.importorskip("gurobipy")
    space = cm.Cardinality(100, 10)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(100, 100))
    mu, M = rng.uniform(0, 1, 100), a @ a.T / 100 + 0.1 * np.eye(100)
    ours = cm.make_oracle(space, "highs").argmax_norm(mu, M, 0.3, sign, exclude=[3], forbid_pairs=[(1, 2)])
    theirs = cm.make_oracle(space, "gurobi").argmax_norm(mu, M, 0.3, sign, exclude=[3], forbid_pairs=[(1, 2)])
    q = cm.make_oracle(space, "highs").norm_query(mu, M, 0.3, sign)
    assert q.value(ours) >= q.value(theirs) - 1e-6 * (1 + abs(q.value(theirs)))


def test_gradient_cuts_underestimate_the_norm_and_touch_it():
    """Cauchy-Schwarz: ``f (M x0) @ a / n(x0) <= f n(a)`` for every action, equal at ``x0``; PD only."""
    _, actions = oracle_and_actions("matchings-general")
    rng = np.random.default_rng(4)
    d = actions.shape[1]
    _, M = random_query(rng, d, "psd")
    assert positive_definite(M, np.arange(d)) and not positive_definite(M - 0.2 * np.eye(d), np.arange(d))
    cuts = GradientCuts(M, np.arange(d), 0.7)
    norms = 0.7 * np.sqrt(np.einsum("ni,ij,nj->n", actions.astype(float), M, actions.astype(float)))
    for x0 in [*actions[:20].astype(float), rng.uniform(0, 1, d)]:
        below = actions.astype(float) @ cuts.coefficients(x0)
        assert (below <= norms + 1e-12).all()
        if set(x0.tolist()) <= {0.0, 1.0} and x0.any():
            assert x0 @ cuts.coefficients(x0) == pytest.approx(0.7 * np.sqrt(x0 @ M @ x0), rel=1e-12)
    assert not cuts.coefficients(np.zeros(d)).any()


def test_sign_minus_one_uses_gradient_cuts_only_where_valid(secant_method):
    oracle, actions = oracle_and_actions("cardinality", **secant_method)
    rng = np.random.default_rng(5)
    for kind, scale, used in (("psd", 1.0, True), ("indefinite", 1.0, False), ("psd", 1e8, False)):
        mu, M = random_query(rng, oracle.d, kind)
        answer = oracle.argmax_norm(mu, M * scale, 1.0, -1)
        stats = oracle.last_norm_stats
        assert stats.method == "secants-quadratic-form"
        assert (stats.extra.get("gradient_cuts", 0) > 0) == used, (kind, scale)
        best = truth(actions, mu, M * scale, 1.0, -1)
        assert oracle.norm_query(mu, M * scale, 1.0, -1).value(answer) >= best - 1e-9 * (1 + abs(best))
    q = oracle.norm_query(mu, M, 1.0, -1)
    assert well_scaled(q) and not well_scaled(oracle.norm_query(mu, M * 1e8, 1.0, -1))


@pytest.mark.parametrize("branch", [True, False])
@pytest.mark.parametrize("family", ["cardinality", "matchings-general", "spanning-trees"])
def test_sign_minus_one_without_local_search_matches_brute_force(family, branch):
    """The search (the branch on the linear oracle, or the secant MILP with its convex and gradient cuts),
    not the first incumbent, must find the optimum."""

    oracle, actions = oracle_and_actions(family, minus_branch=branch, minus_local_checks=0)
    rng = np.random.default_rng(8)
    beaten = 0
    for f in (0.5, 1.0, 2.0, 4.0, 8.0):
        mu, M = random_query(rng, oracle.d, "psd")
        answer = oracle.argmax_norm(mu, M, f, -1)
        best = truth(actions, mu, M, f, -1)
        q = oracle.norm_query(mu, M, f, -1)
        assert q.value(answer) >= best - 1e-9 * (1 + abs(best)), f
        beaten += q.value(oracle.argmax(mu)) < best - 1e-6
    assert beaten >= 2  # the linear argmax was not the answer: the MILP had work to do


def test_the_time_limit_holds_for_the_whole_norm_query(monkeypatch):
    """Each MILP of a query gets only what is left of the oracle's limit; none is left: LimitReached."""
    from cmab_milp.oracles.backends.highs_model import LimitReached
    from cmab_milp.oracles.norm import solver

    space = SPACES["spanning-trees"]()
    oracle = cm.make_oracle(space, "highs", time_limit=5.0)
    mu, M = random_query(np.random.default_rng(6), space.d, "psd")
    assert oracle.argmax_norm(mu, M, 1.0, 1) is not None  # within the limit
    ticks = iter(np.arange(0.0, 1e6, 6.0))  # every reading of the clock: 6 s later
    monkeypatch.setattr(solver, "_clock", lambda: float(next(ticks)))
    with pytest.raises(LimitReached, match="time limit"):
        oracle.argmax_norm(mu, M, 1.0, 1)
    with pytest.raises(LimitReached, match="time limit"):
        oracle.argmax_norm(mu, M, 1.0, -1)
    assert oracle.argmax_norm(mu, M, 1.0, 1, include=[0], exclude=[0]) is None  # no solve needed


@pytest.fixture
def secant_method():
    """Sign -1 by the MILPs (secants or outer approximation), not :mod:`.branch.minus`; sign +1
    on cyclic s-t paths by the outer approximation, not :mod:`.paths.plus`."""
    return {"minus_branch": False, "plus_paths": False}


@pytest.fixture
def outer_method(secant_method):
    return {**secant_method, "minus_outer": True}


@pytest.mark.parametrize("family", FAMILIES)
def test_outer_approximation_matches_brute_force(family, outer_method):
    """Sign -1 by the disaggregated tangents (off by default): exact against brute force, PSD and singular M."""
    oracle, actions = oracle_and_actions(family, **outer_method)
    rng = np.random.default_rng(40 + len(family))
    d = oracle.d
    for k in range(4):
        mu, M = random_query(rng, d, "psd")
        if k == 1:  # singular: rank 2
            b = rng.normal(size=(d, 2))
            M = b @ b.T
        res = {}
        if k == 3:
            arms = rng.permutation(d)
            res = {"exclude": [int(arms[0])], "forbid_pairs": [(int(arms[1]), int(arms[2]))]}
        f = [0.3, 1.0, 3.0, 0.5][k]
        answer = oracle.argmax_norm(mu, M, f, -1, **res)
        assert last_stats(oracle).method == "outer-approximation"
        best = truth(actions, mu, M, f, -1, **res)
        value = float(mu @ answer - f * np.sqrt(max(answer @ M @ answer, 0.0)))
        assert value >= best - 1e-9 * (1 + abs(best))


def test_outer_approximation_leaves_indefinite_m_to_the_secants(outer_method):
    oracle, actions = oracle_and_actions("cardinality", **outer_method)
    rng = np.random.default_rng(3)
    mu, M = random_query(rng, oracle.d, "indefinite")
    answer = oracle.argmax_norm(mu, M, 1.0, -1)
    assert last_stats(oracle).method == "secants-quadratic-form"
    best = truth(actions, mu, M, 1.0, -1)
    assert float(mu @ answer - np.sqrt(max(answer @ M @ answer, 0.0))) >= best - 1e-9 * (1 + abs(best))


def test_square_root_rows_reproduce_the_quadratic_form():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(6, 3))
    M = a @ a.T  # rank 3: zero eigenvalues dropped
    arms = np.array([0, 2, 3, 5])
    R = square_root_rows(M, arms)
    assert R.shape[0] == 3
    for _ in range(5):
        x = rng.random(4)
        assert x @ R.T @ R @ x == pytest.approx(x @ M[np.ix_(arms, arms)] @ x, rel=1e-10)
    assert square_root_rows(M - 0.5 * np.eye(6), arms) is None  # indefinite


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("family", ["spanning-trees", "paths-cyclic-undirected"])
def test_space_root_cuts_enter_the_norm_model_and_keep_answers_exact(family, sign, monkeypatch, secant_method):
    """The space's fractional separators tighten the norm model (trees 8x8, f=0.3: -1 2.6 -> 0.64 s, +1 24 -> 1.1 s)."""
    space = SPACES[family]()
    if isinstance(space, cm.STPaths):  # small paths get no fractional separators by default: the gate at 0
        space = cm.STPaths(space.graph, space.source, space.target, cuts_min_edges=0)
    actions = cm.make_oracle(space, "enumerate").actions
    oracles = {
        on: cm.make_oracle(space, "highs", verify=True, tuning={**secant_method, "space_cuts": on})
        for on in (False, True)
        for on in (False, True)
    }
    rng = np.random.default_rng(17)
    cut_counts = []
    for k in range(4):
        mu, M = random_query(rng, space.d, "psd")
        f = [0.3, 1.0, 3.0, 0.1][k]
        best = truth(actions, mu, M, f, sign)
        for on in (False, True):
            oracle = oracles[on]
            answer = oracle.argmax_norm(mu, M, f, sign)
            value = float(mu @ answer + sign * f * np.sqrt(answer @ M @ answer))
            assert value >= best - 1e-9 * (1 + abs(best))
            cuts = last_stats(oracle).extra.get("space_cuts", 0)
            if on:
                cut_counts.append(cuts)
            else:
                assert cuts == 0
    if (family, sign) != ("spanning-trees", 1):  # the 3x3 grid's sign +1 relaxation violates no cycle row
        assert max(cut_counts) > 0
