"""The covariance-adaptive family: OLS-UCB-C, AROQ-C (Algorithm 3) and SROQ-C (Algorithm 4).

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

All three share :class:`~cmab_milp.policies.cov_index.CovarianceIndex`, the
norm index of eqs. (3)-(4) (its radii ``f_t`` and ``h_t`` are documented there).

Every constructor takes ``space``, ``T`` and ``oracle`` (see
:class:`~cmab_milp.policies.base.Policy`) and ``C``, ``f_scale``, ``h_scale``
(floats > 0).

The schedules come from :mod:`cmab_milp.policies.schedules`: OLS-UCB-C is
:class:`~.schedules.EveryRound`; AROQ-C is :class:`~.schedules.AdaptiveEpochs`
and SROQ-C :class:`~.schedules.ScheduledElimination`, both with *pair* units
(``unit = "pair"``: a pair's epoch ends when its count at least doubles; pair
representatives, pair elimination through ``forbid_pairs`` and two-phase
epochs) and a warm-up that plays an action through every pair
(:func:`pair_cover`). The classes here only choose the index and validate
their constants.

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

from typing import Any, ClassVar

import numpy as np

from ..described import ParameterError, parameter
from ..oracles import Oracle
from ..oracles.norm.carry import check_reuse
from ..spaces.base import ActionSpace
from .base import check_nonnegative, check_positive
from .cov_index import CovarianceIndex
from .family import KeywordFamily
from .schedules import AdaptiveEpochs, EveryRound, ScheduledElimination, all_pairs, pair_cover, shared_cover

__all__ = ["OLSUCBC", "AROQCov", "CovarianceIndex", "SROQCov", "all_pairs", "pair_cover"]


_COMMON = ("C", "f_scale", "h_scale")


def _check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(name, f"{name} must be True or False, got {value!r}")
    return bool(value)


class _CovarianceFamily(KeywordFamily):
    """Construction and index shared by the three policies (mixed in before a schedule).

    One constructor takes the family's parameters (module docstring) and passes
    the schedule's own (``_own_defaults``, e.g. SROQ-C's ``M``:
    :class:`~.family.KeywordFamily`) on, checked by ``_check_own``.
    """

    d: int
    params: dict[str, Any]

    def __init__(
        self,
        space: ActionSpace,
        T: int | None,
        *,
        oracle: str | Oracle = "highs",
        C: float = 1.5,
        f_scale: float = 1.0,
        h_scale: float = 1.0,
        **schedule: Any,
    ):
        schedule = self._own_keywords(schedule)
        params = {name: check_positive(name, value) for name, value in zip(_COMMON, (C, f_scale, h_scale), strict=True)}
        schedule = self._check_own(schedule)
        super().__init__(space, T, oracle=oracle, **params, **schedule)  # type: ignore[call-arg]

    def make_index(self) -> CovarianceIndex:
        return CovarianceIndex(self.d, **{k: self.params[k] for k in _COMMON}, reuse=self.params.get("reuse"))


def _reuse_option(schedule: dict[str, Any]) -> dict[str, Any]:
    """The schedule with its ``reuse`` checked (``None`` or a number in ``[0, 1)``)."""
    reuse = schedule["reuse"]
    if reuse is None:
        return schedule
    with parameter("reuse"):
        return {**schedule, "reuse": check_reuse(reuse)}


class OLSUCBC(_CovarianceFamily, EveryRound):
    """OLS-UCB-C: the covariance-adaptive UCB argmax of eq. (3) at every round (baseline).

    Parameters: ``space``, ``T``, ``oracle``, ``C``, ``f_scale``, ``h_scale`` (module docstring), and
    ``reuse`` (in ``[0, 1)``, default 0.5): with an oracle in the certified approximate mode
    (``norm_gap``), each solve aims at ``(1 - reuse) * norm_gap`` and later rounds play its answer
    without a solve while a drift bound proves it within ``norm_gap`` of their own optimum
    (:mod:`~cmab_milp.oracles.norm.carry`); ``None``: every round solved at ``norm_gap``. An exact
    oracle answers every round exactly whatever ``reuse`` is.

    References
    ----------
    Julien Zhou, Pierre Gaillard, Thibaud Rahier, Houssam Zenati, Julyan Arbel. *Towards
    efficient and optimal covariance-adaptive algorithms for combinatorial semi-bandits*.
    NeurIPS 2024 (OLS-UCB-C).

    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: eq. (3), the baseline of Section 4 and Figure 3.

    Examples
    --------
    >>> import cmab_milp as cm
    >>> OLSUCBC(cm.Cardinality(3, 1), 10, oracle="enumerate").params
    {'C': 1.5, 'f_scale': 1.0, 'h_scale': 1.0, 'reuse': 0.5}
    """

    name = "OLS-UCB-C"
    _own_defaults: ClassVar[dict[str, Any]] = {"reuse": 0.5}

    def _check_own(self, schedule: dict[str, Any]) -> dict[str, Any]:
        return _reuse_option(schedule)


class AROQCov(_CovarianceFamily, AdaptiveEpochs):
    """AROQ-C-CMAB (Algorithm 3): pair warm-up, then the index (3) refreshed when a pair's epoch doubles.

    :class:`~.schedules.AdaptiveEpochs` with pair units: every pair ``(i, j)``
    (``i <= j``; ``(i, i)`` is arm ``i``) keeps an epoch counter ``tau_ij``
    and the number of rounds of its current epoch that observed both arms. The
    warm-up plays :func:`pair_cover` in the fixed pair order for
    ``ceil(warmup_cycles * d (d + 1) / 2)`` rounds and is epoch 0 of every
    pair. Afterwards a pair's epoch ends when its count reaches
    ``1 + 2 |T_ij(tau_ij - 1)|``; then the oracle is asked once (the held
    action is fixed in between, so holds are played in bulk). The first round
    after the warm-up asks the oracle too (the paper's listing would keep the
    last warm-up action; this is one extra query).

    Parameters
    ----------
    space, T, oracle, C, f_scale, h_scale
        See the module docstring.
    warmup_cycles : float >= 0 or None
        Length of the warm-up in passes over the ``d (d + 1) / 2`` pairs.
        ``None`` (default): the paper's ``log(T)^3`` (natural log), i.e.
        ``ceil(d (d + 1) log^3 T / 2)`` rounds -- at ``d = 10`` that is about 84,000
        rounds for ``T = 10^5``, so it dominates practical horizons; pass a
        small number (e.g. 2) to see the adaptive part. With ``T=None`` the
        default is one pass (``log^3 T`` needs the horizon); the pair epochs
        double and never needed ``T``.
    prune : bool
        The warm-up asks only for pairs no earlier answer holds and spreads
        the plays over the answers (:func:`~.schedules.shared_cover`; the
        paper's warm-up plays *any* action holding its pair). On the crew
        matching (d = 120) that is 1,870 queries instead of 7,260 (in 234
        adaptivity rounds instead of 1) and every pair is seen at least 8
        times instead of once, so the first pair epochs (which end at
        ``1 + 2 n_ij``) last longer and the updates after the warm-up are
        fewer. Default ``False``.
    reuse : float in [0, 1) or None
        With an oracle in the certified approximate mode (``norm_gap``), an update may play an earlier
        answer (or one its search met) that a drift bound proves within ``norm_gap`` of the update's own
        optimum, and solves aim at ``(1 - reuse) * norm_gap`` (as :class:`OLSUCBC`'s ``reuse``). Default
        ``None``: every update solved. On the crew problem with ``norm_gap=0.05``, ``reuse=0.5``: T = 10^5
        in 78 s instead of 268 s (33 solves for 3,877 updates), regret 48,795 instead of 46,294 (a carried
        answer is proven within 5% like a solved one, but it is an older action).

    Notes
    -----
    Attributes after a run: ``epochs`` (``tau_ij``, Lemma 5 bounds each by
    ``log2(T m) + 2``), ``updates`` (oracle consultations after the warm-up),
    ``warmup_rounds``, ``warmup_queries``.

    References
    ----------
    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: Algorithm 3 (Section 4.1, Theorem 3; Lemma 5
    bounds the queries).

    Examples
    --------
    >>> import math
    >>> import cmab_milp as cm
    >>> policy = AROQCov(cm.Cardinality(4, 2), 10**5, oracle="enumerate")
    >>> policy.warmup_rounds == math.ceil(4 * 5 / 2 * math.log(10**5) ** 3)
    True
    """

    name = "AROQ-C"
    unit = "pair"
    _state_fields = ("warmup_rounds", "cover", "warmup_queries")
    _own_defaults: ClassVar[dict[str, Any]] = {"warmup_cycles": None, "prune": False, "reuse": None}

    def _check_own(self, schedule: dict[str, Any]) -> dict[str, Any]:
        schedule["prune"] = _check_flag("prune", schedule["prune"])
        return _reuse_option(schedule)

    def reset(self) -> None:
        super().reset()
        self.warmup_queries = 0

    def warmup_cover(self) -> np.ndarray:
        before = self.oracle.ledger.queries
        if self.params["prune"]:
            cover = shared_cover(self.index, self.oracle, self.units)[1]
        else:
            cover = super().warmup_cover()
        self.warmup_queries = self.oracle.ledger.queries - before
        return cover


class SROQCov(_CovarianceFamily, ScheduledElimination):
    """SROQ-C-CMAB (Algorithm 4): grid epochs with arm and pair representatives and eliminations.

    :class:`~.schedules.ScheduledElimination` with pair units. After a warm-up
    of one pass over :func:`pair_cover` (``warmup_cycles`` passes), epochs
    start at the SROQ grid points (the first one right after the warm-up; grid
    points inside the warm-up are skipped, and the next one too when the first
    epoch would cover under half of its grid epoch:
    :meth:`~.schedules.ScheduledElimination.phase_grid`). At an epoch start, with the index
    (4) at level ``T``:

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
    ``Theta(log log T)``; with ``prune=True`` two rounds per epoch (below).

    Parameters
    ----------
    space, T, oracle, C, f_scale, h_scale
        See the module docstring (the radii use ``T``: ``f_T``, ``h_T``).
    M : int >= 1
        Number of grid epochs (default ``max(2, ceil(log2(log2(T))))``).
    warmup_cycles : float >= 0
        Passes over the pairs before the first epoch (default 1, the paper's).
    pair_fraction : float in [0, 1] or None
        Share of each epoch given to the pair phase; ``None`` (default): the
        paper's ``(d^2 m^2 T_tau log T)^(2/3)`` rounds, which is the whole epoch
        at practical horizons.
    prune : bool
        Ask only the pair representatives whose answers are used and not yet
        known (:meth:`~.schedules.ScheduledElimination.pair_plan`): the arm
        representatives and the max-LCB action come first (one batch), then
        the pairs of surviving arms (a second batch) less those an arm
        representative already answers and those the warm-up showed no action
        holds. The same actions as ``prune=False`` (up to ties within the
        oracle's tolerance), far fewer queries on large spaces, one more
        adaptivity round per epoch. Default ``False`` (the paper's count).

    Notes
    -----
    Attributes after a run: ``grid``, ``active`` (surviving arms),
    ``active_pairs``, ``forbidden`` (eliminated pairs of surviving arms) and
    ``history`` (per epoch: start, survivors, surviving pairs, phase lengths;
    with ``prune``: pair queries asked and skipped).

    References
    ----------
    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: Algorithm 4 (Section 4.2, Theorem 4).

    Examples
    --------
    >>> import cmab_milp as cm
    >>> SROQCov(cm.Cardinality(4, 2), 1000, oracle="enumerate").grid.tolist()  # warm-up: rounds 1-10
    [11, 39, 248, 626]
    """

    name = "SROQ-C"
    unit = "pair"
    _state_fields = ("warmup_rounds", "cover", "active_pairs", "forbidden", "phases")
    _own_defaults: ClassVar[dict[str, Any]] = {
        "M": None,
        "warmup_cycles": 1.0,
        "pair_fraction": None,
        "prune": False,
    }

    def _check_own(self, schedule: dict[str, Any]) -> dict[str, Any]:
        schedule["warmup_cycles"] = check_nonnegative("warmup_cycles", schedule["warmup_cycles"])  # None: not here
        schedule["prune"] = _check_flag("prune", schedule["prune"])
        return schedule
