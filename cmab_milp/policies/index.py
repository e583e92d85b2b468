"""Index policies: an :class:`Index` (estimator + confidence index) and the :class:`IndexPolicy` around it.

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

So a step where the first query finds that the unobserved arms left are in no
(allowed) action costs two queries: CUCB's 20,001 queries in 20,000 steps on
GEANT UK -> GR come from step 7, where the 8 links unseen by then (e.g. the
one to Malta, a leaf) proved to be on no UK -> GR path. Each such second query
is listed in ``policy.extra_queries`` (and ``result.info["extra_queries"]``,
the job files of ``cmab-milp run``): the step, the arms, why.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..environments.base import FeedbackStats, check_needs
from ..oracles import Oracle
from .protocol import Policy, _set_state, _state_names


def unobserved_query(unobserved: np.ndarray, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
    """The linear query preferring actions with the most ``unobserved`` arms.

    >>> unobserved_query(np.array([True, False]), exclude=[1])["weights"].tolist()
    [1.0, 0.0]
    """
    return {"kind": "linear", "weights": unobserved.astype(float), "include": include, "exclude": exclude}


class Index:
    """An estimator and its confidence index over ``d`` arms.

    ``t`` in the methods below is the round whose confidence level is used
    (``log t`` in eq. (1); SROQ passes the horizon ``T``, eq. (2)). Queries are
    ``argmax_batch`` entries (dicts with ``kind``); they may assume that every
    arm they can select has been observed (the policy excludes the rest).
    """

    #: Feedback statistics the index needs (see ``environments.base.STATISTICS``).
    needs: ClassVar[frozenset[str]] = frozenset({"sum"})
    #: Attributes that hold what the index has learned (saved by ``Policy.save``; subclasses add theirs).
    _state_fields: ClassVar[tuple[str, ...]] = ("counts",)

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

    def get_state(self) -> dict[str, Any]:
        """What the index has learned, as a dict of plain values and arrays."""
        return {name: getattr(self, name) for name in _state_names(type(self))}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`get_state`'s output into a fresh index."""
        _set_state(self, state, _state_names(type(self)), type(self).__name__)

    def round_stats(self, action: np.ndarray, y: np.ndarray) -> FeedbackStats:
        """The statistics :meth:`update` needs for one round playing ``action`` with outcomes ``y``.

        ``y`` holds finite outcomes on ``action``; an index whose model limits
        the outcomes (a support) checks them here and raises ``ValueError``.
        """
        return FeedbackStats.of_rounds(action[None], y[None], self.needs)

    def query(self, t: int, sign: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        """Query maximising the UCB (``sign=+1``) or the LCB (``-1``) under the restrictions.

        A family implements this and :meth:`evaluate` (or the four methods below).
        """
        raise NotImplementedError(f"{type(self).__name__} implements neither query nor upper_query / lower_query")

    def evaluate(self, t: int, actions: np.ndarray, sign: int) -> np.ndarray:
        """UCB (``sign=+1``) or LCB (``-1``) of each row of ``actions`` (``sign * inf`` with an unobserved arm)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither evaluate nor upper_values / lower_values")

    def upper_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        """Query maximising the upper confidence index (UCB) under the restrictions."""
        return self.query(t, +1, include, exclude)

    def lower_query(self, t: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        """Query maximising the lower confidence index (LCB) under the restrictions."""
        return self.query(t, -1, include, exclude)

    def upper_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        """UCB index of each row of ``actions`` (``+inf`` when a row holds an unobserved arm)."""
        return self.evaluate(t, actions, +1)

    def lower_values(self, t: int, actions: np.ndarray) -> np.ndarray:
        """LCB index of each row of ``actions`` (``-inf`` when a row holds an unobserved arm)."""
        return self.evaluate(t, actions, -1)

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


class IndexPolicy(Policy):
    """A policy driven by an :class:`Index` (built by :meth:`make_index`)."""

    _state_fields: ClassVar[tuple[str, ...]] = ("unreachable",)

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "index": self.index.get_state()}

    def set_state(self, state: Mapping[str, Any]) -> None:
        state = dict(state)
        index = state.pop("index", None)
        if not isinstance(index, Mapping):
            raise ValueError(f"{self.name} state has no index statistics")
        super().set_state(state)
        self.index.set_state(index)

    @abstractmethod
    def make_index(self) -> Index:
        """The family's index, from ``self.space`` and ``self.params``."""

    @property
    def needs(self) -> frozenset[str]:  # type: ignore[override]
        return check_needs(self.index.needs)

    def _learn(self, stats: FeedbackStats) -> None:
        self.index.update(stats)

    def _round_stats(self, action: np.ndarray, y: np.ndarray) -> FeedbackStats:
        return self.index.round_stats(action, y)

    def reset(self) -> None:
        super().reset()
        self.index = self.make_index()
        # arms in no action of the space (found when an unrestricted query for unobserved arms
        # returns none of them): never observable, so never worth the extra query again
        self.unreachable = np.zeros(self.d, bool)
        #: Steps that asked a second query (the first showed the unobserved arms in no allowed action):
        #: ``{"step", "queries", "arms", "why"}`` each; what a ledger with more queries than steps spent them on.
        self.extra_queries: list[dict[str, Any]] = []

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
            self._note_extra(unseen, bool(include or exclude))
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

    def _note_extra(self, unseen: np.ndarray, restricted: bool) -> None:
        """Record the second query of this step (see the module docstring)."""
        labels = self.space.arm_labels.display
        arms = [labels[k] for k in np.flatnonzero(unseen)]
        where = "no action allowed by the query's restrictions" if restricted else "no action of the space"
        self.extra_queries.append(
            {
                "step": int(self.t),
                "queries": 1,
                "arms": arms,
                "why": f"the {len(arms)} arms not yet observed are in {where} (the unobserved-arms query "
                "returned none of them), so the index query followed at the same step",
            }
        )

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
        """Arms to explore first: never observed, not excluded, and not in flight unless all such arms are."""
        unseen = ~self.index.observed & ~self.unreachable
        excl = list(exclude)
        if excl:
            unseen[excl] = False
        if not unseen.any():  # the common case after the first rounds: nothing left to explore
            return unseen
        fresh = unseen & (self.in_flight == 0)
        return fresh if fresh.any() else unseen
