"""The policy protocol: :class:`Policy` (plan / update, select / observe, save) and :class:`Stretch`.

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

Bulk play
---------
:meth:`Policy.plan` returns a :class:`Stretch`: a cycle of actions and a number
of rounds during which no decision changes. The runner plays any prefix of it
(``rounds <= stretch.length``), draws the feedback of those rounds in bulk and
calls :meth:`Policy.update` with the number of rounds played and their
:class:`~cmab_milp.environments.base.FeedbackStats`. A policy must decide the
same way whether a stretch is played whole or round by round, so the next
:meth:`plan` after a partial stretch continues where it stopped.

Online use: select / observe, late and batched feedback
-------------------------------------------------------
:meth:`Policy.select` returns the next action and counts it as **played**:
round ``t`` advances and the schedule moves on exactly as if the round had been
played in :meth:`Policy.update` -- epoch counts (AROQ's ``current``, AROQ-C's
pair counts), the SROQ grid and the horizon guesses all count *plays*.
:meth:`Policy.observe` delivers one played action's outcomes, at any later
time and in any order; the index (means, radii, covariances, histograms) uses
*observations* only. So, while feedback is outstanding:

* ``select`` never blocks: it returns what the schedule says with the
  statistics observed so far (a held action stays held; an oracle query made
  now uses the observed statistics). An arm never observed has an infinite
  index, and arms already *in flight* (selected, outcome not back) come last
  among them: the "most unobserved arms" query counts only the unobserved arms
  not in flight while there are any, so every arm is tried once before any is
  tried again blind. With prompt feedback nothing is in flight at a decision,
  so this changes nothing there;
* when and how often the oracle is asked is unchanged: AROQ's epochs end on
  play counts, so Lemma 1's bound on updates holds for any delays; SROQ asks
  one batch per grid epoch (adaptivity = number of epochs) whatever the
  delays. Only the answers change (they use older statistics);
* statistics are sums, so a batch observed in any order gives the same learner;
  equal actions are interchangeable (``observe`` closes the oldest selection of
  that action).

With prompt feedback (``observe`` right after each ``select``) the decisions
are exactly those of :func:`~cmab_milp.simulate` played round by round on the
same outcomes; ``simulate`` stays the fast path (bulk stretches). The learner's
progress (``outstanding`` selections included) is saved by :meth:`Policy.save`.

Example
-------
>>> import numpy as np
>>> Stretch(np.eye(2, dtype=bool), 3).action_at(1).tolist()
[False, True]
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..described import Described, ParameterError
from ..environments.base import FeedbackStats
from ..oracles import Oracle, make_oracle
from ..spaces.base import ActionSpace, as_action
from .anytime import first_horizon, next_horizon
from .checks import check_horizon

#: Outcomes given to :meth:`Policy.observe` are refused above this magnitude: over 2**53 rounds their
#: sums stay below 1e116 and their squares' sums below 1e216, far from float overflow.
MAX_OUTCOME = 1e100


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
        if len(self.actions) == 1:
            return Stretch(self.actions, self.length - k)
        return Stretch(np.roll(self.actions, -(k % len(self.actions)), axis=0), self.length - k)


def _state_names(cls: type) -> list[str]:
    """``_state_fields`` of ``cls`` and its bases, base classes first."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        names += klass.__dict__.get("_state_fields", ())
    return list(dict.fromkeys(names))


def _set_state(obj: Any, state: Mapping[str, Any], names: list[str], what: str) -> None:
    """Set the attributes ``names`` of ``obj`` from ``state``, checking arrays against the fresh ones."""
    if set(state) != set(names):
        raise ValueError(f"{what} state has fields {sorted(state)}, expected {sorted(names)}")
    for name in names:
        value, current = state[name], getattr(obj, name, None)
        if isinstance(current, np.ndarray):
            if (
                not isinstance(value, np.ndarray)
                or value.ndim != current.ndim
                or value.dtype.kind != current.dtype.kind
            ):
                raise ValueError(f"{what} state field {name!r} does not match: {value!r:.80}")
            if name != "grid" and value.shape != current.shape:  # grids differ from phase to phase
                raise ValueError(f"{what} state field {name!r} has shape {value.shape}, expected {current.shape}")
        setattr(obj, name, value)


