"""The general-reward family: SDCB, AROQ-GR (Algorithm 6) and SROQ-GR (Algorithm 7).

All three share :class:`DistributionIndex`: per arm, the empirical distribution
of its outcomes on an outcome grid; the UCB of an action is its expected reward
under the product of *optimistic* distributions (empirical CDF lowered by
``sqrt(C ln t / n_i)``, the mass moved to the value 1), the LCB under the product
of *pessimistic* ones (CDF raised, mass moved to the lowest grid value), eqs.
(10)-(11). Queries go to a
:class:`~cmab_milp.general.oracles.DistributionOracle`, which is the policy's
``oracle`` (one ledger for index and linear queries). The schedules are the
shared ones of :mod:`cmab_milp.policies.schedules`.

Constructor, common to the three::

    Policy(space, T, *, oracle="highs", reward="sqrt_sum", support=None, discretise=False,
           method="auto", C=1.5, ...)

- ``reward``: the monotone reward ``r(a, y)`` the policy maximises (a name of
  :func:`~cmab_milp.general.rewards.make_reward`, a callable or a Reward); it
  must be the environment's reward.
- ``support``: the outcome values of the environment (``env.support``), for
  discrete outcomes; feedback arrives as per-value histograms.
- ``discretise``: Algorithm 8 for continuous outcomes: ``True`` uses
  ``s = ceil(sqrt(m T))`` intervals (Lipschitz constant 1), an int sets ``s``;
  each outcome is treated as the right end ``j/s`` of its interval. Exactly one
  of ``support`` and ``discretise`` is given. With ``T=None`` (unknown horizon)
  ``discretise`` must be an int.
- ``oracle``: the backend answering the linear "most unobserved arms" queries
  (any name of :func:`~cmab_milp.make_oracle`; ``"enumerate"`` also makes the
  index queries enumerate), a built
  :class:`~cmab_milp.general.oracles.DistributionOracle`, or directly a method
  name ``"branch_bound"`` / ``"greedy"``.
- ``method``: how index queries are answered: ``"auto"`` (default:
  enumeration up to 200,000 actions, else branch-and-bound where it applies),
  ``"enumerate"``, ``"branch_bound"`` (exact, Cardinality / PartitionMatroid)
  or ``"greedy"`` (``1 - 1/e`` on Cardinality, ``1/2`` on matroids, for
  submodular rewards).

An unobserved arm has an infinite index, resolved by the shared machinery: one
linear query preferring the actions that hold the most unobserved arms.

Example
-------
>>> import cmab_milp as cm
>>> env = cm.DiscreteArms([0.2, 0.6, 1.0], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0]], seed=0)
>>> policy = cm.AROQGR(cm.Cardinality(4, 2), 500, oracle="enumerate", reward="sqrt_sum", support=env.support)
>>> result = cm.simulate(policy, env, 500, seed=0)
>>> int(result.queries[-1]) < 50, bool(result.regret[-1] < 50)
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..environments.base import FeedbackStats
from ..general.distributions import confidence_radius, optimistic_pmf, pessimistic_pmf
from ..general.grid import OutcomeGrid, discretisation_grid, discretise, n_intervals
from ..general.oracles import METHODS, DistributionOracle
from ..general.rewards import CallableReward, Reward, check_monotone, make_reward
from ..oracles import Oracle
from ..spaces.base import ActionSpace
from .base import Index, check_horizon, check_positive, check_unit_interval
from .schedules import AdaptiveEpochs, EveryRound, ScheduledElimination

__all__ = ["AROQGR", "SDCB", "SROQGR", "DistributionIndex"]


class DistributionIndex(Index):
    """Per-arm outcome histograms and the optimistic / pessimistic expected rewards.

    Parameters
    ----------
    d : int
    reward : Reward
    grid : OutcomeGrid
        The values the index's distributions live on; must end at 1 (the
        optimistic mass goes there).
    observed : OutcomeGrid or None
        The values of the feedback histograms (``hist`` statistics), a subset of
        ``grid``; ``None`` when feedback arrives as raw ``samples`` to discretise.
    intervals : int or None
        Algorithm 8's ``s`` when discretising samples.
    C : float
        Exploration constant of the radius ``sqrt(C ln t / n_i)``.

    >>> from cmab_milp.general import OutcomeGrid, make_reward
    >>> grid = OutcomeGrid([0.0, 0.5, 1.0])
    >>> index = DistributionIndex(2, make_reward("max"), grid, grid, C=1.5)
    >>> index.update(FeedbackStats(8, np.array([8, 0]), hist=np.array([[0, 8, 0], [0, 0, 0]])))
    >>> index.upper_values(1, np.array([[1, 0], [1, 1]], bool)).tolist()   # ln 1 = 0: no shift
    [0.5, inf]
    """

    def __init__(
        self,
        d: int,
        reward: Reward,
        grid: OutcomeGrid,
        observed: OutcomeGrid | None,
        intervals: int | None = None,
        C: float = 1.5,
    ):
        if abs(grid.values[-1] - 1.0) > 1e-12:
            raise ValueError("the index grid must end at the value 1")
        self.reward = reward
        self.grid = grid
        self.observed_grid = observed
        self.intervals = intervals
        self.C = check_positive("C", C)
        self.needs = frozenset({"hist"}) if observed is not None else frozenset({"samples"})
        self._columns = None if observed is None else grid.index_of(observed.values)
        super().__init__(d)

    _state_fields = ("hist",)

    def reset(self) -> None:
        super().reset()
        self.hist = np.zeros((self.d, len(self.grid)), np.int64)

    def update(self, stats: FeedbackStats) -> None:
        super().update(stats)
        if self.observed_grid is not None:
            if stats.hist is None or stats.hist.shape != (self.d, len(self.observed_grid)):
                got = None if stats.hist is None else stats.hist.shape
                raise ValueError(
                    f"feedback histograms must have shape ({self.d}, {len(self.observed_grid)}) to match the "
                    f"policy's support {self.observed_grid.values.tolist()}, got {got}: pass support=env.support"
                )
            self.hist[:, self._columns] += stats.hist
            return
        if stats.samples is None:
            raise ValueError("feedback must carry 'samples' when the policy discretises outcomes")
        y = stats.samples
        seen = ~np.isnan(y)
        for arm in np.flatnonzero(seen.any(axis=0)):
            values = y[seen[:, arm], arm]
            if (values < -1e-9).any() or (values > 1 + 1e-9).any():
                raise ValueError(f"outcomes must lie in [0, 1] to be discretised; arm {arm} saw {values.min():g}")
            j = np.rint(discretise(values, self.intervals) * self.intervals).astype(np.int64) - 1
            self.hist[arm] += np.bincount(j, minlength=len(self.grid))

    def round_stats(self, action: np.ndarray, y: np.ndarray) -> FeedbackStats:
        """One round's ``hist`` (outcomes must be values of the support) or ``samples`` (outcomes in [0, 1])."""
        arms = np.flatnonzero(action)
        values = y[arms]
        if self.observed_grid is None:
            bad = (values < 0) | (values > 1)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError(f"outcomes must lie in [0, 1] to be discretised; arm {int(arms[k])} has {values[k]:g}")
            return FeedbackStats.of_rounds(action[None], y[None], self.needs)
        support = self.observed_grid.values
        pos = (
            np.clip(np.searchsorted(support, values), 1, len(support) - 1)
            if len(support) > 1
            else np.zeros(len(values), np.int64)
        )
        below = support[pos - 1] if len(support) > 1 else support[pos]
        nearest = np.where(np.abs(values - below) <= np.abs(values - support[pos]), below, support[pos])
        off = ~np.isclose(nearest, values, rtol=0.0, atol=1e-9)
        if off.any():
            k = int(np.flatnonzero(off)[0])
            raise ValueError(
                f"outcome {values[k]:g} of arm {int(arms[k])} is not in the policy's support {support.tolist()}"
            )
        snapped = y.copy()
        snapped[arms] = nearest
        return FeedbackStats.of_rounds(action[None], snapped[None], self.needs, support)

    # -------------------------------------------------------- distributions
    def optimistic(self, t: int) -> np.ndarray:
        """Per-arm optimistic pmf (rows of unobserved arms: point mass at 1)."""
        return optimistic_pmf(self.hist, confidence_radius(self.counts, t, self.C))

    def pessimistic(self, t: int) -> np.ndarray:
        """Per-arm pessimistic pmf (rows of unobserved arms: point mass at the lowest value)."""
        return pessimistic_pmf(self.hist, confidence_radius(self.counts, t, self.C))

    # --------------------------------------------------------------- queries
    def upper_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        return {"kind": "index", "pmf": self.optimistic(t), "include": include, "exclude": exclude}

    def lower_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        return {"kind": "index", "pmf": self.pessimistic(t), "include": include, "exclude": exclude}

    def upper_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        return self._values(actions, self.optimistic(t), np.inf)

    def lower_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        return self._values(actions, self.pessimistic(t), -np.inf)

    def _values(self, actions: np.ndarray, pmf: np.ndarray, unseen_value: float) -> np.ndarray:
        acts = np.atleast_2d(np.asarray(actions, dtype=bool))
        values = self.reward.expected(acts, self.grid, pmf)
        values[acts[:, ~self.observed].any(axis=1)] = unseen_value
        return values


