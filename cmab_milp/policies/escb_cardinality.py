"""ESCB's index maximised exactly on a Cardinality space by ranking subsets above a linear bound.

Maximise ``F(a) = y(a) + g sqrt(s(a))`` (``y = mu . a``, ``s = w . a``) over the
subsets of at most ``k`` arms (exactly ``k`` with ``exact``) of the allowed arms.
For any ``c > 0``, ``g sqrt(s) <= c s + g^2 / (4 c)`` (the tangent bound of
:mod:`.escb_search`), so every ``a`` with ``F(a) > F0`` has ``v . a > tau = F0 - g^2 / (4 c)``
with ``v = mu + c w``. Hence the exact answer is the best of ``F`` over:
a reference action of value ``F0`` (last round's answer when allowed, else the
top ``k`` of ``v``) and **every subset whose ``v``-sum exceeds** ``tau``.

Those subsets are listed depth first: the allowed arms sorted by ``v``
(decreasing), a partial subset grows by a later position ``q`` only while its
``v``-sum plus the best completion (the next free positions; positives only
when ``exact`` is off) still exceeds ``tau``; since both fall as ``q`` grows,
the first failure ends the loop. Every subset above ``tau`` is reached (its
sorted prefixes pass the same bound), none twice, and each better action
found raises ``tau`` at once. The search stops with ``None`` past ``limit``
nodes (the caller then uses the general search).

``c`` is near the minimiser of the dual ``top_k(v(c)) + g^2 / (4 c)``
(:func:`dual_slope`, from last round's ``c``): the bound is then tightest and
few subsets pass (20 to 40 at ``d = 20``, ``k = 3 .. 8`` with the best ``c``,
measured on ESCB's own runs, where many indices are near-ties).

Round after round, two tables spare most rankings of unrestricted queries:
:class:`SubsetTable` (every subset, on small spaces) and :class:`ListedSubsets`
(the subsets a ranking listed within a margin of the best, reused while a
drift bound proves that no subset left out can win).

>>> mu = np.array([0.9, 0.8, 0.5, 0.4, 0.3, 0.1]); w = np.array([0.01, 0.01, 1.0, 1.0, 0.5, 2.0])
>>> action, c = maximise_on_cardinality(mu, w, 1.0, 2, exact=False)
>>> action.astype(int).tolist()
[1, 0, 0, 0, 0, 1]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from itertools import accumulate

import numpy as np

__all__ = ["SHRINK", "SUBSET_TABLE_UP_TO", "ListedSubsets", "SubsetTable", "dual_slope", "maximise_on_cardinality"]

#: The ranking's slope is the dual minimiser times this: measured on ESCB's runs (d = 20, m = 8, t = 20,000),
#: the subsets listed are fewest a little below the minimiser (48 at 0.83 of it, 556 at 1.08, 25,504 at 1.3).
SHRINK = 0.85

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
#: Unrestricted queries on spaces of at most this many subsets are answered on a table of every subset
#: (:class:`SubsetTable`): on ``Cardinality(20, 3)`` (1,351 subsets) a round's maximisation takes about a third
#: of the ranking's time; ``Cardinality(20, 5)`` (21,700) is faster ranked.
SUBSET_TABLE_UP_TO = 2_000


class SubsetTable:
    """Every subset of at most ``k`` of ``d`` arms (exactly ``k`` with ``exact``) as ``k`` columns of arm indices.

    A smaller subset is padded with index ``d`` (an arm of mean 0 and weight 0), so ``F`` of every
    subset is ``k`` gathers and sums: each row's terms are added in increasing arm order.

    >>> table = SubsetTable(4, 2, exact=False)
    >>> len(table)  # 1 empty + 4 singletons + 6 pairs
    11
    >>> mu, w = np.array([0.9, 0.8, 0.5, 0.1]), np.array([0.01, 0.01, 1.0, 2.0])
    >>> table.best(mu, w, 1.0, None).astype(int).tolist()  # 0.9 + 0.1 + sqrt(2.01) beats 0.9 + 0.8 + sqrt(0.02)
    [1, 0, 0, 1]
    """

    def __init__(self, d: int, k: int, exact: bool, subsets: Sequence[Sequence[int]] | None = None):
        sizes = [k] if exact else range(k + 1)
        if subsets is None:
            subsets = [c for r in sizes for c in itertools.combinations(range(d), r)]
        rows = [tuple(sorted(c)) + (d,) * (k - len(c)) for c in subsets]
        index = np.array(rows, np.intp).reshape(len(rows), k)
        self.d, self.k, self.exact = d, k, exact
        self.columns = [np.ascontiguousarray(index[:, j]) for j in range(k)]
        self._mu, self._w = np.zeros(d + 1), np.zeros(d + 1)

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 1

    @staticmethod
    def size(d: int, k: int, exact: bool) -> int:
        """How many subsets the table of ``(d, k, exact)`` would hold."""
        return math.comb(d, k) if exact else sum(math.comb(d, r) for r in range(k + 1))

    def best(self, mu: np.ndarray, w: np.ndarray, g: float, incumbent: np.ndarray | None) -> np.ndarray:
        """A maximiser of ``mu . a + g sqrt(w . a)``: ``incumbent`` if it ties the best, else the first best row."""
        return self.best_and_value(mu, w, g, incumbent)[0]

    def best_and_value(
        self, mu: np.ndarray, w: np.ndarray, g: float, incumbent: np.ndarray | None
    ) -> tuple[np.ndarray, float]:
        """:meth:`best` over the table's rows (``incumbent`` too, when it ties them) and its index value."""
        self._mu[: self.d], self._w[: self.d] = mu, w
        values = self._sums(self._mu)
        spread = self._sums(self._w)
        np.maximum(spread, 0.0, out=spread)
        np.sqrt(spread, out=spread)
        spread *= g
        values += spread
        top = int(np.argmax(values))
        size = -1 if incumbent is None else int(np.count_nonzero(incumbent))
        if size == self.k or (size >= 0 and size < self.k and not self.exact):
            arms = np.flatnonzero(incumbent).tolist()
            arms += [self.d] * (self.k - len(arms))
            y = s = 0.0
            for j, i in enumerate(arms):  # the row's order of additions
                y = self._mu[i] if j == 0 else y + self._mu[i]
                s = self._w[i] if j == 0 else s + self._w[i]
            value = y + g * math.sqrt(max(s, 0.0))
            if value >= values[top]:
                return incumbent, value
        action = np.zeros(self.d, bool)
        chosen = [int(c[top]) for c in self.columns]
        action[[i for i in chosen if i < self.d]] = True
        return action, float(values[top])

    def _sums(self, x: np.ndarray) -> np.ndarray:
        total = x[self.columns[0]]
        for column in self.columns[1:]:
            total += x[column]
        return total


