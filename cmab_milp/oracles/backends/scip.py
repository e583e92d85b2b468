"""The ``scip`` backend: the space's MILP, and the norm index as a MIQCP, on SCIP.

The formulation (:meth:`~cmab_milp.spaces.base.ActionSpace.formulation`) is
built once per thread as a PySCIPOpt ``Model``. A query frees the transformed
problem (``freeTransform``), sets the objective and the arm bounds
(``include`` / ``exclude``), adds rows ``a_i + a_j <= 1`` for ``forbid_pairs``,
solves, and deletes those rows again; this is much cheaper than rebuilding
the model (``docs/performance.md``, "Oracles"). Lazy cuts
from the separators are added until the answer is a feasible action, and
deleted with the query's other rows: each query starts from the formulation's
rows, so its answer does not depend on earlier queries.

Norm queries ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` are solved
globally by SCIP's spatial branch-and-bound with an extra column ``s >= 0``:

* ``sign=+1``: maximise ``mu @ a + f * s`` with ``s * s <= a @ M @ a``. When
  ``M`` is not positive semidefinite some actions have ``a @ M @ a < 0`` and
  this model excludes them, though their index is ``mu @ a``; the linear
  argmax of ``mu`` is then solved too and the better of the two answers (by
  the exact index) is returned, which is optimal because the index is never
  below ``mu @ a``.
* ``sign=-1``: maximise ``mu @ a - f * s`` with ``s * s >= a @ M @ a``.

Tolerances: gaps are zero (``limits/absgap`` 1e-11), ``numerics/feastol`` is
1e-9 and ``numerics/epsilon`` 1e-12, and ``M`` is scaled to entries of at most
1 (``f`` absorbs the scale). SCIP accepts the quadratic row with a violation up
to its feasibility tolerance, so ``s`` may exceed ``sqrt(a @ M @ a)`` by about
``1e-9 / (2 s)``: norm answers are optimal to within roughly
``f * 1e-9 / (2 sqrt(a @ M @ a))`` plus the gap, not to the last bit, and two
actions whose indices differ by less than that may be confused. On random
instances every answer matched brute force (``tests/oracles/backends/test_gurobi_ortools.py``). The returned
action's index is re-evaluated exactly in numpy and checked against SCIP's
dual bound; an answer that misses the bound by more than :data:`NORM_SLACK`
raises :class:`~cmab_milp.oracles.core.base.OracleError`.

Time limit: ``time_limit`` holds for a whole query, across its lazy-cut
re-solves and (norm queries) the linear solve: each solve gets what is left of
it as ``limits/time``, and a query past it raises
:class:`~cmab_milp.oracles.core.base.LimitReached` (or, with ``gap``, returns an
incumbent with its proven ratio). A limit per solve let a query run many times its limit
(``bench/norm_large.py``; the figures: ``docs/performance.md``).

Example
-------
>>> import cmab_milp as cm
>>> scip = cm.make_oracle(cm.Cardinality(4, 2), "scip")
>>> scip.argmax_norm(np.array([0.5, 0.4, 0.1, 0.0]), np.eye(4), 1.0).astype(int)
array([1, 1, 0, 0])
>>> int(scip.argmax(-np.ones(4)).sum())  # every weight negative: the empty action
0
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..core.capabilities import SCIP_TIME_LIMIT, Capabilities
from ..core.interrupts import stoppable
from ..core.model import ModelBase, SolveResult
from ..core.model_oracle import ModelOracle
from ..core.queries import LinearQuery, NormQuery
from ..mip.options import SCIP_PARAMS

__all__ = ["NORM_SLACK", "SCIP_PARAMS", "ScipOracle"]

#: Relative slack ``NORM_SLACK * (1 + |bound|)`` allowed between a norm
#: answer's exact index and SCIP's dual bound before the answer is refused:
#: the quadratic row is only satisfied to ``numerics/feastol``.
NORM_SLACK = 1e-6


class _ScipModel(ModelBase):
    """One thread's SCIP model of the formulation, with a spare column ``s`` for norm queries.

    The SCIP :class:`~cmab_milp.oracles.core.model.SolverModel`: every edit first
    frees the transformed problem of the last solve (SCIP edits only in its
    problem stage); :meth:`undo` deletes the query's rows and closes ``s``.
    """

    name = "SCIP"
    integer = True

    def __init__(
        self,
        formulation: Formulation,
        time_limit: float | None,
        gap: float | None = None,
        one_tree: bool = False,
        sepa_freq: int = 1,
        params: dict | None = None,
    ) -> None:
        import pyscipopt

        self.scip = pyscipopt
        model = self.model = pyscipopt.Model("cmab_oracle")
        model.hideOutput()
        fast = pyscipopt.SCIP_PARAMSETTING.FAST
        model.setPresolve(fast)  # full presolving and heuristics cost more than they save on
        model.setHeuristics(fast)  # these small, re-solved models (docs/performance.md)
        for key, value in {**SCIP_PARAMS, **(params or {})}.items():
            model.setParam(key, value)
        if gap:
            model.setParam("limits/gap", float(gap))
        # Probing presolve is off explicitly (FAST leaves it out too): SCIP 10's probing proved a
        # wrong optimum on a recorded GEANT path query (see tests/oracles/backends/test_pulp_scip.py).
        model.setParam("propagating/probing/maxprerounds", 0)
        # The tie rule: SCIP keeps solutions of earlier solves across freeTransform and starts
        # from them, so a tied query's answer depended on the history; keep none.
        model.setParam("limits/maxorigsol", 0)
        # Ctrl-C is Python's (SCIP's own handler reported it as status 'userinterrupt', and one installed by a
        # batch's threads at once could outlive them): core.interrupts stops the solve and raises KeyboardInterrupt
        model.setParam("misc/catchctrlc", False)
        if time_limit is not None:
            model.setParam("limits/time", float(time_limit))
        self.cols = [model.addVar(f"a{i}", vtype="B") for i in range(formulation.d)]
        for j in range(formulation.n_aux):
            lb, ub = float(formulation.aux_lb[j]), float(formulation.aux_ub[j])
            self.cols.append(
                model.addVar(
                    f"x{j}",
                    vtype="I" if formulation.aux_integer[j] else "C",
                    lb=lb if np.isfinite(lb) else None,
                    ub=ub if np.isfinite(ub) else None,
                )
            )
        self.arms = self.cols[: formulation.d]
        self.s = model.addVar("s", vtype="C", lb=0.0, ub=0.0)  # opened only by norm queries
        self.s_coef = 0.0
        self._constraints(formulation.rows)
        #: The constraint handler of :mod:`.scip_tree` (the separators in the one tree), or ``None``.
        self.handler = None
        if one_tree and formulation.separators:
            from .scip_tree import attach, register

            self.handler = attach(model, formulation, self.cols, sepa_freq=sepa_freq)
            register(self)
        self.temporary: list = []  # this query's constraints
        self.lower = np.zeros(formulation.d)
        self.upper = np.ones(formulation.d)
        self.solved = False
        self.time_limit = None if time_limit is None else float(time_limit)
        #: ``time.perf_counter()`` by which the query being answered must end (``None``: each solve gets
        #: the whole limit); set by :meth:`ScipOracle._deadline` for every query, across its re-solves.
        self.deadline: float | None = None

    def free_scip(self) -> None:
        """Drop the SCIP model (and its handler) now; the model is unusable afterwards."""
        self.handler = None
        self.cols = self.arms = self.temporary = []
        self.s = self.model = None

    def _edit(self) -> None:
        if self.solved:
            self.model.freeTransform()
            self.solved = False
            if self.handler is not None:
                self.handler.tvars = None  # the transformed columns are gone

    def _constraints(self, rows: list[Row]) -> list:
        out = []
        for row in rows:
            expr = self.scip.quicksum(float(v) * self.cols[c] for c, v in zip(row.cols, row.coefs, strict=True))
            out.append(self.model.addCons(_ranged(expr, float(row.lb), float(row.ub))))
        return out

    def add_rows(self, rows: list[Row]) -> list:
        """Add this query's rows (deleted by :meth:`undo`)."""
        self._edit()
        out = self._constraints(rows)
        self.temporary.extend(out)
        return out

    def open_norm(self, quad, s_coef: float, s_ub: float) -> None:
        """Add this query's quadratic constraint ``quad(model)`` and open ``s`` with objective ``s_coef``."""
        self._edit()
        self.s_coef = float(s_coef)
        self.model.chgVarUb(self.s, float(s_ub))
        self.temporary.append(self.model.addCons(quad(self)))

    def undo(self) -> None:
        self._edit()
        for cons in self.temporary:
            self.model.delCons(cons)
        self.temporary = []
        if self.s_coef:
            self.s_coef = 0.0
            self.model.chgVarUb(self.s, 0.0)

    def set_costs(self, costs: np.ndarray) -> None:
        self._edit()
        expr = self.scip.quicksum(float(w) * v for v, w in zip(self.arms, costs, strict=True) if w != 0.0)
        if self.s_coef:
            expr = expr + self.s_coef * self.s
        self.model.setObjective(expr, "maximize")

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        self._edit()
        lower, upper = np.zeros(len(self.arms)), np.ones(len(self.arms))
        lower[list(include)] = 1.0
        upper[list(exclude)] = 0.0
        for i in np.flatnonzero((lower != self.lower) | (upper != self.upper)):
            # widen first so that lb <= ub holds after each change
            self.model.chgVarLb(self.arms[i], 0.0)
            self.model.chgVarUb(self.arms[i], float(upper[i]))
            self.model.chgVarLb(self.arms[i], float(lower[i]))
        self.lower, self.upper = lower, upper

    def solve(self, tie_tol: float | None = None) -> SolveResult:
        """Optimise; the status maps through :data:`_STATUS` (``gaplimit``: the gap limit was reached)."""
        model = self.model
        self._edit()
        if self.deadline is not None:
            left = self.deadline - time.perf_counter()
            if left <= 0.0:
                return SolveResult(
                    "limit", message="SCIP status 'timelimit': the query's limit was spent before this solve"
                )
            model.setParam("limits/time", left)
        self.solved = True
        # optimizeNogil lets the models of a batch's worker threads run in parallel (and Ctrl-C be heard)
        with stoppable(model.interruptSolve):
            getattr(model, "optimizeNogil", model.optimize)()
        status = model.getStatus()
        mapped = _STATUS.get(status, "error")
        message = f"SCIP status {status!r}"
        if mapped == "infeasible" or (mapped != "optimal" and model.getNSols() == 0):
            return SolveResult(mapped, message=message)
        sol = model.getBestSol()
        values = [model.getSolVal(sol, v) for v in self.arms]
        return SolveResult(mapped, values, model.getSolObjVal(sol), float(model.getDualbound()), message)


