"""What ``auto``'s cost models may know: the shape of a query and facts about the space.

:class:`QueryShape` is a query reduced to what decides its cost (kind, sign, which restrictions are
present). :class:`SpaceFacts` answers questions about the space, counting its actions by a pruned
enumeration (:mod:`cmab_milp.spaces.tally`) only within a work budget (a share of what the cheapest sure
backend's first ``plan_queries`` queries are estimated to cost), so planning costs at most a share of the
queries it plans for.

Example
-------
>>> import cmab_milp as cm
>>> facts = SpaceFacts(cm.Cardinality(4, 2), {"linear": 100, "norm": 100})
>>> facts.budget, facts.probe = 1.0, True
>>> facts.count(100), facts.max_size()
(11, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...spaces import ExplicitActions, Matchings
from ...spaces.base import ActionSpace
from ...spaces.count_bounds import actions_at_least
from ...spaces.tally import Tally, tally
from .queries import _NO_RESTRICTIONS, LinearQuery, NormQuery

__all__ = ["QueryShape", "SpaceFacts", "cyclic_paths_base", "enumeration_base"]

# Seconds per unit of planning work, fitted on bench/auto_dispatch.py (see docs/performance.md).
_ENUM_VISIT, _ENUM_VISIT_ARM = 1e-6, 1.2e-7  # planning: seconds per candidate an enumeration visits (+ per arm)
_SEARCH_VISIT = 5e-6  # planning: seconds per partial path of the counting search on s-t paths
_TALLY_VISIT = 5e-6  # planning: seconds per partial action the pruned count (spaces.tally) visits


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
    #: Some weight is > 0, but not most: on cyclic s-t paths no shortest-path algorithm answers it and a MILP
    #: needs its lazy cycle cuts (as for ``positive``); read only where the sign decides.
    mixed: bool = False

    @staticmethod
    def of(query: LinearQuery | NormQuery, signed: bool = False) -> QueryShape:
        r = query.restrictions
        if isinstance(query, LinearQuery):
            above = int(np.count_nonzero(query.weights > 0.0)) if signed else 0
            positive = 2 * above > len(query.weights)
            args = (bool(r.include), bool(r.exclude), bool(r.forbid_pairs), positive, 0 < above and not positive)
            return QueryShape("linear", 1, *args)
        if r is _NO_RESTRICTIONS:  # the usual norm query: one shape per sign, made once (a new one costs ~1 us)
            shape = _FREE_NORM.get(query.sign)
            if shape is not None:
                return shape
        return QueryShape("norm", query.sign, bool(r.include), bool(r.exclude), bool(r.forbid_pairs))


_FREE_NORM = {1: QueryShape("norm", 1), -1: QueryShape("norm", -1)}


class SpaceFacts:
    """Facts about a space for cost models; counting its actions enumerates, within a work budget, cached.

    ``budget`` is the estimated cost of the cheapest candidate sure to answer:
    a model should not probe (count) beyond what could beat it. Counting is
    bounded: the pruned search may visit at most as many partial actions as
    ``plan_share * budget * plan_queries`` seconds pay for (see :meth:`count`).
    """

    def __init__(
        self,
        space: ActionSpace,
        caps: dict[str, int],
        plan_share: float = 0.25,
        plan_queries: int = 200,
        count_visits: int = 64,
    ):
        self.space = space
        self.plan_queries = plan_queries
        self.count_visits = count_visits
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
        #: The last count's outcome (what ``auto`` reports on why it chose).
        self.tallied: Tally | None = None

    def visit_cap(self) -> int:
        """Most candidates the old filtering count may visit now: ``plan_share * budget`` seconds' worth."""
        if not math.isfinite(self.budget):
            return 0
        per_visit = _ENUM_VISIT + _ENUM_VISIT_ARM * self.d
        return int(max(self.share * self.budget, 0.0) / per_visit)

    def count(self, limit: int) -> int | None:
        """The number of actions if it is at most ``limit``, else (or while not probing) ``None``.

        A lower bound on the count past ``limit`` (:func:`~cmab_milp.spaces.count_bounds.actions_at_least`:
        closed forms, the matrix-tree theorem, the short s-t paths) settles it without listing; else
        bounded work, never an open-ended enumeration: :func:`~cmab_milp.spaces.tally.tally` lists the
        actions with the side rules pruning the search, visiting at most ``count_visits * share * limit``
        partial actions (on most families about one per action, on s-t paths about 14) and at most what
        ``share`` of ``plan_queries`` queries of the cheapest sure backend pays for (its estimate ``budget``;
        :data:`_TALLY_VISIT` a
        visit): the count is paid for by the run it speeds up, and the enumerate backend then reads the
        actions found. Spaces it does not know (intersections, plug-ins) are counted by filtering
        their base family's actions under a visit cap paid for by ``share * budget`` (:meth:`_filtered`).
        """
        if self.actions is not None:
            return len(self.actions) if len(self.actions) <= limit else None
        if limit <= self._more_than:
            return None
        if not self.probe:
            self.wanted = True
            return None
        visits = int(self.count_visits * self.share * limit)  # a few visits per action that could pay
        if math.isfinite(self.budget):  # and within plan_share of plan_queries queries of the cheapest sure backend
            visits = min(visits, int(self.share * self.budget * self.plan_queries / _TALLY_VISIT))
        if visits <= 0 or visits <= self._visits_over:
            return None
        if actions_at_least(self.space, limit, max(2_000, visits // 8)) > limit:  # known without listing them
            self._more_than = max(self._more_than, limit)
            return None
        found = tally(self.space, limit, visits)
        self.tallied = found
        if found.status == "over":
            self._more_than = max(self._more_than, limit)
            return None
        if found.status == "unknown":
            if found.visits == 0:  # a family the search does not know
                return self._filtered(limit)
            self._visits_over = max(self._visits_over, visits)
            return None
        self._keep(found.actions)
        return len(found.actions)

    def _keep(self, actions: np.ndarray) -> None:
        """Keep the actions counted; the space's own enumeration then returns them (same rows, same order)."""
        self.actions = actions
        if not isinstance(self.space, ExplicitActions):
            self.space.__dict__.setdefault("_enum_cache", {})["all"] = actions

    def _filtered(self, limit: int) -> int | None:
        """The count by filtering the base family's actions (for spaces :func:`tally` does not know)."""
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


def cyclic_paths_base(space: ActionSpace):
    """The s-t paths (with cycles) under ``space``'s side rules, or ``None``."""
    from ...spaces import STPaths

    base, _ = enumeration_base(space)
    return base if type(base) is STPaths and not base.acyclic else None
