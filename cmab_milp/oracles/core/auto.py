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
answer). :class:`SpaceFacts` gives it the action count, found by enumerating at
most as many actions as could still beat the cheapest sure candidate (and at
most ``enumerate_cap`` / ``norm_enumerate_cap``). The estimates below were
fitted on this machine's bench (``bench/auto_dispatch.py``); they only need to
order backends whose costs differ by more than 2x.

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
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ...spaces import ExplicitActions, Matchings
from ...spaces.base import ActionSpace
from .base import _NO_RESTRICTIONS, LinearQuery, NormQuery, Oracle, UnsupportedQuery, check_time_limit
from .registry import BACKENDS, _resolve, make_oracle

__all__ = [
    "AutoOracle",
    "QueryShape",
    "SpaceFacts",
    "combinatorial_cost",
    "enumerate_cost",
    "highs_cost",
    "ortools_cost",
    "scip_cost",
]


@dataclass(frozen=True)
class QueryShape:
    """What a cost model may know of a query: its kind, sign and which restrictions it has."""

    kind: str  # "linear" or "norm"
    sign: int = 1
    include: bool = False
    exclude: bool = False
    forbid_pairs: bool = False
    #: Most weights are > 0 (a longest-path-like query); read only where the sign decides (s-t paths).
    positive: bool = False

    @staticmethod
    def of(query: LinearQuery | NormQuery, signed: bool = False) -> QueryShape:
        r = query.restrictions
        if isinstance(query, LinearQuery):
            positive = signed and 2 * int(np.count_nonzero(query.weights > 0.0)) > len(query.weights)
            return QueryShape("linear", 1, bool(r.include), bool(r.exclude), bool(r.forbid_pairs), positive)
        return QueryShape("norm", query.sign, bool(r.include), bool(r.exclude), bool(r.forbid_pairs))


_FREE_LINEAR = QueryShape("linear")


class SpaceFacts:
    """Facts about a space for cost models; counting its actions enumerates, within a work budget, cached.

    ``budget`` is the estimated cost of the cheapest candidate sure to answer:
    a model should not probe (count) beyond what could beat it. Counting is
    bounded: the enumeration may visit at most as many candidates as
    ``plan_share * budget`` seconds pay for (:data:`_ENUM_VISIT` each), and it
    runs only when that bound holds *before* it starts (see :meth:`count`).
    """

    def __init__(self, space: ActionSpace, caps: dict[str, int], plan_share: float = 0.25):
        self.space = space
        self.d = space.d
        self.caps = caps
        self.plan_share = plan_share
        #: The share of ``budget`` the current count may spend (``plan_share``, or the norm one while ranking norms).
        self.share = plan_share
        self.budget = math.inf
        self.probe = False
        self.wanted = False
        self.actions: np.ndarray | None = None
        self._more_than = -1  # the space is known to have more than this many actions
        self._visits_over = -1  # enumerating would visit more than this many candidates

    def visit_cap(self) -> int:
        """Most candidates an enumeration may visit now: ``plan_share * budget`` seconds' worth."""
        if not math.isfinite(self.budget):
            return 0
        per_visit = _ENUM_VISIT + _ENUM_VISIT_ARM * self.d
        return int(max(self.share * self.budget, 0.0) / per_visit)

    def count(self, limit: int) -> int | None:
        """The number of actions if it is at most ``limit``, else (or while not probing) ``None``.

        Bounded work, never an open-ended enumeration: the space is split into a
        base family and its side rules (:func:`enumeration_base`); the base is
        enumerated with a cap of :meth:`visit_cap` candidates (a family where every
        partial choice completes to an action stops after ``cap + 1`` of them; any
        other is enumerated only when its closed-form count bound is within the
        cap), then the rules filter the base's actions.
        """
        if self.actions is not None:
            return len(self.actions) if len(self.actions) <= limit else None
        if limit <= self._more_than:
            return None
        if not self.probe:
            self.wanted = True
            return None
        visits = self.visit_cap()
        if visits <= self._visits_over:
            return None
        base, rules = enumeration_base(self.space)
        bound = base.count_upper_bound()
        cap = visits if bound is None else min(visits, int(bound))
        if not _stops_at_cap(base) and (bound is None or bound > visits):
            searches = int(max(self.share * self.budget, 0.0) / _SEARCH_VISIT)
            if not _search_within(base, searches, limit):  # s-t paths: a counting search, stopped at its caps
                self._visits_over = max(self._visits_over, visits)
                return None
            cap = searches  # the search visited every path, and at most this many partial paths
        try:
            found = base.enumerate(cap)
        except ValueError:  # more than cap (or none: an empty base is not counted here)
            self._visits_over = max(self._visits_over, visits)
            return None
        if rules:
            keep = [a for a in found if all(rule._satisfied(a) for rule in rules)]
            if not keep:
                return None
            found = np.array(keep, dtype=bool).reshape(len(keep), self.d)
            found.setflags(write=False)
            # the same rows in the same order as space.enumerate() (a rule filters its parent's): the
            # enumerate backend then reads them from the space's cache instead of enumerating again
            self.space.__dict__.setdefault("_enum_cache", {})["all"] = found
        if len(found) > limit:
            self._more_than = max(self._more_than, limit)
            self.actions = found
            return None
        self.actions = found
        return len(found)

    def max_size(self) -> int:
        """Largest action size (after a successful :meth:`count`; else ``d``)."""
        if self.actions is None or not len(self.actions):
            return self.d
        return int(self.actions.sum(axis=1).max())

    def root_cuts(self) -> bool:
        """Whether the formulation has fractional separators (HiGHS runs LP cut rounds on every MILP query)."""
        return bool(self.space.formulation().fractional_separators)

    def formulation_size(self) -> tuple[int, bool, bool]:
        """``(columns + rows, integral_lp, has separators)`` of the space's formulation."""
        f = self.space.formulation()
        return f.n_cols + f.n_rows, f.integral_lp, bool(f.separators)


