"""The covariance-norm index ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` on HiGHS.

:func:`solve_norm` answers a :class:`~cmab_milp.oracles.base.NormQuery` exactly
with a short sequence of MILPs on one HiGHS instance per thread (the space's
formulation, compiled once; each query appends its own columns and rows and
removes them afterwards). Two methods, one per sign:

``sign=+1`` (outer approximation in the quadratic form)
    Products ``w_ij = a_i a_j`` (pairs with ``M_ij != 0``) are linearised on
    the side the objective pushes against (``w <= a_i, w <= a_j`` where
    ``M_ij > 0``, ``w >= a_i + a_j - 1`` where ``M_ij < 0``) plus the valid
    rows ``sum_j w_ij <= (m - 1) a_i`` (``m``: most arms in an action); so the
    model's ``L`` never exceeds the true ``a @ M @ a`` and can reach it. A column ``s``
    (cost 1, standing for ``f sqrt(L)``) is capped by tangents ``s <= f (r/2 + L/(2r))``
    of the concave ``f sqrt``; each incumbent adds the tangent at its true ``L`` until
    the MILP's bound meets the best true value. ``sqrt`` has an infinite slope
    at 0, so the model is restricted to ``L >= delta`` (``delta`` a small
    fraction of the largest ``L``); actions with ``L < delta`` are worth at most
    ``mu @ a + f sqrt(delta)`` and are covered by the linear argmax and, when
    that bound is not already beaten, by listing the best actions by ``mu @ a``
    with no-good cuts.

``sign=-1`` (piecewise secants over ``L``, one MILP tree)
    Glover's linearisation (``z_i`` for ``a_i sum_{j != i} M_ij a_j``, two rows per
    arm; see :meth:`_Lifted.glover`) lets the model's ``L`` reach ``a @ M @ a`` and
    never go below it on binary actions. ``-sqrt(max(L, 0))`` is linear on ``L <= 0``
    and convex on ``L >= 0``, so between breakpoints (``0`` among them) its secants
    lie above it: an incremental piecewise-linear block (a binary per breakpoint)
    values every ``L`` of the window at the secant of its piece, and the MILP's bound
    is an upper bound on the index of every action whose ``L`` is in the window (an
    action may enter with an ``L`` inflated past its own, which only lowers its
    secant value); the true value of its answer is a lower bound. HiGHS explores the
    pieces in one tree, pruning all of them against the incumbent (a separate MILP
    per interval solved each to optimality took 5x longer). The window
    ``[min(l_lo, 0), hi)`` holds every action that beats the incumbent ``v``: such an
    action has ``f sqrt(L) < mu @ a - v <= top - v`` with ``top`` the linear
    optimum), so ``L < ((top - v) / f)^2`` (:func:`window_top`), usually half the
    range of :func:`quadratic_form_bounds`. The first incumbent is the linear argmax
    improved by a local search (swaps of one or two arms, each checked against the
    space and the restrictions); its ``L`` is a breakpoint from the start, so when it
    is the optimum (61 of 64 bench queries at d=40) one MILP proves it.
    While the bound is unproven, the answer's ``L`` becomes a breakpoint (the
    secants are then exact there), or, when the incumbent improved, the window
    shrinks and the secants are rebuilt with every ``L`` seen as a breakpoint. With
    ``t`` the smallest eigenvalue of ``M``, ``a @ M @ a = a @ (M - t I) @ a + t sum(a)``
    on binary ``a`` and the first term is convex, so its tangents, separated at the
    LP relaxation's points before the first MILP, are valid cuts ``L >= ...`` that
    tighten the bound where ``a`` is fractional.

Solver noise
    HiGHS holds rows to ``1e-9``, so a bound can exceed the best value by the
    slack of a row times its dual. With ``f`` folded into the tangent rows, a
    tangent's slack moves the objective by at most ``1e-9`` instead of
    ``f * 1e-9`` (the ``sqrt`` coefficient of ``s`` once put a recorded OLS-UCB-C query,
    ``f ~ 7``, ``6e-9`` above its optimum, past the ``5.4e-9`` tolerance). Other slacks
    remain (the row defining ``L`` is multiplied by the slope of ``f sqrt``), so when
    the model already values the MILP's answer at its true index (sign +1: its
    tangent is in the model; sign -1: the secants are exact at its ``L`` within
    the tolerance) and the bound is still unproven, no more cuts can help: the
    answer is set aside by a no-good row and the MILP solved again (sign -1 also sets
    aside an answer whose ``L`` cannot become a breakpoint). This keeps
    the answer exact: the incumbent is at least the true value of every action set
    aside (each was evaluated in numpy), and the MILP's bound covers the others,
    so the returned bound is ``max(incumbent, bound over the rest)``; every step
    adds a tangent, a breakpoint, a no-good or a better incumbent, so the loop cannot stall.

The answer's value is recomputed in numpy and must be within
``1e-9 * (1 + |value|)`` of the proven upper bound; otherwise
:class:`~cmab_milp.oracles.base.OracleError`.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
>>> M = np.diag([1.0, 4.0, 0.25, 0.0])
>>> oracle.argmax_norm(np.array([0.5, 0.0, 0.6, 0.55]), M, 1.0).astype(int)
array([1, 1, 0, 0])
>>> oracle.argmax_norm(np.array([0.5, 0.0, 0.6, 0.55]), M, 1.0, sign=-1).astype(int)
array([0, 0, 1, 1])
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from .base import LinearQuery, NormQuery, OracleError, tolerance
from .highs_model import CompiledModel, SolveResult

__all__ = ["NormStats", "last_stats", "proven", "quadratic_form_bounds", "solve_norm"]

#: Lazy-cut rounds per MILP solve before giving up (a separator bug otherwise).
_MAX_CUT_ROUNDS = 10_000
#: Outer-approximation iterations before the query is declared unproven.
_MAX_OA_ITERATIONS = 200
#: MILP solves of the piecewise-secant method (sign -1) before the query is declared unproven.
_MAX_SECANT_SOLVES = 500
#: No-good enumerations near ``L = 0`` (sign +1) before giving up.
_MAX_NO_GOODS = 500
#: LP-relaxation rounds of convex-reformulation cuts on ``L`` before the first secant MILP,
#: at most one per free arm (d=40: the slowest query 0.8 s with 30 rounds, 1.3 s with none;
#: d=10: 30 rounds cost 12 ms of 36).
#: (The upper-bound cuts, ``side=+1``, never cut the sign +1 relaxation in measurements,
#: so it does not use them.)
_CONVEX_ROUNDS = 30
#: Initial secant pieces (sign -1), even in ``sqrt(L)``; 8 and 24 were slower at d=40.
_SECANT_PIECES = 16
#: Breakpoints closer than this (relative to the window) are merged.
_MIN_PIECE = 1e-9
#: Steepest objective slope ``f / sqrt(p)`` of a first secant ``[0, p]`` (sign -1): a steeper one
#: multiplies HiGHS's row tolerance (1e-9) into the objective.
_MAX_SLOPE = 1e4
#: Feasibility checks of the local search that improves the first incumbent (sign -1).
_LOCAL_CHECKS = 200
#: HiGHS options during the sign -1 solves: the MIP start already gives the incumbent and
#: the sub-MIP heuristics took most of the time (2-3x at d=40). Restarts stay on: with
#: ``mip_allow_restart=False`` HiGHS 1.16 reported 'Optimal' with a bound below a feasible
#: action (paths on a 3x3 grid, M ~ 1e6, f = 1e4; test_norm's badly scaled cases).
_SECANT_OPTIONS: dict[str, object] = {
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}
#: ``delta``, the smallest ``L`` handled by tangents, as a fraction of the largest ``L``.
_DELTA_FRACTION = 1e-6


@dataclass
class NormStats:
    """What the last query on this thread cost: MILP solves and the method used."""

    method: str = ""
    milp_solves: int = 0
    extra: dict = field(default_factory=dict)


def solve_norm(oracle, query: NormQuery) -> np.ndarray | None:
    """Exact answer to ``query`` on a :class:`~cmab_milp.oracles.highs.HighsOracle`.

    Returns the best action (bool array) or ``None`` when no action qualifies;
    raises :class:`OracleError` when optimality cannot be proven.

    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "highs")
    >>> solve_norm(oracle, oracle.norm_query(np.zeros(3), np.eye(3), 1.0)).sum()
    np.int64(2)
    """
    solver = _NormSolver(oracle, query)
    answer, bound = solver.run()
    bound *= solver.value_scale  # back to the query's units (a power of 2: exact)
    _record_stats(oracle, solver.stats)
    if answer is None:
        return None
    res = query.restrictions
    if (not res.empty and not res.admits(answer)) or (oracle.verify and not oracle.space._contains(answer)):
        raise OracleError("HiGHS norm answer violates the space or the restrictions")
    value = query.value(answer)
    if not proven(bound, value):
        raise OracleError(
            f"HiGHS norm answer has value {value!r} but the proven bound is {bound!r}:"
            " optimality not proven within 1e-9 * (1 + |optimum|)"
        )
    return answer


def proven(bound: float, value: float, unit: float = 1.0) -> bool:
    """Whether ``value`` is within the contract's tolerance of the upper ``bound``.

    The bound comes from HiGHS, whose rows hold to ``1e-9``: the same test
    closes every loop here and checks the final answer. For a query whose values
    were divided by ``s`` (:func:`_unit_objective`), ``unit=1/s`` gives the
    tolerance of the original values, ``1e-9 * (1 + s |bound|) / s``.

    >>> proven(1.0 + 1e-9, 1.0), proven(1.0 + 1e-8, 1.0)
    (True, False)
    >>> proven(2.0 + 2.5e-9, 2.0), proven(2.0 + 2.5e-9, 2.0, unit=1e-3)
    (True, False)
    """
    return value >= bound - (tolerance(bound) if unit == 1.0 else 1e-9 * (unit + abs(bound)))


def last_stats(oracle) -> NormStats | None:
    """Statistics of the last norm query answered on the calling thread."""
    return getattr(oracle._local, "norm_stats", None)


def _record_stats(oracle, stats: NormStats) -> None:
    oracle._local.norm_stats = stats


# ---------------------------------------------------------------------- bounds
def quadratic_form_bounds(M: np.ndarray, m: int, arms: np.ndarray) -> tuple[float, float]:
    """Cheap bounds ``(lo, hi)`` on ``a @ M @ a`` over sets of at most ``m`` of ``arms``.

    For a set ``S``, ``a @ M @ a = sum_{i in S} (M_ii + sum_{j in S, j != i} M_ij)``;
    each term is bounded by the row's diagonal plus its ``m - 1`` largest (smallest)
    off-diagonal entries, and the sum by the ``m`` largest (smallest) such terms.

    >>> quadratic_form_bounds(np.array([[1.0, -2.0], [-2.0, 1.0]]), 2, np.arange(2))
    (-2.0, 2.0)
    """
    sub = M[np.ix_(arms, arms)]
    k = len(arms)
    if k == 0 or m == 0:
        return 0.0, 0.0
    off = sub - np.diag(np.diag(sub))
    take = min(m - 1, k - 1)
    ordered = np.sort(off, axis=1)  # ascending; the diagonal zero sits among them
    top = np.clip(ordered[:, ::-1][:, :take], 0.0, None).sum(axis=1) if take else np.zeros(k)
    bottom = np.clip(ordered[:, :take], None, 0.0).sum(axis=1) if take else np.zeros(k)
    high = np.sort(np.diag(sub) + top)[::-1][:m]
    low = np.sort(np.diag(sub) + bottom)[:m]
    return float(np.clip(low, None, 0.0).sum()), float(np.clip(high, 0.0, None).sum())


# ---------------------------------------------------------------------- solver
class _NormSolver:
    """One query: the thread's norm model with this query's columns and rows appended."""

    def __init__(self, oracle, query: NormQuery):
        self.oracle = oracle
        self.query = _unit_scale(query)
        self.value_scale = 1.0
        if query.sign > 0:
            self.query, self.value_scale = _unit_objective(self.query)
        query = self.query
        self.res = query.restrictions
        self.d = oracle.d
        self.stats = NormStats()
        free = np.ones(self.d, bool)
        free[list(self.res.exclude)] = False
        self.arms = np.flatnonzero(free)
        self.l_lo, self.l_hi = quadratic_form_bounds(query.M, oracle.space.m, self.arms)

    # ------------------------------------------------------------ dispatch
    def run(self) -> tuple[np.ndarray | None, float]:
        q = self.query
        if self.l_hi <= 0.0:  # the sqrt term vanishes on every action
            self.stats.method = "linear"
            return self._linear_only()
        model = _thread_model(self.oracle)
        n_cols, n_rows = model.h.getNumCol(), model.h.getNumRow()
        model.h.clearSolver()  # the tie rule: nothing of earlier queries (basis, solution) carries over
        try:
            model.set_arm_bounds(self.res.include, self.res.exclude)
            model.set_costs(q.mu)
            self._add_forbid_rows(model)
            if q.sign > 0:
                self.stats.method = "oa-quadratic-form"
                return self._maximise_plus(model)
            self.stats.method = "secants-quadratic-form"
            saved = {key: model.h.getOptionValue(key)[1] for key in _SECANT_OPTIONS}
            try:
                for key, value in _SECANT_OPTIONS.items():
                    model.h.setOptionValue(key, value)
                return self._maximise_minus(model)
            finally:
                for key, value in saved.items():
                    model.h.setOptionValue(key, value)
        finally:
            self._clear(model, n_cols, n_rows)

    def _clear(self, model: CompiledModel, n_cols: int, n_rows: int) -> None:
        h = model.h
        if h.getNumRow() > n_rows:
            rows = np.arange(n_rows, h.getNumRow(), dtype=np.int32)
            h.deleteRows(len(rows), rows)
        if h.getNumCol() > n_cols:
            cols = np.arange(n_cols, h.getNumCol(), dtype=np.int32)
            h.deleteCols(len(cols), cols)

    def _linear_only(self) -> tuple[np.ndarray | None, float]:
        action = self._linear_argmax()
        if action is None:
            return None, -np.inf
        return action, self.query.value(action)

    def _linear_argmax(self) -> np.ndarray | None:
        self.stats.milp_solves += 1
        return self.oracle._linear(LinearQuery(self.query.mu, self.res))

    # ------------------------------------------------------------ solving
    def _solve(self, model: CompiledModel, start: np.ndarray | None = None) -> tuple[np.ndarray, SolveResult] | None:
        """One MILP with the lazy-cut loop: a feasible action and the result, or None.

        ``start`` (an action) is passed to HiGHS as a partial MIP start on the
        arm columns; HiGHS completes it when it fits the current model.
        """
        oracle = self.oracle
        for _ in range(_MAX_CUT_ROUNDS):
            self.stats.milp_solves += 1
            if start is not None:
                model.h.setSolution(self.d, model.arm_idx, start.astype(float))
            result = model.solve(cold=False)  # the query started cold: its own history is deterministic
            if result.status == "infeasible":
                return None
            action = oracle._integral_action(result.values, True)
            if not oracle.formulation.separators:
                return action, result
            cuts = oracle.formulation.violated_rows(action)
            if not cuts:
                return action, result
            model.add_rows(cuts)  # this query's only: removed by _clear (the tie rule)
        raise OracleError("lazy cut loop did not converge")  # pragma: no cover

    def _add_forbid_rows(self, model: CompiledModel) -> None:
        pairs = self.res.forbid_pairs
        if pairs:
            idx = np.asarray(pairs, np.int32).ravel()
            _add_rows(model, np.full(len(pairs), -np.inf), np.ones(len(pairs)), idx, np.ones(len(idx)), 2)

    def quadratic_form(self, action: np.ndarray) -> float:
        idx = np.flatnonzero(action)
        return float(self.query.M[np.ix_(idx, idx)].sum())

    # --------------------------------------------------------- sign = +1
    def _maximise_plus(self, model: CompiledModel) -> tuple[np.ndarray | None, float]:
        q = self.query
        delta = _DELTA_FRACTION * self.l_hi
        lift = _Lifted.pairs(model, self, l_bounds=(delta, self.l_hi))
        h = model.h
        root_hi = np.sqrt(self.l_hi)
        h.changeColBounds(lift.s, 0.0, q.f * root_hi)
        h.changeColCost(lift.s, 1.0)
        tangents: set[float] = set()

        def add_tangent(l0: float) -> None:
            l0 = max(l0, delta)
            if l0 in tangents:
                return
            tangents.add(l0)
            r = np.sqrt(l0)
            _add_rows(model, [-np.inf], [q.f * r / 2], np.array([lift.s, lift.L]), np.array([1.0, -0.5 * q.f / r]), 2)

        add_tangent(self.l_hi)
        add_tangent(delta)
        best, best_value = None, -np.inf
        bound = -np.inf
        excluded = _Exclusions(self)
        for _ in range(_MAX_OA_ITERATIONS):
            found = self._solve(model, excluded.start(best))
            if found is None:  # no action left with L >= delta
                bound = -np.inf
                break
            action, result = found
            value = q.value(action)
            if value > best_value:
                best, best_value = action, value
            bound = result.bound
            if proven(bound, best_value, 1.0 / self.value_scale):
                break
            l_true = self.quadratic_form(action)
            if max(l_true, delta) in tangents:
                # The model already values this action at its true index (up to the
                # solver's tolerances), so the gap is noise: set it aside, exactly valued.
                excluded.add(model, action)
                continue
            add_tangent(l_true)
        else:
            raise OracleError("norm outer approximation did not converge")
        self.stats.extra["excluded"] = excluded.count
        self.stats.extra["tangents"] = len(tangents)
        # actions with L < delta: worth at most mu @ a + f sqrt(delta)
        self._clear_lift(model, lift)
        slack = q.f * np.sqrt(delta)
        low_best, low_value, low_bound = self._best_near_zero(model, slack, best_value)
        if low_value > best_value:
            best, best_value = low_best, low_value
        return best, max(bound, low_bound, best_value)

    def _clear_lift(self, model: CompiledModel, lift: _Lifted) -> None:
        """Drop the lifted columns and rows (cuts found meanwhile stay)."""
        h = model.h
        rows = np.array(lift.rows(), np.int32)
        if len(rows):
            h.deleteRows(len(rows), rows)
        cols = np.arange(lift.first_col, lift.s + 1, dtype=np.int32)
        h.deleteCols(len(cols), cols)

    def _best_near_zero(
        self, model: CompiledModel, slack: float, incumbent: float
    ) -> tuple[np.ndarray | None, float, float]:
        """Best true value among actions with ``mu @ a + slack > incumbent``.

        Lists actions by decreasing ``mu @ a`` (no-good cuts) until the next one
        cannot beat the incumbent even with the full ``slack``. Returns the best
        listed action, its value, and an upper bound for the unlisted ones.
        """
        q = self.query
        best, best_value = None, -np.inf
        for _ in range(_MAX_NO_GOODS):
            found = self._solve(model)
            if found is None:
                return best, best_value, -np.inf
            action, result = found
            value = q.value(action)
            if value > best_value:
                best, best_value = action, value
            top = result.bound + slack
            level = max(incumbent, best_value)
            if proven(top, level, 1.0 / self.value_scale):
                return best, best_value, top
            self.stats.extra["no_goods"] = self.stats.extra.get("no_goods", 0) + 1
            _add_no_good(model, self.arms, action)
        raise OracleError("too many near-zero quadratic forms to certify the norm answer")

    # --------------------------------------------------------- sign = -1
    def _maximise_minus(self, model: CompiledModel) -> tuple[np.ndarray | None, float]:
        q, h, f = self.query, model.h, self.query.f
        lin = self._linear_argmax()
        if lin is None:
            return None, -np.inf
        top = float(q.mu @ lin)
        top += tolerance(top)  # no action has mu @ a above this (HiGHS's gap is 1e-11)
        best, best_value = lin, q.value(lin)
        if proven(top, best_value):  # includes f = 0
            return best, top
        best, best_value = self._improve_locally(best, best_value)
        lo = min(self.l_lo, 0.0)
        lift = _Lifted.glover(model, self, l_bounds=(lo, self.l_hi))
        convex = _ConvexCuts(self, side=-1, rounds=min(_CONVEX_ROUNDS, len(self.arms)))
        excluded = _Exclusions(self)
        points = {self.quadratic_form(lin), self.quadratic_form(best)}  # breakpoints when in the window
        secants: _PiecewiseSqrt | None = None
        least = (f / _MAX_SLOPE) ** 2  # no breakpoint in (0, least): slopes stay above -_MAX_SLOPE
        bound = best_value
        solves = 0
        for _ in range(_MAX_SECANT_SOLVES):
            if secants is None:  # (re)build the secants on the incumbent's window
                hi = window_top(self.l_hi, top, best_value, f)
                if hi <= lo:  # no action can beat the incumbent
                    break
                h.changeColBounds(lift.L, lo, hi)
                grid = _sqrt_grid(lo, hi, _SECANT_PIECES, points, least)
                secants = _PiecewiseSqrt(model, lift.L, f, grid, least)
                if solves == 0:
                    convex.separate(model, lift.L)
            solves += 1
            found = self._solve(model, excluded.start(best))
            if found is None:  # no action left in the window
                bound = best_value
                break
            action, result = found
            value = q.value(action)
            bound = result.bound + secants.const
            improved = value > best_value
            if improved:
                best, best_value = action, value
            if proven(bound, best_value):
                break
            l_star = self.quadratic_form(action)
            points.add(l_star)
            if proven(value + f * secants.overshoot(l_star), value) or not secants.can_split(l_star):
                # The secants value this action at its true index (up to the tolerance), so
                # the gap is solver noise: set it aside, exactly valued, and solve again.
                excluded.add(model, action)
            elif improved:  # a better incumbent narrows the window: rebuild the secants
                secants.remove()
                secants = None
            else:
                secants.add_point(l_star)
        else:
            raise OracleError("norm piecewise secants over the quadratic form did not converge")
        self.stats.extra["secant_solves"] = solves
        self.stats.extra["excluded"] = excluded.count
        self.stats.extra["convex_cuts"] = convex.cuts
        self.stats.extra["pieces"] = 0 if secants is None else len(secants.points) - 1
        return best, max(bound, best_value)

    def _improve_locally(self, action: np.ndarray, value: float) -> tuple[np.ndarray, float]:
        """Best-improvement local search from ``action``: add, drop or swap one arm, else swap two.

        Only a heuristic for the incumbent: its ``L`` becomes a breakpoint and its value
        narrows the window, which halves the MILP work when it is the optimum (61 of 64
        bench queries at d=40, ~5 ms). Every move is checked against the space and the
        restrictions and valued exactly; at most ``_LOCAL_CHECKS`` feasibility checks.
        """
        q, res, space = self.query, self.res, self.oracle.space
        d, f = self.d, q.f
        pad = np.zeros((d + 1, d + 1))  # index d stands for "no arm"
        pad[:d, :d] = q.M
        mu = np.r_[q.mu, 0.0]
        free = np.zeros(d, bool)
        free[self.arms] = True
        keep = np.zeros(d, bool)
        keep[list(res.include)] = True
        checks, width = 0, 1
        while checks < _LOCAL_CHECKS:
            x = np.r_[action, False].astype(float)
            mx = pad @ x
            drop, add = _local_moves(np.flatnonzero(action & ~keep), np.flatnonzero(free & ~action), d, width)
            lin = mu @ x + mu[add].sum(axis=1) - mu[drop].sum(axis=1)
            quad = x @ mx
            for side, cols in ((-1.0, drop), (1.0, add)):
                quad = quad + 2.0 * side * mx[cols].sum(axis=1)
                quad = (
                    quad + pad[cols[:, 0], cols[:, 0]] + pad[cols[:, 1], cols[:, 1]] + 2.0 * pad[cols[:, 0], cols[:, 1]]
                )
            quad = quad - 2.0 * sum(pad[drop[:, u], add[:, v]] for u in (0, 1) for v in (0, 1))
            gain = lin - f * np.sqrt(np.maximum(quad, 0.0)) - value
            moved = False
            for k in np.argsort(-gain):
                if gain[k] <= tolerance(value) or checks >= _LOCAL_CHECKS:
                    break
                candidate = action.copy()
                candidate[drop[k][drop[k] < d]] = False
                candidate[add[k][add[k] < d]] = True
                checks += 1
                if (res.empty or res.admits(candidate)) and space._contains(candidate):
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
        self.stats.extra["local_checks"] = checks
        return action, value


def _local_moves(inside: np.ndarray, outside: np.ndarray, none: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Arms dropped and added by each move, two columns each (``none`` pads).

    ``width=1``: drop one, add one, or swap one for one; ``width=2``: swap two for two.

    >>> drop, add = _local_moves(np.array([0]), np.array([1, 2]), 9, 1)
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


def _unit_scale(query: NormQuery) -> NormQuery:
    """The same query with ``M`` divided by a power of 4 near its largest entry, ``f`` compensated.

    ``f sqrt(a @ M @ a) = (f 2^k) sqrt(a @ (M / 4^k) @ a)`` exactly in floating point, so
    every value is unchanged; the rows built from ``M`` get entries of order 1
    (with ``M ~ 1e6`` or ``1e-12`` HiGHS proved wrong optima of both signs' models).

    >>> import cmab_milp as cm
    >>> q = cm.make_oracle(cm.Cardinality(2, 1), "highs").norm_query(np.ones(2), np.eye(2) * 64.0, 1.0, -1)
    >>> scaled = _unit_scale(q)
    >>> float(scaled.M.max()), scaled.f
    (1.0, 8.0)
    """
    largest = float(np.abs(query.M).max(initial=0.0))
    if largest == 0.0 or not np.isfinite(largest):
        return query
    k = round(math.log(largest, 4))
    if k == 0:
        return query
    return dataclasses.replace(query, M=query.M * 4.0**-k, f=query.f * 2.0**k)


def _unit_objective(query: NormQuery) -> tuple[NormQuery, float]:
    """The query with ``mu`` and ``f`` divided by a power of 2 when its terms are far from 1.

    Every value is divided by the same power of 2 (exactly), so the argmax is unchanged;
    the second result multiplies a bound back. With terms ~1e7 (``f ~ 1e4``, ``M ~ 1e6``,
    ``mu ~ 1e4``) HiGHS proved a wrong optimum of the sign +1 model. Queries whose terms
    lie within ``2^+-13`` of 1 are left alone.

    >>> import cmab_milp as cm
    >>> q = cm.make_oracle(cm.Cardinality(2, 1), "highs").norm_query(np.ones(2) * 2.0**20, np.eye(2), 2.0**20)
    >>> scaled, factor = _unit_objective(q)
    >>> float(scaled.mu.max()), scaled.f, factor
    (1.0, 1.0, 1048576.0)
    """
    size = max(float(np.abs(query.mu).max(initial=0.0)), query.f * math.sqrt(float(np.abs(query.M).max(initial=0.0))))
    if not np.isfinite(size) or size == 0.0 or 2.0**-13 <= size <= 2.0**13:
        return query, 1.0
    j = round(math.log2(size))
    return dataclasses.replace(query, mu=query.mu * 2.0**-j, f=query.f * 2.0**-j), 2.0**j


def window_top(l_hi: float, top: float, incumbent: float, f: float) -> float:
    """Every action worth more than ``incumbent`` has ``L`` below the returned value.

    Such an action has ``f sqrt(L) < mu @ a - incumbent <= top - incumbent`` (``top``:
    the largest ``mu @ a``), so ``L < ((top - incumbent) / f)^2``; ``l_hi`` bounds
    every ``L``.

    >>> window_top(100.0, 5.0, 2.0, 1.0), window_top(4.0, 5.0, 2.0, 1.0)
    (9.0, 4.0)
    """
    return min(l_hi, ((top - incumbent) / f) ** 2)


def _sqrt_grid(lo: float, hi: float, n: int, extra: set[float], least: float = 0.0) -> list[float]:
    """Breakpoints from ``lo`` to ``hi > lo``: ``n`` pieces even in ``sqrt(L)``, and ``extra``.

    ``lo``, ``hi`` and, inside, ``0`` (the kink of ``-sqrt(max(L, 0))``) always stay;
    other points go when closer than ``_MIN_PIECE * (1 + |hi|)`` to a kept one or in
    ``(0, least)`` (a steep first secant, see :class:`_PiecewiseSqrt`).

    >>> [round(x, 3) for x in _sqrt_grid(-1.0, 4.0, 2, {3.0})]
    [-1.0, 0.0, 1.0, 3.0, 4.0]
    >>> _sqrt_grid(-1.0, 1e-12, 16, {5e-13})
    [-1.0, 0.0, 1e-12]
    >>> _sqrt_grid(0.0, 4.0, 2, {0.5}, least=2.0)
    [0.0, 4.0]
    """
    gap = _MIN_PIECE * (1.0 + abs(hi))
    kept = [lo, 0.0, hi] if lo < 0.0 < hi else [lo, hi]
    start = max(lo, 0.0)
    r0, r1 = math.sqrt(start), math.sqrt(hi)
    for p in sorted([*((r0 + (r1 - r0) * i / n) ** 2 for i in range(1, n)), *map(float, extra)]):
        if lo < p < hi and not 0.0 < p < least and min(abs(p - x) for x in kept) > gap:
            kept.append(p)
    return sorted(kept)


class _PiecewiseSqrt:
    """Secants of ``-f sqrt(max(L, 0))`` between breakpoints, as an incremental MILP block.

    ``L = points[0] + sum_k delta_k`` with ``0 <= delta_k <= width_k`` and binaries
    ``z_k`` that make the pieces fill in order (``delta_k >= width_k z_k``,
    ``delta_{k+1} <= width_{k+1} z_k``); the objective gets ``f slope_k delta_k`` plus
    :attr:`const`. Every ``L`` in range is representable with the value of the secant
    of its piece, which is at least ``-f sqrt(max(L, 0))`` (the function is linear on
    ``L <= 0`` and convex on ``L >= 0``). A piece ``[0, p]`` with ``p < least`` would
    have a slope steeper than ``-f / sqrt(least)``, which multiplies HiGHS's row
    tolerance into the objective: it is flat instead (``0 >= -f sqrt(L)``, still
    above the curve), and its actions are set aside when found (no breakpoint goes
    into ``(0, least)``).
    """

    def __init__(self, model: CompiledModel, L: int, f: float, points: list[float], least: float = 0.0):
        self.model = model
        self.L = L
        self.f = f
        self.least = least
        self.points = points
        self.cols = self.rows = (0, 0)
        self._build()

    @staticmethod
    def phi(x):
        return -np.sqrt(np.maximum(x, 0.0))

    @property
    def const(self) -> float:
        return self.f * float(self.phi(self.points[0]))

    def slopes(self) -> np.ndarray:
        p = np.asarray(self.points)
        slope = np.diff(self.phi(p)) / np.diff(p)
        slope[(p[:-1] >= 0.0) & (p[1:] < self.least)] = 0.0
        return slope

    def values(self) -> np.ndarray:
        """The block's value (per unit of ``f``) at each breakpoint."""
        p = np.asarray(self.points)
        return self.phi(p[0]) + np.r_[0.0, np.cumsum(self.slopes() * np.diff(p))]

    def overshoot(self, l: float) -> float:
        """How far the block values ``l`` above ``-sqrt(max(l, 0))`` (per unit of ``f``)."""
        return float(np.interp(l, self.points, self.values()) - self.phi(l))

    def can_split(self, l: float) -> bool:
        """Whether ``l`` lies inside the window, outside ``(0, least)`` and away from every breakpoint."""
        p = self.points
        inside = p[0] < l < p[-1] and not 0.0 < l < self.least
        return inside and min(abs(x - l) for x in p) > _MIN_PIECE * (1.0 + abs(p[-1]))

    def add_point(self, l: float) -> None:
        """Split the piece holding ``l`` there: the secants become exact at ``l``."""
        if not self.can_split(l):
            raise OracleError("norm secants: breakpoint outside the window or already present")
        self.remove()
        self.points = sorted([*self.points, l])
        self._build()

    def remove(self) -> None:
        """Delete the block's rows and columns (rows appended after it only shift)."""
        h = self.model.h
        first, last = self.rows
        h.deleteRows(last - first, np.arange(first, last, dtype=np.int32))
        first, last = self.cols
        h.deleteCols(last - first, np.arange(first, last, dtype=np.int32))

    def _build(self) -> None:
        model, h = self.model, self.model.h
        p = np.asarray(self.points)
        width = np.diff(p)
        slope = self.slopes()
        k = len(width)
        first = h.getNumCol()
        delta = first + np.arange(k)
        z = first + k + np.arange(k - 1)
        h.addCols(
            2 * k - 1,
            np.r_[self.f * slope, np.zeros(k - 1)],
            np.zeros(2 * k - 1),
            np.r_[width, np.ones(k - 1)],
            0,
            [],
            [],
            [],
        )
        if k > 1:
            kint = model._hs.HighsVarType.kInteger
            h.changeColsIntegrality(k - 1, z.astype(np.int32), np.array([kint] * (k - 1)))
        self.cols = (first, h.getNumCol())
        row0 = h.getNumRow()
        _add_rows(model, [p[0]], [p[0]], np.r_[self.L, delta], np.r_[1.0, -np.ones(k)], k + 1)
        if k > 1:
            ones = np.ones(k - 1)
            _add_rows(
                model,
                np.zeros(k - 1),
                np.full(k - 1, np.inf),
                np.stack([delta[:-1], z], 1).ravel(),
                np.stack([ones, -width[:-1]], 1).ravel(),
                2,
            )
            _add_rows(
                model,
                np.full(k - 1, -np.inf),
                np.zeros(k - 1),
                np.stack([delta[1:], z], 1).ravel(),
                np.stack([ones, -width[1:]], 1).ravel(),
                2,
            )
        self.rows = (row0, h.getNumRow())


class _ConvexCuts:
    """Cuts bounding ``L`` by tangents of a convex reformulation of ``a @ M @ a``.

    On binary ``a``, ``a_i^2 = a_i`` so ``a @ M @ a = t * sum(a) - side * a @ P @ a``
    with ``P = -side * (M - t I)`` positive semidefinite when ``t`` is the
    smallest (``side=-1``) or largest (``side=+1``) eigenvalue of ``M``: every
    tangent of the convex ``a @ P @ a`` gives a valid lower (``side=-1``) or
    upper (``side=+1``) bound on the quadratic form, linear in ``a`` (the uniform
    case of the quadratic convex reformulation). At fractional points they are
    much tighter than McCormick rows; they are separated at LP-relaxation points.

    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "highs")
    >>> solver = _NormSolver(oracle, oracle.norm_query(np.zeros(3), np.eye(3), 1.0))
    >>> float(_ConvexCuts(solver, side=-1, rounds=1).t) < 1.0 < float(_ConvexCuts(solver, side=1, rounds=1).t)
    True
    """

    def __init__(self, solver: _NormSolver, side: int, rounds: int):
        self.solver = solver
        self.side = side
        self.rounds = rounds
        arms = solver.arms
        sub = solver.query.M[np.ix_(arms, arms)]
        scale = float(np.abs(sub).max(initial=0.0))
        eig = np.linalg.eigvalsh(sub) if len(arms) else np.zeros(1)
        # a margin keeps P positive semidefinite despite rounding in eigvalsh
        self.t = float(eig[-1] + 1e-9 * scale) if side > 0 else float(eig[0] - 1e-9 * scale)
        self.P = -side * (sub - self.t * np.eye(len(arms)))
        self.cuts = 0

    def separate(self, model: CompiledModel, L: int) -> None:
        """Add violated tangents at LP-relaxation points, up to ``rounds`` LP solves."""
        if not len(self.solver.arms) or self.rounds == 0:
            return
        h = model.h
        h.setOptionValue("solve_relaxation", True)
        try:
            for _ in range(self.rounds):
                h.run()
                if h.getModelStatus() != model._hs.HighsModelStatus.kOptimal:
                    return
                if not self.cut_at(model, L, np.asarray(h.getSolution().col_value)):
                    return
        finally:
            h.setOptionValue("solve_relaxation", False)

    def cut_at(self, model: CompiledModel, L: int, x: np.ndarray) -> bool:
        """Add the tangent at the arm values of ``x`` if ``x[L]`` violates it; say whether it did."""
        arms, side = self.solver.arms, self.side
        if not len(arms):
            return False
        a0 = x[arms]
        curve = float(a0 @ self.P @ a0)
        quad = self.t * float(a0.sum()) - side * curve
        if side * x[L] <= side * quad + 1e-6 * (1.0 + abs(quad)):
            return False
        coefs = np.r_[side, 2.0 * (self.P @ a0) - side * self.t]
        _add_rows(model, [-np.inf], [curve], np.r_[L, arms], coefs, len(arms) + 1)
        self.cuts += 1
        return True


class _Exclusions:
    """Actions set aside by no-good rows once their true index is recorded.

    A MILP bound then covers only the remaining actions; the set-aside ones are
    covered by the incumbent, which is at least as good as each of them.
    """

    def __init__(self, solver: _NormSolver):
        self.arms = solver.arms
        self.keys: set[bytes] = set()

    @property
    def count(self) -> int:
        return len(self.keys)

    def add(self, model: CompiledModel, action: np.ndarray) -> None:
        _add_no_good(model, self.arms, action)
        self.keys.add(action.tobytes())

    def start(self, action: np.ndarray | None) -> np.ndarray | None:
        """``action`` as a MIP start, or ``None`` when it has been set aside."""
        return None if action is None or action.tobytes() in self.keys else action


def _add_no_good(model: CompiledModel, arms: np.ndarray, action: np.ndarray) -> None:
    """The row ``sum_{i in a} (1 - x_i) + sum_{i in arms \\ a} x_i >= 1``: every action but ``action``."""
    ones = np.flatnonzero(action)
    zeros = np.setdiff1d(arms, ones)
    idx = np.concatenate([ones, zeros]).astype(np.int32)
    coef = np.concatenate([-np.ones(len(ones)), np.ones(len(zeros))])
    _add_rows(model, [1.0 - len(ones)], [np.inf], idx, coef, len(idx))


# ---------------------------------------------------------------------- lifting
@dataclass
class _Lifted:
    """Columns for the quadratic form ``L`` (and ``s``) appended to a model, with their rows.

    :meth:`pairs` (sign +1) lifts every pair, :meth:`glover` (sign -1) every arm.
    """

    first_col: int
    L: int
    s: int
    first_row: int
    last_row: int

    def rows(self) -> range:
        return range(self.first_row, self.last_row)

    @staticmethod
    def glover(model: CompiledModel, solver: _NormSolver, *, l_bounds: tuple[float, float]) -> _Lifted:
        """Columns ``z_i`` (one per free arm), ``L`` and ``s``, with Glover's rows (sign -1).

        ``z_i`` stands for ``a_i g_i(a)``, ``g_i(a) = sum_{j != i} M_ij a_j``. With ``lo_i``
        the least ``g_i`` on an action holding ``i`` (its ``m - 1`` most negative entries)
        and ``up_i`` the largest ``g_i`` on any action (its ``m`` largest), the rows
        ``z_i >= lo_i a_i`` and ``z_i >= g_i(a) - up_i (1 - a_i)`` hold at ``z_i = a_i g_i(a)``
        on every binary action and force at least that, so
        ``L = sum_i M_ii a_i + sum_i z_i`` can reach ``a @ M @ a`` and never goes below
        it. ``2 d`` rows instead of a column per pair: the LPs are ~8x smaller than
        the pairwise lifting and the MILPs 2-3x faster at d=40.
        """
        M = solver.query.M
        arms = solver.arms
        k = len(arms)
        m = solver.oracle.space.m
        sub = M[np.ix_(arms, arms)]
        diag = np.diag(sub)
        off = sub - np.diag(diag)
        ordered = np.sort(off, axis=1)  # the row's own zero is among them and adds nothing
        lo = np.clip(ordered[:, : max(min(m - 1, k), 0)], None, 0.0).sum(axis=1)
        up = np.clip(ordered[:, ::-1][:, : min(m, k)], 0.0, None).sum(axis=1)
        h = model.h
        inf = model._hs.kHighsInf
        first_col = h.getNumCol()
        z = first_col + np.arange(k)
        L, s = first_col + k, first_col + k + 1
        lb = np.concatenate([np.minimum(lo, 0.0), [l_bounds[0], -inf]])
        ub = np.concatenate([np.maximum(up, 0.0), [l_bounds[1], inf]])
        h.addCols(k + 2, np.zeros(k + 2), lb, ub, 0, [], [], [])
        first_row = h.getNumRow()
        # L = sum_i M_ii a_i + sum_i z_i
        _add_rows(model, [0.0], [0.0], np.r_[L, arms, z], np.r_[1.0, -diag, -np.ones(k)], 2 * k + 1)
        # z_i - lo_i a_i >= 0
        pairs = np.stack([z, arms], 1).ravel()
        _add_rows(model, np.zeros(k), np.full(k, np.inf), pairs, np.stack([np.ones(k), -lo], 1).ravel(), 2)
        # z_i - sum_{j != i} M_ij a_j - up_i a_i >= -up_i
        coefs = -off
        coefs[np.arange(k), np.arange(k)] = -up
        cols = np.concatenate([z[:, None], np.broadcast_to(arms, (k, k))], 1)
        _add_rows(
            model, -up, np.full(k, np.inf), cols.ravel(), np.concatenate([np.ones((k, 1)), coefs], 1).ravel(), k + 1
        )
        return _Lifted(first_col, L, s, first_row, h.getNumRow())

    @staticmethod
    def pairs(model: CompiledModel, solver: _NormSolver, *, l_bounds: tuple[float, float]) -> _Lifted:
        """Columns ``w_ij`` (pairs with ``M_ij != 0``), ``L`` and ``s``: the model's ``L`` never exceeds the truth."""
        q = solver.query
        M = q.M
        arms = solver.arms
        forbidden = set(solver.res.forbid_pairs)
        ii, jj = np.triu_indices(len(arms), 1)
        I, J = arms[ii], arms[jj]
        coef = M[I, J]
        keep = coef != 0.0
        if forbidden:
            keep &= np.array([(i, j) not in forbidden for i, j in zip(I.tolist(), J.tolist(), strict=True)])
        I, J, coef = I[keep], J[keep], coef[keep]
        n_pairs = len(I)
        h = model.h
        inf = model._hs.kHighsInf
        first_col = h.getNumCol()
        w = first_col + np.arange(n_pairs)
        L, s = first_col + n_pairs, first_col + n_pairs + 1
        lb = np.concatenate([np.zeros(n_pairs), [l_bounds[0], -inf]])
        ub = np.concatenate([np.ones(n_pairs), [l_bounds[1], inf]])
        h.addCols(n_pairs + 2, np.zeros(n_pairs + 2), lb, ub, 0, [], [], [])
        first_row = h.getNumRow()
        row_lb, row_ub, starts, index, value = [], [], [], [], []

        def block(lower, upper, cols, coefs, width):
            n = len(lower)
            starts.append(np.arange(n) * width + sum(len(x) for x in index))
            row_lb.append(np.asarray(lower, float))
            row_ub.append(np.asarray(upper, float))
            index.append(np.asarray(cols, np.int64).ravel())
            value.append(np.asarray(coefs, float).ravel())

        # L = sum_i M_ii a_i + 2 sum_{i<j} M_ij w_ij
        diag = M[arms, arms]
        dmask = diag != 0.0
        cols = np.concatenate([[L], arms[dmask], w])
        coefs = np.concatenate([[1.0], -diag[dmask], -2.0 * coef])
        block([0.0], [0.0], cols, coefs, len(cols))
        upper, lower = coef > 0, coef < 0  # the model's L may only fall short of the truth
        if upper.any():  # w <= a_i, w <= a_j
            n = int(upper.sum())
            for other in (I, J):
                block(
                    np.full(n, -np.inf), np.zeros(n), np.stack([w[upper], other[upper]], 1), np.tile([1.0, -1.0], n), 2
                )
        if lower.any():  # w >= a_i + a_j - 1
            n = int(lower.sum())
            cols = np.stack([w[lower], I[lower], J[lower]], 1)
            block(np.full(n, -1.0), np.full(n, np.inf), cols, np.tile([1.0, -1.0, -1.0], n), 3)
        # RLT rows: a_i * (K - 1) = sum_j w_ij with K = |a| in [k_min, m]
        m, k_min = solver.oracle.space.m, _min_cardinality(solver.oracle)
        for i in arms:
            mine = w[(I == i) | (J == i)]
            if not len(mine):
                continue
            rest = arms[arms != i]
            ones = np.ones(len(mine))
            if len(mine) > m - 1:  # sum_j w_ij <= (m - 1) a_i
                block([-np.inf], [0.0], np.r_[mine, i], np.r_[ones, 1.0 - m], len(mine) + 1)
            if k_min >= 2:  # sum_j w_ij <= sum_{j != i} a_j - k_min (1 - a_i)
                cols = np.r_[mine, rest, i]
                block([-np.inf], [-k_min], cols, np.r_[ones, -np.ones(len(rest)), -k_min], len(cols))
        nnz = sum(len(x) for x in index)
        model._check(
            h.addRows(
                sum(len(x) for x in row_lb),
                _finite(model, np.concatenate(row_lb)),
                _finite(model, np.concatenate(row_ub)),
                nnz,
                np.concatenate(starts).astype(np.int32),
                np.concatenate(index).astype(np.int32),
                np.concatenate(value),
            ),
            "addRows",
        )
        return _Lifted(first_col, L, s, first_row, h.getNumRow())


def _finite(model: CompiledModel, x: np.ndarray) -> np.ndarray:
    inf = model._hs.kHighsInf
    return np.clip(np.asarray(x, float), -inf, inf)


def _add_rows(model: CompiledModel, lower, upper, index: np.ndarray, value: np.ndarray, width: int) -> None:
    lower = _finite(model, np.atleast_1d(np.asarray(lower, float)))
    upper = _finite(model, np.atleast_1d(np.asarray(upper, float)))
    n = len(lower)
    starts = (np.arange(n) * width).astype(np.int32)
    model._check(
        model.h.addRows(n, lower, upper, len(index), starts, np.asarray(index, np.int32), np.asarray(value, float)),
        "addRows",
    )


_MIN_CARDINALITY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _min_cardinality(oracle) -> int:
    """Fewest arms in any action of the space (one linear query, cached per oracle)."""
    k = _MIN_CARDINALITY.get(oracle)
    if k is None:
        fewest = oracle._linear(oracle.linear_query(-np.ones(oracle.d)))
        k = 0 if fewest is None else int(fewest.sum())
        _MIN_CARDINALITY[oracle] = k
    return k


def _thread_model(oracle) -> CompiledModel:
    """This thread's norm model: the space's formulation (each query's additions are removed after it)."""
    local = oracle._local.__dict__
    model = local.get("norm_model")
    if model is None:
        model = CompiledModel(oracle.formulation, integer=True, time_limit=oracle.time_limit)
        local["norm_model"] = model
    return model
