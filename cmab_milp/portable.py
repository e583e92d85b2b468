"""Arithmetic whose last bits do not depend on the CPU, the BLAS kernel or the thread count.

Everything the library records (regret curves, estimates, saved learners) or decides on
(an argmax or a threshold over an index) is computed with the functions here instead of
BLAS (``@``, ``np.dot``, ``np.matmul``, ``np.linalg``) and instead of numpy's SIMD-dispatched
transcendental ufuncs. Each function fixes its order of operations in its definition:

* **sums are sequential**, left to right along the last axis (arm order for actions):
  ``((x0 + x1) + x2) + ...``. Adding an exact zero changes nothing, so the sum of the
  weights of an action's arms has the same bits whether the action is a dense 0/1 row,
  a list of arm indices or a padded index table (:func:`selected_sums`, :func:`gathered_sums`);
* **products** ``A @ B`` are sums over the inner index in increasing order (:func:`matmul`);
* **transcendentals** go through Python's ``math`` module element by element (the C library's
  ``log``/``exp``, one code path whatever numpy's CPU dispatch picks).

What was measured (numpy 2.4.6, its OpenBLAS 0.3.31, AMD EPYC with AVX-512; each value hashed in
a child process under ``OPENBLAS_CORETYPE`` unset / ``SkylakeX`` / ``Haswell`` / ``Zen`` /
``Prescott``, ``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"`` (numpy's names for its AVX-512
targets here, from ``numpy.show_runtime()``) or not, ``OPENBLAS_NUM_THREADS`` 1 or 2):

* **differ by kernel**: ``np.dot`` / ``@`` / ``np.matmul`` on vectors and matrices of 3 to 100
  entries (also a bool matrix times a float vector, which numpy casts and hands to BLAS),
  ``np.linalg.eigh`` / ``eigvalsh`` / ``solve`` / ``norm``;
* **differ with numpy's AVX-512 paths on or off**: ``np.exp``, ``np.log`` (on ``[0.5, 1e6]``),
  ``np.log2``, ``np.log10``, ``np.log1p``, ``np.expm1``, ``np.cbrt``, ``np.power`` (also
  ``x ** 3`` and ``x ** 1.5``);
* **the same bits in every configuration**: elementwise ``+ - * /``, ``np.sqrt``, ``np.square``,
  ``np.hypot``, ``np.maximum``, ``np.floor``, ``x ** 2`` and ``x ** 0.5`` (numpy's fast paths
  to square and sqrt), ``np.add.reduce`` / ``np.sum`` / ``np.mean`` / ``np.var`` along either
  axis (numpy's own fixed-order pairwise sum), ``np.add.accumulate`` / ``np.cumsum``,
  ``np.prod`` / ``np.cumprod``, ``np.einsum`` without ``optimize``, ``np.fft``,
  ``scipy.special.ndtr``, and ``math.log`` / ``math.exp``.

The test ``tests/project/test_portable_numbers.py`` repeats the check on every run: the
library's fingerprints in child processes under each configuration the CPU can run.

Limits: the guarantee is for the same versions of Python, numpy, the C library's ``libm`` and
the solvers. A MILP solver's own floating-point output (its objective and, between actions
tied within its tolerance, which one it returns) is the solver's; see ``docs/guide/reproducibility.md``.

>>> import numpy as np
>>> dot(np.array([0.1, 0.2, 0.3]), np.ones(3)) == (0.1 + 0.2) + 0.3
True
>>> selected_sums(np.array([[True, False, True], [False, True, True]]), np.array([0.5, 0.25, 1.0])).tolist()
[1.5, 1.25]
"""

from __future__ import annotations

import math

import numpy as np

#: Vectors up to this length are summed in plain Python floats (cheaper than numpy calls; the same bits).
_SHORT = 64

__all__ = [
    "dot",
    "exp",
    "gathered_sums",
    "gram",
    "log",
    "matmul",
    "matvec",
    "selected_sum",
    "selected_sums",
    "sequential_sums",
    "symmetric_sqrt",
]


