"""Every answer is a proven optimum, a proven ``None``, or an ``OracleError``: never a silent guess.

Reproductions: ``pulp`` (CBC) returned ``None`` for feasible queries under a
1e-3 s time limit and with weights of order 1e20; HiGHS proved a wrong optimum
with costs of order 1e17; OLS-UCB-C stopped with ``HiGHS run failed`` from a
norm query.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.backends import highs as highs_backend
from cmab_milp.oracles.core.base import tolerance

DATA = Path(__file__).parent / "data"


def _grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def _skip_without(backend: str) -> None:
    module = {"scip": "pyscipopt", "pulp": "pulp"}.get(backend.split(":")[0])
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed")
    if backend.startswith("pulp:"):
        from cmab_milp.oracles.backends.pulp import available_pulp_solvers

        if backend.split(":")[1] not in available_pulp_solvers():
            pytest.skip(f"{backend} not available")


@pytest.mark.parametrize("backend", ["pulp:PULP_CBC_CMD", "pulp:HiGHS", "highs", "scip"])
def test_a_stop_on_the_time_limit_is_never_none(backend: str) -> None:
    """8x8-grid s-t paths with a side row and forbid_pairs: every query is feasible."""
    _skip_without(backend)
    space = cm.STPaths(_grid(8), 0, 63)
    space = space.with_constraint(np.ones(space.d), "<=", 20)
    oracle = cm.make_oracle(space, backend, time_limit=1e-3)
    rng = np.random.default_rng(1)
    for _ in range(5):
        try:
            answer = oracle.argmax(rng.uniform(-1, 1, space.d), forbid_pairs=[(0, 5), (3, 7)])
        except cm.OracleError:
            continue
        assert answer is not None and space.contains(answer)


@pytest.mark.parametrize("backend", ["highs", "highs-milp", "pulp:PULP_CBC_CMD", "pulp:HiGHS", "scip", "enumerate"])
def test_extreme_weights_are_answered_exactly_or_refused(backend: str) -> None:
    """Weights of order 1e8 to 1e21 (and tiny ones) on 3x3-grid s-t paths, against brute force."""
    name, options = ("highs", {"lp_when_integral": False}) if backend == "highs-milp" else (backend, {})
    _skip_without(name)
    space = cm.STPaths(_grid(3), 0, 8)
    actions = space.enumerate()
    oracle = cm.make_oracle(space, name, **options)
    rng = np.random.default_rng(5)
    answered = 0
    for _ in range(12 if name.startswith(("pulp", "scip")) else 40):
        w = rng.uniform(-1, 1, space.d) * 10.0 ** rng.choice([-12, 8, 12, 17, 19, 20, 21])
        best = float((actions @ w).max())
        try:
            answer = oracle.argmax(w)
        except cm.OracleError:
            continue
        assert answer is not None, "None claims no action qualifies"
        assert w @ answer >= best - tolerance(best)
        answered += 1
    if name in ("highs", "enumerate"):
        assert answered > 0


@pytest.mark.parametrize("scale", [1e-310, 1e-200, 1e150, 1e300])
@pytest.mark.parametrize("lp", [True, False])
def test_highs_rescales_subnormal_and_huge_weights_without_overflow(scale: float, lp: bool) -> None:
    space = cm.Cardinality(6, 2)
    w = np.array([1.0, 3.0, -1.0, 2.0, 0.0, 2.5]) * scale
    assert cm.make_oracle(space, "highs", lp_when_integral=lp).argmax(w).astype(int).tolist() == [0, 1, 0, 0, 0, 1]


def test_highs_answers_costs_of_order_1e17_right() -> None:
    """HiGHS proved this suboptimal path optimal when handed the costs unscaled."""
    space = cm.STPaths(_grid(3), 0, 8)
    actions = space.enumerate()
    rng = np.random.default_rng(5)
    for _ in range(300):
        w = rng.uniform(-1, 1, space.d) * 10.0 ** rng.integers(8, 22)
        if np.abs(w).max() < 1e17:
            continue
        for lp in (True, False):
            answer = cm.make_oracle(space, "highs", lp_when_integral=lp).argmax(w)
            best = float((actions @ w).max())
            assert w @ answer >= best - tolerance(best)
        break


@pytest.mark.parametrize("backend", ["pulp:PULP_CBC_CMD", "pulp:HiGHS"])
def test_a_pulp_infeasible_status_on_a_feasible_query_is_refused(backend: str, monkeypatch) -> None:
    """What CBC did on a time limit or with 1e20 weights, made deterministic: the status says Infeasible."""
    _skip_without(backend)
    import pulp

    oracle = cm.make_oracle(cm.Cardinality(6, 2), backend)

    def infeasible(self, solver=None, **kwargs):
        self.status, self.sol_status = pulp.LpStatusInfeasible, pulp.LpSolutionInfeasible
        return self.status

    monkeypatch.setattr(pulp.LpProblem, "solve", infeasible)
    with pytest.raises(cm.OracleError, match="reported 'Infeasible' but the query has feasible actions"):
        oracle.argmax(np.ones(6), forbid_pairs=[(0, 1)])
    assert oracle.argmax(np.ones(6), include=[0, 1], forbid_pairs=[(0, 1)]) is None  # trivially: never solved
    assert oracle.argmax(np.ones(6), include=[0, 1, 2]) is None  # three arms of two: the check proves it


def test_pulp_infeasible_is_certified() -> None:
    """A truly infeasible query still gives None through the feasibility check."""
    _skip_without("pulp:PULP_CBC_CMD")
    oracle = cm.make_oracle(cm.Cardinality(6, 3, exact=True), "pulp:PULP_CBC_CMD")
    assert oracle.argmax(np.ones(6), exclude=[0, 1, 2, 3]) is None


# --------------------------------------------------------------------- the norm index
def _correlated(d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    return rng.uniform(0, 1, d), a @ a.T / d - 0.3 * np.eye(d)  # indefinite


@pytest.mark.parametrize("sign", [1, -1])
def test_a_failed_norm_solve_is_recovered_by_a_cold_restart(sign: int, monkeypatch) -> None:
    space = cm.Cardinality(7, 3)
    mu, M = _correlated(7, 1)
    expected = cm.make_oracle(space, "enumerate").argmax_norm(mu, M, 0.8, sign)
    oracle = cm.make_oracle(space, "highs")
    real = highs_backend.solve_norm
    calls = []

    def flaky(o, q):
        calls.append(q)
        if len(calls) == 1:
            raise cm.OracleError("HiGHS run failed (run status 'error', model status 'Unknown')")
        return real(o, q)

    monkeypatch.setattr(highs_backend, "solve_norm", flaky)
    answer = oracle.argmax_norm(mu, M, 0.8, sign)
    assert answer.tolist() == expected.tolist()
    assert oracle.norm_recoveries == {"cold restart": 1}


def test_a_norm_query_that_highs_cannot_solve_falls_back_to_enumeration(monkeypatch) -> None:
    space = cm.Cardinality(7, 3)
    mu, M = _correlated(7, 2)
    truth = cm.make_oracle(space, "enumerate")
    oracle = cm.make_oracle(space, "highs")

    def broken(o, q):
        raise cm.OracleError("HiGHS run failed")

    monkeypatch.setattr(highs_backend, "solve_norm", broken)
    for sign in (1, -1):
        q = truth.norm_query(mu, M, 0.8, sign, exclude=[2])
        answer = oracle.argmax_norm(mu, M, 0.8, sign, exclude=[2])
        assert q.value(answer) == pytest.approx(q.value(truth.argmax_norm(mu, M, 0.8, sign, exclude=[2])), abs=1e-12)
    assert oracle.norm_recoveries == {"enumeration": 2}


def test_an_unrecoverable_norm_query_names_every_attempt(monkeypatch) -> None:
    oracle = cm.make_oracle(cm.Cardinality(7, 3), "highs", tuning={"recovery_enumeration": 10})

    def broken(o, q):
        raise cm.OracleError("HiGHS run failed")

    monkeypatch.setattr(highs_backend, "solve_norm", broken)
    mu, M = _correlated(7, 3)
    with pytest.raises(cm.OracleError, match=r"cold restart.*2\^-3.*2\^3.*enumeration: more than 10 actions"):
        oracle.argmax_norm(mu, M, 0.8, 1)


def test_a_time_limit_is_not_retried(monkeypatch) -> None:
    from cmab_milp.oracles.backends.highs_model import LimitReached

    oracle = cm.make_oracle(cm.Cardinality(7, 3), "highs", time_limit=10)
    calls = []

    def stopped(o, q):
        calls.append(q)
        raise LimitReached("HiGHS stopped on its time limit")

    monkeypatch.setattr(highs_backend, "solve_norm", stopped)
    mu, M = _correlated(7, 4)
    with pytest.raises(cm.OracleError, match="time limit"):
        oracle.argmax_norm(mu, M, 0.8, 1)
    assert len(calls) == 1


RECORDED = DATA / "norm_recorded.npz"


def _recorded() -> list:
    """(d, k, label) of each stored query: hardest-to-prove queries of OLS-UCB-C, AROQ-C and SROQ-C runs."""
    with np.load(RECORDED) as data:  # no pickles: plain arrays per dimension
        return [
            pytest.param(int(key[6:]), k, id=str(label))
            for key in data.files
            if key.startswith("label_")
            for k, label in enumerate(data[key])
        ]


@pytest.mark.parametrize(("d", "k"), _recorded())
def test_recorded_norm_queries_are_answered_right(d: int, k: int) -> None:
    """Recorded from policy runs on correlated instances (``bench/covariance.py --fuzz``) and
    the same queries at extreme scales, against brute force on ``Cardinality(d, 3)``."""
    with np.load(RECORDED) as data:
        mu, M, f, sign = data[f"mu_{d}"][k], data[f"M_{d}"][k], float(data[f"f_{d}"][k]), int(data[f"sign_{d}"][k])
    space = cm.Cardinality(d, 3)
    truth = cm.make_oracle(space, "enumerate")
    q = truth.norm_query(mu, M, f, sign)
    best = q.value(truth.argmax_norm(mu, M, f, sign))
    answer = cm.make_oracle(space, "highs").argmax_norm(mu, M, f, sign)
    assert q.value(answer) >= best - tolerance(best)