def _grids(support: Any, discretise: Any, m: int, T: int | None) -> tuple[OutcomeGrid, OutcomeGrid | None, int | None]:
    """The index grid, the histogram grid (None: discretised samples) and the number of intervals."""
    if support is not None and discretise not in (False, None):
        raise ValueError("give either support= (discrete outcomes) or discretise= (continuous outcomes), not both")
    if support is not None:
        observed = OutcomeGrid(support)
        return observed.with_value(1.0), observed, None
    if discretise is True:
        if T is None:
            raise ValueError(
                "discretise=True sets s = ceil(sqrt(m T)) intervals and needs the horizon; with T=None "
                "give the number of intervals (discretise=<int>)"
            )
        s = n_intervals(m, T, 1.0)
    elif isinstance(discretise, (int, np.integer)) and not isinstance(discretise, bool) and discretise >= 1:
        s = int(discretise)
    elif discretise in (False, None):
        raise ValueError(
            "a general-reward policy needs the outcome support (support=env.support) for discrete outcomes, "
            "or discretise=True / an interval count for continuous outcomes (Algorithm 8)"
        )
    else:
        raise ValueError(f"discretise must be True, False or an integer >= 1, got {discretise!r}")
    return discretisation_grid(s), None, s


def _distribution_oracle(
    space: ActionSpace, oracle: Any, method: Any, reward: Reward, grid: OutcomeGrid
) -> DistributionOracle:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(oracle, DistributionOracle):
        if oracle.grid != grid:
            raise ValueError(f"the given distribution oracle works on {oracle.grid!r}, the policy needs {grid!r}")
        if oracle.reward is not reward and oracle.reward.name != reward.name:
            raise ValueError(f"the given distribution oracle maximises {oracle.reward.name!r}, not {reward.name!r}")
        return oracle
    if isinstance(oracle, Oracle):
        return DistributionOracle(space, reward, grid, method=method, linear=oracle)
    if not isinstance(oracle, str):
        raise ValueError(f"oracle must be a backend or method name or an Oracle, got {type(oracle).__name__}")
    if oracle in METHODS and oracle not in ("auto", "enumerate"):
        if method not in ("auto", oracle):
            raise ValueError(f"oracle={oracle!r} and method={method!r} disagree; give the method once")
        return DistributionOracle(space, reward, grid, method=oracle)
    if oracle == "enumerate" and method == "auto":
        method = "enumerate"
    return DistributionOracle(space, reward, grid, method=method, linear=oracle)


