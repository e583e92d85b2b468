"""The concave overestimator of ``a @ M @ a`` that bounds the sign +1 branch (:mod:`.branch.plus`).

A quadratic ``q(x) = x @ A @ x + b @ x`` with ``A`` negative semidefinite on the free arms is concave.
If it is at least ``a @ M @ a`` on every action ``a`` of the space, then ``psi(x) = mu @ x + f sqrt(q(x))``
bounds the index from above on every action, and (concave) its tangent plane at any point of the actions'
convex hull bounds every action: :mod:`.branch.plus`. The smaller ``q`` is between the actions, the
tighter the bound. Three kinds of term change ``x @ M @ x`` only between the actions (``a`` an action,
``x`` a point):

* **diagonal** ``d_i (x_i - x_i^2)``: zero on 0/1 points;
* **conflicts** ``2 S_ij x_i x_j`` on pairs of arms that no action holds together (two edges of a
  matching sharing a node: :func:`conflict_pairs`): zero on every action, of either sign;
* **size** ``kappa (m 1 @ x - (1 @ x)^2)`` with ``kappa >= 0`` and ``m`` an upper bound on the arms of an
  action: ``kappa |a| (m - |a|) >= 0`` on every action, zero on those of ``m`` arms. It subtracts
  ``kappa 1 1'`` from the quadratic part: the common component of a covariance whose arms are all
  positively correlated, which otherwise forces a large diagonal.

So with ``B = M + S - kappa J`` (``J = 1 1'`` on the free arms) and ``d`` a diagonal above ``B``
(:func:`~.shifts.diagonal_shift`, ``diag(d) - B`` PSD),

    ``q(x) = x @ (B - diag(d)) @ x + (d + kappa m 1) @ x``

is concave and ``q(a) = a @ M @ a + kappa |a| (m - |a|) >= a @ M @ a`` on every action. It is ``>= 0`` on
the hull of the actions (concave, and ``>= 0`` at its vertices), where the branch takes its tangents.

The choices (:func:`concave_overestimator`): ``kappa`` is the mean off-diagonal entry of ``M`` on the free
arms (at least 0); ``S`` lowers the largest eigenvalue of ``B`` by a few projected subgradient steps on
the conflict pairs (each step moves ``S`` against ``v v'`` on them, ``v`` the top eigenvector).
Any ``kappa >= 0`` and any ``S`` on conflict pairs give a valid bound; these only make it tight.

>>> M = np.full((3, 3), 0.5) + 0.5 * np.eye(3)  # every pair correlated
>>> A, b = concave_overestimator(M, np.arange(3), 2)
>>> bool(np.linalg.eigvalsh(A)[-1] <= 1e-12)  # concave
True
>>> a = np.array([1.0, 1.0, 0.0])  # an action of m = 2 arms: equal
>>> bool(np.isclose(a @ A @ a + b @ a, a @ M @ a))
True
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ....spaces import Matchings
from ..shifts import diagonal_shift

__all__ = ["concave_overestimator", "conflict_pairs", "overestimator_parts", "shifted_form"]

#: Subgradient steps on the conflict terms (10 reach what 30 or 80 do on the crew queries).
CONFLICT_STEPS = 10


def conflict_pairs(space) -> np.ndarray | None:
    """A symmetric boolean ``d x d`` matrix of the pairs of arms no action of ``space`` holds together,
    or ``None`` when the space declares none (only matchings do: two edges sharing a node).

    >>> import networkx as nx
    >>> import cmab_milp as cm
    >>> C = conflict_pairs(cm.Matchings(nx.path_graph(4)))  # edges 0-1, 1-2, 2-3
    >>> C.astype(int).tolist()
    [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    """
    if type(space) is not Matchings:
        return None
    cached = space.__dict__.get("_conflict_pairs")
    if cached is None:
        t, h = space.tail, space.head
        cached = (t[:, None] == t) | (t[:, None] == h) | (h[:, None] == t) | (h[:, None] == h)
        np.fill_diagonal(cached, False)
        space.__dict__["_conflict_pairs"] = cached
    return cached


def _size_weight(sub: np.ndarray) -> float:
    """``kappa``: the mean off-diagonal entry of ``sub``, at least 0."""
    k = len(sub)
    if k < 2:
        return 0.0
    return max(0.0, float((sub.sum() - np.trace(sub)) / (k * (k - 1))))


def _conflict_terms(sub: np.ndarray, conflicts: np.ndarray, steps: int) -> np.ndarray:
    """``S`` on the ``conflicts`` (zero elsewhere, symmetric) lowering the largest eigenvalue of ``sub + S``."""
    S = np.zeros_like(sub)
    if not conflicts.any():
        return S
    k = len(sub)
    for _ in range(steps):
        w, V = scipy.linalg.eigh(sub + S, subset_by_index=[k - 2, k - 1], driver="evr")  # the top two only
        gap = float(w[1] - w[0])
        G = np.outer(V[:, 1], V[:, 1]) * conflicts
        norm = float(np.linalg.norm(G))
        if gap <= 0.0 or norm <= 0.0:
            break
        S -= 0.5 * gap * G / norm
    return (S + S.T) / 2.0


def concave_overestimator(
    M: np.ndarray, arms: np.ndarray, m: int, conflicts: np.ndarray | None = None, *, size: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, b)`` with ``q(x) = x @ A @ x + b @ x`` concave on ``arms`` and ``q(a) >= a @ M @ a`` on every
    action of at most ``m`` arms, all among ``arms``, holding no pair of ``conflicts`` (module docstring).

    Equal on the actions of ``m`` arms; ``size=False`` (or ``m`` unknown) leaves the size term out and makes
    it equal on every action. Off ``arms`` ``A`` is ``M`` and ``b`` zero (the actions are zero there).
    """
    B, linear = overestimator_parts(M, arms, m, conflicts, size=size)
    return shifted_form(B, linear, arms)


def overestimator_parts(
    M: np.ndarray, arms: np.ndarray, m: int, conflicts: np.ndarray | None = None, *, size: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(B, l)``: ``B = M + S - kappa J`` on ``arms`` (``M`` elsewhere) and ``l = kappa m`` on ``arms``, so that
    ``a @ B @ a + l @ a >= a @ M @ a`` on the actions of :func:`concave_overestimator`, before the diagonal."""
    M = np.asarray(M, float)
    arms = np.asarray(arms, int)
    B = M[np.ix_(arms, arms)]
    if conflicts is not None and len(arms) > 1:
        B = B + _conflict_terms(B, conflicts[np.ix_(arms, arms)], CONFLICT_STEPS)
    kappa = _size_weight(B) if size else 0.0
    full = M.copy()
    full[np.ix_(arms, arms)] = B - kappa
    linear = np.zeros(len(M))
    linear[arms] = kappa * m
    return full, linear


def shifted_form(
    B: np.ndarray, linear: np.ndarray, arms: np.ndarray, sweeps: int | None = None, uniform: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(B - diag(d), d + linear)`` with ``d >= 0`` above ``B`` on ``arms`` (:func:`~.shifts.diagonal_shift`,
    ``sweeps`` of its max-cut method, ``uniform`` its ``lambda I`` candidate): concave there, and unchanged on
    0/1 points.

    Valid for any subset of the arms ``B`` was made on: a branch node may shift again on its own arms.
    """
    shift = np.maximum(diagonal_shift(B, arms, above=True, sweeps=sweeps, uniform=uniform), 0.0)
    return B - np.diag(shift), shift + linear
