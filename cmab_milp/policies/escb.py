"""ESCB-1 (Combes, Talebi, Proutiere and Lelarge, NeurIPS 2015) and its rare-oracle version AROQ-ESCB.

The index of an action ``a`` at round ``t`` (ESCB-1, their eq. for ``b_a(t)``)::

    index(a) = mu_hat @ a + sqrt(f(t) / 2 * sum_{i in a} 1 / n_i),   f(t) = C log t + loglog * m log log t

with the paper's constants ``C = 1``, ``loglog = 4`` as defaults (``log log t``
is taken as 0 while ``log t <= 1``; both constants settable, ``C > 0``,
``loglog >= 0``). It is the norm index ``mu @ a + f' sqrt(a @ M @ a)`` with the
diagonal ``M = diag(1 / n)`` and ``f' = sqrt(f(t) / 2)``, asked exactly as
``oracle.argmax_norm(mu_hat, diag(1 / n), f', sign=+1)``: no enumeration, no
Gurobi. An oracle in the certified approximate mode (``norm_gap``, e.g.
``make_oracle(space, "highs", norm_gap=0.05)``) answers each query within that
relative gap, as for OLS-UCB-C. Unobserved arms are played first, as for
CUCB (:meth:`~cmab_milp.policies.index.IndexPolicy.best_upper`).

On a plain :class:`~cmab_milp.Cardinality` space whose action table has at
most :data:`ENUMERATE_UP_TO` entries the index is evaluated on every action at once
(two matrix-vector products with the action table; constant ``route="auto"``,
the default; ``route="oracle"`` always asks ``argmax_norm``); its queries are
counted in the oracle's ledger like the oracle's own. The ``"enumerate"``
backend computes the full quadratic form per action instead, and the MILP
routes solve a model: both are slower there (``docs/performance.md``). Beyond
that size the norm oracle is the exact route: through linear queries alone one
cannot be exact, since the index is ``y + h(s)`` with ``y = mu @ a``,
``s = (1 / n) @ a`` and ``h`` concave, and its maximiser can lie strictly
inside the convex hull of the points ``(s(a), y(a))`` (three single arms with
``(s, y) = (0.01, 1), (2, 0), (1, 0.4)`` and ``f' = 0.8``: the third wins and
no linear objective selects it). Exact routes tried and dropped, with their
figures: ``docs/performance.md``, "Baselines: CTS and ESCB".

Rare-oracle versions. ESCB's index is the norm index
of AROQ-C / SROQ-C with a diagonal matrix, so their schedules carry it; whether
their guarantees transfer:

* **AROQ-ESCB** (:class:`AROQESCB`, shipped): AROQ-C's doubling epochs, with
  arm units (the matrix is diagonal, so no pair counts enter the index): arm
  ``i``'s epoch ends when its count in the epoch reaches
  ``1 + 2 |T_i(tau_i - 1)|``; then the oracle is asked once, otherwise the held
  action is played. During a hold every count stays within ``3 n_i + 1 <= 4 n_i``
  of its value at the query, so the held action's confidence width is at most
  twice the width it would have now, and ``f`` is increasing; the
  rarely-switching argument of AROQ-C's proof (Appendix A.5: optimism at the
  query round, widths compared through count doubling) then bounds the regret by
  ESCB's bound with the width doubled (constants times 4), and the queries by
  ``O(d log T)`` (Lemma 5's count of doubling epochs per unit).
* **SROQ-ESCB: not shipped.** Scheduled elimination compares the UCB of each
  arm's representative with the *maximum LCB over all actions*, which needs
  the confidence bounds to hold for all actions at once; ESCB's ``f(t)`` only
  makes them hold for each action separately (their Theorem 3 bounds the
  probability per action), so the elimination step is not covered without a
  ``log |A|`` term in ``f`` -- a different algorithm.

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(6, 2)
>>> env = cm.UniformNoise([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0)
>>> escb = cm.simulate(cm.ESCB(space, 2000, oracle="enumerate"), env, 2000, seed=1)
>>> rare = cm.simulate(cm.AROQESCB(space, 2000, oracle="enumerate"), env, 2000, seed=1)
>>> bool(escb.regret[-1] < 0.05 * 2000), bool(rare.queries[-1] < 100)
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..oracles import Oracle
from ..spaces.base import ActionSpace
from ..spaces.sets import Cardinality
from .base import check_nonnegative, check_positive
from .linear import LinearIndex
from .schedules import AdaptiveEpochs, EveryRound

__all__ = ["AROQESCB", "ENUMERATE_UP_TO", "ESCB", "ROUTES", "ESCBIndex"]

#: ESCB's index on a plain Cardinality space is evaluated on every action at once while the action table
#: (actions x d, float64) has at most this many entries (48 MB; d = 20 with m <= 8 fits).
ENUMERATE_UP_TO = 6_000_000
#: How ESCB's index is maximised: ``"auto"`` (plain Cardinality spaces with at most :data:`ENUMERATE_UP_TO` entries
#: by evaluating it on all of them, everything else by ``oracle.argmax_norm``) or ``"oracle"`` (always the oracle).
ROUTES = ("auto", "oracle")


class ESCBIndex(LinearIndex):
    """Empirical means and ESCB-1's norm index with ``M = diag(1 / n)`` (module docstring).

    >>> from cmab_milp.environments.base import FeedbackStats
    >>> index = ESCBIndex(2, m=1)
    >>> index.update(FeedbackStats(4, np.array([4, 1]), sum=np.array([2.0, 1.0])))
    >>> t = 100
    >>> value = index.upper_values(t, np.array([[1, 1]], bool))[0]
    >>> bool(np.isclose(value, 1.5 + math.sqrt(index.f(t) / 2 * (1 / 4 + 1 / 1))))
    True
    """

    def __init__(
        self, d: int, m: int, C: float = 1.0, loglog: float = 4.0, cardinality: tuple[int, bool] | None = None
    ):
        self.m = int(m)
        self.loglog = check_nonnegative("loglog", loglog)
        #: ``(m, exact)`` of a small plain Cardinality space: its index is evaluated on every action at once.
        self.cardinality = cardinality
        super().__init__(d, C=C)

    def reset(self) -> None:
        super().reset()
        # last answer per (sign, include, exclude): the incumbent hint of the next such query
        self._answers: dict[tuple, np.ndarray] = {}
        self._table: np.ndarray | None = None  # a small Cardinality space's actions (built at the first query)
        self._dense: np.ndarray | None = None

    def f(self, t: int) -> float:
        """``f(t) = C log t + loglog * m * log log t`` (``log log t`` as 0 while ``log t <= 1``)."""
        log_t = math.log(max(t, 1))
        loglog = math.log(log_t) if log_t > 1 else 0.0
        return self.C * log_t + self.loglog * self.m * loglog

    def scale(self, t: int) -> float:
        """``sqrt(f(t) / 2)``: the ``f`` of the norm query."""
        return math.sqrt(self.f(t) / 2.0)

    def inverse_counts(self) -> np.ndarray:
        """``1 / n_i`` (0 for unobserved arms, which no query may select)."""
        return self._inv_sqrt_n**2

    def query(self, t: int, sign: int, include: Sequence[int] = (), exclude: Sequence[int] = ()) -> dict:
        return {
            "kind": "norm",
            "mu": self.means,
            "M": np.diag(self.inverse_counts()),
            "f": self.scale(t),
            "sign": sign,
            "include": include,
            "exclude": exclude,
        }

    def evaluate(self, t: int, actions: np.ndarray, sign: int) -> np.ndarray:
        acts = np.asarray(actions, dtype=bool)
        dense = acts.astype(float)
        values = dense @ self.means + sign * self.scale(t) * np.sqrt(dense @ self.inverse_counts())
        values[acts[:, ~self.observed].any(axis=1)] = sign * np.inf
        return values

    def ask(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """Answer ``queries`` as one round, each norm query hinted with the last answer to the same restrictions.

        Hints never change the optimal value; they are not saved with the learner.
        """
        if self.cardinality is not None and all(_sortable(q) for q in queries):
            return self._ask_cardinality(oracle, queries)
        keys = [_key(q) for q in queries]
        hinted = []
        for key, query in zip(keys, queries, strict=True):
            last = self._answers.get(key) if key is not None else None
            hinted.append({**query, "hints": (last,)} if last is not None and "hints" not in query else query)
        answers = super().ask(oracle, hinted)
        for key, answer in zip(keys, answers, strict=True):
            if key is not None and answer is not None:
                self._answers[key] = answer
        return answers

    def _ask_cardinality(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """The queries answered on every action of the small Cardinality space at once (one ledger round)."""
        start = time.perf_counter()
        if self._table is None:
            m, exact = self.cardinality  # type: ignore[misc]
            self._table = Cardinality(self.d, m, exact=exact).enumerate()
            self._dense = self._table.astype(float)
        answers = []
        for q in queries:
            w, exclude = np.diag(q["M"]), list(q.get("exclude", ()))
            values = self._dense @ q["mu"] + q["f"] * np.sqrt(np.maximum(self._dense @ w, 0.0))
            if exclude:
                values[self._table[:, exclude].any(axis=1)] = -np.inf
            k = int(np.argmax(values))
            answers.append(None if values[k] == -np.inf else self._table[k].copy())
        oracle.ledger.record(len(queries), time.perf_counter() - start)
        return answers


def _cardinality_size(d: int, m: int, exact: bool) -> int:
    """Number of actions of ``Cardinality(d, m, exact)``."""
    return math.comb(d, m) if exact else sum(math.comb(d, k) for k in range(min(m, d) + 1))


def _sortable(query: Mapping[str, Any]) -> bool:
    """A norm query of sign +1 with a diagonal matrix and at most ``exclude`` restrictions."""
    return (
        query.get("kind") == "norm"
        and query.get("sign") == 1
        and not query.get("include")
        and not query.get("forbid_pairs")
    )


def _key(query: Mapping[str, Any]) -> tuple | None:
    if query.get("kind") != "norm":
        return None
    return (int(query["sign"]), tuple(query.get("include", ())), tuple(query.get("exclude", ())))


class _ESCBFamily:
    """Constructor and index shared by ESCB and AROQ-ESCB (mixed in before a schedule)."""

    d: int
    m: int
    params: dict[str, Any]

    def __init__(
        self,
        space: ActionSpace,
        T: int | None,
        *,
        oracle: str | Oracle = "auto",
        C: float = 1.0,
        loglog: float = 4.0,
        route: str = "auto",
    ):
        C, loglog = check_positive("C", C), check_nonnegative("loglog", loglog)
        if route not in ROUTES:
            raise ValueError(f"route must be one of {', '.join(map(repr, ROUTES))}, got {route!r}")
        super().__init__(space, T, oracle=oracle, C=C, loglog=loglog, route=route)  # type: ignore[call-arg]

    def make_index(self) -> ESCBIndex:
        space = getattr(self, "space", None)
        plain = type(space) is Cardinality and self.params["route"] == "auto"
        entries = _cardinality_size(space.d, space.m, space.exact) * space.d if plain else 0  # type: ignore[union-attr]
        small = plain and entries <= ENUMERATE_UP_TO
        cardinality = (space.m, space.exact) if small else None  # type: ignore[union-attr]
        return ESCBIndex(self.d, self.m, C=self.params["C"], loglog=self.params["loglog"], cardinality=cardinality)


class ESCB(_ESCBFamily, EveryRound):
    """ESCB-1: the exact argmax of ``mu_hat @ a + sqrt(f(t) / 2 * sum_{i in a} 1 / n_i)`` every round.

    Parameters: ``space``, ``T``, ``oracle`` (default ``"auto"``), ``C`` (> 0,
    default 1) and ``loglog`` (>= 0, default 4) of ``f(t) = C log t + loglog m
    log log t`` (module docstring; Combes et al., NeurIPS 2015, Section 4).

    >>> import cmab_milp as cm
    >>> ESCB(cm.Cardinality(3, 1), None, oracle="enumerate").params
    {'C': 1.0, 'loglog': 4.0, 'route': 'auto'}
    """

    name = "ESCB"


class AROQESCB(_ESCBFamily, AdaptiveEpochs):
    """AROQ-ESCB: ESCB's index asked only when some arm's epoch count doubles (module docstring).

    :class:`~.schedules.AdaptiveEpochs` with arm units and AROQ-C's doubling
    threshold ``1 + 2 |T_i(tau_i - 1)|``; never needs ``T``. Same parameters as
    :class:`ESCB`. Attributes after a run: ``epochs``, ``updates``.

    >>> import cmab_milp as cm
    >>> policy = AROQESCB(cm.Cardinality(3, 1), 100, oracle="enumerate")
    >>> policy.thresholds().tolist()
    [1, 1, 1]
    """

    name = "AROQ-ESCB"

    def thresholds(self) -> np.ndarray:
        """Per arm, the count in the current epoch that ends it: ``1 + 2 |T_i(tau_i - 1)|``."""
        return 1 + 2 * self.previous
