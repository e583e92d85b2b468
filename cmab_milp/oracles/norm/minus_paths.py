"""Sign -1 on s-t paths of graphs with cycles: LP branch and bound with tangents of the norm.

The query is ``max mu @ a - f n(a)``, ``n(a) = sqrt(a @ M @ a)``, ``M`` positive definite, over the simple
s-t paths ``a`` that its restrictions admit. No combinatorial linear oracle exists here (a longest path
is NP-hard), so :mod:`.minus_branch` does not apply; this module bounds nodes by a linear program instead.

The relaxation ``P``: the space's own path formulation (flow / degree rows, the visit columns of undirected
graphs; their orientation columns left out), as an LP, with the query's ``forbid_pairs`` as rows
``a_i + a_j <= 1``, the node's fixings as column bounds, and rows valid for every path: s-t cuts
``a(delta(S)) >= 1`` (``s`` in ``S``, ``t`` not: a path leaves ``S``; undirected graphs, one max flow; the
orientation columns give the same polytope, at ~25% more time), connectivity cuts
``a(delta(S)) >= a(delta(v))`` (``v`` in ``S``, ``s`` and ``t`` not; directed ``a(delta_in(S)) >=
a(delta_in(v))``, ``s`` not in ``S``: a path through ``v`` enters ``S``), found at an LP point from the
components of its support above a few thresholds (:func:`component_cuts`, no max flow) and, at the root,
by the space's max-flow separator when those find none; and the forest row of a cycle at an integral
point. Every row holds for every admitted path, so ``P`` holds the node's actions.

A column ``t`` (cost ``-f``, bounds ``[0, sqrt(l_hi)]``, ``l_hi`` an upper bound of ``a @ M @ a`` on
actions) stands for the norm, and *tangent rows* ``t >= (N x0) @ a / n_N(x0)`` bound it from below,
for ``N`` either

* ``M`` itself: by Cauchy-Schwarz in the ``M`` inner product ``n(a) >= (M x0) @ a / n(x0)`` for every
  ``a`` and every ``x0`` with ``n(x0) > 0``; or
* the shifted ``M_r = M - D + s s' / m`` of :func:`~.minus_branch.relaxation_matrix` (PSD, and
  ``a @ M_r @ a <= a @ M @ a`` on every set of at most ``m = space.m`` arms): ``n(a) >= n_r(a) >=
  (M_r x0) @ a / n_r(x0)``. Between actions ``n_r`` is larger than ``n``, so its tangents cut off the
  fractional points that spread over many arms; ``M``'s tangents are exact at the action ``x0``. The
  chord form ``R`` of :mod:`.paths_chord` takes ``M_r``'s place (its tangents
  ``n(a) >= g @ a + g0``, a row with a constant): the same ``D``, with ``sqrt(d @ a)`` bounded by its chord
  between the fewest arms of a path (:func:`shortest_length`, the excluded arms left out) and
  ``arms_bound``, rather than from 0: ``R >= n_r`` on every point of at least that many arms, so on ``P``.
  (``M_r`` comes back when ``M - D`` fails the eigenvalue check in floating point.)

So every admitted action ``a`` of a node gives the LP point ``(a, n(a))`` (``n(a) <= sqrt(l_hi)``), of
LP value ``mu @ a - f n(a)``, its index: the LP optimum bounds the node, whatever subset of the rows
above the LP holds. Tangent rows are shared by every later node of the query; those without a dual
price in the last ``_IDLE_LPS`` LPs are deleted once there are many (a subset of valid rows: bounds stay
valid). This is Kelley's cutting-plane method on the convex relaxation ``max_{x in P} mu @ x - f max(n(x),
n_r(x))``, with all the query's tangents in every node (the Frank-Wolfe bound of :mod:`.minus_branch` uses
one tangent at a time), stabilised by in-out separation (the tangent is taken at the midpoint of the LP
point and the node's best point so far, when it cuts the LP point off). A node stops its rounds when its
bound is proven below the incumbent, no row is violated, three rounds in a row lowered the bound by
less than 1% of its gap to the incumbent, or an LP point that violates no row of the space is worth more
than the incumbent (then no bound of the node is likely to prune it: it is split at once). When to stop
is a choice of effort only: any bound computed is valid. ``M``'s tangent at each new incumbent joins the
pool too (the LP is then exact there; 8% fewer nodes at f = 1).

Branch and bound: best bound first (ties by creation order). A node is split on its most fractional
visit column (undirected graphs: the path goes through node ``v`` of the graph or not, ``z_v`` in {0, 1};
fixing ``z_v`` fixes the degree of ``v``) or, when those are integral, on its most fractional free arm
(include it / exclude it); either way the children partition the node's actions (measured: visit splits
first, 8x8 grid, f = 1, 139 nodes against 215). Each node's LP points give candidate incumbents: an
integral point itself (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.repair` when it holds cycles),
the shortest path on lengths ``1 - x`` (the path the LP leans on) and, every few nodes, the heuristic
path of the tangent's weights (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.start_action`); each
valued exactly in numpy, kept when the query admits it. A candidate better than the incumbent, or
within 5% of it, is first improved by :func:`~.paths_local.improve_path` (a sub-path of at most 3 arms
swapped for a detour of at most 4 while that gains; the result is checked and valued like any
candidate, so bounds and exactness are untouched).

Proven bounds: the LP is solved by HiGHS (tolerances ``1e-9``), so its objective is not used as a bound.
:func:`safe_bound` computes one from HiGHS's row duals ``y`` by weak duality, for any ``y``:
``c @ x = (c - A'y) @ x + y @ (A x) <= sum_j max(r_j l_j, r_j u_j) + sum_i max(y_i lo_i, y_i hi_i)``
with ``r = c - A'y`` and the column bounds ``[l, u]`` (all finite), ``y_i`` zeroed where its side of the
row is infinite, plus a rounding allowance; the least over ``y`` and ``-y`` is kept (either sign
convention of the duals gives a valid number). Tangent rows are loosened by their own rounding
allowance, so a rounded coefficient never cuts off an action. The query ends when no open node's bound
exceeds the incumbent by more than the contract's ``1e-9 (1 + |value|)`` (:func:`~.scaling.proven`);
the bound returned is the largest dropped one (or the incumbent's value).

Determinism: each query builds its LP afresh, and the order of nodes, LPs and rows depends on the query
alone, so an answer never depends on earlier queries.

Measured on bench/norm_large.py's s-t queries (8x8 grid, d = 112, ``--sign -1``, 3 queries per f, every
other one restricted; limit 10 s, ``*`` stopped; one run on the shared 2-core machine, load ~3-4, the three
interleaved per query): median / max s; before = the secant MILPs (this module switched off), SCIP's
nonconvex MIQCP for reference (Gurobi's size-limited licence refuses this model). Every query answered by
two of them got the same value::

    f     before               after            scip
    0.1   1.44 / 10.02 (1*)    0.24 / 0.35      10.14 / 12.92 (3*)
    0.3   3.33 / 5.96          0.28 / 0.36      10.13 / 10.16 (3*)
    1     10.01 / 10.03 (3*)   3.36 / 4.02      10.14 / 10.14 (3*)
    3     10.01 / 10.01 (3*)   10.00 / 10.01 (3*)  10.07 / 10.14 (3*)

At f = 1 the trees have 130-690 nodes (~2 LPs of ~3 ms each a node). At f = 3 the convex relaxation is
far from the optimum (root bound 20.6 against a best path of 12.8 found in 10 s), as for the other
families of :mod:`.minus_branch`: the norm gains from mixing paths (Jensen), which no row on ``x`` undoes.
Tried and dropped (node counts, same queries): max-flow separation at every node (more time, no fewer
nodes), 1-5 rounds a node (flat), weighting the branching score by the tangent's gradient (more nodes),
branching on eigenvectors of ``M`` (children bounds no lower than a visit split), HiGHS's dual edge
weights (devex, Dantzig: no faster).

Later, the local search of new incumbents (same queries, limit 10 s, one run, before = switched off,
after = on, interleaved per query; median / max s)::

    f     before              after
    0.1   0.21 / 0.39         0.21 / 0.39
    0.3   0.36 / 0.42         0.38 / 0.44
    1     3.06 / 3.19         2.85 / 3.01
    3     10.00 / 10.00 (3*)  10.01 / 10.01 (3*)

Best path at f = 3 (queries 0-2) after 1 s: 10.89 / 4.38 / 10.99 before, 12.76 / 10.28 / 11.93 after;
after 10 s: 11.19 / 9.73 / 10.99 before, 12.76 / 12.28 / 14.44 after (14.66 was the best in 120 s
before). Climbing from candidates within 5% of the incumbent too (20 s, one run): 13.10 / 12.37 /
14.44 -> 15.78 / 12.37 / 15.59, f <= 1 times unchanged (2.98 / 3.11 -> 2.97 / 3.12 at f = 1). The
approximate mode (``norm_gap=0.05``, ``time_limit=10``) then certifies ratios of 0.735 / 0.785 / 0.656 at
f = 3 in 10 s, against 0.572 / 0.622 / 0.586 with the search switched off. On a
random digraph (``nx.gnm_random_graph(120, 520, seed=1, directed=True)``, s = 0, t a node farthest from
it, d = 520, 2 queries, the first table's runs): f = 0.1 0.10 / 0.11 -> 0.09 / 0.11, f = 0.3 0.91 /
0.92 -> 1.13 / 1.32, f = 1 and 3 stopped at 10 s either way.

Why f = 3 stays out of reach: the relaxation, not the search. Converged (300 Kelley rounds) the root
bound is 20.08 at f = 3 query 0 against 14.66 (f = 1 query 1: 30.02 against 28.88, the optimum); in
120 s the open bound falls from 19.6 to 19.1 over 10,333 nodes. The best paths hold 50-60 of the 112
edges, and ``M = A A'/d + 0.1 I`` acts like ``1.1 I`` on them, while only ``lambda_min(M) ~ 0.1`` of
the diagonal can move to the linear part with ``M - D`` PSD: a mixture of two paths keeps ~half their
``a @ M @ a``. Terms on pairs that no path holds (idea (a): out-arcs or in-arcs of one node,
antiparallel arcs) do not lift it: on the digraph above, 2,230 such pairs raise ``lambda_min(M + S)``
from 0.100 to 0.106 (200 subgradient steps), and an undirected grid has one pair at ``s`` and one at
``t``. Also tried (f = 1, same queries): strong branching on the 4 most fractional columns, one LP a
child, above depth 6 or 3 (465-571 nodes against 589-615, no faster); diving
into the include child (more nodes); 1 or 2 rounds a node (2,065 nodes, 1.9x slower) and 6 or 10
(469 nodes, 5-10% faster in one run, not confirmed); 60 or 300 tangent rows before purging (flat); the
s-t max flow only when no component cut is violated (flat); each node's first LP from its parent's basis
(23.4 against 27.5 simplex iterations an LP, no faster: the basis conversions cost what it saves);
``safe_bound`` with cached transposes (flat); shifts on a node's free arms only (``lambda_min`` of a
principal submatrix of ``M``: 0.104 on 100 of the 112 arms, 0.131 on 80: deep nodes only). The optimum
given as the first incumbent saves 1-15% of the nodes at f = 1: the incumbent is not the bottleneck there.

Products of the path's rows. The potential first: Shor's semidefinite bound
``max mu @ x - f sqrt(<M, X>)`` over ``[[1, x'], [x, X]]`` PSD with ``diag(X) = x``, on the converged root LP's rows
(formulation, forbid rows, cuts; ``x`` = arms and visit columns), by a golden-section search over ``lambda`` of
``max mu @ x - f (<M, X> / lambda + lambda) / 2`` (SCS, 1e-5; scratch scripts, cvxpy): (a) the LP root as before,
(b) the SDP with the diagonal alone (the best ``D`` and an exact linear part), (c) plus the product of every
equality row with every column, the fixings and ``X_ij = 0`` on forbidden pairs; best = the optimum (f = 1) or
the best path of a 60 s approximate-mode run (f = 3)::

    query     (a) LP    (b) diag   (c) products   best     root gap closed by (c)
    f=1 q0    30.920    30.826     30.662         30.461   56%
    f=1 q1    30.023    29.921     29.709         28.878   27%
    f=3 q0    20.077    19.578     18.822         15.780   29%
    f=3 q1    16.181    15.808     15.131         12.372   28%
    f=3 q2    18.980    18.704     -              15.593   -

So even solved exactly the products leave 70% of the root gap at f = 3 (3 to 4 units): not the way to f = 3. In
the undirected formulation they amount to ``a_e (sum_{f at v, f != e} a_f - 1) = 0`` (``e`` at an inner node
``v``) and ``a_e a_f = 0`` at ``s`` and ``t`` (products with the equality rows alone change nothing on the LP's
affine hull). A first-order version (L-BFGS on ``x @ Z(tau) @ x + w lambda_min(M + Z(tau))`` at the root point,
soft minimum, exact penalty below ``lambda_min(M) / 2``, then the chord form of ``M + Z(tau)``) moved the f = 1
q0 root 30.909 -> 30.882 (the SDP: 30.662) at ~15 s a point: not kept (reaching (c) needs a real SDP method per
relaxed point). Maximising ``lambda_min(M + Z(tau))`` alone takes it 0.100 -> 0.160 but lowers the form between
paths (f = 3 q0 root 20.08 -> 20.45 with it instead of ``M_r``); homogenising ``d @ a`` exactly by ``deg_s(a) = 1``
(``M - D + sym(d deg_s')`` PSD) halves ``D`` (root 20.08 -> 20.17).

(b)'s gain over (a) is mostly the ``|a| / m`` lost by ``s s' / m``: the chord form (:mod:`.paths_chord`) takes a
third of it back at f = 3 (roots 20.077 / 16.181 / 18.980 -> 19.929 / 16.056 / 18.886; f = 1 30.920 / 30.023 /
32.219 -> 30.909 / 30.005 / 32.214). Profile at f = 1 (547 nodes): HiGHS 33-47%, component cuts 16% (now one
pass per distinct support), the s-t max flow 15% (now only in rounds that add no tangent), ``safe_bound`` 10%
(scipy's per-call overhead; now one dense copy of the rows), heuristics 8%. With the chord form, 8 Kelley rounds a
node beat 3 (below). Tried and dropped: pseudo-cost branching (product score; visit columns first or not: 155-681
nodes against 161-537, no faster), scipy's connected components for the support (slower than the union-find).

Before (chord, lazy s-t cuts, dense bound off, 3 rounds) / after, same queries (6 per f, 3 at f = 3), interleaved
per query, limit 10 s, one run; median / max s, nodes::

    f     before                            after
    0.1   0.06 / 0.31, 7-75 nodes           0.06 / 0.25, 5-73 nodes
    0.3   0.18 / 0.35, 15-87                0.16 / 0.24, 11-63
    1     2.75 / 5.15, 23-537 (2,104 in all)  2.14 / 4.01, 13-445 (1,632 in all)
    3     10.00 / 10.01 (6*)                10.01 / 10.01 (6*)

(the 5.15 and 4.01 are load spikes of the shared machine: 389 and 445 nodes.) Targets of the issue still
missed at f = 1 (median 1 s) and f = 3 (every query stops at 10 s); f <= 0.3 meets them.

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import last_stats
>>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)  # 0-1-2 or 0-4-3-2
>>> oracle = cm.make_oracle(space, "highs")
>>> mu, M = np.array([0.5, 0.1, 0.5, 0.6, 0.6]), np.eye(5)
>>> oracle.argmax_norm(mu, M, 0.1, sign=-1).astype(int).tolist(), last_stats(oracle).method
([0, 1, 0, 1, 1], 'branch-path-lp')
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ...spaces import STPaths
from ...spaces.formulation import Row
from ..backends.highs_model import CompiledModel, LimitReached
from ..core.base import NormQuery, OracleError
from ..mip.graph_cuts import separate_paths_lp, separate_st_cut_lp
from ..mip.graph_starts import PathStarts
from ..mip.tuning import HighsTuning
from .minus_branch import _Node, best_first, relaxation_matrix
from .paths_chord import ChordNorm
from .paths_local import improve_path
from .scaling import arms_bound, proven

#: The defaults, where a search is built without the oracle's choices (tests, benchmarks).
_DEFAULT = HighsTuning()

__all__ = ["PathBranch", "applies", "safe_bound"]

#: Nodes (in order) whose LP points get the space's full separation (a max flow per node of the graph,
#: ~1 ms each); later nodes get the cuts of the support's components, and max flows only when those find none.
_FULL_CUT_NODES = 1
#: Tangent / cut rounds (LP solves) per node at most; the root gets ``_ROOT_ROUNDS`` (8 rather than 3 with the
#: chord form: f = 1 nodes 13-603 -> 13-445, median 2.08 -> 1.87 s; f = 0.1 median 0.05 -> 0.11 s).
_ROUNDS = 8
_ROOT_ROUNDS = 40
#: A round "stalls" when it lowers the bound by less than this fraction of the gap to the incumbent; a node
#: stops after ``_STALL_ROUNDS`` stalled rounds in a row (Kelley's tail is long: split instead).
_STALL = 0.01
_STALL_ROUNDS = 3
#: The root's: its tangents serve every node.
_ROOT_STALL = 0.01
#: Tangent rows idle (no dual price) in this many LPs in a row are deleted once there are more than
#: ``_PURGE_ABOVE`` of them (the LP's time grows with its dense rows).
_IDLE_LPS = 20
_PURGE_ABOVE = 150
_VISIT_FRACTION = 1e-6
#: The separation point's weight on the node's best point (the rest on the LP point).
_CENTER_WEIGHT = 0.5
#: A tangent row enters when ``f (n_N(x) - t)`` exceeds this, relative to ``1 + |bound|``.
_TANGENT_GAP = 1e-7
#: A space row enters when the LP point violates it by more than this.
_CUT_VIOLATION = 1e-6
#: Rounding allowance, in units of ``eps`` times the number of terms times their magnitudes.
_ROUND = 8.0
#: Nodes before the query is declared unproven (the time limit usually comes first).
_MAX_NODES = 200_000
#: The path of the tangent's weights (:meth:`~cmab_milp.oracles.mip.graph_starts.PathStarts.start_action`) at every
#: this many nodes (the shortest path on ``1 - x`` at every node).
_GROW_EVERY = 8
_EPS = float(np.finfo(float).eps)
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


def safe_bound(
    c: np.ndarray, blocks: list, row_lo: np.ndarray, row_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray, y
) -> float:
    """An upper bound on ``max c @ x`` over ``row_lo <= A x <= row_hi``, ``lo <= x <= hi`` from any row prices ``y``.

    ``A`` is given as ``blocks`` stacked vertically (scipy sparse or numpy arrays). Weak duality with the
    box (module docstring): valid for every ``y``, tight for optimal duals; the column bounds must be
    finite. The lesser of the bounds of ``y`` and ``-y`` is returned, with a rounding allowance.

    >>> A = np.array([[1.0, 1.0]])
    >>> lo, hi, c = np.zeros(2), np.ones(2), np.array([1.0, 2.0])
    >>> bound = safe_bound(c, [A], np.array([-np.inf]), np.array([1.0]), lo, hi, np.array([2.0]))
    >>> round(bound, 9), bound >= 2.0  # max x0 + 2 x1 with x0 + x1 <= 1: 2
    (2.0, True)
    >>> round(safe_bound(c, [A], np.array([-np.inf]), np.array([1.0]), lo, hi, np.array([0.0])), 9)  # the box alone
    3.0
    """
    best = np.inf
    y = np.asarray(y, float)
    if len(y) != len(row_lo) or len(y) != sum(b.shape[0] for b in blocks):
        raise ValueError(f"{len(y)} row prices for {len(row_lo)} rows")
    n_terms = len(y) + len(c) + 2
    cuts = np.cumsum([0] + [b.shape[0] for b in blocks])
    for sign in (1.0, -1.0):
        z = sign * y
        z = np.where(((z > 0) & np.isposinf(row_hi)) | ((z < 0) & np.isneginf(row_lo)), 0.0, z)
        side = np.where(z > 0, row_hi, np.where(z < 0, row_lo, 0.0))
        rows = np.where(z != 0.0, z * side, 0.0)
        az, size_az = np.zeros(len(c)), np.zeros(len(c))
        for b, first, last in zip(blocks, cuts[:-1], cuts[1:], strict=True):
            az += b.T @ z[first:last]
            size_az += abs(b).T @ np.abs(z[first:last])
        r = c - az
        cols = np.maximum(r * lo, r * hi)
        size = float(np.abs(rows).sum() + ((np.abs(c) + size_az) * np.maximum(-lo, hi)).sum())
        best = min(best, float(rows.sum() + cols.sum()) + _ROUND * n_terms * _EPS * size)
    return best


class _PathLP:
    """The query's LP: the path formulation, the norm column ``t``, forbid rows, and the rows found so far.

    A copy of the rows is kept for :func:`safe_bound`: the sparse ones (formulation, forbid rows, cuts) and
    the dense tangents, each in the order added; ``tangent_row`` marks which HiGHS rows are tangents.
    """

    def __init__(
        self, space: STPaths, query: NormQuery, t_hi: float, t_lo: float = 0.0, tuning: HighsTuning = _DEFAULT
    ):
        self.tuning = tuning
        form = space.formulation().without_optional() if self.tuning.paths_unoriented else space.formulation()
        self.d = d = space.d
        self.model = CompiledModel(form, integer=False)
        self.t = self.model.add_cols(np.array([t_lo]), np.array([t_hi]), np.zeros(1, bool), ["norm"])
        self.n = self.t + 1
        a, lo, hi = form.matrix()
        self.sparse_rows: list[Row] = []
        self.base = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], self.n))
        self.base_lo, self.base_hi = np.asarray(lo, float), np.asarray(hi, float)
        self.sparse: sp.csr_matrix = self.base
        self.sparse_lo, self.sparse_hi = self.base_lo, self.base_hi
        self.tangents = np.zeros((0, self.n))
        self.dense: np.ndarray | None = None  # every row (sparse ones, then tangents), for safe_bound
        self.tangent_lo: list[float] = []
        self.idle = np.zeros(0, int)  # LPs since each tangent row last had a dual price
        self.tangent_row = np.zeros(a.shape[0], bool)
        #: The visit columns of undirected paths (``2 z_v`` = the degree of node ``v``): branched on too.
        names = form.col_names()
        self.visits = np.array([k for k, name in enumerate(names) if name.startswith("visit")], int)
        self.visit_nodes = [int(names[k].removeprefix("visit")) for k in self.visits]  # graph node of each
        self.col_lo = np.concatenate([np.zeros(d), form.aux_lb, [t_lo]]).astype(float)
        self.col_hi = np.concatenate([np.ones(d), form.aux_ub, [t_hi]]).astype(float)
        self.visit_lo, self.visit_hi = self.col_lo[self.visits].copy(), self.col_hi[self.visits].copy()
        if not np.isfinite(self.col_hi).all() or not np.isfinite(self.col_lo).all():  # pragma: no cover
            raise OracleError("the path formulation has an unbounded column: no safe LP bound")
        self.cost = np.zeros(self.n)
        self.cost[:d] = query.mu
        self.cost[self.t] = -query.f
        self.model.set_costs(self.cost[:d])
        self.model.set_col_cost(self.t, -query.f)
        self.arm_lo, self.arm_hi = np.zeros(d), np.ones(d)
        self.arm_lo[list(query.restrictions.include)] = 1.0
        self.arm_hi[list(query.restrictions.exclude)] = 0.0
        pairs = query.restrictions.forbid_pairs
        self.add_rows([Row((int(i), int(j)), (1.0, 1.0), -np.inf, 1.0) for i, j in pairs])
        self.model.clear_solver()

    def add_rows(self, rows: list[Row]) -> None:
        """Append sparse rows (valid for every admitted action)."""
        if not rows:
            return
        self.model.add_rows(rows)
        self.sparse_rows.extend(rows)
        self.tangent_row = np.concatenate([self.tangent_row, np.zeros(len(rows), bool)])
        self.sparse = self.dense = None  # rebuilt on the next bound

    def add_tangent(self, coef: np.ndarray, lo: float) -> None:
        """Append the row ``t - coef @ a >= lo``."""
        cols = np.flatnonzero(coef)
        self.model.add_rows([Row((*cols.tolist(), self.t), (*(-coef[cols]).tolist(), 1.0), lo, np.inf)])
        row = np.zeros(self.n)
        row[: self.d] = -coef
        row[self.t] = 1.0
        self.tangents = np.vstack([self.tangents, row])
        self.dense = None
        self.tangent_lo.append(lo)
        self.tangent_row = np.append(self.tangent_row, True)
        self.idle = np.append(self.idle, 0)

    def purge(self, idle: int) -> int:
        """Delete the tangent rows without a dual price in the last ``idle`` LPs; return how many.

        Any subset of the rows still gives a relaxation (valid bounds); the deleted rows are slack, so the
        basis stays usable.
        """
        drop = self.idle >= idle
        if not drop.any():
            return 0
        rows = np.flatnonzero(self.tangent_row)[drop]
        ends = np.flatnonzero(np.diff(rows) != 1)  # delete runs of consecutive rows, the last run first
        starts, stops = rows[np.r_[0, ends + 1]], rows[np.r_[ends, len(rows) - 1]] + 1
        for first, last in reversed(list(zip(starts, stops, strict=True))):
            self.model.delete_rows(int(first), int(last))
        keep = np.ones(len(self.tangent_row), bool)
        keep[rows] = False
        self.tangent_row = self.tangent_row[keep]
        self.tangents = self.tangents[~drop]
        self.dense = None
        self.tangent_lo = [v for v, k in zip(self.tangent_lo, drop, strict=True) if not k]
        self.idle = self.idle[~drop]
        return len(rows)

    def set_node(self, include: np.ndarray, exclude: np.ndarray) -> None:
        """Bounds of a node: arms and visit columns in ``include`` at 1, in ``exclude`` at 0 (over all columns)."""
        d = self.d
        lo = np.where(include[:d], 1.0, self.arm_lo)
        hi = np.where(exclude[:d], 0.0, self.arm_hi)
        self.model.set_arm_bounds(tuple(np.flatnonzero(lo > 0.5).tolist()), tuple(np.flatnonzero(hi < 0.5).tolist()))
        self.col_lo[:d], self.col_hi[:d] = lo, hi
        if len(self.visits):
            v = self.visits
            vlo = np.where(include[v], 1.0, self.visit_lo)
            vhi = np.where(exclude[v], 0.0, self.visit_hi)
            changed = (vlo != self.col_lo[v]) | (vhi != self.col_hi[v])
            if changed.any():
                for col, low, high in zip(v[changed], vlo[changed], vhi[changed], strict=True):
                    self.model.set_col_bounds(int(col), float(low), float(high))
                self.col_lo[v], self.col_hi[v] = vlo, vhi

    def solve(self) -> tuple[np.ndarray, float] | None:
        """The LP point and a proven upper bound of the LP, or ``None`` when HiGHS finds it infeasible."""
        model = self.model
        result = model.solve(cold=False)  # warm from the last basis; 'Unknown' retried cold, errors raise
        if result.status == "infeasible":
            return None
        x = np.asarray(result.values, float)
        if self.sparse is None:
            rows = self.sparse_rows
            extra = sp.csr_matrix(
                (
                    [c for r in rows for c in r.coefs],
                    [c for r in rows for c in r.cols],
                    np.cumsum([0] + [len(r.cols) for r in rows]),
                ),
                shape=(len(rows), self.n),
            )
            self.sparse = sp.vstack([self.base, extra], format="csr")
            self.sparse_lo = np.concatenate([self.base_lo, [r.lb for r in rows]])
            self.sparse_hi = np.concatenate([self.base_hi, [r.ub for r in rows]])
            self.dense = None
        if self.dense is None:  # every row, dense (a few hundred by ~2d: numpy beats scipy's per-call overhead)
            self.dense = (
                np.vstack([self.sparse.toarray(), self.tangents]) if self.tuning.paths_dense_bound else None
            )  # (~20 us)
            n_tan = len(self.tangent_lo)
            self.all_lo = np.concatenate([self.sparse_lo, self.tangent_lo])
            self.all_hi = np.concatenate([self.sparse_hi, np.full(n_tan, np.inf)])
        y = model.row_duals()
        tan = self.tangent_row
        self.idle = np.where(np.abs(y[tan]) > 0.0, 0, self.idle + 1)
        bound = safe_bound(
            self.cost,
            [self.dense] if self.tuning.paths_dense_bound else [self.sparse, self.tangents],
            self.all_lo,
            self.all_hi,
            self.col_lo,
            self.col_hi,
            np.concatenate([y[~tan], y[tan]]),
        )
        return x, bound


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
        sqrt(l_hi)]``): :class:`~.plus_paths.ConcavePathBranch` makes its own."""
        query = self.q
        #: The chord forms (:mod:`.paths_chord`) whose tangents bound ``t`` (none: ``M_r``'s instead).
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
        if self.nodes % _GROW_EVERY == 1:  # Dijkstra plus detours: ~2 ms
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
        if len(self.lp.tangent_lo) > _PURGE_ABOVE:
            self.purged += self.lp.purge(_IDLE_LPS)
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
            value = float(q.mu @ x) - q.f * self.norm(x)  # the relaxation's value at x: its optimum is >= this
            if center is None or value > center_value:
                center, center_value = x, value
            tangents = []
            g = None
            tol = _TANGENT_GAP * (1.0 + abs(bound))
            points = [x]
            if self.tuning.paths_in_out and center is not x:
                points.insert(0, _CENTER_WEIGHT * center + (1.0 - _CENTER_WEIGHT) * x)
            for point in points:
                for coef, const, slack in self.tangents_at(point):
                    if g is None and point is x:  # the weights whose linear maximum bounds the index (M's tangent)
                        g = q.mu - q.f * coef
                    if q.f * (float(coef @ x) + const - t) > tol:  # (x, t) violates the tangent at point
                        tangents.append((coef, const - slack))
                if tangents and not self.tuning.paths_both_points:
                    break
            self.integral(x, g)
            if proven(bound, self.best_value) or stalled >= _STALL_ROUNDS:
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