#: SCIP statuses as the pipeline reads them; any other status is an error.
_STATUS = {"optimal": "optimal", "gaplimit": "optimal", "infeasible": "infeasible", "timelimit": "limit"}


def _checked_params(params: dict | None) -> dict:
    """``params`` (SCIP parameter name -> value) checked on a scratch model: an unknown name or a bad value
    raises ``ValueError`` naming it; the tie rule's and the tolerances' parameters may not be changed."""
    if params is None:
        return {}
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise ValueError(f"params must be a dict of SCIP parameter names to values, got {params!r}")
    fixed = sorted(set(params) & {*SCIP_PARAMS, "limits/maxorigsol", "misc/catchctrlc", "limits/time"})
    if fixed:
        raise ValueError(f"SCIP parameter {fixed[0]!r} is set by the backend (tolerances, the tie rule, time_limit)")
    import pyscipopt

    scratch = pyscipopt.Model()
    scratch.hideOutput()
    for key, value in params.items():
        try:
            scratch.setParam(key, value)
        except Exception as exc:  # PySCIPOpt raises KeyError, ValueError or a bare Exception
            raise ValueError(f"bad SCIP parameter {key}={value!r}: {exc}") from None
    return dict(params)


def _ranged(expr, lb: float, ub: float):
    if lb == ub:
        return expr == ub
    if not np.isfinite(lb):
        return expr <= ub
    if not np.isfinite(ub):
        return expr >= lb
    return (lb <= expr) <= ub


