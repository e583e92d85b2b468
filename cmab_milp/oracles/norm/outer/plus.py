"""Sign +1 by outer approximation in the quadratic form: tangents of ``f sqrt(L)`` added until the MILP's bound meets.

On the lifting of :meth:`~.lifting.Lifted.glover_upper` (the model's ``L`` never exceeds the true ``a @ M @ a``
and can reach it), a column ``s`` (cost 1, standing for ``f sqrt(L)``) is capped by tangents
``s <= f (r/2 + L/(2r))`` of the concave ``f sqrt``. Every tangent lies above ``f sqrt`` (concavity), so the
MILP's bound is an upper bound on every action with ``L >= delta``; each incumbent adds the tangent at its true
``L`` until that bound meets the best true value. ``sqrt`` has an infinite slope at 0, so the model is restricted
to ``L >= delta`` (``delta`` a small fraction of the largest ``L``); actions with ``L < delta`` are worth at most
``mu @ a + f sqrt(delta)`` and are covered by listing the best actions by ``mu @ a`` with no-good cuts
(:func:`best_near_zero`) until that bound is beaten. The first incumbent
(:func:`~.starts.incumbents.first_incumbent_plus`) is valued exactly before the first MILP (its tangent goes in).
These MILPs run without HiGHS's presolve (``tuning.plus_presolve``, i.e. ``tuning.norm.plus_outer.presolve``).
The last method of sign +1: it applies to every query (:data:`OUTER_PLUS`). Gaps left by solver noise are closed by
setting exactly valued actions aside (:class:`~.cuts.Exclusions`).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs", tuning={"plus_branch_try": 0})
>>> oracle.argmax_norm(np.array([0.5, 0.0, 0.6, 0.55]), np.diag([1.0, 4.0, 0.25, 0.0]), 1.0).astype(int)
array([1, 1, 0, 0])
>>> oracle.last_norm_stats.method
'oa-quadratic-form'
"""

from __future__ import annotations

import numpy as np

from ...core.base import OracleError
from ...core.engine import Engine
from ..cuts import Exclusions, add_no_good
from ..lifting import Lifted
from ..method import Answer, NormContext
from ..starts.incumbents import first_incumbent_plus

__all__ = ["OUTER_PLUS", "OuterPlus", "best_near_zero"]

#: Outer-approximation iterations before the query is declared unproven.
_MAX_OA_ITERATIONS = 200
#: No-good enumerations near ``L = 0`` (sign +1) before giving up.
_MAX_NO_GOODS = 500
#: ``delta``, the smallest ``L`` handled by tangents, as a fraction of the largest ``L``.
_DELTA_FRACTION = 1e-6


class OuterPlus:
    """Sign +1's outer approximation (module docstring): every query, on the thread's norm model."""

    name = "oa-quadratic-form"

    def applies(self, context: NormContext) -> bool:
        return True

    def run(self, context: NormContext) -> Answer:
        model = context.model
        with model.options({} if context.tuning.norm.plus_outer.presolve else {"presolve": "off"}):
            return _outer_plus(context, model)


def _outer_plus(context: NormContext, model: Engine) -> Answer:
    q, stats = context.query, context.stats
    delta = _DELTA_FRACTION * context.l_hi
    lift = Lifted.glover_upper(model, context, l_bounds=(delta, context.l_hi))
    root_hi = np.sqrt(context.l_hi)
    model.set_col_bounds(lift.s, 0.0, q.f * root_hi)
    model.set_col_cost(lift.s, 1.0)
    tangents: set[float] = set()

    def add_tangent(l0: float) -> None:
        l0 = max(l0, delta)
        if l0 in tangents:
            return
        tangents.add(l0)
        r = np.sqrt(l0)
        model.add_rows_fixed([-np.inf], [q.f * r / 2], np.array([lift.s, lift.L]), np.array([1.0, -0.5 * q.f / r]), 2)

    add_tangent(context.l_hi)
    add_tangent(delta)
    best, best_value = first_incumbent_plus(context)
    if best is not None:  # the first MILP values the incumbent exactly: one OA round fewer
        add_tangent(context.quadratic_form(best))
    context.space_cuts(model)
    bound = -np.inf
    excluded = Exclusions(context)
    for _ in range(_MAX_OA_ITERATIONS):
        found = context.solve(model, excluded.start(best))
        if found is None:  # no action left with L >= delta
            bound = -np.inf
            break
        action, result = found
        value = q.value(action)
        if value > best_value:
            best, best_value = action, value
        bound = result.bound
        if context.settled(bound, best_value, 1.0 / context.value_scale):
            break
        l_true = context.quadratic_form(action)
        if max(l_true, delta) in tangents:
            # The model already values this action at its true index (up to the
            # solver's tolerances), so the gap is noise: set it aside, exactly valued.
            excluded.add(model, action)
            continue
        add_tangent(l_true)
    else:
        raise OracleError("norm outer approximation did not converge")
    stats.extra["excluded"] = excluded.count
    stats.extra["tangents"] = len(tangents)
    # actions with L < delta: worth at most mu @ a + f sqrt(delta)
    _clear_lift(model, lift)
    slack = q.f * np.sqrt(delta)
    low_best, low_value, low_bound = best_near_zero(context, model, slack, best_value)
    if low_value > best_value:
        best, best_value = low_best, low_value
    return best, max(bound, low_bound, best_value)


def _clear_lift(model: Engine, lift: Lifted) -> None:
    """Drop the lifted columns and rows (cuts found meanwhile stay)."""
    model.delete_rows(lift.first_row, lift.last_row)
    model.delete_cols(lift.first_col, lift.s + 1)


def best_near_zero(
    context: NormContext, model: Engine, slack: float, incumbent: float
) -> tuple[np.ndarray | None, float, float]:
    """Best true value among actions with ``mu @ a + slack > incumbent``.

    Lists actions by decreasing ``mu @ a`` (no-good cuts) until the next one
    cannot beat the incumbent even with the full ``slack``. Returns the best
    listed action, its value, and an upper bound for the unlisted ones.
    """
    q = context.query
    best, best_value = None, -np.inf
    for _ in range(_MAX_NO_GOODS):
        found = context.solve(model)
        if found is None:
            return best, best_value, -np.inf
        action, result = found
        value = q.value(action)
        if value > best_value:
            best, best_value = action, value
        top = result.bound + slack
        level = max(incumbent, best_value)
        if context.settled(top, level, 1.0 / context.value_scale):
            return best, best_value, top
        context.stats.extra["no_goods"] = context.stats.extra.get("no_goods", 0) + 1
        add_no_good(model, context.arms, action)
    raise OracleError("too many near-zero quadratic forms to certify the norm answer")


OUTER_PLUS = OuterPlus()
