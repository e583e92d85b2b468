"""First incumbents of the norm MILP methods: the query's hints, linear-oracle ascents, restarts and swaps.

An incumbent is only a lower bound: a MIP start, and (sign +1) the point where the outer approximation's first
tangent goes, so that when it is the optimum one MILP proves it. Exactness never rests on it. Sign +1's first
incumbent (:func:`first_incumbent_plus`) is the best admitted hint improved by linear-oracle ascent steps
(:func:`~.local_search.ascend`; from the hint and from the gradient step at the uniform point,
``tuning.uniform_start``), restarts of the ascent with each of its arms left out
(:func:`~.local_search.ascend_from_neighbours`, ``tuning.plus_restart_budget``; only where linear queries are LPs)
and swaps (:func:`~.local_search.improve_locally`, ``tuning.plus_local_checks``). Sign -1's
(:func:`first_incumbent_minus`) is the better of the linear argmax and the hints, improved by swaps
(``tuning.minus_local_checks``). Every candidate is checked against the space and the restrictions and valued
exactly in numpy. These options are ``tuning.norm.starts``; each function reads the query's
:class:`~..method.NormContext`.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import NormSolver
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
>>> query = oracle.norm_query(np.array([0.5, 0.0, 0.6, 0.55]), np.diag([1.0, 4.0, 0.25, 0.0]), 1.0)
>>> action, value = first_incumbent_plus(NormSolver(oracle, query))
>>> action.astype(int).tolist()
[1, 1, 0, 0]
"""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np

from ...core.queries import LinearQuery
from ..method import NormContext
from .local_search import ascend, ascend_from_neighbours, improve_locally

__all__ = ["ascend_from_uniform", "best_hint", "cheap_linear", "first_incumbent_minus", "first_incumbent_plus"]

#: Linear-oracle steps of the first incumbent of sign +1 (:func:`~.local_search.ascend`).
_ASCENT_STEPS = 8


def first_incumbent_plus(context: NormContext, light: bool = False) -> tuple[np.ndarray | None, float]:
    """The best hint (or the incumbent a budgeted method carried), improved by linear-oracle ascent steps
    (:func:`~.local_search.ascend`); unless ``light``, also by restarts and swaps (the outer approximation's MILPs
    gain from them; the branch finds its own)."""
    options, stats = context.tuning.norm.starts, context.stats
    best, best_value = best_hint(context, None, -np.inf)
    carried, carried_value = context.carried
    if carried is not None and carried_value > best_value:
        best, best_value = carried.copy(), carried_value

    def linear(weights: np.ndarray) -> np.ndarray | None:
        return context.oracle.solve_linear(LinearQuery(weights, context.res))

    action, value, calls = ascend(context.query, linear, best, _ASCENT_STEPS)
    stats.milp_solves += calls
    stats.extra["ascent_steps"] = calls
    if action is not None and value > best_value:
        best, best_value = action, value
    if light:
        return best, best_value
    if best is not None and options.uniform and cheap_linear(context):
        action, value = ascend_from_uniform(context)
        if value > best_value:
            best, best_value = action, value
    restarts = options.plus_restarts
    if best is not None and restarts and cheap_linear(context):
        best, best_value, calls = ascend_from_neighbours(
            context.query, partial(_linear_without, context), best, best_value, _ASCENT_STEPS, restarts
        )
        stats.milp_solves += calls
        stats.extra["restart_steps"] = calls
    if best is not None and options.plus_local_checks:
        best, best_value, checks = improve_locally(
            context.query,
            context.arms,
            context.oracle.space._contains,
            best,
            best_value,
            options.plus_local_checks,
            context.m,
        )
        stats.extra["local_checks"] = checks
    return best, best_value


def ascend_from_uniform(context: NormContext) -> tuple[np.ndarray | None, float]:
    """:func:`~.local_search.ascend` from the gradient step at the uniform point ``x_i = m / (free arms)``.

    A second start, away from the hint's basin: on later crew queries the optimum often shares
    no arm with the hint's ascent. Returns the action and its value (``None``, ``-inf`` when it finds none).
    """
    q = context.query
    x = np.zeros(context.d)
    x[context.arms] = min(1.0, context.m / max(len(context.arms), 1))
    mx = q.M @ x
    quad = float(x @ mx)
    if quad <= 0.0:
        return None, -np.inf
    start = _linear_without(context, q.mu + q.f * mx / np.sqrt(quad), None)
    context.stats.milp_solves += 1
    if start is None:
        return None, -np.inf
    action, value, calls = ascend(q, lambda w: _linear_without(context, w, None), start, _ASCENT_STEPS)
    context.stats.milp_solves += calls
    context.stats.extra["uniform_steps"] = calls + 1
    return action, value


def cheap_linear(context: NormContext) -> bool:
    """Whether the space's linear queries are LPs (an integral polytope, no lazy rows): restarts pay off there."""
    oracle = context.oracle
    return bool(getattr(oracle, "lp_when_integral", False)) and not oracle.formulation.separators


def _linear_without(context: NormContext, weights: np.ndarray, arm: int | None) -> np.ndarray | None:
    """The linear argmax of ``weights`` under the query's restrictions, ``arm`` excluded too (unless None)."""
    res = context.res if arm is None else dataclasses.replace(context.res, exclude=(*context.res.exclude, arm))
    return context.oracle.solve_linear(LinearQuery(weights, res))


def best_hint(context: NormContext, best: np.ndarray | None, best_value: float) -> tuple[np.ndarray | None, float]:
    """The better of ``best`` and the query's hints that are actions admitted by the restrictions."""
    res, query = context.res, context.query
    for hint in query.hints:
        if (res.empty or res.admits(hint)) and context.oracle.space._contains(hint):
            value = query.value(hint)
            if value > best_value:
                best, best_value = hint.copy(), value
    return best, best_value


def first_incumbent_minus(context: NormContext, action: np.ndarray, value: float) -> tuple[np.ndarray, float]:
    """Sign -1's first incumbent: the better of ``action`` and the hints, improved by
    :func:`~.local_search.improve_locally`."""
    action, value = best_hint(context, action, value)
    feasible, budget = context.oracle.space._contains, context.tuning.norm.starts.minus_local_checks
    action, value, checks = improve_locally(context.query, context.arms, feasible, action, value, budget)
    context.stats.extra["local_checks"] = checks
    return action, value
