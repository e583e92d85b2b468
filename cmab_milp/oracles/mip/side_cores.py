"""Reduced-cost fixing and exact cores of side plans on cardinality and partition bases.

For a base of subsets of at most (or exactly) ``m`` arms, or a partition matroid,
:func:`flip_bounds` gives in closed form, per arm, the best Lagrangian value of the
base actions that flip the arm against the relaxed optimum: an arm whose flip bound
is below the start's value is fixed (:func:`~.side_starts.side_plan`). When few arms
stay free, :func:`solve_core` enumerates them (subset sums by doubling): with the
fixing's bound this proves the optimum, since the fixed-out actions are below the
start and the rest are all tried.

>>> import numpy as np
>>> from cmab_milp import Cardinality
>>> bounds = flip_bounds(Cardinality(2, 1), np.array([1.0, -1.0]), np.array([True, False]), *[np.zeros(2, bool)] * 2)
>>> bounds.tolist()  # taking arm 0 out (best: nothing) loses 1; putting arm 1 in for arm 0 loses 2
[-1.0, -2.0]
"""

from __future__ import annotations

import numpy as np

from ...portable import matvec
from ...spaces import ActionSpace, Cardinality, PartitionMatroid

__all__ = ["CORE_ARMS", "CORE_CELLS", "flip_bounds", "solve_core"]

#: At most this many arms left free after fixing are enumerated instead of solving the MILP, and only while
#: the table of subset sums (one row per objective, touched block and side row) has at most CORE_CELLS entries.
#: Up to this size the enumeration beats HiGHS on the fixed model (docs/performance.md, "Oracles").
CORE_ARMS = 18
CORE_CELLS = 2**19
#: Relative tolerance of the side rows.
_TOL = 1e-9


def flip_bounds(
    base: ActionSpace, reduced: np.ndarray, relaxed: np.ndarray, forced: np.ndarray, banned: np.ndarray
) -> np.ndarray | None:
    """Per arm, ``max over base actions b with b_j != relaxed_j of reduced @ b`` minus ``reduced @ relaxed``.

    ``relaxed`` must be an optimum of ``reduced`` over the base under the arm bounds ``forced`` /
    ``banned``; fixed arms get ``+inf`` (never fixed again), arms that cannot flip ``-inf``.
    Closed forms for subsets of at most (or exactly) m arms and partition matroids; ``None`` for
    other bases.

    >>> flip_bounds(Cardinality(3, 1), np.array([3.0, 1.0, -1.0]), np.array([True, False, False]),
    ...             np.zeros(3, bool), np.zeros(3, bool)).tolist()
    [-2.0, -2.0, -4.0]
    """
    if type(base) is Cardinality:
        groups, caps, exact = [np.arange(base.d)], [base.m], base.exact
    elif type(base) is PartitionMatroid:
        groups, caps, exact = [np.asarray(b) for b in base.blocks], list(base.capacities), False
    else:
        return None
    out = np.full(base.d, np.inf)
    for arms, cap in zip(groups, caps, strict=True):
        free = arms[~forced[arms] & ~banned[arms]]
        if not len(free):
            continue
        room = cap - int(relaxed[arms].sum())  # slots left in the group
        chosen = free[relaxed[free]]
        unchosen = free[~relaxed[free]]
        best_out = float(reduced[unchosen].max()) if len(unchosen) else -np.inf
        worst_in = float(reduced[chosen].min()) if len(chosen) else np.inf
        # an arm taken out: the best arm left out takes its slot when that helps (or must: exactly m)
        refill = best_out if exact else max(best_out, 0.0)
        out[chosen] = refill - reduced[chosen]
        # an arm put in: a free slot, else the weakest chosen free arm makes way (or none can: -inf)
        if room > 0 and not exact:
            out[unchosen] = reduced[unchosen]
        else:
            out[unchosen] = reduced[unchosen] - worst_in if len(chosen) else -np.inf
    return out


def solve_core(
    base: ActionSpace,
    weights: np.ndarray,
    G: np.ndarray,
    h: np.ndarray,
    values: np.ndarray,
    fixed: np.ndarray,
    forced: np.ndarray,
) -> np.ndarray | None:
    """The best action of ``base`` with ``G a <= h`` whose arms ``fixed`` take ``values`` (``forced`` ones 1), by
    enumerating the others; ``None`` when more than :data:`CORE_ARMS` are free, the base is no cardinality or
    partition space, the table would pass :data:`CORE_CELLS`, or no action qualifies. Ties go to the first
    in a fixed order (a function of the query).

    >>> solve_core(Cardinality(4, 2), np.array([3.0, 2.0, 2.0, -1.0]), np.array([[2.0, 1.0, 1.0, 1.0]]),
    ...            np.array([2.0]), np.zeros(4, bool), np.array([False, False, False, True]), np.zeros(4, bool))
    array([False,  True,  True, False])
    """
    if type(base) is Cardinality:
        groups, caps, exact = np.ones((1, base.d)), np.array([base.m], float), base.exact
    elif type(base) is PartitionMatroid:
        groups = np.zeros((len(base.blocks), base.d))
        for k, block in enumerate(base.blocks):
            groups[k, list(block)] = 1.0
        groups, caps, exact = groups, np.asarray(base.capacities, float), False
    else:
        return None
    free = np.flatnonzero(~fixed)
    if len(free) > CORE_ARMS:
        return None
    template = (values & fixed) | forced
    touched = groups[:, free].any(axis=1)  # the groups (blocks) a free arm is in
    coefs = np.vstack([weights[free], groups[touched][:, free], G[:, free]])
    if len(coefs) << len(free) > CORE_CELLS:
        return None
    start = np.concatenate([[0.0], groups[touched] @ template, matvec(G, template)])
    table = _subset_sums(coefs, start)  # column b: the subset whose bit j holds free[j]
    load, rows = table[1 : 1 + int(touched.sum())], table[1 + int(touched.sum()) :]
    cap = caps[touched][:, None]
    ok = (np.abs(load - cap) < 0.5).all(axis=0) if exact else (load <= cap + 0.5).all(axis=0)
    if exact and not (groups[~touched] @ template == caps[~touched]).all():
        return None
    if len(h):
        ok &= (rows <= (h + _TOL * (1.0 + np.abs(h)))[:, None]).all(axis=0)
    if not ok.any():
        return None
    best = int(np.argmax(np.where(ok, table[0], -np.inf)))
    action = template.copy()
    action[free] = (best >> np.arange(len(free))) & 1 > 0
    return action


def _subset_sums(coefs: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``start + coefs @ s`` for every 0/1 vector ``s`` (column ``b``: ``s_j`` is bit ``j`` of ``b``), by doubling.

    Elementwise only: no BLAS matrix product, whose threads made its time erratic on a loaded machine.

    >>> _subset_sums(np.array([[1.0, 10.0]]), np.array([0.5])).tolist()
    [[0.5, 1.5, 10.5, 11.5]]
    """
    out = start[:, None]
    for j in range(coefs.shape[1]):
        out = np.concatenate([out, out + coefs[:, j : j + 1]], axis=1)
    return out
