"""The oracle over a solver model: one :class:`SolverModel` per thread, every answer through the certified solve.

Every solver backend but HiGHS (whose oracle keeps its LP-first path) is a :class:`ModelOracle`: it gives
``_new_model(gap)``, the adapter of its solver, and for norm queries ``_quadratic(M, sign)``; a norm answer
of a quadratic model is settled against its bound by :func:`settle_norm_answer`.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> query = cm.make_oracle(cm.Cardinality(2, 1), "enumerate").norm_query([0.5, 0.2], np.eye(2), 1.0)
>>> found = (np.array([True, False]), 1.5)  # a model's answer and its bound: the index of [1, 0] is 1.5
>>> settle_norm_answer(query, found, None, 1e-6, "a solver").tolist()
[True, False]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...spaces.base import ActionSpace
from .base import Oracle, OracleError, check_gap, check_time_limit
from .certify import settle_norm_answer
from .pipeline import certified_solve
from .queries import LinearQuery, NormQuery

__all__ = ["ModelOracle", "settle_norm_answer"]


class ModelOracle(Oracle):
    """An oracle over one :class:`SolverModel` per thread, answering through :func:`certified_solve`.

    Subclasses give ``_new_model(gap)`` (the model of the formulation; ``gap``
    ``None`` for exact solves) and, for norm queries, ``_quadratic(M, sign)``:
    a function of the model returning the constraint ``s^2 <= a M a`` (sign +1)
    or ``s^2 >= a M a`` (sign -1) on its column ``s`` (the SCIP and Gurobi
    backends). Norm queries stay exact with a ``gap``: they use a second model.

    Parameters
    ----------
    space:
        The action space.
    time_limit:
        Seconds per solve; hitting it raises :class:`LimitReached` (an ``OracleError``).
    verify:
        Also check every answer with ``space.contains`` (slower; for tests).
    gap:
        The certified approximate mode for linear queries (see this module).
    """

    #: Relative slack between a norm answer's exact index and the solver's bound (the quadratic
    #: row holds only to the solver's feasibility tolerance).
    norm_slack = 1e-6
    #: Exceptions of the solver's API that mean "failed" (the thread's model is then rebuilt).
    solver_errors: tuple[type[BaseException], ...] = ()

    def __init__(
        self, space: ActionSpace, time_limit: float | None = None, verify: bool = False, gap: float | None = None
    ):
        time_limit = check_time_limit(time_limit)
        gap = check_gap(gap)
        super().__init__(space)
        self.formulation = space.formulation()
        self.time_limit = time_limit
        self.gap = gap
        self.verify = verify

    def _new_model(self, gap: float | None) -> Any:
        raise NotImplementedError

    def _quadratic(self, M: np.ndarray, sign: int) -> Callable[[Any], Any]:
        raise NotImplementedError

    def _model_key(self, exact: bool) -> str:
        return "exact_model" if exact and self.gap is not None else "model"

    def _model(self, exact: bool = False) -> Any:
        """This thread's model (``exact``: the one without a gap)."""
        key = self._model_key(exact)
        model = getattr(self._local, key, None)
        if model is None:
            model = self._new_model(None if exact else self.gap)
            setattr(self._local, key, model)
        return model

    def _solve(self, query: Any, exact: bool = False, norm: tuple | None = None) -> tuple[np.ndarray, Any] | None:
        """The certified solve on this thread's model; ``norm = (quad, s_coef, s_ub)`` opens the column ``s``."""
        model = self._model(exact)
        try:
            if norm is not None:
                try:
                    model.open_norm(*norm)
                except BaseException:
                    model.undo()
                    raise
            return certified_solve(
                model,
                query,
                self.formulation,
                rescale=norm is None,
                certify=norm is None,
                gap=None if exact else self.gap,
                ledger=self.ledger,
                contains=self.space._contains if self.verify else None,
                time_limit=self.time_limit,
            )
        except OracleError:
            raise
        except self.solver_errors as exc:  # e.g. PySCIPOpt's bare Exception for costs SCIP counts as infinite
            self._local.__dict__.pop(self._model_key(exact), None)  # it may hold half a query: build a new one
            raise OracleError(f"{model.name} failed: {exc}") from None

    def _linear(self, query: LinearQuery, exact: bool = False) -> np.ndarray | None:
        found = self._solve(query, exact)
        return None if found is None else found[0]

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        """``mu @ a + sign f s`` with the quadratic row on ``s``, settled by :func:`settle_norm_answer`.

        ``M`` is scaled to entries of at most 1 (``f`` absorbs the scale), so the
        solver's absolute feasibility tolerance on the quadratic row means the
        same whatever the scale of ``M``. With an indefinite ``M`` and sign +1
        the linear argmax of ``mu`` is a second candidate.
        """
        sign = query.sign
        c = float(np.abs(query.M).max()) or 1.0
        M, f = query.M / c, query.f * np.sqrt(c)
        indefinite = float(np.linalg.eigvalsh(M).min()) < -1e-12
        s_max = float(np.sqrt(max(np.clip(M, 0.0, None).sum(), 0.0))) + 1.0  # s never exceeds sqrt(max a M a)
        mu_query = LinearQuery(query.mu, query.restrictions)
        found = self._solve(mu_query, True, (self._quadratic(M, sign), sign * f, s_max))
        linear = (lambda: self._linear(mu_query, exact=True)) if sign > 0 and indefinite else None
        return settle_norm_answer(query, found, linear, self.norm_slack, self._model(True).name)
