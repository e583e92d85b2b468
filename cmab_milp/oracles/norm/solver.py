"""The norm solver: one query's MILPs on the oracle's per-thread norm model.

:func:`solve_norm` answers a :class:`~cmab_milp.oracles.core.base.NormQuery` exactly
with a short sequence of MILPs on one :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`
per thread (the space's formulation, compiled once; each query appends its own
columns and rows and removes them afterwards, and starts from a cleared solver:
the tie rule). The methods are an ordered tuple per sign (:mod:`.norm.method`); the solver walks it and the first
method that applies and answers wins (a budgeted try that runs out, or a first step that cannot settle the query,
passes it on):

``sign=+1`` (:data:`PLUS_METHODS`)
    the linear argmax where the norm term vanishes (:mod:`.norm.linear`); the concave path LP on s-t paths of graphs
    with cycles (:mod:`.paths.method`); the concave branch on spaces whose MILP needs lazy cuts and on matchings, then
    its budgeted try on the other spaces with a combinatorial linear oracle, its incumbent kept
    (:mod:`.branch.method`); the outer approximation in the quadratic form (:mod:`.outer.plus`).

``sign=-1`` (:data:`MINUS_METHODS`)
    the linear argmax where the norm term vanishes; the path LP with tangents of the norm; the linear argmax again,
    the answer when its bound proves it (:mod:`.norm.linear`); the branch on the linear oracle for a definite ``M``
    (:mod:`.branch.method`); the disaggregated tangents (:mod:`.outer.minus`, ``tuning.minus_outer``); the piecewise
    secants over ``L`` (:mod:`.secants.minus`).

Each method's options are ``tuning.norm.<group>`` (:data:`~cmab_milp.oracles.mip.tuning.OPTION_GROUPS`).

First incumbents (:mod:`.starts.incumbents`) are lower bounds only: exactness rests on the methods' bounds.

The MILP methods first add the space's rows violated at LP points (the fractional separators of
trees and paths, :func:`~cmab_milp.oracles.mip.root_cuts.add_root_cuts`; valid for every action,
so no bound changes): otherwise each cycle row comes from :meth:`NormSolver.solve`'s lazy
loop, every round a new branch and bound.

The oracle's ``time_limit`` holds for the whole query: each MILP gets what is left
of it, and a query past it raises :class:`~cmab_milp.oracles.core.base.LimitReached`.

In the certified approximate mode (the oracle's ``norm_gap``) a sign +1 query that carries a
:class:`~.carry.NormCarry` is first offered the sequence's last answer, proven by a drift bound from the
last solved query (:mod:`.carry`); only when that fails is it solved, at the carry's tighter gap.

Each loop closes with :func:`~cmab_milp.oracles.core.certify.proven`; gaps left by solver noise are closed
by setting exactly valued actions aside (:mod:`~cmab_milp.oracles.norm.cuts`). The answer's value is
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
from contextlib import ExitStack
from dataclasses import dataclass, field

import numpy as np

from ..._threads import blas_single_thread
from ..core.base import LimitReached, OracleError, tolerance
from ..core.certify import proven
from ..core.engine import Engine
from ..core.model import SolveResult
from ..core.queries import LinearQuery, NormQuery
from ..mip.root_cuts import add_root_cuts
from ..mip.tuning import HighsTuning
from .branch.method import MINUS_BRANCH, PLUS_BRANCH, PLUS_BRANCH_TRY
from .lifting import quadratic_form_bounds
from .linear import LINEAR_BOUND, LINEAR_ONLY
from .method import Answer, LinearStart, NormMethod
from .outer.minus import MINUS_OUTER
from .outer.plus import OUTER_PLUS
from .paths.method import MINUS_PATHS, PLUS_PATHS
from .scaling import arms_bound, unit_objective, unit_scale
from .secants.minus import SECANTS_MINUS

__all__ = ["MINUS_METHODS", "PLUS_METHODS", "NormSolver", "NormStats", "last_stats", "solve_norm"]

#: Sign +1's methods in the order they are tried (:mod:`.norm.method`): the first that applies and answers wins.
PLUS_METHODS: tuple[NormMethod, ...] = (LINEAR_ONLY, PLUS_PATHS, PLUS_BRANCH, PLUS_BRANCH_TRY, OUTER_PLUS)
#: Sign -1's methods in the order they are tried.
MINUS_METHODS: tuple[NormMethod, ...] = (
    LINEAR_ONLY,
    MINUS_PATHS,
    LINEAR_BOUND,
    MINUS_BRANCH,
    MINUS_OUTER,
    SECANTS_MINUS,
)

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
    try:
        with blas_single_thread():  # ~100 x 100 algebra: threads only wait for each other (cmab_milp._threads)
            answer, bound = solver.run()
    finally:  # (a query stopped by its time limit reports what it did too)
        oracle.last_norm_stats = solver.stats
    bound *= solver.value_scale  # back to the query's units (a power of 2: exact)
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


class NormSolver:
    """One query: its state (the :class:`~.method.NormContext` the methods read) and the walk over its sign's methods.

    Unless the norm term vanishes, the walk starts by preparing the thread's norm model for the query
    (:attr:`model`); the query's columns and rows appended to it are removed when the walk ends.
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
        #: A budgeted method's incumbent, for the methods after it (:data:`~.branch.method.PLUS_BRANCH_TRY`).
        self.carried: tuple[np.ndarray | None, float] = (None, -np.inf)
        #: Sign -1's linear argmax and bound (:data:`~.linear.LINEAR_BOUND`), for the methods after it.
        self.linear: LinearStart | None = None
        self._model: Engine | None = None
        self._opened: tuple[int, int, ExitStack] | None = None

    # ------------------------------------------------------------ dispatch
    def run(self, methods: tuple[NormMethod, ...] | None = None) -> Answer:
        """Walk the sign's methods (:data:`PLUS_METHODS`, :data:`MINUS_METHODS`, or ``methods``): the first that
        applies and returns an answer wins. The answer's bound is in the scaled query's units (``value_scale``).

        >>> import numpy as np
        >>> import cmab_milp as cm
        >>> from cmab_milp.oracles.norm.outer.plus import OUTER_PLUS
        >>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
        >>> solver = NormSolver(oracle, oracle.norm_query(np.array([0.5, 0.0, 0.6, 0.55]), np.eye(4), 1.0))
        >>> action, bound = solver.run((OUTER_PLUS,))
        >>> action.astype(int).tolist(), solver.stats.method
        ([0, 0, 1, 1], 'oa-quadratic-form')
        """
        if methods is None:
            methods = PLUS_METHODS if self.query.sign > 0 else MINUS_METHODS
        try:
            if self.l_hi > 0.0:  # (else the norm term vanishes: LINEAR_ONLY answers with no model)
                self._open_model()
            for method in methods:
                if method.applies(self):
                    self.stats.method = method.name
                    answer = method.run(self)
                    if answer is not None:
                        return answer
            raise OracleError("no norm method answered")  # (the default tuples' last methods always do)
        finally:
            self._close_model()

    @property
    def model(self) -> Engine:
        """The thread's norm model, prepared for this query (:meth:`_open_model`)."""
        if self._model is None:
            self._open_model()
        return self._model

    def _open_model(self) -> None:
        """Prepare the thread's norm model for this query: a cleared solver (the tie rule: nothing of earlier
        queries, basis or solution, carries over), the query's bounds, costs and forbidden pairs, quiet HiGHS
        options (with ``norm_gap``: its MIP gap). :meth:`_close_model` undoes it."""
        model = self.oracle.norm_model()
        self._opened = (model.num_cols, model.num_rows, ExitStack())
        model.clear_solver()
        self._model = model
        model.set_arm_bounds(self.res.include, self.res.exclude)
        model.set_costs(self.query.mu)
        self._add_forbid_rows(model)
        options = _QUIET_OPTIONS if self.gap is None else {**_QUIET_OPTIONS, "mip_rel_gap": max(self.gap, 1e-12)}
        self._opened[2].enter_context(model.options(options))

    def _close_model(self) -> None:
        """The model's options back, and this query's columns and rows removed."""
        if self._model is None:
            return
        (n_cols, n_rows, options), model = self._opened, self._model
        self._model = self._opened = None
        options.close()
        model.delete_rows(n_rows, model.num_rows)
        model.delete_cols(n_cols, model.num_cols)

    def clock(self) -> float:
        """The clock of the query's time limit (the module's ``_clock``, read at each call)."""
        return _clock()

    def linear_argmax(self) -> np.ndarray | None:
        """The linear argmax of the query's ``mu`` under its restrictions (one MILP solve in the statistics)."""
        self.stats.milp_solves += 1
        return self.oracle.solve_linear(LinearQuery(self.query.mu, self.res))

    # ------------------------------------------------------------ solving
    def solve(self, model: Engine, start: np.ndarray | None = None) -> tuple[np.ndarray, SolveResult] | None:
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
            model.add_rows(cuts)  # this query's only: removed by _close_model (the tie rule)
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

    def space_cuts(self, model: Engine) -> int:
        """The space's rows violated at the LP relaxation's points (:func:`~.mip.root_cuts.add_root_cuts`).

        Valid for every action of the space, so no bound changes; they spare the lazy-cut loop
        of :meth:`solve` its re-solves of the whole branch and bound (s-t paths, trees).
        Returns how many rows were added (this query's: removed with its other rows).
        """
        if not self.tuning.space_cuts or not getattr(self.oracle, "root_cuts", False):
            return 0
        added = add_root_cuts(model, self.oracle.formulation)
        self.stats.extra["space_cuts"] = self.stats.extra.get("space_cuts", 0) + added
        return added
