"""The norm solver: one query's MILPs on the oracle's per-thread norm model.

:func:`solve_norm` answers a :class:`~cmab_milp.oracles.core.base.NormQuery` exactly
with a short sequence of MILPs on one :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`
per thread (the space's formulation, compiled once; each query appends its own
columns and rows and removes them afterwards, and starts from a cleared solver:
the tie rule). Two methods, one per sign:

``sign=+1``
    The concave branch of :mod:`.branch.plus` on spaces with a combinatorial linear oracle whose MILP needs
    lazy cuts (trees, forests) and on matchings (:meth:`NormSolver._plus_branch_applies`); the same
    overestimator's tangents in the path LP on s-t paths of graphs with cycles (:mod:`.paths.plus`); otherwise
    the outer approximation in the quadratic form (:mod:`.outer.plus`), after a budgeted try of the concave
    branch where it applies (``tuning.plus_branch_try``; its incumbent is kept).

``sign=-1``
    The branch on the linear oracle (:mod:`.branch.minus`) for a definite ``M`` on a space with a combinatorial
    linear oracle; the path LP with tangents of the norm (:mod:`.paths.minus`) on s-t paths of graphs with
    cycles; otherwise the piecewise secants over ``L`` (:mod:`.secants.minus`), or the disaggregated tangents of
    :mod:`.outer.minus` (``tuning.minus_outer``).

First incumbents (:mod:`.starts.incumbents`) are lower bounds only: exactness rests on the methods' bounds.

Both methods first add the space's rows violated at LP points (the fractional separators of
trees and paths, :func:`~cmab_milp.oracles.mip.root_cuts.add_root_cuts`; valid for every action,
so no bound changes): otherwise each cycle row comes from :meth:`NormSolver._solve`'s lazy
loop, every round a new branch and bound.

The oracle's ``time_limit`` holds for the whole query: each MILP gets what is left
of it, and a query past it raises :class:`~cmab_milp.oracles.core.base.LimitReached`.

In the certified approximate mode (the oracle's ``norm_gap``) a sign +1 query that carries a
:class:`~.carry.NormCarry` is first offered the sequence's last answer, proven by a drift bound from the
last solved query (:mod:`.carry`); only when that fails is it solved, at the carry's tighter gap.

Each loop closes with :func:`~cmab_milp.oracles.core.certify.proven`; gaps left by solver noise are closed
by setting exactly valued actions aside (:mod:`.cuts`). The answer's value is
recomputed in numpy and must be within ``1e-9 * (1 + |value|)`` of the proven upper
bound; otherwise :class:`~cmab_milp.oracles.core.base.OracleError`.

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

import time
from dataclasses import dataclass, field

import numpy as np

from ..._threads import blas_single_thread
from ...spaces import Matchings
from ..core.base import LimitReached, OracleError, tolerance
from ..core.certify import proven
from ..core.engine import Engine
from ..core.model import SolveResult
from ..core.queries import LinearQuery, NormQuery
from ..mip.root_cuts import add_root_cuts
from ..mip.tuning import HighsTuning
from .branch.minus import LinearOracleBranch, NodeBudget, applies
from .branch.plus import ConcaveBranch
from .gradient import positive_definite, well_scaled
from .lifting import quadratic_form_bounds
from .outer.minus import outer_approximation, square_root_rows
from .outer.plus import OuterPlus
from .paths.minus import PathBranch
from .paths.minus import applies as paths_apply
from .paths.plus import ConcavePathBranch
from .scaling import arms_bound, unit_objective, unit_scale
from .secants.minus import SecantsMinus
from .starts.incumbents import FirstIncumbents

__all__ = ["NormSolver", "NormStats", "last_stats", "solve_norm"]

#: The clock of the per-query time limit (a name of its own so that tests can replace it).
_clock = time.perf_counter
#: Lazy-cut rounds per MILP solve before giving up (a separator bug otherwise).
_MAX_CUT_ROUNDS = 10_000
#: HiGHS options during the norm solves: the MIP start already gives the incumbent and
#: the sub-MIP heuristics took most of the time. Restarts stay on: with
#: ``mip_allow_restart=False`` HiGHS 1.16 reported 'Optimal' with a bound below a feasible
#: action (paths on a 3x3 grid, M ~ 1e6, f = 1e4; test_norm's badly scaled cases).
_QUIET_OPTIONS: dict[str, object] = {
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}
#: With ``norm_gap``, seconds a solve still gets past the query's time limit: the bound of the
#: actions not yet covered (sign +1: those with ``L < delta``) needs one more MILP, stopped at this
#: limit with its incumbent and bound.
_FINISH_SECONDS = 0.1
#: A carried sequence (:mod:`.carry`) keeps the answer and this many of the best actions the concave branch met:
#: the answer's own index falls as it is played (its arms' counts grow), another may then be proven instead
#: (OLS-UCB-C on the crew problem near t = 10,000, replayed: 33 -> over 110 rounds without a solve).
_CARRY_CANDIDATES = 32


@dataclass
class NormStats:
    """What the last query on this thread cost: MILP solves and the method used."""

    method: str = ""
    milp_solves: int = 0
    extra: dict = field(default_factory=dict)


def solve_norm(oracle, query: NormQuery) -> np.ndarray | None:
    """Exact answer to ``query`` on a :class:`~cmab_milp.oracles.backends.highs.HighsOracle`.

    Returns the best action (bool array) or ``None`` when no action qualifies;
    raises :class:`OracleError` when optimality cannot be proven.

    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "highs")
    >>> solve_norm(oracle, oracle.norm_query(np.zeros(3), np.eye(3), 1.0)).sum()
    np.int64(2)
    """
    gap: float | None = getattr(oracle, "norm_gap", None)
    carry = query.carry if gap is not None and query.sign > 0 else None
    if carry is not None:  # the certified approximate mode: the sequence's last answer may still be proven
        carried = carry.offer(query, gap, arms_bound(oracle.space))
        if carried is not None:
            oracle.last_norm_stats = NormStats("carried")
            oracle.ledger.record_ratio(carried[1])
            return carried[0]
        gap = carry.solve_gap(gap)
    solver = NormSolver(oracle, query, gap)
    if carry is not None:
        solver.keep = _CARRY_CANDIDATES
    with blas_single_thread():  # ~100 x 100 algebra: threads only wait for each other (cmab_milp._threads)
        answer, bound = solver.run()
    bound *= solver.value_scale  # back to the query's units (a power of 2: exact)
    oracle.last_norm_stats = solver.stats
    if answer is None:
        if carry is not None:
            carry.record(query, None, bound)
        return None
    res = query.restrictions
    if (not res.empty and not res.admits(answer)) or (oracle.verify and not oracle.space._contains(answer)):
        raise OracleError("HiGHS norm answer violates the space or the restrictions")
    value = query.value(answer)
    if not proven(value=value, bound=bound, measured_at="bound"):
        ratio = solver.accepted_ratio(bound, value)
        if ratio is None:
            raise OracleError(
                f"HiGHS norm answer has value {value!r} but the proven bound is {bound!r}:"
                " optimality not proven within 1e-9 * (1 + |optimum|)"
            )
        oracle.ledger.record_ratio(ratio)  # the certified approximate mode (norm_gap)
    if carry is not None:  # no action is worth more than the bound, or than the value plus the tolerance
        carry.record(query, answer, max(bound + tolerance(bound), value + tolerance(value)), solver.runners_up)
    return answer


def last_stats(oracle) -> NormStats | None:
    """Statistics of the last norm query answered on the calling thread."""
    return getattr(oracle, "last_norm_stats", None)


class NormSolver(FirstIncumbents, OuterPlus, SecantsMinus):
    """One query: the thread's norm model with this query's columns and rows appended.

    The methods of :mod:`.starts.incumbents`, :mod:`.outer.plus` and :mod:`.secants.minus` are its own (mixins).
    """

    def __init__(self, oracle, query: NormQuery, gap: float | None = None):
        self.oracle = oracle
        #: The oracle's tuning choices (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`).
        self.tuning: HighsTuning = oracle.tuning
        self.query = unit_scale(query)
        self.value_scale = 1.0
        if query.sign > 0:
            self.query, self.value_scale = unit_objective(self.query)
        query = self.query
        self.res = query.restrictions
        self.d = oracle.d
        self.stats = NormStats()
        free = np.ones(self.d, bool)
        free[list(self.res.exclude)] = False
        self.arms = np.flatnonzero(free)
        self.m = arms_bound(oracle.space)  # no action has more arms (space.m where it is cheap)
        self.l_lo, self.l_hi = quadratic_form_bounds(query.M, self.m, self.arms)
        limit = getattr(oracle, "time_limit", None)
        self.deadline = None if limit is None else _clock() + limit
        #: The certified approximate mode (the oracle's ``norm_gap``, or the tighter ``gap`` of a
        #: carried sequence, :mod:`.carry`): see :meth:`settled`.
        self.gap: float | None = getattr(oracle, "norm_gap", None) if gap is None else gap
        #: Runners-up to keep (the concave branch's best actions met besides the answer) and those kept.
        self.keep = 0
        self.runners_up: list[np.ndarray] = []
        #: A budgeted branch's incumbent, for the method after it (:meth:`_first_incumbent_plus`).
        self._carried: tuple[np.ndarray | None, float] = (None, -np.inf)

    # ------------------------------------------------------------ dispatch
    def run(self) -> tuple[np.ndarray | None, float]:
        q = self.query
        if self.l_hi <= 0.0:  # the sqrt term vanishes on every action
            self.stats.method = "linear"
            return self._linear_only()
        model = self.oracle.norm_model()
        n_cols, n_rows = model.num_cols, model.num_rows
        model.clear_solver()  # the tie rule: nothing of earlier queries (basis, solution) carries over
        try:
            model.set_arm_bounds(self.res.include, self.res.exclude)
            model.set_costs(q.mu)
            self._add_forbid_rows(model)
            options = _QUIET_OPTIONS if self.gap is None else {**_QUIET_OPTIONS, "mip_rel_gap": max(self.gap, 1e-12)}
            with model.options(options):
                if q.sign > 0:
                    self.stats.method = "oa-quadratic-form"
                    return self._maximise_plus(model)
                self.stats.method = "secants-quadratic-form"
                return self._maximise_minus(model)
        finally:
            self._clear(model, n_cols, n_rows)

    def _clear(self, model: Engine, n_cols: int, n_rows: int) -> None:
        model.delete_rows(n_rows, model.num_rows)
        model.delete_cols(n_cols, model.num_cols)

    def _linear_only(self) -> tuple[np.ndarray | None, float]:
        action = self._linear_argmax()
        if action is None:
            return None, -np.inf
        return action, self.query.value(action)

    def _linear_argmax(self) -> np.ndarray | None:
        self.stats.milp_solves += 1
        return self.oracle.solve_linear(LinearQuery(self.query.mu, self.res))

    # ------------------------------------------------------------ solving
    def _solve(self, model: Engine, start: np.ndarray | None = None) -> tuple[np.ndarray, SolveResult] | None:
        """One MILP with the lazy-cut loop: a feasible action and the result, or None.

        ``start`` (an action) is passed to HiGHS as a partial MIP start on the
        arm columns; HiGHS completes it when it fits the current model.
        """
        oracle = self.oracle
        for _ in range(_MAX_CUT_ROUNDS):
            self.stats.milp_solves += 1
            if start is not None:
                model.set_mip_start(start.astype(float))
            if self.deadline is None:
                result = model.solve(cold=False)  # the query started cold: its own history is deterministic
            else:  # the oracle's time limit holds for the whole query, not for each of its MILPs
                remaining = self.deadline - _clock()
                if remaining <= 0.0:
                    if self.gap is None:
                        raise LimitReached("HiGHS norm query stopped on its time limit; no action is returned")
                    remaining = _FINISH_SECONDS  # norm_gap: a last short solve for the bound of what is left
                with model.options({"time_limit": remaining}):
                    result = model.solve(cold=False)
            if result.status == "infeasible":
                return None
            if result.status == "limit" and result.values is None:  # (norm_gap: stopped with no incumbent)
                raise LimitReached("HiGHS norm query stopped on its time limit with no action to return")
            action = oracle.integral_action(result.values, True)
            if not oracle.formulation.separators:
                return action, result
            cuts = oracle.formulation.violated_rows(action)
            if not cuts:
                return action, result
            if result.status == "limit":  # no time left to cut the incumbent off and solve again
                raise LimitReached("HiGHS norm query stopped on its time limit before its cuts converged")
            model.add_rows(cuts)  # this query's only: removed by _clear (the tie rule)
        raise OracleError("lazy cut loop did not converge")  # pragma: no cover

    def _add_forbid_rows(self, model: Engine) -> None:
        pairs = self.res.forbid_pairs
        if pairs:
            idx = np.asarray(pairs, np.int32).ravel()
            model.add_rows_fixed(np.full(len(pairs), -np.inf), np.ones(len(pairs)), idx, np.ones(len(idx)), 2)

    # ------------------------------------------------ approximate mode
    def settled(self, bound: float, value: float, unit: float = 1.0) -> bool:
        """Whether a search may stop at ``bound`` (an upper bound on every index) with its best ``value``.

        Exact: ``value`` is proven optimal (:func:`~cmab_milp.oracles.core.certify.proven`). With the oracle's
        ``norm_gap`` also when :meth:`accepted_ratio` accepts the pair.
        """
        return (
            proven(value=value, bound=bound, unit=unit, measured_at="bound")
            or self.accepted_ratio(bound, value) is not None
        )

    def accepted_ratio(self, bound: float, value: float) -> float | None:
        """The proven ratio ``value / bound`` when the approximate mode accepts it, else ``None``.

        Accepted when the oracle has a ``norm_gap``, both numbers are positive (then every
        action's index is at most ``bound``, so ``value >= ratio * optimum``), and either the
        ratio is at least ``1 - norm_gap`` or the query's time limit has passed.
        """
        if self.gap is None or not (value > 0.0 and bound > 0.0 and np.isfinite(bound)):
            return None
        ratio = min(value / bound, 1.0)
        if ratio >= 1.0 - self.gap or (self.deadline is not None and _clock() >= self.deadline):
            return ratio
        return None

    def quadratic_form(self, action: np.ndarray) -> float:
        idx = np.flatnonzero(action)
        return float(self.query.M[np.ix_(idx, idx)].sum())

    # --------------------------------------------------------- sign = +1
    def _maximise_plus(self, model: Engine) -> tuple[np.ndarray | None, float]:
        q = self.query
        definite = not self.tuning.plus_branch_definite or positive_definite(q.M, self.arms)
        if self.tuning.plus_paths and paths_apply(self.oracle.space) and well_scaled(q) and definite:
            return self._branch_path(*self._best_hint(None, -np.inf), sign=1)
        if self._plus_branch_applies():
            return self._branch_plus()
        if self.tuning.plus_branch_try and self._plus_branch_applies(trial=True):
            try:  # easy queries end here; the others keep its incumbent for the outer approximation
                return self._branch_plus(max_nodes=self.tuning.plus_branch_try)
            except NodeBudget:
                self.stats.extra["tried_nodes"] = self.stats.extra.pop("nodes")
                self.stats.method = "oa-quadratic-form"
        with model.options({} if self.tuning.plus_presolve else {"presolve": "off"}):
            return self._outer_plus(model)

    def _plus_branch_applies(self, trial: bool = False) -> bool:
        """Sign +1 by the concave branch (any ``M``: ``tuning.plus_branch_definite``): a combinatorial space whose MILP
        needs lazy cuts, or matchings (an assignment a linear query, conflict terms in the bound; general ones on the
        fractional matching polytope, ``tuning.fractional_matchings``).

        ``trial``: whether the branch may try first with a node budget (``tuning.plus_branch_try``) where the
        outer approximation serves (any space with a combinatorial linear oracle): on the easy queries it
        ends in a few nodes, before the outer approximation's first MILP.
        """
        space = self.oracle.space
        definite = not self.tuning.plus_branch_definite or positive_definite(self.query.M, self.arms)
        if not self.tuning.plus_branch or not applies(space) or not definite:
            return False
        if trial or self.tuning.plus_branch == "always" or self.oracle.formulation.separators:
            return True
        return type(space) is Matchings and (space.bipartite or self.tuning.fractional_matchings)

    def _branch_plus(self, max_nodes: int | None = None) -> tuple[np.ndarray | None, float]:
        """Sign +1 by :class:`~.branch.plus.ConcaveBranch` (a combinatorial space; any symmetric ``M``).

        ``max_nodes``: raise :class:`~.branch.minus.NodeBudget` beyond that many nodes, keeping the search's
        incumbent for the next method (:meth:`_first_incumbent_plus`).
        """
        self.stats.method = "branch-concave"
        best, best_value = self._first_incumbent_plus(light=self.tuning.branch_light_start)
        search = ConcaveBranch(self.oracle.space, self.query, self.arms, self.deadline, _clock, self.tuning)
        if max_nodes is not None:
            search.max_nodes = max_nodes
        search.keep = self.keep
        try:
            best, best_value, bound = search.run(best, best_value, None if self.gap is None else self.settled)
        except NodeBudget:
            self._carried = (search.best, search.best_value)
            raise
        finally:
            self.stats.extra["nodes"] = search.nodes
            self.stats.extra["linear_queries"] = search.queries
            if search.tuned_at is not None:
                self.stats.extra["tuned_at"] = search.tuned_at
        self.runners_up = search.runners_up() if self.keep else []
        return best, bound

    # --------------------------------------------------------- sign = -1
    def _maximise_minus(self, model: Engine) -> tuple[np.ndarray | None, float]:
        q = self.query
        tuning = self.tuning
        paths = tuning.minus_branch and tuning.minus_paths and paths_apply(self.oracle.space) and well_scaled(q)
        if paths and positive_definite(q.M, self.arms):
            return self._branch_path(*self._best_hint(None, -np.inf), sign=-1)  # (no longest-path MILP first)
        lin = self._linear_argmax()
        if lin is None:
            return None, -np.inf
        top = float(q.mu @ lin)
        top += tolerance(top)  # no action has mu @ a above this (HiGHS's gap is 1e-11)
        best, best_value = lin, q.value(lin)
        if self.settled(top, best_value):  # includes f = 0
            return best, top
        best, best_value = self._best_hint(best, best_value)
        if self.tuning.minus_branch and applies(self.oracle.space) and positive_definite(q.M, self.arms):
            # no local search first: the branch's vertices are incumbents too
            return self._branch_minus(best, best_value)
        best, best_value = self._improve_locally(best, best_value)
        R = square_root_rows(q.M, self.arms) if self.tuning.minus_outer and well_scaled(q) and len(self.arms) else None
        if R is not None:
            self.stats.method = "outer-approximation"
            return outer_approximation(self, model, R, top, best, best_value, [lin])
        return self._secants_minus(model, lin, top, best, best_value)

    def _branch_minus(self, best: np.ndarray | None, best_value: float):
        """Sign -1 by :class:`~.branch.minus.LinearOracleBranch` (``M`` definite, a combinatorial space)."""
        self.stats.method = "branch-linear-oracle"
        search = LinearOracleBranch(self.oracle.space, self.query, self.arms, self.deadline, _clock, self.tuning)
        return self._run_search(search, best, best_value)

    def _branch_path(self, best: np.ndarray | None, best_value: float, sign: int):
        """S-t paths of a cyclic graph: sign -1 by :class:`~.paths.minus.PathBranch` (``M`` definite), sign +1 by
        :class:`~.paths.plus.ConcavePathBranch` (any ``M``: bounded on its PSD majorant)."""
        self.stats.method = "branch-path-lp" if sign < 0 else "branch-path-concave"
        kind = PathBranch if sign < 0 else ConcavePathBranch
        search = kind(self.oracle.space, self.query, self.arms, self.l_hi, self.deadline, _clock, self.tuning)
        return self._run_search(search, best, best_value)

    def _run_search(self, search, best: np.ndarray | None, best_value: float):
        """Run a branch and bound from the incumbent ``best``; its statistics go to :attr:`stats`."""
        try:
            best, best_value, bound = search.run(best, best_value, None if self.gap is None else self.settled)
        finally:
            self.stats.extra["nodes"] = search.nodes
            self.stats.extra["linear_queries"] = getattr(search, "queries", 0) or getattr(search, "lps", 0)
        return best, bound

    def _space_cuts(self, model: Engine) -> int:
        """The space's rows violated at the LP relaxation's points (:func:`~.mip.root_cuts.add_root_cuts`).

        Valid for every action of the space, so no bound changes; they spare the lazy-cut loop
        of :meth:`_solve` its re-solves of the whole branch and bound (s-t paths, trees).
        Returns how many rows were added (this query's: removed with its other rows).
        """
        if not self.tuning.space_cuts or not getattr(self.oracle, "root_cuts", False):
            return 0
        added = add_root_cuts(model, self.oracle.formulation)
        self.stats.extra["space_cuts"] = self.stats.extra.get("space_cuts", 0) + added
        return added
