"""MIP starts for a space with a combinatorial oracle plus side rows: Lagrangian heuristic, repair, swaps.

A space built as ``base.with_constraint(...)`` (or ``with_budget``,
``with_group``, ``with_conflicts``, and a query's ``forbid_pairs``) is the
base space's actions that obey some side rows ``G a <= h``. The base alone
has an exact combinatorial oracle (:mod:`~cmab_milp.oracles.backends.combinatorial`:
top-m, per-block top, Kruskal, assignment (bipartite matchings), DAG paths).
:func:`side_plan` finds a good action of the whole space from it (``fix=False``: only that):

1. **Lagrangian relaxation** of the side rows: the base's argmax of
   ``w - lam @ G`` for multipliers ``lam >= 0``; ``lam`` bisected to the
   least value whose answer fits for one row; for several, the duals of the
   LP relaxation when the base's LP is integral (then they are optimal), else
   a projected subgradient search (Polyak steps). Every answer that obeys the
   side rows is a candidate.
2. **Repair** of the answers that do not fit, on bases closed under removing
   arms (subsets of at most m, partition matroids, forests, matchings): the
   arm of least weight per unit of violation dropped until every row holds.
3. **Fill and swaps**: arms of positive weight added while they fit, then
   exchanges of one chosen arm for one unchosen (a basis exchange on trees)
   while one adds weight, keeping the base and the side rows.

:func:`side_plan` adds **reduced-cost fixing**: on cardinality and partition
bases the flip bounds (:func:`flip_bounds`: the best Lagrangian value with one
arm flipped, in closed form) fix every arm whose flip cannot reach the start's
value; when at most :data:`~.side_cores.CORE_ARMS` arms stay free, :func:`~.side_cores.solve_core`
enumerates them, which with the fixing's bound proves the optimum (an exact
method: the fixed-out actions are below the start, the rest are all tried).

The start obeys the arm bounds, the base (``base._contains``) and every side
row, or is ``None``. It is only a start: the MILP proves or improves it, so a
poor start costs time, never exactness. It depends on the query alone (no
randomness, no state), so the tie rule holds.

Measured figures (``bench/side_rows.py``): docs/performance.md, sections "Oracles" and "Graphs".

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> base = cm.Cardinality(4, 2)
>>> w = np.array([3.0, 2.0, 2.0, 0.5])
>>> G, h = np.array([[2.0, 1.0, 1.0, 1.0]]), np.array([2.0])  # arm 0 alone fills the budget
>>> side_plan(base, w, G, h, fix=False).start.astype(int).tolist()
[0, 1, 1, 0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...portable import dot, matvec
from ...spaces import ActionSpace, Cardinality, GraphicMatroid, Matchings, PartitionMatroid, SpanningTrees, STPaths
from ...spaces.formulation import Formulation, Row
from ..core.base import UnsupportedQuery
from ..core.engine import new_engine
from ..core.exact import ALGORITHMS
from ..core.queries import LinearQuery, make_restrictions
from .side_cores import CORE_ARMS, CORE_CELLS, flip_bounds, solve_core

__all__ = [
    "BISECTION_STEPS",
    "CORE_ARMS",
    "CORE_CELLS",
    "FIX_MARGIN",
    "SUBGRADIENT_STEPS",
    "SWAP_ROUNDS",
    "SidePlan",
    "as_side_rows",
    "flip_bounds",
    "side_plan",
    "solve_core",
    "supported_base",
]

#: Bisection steps of the multiplier of one side row.
BISECTION_STEPS = 20
#: Subgradient steps for several side rows.
SUBGRADIENT_STEPS = 40
#: Improving exchanges tried per start (each one a pass over chosen x unchosen arms).
SWAP_ROUNDS = 30
#: Base-feasibility checks per exchange round before giving up on it.
SWAP_TRIES = 64

#: Arms are fixed only when every action they exclude is this far (relative) below the start.
FIX_MARGIN = 1e-7

_TOL = 1e-9
#: Arm bounds in {0, 1} (1 / 0 fix an arm), or ``None`` for none.
ArmBounds = np.ndarray | None


def supported_base(space: ActionSpace) -> bool:
    """Whether :func:`side_plan` works on ``space`` as the base (an exact combinatorial oracle, any weights).

    >>> import networkx as nx
    >>> supported_base(Cardinality(3, 1)), supported_base(STPaths(nx.cycle_graph(4), 0, 2))
    (True, False)
    """
    if type(space) is STPaths:
        return bool(space.acyclic)  # cyclic: longest paths are NP-hard, no oracle for positive weights
    if type(space) is Matchings:
        return bool(space.bipartite)  # general graphs: networkx's blossom is too slow for a start
    return type(space) in (Cardinality, PartitionMatroid, GraphicMatroid, SpanningTrees)


def _downward_closed(space: ActionSpace) -> bool:
    """Whether removing arms from an action leaves an action (so a repair may drop arms)."""
    if type(space) is Cardinality:
        return not space.exact
    if type(space) is Matchings:
        return not space.perfect
    return type(space) in (PartitionMatroid, GraphicMatroid)


def as_side_rows(rows: Sequence[Row], d: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``rows`` (over arm columns) as ``(G, h)`` with ``G a <= h``; ``None`` when a row uses another column.

    A row ``lb <= r @ a <= ub`` gives ``r @ a <= ub`` and ``-r @ a <= -lb`` for its finite bounds.

    >>> G, h = as_side_rows([Row((0, 2), (1.0, 2.0), 1.0, 3.0)], 3)
    >>> G.tolist(), h.tolist()
    ([[1.0, 0.0, 2.0], [-1.0, -0.0, -2.0]], [3.0, -1.0])
    """
    lines, rhs = [], []
    for row in rows:
        if any(c >= d or c < 0 for c in row.cols):
            return None
        r = np.zeros(d)
        np.add.at(r, list(row.cols), row.coefs)
        if math.isfinite(row.ub):
            lines.append(r)
            rhs.append(float(row.ub))
        if math.isfinite(row.lb):
            lines.append(-r)
            rhs.append(-float(row.lb))
    if not lines:
        return np.zeros((0, d)), np.zeros(0)
    return np.array(lines), np.array(rhs)