def enumeration_base(space: ActionSpace) -> tuple[ActionSpace, list]:
    """``(base, rules)``: the family under ``space``'s side rules, and the rules (outermost first).

    >>> import cmab_milp as cm
    >>> base, rules = enumeration_base(cm.Cardinality(4, 2).with_conflicts([(0, 1)]))
    >>> base, len(rules)
    (Cardinality(d=4, m=2), 1)
    """
    from ...spaces.rules import RuleSpace

    rules = []
    while isinstance(space, RuleSpace):
        rules.append(space)
        space = space.parent
    return space, rules


def _stops_at_cap(space: ActionSpace) -> bool:
    """Whether ``space.enumerate(cap)`` visits O(cap) candidates: every partial choice of its search completes."""
    from ...spaces import Cardinality, GraphicMatroid, PartitionMatroid

    if isinstance(space, Matchings):
        return not space.perfect
    return type(space) in (Cardinality, PartitionMatroid, GraphicMatroid, ExplicitActions)


def _search_within(space: ActionSpace, visits: int, paths: int | None = None) -> bool:
    """Whether enumerating ``space`` (s-t paths) visits at most ``visits`` partial paths (and finds at most
    ``paths`` s-t paths): a depth-first search of the simple paths from ``s``, stopped as soon as either
    is exceeded (bounded work, either way).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8)
    >>> _search_within(space, 100), _search_within(space, 10)
    (True, False)
    """
    from ...spaces import STPaths

    if type(space) is not STPaths:
        return False
    succ: list[list[int]] = [[] for _ in range(space.n_nodes)]
    for u, v in zip(space.tail.tolist(), space.head.tolist(), strict=True):
        succ[u].append(v)
        if not space.directed:
            succ[v].append(u)
    if _shortest_paths(succ, space.s, space.t) > min(visits, most := math.inf if paths is None else paths):
        return False  # a lower bound on the paths already passes a cap: no search
    on_path = [False] * space.n_nodes
    count = found = 0
    stack = [(space.s, 0)]
    on_path[space.s] = True
    while stack:  # iterative DFS over simple paths from s; each push is one visit
        node, k = stack[-1]
        if node == space.t and k == 0:
            found += 1
            if found > most:
                return False
        if node == space.t or k == len(succ[node]):
            stack.pop()
            on_path[node] = False
            continue
        stack[-1] = (node, k + 1)
        nxt = succ[node][k]
        if not on_path[nxt]:
            count += 1
            if count > visits:
                return False
            on_path[nxt] = True
            stack.append((nxt, 0))
    return True


