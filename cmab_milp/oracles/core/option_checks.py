"""Checks of the options every backend takes (``time_limit``, ``gap``, ``workers``): one message each.

>>> check_time_limit(None) is None
True
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

__all__ = ["check_gap", "check_ties", "check_time_limit", "check_workers"]


def check_time_limit(time_limit: Any) -> float | None:
    """``None`` (no limit) or a positive, finite number of seconds; else ``ValueError``.

    >>> check_time_limit(2)
    2.0
    >>> check_time_limit(-1)
    Traceback (most recent call last):
    ...
    ValueError: time_limit must be a positive, finite number of seconds (or None), got -1
    """
    if time_limit is None:
        return None
    if isinstance(time_limit, (bool, np.bool_)) or not isinstance(time_limit, Real):
        raise ValueError(f"time_limit must be a positive, finite number of seconds (or None), got {time_limit!r}")
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive, finite number of seconds (or None), got {time_limit!r}")
    return float(time_limit)


def check_gap(gap: Any, name: str = "gap") -> float | None:
    """``None`` (exact answers) or a relative gap in ``[0, 1)`` for the certified approximate mode.

    ``name`` is the option's name in the message (``gap`` or ``norm_gap``).

    >>> check_gap(0.01)
    0.01
    >>> check_gap(1)
    Traceback (most recent call last):
    ...
    ValueError: gap must be a number in [0, 1) (the relative gap at which the solver may stop), or None; got 1
    """
    if gap is None:
        return None
    if isinstance(gap, (bool, np.bool_)) or not isinstance(gap, Real) or not 0.0 <= gap < 1.0:
        raise ValueError(
            f"{name} must be a number in [0, 1) (the relative gap at which the solver may stop), or None; got {gap!r}"
        )
    return float(gap)


def check_workers(workers: Any) -> int | None:
    """``None`` or an integer >= 1 (threads of a batch), else ``ValueError``.

    >>> check_workers(2), check_workers(None)
    (2, None)
    """
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1 (threads of a batch) or None, got {workers!r}")
    return int(workers)


def check_ties(ties: Any) -> str | None:
    """``None`` or one of the tie rule's modes (:data:`~cmab_milp.oracles.core.ties.TIE_MODES`), else ``ValueError``.

    >>> check_ties("classes"), check_ties(None)
    ('classes', None)
    """
    from .ties import TIE_MODES

    if ties is None:
        return None
    if not isinstance(ties, str) or ties not in TIE_MODES:
        raise ValueError(f"ties must be one of {', '.join(map(repr, TIE_MODES))} or None, got {ties!r}")
    return ties
