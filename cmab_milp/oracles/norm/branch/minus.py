"""Sign -1 by branch and bound on the linear oracle: convex-hull bounds from Frank-Wolfe steps.

For ``M`` positive semidefinite, ``n(x) = sqrt(x @ M @ x)`` is a (semi)norm and Cauchy-Schwarz in
the ``M`` inner product gives, for every point ``x`` with ``n(x) > 0`` and every action ``a``,

    ``n(a) >= (M x) @ a / n(x)``,  so  ``mu @ a - f n(a) <= g @ a``  with  ``g = mu - f M x / n(x)``.

Hence for any set ``S`` of actions, ``max_{a in S} g @ a`` (one linear query over ``S``) bounds the
index of every action of ``S`` from above; minimised over ``x`` it is the convex relaxation
``max_{x in conv S} mu @ x - f n(x)`` (``g`` is its gradient at ``x``: Frank-Wolfe steps, whose
vertices ``argmax g @ a`` are the linear queries, drive ``x`` there; every step's bound is valid,
so the least one is kept). With ``x = 0`` (``n = 0``) ``g = mu``: ``mu @ a`` bounds the index.

Branch and bound (:class:`LinearOracleBranch`): a node is ``S`` = the actions of the space that
hold its ``include`` arms and none of its ``exclude`` arms (the query's restrictions, minus its
``forbid_pairs``, are the root's); the linear query over a node is answered exactly by the
space's combinatorial algorithm (:mod:`~cmab_milp.oracles.backends.combinatorial`). A node is split on the
arm whose relaxed value is the most fractional (include it / exclude it), or, when the relaxed
point puts more than 1 on a forbidden pair ``(i, j)``, into "exclude ``i``" and "include ``i``,
exclude ``j``": either way the children partition the parent's actions, and the forbidden pairs,
not in the linear queries (a superset of actions: the bound stays valid), are enforced by the
splits and by the incumbent test (an incumbent is an action of the space that the query's
restrictions admit). A child's bound is at most its parent's (a subset). A node is dropped when
its bound is proven below the incumbent (:func:`~cmab_milp.oracles.core.certify.proven`) or when it holds no action;
one with every arm fixed is a single action, valued exactly. Every vertex met is a candidate
incumbent, valued exactly in numpy. The nodes are explored best bound first (ties by creation
order: deterministic), so when the queue empties the incumbent is within the tolerance of
``max(incumbent, every dropped node's bound)``, the bound returned.

General (non-bipartite) matchings: the linear queries are asked over the fractional matching polytope
(``x(delta(v)) <= 1``, ``= 1`` for perfect ones; :func:`~cmab_milp.oracles.core.exact.prepare_fractional_matching`:
one assignment on the bipartite double cover, far cheaper than the blossom algorithm). It holds
every matching of the node, so every bound above stays valid (a maximum over a larger set); its vertices are
half-integral, so a vertex is offered as an incumbent after :meth:`LinearOracleBranch.round_matching`, and the
search splits on the fractional arms as before.

A stronger form (:func:`relaxation_matrix`): every action has ``a_i^2 = a_i`` and at most ``m`` arms,
so for a diagonal ``D = diag(s^2) >= 0`` with ``M - D`` PSD, Cauchy-Schwarz gives
``(s @ a)^2 <= |a| (a @ D @ a) <= m (a @ D @ a)`` and

    ``a @ M @ a = a @ (M - D) @ a + a @ D @ a >= a @ (M - D + s s' / m) @ a``

with equality on the actions of ``m`` arms when ``D`` is uniform. ``M_r = M - D + s s' / m`` is PSD, so everything above
holds with ``n_r(x) = sqrt(x @ M_r @ x)`` in place of ``n`` in the bounds (``n_r <= n`` on actions: the
bounds stay valid), while between actions ``n_r`` is larger (at ``x = (m / d) 1``, by
``sum(D) (m - m^2 / d) / d``): the relaxation no longer gains by spreading ``x`` over many arms.
``D`` is :func:`~.shifts.diagonal_shift` below ``M`` on the free arms (the larger by trace of
``lambda I`` and ``lambda' diag(M)``), less a rounding margin. Incumbents are valued with ``M`` itself.

Each node takes at most ``tuning.branch_steps`` Frank-Wolfe steps (exact line search, :func:`line_maximum`) and
is split as soon as a relaxed point is worth more than the incumbent (every bound of the node is
at least its relaxed values, so none could prune it). The first incumbent is the linear argmax or
a hint (no local search: the vertices met are incumbents too).

Rounding: ``g @ a`` carries the rounding of ``M x``, ``n(x)`` and the sum (each at most about
``d`` ulps of the terms); :meth:`LinearOracleBranch.bound` adds ``_ROUND * d * eps`` times the sum
of the terms' magnitudes, which covers it. The combinatorial algorithms are exact on their
floating-point weights up to the same rounding of a sum.

Measured figures and the ideas tried: ``docs/performance.md``, "Norm queries".

Example
-------
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import last_stats
>>> oracle = cm.make_oracle(cm.Cardinality(6, 2), "highs")
>>> mu = np.array([0.9, 0.8, 0.7, 0.1, 0.0, 0.2])
>>> M = np.eye(6) + 0.5 * np.ones((6, 6))
>>> oracle.argmax_norm(mu, M, 0.5, sign=-1).astype(int).tolist(), last_stats(oracle).method
([1, 1, 0, 0, 0, 0], 'branch-linear-oracle')
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ....spaces import Matchings, STPaths
from ...core.base import LimitReached, OracleError
from ...core.certify import proven
from ...core.exact import ALGORITHMS, prepare_fractional_matching, prepare_linear
from ...core.queries import NormQuery, Restrictions
from ...mip.tuning import HighsTuning
from ..shifts import diagonal_shift

#: The defaults, where a search is built without the oracle's choices (tests, benchmarks).
_DEFAULT = HighsTuning()

__all__ = ["LinearOracleBranch", "applies", "best_first", "line_maximum", "quadratic_line_maximum", "relaxation_matrix"]

#: A node stops its steps when its bound is within this (relative) of its relaxed value.
_REL_GAP = 1e-4
#: Rounding allowance of a bound, in units of ``d * eps`` times the terms' magnitudes.
_ROUND = 8.0
#: Nodes explored before the query is declared unproven (~0.5 KB each in the queue at d = 100: the
#: memory stays under ~250 MB; a time limit usually comes first).
_MAX_NODES = 500_000
_EPS = float(np.finfo(float).eps)


class NodeBudget(OracleError):
    """A search took more nodes than it was given (its incumbent stays on the branch: ``best``, ``best_value``)."""


def applies(space) -> bool:
    """Whether the space has an exact combinatorial linear oracle for any weights and include/exclude.

    Not s-t paths in graphs with cycles (a longest path: a MILP of ~1 s a query on an 8x8 grid)
    nor spaces with side rows (no combinatorial algorithm): those keep the secant MILPs.

    >>> import cmab_milp as cm
    >>> import networkx as nx
    >>> applies(cm.Cardinality(4, 2)), applies(cm.STPaths(nx.cycle_graph(4), 0, 2))
    (True, False)
    >>> applies(cm.Matchings(nx.complete_graph(4))), applies(cm.Cardinality(4, 2).with_constraint([1] * 4, "<=", 1))
    (True, False)
    """
    return type(space) in ALGORITHMS and (type(space) is not STPaths or space.acyclic)


def line_maximum(
    mu: np.ndarray, M: np.ndarray, f: float, x: np.ndarray, step: np.ndarray, mx: np.ndarray | None = None
) -> float:
    """The ``t`` in ``[0, 1]`` maximising ``mu @ (x + t step) - f n(x + t step)`` (closed form).

    ``n(x + t step)^2 = A t^2 + 2 B t + C``; a stationary point solves
    ``(mu @ step) sqrt(A t^2 + 2 B t + C) = f (A t + B)``, squared a quadratic in ``t``;
    the best of its roots in ``(0, 1)`` and the ends is returned.

    ``mx`` is ``M @ x`` when known.

    >>> line_maximum(np.array([1.0]), np.eye(1), 0.0, np.array([0.0]), np.array([1.0]))
    1.0
    """
    ms = M @ step
    A, B, C = float(step @ ms), float(x @ ms), float(x @ (M @ x if mx is None else mx))
    return quadratic_line_maximum(float(mu @ step), A, B, C, f)


def quadratic_line_maximum(c: float, A: float, B: float, C: float, f: float) -> float:
    """The ``t`` in ``[0, 1]`` maximising ``c t - f sqrt(A t^2 + 2 B t + C)`` (closed form; :func:`line_maximum`).

    >>> quadratic_line_maximum(1.0, 0.0, 0.0, 0.0, 0.0)
    1.0
    """

    def value(t: float) -> float:
        return c * t - f * np.sqrt(max(A * t * t + 2.0 * B * t + C, 0.0))

    candidates = [0.0, 1.0]
    qa, qb, qc = c * c * A - f * f * A * A, 2.0 * B * (c * c - f * f * A), c * c * C - f * f * B * B
    if qa != 0.0:
        disc = qb * qb - 4.0 * qa * qc
        if disc >= 0.0:
            root = np.sqrt(disc)
            candidates += [t for t in ((-qb + root) / (2 * qa), (-qb - root) / (2 * qa)) if 0.0 < t < 1.0]
    elif qb != 0.0 and 0.0 < -qc / qb < 1.0:
        candidates.append(-qc / qb)
    return max(candidates, key=value)


@dataclass(order=True)
class _Node:
    key: float  # minus the node's bound (heapq pops the least)
    order: int
    include: np.ndarray = field(compare=False)
    exclude: np.ndarray = field(compare=False)
    gradient: np.ndarray | None = field(compare=False, default=None)
    error: float = field(compare=False, default=0.0)  # the gradient's rounding allowance
    form: object = field(compare=False, default=None)  # a subclass's bound data, passed to the children


class LinearOracleBranch:
    """Branch and bound for ``max mu @ a - f sqrt(a @ M @ a)`` (``M`` PSD) with linear-query bounds.

    ``space`` gives the linear oracle (:func:`applies` must hold), ``query`` the index and the
    restrictions, ``arms`` the arms not excluded; ``deadline`` and ``clock`` the time limit.
    """

    def __init__(
        self,
        space,
        query: NormQuery,
        arms: np.ndarray,
        deadline: float | None,
        clock: Callable[[], float],
        tuning: HighsTuning = _DEFAULT,
    ):
        self.tuning = tuning  # the highs backend's choices (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`)
        self.space = space
        self.q = query
        self.res = query.restrictions
        arms = self.searched_arms(np.asarray(arms, int))
        d = len(query.mu)
        self.d = d
        self.deadline = deadline
        self.clock = clock
        self.free = np.zeros(d, bool)
        self.free[arms] = True
        self.free[list(self.res.include)] = False
        self.pairs = np.asarray(self.res.forbid_pairs, int).reshape(-1, 2)
        self.M = self.bound_matrix(query.M, arms)  # the bounds' matrix
        self.mu_abs = float(np.abs(query.mu).max(initial=0.0))
        self.row_abs = float(np.abs(self.M).sum(axis=1).max(initial=0.0))
        self.seen: set[bytes] = set()
        self.nodes = self.queries = 0
        self._prepared_for: Restrictions | None = None
        self._prepared: Callable[[np.ndarray], np.ndarray | None] = lambda w: None
        self.best: np.ndarray | None = None
        self.best_value = -np.inf
        self.max_nodes = _MAX_NODES  # beyond: NodeBudget
        #: General matchings: bound over the fractional matching polytope (one assignment a query, not a blossom).
        self.fractional = self.tuning.fractional_matchings and type(space) is Matchings and not space.bipartite
        self._weights: np.ndarray | None = None  # of the last linear query (rounds a fractional vertex)
        #: How many of the best actions met to keep besides the incumbent (:meth:`runners_up`; a carried
        #: sequence offers them to later queries, :mod:`.carry`).
        self.keep = 0
        self._kept: list[tuple[float, int, np.ndarray]] = []  # a min-heap of (index, order met, action)
        self.prepare(arms)

    def searched_arms(self, arms: np.ndarray) -> np.ndarray:
        """The arms the search bounds over, of the ``arms`` not excluded (all of them here; a subclass may leave
        out those no admitted action holds). Called first in the constructor, with ``space``, ``q`` and ``res``
        set."""
        return arms

    def prepare(self, arms: np.ndarray) -> None:
        """A subclass's own set-up on the search's ``arms``, called last in the constructor (nothing here)."""

    # ------------------------------------------------------------ pieces
    def bound_matrix(self, M: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """The matrix of the sign -1 bounds: :func:`relaxation_matrix` (``M`` itself without ``_SHIFT``)."""
        return relaxation_matrix(M, arms, int(self.space.m)) if self.tuning.branch_shift else M

    def restrictions(self, include: np.ndarray, exclude: np.ndarray) -> Restrictions:
        """A node's restrictions for the linear queries: the query's include and exclude and the node's."""
        return Restrictions(
            tuple(sorted({*self.res.include, *np.flatnonzero(include).tolist()})),
            tuple(sorted({*self.res.exclude, *np.flatnonzero(exclude).tolist()})),
        )

    def linear(self, w: np.ndarray, res: Restrictions) -> np.ndarray | None:
        """The exact argmax of ``w @ a`` over the node's actions (``forbid_pairs`` left out).

        The node's restrictions are prepared once (:func:`~cmab_milp.oracles.core.exact.prepare_linear`) for
        its several queries.
        """
        self.queries += 1
        if res is not self._prepared_for:
            prepare = prepare_fractional_matching if self.fractional else prepare_linear
            self._prepared_for, self._prepared = res, prepare(self.space, res)
        self._weights = w
        return self._prepared(w)

    def gradient(self, mx: np.ndarray, n: float) -> tuple[np.ndarray, float]:
        """``g = mu - f M x / n(x)`` (``mu`` at ``n(x) = 0``) from ``mx = M x`` and ``n = n(x)``, and its rounding
        allowance: a bound on the terms of each entry (``x`` in ``[0, 1]``: ``|M x|`` is at most ``|M|``'s row sums).
        """
        q = self.q
        if n <= 0.0:
            return q.mu, 0.0
        return q.mu - q.f * mx / n, self.mu_abs + q.f * self.row_abs / n

    def bound(self, g: np.ndarray, err: float, s: np.ndarray) -> float:
        """``g @ s`` (``s`` the argmax of ``g``) plus the rounding allowance: the index of no action is above it.

        ``err`` bounds the terms of each entry of ``g`` (:meth:`gradient`); an action has at most ``m`` arms.
        """
        k = float(self.space.m)  # no action has more arms
        if self.fractional:  # (a fractional matching may sum to n / 2 > m)
            k = max(k, float(s.sum()))
        return float(g @ s) + _ROUND * self.d * _EPS * (err + float(np.abs(g).max(initial=0.0))) * k

    def offer(self, action: np.ndarray) -> None:
        """Make ``action`` the incumbent when the query admits it and it is better.

        Only actions not met before whose index (computed quickly, within far less than ``1e-6``)
        is near or above the incumbent's are valued exactly.
        """
        if action.dtype != bool:  # a vertex of the fractional matching polytope
            action = self.round_matching(action)
        key = action.tobytes()
        if key in self.seen:  # met before: valued or screened out then (the incumbent only rises since)
            return
        self.seen.add(key)
        q = self.q
        x = action.astype(float)
        norm = float(np.sqrt(max(float(x @ (q.M @ x)), 0.0)))
        quick = float(q.mu @ x) + q.sign * q.f * norm  # a screen; value() decides
        if self.pairs.size and (action[self.pairs[:, 0]] & action[self.pairs[:, 1]]).any():
            return
        if self.keep:
            if len(self._kept) < self.keep:
                heapq.heappush(self._kept, (quick, len(self.seen), action.copy()))
            elif quick > self._kept[0][0]:
                heapq.heapreplace(self._kept, (quick, len(self.seen), action.copy()))
        if quick + 1e-6 * (1.0 + abs(quick)) <= self.best_value:
            return
        value = self.q.value(action)
        if value > self.best_value and self.space._contains(action):
            self.best, self.best_value = action.copy(), value

    def runners_up(self) -> list[np.ndarray]:
        """Up to :attr:`keep` of the best actions met (admitted by the restrictions and in the space), best first."""
        ordered = sorted(self._kept, key=lambda entry: (-entry[0], entry[1]))
        return [action for _, _, action in ordered if self.space._contains(action)]

    def round_matching(self, x: np.ndarray) -> np.ndarray:
        """A matching from a half-integral point: its arms at 1, then its arms at 1/2 by the last linear query's
        weights (the positive ones, best first) while both their nodes are free."""
        action = x > 1.0 - 1e-9
        half = np.flatnonzero((x > 1e-9) & ~action)
        if not len(half):
            return action
        space, w = self.space, self._weights
        used = np.zeros(space.n_nodes, bool)
        used[space.tail[action]] = used[space.head[action]] = True
        for k in half[np.argsort(-w[half], kind="stable")]:
            u, v = space.tail[k], space.head[k]
            if not used[u] and not used[v] and (w[k] > 0 or space.perfect):
                action[k] = used[u] = used[v] = True
        return action

    def _check_time(self) -> None:
        if self.deadline is not None and self.clock() > self.deadline:
            raise LimitReached("norm branch and bound stopped on its time limit; no action is returned")

    # ------------------------------------------------------------ search
    def relax(self, node: _Node) -> tuple[float, np.ndarray | None]:
        """Frank-Wolfe steps on the node: its bound (at most the parent's) and the last relaxed point.

        The first linear query takes the parent's last gradient (its bound is valid for the child too).
        """
        q, M, f = self.q, self.M, self.q.f
        res = self.restrictions(node.include, node.exclude)
        bound = -node.key
        g, err = (q.mu, 0.0) if node.gradient is None else (node.gradient, node.error)
        s = self.linear(g, res)
        if s is None:
            return -np.inf, None
        self.offer(s)
        bound = min(bound, self.bound(g, err, s))
        x = s.astype(float)
        for _ in range(self.tuning.branch_steps):
            if proven(value=self.best_value, bound=bound, measured_at="bound"):
                break
            mx = M @ x
            n = float(np.sqrt(max(float(x @ mx), 0.0)))
            g, err = self.gradient(mx, n)
            s = self.linear(g, res)
            self.offer(s)
            bound = min(bound, self.bound(g, err, s))
            relaxed = float(q.mu @ x) - f * n
            if bound - relaxed <= _REL_GAP * (1.0 + abs(bound)) or (
                self.tuning.branch_early and relaxed > self.best_value
            ):
                break  # converged, or no bound can prune the node (each is >= its relaxed values): split it
            step = s - x
            x = x + line_maximum(q.mu, M, f, x, step, mx) * step
        node.gradient, node.error = g, err
        return bound, x

    def split(self, node: _Node, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Children ``(include, exclude)`` that partition the node's actions."""
        free = self.free & ~node.include & ~node.exclude
        if self.pairs.size:
            over = x[self.pairs[:, 0]] + x[self.pairs[:, 1]] - 1.0
            k = int(np.argmax(over))
            if over[k] > 1e-9:
                i, j = self.pairs[k]
                out = []
                if free[i]:
                    out.append((node.include, _with(node.exclude, i)))
                    if free[j] or node.exclude[j]:
                        out.append(
                            (_with(node.include, i), node.exclude if node.exclude[j] else _with(node.exclude, j))
                        )
                elif free[j]:  # i included (or excluded: then x_i = 0 and the pair is not over)
                    out.append((node.include, _with(node.exclude, j)))
                return out
        if not free.any():
            return []
        frac = np.where(free, np.minimum(x, 1.0 - x), -1.0)
        i = int(np.argmax(frac))
        if frac[i] <= 1e-9:  # an integral point: split on its first free arm
            on = np.flatnonzero(free & (x > 0.5))
            i = int(on[0]) if len(on) else int(np.flatnonzero(free)[0])
        return [(node.include, _with(node.exclude, i)), (_with(node.include, i), node.exclude)]

    def run(
        self, best: np.ndarray | None, best_value: float, settled: Callable[[float, float], bool] | None = None
    ) -> tuple[np.ndarray | None, float, float]:
        """The best action, its value and the proven bound (see the module docstring).

        ``settled(bound, value)`` (the approximate mode, ``norm_gap``) may stop the search early:
        it is asked before each node with the largest bound of the open nodes (best first, so the
        node just taken holds it) and of the pruned ones, an upper bound on every action.
        """
        if best is not None and best_value > self.best_value:  # (a subclass may have met a better one)
            self.best, self.best_value = best.copy(), best_value
        return best_first(self, self.d, settled, self.max_nodes, "norm branch and bound")


def best_first(
    branch, width: int, settled: Callable[[float, float], bool] | None, max_nodes: int, name: str
) -> tuple[np.ndarray | None, float, float]:
    """The search of the norm branches: best bound first over include / exclude nodes of ``width`` columns.

    ``branch`` gives ``relax(node) -> (bound, x)`` (``x`` None: nothing to split, the bound is kept),
    ``split(node, x)`` (children covering the node's actions; none: a single action, valued by the branch),
    ``_check_time()``, and ``best``, ``best_value``, ``nodes`` (updated). Ties between bounds are broken by
    creation order: the search is deterministic. Returns the best action, its value and the largest bound
    of the nodes dropped, an upper bound on every action (``settled(top, value)``, the approximate mode,
    may stop early; ``top`` is then the largest bound of the open and dropped nodes, or the branch's
    ``global_bound`` when that is lower: a bound on every action found after the nodes were keyed, such as
    the tuned root's of :class:`~.branch.plus.ConcaveBranch`).
    """
    queue = [_Node(-np.inf, 0, np.zeros(width, bool), np.zeros(width, bool))]
    dropped = -np.inf
    order = 1
    while queue:
        node = heapq.heappop(queue)
        if settled is not None:
            top = min(max(-node.key, dropped, branch.best_value), getattr(branch, "global_bound", np.inf))
            if branch.best is not None and settled(top, branch.best_value):
                return branch.best, branch.best_value, top
        branch._check_time()
        if proven(value=branch.best_value, bound=-node.key, measured_at="bound"):
            dropped = max(dropped, -node.key)
            continue
        branch.nodes += 1
        if branch.nodes > max_nodes:
            raise NodeBudget(f"{name}: more than {max_nodes} nodes, optimality not proven")
        bound, x = branch.relax(node)
        if x is None or proven(value=branch.best_value, bound=bound, measured_at="bound"):
            dropped = max(dropped, bound)
            continue
        for include, exclude in branch.split(node, x):
            if (include & exclude).any():
                continue
            heapq.heappush(queue, _Node(-bound, order, include, exclude, node.gradient, node.error, node.form))
            order += 1
    return branch.best, branch.best_value, max(dropped, branch.best_value)


def relaxation_matrix(M: np.ndarray, arms: np.ndarray, m: int) -> np.ndarray:
    """``M - D + s s' / m`` with ``D = diag(s^2) >= 0`` on ``arms`` and ``M - D`` PSD there (module docstring).

    Its quadratic form is at most ``M``'s on every set of at most ``m`` of ``arms`` (equal at ``m`` arms
    when ``D`` is uniform) and is PSD on ``arms``. ``D``: :func:`~.shifts.diagonal_shift` below ``M``
    (the larger by trace of two candidates, less a rounding margin; zero when ``M`` is not PSD there).

    >>> M = np.eye(3) + 0.5 * np.ones((3, 3))
    >>> R = relaxation_matrix(M, np.arange(3), 1)  # actions: one arm each
    >>> bool(np.allclose(np.diag(R), np.diag(M))), bool(np.linalg.eigvalsh(R)[0] >= 0)
    (True, True)
    >>> x = np.full(3, 1 / 3)  # between the actions: larger than M's form
    >>> round(float(x @ M @ x), 3), round(float(x @ R @ x), 3)
    (0.833, 1.5)
    """
    arms = np.asarray(arms, int)
    out = np.array(M, dtype=float)
    if m <= 0 or not len(arms):
        return out
    # no max-cut candidate: on bench/norm_large.py's sign -1 queries it never beat lambda_min (same nodes)
    shift = diagonal_shift(out, arms, above=False, sweeps=0)[arms]
    s = np.zeros(len(out))
    s[arms] = np.sqrt(shift)
    out[arms, arms] -= shift
    return out + np.outer(s, s) / m


def _with(mask: np.ndarray, i: int) -> np.ndarray:
    out = mask.copy()
    out[i] = True
    return out