def _top(mu: list, w: list, c: float, k: int, exact: bool) -> tuple[float, float]:
    """``(y, s)`` of the top ``k`` arms of ``mu + c w`` (positives only unless ``exact``)."""
    v = [a + c * b for a, b in zip(mu, w, strict=True)]
    top = sorted(range(len(v)), key=v.__getitem__, reverse=True)[:k]
    if not exact:
        top = [i for i in top if v[i] > 0.0]
    return sum([mu[i] for i in top]), sum([w[i] for i in top])


def dual_slope(
    mu: Sequence[float], w: Sequence[float], g: float, k: int, exact: bool, guess: float | None = None
) -> float:
    """A ``c`` near the minimiser of the convex ``top_k(mu + c w) + g^2 / (4 c)`` (8 top-k sets, 4 from a guess).

    Each top-k set ``T`` is a line ``y_T + c s_T + g^2 / (4 c)`` below the dual, least at
    ``c_T = g / (2 sqrt(s_T))``; a set with ``s_T > g^2 / (4 c^2)`` puts the minimiser
    below ``c``, else above. The next ``c`` is ``c_T`` inside the bracket, else where the
    bracketing lines cross; it stops when ``c`` moves by less than 0.1 %.
    Only the tightness of the ranking's bound depends on it, never its answer.

    >>> round(dual_slope([0.0, 0.0], [1.0, 1.0], 2.0, 1, True), 3)  # top 1 = c, so c + 1/c: c = 1
    1.0
    """
    mu, w = list(mu), list(w)
    quarter = g * g / 4.0
    c = guess if guess and guess > 0 else g / (2.0 * math.sqrt(max(max(w) * max(k, 1), 1e-300)))
    low = high = None
    for _ in range(4 if guess else 8):
        y, s = _top(mu, w, c, k, exact)
        if s <= 0.0:
            low, nxt = (c, y, s), c * 4.0
        else:
            if s * c * c > quarter:
                high = (c, y, s)
            else:
                low = (c, y, s)
            nxt = math.sqrt(quarter / s)
        if low and high:
            c_lo, c_hi = low[0], high[0]
            if not c_lo < nxt < c_hi:
                cross = (low[1] - high[1]) / (high[2] - low[2]) if high[2] > low[2] else 0.0
                nxt = cross if c_lo < cross < c_hi else math.sqrt(c_lo * c_hi)
        if abs(nxt - c) <= 1e-3 * c:
            break
        c = nxt
    return c