#: Support thresholds of :func:`component_cuts`.
_THRESHOLDS = (1e-6, 0.1, 0.3, 0.5, 0.7, 0.9)


def component_cuts(space: STPaths, x: np.ndarray) -> list[Row]:
    """Connectivity rows violated at ``x`` by a component of its support at a few thresholds (no max flow).

    A component ``S`` of the edges with ``x > theta`` that holds neither ``s`` nor ``t`` (directed: that ``s``
    does not reach) gives ``x(delta(S)) >= x(delta(v))`` (directed ``x(delta_in(S)) >= x(delta_in(v))``) for
    its node ``v`` of largest degree: a path through ``v`` enters ``S`` and leaves it (the rows of
    :func:`~cmab_milp.oracles.mip.graph_cuts.separate_connectivity_lp`).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3)), 0, 2)
    >>> x = np.zeros(space.d)
    >>> x[[space.arms.index(e) for e in [(0, 1), (1, 2), (3, 4), (4, 7), (6, 7), (3, 6)]]] = 1.0  # a path, a square
    >>> [(r.cols, r.coefs, r.lb) for r in component_cuts(space, x)]  # a(delta(S)) >= a(delta(3)), S the square
    [((2, 5, 6, 8, 11), (1.0, -1.0, -1.0, 1.0, 1.0), 0.0)]
    """
    x = np.clip(np.asarray(x, float), 0.0, 1.0)
    n, tail, head, s, t, directed = space.n_nodes, space.tail, space.head, space.s, space.t, space.directed
    into = np.bincount(head, weights=x, minlength=n)
    need = into if directed else into + np.bincount(tail, weights=x, minlength=n)
    rows: list[Row] = []
    seen: set[bytes] = set()
    for _theta, comp, kept in _support_components(n, tail, head, x):
        outside = np.ones(n, bool)
        if directed:  # the nodes s reaches along kept arcs are inside
            out: list[list[int]] = [[] for _ in range(n)]
            for e in kept:
                out[tail[e]].append(int(head[e]))
            stack, outside[s] = [s], False
            while stack:
                for w in out[stack.pop()]:
                    if outside[w]:
                        outside[w] = False
                        stack.append(w)
        else:
            outside[comp == comp[s]] = outside[comp == comp[t]] = False
        for c in np.unique(comp[outside & (need > 1e-6)]):
            mask = (comp == c) & outside
            key = mask.tobytes()
            if key in seen:
                continue
            seen.add(key)
            v = int(np.flatnonzero(mask)[np.argmax(need[mask])])
            if directed:
                coef = (~mask[tail] & mask[head]).astype(float) - (head == v)
            else:
                coef = (mask[tail] != mask[head]).astype(float) - ((tail == v) | (head == v))
            cols = np.flatnonzero(coef)
            if float(coef[cols] @ x[cols]) < -_CUT_VIOLATION:
                rows.append(Row(tuple(cols.tolist()), tuple(coef[cols].tolist()), 0.0, np.inf))
    return rows


