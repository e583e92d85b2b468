"""A worker of a stopped batch leaves the tie search at once: between two candidates, before a restricted solve.

``halting(threads)`` stops every later solve of a batch's workers before it starts; but the tie rule's search
(:mod:`cmab_milp.oracles.core.ties`) walks its candidates in Python (with a large ``leaves``, as many as
there are), and backends answering in Python (``enumerate``, ``combinatorial``, ``auto``'s table) never reach
a stoppable solve. Before, such a worker ran its query to the
end after the interrupt (the command line waited 2 s, then forced its exit). Here a halted thread runs the
search on a small cyclic path space with the ``enumerate`` backend: it must raise ``KeyboardInterrupt``
at its first step, having checked no candidate beyond the first and made no restricted solve.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
import pytest

import cmab_milp as cm
from cmab_milp.oracles.core.interrupts import halting, raise_if_halted
from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
from cmab_milp.oracles.core.ties import first_optimum


@dataclasses.dataclass(frozen=True)
class CountedRestrictions(Restrictions):
    """Restrictions that count the candidates checked against them (``admits``)."""

    checked: list = dataclasses.field(default_factory=list, compare=False)

    def admits(self, action: np.ndarray) -> bool:
        self.checked.append(1)
        return super().admits(action)


def _grid_paths() -> cm.STPaths:
    """The corner-to-corner simple paths of a 3 x 4 grid (cyclic: no one-solve rule, the search runs)."""
    return cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)), 0, 11)


def _counting_oracle(space: cm.STPaths) -> tuple[Any, list[int]]:
    """An ``enumerate`` oracle with the tie rule whose solves are counted (none of them is a stoppable one)."""
    oracle = cm.make_oracle(space, "enumerate", ties="classes")
    solves: list[int] = []
    solve = oracle._linear

    def counted(query: LinearQuery) -> np.ndarray | None:
        solves.append(1)
        return solve(query)

    oracle._linear = counted
    return oracle, solves


def _in_thread(work: Callable[[], Any], halted: bool) -> tuple[str, Any]:
    """Run ``work()`` in a new thread, given to :func:`halting` first when ``halted``: how it ended, and its value."""
    ready, go, outcome = threading.Event(), threading.Event(), []

    def body() -> None:
        ready.set()
        go.wait(10)
        try:
            outcome.append(("returned", work()))
        except KeyboardInterrupt:
            outcome.append(("interrupted", None))

    thread = threading.Thread(target=body)
    thread.start()
    ready.wait(10)
    if halted:
        with halting([thread]):
            pass
    go.set()
    thread.join(60)
    assert not thread.is_alive()
    return outcome[0]


def _rule(space: cm.STPaths, weights: np.ndarray, include: tuple[int, ...]) -> list[int]:
    """The rule's action by brute force: among the optima holding ``include``, the least ``sum_i 2^i x_i``."""
    actions = [a for a in space.enumerate() if a[list(include)].all()]
    best = max(float(weights @ a) for a in actions)
    number = min(sum(1 << int(i) for i in np.flatnonzero(a)) for a in actions if float(weights @ a) == best)
    return [i for i in range(space.d) if number >> i & 1]


@pytest.mark.parametrize("halted", [False, True], ids=["running", "halted"])
def test_a_halted_worker_leaves_the_candidates_at_the_first(halted: bool) -> None:
    space = _grid_paths()
    oracle, solves = _counting_oracle(space)
    weights = np.ones(space.d)  # every longest path ties: all its arms are open
    restrictions = CountedRestrictions(include=(0,))  # most candidates leave arm 0 out: refused
    query = LinearQuery(weights, restrictions)
    answer = oracle._linear(query)
    solves.clear()
    how, action = _in_thread(lambda: first_optimum(oracle, query, answer, leaves=10_000), halted)
    if halted:
        assert how == "interrupted"
        assert len(restrictions.checked) <= 1 and not solves
    else:  # the same search runs through many refused candidates to the rule's action
        assert how == "returned" and len(restrictions.checked) > 20
        assert np.flatnonzero(action).tolist() == _rule(space, weights, (0,))


@pytest.mark.parametrize("include", [(), (0,), (1,)])
def test_a_halted_worker_makes_no_restricted_solve(include: tuple[int, ...]) -> None:
    space = _grid_paths()
    oracle, solves = _counting_oracle(space)
    query = LinearQuery(np.ones(space.d), Restrictions(include=include))
    answer = oracle._linear(query)
    solves.clear()
    how, action = _in_thread(lambda: first_optimum(oracle, query, answer, leaves=0), halted=False)
    assert how == "returned" and len(solves) >= 3  # settled by restricted solves, one per open arm held
    assert np.flatnonzero(action).tolist() == _rule(space, np.ones(space.d), include)
    solves.clear()
    how, _ = _in_thread(lambda: first_optimum(oracle, query, answer, leaves=0), halted=True)
    assert how == "interrupted" and not solves


def test_a_halted_worker_stops_in_the_exact_settling_too() -> None:
    space = _grid_paths()
    oracle, solves = _counting_oracle(space)
    oracle.ties = "exact"
    weights = np.array([1.0 + (i % 3) * 0.5 for i in range(space.d)])
    answer = oracle._linear(LinearQuery(weights, Restrictions()))
    solves.clear()
    query = LinearQuery(weights, Restrictions())
    how, _ = _in_thread(lambda: first_optimum(oracle, query, answer), halted=True)
    assert how == "interrupted"
    assert len(solves) <= 1  # at most the one solve of shifted weights that asks whether a tie exists


def test_raise_if_halted_leaves_other_threads_alone() -> None:
    halted_outcome = _in_thread(raise_if_halted, halted=True)
    assert halted_outcome == ("interrupted", None)
    assert _in_thread(raise_if_halted, halted=False) == ("returned", None)
    raise_if_halted()  # this thread was never halted


def test_the_brute_force_rule_is_the_least_binary_number() -> None:
    """The truth used above, checked on a space small enough to list by hand: two paths of equal length."""
    space = cm.STPaths(nx.cycle_graph(4), 0, 2)  # arms (0,1) (0,3) (1,2) (2,3): paths {0, 2} and {1, 3}
    numbers = sorted(sum(1 << int(i) for i in np.flatnonzero(a)) for a in space.enumerate())
    assert numbers == [0b0101, 0b1010]
    assert _rule(space, np.ones(4), ()) == [0, 2]
    assert _rule(space, np.ones(4), (1,)) == [1, 3]
    grid = _grid_paths()  # the listing the truth reads is every simple path
    assert len(grid.enumerate()) == len(list(nx.all_simple_paths(nx.grid_2d_graph(3, 4), (0, 0), (2, 3))))
