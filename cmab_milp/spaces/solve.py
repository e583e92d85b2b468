"""Exact small solves inside the space layer (no oracle): the best action for fixed weights.

Spaces need one exact optimisation of their own: ``m``, the largest number of
arms in an action, and whether a space has any action at all. This module does
it without the oracle layer (which sits above spaces): by enumeration when the
space is small, otherwise with :func:`scipy.optimize.milp` on the space's
:class:`~cmab_milp.spaces.formulation.Formulation`, looping solve -> separate ->
add cuts while the formulation's lazy separators find violated rows. The answer
is checked with ``space.contains`` before it is returned.

Example
-------
>>> import numpy as np
>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.cycle_graph(5), 0, 2)
>>> space.path_nodes(best_action(space, np.ones(space.d), enumerate_below=0))  # the longest path, by MILP
[0, 4, 3, 2]
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from .formulation import Row


class _Space(Protocol):
    """What the solver reads of an action space (``cmab_milp.spaces.ActionSpace``, which imports this module)."""

    d: int

    def count_upper_bound(self) -> int | None: ...
    def formulation(self) -> Any: ...
    def _iter_actions(self) -> Any: ...
    def _contains(self, action: np.ndarray) -> bool: ...


__all__ = ["ENUMERATE_BELOW", "MAX_CUT_ROUNDS", "best_action"]

#: Spaces with at most this many actions (by ``count_upper_bound``) are solved by enumeration.
ENUMERATE_BELOW = 2_000
#: Cap on solve -> separate rounds of the MILP loop.
MAX_CUT_ROUNDS = 2_000


def best_action(
    space: _Space, weights: np.ndarray | None = None, *, enumerate_below: int = ENUMERATE_BELOW
) -> np.ndarray | None:
    """An action maximising ``weights @ a`` (default: all ones, the largest action), or None if there is none."""
    w = np.ones(space.d) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (space.d,):
        raise ValueError(f"weights must have length d={space.d}, got shape {w.shape}")
    bound = space.count_upper_bound()
    if bound is not None and bound <= enumerate_below:
        return _by_enumeration(space, w)
    return _by_milp(space, w)


def _by_enumeration(space: _Space, w: np.ndarray) -> np.ndarray | None:
    best, best_value = None, -np.inf
    for action in space._iter_actions():
        value = float(w[action].sum())
        if value > best_value:
            best, best_value = action.copy(), value
    return best


def _rows_matrix(rows: list[Row], n_cols: int) -> sp.csr_matrix:
    data, indices, indptr = [], [], [0]
    for row in rows:
        indices.extend(row.cols)
        data.extend(row.coefs)
        indptr.append(len(indices))
    return sp.csr_matrix((np.asarray(data, float), np.asarray(indices, np.int64), indptr), shape=(len(rows), n_cols))


def _by_milp(space: _Space, w: np.ndarray) -> np.ndarray | None:
    f = space.formulation()
    d, n = f.d, f.n_cols
    cost = np.zeros(n)
    cost[:d] = -w
    bounds = Bounds(np.concatenate([np.zeros(d), f.aux_lb]), np.concatenate([np.ones(d), f.aux_ub]))
    integrality = np.concatenate([np.ones(d), f.aux_integer.astype(float)])
    cuts: list[Row] = []
    for _ in range(MAX_CUT_ROUNDS):
        rows = f.rows + cuts
        constraints = None
        if rows:
            lb = np.array([r.lb for r in rows], float)
            ub = np.array([r.ub for r in rows], float)
            constraints = LinearConstraint(_rows_matrix(rows, n), lb, ub)
        res = milp(cost, constraints=constraints, bounds=bounds, integrality=integrality, options={"mip_rel_gap": 0})
        if res.status == 2:  # infeasible
            return None
        if res.status != 0 or res.x is None:
            raise RuntimeError(f"scipy.optimize.milp failed on {space!r}: {res.message}")
        x = res.x[:d]
        if np.abs(x - np.round(x)).max() > 1e-6:
            raise RuntimeError(f"scipy.optimize.milp returned a fractional action on {space!r}")
        action = x > 0.5
        new = f.violated_rows(action)
        if not new:
            if not space._contains(action):
                raise RuntimeError(f"the formulation of {space!r} admits an action its contains() refuses")
            return action
        cuts.extend(new)
    raise RuntimeError(f"{space!r}: no exact answer after {MAX_CUT_ROUNDS} rounds of lazy cuts")
