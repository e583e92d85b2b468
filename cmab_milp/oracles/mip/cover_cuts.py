"""Extended cover cuts of knapsack side rows, separated on a fractional point.

For a side row ``g @ a <= h`` with ``g >= 0``, a *cover* is a set ``C`` of
arms with ``g(C) > h``: no action holds all of ``C``, so every action obeys
``a(C) <= |C| - 1``. Its *extension* ``E(C) = C + {j : g_j >= max_{i in C} g_i}``
keeps the right-hand side (any ``|C|`` arms of ``E(C)`` weigh at least
``g(C) > h``), so ``a(E(C)) <= |C| - 1`` is valid for every action of the
space, whatever the base. :func:`cover_cuts` finds, per row, the greedy cover
of a point ``x`` (arms by ``(1 - x_j) / g_j``, smallest first, until the
weight passes ``h``), makes it minimal (arms of smallest ``x`` dropped while
it stays a cover), extends it, and returns the cut when ``x`` violates it by
more than ``min_violation``. Arms fixed to 1 by the query count in the row's
load (the cut then only applies with them, so it is over free arms with the
right-hand side lowered); arms fixed to 0 never enter a cover.

Example
-------
>>> import numpy as np
>>> g, h = np.array([[3.0, 3.0, 3.0, 1.0]]), np.array([7.0])
>>> cut = cover_cuts(np.array([0.9, 0.9, 0.4, 1.0]), g, h)[0]
>>> cut.cols, cut.ub  # at most two of the three heavy arms
((0, 1, 2), 2.0)
"""

from __future__ import annotations

import math

import numpy as np

from ...spaces.formulation import Row

__all__ = ["MIN_VIOLATION", "cover_cuts"]

#: A cut enters only when the point is more than this outside it.
MIN_VIOLATION = 1e-4


def cover_cuts(
    x: np.ndarray,
    G: np.ndarray,
    h: np.ndarray,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    min_violation: float = MIN_VIOLATION,
) -> list[Row]:
    """Violated extended cover cuts of the rows ``G a <= h`` with ``G >= 0`` at the point ``x`` (see the module).

    Rows with a negative coefficient on a free arm are skipped. ``lower`` / ``upper``: arm bounds in {0, 1}.
    """
    x = np.asarray(x, float)
    d = len(x)
    G = np.asarray(G, float).reshape(-1, d)
    h = np.asarray(h, float).reshape(-1)
    if len(h) != len(G):
        raise ValueError(f"G has {len(G)} rows but h {len(h)} entries")
    if not min_violation > 0:
        raise ValueError(f"min_violation must be > 0, got {min_violation}")
    forced = np.zeros(d, bool) if lower is None else np.asarray(lower) > 0.5
    banned = np.zeros(d, bool) if upper is None else np.asarray(upper) < 0.5
    free = ~forced & ~banned
    cuts: list[Row] = []
    for g, cap in zip(G, h, strict=True):
        items = np.flatnonzero(free & (g > 0.0))
        if (g[free] < 0.0).any() or not len(items):
            continue
        room = cap - float(g[forced].sum())  # what the free arms may weigh
        tol = 1e-9 * (1.0 + abs(cap))
        if float(g[items].sum()) <= room + tol:
            continue  # the free arms all fit: no cover
        order = items[np.lexsort((items, (1.0 - x[items]) / g[items]))]
        weight = np.cumsum(g[order])
        k = int(np.searchsorted(weight, room + tol, side="right")) + 1  # the first prefix weighing more than room
        cover = list(order[:k])
        for j in sorted(cover, key=lambda j: (x[j], j)):  # minimal: drop arms of least x while still a cover
            if float(g[cover].sum()) - g[j] > room + tol:
                cover.remove(j)
        rhs = len(cover) - 1
        heaviest = float(g[cover].max())
        extended = sorted(set(cover) | set(np.flatnonzero(free & (g >= heaviest)).tolist()))
        if float(x[extended].sum()) > rhs + min_violation:
            cols = tuple(int(j) for j in extended)
            cuts.append(Row(cols, (1.0,) * len(cols), -math.inf, float(rhs)))
    return cuts
