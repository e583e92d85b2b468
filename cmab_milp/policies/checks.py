"""Validators of policy constructor arguments: each returns the checked value or raises ``ValueError``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .anytime import MAX_HORIZON


def check_horizon(T: Any) -> int | None:
    """``T`` as an int in ``[1, MAX_HORIZON]``, or ``None`` (unknown horizon); else ``ValueError``.

    >>> check_horizon(10), check_horizon(None)
    (10, None)
    """
    if T is None:
        return None
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T must be an integer >= 1 or None (unknown horizon), got {T!r}")
    if T > MAX_HORIZON:
        raise ValueError(f"T={T} is beyond the largest supported horizon 2**53; use T=None for an unbounded run")
    return int(T)


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0, or ``ValueError`` naming ``name`` (a boolean is not a number here)."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def check_nonnegative(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0, or ``ValueError`` naming ``name``.

    >>> check_nonnegative("warmup_cycles", 2)
    2.0
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number >= 0, got {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return x


def check_unit_interval(name: str, value: Any) -> float:
    """``value`` as a float in (0, 1], or ``ValueError`` naming ``name``."""
    x = check_positive(name, value)
    if x > 1:
        raise ValueError(f"{name} must lie in (0, 1], got {value!r}")
    return x
