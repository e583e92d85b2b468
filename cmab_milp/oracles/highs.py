"""The ``highs`` backend: the space compiled once, re-solved per query.

A query changes only the arm costs, the arm bounds (``include`` fixes an arm
to 1, ``exclude`` to 0) and temporary rows ``a_i + a_j <= 1`` for
``forbid_pairs``. Lazy cuts from the formulation's separators (subtour
elimination for forests, trees and paths on cyclic graphs) are added until the
answer is feasible, and removed with the query's other rows when it is
answered.

Tie rule: the answer depends on the query and the space only. Every query
starts from the formulation's rows (the cuts of earlier queries are not kept:
a pool shared by all queries made the answer depend on the history, and on the
measured families it also made solves slower: 21 ms against 4.3 ms a query on
6x6-grid spanning trees), a MILP is solved from a cold start, and an LP is
re-solved from a cold start whenever its optimum may be tied (see
:meth:`~cmab_milp.oracles.highs_model.CompiledModel.solve`). Among tied optima
the answer is thus the one HiGHS reaches from a cold start: the same from a
fresh oracle or one with a long history, on any thread and with any number of
workers. (Other backends break ties their own way; their answers agree in value
only.)

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

import math
from pathlib import Path

import numpy as np

from ..spaces.base import ActionSpace
from ..spaces.formulation import Row
from .base import _NO_RESTRICTIONS, LinearQuery, NormQuery, Oracle, OracleError, check_time_limit, tolerance
from .highs_model import CompiledModel, LimitReached

__all__ = ["RECOVERY_ENUMERATION", "HighsOracle"]

_MAX_CUT_ROUNDS = 10_000
_INTEGRAL_TOL = 1e-6  # an arm value this close to 0 or 1 counts as integral
#: A reduced cost within ``_TIE_TOL * (1 + max|w|)`` of zero counts as a possible tie (LP path).
_TIE_TOL = 1e-7
#: Costs are solved as given when their largest magnitude is in this range, else rescaled.
_SCALE_LO, _SCALE_HI = 2.0**-16, 2.0**16
#: Largest space that a failed norm query is answered on by enumeration (the last recovery).
RECOVERY_ENUMERATION = 200_000


def _max_abs(query: LinearQuery) -> float:
    listed = query.weights_list
    if listed is not None:
        return max(max(listed, default=0.0), -min(listed, default=0.0))
    return float(np.abs(query.weights).max(initial=0.0))


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
        Seconds per solve, a positive finite number (``None``: no limit); hitting
        it raises ``OracleError``.
    verify:
        Also check every answer with ``space.contains`` (slower; for tests).
    """

    name = "highs"
    #: Tighten MILPs with the formulation's fractional separators before branching (:mod:`.root_cuts`).
    root_cuts = True

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
        self.time_limit = check_time_limit(time_limit)
        self.verify = verify
        #: How often each recovery answered a norm query whose first solve failed.
        self.norm_recoveries: dict[str, int] = {}

    # -------------------------------------------------------------- models
    def model(self, integer: bool = True) -> CompiledModel:
        """This thread's compiled model (MILP, or LP when ``integer=False``): the formulation's rows only."""
        try:
            return self._local.models[integer]
        except (AttributeError, KeyError):
            model = CompiledModel(self.formulation, integer=integer, time_limit=self.time_limit)
            self._local.__dict__.setdefault("models", {})[integer] = model
            return model

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
        top = _max_abs(query)
        shift = 0
        if not _SCALE_LO <= top <= _SCALE_HI and top > 0.0:
            # HiGHS proved wrong optima with costs ~1e17 (and treats 1e20 as infinite): solve
            # with the costs times 2^-shift, which changes no tie and scales values exactly
            shift = math.frexp(top)[1]
            top = math.ldexp(top, -shift)
        model.set_costs(query.weights if shift == 0 else np.ldexp(query.weights, -shift))
        if res.include or res.exclude or not model.arms_free:
            model.set_arm_bounds(res.include, res.exclude)
        first = model.base_rows
        if res.forbid_pairs:
            model.add_rows([Row((i, j), (1.0, 1.0), -np.inf, 1.0) for i, j in res.forbid_pairs])
        tie_tol = None if model.integer else _TIE_TOL * (1.0 + top)
        try:
            # --- root cuts (issue 12): query-scoped rows, removed below with the query's others ---
            if model.integer and self.root_cuts and self.formulation.fractional_separators:
                from .root_cuts import add_root_cuts

                add_root_cuts(model, self.formulation)
            # --- end root cuts ---
            for _ in range(_MAX_CUT_ROUNDS):
                result = model.solve(tie_tol=tie_tol)
                if result.status == "infeasible":
                    return None
                chosen = self.chosen_arms(result.values, model.integer)
                if not self.formulation.separators:
                    break
                cuts = self.formulation.violated_rows(np.array(chosen))
                if not cuts:
                    break
                model.add_rows(cuts)  # valid for every query, but kept for this one only (the tie rule)
            else:  # pragma: no cover - a separator that never converges is a bug
                raise OracleError("lazy cut loop did not converge")
        finally:
            if model.num_rows > first:
                model.delete_rows(first, model.num_rows)
        value, bound = query.value(chosen), result.bound if shift == 0 else math.ldexp(result.bound, shift)
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

    def chosen_arms(self, values: list[float], integer: bool) -> list[bool]:
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

    _chosen_arms = chosen_arms  # the former name

    def integral_action(self, values: list[float], integer: bool) -> np.ndarray:
        """The bool arm vector of a solution's column ``values``; raise if it is not integral."""
        return np.array(self.chosen_arms(values, integer), dtype=bool)

    _integral_action = integral_action  # the former name

    def solve_linear(self, query: LinearQuery) -> np.ndarray | None:
        """Answer a linear query without counting it (the norm index's linear sub-queries)."""
        return self._linear(query)

    # ------------------------------------------------------------ norm queries
    def norm_model(self) -> CompiledModel:
        """This thread's norm model: the formulation's MILP, to which each norm query
        appends its own columns and rows and removes them after it."""
        model = self._local.__dict__.get("norm_model")
        if model is None:
            model = CompiledModel(self.formulation, integer=True, time_limit=self.time_limit)
            self._local.norm_model = model
        return model

    @property
    def last_norm_stats(self):  # -> NormStats | None
        """What the last norm query answered on the calling thread cost (:class:`~.norm.NormStats`)."""
        return self._local.__dict__.get("norm_stats")

    @last_norm_stats.setter
    def last_norm_stats(self, stats) -> None:
        self._local.norm_stats = stats

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        from .highs_norm import solve_norm  # the norm package, through the module tests may patch

        try:
            return solve_norm(self, query)
        except LimitReached:
            raise
        except OracleError as exc:
            return self._recover_norm(query, exc)

    def _recover_norm(self, query: NormQuery, error: OracleError) -> np.ndarray | None:
        """Answer a norm query whose solve failed (a HiGHS error status, an unproven bound), or raise.

        In turn: the same solve on new models of this thread (a cold restart), the
        query with every value times ``2^-3`` and ``2^3`` (exact; HiGHS sees other
        numbers), then enumeration when the space has at most
        :data:`RECOVERY_ENUMERATION` actions. Each step is deterministic, so the
        tie rule holds; ``norm_recoveries`` counts the steps that answered.
        """
        from .enumerate import EnumerateOracle
        from .highs_norm import solve_norm

        failures = [f"solve: {error}"]
        attempts: list[tuple[str, NormQuery]] = [("cold restart", query)]
        for k in (-3, 3):
            c = 2.0**k
            attempts.append(
                (f"values times 2^{k}", NormQuery(query.mu * c, query.M, query.f * c, query.sign, query.restrictions))
            )
        for name, attempt in attempts:
            self._local.__dict__.pop("norm_model", None)
            self._local.__dict__.pop("models", None)
            try:
                answer = solve_norm(self, attempt)
            except LimitReached:
                raise
            except OracleError as exc:
                failures.append(f"{name}: {exc}")
                continue
            self.norm_recoveries[name] = self.norm_recoveries.get(name, 0) + 1
            return answer
        try:
            enumeration = EnumerateOracle(self.space, max_actions=RECOVERY_ENUMERATION)
        except ValueError:
            failures.append(f"enumeration: more than {RECOVERY_ENUMERATION} actions")
        else:
            self.norm_recoveries["enumeration"] = self.norm_recoveries.get("enumeration", 0) + 1
            return enumeration._norm(query)
        raise OracleError("HiGHS could not answer the norm query; " + "; ".join(failures))

    # ---------------------------------------------------------- inspection
    def write_model(self, path: str | Path) -> Path:
        """Write the compiled MILP (the formulation's rows, no query's cuts) as LP or MPS."""
        return self.model(integer=True).write(path)

    def model_text(self) -> str:
        """The compiled MILP in LP format, for printing."""
        return self.model(integer=True).text()
