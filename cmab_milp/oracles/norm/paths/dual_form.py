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
import scipy.linalg
import scipy.optimize
import scipy.sparse

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
    method: str = "lbfgsb",
    memory: dict | None = None,
    single: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P, L, c)`` lowering ``q(zbar)`` of :func:`product_form` (module docstring): ``iterations`` evaluations of
    ``q(zbar)`` with ``lambda_max`` smoothed (log-sum-exp at ``smoothing`` times ``M``'s mean diagonal).

    ``method``: ``"lbfgsb"`` (scipy's L-BFGS-B with the bound ``P >= 0``; its handling of ~40,000 bounds costs
    ~0.2-0.3 s a call on the 8x8 grid, more than its evaluations) or ``"spg"`` (:func:`_spg`: projected gradient
    steps of Barzilai-Borwein length, no per-call overhead; ``memory``, a dict, carries its step length from call to
    call in ``memory["step"]``); ``single``: each evaluation's eigenvalues in single precision (LAPACK's ``syevd``,
    ~1.5x faster at ``n = 174``; only the fit's path changes, the form is made exact by :func:`product_form`). ``zbar``
    may be a matrix of points (rows): then the mean
    of ``q`` over them. Any result gives a valid form.
    """
    if method not in ("lbfgsb", "spg"):
        raise ValueError(f"fit_multipliers: method must be 'lbfgsb' or 'spg', got {method!r}")
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

    def unpack(v):
        P = v[: n * n].reshape(n, n)
        L = v[n * n : n * n + k * n].reshape(k, n)
        return P, L, v[n * n + k * n :]

    R_sparse = scipy.sparse.csr_matrix(R)  # (a few columns a row: the products with it cost little)
    R_sparse_t = R_sparse.T.tocsr()
    diagonal = np.arange(n) * (n + 1)
    bz = np.outer(b, z_mean)
    grad = np.empty(n * n + k * n + n)

    def value(v):
        P, L, c = unpack(v)
        P = P.copy()
        P.flat[diagonal] = 0.0  # (P's diagonal plays no part)
        RL = R_sparse_t @ L
        S = RL + RL.T - P - P.T
        S *= 0.5
        B = S + M_pad
        if single:
            lam, V = scipy.linalg.eigh((B - np.diag(c)).astype(np.float32), driver="evd", check_finite=False)
            lam, V = lam.astype(float), V.astype(float)
        else:
            lam, V = np.linalg.eigh(B - np.diag(c))
        top = lam[-1]
        near = lam - top > -40.0 * mu  # (the others' weights are below e^-40)
        lam, V = lam[near], V[:, near]
        e = np.exp((lam - top) / mu)
        s = float(e.sum())
        p = e / s
        smooth = top + mu * np.log(s)
        G = ZZ + sw * (V * p) @ V.T  # d value / d B
        f = float(np.vdot(B, ZZ)) + float(P.sum(axis=1) @ z_mean) - float(np.vdot(L, bz)) + float(w @ c) + sw * smooth
        gP = grad[: n * n].reshape(n, n)
        np.subtract(z_mean[:, None], G, out=gP)
        gP.flat[diagonal] = 0.0
        grad[n * n : n * n + k * n] = (R_sparse @ G - bz).ravel()
        grad[n * n + k * n :] = w - sw * ((V * V) @ p)
        out = grad.copy()
        if proximal > 0.0:
            step = v - v0
            f += 0.5 * proximal * float(step @ step)
            out += proximal * step
        return f, out

    if start is None:
        v0 = np.zeros(n * n + k * n + n)
    else:
        v0 = np.concatenate([np.asarray(s, float).ravel() for s in start])
    if method == "spg":
        found, step = _spg(value, v0, n * n, iterations, None if memory is None else memory.get("step"))
        if memory is not None:
            memory["step"] = step
        P, L, c = unpack(found)
        return np.maximum(P, 0.0), L, c
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


def _spg(
    value, v0: np.ndarray, n_bounded: int, evaluations: int, alpha: float | None = None, memory: int = 4
) -> tuple[np.ndarray, float]:
    """Spectral projected gradient (Birgin, Martinez, Raydan) on ``value`` (``(f, grad)``) over ``v[:n_bounded] >=
    0``: ``evaluations`` calls at most, a nonmonotone Armijo search over the last ``memory`` values, steps of
    Barzilai-Borwein length (the first ``alpha``, default ``1 / max |projected gradient|``). Returns the best point
    evaluated and the next step length.

    >>> v, _ = _spg(lambda v: (float((v - 1.0) @ (v - 1.0)), 2.0 * (v - 1.0)), np.array([-3.0, 3.0]), 1, 12)
    >>> np.round(v, 6).tolist()
    [1.0, 1.0]
    >>> v, _ = _spg(lambda v: (float(v @ v + 2 * v[0]), 2.0 * v + [2.0, 0.0]), np.array([2.0, 1.0]), 1, 12)
    >>> np.round(v, 6).tolist()
    [0.0, 0.0]
    """

    def project(v):
        v = v.copy()
        v[:n_bounded] = np.maximum(v[:n_bounded], 0.0)
        return v

    x = project(np.asarray(v0, float))
    f, g = value(x)
    used = 1
    best_x, best_f = x, f
    history = [f]
    if alpha is None or not alpha > 0.0:
        scale = float(np.abs(project(x - g) - x).max(initial=0.0))
        alpha = 1.0 / scale if scale > 0.0 else 1.0
    while used < evaluations:
        d = project(x - alpha * g) - x
        slope = float(g @ d)
        if slope >= 0.0:
            break  # a stationary point (projected gradient 0)
        reference, lam = max(history[-memory:]), 1.0
        while True:
            trial = x + lam * d
            f_new, g_new = value(trial)
            used += 1
            if f_new <= reference + 1e-4 * lam * slope or used >= evaluations:
                break
            lam *= 0.5
        if f_new < best_f:
            best_x, best_f = trial, f_new
        s, y = trial - x, g_new - g
        sy = float(s @ y)
        alpha = float(s @ s) / sy if sy > 0.0 else 1e3 * alpha
        alpha = min(max(alpha, 1e-10), 1e10)
        x, f, g = trial, f_new, g_new
        history.append(f)
    return best_x, alpha
