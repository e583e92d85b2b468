"""One certificate (``core/certify.py``): keyword-only, and the same decisions as the three rules it replaced.

Before issue 41 the certificate was written three times: ``core/pipeline.proven(value, bound, slack)`` (and a
scaled variant), ``norm/scaling.proven(bound, value, unit)`` (the opposite order) and the SCIP / Gurobi norm
settle. Those rules are copied below, literally, as the truth the one :func:`proven` must match: on a grid of
near-ties of every magnitude, and on every call the oracles make while answering the recorded queries.
"""

from __future__ import annotations

import importlib
import itertools
import math

import networkx as nx
import numpy as np
import pytest
from recorded_queries import NORM_QUERY_F, NORM_QUERY_M, NORM_QUERY_MU, NORM_QUERY_SIGN

import cmab_milp as cm
from cmab_milp.oracles.core import certify
from cmab_milp.oracles.core.certify import linear_proven, proven, proven_ratio, settle_norm_answer
from cmab_milp.oracles.core.queries import LinearQuery, Restrictions


# ------------------------------------------------------------ the rules before (copied, argument orders kept)
def old_pipeline(value: float, bound: float, slack: float = 0.0) -> bool:
    gap = bound - value
    if gap <= 0.0:
        return True
    low = 0.0 if value <= 0.0 <= bound else min(abs(value), abs(bound))
    return gap <= 1e-9 * (1.0 + abs(low)) + slack


def old_scaled(value: float, bound: float, allowance: float) -> bool:
    gap = bound - value
    low = 0.0 if value <= 0.0 <= bound else min(abs(value), abs(bound))
    return gap <= 0.0 or gap <= 1e-9 * low + allowance


def old_norm(bound: float, value: float, unit: float = 1.0) -> bool:
    return value >= bound - (1e-9 * (1.0 + abs(bound)) if unit == 1.0 else 1e-9 * (unit + abs(bound)))


def old_settle_accepts(value: float, bound: float, slack: float) -> bool:
    return not value < bound - slack * (1.0 + abs(bound))


def near_ties() -> list[tuple[float, float]]:
    """(value, bound) pairs around every boundary of the rules: zero, signs, tiny and huge magnitudes."""
    values = [0.0, -0.0, 1.0, -1.0, 2.0, 1e-12, -1e-12, 1e-9, 0.5, 1e6, -1e6, 3.7e15, 1e300, -1e300, 2.0**-1074]
    deltas = [0.0, 1e-10, 9e-10, 1e-9, 1.0000001e-9, 1.5e-9, 2e-9, 2.5e-9, 5.4e-9, 1e-8, 1e-6, 5e-4, 2e-3, 1.0]
    pairs = []
    for v, dlt in itertools.product(values, deltas):
        for b in (v + dlt, v - dlt, v * (1.0 + dlt), np.nextafter(v + dlt * (1.0 + abs(v)), np.inf)):
            pairs.append((float(v), float(b)))
    rng = np.random.default_rng(41)
    for _ in range(2000):
        v = float(rng.normal() * 10.0 ** rng.integers(-12, 12))
        pairs.append((v, float(v + rng.normal() * 1e-9 * (1.0 + abs(v)) * 3.0)))
    pairs += [(1.0, math.inf), (1.0, -math.inf), (-math.inf, 0.0)]
    return pairs


def test_a_swapped_or_positional_call_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        proven(1.0, 1.0 + 1e-8)  # type: ignore[misc]
    with pytest.raises(TypeError):
        proven_ratio(0.5, 1.0)  # type: ignore[misc]
    assert not proven(value=1.0, bound=1.0 + 1e-8) and proven(value=1.0 + 1e-8, bound=1.0)  # the order matters


def test_an_unknown_measure_is_named() -> None:
    with pytest.raises(ValueError, match="measured_at must be 'optimum' or 'bound'"):
        proven(value=1.0, bound=2.0, measured_at="value")  # type: ignore[arg-type]


def test_nan_is_never_proven() -> None:
    for at in ("optimum", "bound"):
        assert not proven(value=math.nan, bound=1.0, measured_at=at)
        assert not proven(value=1.0, bound=math.nan, measured_at=at)


def test_the_one_rule_decides_as_the_three_before_on_near_ties() -> None:
    pairs = near_ties()
    decided = {True: 0, False: 0}
    for value, bound in pairs:
        for slack in (0.0, 1e-12, 1e-9):
            got = proven(value=value, bound=bound, slack=slack)
            assert got == old_pipeline(value, bound, slack), (value, bound, slack)
            decided[got] += 1
        for allowance in (0.0, 1e-300, 1e-14):
            assert proven(value=value, bound=bound, slack=allowance, unit=0.0) == old_scaled(value, bound, allowance)
        for unit in (1.0, 1e-3, 0.25, 2.0**-20):
            assert proven(value=value, bound=bound, unit=unit, measured_at="bound") == old_norm(bound, value, unit)
        for slack in (1e-6, 1e-9):
            got = proven(value=value, bound=bound, rate=slack, measured_at="bound")
            if math.isfinite(bound):
                assert got == old_settle_accepts(value, bound, slack), (value, bound, slack)
            else:  # the settle alone let a finite value pass an infinite bound (inf - inf is NaN): refused now
                assert got == (bound == -math.inf)
    assert min(decided.values()) > 1000  # both decisions are exercised