def _shortest_paths(succ: list[list[int]], s: int, t: int) -> int:
    """The number of s-t paths with fewest arcs (breadth-first counting): a lower bound on the simple s-t paths.

    >>> _shortest_paths([[1, 2], [3], [3], []], 0, 3)
    2
    """
    dist = {s: 0}
    ways = {s: 1}
    frontier = [s]
    while frontier and t not in dist:
        nxt: list[int] = []
        for u in frontier:
            for v in succ[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    ways[v] = 0
                    nxt.append(v)
                if dist[v] == dist[u] + 1:
                    ways[v] += ways[u]
        frontier = nxt
    return ways.get(t, 0)


# ---------------------------------------------------------------- cost models
# Seconds per query, fitted on bench/auto_dispatch.py (2-core machine, numpy + highspy 1.x).
_ENUM_BASE, _ENUM_ENTRY, _ENUM_GATHER = 5e-6, 1.5e-9, 5e-9
_HIGHS_LP, _HIGHS_MILP, _HIGHS_PER_ENTRY = 1e-4, 3e-4, 5e-6
_ENUM_VISIT, _ENUM_VISIT_ARM = 1e-6, 1.2e-7  # planning: seconds per candidate an enumeration visits (+ per arm)
_SEARCH_VISIT = 5e-6  # planning: seconds per partial path of the counting search on s-t paths
_HIGHS_ROOT_ROUNDS = 0.012  # LP cut rounds before a MILP with fractional separators (trees, forests: 16 ms on 3x3)
_HIGHS_NORM = 0.1  # an exact norm query on 30 arms (secants, cuts: many MILP solves), growing as d^1.5


def enumerate_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """Brute force: a matrix-vector product over n actions; norm queries add ``n * m^2`` gathers."""
    d = facts.d
    per_action = _ENUM_ENTRY * (d + shape.include + shape.exclude + 2 * shape.forbid_pairs)
    if shape.kind == "norm":
        per_action += _ENUM_GATHER  # at least one gather per action (m >= 1)
    affordable = (facts.budget - _ENUM_BASE) / per_action if math.isfinite(facts.budget) else math.inf
    limit = int(min(facts.caps[shape.kind], max(affordable, 0)))
    n = facts.count(limit)
    if n is None:
        return math.inf
    m = facts.max_size()
    gathers = _ENUM_GATHER * m * m if shape.kind == "norm" else 0.0
    return _ENUM_BASE + n * (_ENUM_ENTRY * (d + shape.include + shape.exclude + 2 * shape.forbid_pairs) + gathers)


def highs_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """A re-solve of the compiled model (LP when integral); the norm index runs many MILP solves.

    Norm queries: ``0.1 s * (d / 30)^1.5``, within 2x of the medians measured on
    cardinality, matching, path, tree and side-row spaces of 20 to 60 arms.
    """
    size, integral, separators = facts.formulation_size()
    factor = 3.0 if separators else 1.0
    base = _path_base(space) if shape.positive else None
    if base is not None:  # longest-path-like queries on cyclic s-t paths: a branching MILP per cut round
        return _longest_path_seconds(base, "highs", _has_rules(space))
    if shape.kind == "linear":
        lp = integral and not shape.forbid_pairs
        base = _HIGHS_LP if lp else _HIGHS_MILP
        rounds = _HIGHS_ROOT_ROUNDS if not lp and facts.root_cuts() else 0.0
        return factor * (base + _HIGHS_PER_ENTRY * size) + rounds
    return _HIGHS_NORM * (facts.d / 30.0) ** 1.5


def _path_base(space: ActionSpace):
    """The s-t paths (with cycles) under ``space``'s side rules, or ``None``."""
    from ...spaces import STPaths

    base, _ = enumeration_base(space)
    return base if type(base) is STPaths and not base.acyclic else None


def _longest_path_seconds(base, solver: str, side_rows: bool = False) -> float:
    """Seconds per longest-path-like query (most weights > 0) on cyclic s-t paths, by solver.

    Fitted on ``bench/graphs_large.py`` (grids; medians of 4-8 queries): on digraphs CP-SAT's
    circuit (0.11-0.18 s on the 6x6 grid digraph, 120 arcs) beats HiGHS's lazy-cut loop ~8x and SCIP's
    one tree ~20x; on undirected grids HiGHS leads without side rows (0.8 s on the 10x10 grid; SCIP
    2.0 s) and SCIP's one tree with them (at most 60 edges: SCIP 3.6 s, HiGHS 6.8 s); CP-SAT has no
    circuit there and its no-good loop is 4-11x slower. Growth: x2 per 6 more nodes on digraphs
    (CP-SAT: 0.02 s on the 4x4 grid digraph, 9 s on the 8x8 one), per 16 undirected (HiGHS: 0.015 s
    on the 4x4 grid, 0.8 s on the 10x10 one).
    """
    if base.directed:
        return {"ortools": 0.15, "highs": 0.8, "scip": 2.0}[solver] * 2.0 ** ((base.n_nodes - 36) / 6.0)
    table = (
        {"ortools": math.inf, "highs": 0.4, "scip": 0.225}
        if side_rows
        else {"ortools": math.inf, "highs": 0.05, "scip": 0.125}
    )
    return table[solver] * 2.0 ** ((base.n_nodes - 36) / 16.0)


def _has_rules(space: ActionSpace) -> bool:
    return bool(enumeration_base(space)[1])


def ortools_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """CP-SAT: picked for longest-path-like queries on directed s-t paths (its circuit constraint) only.

    Elsewhere its solve-separate loop is 10x or more slower than HiGHS on every bench family
    (shortest 17x17-grid paths: 0.39 s against 0.047 s on the digraph; no answer in 30 s undirected).
    """
    base = _path_base(space)
    if shape.kind != "linear" or base is None or not base.directed:
        return math.inf
    if not shape.positive:
        return 10.0 * highs_cost(space, shape, facts)
    return _longest_path_seconds(base, "ortools", _has_rules(space))


def scip_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """SCIP (one tree with the separators): first on longest paths of undirected graphs with side rows.

    Elsewhere it measured 1.5-20x slower than HiGHS or CP-SAT on the bench's families: declared so
    that ``auto`` uses it where nothing faster is installed.
    """
    base = _path_base(space)
    if shape.kind == "linear" and shape.positive and base is not None:
        return _longest_path_seconds(base, "scip", _has_rules(space))
    return 3.0 * highs_cost(space, shape, facts)


def combinatorial_cost(space: ActionSpace, shape: QueryShape, facts: SpaceFacts) -> float:
    """Sorting, greedy, dynamic programming, assignment: microseconds per arm."""
    if shape.kind != "linear":
        return math.inf
    if isinstance(space, ExplicitActions):
        return _ENUM_BASE + _ENUM_ENTRY * len(space.actions) * facts.d
    if isinstance(space, Matchings) and not space.bipartite:
        return 1e-4 + 2e-5 * facts.d  # blossom in pure Python
    return 1e-5 + 5e-7 * facts.d


# ---------------------------------------------------------------- the oracle
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
    ):
        super().__init__(space)
        for label, cap in (("enumerate_cap", enumerate_cap), ("norm_enumerate_cap", norm_enumerate_cap)):
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 0:
                raise ValueError(f"{label} must be an integer >= 0, got {cap!r}")
        for label, share in (("plan_share", plan_share), ("norm_plan_share", norm_plan_share)):
            if isinstance(share, bool) or not isinstance(share, Real) or not 0.0 <= share <= 1e6:
                raise ValueError(f"{label} must be a number in [0, 1e6], got {share!r}")
        self.norm_plan_share = float(norm_plan_share)
        self.time_limit = check_time_limit(time_limit)
        self.plan_share = float(plan_share)
        self.enumerate_cap = int(enumerate_cap)
        self.norm_enumerate_cap = int(norm_enumerate_cap)
        self.facts = SpaceFacts(space, {"linear": self.enumerate_cap, "norm": self.norm_enumerate_cap}, self.plan_share)
        #: Whether a linear query's shape records the sign of its weights (s-t paths with cycles).
        self._signed = _path_base(space) is not None
        self.oracles: dict[str, Oracle] = {}
        self._plans: dict[QueryShape, list[str]] = {}
        self._costs: dict[QueryShape, dict[str, float]] = {}
        self._methods: dict[QueryShape, list[list]] = {}
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
        """``[name, bound method or None]`` per planned backend; oracles are built when first asked."""
        routes = self._methods.get(shape)
        if routes is None:
            routes = [[name, None] for name in self.plan(shape)]
            self._methods[shape] = routes
        return routes

    def _dispatch(self, query: LinearQuery | NormQuery, shape: QueryShape) -> np.ndarray | None:
        declined = []
        for route in self._methods.get(shape) or self._routes_for(shape):
            name, method = route
            if method is None:
                method = route[1] = getattr(self._oracle(name), "_linear" if shape.kind == "linear" else "_norm")
            try:
                answer = method(query)
            except UnsupportedQuery as exc:
                declined.append(f"{name}: {exc}")
                continue
            self.routes[name] += 1
            return answer
        raise UnsupportedQuery("no registered exact backend answers this query" + "".join(f"; {d}" for d in declined))

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
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._lock = threading.RLock()
