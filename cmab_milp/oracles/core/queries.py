"""Validated oracle queries: the arms and pairs of a restriction, linear and norm queries.

The :class:`~cmab_milp.oracles.core.base.Oracle` turns what a caller passes
(``weights``, ``include`` / ``exclude`` / ``forbid_pairs`` by index or label,
``mu``, ``M``, ``f``, ``sign``, ``hints``) into one of these objects once, so that
every backend receives checked, normalised values.

Example
-------
>>> import numpy as np
>>> res = make_restrictions(4, (2,), (0,), ())
>>> res.admits(np.array([False, True, True, False]))
True
>>> LinearQuery(np.array([1.0, 2.0, 3.0, 4.0]), res).value(np.array([False, True, True, False]))
5.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from numbers import Real
from typing import Any

import numpy as np

from ...portable import _left_to_right, selected_sum
from ...spaces.base import ActionSpace

__all__ = [
    "Arms",
    "Carry",
    "LinearQuery",
    "NormQuery",
    "Pairs",
    "Restrictions",
    "make_restrictions",
    "norm_input",
    "norm_objective",
    "real_array",
    "real_number",
]


def _arm_tuple(values: Iterable[Any], d: int, name: str, space: ActionSpace | None = None) -> tuple[int, ...]:
    """Sorted distinct arm indices; arms given by label are looked up in ``space`` (spaces.labels)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        hint = (
            f" (for the one arm {values!r} write {name}=[{values!r}])" if isinstance(values, (int, np.integer)) else ""
        )
        raise ValueError(f"{name} must be a sequence of arm indices, got {type(values).__name__} {values!r}{hint}")
    if not isinstance(values, (list, tuple, np.ndarray)):
        values = list(values)  # iterated twice when a label needs the space's lookup
    out = []
    for i in values:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            if space is not None and not isinstance(i, bool):
                return space.arm_indices(values, name)  # arms by label (an edge, a name)
            raise ValueError(f"{name} must hold integer arm indices, got {i!r}")
        if not 0 <= i < d:
            raise ValueError(f"{name} holds arm {int(i)}, out of range for d={d}")
        out.append(int(i))
    return tuple(sorted(set(out)))


def _pairs(values: Iterable[Any], d: int, space: ActionSpace | None = None) -> tuple[tuple[int, int], ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"forbid_pairs must be a sequence of pairs (i, j), got {type(values).__name__} {values!r}")
    out = set()
    for p in values:
        try:
            i, j = p
        except (TypeError, ValueError):
            raise ValueError(f"forbid_pairs must hold pairs (i, j), got {p!r}") from None
        i, j = _arm_tuple((i,), d, "forbid_pairs", space)[0], _arm_tuple((j,), d, "forbid_pairs", space)[0]
        if i == j:
            raise ValueError(f"forbid_pairs holds ({i}, {j}); a pair needs two different arms")
        out.add((min(i, j), max(i, j)))
    return tuple(sorted(out))


@dataclass(frozen=True)
class Restrictions:
    """The restrictions of a query (``include``, ``exclude``, ``forbid_pairs``), validated."""

    include: tuple[int, ...] = ()
    exclude: tuple[int, ...] = ()
    forbid_pairs: tuple[tuple[int, int], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.include or self.exclude or self.forbid_pairs)

    def trivially_infeasible(self) -> bool:
        inc = set(self.include)
        if inc.intersection(self.exclude):
            return True
        return any(i in inc and j in inc for i, j in self.forbid_pairs)

    def admits(self, action: np.ndarray) -> bool:
        if not action[list(self.include)].all() or action[list(self.exclude)].any():
            return False
        return not any(action[i] and action[j] for i, j in self.forbid_pairs)

    def mask(self, actions: np.ndarray) -> np.ndarray | None:
        """Rows of an (n, d) bool matrix that satisfy the restrictions (None: all)."""
        if self.empty:
            return None
        ok = np.ones(len(actions), bool)
        if self.include:
            ok &= actions[:, list(self.include)].all(axis=1)
        if self.exclude:
            ok &= ~actions[:, list(self.exclude)].any(axis=1)
        for i, j in self.forbid_pairs:
            ok &= ~(actions[:, i] & actions[:, j])
        return ok


_NO_RESTRICTIONS = Restrictions()
#: Arms of a restriction (indices, or labels of the space) and pairs of them.
Arms = Sequence[int]
Pairs = Sequence[tuple[int, int]]
_FLOAT64 = np.dtype(np.float64)

#: Below this many arms, per-query arithmetic runs on Python lists: interleaved with
#: solver runs (which evict numpy's code from the CPU caches) a numpy reduction on
#: a short vector costs several times ``tolist`` and ``sum`` (docs/performance.md).
_SMALL = 256


