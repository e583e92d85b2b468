"""The covariance norm index of eqs. (3)-(4), shared by OLS-UCB-C, AROQ-C and SROQ-C.

:class:`CovarianceIndex` keeps the feedback statistics and asks the oracle for::

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

The policies themselves are in :mod:`cmab_milp.policies.covariance`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..environments.base import FeedbackStats
from ..oracles import Oracle
from ..oracles.norm.carry import NormCarry, check_reuse
from ..portable import selected_sums
from .base import Index, check_positive
from .cov_estimators import CovarianceEstimator

__all__ = ["CovarianceIndex"]


class CovarianceIndex(Index):
    """Means, covariance upper bound and the norm index of eq. (3).

    ``forbid_pairs`` (a tuple of arm pairs, default none) is added to every
    query it builds (SROQ-C's schedule passes its eliminated pairs in each
    query of its batches itself).

    ``reuse`` (``None``: off): each norm query of sign +1 carries a
    :class:`~cmab_milp.oracles.norm.carry.NormCarry` with this ``reuse`` share, one per
    restriction, so that an oracle in the certified approximate mode may answer
    it from the last solved query of the same restrictions (saved with the learner).

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

    def __init__(self, d: int, C: float = 1.5, f_scale: float = 1.0, h_scale: float = 1.0, reuse: float | None = None):
        self.C = check_positive("C", C)
        self.f_scale = check_positive("f_scale", f_scale)
        self.h_scale = check_positive("h_scale", h_scale)
        self.reuse = None if reuse is None else check_reuse(reuse)
        self.forbid_pairs: tuple[tuple[int, int], ...] = ()
        super().__init__(d)

    def reset(self) -> None:
        super().reset()
        self.estimator = CovarianceEstimator(self.d)
        self._cache: dict[int, np.ndarray] = {}
        # last norm answer per (sign, include): the incumbent hints of the next such query
        self._answers: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
        # with ``reuse``: the carry of each restriction's sign +1 queries (oracles.norm.carry)
        self._carries: dict[tuple, NormCarry] = {}

    def update(self, stats: FeedbackStats) -> None:
        if stats.sum is None or stats.outer is None or stats.pairs is None:
            raise ValueError("CovarianceIndex needs the 'sum', 'outer' and 'pairs' feedback statistics")
        super().update(stats)
        self.estimator.add_stats(stats)
        self._cache.clear()

    def get_state(self) -> dict[str, Any]:
        estimator = {name: getattr(self.estimator, name) for name in self._estimator_fields}
        state = {**super().get_state(), "estimator": estimator}
        if self._carries:  # the approximate mode's answers depend on them: a resumed learner needs them
            state["carries"] = [carry.get_state() for carry in self._carries.values()]
        return state

    def set_state(self, state: Mapping[str, Any]) -> None:
        state = dict(state)
        carries = state.pop("carries", [])
        self._carries = {}
        if not isinstance(carries, (list, tuple)):
            raise ValueError("CovarianceIndex state: carries must be a list")
        for saved in carries:
            if not isinstance(saved, Mapping):
                raise ValueError("CovarianceIndex state: each carry must be a mapping")
            carry = NormCarry()
            carry.set_state(saved)
            if "actions" in saved:  # (set_state checked its restrictions)
                self._carries[_carry_key(saved)] = carry
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
    def query(self, t: int, sign: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
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

    # ------------------------------------------------------------ hints
    def ask(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """Answer ``queries`` (one adaptivity round), each norm query hinted with earlier answers.

        A norm query without ``hints`` gets as incumbent hints the last answer
        to a query of the same sign and ``include`` (the previous update's, the
        previous epoch's representative of the same arm or pair) and the last
        unrestricted one, those of them that satisfy its restrictions
        (:meth:`hints_for`). Hints never change the optimal value; the answers
        are remembered for the next queries (not saved with the learner).
        """
        hinted = []
        carried = self.reuse is not None
        keys = [_carry_key(q) for q in queries if q.get("kind") == "norm" and q.get("sign") == 1] if carried else []
        for query in queries:
            if query.get("kind") == "norm" and "hints" not in query:
                hints = self.hints_for(query)
                query = {**query, "hints": hints} if hints else query
            if carried and query.get("kind") == "norm" and query.get("sign") == 1:
                key = _carry_key(query)
                if keys.count(key) == 1:  # a carry is a sequence: never two queries of one batch on it
                    carry = self._carries.get(key)
                    if carry is None:
                        while len(self._carries) >= _MAX_CARRIES:  # the oldest restriction first (OLS-UCB-C's
                            del self._carries[next(iter(self._carries))]  # early ones exclude unobserved arms)
                        carry = self._carries[key] = NormCarry(self.reuse)
                    query = {**query, "carry": carry}
            hinted.append(query)
        answers = super().ask(oracle, hinted)
        for query, answer in zip(hinted, answers, strict=True):
            if query.get("kind") == "norm" and answer is not None:
                self.remember(query["sign"], query.get("include", ()), answer)
        return answers

    def remember(self, sign: int, include: Sequence[int], action: np.ndarray) -> None:
        """Keep ``action`` as the last answer to a norm query of this ``sign`` and ``include``."""
        self._answers[(int(sign), tuple(sorted(int(i) for i in include)))] = np.asarray(action, bool)

    def hints_for(self, query: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
        """Remembered answers (same sign: same ``include``, then unrestricted) that satisfy ``query``'s restrictions.

        >>> index = CovarianceIndex(3)
        >>> index.remember(+1, (), np.array([True, True, False]))
        >>> [h.tolist() for h in index.hints_for({"sign": 1, "include": [0]})]
        [[True, True, False]]
        >>> index.hints_for({"sign": 1, "include": [2]}), index.hints_for({"sign": -1})
        ((), ())
        """
        sign = int(query["sign"])
        include = tuple(sorted(int(i) for i in query.get("include", ())))
        exclude = list(query.get("exclude", ()))
        pairs = list(query.get("forbid_pairs", ()))
        out: list[np.ndarray] = []
        for key in ((sign, include), (sign, ())):
            action = self._answers.get(key)
            if action is None or any(action is h for h in out):
                continue
            if not action[list(include)].all() or action[exclude].any():
                continue
            if any(action[i] and action[j] for i, j in pairs):
                continue
            out.append(action)
        return tuple(out)

    def evaluate(self, t: int, actions: np.ndarray, sign: int) -> np.ndarray:
        acts = np.asarray(actions, dtype=bool)
        dense = acts.astype(float)
        quad = np.einsum("ni,ij,nj->n", dense, self.matrix(t), dense)  # numpy's own loops, not BLAS
        values = selected_sums(acts, self.means) + sign * self.f(t) * np.sqrt(np.maximum(quad, 0.0))
        values[acts[:, ~self.observed].any(axis=1)] = sign * np.inf
        return values


#: Carries an index keeps (one per restriction of its sign +1 queries; each holds a copy of ``M``).
_MAX_CARRIES = 8


def _carry_key(query: Mapping[str, Any]) -> tuple:
    """The sign (+1) and restrictions of a norm query (or of a saved carry's state), as the key of its carry."""
    return (
        1,
        tuple(sorted(int(i) for i in query.get("include", ()))),
        tuple(sorted(int(i) for i in query.get("exclude", ()))),
        tuple(sorted((min(int(i), int(j)), max(int(i), int(j))) for i, j in query.get("forbid_pairs", ()))),
    )
