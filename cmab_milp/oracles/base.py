"""The oracle protocol: validated queries, the ledger, batches.

Every backend subclasses :class:`Oracle` and implements ``_linear`` (and
``_norm`` for the covariance-norm index). The base class validates the
query once, keeps the :class:`Ledger` and runs batches concurrently.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "enumerate")
>>> oracle.argmax(np.array([0.1, 0.9, -1.0, 0.5])).astype(int)
array([0, 1, 0, 1])
>>> oracle.ledger.queries, oracle.ledger.rounds
(1, 1)
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import compress
from numbers import Real
from typing import Any

import numpy as np

from ..spaces.base import ActionSpace

__all__ = [
    "Ledger",
    "LinearQuery",
    "NormQuery",
    "Oracle",
    "OracleError",
    "UnsupportedQuery",
    "check_time_limit",
    "norm_objective",
    "real_array",
    "real_number",
    "settle_norm_answer",
]


class UnsupportedQuery(Exception):
    """A backend cannot answer this query exactly (e.g. combinatorial + forbid_pairs)."""


class OracleError(RuntimeError):
    """The solver failed, hit a limit or returned an answer that does not check out."""


@dataclass
class Ledger:
    """Counts of oracle use: answered ``queries``, adaptivity ``rounds``, wall ``seconds``."""

    queries: int = 0
    rounds: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, queries: int, seconds: float) -> None:
        with self._lock:
            self.queries += queries
            self.rounds += 1
            self.seconds += seconds

    def reset(self) -> None:
        with self._lock:
            self.queries = self.rounds = 0
            self.seconds = 0.0

    def snapshot(self) -> tuple[int, int, float]:
        return self.queries, self.rounds, self.seconds

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]  # locks do not pickle; a copy gets its own
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


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
class _Restrictions:
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


_NO_RESTRICTIONS = _Restrictions()
_FLOAT64 = np.dtype(np.float64)

#: Below this many arms, per-query arithmetic runs on Python lists: interleaved with
#: solver runs (which evict numpy's code from the CPU caches) a numpy reduction on
#: a short vector costs ~20 us against ~3 us for ``tolist`` and ``sum``.
_SMALL = 256


def _restrictions(
    d: int, include: Any, exclude: Any, forbid_pairs: Any, space: ActionSpace | None = None
) -> _Restrictions:
    """Validated restrictions; with ``space``, arms may also be given by label (``space.arm_index``)."""
    if (
        type(include) is tuple
        and type(exclude) is tuple
        and not include
        and not exclude
        and (forbid_pairs is None or (type(forbid_pairs) is tuple and not forbid_pairs))
    ):
        return _NO_RESTRICTIONS  # the defaults (empty tuples): no conversion on the per-query path
    out = _Restrictions(
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
        arr = real_array(hint, f"hints[{k}]")
        if arr.shape != (d,):
            raise ValueError(f"hints[{k}] must have shape ({d},), got {arr.shape}")
        if not np.isin(arr, (0.0, 1.0)).all():
            raise ValueError(f"hints[{k}] must hold only 0/1 values")
        action = arr.astype(bool)
        action.flags.writeable = False
        out.append(action)
    return tuple(out)


@dataclass(slots=True, eq=False)  # not frozen: a frozen init costs ~1 us more per query; treat as read-only
class LinearQuery:
    """Maximise ``weights @ a`` under restrictions."""

    weights: np.ndarray
    restrictions: _Restrictions
    #: ``weights.tolist()`` when the validation made it (short vectors), for :meth:`value`.
    weights_list: list[float] | None = field(default=None, repr=False, compare=False)

    def value(self, action: np.ndarray | list[bool]) -> float:
        """``weights @ action`` for a bool array or a list of bools."""
        if len(action) <= _SMALL:  # plain Python: several times cheaper between solver runs
            weights = self.weights_list if self.weights_list is not None else self.weights.tolist()
            chosen = action.tolist() if isinstance(action, np.ndarray) else action
            return float(sum(compress(weights, chosen)))
        return float(self.weights @ np.asarray(action, dtype=bool))


@dataclass(frozen=True)
class NormQuery:
    """Maximise ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` under restrictions.

    ``hints`` are optional starting incumbents (bool arrays of length ``d``, e.g.
    the previous answer of the same policy). A backend may use them or ignore
    them; they never change which value is optimal. The tie rule still holds:
    the hints are part of the query, so the same query with the same hints gets
    the same answer, whatever the oracle's history.
    """

    mu: np.ndarray
    M: np.ndarray
    f: float
    sign: int
    restrictions: _Restrictions
    hints: tuple[np.ndarray, ...] = ()

    def value(self, action: np.ndarray) -> float:
        return norm_objective(self.mu, self.M, self.f, self.sign, action)


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


def check_time_limit(time_limit: Any) -> float | None:
    """``None`` (no limit) or a positive, finite number of seconds; else ``ValueError``.

    >>> check_time_limit(2)
    2.0
    >>> check_time_limit(-1)
    Traceback (most recent call last):
    ...
    ValueError: time_limit must be a positive, finite number of seconds (or None), got -1
    """
    if time_limit is None:
        return None
    if isinstance(time_limit, (bool, np.bool_)) or not isinstance(time_limit, Real):
        raise ValueError(f"time_limit must be a positive, finite number of seconds (or None), got {time_limit!r}")
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive, finite number of seconds (or None), got {time_limit!r}")
    return float(time_limit)


def tolerance(value: float) -> float:
    """The contract's optimality tolerance ``1e-9 * (1 + |value|)``."""
    return 1e-9 * (1.0 + abs(value))


def settle_norm_answer(
    query: NormQuery,
    found: tuple[np.ndarray, float] | None,
    linear: Callable[[], np.ndarray | None] | None,
    slack: float,
    solver: str,
) -> np.ndarray | None:
    """The answer of a quadratic-model norm solve, checked against its bound (the SCIP and Gurobi backends).

    ``found`` is the model's ``(action, bound)`` or ``None`` (infeasible). With an
    indefinite ``M`` and sign +1 the model only covers actions with ``a'Ma >= 0``,
    so ``linear()`` (the argmax of ``mu @ a``, which is exact where ``a'Ma < 0``)
    is a second candidate and its value a second bound. The best candidate must
    reach the bound within ``slack (1 + |bound|)`` (the quadratic row holds only
    to the solver's feasibility tolerance), else :class:`OracleError`.
    """
    candidates = [] if found is None else [found[0]]
    bound = -np.inf if found is None else found[1]
    if linear is not None:
        other = linear()
        if other is None:
            return None
        candidates.append(other)
        bound = max(bound, query.value(other))
    if not candidates:
        return None
    values = [query.value(a) for a in candidates]
    best = int(np.argmax(values))
    if values[best] < bound - slack * (1.0 + abs(bound)):
        raise OracleError(
            f"{solver} norm answer has index {values[best]!r} but {solver}'s bound is {bound!r}: the gap is not "
            "closed (a time limit) or the quadratic model and the exact index disagree beyond the tolerance"
        )
    return candidates[best]


class Oracle:
    """Exact restricted argmax over the actions of ``space``.

    Subclasses implement :meth:`_linear` and, where supported, :meth:`_norm`;
    both receive validated queries and return a bool action or ``None``.
    """

    name = "oracle"

    def __init__(self, space: ActionSpace):
        if not isinstance(space, ActionSpace):
            raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
        self.space = space
        self.d = space.d
        self.ledger = Ledger()
        self._pool: ThreadPoolExecutor | None = None
        #: Per-thread solver state (models are not thread-safe; batches use one per thread).
        self._local = threading.local()

    # ----------------------------------------------------------- public API
    def argmax(
        self,
        weights: Any,
        include: Sequence[int] = (),
        exclude: Sequence[int] = (),
        forbid_pairs: Sequence[tuple[int, int]] = (),
    ) -> np.ndarray | None:
        """An action maximising ``weights @ a`` under the restrictions, or ``None``."""
        query = self.linear_query(weights, include, exclude, forbid_pairs)
        start = time.perf_counter()
        answer = self._answer(query)
        self.ledger.record(1, time.perf_counter() - start)
        return answer

    def argmax_norm(
        self,
        mu: Any,
        M: Any,
        f: float,
        sign: int = +1,
        include: Sequence[int] = (),
        exclude: Sequence[int] = (),
        forbid_pairs: Sequence[tuple[int, int]] = (),
        *,
        hints: Sequence[Any] = (),
    ) -> np.ndarray | None:
        """An action maximising ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))``, or ``None``.

        ``hints``: optional 0/1 vectors of length ``d`` a backend may start from (see :class:`NormQuery`).
        """
        query = self.norm_query(mu, M, f, sign, include, exclude, forbid_pairs, hints=hints)
        start = time.perf_counter()
        answer = self._answer(query)
        self.ledger.record(1, time.perf_counter() - start)
        return answer

    def argmax_batch(self, queries: Sequence[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """Answer independent queries concurrently as one adaptivity round.

        Each query is a dict of :meth:`argmax` / :meth:`argmax_norm` keyword
        arguments plus ``kind="linear"`` (default) or ``kind="norm"``.
        """
        parsed = [self._parse_batch_entry(k, q) for k, q in enumerate(queries)]
        start = time.perf_counter()
        if len(parsed) <= 1 or self.max_workers() <= 1:
            answers = [self._answer(q) for q in parsed]
        else:
            answers = list(self._executor().map(self._answer, parsed))
        self.ledger.record(len(parsed), time.perf_counter() - start)
        return answers

    # ----------------------------------------------------------- validation
    def linear_query(self, weights: Any, include: Any = (), exclude: Any = (), forbid_pairs: Any = ()) -> LinearQuery:
        # the per-query path (a float64 array from a policy) skips the conversion
        w = weights if type(weights) is np.ndarray and weights.dtype is _FLOAT64 else real_array(weights, "weights")
        if w.shape != (self.d,):
            raise ValueError(f"weights must have shape ({self.d},), got {w.shape}")
        listed = w.tolist() if self.d <= _SMALL else None
        total = sum(listed) if listed is not None else w.sum()  # inf or NaN anywhere makes it non-finite
        if not math.isfinite(total) and not np.isfinite(w).all():
            raise ValueError("weights must be finite (no NaN or inf)")
        return LinearQuery(w, _restrictions(self.d, include, exclude, forbid_pairs, self.space), listed)

    def norm_query(
        self,
        mu: Any,
        M: Any,
        f: float,
        sign: int = 1,
        include: Any = (),
        exclude: Any = (),
        forbid_pairs: Any = (),
        *,
        hints: Any = (),
    ) -> NormQuery:
        mu_arr = real_array(mu, "mu")
        if mu_arr.shape != (self.d,):
            raise ValueError(f"mu must have shape ({self.d},), got {mu_arr.shape}")
        mat = real_array(M, "M")
        if mat.shape != (self.d, self.d):
            raise ValueError(f"M must have shape ({self.d}, {self.d}), got {mat.shape}")
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
        mat = 0.5 * (mat + mat.T)
        restrictions = _restrictions(self.d, include, exclude, forbid_pairs, self.space)
        return NormQuery(mu_arr, mat, f, int(sign), restrictions, _hints(hints, self.d))

    def _parse_batch_entry(self, k: int, entry: Mapping[str, Any]) -> LinearQuery | NormQuery:
        if not isinstance(entry, Mapping):
            raise ValueError(f"batch query {k} must be a dict, got {type(entry).__name__}")
        args = dict(entry)
        kind = args.pop("kind", "linear")
        try:
            if kind == "linear":
                return self.linear_query(**args)
            if kind == "norm":
                return self.norm_query(**args)
        except TypeError as exc:
            raise ValueError(f"batch query {k}: {exc}") from None
        raise ValueError(f"batch query {k}: kind must be 'linear' or 'norm', got {kind!r}")

    # ------------------------------------------------------------ dispatch
    def _answer(self, query: LinearQuery | NormQuery) -> np.ndarray | None:
        if query.restrictions is not _NO_RESTRICTIONS and query.restrictions.trivially_infeasible():
            return None
        if isinstance(query, LinearQuery):
            return self._linear(query)
        if query.f == 0.0:
            return self._linear(LinearQuery(query.mu, query.restrictions))
        return self._norm(query)

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        raise NotImplementedError

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        raise UnsupportedQuery(f"backend {self.name!r} does not answer norm queries")

    # ---------------------------------------------------------- concurrency
    def max_workers(self) -> int:
        return max(1, min(4, os.cpu_count() or 1))

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.max_workers(), thread_name_prefix=f"{self.name}-oracle")
        return self._pool

    def reset(self) -> None:
        """Make this oracle behave as freshly built: drop the per-thread models and the worker threads.

        The ledger is kept (a policy resets it itself). Answers do not depend on
        the dropped state (the tie rule of each backend); this frees memory and
        makes a reused oracle indistinguishable from a new one.
        """
        self.close()
        self._local = threading.local()

    def close(self) -> None:
        """Stop the worker threads of :meth:`argmax_batch` (also done at exit)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_pool"] = None
        state.pop("_local", None)  # solver models stay with their threads
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.space!r})"