class _GeneralReward:
    """Construction shared by the three policies (mixed in before a schedule)."""

    def _setup(self, space: ActionSpace, T: int, oracle: Any, params: dict) -> tuple[DistributionOracle, dict]:
        if not isinstance(space, ActionSpace):
            raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
        T = check_horizon(T)
        reward = make_reward(params["reward"])
        params["C"] = check_positive("C", params["C"])
        grid, _, _ = _grids(params["support"], params["discretise"], space.m, T)
        if isinstance(reward, CallableReward):
            check_monotone(reward, space.d, grid, seed=0)
        self._reward = reward
        return _distribution_oracle(space, oracle, params["method"], reward, grid), params

    def make_index(self) -> DistributionIndex:
        grid, observed, s = _grids(self.params["support"], self.params["discretise"], self.m, self.T)
        return DistributionIndex(self.d, self._reward, grid, observed, s, C=self.params["C"])


class SDCB(_GeneralReward, EveryRound):
    """SDCB (Chen et al. 2016): the optimistic-distribution argmax at every round (baseline).

    Parameters: see the module docstring (``reward``, ``support``, ``discretise``, ``method``, ``C``, ``oracle``).

    >>> import cmab_milp as cm
    >>> SDCB(cm.Cardinality(3, 1), 10, oracle="enumerate", support=[0.0, 1.0]).oracle.name
    'distribution:enumerate'
    """

    name = "SDCB"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        reward: Any = "sqrt_sum",
        support: Any = None,
        discretise: Any = False,
        method: str = "auto",
        C: float = 1.5,
    ):
        solver, params = self._setup(
            space, T, oracle, {"reward": reward, "support": support, "discretise": discretise, "method": method, "C": C}
        )
        super().__init__(space, T, oracle=solver, **params)
        self._oracle_spec = oracle


