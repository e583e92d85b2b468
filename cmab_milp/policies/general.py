"""The general-reward family: SDCB, AROQ-GR (Algorithm 6) and SROQ-GR (Algorithm 7).

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

All three share :class:`DistributionIndex`: per arm, the empirical distribution
of its outcomes on an outcome grid; the UCB of an action is its expected reward
under the product of *optimistic* distributions (empirical CDF lowered by
``sqrt(C ln t / n_i)``, the mass moved to the top value ``upper``, the paper's
1), the LCB under the product of *pessimistic* ones (CDF raised, the mass moved
to the lowest grid value: see ``pessimistic`` below), eqs. (10)-(11). Queries
go to a :class:`~cmab_milp.nonlinear.oracles.DistributionOracle`, which is the
policy's ``oracle`` (one ledger for index and linear queries). The schedules
are the shared ones of :mod:`cmab_milp.policies.schedules`.

Constructor, common to the three::

    Policy(space, T, *, oracle="highs", reward="sqrt_sum", support=None, discretise=False,
           method="auto", C=1.5, upper=1.0, pessimistic="lowest", sample_budget=2**20, ...)

- ``reward``: the monotone reward ``r(a, y)`` the policy maximises (a name of
  :func:`~cmab_milp.nonlinear.rewards.make_reward`, a callable or a Reward); it
  must be the environment's reward. A reward may declare its Lipschitz
  constant (``CallableReward(f, lipschitz=...)``), used by Algorithm 8 below.
- ``support``, ``discretise``: how outcomes are modelled (next section).
- ``oracle``: the backend answering the linear "most unobserved arms" queries
  (any name of :func:`~cmab_milp.make_oracle`; ``"enumerate"`` also makes the
  index queries enumerate), a built
  :class:`~cmab_milp.nonlinear.oracles.DistributionOracle` (with ``support=`` or
  ``discretise=`` only: it is tied to one grid), or directly a registered
  distribution backend ``"dist_branch_bound"`` / ``"dist_greedy"`` / ... (the
  short ``"branch_bound"`` / ``"greedy"`` still work).
- ``method``: the distribution backend, given on its own (the name predates
  "backend"; see ``docs/glossary.md``): ``"auto"`` (default:
  enumeration up to 200,000 actions, else branch-and-bound where it applies),
  ``"enumerate"``, ``"branch_bound"`` (exact, Cardinality / PartitionMatroid)
  or ``"greedy"`` (``1 - 1/e`` on Cardinality, ``1/2`` on matroids, for
  submodular rewards).
- ``upper``: the top of the outcome range ``[0, upper]`` (default 1, the
  paper's ``y in [0, 1]``), where the optimistic distribution puts its extra
  mass; outcomes above it are refused. A simple fraction in ``(0, 1]``.
- ``pessimistic``: where the pessimistic distribution (used by SROQ-GR's LCB
  only) puts its mass ``w``. ``"lowest"`` (default): the lowest support value,
  given or observed so far -- a deviation from the paper, whose ``F_bar``
  (Appendix A.7.2) puts it at the value 0; the LCB is higher (tighter) when 0
  is not a possible outcome. ``"zero"``: the paper's version (0 joins the
  grid). :mod:`cmab_milp.nonlinear.distributions` states both and when each LCB
  is valid.
- ``sample_budget``: outcomes (steps x arms) played in one stretch at most when
  feedback arrives as raw samples (below); an integer >= 1, default ``2**20``.
  It changes no decision, only how long a hold is cut into pieces.

Outcomes: given, learned or discretised
---------------------------------------
- ``support=values`` (e.g. ``env.support``): the outcomes are these values;
  feedback arrives as per-value histograms (``hist``); ``observe`` refuses an
  outcome off the support.
- **neither** (default): the support is **learned**, as the paper's empirical
  CDFs do: the distributions live on the values observed so far on any arm,
  plus ``upper`` (and 0 with ``"zero"``), and the grid grows as values appear.
  *Why the union over arms*: arm ``i``'s row has no mass at values only other
  arms produced, so it is exactly the paper's ``F_hat_i`` (the empirical CDF
  of arm ``i``'s own outcomes) and its optimistic distribution is the one on
  arm ``i``'s own values; only the pessimistic target differs from a per-arm
  grid (the lowest value seen on any arm: lower, so a more conservative LCB);
  and once every value has been seen the grid is ``support=env.support``'s.
  *Same decisions*: unseen values carry no mass in either policy, so on the
  same outcomes the UCBs of the learned and the given-support policy agree at
  every round (SDCB and AROQ-GR decide identically, up to round-off in
  near-ties); SROQ-GR's LCBs agree from the round the lowest value is seen
  (with ``"zero"``: always). *Feedback* arrives as raw outcomes (``samples``),
  so bulk runs cut long holds into pieces of ``sample_budget // d``
  steps (same decisions; about twice the time of ``hist`` at ``T = 10^6``),
  and ``simulate(..., exact_stats=True)`` cannot draw them from an exact law
  as it does histograms (same distribution, another stream).
  *Continuous outcomes*: once the observed values are not simple fractions
  (no common denominator ``q <= 100000``, which exact sums need) or outnumber
  Algorithm 8's ``s = ceil(L sqrt(m T))`` (``L`` the reward's Lipschitz
  constant, 1 when it declares none; ``T=None``: the horizon guess of that
  moment), the policy switches to Algorithm 8 for good, re-binning the counts
  so far exactly (each value to the right end of its interval). On Beta arms
  that happens at the first observation: ``cls(space, T)`` is Algorithm 8.
- ``discretise=True`` / an int: Algorithm 8 from the start, with ``s =
  ceil(L sqrt(m T))`` or the given ``s`` intervals; an outcome counts as the
  right end ``upper * j/s`` of its interval. With ``T=None`` give the int.

An unobserved arm has an infinite index, resolved by the shared machinery: one
linear query preferring the actions that hold the most unobserved arms.

Example
-------
>>> import cmab_milp as cm
>>> env = cm.DiscreteArms([0.2, 0.6, 1.0], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0]], seed=0)
>>> policy = cm.AROQGR(cm.Cardinality(4, 2), 500, oracle="enumerate", reward="sqrt_sum")  # support learned
>>> result = cm.simulate(policy, env, 500, seed=0)
>>> int(result.queries[-1]) < 50, bool(result.regret[-1] < 50), policy.index.grid.values.tolist()
(True, True, [0.2, 0.6, 1.0])
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..described import ParameterError, parameter
from ..environments.base import FeedbackStats
from ..nonlinear.backends import PREFIX, distribution_backend
from ..nonlinear.grid import MAX_DENOMINATOR, OutcomeGrid, discretisation_grid, n_intervals
from ..nonlinear.oracles import BACKENDS, DistributionOracle
from ..nonlinear.rewards import CallableReward, Reward, check_lipschitz, check_monotone, make_reward
from ..oracles import Oracle, make_oracle
from ..spaces.base import ActionSpace
from .base import Stretch, check_horizon, check_positive, check_unit_interval
from .distribution_index import _TOL, DistributionIndex
from .family import KeywordFamily
from .schedules import AdaptiveEpochs, EveryRound, ScheduledElimination

__all__ = ["AROQGR", "PESSIMISTIC", "SAMPLE_BUDGET", "SDCB", "SROQGR", "DistributionIndex"]

#: Where the pessimistic distribution puts its mass: the lowest support value, or 0 (the paper).
PESSIMISTIC = ("lowest", "zero")

#: The default of the ``sample_budget`` constant: outcomes (steps x arms) a policy fed raw ``samples`` plays in
#: one stretch at most; bulk runs cut long holds into pieces of ``sample_budget // d`` steps (about 8 MB of
#: feedback), deciding the same.
SAMPLE_BUDGET = 1 << 20


class _Layout(NamedTuple):
    """How a policy models outcomes: ``kind`` in support / learned / discretised, and its grids."""

    kind: str
    grid: OutcomeGrid
    observed: OutcomeGrid | None
    intervals: int | None


def _lipschitz(reward: Reward) -> float:
    """The constant Algorithm 8 uses: the reward's declared one, else 1."""
    return 1.0 if reward.lipschitz is None else float(reward.lipschitz)