def sequential_sums(values: np.ndarray) -> np.ndarray:
    """Left-to-right sums along the last axis (``0.0`` for an empty axis).

    >>> sequential_sums(np.array([[1e16, 1.0, 1.0], [1.0, 1.0, 1e16]])).tolist()  # the order shows
    [1e+16, 1.0000000000000002e+16]
    """
    values = np.asarray(values, dtype=float)
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1])
    if values.shape[-1] == 1:
        return values[..., 0].copy()
    return np.add.accumulate(values, axis=-1)[..., -1]


def dot(x: np.ndarray, y: np.ndarray) -> float:
    """``sum_i x_i y_i``, summed left to right.

    >>> dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    11.0
    """
    xs = x if type(x) is np.ndarray and x.dtype == np.float64 else np.asarray(x, dtype=float)
    ys = y if type(y) is np.ndarray and y.dtype == np.float64 else np.asarray(y, dtype=float)
    if xs.ndim == 1 and xs.shape == ys.shape and len(xs) <= _SHORT:  # plain Python floats: the same IEEE steps
        pairs = zip(xs.tolist(), ys.tolist(), strict=True)
        total = 0.0
        for k, (a, b) in enumerate(pairs):
            total = a * b if k == 0 else total + a * b
        return total
    return float(sequential_sums(np.multiply(xs, ys)))


def matvec(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A @ x`` for a 2-D ``A`` (``x @ A.T`` likewise), each row summed left to right.

    >>> matvec(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -1.0])).tolist()
    [-1.0, -1.0]
    """
    A = np.asarray(A)
    return sequential_sums(np.multiply(A, x, dtype=float))


def selected_sums(actions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``actions @ weights`` for rows of 0/1 actions: each action's weights summed in arm order.

    Unselected arms add exact zeros (whatever their weight, also an infinite one), so the bits
    equal :func:`selected_sum` of the row and :func:`gathered_sums` of its index list.

    >>> selected_sums(np.array([[1, 1, 0]], bool), np.array([2.0, 3.0, np.inf])).tolist()
    [5.0]
    """
    acts = np.asarray(actions, dtype=bool)
    return sequential_sums(np.where(acts, np.asarray(weights, dtype=float), 0.0))


def selected_sum(action: np.ndarray, weights: np.ndarray) -> float:
    """The weights of one action's arms summed in arm order (plain Python floats: cheap for short actions).

    >>> selected_sum(np.array([False, True, True]), np.array([9.0, 0.1, 0.2])) == 0.1 + 0.2
    True
    """
    return _left_to_right(np.asarray(weights, dtype=float)[np.asarray(action, dtype=bool)].tolist())


def _left_to_right(values: list[float]) -> float:
    """``((v0 + v1) + v2) + ...`` in Python floats (``0.0`` for none): the bits of :func:`sequential_sums`.

    An explicit loop, not ``sum()`` (which compensates its rounding from Python 3.12 on).
    """
    if not values:
        return 0.0
    total = values[0]
    for value in values[1:]:
        total += value
    return total


