"""Counting the actions of a space under its side rules, the rules pruning the search, within a work cap.

:func:`tally` lists the actions of a space (a base family plus linear rows and conflicting pairs) when
there are at most ``limit`` of them, visiting at most ``visits`` partial actions: the search adds arms
one at a time and drops, as it goes, every arm that a conflict, the family (two edges of a matching at
one node, a cycle of a forest, a full block, a hop past a limit) or a packing row (non-negative
coefficients bounded above, such as a budget, a hop limit or an excluded arm) rules out. On small
constrained spaces it visits about as many partial actions as there are actions, where filtering the
base family's actions visits every one of them (18,001 matchings of K(12, 4) for 7,381 under a conflict
row and a budget). The actions come in the order of ``space.enumerate()``.

Families: :class:`~.sets.Cardinality`, :class:`~.sets.PartitionMatroid`, :class:`~.graphs.Matchings`,
:class:`~.graphs.GraphicMatroid`, :class:`~.graphs.SpanningTrees`, :class:`~.paths.STPaths` and
:class:`~.sets.ExplicitActions`; any other space gives ``Tally("unknown")``.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> ads = cm.Matchings(nx.complete_bipartite_graph(12, 4))
>>> tally(ads, 20_000, 100_000).count
18001
>>> rule = np.array([1.0 if u in (0, 1) else 0.0 for u, _ in ads.arms])
>>> tally(ads.with_constraint(rule, "<=", 1), 20_000, 100_000).count
16669
>>> tally(ads, 1000, 100_000).status, tally(ads, 20_000, 50).status
('over', 'unknown')
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import chain, combinations
from math import comb

import numpy as np

from .base import ActionSpace
from .graphs import GraphicMatroid, Matchings, SpanningTrees
from .paths import STPaths
from .rules import ConflictSpace, ConstrainedSpace, RuleSpace
from .sets import Cardinality, ExplicitActions, PartitionMatroid

__all__ = ["Tally", "tally"]


@dataclass(frozen=True)
class Tally:
    """``status``: ``"exact"`` (``actions`` holds every action), ``"over"`` (more than the limit) or ``"unknown"``."""

    status: str
    actions: np.ndarray | None = None
    visits: int = 0

    @property
    def count(self) -> int | None:
        """The number of actions when known exactly."""
        return None if self.actions is None else len(self.actions)


class _Stop(Exception):
    def __init__(self, status: str):
        self.status = status


class _Rows:
    """The side rules as prunes (conflict masks, packing rows) and checks (every row, on each action)."""

    def __init__(self, rules: list[RuleSpace], d: int):
        self.conflicts = [0] * d
        self.coeffs: list[list[float]] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.packing: list[tuple[int, list[float], list[int]]] = []  # (row, ascending coefficients, masks)
        for rule in rules:
            if isinstance(rule, ConflictSpace):
                for i, j in rule.pairs:
                    self.conflicts[i] |= 1 << j
                    self.conflicts[j] |= 1 << i
            elif isinstance(rule, ConstrainedSpace):
                self._add_row(rule, d)
            else:
                raise TypeError(type(rule).__name__)

    def _add_row(self, rule: ConstrainedSpace, d: int) -> None:
        c, tol = rule.coeffs.astype(float), rule._tol
        lo = rule.rhs - tol if rule.sense in (">=", "==") else -np.inf
        hi = rule.rhs + tol if rule.sense in ("<=", "==") else np.inf
        k = len(self.coeffs)
        self.coeffs.append(c.tolist())
        self.lo.append(lo)
        self.hi.append(hi)
        if (c >= 0).all() and np.isfinite(hi):
            prune = c
        elif (c <= 0).all() and np.isfinite(lo):  # -c @ a <= -lo
            prune = -c
            self.lo[k], self.hi[k] = -hi, -lo
            self.coeffs[k] = prune.tolist()
        else:
            return
        order = np.argsort(-prune, kind="stable")  # largest first: masks[n] holds the n largest arms
        masks = [0]
        for i in order.tolist():
            masks.append(masks[-1] | (1 << i))
        self.packing.append((k, sorted(prune.tolist()), masks))

    def too_big(self, lhs: list[float]) -> int:
        """The arms that would push a packing row past its bound."""
        out = 0
        for k, ascending, masks in self.packing:
            room = self.hi[k] - lhs[k]
            out |= masks[len(ascending) - bisect.bisect_right(ascending, room)]
        return out

    def add(self, lhs: list[float], j: int) -> list[float]:
        return [v + c[j] for v, c in zip(lhs, self.coeffs, strict=True)]

    def holds(self, lhs: list[float]) -> bool:
        return all(lo <= v <= hi for v, lo, hi in zip(lhs, self.lo, self.hi, strict=True))


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def tally(space: ActionSpace, limit: int, visits: int) -> Tally:
    """Every action of ``space`` if it has at most ``limit`` and the search visits at most ``visits`` partial ones.

    >>> import cmab_milp as cm
    >>> tally(cm.Cardinality(4, 2).with_conflicts([(0, 1)]), 100, 100).count
    10
    """
    base, rules = space, []
    while isinstance(base, RuleSpace):
        rules.append(base)
        base = base.parent
    if not rules and (type(base) is PartitionMatroid or (type(base) is Cardinality and not base.exact)):
        return _every_subset_allowed(base, limit, visits)
    try:
        rows = _Rows(rules, space.d)
    except TypeError:
        return Tally("unknown")
    search = _Search(base, rows, limit, visits)
    try:
        found = search.run()
    except _Stop as stop:
        return Tally(stop.status, visits=search.visits)
    if found is None:
        return Tally("unknown", visits=search.visits)
    if not len(found):
        return Tally("unknown", visits=search.visits)  # an empty space: space.enumerate() names the rules
    found.setflags(write=False)
    return Tally("exact", found, search.visits)


def _every_subset_allowed(base: Cardinality | PartitionMatroid, limit: int, visits: int) -> Tally:
    """The search's outcome where every partial action is an action (``Cardinality`` of at most ``m``, partition
    matroids, no rules): it visits one partial action per action, so the count (a closed form) tells the outcome;
    the actions are listed by numpy in ``base.enumerate()``'s order.

    >>> import cmab_milp as cm
    >>> space = cm.PartitionMatroid([[0, 1], [2, 3, 4]], [1, 2])
    >>> found = tally(space, 100, 100)
    >>> found.count, found.visits, bool((found.actions == space.enumerate()).all())
    (21, 21, True)
    >>> tally(space, 20, 100).status, tally(space, 100, 20).status
    ('over', 'unknown')
    """
    count = int(base.count_upper_bound())
    stop = min(visits, limit) + 1  # the visit at which the search would stop
    if count >= stop:
        return Tally("unknown" if visits <= limit else "over", visits=stop)
    if type(base) is Cardinality:
        actions = np.vstack([_combinations(range(base.d), k, base.d) for k in range(base.m + 1)])
    else:
        per_block = [
            np.vstack([_combinations(b, k, base.d) for k in range(min(c, len(b)) + 1)])
            for b, c in zip(base.blocks, base.capacities, strict=True)
        ]
        actions = np.zeros((count, base.d), dtype=bool)
        stride = count
        for rows in per_block:  # itertools.product's order: the first block changes slowest
            stride //= len(rows)
            actions |= rows[(np.arange(count) // stride) % len(rows)]
    actions.setflags(write=False)
    return Tally("exact", actions, count)


def _combinations(arms, k: int, d: int) -> np.ndarray:
    """The ``k``-subsets of ``arms`` as rows of ``d`` booleans, in ``itertools.combinations``' order."""
    arms = list(arms)
    n = comb(len(arms), k)
    out = np.zeros((n, d), dtype=bool)
    if k:
        picked = np.fromiter(chain.from_iterable(combinations(arms, k)), dtype=np.intp, count=n * k).reshape(n, k)
        out[np.arange(n)[:, None], picked] = True
    return out


