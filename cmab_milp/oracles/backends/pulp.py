"""The ``pulp`` backend: the space's MILP solved through PuLP with any of its solvers.

``make_oracle(space, "pulp")`` uses ``PULP_CBC_CMD`` when PuLP finds it, else
PuLP's ``HiGHS`` (the highspy API solver); ``"pulp:NAME"`` picks any solver in
``pulp.listSolvers(onlyAvailable=True)``. PuLP cannot re-solve a model in
place: every solve hands the whole problem to the solver again. A query pays
the assembly of a fresh ``LpProblem``, PuLP's translation into the solver (for
``HiGHS`` Python loops over columns and rows) and, for CBC, an MPS file and a
new process: several times the compiled ``"highs"`` backend's time (figures in
``docs/performance.md``, section "Oracles"). Use
``"highs"`` when speed matters; this backend is for cross-checking and for
users who want a particular PuLP solver.

The formulation is the one every model-based backend compiles
(:meth:`~cmab_milp.spaces.base.ActionSpace.formulation`): ``include`` and
``exclude`` become arm bounds, ``forbid_pairs`` rows ``a_i + a_j <= 1``, and the
lazy cuts of the separators are added until the answer is a feasible action
(for this query only: each query starts from the formulation's rows, so its
answer does not depend on earlier queries). Gaps are set to zero (absolute gap ``1e-11``)
for the solvers listed in :data:`EXACT_OPTIONS`. PuLP hands CBC its costs
through an MPS file with 13 significant digits, so CBC answers are exact to
about ``m * 5e-13 * max|w|``, inside the contract's ``1e-9 * (1 + |optimum|)``
for weights of moderate size. The limit: on near-ties (a few 1e-9 apart) CBC's own
tolerances decide, and it can fall short of the optimum by more than that tolerance
(the measured rate: ``docs/performance.md``, "Oracle core and backends"). For exactness at
that scale use a solver in :data:`BOUND_SOLVERS`, whose answers are checked
against their bound.

What guards exactness. Every answer must be integral, obey the restrictions
and pass the separators. For ``HiGHS`` and ``SCIP_PY``
(:data:`BOUND_SOLVERS`) the solver's dual bound is read after the last solve
and the answer is refused (:class:`~cmab_milp.oracles.core.base.OracleError`) unless
its value, recomputed in numpy, is within ``1e-9 * (1 + |bound|)`` of it; this
catches early stops (gaps loosened by the user, SCIP's ``gaplimit``, time
limits with an incumbent), which are accepted only when the bound proves
them. PuLP's command-line solvers (``PULP_CBC_CMD``, ``COIN_CMD``, ``GLPK_CMD``,
...) hand back no bound: there only PuLP's ``Optimal`` status with an
``Optimal`` solution is accepted, the gaps stay at zero (looser ``gapRel`` /
``gapAbs`` are refused with ``ValueError``), and exactness rests on the
solver's own proof. No bound check can catch a solver that proves a wrong
bound: SCIP 10.0's probing presolve did exactly that on path MILPs (see
:data:`EXACT_OPTIONS`, which turns it off); such defects are found by
cross-checking backends (the conformance kit, ``cmab-milp compare-oracles``).

Norm queries are not linear, and the exact method of :mod:`~cmab_milp.oracles.norm` edits a
compiled HiGHS model between many MILP solves, which PuLP's solve-from-scratch
interface would make slow and would need a second implementation; this
backend raises :class:`~cmab_milp.oracles.core.base.UnsupportedQuery` for them
(``argmax_norm`` with ``f == 0`` is linear and answered).

Example
-------
>>> import cmab_milp as cm
>>> via_pulp = cm.make_oracle(cm.Cardinality(4, 2), "pulp:HiGHS")
>>> via_pulp.solver_name, int(via_pulp.argmax([0.3, -0.2, 0.9, 0.4], exclude=[2]).sum())
('HiGHS', 2)
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ...spaces.base import ActionSpace
from ...spaces.formulation import Row
from ..core.base import OracleError, UnsupportedQuery, check_gap, check_time_limit
from ..core.capabilities import Capabilities
from ..core.model import ModelBase, SolveResult
from ..core.model_oracle import ModelOracle
from ..core.queries import LinearQuery, NormQuery
from ..core.registry import make_oracle
from ..mip.options import HIGHS_OPTIONS, SCIP_PARAMS
from .highs_solve import new_highs

__all__ = ["BOUND_SOLVERS", "EXACT_OPTIONS", "PulpOracle", "available_pulp_solvers"]

#: Solver options that make each PuLP solver prove optimality to ~1e-11.
#: PuLP's defaults stop HiGHS at a relative gap of 1e-4; CBC by default
#: accepts LP optima within a dual tolerance of 1e-7 and prunes nodes that
#: cannot improve the incumbent by its cutoff increment, both of which lose
#: near-ties of ~1e-9 (seen in the conformance kit), hence ``dualTolerance``
#: and ``increment``. ``SCIP_PY`` gets the numerics of the ``scip`` backend
#: (:data:`~cmab_milp.oracles.backends.scip.SCIP_PARAMS`) and no probing in presolve:
#: with SCIP 10.0 (PySCIPOpt 6.3) probing presolve cuts off the optimal path
#: of some degree-model path MILPs and then reports the smaller optimum with a
#: matching dual bound (status ``optimal``, gap 0), so no bound check can see
#: it; the recorded GEANT query (3.1214 instead of 3.8861) and the 25-edge
#: graph in ``tests/oracles/backends/test_pulp_scip.py`` reproduce it with SCIP's default
#: settings on the model read from an LP file. The ``scip`` backend's fast
#: presolve already skips probing. Solvers not listed get
#: ``gapRel=0, gapAbs=1e-11``. An ``options`` list given by the user is
#: appended to the one here (SCIP and CBC apply options in order, so the
#: user's settings win).
EXACT_OPTIONS: dict[str, dict[str, Any]] = {
    "PULP_CBC_CMD": {
        "gapRel": 0.0,
        "gapAbs": 1e-11,
        # no "threads": CBC runs one thread by default, and "-threads 1" made some solves
        # stall (PuLP 3.3 bundling CBC 2.10.3; docs/performance.md)
        "options": ["integerTolerance 1e-9", "primalTolerance 1e-9", "dualTolerance 1e-10", "increment 1e-11"],
    },
    "HiGHS": {
        "gapRel": 0.0,
        "gapAbs": 1e-11,
        "threads": 1,
        **{k: v for k, v in HIGHS_OPTIONS.items() if k not in ("output_flag", "threads", "mip_rel_gap", "mip_abs_gap")},
    },
    "SCIP_PY": {
        "gapRel": 0.0,  # PuLP sets limits/gap and limits/absgap from these
        "gapAbs": 1e-11,
        "options": [
            *(f"{k}={v}" for k, v in SCIP_PARAMS.items() if k not in ("limits/gap", "limits/absgap")),
            "propagating/probing/maxprerounds=0",
        ],
    },
}
EXACT_OPTIONS["COIN_CMD"] = EXACT_OPTIONS["PULP_CBC_CMD"]
_GENERIC_EXACT = {"gapRel": 0.0, "gapAbs": 1e-11}

#: PuLP solvers whose dual bound this backend reads (from ``prob.solverModel``)
#: and checks every answer against. The others report only a status and a
#: solution; there, exactness rests on the zero gaps of :data:`EXACT_OPTIONS`
#: and on accepting only PuLP's ``Optimal`` status with an ``Optimal``
#: solution, i.e. on the solver's own proof.
BOUND_SOLVERS = ("HiGHS", "SCIP_PY")

# The loosest gapRel / gapAbs accepted for a solver outside BOUND_SOLVERS.
_MAX_UNCHECKED_GAP = 1e-9


@cache
def available_pulp_solvers() -> tuple[str, ...]:
    """Names of the PuLP solvers usable here (``pulp.listSolvers(onlyAvailable=True)``, cached).

    >>> "HiGHS" in available_pulp_solvers()
    True
    """
    import pulp

    return tuple(name for name in dict.fromkeys(pulp.listSolvers(onlyAvailable=True)) if name not in UNSUPPORTED)


#: PuLP solver adapters left out although installed, with the reason (shown when one is asked for).
UNSUPPORTED = {
    "GUROBI": "PuLP's GUROBI adapter with gurobipy 13 refused the exact gap options ('gapAbs') and, given Gurobi's "
    "own names, returned non-optimal answers on Cardinality(6, 2); use the native backend 'gurobi' instead",
    "GUROBI_CMD": "no gurobi_cl here with a licence; use the native backend 'gurobi' instead",
}


def _default_solver() -> str:
    for name in ("PULP_CBC_CMD", "HiGHS"):
        if name in available_pulp_solvers():
            return name
    raise ValueError(
        f"no default PuLP solver: neither PULP_CBC_CMD nor HiGHS is available; "
        f"available: {list(available_pulp_solvers())}"
    )


class _ThreadModel(ModelBase):
    """One thread's PuLP variables and base constraints (PuLP writes solutions into them).

    The PuLP :class:`~cmab_milp.oracles.core.model.SolverModel`: the edits are
    recorded, and each :meth:`solve` hands a fresh ``LpProblem`` to the solver.
    """

    integer = True

    def __init__(self, formulation, pulp, oracle: PulpOracle | None = None) -> None:
        self.pulp = pulp
        self.oracle = oracle
        self.name = f"PuLP solver {oracle.solver_name}" if oracle is not None else "PuLP"
        self.costs = np.zeros(formulation.d)
        self.include: tuple[int, ...] = ()
        self.exclude: tuple[int, ...] = ()
        self.extra: list[Row] = []  # this query's rows
        #: Seconds for the next solve (what is left of the query's limit); ``None``: the solver's own.
        self.time_left: float | None = None
        owner = pulp.LpProblem("cmab_vars", pulp.LpMaximize)
        self.cols = [owner.add_variable(f"a{i}", 0, 1, cat=pulp.LpInteger) for i in range(formulation.d)]
        for j in range(formulation.n_aux):
            lb, ub = float(formulation.aux_lb[j]), float(formulation.aux_ub[j])
            cat = pulp.LpInteger if formulation.aux_integer[j] else pulp.LpContinuous
            self.cols.append(
                owner.add_variable(f"x{j}", lb if np.isfinite(lb) else None, ub if np.isfinite(ub) else None, cat=cat)
            )
        self.arms = self.cols[: formulation.d]
        self.constraints: list = []
        for k, row in enumerate(formulation.rows):
            self.constraints.extend(self.constraints_of(row, f"r{k}"))

    def constraints_of(self, row: Row, name: str) -> list:
        pulp = self.pulp
        coefs: dict[int, float] = {}
        for c, v in zip(row.cols, row.coefs, strict=True):
            coefs[c] = coefs.get(c, 0.0) + float(v)
        expr = pulp.LpAffineExpression([(self.cols[c], v) for c, v in coefs.items()])
        lb, ub = float(row.lb), float(row.ub)
        if lb == ub:
            return [pulp.LpConstraint(expr, pulp.LpConstraintEQ, f"{name}e", ub)]
        out = []
        if np.isfinite(lb):
            out.append(pulp.LpConstraint(expr, pulp.LpConstraintGE, f"{name}l", lb))
        if np.isfinite(ub):
            out.append(pulp.LpConstraint(expr, pulp.LpConstraintLE, f"{name}u", ub))
        return out

    # ------------------------------------------------ the SolverModel protocol
    def set_costs(self, costs: np.ndarray) -> None:
        self.costs = costs

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        self.include, self.exclude = include, exclude

    def add_rows(self, rows: list[Row]) -> None:
        self.extra.extend(rows)

    def undo(self) -> None:
        self.extra = []

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next solve (the cut loop gives each what is left of the query's limit)."""
        self.time_left = seconds

    def solve(self, tie_tol: float | None = None) -> SolveResult:
        """Build the problem, solve it, and map PuLP's status and solution status."""
        pulp, oracle = self.pulp, self.oracle
        prob = self.problem(self.costs, self.include, self.exclude, self.extra)
        solver = oracle._solver
        limit = self.time_left
        if limit is not None and limit != oracle.time_limit:  # the solver is shared by the threads: a copy
            solver = copy.copy(solver)
            solver.timeLimit = limit
        start = time.perf_counter()
        try:
            prob.solve(solver)
        except Exception as exc:  # PuLP's own errors, and whatever a solver's Python API raises
            raise OracleError(f"{self.name} failed: {type(exc).__name__}: {exc}") from None
        if prob.status == pulp.LpStatusInfeasible:
            return SolveResult("infeasible")
        message = (
            f"returned status {pulp.LpStatus[prob.status]!r}"
            f" / solution {pulp.LpSolution.get(prob.sol_status, prob.sol_status)!r}"
        )
        bounded = oracle.solver_name in BOUND_SOLVERS
        if prob.status == pulp.LpStatusOptimal and prob.sol_status == pulp.LpSolutionOptimal:
            status = "optimal"
        elif bounded and prob.sol_status == pulp.LpSolutionIntegerFeasible:
            # stopped early (SCIP's "gaplimit" at absgap 1e-11, a gap, a time limit): the bound decides
            limited = prob.status != pulp.LpStatusOptimal or oracle.stopped_by_time_limit(prob)
            status = "limit" if limited else "optimal"
        elif limit is not None and time.perf_counter() - start >= 0.9 * limit:
            return SolveResult("limit", message=message + " (stopped by the time limit)")
        else:
            return SolveResult("error", message=message + " (time limit or failure): optimality not proven")
        values = [math.nan if v.varValue is None else float(v.varValue) for v in self.arms]
        bound = oracle.solver_bound(prob) if bounded else None
        if bounded and (bound is None or not math.isfinite(bound)):
            raise OracleError(f"{self.name} reported no finite bound ({bound!r}): cannot check the answer")
        return SolveResult(status, values, float("nan"), bound, message)

    def confirm_infeasible(self, restrictions) -> None:
        """PuLP's ``Infeasible`` is believed only when HiGHS proves it (:meth:`PulpOracle._certify_infeasible`)."""
        self.oracle._certify_infeasible(restrictions)

    def problem(self, weights: np.ndarray, include, exclude, pairs: list[Row]):
        """A fresh ``LpProblem`` for one solve: costs, arm bounds, base rows and the query's rows ``pairs``."""
        pulp = self.pulp
        lower = np.zeros(len(self.arms))
        upper = np.ones(len(self.arms))
        lower[list(include)] = 1.0
        upper[list(exclude)] = 0.0
        for var, lo, up in zip(self.arms, lower, upper, strict=True):
            var.lowBound, var.upBound = float(lo), float(up)
        prob = pulp.LpProblem("cmab_oracle", pulp.LpMaximize)
        prob.setObjective(pulp.LpAffineExpression([(v, float(w)) for v, w in zip(self.arms, weights, strict=True)]))
        for con in self.constraints:
            prob.addConstraint(con)
        for k, row in enumerate(pairs):
            for con in self.constraints_of(row, f"p{k}"):
                prob.addConstraint(con)
        return prob


