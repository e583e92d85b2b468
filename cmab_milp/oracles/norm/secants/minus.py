"""Sign -1 by piecewise secants over the quadratic form: MILPs whose secants bound every action in a window.

On the lifting of :meth:`~.lifting.Lifted.glover` (the model's ``L`` reaches ``a @ M @ a`` and never goes
below it), a column ``w`` standing for ``-f sqrt(L)`` is capped by the secants of :mod:`.secants.pieces` on
``[lo, hi]``: ``-f sqrt`` is convex, so its secants lie above it and the MILP's bound is an upper bound on the
index of every action with ``L`` in the window. The window's top (:func:`~.secants.pieces.window_top`) leaves out only
actions that cannot beat the incumbent. Each MILP answer's ``L`` becomes a breakpoint (the secants then value it
exactly) until the bound meets the best true value; a better incumbent narrows the window and the secants are
rebuilt. The convex cuts of :mod:`~cmab_milp.oracles.norm.cuts` (on ``L``) and, for a positive definite ``M``,
the gradient cuts of :mod:`.gradient` (on ``w``, by a row) and the space's root cuts tighten the relaxation before
the first MILP. Gaps left by solver noise are closed by setting exactly valued actions aside
(:class:`~cmab_milp.oracles.norm.cuts.Exclusions`).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs", tuning={"minus_branch": False})
>>> mu, M = np.array([0.5, 0.0, 0.6, 0.55]), np.diag([1.0, 4.0, 0.25, 0.0])
>>> oracle.argmax_norm(mu, M, 1.0, sign=-1).astype(int), oracle.last_norm_stats.method
(array([0, 0, 1, 1]), 'secants-quadratic-form')
"""

from __future__ import annotations

import numpy as np

from ...core.base import OracleError
from ...core.certify import proven
from ...core.engine import Engine
from ..cuts import ConvexCuts, Exclusions
from ..gradient import GradientCuts, positive_definite, well_scaled
from ..lifting import Lifted
from ..method import Answer, NormContext
from ..starts.incumbents import first_incumbent_minus
from .pieces import PiecewiseSqrt, sqrt_grid, window_top

__all__ = ["SECANTS_MINUS", "SecantsMinus"]

#: MILP solves of the piecewise-secant method (sign -1) before the query is declared unproven.
_MAX_SECANT_SOLVES = 500
#: LP-relaxation rounds of convex-reformulation cuts on ``L`` before the first secant MILP,
#: at most one per free arm.
_CONVEX_ROUNDS = 30
#: LP-relaxation rounds of gradient cuts on the norm before the first secant MILP (``M`` definite).
_GRADIENT_ROUNDS = 30
#: Initial secant pieces (sign -1), even in ``sqrt(L)`` (with the gradient cuts capping the same column, few win).
_SECANT_PIECES = 4
#: Steepest objective slope ``f / sqrt(p)`` of a first secant ``[0, p]`` (sign -1): a steeper one
#: multiplies HiGHS's row tolerance (1e-9) into the objective.
_MAX_SLOPE = 1e4
#: Alternations of the space's root cuts and the gradient cuts before the first secant MILP.
_SPACE_CUT_PASSES = 3


class SecantsMinus:
    """Sign -1's piecewise secants (module docstring), after :data:`~.linear.LINEAR_BOUND`: the last method of
    sign -1, it applies to every query."""

    name = "secants-quadratic-form"

    def applies(self, context: NormContext) -> bool:
        return True

    def run(self, context: NormContext) -> Answer:
        lin, top = context.linear.action, context.linear.top
        best, best_value = first_incumbent_minus(context, lin, context.query.value(lin))
        return _secants(context, context.model, lin, top, best, best_value)


def _secants(
    context: NormContext, model: Engine, lin: np.ndarray, top: float, best: np.ndarray, best_value: float
) -> Answer:
    """The secant MILPs from the incumbent ``best`` (``lin``: the linear argmax; ``top``: no action's ``mu @ a``
    exceeds it)."""
    q, f = context.query, context.query.f
    lo = min(context.l_lo, 0.0)
    lift = Lifted.glover(model, context, l_bounds=(lo, context.l_hi))
    convex = ConvexCuts(context, side=-1, rounds=min(_CONVEX_ROUNDS, len(context.arms)))
    w = lift.s  # the model's -f sqrt(L): capped by the secants and the gradient cuts
    model.set_col_cost(w, 1.0)
    gradient = GradientCuts(q.M, context.arms, f) if well_scaled(q) and positive_definite(q.M, context.arms) else None
    if gradient is not None:
        gradient.add(model, w, lin)
        gradient.add(model, w, best)
    excluded = Exclusions(context)
    points = {context.quadratic_form(lin), context.quadratic_form(best)}  # breakpoints when in the window
    secants: PiecewiseSqrt | None = None
    least = (f / _MAX_SLOPE) ** 2  # no breakpoint in (0, least): slopes stay above -_MAX_SLOPE
    bound = best_value
    solves = 0
    for _ in range(_MAX_SECANT_SOLVES):
        if secants is None:  # (re)build the secants on the incumbent's window
            hi = window_top(context.l_hi, top, best_value, f)
            if hi <= lo:  # no action can beat the incumbent
                break
            model.set_col_bounds(lift.L, lo, hi)
            grid = sqrt_grid(lo, hi, _SECANT_PIECES, points, least)
            secants = PiecewiseSqrt(model, lift.L, f, grid, least, link=w)
            if solves == 0:
                convex.separate(model, lift.L)
                if gradient is not None:
                    gradient.separate(model, w, _GRADIENT_ROUNDS)
                for _ in range(_SPACE_CUT_PASSES):  # the space's rows and the norm's, in turn
                    if not context.space_cuts(model) or gradient is None:
                        break
                    gradient.separate(model, w, _GRADIENT_ROUNDS)
        solves += 1
        found = context.solve(model, excluded.start(best))
        if found is None:  # no action left in the window
            bound = best_value
            break
        action, result = found
        value = q.value(action)
        bound = result.bound  # the secants' constant is in their link row
        improved = value > best_value
        if improved:
            best, best_value = action, value
        if context.settled(bound, best_value):
            break
        l_star = context.quadratic_form(action)
        points.add(l_star)
        if proven(
            value=value, bound=value + f * secants.overshoot(l_star), measured_at="bound"
        ) or not secants.can_split(l_star):
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
    context.stats.extra["secant_solves"] = solves
    context.stats.extra["excluded"] = excluded.count
    context.stats.extra["convex_cuts"] = convex.cuts
    context.stats.extra["gradient_cuts"] = 0 if gradient is None else gradient.cuts
    context.stats.extra["pieces"] = 0 if secants is None else len(secants.points) - 1
    return best, max(bound, best_value)


SECANTS_MINUS = SecantsMinus()