class AROQGR(_GeneralReward, AdaptiveEpochs):
    """AROQ-GR-CMAB (Algorithm 6): the optimistic-distribution argmax, refreshed when an arm's epoch ends.

    ``alpha < 1`` with an approximate oracle (``oracle="greedy"``) is Algorithm 5's
    form; ``alpha=None`` (default) takes the oracle's own factor (1 when exact).

    >>> import cmab_milp as cm
    >>> AROQGR(cm.Cardinality(4, 2), 100, oracle="greedy", reward="max", support=[0.5, 1.0]).alpha
    0.6321205588285577
    """

    name = "AROQ-GR"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        reward: Any = "sqrt_sum",
        support: Any = None,
        discretise: Any = False,
        method: str = "auto",
        C: float = 1.5,
        alpha: float | None = None,
    ):
        solver, params = self._setup(
            space, T, oracle, {"reward": reward, "support": support, "discretise": discretise, "method": method, "C": C}
        )
        self.alpha = solver.alpha if alpha is None else check_unit_interval("alpha", alpha)
        super().__init__(space, T, oracle=solver, alpha=alpha, **params)
        self._oracle_spec = oracle


class SROQGR(_GeneralReward, ScheduledElimination):
    """SROQ-GR-CMAB (Algorithm 7): scheduled representatives and elimination with eqs. (11).

    ``M`` (default ``max(2, ceil(log2(log2(T))))``) sets the epoch grid; the
    radius uses ``ln T``. Each epoch is one adaptivity round: the
    representatives (``include=[i]``) and the max-LCB query run in one batch.

    >>> import cmab_milp as cm
    >>> len(SROQGR(cm.Cardinality(3, 1), 10**5, oracle="enumerate", support=[0.0, 1.0]).grid)
    5
    """

    name = "SROQ-GR"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        reward: Any = "sqrt_sum",
        support: Any = None,
        discretise: Any = False,
        method: str = "auto",
        C: float = 1.5,
        M: Any = None,
    ):
        solver, params = self._setup(
            space, T, oracle, {"reward": reward, "support": support, "discretise": discretise, "method": method, "C": C}
        )
        super().__init__(space, T, oracle=solver, M=M, **params)
        self._oracle_spec = oracle
