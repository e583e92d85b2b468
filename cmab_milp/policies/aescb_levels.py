"""Every budget level of one AESCB round on a cardinality space, from one search: :class:`LevelAnswers`.

AESCB (:mod:`.aescb`) asks, in one round, ``x_j = argmax {y(a) : s(a) >= L_j}`` for increasing levels
``L_1 < L_2 < ...`` (``y = mu . a``, ``s = w . a``, ``w = 1 / n >= 0``) over the subsets of at most ``m``
arms (exactly ``m`` if ``exact``) holding ``include`` and none of ``exclude``. Here they are answered
together by one depth-first search over the subsets, each met once as an increasing sequence of free
arms sorted by weight (largest first, ties by arm):

* **Reach.** A partial set ``P`` (weight ``W``) whose last arm is at position ``q`` can be completed by
  ``t`` more arms after ``q`` only, so every completion weighs at most ``W`` plus the next ``t`` weights
  (the sort makes them the largest): the levels it can meet are those up to that sum, ``L_1..L_J``; the
  arms are tried in order, and once one cannot reach ``L_1`` no later one can (the sums only fall).
* **Value.** Every completion has ``y <= Y(P) + S_t(q + 1)``, with ``S_t(p)`` the largest sum of ``t``
  (or at most ``t``) values of ``mu`` at positions ``>= p`` (one reversed running maximum per ``t``). The
  best value found for level ``j`` is also a value found for every lower level (its action meets them),
  so the incumbents ``B_1 >= B_2 >= ...`` fall with ``j``; ``P`` is dropped when its bound is below
  ``max(B_J, cutoff)``: it can improve no level it reaches, and none above ``cutoff``.
* **Cutoff.** AESCB plays the best index ``y + g sqrt(s)`` among the ``x_j``; an ``x_j`` with ``y(x_j) <
  cutoff = index(x_0) - g sqrt(s_max)`` has an index below ``index(x_0)``, and so has every later level's
  answer (feasible sets shrink, so ``y`` falls): none can change the action played, and AESCB stops at
  the first such level (:meth:`LevelAnswers.answer` returns ``None`` there, as for a level no action meets).
* **Hints.** Any actions (last round's answers) are valued first: a tighter start for the incumbents.

**Rounding.** The search adds floats in its own order; it drops a set only when its bound is below the
incumbent or the cutoff by ``tol = 1e-9`` times the problem's scale, and counts an action as an incumbent
of level ``j`` only when its weight clears ``L_j`` by as much, so every canonical maximiser (the action's
0/1 row of length ``d`` times the weights summed by ``numpy.sum``, as AESCB's action-table route sums it)
reaches the end. There each level keeps the actions meeting it canonically; among those of the largest
canonical value the first in :meth:`~cmab_milp.Cardinality.enumerate`'s order (fewest arms, then the
smallest arm list) is its answer, as the action table's ``argmax`` picks it; a level whose best is below
``cutoff - tol / 2`` answers ``None``.

Example
-------
>>> import numpy as np
>>> mu, w = np.array([0.9, 0.8, 0.1, 0.2]), np.array([0.1, 0.1, 1.0, 0.5])
>>> answers = LevelAnswers(mu, w, [0.15, 0.6, 1.4, 2.0], 2, exact=True)
>>> [None if a is None else np.flatnonzero(a).tolist() for a in map(answers.answer, range(4))]
[[0, 1], [0, 3], [2, 3], None]
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from .aescb_cardinality import check_query, free_arms

__all__ = ["MAX_NODES", "TOLERANCE", "LevelAnswers"]

#: Relative margin (times the problem's scale) of every float comparison that drops a set or counts an incumbent.
TOLERANCE = 1e-9
#: Default ``max_nodes``: sets visited before the search gives up (``complete = False``; the caller asks per level).
MAX_NODES = 3000


class _TooLarge(Exception):
    """The search visited more than ``max_nodes`` sets."""


class LevelAnswers:
    """``argmax {mu . a : w . a >= L_j}`` for every level ``L_j`` (ascending) of one round (module docstring).

    ``mu`` finite, ``w`` finite and ``>= 0``, ``levels`` finite and ascending, ``cutoff`` (default ``-inf``:
    every level answered exactly), ``hints``: actions (0/1 vectors) valued first, ``max_nodes``: sets visited
    before the search gives up (then ``complete`` is False and :meth:`answer` raises). :meth:`answer` gives
    level ``j``'s answer; ``nodes`` counts the sets the search visited.
    """

    def __init__(
        self,
        mu: np.ndarray,
        w: np.ndarray,
        levels: Sequence[float],
        m: int,
        exact: bool = False,
        include: Sequence[int] = (),
        exclude: Sequence[int] = (),
        cutoff: float = -math.inf,
        hints: Iterable[np.ndarray] = (),
        max_nodes: int = MAX_NODES,
    ):
        mu, w = np.asarray(mu, float), np.asarray(w, float)
        _check(mu, w, levels, m, include, exclude)
        self.mu, self.w, self.levels = mu, w, [float(x) for x in levels]
        self.fixed, free, k, empty = free_arms(len(mu), m, include, exclude, exact)
        self.found: list[tuple[float, float, tuple[int, ...]]] = []  # (y, s, positions) in floats
        self.nodes, self.max_nodes = 0, int(max_nodes)
        #: False when the search stopped at ``max_nodes`` sets: then no answer is given (:meth:`answer` raises).
        self.complete = True
        self._answers: list[np.ndarray | None] | None = None
        if empty or not self.levels:
            self.order = free[:0]
            return
        self.k, self.exact = k, bool(exact)
        self.order = free[np.argsort(-w[free], kind="stable")]
        self.ys, self.ws = mu[self.order].tolist(), w[self.order].tolist()
        base_y, base_w = float(mu[self.fixed].sum()), float(w[self.fixed].sum())
        scale = 1.0 + abs(base_y) + self.k * max(map(abs, self.ys), default=0.0)
        self.tol = TOLERANCE * scale
        self.w_tol = TOLERANCE * (1.0 + base_w + self.k * max(self.ws, default=0.0) + max(map(abs, self.levels)))
        self.cutoff = float(cutoff)
        self.best = [-math.inf] * len(self.levels)  # incumbents: float values of actions clearing the level
        self._hint([np.asarray(h, bool) for h in hints], free)
        self._search(base_y, base_w)

    def _hint(self, hints: list[np.ndarray], free: np.ndarray) -> None:
        """Raise the incumbents with the allowed ``hints`` (the search meets them again if they matter)."""
        hints = [h for h in hints if h.shape == self.fixed.shape]
        if not hints:
            return
        rows = np.array(hints)
        allowed = rows[:, self.fixed].all(axis=1) & (rows.sum(axis=1) - rows[:, free].sum(axis=1) == self.fixed.sum())
        size = rows[:, free].sum(axis=1)
        allowed &= (size == self.k) if self.exact else (size <= self.k)
        dense = rows[allowed].astype(float)
        ys, ss = (dense * self.mu).sum(axis=1), (dense * self.w).sum(axis=1)
        clears = ss[None, :] >= np.array(self.levels)[:, None] + self.w_tol
        best = np.where(clears, ys[None, :], -np.inf).max(axis=1, initial=-np.inf)
        self.best = [max(a, float(b)) for a, b in zip(self.best, best, strict=True)]

    def _record(self, y: float, s: float, chosen: tuple[int, ...]) -> None:
        """Keep an action that may meet some level; raise the incumbents of the levels it clears."""
        if s < self.levels[0] - self.w_tol:
            return
        self.found.append((y, s, chosen))
        for j in range(bisect.bisect_right(self.levels, s - self.w_tol) - 1, -1, -1):
            if y <= self.best[j]:
                break  # lower levels' incumbents are at least this one's
            self.best[j] = y

    def _search(self, base_y: float, base_w: float) -> None:
        n, k, ys, ws, levels = len(self.order), self.k, self.ys, self.ws, self.levels
        prefix = [0.0]
        for x in ws:
            prefix.append(prefix[-1] + x)
        # most[t][q]: the weights at positions q..q+t-1 summed (the heaviest t arms from q on)
        most = [[prefix[min(q + t, n)] - prefix[q] for q in range(n)] for t in range(k + 1)]
        tops = _suffix_tops(ys, k, self.exact)
        lowest, tol, w_tol, best = levels[0] - self.w_tol, self.tol, self.w_tol, self.best
        floor = self.cutoff - tol
        exact, record = self.exact, self._record

        def visit(depth: int, last: int, y: float, s: float, chosen: tuple[int, ...]) -> None:
            self.nodes += 1
            if self.nodes > self.max_nodes:
                raise _TooLarge
            if not exact or depth == k:
                record(y, s, chosen)
            left = k - depth
            if left == 0:
                return
            top, heaviest, j = tops[left - 1], most[left], len(levels) - 1
            for q in range(last + 1, n - (left - 1) if exact else n):
                reach = s + heaviest[q]
                if reach < lowest:
                    break  # no later arm reaches the first level either (the weights fall)
                y_next = y + ys[q]
                bound = y_next + top[q + 1]
                if bound < floor:
                    continue
                while levels[j] > reach + w_tol:  # the highest level within reach (it only falls with q)
                    j -= 1
                if bound >= best[j] - tol:
                    visit(depth + 1, q, y_next, s + ws[q], (*chosen, q))

        try:
            visit(0, -1, base_y, base_w, ())
        except _TooLarge:
            self.complete = False

    def answer(self, j: int) -> np.ndarray | None:
        """Level ``j``'s answer: the first maximiser in enumeration order (module docstring), or ``None`` when no
        action meets the level or every one that does has ``mu . a`` below the cutoff."""
        if not self.complete:
            raise RuntimeError(f"the search stopped at max_nodes={self.max_nodes} sets: no level is answered")
        if self._answers is None:
            self._answers = self._select()
        return self._answers[j]

    def answered(self) -> list[np.ndarray]:
        """The distinct answers (once :meth:`answer` was asked; else none)."""
        seen: dict[bytes, np.ndarray] = {}
        for action in self._answers or ():
            if action is not None:
                seen.setdefault(action.tobytes(), action)
        return list(seen.values())

    def _select(self) -> list[np.ndarray | None]:
        """Every level's answer from the actions found: canonical sums, the first largest in enumeration order."""
        if not self.found:
            return [None] * len(self.levels)
        d, fixed = len(self.mu), np.flatnonzero(self.fixed).tolist()
        # only actions within reach of the final incumbent of the highest level they may meet can answer one
        ys, ss = np.array([f[0] for f in self.found]), np.array([f[1] for f in self.found])
        highest = np.searchsorted(np.array(self.levels), ss + self.w_tol, side="right") - 1
        bar = np.maximum(np.array(self.best)[highest], self.cutoff) - 2 * self.tol
        kept = [self.found[i][2] for i in np.flatnonzero(ys >= bar).tolist()]
        if not kept:
            return [None] * len(self.levels)
        order = self.order.tolist()
        arms = [sorted(fixed + [order[p] for p in chosen]) for chosen in kept]
        arms.sort(key=lambda a: (len(a), a))  # enumeration order: fewest arms, then the smallest list
        rows = np.zeros((len(arms), d))
        for r, a in enumerate(arms):
            rows[r, a] = 1.0
        values, weights = (rows * self.mu).sum(axis=1), (rows * self.w).sum(axis=1)
        table = np.where(weights[None, :] >= np.array(self.levels)[:, None], values[None, :], -np.inf)
        first = np.argmax(table, axis=1)  # the first largest of each level (row)
        answers: list[np.ndarray | None] = []
        for j, r in enumerate(first.tolist()):
            top = table[j, r]
            answers.append(None if top == -np.inf or top < self.cutoff - self.tol / 2 else rows[r].astype(bool))
        return answers


def _suffix_tops(ys: list[float], k: int, exact: bool) -> list[list[float]]:
    """``tops[t][p]``: the largest sum of exactly (``exact``; ``-inf`` if fewer) or at most ``t`` of ``ys[p:]``:
    ``S_t(p) = max(S_t(p + 1), S_{t-1}(p + 1) + ys[p])``."""
    n = len(ys)
    tops = [[0.0] * (n + 1)]
    for _ in range(k):
        previous, row = tops[-1], [0.0] * (n + 1)
        row[n] = -math.inf if exact else 0.0
        for p in range(n - 1, -1, -1):
            take, skip = previous[p + 1] + ys[p], row[p + 1]
            row[p] = take if take > skip else skip
        tops.append(row)
    return tops


def _check(
    mu: np.ndarray, w: np.ndarray, levels: Sequence[float], m: int, include: Sequence[int], exclude: Sequence[int]
) -> None:
    check_query(mu, w, m, include, exclude)
    if not all(math.isfinite(x) for x in levels) or any(b < a for a, b in itertools.pairwise(levels)):
        raise ValueError(f"levels must be finite and ascending, got {list(levels)!r}")