class ScipOracle(ModelOracle):
    """Exact MILP (and MIQCP norm) oracle on SCIP, one re-solved model per thread.

    Parameters as :class:`~cmab_milp.oracles.core.model_oracle.ModelOracle`: ``space``,
    ``time_limit``, ``verify`` and ``gap`` (SCIP's ``limits/gap``); ``one_tree``
    (default ``True``) runs the formulation's separators in SCIP's tree
    (:mod:`.scip_tree`), separating fractional points every ``sepa_freq``-th depth
    (``0``: the root only; ``-1``: never); ``one_tree=False``: a re-solve per cut round. ``oriented``
    (default ``True``): keep the formulation's optional columns (the orientation columns of undirected s-t
    paths); ``False`` drops them and separates the s-t cuts they implied in the tree
    (:func:`~cmab_milp.oracles.mip.graph_cuts.without_orientation`; same actions, a smaller model: ``auto``
    asks for it, as it answered hop-limited longest paths of the 10x10 grid about 1.8x faster). ``params``:
    SCIP parameters by SCIP's names, set on every model after :data:`SCIP_PARAMS`
    (``{"branching/relpscost/maxlookahead": 4}``); unknown names and bad values are refused here.
    """

    # ---- declaration (read by the registry, ``auto`` and the kits, without importing pyscipopt)
    #: Linear and norm queries; the quadratic row of a norm query is met to SCIP's feasibility tolerance, so
    #: norm answers are declared within :data:`NORM_SLACK`; ``time_limit`` up to SCIP's ``limits/time`` range.
    CAPABILITIES = Capabilities(
        time_limit=True,
        approximate=True,
        norm_tolerance=NORM_SLACK,
        requires=("pyscipopt",),
        cost="cmab_milp.oracles.core.auto_costs:scip_cost",
        ranges=(SCIP_TIME_LIMIT,),
    )
    DESCRIPTION = "MILP / MIQCP via SCIP (pyscipopt)"

    name = "scip"
    norm_slack = NORM_SLACK
    solver_errors = (Exception,)  # PySCIPOpt raises a bare Exception, e.g. for costs SCIP counts as infinite

    def __init__(
        self,
        space,
        time_limit: float | None = None,
        verify: bool = False,
        gap: float | None = None,
        one_tree: bool = True,
        sepa_freq: int = 1,
        oriented: bool = True,
        params: dict | None = None,
    ):
        if not isinstance(oriented, (bool, np.bool_)):
            raise ValueError(f"oriented must be True or False, got {oriented!r}")
        if isinstance(sepa_freq, bool) or not isinstance(sepa_freq, (int, np.integer)) or sepa_freq < -1:
            raise ValueError(f"sepa_freq must be an integer >= -1, got {sepa_freq!r}")
        self.params = _checked_params(params)
        super().__init__(space, time_limit, verify, gap)
        self.oriented = bool(oriented)
        if not self.oriented:
            from ..mip.graph_cuts import without_orientation

            self.formulation = without_orientation(self.formulation)
        #: The separators run inside SCIP's tree (:mod:`.scip_tree`) instead of a re-solve per cut round.
        self.one_tree = bool(one_tree) and bool(self.formulation.separators)
        self.sepa_freq = int(sepa_freq)

    def _new_model(self, gap: float | None) -> _ScipModel:
        return _ScipModel(self.formulation, self.time_limit, gap, self.one_tree, self.sepa_freq, self.params)

    @contextmanager
    def _deadline(self, exact: bool) -> Iterator[None]:
        """The time limit for the whole query: its lazy-cut re-solves and, for a norm query, the linear one.

        SCIP's ``limits/time`` holds per solve, so a norm query of many cut rounds ran many times its
        limit; each solve now gets what is left of the query's limit. The outermost query sets it.
        """
        model = self._model(exact)
        if self.time_limit is None or model.deadline is not None:
            yield
            return
        model.deadline = time.perf_counter() + self.time_limit
        try:
            yield
        finally:
            model.deadline = None

    def _linear(self, query: LinearQuery, exact: bool = False) -> np.ndarray | None:
        with self._deadline(exact):
            return super()._linear(query, exact)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        with self._deadline(True):
            return super()._norm(query)

    def _quadratic(self, M: np.ndarray, sign: int):
        d = self.d

        def quad(model: _ScipModel):
            arms, s = model.arms, model.s
            expr = model.scip.quicksum(float(M[i, i]) * arms[i] for i in range(d) if M[i, i] != 0.0)
            rows, cols = np.triu_indices(d, 1)
            for i, j in zip(rows, cols, strict=True):
                if M[i, j] != 0.0:
                    expr = expr + float(2.0 * M[i, j]) * arms[i] * arms[j]
            return s * s - expr <= 0.0 if sign > 0 else s * s - expr >= 0.0

        return quad

    # ---------------------------------------------------------- inspection
    def write_model(self, path: str | Path) -> Path:
        """Write the MILP, the formulation's rows (format by suffix: ``.lp``, ``.cip``, ``.mps``)."""
        path = Path(path)
        model = self._model()
        model._edit()
        model.model.writeProblem(str(path), verbose=False)
        return path