def make_restrictions(
    d: int, include: Any, exclude: Any, forbid_pairs: Any, space: ActionSpace | None = None
) -> Restrictions:
    """Validated restrictions; with ``space``, arms may also be given by label (``space.arm_index``)."""
    if (
        type(include) is tuple
        and type(exclude) is tuple
        and not include
        and not exclude
        and (forbid_pairs is None or (type(forbid_pairs) is tuple and not forbid_pairs))
    ):
        return _NO_RESTRICTIONS  # the defaults (empty tuples): no conversion on the per-query path
    out = Restrictions(
        _arm_tuple(include, d, "include", space),
        _arm_tuple(exclude, d, "exclude", space),
        _pairs(forbid_pairs if forbid_pairs is not None else (), d, space),
    )
    return _NO_RESTRICTIONS if out.empty else out


def _hints(hints: Any, d: int) -> tuple[np.ndarray, ...]:
    """Validated ``hints``: a tuple of read-only bool arrays of shape ``(d,)`` (each given as 0/1 values)."""
    if hints is None or (type(hints) is tuple and not hints):
        return ()
    if isinstance(hints, (str, bytes)) or not isinstance(hints, Iterable):
        raise ValueError(f"hints must be a sequence of actions (0/1 vectors), got {type(hints).__name__}")
    if isinstance(hints, np.ndarray) and hints.ndim == 1:
        raise ValueError("hints must be a sequence of actions (0/1 vectors), not one vector")
    out = []
    for k, hint in enumerate(hints):
        if type(hint) is np.ndarray and hint.dtype == bool and hint.shape == (d,):  # an earlier answer: 0/1 already
            action = hint.copy()
            action.flags.writeable = False
            out.append(action)
            continue
        arr = real_array(hint, f"hints[{k}]")
        if arr.shape != (d,):
            raise ValueError(f"hints[{k}] must have shape ({d},), got {arr.shape}")
        if not np.isin(arr, (0.0, 1.0)).all():
            raise ValueError(f"hints[{k}] must hold only 0/1 values")
        action = arr.astype(bool)
        action.flags.writeable = False
        out.append(action)
    return tuple(out)


@dataclass(slots=True, eq=False)  # not frozen: a frozen init costs more per query; treat as read-only
class LinearQuery:
    """Maximise ``weights @ a`` under restrictions."""

    weights: np.ndarray
    restrictions: Restrictions
    #: ``weights.tolist()`` when the validation made it (short vectors), for :meth:`value`.
    weights_list: list[float] | None = field(default=None, repr=False, compare=False)

    def value(self, action: np.ndarray | list[bool]) -> float:
        """``weights @ action`` for a bool array or a list of bools."""
        if len(action) <= _SMALL:  # plain Python: several times cheaper between solver runs
            weights = self.weights_list if self.weights_list is not None else self.weights.tolist()
            chosen = action.tolist() if isinstance(action, np.ndarray) else action
            return _left_to_right(list(compress(weights, chosen)))  # the bits of selected_sum, on any Python
        return selected_sum(action, self.weights)  # the same left-to-right sum as above


class Carry:
    """The type of a :class:`NormQuery`'s ``carry``: a caller's memory of a sequence of norm queries.

    Its one implementation is :class:`~cmab_milp.oracles.norm.carry.NormCarry`; the
    type lives here so that validating a query needs nothing above the core.
    """

    __slots__ = ()


@dataclass(slots=True, eq=False)  # not frozen: a frozen init costs more per query; treat as read-only
class NormQuery:
    """Maximise ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` under restrictions.

    ``hints`` are optional starting incumbents (bool arrays of length ``d``, e.g.
    the previous answer of the same policy). A backend may use them or ignore
    them; they never change which value is optimal. The tie rule still holds:
    the hints are part of the query, so the same query with the same hints gets
    the same answer, whatever the oracle's history.

    ``carry`` is an optional :class:`~cmab_milp.oracles.norm.carry.NormCarry`: the
    caller's memory of a sequence of such queries, which an oracle in the certified
    approximate mode (``norm_gap``) may answer from without a solve (exact oracles
    ignore it). The answers then depend on the sequence of queries, still on nothing else.
    """

    mu: np.ndarray
    M: np.ndarray
    f: float
    sign: int
    restrictions: Restrictions
    hints: tuple[np.ndarray, ...] = ()
    carry: Any = field(default=None, repr=False)

    def value(self, action: np.ndarray) -> float:
        return norm_objective(self.mu, self.M, self.f, self.sign, action)


