"""The optional ``gurobi`` and ``ortools`` backends: their stated limits, checked against brute force.

The conformance kit runs on both through ``test_testing_kit.py`` (every available backend); here are
the cases specific to each: Gurobi's size-limited licence, CP-SAT's integer scaling and relaxed rows.
"""

from __future__ import annotations

import importlib.util
import itertools

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.experiments.report.compare import candidate_backends
from cmab_milp.oracles.core.base import OracleError, UnsupportedQuery
from cmab_milp.oracles.core.queries import norm_objective
from cmab_milp.oracles.core.registry import BACKENDS, capabilities


def _brute(space, weights, include=(), exclude=(), forbid_pairs=()):
    best, arg = -np.inf, None
    for a in space.enumerate():
        if not a[list(include)].all() or a[list(exclude)].any() or any(a[i] and a[j] for i, j in forbid_pairs):
            continue
        v = float(weights @ a)
        if v > best:
            best, arg = v, a
    return best, arg


# ------------------------------------------------------------------------------------ gurobi
@pytest.fixture
def gurobi_oracle_module():
    pytest.importorskip("gurobipy")
    from cmab_milp.oracles.backends import gurobi as gurobi_backend

    return gurobi_backend


def test_gurobi_refuses_models_beyond_the_pip_licence_at_construction(gurobi_oracle_module) -> None:
    if not gurobi_oracle_module.size_limited():
        pytest.skip("a full Gurobi licence is installed")
    with pytest.raises(ValueError, match="pip licence of gurobipy limits models to 2000 variables"):
        cm.make_oracle(cm.Cardinality(2000, 3), "gurobi")  # 2000 arms + the norm column s
    oracle = cm.make_oracle(cm.Cardinality(1999, 3), "gurobi")  # fits: 2000 variables
    w = np.random.default_rng(0).normal(size=1999)
    assert oracle.argmax(w).sum() == 3 and np.isclose(w[oracle.argmax(w)].sum(), np.sort(w)[-3:].sum())


def test_gurobi_norm_queries_beyond_200_variables_are_refused_not_guessed(gurobi_oracle_module) -> None:
    if not gurobi_oracle_module.size_limited():
        pytest.skip("a full Gurobi licence is installed")
    d = 200
    oracle = cm.make_oracle(cm.Cardinality(d, 2), "gurobi")
    with pytest.raises(OracleError, match="quadratic row to 200 variables"):
        oracle.argmax_norm(np.ones(d), np.eye(d), 1.0)
    assert oracle.argmax(np.arange(d, dtype=float))[-2:].all()  # linear queries still answered


def test_gurobi_norm_matches_brute_force_on_both_signs_with_restrictions(gurobi_oracle_module) -> None:
    rng = np.random.default_rng(3)
    space = cm.Cardinality(9, 3).with_constraint(rng.uniform(0.5, 1.5, 9), "<=", 2.6)
    oracle = cm.make_oracle(space, "gurobi")
    actions = space.enumerate()
    for sign, f in itertools.product((1, -1), (0.3, 1.0, 3.0)):
        a = rng.normal(size=(9, 9))
        M = a @ a.T / 9
        mu = rng.normal(size=9)
        got = oracle.argmax_norm(mu, M, f, sign, exclude=[0], forbid_pairs=[(1, 2)])
        ok = ~actions[:, 0] & ~(actions[:, 1] & actions[:, 2])
        vals = [norm_objective(mu, M, f, sign, x) for x in actions[ok]]
        assert space.contains(got) and not got[0] and not (got[1] and got[2])
        best = max(vals)
        assert norm_objective(mu, M, f, sign, got) >= best - 1e-6 * (1 + abs(best))


def test_gurobi_time_limit_that_stops_the_proof_raises(gurobi_oracle_module) -> None:
    # a hard norm query (Gurobi stopped at 120 s on it) with a 0.05 s limit: refused, not guessed
    rng = np.random.default_rng(0)
    d = 60
    space = cm.Cardinality(d, 10)
    oracle = cm.make_oracle(space, "gurobi", time_limit=0.05)
    a = rng.normal(size=(d, d))
    with pytest.raises(OracleError, match="Gurobi"):
        oracle.argmax_norm(rng.normal(size=d) * 0.1, a @ a.T / d + np.eye(d), 1.0, +1)


