"""Answers carried between norm queries of one sequence, proven by a drift bound (certified approximate mode).

A policy that asks the UCB argmax at every round (OLS-UCB-C) asks nearly the same
query again and again: between two rounds only the arms just played change their
means and their rows of ``M``, and ``f`` grows by a hair. With an oracle in the
approximate mode (``norm_gap``), an answer proven within ``norm_gap`` of the
optimum may then be proven so for the next queries too, without a solve.

:class:`NormCarry` (one per sequence of queries, owned by the caller and passed as
``argmax_norm(..., carry=carry)``) keeps the last *solved* query ``s`` of the
sequence, its answer and a proven upper bound ``U_s`` on its optimum. For a new
query ``t`` with the same sign (+1), restrictions and space, :func:`drift_bound`
proves ``U_t >= max_a r_t(a)`` where ``r(a) = mu @ a + f sqrt(max(a @ M @ a, 0))``.
Write ``q_s(a) = max(a @ M_s @ a, 0)`` and let every action hold at most ``m``
arms (``arms_bound``). Then for every action ``a`` of the restricted set:

* ``(mu_t - mu_s) @ a <= dmu``, the sum of the ``m`` largest positive entries of
  ``mu_t - mu_s`` on the free arms;
* ``a @ (M_t - M_s) @ a <= B``, the row-sum bound of
  :func:`~.lifting.quadratic_form_bounds` on ``M_t - M_s``; so
  ``max(a @ M_t @ a, 0) <= q_s(a) + max(B, 0)``;
* ``mu_t @ a <= L_t`` (the ``m`` largest positive entries of ``mu_t``) and
  ``mu_s @ a + f_s sqrt(q_s(a)) <= U_s``;
* ``q_s(a) <= Q``, the same row-sum bound on ``M_s``.

Hence, with ``B+ = max(B, 0)`` and ``q = q_s(a)`` in ``[0, Q]``,
``r_t(a) <= min(h1(q), h2(q))`` where ``h1(q) = U_s + dmu + f_t sqrt(q + B+) - f_s sqrt(q)``
(from the bound on ``r_s``) and ``h2(q) = L_t + f_t sqrt(q + B+)`` (small ``q``).
``h2 - h1 = f_s sqrt(q) - (U_s + dmu - L_t)`` increases in ``q``, so ``h2 <= h1`` up to
``q* = ((U_s + dmu - L_t)^+ / f_s)^2`` (clipped to ``[0, Q]``) and ``h1 <= h2`` after it.
``h2`` increases; ``h1`` has derivative of the sign of ``(f_t^2 - f_s^2) q - f_s^2 B+``
(changes sign at most once, from - to +), so its maximum on an interval is at an end.
The maximum of the minimum over ``[0, Q]`` is therefore at ``q*`` or ``Q``:
``U_t = max(min(h1, h2)(q*), min(h1, h2)(Q))`` (plus the contract's tolerance for rounding).

The carried actions (the solve's answer and the best others its search met, all feasible:
same space, same restrictions) are valued exactly on query ``t``; the best of them is returned
when ``value / U_t >= 1 - norm_gap`` and ``value > 0``, with that ratio in the ledger, exactly as
a solved approximate answer. (The answer's own index falls as it is played and its arms' counts
grow; another carried action may then take its place without a solve.) Otherwise the
query is solved, aiming at ``(1 - reuse) * norm_gap`` so that the drift of the next
rounds has ``reuse * norm_gap`` to eat, and the carry keeps the new answer and bound.

The drift is measured from the last solved query, not chained round by round: the
bounds of ``M_t - M_s`` and ``mu_t - mu_s`` do not add up the noise of every round.
An exact oracle (no ``norm_gap``) and sign -1 ignore the carry. Everything depends
only on the sequence of queries, so the tie rule holds for the sequence: the same
queries in the same order get the same answers (a saved learner saves its carries,
:meth:`NormCarry.get_state`).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(6, 2)
>>> oracle = cm.make_oracle(space, "highs", norm_gap=0.05)
>>> carry = cm.NormCarry(reuse=0.5)
>>> mu, M = np.linspace(0.1, 0.6, 6), 0.01 * np.eye(6)
>>> first = oracle.argmax_norm(mu, M, 1.0, carry=carry)
>>> second = oracle.argmax_norm(mu, 0.999 * M, 1.0001, carry=carry)  # a round later: no solve
>>> carry.solved, carry.reused, bool((first == second).all())
(1, 1, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.base import tolerance
from ..core.queries import Carry, NormQuery, Restrictions
from .lifting import quadratic_form_bounds

__all__ = ["NormCarry", "check_reuse", "drift_bound"]


def check_reuse(value: Any) -> float:
    """``reuse``: a real number in ``[0, 1)`` (``ValueError`` otherwise).

    >>> check_reuse(0.5)
    0.5
    >>> check_reuse(1)
    Traceback (most recent call last):
    ...
    ValueError: reuse must be a number in [0, 1), got 1
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"reuse must be a number in [0, 1), got {value!r}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"reuse must be a number in [0, 1), got {value!r}")
    return float(value)


