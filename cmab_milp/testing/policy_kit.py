"""``check_policy`` / ``policy_checks``: feasible play, counted queries, same seed same run, reuse, bulk play."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import numpy as np

from ..spaces import ActionSpace, Cardinality
from .common import Cases, Check, action_str, run_checks

__all__ = ["POLICY_CASES", "check_policy", "policy_checks", "policy_setup"]

POLICY_CASES = ("feasible", "ledger", "same_seed", "reuse", "bulk")

_MEANS = np.array([0.9, 0.85, 0.2, 0.4, 0.6, 0.1])
_VALUES = np.array([0.2, 0.4, 0.6, 0.8, 1.0])


def _default_setup(cls: type, space: ActionSpace, constants: dict[str, Any]):
    """An environment fitting ``cls`` (by what its constructor and index need) and the constants."""
    from ..environments import DiscreteArms, GaussianNoise, UniformNoise

    d = space.d
    means = np.resize(_MEANS, d)
    params = inspect.signature(cls).parameters
    if "support" in params and "reward" in params:  # general-reward family
        probs = np.array([np.roll([0.96, 0.01, 0.01, 0.01, 0.01], k) for k in range(d)])
        constants = {"reward": "sqrt_sum", "support": _VALUES, **constants}
        return (lambda: DiscreteArms(_VALUES, probs, reward=constants["reward"], seed=0)), constants
    probe = cls(space, 10, oracle="enumerate", **constants)
    if "outer" in probe.needs:
        cov = 0.02 * (np.eye(d) + 0.5 * np.ones((d, d)))
        return (lambda: GaussianNoise(means, cov, seed=0)), constants
    return (lambda: UniformNoise(means, width=0.5, seed=0)), constants


def _space(space: ActionSpace | None) -> ActionSpace:
    return Cardinality(6, 2).with_constraint([1, 1, 0, 0, 0, 0], "<=", 1) if space is None else space


def policy_setup(
    cls: type, space: ActionSpace | None = None, constants: Mapping[str, Any] | None = None
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A fresh-environment factory fitting policy ``cls`` and the constants to build it with.

    What :func:`check_policy` plays a class on when given no ``env``: uniform noise, a
    correlated Gaussian for covariance-adaptive policies, discrete outcomes with ``sqrt_sum``
    (and their ``support``) for general-reward ones; ``space`` as in :func:`check_policy`.

    >>> import cmab_milp as cm
    >>> make_env, constants = policy_setup(cm.SDCB)
    >>> type(make_env()).__name__, constants["reward"]
    ('DiscreteArms', 'sqrt_sum')
    """
    return _default_setup(cls, _space(space), dict(constants or {}))


def _played(result) -> np.ndarray:
    rows = [actions[np.arange(rounds) % len(actions)] for _, rounds, actions in result.info["trace"]]
    return np.concatenate(rows)


def _same_run(a, b) -> str | None:
    """None if two results are the same run, else what differs."""
    for field in ("t", "queries", "rounds"):
        if not np.array_equal(getattr(a, field), getattr(b, field)):
            return f"{field}: {np.asarray(getattr(a, field))[-3:]} vs {np.asarray(getattr(b, field))[-3:]}"
    if not np.allclose(a.regret, b.regret, rtol=1e-12, atol=1e-9):
        return f"regret: {a.regret[-1]!r} vs {b.regret[-1]!r}"
    if not np.array_equal(_played(a), _played(b)):
        first = int(np.flatnonzero((_played(a) != _played(b)).any(axis=1))[0])
        return f"the actions played differ from round {first + 1}"
    return None


class _PolicyRun:
    """What the cases of one policy share: how to build and play it, and its first run (played once, on first use)."""

    def __init__(
        self, cls: type, space: ActionSpace, backend: str, T: int, seed: int, env: Callable[[], Any], constants
    ):
        self.cls, self.space, self.backend, self.T, self.seed, self.env = cls, space, backend, T, seed, env
        self.constants = constants
        self.title = f"check_policy({cls.__name__})"
        self.where = f"space {space!r}, backend {backend!r}, T={T}, seed={seed}"
        self._first: tuple[Any, tuple[int, int]] | None = None
        self._played: Any = None  # the policy object of the first run, until the reuse case takes it

    def build(self) -> Any:
        return self.cls(self.space, self.T, oracle=self.backend, **self.constants)

    def play(self, policy: Any, seed: int, **options: Any) -> Any:
        from ..simulation import simulate

        return simulate(policy, self.env(), self.T, seed=seed, trace=True, progress=False, **options)

    def first(self) -> tuple[Any, tuple[int, int]]:
        """The first run of a fresh policy and its oracle ledger's (queries, rounds) right after it."""
        if self._first is None:
            policy = self.build()
            result = self.play(policy, self.seed)
            self._first, self._played = (result, (policy.oracle.ledger.queries, policy.oracle.ledger.rounds)), policy
        return self._first

    def played_policy(self) -> Any:
        """A policy object that has played the first run once (taken: the reuse case plays it again)."""
        self.first()
        policy, self._played = self._played, None
        if policy is None:
            policy = self.build()
            self.play(policy, self.seed)
        return policy


