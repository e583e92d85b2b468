"""What a frozen target policy plays: one action, a distribution over actions, or per-arm inclusion probabilities.

Every estimator of :mod:`cmab_milp.logged.estimators` needs the target's
per-arm inclusion probabilities ``pi`` (its value under a linear reward is
``pi @ means``); whole-action estimators also need its actions and their
probabilities.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(3, 1)
>>> target = as_target([(np.array([1, 0, 0], bool), 0.25), (np.array([0, 0, 1], bool), 0.75)], space)
>>> target.inclusion.tolist(), target.kind
([0.25, 0.0, 0.75], 'actions')
>>> as_target(np.array([0.2, 0.3, 0.5]), space).kind
'inclusion'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spaces.base import ActionSpace

__all__ = ["Target", "as_target"]


@dataclass(frozen=True)
class Target:
    """A frozen target: per-arm inclusion ``inclusion`` ``(d,)``; ``actions`` ``(k, d)`` with ``probs`` if known."""

    inclusion: np.ndarray
    actions: np.ndarray | None
    probs: np.ndarray | None
    kind: str


def _action(value: Any, space: ActionSpace, what: str) -> np.ndarray:
    a = np.asarray(value)
    if a.shape != (space.d,):
        raise ValueError(f"{what} must have shape ({space.d},), got {a.shape}")
    if a.dtype != bool:
        if a.dtype.kind not in "biuf" or not np.isin(a, (0, 1)).all():
            raise ValueError(f"{what} must be a 0/1 or bool action")
        a = a.astype(bool)
    if not space.contains(a):
        raise ValueError(f"{what} (arms {space.labels_of(a)}) is not an action of the space")
    return a


def as_target(target: Any, space: ActionSpace) -> Target:
    """Read ``target``: a bool (or 0/1 integer) action; a list of ``(action, probability)`` pairs (probabilities
    summing to 1); or a float vector of per-arm inclusion probabilities in [0, 1]."""
    if isinstance(target, list | tuple) and target and all(isinstance(p, list | tuple) and len(p) == 2 for p in target):
        actions = np.array([_action(a, space, f"target action {k}") for k, (a, _) in enumerate(target)])
        try:
            probs = np.array([float(p) for _, p in target])
        except (TypeError, ValueError):
            raise ValueError("target probabilities must be numbers") from None
        if not np.isfinite(probs).all() or (probs < 0).any() or abs(probs.sum() - 1.0) > 1e-9:
            raise ValueError(f"target probabilities must be >= 0 and sum to 1, got {probs.tolist()}")
        return Target(probs @ actions.astype(float), actions, probs, "actions")
    array = np.asarray(target)
    if array.dtype == bool or (array.dtype.kind in "iu" and array.ndim == 1):
        a = _action(array, space, "the target action")
        return Target(a.astype(float), a[None, :], np.ones(1), "action")
    if array.dtype.kind == "f" and array.ndim == 1:
        if array.shape != (space.d,):
            raise ValueError(f"target inclusion probabilities must have shape ({space.d},), got {array.shape}")
        if not np.isfinite(array).all() or (array < 0).any() or (array > 1).any():
            raise ValueError("target inclusion probabilities must lie in [0, 1]")
        return Target(array.astype(float), None, None, "inclusion")
    raise ValueError(
        "target must be a bool action, a list of (action, probability) pairs, or a float vector of "
        f"per-arm inclusion probabilities; got {type(target).__name__}"
    )
