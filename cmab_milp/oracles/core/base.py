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
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._threads import blas_single_thread
from ...spaces.base import ActionSpace
from .interrupts import halting
from .option_checks import check_gap, check_time_limit, check_workers
from .queries import (
    _FLOAT64,
    _NO_RESTRICTIONS,
    _SMALL,
    Arms,
    Carry,
    LinearQuery,
    NormQuery,
    Pairs,
    _hints,
    make_restrictions,
    norm_input,
    real_array,
)
from .ties import first_optimum
from .ties_unique import proves_unique

__all__ = [
    "Ledger",
    "LimitReached",
    "Oracle",
    "OracleError",
    "UnsupportedQuery",
    "check_gap",
    "check_time_limit",
    "check_workers",
]


class UnsupportedQuery(Exception):
    """A backend cannot answer this query exactly (e.g. combinatorial + forbid_pairs).

    Raised by a specialised backend (``combinatorial``) for a query it declares but cannot answer
    exactly on this space; ``auto`` then asks the next fitting backend.

    >>> import networkx as nx, cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.SpanningTrees(nx.cycle_graph(4)), "combinatorial")
    >>> oracle.argmax([1, 1, 1, 1], forbid_pairs=[(0, 1)])
    Traceback (most recent call last):
    cmab_milp.oracles.core.base.UnsupportedQuery: ...
    """


class OracleError(RuntimeError):
    """The solver failed, hit a limit or returned an answer that does not check out.

    Every backend returns a proven optimum, a proven ``None``, or raises this error naming the
    solver status: a stop on a time limit (:class:`LimitReached`) or numerical trouble is never
    reported as ``None`` nor as a silent suboptimum.

    >>> issubclass(LimitReached, OracleError)
    True
    """


class LimitReached(OracleError):
    """A solve stopped on the user's time limit (not retried: a retry would take as long).

    Examples
    --------
    >>> import cmab_milp as cm
    >>> issubclass(cm.LimitReached, cm.OracleError)  # catch it with the other oracle errors
    True
    """


@dataclass
class Ledger:
    """Counts of oracle use: answered ``queries``, adaptivity ``rounds``, wall ``seconds``.

    In the certified approximate mode (``make_oracle(..., gap=...)``) it also
    keeps ``approximate``, the number of answers not proven optimal, and
    ``worst_ratio``, the smallest proven ratio ``value / bound`` among them
    (1.0 while every answer is exact).

    >>> ledger = Ledger()
    >>> ledger.record_ratio(0.97); ledger.record_ratio(0.99)
    >>> ledger.approximate, ledger.worst_ratio
    (2, 0.97)
    """

    queries: int = 0
    rounds: int = 0
    seconds: float = 0.0
    approximate: int = 0
    worst_ratio: float = 1.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, queries: int, seconds: float) -> None:
        with self._lock:
            self.queries += queries
            self.rounds += 1
            self.seconds += seconds

    def record_ratio(self, ratio: float) -> None:
        """One approximate answer whose value is proven at least ``ratio`` times the optimum."""
        with self._lock:
            self.approximate += 1
            self.worst_ratio = min(self.worst_ratio, float(ratio))

    def reset(self) -> None:
        with self._lock:
            self.queries = self.rounds = 0
            self.seconds = 0.0
            self.approximate = 0
            self.worst_ratio = 1.0

    def snapshot(self) -> tuple[int, int, float]:
        return self.queries, self.rounds, self.seconds

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]  # locks do not pickle; a copy gets its own
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


#: What a restricted solve of the tie rule may raise that leaves the backend's answer (ties.first_optimum).
_SOLVE_FAILURES = (OracleError, UnsupportedQuery)


def tolerance(value: float) -> float:
    """The contract's optimality tolerance ``1e-9 * (1 + |value|)``."""
    return 1e-9 * (1.0 + abs(value))


