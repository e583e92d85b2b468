"""The certificate, written once: when an answer's value is proven within the contract's tolerance of a bound.

Every answer of every backend ends here: the linear and restricted answers of the certified solve
(:func:`~.pipeline.certified_solve`, all model backends), the loops and the final answer of the HiGHS norm
methods (:mod:`~cmab_milp.oracles.norm`) and the norm answers of the quadratic models of SCIP and Gurobi
(:func:`settle_norm_answer`). One test, :func:`proven`, keyword-only (a swapped call cannot pass), with
the contract's tolerance ``RATE * (unit + |x|)``, ``RATE = 1e-9``:

* ``measured_at="optimum"`` (linear answers): ``bound - value <= RATE (unit + |x|) + slack`` for the ``x`` of
  least magnitude in ``[value, bound]``, where the optimum lies, so the tolerance is never taken from a bound
  above the optimum; ``slack`` is the rounding of the floating-point sums (:func:`rounding_allowance`);
  ``unit=0`` is the relative test of values past the float range (:func:`linear_proven`);
* ``measured_at="bound"`` (norm answers, whose bounds come from relaxations): ``value >= bound - RATE (unit +
  |bound|)``; ``unit = 1/s`` for values divided by ``s`` (:func:`~cmab_milp.oracles.norm.scaling.unit_objective`),
  ``rate`` the slack of a quadratic row held to a solver's feasibility tolerance (SCIP, Gurobi: ``1e-6``).

A NaN value or bound is never proven.

Example
-------
>>> proven(value=1.0, bound=1.0 + 1e-9), proven(value=1.0, bound=1.0 + 1e-8)
(True, False)
>>> proven(value=1.0, bound=1.0 + 1.5e-9, measured_at="bound")  # the tolerance of the bound: 1e-9 (1 + 1.0000000015)
True
>>> proven(1.0, 1.0)
Traceback (most recent call last):
...
TypeError: proven() takes 0 positional arguments but 2 were given
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ...portable import selected_sum
from .base import OracleError, tolerance

__all__ = [
    "RATE",
    "linear_proven",
    "proven",
    "proven_ratio",
    "rounding_allowance",
    "settle_norm_answer",
]

#: The contract's relative optimality tolerance: an answer is within ``RATE * (1 + |optimum|)`` of the optimum.
RATE = 1e-9
_EPS = float(np.finfo(float).eps)


def proven(
    *,
    value: float,
    bound: float,
    slack: float = 0.0,
    unit: float = 1.0,
    rate: float = RATE,
    measured_at: Literal["optimum", "bound"] = "optimum",
) -> bool:
    """Whether ``value`` is within the tolerance ``rate * (unit + |x|) + slack`` of the upper ``bound``.

    ``measured_at="optimum"``: ``x`` is the least magnitude in ``[value, bound]`` (linear answers);
    ``"bound"``: ``x`` is the bound (norm answers). See the module docstring.

    >>> proven(value=0.0, bound=9e-10), proven(value=0.0, bound=1e-8), proven(value=2.0, bound=1.0)
    (True, False, True)
    >>> proven(value=2.0, bound=2.0 + 2.5e-9, measured_at="bound"), proven(value=2.0, bound=2.0 + 2.5e-9, unit=1e-3,
    ...     measured_at="bound")
    (True, False)
    """
    if measured_at == "bound":
        return value >= bound - (rate * (unit + abs(bound)) + slack)
    if measured_at != "optimum":
        raise ValueError(f"measured_at must be 'optimum' or 'bound', got {measured_at!r}")
    gap = bound - value
    if gap <= 0.0:
        return True
    low = 0.0 if value <= 0.0 <= bound else min(abs(value), abs(bound))
    return gap <= rate * (unit + low) + slack


def proven_ratio(*, value: float, bound: float) -> float | None:
    """``value / bound`` when both are positive (a proven ratio to the optimum), else ``None``.

    >>> proven_ratio(value=0.9, bound=1.0), proven_ratio(value=0.5, bound=-1.0)
    (0.9, None)
    """
    if value > 0.0 and bound > 0.0:
        return min(1.0, value / bound)
    return None


def rounding_allowance(query: Any) -> float:
    """What the floating-point sums of a linear query's values may be off by, at most one more tolerance.

    ``weights @ a`` is summed in floating point (as is the solver's bound), each sum off by at most
    ``d eps`` times its terms' magnitudes: with weights that cancel, the computed values of two
    actions equal in exact arithmetic may differ by more than the tolerance (``[1e-9, 1, -1]``:
    ``1e-9 + 1 - 1`` is ``1.0000000827e-9``). The allowance is ``2 k eps sum |w|`` over the ``k``
    arms not excluded, capped at ``tolerance(0) = 1e-9``: weights so large that their rounding
    exceeds that still leave the answer unproven. 0 for other queries.

    >>> from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
    >>> rounding_allowance(LinearQuery(np.array([1e-9, 1.0, -1.0]), Restrictions())) < 1e-14
    True
    >>> rounding_allowance(LinearQuery(np.array([1e15, -1e15]), Restrictions()))
    1e-09
    """
    weights = getattr(query, "weights", None)
    if weights is None:
        return 0.0
    terms = np.abs(np.asarray(weights, float))
    excluded = list(query.restrictions.exclude)
    if excluded:
        terms[excluded] = 0.0
    return min(2.0 * int(np.count_nonzero(terms)) * _EPS * float(terms.sum()), tolerance(0.0))


def linear_proven(query: Any, chosen: list[bool], bound: float, *, slack: float = 0.0, shift: int = 0) -> bool:
    """Whether the linear answer ``chosen`` is proven by ``bound`` (the certified solve's step 5).

    ``shift`` > 0: ``bound`` is in units of ``2**shift`` (an optimum past the float range): the values are at
    least ``2**1023`` there, so the tolerance is the relative ``1e-9 |x|`` in these units.

    >>> from cmab_milp.oracles.core.queries import LinearQuery, Restrictions
    >>> query = LinearQuery(np.array([0.5, 0.25]), Restrictions())
    >>> linear_proven(query, [True, False], 0.5), linear_proven(query, [False, True], 0.5)
    (True, False)
    """
    if not shift:
        return proven(value=query.value(chosen), bound=bound, slack=slack + rounding_allowance(query))
    weights = np.ldexp(np.asarray(query.weights, float), -shift)  # exact: a power-of-two scaling
    allowance = 2.0 * len(weights) * _EPS * float(np.abs(weights).sum())
    return proven(value=selected_sum(chosen, weights), bound=bound, slack=allowance, unit=0.0)


def settle_norm_answer(
    query: Any,
    found: tuple[np.ndarray, float] | None,
    linear: Callable[[], np.ndarray | None] | None,
    slack: float,
    solver: str,
) -> np.ndarray | None:
    """The answer of a quadratic-model norm solve, checked against its bound (the SCIP and Gurobi backends).

    ``found`` is the model's ``(action, bound)`` or ``None`` (infeasible). With an
    indefinite ``M`` and sign +1 the model only covers actions with ``a'Ma >= 0``,
    so ``linear()`` (the argmax of ``mu @ a``, which is exact where ``a'Ma < 0``)
    is a second candidate and its value a second bound. The best candidate must
    reach the bound within ``slack (1 + |bound|)`` (the quadratic row holds only
    to the solver's feasibility tolerance), else :class:`~.base.OracleError`.

    >>> import cmab_milp as cm
    >>> query = cm.make_oracle(cm.Cardinality(2, 1), "enumerate").norm_query(np.array([1.0, 0.0]), np.eye(2), 0.5)
    >>> settle_norm_answer(query, (np.array([True, False]), 1.5), None, 1e-6, "a solver").tolist()
    [True, False]
    """
    candidates = [] if found is None else [found[0]]
    bound = -np.inf if found is None else found[1]
    if linear is not None:
        other = linear()
        if other is None:
            return None
        candidates.append(other)
        bound = max(bound, query.value(other))
    if not candidates:
        return None
    values = [query.value(a) for a in candidates]
    best = int(np.argmax(values))
    if not proven(value=values[best], bound=bound, rate=slack, measured_at="bound"):
        raise OracleError(
            f"{solver} norm answer has index {values[best]!r} but {solver}'s bound is {bound!r}: the gap is not "
            "closed (a time limit) or the quadratic model and the exact index disagree beyond the tolerance"
        )
    return candidates[best]
