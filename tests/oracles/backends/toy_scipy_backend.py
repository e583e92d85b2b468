"""A toy backend for the tests: ``scipy.optimize.milp`` as an oracle, in one module.

The shape every model backend has (``docs/extending.md``): a :class:`SolverModel` adapter (the five
edits and ``solve``), a :class:`ModelOracle` subclass building one per thread, and the declaration of
what it answers beside them (``CAPABILITIES``, ``DESCRIPTION``). ``scipy`` is imported inside
functions, so reading the declaration imports no solver. It joins the registry with one line:
``register_backend("toy-scipy", "toy_scipy_backend:ScipyMilpOracle")``.
"""

from __future__ import annotations

import numpy as np

from cmab_milp.oracles.core.base import UnsupportedQuery
from cmab_milp.oracles.core.capabilities import Capabilities
from cmab_milp.oracles.core.model import ModelBase, SolveResult
from cmab_milp.oracles.core.model_oracle import ModelOracle
from cmab_milp.spaces.formulation import Formulation, Row

#: scipy's ``milp`` statuses: 0 optimal, 1 iteration or time limit, 2 infeasible, 3 unbounded, 4 other.
_STATUS = {0: "optimal", 1: "limit", 2: "infeasible"}
#: ``milp`` stops at HiGHS's absolute gap of 1e-6 (it has no option for it): the objective is scaled by
#: 2^20 (exactly, a power of two), so that gap is about 1e-12 of the query's units and the bound proves
#: the answer within the contract's 1e-9 (the certified solve checks it).
OBJECTIVE_SCALE = 2.0**20


class ScipyMilpModel(ModelBase):
    """The formulation as arrays, handed to ``scipy.optimize.milp`` anew per solve (maximising)."""

    name = "scipy milp"
    bound_name = "scipy's (HiGHS's) dual bound"

    def __init__(self, formulation: Formulation):
        self.formulation = formulation
        self.costs = np.zeros(formulation.d)
        self.lower = np.r_[np.zeros(formulation.d), formulation.aux_lb]
        self.upper = np.r_[np.ones(formulation.d), formulation.aux_ub]
        self.arm_lower, self.arm_upper = self.lower.copy(), self.upper.copy()
        self.extra: list[Row] = []  # this query's rows
        self.time_left: float | None = None

    # ------------------------------------------------ the SolverModel protocol
    def set_costs(self, costs: np.ndarray) -> None:
        self.costs = np.asarray(costs, float)

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        self.arm_lower, self.arm_upper = self.lower.copy(), self.upper.copy()
        self.arm_lower[list(include)] = 1.0
        self.arm_upper[list(exclude)] = 0.0

    def add_rows(self, rows: list[Row]) -> None:
        self.extra.extend(rows)

    def undo(self) -> None:
        self.extra = []

    def set_time_limit(self, seconds: float | None) -> None:
        self.time_left = seconds

    def solve(self, tie_tol: float | None = None) -> SolveResult:
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import csr_matrix, vstack

        form, n = self.formulation, self.formulation.n_cols
        objective = np.zeros(n)
        objective[: form.d] = -OBJECTIVE_SCALE * self.costs  # milp minimises
        a, lo, hi = form.matrix()
        blocks = [a, *(csr_matrix((r.coefs, ([0] * len(r.cols), r.cols)), shape=(1, n)) for r in self.extra)]
        lows = np.r_[lo, [r.lb for r in self.extra]]
        highs = np.r_[hi, [r.ub for r in self.extra]]
        constraints = [LinearConstraint(vstack(blocks).tocsr(), lows, highs)] if len(lows) else []
        options: dict = {"mip_rel_gap": 0.0}
        if self.time_left is not None:
            options["time_limit"] = self.time_left
        integrality = np.r_[np.ones(form.d), form.aux_integer.astype(float)]
        res = milp(
            objective,
            integrality=integrality,
            bounds=Bounds(self.arm_lower, self.arm_upper),
            constraints=constraints,
            options=options,
        )
        status = _STATUS.get(res.status, "error")
        if status == "infeasible" or res.x is None:
            return SolveResult(status if status != "optimal" else "error", message=res.message)
        bound = getattr(res, "mip_dual_bound", None)
        bound = None if bound is None else -float(bound) / OBJECTIVE_SCALE
        return SolveResult(status, res.x.tolist(), -float(res.fun) / OBJECTIVE_SCALE, bound, res.message)


class ScipyMilpOracle(ModelOracle):
    """Exact linear oracle on ``scipy.optimize.milp``: the toy backend of the tests."""

    # ---- declaration (read by the registry and the kits, without importing scipy.optimize)
    #: Linear queries only (no quadratic rows in scipy's MILP); ``time_limit`` is scipy's option of that name.
    #: No cost: ``auto`` never picks it. No ``gap=``: not needed by the tests.
    CAPABILITIES = Capabilities(norm=False, time_limit=True, requires=("scipy",))
    DESCRIPTION = "scipy.optimize.milp, rebuilt per solve (a toy for the tests)"

    name = "toy-scipy"

    def __init__(self, space, time_limit: float | None = None, verify: bool = False):
        super().__init__(space, time_limit, verify)

    def _new_model(self, gap: float | None) -> ScipyMilpModel:
        return ScipyMilpModel(self.formulation)

    def _quadratic(self, M: np.ndarray, sign: int):
        raise UnsupportedQuery("toy-scipy answers linear queries only")
