"""The LP of the s-t path searches (:mod:`.paths.minus`, :mod:`.paths.plus`) and its proven bound.

:class:`_PathLP` holds one query's linear program on HiGHS: the space's path formulation (flow / degree rows,
the visit columns of undirected graphs; their orientation columns left out with ``tuning.paths_unoriented``)
as an LP, a column ``t`` for the norm term, the query's ``forbid_pairs`` as rows ``a_i + a_j <= 1``, and the
rows the search adds (cuts valid for every path; tangent rows of the norm, deleted when idle). A node's
fixings are column bounds (:meth:`_PathLP.set_node`).

The LP is solved by HiGHS (tolerances ``1e-9``), so its objective is not used as a bound. :func:`safe_bound`
computes one from HiGHS's row duals ``y`` by weak duality, for any ``y``:
``c @ x = (c - A'y) @ x + y @ (A x) <= sum_j max(r_j l_j, r_j u_j) + sum_i max(y_i lo_i, y_i hi_i)``
with ``r = c - A'y`` and the column bounds ``[l, u]`` (all finite), ``y_i`` zeroed where its side of the
row is infinite, plus a rounding allowance; the least over ``y`` and ``-y`` is kept (either sign
convention of the duals gives a valid number). So the bound holds whatever HiGHS's accuracy.

Example
-------
>>> A = np.array([[1.0, 1.0]])
>>> lo, hi, c = np.zeros(2), np.ones(2), np.array([1.0, 2.0])
>>> round(safe_bound(c, [A], np.array([-np.inf]), np.array([1.0]), lo, hi, np.array([2.0])), 9)
2.0
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ....spaces import STPaths
from ....spaces.formulation import Row
from ...core.base import OracleError
from ...core.engine import new_engine
from ...core.queries import NormQuery
from ...mip.tuning import HighsTuning

__all__ = ["safe_bound"]

#: The defaults, where an LP is built without the oracle's choices (tests, benchmarks).
_DEFAULT = HighsTuning()
#: Rounding allowance, in units of ``eps`` times the number of terms times their magnitudes.
_ROUND = 8.0
_EPS = float(np.finfo(float).eps)


def safe_bound(
    c: np.ndarray, blocks: list, row_lo: np.ndarray, row_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray, y
) -> float:
    """An upper bound on ``max c @ x`` over ``row_lo <= A x <= row_hi``, ``lo <= x <= hi`` from any row prices ``y``.

    ``A`` is given as ``blocks`` stacked vertically (scipy sparse or numpy arrays). Weak duality with the
    box (module docstring): valid for every ``y``, tight for optimal duals; the column bounds must be
    finite. The lesser of the bounds of ``y`` and ``-y`` is returned, with a rounding allowance.

    >>> A = np.array([[1.0, 1.0]])
    >>> lo, hi, c = np.zeros(2), np.ones(2), np.array([1.0, 2.0])
    >>> bound = safe_bound(c, [A], np.array([-np.inf]), np.array([1.0]), lo, hi, np.array([2.0]))
    >>> round(bound, 9), bound >= 2.0  # max x0 + 2 x1 with x0 + x1 <= 1: 2
    (2.0, True)
    >>> round(safe_bound(c, [A], np.array([-np.inf]), np.array([1.0]), lo, hi, np.array([0.0])), 9)  # the box alone
    3.0
    """
    best = np.inf
    y = np.asarray(y, float)
    if len(y) != len(row_lo) or len(y) != sum(b.shape[0] for b in blocks):
        raise ValueError(f"{len(y)} row prices for {len(row_lo)} rows")
    n_terms = len(y) + len(c) + 2
    cuts = np.cumsum([0] + [b.shape[0] for b in blocks])
    for sign in (1.0, -1.0):
        z = sign * y
        z = np.where(((z > 0) & np.isposinf(row_hi)) | ((z < 0) & np.isneginf(row_lo)), 0.0, z)
        side = np.where(z > 0, row_hi, np.where(z < 0, row_lo, 0.0))
        rows = np.where(z != 0.0, z * side, 0.0)
        az, size_az = np.zeros(len(c)), np.zeros(len(c))
        for b, first, last in zip(blocks, cuts[:-1], cuts[1:], strict=True):
            az += b.T @ z[first:last]
            size_az += abs(b).T @ np.abs(z[first:last])
        r = c - az
        cols = np.maximum(r * lo, r * hi)
        size = float(np.abs(rows).sum() + ((np.abs(c) + size_az) * np.maximum(-lo, hi)).sum())
        best = min(best, float(rows.sum() + cols.sum()) + _ROUND * n_terms * _EPS * size)
    return best


class _PathLP:
    """The query's LP: the path formulation, the norm column ``t``, forbid rows, and the rows found so far.

    A copy of the rows is kept for :func:`safe_bound`: the sparse ones (formulation, forbid rows, cuts) and
    the dense tangents, each in the order added; ``tangent_row`` marks which HiGHS rows are tangents.
    """

    def __init__(
        self, space: STPaths, query: NormQuery, t_hi: float, t_lo: float = 0.0, tuning: HighsTuning = _DEFAULT
    ):
        self.tuning = tuning
        form = space.formulation().without_optional() if self.tuning.paths_unoriented else space.formulation()
        self.d = d = space.d
        self.model = new_engine(form, integer=False)
        self.t = self.model.add_cols(np.array([t_lo]), np.array([t_hi]), np.zeros(1, bool), ["norm"])
        self.n = self.t + 1
        a, lo, hi = form.matrix()
        self.sparse_rows: list[Row] = []
        self.base = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], self.n))
        self.base_lo, self.base_hi = np.asarray(lo, float), np.asarray(hi, float)
        self.sparse: sp.csr_matrix | None = self.base  # (None: rebuilt when a bound needs it)
        self.sparse_lo, self.sparse_hi = self.base_lo, self.base_hi
        #: Every row dense, for :func:`safe_bound`: the sparse ones (``_n_sparse``), then the tangents (``_n_tan``),
        #: in a buffer grown by doubling (rows are appended, not the whole matrix copied per row).
        self._rows = np.zeros((2 * a.shape[0] + 64, self.n))
        self._rows[: a.shape[0]] = self.base.toarray()
        self._n_sparse, self._n_tan = a.shape[0], 0
        self._bounds: tuple[np.ndarray, np.ndarray] | None = None  # every row's sides (None: rebuilt)
        self.tangent_lo: list[float] = []
        self.idle = np.zeros(0, int)  # LPs since each tangent row last had a dual price
        self.tangent_row = np.zeros(a.shape[0], bool)
        #: The visit columns of undirected paths (``2 z_v`` = the degree of node ``v``): branched on too.
        names = form.col_names()
        self.visits = np.array([k for k, name in enumerate(names) if name.startswith("visit")], int)
        self.visit_nodes = [int(names[k].removeprefix("visit")) for k in self.visits]  # graph node of each
        self.col_lo = np.concatenate([np.zeros(d), form.aux_lb, [t_lo]]).astype(float)
        self.col_hi = np.concatenate([np.ones(d), form.aux_ub, [t_hi]]).astype(float)
        self.visit_lo, self.visit_hi = self.col_lo[self.visits].copy(), self.col_hi[self.visits].copy()
        if not np.isfinite(self.col_hi).all() or not np.isfinite(self.col_lo).all():  # pragma: no cover
            raise OracleError("the path formulation has an unbounded column: no safe LP bound")
        self.cost = np.zeros(self.n)
        self.cost[:d] = query.mu
        self.cost[self.t] = -query.f
        self.model.set_costs(self.cost[:d])
        self.model.set_col_cost(self.t, -query.f)
        self.arm_lo, self.arm_hi = np.zeros(d), np.ones(d)
        self.arm_lo[list(query.restrictions.include)] = 1.0
        self.arm_hi[list(query.restrictions.exclude)] = 0.0
        pairs = query.restrictions.forbid_pairs
        self.add_rows([Row((int(i), int(j)), (1.0, 1.0), -np.inf, 1.0) for i, j in pairs])
        self.model.clear_solver()

    def add_rows(self, rows: list[Row]) -> None:
        """Append sparse rows (valid for every admitted action)."""
        if not rows:
            return
        self.model.add_rows(rows)
        self.sparse_rows.extend(rows)
        self.tangent_row = np.concatenate([self.tangent_row, np.zeros(len(rows), bool)])
        self.sparse, self._bounds = None, None  # rebuilt on the next bound
        self.sparse_lo = np.concatenate([self.sparse_lo, [r.lb for r in rows]])
        self.sparse_hi = np.concatenate([self.sparse_hi, [r.ub for r in rows]])
        k, first, n_tan = len(rows), self._n_sparse, self._n_tan
        self._reserve(k)
        buffer = self._rows
        buffer[first + k : first + k + n_tan] = buffer[first : first + n_tan].copy()  # the tangents move down
        buffer[first : first + k] = 0.0
        for i, r in enumerate(rows):
            np.add.at(buffer[first + i], np.asarray(r.cols, int), np.asarray(r.coefs, float))
        self._n_sparse += k

    def add_tangent(self, coef: np.ndarray, lo: float) -> None:
        """Append the row ``t - coef @ z >= lo`` (``coef`` on the arms, or on the arms and the columns after them)."""
        cols = np.flatnonzero(coef)
        self.model.add_rows([Row((*cols.tolist(), self.t), (*(-coef[cols]).tolist(), 1.0), lo, np.inf)])
        self._reserve(1)
        row = self._rows[self._n_sparse + self._n_tan]
        row[:] = 0.0
        row[: len(coef)] = -coef
        row[self.t] = 1.0
        self._n_tan += 1
        self._bounds = None
        self.tangent_lo.append(lo)
        self.tangent_row = np.append(self.tangent_row, True)
        self.idle = np.append(self.idle, 0)

    def purge(self, idle: int) -> int:
        """Delete the tangent rows without a dual price in the last ``idle`` LPs; return how many.

        Any subset of the rows still gives a relaxation (valid bounds); the deleted rows are slack, so the
        basis stays usable.
        """
        drop = self.idle >= idle
        if not drop.any():
            return 0
        rows = np.flatnonzero(self.tangent_row)[drop]
        ends = np.flatnonzero(np.diff(rows) != 1)  # delete runs of consecutive rows, the last run first
        starts, stops = rows[np.r_[0, ends + 1]], rows[np.r_[ends, len(rows) - 1]] + 1
        for first, last in reversed(list(zip(starts, stops, strict=True))):
            self.model.delete_rows(int(first), int(last))
        keep = np.ones(len(self.tangent_row), bool)
        keep[rows] = False
        self.tangent_row = self.tangent_row[keep]
        kept = self.tangents[~drop]
        self._rows[self._n_sparse : self._n_sparse + len(kept)] = kept
        self._n_tan = len(kept)
        self._bounds = None
        self.tangent_lo = [v for v, k in zip(self.tangent_lo, drop, strict=True) if not k]
        self.idle = self.idle[~drop]
        return len(rows)

    @property
    def tangents(self) -> np.ndarray:
        """The tangent rows, dense (a view of the row buffer)."""
        return self._rows[self._n_sparse : self._n_sparse + self._n_tan]

    @property
    def dense(self) -> np.ndarray:
        """Every row dense: the sparse ones, then the tangents (a view of the row buffer)."""
        return self._rows[: self._n_sparse + self._n_tan]

    def sparse_matrix(self) -> sp.csr_matrix:
        """The sparse rows (formulation, forbid rows, cuts) as one CSR matrix."""
        if self.sparse is None:
            rows = self.sparse_rows
            extra = sp.csr_matrix(
                (
                    [c for r in rows for c in r.coefs],
                    [c for r in rows for c in r.cols],
                    np.cumsum([0] + [len(r.cols) for r in rows]),
                ),
                shape=(len(rows), self.n),
            )
            self.sparse = sp.vstack([self.base, extra], format="csr")
        return self.sparse

    def _reserve(self, k: int) -> None:
        """Room for ``k`` more rows in the row buffer (doubled when full)."""
        used = self._n_sparse + self._n_tan
        if used + k > len(self._rows):
            grown = np.zeros((2 * (used + k), self.n))
            grown[:used] = self._rows[:used]
            self._rows = grown

    def set_node(self, include: np.ndarray, exclude: np.ndarray) -> None:
        """Bounds of a node: arms and visit columns in ``include`` at 1, in ``exclude`` at 0 (over all columns)."""
        d = self.d
        lo = np.where(include[:d], 1.0, self.arm_lo)
        hi = np.where(exclude[:d], 0.0, self.arm_hi)
        self.model.set_arm_bounds(tuple(np.flatnonzero(lo > 0.5).tolist()), tuple(np.flatnonzero(hi < 0.5).tolist()))
        self.col_lo[:d], self.col_hi[:d] = lo, hi
        if len(self.visits):
            v = self.visits
            vlo = np.where(include[v], 1.0, self.visit_lo)
            vhi = np.where(exclude[v], 0.0, self.visit_hi)
            changed = (vlo != self.col_lo[v]) | (vhi != self.col_hi[v])
            if changed.any():
                for col, low, high in zip(v[changed], vlo[changed], vhi[changed], strict=True):
                    self.model.set_col_bounds(int(col), float(low), float(high))
                self.col_lo[v], self.col_hi[v] = vlo, vhi

    def solve(self) -> tuple[np.ndarray, float] | None:
        """The LP point and a proven upper bound of the LP, or ``None`` when HiGHS finds it infeasible."""
        model = self.model
        result = model.solve(cold=False)  # warm from the last basis; 'Unknown' retried cold, errors raise
        if result.status == "infeasible":
            return None
        x = np.asarray(result.values, float)
        if self._bounds is None:
            self._bounds = (
                np.concatenate([self.sparse_lo, self.tangent_lo]),
                np.concatenate([self.sparse_hi, np.full(self._n_tan, np.inf)]),
            )
        y = model.row_duals()
        tan = self.tangent_row
        self.idle = np.where(np.abs(y[tan]) > 0.0, 0, self.idle + 1)
        bound = safe_bound(
            self.cost,
            [self.dense] if self.tuning.paths_dense_bound else [self.sparse_matrix(), self.tangents],
            *self._bounds,
            self.col_lo,
            self.col_hi,
            np.concatenate([y[~tan], y[tan]]),
        )
        return x, bound
