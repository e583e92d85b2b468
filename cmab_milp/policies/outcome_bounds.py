"""The known range of every arm's outcome (``outcome_bounds=(low, high)``), and the per-arm indices clipped to it.

When every outcome is known to lie in ``[low, high]`` (costs known to be
``>= 0``, rewards in ``[0, 1]``), so does every arm's mean. A per-arm index
clipped to that range is then still a valid confidence bound: a UCB stays at
or above the mean (``min(ucb, high) >= mean`` because ``mean <= high``), an LCB
at or below it. The option is the policy constant ``outcome_bounds`` of the
policies whose index is per arm: CUCB, AROQ and SROQ (their UCB and LCB
weights) and CTS (its posterior samples). Default ``None``: no clipping, the
decisions as without the option.

Why it matters: on shortest paths the rewards are negated costs (outcomes in
``[-1, 0]``). An edge's UCB above 0 makes the path query a *longest*-path
query (a MILP), while with the index clipped at 0 every weight is ``<= 0`` and
the query stays a shortest-path one. Perrault, Boursier, Valko and Perchet
(NeurIPS 2020) do the same: their shortest-path oracle (eboursier/CTS,
``settings.py``, ``ShortestPathOracle``) sets each edge's weight to
``max(-theta_i, 0)`` for every algorithm.

ESCB's family takes no such option: its confidence term is one square root
per action, not per arm, so the valid clip is per action (``|a| high``), which
leaves ties among every action above it rather than a simpler query.

>>> check_outcome_bounds([-1, 0])
(-1.0, 0.0)
>>> clip_to_bounds(np.array([-1.5, -0.2, 0.3]), (-1.0, 0.0)).tolist()
[-1.0, -0.2, 0.0]
>>> check_outcome_bounds((1, 0))
Traceback (most recent call last):
...
cmab_milp.described.ParameterError: outcome_bounds must be (low, high) with low < high, got (1, 0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..described import ParameterError

__all__ = ["Bounds", "bounds_param", "check_outcome_bounds", "clip_to_bounds"]

#: ``(low, high)``: every outcome of every arm lies in ``[low, high]`` (one side may be infinite); ``None``: unknown.
Bounds = tuple[float, float] | None


def check_outcome_bounds(value: Any, name: str = "outcome_bounds") -> Bounds:
    """``value`` as ``(low, high)`` floats with ``low < high`` (not NaN), or ``None``; else ``ParameterError``.

    A problem file writes it as a two-number array (``outcome_bounds = [-1, 0]``).

    >>> check_outcome_bounds(None) is None, check_outcome_bounds((0, float("inf")))
    (True, (0.0, inf))
    """
    if value is None:
        return None
    what = f"{name} must be (low, high) with low < high"
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise ParameterError(name, f"{what}: two numbers, got {value!r}")
    pair = []
    for x in value:
        if isinstance(x, (bool, np.bool_)):
            raise ParameterError(name, f"{what}: two numbers, got {value!r}")
        try:
            pair.append(float(x))
        except (TypeError, ValueError):
            raise ParameterError(name, f"{what}: two numbers, got {value!r}") from None
    low, high = pair
    if math.isnan(low) or math.isnan(high) or not low < high:
        raise ParameterError(name, f"{what}, got {value!r}")
    return low, high


def bounds_param(value: Any) -> dict[str, Bounds]:
    """A constructor's ``params`` entry: ``{"outcome_bounds": (low, high)}``, or ``{}`` for ``None``.

    Left out when ``None``, so a policy built without the option has the same ``params`` (and saved files) as before.

    >>> bounds_param([0, 1]), bounds_param(None)
    ({'outcome_bounds': (0.0, 1.0)}, {})
    """
    bounds = check_outcome_bounds(value)
    return {} if bounds is None else {"outcome_bounds": bounds}


def clip_to_bounds(values: np.ndarray, bounds: Bounds) -> np.ndarray:
    """``values`` clipped to ``[low, high]`` in place (a fresh array of indices), or as they are with ``None``.

    >>> clip_to_bounds(np.array([2.0]), None).tolist()
    [2.0]
    """
    if bounds is None:
        return values
    return np.clip(values, bounds[0], bounds[1], out=values)
