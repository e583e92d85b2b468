"""What ``auto``'s cost models may know: the shape of a query and facts about the space.

:class:`QueryShape` is a query reduced to what decides its cost (kind, sign, which restrictions are
present). :class:`SpaceFacts` answers questions about the space, counting its actions by enumeration
only within a work budget (at most as many visits as the cheapest sure backend's estimated seconds
pay for), so planning never costs more than a share of the query it plans.

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
from .queries import LinearQuery, NormQuery

__all__ = ["QueryShape", "SpaceFacts", "cyclic_paths_base", "enumeration_base"]

# Seconds per unit of planning work, fitted on bench/auto_dispatch.py (see docs/performance.md).
_ENUM_VISIT, _ENUM_VISIT_ARM = 1e-6, 1.2e-7  # planning: seconds per candidate an enumeration visits (+ per arm)
_SEARCH_VISIT = 5e-6  # planning: seconds per partial path of the counting search on s-t paths


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
        return QueryShape("norm", query.sign, bool(r.include), bool(r.exclude), bool(r.forbid_pairs))


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
        #: Seconds of planning work allowed whatever ``budget`` says (``auto`` raises it as queries are answered).
        self.allowance = 0.0
        self.probe = False
        self.wanted = False
        #: The last :meth:`count` stopped at its work bound, not at an answer (more work could still tell).
        self.undecided = False
        #: Once counted: the planning seconds (:meth:`work`) with which a first count would have succeeded
        #: (what a fresh oracle's plan needs to enumerate; ``auto`` compares it with each shape's share).
        self.needed_work: float | None = None
        self.actions: np.ndarray | None = None
        self._more_than = -1  # the space is known to have more than this many actions
        self._visits_over = -1  # enumerating would visit more than this many candidates

    def work(self) -> float:
        """Seconds of planning the current count may spend: ``share * budget``, or ``allowance`` if more."""
        share = self.share * self.budget if math.isfinite(self.budget) else 0.0
        return max(share, self.allowance, 0.0)

    def _per_visit(self) -> float:
        return _ENUM_VISIT + _ENUM_VISIT_ARM * self.d

    def visit_cap(self) -> int:
        """Most candidates an enumeration may visit now: :meth:`work` seconds' worth."""
        return int(self.work() / self._per_visit())

    def count(self, limit: int) -> int | None:
        """The number of actions if it is at most ``limit``, else (or while not probing) ``None``.

        Bounded work, never an open-ended enumeration: the space is split into a
        base family and its side rules (:func:`enumeration_base`); the base is
        enumerated with a cap of :meth:`visit_cap` candidates (a family where every
        partial choice completes to an action stops after ``cap + 1`` of them; any
        other is enumerated only when its closed-form count bound is within the
        cap), then the rules filter the base's actions.
        """
        self.undecided = False
        if self.actions is not None:
            return len(self.actions) if len(self.actions) <= limit else None
        if limit <= self._more_than:
            return None
        if not self.probe:
            self.wanted = True
            return None
        visits = self.visit_cap()
        self.undecided = True  # until the count below ends in an answer
        if visits <= self._visits_over:
            return None
        base, rules = enumeration_base(self.space)
        bound = base.count_upper_bound()
        cap = visits if bound is None else min(visits, int(bound))
        needed = None
        if not _stops_at_cap(base) and (bound is None or bound > visits):
            searches = int(self.work() / _SEARCH_VISIT)
            outcome, used = _search(base, searches, limit)  # s-t paths: a counting search, stopped at its caps
            if outcome != "done":
                if outcome == "paths":  # more base paths than the limit: no more work counts this space
                    self.undecided = False
                    if not rules:
                        self._more_than = max(self._more_than, limit)
                self._visits_over = max(self._visits_over, visits)
                return None
            cap = searches  # the search visited every path, and at most this many partial paths
            # a count succeeds with as much work as this search used, or as visiting the bound's candidates
            needed = min(used * _SEARCH_VISIT, math.inf if bound is None else bound * self._per_visit())
        try:
            found = base.enumerate(cap)
        except ValueError:  # more than cap (or none: an empty base is not counted here)
            if cap >= limit and (bound is None or bound > cap):  # more base actions than the limit: as above
                self.undecided = False
                if not rules:
                    self._more_than = max(self._more_than, limit)
            self._visits_over = max(self._visits_over, visits)
            return None
        self.undecided = False
        if needed is None:  # enumerated under the visit cap: as many visits as it took (or the bound allowed)
            needed = (len(found) if _stops_at_cap(base) else int(bound)) * self._per_visit()
        self.needed_work = needed
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
    is exceeded (bounded work, either way); see :func:`_search_outcome`.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8)
    >>> _search_within(space, 100), _search_within(space, 10)
    (True, False)
    """
    return _search_outcome(space, visits, paths) == "done"


def _search_outcome(space: ActionSpace, visits: int, paths: int | None = None) -> str:
    """How the search of :func:`_search_within` ends: ``"done"`` (every path found within both caps),
    ``"paths"`` (more than ``paths`` s-t paths: a fact about the space) or ``"visits"`` (stopped at the work
    cap, or not s-t paths).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 8)
    >>> _search_outcome(space, 100, 5), _search_outcome(space, 10), _search_outcome(space, 100)
    ('paths', 'visits', 'done')
    >>> _search(space, 100)  # and the partial paths it visited
    ('done', 50)
    """
    return _search(space, visits, paths)[0]


def _search(space: ActionSpace, visits: int, paths: int | None = None) -> tuple[str, int]:
    """:func:`_search_outcome` and the number of partial paths the search visited."""
    from ...spaces import STPaths

    if type(space) is not STPaths:
        return "visits", 0
    succ: list[list[int]] = [[] for _ in range(space.n_nodes)]
    for u, v in zip(space.tail.tolist(), space.head.tolist(), strict=True):
        succ[u].append(v)
        if not space.directed:
            succ[v].append(u)
    most = math.inf if paths is None else paths
    fewest = _shortest_paths(succ, space.s, space.t)  # a lower bound on the paths: past a cap, no search
    if fewest > most:
        return "paths", 0
    if fewest > visits:
        return "visits", 0
    on_path = [False] * space.n_nodes
    count = found = 0
    stack = [(space.s, 0)]
    on_path[space.s] = True
    while stack:  # iterative DFS over simple paths from s; each push is one visit
        node, k = stack[-1]
        if node == space.t and k == 0:
            found += 1
            if found > most:
                return "paths", count
        if node == space.t or k == len(succ[node]):
            stack.pop()
            on_path[node] = False
            continue
        stack[-1] = (node, k + 1)
        nxt = succ[node][k]
        if not on_path[nxt]:
            count += 1
            if count > visits:
                return "visits", count
            on_path[nxt] = True
            stack.append((nxt, 0))
    return "done", count


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