class _Search:
    """One start search: the base oracle under the arm bounds, and the best action that fits so far."""

    def __init__(self, base, w, G, h, lower, upper) -> None:
        self.base, self.w, self.G, self.h = base, w, G, h
        self.forced = lower > 0.5
        self.banned = upper < 0.5
        self.res = make_restrictions(
            base.d, tuple(np.flatnonzero(self.forced).tolist()), tuple(np.flatnonzero(self.banned).tolist()), ()
        )
        self.solver = ALGORITHMS[type(base)]
        self.tol = _TOL * (1.0 + np.abs(h))
        self.best: np.ndarray | None = None
        self.best_value = -np.inf
        self.misses: list[np.ndarray] = []  # base answers that break a side row (for the repair)
        #: The least Lagrangian bound met, its multipliers and base answer (for fixing arms).
        self.bound, self.lam, self.relaxed = np.inf, np.zeros(len(h)), None

    def oracle(self, costs: np.ndarray) -> np.ndarray | None:
        try:
            return self.solver(self.base, LinearQuery(costs, self.res))
        except UnsupportedQuery:  # pragma: no cover - supported_base() rules these out
            return None

    def fits(self, a: np.ndarray) -> bool:
        return bool((matvec(self.G, a) <= self.h + self.tol).all())

    def offer(self, a: np.ndarray) -> bool:
        """Keep ``a`` when it fits and beats the best; return whether it fits."""
        if not self.fits(a):
            return False
        value = float(self.w[a].sum())
        if value > self.best_value:
            self.best, self.best_value = a, value
        return True

    def at(self, lam: np.ndarray) -> tuple[np.ndarray | None, bool]:
        reduced = self.w - matvec(self.G.T, lam)
        a = self.oracle(reduced)
        if a is None:
            return None, False
        bound = float(reduced[a].sum() + dot(lam, self.h))  # >= w @ b for every action b (lam >= 0)
        if bound < self.bound:
            self.bound, self.lam, self.relaxed = bound, lam, a
        fits = self.offer(a)
        if not fits:
            self.misses.append(a)
        return a, fits


@dataclass
class SidePlan:
    """What :func:`side_plan` found for one query.

    ``start``: the best action found (or ``None``); ``bound``: the least Lagrangian bound met,
    ``>= weights @ b`` for every action ``b`` under the bounds; ``fixed``: the arms on which every
    action of value above ``start``'s (minus the margin) agrees with ``start``, proven by the flip
    bounds (``None``: none); ``region_bound``: a bound on the actions that differ from ``start`` on
    a fixed arm (``-inf`` when none is fixed), below ``start``'s value.
    """

    start: np.ndarray | None
    bound: float = math.inf
    fixed: np.ndarray | None = None
    region_bound: float = -math.inf
    #: The optimum, when the arms left free after fixing were few enough to enumerate (:func:`solve_core`).
    optimum: np.ndarray | None = None


