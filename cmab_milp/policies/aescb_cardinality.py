"""AESCB's budgeted query on a cardinality space, exactly, without a MILP solver: :func:`budgeted_top`.

The query: among subsets ``a`` of ``d`` arms with ``|a| <= m`` (``|a| = m`` if ``exact``), holding the
``include`` arms and none of the ``exclude`` arms, maximise ``y(a) = mu . a`` subject to one covering row
``s(a) = w . a >= rhs`` (``w >= 0``; AESCB's ``w = 1 / n``). Every sum that decides is the *canonical* one,
the action's 0/1 row of length ``d`` times the weights summed by ``numpy.sum`` (fixed-order pairwise sum,
the bits of AESCB's action-table route and of :func:`~.aescb_budget.budget_sum`).

**Search.** Fix the included arms (``k`` free slots left). Sort the free arms by weight, largest first
(ties by arm); every subset of them is met exactly once as an increasing sequence of positions, and a
breadth-first search extends each partial set ``P`` (last arm at position ``p``, ``t`` slots left after
the next arm ``q > p``) by one later arm at a time. A child ``P + q`` is dropped when no completion by
arms after ``q`` can be a maximiser, by any of three bounds, each valid for every such completion ``a``:

* **reach**: ``s(a) <= s(P) + w_q +`` the next ``t`` weights after ``q`` (the sort makes them the largest);
  below ``rhs``, no completion meets the row;
* **value**: ``y(a) <= y(P) + mu_q + S_t(q + 1)``, ``S_t(p)`` the largest sum of ``t`` (or at most ``t``)
  values of ``mu`` at positions ``>= p`` (``S_t(p) = max_{j >= p} (mu_j + S_{t-1}(j + 1))``: one reversed
  running maximum per ``t``);
* **Lagrangian**: for any ``lambda >= 0`` and any ``a`` meeting the row, ``y(a) <= y(a) + lambda (s(a) -
  rhs) = sum_{i in a} c_i - lambda rhs`` with ``c = mu + lambda w``, so ``y(a) <= y(P) + lambda (s(P) -
  rhs) + c_q + S^c_t(q + 1)`` (the same suffix table for ``c``);

the last two against the best value of an action known to meet the row (the *incumbent*): a child whose
bound is below it holds no maximiser. ``lambda`` minimises the LP dual ``L(lambda) = max_{|a| = k}
sum_{i in a} c_i - lambda rhs`` (the LP relaxation of one row over a cardinality polytope, whose optimum
has at most two fractional arms), found by the 1-D cutting-plane iteration on ``L``
(:func:`dual_multiplier`: the lines of the top sets at ``lambda = 0`` and ``lambda = inf``, then the top
set at the crossing of the two lines replaces the one on its side, until none rises above the crossing);
any ``lambda >= 0`` makes the bound valid, the optimal one makes it tight. The incumbents are the top
sets met that meet the row, and the best one-arm exchanges from the LP's two sides (a local search).

**Rounding.** The search runs in floats summed in its own order; it drops a state only when its bound is
below the incumbent's canonical value by ``tol = 1e-9`` times the problem's scale (and the reach drop by
as much of the weights' scale), far above the ``~1e-15`` relative error of sums of at most ``d`` terms,
so every canonical maximiser reaches the end. There the survivors are summed canonically, the row is
checked canonically, and the answer is chosen among those of the largest canonical value.

**Which maximiser.** The first in :meth:`~cmab_milp.Cardinality.enumerate`'s order: fewest arms, then
the lexicographically smallest list of arms -- the one AESCB's action-table route returns (its ``argmax``
takes the first largest row of that table), so decisions match it even on ties.

Example
-------
>>> import numpy as np
>>> mu, w = np.array([0.9, 0.8, 0.1, 0.2]), np.array([0.1, 0.1, 1.0, 0.5])
>>> np.flatnonzero(budgeted_top(mu, w, 1.05, 2, exact=True)).tolist()  # the best pair with w . a >= 1.05
[0, 2]
>>> budgeted_top(mu, w, 2.0, 2) is None  # no pair reaches 2
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "MAX_STATES",
    "TOLERANCE",
    "BudgetedTop",
    "SearchTooLarge",
    "budgeted_top",
    "check_query",
    "dual_multiplier",
    "free_arms",
]

#: Relative margin (times the problem's scale) by which a state's bound must fall short before it is dropped.
TOLERANCE = 1e-9

#: AESCB's default ``max_states`` under ``budget_oracle="auto"``: partial sets one depth of the search may keep
#: before it stops (:class:`SearchTooLarge`) and the query goes to the compiled model. Found: Cardinality(200, 5),
#: round 92 of a run, one search kept millions of partial sets and took 74 s.
MAX_STATES = 100_000


class SearchTooLarge(Exception):
    """The search kept more than ``max_states`` partial sets at one depth (its answer is left to another route)."""


#: Cutting-plane steps on the LP dual before the multiplier reached is used as it is (any one is valid).
_DUAL_STEPS = 60


def dual_multiplier(y: np.ndarray, w: np.ndarray, r: float, k: int, exact: bool) -> tuple[float, list[np.ndarray]]:
    """``lambda >= 0`` minimising ``L(lambda) = max_a sum_{i in a} (y_i + lambda w_i) - lambda r`` over sets of
    ``k`` (``exact``) or at most ``k`` of the given arms, and the top sets met that satisfy ``w . a >= r`` in
    floats (the last one first: incumbents to try).

    >>> lam, sets = dual_multiplier(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 0.5, 1, True)
    >>> lam, sets[0].tolist()  # the LP puts half on each arm; lambda = 1 makes them equal
    (1.0, [1])
    """

    def top(lam: float) -> tuple[np.ndarray, float, float]:
        c = y + lam * w
        order = np.argpartition(-c, k - 1)[:k] if k < len(c) else np.arange(len(c))
        if not exact:
            order = order[c[order] > 0.0]
        return order, float(y[order].sum()), float(w[order].sum()) - r

    if k == 0:
        return 0.0, []
    left, y_left, slope_left = top(0.0)
    if slope_left >= 0.0:
        return 0.0, [left]
    widest = np.lexsort((-y, -w))[:k]  # the top set as lambda grows without bound: widest, then best
    if not exact:
        widest = widest[w[widest] > 0.0]
    right, y_right, slope_right = widest, float(y[widest].sum()), float(w[widest].sum()) - r
    if slope_right <= 0.0:  # no set meets the row in floats: L only falls; the search decides
        return 0.0, [right] if slope_right == 0.0 else []
    feasible, lam = [right], 0.0
    for _ in range(_DUAL_STEPS):
        lam = max((y_left - y_right) / (slope_right - slope_left), 0.0)
        crossing = y_left + lam * slope_left
        middle, y_middle, slope_middle = top(lam)
        if y_middle + lam * slope_middle <= crossing * (1.0 + 1e-15) + 1e-300 or slope_middle == 0.0:
            if slope_middle >= 0.0:
                feasible.append(middle)
            break
        if slope_middle < 0.0:
            left, y_left, slope_left = middle, y_middle, slope_middle
        else:
            right, y_right, slope_right = middle, y_middle, slope_middle
            feasible.append(middle)
    return lam, [*_swapped(y, w, r, k, exact, [left, feasible[-1]]), *feasible[::-1]]


def _swapped(y: np.ndarray, w: np.ndarray, r: float, k: int, exact: bool, sets: list[np.ndarray]) -> list[np.ndarray]:
    """Local search for incumbents: from each set, the best one-arm exchange (or, at most ``k``, one arm added or
    dropped) meeting the row in floats, repeated while it gains (at most 3 times)."""
    found = []
    for chosen in sets:
        for _ in range(3):
            inside = np.zeros(len(y), bool)
            inside[chosen] = True
            outside = np.flatnonzero(~inside)
            w_now = float(w[chosen].sum())
            # rows: drop chosen[i] (last row: drop none); columns: add outside[j] (last column: add none)
            gain = np.append(-y[chosen], 0.0)[:, None] + np.append(y[outside], 0.0)[None, :]
            weight = np.append(-w[chosen], 0.0)[:, None] + np.append(w[outside], 0.0)[None, :]
            size = len(chosen) + np.append(-np.ones(len(chosen)), 0)[:, None] + np.append(np.ones(len(outside)), 0)
            allowed = (w_now + weight >= r) & ((size == k) if exact else (size <= k))
            if not allowed.any():
                break
            best = np.where(allowed, gain, -np.inf)
            i, j = np.unravel_index(int(np.argmax(best)), best.shape)
            if w_now >= r and best[i, j] <= 0.0:
                break
            kept = chosen if i == len(chosen) else np.delete(chosen, i)
            chosen = kept if j == len(outside) else np.append(kept, outside[j])
        if float(w[chosen].sum()) >= r:
            found.append(chosen)
    return found


def budgeted_top(
    mu: np.ndarray,
    w: np.ndarray,
    rhs: float,
    m: int,
    exact: bool = False,
    include: Sequence[int] = (),
    exclude: Sequence[int] = (),
    max_states: int | None = None,
) -> np.ndarray | None:
    """The first (in :meth:`~cmab_milp.Cardinality.enumerate`'s order) maximiser of ``mu . a`` over subsets of
    at most ``m`` arms (exactly ``m`` if ``exact``) with ``w . a >= rhs``, holding ``include`` and none of
    ``exclude`` (module docstring), as a 0/1 vector; ``None`` when no subset qualifies. One query of
    :class:`BudgetedTop` (which shares its tables between queries of the same ``mu``, ``w`` and restrictions);
    ``max_states``: raise :class:`SearchTooLarge` past that many partial sets at one depth (``None``: no limit).

    >>> budgeted_top(np.zeros(2), np.array([1.0, -1.0]), 0.0, 1)
    Traceback (most recent call last):
    ...
    ValueError: budget weights w must be finite and >= 0
    """
    return BudgetedTop(mu, w, m, exact, include, exclude).argmax(rhs, max_states)


class BudgetedTop:
    """The budgeted queries of one ``(mu, w, m, exact, include, exclude)``, any ``rhs`` (module docstring).

    ``mu`` finite, ``w`` finite and ``>= 0`` (shape ``(d,)`` both), ``0 <= m <= d``, arm indices in range.
    Built once (the free arms sorted by weight, the suffix tables), asked per budget by :meth:`argmax`.

    >>> top = BudgetedTop(np.array([0.9, 0.8, 0.1, 0.2]), np.array([0.1, 0.1, 1.0, 0.5]), 2)
    >>> [np.flatnonzero(top.argmax(rhs)).tolist() for rhs in (0.0, 0.6, 1.4)]
    [[0, 1], [0, 3], [2, 3]]
    """

    def __init__(
        self,
        mu: np.ndarray,
        w: np.ndarray,
        m: int,
        exact: bool = False,
        include: Sequence[int] = (),
        exclude: Sequence[int] = (),
    ):
        mu, w = np.asarray(mu, float), np.asarray(w, float)
        check_query(mu, w, m, include, exclude)
        self.mu, self.w, self.exact = mu, w, bool(exact)
        self.fixed, free, self.k, self.empty = free_arms(len(mu), m, include, exclude, self.exact)
        # the free arms by weight, largest first (ties by arm): every completion of the arms taken so far by t
        # later ones weighs at most the next t weights
        self.order = free[np.argsort(-w[free], kind="stable")]
        self.ys, self.ws = mu[self.order].tolist(), w[self.order]
        self.base_y, self.base_w = float(mu[self.fixed].sum()), float(w[self.fixed].sum())
        self.next_w = np.concatenate(([0.0], np.cumsum(self.ws)))  # next_w[q + t] - next_w[q]: the t after q
        self.best_y = self._suffix_tops(np.array(self.ys))
        self.scale = 1.0 + abs(self.base_y) + self.k * float(np.abs(mu[free]).max(initial=0.0))
        self.canonical = _Canonical(mu, w, self.fixed, free)

    def _suffix_tops(self, values: np.ndarray) -> np.ndarray:
        """``table[t, p]``: the largest sum of ``values`` over exactly ``t`` (``exact``; ``-inf`` if fewer) or at
        most ``t`` positions ``>= p`` (``p = 0..n``): ``S_t(p) = max_{j >= p} (values_j + S_{t-1}(j + 1))``
        (and ``0``, taking none, when at most), one reversed running maximum per ``t``."""
        n = len(values)
        table = np.zeros((self.k + 1, n + 1))
        for t in range(1, self.k + 1):
            table[t, n] = -np.inf
            table[t, :n] = np.maximum.accumulate((values + table[t - 1, 1:])[::-1])[::-1]
            if not self.exact:
                table[t] = np.maximum(table[t], 0.0)
        return table

    def argmax(self, rhs: float, max_states: int | None = None) -> np.ndarray | None:
        """The first maximiser of ``mu . a`` with ``w . a >= rhs`` (canonical sums) under the restrictions, or
        ``None`` (module docstring); past ``max_states`` partial sets at one depth, :class:`SearchTooLarge`."""
        if not np.isfinite(rhs):
            raise ValueError(f"the budget rhs must be finite, got {rhs!r}")
        rhs = float(rhs)
        if self.empty:
            return None
        k, n, ws, exact = self.k, len(self.order), self.ws, self.exact
        ys = np.array(self.ys)
        w_tol = TOLERANCE * (1.0 + self.base_w + k * float(ws.max(initial=0.0)) + abs(rhs))
        if self.base_w + (self.next_w[k] if k <= n else self.next_w[n]) < rhs - w_tol:
            return None  # the k heaviest free arms miss the row, even with every float error in their favour
        positions = self.canonical.positions_of(self.order)
        y_free, w_free = self.mu[self.canonical.free], self.w[self.canonical.free]
        lam, incumbents = dual_multiplier(y_free, w_free, rhs - self.base_w, k, exact)
        c = ys + lam * ws
        best_c = self._suffix_tops(c)
        c_tol = TOLERANCE * (self.scale + lam * (1.0 + self.base_w + k * float(ws.max(initial=0.0)) + abs(rhs)))
        pool = [
            (self.canonical.free[c][None, :], self.canonical.value_if_feasible(c[None, :], rhs)) for c in incumbents
        ]
        best = max((float(values[0]) for _, values in pool), default=-np.inf)
        tol = TOLERANCE * self.scale
        index = np.arange(n)
        last, y_so_far, w_so_far = np.array([-1]), np.array([self.base_y]), np.array([self.base_w])
        members = np.zeros((1, 0), int)
        if not exact or k == 0:
            pool.append(self._leaves(members, y_so_far, w_so_far, best, tol, rhs, w_tol, positions))
            best = max(best, float(pool[-1][1].max(initial=-np.inf)))
        for depth in range(k):
            after = k - depth - 1  # arms still to take once this depth's arm is taken
            reach = self.next_w[np.minimum(index + 1 + after, n)] - self.next_w[index + 1]  # the `after` next
            if exact:
                reach = np.where(index + after <= n - 1, reach, -np.inf)
            keep = index[None, :] > last[:, None]
            keep &= (w_so_far[:, None] + (ws + reach)[None, :]) >= rhs - w_tol
            keep &= (y_so_far[:, None] + (ys + self.best_y[after, index + 1])[None, :]) >= best - tol
            lagrangian = (y_so_far + lam * (w_so_far - rhs))[:, None] + (c + best_c[after, index + 1])[None, :]
            keep &= lagrangian >= best - c_tol
            state, pos = np.nonzero(keep)
            if len(state) == 0:
                break
            if max_states is not None and len(state) > max_states:
                raise SearchTooLarge(f"{len(state)} partial sets at depth {depth + 1} (max_states {max_states})")
            last, members = pos, np.concatenate([members[state], pos[:, None]], axis=1)
            y_so_far, w_so_far = y_so_far[state] + ys[pos], w_so_far[state] + ws[pos]
            if not exact or depth == k - 1:
                pool.append(self._leaves(members, y_so_far, w_so_far, best, tol, rhs, w_tol, positions))
                best = max(best, float(pool[-1][1].max(initial=-np.inf)))
        return self.canonical.first_best(pool, best)

    def _leaves(
        self,
        members: np.ndarray,
        y_so_far: np.ndarray,
        w_so_far: np.ndarray,
        best: float,
        tol: float,
        rhs: float,
        w_tol: float,
        positions: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Candidate actions near the incumbent and the row (floats), with their canonical values (``-inf``:
        missing the row canonically)."""
        near = (y_so_far >= best - tol) & (w_so_far >= rhs - w_tol)
        chosen = positions[members[near]]  # positions among the free arms (in arm order)
        if not len(chosen):
            return np.zeros((0, members.shape[1]), int), np.zeros(0)
        return self.canonical.free[chosen], self.canonical.value_if_feasible(chosen, rhs)


class _Canonical:
    """Canonical sums of candidate actions (rows of length ``d``, summed by ``numpy.sum``) and the tie rule."""

    def __init__(self, mu: np.ndarray, w: np.ndarray, fixed: np.ndarray, free: np.ndarray):
        self.mu, self.w, self.fixed, self.free = mu, w, fixed, free

    def positions_of(self, arms: np.ndarray) -> np.ndarray:
        """The positions of ``arms`` (free arms) in ``free``."""
        return np.searchsorted(self.free, arms)

    def rows(self, chosen: np.ndarray) -> np.ndarray:
        """0/1 float rows: the fixed arms and ``free[chosen]`` (``chosen``: positions among the free arms)."""
        dense = np.repeat(self.fixed[None, :].astype(float), len(chosen), axis=0)
        if chosen.shape[1]:
            dense[np.arange(len(chosen))[:, None], self.free[chosen]] = 1.0
        return dense

    def value_if_feasible(self, chosen: np.ndarray, rhs: float) -> np.ndarray:
        """Canonical ``mu . a`` of each row meeting ``w . a >= rhs`` canonically, ``-inf`` for the others."""
        dense = self.rows(chosen)
        meets = (dense * self.w).sum(axis=1) >= rhs
        return np.where(meets, (dense * self.mu).sum(axis=1), -np.inf)

    def first_best(self, pool: list[tuple[np.ndarray, np.ndarray]], best: float) -> np.ndarray | None:
        """The first action in enumeration order (fewest arms, then smallest arm list) of canonical value ``best``."""
        if best == -np.inf:
            return None
        winners = []
        for arms, values in pool:
            for row in arms[values == best]:
                winners.append(
                    (len(row) + int(self.fixed.sum()), sorted(row.tolist() + np.flatnonzero(self.fixed).tolist()))
                )
        _, arms_list = min(winners)
        action = np.zeros(len(self.mu), bool)
        action[arms_list] = True
        return action


def free_arms(
    d: int, m: int, include: Sequence[int], exclude: Sequence[int], exact: bool
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """``(fixed, free, k, empty)``: the included arms (a mask), the arms neither included nor excluded, the slots
    left for them (at most ``len(free)``), and whether no subset qualifies (an arm both included and excluded,
    more included than ``m``, or too few free arms for exactly ``m``).

    >>> fixed, free, k, empty = free_arms(4, 2, (1,), (3,), exact=True)
    >>> fixed.tolist(), free.tolist(), k, empty
    ([False, True, False, False], [0, 2], 1, False)
    """
    fixed, barred = np.zeros(d, bool), np.zeros(d, bool)
    fixed[list(include)] = True
    barred[list(exclude)] = True
    free = np.flatnonzero(~fixed & ~barred)
    k = m - int(fixed.sum())
    empty = bool((fixed & barred).any()) or k < 0 or (exact and len(free) < k)
    return fixed, free, max(min(k, len(free)), 0), empty


def check_query(mu: np.ndarray, w: np.ndarray, m: int, include: Sequence[int], exclude: Sequence[int]) -> None:
    """A clear ``ValueError`` unless ``mu`` (finite) and ``w`` (finite, ``>= 0``) are vectors of one length ``d``,
    ``0 <= m <= d`` is an integer, and ``include`` / ``exclude`` hold arm indices.

    >>> check_query(np.zeros(2), np.ones(2), 3, (), ())
    Traceback (most recent call last):
    ...
    ValueError: m must be an integer in [0, 2], got 3
    """
    d = len(mu)
    if mu.ndim != 1 or w.shape != mu.shape:
        raise ValueError(f"mu and w must be vectors of one shape, got {mu.shape} and {w.shape}")
    if not np.isfinite(mu).all():
        raise ValueError("mu must be finite")
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError("budget weights w must be finite and >= 0")
    if not (isinstance(m, (int, np.integer)) and 0 <= m <= d):
        raise ValueError(f"m must be an integer in [0, {d}], got {m!r}")
    for name, arms in (("include", include), ("exclude", exclude)):
        if any(not isinstance(i, (int, np.integer)) or not 0 <= i < d for i in arms):
            raise ValueError(f"{name} must hold arm indices in [0, {d}), got {tuple(arms)!r}")
