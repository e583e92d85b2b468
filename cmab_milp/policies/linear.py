"""The worst-case linear family: CUCB, AROQ (Algorithms 1 and 5) and SROQ (Algorithm 2).

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

All three share :class:`LinearIndex`, the UCB/LCB of eqs. (1)-(2) with the
empirical *mean* ``mu_hat_i = sum of outcomes / n_i``:
``mu_hat_i +- sqrt(C log t / n_i)`` per arm, summed over the arms of an action,
asked as ``oracle.argmax(weights, ...)``. The schedules come from
:mod:`cmab_milp.policies.schedules`. Every constructor takes ``space``, ``T``
and ``oracle`` (see :class:`~cmab_milp.policies.base.Policy`) and the
exploration constant ``C > 0`` (default 1.5).

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(6, 2)
>>> env = cm.UniformNoise([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0)
>>> result = cm.simulate(cm.AROQ(space, 2000, oracle="enumerate"), env, 2000, seed=1)
>>> bool(result.queries[-1] < 60), bool(result.regret[-1] < 0.1 * 2000)
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..described import ParameterError
from ..environments.base import FeedbackStats
from ..oracles import Oracle
from ..portable import selected_sums
from ..spaces.base import ActionSpace
from .base import Index, check_nonnegative, check_positive, check_unit_interval
from .outcome_bounds import Bounds, bounds_param, check_outcome_bounds, clip_to_bounds
from .schedules import AdaptiveEpochs, EveryRound, ScheduledElimination

__all__ = ["AROQ", "CUCB", "SROQ", "LinearIndex"]

#: AROQ's ``alpha``: a factor in (0, 1], or ``"proven"`` / None for the oracle's proven ratio.
Alpha = float | str | None


class LinearIndex(Index):
    """Empirical means and the Hoeffding radius ``sqrt(C log t / n_i)`` per arm.

    >>> index = LinearIndex(2, C=1.5)
    >>> index.update(FeedbackStats(4, np.array([4, 0]), sum=np.array([2.0, 0.0])))
    >>> index.means.tolist(), index.upper_values(1, np.array([[1, 0], [1, 1]], bool)).tolist()
    ([0.5, 0.0], [0.5, inf])
    """

    needs: ClassVar[frozenset[str]] = frozenset({"sum"})
    _state_fields: ClassVar[tuple[str, ...]] = ("sums",)

    def __init__(self, d: int, C: float = 1.5, outcome_bounds: Bounds = None):
        self.C = check_positive("C", C)
        #: The known range of every outcome: the UCB / LCB weights are clipped to it (:mod:`.outcome_bounds`).
        self.outcome_bounds = check_outcome_bounds(outcome_bounds)
        super().__init__(d)

    def reset(self) -> None:
        super().reset()
        self.sums = np.zeros(self.d)
        self._refresh()

    def update(self, stats: FeedbackStats) -> None:
        super().update(stats)
        self.sums += stats.sum
        self._refresh()

    def set_state(self, state: Mapping[str, Any]) -> None:
        super().set_state(state)
        self._refresh()

    def _refresh(self) -> None:
        seen = self.counts > 0
        #: Empirical means (0 for unobserved arms, which no query may select).
        self.means = np.divide(self.sums, self.counts, out=np.zeros(self.d), where=seen)
        self._inv_sqrt_n = np.divide(1.0, np.sqrt(self.counts), out=np.zeros(self.d), where=seen)

    def radius(self, t: int) -> np.ndarray:
        """``sqrt(C log t / n_i)`` per observed arm (0 for unobserved arms)."""
        return math.sqrt(self.C * math.log(max(t, 1))) * self._inv_sqrt_n

    def upper_weights(self, t: int) -> np.ndarray:
        """Per-arm UCB weights ``mu_hat + radius`` (clipped to ``outcome_bounds`` when given)."""
        return clip_to_bounds(self.means + self.radius(t), self.outcome_bounds)

    def lower_weights(self, t: int) -> np.ndarray:
        """Per-arm LCB weights ``mu_hat - radius`` (clipped to ``outcome_bounds`` when given)."""
        return clip_to_bounds(self.means - self.radius(t), self.outcome_bounds)

    def query(self, t: int, sign: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        weights = self.upper_weights(t) if sign > 0 else self.lower_weights(t)
        return {"kind": "linear", "weights": weights, "include": include, "exclude": exclude}

    def evaluate(self, t: int, actions: np.ndarray, sign: int) -> np.ndarray:
        if sign > 0:
            return self._values(actions, self.upper_weights(t), np.inf)
        return self._values(actions, self.lower_weights(t), -np.inf)

    def _values(self, actions: np.ndarray, weights: np.ndarray, unseen_value: float) -> np.ndarray:
        acts = np.asarray(actions, dtype=bool)
        values = selected_sums(acts, weights)
        values[acts[:, ~self.observed].any(axis=1)] = unseen_value
        return values


class CUCB(EveryRound):
    """CUCB: the UCB argmax of eq. (1) at every round (the baseline, ``T`` oracle queries).

    Parameters
    ----------
    space : ActionSpace
    T : int or None
        The horizon (``None``: unknown; the radius uses ``log t`` either way).
    oracle : str or Oracle
        A backend name for :func:`~cmab_milp.make_oracle`, or an oracle (default ``"highs"``).
    C : float > 0
        The exploration constant of the radius ``sqrt(C log t / n_i)`` (default 1.5).
    outcome_bounds : (low, high) or None
        The known range of every arm's outcome; the per-arm indices are clipped to it
        (:mod:`~cmab_milp.policies.outcome_bounds`; e.g. ``(-1, 0)`` for costs in [0, 1]). Default
        ``None``: not clipped.

    References
    ----------
    Wei Chen, Yajun Wang, Yang Yuan. *Combinatorial multi-armed bandit: general framework and
    applications*. ICML 2013 (CUCB).

    Branislav Kveton, Zheng Wen, Azin Ashkan, Csaba Szepesvári. *Tight regret bounds for
    stochastic combinatorial semi-bandits*. AISTATS 2015.

    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: eq. (1), the baseline of Table 1 and Figure 2.

    Examples
    --------
    >>> import cmab_milp as cm
    >>> CUCB(cm.Cardinality(3, 1), 10, oracle="enumerate", C=2.0).params
    {'C': 2.0}
    """

    name = "CUCB"

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        C: float = 1.5,
        oracle: str | Oracle = "highs",
        outcome_bounds: Bounds = None,
    ):
        super().__init__(space, T, oracle=oracle, C=check_positive("C", C), **bounds_param(outcome_bounds))

    def make_index(self) -> LinearIndex:
        return LinearIndex(self.d, **self.params)


class AROQ(AdaptiveEpochs):
    """AROQ-CMAB (Algorithm 1): the UCB argmax of eq. (1), refreshed only when an arm's epoch ends.

    With ``alpha < 1`` and an ``alpha``-approximate oracle this is Algorithm 5
    (Appendix A.3): the schedule is unchanged (``alpha`` never enters a
    decision) and the runner reports the ``alpha``-regret
    ``sum_t alpha r(a*) - r(a_t)`` beside the regret.

    Parameters
    ----------
    space, T, oracle, C, outcome_bounds
        As for :class:`CUCB`: the space, the horizon (``None``: unknown), the backend, the
        exploration constant (default 1.5) and the known outcome range (default ``None``).
    alpha : float in (0, 1], ``"proven"`` or None
        Approximation factor of ``oracle`` (default 1: exact). ``"proven"``
        (or ``None``): the ratio the oracle proves, read as its
        ``proven_ratio`` (the smallest ratio value / optimum proven so far;
        1.0 for an exact oracle). Algorithm 5 needs no factor up front, so the
        measured one is used: after a run it covers every answer of the run.
    anytime_log_power : float >= 0
        With ``T=None`` the epoch threshold uses ``t max(1, ln t)^anytime_log_power`` in place of ``T``
        (:mod:`cmab_milp.policies.anytime`). Default 0.5: the regret stayed within 1.11x of the known-``T``
        policy's on every instance measured there (``T = 10^4 .. 10^6``), at up to 4.8x its queries (still
        ``O(d log T)``); 1 (``t ln t``, the default until December 2026) asks fewer queries and lost up to
        2.1x regret. Unused when ``T`` is given; recorded in ``params`` when ``T=None``.

    References
    ----------
    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: Algorithm 1 (Section 3.1, Theorem 1; Lemma 1 bounds
    the queries), Algorithm 5 (Appendix A.3, Theorem 7).

    Examples
    --------
    >>> import cmab_milp as cm
    >>> AROQ(cm.Cardinality(3, 1), 10, oracle="enumerate", alpha=0.5).alpha
    0.5
    >>> AROQ(cm.Cardinality(3, 1), 10, oracle="enumerate", alpha="proven").alpha  # an exact oracle proves 1
    1.0
    >>> env = cm.BernoulliArms([0.2, 0.5, 0.9], seed=0)
    >>> anytime = AROQ(cm.Cardinality(3, 1), T=None, oracle="enumerate")
    >>> bool(cm.simulate(anytime, env, 5000).queries[-1] < 50)
    True
    """

    name = "AROQ"
    #: Saved before ``anytime_log_power`` was recorded (and its default was 1): a learner without it used 1.
    saved_defaults: ClassVar[dict[str, Any]] = {"anytime_log_power": 1.0}

    def __init__(
        self,
        space: ActionSpace,
        T: int,
        *,
        oracle: str | Oracle = "highs",
        C: float = 1.5,
        alpha: Alpha = 1.0,
        anytime_log_power: float = 0.5,
        outcome_bounds: Bounds = None,
    ):
        if alpha is None or (isinstance(alpha, str) and alpha == "proven"):
            self._alpha: float | None = None
            alpha = "proven"
        elif isinstance(alpha, (str, bool, np.bool_)):  # True is not a factor (check_unit_interval takes it as 1)
            raise ParameterError("alpha", f'alpha must be a number in (0, 1], "proven" or None, got {alpha!r}')
        else:
            self._alpha = alpha = check_unit_interval("alpha", alpha)
        power = check_nonnegative("anytime_log_power", anytime_log_power)
        # Recorded whenever it is read (T=None), so that a saved learner continues with its own value;
        # AROQ.saved_defaults says what a file saved without it used.
        params = {"anytime_log_power": power} if T is None else {}
        params.update(bounds_param(outcome_bounds))
        super().__init__(space, T, oracle=oracle, C=check_positive("C", C), alpha=alpha, **params)

    @property
    def alpha(self) -> float:
        """The declared factor, or (``alpha="proven"``) the oracle's proven ratio so far."""
        if self._alpha is None:
            return float(getattr(self.oracle, "proven_ratio", 1.0))
        return self._alpha

    def make_index(self) -> LinearIndex:
        return LinearIndex(self.d, C=self.params["C"], outcome_bounds=self.params.get("outcome_bounds"))


