"""The ``auto`` backend: each query goes to the cheapest capable exact backend.

``auto`` names no backend class. Its candidates are the registered backends
(:mod:`cmab_milp.oracles.core.registry`) that are installed, accept the space,
declare the query's kind (linear or norm) and restrictions, and declare a cost
model. For each query shape (kind, sign, which restrictions are present) it
ranks them by estimated seconds per query, once, and asks the cheapest; a
candidate that may decline (the combinatorial algorithms on cyclic s-t paths)
passes the query on to the next one with :class:`~cmab_milp.UnsupportedQuery`.
The ranking depends on the space and the query shape only, never on timings,
so the same query gets the same backend (and the same answer) every run.

A cost model is ``cost(space, shape, facts) -> seconds`` (``math.inf``: cannot
answer; :mod:`~cmab_milp.oracles.core.auto_costs`). :class:`~.auto_facts.SpaceFacts`
gives it the action count, found by a search the side rules prune
(:mod:`cmab_milp.spaces.tally`), stopped past as many actions as could still beat
the cheapest sure candidate (and at most ``enumerate_cap`` / ``norm_enumerate_cap``); a lower
bound on the count past that limit (:mod:`cmab_milp.spaces.count_bounds`) settles it without the search.
:meth:`AutoOracle.explain` says what was counted and how each query shape was ranked.

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
from typing import Any

import numpy as np

from ...spaces.base import ActionSpace
from .auto_facts import QueryShape, SpaceFacts, cyclic_paths_base
from .base import Oracle, UnsupportedQuery, check_time_limit
from .capabilities import SCIP_TIME_LIMIT, Capabilities
from .queries import _NO_RESTRICTIONS, LinearQuery, NormQuery
from .registry import BACKENDS, _resolve, make_oracle

_FREE_LINEAR = QueryShape("linear")

#: The options ``auto`` gives the backends it builds, by backend name (``backend_options`` adds to them):
#: SCIP without the orientation columns of undirected s-t paths, and its strong branching stopped after 4
#: candidates without improvement (SCIP's default: 9). On hop-limited longest paths of the 10x10 grid, the
#: queries ``auto`` sends to SCIP, the first took the median CPU time from 1.6-1.9x Gurobi's to 0.95-1.2x,
#: the second to 0.8-0.95x (``docs/performance.md``, "Graphs").
AUTO_BACKEND_OPTIONS: dict[str, dict[str, object]] = {
    "scip": {"oriented": False, "params": {"branching/relpscost/maxlookahead": 4}}
}

__all__ = ["AUTO_BACKEND_OPTIONS", "AutoOracle"]


def _describe(shape: QueryShape) -> str:
    """``"linear queries with exclude"``: a query shape in words."""
    kind = "linear queries" if shape.kind == "linear" else f"norm queries (sign {shape.sign:+d})"
    parts = [name for name in ("include", "exclude", "forbid_pairs") if getattr(shape, name)]
    if shape.positive:
        parts.append("mostly positive weights")
    return kind + (" with " + ", ".join(parts) if parts else "")


def _merged_options(given: dict[str, dict[str, object]] | None) -> dict[str, dict[str, object]]:
    """:data:`AUTO_BACKEND_OPTIONS` updated by ``given`` (backend name -> options), checked.

    >>> sorted(_merged_options({"scip": {"sepa_freq": 0}})["scip"])
    ['oriented', 'params', 'sepa_freq']
    """
    out = {name: dict(options) for name, options in AUTO_BACKEND_OPTIONS.items()}
    if given is None:
        return out
    if not isinstance(given, dict):
        raise ValueError(f"backend_options must be a dict of backend name -> options, got {given!r}")
    for name, options in given.items():
        if not isinstance(name, str) or not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise ValueError(f"backend_options must map a backend name to a dict of options, got {name!r}: {options!r}")
        out.setdefault(name, {}).update(options)
    return out


class AutoOracle(Oracle):
    """Dispatch each query to the cheapest capable exact backend (see module docstring).

    Parameters
    ----------
    enumerate_cap:
        Largest action count for which linear queries may be enumerated.
    norm_enumerate_cap:
        Largest action count for which norm queries may be enumerated (default 150,000: their prefix sums
        answer ``Cardinality(20, 7)``'s 137,980 actions in about 7 ms, a HiGHS norm query takes 30 ms or more;
        ``bench/enumerate_norm.py``).
    time_limit:
        Seconds per query, handed to every backend it routes to that takes one
        (a query past it raises :class:`~cmab_milp.oracles.core.base.LimitReached`).
    plan_share:
        Planning (counting the actions for the enumeration's estimate) may cost at
        most this share of the cheapest sure candidate's estimated seconds for
        ``plan_queries`` linear queries (``0``: never count).
    norm_plan_share:
        The same for norm queries.
    plan_queries:
        The queries planning is paid for by (default 200: a learning run asks one a step).
        With a share of 0.25 and estimates within 2x, ``auto``'s first 200 queries cost at
        most ~1.5x the cheapest candidate's; a single first query may cost more.
    count_visits:
        Partial actions the counting search may visit per action that could still pay for an
        enumeration (default 64: s-t paths visit about 14 per path, GEANT's 17,023 paths 238,822 in
        all; most other families about one), within the ``plan_share`` bound above.
    backend_options:
        Options of the backends it builds, by name (``{"scip": {"sepa_freq": 0}}``), on top of
        :data:`AUTO_BACKEND_OPTIONS` (an entry given here replaces that option there).
    """

    # ---- declaration (read by the registry and the kits)
    #: Every space (it picks among the backends that accept it); it may hand its time limit to the
    #: scip backend, so it takes SCIP's range of ``time_limit``. No cost: it never routes to itself.
    CAPABILITIES = Capabilities(
        time_limit=True,
        spaces="every space (it picks among the backends that accept it)",
        ranges=(SCIP_TIME_LIMIT,),
    )
    DESCRIPTION = "fastest exact method per query"

    name = "auto"

    def __init__(
        self,
        space: ActionSpace,
        enumerate_cap: int = 20_000,
        norm_enumerate_cap: int = 150_000,
        time_limit: float | None = None,
        plan_share: float = 0.25,
        norm_plan_share: float = 0.5,
        plan_queries: int = 200,
        count_visits: int = 64,
        backend_options: dict[str, dict[str, object]] | None = None,
    ):
        super().__init__(space)
        self.backend_options = _merged_options(backend_options)
        for label, cap in (("enumerate_cap", enumerate_cap), ("norm_enumerate_cap", norm_enumerate_cap)):
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 0:
                raise ValueError(f"{label} must be an integer >= 0, got {cap!r}")
        for label, value in (("plan_queries", plan_queries), ("count_visits", count_visits)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{label} must be an integer >= 1, got {value!r}")
        for label, share in (("plan_share", plan_share), ("norm_plan_share", norm_plan_share)):
            if isinstance(share, bool) or not isinstance(share, Real) or not 0.0 <= share <= 1e6:
                raise ValueError(f"{label} must be a number in [0, 1e6], got {share!r}")
        self.norm_plan_share = float(norm_plan_share)
        self.time_limit = check_time_limit(time_limit)
        self.plan_share = float(plan_share)
        self.enumerate_cap = int(enumerate_cap)
        self.norm_enumerate_cap = int(norm_enumerate_cap)
        self.plan_queries = int(plan_queries)
        caps = {"linear": self.enumerate_cap, "norm": self.norm_enumerate_cap}
        self.count_visits = int(count_visits)
        self.facts = SpaceFacts(space, caps, self.plan_share, self.plan_queries, self.count_visits)
        #: Whether a linear query's shape records the sign of its weights (s-t paths with cycles).
        self._signed = cyclic_paths_base(space) is not None
        self.oracles: dict[str, Oracle] = {}
        self._plans: dict[QueryShape, list[str]] = {}
        self._costs: dict[QueryShape, dict[str, float]] = {}
        self._methods: dict[QueryShape, list[list]] = {}
        self._ruled_methods: dict[QueryShape, list[list]] = {}
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
        """Backends for queries of ``shape``, cheapest first (estimated; cached per shape; why: :meth:`explain`)."""
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
        facts.budget, facts.probe, facts.wanted = math.inf, False, False
        facts.share = self.plan_share if shape.kind == "linear" else self.norm_plan_share
        costs = {name: float(cost(self.space, shape, facts)) for name, cost, _ in candidates}
        if facts.wanted:  # a model needs the action count: probe only as far as could beat the sure best
            sure = [costs[name] for name, _, declines in candidates if not declines]
            facts.budget, facts.probe = min(sure, default=math.inf), True
            if self.time_limit is not None:  # planning keeps within a tenth of the query's limit
                facts.budget = min(facts.budget, 0.1 * self.time_limit / max(facts.share, 1e-12))
            costs = {name: float(cost(self.space, shape, facts)) for name, cost, _ in candidates}
            facts.probe = False
        order = {name: k for k, (name, _, _) in enumerate(candidates)}
        self._costs[shape] = costs
        return sorted((n for n, c in costs.items() if math.isfinite(c)), key=lambda n: (costs[n], order[n]))

    def estimates(self, shape: QueryShape) -> dict[str, float]:
        """Estimated seconds per query of ``shape`` for each candidate (``inf``: cannot or too costly)."""
        self.plan(shape)
        return dict(self._costs[shape])

    def explain(self) -> str:
        """Why ``auto`` routes as it does: the actions counted, and per planned query shape the ranking.

        >>> import cmab_milp as cm
        >>> space = cm.Cardinality(6, 2).with_budget([1, 1, 1, 2, 2, 2], 3)
        >>> oracle = cm.make_oracle(space, "auto")
        >>> print(oracle.explain())
        nothing planned yet (plans are made at the first query of each shape)
        >>> _ = oracle.argmax([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
        >>> print(oracle.explain().splitlines()[0])
        actions: 19, counted with the rules pruning the search (19 partial actions visited)
        """
        if not self._plans:
            return "nothing planned yet (plans are made at the first query of each shape)"
        lines = [self._counted()]
        for shape, ranked in self._plans.items():
            costs = self._costs[shape]
            order = " < ".join(f"{name} {1e3 * costs[name]:.3g} ms" for name in ranked) or "no candidate"
            refused = sorted(n for n, c in costs.items() if not math.isfinite(c))
            tail = f"; not candidates here: {', '.join(refused)}" if refused else ""
            lines.append(f"{_describe(shape)}: {order} (estimated per query){tail}")
        return "\n".join(lines)

    def _counted(self) -> str:
        facts = self.facts
        if facts.actions is not None:
            seen = facts.tallied.visits if facts.tallied is not None and facts.tallied.status == "exact" else None
            how = (
                f"counted with the rules pruning the search ({seen:,} partial actions visited)"
                if seen is not None
                else "counted by filtering the base family's actions"
            )
            return f"actions: {len(facts.actions):,}, {how}"
        if facts._more_than >= 0:
            return (
                f"actions: more than {facts._more_than:,}, the most that enumeration could answer faster than "
                "the cheapest sure backend (not enumerated)"
            )
        if facts._visits_over >= 0:
            return f"actions: not counted; the counting search stopped after {facts._visits_over:,} partial actions"
        return "actions: not counted (no candidate's estimate needed the count, or enumeration could not win)"

    def _oracle(self, name: str) -> Oracle:
        oracle = self.oracles.get(name)
        if oracle is not None:
            return oracle
        with self._lock:
            if name in self.oracles:
                return self.oracles[name]
            options = dict(self.backend_options.get(name, {}))
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
        """``[name, bound method or None]`` per planned backend; oracles are built when first asked."""
        routes = self._methods.get(shape)
        if routes is None:
            routes = [[name, None] for name in self.plan(shape)]
            self._methods[shape] = routes
        return routes

    def _dispatch(
        self, query: LinearQuery | NormQuery, shape: QueryShape, count: bool = True, method_name: str | None = None
    ) -> Any:
        """The first planned backend's answer (``method_name``: the method asked, default ``_linear`` / ``_norm``)."""
        declined = []
        if method_name is None:
            routes = self._methods.get(shape) or self._routes_for(shape)
        else:  # the tie rule's certified answers (``_linear_ruled``): routes of their own
            routes = self._ruled_methods.get(shape)
            if routes is None:
                routes = self._ruled_methods[shape] = [[name, None] for name in self.plan(shape)]
        for route in routes:
            name, method = route
            if method is None:
                wanted = method_name or ("_linear" if shape.kind == "linear" else "_norm")
                method = route[1] = getattr(self._oracle(name), wanted)
            try:
                answer = method(query)
            except UnsupportedQuery as exc:
                declined.append(f"{name}: {exc}")
                continue
            if count:
                self.routes[name] += 1
            return answer
        raise UnsupportedQuery("no registered exact backend answers this query" + "".join(f"; {d}" for d in declined))

    def _linear_shape(self, query: LinearQuery) -> QueryShape:
        if self._signed:  # s-t paths: longest-path-like queries go where they are fast
            return QueryShape.of(query, True)
        return _FREE_LINEAR if query.restrictions is _NO_RESTRICTIONS else QueryShape.of(query)

    def _linear(self, query: LinearQuery, count: bool = True) -> np.ndarray | None:
        return self._dispatch(query, self._linear_shape(query), count)

    def _linear_ruled(self, query: LinearQuery) -> tuple[np.ndarray | None, bool]:
        """The route's ``_linear_ruled``: its answer and whether it proved it the tie rule's action."""
        return self._dispatch(query, self._linear_shape(query), True, "_linear_ruled")

    def uncounted_linear(self, query: LinearQuery) -> np.ndarray | None:
        """:meth:`_linear` without counting its route (the tie rule's restricted solves, ``oracles/core/ties.py``)."""
        return self._linear(query, False)

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
        state["_ruled_methods"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._lock = threading.RLock()
        self._ruled_methods = {}  # also for copies pickled before it existed