def side_plan(
    base: ActionSpace,
    weights: np.ndarray,
    G: np.ndarray,
    h: np.ndarray,
    lower: ArmBounds = None,
    upper: ArmBounds = None,
    *,
    fix: bool = True,
    margin: float = FIX_MARGIN,
) -> SidePlan:
    """A good action of ``base`` with ``G a <= h`` for ``max weights @ a``, the Lagrangian bound, and the arms fixed.

    The action is a bool vector or ``None`` (module docstring); ``lower`` / ``upper`` are arm
    bounds in {0, 1} (1 / 0 fix an arm); with ``fix``, the arms the flip bounds fix (below).

    An arm ``j`` is fixed when the Lagrangian bound of the actions whose ``j`` differs from the
    relaxation's answer (closed forms on subsets of at most m and partition matroids) is below the
    start's value minus ``margin * (1 + |value|)``: no action within that margin of the optimum is lost.

    >>> import numpy as np
    >>> plan = side_plan(Cardinality(4, 2), np.array([3.0, 2.0, 2.0, -1.0]), np.array([[2.0, 1.0, 1.0, 1.0]]),
    ...                  np.array([2.0]))
    >>> plan.start.astype(int).tolist(), plan.bound, int(plan.fixed.sum())  # the bound proves it: all fixed
    ([0, 1, 1, 0], 4.0, 4)
    """
    if not supported_base(base):
        raise ValueError(f"side_plan needs a base space with an exact combinatorial oracle, got {base!r}")
    d = base.d
    w = np.asarray(weights, float)
    G = np.asarray(G, float).reshape(-1, d)
    h = np.asarray(h, float).reshape(-1)
    if w.shape != (d,) or not np.isfinite(w).all():
        raise ValueError(f"weights must be {d} finite numbers, got shape {w.shape}")
    if len(h) != len(G) or not np.isfinite(G).all() or not np.isfinite(h).all():
        raise ValueError(f"G must be (k, {d}) and h (k,), finite; got {G.shape} and {h.shape}")
    lower = np.zeros(d) if lower is None else np.asarray(lower, float)
    upper = np.ones(d) if upper is None else np.asarray(upper, float)
    if ((lower > 0.5) & (upper < 0.5)).any():
        return SidePlan(None)
    search = _Search(base, w, G, h, lower, upper)
    a0, fits = search.at(np.zeros(len(h)))
    if a0 is None:
        return SidePlan(None)  # the base has no action under these bounds
    if not fits:
        if len(h) == 1:
            _bisect(search)
        elif not _lp_multipliers(search):
            _subgradient(search)
        if _downward_closed(base):
            for a in search.misses[-4:]:  # the answers nearest the least fitting multiplier
                repaired = _drop(search, a)
                if repaired is not None:
                    search.offer(repaired)
        if search.best is not None:
            search.offer(_improve(search, search.best))
    plan = SidePlan(search.best, search.bound)
    if fix and search.best is not None:
        _fix(search, plan, margin)
        if plan.fixed is not None:
            plan.optimum = solve_core(
                base,
                w,
                G,
                h,
                np.where(plan.fixed, plan.start, False),
                plan.fixed | search.forced | search.banned,
                search.forced,
            )
    return plan


def _bisect(search: _Search) -> None:
    """The least multiplier of the one side row whose base answer fits, by bisection."""
    g = search.G[0]
    w = search.w
    scale = float(np.abs(g[g != 0.0]).min(initial=1.0))
    top = 2.0 * float(np.abs(w).max(initial=0.0)) / max(scale, 1e-12) + 1.0
    _, fits = search.at(np.array([top]))
    if not fits:
        return  # no multiplier makes the base answer fit: the repair may still
    lo, hi = 0.0, top
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        a, fits = search.at(np.array([mid]))
        if a is None:
            return
        lo, hi = (lo, mid) if fits else (mid, hi)


def _subgradient(search: _Search) -> None:
    """Projected subgradient on the multipliers of several side rows (Polyak steps on the Lagrangian bound)."""
    G, h, w = search.G, search.h, search.w
    lam = np.zeros(len(h))
    theta = 1.0
    best_bound = np.inf
    stall = 0
    for _ in range(SUBGRADIENT_STEPS):
        a, _ = search.at(lam)
        if a is None:
            return
        bound = float((w - matvec(G.T, lam))[a].sum() + dot(lam, h))  # the Lagrangian bound at lam
        if bound < best_bound - 1e-12 * (1.0 + abs(best_bound)):
            best_bound, stall = bound, 0
        else:
            stall += 1
            if stall >= 4:
                theta, stall = theta / 2.0, 0
        g = matvec(G, a) - h
        g[(lam <= 0.0) & (g < 0.0)] = 0.0  # the projection keeps these at 0 anyway
        norm = dot(g, g)
        if norm <= 1e-18:
            return
        target = search.best_value if search.best is not None else bound - 0.05 * (1.0 + abs(bound))
        lam = np.maximum(lam + theta * max(bound - target, 1e-9 * (1.0 + abs(bound))) / norm * g, 0.0)