def _top_positive(values: np.ndarray, m: int) -> float:
    """Sum of the ``m`` largest positive entries of ``values``."""
    if m <= 0 or len(values) == 0:
        return 0.0
    top = np.sort(values)[::-1][:m]
    return float(np.clip(top, 0.0, None).sum())


def drift_bound(previous: NormQuery, bound: float, query: NormQuery, m: int, arms: np.ndarray | None = None) -> float:
    """A proven upper bound on ``query``'s optimum (sign +1) from ``bound``, one on ``previous``'s (module docstring).

    Both queries must have sign +1 and the same restrictions; ``m`` bounds the
    arms of an action and ``arms`` are the free arms (default: all).

    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(3, 1), "enumerate")
    >>> q = oracle.norm_query(np.array([0.5, 0.2, 0.1]), np.eye(3), 1.0)
    >>> drift_bound(q, 1.5, q, 1) == 1.5 + tolerance(1.5)  # nothing moved: the same bound
    True
    """
    if arms is None:
        arms = np.arange(len(query.mu))
    mu_t, mu_s = query.mu[arms], previous.mu[arms]
    dmu = _top_positive(mu_t - mu_s, m)
    lin_t = _top_positive(mu_t, m)
    b_plus = max(quadratic_form_bounds(query.M - previous.M, m, arms)[1], 0.0)
    q_max = max(quadratic_form_bounds(previous.M, m, arms)[1], 0.0)
    f_s, f_t = previous.f, query.f

    def lowest(q: float) -> float:
        grown = f_t * math.sqrt(q + b_plus)
        return min(bound + dmu + grown - f_s * math.sqrt(q), lin_t + grown)

    slack = bound + dmu - lin_t
    if f_s <= 0.0:  # h1 and h2 both increase: the end
        q_star = q_max
    else:  # where h2 stops being the lower one (h1 is lower everywhere without slack)
        q_star = min((max(slack, 0.0) / f_s) ** 2, q_max)
    top = max(lowest(q_star), lowest(q_max))
    return top + tolerance(top)