def test_linear_proven_scales_exactly() -> None:
    w = np.array([2.0**1020, 2.0**1020, -(2.0**1019)])
    query = LinearQuery(w, Restrictions())
    shift = math.frexp(float(np.abs(w).max()))[1]
    scaled_value = float(np.ldexp(w[:2], -shift).sum())
    assert linear_proven(query, [True, True, False], scaled_value, shift=shift)
    assert not linear_proven(query, [True, False, False], scaled_value, shift=shift)
    assert linear_proven(LinearQuery(np.array([1e-9, 1.0, -1.0]), Restrictions()), [True, True, True], 1e-9)


def test_the_settle_keeps_the_best_candidate_and_refuses_an_open_gap() -> None:
    query = cm.make_oracle(cm.Cardinality(2, 1), "enumerate").norm_query(np.array([1.0, 0.0]), np.eye(2), 0.5)
    a, b = np.array([True, False]), np.array([False, True])
    assert settle_norm_answer(query, (b, 1.5), lambda: a, 1e-6, "S").tolist() == a.tolist()  # 1.5 beats 0.5
    assert settle_norm_answer(query, None, None, 1e-6, "S") is None
    with pytest.raises(cm.OracleError, match=r"S's bound is 1\.6"):
        settle_norm_answer(query, (a, 1.6), None, 1e-6, "S")


# ------------------------------------------------------------ every call made on the recorded queries
_NORM_USERS = (
    "cmab_milp.oracles.norm.solver",
    "cmab_milp.oracles.norm.outer.minus",
    "cmab_milp.oracles.norm.paths.minus",
    "cmab_milp.oracles.norm.secants.minus",
    "cmab_milp.oracles.norm.branch.minus",
    "cmab_milp.oracles.norm.branch.plus",
)


def test_the_recorded_queries_get_the_decisions_of_the_rules_before(monkeypatch) -> None:
    calls: list[tuple[dict, bool]] = []
    real = certify.proven

    def recording(**kwargs):
        got = real(**kwargs)
        calls.append((kwargs, got))
        return got

    monkeypatch.setattr(certify, "proven", recording)
    for name in _NORM_USERS:
        monkeypatch.setattr(importlib.import_module(name), "proven", recording)
    rng = np.random.default_rng(20261130)
    M, mu = np.asarray(NORM_QUERY_M), np.asarray(NORM_QUERY_MU)
    d = len(mu)
    highs = cm.make_oracle(cm.Cardinality(d, 3), "highs")
    enum = cm.make_oracle(cm.Cardinality(d, 3), "enumerate")
    queries = [(mu, M, NORM_QUERY_F, NORM_QUERY_SIGN), (mu, M, NORM_QUERY_F, -1)]
    queries += [(mu + 1e-3 * rng.normal(size=d), M, NORM_QUERY_F, s) for s in (1, -1)]
    for q in queries:
        got, truth = highs.argmax_norm(*q), enum.argmax_norm(*q)
        best = cm.oracles.norm_objective(*q, truth)
        assert cm.oracles.norm_objective(*q, got) >= best - 1e-9 * (1.0 + abs(best))
    for w in (mu, -mu, rng.normal(size=d) * 1e-9, rng.normal(size=d) * 1e17):
        assert highs.argmax(w) is not None
    matchings = cm.make_oracle(cm.Matchings(nx.complete_bipartite_graph(3, 3)), "highs")
    assert matchings.argmax_norm(rng.normal(size=9), np.eye(9) * 0.1, 1.0, -1) is not None
    kinds = {kwargs.get("measured_at", "optimum") for kwargs, _ in calls}
    assert kinds == {"optimum", "bound"} and len(calls) > 10
    for kwargs, got in calls:
        value, bound = kwargs["value"], kwargs["bound"]
        slack, unit, rate = kwargs.get("slack", 0.0), kwargs.get("unit", 1.0), kwargs.get("rate", 1e-9)
        if kwargs.get("measured_at", "optimum") == "bound":
            want = old_norm(bound, value, unit) if rate == 1e-9 else old_settle_accepts(value, bound, rate)
        elif unit == 0.0:
            want = old_scaled(value, bound, slack)
        else:
            want = old_pipeline(value, bound, slack)
        assert got == want, kwargs