def _check_upper(upper: Any) -> float:
    x = check_unit_interval("upper", upper)
    if OutcomeGrid([x]).denominator is None:
        raise ParameterError(
            "upper", f"upper must be a simple fraction p/q (q <= {MAX_DENOMINATOR}) in (0, 1], got {upper!r}"
        )
    return x


def _layout(params: dict, m: int, T: int | None, reward: Reward) -> _Layout:
    """The index grid, the histogram grid and the number of intervals for the policy's constants."""
    support, discretise, upper = params["support"], params["discretise"], params["upper"]
    anchors = [upper, 0.0] if params["pessimistic"] == "zero" else [upper]
    if isinstance(discretise, np.bool_):
        discretise = bool(discretise)
    off = discretise is None or discretise is False
    if support is not None and not off:
        raise ParameterError(
            "support", "give either support= (discrete outcomes) or discretise= (continuous outcomes), not both"
        )
    if support is not None:
        with parameter("support"):
            observed = OutcomeGrid(support)
        if observed.values[-1] > upper + _TOL:
            raise ParameterError("support", f"support values must be <= upper={upper:g}, got {observed.values[-1]:g}")
        return _Layout("support", observed.merged(anchors), observed, None)
    if off:
        return _Layout("learned", OutcomeGrid(anchors), None, None)
    if discretise is True:
        if T is None:
            raise ParameterError(
                "discretise",
                "discretise=True sets s = ceil(L sqrt(m T)) intervals and needs the horizon; with T=None "
                "give the number of intervals (discretise=<int>)",
            )
        s = n_intervals(m, T, _lipschitz(reward))
    elif isinstance(discretise, (int, np.integer)) and not isinstance(discretise, bool) and discretise >= 1:
        s = int(discretise)
    else:
        raise ParameterError("discretise", f"discretise must be True, False or an integer >= 1, got {discretise!r}")
    with parameter("discretise"):
        grid = discretisation_grid(s, upper)
    return _Layout("discretised", grid.merged(anchors), None, s)