def maximise_on_cardinality(
    mu: np.ndarray,
    w: np.ndarray,
    g: float,
    k: int,
    exact: bool,
    *,
    include: tuple[int, ...] = (),
    exclude: tuple[int, ...] = (),
    incumbent: np.ndarray | None = None,
    c: float | None = None,
    limit: int = 200_000,
    margin: float = 0.0,
    listing: list | None = None,
) -> tuple[np.ndarray | None, float]:
    """An exact maximiser of ``mu . a + g sqrt(w . a)`` over the subsets (module docstring) and the ``c`` used.

    ``include`` arms are in every subset (``k`` counts them), ``exclude`` arms in
    none; ``None`` when no subset qualifies or the ranking passed ``limit`` nodes.
    With a ``listing`` (a list, unrestricted queries), the free arms of every subset the
    ranking lists within ``margin`` of the best are appended to it, with the reference
    subsets (the top ``k`` of ``v`` and, unless ``exact``, the empty one): every subset
    not listed has an index at most the best's minus ``margin``. The listing stays empty
    when no ranking ran (``g <= 0``).
    """
    d = len(mu)
    fixed = np.zeros(d, bool)
    free = np.ones(d, bool)
    if include or exclude:
        fixed[list(include)] = True
        free[list(include) + list(exclude)] = False
    slots = k - len(include)
    arms = np.flatnonzero(free) if (include or exclude) else np.arange(d)
    if slots < 0 or (exact and len(arms) < slots):
        return None, c or 1.0
    y0, s0 = (float(mu[fixed].sum()), float(w[fixed].sum())) if include else (0.0, 0.0)
    if g <= 0.0 or slots == 0 or len(arms) == 0:
        pick = _linear_pick(mu, arms, slots, exact)
        action = fixed.copy()
        action[pick] = True
        return action, c or 1.0
    arm_list = arms.tolist()
    mu_free, w_free = (mu[arms].tolist(), w[arms].tolist()) if (include or exclude) else (mu.tolist(), w.tolist())
    c = dual_slope(mu_free, w_free, g, slots, exact, c / SHRINK if c else None) * SHRINK
    v = [a + c * b for a, b in zip(mu_free, w_free, strict=True)]
    order = sorted(range(len(v)), key=v.__getitem__, reverse=True)
    vs, ms, ws = [v[i] for i in order], [mu_free[i] for i in order], [w_free[i] for i in order]
    top = list(range(slots)) if exact else [q for q in range(min(slots, len(vs))) if vs[q] > 0.0]
    best_positions: list[int] | None = top
    best_value = y0 + sum(ms[q] for q in top) + g * math.sqrt(max(s0 + sum(ws[q] for q in top), 0.0))
    reference = None
    if not exact and y0 + g * math.sqrt(max(s0, 0.0)) > best_value:  # the subset of the included arms alone
        best_positions, best_value = [], y0 + g * math.sqrt(max(s0, 0.0))
    if incumbent is not None and _allowed(incumbent, fixed, free, k, exact, bool(include or exclude)):
        value = _value(mu, w, g, incumbent)
        if value >= best_value:
            best_positions, best_value, reference = None, value, incumbent
    offset = y0 + c * s0 + g * g / (4.0 * c)  # F(a) <= offset + v-sum of the free arms of a
    collect: list | None = [] if listing is not None else None
    chosen = _rank(vs, ms, ws, exact, g, offset, y0, s0, slots, best_value, limit, margin, collect)
    if chosen is None:
        return None, c
    if listing is not None:
        references = [top] if exact else [top, []]
        listing += [[arm_list[order[q]] for q in subset] for subset in (*references, *(collect or ()))]
    if chosen:
        best_positions = chosen
    elif reference is not None:
        return reference, c
    best = fixed.copy()
    best[[arm_list[order[q]] for q in best_positions or []]] = True
    return best, c


