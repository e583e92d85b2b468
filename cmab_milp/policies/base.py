"""The policy protocol, and the seam between *when* to ask the oracle and *what* to ask.

A policy is split in two parts that meet at :class:`Index`:

* a **schedule** decides when the oracle is asked and what is played in between.
  The three schedules of the paper live once, in
  :mod:`cmab_milp.policies.schedules`: :class:`~.schedules.EveryRound` (the
  baselines CUCB, OLS-UCB-C, SDCB), :class:`~.schedules.AdaptiveEpochs`
  (Algorithms 1, 3, 5, 6: per-arm epochs, an update when an arm's count in its
  epoch reaches ``1 + sqrt(T m |T_i(tau_i - 1)| / d)``) and
  :class:`~.schedules.ScheduledElimination` (Algorithms 2, 4, 7: a fixed grid of
  epochs, one representative per surviving arm, elimination, round robin);
* an **index** (estimator + confidence index) absorbs feedback statistics and
  turns them into oracle queries: the linear family asks
  ``argmax(weights, ...)``; the covariance family asks
  ``argmax_norm(mu, M, f, sign, ...)``; the general-reward family asks its own
  distribution oracle. The index never decides when to ask.

How a new family plugs in
-------------------------
Write a subclass of :class:`Index` (``needs``, ``update``, ``upper_query``,
``lower_query``, ``upper_values``, ``lower_values``; override ``ask`` only if its
queries go to something other than ``oracle.argmax_batch``), then one short
class per schedule::

    class AROQCov(AdaptiveEpochs):
        name = "AROQ-C"

        def __init__(self, space, T, *, oracle="highs", C=1.5):
            super().__init__(space, T, oracle=oracle, C=check_positive("C", C))

        def make_index(self):
            return CovarianceIndex(self.space.d, **self.params)

Everything else (epochs, thresholds, holds, representatives, elimination, round
robin, infinite indices of unobserved arms, bulk play) is shared.

Unobserved arms
---------------
An arm never observed has an infinite index. :meth:`IndexPolicy.best_upper`
resolves it without any large finite number: when arms not excluded are
unobserved, it first asks for the action holding the most of them (weight 1 on
exactly those arms, under the same restrictions); only when that action holds
none of them (so no action does) it asks the index's own query with the
unobserved arms excluded. Indices may therefore assume that every arm a query
may select has been observed. Arms that an unrestricted query shows to be in
no action at all (e.g. edges on no source-target path) are remembered as
``unreachable`` and not asked about again.

Bulk play
---------
:meth:`Policy.plan` returns a :class:`Stretch`: a cycle of actions and a number
of rounds during which no decision changes. The runner plays any prefix of it
(``rounds <= stretch.length``), draws the feedback of those rounds in bulk and
calls :meth:`Policy.update` with the number of rounds played and their
:class:`~cmab_milp.environments.base.FeedbackStats`. A policy must decide the
same way whether a stretch is played whole or round by round, so the next
:meth:`plan` after a partial stretch continues where it stopped.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> policy = cm.AROQ(cm.Cardinality(4, 2), T=100, oracle="enumerate")
>>> stretch = policy.plan()
>>> stretch.actions.shape, stretch.length
((1, 4), 1)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..environments.base import FeedbackStats, check_needs
from ..oracles import Oracle, make_oracle
from ..spaces.base import ActionSpace

__all__ = [
    "Index",
    "IndexPolicy",
    "Policy",
    "Stretch",
    "check_positive",
    "check_unit_interval",
    "unobserved_query",
]


@dataclass(frozen=True)
class Stretch:
    """Rounds ``t, t+1, ...`` play ``actions[j % p]`` at the ``j``-th round, for ``length`` rounds.

    ``actions`` is a ``(p, d)`` bool matrix (``p >= 1``); ``length >= 1`` may run
    past the horizon (the runner stops at ``T``).

    >>> s = Stretch(np.array([[1, 0], [0, 1]], bool), 3)
    >>> s.action_at(2).astype(int).tolist()
    [1, 0]
    """

    actions: np.ndarray
    length: int

    def __post_init__(self) -> None:
        if self.actions.ndim != 2 or len(self.actions) == 0:
            raise ValueError(f"a stretch needs a (p, d) action matrix with p >= 1, got {self.actions.shape}")
        if self.length < 1:
            raise ValueError(f"a stretch lasts at least one round, got length={self.length}")

    def action_at(self, j: int) -> np.ndarray:
        """The action of the ``j``-th round of the stretch (``j`` from 0)."""
        return self.actions[j % len(self.actions)]

    def rotated(self, k: int) -> Stretch:
        """The rest of the stretch after its first ``k`` rounds."""
        return Stretch(np.roll(self.actions, -(k % len(self.actions)), axis=0), self.length - k)


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0, or ``ValueError`` naming ``name``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def check_unit_interval(name: str, value: Any) -> float:
    """``value`` as a float in (0, 1], or ``ValueError`` naming ``name``."""
    x = check_positive(name, value)
    if x > 1:
        raise ValueError(f"{name} must lie in (0, 1], got {value!r}")
    return x


def unobserved_query(unobserved: np.ndarray, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
    """The linear query preferring actions with the most ``unobserved`` arms.

    >>> unobserved_query(np.array([True, False]), exclude=[1])["weights"].tolist()
    [1.0, 0.0]
    """
    return {"kind": "linear", "weights": unobserved.astype(float), "include": include, "exclude": exclude}


class Index(ABC):
    """An estimator and its confidence index over ``d`` arms.

    ``t`` in the methods below is the round whose confidence level is used
    (``log t`` in eq. (1); SROQ passes the horizon ``T``, eq. (2)). Queries are
    ``argmax_batch`` entries (dicts with ``kind``); they may assume that every
    arm they can select has been observed (the policy excludes the rest).
    """

    #: Feedback statistics the index needs (see ``environments.base.STATISTICS``).
    needs: ClassVar[frozenset[str]] = frozenset({"sum"})

    def __init__(self, d: int):
        self.d = int(d)
        self.reset()

    def reset(self) -> None:
        """Forget every observation."""
        self.counts = np.zeros(self.d, np.int64)

    def update(self, stats: FeedbackStats) -> None:
        """Absorb the statistics of some rounds (subclasses call ``super().update``)."""
        self.counts += stats.counts

    @property
    def observed(self) -> np.ndarray:
        """Arms with at least one observation."""
        return self.counts > 0

    @abstractmethod
    def upper_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        """Query maximising the upper confidence index (UCB) under the restrictions."""

    @abstractmethod
    def lower_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        """Query maximising the lower confidence index (LCB) under the restrictions."""

    @abstractmethod
    def upper_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        """UCB index of each row of ``actions`` (``+inf`` when a row holds an unobserved arm)."""

    @abstractmethod
    def lower_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        """LCB index of each row of ``actions`` (``-inf`` when a row holds an unobserved arm)."""

    def ask(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """Answer ``queries`` as one adaptivity round (default: ``oracle.argmax_batch``).

        A single query goes to ``argmax`` / ``argmax_norm`` directly (the same
        ledger entry: one query, one round, less overhead).
        """
        if len(queries) == 1:
            args = dict(queries[0])
            kind = args.pop("kind", "linear")
            if kind == "linear":
                return [oracle.argmax(**args)]
            if kind == "norm":
                return [oracle.argmax_norm(**args)]
        return oracle.argmax_batch(queries)


class Policy(ABC):
    """A semi-bandit policy over ``space`` for horizon ``T``.

    Parameters
    ----------
    space : ActionSpace
    T : int
        Horizon (>= 1); schedules and thresholds depend on it.
    oracle : str or Oracle
        A backend name for :func:`cmab_milp.make_oracle`, or an oracle instance
        built on ``space``.
    **params
        The policy's constants, validated by the subclass; kept in
        ``self.params`` so :meth:`clone` can rebuild the policy.
    """

    #: Display name, used in results.
    name: ClassVar[str] = "policy"
    #: Feedback statistics the policy needs from the environment.
    needs: frozenset[str] = frozenset({"sum"})
    #: Approximation factor of the oracle the policy is analysed with (1: exact).
    alpha: float = 1.0

    def __init__(self, space: ActionSpace, T: int, *, oracle: str | Oracle = "highs", **params: Any):
        if not isinstance(space, ActionSpace):
            raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
        if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
            raise ValueError(f"T must be an integer >= 1, got {T!r}")
        if isinstance(oracle, str):
            solver = make_oracle(space, oracle)
        elif isinstance(oracle, Oracle):
            if oracle.space.d != space.d:
                raise ValueError(f"oracle is built on d={oracle.space.d} arms, the space has d={space.d}")
            solver = oracle
        else:
            raise ValueError(f"oracle must be a backend name or an Oracle, got {type(oracle).__name__}")
        self.space = space
        self.T = int(T)
        self.d = space.d
        self.m = space.m
        self.oracle = solver
        self._oracle_spec = oracle
        self.params = dict(params)
        self.reset()

    def reset(self) -> None:
        """Forget everything learned: the next :meth:`plan` is round 1."""
        self.t = 1
        self._stretch: Stretch | None = None

    def clone(self) -> Policy:
        """A fresh policy with the same space, horizon, oracle choice and constants."""
        return type(self)(self.space, self.T, oracle=self._oracle_spec, **self.params)

    def plan(self) -> Stretch:
        """The stretch starting at round ``self.t`` (asking the oracle if the schedule says so)."""
        if self._stretch is None:
            self._stretch = self._plan()
        return self._stretch

    def update(self, rounds: int, stats: FeedbackStats) -> None:
        """Record that the first ``rounds`` rounds of the current stretch were played."""
        stretch = self.plan()
        if not 1 <= rounds <= stretch.length:
            raise ValueError(f"rounds must lie in [1, {stretch.length}] for the current stretch, got {rounds}")
        self._absorb(stretch, rounds, stats)
        self.t += rounds
        self._stretch = None

    def act(self) -> np.ndarray:
        """The action of round ``self.t`` (for round-by-round use)."""
        return self.plan().actions[0]

    @abstractmethod
    def _plan(self) -> Stretch:
        """Decide the stretch starting at round ``self.t``."""

    @abstractmethod
    def _absorb(self, stretch: Stretch, rounds: int, stats: FeedbackStats) -> None:
        """Update the state with the first ``rounds`` rounds of ``stretch``."""

    def __repr__(self) -> str:
        parts = [repr(self.space), f"T={self.T}", f"oracle={self.oracle.name!r}"]
        parts += [f"{k}={v!r}" for k, v in self.params.items()]
        return f"{type(self).__name__}({', '.join(parts)})"


class IndexPolicy(Policy):
    """A policy driven by an :class:`Index` (built by :meth:`make_index`)."""

    @abstractmethod
    def make_index(self) -> Index:
        """The family's index, from ``self.space`` and ``self.params``."""

    @property
    def needs(self) -> frozenset[str]:  # type: ignore[override]
        return check_needs(self.index.needs)

    def reset(self) -> None:
        super().reset()
        self.index = self.make_index()
        # arms in no action of the space (found when an unrestricted query for unobserved arms
        # returns none of them): never observable, so never worth the extra query again
        self.unreachable = np.zeros(self.d, bool)

    def best_upper(self, t: int, include: Iterable[int] = (), exclude: Iterable[int] = ()) -> np.ndarray | None:
        """The UCB-maximising action under the restrictions, unobserved arms first (sequential)."""
        include, exclude = tuple(include), tuple(exclude)
        unseen = self._unseen(exclude)
        if unseen.any():
            (action,) = self.index.ask(self.oracle, [unobserved_query(unseen, include, exclude)])
            if action is None or action[unseen].any() or self._unseen_decides(unseen, include, exclude):
                return action
            if not include and not exclude:
                self.unreachable |= unseen
            exclude = exclude + tuple(np.flatnonzero(unseen).tolist())
        (action,) = self.index.ask(self.oracle, [self.index.upper_query(t, include, exclude)])
        return action

    def upper_batch(self, t: int, restrictions: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[dict]:
        """Batch entries for UCB argmaxes under each ``(include, exclude)``; resolve with :meth:`resolve_upper`.

        Each restriction gets the unobserved-arms query (when some arm it allows
        is unobserved) and the index query with those arms excluded, so all of
        them are answered in a single adaptivity round.
        """
        entries = []
        for include, exclude in restrictions:
            unseen = self._unseen(exclude)
            if unseen.any():
                entries.append(unobserved_query(unseen, tuple(include), tuple(exclude)))
                if self._unseen_decides(unseen, include, exclude):
                    continue
                exclude = tuple(exclude) + tuple(np.flatnonzero(unseen).tolist())
            entries.append(self.index.upper_query(t, tuple(include), tuple(exclude)))
        return entries

    def resolve_upper(
        self, restrictions: Sequence[tuple[Sequence[int], Sequence[int]]], answers: Sequence[np.ndarray | None]
    ) -> list[np.ndarray | None]:
        """Pick, per restriction, the answer of :meth:`upper_batch`'s entries that maximises the UCB."""
        out, k = [], 0
        for include, exclude in restrictions:
            unseen = self._unseen(exclude)
            if unseen.any() and self._unseen_decides(unseen, include, exclude):
                out.append(answers[k])
                k += 1
            elif unseen.any():
                first, second = answers[k], answers[k + 1]
                k += 2
                out.append(first if first is None or first[unseen].any() else second)
            else:
                out.append(answers[k])
                k += 1
        return out

    @staticmethod
    def _unseen_decides(unseen: np.ndarray, include: Sequence[int], exclude: Sequence[int]) -> bool:
        """True when the unobserved-arms query alone is the answer: an included arm is
        unobserved (every allowed action holds it), or every allowed arm is unobserved."""
        if any(unseen[i] for i in include):
            return True
        allowed = ~unseen
        allowed[list(exclude)] = False
        return not allowed.any()

    def _unseen(self, exclude: Iterable[int]) -> np.ndarray:
        unseen = ~self.index.observed & ~self.unreachable
        excl = list(exclude)
        if excl:
            unseen[excl] = False
        return unseen
