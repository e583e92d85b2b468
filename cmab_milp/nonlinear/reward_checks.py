"""Checks of a reward's assumptions on random samples: monotone in the outcomes, Lipschitz (Assumption 2).

Each raises ``ValueError`` describing the first violating action and outcomes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .grid import OutcomeGrid

#: A :class:`~cmab_milp.nonlinear.rewards.Reward` (not imported: the rewards module imports these checks).
Reward = Any

__all__ = ["check_lipschitz", "check_monotone"]


def check_monotone(reward: Reward, d: int, grid: OutcomeGrid, seed: int = 0, samples: int = 256) -> None:
    """Raise ``ValueError`` if ``reward`` decreases when an outcome increases, on random samples.

    Draws random actions and pairs ``y <= y'`` on the grid (plus the all-lowest
    and all-highest outcomes) and checks ``r(a, y) <= r(a, y')``.

    >>> from cmab_milp.nonlinear.rewards import CallableReward, make_reward
    >>> check_monotone(make_reward("max"), 4, OutcomeGrid([0.1, 0.5, 1.0]))
    >>> check_monotone(CallableReward(lambda a, y: -y[:, a].sum(axis=1)), 3, OutcomeGrid([0.0, 1.0]))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: reward '<lambda>' is not monotone in the outcomes: ...
    """
    rng = np.random.default_rng(seed)
    v = grid.values
    for k in range(samples):
        action = rng.random(d) < 0.5 if k else np.ones(d, bool)
        lo = rng.integers(0, len(v), size=d)
        hi = lo + rng.integers(0, len(v) - lo)
        y = np.stack([v[lo], v[hi], np.full(d, v[0]), np.full(d, v[-1])])
        r = reward.realised(action, y)
        if r[0] > r[1] + 1e-9 or r[2] > r[3] + 1e-9:
            raise ValueError(
                f"reward {reward.name!r} is not monotone in the outcomes: for action "
                f"{np.flatnonzero(action).tolist()}, raising y from {y[0].tolist()} to {y[1].tolist()} "
                f"changes the reward from {r[0]:g} to {r[1]:g}"
            )


def check_lipschitz(reward: Reward, d: int, upper: float = 1.0, seed: int = 0, samples: int = 256) -> None:
    """Raise ``ValueError`` if a pair of outcomes breaks the reward's declared Lipschitz constant.

    Checks ``|r(a, y) - r(a, y')| <= C sum_{i in a} |y_i - y'_i|`` (Assumption 2)
    on random actions and outcome vectors in ``[0, upper]``, with ``y'`` far from
    ``y`` and close to it (steep spots show up only at small distances). A
    reward that declares no constant passes.

    >>> from cmab_milp.nonlinear.rewards import SumReward, make_reward
    >>> check_lipschitz(make_reward("max"), 4)
    >>> check_lipschitz(SumReward(lambda s: 3 * np.asarray(s), "triple", lipschitz=2.0), 3)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: reward 'triple' breaks its declared Lipschitz constant 2: ...
    """
    C = reward.lipschitz
    if C is None:
        return
    rng = np.random.default_rng(seed)
    scales = (1.0, 0.1, 0.01, 0.001)
    for k in range(samples):
        action = rng.random(d) < 0.5 if k else np.ones(d, bool)
        if not action.any():
            action[rng.integers(d)] = True
        y = rng.random((len(scales), d)) * upper
        step = (rng.random((len(scales), d)) - 0.5) * np.array(scales)[:, None] * upper
        z = np.clip(y + step, 0.0, upper)
        gap = np.abs(reward.realised(action, y) - reward.realised(action, z))
        allowed = C * np.abs(y - z)[:, action].sum(axis=1)
        bad = gap > allowed * (1 + 1e-9) + 1e-12
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"reward {reward.name!r} breaks its declared Lipschitz constant {C:g}: for action "
                f"{np.flatnonzero(action).tolist()}, outcomes {np.round(y[j, action], 6).tolist()} and "
                f"{np.round(z[j, action], 6).tolist()} give rewards {gap[j]:.6g} apart, more than "
                f"{C:g} x {np.abs(y[j] - z[j])[action].sum():.6g}"
            )
