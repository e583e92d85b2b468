"""The certified approximate mode: ``make_oracle(space, backend, gap=...)``.

Judged against brute force: every answer's proven ratio is at most its true
ratio to the optimum, its value at least ``ratio * optimum``, the ledger counts
the approximate answers and keeps the worst ratio, and without ``gap`` nothing
changes.
"""

from __future__ import annotations

import importlib.util
import pickle

import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.base import Ledger
from cmab_milp.oracles.core.registry import capabilities

BACKENDS = {"highs": "highspy", "scip": "pyscipopt", "gurobi": "gurobipy", "pulp:HiGHS": "pulp"}


def _needs(backend: str) -> None:
    if importlib.util.find_spec(BACKENDS[backend]) is None:
        pytest.skip(f"{BACKENDS[backend]} is not installed")


def knapsack(seed: int = 0, d: int = 16):
    """A cardinality space with a knapsack row: at a 50% gap the solvers stop early here."""
    rng = np.random.default_rng(seed)
    return cm.Cardinality(d, 8).with_constraint(rng.integers(5, 40, d), "<=", 100), rng


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_approximate_answers_keep_their_proven_ratio_against_brute_force(backend: str) -> None:
    _needs(backend)
    space, rng = knapsack()
    actions = space.enumerate().astype(float)
    oracle = cm.make_oracle(space, backend, gap=0.5)
    before = oracle.ledger.worst_ratio
    true_ratios = []
    for _ in range(8):
        w = rng.normal(size=space.d) + 1.0
        start = oracle.ledger.approximate, oracle.ledger.worst_ratio
        answer = oracle.argmax(w)
        optimum = float((actions @ w).max())
        value = float(w @ answer)
        assert space.contains(answer)
        true_ratios.append(value / optimum)
        if oracle.ledger.approximate > start[0]:  # this answer was approximate: its ratio is proven
            assert oracle.ledger.worst_ratio <= start[1]
        # the worst proven ratio never exceeds any true ratio seen
        assert oracle.proven_ratio <= value / optimum + 1e-9
        assert value >= oracle.proven_ratio * optimum - 1e-9 * (1 + abs(optimum))
    assert before == 1.0
    assert oracle.proven_ratio == oracle.ledger.worst_ratio
    if backend != "gurobi":  # Gurobi closes these gaps at its root: every answer exact
        assert oracle.ledger.approximate > 0, "no early stop: the instance no longer exercises the mode"
        assert oracle.proven_ratio < 1.0
    assert oracle.ledger.approximate <= oracle.ledger.queries


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_without_gap_answers_are_exact_and_the_ratio_stays_one(backend: str) -> None:
    _needs(backend)
    space, rng = knapsack(1)
    actions = space.enumerate().astype(float)
    oracle = cm.make_oracle(space, backend)
    for _ in range(4):
        w = rng.normal(size=space.d) + 1.0
        optimum = float((actions @ w).max())
        assert float(w @ oracle.argmax(w)) >= optimum - 1e-9 * (1 + abs(optimum))
    assert oracle.proven_ratio == 1.0 and oracle.ledger.approximate == 0


def test_a_zero_gap_answers_exactly() -> None:
    space, rng = knapsack(2)
    actions = space.enumerate().astype(float)
    oracle = cm.make_oracle(space, "highs", gap=0.0)
    for _ in range(4):
        w = rng.normal(size=space.d) + 1.0
        optimum = float((actions @ w).max())
        assert float(w @ oracle.argmax(w)) >= optimum - 1e-9 * (1 + abs(optimum))
    assert oracle.proven_ratio == 1.0


@pytest.mark.parametrize("sign", [1, -1])
def test_norm_queries_stay_exact_with_a_gap(sign: int) -> None:
    space, rng = knapsack(3, d=10)
    actions = space.enumerate()
    oracle = cm.make_oracle(space, "highs", gap=0.5)
    mu = rng.uniform(0, 1, space.d)
    a = rng.normal(size=(space.d, space.d))
    M = a @ a.T / space.d
    values = [cm.oracles.norm_objective(mu, M, 1.0, sign, x) for x in actions]
    best = max(values)
    got = cm.oracles.norm_objective(mu, M, 1.0, sign, oracle.argmax_norm(mu, M, 1.0, sign))
    assert got >= best - 1e-9 * (1 + abs(best))


