"""Norm queries over enumerated actions by prefix sums along the actions' prefix tree: no BLAS, certified.

The actions (rows of arm indices in increasing order, as the enumerate backend's padded index
table holds them) share prefixes: ``{0, 3, 7}`` extends ``{0, 3}``, which extends ``{0}``.
:class:`PrefixTree` builds that tree once. A norm query then walks it level by level with
elementwise numpy arithmetic only (gathers, ``+``, ``*``, ``sqrt``): a node ``S + j`` gets

* ``mu @ a``: its parent's value plus ``mu[j]``, the arms added left to right, which are the bits of
  :func:`cmab_milp.portable.gathered_sums` (the enumerate backend's portable linear values), and
* ``a @ M @ a``: its parent's plus ``s_S[j]``, where ``s_S = diag(M) + 2 sum_{i in S} M[i]`` is kept
  for the nodes that have children (``s_{S+j} = s_S + 2 M[j]``): about ``d`` additions per inner node
  instead of ``m^2`` gathers per action, and no ``n x d x d`` product.

A diagonal ``M`` adds ``M[j, j]`` alone: the same bits as the enumerate backend's quadratic forms
(its diagonal path sums the diagonal in arm order), so the values are the portable values themselves.
With entries off the diagonal the two summation orders of ``a @ M @ a`` may differ in their last
bits; :meth:`PrefixTree.screen` then returns a bound on that difference, and the enumerate backend
re-values, its own portable way, every action the bound cannot separate from the best
(``EnumerateOracle._norm``): the answer is the first action of largest portable value, as before,
whatever the CPU or the BLAS kernel (none runs here).

On small tables (up to a few thousand actions) the tree's numpy calls per depth cost more than its arithmetic:
:class:`FlatTable` gathers every action's entries of ``mu`` and ``M`` at once instead, and
:func:`norm_screen` picks between the two by the number of entries to gather.

Example
-------
>>> import numpy as np
>>> index = np.array([[3, 3], [0, 3], [0, 1], [1, 2]])  # padded with d = 3: the empty action, {0}, {0, 1}, {1, 2}
>>> tree = PrefixTree(index, 3)
>>> tree.nodes
5
>>> values, bound = tree.screen(np.array([1.0, 2.0, 4.0]), np.diag([1.0, 1.0, 4.0]), 1.0, 1)
>>> values.tolist(), bound
([0.0, 2.0, 4.414213562373095, 8.23606797749979], 0.0)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FlatTable", "PrefixTree", "ValueBound", "norm_screen", "value_bound"]

_EPS = float(np.finfo(float).eps)  # twice the unit roundoff: every bound below has a factor 2 to spare
_ZERO = np.zeros(1)  # read by the unused slots of a padded table


class PrefixTree:
    """The prefix tree of a padded index table (rows of arms in increasing order, padded with ``d``).

    Node 0 is the empty prefix; the nodes of depth ``k`` follow those of depth ``k - 1``. ``node_of[r]``
    is the node where row ``r`` ends.
    """

    def __init__(self, index: np.ndarray, d: int):
        index = np.asarray(index, dtype=np.intp)
        if index.ndim != 2 or ((index < 0) | (index > d)).any():
            raise ValueError(f"index must be a 2-D table of arms in [0, {d}] ({d}: an unused slot)")
        if (np.diff(index, axis=1) <= 0).any(where=index[:, 1:] < d):
            raise ValueError("index rows must list their arms in increasing order, unused slots last")
        n = len(index)
        self.d = d
        sizes = (index < d).sum(axis=1) if n else np.zeros(0, np.intp)
        self.depth = int(sizes.max(initial=0))
        current = np.zeros(n, dtype=np.intp)  # each row's node at the current depth (global ids)
        self.node_of = np.zeros(n, dtype=np.intp)
        self.levels: list[tuple[np.ndarray, np.ndarray]] = []  # per depth: (parent ids, arm) of its nodes
        start = 1
        for k in range(self.depth):
            alive = np.flatnonzero(sizes > k)
            key = current[alive] * (d + 1) + index[alive, k]  # (parent, arm): one key per child
            keys, inverse = np.unique(key, return_inverse=True)
            self.levels.append((keys // (d + 1), keys % (d + 1)))
            current[alive] = start + inverse.ravel()
            ends = alive[sizes[alive] == k + 1]
            self.node_of[ends] = current[ends]
            start += len(keys)
        self.nodes = start
        self._sums_plan()
        self._bound = ValueBound(self.depth, quad_exact=False)

    def _sums_plan(self) -> None:
        """Per depth: where each node reads ``s_parent[arm]``, and which nodes keep an ``s`` of their own."""
        self._plan: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        inner = np.zeros(1, dtype=np.intp)  # the previous depth's nodes with children, ascending (root: yes)
        first = 1  # the global id of this depth's first node
        for k, (parents, arms) in enumerate(self.levels):
            row = np.searchsorted(inner, parents)  # the parent's row in the previous depth's s table
            cross = row * self.d + arms  # flat index of s_parent[arm]
            if k + 1 < len(self.levels):
                here = first + np.arange(len(parents))
                keep = np.isin(here, self.levels[k + 1][0])
                inner = here[keep]
                carry_rows, carry_arms = row[keep], arms[keep]
            else:
                carry_rows = carry_arms = np.zeros(0, np.intp)
            self._plan.append((cross, carry_rows, carry_arms))
            first += len(parents)

    def screen(self, mu: np.ndarray, M: np.ndarray, f: float, sign: int) -> tuple[np.ndarray, float]:
        """``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` for every row, and how far it may be from the portable value.

        The portable value is the enumerate backend's (linear part in arm order, ``EnumerateOracle.quadratic_forms``):
        the bound is ``0.0`` when ``M`` is diagonal (the same bits) and ``inf`` when magnitudes near overflow.
        """
        d = self.d
        diagonal = np.ascontiguousarray(np.diagonal(M), dtype=float)
        off = np.count_nonzero(M) != np.count_nonzero(diagonal)
        lin = np.empty(self.nodes)
        quad = np.empty(self.nodes)
        lin[0] = quad[0] = 0.0
        steps = diagonal  # a node's row of quadratic increments: 2 * c_S + diag(M) (c of the root: 0)
        twice = 2.0 * np.asarray(M, dtype=float) if off else None
        lo = 1
        for (parents, arms), (cross, carry_rows, carry_arms) in zip(self.levels, self._plan, strict=True):
            hi = lo + len(parents)
            np.add(lin[parents], mu[arms], out=lin[lo:hi])
            if off:
                np.add(quad[parents], steps.ravel()[cross], out=quad[lo:hi])
                if len(carry_rows):
                    steps = steps.reshape(-1, d)[carry_rows]
                    steps += twice[carry_arms]
            else:
                np.add(quad[parents], diagonal[arms], out=quad[lo:hi])
            lo = hi
        forms = quad[self.node_of]
        values = lin[self.node_of]
        values += sign * f * np.sqrt(np.maximum(forms, 0.0))
        if not off:
            return values, 0.0
        return values, self._bound(_largest(mu), _largest(M), f)


class FlatTable:
    """Every action's entries of ``mu`` and ``M`` gathered at once: a few numpy calls, for small tables.

    On a few thousand actions the tree's calls per depth cost more than the arithmetic. Here one gather
    per query takes each action's terms of ``a @ M @ a`` and its ``m`` entries of ``mu``, one column per
    action (a sum down columns is several times cheaper than one along short rows); two sums and four
    elementwise steps give the values. The terms are ``M[i, i]`` and ``2 M[i, j]`` for ``i < j``
    (``m (m + 1) / 2`` of them: ``M`` is symmetric), except on tables of at most ``stacked_entries``
    gathered entries, where the numpy calls are the cost: there every ``M[i, j]`` is read (no doubled
    copy of ``M`` to make) and both sums are one reduction. The sums are numpy's, not the portable
    order: :meth:`screen` bounds both parts (:func:`value_bound`).

    >>> table = FlatTable(np.array([[3, 3], [0, 3], [0, 1], [1, 2]]), 3)
    >>> values, bound = table.screen(np.array([1.0, 2.0, 4.0]), np.diag([1.0, 1.0, 4.0]), 1.0, 1)
    >>> values.tolist(), 0.0 < bound < 1e-6
    ([0.0, 2.0, 4.414213562373095, 8.23606797749979], True)
    """

    def __init__(self, index: np.ndarray, d: int, stacked_entries: int = 2_500):
        index = np.asarray(index, dtype=np.intp)
        if index.ndim != 2:
            raise ValueError(f"index must be a 2-D table of arms, got {index.ndim} dimensions")
        self.d = d
        n, width = index.shape
        self.depth = int((index < d).sum(axis=1).max(initial=0)) if index.size else 0
        # read from [M.ravel(), mu, 0.0] (then (2 M).ravel() unless stacked): an unused slot (arm d) reads the zero
        self._plain = zero = d * d + d  # the entries before the zero: M and mu
        used = index < d
        slots = range(width)
        linear = [np.where(used[:, p], d * d + index[:, p], zero) for p in slots]  # mu[i]
        self.stacked = 2 * n * width * width <= stacked_entries
        if self.stacked:  # [every M[i, j]; mu[i] padded with zeros]: one reduction along the middle axis
            pairs = [
                np.where(used[:, p] & used[:, q], index[:, p] * d + index[:, q], zero) for p in slots for q in slots
            ]
            linear += [np.full(n, zero)] * (len(pairs) - width)
            self._gather = np.array([pairs, linear], dtype=np.intp).reshape(2, len(pairs), n)
        else:  # [M[i, i]; 2 M[i, j], i < j; mu[i]]
            terms = [np.where(used[:, p], index[:, p] * (d + 1), zero) for p in slots]
            terms += [
                np.where(used[:, p] & used[:, q], zero + 1 + index[:, p] * d + index[:, q], zero)
                for p in slots
                for q in range(p + 1, width)
            ]
            self._terms = len(terms)
            self._gather = np.array(terms + linear, dtype=np.intp).reshape(len(terms) + width, n)
        self._bound = ValueBound(self.depth, quad_exact=False, linear_exact=False)

    def screen(self, mu: np.ndarray, M: np.ndarray, f: float, sign: int) -> tuple[np.ndarray, float]:
        """Every row's value and how far it may be from the portable value (see :meth:`PrefixTree.screen`).

        ``M`` must be symmetric (as a validated query's is).
        """
        if self.stacked:
            entries = np.concatenate((M.ravel(), mu, _ZERO))
            sums = np.add.reduce(entries[self._gather], axis=1)
            forms, values = sums[0], sums[1]
            magnitudes = np.abs(entries)  # of M and mu (and the zero)
        else:
            entries = np.concatenate((M.ravel(), mu, _ZERO, (M + M).ravel()))
            gathered = entries[self._gather]  # one column per action
            forms = np.add.reduce(gathered[: self._terms], axis=0)
            values = np.add.reduce(gathered[self._terms :], axis=0)
            magnitudes = np.abs(entries[: self._plain])
        np.maximum(forms, 0.0, out=forms)
        np.sqrt(forms, out=forms)
        forms *= sign * f
        values += forms
        top = float(magnitudes[magnitudes.argmax()])  # (NaN if any: the bound is then inf)
        return values, self._bound(top, top, f)


def norm_screen(index: np.ndarray, d: int, flat_entries: int = 60_000) -> PrefixTree | FlatTable:
    """The cheaper screen for a padded index table: :class:`FlatTable` up to ``flat_entries`` gathered entries.

    ``m (m + 1) / 2 + m`` entries an action (``m`` the table's width). The default is below the measured
    crossover, about 80,000 (``Cardinality(20, 4)``: 86,744 entries, the two screens as fast; at 30,000
    the flat table takes 0.8 of the tree's time, at 130,000 1.2).

    >>> type(norm_screen(np.array([[0, 1], [1, 2]]), 3)).__name__
    'FlatTable'
    """
    width = np.asarray(index).shape[1]
    if len(index) * (width * (width + 1) // 2 + width) <= flat_entries:
        return FlatTable(index, d)
    return PrefixTree(index, d)


class ValueBound:
    """:func:`value_bound` for one ``m`` and exactness: the parts that depend on them alone computed once.

    >>> ValueBound(3, quad_exact=False)(1.0, 1.0, 1.0) == value_bound(3, 1.0, 1.0, 1.0, quad_exact=False)
    True
    """

    def __init__(self, m: int, quad_exact: bool, linear_exact: bool = True):
        self.zero = quad_exact and linear_exact
        self.m = m = max(m, 1)
        h = max(m * m, 2 * m) + 2
        gamma = h * _EPS / (1.0 - h * _EPS)
        self._gap = 0.0 if quad_exact else 2.0 * gamma * m * m  # times max |M_ij|: D
        self._linear = 0.0 if linear_exact else 2.0 * gamma * m  # times max |mu_i|
        self._squares = m * m

    def __call__(self, top_mu: float, top_M: float, f: float) -> float:
        if self.zero:
            return 0.0
        if not (top_M <= 1e290 and top_mu <= 1e290 and f <= 1e290):  # (NaN too)
            return math.inf
        gap = self._gap * top_M
        radius = f * math.sqrt(self._squares * top_M + gap)
        radial = f * math.sqrt(gap) * (1.0 + 4.0 * _EPS) + 4.0 * _EPS * radius
        return (radial + self._linear * top_mu) * (1.0 + _EPS) + 2.0 * _EPS * (self.m * top_mu + radius)


def value_bound(m: int, top_mu: float, top_M: float, f: float, quad_exact: bool, linear_exact: bool = True) -> float:
    """How far a screened value may be from the portable one (``0.0``: the same bits; ``inf``: near overflow).

    Both ``a @ M @ a`` are sums of the ``k^2 <= m^2`` entries of ``M`` on the action's arms (doubled
    off the diagonal: exact), each by a summation tree of depth at most ``h = max(m^2, 2m) + 2``, so
    each is within ``gamma_h * m^2 * max|M|`` of the exact sum and they differ by at most twice that,
    ``D``. Clipping at 0 keeps the distance; ``|sqrt(x) - sqrt(y)| <= sqrt(|x - y|)``; ``sqrt``,
    the product by ``f`` and the sum with the linear part round once each. A linear part summed in
    another order than arm order adds ``2 gamma_h m max|mu|``.

    ``m`` is the most arms in an action, ``top_mu`` and ``top_M`` (at least) the largest ``|mu_i|`` and ``|M_ij|``.

    >>> value_bound(3, 1.0, 1.0, 1.0, quad_exact=True)
    0.0
    >>> 0.0 < value_bound(3, 1.0, 1.0, 1.0, quad_exact=False) < 1e-6
    True
    """
    return ValueBound(m, quad_exact, linear_exact)(top_mu, top_M, f)


def _largest(values: np.ndarray) -> float:
    """The largest ``|value|`` (``0.0`` for none; NaN if any is NaN).

    ``argmax`` and one look-up: several times cheaper than a ``max`` reduction on short vectors.

    >>> _largest(np.array([1.0, -3.0, 2.0])), _largest(np.zeros(0))
    (3.0, 0.0)
    """
    if not values.size:
        return 0.0
    magnitudes = np.abs(values).ravel()
    return float(magnitudes[magnitudes.argmax()])
