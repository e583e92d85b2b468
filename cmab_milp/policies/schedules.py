"""When to ask the oracle: the paper's three schedules, shared by every family.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Each schedule is an :class:`~cmab_milp.policies.base.IndexPolicy` that leaves
the estimator and its queries to :meth:`make_index`:

* :class:`EveryRound`: the baselines (CUCB, OLS-UCB-C, SDCB): one UCB argmax per round.
* :class:`AdaptiveEpochs`: Algorithm 1 (and 3, 5, 6). Each *unit* keeps an
  epoch counter ``tau``; its epoch ends at the start of the first round where
  its count in the epoch reaches the threshold (an arm ``i``:
  ``1 + sqrt(T m |T_i(tau_i - 1)| / d)``; a pair ``(i, j)``:
  ``1 + 2 |T_ij(tau_ij - 1)|``); then the index is refreshed and the oracle
  asked once. Between updates the action is fixed, so the hold length is known
  in advance and played in bulk.
* :class:`ScheduledElimination`: Algorithm 2 (and 4, 7). At each grid point
  ``t_tau`` (:func:`sroq_grid`) one adaptivity round asks, in one batch, a
  representative ``argmax UCB`` per surviving arm (``include=[i]``, eliminated
  arms excluded) -- with pair units also per surviving pair
  (``include=[i, j]``, eliminated pairs forbidden) -- and the max-LCB action;
  arms (pairs) whose representative's UCB is below that LCB are eliminated;
  the survivors' representatives are played in turn until the next grid point
  (pairs: arm representatives, then pair representatives). The max-LCB query
  runs in the same batch as the representatives (Appendix A.1's count):
  adaptivity = number of epochs. With the constant ``prune`` (pair units) an
  epoch takes two batches and skips the pair queries whose answers are known
  or unused (:meth:`ScheduledElimination.pair_plan`): same actions, fewer
  queries, adaptivity = 2 x epochs.

:func:`shared_cover` is a warm-up that asks only for units no earlier answer
holds (AROQ-C's with ``prune``; SROQ-C keeps the one-batch :func:`unit_cover`,
so its warm-up stays one adaptivity round).

What varies between the families is a parameter of :class:`EpochSchedule`,
the base of the last two: the epoch **unit** (class attribute ``unit``:
``"arm"``, Algorithms 1, 2, 5-7; ``"pair"``, every ``(i, j)`` with
``i <= j``, Algorithms 3 and 4), the **representative sets**
(:meth:`ScheduledElimination.representative_sets`) and an optional
**warm-up** (constant ``warmup_cycles``: passes over :func:`unit_cover`
played before the schedule starts).

Example
-------
>>> sroq_grid(10**5, 5).tolist()
[1, 380, 7422, 32802, 68959]
>>> default_epochs(10**5)
5
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ..described import ParameterError
from ..oracles import Oracle
from ..oracles.core.base import tolerance
from ..spaces.base import ActionSpace
from .anytime import anytime_scale
from .base import IndexPolicy, Stretch, check_nonnegative
from .pair_steps import PairSteps
from .warmup import all_pairs, pair_cover, shared_cover, unit_cover

__all__ = [
    "UNITS",
    "AdaptiveEpochs",
    "EpochSchedule",
    "EveryRound",
    "ScheduledElimination",
    "all_pairs",
    "default_epochs",
    "pair_cover",
    "shared_cover",
    "sroq_grid",
    "unit_cover",
]

#: The epoch units a schedule may count: arms, or pairs ``(i, j)`` with ``i <= j``.
UNITS = ("arm", "pair")


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


class EpochSchedule(IndexPolicy):
    """What the adaptive schedules share: the epoch unit and the optional warm-up.

    * ``unit`` (class attribute, one of :data:`UNITS`): ``"arm"`` counts plays
      per arm (shape ``(d,)``), ``"pair"`` per pair ``(i, j)`` (shape
      ``(d, d)``, symmetric; ``(i, i)`` is arm ``i``).
    * ``warmup_cycles`` (constant, optional): before the schedule starts,
      :func:`unit_cover` over the units (asked at the first round, one batch)
      is played in turn for ``ceil(warmup_cycles * units)`` rounds (at most
      ``T``); ``None``: the paper's ``log(T)^3`` passes (one pass when
      ``T=None``); absent or 0: no warm-up. Attributes ``warmup_rounds`` and
      ``cover`` (the actions, ``None`` until asked).
    """

    #: What an epoch counts: ``"arm"`` or ``"pair"``.
    unit: ClassVar[str] = "arm"

    def __init__(self, space: ActionSpace, T: int | None, *, oracle: str | Oracle = "highs", **params: Any):
        if self.unit not in UNITS:
            raise ValueError(f"{type(self).__name__}.unit must be one of {UNITS}, got {self.unit!r}")
        if params.get("warmup_cycles") is not None:
            params["warmup_cycles"] = check_nonnegative("warmup_cycles", params["warmup_cycles"])
        super().__init__(space, T, oracle=oracle, **params)

    def reset(self) -> None:
        super().reset()
        self.warmup_rounds = self.warmup_length()
        self.cover: np.ndarray | None = None

    @property
    def units(self) -> list[tuple[int, ...]]:
        """The units in their fixed order: ``(i,)`` per arm, or :func:`all_pairs`."""
        return all_pairs(self.d) if self.unit == "pair" else [(i,) for i in range(self.d)]

    def unit_counts(self, stretch: Stretch, rounds: int) -> np.ndarray:
        """Plays of each unit in the first ``rounds`` rounds of ``stretch`` (shape ``(d,)`` or ``(d, d)``)."""
        acts = stretch.actions
        if len(acts) == 1 and self.unit == "arm":
            return rounds * acts[0]
        per_action = np.full(len(acts), rounds // len(acts), np.int64)
        per_action[: rounds % len(acts)] += 1
        acts = acts.astype(np.int64)
        return per_action @ acts if self.unit == "arm" else (acts.T * per_action) @ acts

    def held_units(self, action: np.ndarray) -> np.ndarray:
        """Mask of the units ``action`` plays."""
        return action if self.unit == "arm" else np.outer(action, action)

    def warmup_length(self) -> int:
        """Rounds of the warm-up: ``ceil(warmup_cycles * number of units)``, at most ``T``."""
        cycles = self.params.get("warmup_cycles", 0.0)
        if cycles is None:
            cycles = math.log(self.T) ** 3 if self.T is not None else 1.0
        per_pass = self.d * (self.d + 1) / 2 if self.unit == "pair" else self.d
        rounds = math.ceil(cycles * per_pass)
        return rounds if self.T is None else min(self.T, rounds)

    def warmup_cover(self) -> np.ndarray:
        """The actions the warm-up plays in turn (:func:`unit_cover` of :attr:`units`)."""
        return unit_cover(self.index, self.oracle, self.units)[1]

    def _warmup(self) -> Stretch | None:
        """The rest of the warm-up from round ``self.t``, or ``None`` once it is over."""
        if self.t > self.warmup_rounds:
            return None
        if self.cover is None:
            self.cover = self.warmup_cover()
        offset = (self.t - 1) % len(self.cover)
        return Stretch(np.roll(self.cover, -offset, axis=0), self.warmup_rounds - self.t + 1)


class AdaptiveEpochs(EpochSchedule):
    """Per-unit epochs ending at :meth:`thresholds` (Algorithm 1; pairs: Algorithm 3).

    A warm-up, if any, is epoch 0 of every unit; the schedule's epochs start
    at 1 after it. Attributes after a run: ``epochs`` (``tau`` per unit; arms:
    Lemma 1 bounds their sum by ``d log2 log2(T m / d) + 3 d``; pairs: Lemma 5
    bounds each by ``log2(T m) + 2``), ``updates`` (oracle consultations after
    the warm-up, the first included).
    """

    _state_fields = ("epochs", "previous", "current", "action", "updates")

    def reset(self) -> None:
        super().reset()
        shape = (self.d, self.d) if self.unit == "pair" else (self.d,)
        self.epochs = np.full(shape, 0 if self.warmup_rounds else 1, np.int64)
        self.previous = np.zeros(shape, np.int64)  # |T_u(tau_u - 1)|
        self.current = np.zeros(shape, np.int64)  # |T_u(tau_u)|
        self.action: np.ndarray | None = None
        self.updates = 0

    def thresholds(self) -> np.ndarray:
        """Per unit, the count in the current epoch that ends it.

        Arms: ``1 + sqrt(T m |T_i(tau_i - 1)| / d)`` (``T=None``: ``T`` ->
        :func:`.anytime_scale`); pairs: ``1 + 2 |T_ij(tau_ij - 1)|`` (doubling).
        """
        if self.unit == "pair":
            return 1 + 2 * self.previous
        scale = self.T if self.T is not None else anytime_scale(self.t, self.params.get("anytime_log_power", 1.0))
        if isinstance(scale, int) and scale * self.m * int(self.previous.max(initial=0)) >= 2**63:
            # T m |T_i| past int64 (horizons near 2**50): the same value in floating point, without overflow
            return 1.0 + np.sqrt(float(scale * self.m) * (self.previous / self.d))
        return 1.0 + np.sqrt(scale * self.m * self.previous / self.d)

    def _plan(self) -> Stretch:
        warmup = self._warmup()
        if warmup is not None:
            return warmup
        if self.action is None:  # round 1, or the warm-up (epoch 0 of every unit) just ended
            self.epochs[:] = 1
            self.previous = self.current
            self.current = np.zeros_like(self.previous)
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
        held = self.held_units(self.action)
        if held.any():
            # smallest j >= 1 with current + j >= threshold, over the units held
            need = np.maximum(1, np.ceil(thresholds[held] - self.current[held])).min()
            left = min(left, int(need))
        return Stretch(self.action[None, :], max(1, left))

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        self.current += self.unit_counts(stretch, rounds)


class ScheduledElimination(PairSteps, EpochSchedule):
    """Grid epochs, representatives, elimination and round robin (Algorithm 2; pairs: Algorithm 4).

    ``M`` (keyword, default :func:`default_epochs`) sets the grid. Attributes:
    ``grid``, ``epoch`` (epochs started), ``active`` (surviving arms) and
    ``history`` (per epoch: start round, survivors, representatives played;
    pairs: surviving pairs and phase lengths). A warm-up, if any, comes first;
    grid points inside it are skipped and the first epoch starts right after it
    (running on to the next grid point but one when the remainder of its grid
    epoch is short: :meth:`phase_grid`).

    With ``unit = "pair"`` (Algorithm 4) the representatives are asked per
    surviving arm and per surviving pair (:meth:`representative_sets`), every
    query of the batch forbids the eliminated pairs (``forbid_pairs``), pairs
    whose representative's UCB is below the max LCB are eliminated (attributes
    ``active_pairs``, ``forbidden``), the arms of the max-LCB action are
    always kept (so it stays feasible and its LCB is the max over the
    survivors), and an epoch plays the arm representatives, then the pair
    representatives for its last :meth:`pair_phase_length` rounds (``phases``:
    ``(first round, cycle)`` of each phase). Constant ``pair_fraction``: that
    phase's share of the epoch (``None``: the paper's length).

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
            raise ParameterError("M", f"M must be an integer >= 1, got {M!r}")
        if params.get("pair_fraction") is not None:
            params["pair_fraction"] = check_nonnegative("pair_fraction", params["pair_fraction"])
            if params["pair_fraction"] > 1:
                raise ParameterError(
                    "pair_fraction", f"pair_fraction must lie in [0, 1], got {params['pair_fraction']}"
                )
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
        self._reset_pairs()

    def _reset_pairs(self) -> None:
        if self.unit == "pair":
            self.active_pairs = [(i, j) for i in range(self.d) for j in range(i + 1, self.d)]
            self.forbidden: list[tuple[int, int]] = []
            self.phases: list[tuple[int, np.ndarray]] = []

    def phase_grid(self) -> np.ndarray:
        """Epoch starts of the phase from round ``self.phase_start`` to ``self.horizon``, after the warm-up.

        The :func:`sroq_grid` points after the warm-up, the first epoch starting
        right after it (at ``s``, inside the grid epoch ``[g_prev, g)``). When
        ``s`` lies in the second half of that grid epoch (``g - s < (g -
        g_prev) / 2``), ``g`` is dropped: the first epoch runs on to the next
        grid point instead of asking a whole batch of representatives for a
        short remainder (at ``T = 10^5``, ``d = 120``: ``s = 7,261``, ``g =
        7,422``). The merged epoch ``[s, g')`` starts at ``s >= g / 2``, so its
        length over ``sqrt(s)`` -- what the grid equalises across epochs -- is
        at most ``sqrt(2)`` times the grid's.

        >>> import cmab_milp as cm
        >>> sroq_grid(10**5, 5).tolist()
        [1, 380, 7422, 32802, 68959]
        >>> import networkx as nx
        >>> crew = cm.Matchings(nx.complete_bipartite_graph(10, 12))
        >>> cm.SROQCov(crew, 10**5, oracle="highs").grid.tolist()  # warm-up: rounds 1-7,260
        [7261, 32802, 68959]
        """
        length = self.horizon - self.phase_start + 1
        M = self.params["M"] if self.params["M"] is not None else default_epochs(self.horizon)
        grid = self.phase_start - 1 + sroq_grid(length, M)
        if not self.warmup_rounds:
            return grid
        first = max(self.phase_start, self.warmup_rounds + 1)
        starts = [int(g) for g in grid if g > first]
        if starts and first <= self.horizon:
            before = int(grid[grid <= first].max())  # the grid epoch [before, starts[0]) holds `first`
            if before < first and 2 * (starts[0] - first) < starts[0] - before:
                starts = starts[1:]
        if first <= self.horizon:
            starts = [first, *starts]
        return np.array(starts, dtype=np.int64)

    def _new_horizon(self) -> None:
        super()._new_horizon()
        self.phase_start = self.t
        self.grid = self.phase_grid()
        self.epoch = 0
        self.active[:] = True
        self._reset_pairs()

    def representative_sets(self) -> list[tuple[int, ...]]:
        """The ``include`` sets asked at an epoch start: ``(i,)`` per surviving arm, then (pairs) each surviving pair.

        An override keeps that order: the first answers are the arms'
        representatives (arm elimination, phase 1), the rest the pairs'.
        """
        arms = [(int(i),) for i in np.flatnonzero(self.active)]
        return arms + list(self.active_pairs) if self.unit == "pair" else arms

    def pair_phase_length(self, epoch_length: int) -> int:
        """Rounds of the pair phase in an epoch of ``epoch_length`` rounds (``unit = "pair"``).

        ``round(pair_fraction * epoch_length)``, or the paper's
        ``min(T_tau, (d^2 m^2 T_tau log T)^(2/3))`` when ``pair_fraction`` is ``None``.
        """
        fraction = self.params.get("pair_fraction")
        if fraction is not None:
            return round(fraction * epoch_length)
        paper = (self.d**2 * self.m**2 * epoch_length * math.log(self.horizon)) ** (2.0 / 3.0)
        return min(epoch_length, math.ceil(paper))

    def _plan(self) -> Stretch:
        warmup = self._warmup()
        if warmup is not None:
            return warmup
        if self.epoch < len(self.grid) and self.t >= self.grid[self.epoch]:
            self._start_epoch()
        end = self.grid[self.epoch] - 1 if self.epoch < len(self.grid) else self.horizon
        phases = self.phases if self.unit == "pair" else [(self.grid[self.epoch - 1], self.cycle)]
        start, cycle = phases[0]
        if len(phases) > 1 and self.t >= phases[1][0]:
            start, cycle = phases[1]
        elif len(phases) > 1:
            end = phases[1][0] - 1
        offset = (self.t - start) % len(cycle)
        return Stretch(np.roll(cycle, -offset, axis=0), int(end - self.t + 1))

    def _start_epoch(self) -> None:
        T = self.horizon
        survivors = np.flatnonzero(self.active)
        eliminated = tuple(np.flatnonzero(~self.active).tolist())
        forbid = tuple(self.forbidden) if self.unit == "pair" else ()
        prune = self.unit == "pair" and bool(self.params.get("prune"))
        units = self.representative_sets()
        restrictions = [(unit, eliminated) for unit in (units[: len(survivors)] if prune else units)]
        unseen = tuple(np.flatnonzero(~self.index.observed & self.active).tolist())
        lower = self.index.lower_query(T, (), eliminated + unseen)
        answers = self._ask_upper(T, restrictions, forbid, extra=[lower])
        reps, lcb_action = answers[:-1], answers[-1]
        best_lcb = self._lcb(lcb_action)
        floor = best_lcb - tolerance(best_lcb)

        kept_by_lcb = set()
        if self.unit == "pair" and lcb_action is not None:
            kept_by_lcb = set(np.flatnonzero(lcb_action).tolist())
        keep, arm_cycle = [], []
        for arm, rep in zip(survivors, reps[: len(survivors)], strict=True):
            if rep is not None and (int(arm) in kept_by_lcb or self._ucb(rep) >= floor):
                keep.append(int(arm))
                arm_cycle.append(rep)
        arm_reps = dict(zip(survivors.tolist(), reps[: len(survivors)], strict=True))
        self.active[:] = False
        self.active[keep] = True
        pair_cycle: list[np.ndarray] = []
        record: dict[str, Any] = {"start": int(self.t), "survivors": keep}
        if self.unit == "pair":
            pair_reps = reps[len(survivors) :]
            if prune:
                pair_reps, record["pair_queries"], record["pairs_skipped"] = self._pruned_pairs(
                    T, eliminated, forbid, arm_reps
                )
            pair_cycle = self._eliminate_pairs(pair_reps, floor)

        if not arm_cycle:  # nothing survives (possible only with negative indices): play the max-LCB action
            if lcb_action is None:
                raise RuntimeError(f"no arm survived and no max-LCB action exists in {self.space!r}")
            arm_cycle = [lcb_action]
        self.cycle = np.array(arm_cycle, dtype=bool)
        if self.unit == "pair":
            end = self.grid[self.epoch + 1] if self.epoch + 1 < len(self.grid) else self.horizon + 1
            length = int(end - self.t)
            pair_rounds = self.pair_phase_length(length) if pair_cycle else 0
            self.phases = [(int(self.t), self.cycle)]
            if pair_rounds >= length:
                self.phases = [(int(self.t), np.array(pair_cycle, dtype=bool))]
            elif pair_rounds > 0:
                self.phases.append((int(end - pair_rounds), np.array(pair_cycle, dtype=bool)))
            self.cycle = self.phases[0][1]
            record.update(pairs=len(self.active_pairs), pair_rounds=min(pair_rounds, length), length=length)
        else:
            record["plays"] = len(arm_cycle)
        self.history.append(record)
        self.epoch += 1

    def _ask_upper(
        self,
        T: int,
        restrictions: list[tuple[tuple[int, ...], tuple[int, ...]]],
        forbid: tuple[tuple[int, int], ...],
        extra: list[dict] = [],  # noqa: B006 (read only)
    ) -> list[np.ndarray | None]:
        """One adaptivity round: the representatives under ``restrictions`` (resolved), then ``extra``'s answers.

        Every query forbids the pairs ``forbid`` (pair units).
        """
        entries = self.upper_batch(T, restrictions) + list(extra)
        if self.unit == "pair":
            for entry in entries:
                entry["forbid_pairs"] = forbid
        answers = self.index.ask(self.oracle, entries)
        head = len(answers) - len(extra)
        return self.resolve_upper(restrictions, answers[:head]) + answers[head:]

    def _ucb(self, action: np.ndarray) -> float:
        return float(self.index.upper_values(self.horizon, action[None])[0])

    def _lcb(self, action: np.ndarray | None) -> float:
        return -np.inf if action is None else float(self.index.lower_values(self.horizon, action[None])[0])

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        pass