def _policy_case(run: _PolicyRun, case: str) -> str:
    """Run one case of :func:`check_policy`; its outcome."""
    cases, where, T, space = Cases(run.title, [case], None, POLICY_CASES), run.where, run.T, run.space
    if case in ("feasible", "ledger", "same_seed"):
        first, counted = run.first()
    if cases.wanted("feasible"):
        played = _played(first)
        if len(played) != T:
            cases.fail("feasible", where, f"{len(played)} actions played in {T} rounds")
        for row in np.unique(played, axis=0):
            if not space.contains(row):
                cases.fail("feasible", where, f"played {action_str(row)}, which is not an action of the space")
        cases.passed("feasible")
    if cases.wanted("ledger"):
        reported = (int(first.queries[-1]), int(first.rounds[-1]))
        if reported != counted:
            cases.fail("ledger", where, f"the run reports queries, rounds = {reported}, the oracle ledger {counted}")
        if counted[0] <= 0 or counted[1] > counted[0]:
            cases.fail("ledger", where, f"queries={counted[0]}, rounds={counted[1]}: expected 0 < rounds <= queries")
        for curve in ("queries", "rounds"):
            if (np.diff(np.asarray(getattr(first, curve))) < 0).any():
                cases.fail("ledger", where, f"the {curve} curve decreases")
        cases.passed("ledger")
    if cases.wanted("same_seed"):
        differs = _same_run(first, run.play(run.build(), run.seed))
        if differs:
            cases.fail("same_seed", where, f"two fresh policies, same seed: {differs}")
        cases.passed("same_seed")
    if cases.wanted("reuse"):
        policy = run.played_policy()
        differs = _same_run(run.first()[0], run.play(policy, run.seed))
        if differs:
            cases.fail("reuse", where, f"the policy object simulated again with the same seed: {differs}")
        cases.passed("reuse")
    if cases.wanted("bulk"):
        bulk = run.play(run.build(), run.seed + 1, record=T)
        single = run.play(run.build(), run.seed + 1, record=T, bulk=False)
        differs = _same_run(bulk, single)
        if differs:
            cases.fail("bulk", where, f"bulk play vs round-by-round play (bulk=False): {differs}")
        cases.passed("bulk")
    return cases.finish()[case]


def policy_checks(
    cls: type,
    *,
    space: ActionSpace | None = None,
    backend: str = "enumerate",
    T: int = 300,
    seed: int = 0,
    env: Callable[[], Any] | None = None,
    constants: Mapping[str, Any] | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
) -> list[Check]:
    """The cases of :func:`check_policy` as ``Check`` s (a name and a callable), one per case.

    Arguments as :func:`check_policy`. The checks share the first run (played once, by the first
    case that needs it); every other run is the case's own.

    >>> import cmab_milp as cm
    >>> [(c.name, c.run()) for c in policy_checks(cm.CUCB, T=50, include=["feasible", "ledger"])]
    [('feasible', 'passed'), ('ledger', 'passed')]
    """
    if not isinstance(cls, type):
        raise ValueError(f"cls must be a policy class, got {cls!r}")
    space = _space(space)
    constants = dict(constants or {})
    if env is None:
        env, constants = _default_setup(cls, space, constants)
    selected = Cases(f"check_policy({cls.__name__})", include, exclude, POLICY_CASES).selected
    run = _PolicyRun(cls, space, backend, T, seed, env, constants)
    return [Check(case, partial(_policy_case, run, case)) for case in selected]


def check_policy(cls: type, **kit: Any) -> dict[str, str]:
    """Play ``cls`` and check it; raise ``AssertionError`` naming the failing cases (every case runs).

    Every case runs (:func:`policy_checks`, which takes the same keyword arguments). Cases
    (:data:`POLICY_CASES`): every played action is feasible; the oracle
    ledger matches the queries and rounds the run reports; the same seed gives
    the same numbers and actions; a reused policy object replays the run of a
    fresh one; bulk play equals round-by-round play (``simulate(..., bulk=False)``).

    Parameters
    ----------
    cls:
        A policy class, built as ``cls(space, T, oracle=backend, **constants)``.
    space:
        Default: 6 arms, at most 2, not both of arms 0 and 1.
    env:
        A function returning a fresh environment; default: one fitting the
        family (uniform noise, correlated Gaussian for covariance-adaptive
        policies, discrete outcomes with ``sqrt_sum`` for general rewards).

    >>> import cmab_milp as cm
    >>> check_policy(cm.SROQ, T=100)["bulk"]
    'passed'
    """
    return run_checks(f"check_policy({cls.__name__})", policy_checks(cls, **kit))
