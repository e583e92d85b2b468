"""The ``ortools`` backend: linear queries on OR-Tools' CP-SAT, with the float weights scaled to integers.

Install with ``pip install cmab_milp[ortools]``. CP-SAT solves integer
programs with integer coefficients exactly (its objective is an integer, so
``OPTIMAL`` is a proof to the last unit). The library's weights and some rows
are floats; this module makes the integer model and proves what it can.

What is proven, per query ``max w @ a`` over the actions ``F``:

1. **Rows.** A row whose coefficients are integers is kept exactly (its bounds
   rounded inwards after a ``1e-9 (1 + |bound|)`` slack, the other backends'
   feasibility tolerance). A row with a fractional coefficient is *relaxed*:
   with ``S = 2^k`` (``S * sum|c| <= 2^52``) it becomes
   ``sum floor(S c_i) a_i <= floor(S (ub + tol)) + 1`` and
   ``sum ceil(S c_i) a_i >= ceil(S (lb - tol)) - 1``, which every action
   satisfies. CP-SAT thus solves over a superset ``R`` of ``F``.
2. **Objective.** With ``T = 2^k`` (``T * sum|w| <= 2^53``) the integer costs are
   ``c_i = round(T w_i)`` and the residuals ``r_i = w_i - c_i / T`` are exact
   in floating point. If ``a*`` is CP-SAT's proven optimum of ``c @ a`` over ``R``
   and ``a* in F``, then for every action ``b``:
   ``w @ b - w @ a* = (c @ b - c @ a*) / T + r @ b - r @ a* <= sum(max(r_i, 0)) - r @ a* =: E``.
   (Arms fixed by ``include`` / ``exclude`` are left out of ``w`` here: they
   add the same constant to every candidate.) The answer is returned only
   when ``E <= 1e-9 (1 + |x|)`` for every ``x`` in ``[w @ a*, w @ a* + E]``
   (which holds the optimum): then it meets the contract. As
   ``E <= d / (2T) ~ d sum|w| / 2^54``, this holds whenever
   ``d sum|w| <= 1.8e7 (1 + |optimum|)`` (weights of order 1 up to
   ``d ~ 4000``); beyond that it depends on the actual residuals, and where
   it fails the query raises :class:`~cmab_milp.oracles.core.base.OracleError`:
   CP-SAT cannot answer that query exactly here.
3. **Feasibility.** ``a*`` is checked against the relaxed rows (with their
   tolerance), the lazy separators (subtour elimination) and the
   restrictions. A violated separator row is added; a violated relaxed row
   (or a relaxed cut that does not cut ``a*`` off) adds the no-good cut
   ``sum_{i in a*} (1 - a_i) + sum_{i not in a*} a_i >= 1``; then CP-SAT
   solves again (a solve-separate loop, every cut valid for all actions).
   ``INFEASIBLE`` on ``R`` proves ``F`` empty: ``None``.

Norm queries are not declared: ``sqrt(a @ M @ a)`` is irrational in general,
and an exact integer model of ``f s`` with ``s^2 <= a @ M @ a`` needs ``s``
on a fine integer grid and products of 53-bit numbers, beyond CP-SAT's int64
arithmetic; the result would not be provable within ``1e-9``.

Auxiliary columns must be integer with finite bounds (CP-SAT has no
continuous variables); other formulations are refused at construction.

Tie rule: one worker (``num_workers=1``), seed 0, and each solve starts from a
copy of the compiled base model plus this query's bounds, rows and cuts: the
answer depends on the query and the space only.

Example
-------
>>> import cmab_milp as cm
>>> cpsat = cm.make_oracle(cm.Cardinality(4, 2), "ortools")
>>> print(cpsat.argmax([0.3, -0.2, 0.9, 0.4], exclude=[2]).astype(int))
[1 0 0 1]
>>> objective_scale(np.array([0.5, -3.0]))[0] == 2.0**51  # 3.5 * 2^51 <= 2^53
True
"""

