"""First incumbents of the norm MILP methods: the query's hints, linear-oracle ascents, restarts and swaps.

An incumbent is only a lower bound: a MIP start, and (sign +1) the point where the outer approximation's first
tangent goes, so that when it is the optimum one MILP proves it. Exactness never rests on it. Sign +1's first
incumbent (:meth:`FirstIncumbents._first_incumbent_plus`) is the best admitted hint improved by linear-oracle
ascent steps (:func:`~.local_search.ascend`; from the hint and from the gradient step at the uniform point,
``tuning.uniform_start``), restarts of the ascent with each of its arms left out
(:func:`~.local_search.ascend_from_neighbours`, ``tuning.plus_restart_budget``; only where linear queries are LPs)
and swaps (:func:`~.local_search.improve_locally`, ``tuning.plus_local_checks``). Sign -1's is the better of the
linear argmax and the hints, improved by swaps (``tuning.minus_local_checks``). Every candidate is checked
against the space and the restrictions and valued exactly in numpy.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import NormSolver
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
>>> query = oracle.norm_query(np.array([0.5, 0.0, 0.6, 0.55]), np.diag([1.0, 4.0, 0.25, 0.0]), 1.0)
>>> action, value = NormSolver(oracle, query)._first_incumbent_plus()
>>> action.astype(int).tolist()
[1, 1, 0, 0]
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...core.queries import LinearQuery
from .local_search import ascend, ascend_from_neighbours, improve_locally

__all__ = ["FirstIncumbents"]

#: Linear-oracle steps of the first incumbent of sign +1 (:func:`~.local_search.ascend`).
_ASCENT_STEPS = 8


class FirstIncumbents:
    """The first-incumbent steps of :class:`~.solver.NormSolver` (a mixin: they read the solver's query,
    restrictions, oracle, tuning and statistics)."""

    def _first_incumbent_plus(self, light: bool = False) -> tuple[np.ndarray | None, float]:
        """The best hint, improved by linear-oracle ascent steps (:func:`~.local_search.ascend`); unless ``light``,
        also by restarts and swaps (the outer approximation's MILPs gain from them; the branch finds its own)."""
        best, best_value = self._best_hint(None, -np.inf)
        carried, carried_value = self._carried
        if carried is not None and carried_value > best_value:
            best, best_value = carried.copy(), carried_value

        def linear(weights: np.ndarray) -> np.ndarray | None:
            return self.oracle.solve_linear(LinearQuery(weights, self.res))

        action, value, calls = ascend(self.query, linear, best, _ASCENT_STEPS)
        self.stats.milp_solves += calls
        self.stats.extra["ascent_steps"] = calls
        if action is not None and value > best_value:
            best, best_value = action, value
        if light:
            return best, best_value
        if best is not None and self.tuning.uniform_start and self._cheap_linear():
            action, value = self._ascend_from_uniform()
            if value > best_value:
                best, best_value = action, value
        restarts = self.tuning.plus_restart_budget
        if best is not None and restarts and self._cheap_linear():
            best, best_value, calls = ascend_from_neighbours(
                self.query, self._linear_without, best, best_value, _ASCENT_STEPS, restarts
            )
            self.stats.milp_solves += calls
            self.stats.extra["restart_steps"] = calls
        if best is not None and self.tuning.plus_local_checks:
            best, best_value, checks = improve_locally(
                self.query,
                self.arms,
                self.oracle.space._contains,
                best,
                best_value,
                self.tuning.plus_local_checks,
                self.m,
            )
            self.stats.extra["local_checks"] = checks
        return best, best_value

    def _ascend_from_uniform(self) -> tuple[np.ndarray | None, float]:
        """:func:`~.local_search.ascend` from the gradient step at the uniform point ``x_i = m / (free arms)``.

        A second start, away from the hint's basin: on later crew queries the optimum often shares
        no arm with the hint's ascent. Returns the action and its value (``None``, ``-inf`` when it finds none).
        """
        q = self.query
        x = np.zeros(self.d)
        x[self.arms] = min(1.0, self.m / max(len(self.arms), 1))
        mx = q.M @ x
        quad = float(x @ mx)
        if quad <= 0.0:
            return None, -np.inf
        start = self._linear_without(q.mu + q.f * mx / np.sqrt(quad), None)
        self.stats.milp_solves += 1
        if start is None:
            return None, -np.inf
        action, value, calls = ascend(q, lambda w: self._linear_without(w, None), start, _ASCENT_STEPS)
        self.stats.milp_solves += calls
        self.stats.extra["uniform_steps"] = calls + 1
        return action, value

    def _cheap_linear(self) -> bool:
        """Whether the space's linear queries are LPs (an integral polytope, no lazy rows): restarts pay off there."""
        oracle = self.oracle
        return bool(getattr(oracle, "lp_when_integral", False)) and not oracle.formulation.separators

    def _linear_without(self, weights: np.ndarray, arm: int | None) -> np.ndarray | None:
        """The linear argmax of ``weights`` under the query's restrictions, ``arm`` excluded too (unless None)."""
        res = self.res if arm is None else dataclasses.replace(self.res, exclude=(*self.res.exclude, arm))
        return self.oracle.solve_linear(LinearQuery(weights, res))

    def _best_hint(self, best: np.ndarray | None, best_value: float) -> tuple[np.ndarray | None, float]:
        """The better of ``best`` and the query's hints that are actions admitted by the restrictions."""
        for hint in self.query.hints:
            if (self.res.empty or self.res.admits(hint)) and self.oracle.space._contains(hint):
                value = self.query.value(hint)
                if value > best_value:
                    best, best_value = hint.copy(), value
        return best, best_value

    def _improve_locally(self, action: np.ndarray, value: float) -> tuple[np.ndarray, float]:
        """The first incumbent: ``action`` improved by :func:`~.local_search.improve_locally`."""
        feasible, budget = self.oracle.space._contains, self.tuning.minus_local_checks
        action, value, checks = improve_locally(self.query, self.arms, feasible, action, value, budget)
        self.stats.extra["local_checks"] = checks
        return action, value