class NormCarry(Carry):
    """One sequence's last solved norm query, its answer and proven bound (module docstring).

    ``reuse`` (in ``[0, 1)``): the share of the oracle's ``norm_gap`` left for the
    drift; each solve aims at ``(1 - reuse) * norm_gap``. ``solved`` and ``reused``
    count the queries of each kind.

    >>> carry = NormCarry(reuse=0.25)
    >>> carry.reuse, carry.solved, carry.reused
    (0.25, 0, 0)
    """

    def __init__(self, reuse: float = 0.5):
        self.reuse = check_reuse(reuse)
        self.solved = 0
        self.reused = 0
        self._query: NormQuery | None = None
        self._actions: np.ndarray | None = None  # (k, d) bool: the answer first, then runners-up
        self._bound = math.inf

    def __repr__(self) -> str:
        return f"NormCarry(reuse={self.reuse}, solved={self.solved}, reused={self.reused})"

    def solve_gap(self, gap: float) -> float:
        """The gap a solve aims at, under the oracle's ``gap``."""
        return (1.0 - self.reuse) * gap

    def _matches(self, query: NormQuery) -> bool:
        last = self._query
        return (
            last is not None
            and query.sign == last.sign == 1
            and query.restrictions == last.restrictions
            and query.mu.shape == last.mu.shape
        )

    def offer(self, query: NormQuery, gap: float, m: int) -> tuple[np.ndarray, float] | None:
        """The best carried action and its proven ratio on ``query`` when it is within ``gap``, else ``None``."""
        if not self._matches(query) or self._actions is None:
            return None
        arms = np.setdiff1d(np.arange(len(query.mu)), np.asarray(query.restrictions.exclude, int))
        bound = drift_bound(self._query, self._bound, query, m, arms)
        values = [query.value(action) for action in self._actions]
        best = int(np.argmax(values))  # the first of equal values
        value = values[best]
        if not (value > 0.0 and math.isfinite(bound) and bound > 0.0):
            return None
        ratio = min(value / bound, 1.0)
        if ratio < 1.0 - gap:
            return None
        self.reused += 1
        return self._actions[best].copy(), ratio

    def record(
        self, query: NormQuery, answer: np.ndarray | None, bound: float, others: Sequence[np.ndarray] = ()
    ) -> None:
        """Keep a solved ``query``'s ``answer``, ``bound`` (a proven upper bound on its optimum) and ``others``
        (actions of the space; those the restrictions admit are kept too)."""
        self.solved += 1
        if answer is None or query.sign != 1 or not math.isfinite(bound):
            self._query, self._actions, self._bound = None, None, math.inf
            return
        self._query = NormQuery(query.mu.copy(), query.M.copy(), query.f, query.sign, query.restrictions)
        kept = {np.asarray(answer, bool).tobytes(): np.asarray(answer, bool)}
        for other in others:
            other = np.asarray(other, bool)
            if other.shape == answer.shape and query.restrictions.admits(other):
                kept.setdefault(other.tobytes(), other)
        self._actions = np.array(list(kept.values()), bool)
        self._bound = float(bound)

    # ------------------------------------------------------------ saving
    def get_state(self) -> dict[str, Any]:
        """Plain values and arrays (a saved learner holds them; :meth:`set_state` restores them)."""
        state: dict[str, Any] = {"reuse": self.reuse, "solved": self.solved, "reused": self.reused}
        if self._query is not None and self._actions is not None:
            res = self._query.restrictions
            state.update(
                mu=self._query.mu,
                M=self._query.M,
                f=self._query.f,
                include=list(res.include),
                exclude=list(res.exclude),
                forbid_pairs=[list(p) for p in res.forbid_pairs],
                actions=self._actions,
                bound=self._bound,
            )
        return state

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`get_state`'s output (``ValueError`` when it does not fit)."""
        try:
            self.__init__(state["reuse"])  # type: ignore[misc]
            self.solved, self.reused = int(state["solved"]), int(state["reused"])
            if "actions" not in state:
                return
            mu = np.asarray(state["mu"], float)
            M = np.asarray(state["M"], float)
            actions = np.asarray(state["actions"])
            if M.shape != (len(mu), len(mu)) or actions.ndim != 2 or actions.shape[1:] != mu.shape or not len(actions):
                raise ValueError("shapes do not match")
            if actions.dtype != bool:
                raise ValueError("actions must be booleans")
            res = Restrictions(
                tuple(int(i) for i in state["include"]),
                tuple(int(i) for i in state["exclude"]),
                tuple((int(i), int(j)) for i, j in state["forbid_pairs"]),
            )
            self._query = NormQuery(mu, M, float(state["f"]), 1, res)
            self._actions = actions
            self._bound = float(state["bound"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"NormCarry state does not fit: {exc}") from None
