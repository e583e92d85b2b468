"""One certified solve for every model backend: :func:`certified_solve`.

A model backend (HiGHS, PuLP, SCIP, Gurobi, CP-SAT, the K-MAX MILP) only
adapts its solver to :class:`~cmab_milp.oracles.core.model.SolverModel`: set the arm costs and bounds, add
rows, undo the query's edits, solve. Everything that makes an answer
trustworthy is written once, here:

1. **Costs** whose largest magnitude lies outside ``[2^-16, 2^16]`` are scaled by
   a power of 2 (exact: no tie changes, values scale back exactly).
2. **Restrictions**: ``include`` / ``exclude`` become arm bounds,
   ``forbid_pairs`` rows ``a_i + a_j <= 1``.
3. **The lazy-cut loop**: the formulation's separators (and the model's own
   ``separate`` hook, e.g. K-MAX tangents) add rows until the answer is an
   action; the rows are kept for this query only and removed by ``undo``
   (the tie rule: an answer depends on the query and the space only).
4. **Integrality**: every arm value within ``1e-6`` of 0 or 1, else
   :class:`FractionalAnswer`.
5. **The bound certificate** (:mod:`~cmab_milp.oracles.core.certify`, shared with the norm answers):
   the answer's value, recomputed in numpy, must reach the solver's dual bound within the contract's
   :func:`~cmab_milp.oracles.core.base.tolerance`, for every optimum the bound allows
   (a model that gives no bound rests on its solver's proof of optimality).
6. **The restriction check** and, with ``contains``, ``space.contains``.
7. **Limits and approximate answers**: a solve stopped by its time limit raises
   :class:`LimitReached`, unless the bound proves its incumbent, or unless a
   ``gap`` was given (the certified approximate mode), where the incumbent is
   returned with its proven ratio ``value / bound`` (recorded in the ledger).
   The ratio is defined only for ``value > 0`` and ``bound > 0``: then every
   action ``b`` has ``value >= ratio * (w @ b)``. An inexact answer with
   ``bound <= 0`` or ``value <= 0`` proves no ratio in ``(0, 1]`` and is refused.

The adapters: :class:`~cmab_milp.oracles.backends.highs_model.CompiledModel` (HiGHS;
the ``highs`` backend keeps its LP-first path and tie re-solve), the models of
:mod:`~cmab_milp.oracles.backends.scip`, :mod:`~cmab_milp.oracles.backends.gurobi`,
:mod:`~cmab_milp.oracles.backends.pulp` (whose ``confirm_infeasible`` re-checks
PuLP's ``Infeasible`` on HiGHS), :mod:`~cmab_milp.oracles.backends.ortools`
(its bound is the rounding error of CP-SAT's integer costs) and the K-MAX MILP
of :mod:`~cmab_milp.nonlinear.kmax_milp` (its tangent cuts are its ``separate``
step). Every solver backend is a :class:`~cmab_milp.oracles.core.model_oracle.ModelOracle` over such an
adapter: a new one writes the adapter (subclassing :class:`~cmab_milp.oracles.core.model.ModelBase`) and
``_new_model``, adds one
registry line and runs :func:`cmab_milp.testing.check_oracle` (the README shows it).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.backends.highs_model import CompiledModel
>>> space = cm.Cardinality(4, 2)
>>> oracle = cm.make_oracle(space, "enumerate")
>>> query = oracle.linear_query(np.array([0.3, -0.2, 0.9, 0.4]), exclude=[2])
>>> action, bound = certified_solve(CompiledModel(space.formulation()), query, space.formulation())
>>> action.astype(int).tolist(), round(bound, 9)
([1, 0, 0, 1], 0.7)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...spaces.formulation import Formulation, Row
from .base import Ledger, LimitReached, OracleError
from .certify import linear_proven, proven, proven_ratio
from .model import SolveResult, SolverModel
from .queries import _NO_RESTRICTIONS

__all__ = [
    "INTEGRAL_TOL",
    "MAX_CUT_ROUNDS",
    "FractionalAnswer",
    "certified_solve",
    "chosen_arms",
    "forbid_rows",
    "proven",
    "proven_ratio",
]

#: Lazy-cut rounds per query before the loop is declared a separator bug.
MAX_CUT_ROUNDS = 10_000
#: An arm value this close to 0 or 1 counts as integral.
INTEGRAL_TOL = 1e-6
#: A reduced cost within ``TIE_TOL * (1 + max|w|)`` of zero counts as a possible tie (LP models).
TIE_TOL = 1e-7
#: Costs are solved as given when their largest magnitude is in this range, else rescaled.
SCALE_LO, SCALE_HI = 2.0**-16, 2.0**16


class FractionalAnswer(OracleError):
    """The solver's arm vector is not integral."""


