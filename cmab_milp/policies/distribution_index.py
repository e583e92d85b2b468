"""The general-reward family's index: per-arm outcome histograms, optimistic / pessimistic expected rewards.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Its three layouts (given support, Algorithm 8's intervals, a learned support) are described in
:mod:`cmab_milp.policies.general`, which builds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..environments.base import FeedbackStats
from ..nonlinear.distributions import confidence_radius, optimistic_pmf, pessimistic_pmf
from ..nonlinear.grid import OutcomeGrid, discretisation_grid
from ..nonlinear.rewards import Reward
from .base import Index, check_positive

_TOL = 1e-9


class DistributionIndex(Index):
    """Per-arm outcome histograms and the optimistic / pessimistic expected rewards.

    Three layouts (:mod:`cmab_milp.policies.general`): a given support (``observed``), Algorithm 8
    (``intervals``) or a learned support (``learn=True``).

    Parameters
    ----------
    d : int
    reward : Reward
    grid : OutcomeGrid
        The values the index's distributions live on; its last value is the top of
        the outcome range (``upper``: the optimistic mass goes there). With
        ``learn=True``: the values the grid always holds (``upper``, and 0 for the
        paper's pessimistic distribution), to which observed values are added.
    observed : OutcomeGrid or None
        The values of the feedback histograms (``hist`` statistics), a subset of
        ``grid``; ``None`` when feedback arrives as raw ``samples``.
    intervals : int or None
        Algorithm 8's ``s`` when discretising samples from the start.
    C : float
        Exploration constant of the radius ``sqrt(C ln t / n_i)``.
    learn : bool
        Learn the support from the samples.
    fallback : int or None
        With ``learn``: Algorithm 8's ``s`` to switch to when the outcomes turn
        out continuous (the policy sets it; ``None`` refuses such outcomes).

    >>> from cmab_milp.nonlinear import OutcomeGrid, make_reward
    >>> grid = OutcomeGrid([0.0, 0.5, 1.0])
    >>> index = DistributionIndex(2, make_reward("max"), grid, grid, C=1.5)
    >>> index.update(FeedbackStats(8, np.array([8, 0]), hist=np.array([[0, 8, 0], [0, 0, 0]])))
    >>> index.upper_values(1, np.array([[1, 0], [1, 1]], bool)).tolist()   # ln 1 = 0: no shift
    [0.5, inf]
    >>> learner = DistributionIndex(2, make_reward("max"), OutcomeGrid([1.0]), learn=True, fallback=10)
    >>> learner.update(FeedbackStats(2, np.array([2, 0]), samples=np.array([[0.5, np.nan], [0.25, np.nan]])))
    >>> learner.grid.values.tolist(), learner.hist.tolist()
    ([0.25, 0.5, 1.0], [[1, 1, 0], [0, 0, 0]])
    """

    def __init__(
        self,
        d: int,
        reward: Reward,
        grid: OutcomeGrid,
        observed: OutcomeGrid | None = None,
        intervals: int | None = None,
        C: float = 1.5,
        *,
        learn: bool = False,
        fallback: int | None = None,
    ):
        layouts = (observed is not None) + (intervals is not None) + bool(learn)
        if layouts != 1:
            raise ValueError("give exactly one of observed (a support), intervals (Algorithm 8) and learn=True")
        self.reward = reward
        self.anchors = grid
        self.upper = float(grid.values[-1])
        self.observed_grid = observed
        self.learn = bool(learn)
        self.fixed_intervals = None if intervals is None else int(intervals)
        self.fallback = fallback
        self.C = check_positive("C", C)
        self.needs = frozenset({"hist"}) if observed is not None else frozenset({"samples"})
        self._columns = None if observed is None else grid.index_of(observed.values)
        super().__init__(d)

    _state_fields = ("hist",)

    def reset(self) -> None:
        super().reset()
        #: The values the distributions live on (grows while a support is learned).
        self.grid = self.anchors
        #: Algorithm 8's ``s`` once outcomes are discretised (``None`` before / without).
        self.intervals = self.fixed_intervals
        self.hist = np.zeros((self.d, len(self.grid)), np.int64)

    # --------------------------------------------------------------- feedback
    def update(self, stats: FeedbackStats) -> None:
        if self.observed_grid is not None:
            if stats.hist is None or stats.hist.shape != (self.d, len(self.observed_grid)):
                got = None if stats.hist is None else stats.hist.shape
                raise ValueError(
                    f"feedback histograms must have shape ({self.d}, {len(self.observed_grid)}) to match the "
                    f"policy's support {self.observed_grid.values.tolist()}, got {got}: pass support=env.support"
                )
            super().update(stats)
            self.hist[:, self._columns] += stats.hist
            return
        if stats.samples is None:
            raise ValueError("feedback must carry 'samples' (raw outcomes) when the policy has no given support")
        per_arm = self._by_arm(stats.samples)
        super().update(stats)
        if self.intervals is None and self._absorb(per_arm):
            return
        for arm, values in per_arm:
            self.hist[arm] += np.bincount(self._bins(values), minlength=len(self.grid))

    def _by_arm(self, y: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Per observed arm, its outcomes (checked to lie in ``[0, upper]``)."""
        seen = ~np.isnan(y)
        out = []
        for arm in np.flatnonzero(seen.any(axis=0)):
            values = y[seen[:, arm], arm]
            bad = (values < -_TOL) | (values > self.upper + _TOL)
            if bad.any():
                raise ValueError(
                    f"outcomes must lie in [0, {self.upper:g}] (the policy's outcome range, upper={self.upper:g}); "
                    f"arm {int(arm)} has {values[bad][0]:g}"
                )
            out.append((int(arm), np.clip(values, 0.0, self.upper)))
        return out

    def _bins(self, values: np.ndarray) -> np.ndarray:
        """Grid columns of the Algorithm 8 intervals holding ``values``."""
        s = self.intervals
        j = np.clip(np.ceil(values / self.upper * s - _TOL), 1, s).astype(np.int64)
        return j - 1 + (len(self.grid) - s)  # a leading 0 (pessimistic="zero") shifts the columns

    def _absorb(self, per_arm: list[tuple[int, np.ndarray]]) -> bool:
        """Count outcomes on the learned support, growing it; False when they turn out continuous."""
        if not per_arm:
            return True
        new = self.grid.new_values(np.concatenate([v for _, v in per_arm]))
        if new.size:
            candidate = self.grid.merged(new)
            seen = int((self.hist.sum(axis=0) > 0).sum()) + new.size
            if candidate.denominator is None or (self.fallback is not None and seen > self.fallback):
                self._switch(candidate)
                return False
            hist = np.zeros((self.d, len(candidate)), np.int64)
            hist[:, candidate.index_of(self.grid.values)] = self.hist
            self.grid, self.hist = candidate, hist
        for arm, values in per_arm:
            self.hist[arm] += np.bincount(self.grid.index_of(values), minlength=len(self.grid))
        return True

    def _switch(self, candidate: OutcomeGrid) -> None:
        """Continuous outcomes: Algorithm 8 from now on, the counts so far re-binned exactly."""
        if self.fallback is None:
            raise ValueError(
                f"the outcomes look continuous ({len(candidate)} values"
                + (", not simple fractions" if candidate.denominator is None else "")
                + "): give discretise=<intervals> (Algorithm 8)"
            )
        old_values, old_hist = self.grid.values, self.hist
        self.intervals = int(self.fallback)
        self.grid = discretisation_grid(self.intervals, self.upper).merged(self.anchors.values)
        self.hist = np.zeros((self.d, len(self.grid)), np.int64)
        np.add.at(self.hist.T, self._bins(old_values), old_hist.T)

    def round_stats(self, action: np.ndarray, y: np.ndarray) -> FeedbackStats:
        """One round's ``hist`` (outcomes must be values of the support) or ``samples`` (in ``[0, upper]``)."""
        arms = np.flatnonzero(action)
        values = y[arms]
        if self.observed_grid is None:
            rows = np.full((1, self.d), np.nan)
            rows[0, arms] = values
            self._by_arm(rows)
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

    # ----------------------------------------------------------------- state
    def get_state(self) -> dict[str, Any]:
        """Counts and histograms; a learned support adds its values (``support``) and ``intervals`` (0: none)."""
        state = super().get_state()
        if self.learn:
            state["support"] = self.grid.values.copy()
            state["intervals"] = 0 if self.intervals is None else int(self.intervals)
        return state

    def set_state(self, state: Any) -> None:
        if not self.learn:
            super().set_state(state)
            return
        state = dict(state)
        if set(state) != {"counts", "hist", "support", "intervals"}:
            raise ValueError(
                f"a learned-support index state has fields ['counts', 'hist', 'intervals', 'support'], "
                f"got {sorted(state)}"
            )
        values, intervals = state["support"], state["intervals"]
        if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind != "f":
            raise ValueError(f"the learned support must be a 1-D float array, got {values!r:.80}")
        grid = OutcomeGrid(values)
        if grid.merged(self.anchors.values) != grid or abs(grid.values[-1] - self.upper) > _TOL:
            raise ValueError(f"the learned support {grid.values.tolist()} must hold {self.anchors.values.tolist()}")
        if isinstance(intervals, bool) or not isinstance(intervals, (int, np.integer)) or intervals < 0:
            raise ValueError(f"the learned support's intervals must be an integer >= 0, got {intervals!r}")
        if intervals and grid != discretisation_grid(int(intervals), self.upper).merged(self.anchors.values):
            raise ValueError(f"the learned support does not match Algorithm 8's grid of {intervals} intervals")
        hist, counts = state["hist"], state["counts"]
        for name, value, shape in (("hist", hist, (self.d, len(grid))), ("counts", counts, (self.d,))):
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu" or value.shape != shape:
                raise ValueError(f"index state field {name!r} must be an integer array of shape {shape}")
        if (hist < 0).any() or not np.array_equal(hist.sum(axis=1), counts):
            raise ValueError("index state: the histograms must be >= 0 and sum to the counts")
        self.grid, self.intervals = grid, int(intervals) or None
        self.hist, self.counts = hist.astype(np.int64), counts.astype(np.int64)

    # -------------------------------------------------------- distributions
    def optimistic(self, t: int) -> np.ndarray:
        """Per-arm optimistic pmf (rows of unobserved arms: point mass at ``upper``)."""
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
