"""The ``highs`` backend: the space compiled once, re-solved per query.

A query changes only the arm costs, the arm bounds (``include`` fixes an arm
to 1, ``exclude`` to 0) and temporary rows ``a_i + a_j <= 1`` for
``forbid_pairs``. Lazy cuts from the formulation's separators (subtour
elimination for forests, trees and paths on cyclic graphs) are added until the
answer is feasible; they are valid for every query, so they stay in the model
and are shared by all worker threads.

Each answer is checked: the solution must be integral, obey the restrictions,
and its value recomputed in numpy must match the solver's bound within the
contract's tolerance. Otherwise :class:`~cmab_milp.oracles.base.OracleError`.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
>>> oracle.argmax(np.array([0.3, -0.2, 0.9, 0.4]), exclude=[2]).astype(int)
array([1, 0, 0, 1])
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..spaces.base import ActionSpace
from ..spaces.formulation import Row
from .base import _NO_RESTRICTIONS, LinearQuery, NormQuery, Oracle, OracleError, tolerance
from .cut_pool import CutPool
from .highs_model import CompiledModel

__all__ = ["HighsOracle"]

_MAX_CUT_ROUNDS = 10_000
_INTEGRAL_TOL = 1e-6  # an arm value this close to 0 or 1 counts as integral


class _FractionalAnswer(OracleError):
    """The solver's arm vector is not integral."""


class HighsOracle(Oracle):
    """Exact MILP oracle on HiGHS (``highspy``), built once per thread.

    Parameters
    ----------
    space:
        The action space.
    lp_when_integral:
        Solve as an LP when the formulation is integral (totally unimodular
        structures, DAG paths) and the query has no ``forbid_pairs``: exact
        (simplex returns a vertex, which is integral there) and several times
        cheaper. On by default; should an LP answer ever be fractional, the
        query is re-solved as a MILP. ``False`` always solves the MILP.
    time_limit:
        Seconds per solve; hitting it raises ``OracleError``.
    verify:
        Also check every answer with ``space.contains`` (slower; for tests).
    """

    name = "highs"

    def __init__(
        self,
        space: ActionSpace,
        lp_when_integral: bool = True,
        time_limit: float | None = None,
        verify: bool = False,
    ):
        super().__init__(space)
        self.formulation = space.formulation()
        self.lp_when_integral = bool(lp_when_integral) and self.formulation.integral_lp
        self.time_limit = time_limit
        self.verify = verify
        self.cuts = CutPool()

    # -------------------------------------------------------------- models
    def model(self, integer: bool = True) -> CompiledModel:
        """This thread's compiled model (MILP, or LP when ``integer=False``)."""
        try:
            model = self._local.models[integer]
        except (AttributeError, KeyError):
            model = CompiledModel(self.formulation, integer=integer, time_limit=self.time_limit)
            self._local.__dict__.setdefault("models", {})[integer] = model
        if self.formulation.separators:
            self.cuts.sync(model)
        return model

    def _share_cuts(self, model: CompiledModel, cuts: list[Row]) -> None:
        """Add ``cuts`` to the shared pool and to ``model``, with any cuts other threads added meanwhile."""
        self.cuts.add(cuts)
        self.cuts.sync(model)

    # ------------------------------------------------------------- queries
    # This is the per-query path of every-round algorithms (CUCB solves ~10^5 of these
    # per run): its Python work is kept to a few list operations around the solver call.
    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        res = query.restrictions
        if self.lp_when_integral and not res.forbid_pairs:
            try:
                return self.solve_restricted(self.model(integer=False), res, query)
            except _FractionalAnswer:
                pass  # a degenerate LP optimum off the vertices: fall back to the MILP
        return self.solve_restricted(self.model(integer=True), res, query)

    def solve_restricted(self, model: CompiledModel, res, query: LinearQuery) -> np.ndarray | None:
        """Set costs and restrictions, solve with the cut loop, check and return the action."""
        model.set_costs(query.weights)
        if res.include or res.exclude or not model.arms_free:
            model.set_arm_bounds(res.include, res.exclude)
        first = last = 0
        if res.forbid_pairs:
            first, last = model.add_rows([Row((i, j), (1.0, 1.0), -np.inf, 1.0) for i, j in res.forbid_pairs])
        try:
            for _ in range(_MAX_CUT_ROUNDS):
                result = model.solve()
                if result.status == "infeasible":
                    return None
                chosen = self._chosen_arms(result.values, model.integer)
                if not self.formulation.separators:
                    break
                cuts = self.formulation.violated_rows(np.array(chosen))
                if not cuts:
                    break
                self._share_cuts(model, cuts)
            else:  # pragma: no cover - a separator that never converges is a bug
                raise OracleError("lazy cut loop did not converge")
        finally:
            if last > first:
                model.delete_rows(first, last)
        value, bound = query.value(chosen), result.bound
        if value < bound - tolerance(bound):
            raise OracleError(
                f"HiGHS answer has value {value!r} but the solver's bound is {bound!r}:"
                " optimality not proven within 1e-9 * (1 + |optimum|)"
            )
        action = np.array(chosen)
        if (res is not _NO_RESTRICTIONS and not res.admits(action)) or (
            self.verify and not self.space._contains(action)
        ):
            raise OracleError("HiGHS returned an action that violates the space or the restrictions")
        return action

    def _chosen_arms(self, values: list[float], integer: bool) -> list[bool]:
        """Which arms a solution's column ``values`` choose; raise if they are not integral.

        Plain list operations: between two solver runs they cost a few microseconds where
        numpy calls on short vectors cost tens (the solver evicts numpy from the caches).
        """
        arms = values[: self.d]
        lo, hi = _INTEGRAL_TOL, 1.0 - _INTEGRAL_TOL
        if [v for v in arms if lo < v < hi or not -lo <= v <= 1.0 + lo]:
            kind = "MILP" if integer else "LP (formulation declared integral)"
            raise _FractionalAnswer(f"HiGHS {kind} returned a fractional arm vector")
        return [v > 0.5 for v in arms]

    def _integral_action(self, values: list[float], integer: bool) -> np.ndarray:
        """The bool arm vector of a solution's column ``values``; raise if it is not integral."""
        return np.array(self._chosen_arms(values, integer), dtype=bool)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        from .highs_norm import solve_norm  # the norm index has its own module

        return solve_norm(self, query)

    # ---------------------------------------------------------- inspection
    def write_model(self, path: str | Path) -> Path:
        """Write the compiled MILP (with the cuts found so far) as LP or MPS."""
        return self.model(integer=True).write(path)

    def model_text(self) -> str:
        """The compiled MILP in LP format, for printing."""
        return self.model(integer=True).text()
