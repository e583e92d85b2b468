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
from .base import LinearQuery, NormQuery, Oracle, OracleError, tolerance
from .cut_pool import CutPool
from .highs_model import CompiledModel

__all__ = ["HighsOracle"]

_MAX_CUT_ROUNDS = 10_000


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
        models = self._local.__dict__.setdefault("models", {})
        model = models.get(integer)
        if model is None:
            model = CompiledModel(self.formulation, integer=integer, time_limit=self.time_limit)
            models[integer] = model
        self.cuts.sync(model)
        return model

    def _share_cuts(self, model: CompiledModel, cuts: list[Row]) -> None:
        """Add ``cuts`` to the shared pool and to ``model``, with any cuts other threads added meanwhile."""
        self.cuts.add(cuts)
        self.cuts.sync(model)

    # ------------------------------------------------------------- queries
    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        res = query.restrictions
        if self.lp_when_integral and not res.forbid_pairs:
            model = self.model(integer=False)
            model.set_costs(query.weights)
            try:
                return self.solve_restricted(model, res, query)
            except _FractionalAnswer:
                pass  # a degenerate LP optimum off the vertices: fall back to the MILP
        model = self.model(integer=True)
        model.set_costs(query.weights)
        return self.solve_restricted(model, res, query)

    def solve_restricted(self, model: CompiledModel, res, query: LinearQuery | NormQuery) -> np.ndarray | None:
        """Apply restrictions, solve with the cut loop, check and return the action."""
        model.set_arm_bounds(res.include, res.exclude)
        pair_rows = [Row((i, j), (1.0, 1.0), -np.inf, 1.0) for i, j in res.forbid_pairs]
        first, last = model.add_rows(pair_rows)
        try:
            for _ in range(_MAX_CUT_ROUNDS):
                result = model.solve()
                if result.status == "infeasible":
                    return None
                action = self._integral_action(result.x, model.integer)
                if not self.formulation.separators:
                    break
                cuts = self.formulation.violated_rows(action)
                if not cuts:
                    break
                self._share_cuts(model, cuts)
            else:  # pragma: no cover - a separator that never converges is a bug
                raise OracleError("lazy cut loop did not converge")
        finally:
            model.delete_rows(first, last)
        if isinstance(query, LinearQuery):
            self._check_value(query, action, result.bound)
        if (not res.empty and not res.admits(action)) or (self.verify and not self.space._contains(action)):
            raise OracleError("HiGHS returned an action that violates the space or the restrictions")
        return action

    def _integral_action(self, x: np.ndarray, integer: bool) -> np.ndarray:
        arms = x[: self.d]
        if self.d <= 64:  # plain Python beats several small numpy calls on the per-query path
            values = arms.tolist()
            bits = [v > 0.5 for v in values]
            fractional = any(abs(v - b) > 1e-6 for v, b in zip(values, bits, strict=True))
            action = np.array(bits, dtype=bool)
        else:
            rounded = np.rint(arms)
            action = rounded > 0.5
            fractional = bool(np.abs(arms - rounded).max() > 1e-6)
        if fractional:
            kind = "MILP" if integer else "LP (formulation declared integral)"
            raise _FractionalAnswer(f"HiGHS {kind} returned a fractional arm vector")
        return action

    @staticmethod
    def _check_value(query: LinearQuery, action: np.ndarray, bound: float) -> None:
        value = query.value(action)
        if value < bound - tolerance(bound):
            raise OracleError(
                f"HiGHS answer has value {value!r} but the solver's bound is {bound!r}:"
                " optimality not proven within 1e-9 * (1 + |optimum|)"
            )

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