def _value(mu: np.ndarray, w: np.ndarray, g: float, action: np.ndarray) -> float:
    return float(mu[action].sum()) + g * math.sqrt(max(float(w[action].sum()), 0.0))


def _allowed(action: np.ndarray, fixed: np.ndarray, free: np.ndarray, k: int, exact: bool, restricted: bool) -> bool:
    size = int(np.count_nonzero(action))
    if not (size == k if exact else size <= k):
        return False
    return not restricted or bool((action[fixed]).all() and not (action & ~fixed & ~free).any())


def _linear_pick(mu: np.ndarray, arms: np.ndarray, slots: int, exact: bool) -> np.ndarray:
    order = arms[np.argsort(-mu[arms], kind="stable")][: max(slots, 0)]
    return order if exact else order[mu[order] > 0]


def _rank(
    v: list,
    mu: list,
    w: list,
    exact: bool,
    g: float,
    offset: float,
    y0: float,
    s0: float,
    slots: int,
    best_value: float,
    limit: int,
    margin: float = 0.0,
    collect: list | None = None,
) -> list[int] | None:
    """Depth-first listing of the subsets of sorted positions whose ``v``-sum passes the moving threshold.

    ``F(a) <= offset + v-sum``; returns the positions of the best subset better than
    ``best_value`` (``[]``: none is), ``None`` past ``limit`` nodes. With ``margin > 0`` the
    threshold is that much lower and every subset passing it is appended to ``collect``: any
    subset not appended has ``F <= (best value found) - margin``.
    """
    n = len(v)
    prefix = [0.0, *accumulate(v if exact else [max(x, 0.0) for x in v])]
    sqrt = math.sqrt
    best: list[int] = []
    nodes = 0
    tau = best_value - offset - margin - 1e-12 * (1.0 + abs(best_value))
    chosen: list[int] = []

    def grow(first: int, left: int, sigma: float, y: float, s: float) -> None:
        nonlocal tau, best, best_value, nodes
        stop = n - left + 1 if exact else n
        leaf = left == 1 or not exact
        for q in range(first, stop):
            total = sigma + v[q]
            end = q + left
            if total + prefix[end if end < n else n] - prefix[q + 1] <= tau:
                return  # sorted: later positions give smaller sums and completions
            nodes += 1
            if nodes > limit:
                raise _TooMany
            y2, s2 = y + mu[q], s + w[q]
            chosen.append(q)
            if leaf and total > tau:
                value = y0 + y2 + g * sqrt(s0 + s2 if s0 + s2 > 0.0 else 0.0)
                if collect is not None:
                    collect.append(chosen.copy())
                if value > best_value:
                    best_value, best = value, chosen.copy()
                    tau = best_value - offset - margin - 1e-12 * (1.0 + abs(best_value))
            if left > 1:
                grow(q + 1, left - 1, total, y2, s2)
            chosen.pop()

    try:
        grow(0, slots, 0.0, 0.0, 0.0)
    except _TooMany:
        return None
    return best


class _TooMany(Exception):
    """The ranking passed its node limit."""