def norm_input(d: int, mu: Any, M: Any, f: Any, sign: Any) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Validated ``(mu, M, f, sign)`` of a norm query: ``M`` symmetrised, ``f`` a float, ``sign`` an int.

    The usual input (float64 arrays of the right shapes, ``M`` exactly symmetric, a float ``f``, an int
    ``sign``) is checked by a few whole-array numpy calls (:func:`_usual_norm_input`); anything it does
    not accept goes through :func:`_checked_norm_input`, which checks one thing at a time and names what
    is wrong. Both give the same arrays, bit for bit.

    >>> mu, M, f, sign = norm_input(2, np.ones(2), np.array([[1.0, 0.5], [0.5, 2.0]]), 1, -1)
    >>> M.tolist(), f, sign
    ([[1.0, 0.5], [0.5, 2.0]], 1.0, -1)
    >>> norm_input(2, np.ones(2), np.array([[1.0, 0.5], [0.0, 2.0]]), 1.0, 1)
    Traceback (most recent call last):
    ...
    ValueError: M must be symmetric
    """
    usual = _usual_norm_input(d, mu, M, f, sign)
    return usual if usual is not None else _checked_norm_input(d, mu, M, f, sign)


def _usual_norm_input(d: int, mu: Any, M: Any, f: Any, sign: Any) -> tuple | None:
    """What :func:`_checked_norm_input` returns, for the usual input, in a few numpy calls; else ``None``.

    It accepts only input the full checks accept, and no numpy reduction runs (on short vectors one
    costs several elementwise steps). ``mu`` is finite when its sum is (a sum that overflows goes to the
    full checks); ``M`` when it has ``d * d`` finite entries, counted. Then ``S = 0.5 * (M + M.T)``, the
    symmetrised matrix the full checks return, equals ``M`` entry for entry only when ``M`` is symmetric
    (an entry unequal to its mirror, or a sum that overflows, makes ``M - S`` nonzero there), so a count
    of the nonzero entries of ``M - S`` checks symmetry. A nearly symmetric ``M`` goes to the full checks,
    which decide.
    """
    if not (
        type(mu) is np.ndarray
        and mu.dtype is _FLOAT64
        and mu.shape == (d,)
        and type(M) is np.ndarray
        and M.dtype is _FLOAT64
        and M.shape == (d, d)
        and (type(f) is float or type(f) is np.float64)
        and 0.0 <= f < math.inf
        and type(sign) is int
        and (sign == 1 or sign == -1)
    ):
        return None
    if not math.isfinite(sum(mu.tolist()) if d <= _SMALL else float(np.add.reduce(mu))):
        return None
    if np.count_nonzero(np.isfinite(M)) != d * d:  # (count_nonzero is not a ufunc reduction: cheap)
        return None
    mat = M + M.T.copy()  # the transpose copied first: an add of two contiguous arrays is several times cheaper
    mat *= 0.5  # the same bits as 0.5 * (M + M.T)
    if np.count_nonzero(M - mat):
        return None
    return mu, mat, float(f), sign


def _checked_norm_input(d: int, mu: Any, M: Any, f: Any, sign: Any) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Every check of a norm query's numbers, one at a time, in order; a ``ValueError`` names the first that fails."""
    mu_arr = real_array(mu, "mu")
    if mu_arr.shape != (d,):
        raise ValueError(f"mu must have shape ({d},), got {mu_arr.shape}")
    mat = real_array(M, "M")
    if mat.shape != (d, d):
        raise ValueError(f"M must have shape ({d}, {d}), got {mat.shape}")
    if not (np.isfinite(mu_arr).all() and np.isfinite(mat).all()):
        raise ValueError("mu and M must be finite")
    scale = 1.0 + float(np.abs(mat).max())
    if np.abs(mat - mat.T).max() > 1e-9 * scale:
        raise ValueError("M must be symmetric")
    f = real_number(f, "f")
    if not np.isfinite(f) or f < 0:
        raise ValueError(f"f must be a finite number >= 0, got {f}")
    if isinstance(sign, (bool, np.bool_)) or not isinstance(sign, Real) or sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    return mu_arr, 0.5 * (mat + mat.T), f, int(sign)


def norm_objective(mu: np.ndarray, M: np.ndarray, f: float, sign: int, action: np.ndarray) -> float:
    """``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` for one bool action.

    >>> norm_objective(np.ones(2), np.eye(2), 2.0, -1, np.array([True, True]))
    -0.8284271247461903
    """
    idx = np.flatnonzero(action)
    quad = float(M[np.ix_(idx, idx)].sum())
    return float(mu[idx].sum()) + sign * f * float(np.sqrt(max(quad, 0.0)))


def real_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float array; refuse strings, complex numbers and other non-real entries.

    >>> real_array([1, 2.5], "weights")
    array([1. , 2.5])
    >>> real_array(["1", "2"], "weights")
    Traceback (most recent call last):
    ...
    ValueError: weights must be real numbers, got an array of dtype <U1
    """
    if type(values) is np.ndarray and values.dtype.kind == "f":  # the per-query path: no check needed
        return np.asarray(values, dtype=float)
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind not in "biuf" and not (
        kind == "O" and all(isinstance(v, Real) and not isinstance(v, (str, bytes)) for v in arr.ravel())
    ):
        raise ValueError(f"{name} must be real numbers, got an array of dtype {arr.dtype}")
    return arr.astype(float)


def real_number(value: Any, name: str) -> float:
    """``value`` as a float; refuse bools, strings and non-real numbers (``ValueError``).

    >>> real_number(2, "f")
    2.0
    >>> real_number("1", "f")
    Traceback (most recent call last):
    ...
    ValueError: f must be a real number, got str '1'
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return float(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)