# ------------------------------------------------------------------------------------ ortools
@pytest.fixture
def ortools_module():
    pytest.importorskip("ortools")
    from cmab_milp.oracles.backends import ortools as ortools_backend

    return ortools_backend


def test_ortools_declines_norm_queries(ortools_module) -> None:
    oracle = cm.make_oracle(cm.Cardinality(4, 2), "ortools")
    assert not capabilities("ortools").norm
    with pytest.raises(UnsupportedQuery, match="linear queries only"):
        oracle.argmax_norm(np.ones(4), np.eye(4), 1.0)


def test_ortools_scaling_is_exact_to_the_stated_bound(ortools_module) -> None:
    rng = np.random.default_rng(1)
    w = rng.normal(size=50) * 10.0 ** rng.integers(-6, 4, 50)
    scale, costs, residuals = ortools_module.objective_scale(w)
    assert scale * np.abs(w).sum() <= 2.0**53 and np.log2(scale).is_integer()
    # residuals are exact: c / T + r reproduces w to the bit
    assert all(c / scale + r == x for c, r, x in zip(costs, residuals, w, strict=True))
    assert np.abs(residuals).max() <= 0.5 / scale


def test_ortools_refuses_weights_whose_rounding_could_hide_the_optimum(ortools_module) -> None:
    # two huge weights beside small ones, optimum near 0: the integer objective cannot resolve 1e-9
    space = cm.Cardinality(6, 3)
    w = np.array([1e15, -1e15, 0.3, 0.2 + 1e-12, 0.2, -0.1])
    oracle = cm.make_oracle(space, "ortools")
    with pytest.raises(OracleError, match="rounding may hide"):
        oracle.argmax(w, exclude=[0])
    # with the huge arms fixed, they leave the scaling: answered exactly
    got = oracle.argmax(w, include=[0, 1])
    assert got.tolist() == _brute(space, w, include=[0, 1])[1].tolist()


def test_ortools_fractional_rows_are_relaxed_then_checked(ortools_module) -> None:
    # 0.1 + 0.2 > 0.3 in floats, but within the row's 1e-9 tolerance: {0, 1} is an action
    rng = np.random.default_rng(2)
    coefs = np.array([0.1, 0.2, 0.3, 0.7, 0.35, 1 / 3, 2 / 3, 0.45])
    for sense, rhs in (("<=", 0.3), ("<=", 1.0), (">=", 1.0), ("==", 1.0)):
        space = cm.Cardinality(8, 3).with_constraint(coefs, sense, rhs)
        ortools_oracle = cm.make_oracle(space, "ortools", verify=True)
        for _ in range(6):
            w = rng.integers(-3, 5, 8) / 4 + 1e-8 * rng.integers(0, 2, 8)
            pairs = [(2, 3)] if rng.random() < 0.5 else []
            best, _ = _brute(space, w, forbid_pairs=pairs)
            got = ortools_oracle.argmax(w, forbid_pairs=pairs)
            if best == -np.inf:
                assert got is None
            else:
                assert space.contains(got) and w @ got >= best - 1e-9 * (1 + abs(best))


def test_ortools_lazy_cuts_on_cyclic_paths_match_brute_force(ortools_module) -> None:
    space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)), 0, 11)
    rng = np.random.default_rng(4)
    oracle = cm.make_oracle(space, "ortools")
    for _ in range(5):
        w = rng.normal(size=space.d)
        best, _ = _brute(space, w)
        got = oracle.argmax(w)
        assert space.contains(got) and w @ got >= best - 1e-9 * (1 + abs(best))


# ------------------------------------------------------------------------------------ both
def test_compare_oracles_offers_the_installed_extra_backends() -> None:
    names = candidate_backends()
    for name, module in (("gurobi", "gurobipy"), ("ortools", "ortools")):
        assert (name in names) == (importlib.util.find_spec(module) is not None)
        assert name in BACKENDS  # registered either way; usable only when installed


def test_auto_never_picks_the_comparison_backends() -> None:
    assert capabilities("gurobi").cost is None  # size-limited licence: for comparison only
    # scip (one tree) and ortools (CP-SAT's circuit on digraphs) declare costs, auto weighs them
    assert capabilities("ortools").cost is not None and capabilities("scip").cost is not None
