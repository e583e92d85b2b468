"""Sign -1 on s-t paths of graphs with cycles: LP branch and bound with tangents of the norm.

The query is ``max mu @ a - f n(a)``, ``n(a) = sqrt(a @ M @ a)``, ``M`` positive definite, over the simple
s-t paths ``a`` that its restrictions admit. No combinatorial linear oracle exists here (a longest path
is NP-hard), so :mod:`.branch.minus` does not apply; this module bounds nodes by a linear program instead.

The relaxation ``P``: the space's own path formulation (flow / degree rows, the visit columns of undirected
graphs; their orientation columns left out), as an LP, with the query's ``forbid_pairs`` as rows
``a_i + a_j <= 1``, the node's fixings as column bounds, and rows valid for every path: s-t cuts
``a(delta(S)) >= 1`` (``s`` in ``S``, ``t`` not: a path leaves ``S``; undirected graphs, one max flow; the
orientation columns give the same polytope: option ``paths_unoriented``), connectivity cuts
``a(delta(S)) >= a(delta(v))`` (``v`` in ``S``, ``s`` and ``t`` not; directed ``a(delta_in(S)) >=
a(delta_in(v))``, ``s`` not in ``S``: a path through ``v`` enters ``S``), found at an LP point from the
components of its support above a few thresholds (:func:`~.paths.cuts.component_cuts`, no max flow) and, at the root,
by the space's max-flow separator when those find none; and the forest row of a cycle at an integral
point. Every row holds for every admitted path, so ``P`` holds the node's actions.

A column ``t`` (cost ``-f``, bounds ``[0, sqrt(l_hi)]``, ``l_hi`` an upper bound of ``a @ M @ a`` on
actions) stands for the norm, and *tangent rows* ``t >= (N x0) @ a / n_N(x0)`` bound it from below,
for ``N`` either

* ``M`` itself: by Cauchy-Schwarz in the ``M`` inner product ``n(a) >= (M x0) @ a / n(x0)`` for every
  ``a`` and every ``x0`` with ``n(x0) > 0``; or
* the shifted ``M_r = M - D + s s' / m`` of :func:`~.branch.minus.relaxation_matrix` (PSD, and
  ``a @ M_r @ a <= a @ M @ a`` on every set of at most ``m = space.m`` arms): ``n(a) >= n_r(a) >=
  (M_r x0) @ a / n_r(x0)``. Between actions ``n_r`` is larger than ``n``, so its tangents cut off the
  fractional points that spread over many arms; ``M``'s tangents are exact at the action ``x0``. The
  chord form ``R`` of :mod:`.paths.chord` takes ``M_r``'s place (its tangents
  ``n(a) >= g @ a + g0``, a row with a constant): the same ``D``, with ``sqrt(d @ a)`` bounded by its chord
  between the fewest arms of a path (:func:`~.paths.cuts.shortest_length`, the excluded arms left out) and
  ``arms_bound``, rather than from 0: ``R >= n_r`` on every point of at least that many arms, so on ``P``.
  (``M_r`` comes back when ``M - D`` fails the eigenvalue check in floating point.)

So every admitted action ``a`` of a node gives the LP point ``(a, n(a))`` (``n(a) <= sqrt(l_hi)``), of
LP value ``mu @ a - f n(a)``, its index: the LP optimum bounds the node, whatever subset of the rows
above the LP holds. Tangent rows are shared by every later node of the query; those without a dual
price in the last ``tuning.paths_idle_lps`` LPs are deleted once there are more than
``tuning.paths_purge_above`` (a subset of valid rows: bounds stay
valid). This is Kelley's cutting-plane method on the convex relaxation ``max_{x in P} mu @ x - f max(n(x),
n_r(x))``, with all the query's tangents in every node (the Frank-Wolfe bound of :mod:`.branch.minus` uses
one tangent at a time), stabilised by in-out separation (the tangent is taken at the midpoint of the LP
point and the node's best point so far, when it cuts the LP point off). A node stops its rounds when its
bound is proven below the incumbent, no row is violated, three rounds in a row lowered the bound by
less than 1% of its gap to the incumbent, or an LP point that violates no row of the space is worth more
than the incumbent (then no bound of the node is likely to prune it: it is split at once). When to stop
is a choice of effort only: any bound computed is valid. ``M``'s tangent at each new incumbent joins the
pool too (the LP is then exact there).

Branch and bound: best bound first (ties by creation order). A node is split on its most fractional
visit column (undirected graphs: the path goes through node ``v`` of the graph or not, ``z_v`` in {0, 1};
fixing ``z_v`` fixes the degree of ``v``) or, when those are integral, on its most fractional free arm
(include it / exclude it); either way the children partition the node's actions. Each node's LP points give
candidate incumbents: an integral point itself (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.repair`
when it holds cycles), the shortest path on lengths ``1 - x`` (the path the LP leans on) and, every few nodes,
the heuristic path of the tangent's weights (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.start_action`); each
valued exactly in numpy, kept when the query admits it. A candidate better than the incumbent, or
within 5% of it, is first improved by :func:`~.paths.local_search.improve_path` (a sub-path of at most 3 arms
swapped for a detour of at most 4 while that gains; the result is checked and valued like any
candidate, so bounds and exactness are untouched).

Proven bounds: the LP's objective is not used as a bound; :func:`~.paths.lp.safe_bound` proves one from
HiGHS's row duals by weak duality (:mod:`.paths.lp`, valid for any duals). Tangent rows are loosened by their
own rounding allowance, so a rounded coefficient never cuts off an action. The query ends when no open node's bound
exceeds the incumbent by more than the contract's ``1e-9 (1 + |bound|)``
(:func:`~cmab_milp.oracles.core.certify.proven`);
the bound returned is the largest dropped one (or the incumbent's value).

Determinism: each query builds its LP afresh, and the order of nodes, LPs and rows depends on the query
alone, so an answer never depends on earlier queries.

Measured figures and the ideas tried: ``docs/performance.md``, "Norm queries".

Example
-------
The search alone (:mod:`.norm.method` runs it for the ``highs`` backend), on ``L <= 3`` (no path has more edges):

>>> import time
>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)  # 0-1-2 or 0-4-3-2
>>> query = cm.make_oracle(space, "enumerate").norm_query(np.array([0.5, 0.1, 0.5, 0.6, 0.6]), np.eye(5), 0.1, -1)
>>> best, value, bound = PathBranch(space, query, np.arange(5), 3.0, None, time.perf_counter).run(None, -np.inf)
>>> best.astype(int).tolist(), bool(value <= bound <= value + 1e-9)
([0, 1, 0, 1, 1], True)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....spaces import STPaths
from ....spaces.formulation import Row
from ...core.base import LimitReached
from ...core.certify import proven
from ...core.queries import NormQuery
from ...mip.graph_cuts import separate_paths_lp, separate_st_cut_lp
from ...mip.graph_starts import PathStarts
from ...mip.tuning import HighsTuning
from ..branch.minus import _Node, best_first, relaxation_matrix
from ..scaling import arms_bound
from .chord import ChordNorm
from .cuts import _CUT_VIOLATION, _violation, component_cuts, shortest_length
from .local_search import improve_path
from .lp import _EPS, _ROUND, _PathLP

#: The defaults, where a search is built without the oracle's choices (tests, benchmarks).
_DEFAULT = HighsTuning()

__all__ = ["PathBranch", "applies"]

#: Nodes (in order) whose LP points get the space's full separation (a max flow per node of the graph);
#: later nodes get the cuts of the support's components, and max flows only when those find none.
_FULL_CUT_NODES = 1
#: Tangent / cut rounds (LP solves) per node at most; the root gets ``_ROOT_ROUNDS``.
_ROUNDS = 8
_ROOT_ROUNDS = 40
#: A round "stalls" when it lowers the bound by less than this fraction of the gap to the incumbent; a node
#: stops after ``_STALL_ROUNDS`` stalled rounds in a row (Kelley's tail is long: split instead).
_STALL = 0.01
_STALL_ROUNDS = 3
#: The root's: its tangents serve every node.
_ROOT_STALL = 0.01
_VISIT_FRACTION = 1e-6
#: The separation point's weight on the node's best point (the rest on the LP point).
_CENTER_WEIGHT = 0.5
#: A tangent row enters when ``f (n_N(x) - t)`` exceeds this, relative to ``1 + |bound|``.
_TANGENT_GAP = 1e-7
#: Nodes before the query is declared unproven (the time limit usually comes first).
_MAX_NODES = 200_000
#: The path of the tangent's weights (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.start_action`) at every
#: this many nodes (the shortest path on ``1 - x`` at every node).
_GROW_EVERY = 8
#: ... and each candidate path within this fraction of ``1 + |incumbent|`` below the incumbent (None: new ones only).
_LOCAL_NEAR: float | None = 0.05


def applies(space) -> bool:
    """Whether the space is s-t paths of a graph with cycles (the spaces this module is for).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> applies(cm.STPaths(nx.cycle_graph(4), 0, 2)), applies(cm.STPaths(nx.DiGraph([(0, 1), (1, 2)]), 0, 2))
    (True, False)
    """
    return type(space) is STPaths and not space.acyclic


class PathBranch:
    """Branch and bound for ``max mu @ a - f n(a)`` on s-t paths of a cyclic graph (module docstring).

    ``query`` holds the index and the restrictions, ``arms`` the arms not excluded, ``l_hi`` an upper
    bound of ``a @ M @ a`` on actions; ``deadline`` and ``clock`` the time limit.
    """

    def __init__(
        self,
        space: STPaths,
        query: NormQuery,
        arms: np.ndarray,
        l_hi: float,
        deadline: float | None,
        clock: Callable[[], float],
        tuning: HighsTuning = _DEFAULT,
    ):
        self.tuning = tuning  # the highs backend's choices (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`)
        if not applies(space):
            raise ValueError("PathBranch needs s-t paths of a graph with cycles")
        self.space, self.q, self.res = space, query, query.restrictions
        self.d = d = space.d
        self.deadline, self.clock = deadline, clock
        self.free = np.zeros(d, bool)
        self.free[arms] = True
        self.free[list(self.res.include)] = False
        self.M = query.M
        #: The leading LP columns the forms see (:meth:`tangents_at`, :meth:`norm`): the arms, or more (a subclass)
        self.width = d
        self.lp = self.make_bounds(arms, l_hi)
        self.branchable = np.zeros(self.lp.n, bool)  # free arms and visit columns
        self.branchable[:d] = self.free
        self.branchable[self.lp.visits] = True
        self.seen: set[bytes] = set()
        self.nodes = self.lps = self.tangents = self.cuts = self.purged = 0
        self.root_bound = np.nan  # the root's proven bound (a statistic)
        self.soft_limit = False  # past the deadline a node ends its rounds instead of raising (norm_gap)
        self.max_flows = True  # whether the max-flow separation still runs (module docstring)
        self.best: np.ndarray | None = None
        self.best_value = -np.inf

    def make_bounds(self, arms: np.ndarray, l_hi: float) -> _PathLP:
        """The forms whose tangents bound ``t`` (:meth:`tangents_at`) and the query's LP (``t`` in ``[0,
        sqrt(l_hi)]``): :class:`~.paths.plus.ConcavePathBranch` makes its own."""
        query = self.q
        #: The chord forms (:mod:`.paths.chord`) whose tangents bound ``t`` (none: ``M_r``'s instead).
        self.forms: list[ChordNorm] = []
        if self.tuning.paths_chord:
            try:
                self.forms.append(ChordNorm(query.M, arms, shortest_length(self.space, arms), arms_bound(self.space)))
            except ValueError:  # M - D not PSD in floating point (M barely definite): the shifted matrix, as before
                pass
        shifted = self.tuning.paths_shifted_tangents and not self.forms
        self.M_r = relaxation_matrix(query.M, arms, arms_bound(self.space)) if shifted else None
        return _PathLP(self.space, query, float(np.sqrt(max(l_hi, 0.0))), tuning=self.tuning)

    # ------------------------------------------------------------ incumbents
    def offer(self, action: np.ndarray | None) -> None:
        """Make ``action`` the incumbent when it is an admitted path better than the incumbent."""
        if action is None:
            return
        key = action.tobytes()
        if key in self.seen:
            return
        self.seen.add(key)
        if not self.space._contains(action) or not self.res.admits(action):
            return
        value = self.q.value(action)
        near = _LOCAL_NEAR is not None and value > self.best_value - _LOCAL_NEAR * (1.0 + abs(self.best_value))
        if self.tuning.paths_local_search and (
            value > self.best_value or near
        ):  # climb (paths_local: admitted, valued exactly)
            action, value = improve_path(self.space, self.q, action)
            self.seen.add(action.tobytes())
        if value > self.best_value:
            self.best, self.best_value = action.copy(), value
            if self.tuning.paths_incumbent_tangents:
                made = self.exact_tangent(action.astype(float))
                if made is not None:
                    self.lp.add_tangent(*made)  # the LP is exact at the incumbent

    def integral(self, x: np.ndarray, g: np.ndarray | None) -> None:
        """Offer an LP point integral on the arms (repaired when it is no path)."""
        chosen = x > 0.5
        if np.all(np.abs(x - chosen) <= 1e-6):
            self.offer(
                chosen
                if self.space._contains(chosen)
                else PathStarts.of(self.space).repair(chosen, self.q.mu if g is None else g)
            )

    def heuristics(self, x: np.ndarray, g: np.ndarray) -> None:
        """Candidate incumbents from an LP point ``x`` and the tangent's weights ``g`` (module docstring)."""
        space = self.space
        ban = self.lp.arm_hi < 0.5
        self.offer(PathStarts.of(space)._shortest(1.0 - np.clip(x, 0.0, 1.0) + 1e-9, ban, space.directed))
        if self.nodes % _GROW_EVERY == 1:  # Dijkstra plus detours: every few nodes
            self.offer(PathStarts.of(space).start_action(g, upper=self.lp.arm_hi, conflicts=self.res.forbid_pairs))

    # ------------------------------------------------------------ bounding
    def exact_tangent(self, action: np.ndarray) -> tuple[np.ndarray, float] | None:
        """``(coef, lo)`` of the row ``t - coef @ a >= lo`` exact at ``action`` (``M``'s tangent there)."""
        made = self.tangent(self.M, action)
        return None if made is None else (made[0], -made[2])

    def tangent(self, N: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float, float] | None:
        """``(N x) / n_N(x)``, ``n_N(x)`` and the rounding allowance of the row ``t >= (N x) @ a / n_N(x)``;
        ``None`` at ``n_N(x) = 0``."""
        nx_ = N @ x
        quad = float(x @ nx_)
        if quad <= 0.0:
            return None
        n = float(np.sqrt(quad))
        coef = nx_ / n
        slack = _ROUND * self.d * _EPS * (float(np.abs(N).sum(axis=1).max()) / n + float(np.abs(coef).sum()) + 1.0)
        return coef, n, slack

    def tangents_at(self, x: np.ndarray) -> list[tuple[np.ndarray, float, float]]:
        """``(g, g0, allowance)`` of each lower bound's tangent at ``x``: ``n(a) >= g @ a + g0 - allowance`` on every
        admitted action, for ``M`` (first), then ``M_r`` or the chord form."""
        out = []
        for N in (self.M, self.M_r):
            made = None if N is None else self.tangent(N, x)
            if made is not None:
                out.append((made[0], 0.0, made[2]))
        for form in self.forms:
            made = form.tangent(x[: self.d])
            if made is not None:
                out.append((made[0], made[1], made[3]))
        return out

    def norm(self, x: np.ndarray) -> float:
        """``max(n(x), n_r(x), R(x))``: the relaxation's norm (tangents of each bound ``t``)."""
        out = float(np.sqrt(max(float(x @ self.M @ x), 0.0)))
        if self.M_r is not None:
            out = max(out, float(np.sqrt(max(float(x @ self.M_r @ x), 0.0))))
        for form in self.forms:
            out = max(out, form.value(x))
        return out

    def cuts_at(self, x: np.ndarray, full: bool, st: bool = True) -> list[Row]:
        """The space's rows violated at ``x``: connectivity cuts of the components of ``x``'s support (and, when
        ``full`` or none is found, by max flow), a cycle's forest row at an integral point."""
        space = self.space
        chosen = x > 0.5
        rows = component_cuts(space, x)
        if self.tuning.paths_unoriented and not space.directed and (st or not self.tuning.paths_st_lazy):
            rows += separate_st_cut_lp(space, x, space.s, space.t, False)
        if not rows and full and self.max_flows:
            rows = separate_paths_lp(space, x)  # (none at a path)
            self.max_flows = bool(rows)  # none found: no more max flows in this query
        if np.all(np.abs(x - chosen) <= 1e-6) and not space._contains(chosen):
            rows += space.separate_cycles(chosen)
        return [r for r in rows if _violation(r, x) > _CUT_VIOLATION]

    def relax(self, node: _Node) -> tuple[float, np.ndarray | None]:
        """The node's Kelley rounds (more at the root: :data:`_ROOT_ROUNDS`), then the tangent rows' purge."""
        root = self.nodes == 1
        bound, x = self.kelley(node, _ROOT_ROUNDS if root else _ROUNDS, _ROOT_STALL if root else _STALL)
        if len(self.lp.tangent_lo) > self.tuning.paths_purge_above:  # (the LP's time grows with its dense rows)
            self.purged += self.lp.purge(self.tuning.paths_idle_lps)
        if root:
            self.root_bound = bound
        return bound, x

    def kelley(self, node: _Node, rounds: int, stall: float = 0.0) -> tuple[float, np.ndarray | None]:
        """Kelley rounds on the node: its proven bound and the last LP point, all columns (``None``: no action)."""
        q, lp = self.q, self.lp
        lp.set_node(node.include, node.exclude)
        bound = -node.key
        x = g = center = None
        center_value = -np.inf
        stalled = 0
        for _ in range(rounds):
            if self.soft_limit and self.deadline is not None and self.clock() > self.deadline:
                break  # the approximate mode: the search loop decides (settled), with this node's bound so far
            self._check_time()
            self.lps += 1
            found = lp.solve()
            if found is None:
                return -np.inf, None
            full, lp_bound = found
            gain = bound - lp_bound
            bound = min(bound, lp_bound)
            gap = bound - self.best_value if np.isfinite(self.best_value) else 1.0 + abs(bound)
            stalled = stalled + 1 if gain < (stall or _STALL) * gap else 0
            x, t = full[: self.d], float(full[lp.t])
            z = full[: self.width]  # what the forms see: the arms (and the visit columns with a product form)
            value = float(q.mu @ x) - q.f * self.norm(z)  # the relaxation's value at x: its optimum is >= this
            if center is None or value > center_value:
                center, center_value = z, value
            tangents = []
            g = None
            tol = _TANGENT_GAP * (1.0 + abs(bound))
            points = [z]
            if self.tuning.paths_in_out and center is not z:
                points.insert(0, _CENTER_WEIGHT * center + (1.0 - _CENTER_WEIGHT) * z)
            for point in points:
                for coef, const, slack in self.tangents_at(point):
                    if g is None and point is z:  # the weights whose linear maximum bounds the index (M's tangent)
                        g = q.mu - q.f * coef[: self.d]
                    if q.f * (float(coef @ z[: len(coef)]) + const - t) > tol:  # (x, t) violates the tangent at point
                        tangents.append((coef, const - slack))
                if tangents and not self.tuning.paths_both_points:
                    break
            self.integral(x, g)
            if proven(value=self.best_value, bound=bound, measured_at="bound") or stalled >= _STALL_ROUNDS:
                break
            cuts = self.cuts_at(x, self.nodes <= _FULL_CUT_NODES, st=not tangents or self.nodes <= _FULL_CUT_NODES)
            self.cuts += len(cuts)
            self.tangents += len(tangents)
            if not cuts and not tangents:
                break
            lp.add_rows(cuts)
            for coef, lo in tangents:
                lp.add_tangent(coef, lo)
            if self.tuning.paths_early and not cuts and value > self.best_value:
                break  # x is in P and worth more than the incumbent: no bound of this node can prune it
        if x is not None and self.tuning.paths_heuristics:
            self.heuristics(x, q.mu if g is None else g)
        return bound, (None if x is None else full)

    def _check_time(self) -> None:
        if self.deadline is not None and self.clock() > self.deadline:
            raise LimitReached("norm path branch and bound stopped on its time limit; no action is returned")

    # ------------------------------------------------------------ search
    def split(self, node: _Node, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Children ``(include, exclude)`` that partition the node's actions: on the most fractional visit
        column (a node of the graph on the path or not), else the most fractional free arm."""
        free = self.branchable & ~node.include & ~node.exclude
        if not free.any():
            return []
        frac = np.where(free, np.minimum(x, 1.0 - x), -1.0)
        if self.tuning.paths_visit_branch and len(self.lp.visits):
            v = self.lp.visits
            k = int(np.argmax(frac[v]))
            i = int(v[k]) if frac[v[k]] > _VISIT_FRACTION else int(np.argmax(frac[: self.d]))
        else:
            i = int(np.argmax(frac[: self.d]))
        if frac[i] <= 1e-9:  # an integral point: split on its first free arm
            on = np.flatnonzero(free[: self.d] & (x[: self.d] > 0.5))
            i = int(on[0]) if len(on) else int(np.flatnonzero(free)[0])
        return [(node.include, _with(node.exclude, i)), (_with(node.include, i), node.exclude)]

    def run(
        self, best: np.ndarray | None, best_value: float, settled: Callable[[float, float], bool] | None = None
    ) -> tuple[np.ndarray | None, float, float]:
        """The best action, its value and the proven bound (``settled``: the approximate mode may stop early)."""
        self.soft_limit = settled is not None
        if best is not None:
            self.best, self.best_value = best.copy(), best_value
            self.seen.add(best.tobytes())
        try:
            return best_first(self, self.lp.n, settled, _MAX_NODES, "norm path branch and bound")
        finally:
            self.lp = None  # (frees the HiGHS instance)


def _with(mask: np.ndarray, i: int) -> np.ndarray:
    out = mask.copy()
    out[i] = True
    return out