from __future__ import annotations

import math

import numpy as np

from ...spaces.base import ActionSpace
from ...spaces.formulation import Formulation, Row
from ..core.base import UnsupportedQuery
from ..core.capabilities import Capabilities
from ..core.interrupts import stoppable
from ..core.model import ModelBase, SolveResult
from ..core.model_oracle import ModelOracle
from ..core.queries import NormQuery

__all__ = ["OrtoolsOracle", "objective_scale", "rounding_gap"]
_BIG = 2**62  # CP-SAT's "unbounded" side of a linear domain
_ROW_BITS = 52  # S * (sum|c| + |bounds|) <= 2^52 for relaxed rows
_OBJ_BITS = 53  # T * sum|w| <= 2^53 for the objective


def objective_scale(weights: np.ndarray) -> tuple[float, list[int], np.ndarray]:
    """``(T, c, r)``: a power of two ``T``, integer costs ``c = round(T w)`` and exact residuals ``r = w - c / T``.

    >>> T, c, r = objective_scale(np.array([0.1, 2.0]))
    >>> T == 2.0**51, c[1] == 2**52, float(abs(r).max()) < 1e-16
    (True, True, True)
    """
    total = float(np.abs(weights).sum())
    if total == 0.0:
        return 1.0, [0] * len(weights), np.zeros(len(weights))
    k = math.floor(_OBJ_BITS - math.log2(total))
    while total * 2.0**k > 2.0**_OBJ_BITS:  # guard the log's rounding
        k -= 1
    scale = 2.0**k
    scaled = weights * scale  # exact: a power-of-two scaling
    rounded = np.rint(scaled)
    return scale, [int(v) for v in rounded], (scaled - rounded) / scale


def rounding_gap(residuals: np.ndarray, action: np.ndarray) -> float:
    """``E = sum(max(r, 0)) - r @ a``: how far below the optimum ``w @ a`` may be (see the module docstring).

    >>> rounding_gap(np.array([1e-17, -2e-17]), np.array([True, False]))
    0.0
    """
    return max(0.0, math.fsum(np.clip(residuals, 0.0, None).tolist()) - math.fsum(residuals[action].tolist()))


#: A row as CP-SAT gets it: integer coefficients over column indices, integer bounds.
_IntRow = Row


def _slack(bound: float) -> float:
    return 1e-9 * (1.0 + abs(bound))


def _integer_rows(row: Row) -> tuple[list[_IntRow], bool]:
    """The CP-SAT rows for ``row`` and whether they are a relaxation (fractional coefficients)."""
    coefs = [float(v) for v in row.coefs]
    lb, ub = float(row.lb), float(row.ub)
    if all(v.is_integer() for v in coefs):
        lo = math.ceil(lb - _slack(lb)) if np.isfinite(lb) else -_BIG
        hi = math.floor(ub + _slack(ub)) if np.isfinite(ub) else _BIG
        return [_IntRow(tuple(row.cols), tuple(int(v) for v in coefs), lo, hi)], False
    size = sum(abs(v) for v in coefs) + (abs(lb) if np.isfinite(lb) else 0.0) + (abs(ub) if np.isfinite(ub) else 0.0)
    scale = 2.0 ** math.floor(_ROW_BITS - math.log2(size))
    out = []
    if np.isfinite(ub):
        down = tuple(math.floor(v * scale) for v in coefs)
        out.append(_IntRow(tuple(row.cols), down, -_BIG, math.floor((ub + _slack(ub)) * scale) + 1))
    if np.isfinite(lb):
        up = tuple(math.ceil(v * scale) for v in coefs)
        out.append(_IntRow(tuple(row.cols), up, math.ceil((lb - _slack(lb)) * scale) - 1, _BIG))
    return out, True