class SROQ(ScheduledElimination):
    """SROQ-CMAB (Algorithm 2): scheduled batches of representative queries and elimination, eq. (2).

    Parameters
    ----------
    space, T, oracle, C, outcome_bounds
        As for :class:`CUCB` (the radius uses ``log T``).
    M : int >= 1, optional
        Number of epochs (default ``max(2, ceil(log2(log2(T))))``; with
        ``T=None``, per phase, of the phase's horizon guess).

    Notes
    -----
    With ``T=None`` the run is a sequence of phases, one per horizon guess
    ``256, 4096, 262144, ...`` (:mod:`cmab_milp.policies.anytime`), each a fresh
    grid and elimination that keeps the statistics.

    References
    ----------
    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: Algorithm 2 (Section 3.2, Theorem 2; Appendix A.1
    for the parallel queries of an epoch).

    Examples
    --------
    >>> import cmab_milp as cm
    >>> SROQ(cm.Cardinality(3, 1), 10**5, oracle="enumerate").grid.tolist()
    [1, 380, 7422, 32802, 68959]
    >>> anytime = SROQ(cm.Cardinality(3, 1), T=None, oracle="enumerate")
    >>> anytime.grid.tolist(), anytime.horizon
    ([1, 23, 114], 256)
    """

    name = "SROQ"

    def __init__(
        self,
        space: ActionSpace,
        T: int | None,
        *,
        M: Any = None,
        oracle: str | Oracle = "highs",
        C: float = 1.5,
        outcome_bounds: Bounds = None,
    ):
        super().__init__(space, T, oracle=oracle, M=M, C=check_positive("C", C), **bounds_param(outcome_bounds))

    def make_index(self) -> LinearIndex:
        return LinearIndex(self.d, C=self.params["C"], outcome_bounds=self.params.get("outcome_bounds"))