class Oracle:
    """Exact restricted argmax over the actions of ``space``.

    Built by :func:`~cmab_milp.make_oracle`; every backend answers the same methods:
    :meth:`argmax` (linear weights), :meth:`argmax_norm` (the covariance-adaptive index) and
    :meth:`argmax_batch` (independent queries as one adaptivity round), each optimal within
    ``1e-9 * (1 + |optimum|)``. ``oracle.ledger`` (a :class:`Ledger`) counts the queries, rounds and seconds.

    Subclasses implement :meth:`_linear` and, where supported, :meth:`_norm`;
    both receive validated queries and return a bool action or ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "enumerate")
    >>> oracle.argmax(np.array([0.3, -1.0, 0.9, 0.1]), exclude=[2]).nonzero()[0].tolist()
    [0, 3]
    >>> oracle.ledger.queries, oracle.ledger.rounds
    (1, 1)
    """

    name = "oracle"
    #: Threads :meth:`argmax_batch` runs (``None``: ``min(4, cores)``); every backend takes it as the
    #: option ``make_oracle(space, backend, workers=n)``. Answers do not depend on it (the tie rule).
    workers: int | None = None
    #: Which exact ties every answer settles by the one tie rule (:mod:`~cmab_milp.oracles.core.ties`):
    #: ``"off"`` (default: the backend's own choice among ties), ``"classes"`` (ties of equal weights, so a
    #: solver swap changes the time, not the curve) or ``"exact"`` (also equal sums of different weights; a
    #: solve per arm). ``make_oracle(space, backend, ties=...)`` sets it.
    ties: str = "off"

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
    @property
    def proven_ratio(self) -> float:
        """The smallest ratio ``value / optimum`` proven for an answer so far (1.0: every answer exact).

        Below 1 only in the certified approximate mode (``make_oracle(..., gap=...)``);
        read from the ledger, so it restarts when the ledger is reset.
        """
        return self.ledger.worst_ratio

    def argmax(
        self, weights: Any, include: Arms = (), exclude: Arms = (), forbid_pairs: Pairs = ()
    ) -> np.ndarray | None:
        """An action maximising ``weights @ a`` under the restrictions, or ``None``.

        Parameters
        ----------
        weights : array of shape (d,)
            Finite weights, any sign.
        include, exclude : sequence of arms
            Arms every returned action must hold / must not hold (indices or the space's labels).
        forbid_pairs : sequence of (arm, arm)
            Pairs never both in the returned action.

        Returns
        -------
        ndarray of bool, shape (d,), or None
            An optimal action within ``1e-9 * (1 + |optimum|)``, or ``None`` when no action of the
            space satisfies the restrictions.

        Raises
        ------
        ValueError, UnsupportedQuery, OracleError
            Bad weights or an unknown arm; a query a specialised backend cannot answer exactly; a
            failed or stopped solve.

        Examples
        --------
        >>> import cmab_milp as cm
        >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "enumerate")
        >>> oracle.argmax([0.5, 0.2, 0.9], include=[1]).tolist(), oracle.argmax([0.5, 0.2, 0.9]).tolist()
        ([False, True, True], [True, False, True])
        """
        return self.answer_timed(self.linear_query(weights, include, exclude, forbid_pairs))

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
        carry: Any = None,
    ) -> np.ndarray | None:
        """An action maximising ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))``, or ``None``.

        The covariance-adaptive index of Algorithms 3 and 4 of Kim, Vojnović and Oh (2025),
        :math:`\\langle a, \\hat\\mu\\rangle \\pm f \\sqrt{a^\\top M a}`, answered exactly for both signs and
        any symmetric ``M`` (the quadratic form may be negative for some actions: it is clipped at 0).

        Parameters
        ----------
        mu, M, f : array (d,), symmetric array (d, d), float >= 0
            The linear part, the matrix and the width factor.
        sign : {+1, -1}
            ``+1`` for an upper confidence index, ``-1`` for a lower one.
        include, exclude, forbid_pairs
            Restrictions, as for :meth:`argmax`.
        hints, carry : optional
            0/1 vectors a backend may start from (:class:`NormQuery`); a
            :class:`~cmab_milp.oracles.norm.carry.NormCarry` (the certified approximate mode only).

        Returns
        -------
        ndarray of bool, shape (d,), or None
            An optimal action (within the backend's declared norm tolerance), or ``None``.

        Raises
        ------
        ValueError, OracleError
            Bad input (``M`` not symmetric, ``f < 0``, ``sign`` not +1 or -1); a failed or stopped solve.

        References
        ----------
        Jung-hun Kim, Milan Vojnović, Min-hwan Oh. *Oracle-Efficient Combinatorial Semi-Bandits*.
        NeurIPS 2025 (arXiv:2510.21431), Section 4 (the index of Algorithms 3 and 4).

        Examples
        --------
        >>> import numpy as np
        >>> import cmab_milp as cm
        >>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "enumerate")
        >>> oracle.argmax_norm([0.5, 0.4, 0.1], np.eye(3), 1.0).tolist()  # 0.9 + sqrt(2) beats 0.5 + 1
        [True, True, False]
        >>> oracle.argmax_norm([0.5, 0.4, 0.1], np.eye(3), 1.0, sign=-1).tolist()  # a lower bound: the empty action
        [False, False, False]
        """
        query = self.norm_query(mu, M, f, sign, include, exclude, forbid_pairs, hints=hints, carry=carry)
        return self.answer_timed(query)

    def answer_timed(self, query: Any) -> np.ndarray | None:
        """Answer one validated query as one adaptivity round, recorded in the ledger."""
        start = time.perf_counter()
        answer = self._answer(query)
        self.ledger.record(1, time.perf_counter() - start)
        return answer

    def argmax_batch(self, queries: Sequence[Mapping[str, Any]]) -> list[np.ndarray | None]:
        """Answer independent queries concurrently as one adaptivity round.

        Each query is a dict of :meth:`argmax` / :meth:`argmax_norm` keyword
        arguments plus ``kind="linear"`` (default) or ``kind="norm"``.

        The answers come in the order of ``queries``; the ledger counts ``len(queries)`` queries, one round.

        Examples
        --------
        >>> import numpy as np
        >>> import cmab_milp as cm
        >>> oracle = cm.make_oracle(cm.Cardinality(3, 1), "enumerate")
        >>> answers = oracle.argmax_batch([{"weights": [1, 2, 3]}, {"weights": [1, 2, 3], "exclude": [2]}])
        >>> [a.nonzero()[0].tolist() for a in answers], oracle.ledger.queries, oracle.ledger.rounds
        ([[2], [1]], 2, 1)
        """
        parsed = [self._parse_batch_entry(k, q) for k, q in enumerate(queries)]
        start = time.perf_counter()
        if len(parsed) <= 1 or self.max_workers() <= 1:
            answers = [self._answer(q) for q in parsed]
        else:  # BLAS on one thread, set here: OpenBLAS takes the setting from the caller's thread only
            with blas_single_thread():
                try:
                    answers = list(self._executor().map(self._answer, parsed))
                except KeyboardInterrupt:  # Ctrl-C reached this thread: stop the workers' solves too
                    self._stop_workers()
                    raise
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
        return LinearQuery(w, make_restrictions(self.d, include, exclude, forbid_pairs, self.space), listed)

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
        carry: Any = None,
    ) -> NormQuery:
        """The validated query of :meth:`argmax_norm` (same arguments; a ``ValueError`` names a bad one)."""
        mu_arr, mat, f, sign = norm_input(self.d, mu, M, f, sign)
        restrictions = make_restrictions(self.d, include, exclude, forbid_pairs, self.space)
        if carry is not None and not isinstance(carry, Carry):
            raise ValueError(f"carry must be a NormCarry or None, got {type(carry).__name__}")
        return NormQuery(mu_arr, mat, f, sign, restrictions, _hints(hints, self.d), carry)

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
        if isinstance(query, NormQuery):
            if query.f != 0.0:
                return self._norm(query)
            query = LinearQuery(query.mu, query.restrictions)
        ties = self.ties
        if ties == "off":  # the backend's own choice among ties
            return self._linear(query)
        answer, ruled = self._linear_ruled(query)
        if ruled if ties == "classes" else ties == "exact" and proves_unique(ruled):  # proven (ties_unique.py)
            return answer
        return first_optimum(self, query, answer, _SOLVE_FAILURES)  # one tie rule for all (ties.py)

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        raise NotImplementedError

    def _linear_ruled(self, query: LinearQuery) -> tuple[np.ndarray | None, bool]:
        """:meth:`_linear`'s answer and whether it is proven to be the tie rule's action (``ties="classes"``).

        ``True`` only with a proof from the backend's own work (a unique optimum, a stable greedy on a
        matroid; :mod:`~cmab_milp.oracles.backends.combinatorial_ruled`); ``False`` leaves the check to
        :func:`~cmab_milp.oracles.core.ties.first_optimum`. A function instead of ``True``: also a certificate
        for ``ties="exact"`` (:mod:`~cmab_milp.oracles.core.ties_unique`). The default proves nothing.
        """
        return self._linear(query), False

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        raise UnsupportedQuery(f"backend {self.name!r} does not answer norm queries")

    # ---------------------------------------------------------- concurrency
    def max_workers(self) -> int:
        """Threads of :meth:`argmax_batch`: the ``workers`` option, else ``min(4, cores)``."""
        if self.workers is not None:
            return self.workers
        return max(1, min(4, os.cpu_count() or 1))

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.max_workers(), thread_name_prefix=f"{self.name}-oracle")
        return self._pool

    def _stop_workers(self, seconds: float = 2.0) -> None:
        """After a Ctrl-C: queued queries dropped, the solves under way stopped (they end raising
        ``KeyboardInterrupt`` in their threads), the threads waited for at most ``seconds`` (a solver
        stops within ~0.1 s; a solve without a stop, PuLP's, runs on in its thread until it ends)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        workers = list(getattr(pool, "_threads", ()))
        with halting(workers):  # each worker's later solves too: its query ends at its next solver call
            pool.shutdown(wait=False, cancel_futures=True)
            deadline = time.perf_counter() + seconds
            for thread in workers:
                thread.join(max(0.0, deadline - time.perf_counter()))

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