def chosen_arms(values: Sequence[float], d: int, name: str = "the solver", integer: bool = True) -> list[bool]:
    """Which arms the column ``values`` choose; raise :class:`FractionalAnswer` if not integral.

    Plain list operations: between two solver runs they cost a fraction of what numpy
    calls on short vectors cost.

    >>> chosen_arms([1.0 - 5e-7, 2e-7, 0.0, 3.5], 3)
    [True, False, False]
    >>> chosen_arms([0.5, 1.0], 2, "HiGHS")
    Traceback (most recent call last):
    ...
    cmab_milp.oracles.core.pipeline.FractionalAnswer: HiGHS MILP returned a fractional arm vector
    """
    arms = values[:d]
    lo, hi = INTEGRAL_TOL, 1.0 - INTEGRAL_TOL
    if [v for v in arms if lo < v < hi or not -lo <= v <= 1.0 + lo]:  # NaN fails the second test
        kind = "MILP" if integer else "LP (formulation declared integral)"
        raise FractionalAnswer(f"{name} {kind} returned a fractional arm vector")
    return [v > 0.5 for v in arms]


def forbid_rows(pairs: Sequence[tuple[int, int]]) -> list[Row]:
    """The rows ``a_i + a_j <= 1`` of ``forbid_pairs``.

    >>> forbid_rows([(0, 2)])[0].cols
    (0, 2)
    """
    return [Row((i, j), (1.0, 1.0), -math.inf, 1.0) for i, j in pairs]


def _top(query: Any) -> float:
    listed = query.weights_list
    if listed is not None:
        return max(max(listed, default=0.0), -min(listed, default=0.0))
    return float(np.abs(query.weights).max(initial=0.0))


# This is the per-query path of every-round algorithms (CUCB solves ~10^5 of these per
# run): its Python work is kept to a few list operations around the solver call.
def certified_solve(
    model: SolverModel,
    query: Any,
    formulation: Formulation,
    *,
    rows: Sequence[Row] = (),
    rescale: bool = True,
    certify: bool = True,
    slack: float = 0.0,
    gap: float | None = None,
    ledger: Ledger | None = None,
    contains: Callable[[np.ndarray], bool] | None = None,
    max_rounds: int = MAX_CUT_ROUNDS,
    root_cuts: Callable[[Any, Formulation], int] | None = None,
    time_limit: float | None = None,
) -> tuple[np.ndarray, float | None] | None:
    """Answer one query on ``model``: ``(action, bound)``, ``None`` (proven infeasible), or raise.

    Parameters
    ----------
    model:
        A :class:`SolverModel` holding ``formulation``'s rows (and nothing of
        earlier queries).
    query:
        Has ``weights`` (arm costs), ``weights_list`` (or ``None``),
        ``restrictions`` and ``value(chosen)`` (the exact objective of a list of
        bools); a :class:`~cmab_milp.oracles.core.queries.LinearQuery` or alike.
    rows:
        This query's rows besides ``forbid_pairs`` (removed by ``undo``).
    rescale:
        Scale the costs by a power of 2 when they are very large or small
        (``False`` when the model has other costs in the objective).
    certify, slack:
        Check the value against the bound within the tolerance plus ``slack``;
        ``certify=False`` leaves the check to the caller (norm models).
    gap, ledger:
        The certified approximate mode: an answer that the bound does not prove
        optimal is returned with its proven ratio, recorded in ``ledger``.
    contains:
        Also check the action with it (``space.contains``; ``verify=True``).
    root_cuts:
        ``root_cuts(model, formulation)`` adds this query's cuts on fractional LP
        points before a MILP's cut loop when the formulation has
        ``fractional_separators`` (:func:`~cmab_milp.oracles.mip.root_cuts.add_root_cuts`
        for HiGHS models); ``None``: none.
    time_limit:
        Seconds for the whole query, across its lazy-cut re-solves: each solve gets
        what is left (the model's ``set_time_limit(seconds)`` hook, restored to
        ``time_limit`` afterwards), and a query with nothing left before a solve raises
        :class:`LimitReached`. ``None``: each solve runs under the model's own limit.
    """
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    limit_hook = None if deadline is None else model.set_time_limit
    res = query.restrictions
    shift = 0
    top = 1.0
    if rescale:
        top = _top(query)
        if not SCALE_LO <= top <= SCALE_HI and top > 0.0:
            # HiGHS proved wrong optima with costs ~1e17 (and treats 1e20 as infinite): solve
            # with the costs times 2^-shift, which changes no tie and scales values exactly
            shift = math.frexp(top)[1]
            top = math.ldexp(top, -shift)
    model.set_costs(query.weights if shift == 0 else np.ldexp(query.weights, -shift))
    model.set_arm_bounds(res.include, res.exclude)
    d = formulation.d
    separators = formulation.separators
    try:
        if res.forbid_pairs or rows:
            model.add_rows([*forbid_rows(res.forbid_pairs), *rows])
        tie_tol = None if model.integer else TIE_TOL * (1.0 + top)
        if root_cuts is not None and model.integer and (formulation.fractional_separators or _side(formulation)):
            # cuts on fractional LP points (oracles/mip/root_cuts.py): this query's rows, found from
            # a cold LP of this query only, and removed by `model.undo()` like the lazy cuts
            root_cuts(model, formulation)
        for round_ in range(max_rounds):
            if deadline is not None:
                _time_left(model, deadline, limit_hook, round_ == 0)
            result = model.solve(tie_tol=tie_tol)
            status = result.status
            if status != "optimal":
                if status == "infeasible":
                    model.confirm_infeasible(res)
                    return None
                if status == "error" or (status == "limit" and result.values is None):
                    _refuse(model, result)
            chosen = chosen_arms(result.values, d, model.name, model.integer)
            cuts = formulation.violated_rows(np.array(chosen)) if separators else None
            own = model.separate(result.values, chosen)
            if own:
                cuts = [*(cuts or ()), *own]
            if not cuts:
                break
            if status == "limit":  # an incumbent that is no action, and no time left to improve it
                _refuse(model, result)
            model.add_rows(cuts)  # valid for every query, but kept for this one only (the tie rule)
        else:  # a separator that never converges (or a model that ignores its cuts) is a bug
            raise OracleError(f"{model.name}: the lazy cut loop did not converge in {max_rounds} rounds")
    finally:
        model.undo()
        if limit_hook is not None:
            limit_hook(time_limit)
    bound = result.bound
    scaled = None
    if bound is not None and shift:
        try:
            bound = math.ldexp(bound, shift)
        except OverflowError:  # an optimum past the float range (weights near 1e308): certify it scaled
            scaled, bound = bound, math.inf
    if not certify:
        if status == "limit":  # the caller cannot prove a stopped solve
            _refuse(model, result)
    elif scaled is not None:  # the certificate (core/certify.py), in units of 2**shift
        if not linear_proven(query, chosen, scaled, shift=shift):
            _unproven(model, query, chosen, bound, status, gap, ledger, result)
    elif bound is None or not linear_proven(query, chosen, bound, slack=slack):
        _unproven(model, query, chosen, bound, status, gap, ledger, result)
    action = np.array(chosen)
    if (res is not _NO_RESTRICTIONS and not res.admits(action)) or (contains is not None and not contains(action)):
        raise OracleError(f"{model.name} returned an action that violates the space or the restrictions")
    return action, bound