class _Search:
    def __init__(self, base: ActionSpace, rows: _Rows, limit: int, visits: int):
        self.base, self.rows, self.limit, self.cap = base, rows, limit, visits
        self.d = base.d
        self.visits = 0
        self.found: list[list[int]] = []

    def _visit(self) -> None:
        self.visits += 1
        if self.visits > self.cap:
            raise _Stop("unknown")

    def _emit(self, chosen: list[int]) -> None:
        self.found.append(list(chosen))
        if len(self.found) > self.limit:
            raise _Stop("over")

    def _matrix(self) -> np.ndarray:
        out = np.zeros((len(self.found), self.d), dtype=bool)
        sizes = [len(arms) for arms in self.found]
        out[np.repeat(np.arange(len(sizes)), sizes), [k for arms in self.found for k in arms]] = True
        return out

    def run(self) -> np.ndarray | None:
        base = self.base
        if type(base) is ExplicitActions:
            return self._explicit()
        if type(base) is STPaths:
            self._paths()
            return self._matrix()
        if type(base) not in (Cardinality, PartitionMatroid, Matchings, GraphicMatroid, SpanningTrees):
            return None
        self._independent()
        return _canonical(base, self.found, self._matrix())

    def _explicit(self) -> np.ndarray:
        actions = self.base.actions
        self.visits = len(actions)
        if self.visits > self.cap:
            raise _Stop("unknown")
        keep = np.ones(len(actions), bool)
        for i, mask in enumerate(self.rows.conflicts):
            for j in _bits(mask):
                keep &= ~(actions[:, i] & actions[:, j])
        lhs = actions.astype(float) @ np.array(self.rows.coeffs, dtype=float).reshape(-1, self.d).T
        keep &= ((lhs >= np.array(self.rows.lo)) & (lhs <= np.array(self.rows.hi))).all(axis=1)
        if int(keep.sum()) > self.limit:
            raise _Stop("over")
        return actions[keep]

    # ------------------------------------------------- independence systems (and their bases)
    def _independent(self) -> None:
        base, rows, d = self.base, self.rows, self.d
        incompatible = list(rows.conflicts)
        size_cap, exact_size, blocks, graph = d, None, None, False
        if type(base) is Cardinality:
            size_cap = base.m
            exact_size = base.m if base.exact else None
        elif type(base) is PartitionMatroid:
            blocks = [sum(1 << i for i in b) for b in base.blocks]
        elif type(base) is Matchings:
            at = [0] * base.n_nodes
            ends = list(zip(base.tail.tolist(), base.head.tolist(), strict=True))
            for k, (u, v) in enumerate(ends):
                at[u] |= 1 << k
                at[v] |= 1 << k
            for k, (u, v) in enumerate(ends):  # two edges at one node
                incompatible[k] |= (at[u] | at[v]) & ~(1 << k)
            size_cap = base.m
            exact_size = base.n_nodes // 2 if base.perfect else None
        else:  # forests and spanning trees
            graph = True
            size_cap = base.n_nodes - 1
            exact_size = base.n_nodes - 1 if type(base) is SpanningTrees else None
        tail, head = base.tail.tolist() if graph else [], base.head.tolist() if graph else []
        # per component (by its label): the arms with their tail / head in it; both: a cycle if added
        tails, heads = [0] * (base.n_nodes if graph else 0), [0] * (base.n_nodes if graph else 0)
        for k in range(d if graph else 0):
            tails[tail[k]] |= 1 << k
            heads[head[k]] |= 1 << k
        counts = [0] * (len(blocks) if blocks else 0)
        block_of = base.block_of.tolist() if blocks else []
        component = list(range(base.n_nodes)) if graph else []
        members = [[v] for v in component]

        chosen: list[int] = []
        spanning = type(base) is SpanningTrees
        perfect = type(base) is Matchings and base.perfect
        if perfect:
            ends = list(zip(base.tail.tolist(), base.head.tolist(), strict=True))
            at_node = [0] * base.n_nodes
            for k, (u, v) in enumerate(ends):
                at_node[u] |= 1 << k
                at_node[v] |= 1 << k

        def connects(candidates: int) -> bool:  # the chosen edges and the candidates still span the graph
            parts = base.n_nodes - len(chosen)  # each chosen edge joined two components
            root = list(component)

            def find(x: int) -> int:
                while root[x] != x:
                    root[x] = root[root[x]]
                    x = root[x]
                return x

            for k in _bits(candidates):
                a, b = find(component[tail[k]]), find(component[head[k]])
                if a != b:
                    root[a] = b
                    parts -= 1
                    if parts == 1:
                        return True
            return parts == 1

        def covers(candidates: int) -> bool:  # every node left unmatched still has a candidate edge
            covered = {v for k in chosen for v in ends[k]}
            return all(at_node[v] & candidates for v in range(base.n_nodes) if v not in covered)

        def rec(candidates: int, lhs: list[float]) -> None:
            self._visit()
            if (exact_size is None or len(chosen) == exact_size) and (not lhs or rows.holds(lhs)):
                self._emit(chosen)
            if len(chosen) >= size_cap:
                return
            if exact_size is not None and len(chosen) + candidates.bit_count() < exact_size:
                return
            if spanning and not connects(candidates):
                return
            if perfect and not covers(candidates):
                return
            rest = candidates
            while rest:
                low = rest & -rest
                j = low.bit_length() - 1
                rest ^= low
                nxt = rest & ~incompatible[j]
                new = rows.add(lhs, j) if rows.coeffs else lhs
                if rows.packing:
                    nxt &= ~rows.too_big(new)
                undo = None
                if blocks:
                    b = block_of[j]
                    counts[b] += 1
                    if counts[b] >= base.capacities[b]:
                        nxt &= ~blocks[b]
                if graph:
                    cu, cv = component[tail[j]], component[head[j]]
                    undo = (cu, cv, members[cu], tails[cu], heads[cu])
                    for v in members[cv]:
                        component[v] = cu
                    members[cu] = members[cu] + members[cv]
                    tails[cu] |= tails[cv]
                    heads[cu] |= heads[cv]
                    nxt &= ~(tails[cu] & heads[cu])
                chosen.append(j)
                rec(nxt, new)
                chosen.pop()
                if blocks:
                    counts[block_of[j]] -= 1
                if undo is not None:
                    cu, cv, members[cu], tails[cu], heads[cu] = undo
                    for v in members[cv]:
                        component[v] = cv

        start = (1 << d) - 1
        lhs0 = [0.0] * len(rows.coeffs)
        if blocks:
            for b, cap in enumerate(base.capacities):
                if cap == 0:
                    start &= ~blocks[b]
        if rows.packing:
            start &= ~rows.too_big(lhs0)
        rec(start, lhs0)

    # ------------------------------------------------------------------------------ s-t paths
    def _paths(self) -> None:
        """Depth-first over simple paths in networkx's order (that of ``nx.all_simple_edge_paths``)."""
        base, rows = self.base, self.rows
        index = {e: k for k, e in enumerate(base.arms)}
        graph = base.graph
        unusable = base.unusable_arms()  # arms on no simple s-t path (graph presolve): dead ends, never emitted
        steps = {
            u: [
                (v, k)
                for _, v in graph.edges(u)
                if not unusable[k := index[(u, v)] if (u, v) in index else index[(v, u)]]
            ]
            for u in graph
        }
        target = base.target
        on_path = {base.source}
        chosen: list[int] = []

        def rec(node, banned: int, lhs: list[float]) -> None:
            for v, k in steps[node]:
                if v in on_path or banned >> k & 1:
                    continue
                self._visit()
                new = rows.add(lhs, k) if rows.coeffs else lhs
                chosen.append(k)
                if v == target:
                    if not new or rows.holds(new):
                        self._emit(sorted(chosen))
                else:
                    nxt = banned | rows.conflicts[k]
                    if rows.packing:
                        nxt |= rows.too_big(new)
                    on_path.add(v)
                    rec(v, nxt, new)
                    on_path.discard(v)
                chosen.pop()

        lhs0 = [0.0] * len(rows.coeffs)
        rec(base.source, rows.too_big(lhs0) if rows.packing else 0, lhs0)


def _canonical(base: ActionSpace, found: list[list[int]], actions: np.ndarray) -> np.ndarray:
    """``actions`` (found in the search's order, ``found`` their arms ascending) in ``base.enumerate()``'s order."""
    if not len(actions):
        return actions
    if type(base) is Cardinality:  # by size, then combinations' order (the search's, kept by a stable sort)
        return actions[np.argsort(actions.sum(axis=1), kind="stable")]
    if type(base) is PartitionMatroid:  # itertools.product over the blocks' subsets (each by size, then order)
        block_of = base.block_of.tolist()
        n_blocks = len(base.blocks)

        def key(arms: list[int]) -> list:
            per = [[] for _ in range(n_blocks)]
            for k in arms:
                per[block_of[k]].append(k)
            return [(len(p), p) for p in per]

        return actions[sorted(range(len(found)), key=lambda r: key(found[r]))]
    # matchings, forests, trees: include-first recursion over the arms: rows in decreasing lexicographic order
    return actions[np.lexsort([~actions[:, k] for k in reversed(range(actions.shape[1]))])]
