"""The ``scip`` backend's time limit holds for a whole query, across its lazy-cut re-solves.

Found: ``bench/norm_large.py --backends scip --time-limit 10`` ran norm queries on 6x6-grid trees
for up to 127 s: SCIP's ``limits/time`` held per solve, and a query re-solves once per round of
subtour cuts (and once more for the linear argmax when ``M`` is indefinite). Now each solve gets what
is left of the query's limit, and a query past it raises ``LimitReached``.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.base import LimitReached

pytest.importorskip("pyscipopt")

from cmab_milp.oracles.backends.scip import _ScipModel

LIMIT = 30.0


@pytest.fixture
def solves(monkeypatch):
    """Every SCIP solve of the test as ``(limits/time given, seconds taken, status)``."""
    seen: list[tuple[float, float, str]] = []
    original = _ScipModel.solve

    def spy(self, tie_tol=None):
        start = time.perf_counter()
        result = original(self, tie_tol)
        seen.append((float(self.model.getParam("limits/time")), time.perf_counter() - start, result.status))
        return result

    monkeypatch.setattr(_ScipModel, "solve", spy)
    return seen


def petersen_trees() -> cm.SpanningTrees:
    return cm.SpanningTrees(nx.petersen_graph())  # 2000 trees; its 5-cycles need cut rounds


def assert_shared(seen: list[tuple[float, float, str]]) -> None:
    """Each solve got at most the limit minus what the query's earlier solves took."""
    assert len(seen) >= 2, "the query should re-solve (cut rounds) for this test to bite"
    spent = 0.0
    for given, took, _ in seen:
        assert given <= LIMIT - spent + 1e-6, (given, spent, seen)
        spent += took


@pytest.mark.parametrize("indefinite", [False, True])
def test_norm_query_shares_its_limit_across_resolves(solves, indefinite):
    space = petersen_trees()
    rng = np.random.default_rng(1)
    a = rng.normal(size=(space.d, space.d))
    M = (a + a.T) / 2 if indefinite else a @ a.T / space.d + 0.1 * np.eye(space.d)
    mu = rng.uniform(0, 1, space.d)
    oracle = cm.make_oracle(space, "scip", time_limit=LIMIT, one_tree=False)  # re-solves per cut round
    answer = oracle.argmax_norm(mu, M, 0.3, 1)
    assert_shared(solves)
    exact = cm.make_oracle(space, "enumerate").argmax_norm(mu, M, 0.3, 1)
    value = cm.oracles.core.queries.norm_objective
    assert value(mu, M, 0.3, 1, answer) == pytest.approx(value(mu, M, 0.3, 1, exact), abs=1e-6)


def test_linear_query_shares_its_limit_across_resolves(solves):
    space = petersen_trees()
    w = np.random.default_rng(0).normal(size=space.d)
    action = cm.make_oracle(space, "scip", time_limit=LIMIT, one_tree=False).argmax(w)
    assert_shared(solves)
    assert w @ action == pytest.approx(w @ cm.make_oracle(space, "enumerate").argmax(w), abs=1e-9)


def test_a_query_past_its_limit_raises_limit_reached(monkeypatch):
    """The second solve of a query finds the deadline spent (simulated): ``LimitReached``, no action."""
    space = petersen_trees()
    original = _ScipModel.solve

    def slow(self, tie_tol=None):
        result = original(self, tie_tol)
        if self.deadline is not None:
            self.deadline = time.perf_counter() - 1.0  # as if this solve had used the whole limit
        return result

    monkeypatch.setattr(_ScipModel, "solve", slow)
    rng = np.random.default_rng(1)
    a = rng.normal(size=(space.d, space.d))
    oracle = cm.make_oracle(space, "scip", time_limit=LIMIT, one_tree=False)
    with pytest.raises(LimitReached, match="time limit"):
        oracle.argmax_norm(rng.uniform(0, 1, space.d), a @ a.T / space.d + 0.1 * np.eye(space.d), 0.3, 1)
    monkeypatch.setattr(_ScipModel, "solve", original)
    assert oracle.argmax(np.ones(space.d)) is not None  # the next query has its own limit


def test_hard_norm_query_stops_near_its_limit():
    """Trees of a 6x6 grid, f = 0.1, sign -1: 65 s median under a 10 s limit before the fix."""
    space = cm.SpanningTrees(nx.grid_2d_graph(6, 6))
    rng = np.random.default_rng(0)
    a = rng.normal(size=(space.d, space.d))
    mu, M = rng.uniform(0, 1, space.d), a @ a.T / space.d + 0.1 * np.eye(space.d)
    limit = 0.5
    oracle = cm.make_oracle(space, "scip", time_limit=limit)
    start = time.perf_counter()
    try:
        answer = oracle.argmax_norm(mu, M, 0.1, -1)
    except LimitReached:
        answer = None
    took = time.perf_counter() - start
    assert took < limit + 2.0, took  # SCIP checks its clock between nodes; the rest is model edits
    if answer is not None:  # finished in time: it must be the optimum
        highs = cm.make_oracle(space, "highs").argmax_norm(mu, M, 0.1, -1)
        value = cm.oracles.core.queries.norm_objective
        assert value(mu, M, 0.1, -1, answer) == pytest.approx(value(mu, M, 0.1, -1, highs), abs=1e-6)