class Policy(Described, ABC):
    """A semi-bandit policy over ``space`` for horizon ``T``.

    Parameters
    ----------
    space : ActionSpace
    T : int or None
        Horizon (``1 <= T <= 2**53``); schedules and thresholds depend on it.
        ``None``: the horizon is unknown; the schedule then works with a
        growing guess ``self.horizon`` (:mod:`cmab_milp.policies.anytime`).
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
    #: Constants a learner saved by an earlier version may lack, with the value that version used
    #: (a constant whose default changed; :func:`~cmab_milp.load_policy` fills them in before ``from_params``).
    saved_defaults: ClassVar[dict[str, Any]] = {}
    #: Attributes that hold the learner's progress (saved by :meth:`save`; subclasses add theirs).
    _state_fields: ClassVar[tuple[str, ...]] = (
        "t",
        "_stretch",
        "horizon",
        "outstanding",
        "in_flight",
        "observed_rounds",
    )

    def __init__(self, space: ActionSpace, T: int | None, *, oracle: str | Oracle = "highs", **params: Any):
        if not isinstance(space, ActionSpace):
            raise ParameterError("space", f"space must be an ActionSpace, got {type(space).__name__}")
        T = check_horizon(T)
        if isinstance(oracle, str):
            solver = make_oracle(space, oracle)
        elif isinstance(oracle, Oracle):
            if oracle.space.d != space.d:
                raise ParameterError("oracle", f"oracle is built on d={oracle.space.d} arms, the space has d={space.d}")
            solver = oracle
        else:
            raise ParameterError("oracle", f"oracle must be a backend name or an Oracle, got {type(oracle).__name__}")
        self.space = space
        self.T = T
        self.d = space.d
        self.m = space.m
        self.oracle = solver
        self._oracle_spec = oracle
        self.params = dict(params)
        self.reset()

    def start_run(self, seed: int | None) -> None:
        """Called by :func:`~cmab_milp.simulate` with its seed before :meth:`reset`.

        Deterministic policies ignore it; a randomised one built without a seed (CTS) draws from a
        stream derived from it, so the same run seed gives the same numbers.
        """
        return None

    def reset(self) -> None:
        """Forget everything learned: the next :meth:`plan` is round 1 (the oracle is reset too, if it can be)."""
        reset_oracle = getattr(self.oracle, "reset", None)
        if callable(reset_oracle):
            reset_oracle()
        self.t = 1
        self._stretch: Stretch | None = None
        #: The horizon the schedule works with: ``T``, or the current guess when ``T`` is None.
        self.horizon = self.T if self.T is not None else first_horizon()
        #: Selections not observed yet: action bytes -> rounds selected (oldest first).
        self.outstanding: dict[bytes, list[int]] = {}
        #: Per arm, outstanding selections that hold it.
        self.in_flight = np.zeros(self.d, np.int64)
        #: Rounds whose outcomes have been observed (through :meth:`observe` or :meth:`update`).
        self.observed_rounds = 0

    def get_params(self) -> dict[str, Any]:
        """The constructor's parameters: ``space``, ``T``, ``oracle`` (the name or object given) and the constants.

        >>> import cmab_milp as cm
        >>> cm.CUCB(cm.Cardinality(3, 1), T=10, oracle="enumerate").get_params()["C"]
        1.5
        """
        return {"space": self.space, "T": self.T, "oracle": self._oracle_spec, **self.params}

    def clone(self) -> Policy:
        """A fresh policy with the same space, horizon, oracle choice and constants."""
        return type(self).from_params(self.get_params())

    def plan(self) -> Stretch:
        """The stretch starting at round ``self.t`` (asking the oracle if the schedule says so).

        Refused once a known horizon ``T`` has been played; with ``T=None`` a
        stretch never crosses the current horizon guess, and the guess grows
        (:func:`~cmab_milp.policies.anytime.next_horizon`) when it is reached.
        """
        if self.T is not None and self.t > self.T:
            raise ValueError(
                f"{self.name} was built for T={self.T} rounds and all of them have been played; "
                "build it with T=None to play without a known horizon"
            )
        if self.T is None and self.t > self.horizon:
            while self.t > self.horizon:
                self.horizon = next_horizon(self.horizon)
            self._new_horizon()
        if self._stretch is None:
            stretch = self._plan()
            if self.T is None and stretch.length > self.horizon - self.t + 1:
                stretch = Stretch(stretch.actions, self.horizon - self.t + 1)
            self._stretch = stretch
        return self._stretch

    def update(self, rounds: int, stats: FeedbackStats) -> None:
        """Record that the first ``rounds`` rounds of the current stretch were played, with feedback ``stats``."""
        stretch = self.plan()
        if not 1 <= rounds <= stretch.length:
            raise ValueError(f"rounds must lie in [1, {stretch.length}] for the current stretch, got {rounds}")
        self._advance(stretch, rounds)
        self._learn(stats)
        self.observed_rounds += rounds
        self.t += rounds
        self._stretch = None

    def act(self) -> np.ndarray:
        """The action of round ``self.t`` (for round-by-round use; nothing is recorded)."""
        return self.plan().actions[0]

    # ------------------------------------------------------------ online use
    def select(self) -> np.ndarray:
        """The action to play next (bool, shape ``(d,)``); its outcomes go to :meth:`observe` later.

        Selecting counts as *playing* the round: the schedule (epochs, grid,
        horizon guess) advances with each call, whether or not earlier
        selections have been observed; the estimates use only what
        :meth:`observe` has delivered so far. Several selections may be
        outstanding at once (late, batched feedback).

        >>> import numpy as np
        >>> import cmab_milp as cm
        >>> policy = cm.AROQ(cm.Cardinality(3, 1), T=None, oracle="enumerate")
        >>> first, second = policy.select(), policy.select()   # two users served before any feedback
        >>> policy.observe(second, {int(np.flatnonzero(second)[0]): 1.0})
        >>> policy.observe(first, np.where(first, 0.5, np.nan))
        >>> policy.t, policy.observed_rounds, len(policy.outstanding)
        (3, 2, 0)
        """
        stretch = self.plan()
        action = stretch.actions[0].copy()
        self._advance(stretch, 1)
        self.outstanding.setdefault(action.tobytes(), []).append(self.t)
        self.in_flight += action
        self.t += 1
        self._stretch = stretch.rotated(1) if stretch.length > 1 else None
        return action

    def observe(self, action: Any, rewards: Any) -> None:
        """Deliver the outcomes of one selected ``action`` (in any order relative to other selections).

        Parameters
        ----------
        action : (d,) bool or 0/1 array
            An action returned by :meth:`select` and not observed yet (equal
            actions are interchangeable: the oldest such selection is closed).
        rewards : (d,) array or mapping
            The outcomes of the played arms: a length-``d`` array (entries of
            arms outside ``action`` are ignored and may be NaN) or a mapping
            ``{arm: outcome}`` over exactly the played arms (an arm is its index,
            or its label in ``space.arms``, e.g. an edge ``(u, v)``).

        Raises
        ------
        ValueError
            (changing nothing) An action not outstanding, a missing or non-finite outcome of
            a played arm, an outcome of magnitude above :data:`MAX_OUTCOME` (``1e100``: refused,
            so that every statistic -- sums, sums of squares and products over up to ``2**53``
            rounds -- stays finite), or an outcome the policy's model excludes (e.g. off a
            general-reward policy's support).
        """
        a = as_action(action, self.d)
        key = a.tobytes()
        waiting = self.outstanding.get(key)
        if not waiting:
            arms = np.flatnonzero(a).tolist()
            raise ValueError(
                f"action with arms {arms} is not an outstanding selection of this policy "
                f"({self.pending} outstanding): observe only actions "
                "returned by select(), each once"
            )
        y = self._outcomes(a, rewards)
        stats = self._round_stats(a, y)
        self._learn(stats)
        self.observed_rounds += 1
        waiting.pop(0)
        self.in_flight -= a
        if not waiting:
            del self.outstanding[key]

    # ------------------------------------------------------------ saving
    def get_state(self) -> dict[str, Any]:
        """The learner's progress (round, schedule, statistics) as plain values and arrays."""
        return {name: getattr(self, name) for name in _state_names(type(self))}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`get_state`'s output into a policy built with the same space, ``T`` and constants."""
        _set_state(self, state, _state_names(type(self)), self.name)

    def save(self, path: str | os.PathLike) -> None:
        """Save the learner to ``path`` (atomic; read back with :func:`cmab_milp.load_policy`).

        The file (format: :mod:`cmab_milp.policies.persistence`) holds the
        space as data, the oracle's backend name, the constants and the whole
        state, outstanding selections included, so the loaded policy continues
        exactly as this one would.

        >>> import os, tempfile
        >>> import cmab_milp as cm
        >>> policy = cm.SROQ(cm.Cardinality(4, 2), T=None, oracle="enumerate")
        >>> action = policy.select()
        >>> path = os.path.join(tempfile.mkdtemp(), "sroq.npz")
        >>> policy.save(path)
        >>> cm.load_policy(path).pending    # the selection still awaits its outcomes
        1
        """
        from .. import policies  # the package's table reaches the file format, which sits above this module

        policies.save_policy(self, path)

    @property
    def pending(self) -> int:
        """Number of selections not observed yet."""
        return sum(len(v) for v in self.outstanding.values())

    def _outcomes(self, action: np.ndarray, rewards: Any) -> np.ndarray:
        """The outcome vector of a played ``action`` (NaN off it), validated."""
        played = np.flatnonzero(action)
        y = np.full(self.d, np.nan)
        if isinstance(rewards, Mapping):
            for key, value in rewards.items():
                if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < self.d:
                    arm = int(key)
                else:  # a label given to the space (labels=, with_labels) or a graph edge, as the oracle takes
                    try:
                        arm = self.space.arm_index(key, "rewards")
                    except ValueError as exc:
                        raise ValueError(
                            f"rewards names arm {key!r}, neither an index < {self.d} nor an arm label ({exc})"
                        ) from None
                if not action[arm]:
                    raise ValueError(f"rewards has an outcome for arm {key!r}, which the action did not play")
                try:
                    y[arm] = float(value)
                except (TypeError, ValueError):
                    raise ValueError(f"the outcome of arm {key!r} must be a number, got {value!r}") from None
        else:
            try:
                given = np.asarray(rewards, dtype=float)
            except (TypeError, ValueError):
                raise ValueError("rewards must be a length-d array of numbers or a mapping {arm: outcome}") from None
            if given.shape != (self.d,):
                raise ValueError(f"rewards must have shape ({self.d},) or be a mapping, got shape {given.shape}")
            y[played] = given[played]
        missing = played[np.isnan(y[played])]
        if missing.size:
            raise ValueError(f"missing outcomes for played arms {missing.tolist()}")
        bad = played[~np.isfinite(y[played])]
        if bad.size:
            raise ValueError(f"outcomes must be finite; arm {int(bad[0])} has {y[bad[0]]}")
        huge = played[np.abs(y[played]) > MAX_OUTCOME]
        if huge.size:
            raise ValueError(
                f"outcomes must have magnitude at most {MAX_OUTCOME:g} (larger ones would overflow the "
                f"statistics); arm {int(huge[0])} has {y[huge[0]]}"
            )
        return y

    def _round_stats(self, action: np.ndarray, y: np.ndarray) -> FeedbackStats:
        """The feedback statistics of one played round (validated ``y``)."""
        return FeedbackStats.of_rounds(action[None], y[None], self.needs)

    # --------------------------------------------------------- subclass hooks
    @abstractmethod
    def _plan(self) -> Stretch:
        """Decide the stretch starting at round ``self.t``."""

    @abstractmethod
    def _advance(self, stretch: Stretch, rounds: int) -> None:
        """Advance the schedule by the first ``rounds`` rounds of ``stretch`` (plays, not feedback)."""

    @abstractmethod
    def _learn(self, stats: FeedbackStats) -> None:
        """Absorb the feedback statistics of some played rounds (in any order)."""

    def _new_horizon(self) -> None:
        """Called when an unknown-horizon policy's guess ``self.horizon`` has just grown (subclasses call super)."""
        self._stretch = None

    def __repr__(self) -> str:
        parts = [repr(self.space), f"T={self.T}", f"oracle={self.oracle.name!r}"]
        parts += [f"{k}={v!r}" for k, v in self.params.items()]
        return f"{type(self).__name__}({', '.join(parts)})"