def _distribution_oracle(
    space: ActionSpace, oracle: Any, method: Any, reward: Reward, layout: _Layout
) -> DistributionOracle:
    """The policy's oracle: ``oracle`` names the linear backend, a distribution backend, or is built already.

    ``method`` is the distribution backend given on its own (its former name; ``"auto"``: let ``oracle`` say).
    """
    if method not in BACKENDS:
        raise ParameterError("method", f"method (the distribution backend) must be one of {BACKENDS}, got {method!r}")
    grid = layout.grid
    if isinstance(oracle, DistributionOracle):
        if layout.kind == "learned":
            raise ParameterError(
                "oracle",
                "a built DistributionOracle works on one outcome grid, and this policy learns its support: "
                "pass a backend name, or give support= / discretise=",
            )
        if oracle.grid != grid:
            raise ParameterError(
                "oracle", f"the given distribution oracle works on {oracle.grid!r}, the policy needs {grid!r}"
            )
        if oracle.reward is not reward and oracle.reward.name != reward.name:
            raise ParameterError(
                "oracle", f"the given distribution oracle maximises {oracle.reward.name!r}, not {reward.name!r}"
            )
        return oracle
    if isinstance(oracle, Oracle):
        return DistributionOracle(space, reward, grid, method, linear=oracle)
    if not isinstance(oracle, str):
        raise ParameterError("oracle", f"oracle must be a backend name or an Oracle, got {type(oracle).__name__}")
    named = distribution_backend(oracle)  # "dist_greedy" (registered) or, as before, "greedy"
    if named is None and oracle in BACKENDS and oracle not in ("auto", "enumerate"):
        named = oracle
    if named is not None:
        if method not in ("auto", named):
            raise ParameterError("method", f"oracle={oracle!r} and method={method!r} disagree; give the backend once")
        if oracle.startswith(PREFIX):
            return make_oracle(space, oracle, reward=reward, grid=grid)  # the registry's one validator
        return DistributionOracle(space, reward, grid, named)
    if oracle == "enumerate" and method == "auto":
        method = "enumerate"
    return DistributionOracle(space, reward, grid, method, linear=oracle)


