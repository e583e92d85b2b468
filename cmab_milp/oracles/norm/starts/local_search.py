"""Heuristics for the first incumbents: local search (sign -1) and linear-oracle ascent (sign +1).

The linear argmax, improved by swaps of one or two arms (each checked against the
space and the restrictions, and valued exactly), is the first incumbent: its
``L`` is a breakpoint from the start and its value narrows the window
(:func:`~cmab_milp.oracles.norm.secants.pieces.window_top`), so when it is the optimum
(61 of 64 bench queries at d=40) one MILP proves it. It is only a heuristic: the
answer's exactness rests on the secant MILP, never on the search.

Sign +1 starts from :func:`ascend`: steps along the gradient of the convex index,
each a linear query over the space (the dual view ``sqrt(a'Ma) = max_{|u| <= 1}
u' M^{1/2} a``: the optimum is the answer of some linear query). Again only an
incumbent: the outer approximation proves the answer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.base import tolerance
from ...core.queries import NormQuery

__all__ = ["ascend", "ascend_from_neighbours", "improve_locally", "local_moves"]

#: Feasibility checks of the local search that improves the first incumbent (sign -1).
_LOCAL_CHECKS = 200


def improve_locally(
    query: NormQuery,
    arms: np.ndarray,
    feasible: Callable[[np.ndarray], bool],
    action: np.ndarray,
    value: float,
    checks_budget: int = _LOCAL_CHECKS,
    max_arms: int | None = None,
) -> tuple[np.ndarray, float, int]:
    """Best-improvement local search from ``action``: add, drop or swap one arm, else swap two (either sign).

    Only a heuristic for the incumbent: its ``L`` becomes a breakpoint and its value
    narrows the window, which halves the MILP work when it is the optimum. Every move is checked
    against the space and the restrictions and valued exactly; at most ``checks_budget`` feasibility
    checks. Moves to more than ``max_arms`` arms (the space's ``m``, when given) are left out unchecked:
    they cannot be actions.

    ``arms`` are the arms not excluded, ``feasible`` says whether an action is in the
    space; returns the action, its value and the number of feasibility checks made.

    >>> import cmab_milp as cm
    >>> space = cm.Cardinality(3, 1)
    >>> q = cm.make_oracle(space, "enumerate").norm_query(np.array([0.1, 0.5, 0.2]), np.eye(3), 0.0, -1)
    >>> action, value, checks = improve_locally(q, np.arange(3), space.contains, np.array([1, 0, 0], bool), 0.1)
    >>> action.astype(int).tolist(), value
    ([0, 1, 0], 0.5)
    """
    q, res = query, query.restrictions
    d, f = len(q.mu), q.f
    pad = np.zeros((d + 1, d + 1))  # index d stands for "no arm"
    pad[:d, :d] = q.M
    mu = np.r_[q.mu, 0.0]
    free = np.zeros(d, bool)
    free[arms] = True
    keep = np.zeros(d, bool)
    keep[list(res.include)] = True
    checks, width = 0, 1
    while checks < checks_budget:
        x = np.r_[action, False].astype(float)
        mx = pad @ x
        drop, add = local_moves(np.flatnonzero(action & ~keep), np.flatnonzero(free & ~action), d, width)
        lin = mu @ x + mu[add].sum(axis=1) - mu[drop].sum(axis=1)
        quad = x @ mx
        for side, cols in ((-1.0, drop), (1.0, add)):
            quad = quad + 2.0 * side * mx[cols].sum(axis=1)
            quad = quad + pad[cols[:, 0], cols[:, 0]] + pad[cols[:, 1], cols[:, 1]] + 2.0 * pad[cols[:, 0], cols[:, 1]]
        quad = quad - 2.0 * sum(pad[drop[:, u], add[:, v]] for u in (0, 1) for v in (0, 1))
        gain = lin + q.sign * f * np.sqrt(np.maximum(quad, 0.0)) - value
        if max_arms is not None:
            size = action.sum() + (add < d).sum(axis=1) - (drop < d).sum(axis=1)
            gain[size > max_arms] = -np.inf
        moved = False
        for k in np.argsort(-gain):
            if gain[k] <= tolerance(value) or checks >= checks_budget:
                break
            candidate = action.copy()
            candidate[drop[k][drop[k] < d]] = False
            candidate[add[k][add[k] < d]] = True
            checks += 1
            if (res.empty or res.admits(candidate)) and feasible(candidate):
                new_value = q.value(candidate)
                if new_value > value:
                    action, value, moved = candidate, new_value, True
                    break
        if moved:
            width = 1
        elif width == 1:
            width = 2
        else:
            break
    return action, value, checks


def local_moves(inside: np.ndarray, outside: np.ndarray, none: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Arms dropped and added by each move, two columns each (``none`` pads).

    ``width=1``: drop one, add one, or swap one for one; ``width=2``: swap two for two.

    >>> drop, add = local_moves(np.array([0]), np.array([1, 2]), 9, 1)
    >>> np.c_[drop[:, 0], add[:, 0]].tolist()
    [[0, 9], [9, 1], [9, 2], [0, 1], [0, 2]]
    """
    if width == 1:
        n_in, n_out = len(inside), len(outside)
        first_drop = np.r_[inside, np.full(n_out, none), np.repeat(inside, n_out)]
        first_add = np.r_[np.full(n_in, none), outside, np.tile(outside, n_in)]
        second = np.full(len(first_drop), none)
        return np.c_[first_drop, second], np.c_[first_add, second]
    ii, jj = np.triu_indices(len(inside), 1)
    oo, pp = np.triu_indices(len(outside), 1)
    pairs_in = np.c_[inside[ii], inside[jj]]
    pairs_out = np.c_[outside[oo], outside[pp]]
    return np.repeat(pairs_in, len(pairs_out), axis=0), np.tile(pairs_out, (len(pairs_in), 1))


def ascend(
    query: NormQuery, linear: Callable[[np.ndarray], np.ndarray | None], action: np.ndarray | None, rounds: int
) -> tuple[np.ndarray | None, float, int]:
    """Incumbent of sign +1 by linear-oracle steps: ``a' = argmax (mu + f M a / sqrt(a @ M @ a)) @ a'``.

    With ``M`` positive semidefinite, ``g(a) = mu @ a + f sqrt(a @ M @ a)`` is convex, so
    ``g(a') >= g(a) + grad g(a) @ (a' - a) >= g(a)``: each step is a linear query (over the
    space and the restrictions) that cannot lose; the steps stop at a fixed point or
    after ``rounds`` queries (or where ``a @ M @ a <= 0``). Only a heuristic (every value is recomputed exactly, the
    best kept): the answer's exactness rests on the solver's bound. ``linear(w)`` answers
    the linear query of weights ``w``; ``action`` is a starting point (``None``: the argmax
    of ``mu``). Returns the best action, its value and the number of linear queries.

    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "enumerate")
    >>> M = np.array([[1.0, 0.0, 0.9], [0.0, 0.01, 0.0], [0.9, 0.0, 1.0]])
    >>> q = oracle.norm_query(np.array([0.5, 0.45, 0.3]), M, 1.0)
    >>> action, value, calls = ascend(q, oracle.argmax, None, 5)
    >>> action.astype(int).tolist(), round(value, 4), calls
    ([1, 0, 1], 2.7494, 3)
    """
    calls = 0
    if action is None:
        action, calls = linear(query.mu), 1
        if action is None:
            return None, -np.inf, calls
    best, best_value = action, query.value(action)
    seen = {action.tobytes()}
    while calls < rounds:
        mx = query.M[:, action].sum(axis=1)
        quad = float(mx[action].sum())
        if quad <= 0.0:
            break
        step = linear(query.mu + query.sign * query.f * mx / np.sqrt(quad))
        calls += 1
        if step is None or step.tobytes() in seen:
            break
        seen.add(step.tobytes())
        action = step
        value = query.value(step)
        if value > best_value:
            best, best_value = step, value
    return best, best_value, calls


def ascend_from_neighbours(
    query: NormQuery,
    linear: Callable[[np.ndarray, int | None], np.ndarray | None],
    action: np.ndarray,
    value: float,
    rounds: int,
    budget: int,
) -> tuple[np.ndarray, float, int]:
    """Restarts of :func:`ascend` around ``action``: for each arm ``i`` it holds, a step without ``i``.

    The global optimum ``a*`` of the convex index maximises its own gradient's linear function
    (convexity: ``g(a) >= g(a*) + grad g(a*) @ (a - a*)``, and ``g(a) <= g(a*)``), so it is a
    fixed point of :func:`ascend`; a single ascent stops at the first fixed point it meets. Here
    each arm ``i`` of the best action is left out of one gradient step (``linear(w, i)`` answers
    the linear query with ``i`` excluded too; ``linear(w, None)`` the query's own), and
    :func:`ascend` continues from that action. Passes repeat around each new best action until a
    pass improves nothing or ``budget`` linear queries are spent. Only a heuristic (values are
    recomputed exactly; the solver's bound proves the answer). Returns the best action, its value
    and the number of linear queries.

    From ``e0`` the gradient step returns ``e0``; without arm 0 it reaches ``e1``, whose ascent goes on to ``e2``:

    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 1), "enumerate")
    >>> M = np.array([[0.01, 0.0, 0.0], [0.0, 0.01, 0.1], [0.0, 0.1, 1.0]])
    >>> q = oracle.norm_query(np.array([0.5, 0.4, 0.0]), M, 1.0)
    >>> linear = lambda w, i: oracle.argmax(w, exclude=() if i is None else (i,))
    >>> start = np.array([True, False, False])
    >>> action, value, calls = ascend_from_neighbours(q, linear, start, q.value(start), 4, 20)
    >>> action.astype(int).tolist(), value
    ([0, 0, 1], 1.0)
    """
    for name, count in (("rounds", rounds), ("budget", budget)):
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {count!r}")
    include = set(query.restrictions.include)
    calls = 0
    seen = {action.tobytes()}
    improved = True
    while improved and calls < budget:
        improved = False
        mx = query.M[:, action].sum(axis=1)
        quad = float(mx[action].sum())
        weights = query.mu + (query.sign * query.f * mx / np.sqrt(quad) if quad > 0.0 else 0.0)
        centre = action
        for i in np.flatnonzero(centre):
            if int(i) in include or calls >= budget:
                continue
            start = linear(weights, int(i))
            calls += 1
            if start is None or start.tobytes() in seen:
                continue
            seen.add(start.tobytes())
            found, found_value, used = ascend(query, lambda w: linear(w, None), start, rounds)
            calls += used
            if found is not None and found_value > value + tolerance(value):
                action, value, improved = found, found_value, True
    return action, value, calls