@pytest.mark.parametrize(
    ("backend", "gap", "message"),
    [
        ("highs", 1.0, r"gap must be a number in \[0, 1\)"),
        ("highs", -0.1, r"gap must be a number in \[0, 1\)"),
        ("highs", "0.1", r"gap must be a number in \[0, 1\)"),
        ("highs", True, r"gap must be a number in \[0, 1\)"),
        ("highs", float("nan"), r"gap must be a number in \[0, 1\)"),
        ("enumerate", 0.1, "backend 'enumerate' has no certified approximate mode"),
        ("combinatorial", 0.1, "backend 'combinatorial' has no certified approximate mode"),
        ("auto", 0.1, "backend 'auto' has no certified approximate mode"),
        ("pulp", 0.1, "needs a solver that reports a dual bound"),
        ("pulp:PULP_CBC_CMD", 0.1, "needs a solver that reports a dual bound"),
    ],
)
def test_gap_is_validated_before_any_work(backend: str, gap, message: str) -> None:
    space = cm.Cardinality(4, 2)
    if backend.split(":")[0] not in cm.available_backends():
        pytest.skip(f"{backend} is not installed")
    with pytest.raises(ValueError, match=message):
        cm.make_oracle(space, backend, gap=gap)


def test_the_oracle_classes_validate_gap_too() -> None:
    from cmab_milp.oracles.backends.highs import HighsOracle
    from cmab_milp.oracles.backends.pulp import PulpOracle

    with pytest.raises(ValueError, match="gap must be"):
        HighsOracle(cm.Cardinality(4, 2), gap=1.5)
    with pytest.raises(ValueError, match="reports a dual bound"):
        PulpOracle(cm.Cardinality(4, 2), "PULP_CBC_CMD", gap=0.1)
    assert capabilities("highs").approximate and not capabilities("ortools").approximate


def test_ledger_ratios_pickle_reset_and_load_from_older_pickles() -> None:
    ledger = Ledger()
    ledger.record(1, 0.5)
    ledger.record_ratio(0.8)
    copy = pickle.loads(pickle.dumps(ledger))
    assert (copy.approximate, copy.worst_ratio, copy.queries) == (1, 0.8, 1)
    copy.record_ratio(0.9)  # the copy has its own lock and keeps the worst
    assert copy.worst_ratio == 0.8
    old = Ledger.__new__(Ledger)
    old.__setstate__({"queries": 3, "rounds": 2, "seconds": 0.1})  # saved before the ratio fields existed
    assert (old.approximate, old.worst_ratio) == (0, 1.0)
    ledger.reset()
    assert (ledger.approximate, ledger.worst_ratio, ledger.queries) == (0, 1.0, 0)


def test_an_approximate_oracle_pickles_with_its_ratio() -> None:
    space, rng = knapsack()
    oracle = cm.make_oracle(space, "highs", gap=0.5)
    for _ in range(3):
        oracle.argmax(rng.normal(size=space.d) + 1.0)
    copy = pickle.loads(pickle.dumps(oracle))
    assert copy.proven_ratio == oracle.proven_ratio and copy.gap == 0.5


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_time_limit_with_a_gap_returns_the_incumbent_with_its_ratio(backend: str) -> None:
    """Three knapsack rows on 120 arms: at 0.05 s a solve stops with (or without) an incumbent."""
    _needs(backend)
    rng = np.random.default_rng(0)
    d = 120
    space = cm.Cardinality(d, 40)
    for _ in range(3):
        space = space.with_constraint(rng.integers(5, 60, d), "<=", 700)
    truth = cm.make_oracle(space, "highs")
    approximate = cm.make_oracle(space, backend, gap=0.0, time_limit=0.05)
    exact = cm.make_oracle(space, backend, time_limit=0.05)
    for _ in range(3):
        w = rng.normal(size=d) + 1.0
        optimum = float(w @ truth.argmax(w))
        try:
            value = float(w @ approximate.argmax(w))
        except cm.OracleError as exc:  # no incumbent at the limit: refused, never guessed
            assert "time limit" in str(exc)
        else:
            assert approximate.proven_ratio <= value / optimum + 1e-12
            assert value >= approximate.proven_ratio * optimum - 1e-9 * (1 + optimum)
        try:
            got = float(w @ exact.argmax(w))
        except cm.OracleError as exc:
            assert "time limit" in str(exc)
        else:
            assert got >= optimum - 1e-9 * (1 + optimum)
            assert exact.proven_ratio == 1.0
