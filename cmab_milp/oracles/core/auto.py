"""The ``auto`` backend: each query goes to the cheapest capable exact backend.

``auto`` names no backend class. Its candidates are the registered backends
(:mod:`cmab_milp.oracles.core.registry`) that are installed, accept the space,
declare the query's kind (linear or norm) and restrictions, and declare a cost
model. For each query shape (kind, sign, which restrictions are present) it
ranks them by estimated seconds per query, once, and asks the cheapest; a
candidate that may decline (the combinatorial algorithms on cyclic s-t paths)
passes the query on to the next one with :class:`~cmab_milp.UnsupportedQuery`.
The ranking depends on the space, the query shape and how many queries of that
shape came before, never on timings, so the same queries get the same backends
(and the same answers) every run.

A cost model is ``cost(space, shape, facts) -> seconds`` (``math.inf``: cannot
answer; :mod:`~cmab_milp.oracles.core.auto_costs`). :class:`~.auto_facts.SpaceFacts`
gives it the action count, found by enumerating at most as many actions as could
still beat the cheapest sure candidate (and at most ``enumerate_cap`` /
``norm_enumerate_cap``).

Counting is planning work bounded by a share of one query (``plan_share``), so a
count that stopped at that bound (thousands of s-t paths behind slow lazy-cut
queries: GEANT's 17,023) is tried again as queries are answered, each time with
``replan_share`` times the seconds the queries have cost so far (by the
estimates, doubling between tries): a one-time enumeration is paid for once the
queries it would speed up have cost as much (ski rental). Such an enumeration,
which a fresh oracle would not make, answers only optima unique by twice the
contract's tolerance (:mod:`~cmab_milp.oracles.core.auto_unique`): ties go on
to the backend the fresh plan asks, so an answer depends on the query only.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(6, 2), "auto")
>>> oracle.argmax(np.arange(6.0), forbid_pairs=[(4, 5)]).nonzero()[0].tolist()
[3, 5]
>>> sorted(oracle.routes)
['enumerate']
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from numbers import Real

import numpy as np

from ...spaces.base import ActionSpace
from .auto_facts import QueryShape, SpaceFacts, cyclic_paths_base
from .auto_unique import unique_linear, unique_norm
from .base import Oracle, UnsupportedQuery, check_time_limit
from .queries import _NO_RESTRICTIONS, LinearQuery, NormQuery
from .registry import BACKENDS, _resolve, make_oracle

_FREE_LINEAR = QueryShape("linear")

__all__ = ["AutoOracle"]


class AutoOracle(Oracle):
    """Dispatch each query to the cheapest capable exact backend (see module docstring).

    Parameters
    ----------
    enumerate_cap:
        Largest action count for which linear queries may be enumerated.
    norm_enumerate_cap:
        Largest action count for which norm queries may be enumerated.
    time_limit:
        Seconds per query, handed to every backend it routes to that takes one
        (a query past it raises :class:`~cmab_milp.LimitReached`).
    plan_share:
        Planning (counting the actions for the enumeration's estimate) may cost at
        most this share of the cheapest sure candidate's estimated seconds per linear
        query (``0``: never enumerate to count).
    norm_plan_share:
        The same for norm queries. With shares of at most 0.5 and estimates within 2x, ``auto``'s
        first query costs at most ~2x the cheapest candidate's.
    replan_share:
        A count stopped at its work bound is tried again, with planning allowed this share of the
        estimated seconds that queries have cost on backends that never decline (the allowance
        doubling between tries): counts that never pay cost at most ``2 * replan_share`` times those
        queries. ``0``: never again.
    """

    name = "auto"

    def __init__(
        self,
        space: ActionSpace,
        enumerate_cap: int = 20_000,
        norm_enumerate_cap: int = 60_000,
        time_limit: float | None = None,
        plan_share: float = 0.25,
        norm_plan_share: float = 0.5,
        replan_share: float = 0.5,
    ):
        super().__init__(space)
        for label, cap in (("enumerate_cap", enumerate_cap), ("norm_enumerate_cap", norm_enumerate_cap)):
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 0:
                raise ValueError(f"{label} must be an integer >= 0, got {cap!r}")
        shares = (("plan_share", plan_share), ("norm_plan_share", norm_plan_share), ("replan_share", replan_share))
        for label, share in shares:
            if isinstance(share, bool) or not isinstance(share, Real) or not 0.0 <= share <= 1e6:
                raise ValueError(f"{label} must be a number in [0, 1e6], got {share!r}")
        self.norm_plan_share = float(norm_plan_share)
        self.time_limit = check_time_limit(time_limit)
        self.plan_share = float(plan_share)
        self.replan_share = float(replan_share)
        self.enumerate_cap = int(enumerate_cap)
        self.norm_enumerate_cap = int(norm_enumerate_cap)
        self.facts = SpaceFacts(space, {"linear": self.enumerate_cap, "norm": self.norm_enumerate_cap}, self.plan_share)
        #: Whether a linear query's shape records the sign of its weights (s-t paths with cycles).
        self._signed = cyclic_paths_base(space) is not None
        self.oracles: dict[str, Oracle] = {}
        self._plans: dict[QueryShape, list[str]] = {}
        self._costs: dict[QueryShape, dict[str, float]] = {}
        self._methods: dict[QueryShape, list[list]] = {}
        #: [estimated seconds queries cost on sure backends while a count stopped at its bound, the sum at
        #: which to count again, the planning seconds allowed].
        self._ledger = [0.0, math.inf, 0.0]
        #: Shapes whose plan enumerates only thanks to queries before (a fresh plan would not): there the
        #: enumeration answers only queries no exact backend could answer otherwise (:mod:`.auto_unique`).
        self._deferred: dict[QueryShape, bool] = {}
        self._enumerated_dense: np.ndarray | None = None
        self._lock = threading.RLock()
        self.routes: Counter[str] = Counter()

    # ------------------------------------------------------------ planning
    def _candidates(self, shape: QueryShape) -> list[tuple[str, object, bool]]:
        out = []
        for name, entry in BACKENDS.items():
            caps = entry.capabilities
            if name == self.name or caps.cost is None or not caps.exact or not entry.available():
                continue
            if not (caps.norm if shape.kind == "norm" else caps.linear):
                continue
            if shape.forbid_pairs and not caps.forbid_pairs:
                continue
            if not caps.accepts_space(self.space):
                continue
            out.append((name, _resolve(caps.cost), caps.declines_some(self.space)))
        return out

    def plan(self, shape: QueryShape) -> list[str]:
        """Backends for queries of ``shape``, cheapest first (estimated; cached per shape)."""
        ranked = self._plans.get(shape)
        if ranked is not None:
            return ranked
        with self._lock:  # batches plan from several threads; the facts are shared
            if shape not in self._plans:
                self._plans[shape] = self._rank(shape)
        return self._plans[shape]

    def _rank(self, shape: QueryShape) -> list[str]:
        candidates = self._candidates(shape)
        facts = self.facts
        facts.budget, facts.probe, facts.wanted, facts.undecided = math.inf, False, False, False
        facts.share = self.plan_share if shape.kind == "linear" else self.norm_plan_share
        facts.allowance = 0.0
        costs = {name: float(cost(self.space, shape, facts)) for name, cost, _ in candidates}
        if facts.wanted:  # a model needs the action count: probe only as far as could beat the sure best
            sure = [costs[name] for name, _, declines in candidates if not declines]
            facts.budget, facts.probe, facts.allowance = min(sure, default=math.inf), True, self._ledger[2]
            if self.time_limit is not None:  # planning keeps within a tenth of the query's limit
                facts.budget = min(facts.budget, 0.1 * self.time_limit / max(facts.share, 1e-12))
                facts.allowance = min(facts.allowance, 0.1 * self.time_limit)
            costs = {name: float(cost(self.space, shape, facts)) for name, cost, _ in candidates}
            if facts.undecided and self.replan_share > 0:  # stopped at its bound: again at twice the work
                self._ledger[1] = min(self._ledger[1], 2.0 * facts.work() / self.replan_share)
            facts.probe, facts.allowance = False, 0.0
        self._deferred[shape] = math.isfinite(costs.get("enumerate", math.inf)) and not self._fresh_enumerates(
            shape, candidates
        )
        order = {name: k for k, (name, _, _) in enumerate(candidates)}
        self._costs[shape] = costs
        return sorted((n for n, c in costs.items() if math.isfinite(c)), key=lambda n: (costs[n], order[n]))

    def _fresh_enumerates(self, shape: QueryShape, candidates: list) -> bool:
        """Whether a fresh oracle's plan for ``shape`` (no queries before, no allowance) would enumerate too."""
        facts = self.facts
        if facts.needed_work is None:
            return False
        budget = min(self._first_costs(shape, candidates).values(), default=math.inf)
        if self.time_limit is not None:
            budget = min(budget, 0.1 * self.time_limit / max(facts.share, 1e-12))
        if not math.isfinite(budget) or facts.needed_work > facts.share * budget:
            return False
        facts.budget = budget  # the per-query comparison enumeration's estimate makes with that budget
        try:
            cost = dict((name, c) for name, c, _ in candidates)["enumerate"]
            return math.isfinite(cost(self.space, shape, facts))
        finally:
            facts.budget = math.inf

    def _first_costs(self, shape: QueryShape, candidates: list) -> dict[str, float]:
        """The estimates of the sure candidates other than enumeration (those that never decline)."""
        sure = [(name, cost) for name, cost, declines in candidates if not declines and name != "enumerate"]
        return {name: float(cost(self.space, shape, self.facts)) for name, cost in sure}

    def _replan(self) -> None:
        """Plan every shape again (when next asked) with planning allowed ``replan_share`` x what queries cost."""
        with self._lock:
            ledger = self._ledger
            if ledger[0] < ledger[1]:  # another thread re-planned first
                return
            ledger[1], ledger[2] = math.inf, self.replan_share * ledger[0]
            self._plans, self._methods = {}, {}

    def estimates(self, shape: QueryShape) -> dict[str, float]:
        """Estimated seconds per query of ``shape`` for each candidate (``inf``: cannot or too costly)."""
        self.plan(shape)
        return dict(self._costs[shape])

    def _oracle(self, name: str) -> Oracle:
        oracle = self.oracles.get(name)
        if oracle is not None:
            return oracle
        with self._lock:
            if name in self.oracles:
                return self.oracles[name]
            options = {}
            if self.time_limit is not None and BACKENDS[name].capabilities.time_limit:
                options["time_limit"] = self.time_limit
            if name == "enumerate":
                cap = len(self.facts.actions) if self.facts.actions is not None else self.norm_enumerate_cap
                oracle = make_oracle(self.space, name, max_actions=cap, **options)
            else:
                oracle = make_oracle(self.space, name, **options)
            self.oracles[name] = oracle
        return oracle

    # ------------------------------------------------------------- queries
    # The per-query path (CUCB asks ~10^5 linear queries a run): one dict look-up of the
    # shape's routes (backend name, bound method), then the first route that answers.
    def _routes_for(self, shape: QueryShape) -> list[list]:
        """``[name, bound method or None, seconds to enter in the ledger]`` per planned backend; oracles are
        built when first asked. The seconds are the estimate of a sure backend while counting may be tried
        again, else 0."""
        routes = self._methods.get(shape)
        if routes is None:
            plan = self.plan(shape)
            recount = math.isfinite(self._ledger[1])
            sure = {name: not BACKENDS[name].capabilities.declines_some(self.space) for name in plan}
            costs = self._costs[shape]
            routes = [[name, None, costs[name] if recount and sure[name] else 0.0] for name in plan]
            self._methods[shape] = routes
        return routes

    def _dispatch(self, query: LinearQuery | NormQuery, shape: QueryShape) -> np.ndarray | None:
        ledger = self._ledger
        if ledger[0] >= ledger[1]:  # the queries so far paid for counting again: this query plans first
            self._replan()
        declined = []
        for route in self._methods.get(shape) or self._routes_for(shape):
            name, method, seconds = route
            if method is None:
                method = route[1] = self._method(name, shape)
            try:
                answer = method(query)
            except UnsupportedQuery as exc:
                declined.append(f"{name}: {exc}")
                continue
            self.routes[name] += 1
            if seconds:  # a count stopped at its bound: tried again once the queries have cost enough
                ledger[0] += seconds
            return answer
        raise UnsupportedQuery("no registered exact backend answers this query" + "".join(f"; {d}" for d in declined))

    def _method(self, name: str, shape: QueryShape):
        """The bound method answering ``shape``'s queries on backend ``name`` (deferring on enumeration)."""
        oracle = self._oracle(name)
        if name != "enumerate" or not self._deferred.get(shape):
            return getattr(oracle, "_linear" if shape.kind == "linear" else "_norm")
        actions = oracle.actions
        if self._enumerated_dense is None or len(self._enumerated_dense) != len(actions):
            self._enumerated_dense = actions.astype(np.float64)
        dense = self._enumerated_dense
        if shape.kind == "linear":
            return lambda query: unique_linear(actions, dense, query)
        return lambda query: unique_norm(actions, dense, oracle.quadratic_forms(query.M), query)

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        r = query.restrictions
        if self._signed:  # s-t paths: longest-path-like queries go where they are fast
            shape = QueryShape.of(query, True)
        else:
            shape = _FREE_LINEAR if r is _NO_RESTRICTIONS else QueryShape.of(query)
        return self._dispatch(query, shape)

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        return self._dispatch(query, QueryShape.of(query))

    def close(self) -> None:
        for oracle in self.oracles.values():
            oracle.close()
        super().close()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        del state["_lock"]  # locks do not pickle; a copy gets its own
        state["_methods"] = {}  # bound methods: rebuilt on first use
        state["_enumerated_dense"] = None  # a cache
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._lock = threading.RLock()
