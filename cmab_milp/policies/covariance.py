"""The covariance-adaptive family: OLS-UCB-C, AROQ-C (Algorithm 3) and SROQ-C (Algorithm 4).

All three share :class:`CovarianceIndex`, the index of eqs. (3)-(4)::

    r_UCB(a) = mu_hat @ a + f_t * sqrt(a @ M @ a),   r_LCB(a) = mu_hat @ a - f_t * sqrt(a @ M @ a)

with ``M = D_n^{-1} G_bar D_n^{-1}`` from
:class:`~cmab_milp.policies.cov_estimators.CovarianceEstimator`, asked exactly
as ``oracle.argmax_norm(mu_hat, M, f_t, sign=+1 / -1, ...)``. The paper gives
the radii only up to constants; the choices here (parameters, defaults in
brackets) are

* ``h_t = h_scale * sqrt(log t + log d)`` [``h_scale = 1``], the paper's
  ``O(sqrt(log t + log d))`` used in ``Sigma_bar``;
* ``f_t = f_scale * sqrt(2 (C log t + d log log t))`` [``C = 1.5``,
  ``f_scale = 1``]: the paper's ``f_t = O(log t + d log log t)`` read as the
  *squared* radius of the usual self-normalised bound
  ``|<a, mu_hat - mu>| <= sqrt(2 f) ||D_n^{-1} a||_G``, so the Gaussian tail at
  one action is ``t^-C`` and ``d log log t`` pays for the union over directions
  (``log log t`` is floored at 0).

The schedules come from :mod:`cmab_milp.policies.schedules`: OLS-UCB-C is
:class:`~.schedules.EveryRound`; AROQ-C extends :class:`~.schedules.AdaptiveEpochs`
with *pair* epochs (a pair's epoch ends when its count at least doubles, after a
warm-up that plays an action through every pair); SROQ-C extends
:class:`~.schedules.ScheduledElimination` with pair representatives, pair
elimination through ``forbid_pairs`` and two-phase epochs.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(5, 2)
>>> env = cm.GaussianNoise([0.1, 0.2, 0.5, 0.8, 0.9], 0.01 * np.eye(5), seed=0)
>>> policy = cm.AROQCov(space, 3000, oracle="enumerate", warmup_cycles=2)
>>> result = cm.simulate(policy, env, 3000, seed=1)
>>> bool(result.regret[-1] < 0.1 * 3000), bool(policy.updates <= 5**2 * (np.log2(3000 * 2) + 2))
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..environments.base import FeedbackStats
from ..oracles import Oracle
from ..oracles.base import tolerance
from ..spaces.base import ActionSpace
from .base import Index, Stretch, check_positive
from .cov_estimators import CovarianceEstimator
from .schedules import AdaptiveEpochs, EveryRound, ScheduledElimination

__all__ = ["OLSUCBC", "AROQCov", "CovarianceIndex", "SROQCov", "all_pairs", "pair_cover"]


class CovarianceIndex(Index):
    """Means, covariance upper bound and the norm index of eq. (3).

    ``forbid_pairs`` (a tuple of arm pairs) is added to every query it builds:
    SROQ-C sets it to the pairs it has eliminated.

    >>> index = CovarianceIndex(2)
    >>> stats = FeedbackStats(
    ...     4, np.array([4, 4]), sum=np.array([2.0, 1.0]), outer=np.array([[1.5, 0.5], [0.5, 0.5]]),
    ...     pairs=np.array([[4, 4], [4, 4]]))
    >>> index.update(stats)
    >>> index.means.tolist()
    [0.5, 0.25]
    >>> bool(index.upper_values(100, np.array([[1, 1]], bool))[0] > 0.75)
    True
    """

    needs: ClassVar[frozenset[str]] = frozenset({"sum", "outer", "pairs"})
    _state_fields: ClassVar[tuple[str, ...]] = ("forbid_pairs",)
    _estimator_fields = ("counts", "pair_counts", "sums", "outer_sums")

    def __init__(self, d: int, C: float = 1.5, f_scale: float = 1.0, h_scale: float = 1.0):
        self.C = check_positive("C", C)
        self.f_scale = check_positive("f_scale", f_scale)
        self.h_scale = check_positive("h_scale", h_scale)
        self.forbid_pairs: tuple[tuple[int, int], ...] = ()
        super().__init__(d)

    def reset(self) -> None:
        super().reset()
        self.estimator = CovarianceEstimator(self.d)
        self._cache: dict[int, np.ndarray] = {}

    def update(self, stats: FeedbackStats) -> None:
        if stats.sum is None or stats.outer is None or stats.pairs is None:
            raise ValueError("CovarianceIndex needs the 'sum', 'outer' and 'pairs' feedback statistics")
        super().update(stats)
        self.estimator.add_stats(stats)
        self._cache.clear()

    def get_state(self) -> dict[str, Any]:
        estimator = {name: getattr(self.estimator, name) for name in self._estimator_fields}
        return {**super().get_state(), "estimator": estimator}

    def set_state(self, state: Mapping[str, Any]) -> None:
        state = dict(state)
        estimator = state.pop("estimator", None)
        if not isinstance(estimator, Mapping) or set(estimator) != set(self._estimator_fields):
            raise ValueError("CovarianceIndex state has no estimator statistics")
        super().set_state(state)
        for name in self._estimator_fields:
            current, value = getattr(self.estimator, name), estimator[name]
            if not isinstance(value, np.ndarray) or value.shape != current.shape:
                raise ValueError(f"CovarianceIndex estimator field {name!r} does not match")
            setattr(self.estimator, name, value.astype(current.dtype))
        self.forbid_pairs = tuple(tuple(p) for p in self.forbid_pairs)
        self._cache.clear()

    # ------------------------------------------------------------ radii
    def h(self, t: int) -> float:
        """``h_t = h_scale * sqrt(log t + log d)``."""
        return self.h_scale * math.sqrt(math.log(max(t, 1)) + math.log(self.d))

    def f(self, t: int) -> float:
        """``f_t = f_scale * sqrt(2 (C log t + d log log t))`` (``log log t`` floored at 0)."""
        log_t = math.log(max(t, 1))
        loglog = math.log(log_t) if log_t > 1 else 0.0
        return self.f_scale * math.sqrt(2.0 * (self.C * log_t + self.d * loglog))

    @property
    def means(self) -> np.ndarray:
        """Empirical means (0 for unobserved arms)."""
        return self.estimator.means()

    def matrix(self, t: int) -> np.ndarray:
        """``M = D_n^{-1} G_bar D_n^{-1}`` with ``h = h_t`` (cached until the next update)."""
        matrix = self._cache.get(t)
        if matrix is None:
            matrix = self._cache[t] = self.estimator.index_matrix(self.h(t))
        return matrix

    # ----------------------------------------------------------- queries
    def _query(self, t: int, sign: int, include: Sequence[int], exclude: Sequence[int]) -> dict:
        return {
            "kind": "norm",
            "mu": self.means,
            "M": self.matrix(t),
            "f": self.f(t),
            "sign": sign,
            "include": include,
            "exclude": exclude,
            "forbid_pairs": self.forbid_pairs,
        }

    def upper_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        return self._query(t, +1, include, exclude)

    def lower_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        return self._query(t, -1, include, exclude)

    def upper_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        return self._values(t, actions, +1)

    def lower_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        return self._values(t, actions, -1)

    def _values(self, t: int, actions: np.ndarray, sign: int) -> np.ndarray:
        acts = np.asarray(actions, dtype=bool)
        dense = acts.astype(float)
        quad = np.einsum("ni,ij,nj->n", dense, self.matrix(t), dense)
        values = dense @ self.means + sign * self.f(t) * np.sqrt(np.maximum(quad, 0.0))
        values[acts[:, ~self.observed].any(axis=1)] = sign * np.inf
        return values


# ------------------------------------------------------------------ helpers
def all_pairs(d: int) -> list[tuple[int, int]]:
    """The ``d (d + 1) / 2`` pairs ``(i, j)``, ``i <= j``, in the fixed order of the warm-up.

    >>> all_pairs(2)
    [(0, 0), (0, 1), (1, 1)]
    """
    return [(i, j) for i in range(d) for j in range(i, d)]


def pair_cover(index: Index, oracle: Oracle) -> tuple[list[tuple[int, int]], np.ndarray]:
    """One action per feasible pair ``(i, j)``, ``i <= j``: the warm-up of Algorithms 3 and 4.

    "Any action holding ``i`` and ``j``": here the one with the most arms
    (weight 1 on every arm, ``include=(i, j)``), all asked in one batch (one
    adaptivity round, ``d (d + 1) / 2`` queries). Pairs no action holds are
    left out.

    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 2, exact=True), "enumerate")
    >>> pairs, actions = pair_cover(CovarianceIndex(3), oracle)
    >>> pairs, actions.sum(axis=1).tolist()
    ([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)], [2, 2, 2, 2, 2, 2])
    """
    candidates = all_pairs(index.d)
    ones = np.ones(index.d)
    answers = index.ask(oracle, [{"kind": "linear", "weights": ones, "include": sorted({i, j})} for i, j in candidates])
    kept = [(pair, a) for pair, a in zip(candidates, answers, strict=True) if a is not None]
    if not kept:
        raise RuntimeError("no feasible action holds any arm: the space has only the empty action")
    return [p for p, _ in kept], np.array([a for _, a in kept], dtype=bool)


def _pair_counts(stretch: Stretch, rounds: int) -> np.ndarray:
    """``sum_j a_j a_j^T`` over the first ``rounds`` rounds of ``stretch``."""
    p = len(stretch.actions)
    per_action = np.full(p, rounds // p, np.int64)
    per_action[: rounds % p] += 1
    acts = stretch.actions.astype(np.int64)
    return (acts.T * per_action) @ acts


def _check_cycles(name: str, value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number >= 0, got {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return x


def _index_params(C: float, f_scale: float, h_scale: float) -> dict[str, float]:
    return {
        "C": check_positive("C", C),
        "f_scale": check_positive("f_scale", f_scale),
        "h_scale": check_positive("h_scale", h_scale),
    }


# ----------------------------------------------------------------- policies
class OLSUCBC(EveryRound):
    """OLS-UCB-C: the covariance-adaptive UCB argmax of eq. (3) at every round (baseline).

    Parameters
    ----------
    space, T, oracle
        See :class:`~cmab_milp.policies.base.Policy`.
    C, f_scale, h_scale : float > 0
        Radii ``f_t`` and ``h_t`` (module docstring).

    >>> import cmab_milp as cm
    >>> OLSUCBC(cm.Cardinality(3, 1), 10, oracle="enumerate").params
    {'C': 1.5, 'f_scale': 1.0, 'h_scale': 1.0}
    """

    name = "OLS-UCB-C"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        C: float = 1.5,
        f_scale: float = 1.0,
        h_scale: float = 1.0,
    ):
        super().__init__(space, T, oracle=oracle, **_index_params(C, f_scale, h_scale))

    def make_index(self) -> CovarianceIndex:
        return CovarianceIndex(self.d, **self.params)


class AROQCov(AdaptiveEpochs):
    """AROQ-C-CMAB (Algorithm 3): pair warm-up, then the index (3) refreshed when a pair's epoch doubles.

    Every pair ``(i, j)`` (``i <= j``; ``(i, i)`` is arm ``i``) keeps an epoch
    counter ``tau_ij`` and the number of rounds of its current epoch that
    observed both arms. The warm-up plays :func:`pair_cover` in the fixed pair
    order for ``ceil(warmup_cycles * d (d + 1) / 2)`` rounds and is epoch 0 of
    every pair. Afterwards a pair's epoch ends when its count reaches
    ``1 + 2 |T_ij(tau_ij - 1)|``; then the oracle is asked once (the held
    action is fixed in between, so holds are played in bulk). The first round
    after the warm-up asks the oracle too (the paper's listing would keep the
    last warm-up action; this is one extra query).

    Parameters
    ----------
    space, T, oracle
        See :class:`~cmab_milp.policies.base.Policy`.
    C, f_scale, h_scale : float > 0
        Radii ``f_t`` and ``h_t`` (module docstring).
    warmup_cycles : float >= 0 or None
        Length of the warm-up in passes over the ``d (d + 1) / 2`` pairs.
        ``None`` (default): the paper's ``log(T)^3`` (natural log), i.e.
        ``ceil(d (d + 1) log^3 T / 2)`` rounds -- at ``d = 10`` that is about 84,000
        rounds for ``T = 10^5``, so it dominates practical horizons; pass a
        small number (e.g. 2) to see the adaptive part. With ``T=None`` the
        default is one pass (``log^3 T`` needs the horizon); the pair epochs
        double and never needed ``T``.

    Attributes after a run: ``epochs`` (``tau_ij``, Lemma 5 bounds each by
    ``log2(T m) + 2``), ``updates`` (oracle consultations after the warm-up),
    ``warmup_rounds``.

    >>> import cmab_milp as cm
    >>> policy = AROQCov(cm.Cardinality(4, 2), 10**5, oracle="enumerate")
    >>> policy.warmup_rounds == math.ceil(4 * 5 / 2 * math.log(10**5) ** 3)
    True
    """

    name = "AROQ-C"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        C: float = 1.5,
        f_scale: float = 1.0,
        h_scale: float = 1.0,
        warmup_cycles: float | None = None,
    ):
        if warmup_cycles is not None:
            warmup_cycles = _check_cycles("warmup_cycles", warmup_cycles)
        super().__init__(space, T, oracle=oracle, **_index_params(C, f_scale, h_scale), warmup_cycles=warmup_cycles)

    _state_fields = ("warmup_rounds", "cover", "warmup_queries")

    def make_index(self) -> CovarianceIndex:
        params = {k: v for k, v in self.params.items() if k != "warmup_cycles"}
        return CovarianceIndex(self.d, **params)

    def reset(self) -> None:
        super().reset()
        shape = (self.d, self.d)
        self.epochs = np.zeros(shape, np.int64)  # tau_ij; the warm-up is epoch 0
        self.previous = np.zeros(shape, np.int64)  # |T_ij(tau_ij - 1)|
        self.current = np.zeros(shape, np.int64)  # |T_ij(tau_ij)|
        cycles = self.params["warmup_cycles"]
        if cycles is None:
            cycles = math.log(self.T) ** 3 if self.T is not None else 1.0
        self.warmup_rounds = math.ceil(cycles * self.d * (self.d + 1) / 2)
        if self.T is not None:
            self.warmup_rounds = min(self.T, self.warmup_rounds)
        self.cover: np.ndarray | None = None
        self.warmup_queries = 0

    def thresholds(self) -> np.ndarray:
        """Per pair, the count in the current epoch that ends it: ``1 + 2 |T_ij(tau_ij - 1)|``."""
        return 1 + 2 * self.previous

    def _plan(self) -> Stretch:
        if self.t <= self.warmup_rounds:
            if self.cover is None:
                before = self.oracle.ledger.queries
                _, self.cover = pair_cover(self.index, self.oracle)
                self.warmup_queries = self.oracle.ledger.queries - before
            offset = (self.t - 1) % len(self.cover)
            return Stretch(np.roll(self.cover, -offset, axis=0), self.warmup_rounds - self.t + 1)
        if self.action is None:  # the warm-up (epoch 0 of every pair) just ended
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
                raise RuntimeError(f"the oracle found no feasible action in {self.space!r}")
            self.action = action
            self.updates += 1
        left = self.horizon - self.t + 1
        held = np.outer(self.action, self.action)
        if held.any():
            left = min(left, int(np.maximum(1, thresholds[held] - self.current[held]).min()))
        return Stretch(self.action[None, :], max(1, left))

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        self.current += _pair_counts(stretch, rounds)


class SROQCov(ScheduledElimination):
    """SROQ-C-CMAB (Algorithm 4): grid epochs with arm and pair representatives and eliminations.

    After a warm-up of one pass over :func:`pair_cover` (``warmup_cycles``
    passes), epochs start at the SROQ grid points (the first one right after
    the warm-up; grid points inside the warm-up are skipped). At an epoch start,
    with the index (4) at level ``T``:

    1. one batch (adaptivity round): a representative ``argmax UCB`` per
       surviving arm (``include=[i]``) and per surviving pair
       (``include=[i, j]``), and the max-LCB action, all over ``A_{tau-1}``
       (eliminated arms excluded, eliminated pairs forbidden);
    2. arms whose representative's UCB is below that LCB are eliminated;
    3. pairs of surviving arms whose representative's UCB is below
       ``max_{A'_tau} LCB`` are eliminated (``forbid_pairs`` from then on). The
       paper asks this maximum as a second, sequential query (Appendix A.1);
       it is not needed: every arm ``k`` of the max-LCB action ``a+`` of
       ``A_{tau-1}`` passes step 2 (``UCB(rep_k) >= UCB(a+) >= LCB(a+)``), so
       ``a+`` lies in ``A'_tau`` and ``max_{A'_tau} LCB = LCB(a+)``. The arms of
       ``a+`` are kept explicitly, so this holds exactly, not only up to the
       oracle's tolerance;
    4. phase 1 plays the arm representatives in turn, phase 2 (the last
       ``min(T_tau, (d^2 m^2 T_tau log T)^(2/3))`` rounds of the epoch, or
       ``pair_fraction * T_tau``) the pair representatives in turn.

    Adaptivity is thus one round per epoch plus one for the warm-up:
    ``Theta(log log T)``.

    Parameters
    ----------
    space, T, oracle
        See :class:`~cmab_milp.policies.base.Policy`.
    C, f_scale, h_scale : float > 0
        Radii ``f_T`` and ``h_T`` (module docstring).
    M : int >= 1
        Number of grid epochs (default ``max(2, ceil(log2(log2(T))))``).
    warmup_cycles : float >= 0
        Passes over the pairs before the first epoch (default 1, the paper's).
    pair_fraction : float in [0, 1] or None
        Share of each epoch given to the pair phase; ``None`` (default): the
        paper's ``(d^2 m^2 T_tau log T)^(2/3)`` rounds, which is the whole epoch
        at practical horizons.

    Attributes after a run: ``grid``, ``active`` (surviving arms),
    ``active_pairs``, ``forbidden`` (eliminated pairs of surviving arms) and
    ``history`` (per epoch: start, survivors, surviving pairs, phase lengths).

    >>> import cmab_milp as cm
    >>> SROQCov(cm.Cardinality(4, 2), 1000, oracle="enumerate").grid.tolist()  # warm-up: rounds 1-10
    [11, 39, 248, 626]
    """

    name = "SROQ-C"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        C: float = 1.5,
        f_scale: float = 1.0,
        h_scale: float = 1.0,
        M: Any = None,
        warmup_cycles: float = 1.0,
        pair_fraction: float | None = None,
    ):
        warmup_cycles = _check_cycles("warmup_cycles", warmup_cycles)
        if pair_fraction is not None:
            pair_fraction = _check_cycles("pair_fraction", pair_fraction)
            if pair_fraction > 1:
                raise ValueError(f"pair_fraction must lie in [0, 1], got {pair_fraction}")
        super().__init__(
            space,
            T,
            oracle=oracle,
            M=M,
            **_index_params(C, f_scale, h_scale),
            warmup_cycles=warmup_cycles,
            pair_fraction=pair_fraction,
        )

    _state_fields = ("warmup_rounds", "cover", "active_pairs", "forbidden", "phases")

    def make_index(self) -> CovarianceIndex:
        params = {k: self.params[k] for k in ("C", "f_scale", "h_scale")}
        return CovarianceIndex(self.d, **params)

    def reset(self) -> None:
        pairs = self.d * (self.d + 1) // 2
        self.warmup_rounds = math.ceil(self.params["warmup_cycles"] * pairs)
        if self.T is not None:
            self.warmup_rounds = min(self.T, self.warmup_rounds)
        super().reset()
        self.cover: np.ndarray | None = None
        self.active_pairs = [(i, j) for i in range(self.d) for j in range(i + 1, self.d)]
        self.forbidden: list[tuple[int, int]] = []
        self.phases: list[tuple[int, np.ndarray]] = []  # (first round, cycle) of the current epoch

    def phase_grid(self) -> np.ndarray:
        """The phase's grid without the points inside the warm-up; its first epoch starts right after it."""
        grid = super().phase_grid()
        starts = [int(g) for g in grid if g > self.warmup_rounds + 1]
        first = max(self.phase_start, self.warmup_rounds + 1)
        if first <= self.horizon and (not starts or starts[0] > first):
            starts = [first, *starts]
        return np.array(starts, dtype=np.int64)

    def _new_horizon(self) -> None:
        super()._new_horizon()
        self.active_pairs = [(i, j) for i in range(self.d) for j in range(i + 1, self.d)]
        self.forbidden = []
        self.phases = []

    def pair_phase_length(self, epoch_length: int) -> int:
        """Rounds of the pair phase in an epoch of ``epoch_length`` rounds."""
        fraction = self.params["pair_fraction"]
        if fraction is not None:
            return round(fraction * epoch_length)
        paper = (self.d**2 * self.m**2 * epoch_length * math.log(self.horizon)) ** (2.0 / 3.0)
        return min(epoch_length, math.ceil(paper))

    def _plan(self) -> Stretch:
        if self.t <= self.warmup_rounds:
            if self.cover is None:
                _, self.cover = pair_cover(self.index, self.oracle)
            offset = (self.t - 1) % len(self.cover)
            return Stretch(np.roll(self.cover, -offset, axis=0), self.warmup_rounds - self.t + 1)
        if self.epoch < len(self.grid) and self.t >= self.grid[self.epoch]:
            self._start_epoch()
        end = self.grid[self.epoch] - 1 if self.epoch < len(self.grid) else self.horizon
        start, cycle = self.phases[0]
        if len(self.phases) > 1 and self.t >= self.phases[1][0]:
            start, cycle = self.phases[1]
        else:
            end = self.phases[1][0] - 1 if len(self.phases) > 1 else end
        offset = (self.t - start) % len(cycle)
        return Stretch(np.roll(cycle, -offset, axis=0), int(end - self.t + 1))

    def _start_epoch(self) -> None:
        T = self.horizon
        eliminated = tuple(np.flatnonzero(~self.active).tolist())
        self.index.forbid_pairs = tuple(self.forbidden)
        survivors = np.flatnonzero(self.active)
        arm_restrictions = [((int(i),), eliminated) for i in survivors]
        pair_restrictions = [((i, j), eliminated) for i, j in self.active_pairs]
        restrictions = arm_restrictions + pair_restrictions
        entries = self._restricted(self.upper_batch(T, restrictions))
        unseen = tuple(np.flatnonzero(~self.index.observed & self.active).tolist())
        entries.append(self.index.lower_query(T, (), eliminated + unseen))
        answers = self.index.ask(self.oracle, entries)
        reps = self.resolve_upper(restrictions, answers[:-1])
        best_lcb = self._lcb_value(answers[-1])

        arm_reps = reps[: len(arm_restrictions)]
        lcb_arms = set() if answers[-1] is None else set(np.flatnonzero(answers[-1]).tolist())
        keep, arm_cycle = [], []
        for arm, rep in zip(survivors, arm_reps, strict=True):
            if rep is None:
                continue
            if int(arm) in lcb_arms or self._ucb(rep) >= best_lcb - tolerance(best_lcb):
                keep.append(int(arm))
                arm_cycle.append(rep)
        self.active[:] = False
        self.active[keep] = True

        pair_best_lcb = best_lcb  # = max LCB over A'_tau: the max-LCB action keeps its arms (step 3)
        pair_reps = reps[len(arm_restrictions) :]
        kept_pairs, pair_cycle = [], []
        for (i, j), rep in zip(self.active_pairs, pair_reps, strict=True):
            if not (self.active[i] and self.active[j]) or rep is None:
                continue
            if self._ucb(rep) >= pair_best_lcb - tolerance(pair_best_lcb):
                kept_pairs.append((i, j))
                pair_cycle.append(rep)
            else:
                self.forbidden.append((i, j))
        self.active_pairs = kept_pairs
        self.forbidden = [(i, j) for i, j in self.forbidden if self.active[i] and self.active[j]]

        if not arm_cycle:  # nothing survives (possible only with negative indices): play the max-LCB action
            if answers[-1] is None:
                raise RuntimeError(f"no arm survived and no max-LCB action exists in {self.space!r}")
            arm_cycle = [answers[-1]]
        end = self.grid[self.epoch + 1] if self.epoch + 1 < len(self.grid) else self.horizon + 1
        length = int(end - self.t)
        pair_rounds = self.pair_phase_length(length) if pair_cycle else 0
        self.phases = [(int(self.t), np.array(arm_cycle, dtype=bool))]
        if pair_rounds >= length:
            self.phases = [(int(self.t), np.array(pair_cycle, dtype=bool))]
        elif pair_rounds > 0:
            self.phases.append((int(end - pair_rounds), np.array(pair_cycle, dtype=bool)))
        self.cycle = self.phases[0][1]
        self.history.append(
            {
                "start": int(self.t),
                "survivors": keep,
                "pairs": len(kept_pairs),
                "pair_rounds": min(pair_rounds, length),
                "length": length,
            }
        )
        self.epoch += 1

    def _restricted(self, entries: list[dict]) -> list[dict]:
        """Add the eliminated pairs to every batch entry (the linear unobserved-arm queries too)."""
        forbid = tuple(self.forbidden)
        for entry in entries:
            entry["forbid_pairs"] = forbid
        return entries

    def _ucb(self, action: np.ndarray) -> float:
        return float(self.index.upper_values(self.horizon, action[None])[0])

    def _lcb_value(self, action: np.ndarray | None) -> float:
        return -np.inf if action is None else float(self.index.lower_values(self.horizon, action[None])[0])
