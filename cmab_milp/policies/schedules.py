"""When to ask the oracle: the paper's three schedules, shared by every family.

Each schedule is an :class:`~cmab_milp.policies.base.IndexPolicy` that leaves
the estimator and its queries to :meth:`make_index`:

* :class:`EveryRound`: the baselines (CUCB, OLS-UCB-C, SDCB): one UCB argmax per round.
* :class:`AdaptiveEpochs`: Algorithm 1 (and 3, 5, 6). Arm ``i`` keeps an epoch
  counter ``tau_i``; its epoch ends at the start of the first round where its
  count in the epoch reaches ``1 + sqrt(T m |T_i(tau_i - 1)| / d)``; then the
  index is refreshed and the oracle asked once. Between updates the action is
  fixed, so the hold length is known in advance and played in bulk.
* :class:`ScheduledElimination`: Algorithm 2 (and 4, 7). At each grid point
  ``t_tau`` (:func:`sroq_grid`) one adaptivity round asks, in one batch, a
  representative ``argmax UCB`` per surviving arm (``include=[i]``, eliminated
  arms excluded) and the max-LCB action; arms whose representative's UCB is
  below that LCB are eliminated; the survivors' representatives are played in
  turn until the next grid point. The max-LCB query runs in the same batch as
  the representatives (Appendix A.1's count): adaptivity = number of epochs.

Example
-------
>>> sroq_grid(10**5, 5).tolist()
[1, 380, 7422, 32802, 68959]
>>> default_epochs(10**5)
5
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..oracles import Oracle
from ..oracles.base import tolerance
from ..spaces.base import ActionSpace
from .anytime import anytime_scale
from .base import IndexPolicy, Stretch

__all__ = ["AdaptiveEpochs", "EveryRound", "ScheduledElimination", "default_epochs", "sroq_grid"]


def default_epochs(T: int) -> int:
    """The contract's SROQ epoch count ``M = max(2, ceil(log2(log2(T))))`` (2 when ``T < 4``).

    >>> [default_epochs(T) for T in (2, 16, 17, 10**8)]
    [2, 2, 3, 5]
    """
    if T < 4:
        return 2
    return max(2, math.ceil(math.log2(math.log2(T))))


def sroq_grid(T: int, M: int) -> np.ndarray:
    """Epoch starts ``t_1 = 1``, ``t_tau = floor(eta * sqrt(t_{tau-1}))``, ``eta = T**(1/(2 - 2**(1-M)))``.

    Epoch ``tau`` covers rounds ``[t_tau, t_{tau+1} - 1]`` and the last one ends
    at ``T`` (the recursion's next point would be ``T`` itself). A point that
    does not exceed its predecessor is raised to it plus one, and points past
    ``T`` are dropped, so on tiny horizons there can be fewer than ``M`` epochs.

    >>> sroq_grid(100, 3).tolist()
    [1, 13, 50]
    """
    if T < 1 or M < 1:
        raise ValueError(f"need T >= 1 and M >= 1, got T={T}, M={M}")
    eta = T ** (1.0 / (2.0 - 2.0 ** (1 - M)))
    grid = [1]
    for _ in range(M - 1):
        nxt = max(math.floor(eta * math.sqrt(grid[-1])), grid[-1] + 1)
        if nxt > T:
            break
        grid.append(nxt)
    return np.array(grid, dtype=np.int64)


def _infeasible(space: ActionSpace) -> RuntimeError:
    return RuntimeError(f"the oracle found no feasible action in {space!r}")


class EveryRound(IndexPolicy):
    """Ask the oracle for the UCB-maximising action at every round."""

    def _plan(self) -> Stretch:
        action = self.best_upper(self.t)
        if action is None:
            raise _infeasible(self.space)
        return Stretch(action[None, :], 1)

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        pass


class AdaptiveEpochs(IndexPolicy):
    """Per-arm epochs with the threshold ``1 + sqrt(T m |T_i(tau_i - 1)| / d)`` (Algorithm 1).

    Attributes after a run: ``epochs`` (``tau_i`` per arm, Lemma 1 bounds their
    sum by ``d log2 log2(T m / d) + 3 d``), ``updates`` (oracle consultations,
    the first at round 1 included).
    """

    _state_fields = ("epochs", "previous", "current", "action", "updates")

    def reset(self) -> None:
        super().reset()
        self.epochs = np.ones(self.d, np.int64)
        self.previous = np.zeros(self.d, np.int64)  # |T_i(tau_i - 1)|
        self.current = np.zeros(self.d, np.int64)  # |T_i(tau_i)|
        self.action: np.ndarray | None = None
        self.updates = 0

    def thresholds(self) -> np.ndarray:
        """Per arm, the count in the current epoch that ends it (``T=None``: ``T`` -> :func:`.anytime_scale`)."""
        scale = self.T if self.T is not None else anytime_scale(self.t)
        return 1.0 + np.sqrt(scale * self.m * self.previous / self.d)

    def _plan(self) -> Stretch:
        thresholds = self.thresholds()
        due = self.current >= thresholds
        if due.any() or self.action is None:
            self.epochs[due] += 1
            self.previous[due] = self.current[due]
            self.current[due] = 0
            thresholds = self.thresholds()
            action = self.best_upper(self.t)
            if action is None:
                raise _infeasible(self.space)
            self.action = action
            self.updates += 1
        left = self.horizon - self.t + 1
        arms = self.action
        if arms.any():
            # smallest j >= 1 with current + j >= threshold, over the arms held
            need = np.maximum(1, np.ceil(thresholds[arms] - self.current[arms])).min()
            left = min(left, int(need))
        return Stretch(self.action[None, :], max(1, left))

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        self.current += rounds * stretch.actions[0]


class ScheduledElimination(IndexPolicy):
    """Grid epochs, per-arm representatives, elimination and round robin (Algorithm 2).

    ``M`` (keyword, default :func:`default_epochs`) sets the grid. Attributes:
    ``grid``, ``epoch`` (epochs started), ``active`` (surviving arms) and
    ``history`` (per epoch: start round, survivors, representatives played).

    With ``T=None`` the run is a sequence of phases, one per horizon guess
    ``self.horizon`` (:mod:`cmab_milp.policies.anytime`): each phase restarts
    the grid (``M`` epochs, default :func:`default_epochs` of the guess) and
    the elimination on its own rounds, keeping the statistics.
    """

    def __init__(
        self, space: ActionSpace, T: int | None, *, oracle: str | Oracle = "highs", M: Any = None, **params: Any
    ):
        if M is None and T is not None:
            M = default_epochs(int(T)) if isinstance(T, (int, np.integer)) and T >= 1 else 2
        if M is not None and (isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1):
            raise ValueError(f"M must be an integer >= 1, got {M!r}")
        super().__init__(space, T, oracle=oracle, M=None if M is None else int(M), **params)

    _state_fields = ("phase_start", "grid", "epoch", "active", "cycle", "history")

    def reset(self) -> None:
        super().reset()
        self.phase_start = 1
        self.grid = self.phase_grid()
        self.epoch = 0
        self.active = np.ones(self.d, bool)
        self.cycle: np.ndarray | None = None
        self.history: list[dict[str, Any]] = []

    def phase_grid(self) -> np.ndarray:
        """Epoch starts of the phase that begins at round ``self.phase_start`` and ends at ``self.horizon``."""
        length = self.horizon - self.phase_start + 1
        M = self.params["M"] if self.params["M"] is not None else default_epochs(self.horizon)
        return self.phase_start - 1 + sroq_grid(length, M)

    def _new_horizon(self) -> None:
        super()._new_horizon()
        self.phase_start = self.t
        self.grid = self.phase_grid()
        self.epoch = 0
        self.active[:] = True

    def _plan(self) -> Stretch:
        if self.epoch < len(self.grid) and self.t >= self.grid[self.epoch]:
            self._start_epoch()
        end = self.grid[self.epoch] - 1 if self.epoch < len(self.grid) else self.horizon
        offset = (self.t - self.grid[self.epoch - 1]) % len(self.cycle)
        return Stretch(np.roll(self.cycle, -offset, axis=0), int(end - self.t + 1))

    def _start_epoch(self) -> None:
        survivors = np.flatnonzero(self.active)
        eliminated = tuple(np.flatnonzero(~self.active).tolist())
        restrictions = [((int(i),), eliminated) for i in survivors]
        unseen = tuple(np.flatnonzero(~self.index.observed & self.active).tolist())
        entries = self.upper_batch(self.horizon, restrictions)
        entries.append(self.index.lower_query(self.horizon, (), eliminated + unseen))
        answers = self.index.ask(self.oracle, entries)
        reps = self.resolve_upper(restrictions, answers[:-1])
        lcb_action = answers[-1]
        best_lcb = -np.inf if lcb_action is None else float(self.index.lower_values(self.horizon, lcb_action[None])[0])
        keep, cycle = [], []
        for arm, rep in zip(survivors, reps, strict=True):
            if rep is None:
                continue
            ucb = float(self.index.upper_values(self.horizon, rep[None])[0])
            if ucb >= best_lcb - tolerance(best_lcb):
                keep.append(int(arm))
                cycle.append(rep)
        self.active[:] = False
        self.active[keep] = True
        if not cycle:  # nothing survives (possible only with negative indices): play the max-LCB action
            if lcb_action is None:
                raise RuntimeError(f"no arm survived and no max-LCB action exists in {self.space!r}")
            cycle = [lcb_action]
        self.cycle = np.array(cycle, dtype=bool)
        self.history.append({"start": int(self.t), "survivors": keep, "plays": len(cycle)})
        self.epoch += 1

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        pass