def _lp_multipliers(search: _Search) -> bool:
    """The optimal multipliers of several side rows: the duals of the LP relaxation, when the base's LP is integral.

    Then the Lagrangian dual equals that LP (the base polytope is its LP), so its row duals minimise the
    Lagrangian bound (subgradient steps end farther from it: docs/performance.md, "Graphs").
    The LP starts cold: the multipliers depend on the query alone. Return whether it answered.
    """
    own = search.base.formulation()
    if not own.integral_lp or own.n_aux:
        return False
    d = search.base.d
    rows = [
        Row(tuple(range(d)), tuple(g.tolist()), -math.inf, float(b)) for g, b in zip(search.G, search.h, strict=True)
    ]
    lp = new_engine(Formulation(d=d, rows=[*own.rows, *rows]), integer=False)
    lp.set_costs(search.w)
    lp.set_arm_bounds(tuple(np.flatnonzero(search.forced).tolist()), tuple(np.flatnonzero(search.banned).tolist()))
    result = lp.solve()
    if result.status != "optimal":
        return False
    search.at(np.abs(lp.row_duals()[own.n_rows :]))  # any lam >= 0 gives a valid bound (HiGHS's sign convention)
    down = np.asarray(result.values)[:d] > 1.0 - 1e-9  # the LP point rounded down: few arms are fractional
    if search.base._contains(down):
        search.offer(down)
    return True


def _drop(search: _Search, a: np.ndarray) -> np.ndarray | None:
    """Drop arms from ``a`` (least weight per unit of violation first) until the side rows hold, or ``None``."""
    G, h, w = search.G, search.h, search.w
    a = a.copy()
    for _ in range(int(a.sum())):
        over = matvec(G, a) - h > search.tol
        if not over.any():
            return a
        relief = np.clip(G[over], 0.0, None).sum(axis=0)  # how much each arm's removal relieves
        candidates = np.flatnonzero(a & ~search.forced & (relief > 0.0))
        if not len(candidates):
            return None
        j = candidates[np.argmin(w[candidates] / relief[candidates])]
        a[j] = False
    return a if search.fits(a) else None


def _improve(search: _Search, a: np.ndarray) -> np.ndarray:
    """Fill and exchange arms while the value grows, keeping the base, the bounds and the side rows."""
    base, G, h, w, tol = search.base, search.G, search.h, search.w, search.tol
    free = ~search.forced & ~search.banned
    a = _fill(search, a)
    for _ in range(SWAP_ROUNDS):
        slack = h - matvec(G, a)
        ins = np.flatnonzero(a & free)
        outs = np.flatnonzero(~a & free)
        if not len(ins) or not len(outs):
            break
        gain = w[outs][None, :] - w[ins][:, None]
        ok = gain > 1e-12 * (1.0 + np.abs(w[ins][:, None]))
        if len(h):
            change = G[:, outs][:, None, :] - G[:, ins][:, :, None]
            ok &= (change <= (slack + tol)[:, None, None]).all(axis=0)
        pairs = np.argwhere(ok)
        if not len(pairs):
            break
        order = np.argsort(-gain[ok], kind="stable")[:SWAP_TRIES]
        for k in order:
            i, j = pairs[k]
            b = a.copy()
            b[ins[i]], b[outs[j]] = False, True
            if base._contains(b):
                a = _fill(search, b)
                break
        else:
            break
    return a


def _fill(search: _Search, a: np.ndarray) -> np.ndarray:
    """Add arms of positive weight (best first) while the base and the side rows allow."""
    base, G, h, w, tol = search.base, search.G, search.h, search.w, search.tol
    candidates = np.flatnonzero(~a & ~search.banned & (w > 0.0))
    if not len(candidates):
        return a
    a = a.copy()
    slack = h - matvec(G, a)
    for j in candidates[np.argsort(-w[candidates], kind="stable")]:
        if (G[:, j] <= slack + tol).all():
            a[j] = True
            if base._contains(a):
                slack = slack - G[:, j]
            else:
                a[j] = False
    return a


def _fix(search: _Search, plan: SidePlan, margin: float) -> None:
    """Fix the arms whose flip bound (see :func:`flip_bounds`) is below the start's value minus the margin."""
    if search.relaxed is None:
        return
    reduced = search.w - matvec(search.G.T, search.lam)
    change = flip_bounds(search.base, reduced, search.relaxed, search.forced, search.banned)
    if change is None:
        return
    flipped = search.bound + change  # per free arm: the bound of the actions whose value there differs
    value = search.best_value
    fixed = flipped < value - margin * (1.0 + abs(value))
    if not fixed.any():
        return
    if (search.relaxed[fixed] != plan.start[fixed]).any():  # pragma: no cover - the start has value > the bound
        return
    plan.fixed = fixed
    plan.region_bound = float(flipped[fixed].max())
