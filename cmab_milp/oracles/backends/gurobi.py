"""The ``gurobi`` backend: the space's MILP, and the norm index as a nonconvex MIQCP, on Gurobi (gurobipy).

Install with ``pip install cmab_milp[gurobi]``. The formulation
(:meth:`~cmab_milp.spaces.base.ActionSpace.formulation`) is built once per
thread as a ``gurobipy.Model`` in its own environment. A query sets the arm
costs and bounds (``include`` / ``exclude``), adds rows ``a_i + a_j <= 1`` for
``forbid_pairs``, solves and removes those rows again. Lazy cuts (subtour
elimination of trees, forests and cyclic paths) are added by a ``MIPSOL``
callback (``LazyConstraints=1``), so one branch and bound answers the query.

Norm queries ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` add a column
``s`` and one quadratic row, solved by Gurobi's spatial branch and bound
(``NonConvex=2``): for ``sign=+1`` maximise ``mu @ a + f s`` with
``s^2 <= a @ M @ a``; for ``sign=-1`` maximise ``mu @ a - f s`` with
``s^2 >= a @ M @ a``. ``M`` is scaled to entries of at most 1 (``f`` absorbs
the scale). When ``M`` is indefinite and ``sign=+1`` the model excludes the
actions with ``a @ M @ a < 0``, whose index is ``mu @ a``; the linear argmax
of ``mu`` is then solved too and the better answer (by the exact index) kept.

Exactness. Gaps are zero (``MIPGap=0``, ``MIPGapAbs=0``), feasibility,
integrality and optimality tolerances 1e-9. Each answer must be integral, obey
the restrictions and the space's rows, and its value recomputed in numpy must
reach Gurobi's own dual bound (``ObjBound``) within ``1e-9 (1 + |bound|)``
for linear queries, or :data:`NORM_SLACK` ``(1 + |bound|)`` for norm queries
(the quadratic row holds only to ``FeasibilityTol``, as in the ``scip``
backend); otherwise :class:`~cmab_milp.oracles.core.base.OracleError`. A time limit
that stops the solve raises too, unless the bound already proves the incumbent.

Tie rule: one thread (``Threads=1``), a fixed seed, and ``Model.reset(1)``
before every solve (Gurobi would otherwise start from the previous query's
solution), so the answer depends on the query and the space only.

Licence: the pip package runs without a licence file on *size-limited*
models: at most 2000 variables and 2000 linear constraints, and at most 200
variables once a quadratic row is present. This is probed once per process;
under it, a formulation with more than 2000 columns (arms, auxiliaries and
``s``) or rows is refused at construction (``ValueError``), and a norm query
on more than 199 arms raises ``OracleError``. A full licence lifts both.

Example
-------
>>> from cmab_milp import Cardinality, make_oracle
>>> gurobi = make_oracle(Cardinality(4, 2), "gurobi", gap=0.01)
>>> [int(v) for v in gurobi.argmax([0.3, -0.2, 0.9, 0.4], exclude=[2])]
[1, 0, 0, 1]
>>> mu, M = [0.5, 0.4, 0.1, 0.0], np.eye(4)
>>> gurobi.argmax_norm(mu, M, 1.0).nonzero()[0].tolist()
[0, 1]
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ...spaces.base import ActionSpace
from ...spaces.formulation import Formulation, Row
from ..core.base import OracleError
from ..core.capabilities import Capabilities
from ..core.interrupts import stoppable
from ..core.model import ModelBase, SolveResult
from ..core.model_oracle import ModelOracle
from ..core.queries import NormQuery

__all__ = ["GUROBI_PARAMS", "NORM_SLACK", "SIZE_LIMIT", "GurobiOracle", "size_limited"]

#: Parameters set on every model: zero gaps, tight tolerances, one thread, a fixed seed.
GUROBI_PARAMS: dict[str, Any] = {
    "OutputFlag": 0,
    "Threads": 1,
    "Seed": 0,
    "MIPGap": 0.0,
    "MIPGapAbs": 0.0,
    "FeasibilityTol": 1e-9,
    "IntFeasTol": 1e-9,
    "OptimalityTol": 1e-9,
}

#: Relative slack allowed between a norm answer's exact index and Gurobi's bound (see the module docstring).
NORM_SLACK = 1e-6

#: The pip licence's limits: (variables, linear constraints, variables with a quadratic row).
SIZE_LIMIT = (2000, 2000, 200)

_LICENCE = "the pip licence of gurobipy limits models to 2000 variables and 2000 linear constraints"


@cache
def size_limited() -> bool:
    """Whether this process runs Gurobi under the size-limited (pip) licence; probed once.

    >>> isinstance(size_limited(), bool)
    True
    """
    import gurobipy as gp

    with gp.Env(empty=True) as env:
        env.setParam("OutputFlag", 0)
        env.start()
        with gp.Model(env=env) as model:
            model.addVars(SIZE_LIMIT[0] + 1, vtype=gp.GRB.BINARY)
            try:
                model.optimize()
            except gp.GurobiError as exc:
                if exc.errno == gp.GRB.Error.SIZE_LIMIT_EXCEEDED:
                    return True
                raise
    return False


class _GurobiModel(ModelBase):
    """One thread's Gurobi model of the formulation, with a spare column ``s`` for norm queries.

    The Gurobi :class:`~cmab_milp.oracles.core.model.SolverModel`.
    """

    name = "Gurobi"
    integer = True

    def __init__(self, formulation: Formulation, time_limit: float | None, gap: float | None = None) -> None:
        import gurobipy as gp

        self.gp = gp
        self.env = gp.Env(empty=True)
        self.env.setParam("OutputFlag", 0)
        self.env.start()
        model = self.model = gp.Model("cmab_oracle", env=self.env)
        for key, value in GUROBI_PARAMS.items():
            model.setParam(key, value)
        if time_limit is not None:
            model.setParam("TimeLimit", float(time_limit))
        if gap:
            model.setParam("MIPGap", float(gap))
        inf = gp.GRB.INFINITY
        self.cols = [model.addVar(vtype=gp.GRB.BINARY, name=f"a{i}") for i in range(formulation.d)]
        for j in range(formulation.n_aux):
            lb, ub = float(formulation.aux_lb[j]), float(formulation.aux_ub[j])
            self.cols.append(
                model.addVar(
                    lb=lb if np.isfinite(lb) else -inf,
                    ub=ub if np.isfinite(ub) else inf,
                    vtype=gp.GRB.INTEGER if formulation.aux_integer[j] else gp.GRB.CONTINUOUS,
                    name=formulation.aux_names[j] if j < len(formulation.aux_names) else f"x{j}",
                )
            )
        self.arms = self.cols[: formulation.d]
        self.s = model.addVar(lb=0.0, ub=0.0, name="s")  # opened only by norm queries
        model.ModelSense = gp.GRB.MAXIMIZE
        self._constraints(formulation.rows)
        self.temporary: list = []  # this query's constraints
        self.formulation = formulation
        if formulation.separators:
            model.setParam("LazyConstraints", 1)
        model.update()

    def constraints_of(self, row: Row) -> list[tuple[Any, str, float]]:
        expr = self.gp.LinExpr([float(v) for v in row.coefs], [self.cols[c] for c in row.cols])
        lb, ub = float(row.lb), float(row.ub)
        if lb == ub:
            return [(expr, "=", ub)]
        out = []
        if np.isfinite(lb):
            out.append((expr, ">", lb))
        if np.isfinite(ub):
            out.append((expr, "<", ub))
        return out

    def _constraints(self, rows: list[Row]) -> list:
        return [self.model.addLConstr(e, sense, rhs) for row in rows for e, sense, rhs in self.constraints_of(row)]

    # ------------------------------------------------ the SolverModel protocol
    def set_costs(self, costs: np.ndarray) -> None:
        self.model.setAttr("Obj", self.arms, costs.tolist())

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        lower, upper = np.zeros(len(self.arms)), np.ones(len(self.arms))
        lower[list(include)] = 1.0
        upper[list(exclude)] = 0.0
        self.model.setAttr("LB", self.arms, lower.tolist())
        self.model.setAttr("UB", self.arms, upper.tolist())

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next solves (what is left of the query's limit, from the cut loop)."""
        self.model.setParam("TimeLimit", self.gp.GRB.INFINITY if seconds is None else float(seconds))

    def add_rows(self, rows: list[Row]) -> list:
        """Add this query's rows (removed by :meth:`undo`)."""
        out = self._constraints(rows)
        self.temporary.extend(out)
        return out

    def open_norm(self, quad, s_coef: float, s_ub: float) -> None:
        """Add this query's quadratic constraint ``quad(self)`` and open ``s`` with objective ``s_coef``."""
        self.model.setParam("NonConvex", 2)
        self.s.Obj, self.s.UB = float(s_coef), float(s_ub)
        self.temporary.append(quad(self))

    def undo(self) -> None:
        if self.temporary:
            self.model.remove(self.temporary)
            self.temporary = []
        if self.s.UB != 0.0 or self.s.Obj != 0.0:
            self.s.Obj, self.s.UB = 0.0, 0.0
            self.model.setParam("NonConvex", -1)
        self.model.update()

    def solve(self, tie_tol: float | None = None) -> SolveResult:
        """Optimise from a cold start (the tie rule); lazy cuts come from the callback."""
        gp, model = self.gp, self.model
        grb = gp.GRB
        model.reset(1)  # drop the previous solution and MIP starts: the tie rule
        model.setParam("DualReductions", 1)
        self._optimize()
        if model.Status == grb.INF_OR_UNBD:  # decide which (the arms are bounded: infeasible in practice)
            model.reset(1)
            model.setParam("DualReductions", 0)
            self._optimize()
        status = model.Status
        if status == grb.INFEASIBLE:
            return SolveResult("infeasible")
        # SUBOPTIMAL (optimality tolerances not met, a solution at hand): the bound certificate decides
        mapped = {grb.OPTIMAL: "optimal", grb.SUBOPTIMAL: "optimal", grb.TIME_LIMIT: "limit"}.get(status, "error")
        message = f"Gurobi status {status}, {model.SolCount} solution(s)"
        if model.SolCount == 0:
            return SolveResult("limit" if mapped == "limit" else "error", message=message)
        values = model.getAttr("X", self.arms)
        return SolveResult(mapped, values, float(model.ObjVal), float(model.ObjBound), message)

    def _optimize(self) -> None:
        """``optimize``; Ctrl-C raises ``KeyboardInterrupt``: heard by :mod:`~cmab_milp.oracles.core.interrupts`
        (which calls ``terminate``) or by Gurobi's own SIGINT handler, which ends the solve as ``INTERRUPTED``
        (status 11: only ``terminate`` or a SIGINT end a solve so)."""
        gp = self.gp
        try:
            with stoppable(self.model.terminate):
                if self.formulation.separators:
                    self.model.optimize(self._lazy_callback)
                else:
                    self.model.optimize()
        except gp.GurobiError as exc:
            if exc.errno == gp.GRB.Error.SIZE_LIMIT_EXCEEDED:
                raise OracleError(f"{_LICENCE} (200 variables with a quadratic row): {exc}") from None
            raise OracleError(f"Gurobi failed: {exc}") from None
        if self.model.Status == gp.GRB.INTERRUPTED:
            raise KeyboardInterrupt

    def _lazy_callback(self, model, where) -> None:
        if where != self.gp.GRB.Callback.MIPSOL:
            return
        action = np.asarray(model.cbGetSolution(self.arms), float) > 0.5
        for row in self.formulation.violated_rows(action):
            for expr, sense, rhs in self.constraints_of(row):
                model.cbLazy(_compare(expr, sense, rhs))

    def close(self) -> None:
        self.model.dispose()
        self.env.dispose()


