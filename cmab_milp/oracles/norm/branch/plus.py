"""Sign +1 by branch and bound on the linear oracle: a concave overestimator bounded by Frank-Wolfe steps.

The index ``phi(a) = mu @ a + f sqrt(a @ M @ a)`` is convex, so its maximum over the convex hull of
the actions is at a vertex: the hull alone bounds nothing. Let ``q(x) = x @ A @ x + b @ x`` be concave
(``A`` negative semidefinite on the free arms) with ``q(a) >= a @ M @ a`` on every action: the simplest is

    ``q(x) = x @ (M - D) @ x + d @ x``,  ``D = diag(d)`` with ``D - M`` PSD (:func:`concave_shift`),

equal to ``a @ M @ a`` on every action (``a_i^2 = a_i``); :func:`~.branch.overestimator.concave_overestimator`
adds terms that vanish or are nonnegative on every action (conflicting pairs, the size bound; its
docstring has the proof). Then ``q >= 0`` on the hull of the actions (concave, and ``>= 0`` at its
vertices), ``psi(x) = mu @ x + f sqrt(q(x))`` is concave where ``q > 0`` (``sqrt`` is concave and
increasing) and at least ``phi`` on actions, and for every point ``x`` with ``q(x) > 0`` and every action
``a`` (concavity: the tangent plane is above the graph)

    ``phi(a) <= psi(a) <= psi(x) + g @ (a - x)``,  ``g = grad psi(x) = mu + f (A x + b / 2) / sqrt(q(x))``.

Where ``q(x) = 0`` there is no tangent; the triangle inequality ``sqrt(a @ M @ a) <= sum_i a_i sqrt(M_ii)``
(``M`` PSD: the norm of a sum) gives the plane ``phi(a) <= (mu + f sqrt(diag M)) @ a``, valid everywhere,
which also starts every root.

So one linear query ``max_{a in S} g @ a`` bounds the index of every action of a set ``S`` of
actions, from any such ``x`` (not only in ``conv S``): a child node may start from its parent's last
gradient. Minimised over ``x in conv S`` the bound is ``max_{conv S} psi``, which Frank-Wolfe steps
(exact line search on ``psi``: :func:`~.branch.minus.quadratic_line_maximum`) approach; every step's bound
is valid and the least is kept.

The search itself (nodes = include / exclude sets of arms, split on the most fractional arm or a
violated forbidden pair, best bound first, ties by creation order, every vertex an incumbent
valued exactly) is :class:`~.branch.minus.LinearOracleBranch`'s; only the relaxation differs.

The overestimator is the one of the two with the lower root bound (:class:`ConcaveBranch`):
:func:`concave_shift`'s diagonal alone, or :func:`~.branch.overestimator.concave_overestimator`. The diagonal
is :func:`~.shifts.diagonal_shift` above the matrix (the least by trace of ``lambda_max I``,
``lambda'_max diag(M)`` and a max-cut semidefinite bound).

A search still open after ``tuning.concave_tune_after`` nodes tunes the root's diagonal for the points its
relaxation reaches (:meth:`ConcaveBranch.tune`: a weighted max-cut diagonal, weights ``x - x^2`` averaged over the
root's relaxed points), and a node whose free arms shrank takes the root's form lowered on them
(:meth:`ConcaveBranch.node_form`, one eigenvalue).

``M`` need not be definite: the covariance index's is not always (the paper's ``Sigma_bar``). The index is then
``mu @ a + f sqrt(max(a @ M @ a, 0))``, and the bounds are made on :func:`psd_majorant`'s ``P`` (PSD, with
``a @ P @ a >= max(a @ M @ a, 0)`` on 0/1 points), while every action is valued on ``M``.

Where it runs (:data:`~.branch.method.PLUS_BRANCH`): spaces with a combinatorial linear oracle whose MILP
needs lazy cuts (spanning trees, forests) or matchings (general ones on the fractional matching polytope of
:mod:`.branch.minus`); elsewhere the outer approximation's compact MILPs serve (the bound is loose when actions hold
few of many arms).

Measured figures and the ideas tried: ``docs/performance.md``, "Norm queries".

Example
-------
>>> import networkx as nx
>>> import cmab_milp as cm
>>> from cmab_milp.oracles.norm.solver import last_stats
>>> oracle = cm.make_oracle(cm.SpanningTrees(nx.cycle_graph(4)), "highs")  # trees: drop one edge of four
>>> mu, M = np.array([0.9, 0.8, 0.7, 0.1]), np.eye(4) + 0.5 * np.ones((4, 4))
>>> oracle.argmax_norm(mu, M, 0.5, sign=1).astype(int).tolist(), last_stats(oracle).method
([1, 1, 1, 0], 'branch-concave')
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.certify import proven
from ...mip.tuning import HighsTuning
from ..gradient import positive_definite
from ..scaling import arms_bound
from ..shifts import _MARGIN, diagonal_shift, low_rank_start, weighted_diagonal
from .minus import _EPS, _REL_GAP, _ROUND, LinearOracleBranch, _Node, quadratic_line_maximum
from .overestimator import conflict_pairs, overestimator_parts, shifted_form

#: The defaults, where a search is built without the oracle's choices (tests, benchmarks).
_DEFAULT = HighsTuning()

__all__ = ["ConcaveBranch", "concave_shift", "psd_majorant"]

#: Sweeps of the max-cut method in a node's new shift (the root's: :data:`~.shifts.SWEEPS`).
_REFORM_SWEEPS = 0
#: Rounds of the tuning, and Frank-Wolfe steps a round.
_TUNE_ROUNDS = 12
_TUNE_STEPS = 50
#: Sweeps of :func:`~.shifts.weighted_diagonal` in the first round and in the later (warm) ones.
_TUNE_SWEEPS = (20, 4)


def psd_majorant(M: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """``M`` raised on ``arms`` to ``P`` with ``a @ P @ a >= max(a @ M @ a, 0)`` for every 0/1 ``a`` on ``arms``.

    ``P = M + N``, ``N = V max(-L, 0) V'`` the negative part of the spectrum ``V L V'`` of ``M`` on ``arms`` (PSD,
    so ``a @ P @ a >= a @ M @ a``; and ``P = V max(L, 0) V'`` is PSD, so ``a @ P @ a >= 0``), plus a rounding
    margin on the diagonal. ``M`` itself where it is positive definite on ``arms``. The covariance index's ``M``
    need not be PSD (the paper's ``Sigma_bar``): the crew problem's just after its warm-up has eigenvalues down
    to ``-4e-4`` against a largest entry of ``2e-3``. The sign +1 bounds are made on ``P`` and every action is
    valued on ``M``.

    >>> M = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    >>> P = psd_majorant(M, np.arange(2))
    >>> bool(np.linalg.eigvalsh(P)[0] >= 0), [float(a @ P @ a) >= max(float(a @ M @ a), 0) for a in np.eye(2)]
    (True, [True, True])
    """
    arms = np.asarray(arms, int)
    sub = np.asarray(M, float)[np.ix_(arms, arms)]
    if positive_definite(M, arms):
        return M
    values, vectors = np.linalg.eigh(sub)
    negative = np.minimum(values, 0.0)
    raised = sub - (vectors * negative) @ vectors.T
    raised[np.diag_indices(len(arms))] += _MARGIN * max(len(arms), 1) * _EPS * float(np.abs(sub).max(initial=1.0))
    out = np.array(M, dtype=float)
    out[np.ix_(arms, arms)] = (raised + raised.T) / 2.0
    return out


def concave_shift(M: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """A diagonal ``d >= 0`` on ``arms`` (zero elsewhere) with ``diag(d) - M`` PSD on ``arms``
    (:func:`~.shifts.diagonal_shift` above ``M``: the least by trace of three candidates).

    >>> M = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> d = concave_shift(M, np.arange(2))
    >>> bool(np.linalg.eigvalsh(np.diag(d) - M)[0] >= 0), bool(np.allclose(d, 3.0))
    (True, True)
    """
    return np.maximum(diagonal_shift(M, arms, above=True), 0.0)


class ConcaveBranch(LinearOracleBranch):
    """Branch and bound for ``max mu @ a + f sqrt(a @ M @ a)`` (``M`` PSD) with concave-overestimator bounds.

    The overestimator ``q(x) = x @ A @ x + b @ x`` is the better at the root (the lower Frank-Wolfe
    bound; ties: the first) of :func:`concave_shift`'s diagonal alone and
    :func:`~.branch.overestimator.concave_overestimator` (size and conflict terms); on spaces with conflicting
    arms (matchings) the latter alone.
    """

    def searched_arms(self, arms: np.ndarray) -> np.ndarray:
        """The arms not excluded less, on spaces with conflicting arms, the rivals of an included arm (no admitted
        action holds them)."""
        self.conflicts, self.m = conflict_pairs(self.space), arms_bound(self.space)
        include = list(self.res.include)
        if self.conflicts is not None and include:
            arms = arms[~self.conflicts[np.ix_(arms, include)].any(axis=1)]
        return arms

    def prepare(self, arms: np.ndarray) -> None:
        """The overestimator's forms on ``arms``: the one of the lower root bound is kept (class docstring)."""
        query, conflicts = self.q, self.conflicts
        self.reforms = 0
        self.generation = 0  # of the root's form: a node's form of an older one is made again (tune)
        self.tuned = False
        #: The node count at which :meth:`tune` ran (``None``: not yet; the query's statistics report it).
        self.tuned_at: int | None = None
        self._tune_after = self.tuning.concave_tune_after  # (run sets it per mode)
        self._settled: Callable[[float, float], bool] | None = None
        #: An upper bound on every action's index met after the nodes were keyed (the tuned root's): the
        #: approximate mode may stop on it (:func:`~.branch.minus.best_first`).
        self.global_bound = np.inf
        #: The bounds' matrix: ``M``, or its PSD majorant where ``M`` is not definite (:func:`psd_majorant`).
        self.P = psd_majorant(query.M, np.asarray(arms, int))
        # psi(a) <= mu @ a + f sum_i a_i sqrt(P_ii) (triangle inequality): the plane where q(x) = 0
        self.triangle = query.mu + query.f * np.sqrt(np.maximum(np.diag(self.P), 0.0))
        parts = [(self.P, np.zeros(self.d))]  # the diagonal alone: B = P, no linear part
        if self.tuning.concave_overestimator:
            parts.append(overestimator_parts(self.P, arms, self.m, conflicts))
            if conflicts is not None and not self.tuning.concave_plain_with_conflicts:
                parts = parts[1:]
        candidates = [shifted_form(B, linear, arms) for B, linear in parts]
        self.arms = np.asarray(arms, int)
        self.set_form(*candidates[0])
        if len(candidates) > 1:
            root = _Node(-np.inf, 0, np.zeros(self.d, bool), np.zeros(self.d, bool))
            bounds = []
            for form in candidates:
                self.set_form(*form)
                bounds.append(self.relax(root, early=False)[0])
                root.gradient = None
            self.set_form(*candidates[int(np.argmin(bounds))])
            parts = [parts[int(np.argmin(bounds))]]
        self.parts = parts[0]
        self.root_form = (self.A, self.h, self.row_abs, len(self.arms), self.generation)

    def run(
        self, best: np.ndarray | None, best_value: float, settled: Callable[[float, float], bool] | None = None
    ) -> tuple[np.ndarray | None, float, float]:
        """The search of :meth:`~.branch.minus.LinearOracleBranch.run`; with ``settled`` (the approximate mode) the
        root's diagonal is tuned after ``tuning.concave_tune_after_approximate`` nodes rather than
        ``tuning.concave_tune_after``."""
        after = self.tuning.concave_tune_after
        self._tune_after = self.tuning.concave_tune_after_approximate if settled is not None and after else after
        self._settled = settled
        return super().run(best, best_value, settled)

    def node_form(self, node: _Node) -> tuple:
        """The node's form: its parent's, or one of its own when the node's free arms are at most
        ``tuning.concave_reform`` of the arms its parent's form was made on.

        The free arms: the root's less the node's excluded and included arms and (matchings) the rivals of
        its included ones. On the node's actions ``x`` moves only along the free arms, so ``q`` need only be
        concave there: the root's form with ``d`` lowered on the free arms by the least eigenvalue's margin
        ``-lambda_max(A_FF)`` (one eigenvalue; ``q`` is unchanged on 0/1 points) is valid for the node
        (``tuning.concave_shift_down``). It keeps a tuned root's diagonal (:meth:`tune`).
        """
        form = node.form if node.form is not None and node.form[4] == self.generation else self.root_form
        if not self.tuning.concave_reform or (self.conflicts is None and not self.tuning.concave_shift_down):
            return form
        keep = np.ones(self.d, bool)
        keep[np.flatnonzero(node.exclude)] = False
        included = np.flatnonzero(node.include)
        if len(included) and self.conflicts is not None:
            keep &= ~self.conflicts[:, included].any(axis=1)
        if self.tuning.concave_shift_down:
            keep[included] = False
        arms = self.arms[keep[self.arms]]
        if len(arms) > self.tuning.concave_reform * form[3]:
            return form
        if self.tuning.concave_shift_down:
            self._lower_on(arms)
        else:
            self.set_form(
                *shifted_form(*self.parts, arms, sweeps=_REFORM_SWEEPS, uniform=self.tuning.concave_reform_uniform)
            )
        self.reforms += 1
        return (self.A, self.h, self.row_abs, len(arms), self.generation)

    def _lower_on(self, arms: np.ndarray) -> None:
        """Bound with the root's form lowered on ``arms``: ``d`` less ``-lambda_max`` of its quadratic part there
        (less a rounding margin), so that the part stays negative semidefinite on ``arms``."""
        A, h = self.root_form[0], self.root_form[1]
        if not len(arms):
            self.A, self.h, self.row_abs = self.root_form[:3]
            return
        sub = A[np.ix_(arms, arms)]
        margin = _MARGIN * len(arms) * _EPS * float(np.abs(sub).max(initial=0.0))
        slack = min(float(np.linalg.eigvalsh(sub)[-1]) + margin, 0.0)
        A, h = A.copy(), h.copy()
        A[arms, arms] -= slack
        h[arms] += slack / 2.0
        self.set_form(A, 2.0 * h)

    def tune(self) -> None:
        """Choose the root's diagonal for the points the relaxation reaches, not by trace.

        At a relaxed point ``x`` the overestimator exceeds ``x @ B @ x`` by ``sum_i d_i (x_i - x_i^2)`` (plus the
        size term): the trace-least diagonal of :func:`~.shifts.diagonal_shift` can be far from the least at the
        points that matter. Each round takes :func:`~.shifts.weighted_diagonal` with the weights ``x - x^2``
        averaged over the root's relaxed points so far (fictitious play: the last point alone oscillates), and
        bounds the root with it (``_TUNE_STEPS`` Frank-Wolfe steps); the form with the least root bound is kept
        and replaces the root's form for the nodes taken after. Every form is valid (the diagonal is made so
        exactly), so the search stays exact whatever the rounds find. Run once, after
        ``tuning.concave_tune_after`` nodes.

        The approximate mode (``norm_gap``): the tuned root's bound holds for every action, so it becomes the
        search's ``global_bound`` and the search stops as soon as it settles the query, however high the keys of
        the nodes opened before it (their bounds came from the untuned form). The rounds stop too once the bound
        settles the query, and the tuning comes after
        ``tuning.concave_tune_after_approximate`` nodes.
        """
        self.tuned, self.tuned_at = True, self.nodes
        B, linear = self.parts
        root = _Node(-np.inf, 0, np.zeros(self.d, bool), np.zeros(self.d, bool))
        self.A, self.h, self.row_abs = self.root_form[:3]
        best, x = self.relax(root, early=False, steps=_TUNE_STEPS)
        if x is None:
            return
        form, weights = self.root_form[:4], [x - x * x]
        rows = low_rank_start(len(self.arms))
        for round_ in range(_TUNE_ROUNDS):
            sweeps = _TUNE_SWEEPS[0] if round_ == 0 else _TUNE_SWEEPS[1]  # later rounds start from the last rows
            shift = weighted_diagonal(B, self.arms, np.mean(weights, axis=0), sweeps=sweeps, rows=rows)
            shift = np.maximum(shift, 0.0)
            self.set_form(B - np.diag(shift), shift + linear)
            root.gradient = None
            bound, x = self.relax(root, early=False, steps=_TUNE_STEPS)
            if x is None:
                break
            weights.append(x - x * x)
            if bound < best:
                best, form = bound, (self.A, self.h, self.row_abs, len(self.arms))
            if self._settled is not None and self.best is not None and self._settled(best, self.best_value):
                break  # the approximate mode: this bound on every action already settles the query
        self.generation += 1
        self.root_form = (*form, self.generation)
        self.global_bound = min(self.global_bound, best)  # every round's bound holds for every action
        self.A, self.h, self.row_abs = form[:3]

    def bound_matrix(self, M: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """``M`` itself: the bounds here are :meth:`set_form`'s (no sign -1 shift to compute)."""
        return M

    def set_form(self, A: np.ndarray, b: np.ndarray) -> None:
        """Bound with ``q(x) = x @ A @ x + b @ x``."""
        self.A, self.h = A, b / 2.0
        self.row_abs = float((np.abs(A).sum(axis=1) + np.abs(self.h)).max(initial=0.0))

    def tangent(self, x: np.ndarray, ax: np.ndarray | None = None) -> tuple[np.ndarray, float, float, float]:
        """``(g, c, psi(x), err)``: the tangent plane ``g @ a + c`` of ``psi`` at ``x`` (``ax = A @ x``) and its
        rounding scale. Where ``q(x) = 0`` (no gradient) the plane of the triangle inequality, valid everywhere."""
        q = self.q
        qx = (self.A @ x if ax is None else ax) + self.h
        n = float(np.sqrt(max(float(x @ (qx + self.h)), 0.0)))
        psi = float(q.mu @ x) + q.f * n
        if n <= 0.0:
            return self.triangle, 0.0, psi, self.mu_abs + q.f * float(np.sqrt(np.abs(np.diag(self.P)).max()))
        g = q.mu + q.f * qx / n
        err = self.mu_abs + q.f * self.row_abs / n
        return g, psi - float(g @ x), psi, err

    def plane_bound(self, g: np.ndarray, c: float, err: float, s: np.ndarray) -> float:
        """``g @ s + c`` (``s`` the argmax of ``g``) plus the rounding allowance."""
        k = float(self.space.m)
        if self.fractional:  # (a fractional matching may sum to n / 2 > m)
            k = max(k, float(s.sum()))
        scale = err + float(np.abs(g).max(initial=0.0))
        return float(g @ s) + c + _ROUND * self.d * _EPS * (scale * (k + self.d) + abs(c))

    def relax(
        self, node: _Node, early: bool | None = None, steps: int | None = None
    ) -> tuple[float, np.ndarray | None]:
        """Frank-Wolfe steps on ``psi`` over the node: its bound (at most the parent's) and the last point.

        ``early``: stop the steps once a relaxed point is worth more than the incumbent (the node will be split;
        default ``_EARLY``). ``steps``: at most this many (default ``tuning.concave_steps``).
        """
        q = self.q
        early = self.tuning.concave_early if early is None else early
        steps = self.tuning.concave_steps if steps is None else steps
        if not self.tuned and self._tune_after and self.nodes >= self._tune_after:
            self.tune()
        if node.order:  # (the root keeps the form being tried)
            node.form = self.node_form(node)
            self.A, self.h, self.row_abs = node.form[:3]
        res = self.restrictions(node.include, node.exclude)
        bound = -node.key
        if node.gradient is None:
            s = self.linear(self.triangle, res)  # psi <= the triangle plane: its argmax starts the steps
            if s is None:
                return -np.inf, None
            self.offer(s)
            bound = min(bound, self.plane_bound(self.triangle, 0.0, self.mu_abs, s))
        else:
            g, c, err = node.gradient, node.error[0], node.error[1]
            s = self.linear(g, res)
            if s is None:
                return -np.inf, None
            self.offer(s)
            bound = min(bound, self.plane_bound(g, c, err, s))
        x = s.astype(float)
        ax = self.A @ x
        g, c, err = self.triangle, 0.0, self.mu_abs
        for _ in range(steps):
            if proven(value=self.best_value, bound=bound, measured_at="bound"):
                break
            g, c, psi, err = self.tangent(x, ax)
            s = self.linear(g, res)
            self.offer(s)
            bound = min(bound, self.plane_bound(g, c, err, s))
            if bound - psi <= _REL_GAP * (1.0 + abs(bound)) or (early and psi > self.best_value):
                break
            step = s - x
            a_step = self.A @ step
            t = quadratic_line_maximum(
                float(q.mu @ step),
                float(step @ a_step),
                float(x @ a_step + self.h @ step),
                float(x @ (ax + 2.0 * self.h)),
                -q.f,
            )
            x = x + t * step
            ax = ax + t * a_step
        node.gradient, node.error = g, (c, err)
        return bound, x
