"""Validators of policy constructor arguments: each returns the checked value or raises a ``ValueError``.

The error is a :class:`~cmab_milp.described.ParameterError` naming the parameter (``.param``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..described import ParameterError, check_integer
from .anytime import MAX_HORIZON


def check_horizon(T: Any) -> int | None:
    """``T`` as an int in ``[1, MAX_HORIZON]``, or ``None`` (unknown horizon); else ``ValueError``.

    >>> check_horizon(10), check_horizon(None)
    (10, None)
    """
    if T is None:
        return None
    T = check_integer("T", T, 1, f"T must be an integer >= 1 or None (unknown horizon), got {T!r}")
    if T > MAX_HORIZON:
        raise ParameterError(
            "T", f"T={T} is beyond the largest supported horizon 2**53; use T=None for an unbounded run"
        )
    return T


def _number(name: str, value: Any, bound: str) -> float:
    """``value`` as a finite float ``> 0`` (``bound="> 0"``) or ``>= 0``, or a ``ParameterError`` naming ``name``."""
    what = "a number" if bound == "> 0" else "a number >= 0"
    if isinstance(value, (bool, np.bool_)):  # a boolean is not a number here
        raise ParameterError(name, f"{name} must be {what}, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, f"{name} must be {what}, got {value!r}") from None
    if not math.isfinite(x) or (x <= 0 if bound == "> 0" else x < 0):
        raise ParameterError(name, f"{name} must be a finite number {bound}, got {value!r}")
    return x


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0, or ``ValueError`` naming ``name`` (a boolean is not a number here).

    >>> check_positive("C", "1.5")
    1.5
    """
    return _number(name, value, "> 0")


def check_nonnegative(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0, or ``ValueError`` naming ``name``.

    >>> check_nonnegative("warmup_cycles", 2)
    2.0
    """
    return _number(name, value, ">= 0")


def check_unit_interval(name: str, value: Any) -> float:
    """``value`` as a float in (0, 1], or ``ValueError`` naming ``name``."""
    x = check_positive(name, value)
    if x > 1:
        raise ParameterError(name, f"{name} must lie in (0, 1], got {value!r}")
    return x