def _compare(expr, sense: str, rhs: float):
    if sense == "=":
        return expr == rhs
    return expr <= rhs if sense == "<" else expr >= rhs


class GurobiOracle(ModelOracle):
    """Exact MILP (and nonconvex MIQCP norm) oracle on Gurobi, one re-solved model per thread.

    Parameters as :class:`~cmab_milp.oracles.core.model_oracle.ModelOracle`: ``space``,
    ``time_limit`` (a solve it stops raises unless its bound proves the
    incumbent), ``verify`` and ``gap`` (Gurobi's ``MIPGap``).
    """

    # ---- declaration (read by the registry, ``auto`` and the kits, without importing gurobipy)
    #: Linear and norm queries; the quadratic row is met to Gurobi's ``FeasibilityTol``, so norm answers are
    #: declared within :data:`NORM_SLACK`. No cost: ``auto`` never picks it (the pip licence's
    #: :data:`SIZE_LIMIT` makes it a backend for comparison).
    CAPABILITIES = Capabilities(
        requires=("gurobipy",),
        spaces="every space within the licence's size (pip licence: 2000 variables and rows, 199 arms for norms)",
        norm_tolerance=NORM_SLACK,
        time_limit=True,
        approximate=True,
    )
    DESCRIPTION = "MILP / nonconvex MIQCP via Gurobi (gurobipy; pip licence: 2000 variables and rows)"

    name = "gurobi"
    norm_slack = NORM_SLACK
    #: Batches run one query at a time unless ``workers=n`` is given: Gurobi installs a SIGINT handler of its own
    #: for each ``optimize`` and restores the one it found, so optimizes of several threads at once leave one of
    #: theirs in place, which swallowed the next Ctrl-C (tests/oracles/core/test_interrupts.py).
    workers = 1

    def __init__(
        self, space: ActionSpace, time_limit: float | None = None, verify: bool = False, gap: float | None = None
    ):
        super().__init__(space, time_limit, verify, gap)
        n_cols, n_rows = self.formulation.n_cols + 1, sum(_n_constraints(r) for r in self.formulation.rows)
        if (n_cols > SIZE_LIMIT[0] or n_rows > SIZE_LIMIT[1]) and size_limited():
            raise ValueError(
                f"{_LICENCE}; the formulation of {space!r} has {n_cols} variables and {n_rows} constraints"
                " (install a full Gurobi licence, or use another backend)"
            )

    def _new_model(self, gap: float | None) -> _GurobiModel:
        return _GurobiModel(self.formulation, self.time_limit, gap)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        if self.d + 1 > SIZE_LIMIT[2] and size_limited():
            raise OracleError(
                f"the pip licence of gurobipy limits models with a quadratic row to {SIZE_LIMIT[2]} variables;"
                f" this norm query needs {self.d + 1} (install a full Gurobi licence, or use another backend)"
            )
        return super()._norm(query)

    def _quadratic(self, M: np.ndarray, sign: int):
        d = self.d

        def quad(model: _GurobiModel):
            import scipy.sparse as sp

            gp = model.gp
            q = np.zeros((d + 1, d + 1))
            q[:d, :d] = -M
            q[d, d] = 1.0
            xs = gp.MVar.fromlist([*model.arms, model.s])
            sense = "<" if sign > 0 else ">"  # s^2 - a M a <= 0 (sign +1) or >= 0 (sign -1)
            return model.model.addMQConstr(sp.csr_matrix(q), None, sense, 0.0, xs, xs)

        return quad

    # ---------------------------------------------------------- inspection
    def write_model(self, path: str | Path) -> Path:
        """Write the MILP, the formulation's rows (format by suffix: ``.lp``, ``.mps``)."""
        path = Path(path)
        model = self._model()
        model.model.update()
        model.model.write(str(path))
        return path

    def reset(self) -> None:
        self._close_models()
        super().reset()

    def _close_models(self) -> None:
        for key in ("model", "exact_model"):
            model = getattr(self._local, key, None)
            if model is not None:
                model.close()
                setattr(self._local, key, None)


def _n_constraints(row: Row) -> int:
    if row.lb == row.ub:
        return 1
    return int(np.isfinite(row.lb)) + int(np.isfinite(row.ub))
