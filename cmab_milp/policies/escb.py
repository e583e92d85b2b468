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

How the index is maximised (constant ``route``):

* ``"auto"`` (default): exact and fast. On a plain :class:`~cmab_milp.Cardinality`
  space, the ranking of :mod:`cmab_milp.policies.escb_cardinality` (every
  subset above a tangent bound of the index, listed depth first; with at most
  ``SUBSET_TABLE_UP_TO`` subsets, unrestricted queries on a table of them all; above, on the subsets
  the last ranking listed near the top, :class:`~.escb_cardinality.ListedSubsets`); on a space
  of at most :data:`TABLE_UP_TO` actions (enumerated once, at the first
  query), the index of every action at once; elsewhere the branch and bound
  of :mod:`cmab_milp.policies.escb_search` over linear queries (any space, any
  backend), which first certifies last round's answer with one linear query.
  Each is entered in the ledger as **one query per maximisation** (with its
  time), as the norm oracle would be, so ledgers do not depend on the last
  answer (a saved learner continues with the same counts); the search's own
  linear queries, nodes and certified rounds are in ``policy.index.search``.
  Past ``max_nodes`` nodes (default 5000) a round asks ``oracle.argmax_norm``
  instead (counted as its own query).
* ``"search"``: the branch and bound on every space (what ``"auto"`` uses on
  large spaces; chosen explicitly to compare or to test it on small ones).
* ``"oracle"``: ``oracle.argmax_norm`` every round (the exact norm oracle).
* ``"table"``: on a space whose action table has at most
  :data:`ENUMERATE_UP_TO` entries, the index of every action at once;
  elsewhere as ``"oracle"``.

All index values that decide are elementwise products summed (no BLAS), so
decisions are the same on every machine.

Why not linear queries alone without branching: the index is ``y + h(s)`` with
``y = mu @ a``, ``s = (1 / n) @ a`` and ``h`` concave, and its maximiser can lie
strictly inside the convex hull of the points ``(s(a), y(a))`` (three single
arms with ``(s, y) = (0.01, 1), (2, 0), (1, 0.4)`` and ``f' = 0.8``: the third
wins and no linear objective selects it); the search's splits isolate it.

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
>>> space, env = cm.Cardinality(6, 2), cm.UniformNoise([0.1, 0.2, 0.3, 0.4, 0.8, 0.9], seed=0)
>>> escb = cm.simulate(cm.ESCB(space, 2000, oracle="enumerate"), env, 2000, seed=1)
>>> rare = cm.simulate(cm.AROQESCB(space, 2000, oracle="enumerate"), env, 2000, seed=1)
>>> bool(escb.regret[-1] < 0.05 * 2000), bool(rare.queries[-1] < 100)
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from .. import portable
from ..described import ParameterError, check_integer
from ..oracles import Oracle
from ..spaces.base import ActionSpace
from ..spaces.sets import Cardinality
from .base import IndexPolicy, Stretch, check_nonnegative, check_positive
from .escb_cardinality import SUBSET_TABLE_UP_TO, ListedSubsets, SubsetTable, maximise_on_cardinality
from .escb_search import maximise_index
from .family import KeywordFamily
from .linear import LinearIndex
from .schedules import AdaptiveEpochs, EveryRound

__all__ = ["AROQESCB", "ENUMERATE_UP_TO", "EPOCH_RULES", "ESCB", "ROUTES", "TABLE_UP_TO", "ESCBIndex", "EpochESCB"]

#: Route ``"table"``: the index is evaluated on every action at once while the action table
#: (actions x d, float64) has at most this many entries (48 MB; d = 20 with m <= 8 fits).
ENUMERATE_UP_TO = 6_000_000
#: Route ``"auto"`` off plain Cardinality spaces: spaces with at most this many actions are evaluated on the table.
TABLE_UP_TO = 20_000
#: How ESCB's index is maximised (module docstring): ``"auto"`` (ranking, table or search, by space),
#: ``"search"`` (the branch and bound over linear queries on every space), ``"oracle"`` (``oracle.argmax_norm``)
#: or ``"table"`` (every action of a small space).
ROUTES = ("auto", "search", "oracle", "table")