def _row_holds(row: Row, x: np.ndarray) -> bool:
    lhs = math.fsum(float(v) * float(x[c]) for c, v in zip(row.cols, row.coefs, strict=True))
    return (row.lb - _slack(row.lb) <= lhs) and (lhs <= row.ub + _slack(row.ub))


class _CpSatModel(ModelBase):
    """CP-SAT as a :class:`~cmab_milp.oracles.core.model.SolverModel`: the compiled base model plus a query's edits.

    Each :meth:`solve` copies the base model, adds this query's bounds, rows and
    cuts, and solves with the costs scaled to integers (:func:`objective_scale`;
    the arms fixed by ``include`` / ``exclude`` are left out of the scaling). Its
    bound is ``w @ a* + E`` (:func:`rounding_gap`), which the pipeline certifies.
    :meth:`separate` adds a no-good cut for a candidate that breaks a relaxed row,
    and :meth:`add_rows` one for a candidate whose cut had to be relaxed.
    """

    name = "CP-SAT"
    integer = True
    bound_name = "the bound left by rounding the weights to CP-SAT's integers (the rounding may hide the optimum)"

    def __init__(self, oracle: OrtoolsOracle) -> None:
        self.oracle = oracle
        self.d = oracle.d
        self.costs = np.zeros(self.d)
        self.include: tuple[int, ...] = ()
        self.exclude: tuple[int, ...] = ()
        self.extra: list[_IntRow] = []
        self.last: np.ndarray | None = None
        self.time_limit = oracle.time_limit

    def set_costs(self, costs: np.ndarray) -> None:
        self.costs = costs

    def set_arm_bounds(self, include: tuple[int, ...], exclude: tuple[int, ...]) -> None:
        self.include, self.exclude = include, exclude

    def add_rows(self, rows: list[Row]) -> None:
        relaxed = False
        for row in rows:
            int_rows, inexact = _integer_rows(row)
            self.extra.extend(int_rows)
            relaxed = relaxed or inexact
        if relaxed and self.last is not None:  # a relaxed cut may not cut the candidate off: exclude it by name
            self.extra.append(_no_good(self.last))

    def separate(self, values: list[float], chosen: list[bool]) -> list[Row]:
        self.last = np.array(chosen)
        x = np.asarray(values, float)
        if any(not _row_holds(row, x) for row in self.oracle._relaxed):
            return [_no_good_row(self.last)]
        return []

    def undo(self) -> None:
        self.extra = []
        self.last = None

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for the next solves (what is left of the query's limit, from the cut loop)."""
        self.time_limit = seconds

    def solve(self, tie_tol: float | None = None) -> SolveResult:
        from ortools.sat.python import cp_model

        free = self.costs
        if self.include or self.exclude:  # fixed arms add a constant: leave them out of the scaling
            free = free.copy()
            free[list(self.include) + list(self.exclude)] = 0.0
        _, weights, residuals = objective_scale(free)
        model = self.oracle._base.clone()
        proto = model.proto
        for i in self.include:
            proto.variables[i].domain[0] = 1
        for i in self.exclude:
            proto.variables[i].domain[1] = 0
        for r in self.extra:
            _add(proto, r)
        nz = [i for i, c in enumerate(weights) if c]
        proto.objective.vars.extend(nz)
        proto.objective.coeffs.extend([-weights[i] for i in nz])  # CP-SAT minimises: max c @ a
        proto.objective.scaling_factor = -1.0
        solver = cp_model.CpSolver()
        params = solver.parameters
        params.num_workers = 1
        params.random_seed = 0
        for key, value in self.oracle.parameters.items():
            setattr(params, key, value)
        if self.time_limit is not None:
            params.max_time_in_seconds = self.time_limit
        # Ctrl-C is Python's: CP-SAT's own handler ended the solve as if on its time limit and left SIGINT's
        # handler at SIG_DFL (the next Ctrl-C killed Python); core.interrupts stops it and raises KeyboardInterrupt
        params.catch_sigint_signal = False
        with stoppable(solver.stop_search):
            status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return SolveResult("infeasible")
        message = f"CP-SAT status {solver.status_name(status)!r}"
        if status in (cp_model.UNKNOWN, cp_model.FEASIBLE):  # stopped by the time limit: no proof
            return SolveResult("limit", message=message)
        if status != cp_model.OPTIMAL:
            return SolveResult("error", message=message + " (model trouble)")
        values = [float(v) for v in list(solver.response_proto.solution)[: self.d]]
        action = np.array(values) > 0.5
        value = math.fsum(self.costs[action].tolist())
        return SolveResult("optimal", values, value, value + rounding_gap(residuals, action), message)


class OrtoolsOracle(ModelOracle):
    """Exact linear oracle on CP-SAT (one worker); norm queries are not answered.

    Parameters
    ----------
    space:
        The action space (auxiliary columns must be integer with finite bounds).
    time_limit:
        Seconds per CP-SAT solve; a solve it stops raises ``OracleError``.
    verify:
        Also check every answer with ``space.contains`` (slower; for tests).
    parameters:
        CP-SAT parameters set on every solve (``{"linearization_level": 2}``); ``num_workers``
        and ``random_seed`` stay 1 and 0 (the tie rule), ``max_time_in_seconds`` is ``time_limit``.
    native:
        Model directed s-t paths with CP-SAT's circuit constraint (:mod:`.cpsat_circuit`)
        instead of the formulation's rows and its lazy cuts (``circuit`` tells which was built).
    parity:
        In the circuit model, round a hop limit's bounds to the parity every s-t path of a bipartite graph has
        (:mod:`~cmab_milp.oracles.mip.path_parity`; the same actions, a tighter model).
    """

    # ---- declaration (read by the registry, ``auto`` and the kits, without importing ortools)
    #: Linear queries only: CP-SAT's integers cannot prove ``sqrt(a M a)`` within 1e-9 (module docstring).
    #: No ``gap=``: its bound is the rounding error of an integer optimum. Its cost reads directed longest paths.
    CAPABILITIES = Capabilities(
        norm=False,
        time_limit=True,
        requires=("ortools",),
        cost="cmab_milp.oracles.core.auto_costs:ortools_cost",
        spaces="formulations with integer auxiliary columns of finite bounds (every built-in family)",
    )
    DESCRIPTION = "linear queries via OR-Tools CP-SAT (weights scaled to integers, error bound checked)"

    name = "ortools"

    def __init__(
        self,
        space: ActionSpace,
        time_limit: float | None = None,
        verify: bool = False,
        native: bool = True,
        parameters: dict[str, object] | None = None,
        parity: bool = True,
    ):
        if not isinstance(parity, (bool, np.bool_)):
            raise ValueError(f"parity must be True or False, got {parity!r}")
        self.parity = bool(parity)
        self.native = bool(native)
        self.parameters = _check_parameters(parameters)
        super().__init__(space, time_limit, verify)
        form = self.formulation = space.formulation().without_optional()  # integer columns only
        bad = [
            form.aux_names[j] if j < len(form.aux_names) else f"x{j}"
            for j in range(form.n_aux)
            if not (form.aux_integer[j] and np.isfinite(form.aux_lb[j]) and np.isfinite(form.aux_ub[j]))
        ]
        if bad:
            raise ValueError(
                f"the ortools backend (CP-SAT) needs integer auxiliary columns with finite bounds;"
                f" {space!r} has {bad[:5]}"
            )
        self._relaxed: list[Row] = []
        self._base = self._compile(form)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        del state["_base"], state["_relaxed"]  # a CpModel does not pickle: compiled again on unpickling
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._relaxed = []
        self._base = self._compile(self.formulation)

    def _compile(self, form: Formulation):
        from ortools.sat.python import cp_model

        from .cpsat_circuit import circuit_model, circuit_rows

        model = circuit_model(self.space, self.parity) if self.native else None
        rows = form.rows
        if model is not None:  # directed s-t paths: one circuit constraint, then the side rows
            rows = circuit_rows(self.space, self.parity)
        else:
            model = cp_model.CpModel()
            for i in range(form.d):
                model.new_bool_var(f"a{i}")
            for j in range(form.n_aux):
                model.new_int_var(math.ceil(form.aux_lb[j]), math.floor(form.aux_ub[j]), f"x{j}")
        self.circuit = rows is not form.rows
        for row in rows:
            int_rows, relaxed = _integer_rows(row)
            if relaxed:
                if any(c >= form.d for c in row.cols):
                    raise ValueError(
                        "the ortools backend (CP-SAT) relaxes rows with fractional coefficients and needs them"
                        f" over arm columns only; a row of {self.space!r} mixes in auxiliary columns"
                    )
                self._relaxed.append(row)
            for r in int_rows:
                _add(model.proto, r)
        return model

    def _new_model(self, gap: float | None) -> _CpSatModel:
        return _CpSatModel(self)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        raise UnsupportedQuery(
            "the ortools backend (CP-SAT) answers linear queries only: the norm index needs a square root,"
            " which CP-SAT's integer arithmetic cannot prove within 1e-9; use 'highs', 'gurobi' or 'scip'"
        )


def _check_parameters(parameters: dict[str, object] | None) -> dict[str, object]:
    """CP-SAT parameters by name, checked against ``SatParameters`` before any solve."""
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ValueError(f"parameters must be a dict of CP-SAT parameters, got {type(parameters).__name__}")
    from ortools.sat import sat_parameters_pb2

    probe = sat_parameters_pb2.SatParameters()
    for key, value in parameters.items():
        if key in ("num_workers", "random_seed", "max_time_in_seconds", "catch_sigint_signal"):
            raise ValueError(f"CP-SAT parameter {key!r} is set by the backend (the tie rule, time_limit, Ctrl-C)")
        try:
            setattr(probe, key, value)
        except (AttributeError, TypeError, ValueError) as exc:
            raise ValueError(f"bad CP-SAT parameter {key}={value!r}: {exc}") from None
    from ortools.sat.python import cp_model

    solver, model = cp_model.CpSolver(), cp_model.CpModel()  # CP-SAT's own ranges: it checks them at a solve
    for key, value in parameters.items():
        setattr(solver.parameters, key, value)
    solver.parameters.catch_sigint_signal = False
    model.new_bool_var("x")
    if solver.solve(model) == cp_model.MODEL_INVALID:  # its message names the parameter
        raise ValueError(f"bad CP-SAT parameters {parameters}: {solver.response_proto.solution_info}")
    return dict(parameters)


def _add(proto, row: _IntRow) -> None:
    ct = proto.constraints.add()
    ct.linear.vars.extend(list(row.cols))
    ct.linear.coeffs.extend(list(row.coefs))
    ct.linear.domain.extend([max(row.lb, -_BIG), min(row.ub, _BIG)])


def _no_good_row(action: np.ndarray) -> Row:
    """The no-good cut of :func:`_no_good` as a :class:`Row` (integer coefficients: kept exactly)."""
    d = len(action)
    return Row(
        tuple(range(d)), tuple(-1.0 if action[i] else 1.0 for i in range(d)), 1.0 - float(action.sum()), math.inf
    )


def _no_good(action: np.ndarray) -> _IntRow:
    """``sum_{i in a} (1 - a_i) + sum_{i not in a} a_i >= 1``, i.e. ``sum_out a_i - sum_in a_i >= 1 - |a|``."""
    d = len(action)
    coefs = tuple(-1 if action[i] else 1 for i in range(d))
    return _IntRow(tuple(range(d)), coefs, 1 - int(action.sum()), _BIG)