class ListedSubsets:
    """Unrestricted maximisations answered from the subsets a ranking listed near the top, while that is proven.

    A ranking with a ``margin`` lists every subset ``b`` it cannot rule out at
    ``F_0(b) > F_0* - margin`` (round 0: when it ran). Later, with means moved by
    ``delta`` and ``w`` no larger (counts only grow), every subset left out has

        ``F(b) <= F_0(b) + sum of the k largest max(delta_i, 0) + max(g - g_0, 0) sqrt(max s_0)``

    (``y`` grows by at most its arms' rises; ``sqrt(s)`` does not grow). So the
    best listed subset is the exact answer while its index exceeds ``F_0* - margin``
    plus that drift; otherwise the ranking runs again (a new listing). Which subset
    wins never depends on the listing, only how much work proves it (ties as
    :meth:`SubsetTable.best`: the incumbent when it ties).

    The margin follows the drift: ``growth`` times the drift that ended the last
    listing, at least ``least_margin``, and at most a cap that halves when a listing
    holds more than ``rows`` subsets and doubles when it holds under a quarter of them.
    A listing costs more than a plain ranking; when one answers fewer than two later
    queries (early rounds: the means move fast) or passes ``10 rows`` nodes, the next
    1, 2, 4, ... (at most ``backoff``) queries are answered by the plain ranking, as
    without a listing.

    >>> listed = ListedSubsets(6, 2, exact=False)
    >>> mu, w = np.array([0.9, 0.8, 0.5, 0.4, 0.3, 0.1]), np.array([0.01, 0.01, 1.0, 1.0, 0.5, 2.0])
    >>> action, c = listed.best(mu, w, 1.0, None, None)
    >>> action.astype(int).tolist(), listed.listings
    ([1, 0, 0, 0, 0, 1], 1)
    >>> mu[2] -= 0.3  # another arm falls: the listing still proves the answer
    >>> listed.best(mu, w, 1.0, action, c)[0].astype(int).tolist(), listed.listings
    ([1, 0, 0, 0, 0, 1], 1)
    """

    def __init__(
        self,
        d: int,
        k: int,
        exact: bool,
        *,
        growth: float = 4.0,
        least_margin: float = 1e-4,
        rows: int = 400,
        backoff: int = 64,
    ):
        self.d, self.k, self.exact = d, k, exact
        self.growth, self.least_margin, self.rows, self.backoff = growth, least_margin, rows, backoff
        self.table: SubsetTable | None = None
        self.margin, self.cap = least_margin, 1e-2
        self._ended_by: float | None = None  # the drift that ended the last listing
        self._answered = 0  # queries the current listing answered
        self._skip, self._skips_left = 0, 0  # plain rankings after a listing that answered too few
        #: Rankings run (each a new listing).
        self.listings = 0

    def best(
        self, mu: np.ndarray, w: np.ndarray, g: float, incumbent: np.ndarray | None, c: float | None
    ) -> tuple[np.ndarray | None, float | None]:
        """An exact maximiser of ``mu . a + g sqrt(w . a)`` over every subset, and the ranking's slope ``c``."""
        if self.table is not None and not (w > self._w0).any():
            rises = mu - self._mu0
            np.maximum(rises, 0.0, out=rises)
            rise = float(np.partition(rises, self.d - self.k)[self.d - self.k :].sum()) if self.k < self.d else 0.0
            drift = rise + max(g - self._g0, 0.0) * self._spread
            action, value = self.table.best_and_value(mu, w, g, incumbent)
            if value > self._floor + drift:
                self._answered += 1
                return action, c
            self._ended_by = drift
        if self.table is not None:
            self.table = None
            self._skip = 0 if self._answered >= 2 else min(max(1, 2 * self._skip), self.backoff)
            self._skips_left = self._skip
        if self._skips_left > 0:
            self._skips_left -= 1
            return maximise_on_cardinality(mu, w, g, self.k, self.exact, incumbent=incumbent, c=c)
        return self._list(mu, w, g, incumbent, c)

    def _list(
        self, mu: np.ndarray, w: np.ndarray, g: float, incumbent: np.ndarray | None, c: float | None
    ) -> tuple[np.ndarray | None, float | None]:
        """Run the ranking with a margin and keep what it listed (none when it did not run or gave up)."""
        if self._ended_by is not None:
            self.margin = max(self.least_margin, min(self.growth * self._ended_by, self.cap))
        listing: list = []
        limit = 10 * self.rows  # a listing past this many nodes would be too long to reuse anyway
        action, c = maximise_on_cardinality(
            mu, w, g, self.k, self.exact, incumbent=incumbent, c=c, limit=limit, margin=self.margin, listing=listing
        )
        self.listings += 1
        self._answered = 0
        if action is None:  # the listing passed its node limit: rank plainly, and back off as after a short listing
            self._skip = self._skips_left = min(max(1, 2 * self._skip), self.backoff)
            return maximise_on_cardinality(mu, w, g, self.k, self.exact, incumbent=incumbent, c=c)
        if not listing:
            return action, c
        if incumbent is not None:
            listing.append(np.flatnonzero(incumbent).tolist())
        self.table = SubsetTable(self.d, self.k, self.exact, listing)
        if len(self.table) > self.rows:
            self.cap = self.margin / 2.0
        elif 4 * len(self.table) < self.rows:
            self.cap = self.margin * 2.0
        self._floor = _value(mu, w, g, action) - self.margin
        self._mu0, self._w0, self._g0 = mu.copy(), w.copy(), g
        self._spread = math.sqrt(float(np.partition(w, self.d - self.k)[self.d - self.k :].sum()))
        self._ended_by = None
        return action, c
