"""A concave overestimator of ``a @ M @ a`` on s-t paths read off the dual of a semidefinite relaxation.

The path LP's columns ``z`` (arms, then the visit columns of undirected graphs) satisfy, at every path ``a`` with
its visit vector, three kinds of quadratic relation:

* ``z_i - z_i^2 = 0`` (0/1 columns; a free multiplier ``d_i``);
* ``z_i - z_i z_j >= 0`` (McCormick; a multiplier ``P_ij >= 0``);
* ``(R_k z - b_k) z_j = 0`` for every equality row ``R_k z = b_k`` of the formulation and every column ``j``
  (RLT products; a free multiplier ``L_kj``).

Adding them to ``a @ M @ a`` (``M`` padded with zeros on the visit columns) gives, for any ``P >= 0``, ``L`` and
``d``, the quadratic

    ``q(z) = z @ (B - diag(d)) @ z + (l + d) @ z``,  ``B = M - sym(P) + sym(R' L)``,  ``l = P 1 - L' b``,

with ``q(z) >= a @ M @ a`` at every path (each added term is ``>= 0`` or ``= 0`` there). With ``diag(d) - B`` PSD
``q`` is concave, which is all :class:`~.paths.plus.ConcavePathBranch` needs of a form: its tangent planes bound
``sqrt(a @ M @ a)`` on every path. So the form is valid whatever the multipliers (:func:`product_form` makes ``d``
exact by an eigenvalue); they only decide how tight it is. They are the dual of the semidefinite relaxation
``Y = [[1, z'], [z, X]]`` PSD, ``diag X = z``, ``X_ij <= z_i``, ``R X = b z'`` (Shor, McCormick, RLT), which closes
most of the root gap of sign +1 path queries (``docs/performance.md``, "Norm index at d = 100-150", third pass).

:func:`fit_multipliers` chooses them without an SDP solver: at a point ``zbar`` (the root LP's) it minimises
``q(zbar)`` over ``P >= 0``, ``L`` and ``d = c + lambda_max(B - diag(c))`` (a smoothed largest eigenvalue, L-BFGS-B
with the bound ``P >= 0``). At the saddle point of the relaxation that minimum is the SDP's value at ``zbar``.

>>> import networkx as nx
>>> import cmab_milp as cm
>>> space = cm.STPaths(nx.cycle_graph(4), 0, 2)  # 0-1-2 and 0-3-2
>>> M = np.eye(4) + 0.5
>>> R, b = np.array([[1.0, 0, 0, 1], [0, 1, 1, 0]]), np.array([1.0, 1.0])  # one edge at s, one at t
>>> A, l = product_form(M, R, b, np.full((4, 4), 0.1), np.zeros((2, 4)))
>>> bool(np.linalg.eigvalsh(A).max() <= 1e-12)
True
>>> paths = space.enumerate().astype(float)
>>> bool(all(p @ A @ p + l @ p >= p @ M @ p - 1e-12 for p in paths))
True
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from ..shifts import _MARGIN

__all__ = ["fit_multipliers", "product_form"]

_EPS = float(np.finfo(float).eps)


def _parts(M: np.ndarray, R: np.ndarray, b: np.ndarray, P: np.ndarray, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(B, l)`` of the module docstring (``M`` padded to the columns of ``R``)."""
    n = R.shape[1]
    B = np.zeros((n, n))
    B[: len(M), : len(M)] = M
    P = P.copy()
    np.fill_diagonal(P, 0.0)
    RL = R.T @ L
    B += (RL + RL.T - P - P.T) / 2.0
    return B, P.sum(axis=1) - L.T @ b