def gathered_sums(index: np.ndarray, padded: np.ndarray) -> np.ndarray:
    """``sum_p padded[index[:, p]]`` slot by slot: sums over a padded index table (slots in arm order).

    ``padded`` holds one value per arm and a trailing ``0.0`` that unused slots point at.

    >>> gathered_sums(np.array([[0, 2], [1, 3]]), np.array([1.0, 2.0, 4.0, 0.0])).tolist()
    [5.0, 2.0]
    """
    index = np.asarray(index)
    if index.shape[1] == 0:
        return np.zeros(len(index))
    total = padded[index[:, 0]]  # a gather makes a new array
    for p in range(1, index.shape[1]):
        total += padded[index[:, p]]
    return total


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` for 2-D arrays, each entry summed over the inner index in increasing order.

    One vectorised step per inner index: cheap when the inner dimension is small (the arms of an
    action, a covariance's side).

    >>> matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]])).tolist()
    [[11.0]]
    """
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul needs 2-D arrays with matching inner sides, got {A.shape} and {B.shape}")
    out = np.zeros((A.shape[0], B.shape[1]))
    for k in range(A.shape[1]):
        out += A[:, k : k + 1] * B[k]
    return out


def gram(Y: np.ndarray) -> np.ndarray:
    """``Y.T @ Y`` (exactly symmetric): entry ``(i, j)`` is ``np.add.reduce`` of ``Y[:, i] * Y[:, j]``.

    One vectorised step per column; the sum over the rows is numpy's own fixed-order reduction.

    >>> gram(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [[10.0, 14.0], [14.0, 20.0]]
    """
    Y = np.asarray(Y, dtype=float)
    out = np.empty((Y.shape[1], Y.shape[1]))
    for i in range(Y.shape[1]):
        out[i] = np.add.reduce(Y * Y[:, i : i + 1], axis=0)
    return out


def log(x: np.ndarray) -> np.ndarray:
    """Natural logarithm elementwise with ``math.log`` (``-inf`` at 0; ``ValueError`` for negative entries).

    >>> log(np.array([1.0, math.e])).tolist()
    [0.0, 1.0]
    """
    arr = np.asarray(x, dtype=float)
    if (arr < 0).any():
        raise ValueError("log needs non-negative entries")
    flat = [math.log(v) if v > 0 else -math.inf for v in arr.ravel().tolist()]
    return np.array(flat, dtype=float).reshape(arr.shape)


def exp(x: np.ndarray) -> np.ndarray:
    """``e**x`` elementwise with ``math.exp`` (``inf`` past overflow, as numpy).

    >>> exp(np.array([0.0, -np.inf])).tolist()
    [1.0, 0.0]
    """
    arr = np.asarray(x, dtype=float)
    flat = [math.exp(v) if v < 709.8 else math.inf for v in arr.ravel().tolist()]
    return np.array(flat, dtype=float).reshape(arr.shape)


def symmetric_sqrt(matrix: np.ndarray, sweeps: int = 100) -> np.ndarray:
    """The symmetric PSD square root ``L`` (``L @ L = matrix``; symmetric up to rounding) by cyclic Jacobi rotations.

    Negative eigenvalues (rounding of a PSD matrix) are clipped to 0. Only ``+ - * /`` and
    ``sqrt``, in a fixed order: the same bits on every machine, unlike ``np.linalg.eigh``.

    >>> symmetric_sqrt(np.array([[4.0, 0.0], [0.0, 9.0]])).tolist()
    [[2.0, 0.0], [0.0, 3.0]]
    >>> L = symmetric_sqrt(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> bool(np.abs(matmul(L, L) - [[2.0, 1.0], [1.0, 2.0]]).max() < 1e-14)
    True
    """
    A = np.array(matrix, dtype=float)
    n = A.shape[0]
    if A.shape != (n, n) or not np.isfinite(A).all():
        raise ValueError(f"symmetric_sqrt needs a finite square matrix, got shape {A.shape}")
    A = 0.5 * (A + A.T)
    V = np.eye(n)
    for _ in range(sweeps):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq, app, aqq = float(A[p, q]), float(A[p, p]), float(A[q, q])
                if abs(apq) <= 1e-300 or abs(apq) <= 2.0**-60 * (abs(app) + abs(aqq)):
                    continue  # negligible against the diagonal: rotating would not change it
                rotated = True
                theta = (aqq - app) / (2.0 * apq)
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                col_p, col_q = A[:, p].copy(), A[:, q].copy()
                A[:, p], A[:, q] = c * col_p - s * col_q, s * col_p + c * col_q
                row_p, row_q = A[p].copy(), A[q].copy()
                A[p], A[q] = c * row_p - s * row_q, s * row_p + c * row_q
                vp, vq = V[:, p].copy(), V[:, q].copy()
                V[:, p], V[:, q] = c * vp - s * vq, s * vp + c * vq
        if not rotated:
            break
    roots = np.sqrt(np.clip(np.diagonal(A), 0.0, None))
    return matmul(V * roots, V.T)
