"""Exact small solves inside the space layer (no oracle): the best action for fixed weights.

Spaces need one exact optimisation of their own: ``m``, the largest number of
arms in an action, and whether a space has any action at all. This module does
it without the oracle layer (which sits above spaces): by enumeration when the
space is small, otherwise with HiGHS (``highspy``) on the space's
:class:`~cmab_milp.spaces.formulation.Formulation`, looping solve -> separate ->
add cuts while the formulation's lazy separators find violated rows. The answer
is checked with ``space.contains`` before it is returned.

Ctrl-C (and SIGTERM in the command line's runs) stops a solve within a moment and raises
``KeyboardInterrupt``, as the oracles' solves do (:mod:`cmab_milp._interrupts`: HiGHS's interrupt callback
reads the stop flag). ``m`` of a 9 x 9 grid digraph's s-t paths takes minutes of such solves, some of them
seconds long; :func:`scipy.optimize.milp`, used before, could only be stopped between two of them.

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

from .._highs import quiet_highs
from .._interrupts import stoppable
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
    lower = np.concatenate([np.zeros(d), f.aux_lb])
    upper = np.concatenate([np.ones(d), f.aux_ub])
    model = _Milp(cost, lower, upper, np.concatenate([np.ones(d, bool), np.asarray(f.aux_integer, bool)]))
    model.add_rows(f.rows)
    for _ in range(MAX_CUT_ROUNDS):
        x = model.solve(space)
        if x is None:  # infeasible
            return None
        x = x[:d]
        if np.abs(x - np.round(x)).max() > 1e-6:
            raise RuntimeError(f"HiGHS returned a fractional action on {space!r}")
        action = x > 0.5
        new = f.violated_rows(action)
        if not new:
            if not space._contains(action):
                raise RuntimeError(f"the formulation of {space!r} admits an action its contains() refuses")
            return action
        model.add_rows(new)
    raise RuntimeError(f"{space!r}: no exact answer after {MAX_CUT_ROUNDS} rounds of lazy cuts")


#: HiGHS's options here: silent, one thread (as the oracles' models: HiGHS keeps one scheduler per OS thread and
#: refuses a run asking another thread count), and a zero relative gap (HiGHS's other defaults, as scipy's ``milp``).
_OPTIONS: dict[str, object] = {"output_flag": False, "threads": 1, "mip_rel_gap": 0.0}


class _Milp:
    """A HiGHS model of ``min cost @ x`` within the bounds, some columns integer, rows added as they come;
    each :meth:`solve` starts cold and is stopped by Ctrl-C (:class:`~cmab_milp._interrupts.stoppable`).

    The cuts of the other integer candidates HiGHS finds during a run (a ``kCallbackMipSolution``) are not
    added: measured on grid digraphs' longest paths, fewer rounds on some, many more on others (8 x 8: 71 s
    against 11 s), as chance in which optimum each round returns.
    """

    def __init__(self, cost: np.ndarray, lower: np.ndarray, upper: np.ndarray, integer: np.ndarray):
        import highspy

        self._hs = highspy
        self.h = _new_highs()
        n = len(cost)
        self.n = n
        self.h.addCols(n, cost, lower, upper, 0, [], [], [])
        cols = np.flatnonzero(integer).astype(np.int32)
        kint = highspy.HighsVarType.kInteger
        self.h.changeColsIntegrality(len(cols), cols, np.array([kint] * len(cols)))
        self._stop_asked = [False]  # read by the callback (which holds this list only: no cycle through HiGHS)
        interrupt = highspy.cb.HighsCallbackType.kCallbackMipInterrupt
        asked = self._stop_asked

        def callback(kind, message, data_out, data_in, user_data) -> None:
            if kind == interrupt:
                data_in.user_interrupt = asked[0]  # HiGHS keeps the value between runs: set it each time

        self.h.setCallback(callback, None)
        self.h.startCallback(interrupt)

    def add_rows(self, rows: list[Row]) -> None:
        if not rows:
            return
        a = _rows_matrix(rows, self.n)
        lower = np.array([r.lb for r in rows], float)
        upper = np.array([r.ub for r in rows], float)
        status = self.h.addRows(
            len(rows), lower, upper, a.nnz, a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data
        )
        if status == self._hs.HighsStatus.kError:
            raise RuntimeError(f"HiGHS refused {len(rows)} rows")

    def solve(self, space: _Space) -> np.ndarray | None:
        """The optimum's column values (``None``: no feasible point).

        ``KeyboardInterrupt`` when Ctrl-C (or :func:`~cmab_milp._interrupts.stop_all`) stopped the run.
        """
        h, statuses = self.h, self._hs.HighsModelStatus
        h.clearSolver()  # cold: the answer depends on the model only (scipy's milp built it anew each round)
        self._stop_asked[0] = False
        with stoppable(self._ask_stop):
            run = h.run()
        status = h.getModelStatus()
        if status == statuses.kInfeasible:
            return None
        if status == statuses.kNotset and run == self._hs.HighsStatus.kError:
            raise RuntimeError(
                f"HiGHS refused to solve {space!r}: a HiGHS model with another 'threads' option than 1 ran in this "
                "thread before (HiGHS starts one scheduler per thread, at its first run; cmab_milp's models all "
                "run with threads = 1)"
            )
        if status != statuses.kOptimal:
            raise RuntimeError(f"HiGHS failed on {space!r}: {h.modelStatusToString(status)}")
        return np.asarray(h.getSolution().col_value)

    def _ask_stop(self) -> None:
        """Stop the run under way (called from the interrupt watcher's thread): the callback reads the flag."""
        self._stop_asked[0] = True


def _new_highs() -> Any:  # -> highspy.Highs
    """A ``highspy.Highs`` with :data:`_OPTIONS` (the process's first one made without its banner)."""
    h = quiet_highs()
    for key, value in _OPTIONS.items():
        h.setOptionValue(key, value)
    return h
