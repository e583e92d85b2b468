"""ESCB's index maximised exactly by branch and bound over linear queries, certifying last round's answer first.

The problem, on any space with a linear oracle (include / exclude restrictions)::

    maximise  F(a) = y(a) + g sqrt(s(a)),   y(a) = mu . a,  s(a) = w . a,  w_i = 1 / n_i > 0,  g >= 0.

**The bound.** For every ``c > 0`` and ``s >= 0``, ``g sqrt(s) <= c s + g^2 / (4 c)``
(AM-GM: ``2 sqrt(c s * g^2 / (4 c)) <= c s + g^2 / (4 c)``), with equality at
``s = (g / (2 c))^2``: the tangent of the concave ``g sqrt(.)``. Hence over any set
``N`` of actions (a node: the space under include / exclude restrictions)::

    max_{a in N} F(a)  <=  U_N(c) = max_{a in N} (mu + c w) . a  +  g^2 / (4 c),

one linear query with weights ``mu + c w``. If its answer ``b`` has
``F(b) = U_N(c)`` (it is tangent: ``c = g / (2 sqrt(s(b)))``), ``b`` is optimal
on ``N``. A node is discarded when ``U_N(c) <= best`` for the best value found
so far: no action in it is better (to the oracle's own tolerance, ``1e-9 (1 +
|value|)`` on each linear answer, and ``1e-12`` relative on the comparison).

**Certifying last round's answer.** The first ``c`` is the tangent at the
incumbent ``a0`` (last round's answer, still feasible): if the linear answer
``b`` has ``U(c) <= F(a0)``, ``a0`` is optimal after one linear query; the
counts moved by one round's feedback only, so this is the common case.

**Choosing c in a node** (the dual ``U_N`` is convex in ``c``). Each answer
``b`` at ``c`` is a line ``y_b + c s_b + g^2 / (4 c)`` below ``U_N``; if
``s_b > (g / (2 c))^2`` the minimiser lies at smaller ``c`` (larger ``c``
rewards ``s``), else at larger ``c``. The next ``c`` is where the lines of the
bracketing answers cross, when inside the bracket, else the tangent at ``b``.
After :data:`ITERATIONS` queries without a discard the node is split.

**Branching.** On an arm in the symmetric difference of the two bracketing
answers (else an arm of the last answer not yet included): the include child
first when the best answer holds it. Every split fixes one arm, so the search
ends (at worst at the actions themselves); it is exact, not a heuristic. A
linear bound cannot close every node alone: the maximiser may lie strictly
inside the convex hull of the points ``(s(a), y(a))`` (module
:mod:`cmab_milp.policies.escb`), and then only the splits isolate it. The
search stops after ``max_nodes`` nodes and returns ``None`` (the caller then
asks the exact norm oracle).

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(6, 2)
>>> oracle = cm.make_oracle(space, "enumerate")
>>> mu, w = np.array([0.9, 0.8, 0.5, 0.4, 0.3, 0.1]), np.array([0.01, 0.01, 1.0, 1.0, 0.5, 2.0])
>>> action, stats = maximise_index(oracle, mu, w, 1.0)
>>> values = [index_value(mu, w, 1.0, a) for a in space.enumerate()]
>>> bool(np.isclose(index_value(mu, w, 1.0, action), max(values))), stats.nodes >= 1
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..oracles import Oracle

__all__ = ["ITERATIONS", "SearchStats", "index_value", "maximise_index"]

#: Linear queries per node before it is split.
ITERATIONS = 4
_RELATIVE = 1e-12


@dataclass
class SearchStats:
    """What one maximisation cost: linear ``queries``, ``nodes`` visited, ``certified`` (incumbent proven at once)."""

    queries: int = 0
    nodes: int = 0
    certified: bool = False


def index_value(mu: np.ndarray, w: np.ndarray, g: float, action: np.ndarray) -> float:
    """``mu . a + g sqrt(w . a)`` by masked sums (no BLAS: the same bits on every kernel)."""
    return float(mu[action].sum()) + g * math.sqrt(max(float(w[action].sum()), 0.0))


def _admits(action: np.ndarray, include: Sequence[int], exclude: Sequence[int], pairs: Sequence) -> bool:
    if not all(action[i] for i in include) or any(action[i] for i in exclude):
        return False
    return not any(action[i] and action[j] for i, j in pairs)


def maximise_index(
    oracle: Oracle,
    mu: np.ndarray,
    w: np.ndarray,
    g: float,
    *,
    include: Sequence[int] = (),
    exclude: Sequence[int] = (),
    forbid_pairs: Sequence[tuple[int, int]] = (),
    incumbent: np.ndarray | None = None,
    max_nodes: int = 5000,
) -> tuple[np.ndarray | None, SearchStats]:
    """An action maximising ``mu . a + g sqrt(w . a)`` under the restrictions (module docstring).

    ``w`` must be > 0 on every arm the restrictions allow (unobserved arms excluded
    by the caller). The linear queries are not entered in ``oracle.ledger`` (the
    caller records the maximisation, so that the ledger does not depend on the
    incumbent); ``stats.queries`` counts them. Returns ``(None, stats)`` when no action qualifies or the search
    passed ``max_nodes`` (``stats.nodes > max_nodes`` tells which).
    """
    stats = SearchStats()

    def ask(weights: np.ndarray, inc: tuple, exc: tuple) -> np.ndarray | None:
        stats.queries += 1
        # validated like argmax, answered without a ledger entry: the caller records the maximisation as one query
        return oracle._answer(oracle.linear_query(weights, inc, exc, forbid_pairs))

    include, exclude = tuple(include), tuple(exclude)
    if g <= 0.0:  # the index is linear
        stats.nodes = 1
        return ask(mu, include, exclude), stats
    allowed = np.ones(len(w), bool)
    allowed[list(exclude)] = False
    positive = w[allowed & (w > 0)]
    floor = float(positive.min()) if len(positive) else 1.0
    half_g2 = g * g / 4.0

    def tangent(s: float) -> float:
        return g / (2.0 * math.sqrt(max(s, floor)))

    best, best_value = None, -math.inf
    if incumbent is not None and _admits(incumbent, include, exclude, forbid_pairs):
        best, best_value = incumbent, index_value(mu, w, g, incumbent)
    start = tangent(float(w[best].sum())) if best is not None else tangent(float(w[allowed].max(initial=floor)))
    stack: list[tuple[tuple, tuple, float, float]] = [(include, exclude, start, math.inf)]
    while stack:
        inc, exc, c, parent_bound = stack.pop()
        if parent_bound <= best_value + _RELATIVE * (1.0 + abs(best_value)):
            continue
        stats.nodes += 1
        if stats.nodes > max_nodes:
            return None, stats
        low: tuple | None = None  # (c, answer, y, s) with s below the tangency point: the minimiser is at larger c
        high: tuple | None = None
        bound, answer = math.inf, None
        for _ in range(ITERATIONS):
            answer = ask(mu + c * w, inc, exc)
            if answer is None:  # the node holds no action
                break
            y, s = float(mu[answer].sum()), float(w[answer].sum())
            value = y + g * math.sqrt(max(s, 0.0))
            if value > best_value:
                best, best_value = answer, value
            bound = min(bound, y + c * s + half_g2 / c)
            if bound <= best_value + _RELATIVE * (1.0 + abs(best_value)):
                if stats.nodes == 1 and best is incumbent:
                    stats.certified = True
                answer = None
                break
            if s * c * c > half_g2:
                high = (c, answer, y, s)
            else:
                low = (c, answer, y, s)
            c = _next_c(low, high, tangent(s))
        if answer is None:
            continue
        arm = _branch_arm(low, high, answer, inc, exc)
        if arm is None:  # every arm of the answer is fixed: the node is that action alone, already valued
            continue
        keep_in = best is not None and bool(best[arm])
        children = [((*inc, arm), exc, c, bound), (inc, (*exc, arm), c, bound)]
        stack.extend(children[::-1] if keep_in else children)  # the child holding the best answer first
    return best, stats


def _next_c(low: tuple | None, high: tuple | None, tangent_c: float) -> float:
    """Where the lines of the bracketing answers cross, if inside the bracket; else the tangent at the last answer."""
    if low is not None and high is not None:
        (c_lo, _, y_lo, s_lo), (c_hi, _, y_hi, s_hi) = low, high
        if s_hi > s_lo:
            cross = (y_lo - y_hi) / (s_hi - s_lo)
            if min(c_lo, c_hi) < cross < max(c_lo, c_hi):
                return cross
        return math.sqrt(c_lo * c_hi)
    return tangent_c


def _branch_arm(
    low: tuple | None, high: tuple | None, answer: np.ndarray, include: tuple, exclude: tuple
) -> int | None:
    """An arm the two bracketing answers disagree on, else an arm of ``answer`` not yet included, else any free arm.

    ``None``: every arm is fixed, so the node is one action (already valued).
    """
    if low is not None and high is not None:
        differ = np.flatnonzero(low[1] != high[1])
        if len(differ):
            return int(differ[0])
    fixed = set(include) | set(exclude)
    free = [int(i) for i in np.flatnonzero(answer) if int(i) not in fixed]
    if not free:
        free = [i for i in range(len(answer)) if i not in fixed]
    return free[0] if free else None