_COMMON = ("reward", "support", "discretise", "method", "C", "upper", "pessimistic", "sample_budget")


class _GeneralReward(KeywordFamily):
    """Construction shared by the three policies (mixed in before a schedule).

    One constructor takes the family's parameters (module docstring) and passes
    the schedule's own (``_own_defaults``, e.g. AROQ-GR's ``alpha``:
    :class:`~.family.KeywordFamily`) on.
    """

    def __init__(
        self,
        space: ActionSpace,
        T: int | None,
        *,
        oracle: str | Oracle = "highs",
        reward: Any = "sqrt_sum",
        support: Any = None,
        discretise: Any = False,
        method: str = "auto",
        C: float = 1.5,
        upper: float = 1.0,
        pessimistic: str = "lowest",
        sample_budget: int = SAMPLE_BUDGET,
        **schedule: Any,
    ):
        schedule = self._own_keywords(schedule)
        values = (reward, support, discretise, method, C, upper, pessimistic, sample_budget)
        solver, params = self._setup(space, T, oracle, dict(zip(_COMMON, values, strict=True)))
        self._configure(solver, schedule)
        super().__init__(space, T, oracle=solver, **schedule, **params)
        self._oracle_spec = oracle

    def _configure(self, solver: DistributionOracle, schedule: dict[str, Any]) -> None:
        """Check the schedule's own parameters once the oracle is known (before the schedule is built)."""

    def _setup(self, space: ActionSpace, T: Any, oracle: Any, params: dict) -> tuple[DistributionOracle, dict]:
        if not isinstance(space, ActionSpace):
            raise ParameterError("space", f"space must be an ActionSpace, got {type(space).__name__}")
        T = check_horizon(T)
        with parameter("reward"):
            reward = make_reward(params["reward"])
        params["C"] = check_positive("C", params["C"])
        params["upper"] = _check_upper(params["upper"])
        if params["pessimistic"] not in PESSIMISTIC:
            raise ParameterError(
                "pessimistic", f"pessimistic must be one of {PESSIMISTIC}, got {params['pessimistic']!r}"
            )
        budget = params["sample_budget"]
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
            raise ParameterError(
                "sample_budget", f"sample_budget must be an integer >= 1 (outcomes per stretch), got {budget!r}"
            )
        params["sample_budget"] = int(budget)
        layout = _layout(params, space.m, T, reward)
        if isinstance(reward, CallableReward):
            probe = layout.grid if layout.kind == "support" else layout.grid.merged(np.linspace(0, params["upper"], 11))
            check_monotone(reward, space.d, probe, seed=0)
        check_lipschitz(reward, space.d, params["upper"], seed=0)
        self._reward = reward
        solver = _distribution_oracle(space, oracle, params["method"], reward, layout)
        self._initial_oracle = solver
        return solver, params

    def make_index(self) -> DistributionIndex:
        layout = _layout(self.params, self.m, self.T, self._reward)
        learn = layout.kind == "learned"
        return DistributionIndex(
            self.d,
            self._reward,
            layout.grid,
            layout.observed,
            layout.intervals,
            C=self.params["C"],
            learn=learn,
            fallback=self._fallback() if learn else None,
        )

    def _fallback(self) -> int:
        """Algorithm 8's ``s`` for a learned support that turns out continuous (``T=None``: the horizon guess)."""
        return n_intervals(self.m, self.T if self.T is not None else self.horizon, _lipschitz(self._reward))

    def _plan(self) -> Stretch:
        stretch = super()._plan()
        most = max(1, self.params.get("sample_budget", SAMPLE_BUDGET) // self.d)
        if "samples" in self.index.needs and stretch.length > most:
            return Stretch(stretch.actions, most)  # the schedule resumes where the piece ends
        return stretch

    def _learn(self, stats: FeedbackStats) -> None:
        if self.index.learn and self.T is None:
            self.index.fallback = self._fallback()
        super()._learn(stats)
        self._sync_oracle()

    def reset(self) -> None:
        super().reset()
        self._sync_oracle()

    def set_state(self, state: Any) -> None:
        super().set_state(state)
        self._sync_oracle()

    def _sync_oracle(self) -> None:
        """Point the policy's oracle at the index's grid (it changes while a support is learned).

        The oracle is rebuilt with the same resolved method and inner linear
        oracle and shares the ledger, so the query counts run on.
        """
        grid = self.index.grid
        if self.oracle.grid == grid:
            return
        if self._initial_oracle.grid == grid:
            new = self._initial_oracle
        else:
            old = self.oracle
            new = DistributionOracle(
                self.space, self._reward, grid, old.backend, linear=old.linear, max_actions=old.max_actions
            )
        new.ledger = self.oracle.ledger
        new.recorded = self.oracle.recorded  # a recorded run (compare-oracles) goes on recording
        self.oracle = new


class SDCB(_GeneralReward, EveryRound):
    """SDCB (Chen et al. 2016): the optimistic-distribution argmax at every round (baseline).

    Parameters: see the module docstring (``reward``, ``support``, ``discretise``, ``method``, ``C``,
    ``upper``, ``pessimistic``, ``oracle``).

    References
    ----------
    Wei Chen, Wei Hu, Fu Li, Jian Li, Yu Liu, Pinyan Lu. *Combinatorial multi-armed bandit with
    general reward functions*. NeurIPS 2016 (SDCB).

    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: the baseline of Section 5 and Figure 4.

    Examples
    --------
    >>> import cmab_milp as cm
    >>> SDCB(cm.Cardinality(3, 1), 10, oracle="enumerate", support=[0.0, 1.0]).oracle.name
    'distribution:enumerate'
    """

    name = "SDCB"


class AROQGR(_GeneralReward, AdaptiveEpochs):
    """AROQ-GR-CMAB (Algorithm 6): the optimistic-distribution argmax, refreshed when an arm's epoch ends.

    ``alpha < 1`` with an approximate oracle (``oracle="greedy"``) is Algorithm 5's
    form; ``alpha=None`` (default) takes the oracle's own factor (1 when exact).

    References
    ----------
    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: Algorithm 6 (Section 5, Appendix A.7.1, Theorem 5),
    Algorithm 8 (Appendix A.10) for continuous outcomes.

    Examples
    --------
    >>> import cmab_milp as cm
    >>> AROQGR(cm.Cardinality(4, 2), 100, oracle="greedy", reward="max", support=[0.5, 1.0]).alpha
    0.6321205588285577
    """

    name = "AROQ-GR"

    _own_defaults: ClassVar[dict[str, Any]] = {"alpha": None}

    def _configure(self, solver: DistributionOracle, schedule: dict[str, Any]) -> None:
        alpha = schedule["alpha"]
        self.alpha = solver.alpha if alpha is None else check_unit_interval("alpha", alpha)


class SROQGR(_GeneralReward, ScheduledElimination):
    """SROQ-GR-CMAB (Algorithm 7): scheduled representatives and elimination with eqs. (11).

    ``M`` (default ``max(2, ceil(log2(log2(T))))``) sets the epoch grid; the
    radius uses ``ln T``. Each epoch is one adaptivity round: the
    representatives (``include=[i]``) and the max-LCB query run in one batch.
    The LCB is the only use of ``pessimistic`` in the family.

    References
    ----------
    Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
    NeurIPS 2025, arXiv:2510.21431: Algorithm 7 (Section 5, Appendix A.7.2, Theorem 6).

    Examples
    --------
    >>> import cmab_milp as cm
    >>> len(SROQGR(cm.Cardinality(3, 1), 10**5, oracle="enumerate", support=[0.0, 1.0]).grid)
    5
    """

    name = "SROQ-GR"

    _own_defaults: ClassVar[dict[str, Any]] = {"M": None}