def check_route(route: Any, max_nodes: Any) -> dict[str, Any]:
    """``route`` (one of :data:`ROUTES`) and ``max_nodes`` (an int >= 0), else a ``ParameterError`` naming it."""
    if not isinstance(route, str) or route not in ROUTES:
        raise ParameterError("route", f"route must be one of {', '.join(map(repr, ROUTES))}, got {route!r}")
    message = f"max_nodes must be an integer >= 0 (nodes of the search per round), got {max_nodes!r}"
    return {"route": route, "max_nodes": check_integer("max_nodes", max_nodes, 0, message)}


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
        self,
        d: int,
        m: int,
        C: float = 1.0,
        loglog: float = 4.0,
        table: ActionSpace | None = None,
        table_cap: int = 0,
        search: bool = False,
        max_nodes: int = 5000,
        subsets: tuple[int, bool] | None = None,
        subset_table_cap: int = SUBSET_TABLE_UP_TO,
    ):
        self.m = int(m)
        self.loglog = check_nonnegative("loglog", loglog)
        #: A space whose index is evaluated on every action at once when it has at most ``table_cap`` actions.
        self.table_space = table
        self.table_cap = int(table_cap)
        #: Whether UCB queries go to the exact search over linear queries (:mod:`.escb_search`).
        self.use_search = bool(search)
        self.max_nodes = int(max_nodes)
        #: ``(m, exact)`` of a plain Cardinality space searched by ranking subsets (:mod:`.escb_cardinality`).
        self.subsets = subsets
        #: Unrestricted queries on such a space with at most this many subsets use a table of every subset.
        self.subset_table = (
            SubsetTable(d, *subsets) if subsets and SubsetTable.size(d, *subsets) <= subset_table_cap else None
        )
        super().__init__(d, C=C)

    def reset(self) -> None:
        super().reset()
        # last answer per (sign, include, exclude): the incumbent hint of the next such query
        self._answers: dict[tuple, np.ndarray] = {}
        self._table: np.ndarray | None = None  # the small space's actions (built at the first query)
        self._dense: np.ndarray | None = None
        self._too_big = False  # the space proved to have more than table_cap actions
        #: Totals of the search route: linear queries, nodes, maximisations, certified at once, norm fallbacks.
        self.search = {"queries": 0, "nodes": 0, "maximisations": 0, "certified": 0, "fallbacks": 0}
        self._slope: float | None = None  # the ranking's last dual slope (its next starting point)
        self._listed = ListedSubsets(self.d, *self.subsets) if self.subsets and self.subset_table is None else None

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
        values = portable.selected_sums(acts, self.means) + sign * self.scale(t) * np.sqrt(
            portable.selected_sums(acts, self.inverse_counts())
        )
        values[acts[:, ~self.observed].any(axis=1)] = sign * np.inf
        return values

    def ask(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """Answer ``queries`` as one round, each norm query hinted with the last answer to the same restrictions.

        Hints never change the optimal value; they are not saved with the learner.
        """
        if self.table_space is not None and all(_sortable(q) for q in queries) and self._has_table():
            return self._ask_table(oracle, queries)
        if self.use_search and all(_sortable(q) for q in queries):
            return [self._search(oracle, q) for q in queries]
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

    def _search(self, oracle: Oracle, query: Mapping[str, Any]) -> np.ndarray | None:
        """One UCB query answered by :func:`.maximise_index`, from the last answer to the same restrictions."""
        key = _key(query)
        mu, w = np.asarray(query["mu"], float), np.diag(query["M"])  # read only below
        if self.subsets is not None and not query.get("forbid_pairs"):
            start = time.perf_counter()
            unrestricted = not query.get("include") and not query.get("exclude")
            if self.subset_table is not None and unrestricted:
                action = self.subset_table.best(mu, w, float(query["f"]), self._answers.get(key))
            elif self._listed is not None and unrestricted:
                action, self._slope = self._listed.best(mu, w, float(query["f"]), self._answers.get(key), self._slope)
            else:
                action, self._slope = maximise_on_cardinality(
                    mu,
                    w,
                    float(query["f"]),
                    *self.subsets,
                    include=tuple(query.get("include", ())),
                    exclude=tuple(query.get("exclude", ())),
                    incumbent=self._answers.get(key),
                    c=self._slope,
                )
            oracle.ledger.record(1, time.perf_counter() - start)  # the ranking answers as the oracle would, once
            self.search["maximisations"] += 1
            if action is not None:
                self._answers[key] = action
                return action
        start = time.perf_counter()
        action, stats = maximise_index(
            oracle,
            mu,
            w,
            float(query["f"]),
            include=tuple(query.get("include", ())),
            exclude=tuple(query.get("exclude", ())),
            forbid_pairs=tuple(query.get("forbid_pairs", ())),
            incumbent=self._answers.get(key),
            max_nodes=self.max_nodes,
        )
        for name in ("queries", "nodes"):
            self.search[name] += getattr(stats, name)
        self.search["maximisations"] += 1
        self.search["certified"] += int(stats.certified)
        if stats.nodes > self.max_nodes:  # too many nodes: the exact norm oracle decides this round (its own entry)
            self.search["fallbacks"] += 1
            args = {k: v for k, v in query.items() if k != "kind"}
            action = oracle.argmax_norm(**args)
        else:
            oracle.ledger.record(1, time.perf_counter() - start)  # one maximisation, one query, as the norm oracle
        if action is not None:
            self._answers[key] = action
        return action

    def _has_table(self) -> bool:
        """Whether the space's actions are listed (enumerated once, at most ``table_cap`` of them)."""
        if self._table is None and not self._too_big:
            try:
                self._table = self.table_space.enumerate(max_actions=self.table_cap)  # type: ignore[union-attr]
                self._dense = self._table.astype(float)
            except ValueError:
                self._too_big = True
        return self._table is not None

    def _ask_table(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """The queries answered on every action of the small space at once (one ledger query each).

        Sums are elementwise products summed per row (no BLAS: the same bits on every kernel).
        """
        start = time.perf_counter()
        table, dense = self._table, self._dense
        answers = []
        for q in queries:
            w = np.diag(q["M"])
            values = (dense * q["mu"]).sum(axis=1) + q["f"] * np.sqrt(np.maximum((dense * w).sum(axis=1), 0.0))
            allowed = np.ones(len(table), bool)  # type: ignore[arg-type]
            include, exclude = list(q.get("include", ())), list(q.get("exclude", ()))
            if include:
                allowed &= table[:, include].all(axis=1)  # type: ignore[index]
            if exclude:
                allowed &= ~table[:, exclude].any(axis=1)  # type: ignore[index]
            for i, j in q.get("forbid_pairs", ()):
                allowed &= ~(table[:, i] & table[:, j])  # type: ignore[index]
            values[~allowed] = -np.inf
            k = int(np.argmax(values))
            answers.append(None if values[k] == -np.inf else table[k].copy())  # type: ignore[index]
        oracle.ledger.record(len(queries), time.perf_counter() - start)
        return answers


def _sortable(query: Mapping[str, Any]) -> bool:
    """A norm query of sign +1 (a UCB query)."""
    return query.get("kind") == "norm" and query.get("sign") == 1


def _key(query: Mapping[str, Any]) -> tuple | None:
    if query.get("kind") != "norm":
        return None
    return (int(query["sign"]), tuple(query.get("include", ())), tuple(query.get("exclude", ())))


class _ESCBFamily(KeywordFamily):
    """Constructor and index shared by ESCB, AROQ-ESCB, Epoch-ESCB and AESCB (mixed in before a schedule).

    A member's own keywords (:class:`~.family.KeywordFamily`): the route's, unless it declares others (AESCB).
    """

    d: int
    m: int
    params: dict[str, Any]
    _own_defaults: ClassVar[dict[str, Any]] = {"route": "auto", "max_nodes": 5000}

    def __init__(
        self,
        space: ActionSpace,
        T: int | None,
        *,
        oracle: str | Oracle = "auto",
        C: float = 1.0,
        loglog: float = 4.0,
        **own: Any,
    ):
        own = self._check_own(self._own_keywords(own))  # a member's own checks first, the route's last
        C, loglog = check_positive("C", C), check_nonnegative("loglog", loglog)
        if "route" in own:
            own.update(check_route(own["route"], own["max_nodes"]))
        super().__init__(space, T, oracle=oracle, C=C, loglog=loglog, **own)  # type: ignore[call-arg]

    def index_options(self) -> dict[str, Any]:
        """The :class:`ESCBIndex` keywords for this policy's space and route (module docstring)."""
        space = self.space  # type: ignore[attr-defined]
        route = self.params.get("route", "oracle")
        subsets = (space.m, space.exact) if type(space) is Cardinality and route == "auto" else None
        table, cap = None, 0
        if route == "table":
            table, cap = space, ENUMERATE_UP_TO // max(space.d, 1)
        elif route == "auto" and subsets is None:
            table, cap = space, TABLE_UP_TO
        return {
            "C": self.params["C"],
            "loglog": self.params["loglog"],
            "table": table,
            "table_cap": cap,
            "search": route in ("auto", "search"),
            "max_nodes": self.params.get("max_nodes", 5000),
            "subsets": subsets,
        }

    def make_index(self) -> ESCBIndex:
        return ESCBIndex(self.d, self.m, **self.index_options())


class ESCB(_ESCBFamily, EveryRound):
    """ESCB-1: the exact argmax of ``mu_hat @ a + sqrt(f(t) / 2 * sum_{i in a} 1 / n_i)`` every round.

    Parameters: ``space``, ``T``, ``oracle`` (default ``"auto"``), ``C`` (> 0,
    default 1) and ``loglog`` (>= 0, default 4) of ``f(t) = C log t + loglog m
    log log t`` (module docstring; Combes et al., NeurIPS 2015, Section 4),
    ``route`` (``"auto"``, ``"oracle"``, ``"table"``) and ``max_nodes`` (the
    search's nodes per round before the norm oracle decides; default 5000).

    >>> import cmab_milp as cm
    >>> ESCB(cm.Cardinality(3, 1), None, oracle="enumerate").params
    {'C': 1.0, 'loglog': 4.0, 'route': 'auto', 'max_nodes': 5000}
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


#: Epoch-ESCB's epoch rules: ``"counts"`` (the held action's least-played arm's count grows by ``growth``)
#: or ``"time"`` (the round number grows by ``growth``).
EPOCH_RULES = ("counts", "time")


class EpochESCB(_ESCBFamily, IndexPolicy):
    """Epoch-ESCB (Combes et al., NeurIPS 2015): ESCB's argmax recomputed only at epoch starts.

    Epoch ``k`` starts at round ``t_k`` with one maximisation of ESCB-1's index,
    and its action ``x_k`` is held until the next start (``growth`` > 1, default 2):

    * ``epochs="counts"`` (default): ``t_{k+1} = t_k + max(1, ceil((growth - 1)
      n_k))`` with ``n_k`` the smallest count among the arms of ``x_k`` at
      ``t_k``: the epoch ends when that count has grown by ``growth`` (doubled),
      so an exploratory action (few plays) is held briefly and a settled leader
      for ever longer epochs: ``O(log T)`` maximisations while the leader is
      stable. No regret guarantee is claimed (the paper's heuristic).
    * ``epochs="time"``: ``t_{k+1} = max(t_k + 1, ceil(growth t_k))``: exactly
      ``O(log T / log growth)`` maximisations, but an epoch may hold an
      exploratory action for half the run (linear regret on close gaps).

    The paper's text was not reachable from this machine; both readings of
    "the index recomputed only at epoch starts" are offered and the tables say
    which ran. While some arm is unobserved the epochs last one round (arms are
    explored first, as for CUCB). Other parameters as :class:`ESCB`; never
    needs ``T``. Attributes: ``updates`` (maximisations), ``next_start``.

    >>> import cmab_milp as cm
    >>> env = cm.BernoulliArms([0.2, 0.5, 0.9], seed=0)
    >>> policy = EpochESCB(cm.Cardinality(3, 1), 1000, oracle="enumerate", epochs="time")
    >>> _ = cm.simulate(policy, env, 1000)
    >>> policy.updates <= 3 + math.ceil(math.log2(1000))
    True
    """

    name = "Epoch-ESCB"
    _state_fields = ("action", "next_start", "updates")

    _own_defaults: ClassVar[dict[str, Any]] = {**_ESCBFamily._own_defaults, "growth": 2.0, "epochs": "counts"}

    def _check_own(self, own: dict[str, Any]) -> dict[str, Any]:
        growth = check_positive("growth", own["growth"])
        if not growth > 1.0:
            raise ParameterError("growth", f"growth must be a number > 1 (the epoch length ratio), got {growth!r}")
        if own["epochs"] not in EPOCH_RULES:
            raise ParameterError(
                "epochs", f"epochs must be one of {', '.join(map(repr, EPOCH_RULES))}, got {own['epochs']!r}"
            )
        return {**own, "growth": growth}

    def reset(self) -> None:
        super().reset()
        self.action: np.ndarray | None = None
        self.next_start = 1
        self.updates = 0

    def _plan(self) -> Stretch:
        if self.action is None or self.t >= self.next_start:
            action = self.best_upper(self.t)
            if action is None:
                raise RuntimeError(f"the oracle found no feasible action in {self.space!r}")
            self.action = action
            self.updates += 1
            self.next_start = self.t + self.epoch_length(action)
        left = min(self.next_start - self.t, self.horizon - self.t + 1)
        return Stretch(self.action[None, :], max(1, left))

    def epoch_length(self, action: np.ndarray) -> int:
        """Rounds of the epoch starting now with ``action`` (class docstring; 1 while some arm is unobserved)."""
        growth = self.params["growth"]
        if self._unseen(()).any():
            return 1
        if self.params["epochs"] == "time":
            return max(1, math.ceil(growth * self.t) - self.t)
        counts = self.index.counts[action]
        least = int(counts.min()) if len(counts) else 1
        return max(1, math.ceil((growth - 1.0) * least))

    def _advance(self, stretch: Stretch, rounds: int) -> None:
        pass
