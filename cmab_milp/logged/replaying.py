"""Replay a learning policy against a log, through its public ``act`` / ``select`` / ``observe``.

Two ways, chosen by the log:

* **exact-match replay** (Li et al. 2011), for a semi-bandit log: round by
  round, the policy proposes its next action (:meth:`~cmab_milp.policies.base.Policy.act`,
  which asks the oracle only when its schedule says so and holds the answer);
  when it equals the logged action the round is *accepted*: the policy
  ``select()``\\ s it and ``observe()``\\ s the logged outcomes; otherwise the
  round is skipped and the policy is left as it was. The accepted rounds are
  distributed as a run against the true problem when the logging policy was
  uniform over the policy's actions (independent of the past), so the curves
  estimate the policy's behaviour on ``accepted`` rounds; expect an acceptance
  rate near ``1 / (number of actions)``. A policy that proposes an action the
  log never plays (a smaller action than any logged one, say) can never be
  accepted again: the replay stops there and says so in ``result.stopped``.
* **per-arm replay**, for a full-information log (every arm's outcome every
  round): every round is accepted; the policy plays its choice and observes
  the logged outcomes of the arms it chose.

Regret is pseudo-regret against ``means`` (default: the log's per-arm
estimates, :meth:`~cmab_milp.logged.table.LoggedFeedback.arm_means`), with the
optimum found by the policy's space through an exact oracle; queries and
adaptivity rounds are read from the policy's oracle ledger, as
:func:`~cmab_milp.simulate` does.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(3, 1, exact=True)
>>> outcomes = np.tile([0.2, 0.5, 0.8], (500, 1))  # full information: every arm's outcome, every round
>>> rounds, arms = np.nonzero(np.ones_like(outcomes))
>>> log = cm.LoggedFeedback(space, rounds, arms, outcomes[rounds, arms], full_information=True)
>>> result = cm.replay(cm.CUCB(space, None, oracle="enumerate"), log)
>>> result.accepted, int(result.t[-1])
(500, 500)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import portable
from ..oracles import make_oracle
from ..policies.base import Policy
from ..simulation import SimulationResult, check_policy_and_source, record_points, shared_result_fields
from .table import LoggedFeedback

__all__ = ["ReplayResult", "replay"]


@dataclass
class ReplayResult(SimulationResult):
    """A :class:`~cmab_milp.simulation.SimulationResult` over the accepted rounds, plus the replay's counts.

    ``t`` counts accepted rounds (the policy's own time steps); ``reward`` is the cumulative logged reward
    of the policy's chosen arms at those steps; ``accepted`` of ``logged_rounds`` were used.
    """

    accepted: int = 0
    logged_rounds: int = 0
    mode: str = "exact-match"
    reward: np.ndarray | None = None
    #: Why an exact-match replay stopped before the end of the log ("" when it did not).
    stopped: str = ""
    #: The mean logged reward per accepted round, and its standard error (independent rounds).
    mean_reward: float = float("nan")
    reward_se: float = float("nan")

    @property
    def acceptance(self) -> float:
        """The fraction of logged rounds accepted."""
        return self.accepted / self.logged_rounds if self.logged_rounds else 0.0

    def __repr__(self) -> str:
        base = super().__repr__()[len("SimulationResult(") :]
        return f"ReplayResult({self.mode}, {self.accepted:,} of {self.logged_rounds:,} rounds accepted; {base}"


def replay(
    policy: Policy,
    log: LoggedFeedback,
    *,
    seed: int | None = 0,
    means: Any = None,
    record: int = 100,
    trace: bool = False,
) -> ReplayResult:
    """Run ``policy`` against ``log`` (reset first); return a :class:`ReplayResult`.

    Parameters
    ----------
    policy : Policy
        Any policy of the library (CUCB, CTS, ESCB, AROQ, SROQ, ...); its space must have the log's ``d``.
        A known horizon ``T`` stops the replay after ``T`` accepted rounds.
    log : LoggedFeedback
        Full-information logs are replayed per arm, others by exact match.
    seed : int or None
        Passed to ``policy.start_run`` (randomised policies such as CTS draw from it).
    means : array, optional
        Per-arm means for the pseudo-regret (default: the log's per-arm estimates).
    record : int
        Number of log-spaced recording steps.
    trace : bool
        Keep ``(accepted step, action)`` of every accepted round in ``result.info["trace"]``.

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> space = cm.Cardinality(3, 1, exact=True)
    >>> rng = np.random.default_rng(0)
    >>> arms = rng.integers(3, size=3000)  # one arm a round, uniformly at random
    >>> rewards = (rng.random(3000) < np.array([0.2, 0.5, 0.8])[arms]).astype(float)
    >>> log = cm.LoggedFeedback(space, np.arange(3000), arms, rewards, inclusion=np.full(3000, 1 / 3))
    >>> result = cm.replay(cm.CUCB(space, None, oracle="enumerate"), log)
    >>> bool(0 < result.accepted < 3000)
    True
    """
    check_policy_and_source(policy, log, LoggedFeedback, name="log", noun="the log")
    mu = log.arm_means() if means is None else np.asarray(means, dtype=float)
    if mu.shape != (log.d,):
        raise ValueError(f"means must have shape ({log.d},), got {mu.shape}")
    unseen = np.flatnonzero(~np.isfinite(mu))
    if unseen.size:
        shown = [log.space.label_of(int(i)) for i in unseen[:10]]
        raise ValueError(f"the log never includes arms {shown}: pass means= to compute regret")
    best = make_oracle(policy.space, "auto").argmax(mu)
    if best is None:
        raise ValueError("the policy's space has no feasible action")
    best_value = portable.selected_sum(best, mu)
    full = log.full_information
    policy.start_run(seed)
    policy.reset()
    ledger = policy.oracle.ledger
    q0, r0, s0 = ledger.snapshot()
    limit = log.n if policy.T is None else min(log.n, policy.T)
    gaps = np.empty(limit)
    rewards = np.empty(limit)
    queries = np.empty(limit, np.int64)
    rounds = np.empty(limit, np.int64)
    oracle_seconds = np.empty(limit)
    runtime = np.empty(limit)
    played: list[tuple[int, np.ndarray]] | None = [] if trace else None
    logged_ids = None if full else log.action_ids
    logged_keys = None if full else [a.tobytes() for a in log.actions]
    ever_logged = set() if full else set(logged_keys)
    stopped = ""
    accepted = 0
    start = time.perf_counter()
    for t in range(log.n):
        if accepted == limit:
            break
        if full:
            action = policy.select()
        else:
            proposal = policy.act().tobytes()
            if proposal != logged_keys[logged_ids[t]]:
                if proposal not in ever_logged:  # it waits for an action no round holds: nothing more to accept
                    labels = log.space.labels_of(np.frombuffer(proposal, dtype=bool))
                    stopped = (
                        f"{policy.name} chose {labels}, an action the log never plays, after {accepted:,} accepted "
                        f"rounds (at logged round {t:,}): exact-match replay needs a log over the policy's actions"
                    )
                    break
                continue
            action = policy.select()
        y = log.outcomes(t)
        policy.observe(action, y)
        gaps[accepted] = best_value - portable.selected_sum(action, mu)
        rewards[accepted] = float(y[action].sum())
        queries[accepted], rounds[accepted], oracle_seconds[accepted] = ledger.snapshot()
        runtime[accepted] = time.perf_counter() - start
        if played is not None:
            played.append((accepted + 1, action))
        accepted += 1
    wall = time.perf_counter() - start
    if accepted == 0:
        raise ValueError(
            stopped.replace(" after 0 accepted rounds", "")
            or f"{policy.name} never chose a logged action in {log.n:,} rounds: nothing to replay "
            "(exact-match replay needs a log whose actions cover the policy's choices, e.g. uniform logging)"
        )
    points = record_points(accepted, record) - 1
    _, _, s_end = ledger.snapshot()
    steps = points + 1
    info: dict[str, Any] = {"policy": repr(policy), "log": repr(log), "means": "given" if means is not None else "log"}
    return ReplayResult(
        T=accepted,
        queries=queries[points] - q0,
        rounds=rounds[points] - r0,
        runtime=runtime[points],
        oracle_runtime=oracle_seconds[points] - s0,
        wall_seconds=wall,
        oracle_seconds=s_end - s0,
        stretches=accepted,
        **shared_result_fields(
            policy,
            seed=seed,
            t=steps,
            regret=np.cumsum(gaps[:accepted])[points],
            optimum=best_value,
            info=info,
            played=played,
        ),
        accepted=accepted,
        logged_rounds=log.n,
        mode="per-arm (full information)" if full else "exact-match",
        stopped=stopped,
        reward=np.cumsum(rewards[:accepted])[points],
        mean_reward=float(rewards[:accepted].mean()),
        reward_se=float(rewards[:accepted].std(ddof=1) / np.sqrt(accepted)) if accepted > 1 else float("inf"),
    )