def _time_left(model: SolverModel, deadline: float, hook: Callable[[float], None] | None, first: bool) -> None:
    """Give the next solve what is left of the query's time limit, or raise :class:`LimitReached`.

    The first solve always runs (with at least a microsecond): its solver reports the limit itself.
    """
    left = deadline - time.perf_counter()
    if first:
        left = max(left, 1e-6)
    elif left <= 0.0:
        raise LimitReached(
            f"{model.name} stopped on its time limit (spent between lazy-cut rounds); optimality not proven,"
            " no action is returned"
        )
    if hook is not None:
        hook(left)


def _side(formulation: Formulation) -> bool:
    """Whether the formulation is a base space plus side rows (a root step gives a start: mip/side_starts.py)."""
    return "side" in formulation.solver_hints


def _refuse(model: SolverModel, result: SolveResult) -> None:
    note = f" ({result.message})" if result.message else ""
    if result.status == "limit":
        raise LimitReached(
            f"{model.name} stopped on its time limit{note}; optimality not proven, no action is returned"
        )
    raise OracleError(f"{model.name} failed{note}; no action is returned")


def _unproven(model, query, chosen, bound, status, gap, ledger, result) -> None:
    """An answer its bound does not prove (or no bound): accept it with a ratio (``gap``), or raise."""
    if bound is None:  # the solver gives no bound: its own proof of optimality is all there is
        if status != "optimal":
            _refuse(model, result)
        return
    value = query.value(chosen)
    ratio = None if gap is None or not math.isfinite(bound) else proven_ratio(value=value, bound=bound)
    if ratio is not None:
        if ledger is not None:
            ledger.record_ratio(ratio)
        return
    if status == "limit":
        _refuse(model, result)
    what = model.bound_name
    extra = " (and no ratio: approximate answers need value > 0 and bound > 0)" if gap is not None else ""
    raise OracleError(
        f"{model.name} answer has value {value!r} but {what} is {bound!r}:"
        f" optimality not proven within 1e-9 * (1 + |optimum|){extra}"
    )
