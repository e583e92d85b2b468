"""Which of many actions are outside a space, in bulk: its own linear rows where they are exact, else ``contains``.

A space's :class:`~cmab_milp.spaces.formulation.Formulation` with no auxiliary
column and no lazy separator describes its actions exactly by linear rows over
the arms (cardinality, partition matroids, matchings, side constraints), so a
whole matrix of actions is checked by one sparse product. Otherwise the rows
over arms only still prove infeasibility (every action satisfies them), and
the actions they do not refuse are asked to ``space.contains`` one by one. A
few actions are always checked both ways, so a formulation that ever
disagreed with ``contains`` would send every action to ``contains``.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> outside(cm.Cardinality(3, 2), np.array([[0, 1, -1], [0, 1, 2], [2, -1, -1]])).tolist()
[False, True, False]
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..spaces.base import ActionSpace

__all__ = ["outside"]

#: Actions checked by both the rows and ``contains`` (the cross-check described above).
CROSS_CHECKED = 8
#: Slack on a row's bounds (actions are 0/1 and the rows' coefficients exact in floating point).
TOLERANCE = 1e-9


def as_bool_actions(arms: np.ndarray, d: int) -> np.ndarray:
    """The ``(k, d)`` bool matrix of rows of arm indices (``-1``: padding).

    >>> as_bool_actions(np.array([[2, 0], [1, -1]]), 3).astype(int).tolist()
    [[1, 0, 1], [0, 1, 0]]
    """
    actions = np.zeros((len(arms), d), bool)
    valid = arms >= 0
    actions[np.nonzero(valid)[0], arms[valid]] = True
    return actions


def _one_by_one(space: ActionSpace, arms: np.ndarray) -> np.ndarray:
    return np.array([not space.contains(a) for a in as_bool_actions(arms, space.d)], bool)


def outside(space: ActionSpace, arms: np.ndarray) -> np.ndarray:
    """For each row of ``arms`` (``(k, w)`` arm indices, ``-1``: padding), whether it is not an action of ``space``."""
    if len(arms) == 0:
        return np.zeros(0, bool)
    try:
        formulation = space.formulation()
    except Exception:  # a space without a linear model: its own test, action by action
        return _one_by_one(space, arms)
    matrix, lb, ub = formulation.matrix()
    arms_only = np.asarray(matrix[:, space.d :].getnnz(axis=1) == 0).ravel() if formulation.n_aux else None
    if arms_only is not None:
        matrix, lb, ub = matrix[arms_only][:, : space.d], lb[arms_only], ub[arms_only]
    refused = np.zeros(len(arms), bool)
    if matrix.shape[0]:
        valid = arms >= 0
        rows = np.nonzero(valid)[0]
        chosen = sp.csr_matrix((np.ones(rows.size), (rows, arms[valid])), shape=(len(arms), space.d))
        activity = (chosen @ matrix.T.tocsc()).tocsr()  # sparse: most rows do not touch most actions
        over = activity.data > ub[activity.indices] + TOLERANCE
        under = activity.data < lb[activity.indices] - TOLERANCE
        refused[np.repeat(np.arange(len(arms)), np.diff(activity.indptr))[over | under]] = True
        for r in np.flatnonzero((lb > TOLERANCE) | (ub < -TOLERANCE)):  # rows that an absent entry (0) violates
            column = activity[:, [r]].toarray().ravel()
            refused |= (column < lb[r] - TOLERANCE) | (column > ub[r] + TOLERANCE)
    exact = formulation.n_aux == 0 and not formulation.separators
    if not exact:
        rest = np.flatnonzero(~refused)
        refused[rest] = _one_by_one(space, arms[rest])
        return refused
    probe = np.linspace(0, len(arms) - 1, min(CROSS_CHECKED, len(arms))).astype(int)
    if not np.array_equal(refused[probe], _one_by_one(space, arms[probe])):
        return _one_by_one(space, arms)
    return refused