class PulpOracle(ModelOracle):
    """Exact MILP oracle through PuLP; the problem is handed to the solver anew per solve.

    Parameters
    ----------
    space:
        The action space.
    solver:
        A PuLP solver name from ``pulp.listSolvers(onlyAvailable=True)``;
        default ``PULP_CBC_CMD`` if available, else ``HiGHS``.
    time_limit:
        Seconds per solve; hitting it raises ``OracleError`` (unless the
        solver's bound already proves its incumbent, for :data:`BOUND_SOLVERS`).
    solver_options:
        Extra keyword arguments for the PuLP solver's constructor; they
        override :data:`EXACT_OPTIONS`, except that an ``options`` list is
        appended to the exact one. Looser gaps are refused (``ValueError``)
        for solvers outside :data:`BOUND_SOLVERS`; for those inside, answers
        that the bound does not prove raise ``OracleError``.
    verify:
        Also check every answer with ``space.contains`` (slower; for tests).
    gap:
        The certified approximate mode (``gapRel``; see
        :class:`~cmab_milp.oracles.backends.highs.HighsOracle`), for the solvers of
        :data:`BOUND_SOLVERS` only: the others give no bound to prove a ratio with.
    """

    # ---- declaration (read by the registry, ``auto`` and the kits, without importing pulp)
    #: Linear queries only (norm queries: see the module docstring); ``gap=`` only with the solvers whose
    #: bound is read (:data:`BOUND_SOLVERS`): the others give no bound to prove a ratio with.
    CAPABILITIES = Capabilities(
        norm=False,
        time_limit=True,
        approximate=True,
        approximate_solvers=BOUND_SOLVERS,
        requires=("pulp",),
        takes_solver=True,
        solvers=available_pulp_solvers,
        solver_label="PuLP",
    )
    DESCRIPTION = "model rebuilt per query via PuLP"

    name = "pulp"

    def __init__(
        self,
        space: ActionSpace,
        solver: str | None = None,
        time_limit: float | None = None,
        solver_options: dict[str, Any] | None = None,
        verify: bool = False,
        gap: float | None = None,
    ):
        if solver is None:
            solver = _default_solver()
        if not isinstance(solver, str) or solver not in available_pulp_solvers():
            raise ValueError(
                f"unknown or unavailable PuLP solver {solver!r}; available: {list(available_pulp_solvers())}"
            )
        time_limit = check_time_limit(time_limit)
        gap = check_gap(gap)
        if gap is not None and solver not in BOUND_SOLVERS:
            raise ValueError(
                f"gap needs a solver that reports a dual bound ({', '.join(BOUND_SOLVERS)}); PuLP solver"
                f" {solver!r} reports none, so no ratio could be proven"
            )
        if solver_options is not None and not isinstance(solver_options, dict):
            raise ValueError(f"solver_options must be a dict, got {type(solver_options).__name__}")
        if solver not in BOUND_SOLVERS:
            loose = {
                k: v for k, v in (solver_options or {}).items() if k in ("gapRel", "gapAbs") and v > _MAX_UNCHECKED_GAP
            }
            if loose:
                raise ValueError(
                    f"PuLP solver {solver!r} reports no bound, so answers at the loosened gaps {loose} could be"
                    f" suboptimal without anyone noticing; keep gaps <= {_MAX_UNCHECKED_GAP:g} or use one of"
                    f" {list(BOUND_SOLVERS)}, whose answers are checked against their bound"
                )
        super().__init__(space, time_limit, verify, gap)
        self.solver_name = solver
        exact = EXACT_OPTIONS.get(solver, _GENERIC_EXACT)
        self.solver_options = {**exact, **(solver_options or {})}
        if gap:
            self.solver_options["gapRel"] = gap
        if "options" in exact and "options" in (solver_options or {}):
            self.solver_options["options"] = [*exact["options"], *solver_options["options"]]
        if solver == "HiGHS":
            new_highs()  # swallows highspy's once-per-process banner
        # PuLP solver objects keep no per-solve state (results go into the
        # LpProblem), so all threads share one.
        self._solver = self._new_solver()

    def __repr__(self) -> str:
        return f"PulpOracle({self.space!r}, solver={self.solver_name!r})"

    # ------------------------------------------------------------- pieces
    def _new_solver(self):
        import pulp

        options = {"msg": False, **self.solver_options}
        if self.time_limit is not None:
            options["timeLimit"] = self.time_limit
        try:
            with warnings.catch_warnings():
                # PuLP 3.3 warns that PULP_CBC_CMD goes away in PuLP 4.0; once it
                # does, listSolvers() stops offering it and the default is HiGHS.
                warnings.filterwarnings("ignore", "PULP_CBC_CMD is deprecated", DeprecationWarning)
                return pulp.getSolver(self.solver_name, **options)
        except TypeError as exc:
            raise ValueError(f"PuLP solver {self.solver_name!r} rejects the options {sorted(options)}: {exc}") from None

    def _new_model(self, gap: float | None) -> _ThreadModel:
        import pulp

        return _ThreadModel(self.formulation, pulp, self)  # (a gap is a solver option, set on the solver)

    # ------------------------------------------------------------- queries
    def _certify_infeasible(self, restrictions) -> None:
        """``None`` when HiGHS proves the restricted space empty; else ``OracleError``.

        PuLP reports ``Infeasible`` for what CBC's solution file calls infeasible,
        which CBC also writes when it stops on a time limit in preprocessing or meets
        numerical trouble (weights of order 1e20): ``None`` would then claim that no
        action qualifies. The claim is checked by a feasibility MILP (zero costs) on
        the compiled HiGHS model, under the same time limit.
        """
        checker = getattr(self._local, "feasibility", None)
        if checker is None:
            checker = self._local.feasibility = make_oracle(self.space, "highs", time_limit=self.time_limit)
        try:
            witness = checker._linear(LinearQuery(np.zeros(self.d), restrictions))
        except OracleError as exc:
            raise OracleError(
                f"PuLP solver {self.solver_name} reported 'Infeasible' and the feasibility check failed ({exc});"
                " no answer is returned"
            ) from None
        if witness is None:
            return None
        raise OracleError(
            f"PuLP solver {self.solver_name} reported 'Infeasible' but the query has feasible actions"
            " (the solver stopped on a limit or met numerical trouble); no action is returned"
        )

    def solver_bound(self, prob) -> float | None:
        """The solver's dual (upper) bound on the last solve of ``prob``; ``None`` if PuLP does not expose one.

        Available for the solvers in :data:`BOUND_SOLVERS` (read from
        ``prob.solverModel``); PuLP's command-line solvers (CBC, GLPK, ...)
        only hand back a status and a solution.
        """
        solver_model = getattr(prob, "solverModel", None)
        if solver_model is None or self.solver_name not in BOUND_SOLVERS:
            return None
        if self.solver_name == "HiGHS":
            # PuLP hands HiGHS the minimisation of -objective; the bound is that problem's lower bound
            return -float(solver_model.getInfoValue("mip_dual_bound")[1])
        return float(solver_model.getDualbound())  # SCIP_PY: the model keeps the maximise sense

    def stopped_by_time_limit(self, prob) -> bool:
        """Whether the last solve of ``prob`` ended on its time limit (read for :data:`BOUND_SOLVERS`)."""
        solver_model = getattr(prob, "solverModel", None)
        if solver_model is None or self.solver_name not in BOUND_SOLVERS:
            return False
        if self.solver_name == "HiGHS":
            return solver_model.modelStatusToString(solver_model.getModelStatus()) == "Time limit reached"
        return solver_model.getStatus() == "timelimit"

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        raise UnsupportedQuery(
            "the pulp backend answers linear queries only (PuLP models are linear); "
            "use 'highs', 'scip' or 'enumerate' for argmax_norm"
        )

    # ---------------------------------------------------------- inspection
    def write_model(self, path: str | Path) -> Path:
        """Write the MILP (the formulation's rows) with zero costs, as ``.lp`` or ``.mps``."""
        path = Path(path)
        prob = self._model().problem(np.zeros(self.d), (), (), [])
        if path.suffix.lower() == ".mps":
            prob.writeMPS(str(path))
        else:
            prob.writeLP(str(path))
        return path
