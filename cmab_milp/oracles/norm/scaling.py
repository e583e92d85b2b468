"""Exact rescalings of a norm query.

HiGHS proved wrong optima on badly scaled models (``M ~ 1e6`` or ``1e-12``, terms
``~1e7``), so before a query is modelled :func:`unit_scale` divides ``M`` by a power
of 4 (``f`` times the power of 2 compensates) and, for sign +1,
:func:`unit_objective` divides ``mu`` and ``f`` by a power of 2. Both are exact in
floating point: every value is unchanged, or divided by one power of 2, so the
argmax (and every tie) is the same and a bound scales back exactly.

Solver noise
    HiGHS holds rows to ``1e-9``, so a bound can exceed the best value by the
    slack of a row times its dual. The certificate's
    ``proven(value=..., bound=..., measured_at="bound")`` (:mod:`~cmab_milp.oracles.core.certify`), within the
    contract's ``1e-9 * (1 + |bound|)`` (``unit=1/s`` for values divided by ``s``), closes every loop of the
    norm solver and checks its final answer (what is done about the gaps noise leaves open is
    in :mod:`~cmab_milp.oracles.norm.cuts`).

Example
-------
>>> import cmab_milp as cm
>>> q = cm.make_oracle(cm.Cardinality(2, 1), "highs").norm_query(np.ones(2), np.eye(2) * 16.0, 1.0, -1)
>>> float(unit_scale(q).M.max()), unit_scale(q).f
(1.0, 4.0)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...spaces import STPaths
from ..core.queries import NormQuery

__all__ = ["arms_bound", "unit_objective", "unit_scale"]


def unit_scale(query: NormQuery) -> NormQuery:
    """The same query with ``M`` divided by a power of 4 near its largest entry, ``f`` compensated.

    ``f sqrt(a @ M @ a) = (f 2^k) sqrt(a @ (M / 4^k) @ a)`` exactly in floating point, so
    every value is unchanged; the rows built from ``M`` get entries of order 1
    (with ``M ~ 1e6`` or ``1e-12`` HiGHS proved wrong optima of both signs' models).

    >>> import cmab_milp as cm
    >>> q = cm.make_oracle(cm.Cardinality(2, 1), "highs").norm_query(np.ones(2), np.eye(2) * 64.0, 1.0, -1)
    >>> scaled = unit_scale(q)
    >>> float(scaled.M.max()), scaled.f
    (1.0, 8.0)
    """
    largest = float(np.abs(query.M).max(initial=0.0))
    if largest == 0.0 or not np.isfinite(largest):
        return query
    k = round(math.log(largest, 4))
    if k == 0:
        return query
    return dataclasses.replace(query, M=query.M * 4.0**-k, f=query.f * 2.0**k)


def unit_objective(query: NormQuery) -> tuple[NormQuery, float]:
    """The query with ``mu`` and ``f`` divided by a power of 2 when its terms are far from 1.

    Every value is divided by the same power of 2 (exactly), so the argmax is unchanged;
    the second result multiplies a bound back. With terms ~1e7 (``f ~ 1e4``, ``M ~ 1e6``,
    ``mu ~ 1e4``) HiGHS proved a wrong optimum of the sign +1 model. Queries whose terms
    lie within ``2^+-13`` of 1 are left alone.

    >>> import cmab_milp as cm
    >>> q = cm.make_oracle(cm.Cardinality(2, 1), "highs").norm_query(np.ones(2) * 2.0**20, np.eye(2), 2.0**20)
    >>> scaled, factor = unit_objective(q)
    >>> float(scaled.mu.max()), scaled.f, factor
    (1.0, 1.0, 1048576.0)
    """
    size = max(float(np.abs(query.mu).max(initial=0.0)), query.f * math.sqrt(float(np.abs(query.M).max(initial=0.0))))
    if not np.isfinite(size) or size == 0.0 or 2.0**-13 <= size <= 2.0**13:
        return query, 1.0
    j = round(math.log2(size))
    return dataclasses.replace(query, mu=query.mu * 2.0**-j, f=query.f * 2.0**-j), 2.0**j


def arms_bound(space) -> int:
    """An upper bound on the arms of any action, without solving anything: ``space.m`` where it is cheap.

    ``space.m`` is exact, and on s-t paths of a graph with cycles it is a longest-path MILP
    (16 s on a 10x10 grid, paid by the first norm query); every norm bound needs only an upper
    bound, and a simple path has at most ``nodes - 1`` edges.

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)
    >>> arms_bound(space), "m" in vars(space)
    (4, False)
    """
    if type(space) is STPaths and not space.acyclic and "m" not in vars(space):
        return min(space.d, space.graph.number_of_nodes() - 1)
    return int(space.m)