def _support_components(n: int, tail: np.ndarray, head: np.ndarray, x: np.ndarray):
    """``(theta, component label per node, edges kept)`` for each threshold of :data:`_THRESHOLDS` that keeps other
    edges than the next larger one, ascending:
    the components of the edges with ``x > theta`` (undirected), by one union-find pass over the edges in
    decreasing ``x``."""
    order = np.argsort(-x, kind="stable").tolist()
    parent = list(range(n))
    tails, heads, xs = tail.tolist(), head.tolist(), x.tolist()

    def find(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    out, k = [], 0
    for theta in sorted(_THRESHOLDS, reverse=True):
        while k < len(order) and xs[order[k]] > theta:
            ru, rv = find(tails[order[k]]), find(heads[order[k]])
            if ru != rv:
                parent[ru] = rv
            k += 1
        if not out or k != len(out[-1][2]):  # (the same edges as the previous threshold: skipped)
            out.append((theta, np.array([find(v) for v in range(n)]), order[:k]))
    return out[::-1]


def shortest_length(space: STPaths, arms: np.ndarray) -> int:
    """The fewest arms of an s-t path of ``space`` on ``arms`` (0 when there is none): a lower bound on the size of
    every action that avoids the other arms.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)  # 0-1-2 or 0-4-3-2
    >>> shortest_length(space, np.arange(5)), shortest_length(space, np.array([1, 3, 4]))  # arms: (0, 1), (0, 4), ...
    (2, 3)
    """
    ban = np.ones(space.d, bool)
    ban[np.asarray(arms, int)] = False
    path = PathStarts.of(space)._shortest(np.ones(space.d), ban, space.directed)
    return 0 if path is None else int(np.count_nonzero(path))


def _violation(row: Row, x: np.ndarray) -> float:
    value = float(np.dot(row.coefs, x[list(row.cols)]))
    return max(row.lb - value, value - row.ub, 0.0)


def _with(mask: np.ndarray, i: int) -> np.ndarray:
    out = mask.copy()
    out[i] = True
    return out