def product_form(
    M: np.ndarray, R: np.ndarray, b: np.ndarray, P: np.ndarray, L: np.ndarray, c: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, l)`` with ``q(z) = z @ A @ z + l @ z`` concave and ``>= a @ M @ a`` at every 0/1 point ``z`` whose first
    ``len(M)`` entries are ``a`` and which satisfies ``R z = b`` (module docstring).

    ``P`` (``n x n``, ``n`` the columns of ``R``) is clipped at 0 and its diagonal ignored; ``L`` is ``k x n`` (``k``
    the rows of ``R``). ``c``: the diagonal's shape, raised by ``B - diag(c)``'s largest eigenvalue (default 0).
    """
    R, b = np.asarray(R, float), np.asarray(b, float)
    n = R.shape[1]
    if R.shape[0] != len(b) or np.shape(P) != (n, n) or np.shape(L) != (len(b), n) or len(M) > n:
        raise ValueError(f"shapes: R {R.shape}, b {np.shape(b)}, P {np.shape(P)}, L {np.shape(L)}, M {np.shape(M)}")
    B, linear = _parts(np.asarray(M, float), R, b, np.maximum(np.asarray(P, float), 0.0), np.asarray(L, float))
    c = np.zeros(n) if c is None else np.asarray(c, float)
    top = float(np.linalg.eigvalsh(B - np.diag(c))[-1])
    d = c + top + _MARGIN * n * _EPS * (float(np.abs(B).max(initial=0.0)) + float(np.abs(c).max(initial=0.0)) + 1.0)
    return B - np.diag(d), linear + d


def fit_multipliers(
    M: np.ndarray,
    R: np.ndarray,
    b: np.ndarray,
    zbar: np.ndarray,
    *,
    iterations: int = 200,
    smoothing: float = 0.02,
    start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    proximal: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P, L, c)`` lowering ``q(zbar)`` of :func:`product_form` (module docstring): ``iterations`` of L-BFGS-B on
    ``q(zbar)`` with ``lambda_max`` smoothed (log-sum-exp at ``smoothing`` times ``M``'s mean diagonal).

    ``zbar`` may be a matrix of points (rows): then the mean of ``q`` over them. Any result gives a valid form.
    """
    R, b = np.asarray(R, float), np.asarray(b, float)
    k, n = R.shape
    Z = np.atleast_2d(np.asarray(zbar, float))
    z_mean = Z.mean(axis=0)
    ZZ = Z.T @ Z / len(Z)
    w = z_mean - np.diag(ZZ)  # the weights of d: mean of z - z^2
    sw = float(w.sum())
    mu = smoothing * float(np.mean(np.diag(M)))
    m = len(M)
    M_pad = np.zeros((n, n))
    M_pad[:m, :m] = M
    off = ~np.eye(n, dtype=bool)

    def unpack(v):
        P = v[: n * n].reshape(n, n)
        L = v[n * n : n * n + k * n].reshape(k, n)
        return P, L, v[n * n + k * n :]

    def value(v):
        P, L, c = unpack(v)
        P = np.where(off, P, 0.0)
        RL = R.T @ L
        B = M_pad + (RL + RL.T - P - P.T) / 2.0
        lam, V = np.linalg.eigh(B - np.diag(c))
        top = lam[-1]
        e = np.exp((lam - top) / mu)
        s = float(e.sum())
        p = e / s
        smooth = top + mu * np.log(s)
        G = ZZ + sw * (V * p) @ V.T  # d value / d B
        f = float(np.sum(B * ZZ)) + float(P.sum(axis=1) @ z_mean) - float(b @ L @ z_mean) + float(w @ c) + sw * smooth
        gP = np.where(off, z_mean[:, None] - G, 0.0)
        gL = R @ G - np.outer(b, z_mean)
        gc = w - sw * np.einsum("ij,j,ij->i", V, p, V)
        grad = np.concatenate([gP.ravel(), gL.ravel(), gc])
        if proximal > 0.0:
            step = v - v0
            f += 0.5 * proximal * float(step @ step)
            grad += proximal * step
        return f, grad

    if start is None:
        v0 = np.zeros(n * n + k * n + n)
    else:
        v0 = np.concatenate([np.asarray(s, float).ravel() for s in start])
    bounds = [(0.0, None)] * (n * n) + [(None, None)] * (k * n + n)
    found = scipy.optimize.minimize(
        value,
        v0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": iterations, "maxfun": iterations, "maxcor": 10},
    )
    P, L, c = unpack(found.x)
    return np.maximum(P, 0.0), L, c
