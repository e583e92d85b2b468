"""AESCB's budgeted linear maximisations on one compiled model, re-solved per query: :class:`BudgetModel`.

A query ``argmax {mu . a : w . a >= rhs}`` (under ``include`` / ``exclude`` / ``forbid_pairs``) is answered
on one model compiled **once** (:func:`~cmab_milp.oracles.core.engine.new_engine`, HiGHS) of the space plus
one side row: per query the arm costs are set and the side row is replaced by the budget row (deleted and
appended again, in the model and in the formulation its plans read), and the model is solved through the
certified solve of every model backend (:func:`~cmab_milp.oracles.core.pipeline.certified_solve`: the
formulation's lazy cuts, integrality, and the answer's value recomputed in numpy must reach HiGHS's dual
bound within the contract's tolerance; the query's own rows are removed by ``undo``). Keeping the budget as
the formulation's side row is what lets the side-row plans of :mod:`~cmab_milp.oracles.mip.starts`
(Lagrangian start, reduced-cost fixing, core enumeration) work on it, as they do on a constrained space
compiled per query (the ``budget_oracle=<backend>`` route of AESCB): the same answers, without the compile.

The budget row is held by HiGHS only to its feasibility tolerance, so an answer may fall short of ``rhs``
by that much; each answer is therefore checked against the row exactly (``w`` times the 0/1 action,
summed elementwise), and one that fails is cut off by its no-good row ``sum_{i in a} (1 - x_i) + sum_{i
not in a} x_i >= 1`` (which removes that action only) and the query is solved again. HiGHS's bound covers
a set containing every exactly feasible action, so an exactly feasible answer reaching it is optimal;
an ``'infeasible'`` status likewise means no action meets the row. The row is scaled by a power of 2
(exact) so that its largest coefficient is in ``[1, 2)``.

The compiled model is built at the first query and is not part of the learner's state: a copy, a pickle
or a loaded learner rebuilds it when it is next asked.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> budget = BudgetModel(cm.Cardinality(4, 2))
>>> mu, w = np.array([0.9, 0.8, 0.1, 0.2]), np.array([0.1, 0.1, 1.0, 0.5])
>>> np.flatnonzero(budget.argmax(mu, w, 1.05)).tolist()  # the best pair with w . a >= 1.05
[0, 2]
>>> budget.argmax(mu, w, 2.0) is None  # no pair reaches 2
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..oracles import LimitReached, OracleError
from ..oracles.core.engine import Engine, new_engine
from ..oracles.core.pipeline import certified_solve
from ..oracles.core.queries import LinearQuery, make_restrictions
from ..oracles.mip.root_cuts import add_root_cuts
from ..spaces.base import ActionSpace
from ..spaces.formulation import Formulation, Row

__all__ = ["MAX_NOGOODS", "BudgetModel", "budget_sum"]

#: Answers cut off for falling short of the budget row within HiGHS's tolerance, per query, before giving up.
MAX_NOGOODS = 100


def budget_sum(w: np.ndarray, action: np.ndarray) -> float:
    """``w . action`` as the action-table route sums it (elementwise products summed: the same bits everywhere).

    >>> budget_sum(np.array([0.5, 0.25, 2.0]), np.array([True, False, True]))
    2.5
    """
    return float((action.astype(float) * w).sum())


class BudgetModel:
    """The budgeted linear maximisations of one space on one compiled HiGHS model (module docstring).

    ``engine`` names the engine (a key of :data:`~cmab_milp.oracles.core.engine.ENGINES`; ``None``: HiGHS).
    Attributes ``nogoods``: answers cut off so far for missing the row by less than HiGHS's tolerance;
    ``presolve_retries``: queries solved again without presolve after a failed HiGHS run.
    """

    def __init__(self, space: ActionSpace, engine: str | None = None):
        self.space = space
        self.engine = engine
        self.nogoods = 0
        self.presolve_retries = 0
        self._formulation: Formulation | None = None
        self._model: Engine | None = None
        self._side = 0

    def __getstate__(self) -> dict[str, Any]:
        # the compiled model is a solver object: never copied, pickled or saved; rebuilt at the next query
        return {**self.__dict__, "_model": None, "_formulation": None}

    @property
    def compiled(self) -> bool:
        """Whether the model is built (it is, from the first query on)."""
        return self._model is not None

    def _engine(self) -> tuple[Engine, Formulation]:
        if self._model is None:
            # the space plus one side row (a placeholder, 1 . a >= 0): the row each query replaces, so that the
            # side-row plans of the certified solve (Lagrangian start, arm fixing: oracles/mip/starts.py) see it
            self._formulation = self.space.with_constraint(np.ones(self.space.d), ">=", 0.0).formulation()
            self._model = new_engine(self._formulation, integer=True, engine=self.engine)
            self._side = self._formulation.n_rows - 1
        return self._model, self._formulation  # type: ignore[return-value]

    def _set_budget_row(self, model: Engine, formulation: Formulation, row: Row) -> None:
        """Replace the side row, in the model (its last formulation row) and in the formulation the plans read."""
        model.delete_rows(self._side, self._side + 1)
        model.add_rows([row])  # appended: back at the same index, among the formulation's rows
        formulation.rows[self._side] = row

    def argmax(self, mu: np.ndarray, w: np.ndarray, rhs: float, **restrictions: Sequence[Any]) -> np.ndarray | None:
        """An action maximising ``mu . a`` among those with ``w . a >= rhs`` (exactly) and the restrictions,
        or ``None`` when there is none.

        ``w`` must be finite and non-negative (AESCB's ``1 / n``), ``rhs`` finite; ``restrictions``: ``include``,
        ``exclude`` (arms) and ``forbid_pairs`` (pairs of arms), as an oracle's.

        >>> import cmab_milp as cm
        >>> BudgetModel(cm.Cardinality(2, 1)).argmax(np.zeros(2), np.array([1.0, -1.0]), 0.0)
        Traceback (most recent call last):
        ...
        ValueError: budget weights w must be finite and >= 0
        """
        mu, w = np.asarray(mu, float), np.asarray(w, float)
        d = self.space.d
        if mu.shape != (d,) or w.shape != (d,):
            raise ValueError(f"mu and w must have shape ({d},), got {mu.shape} and {w.shape}")
        if not (np.isfinite(w).all() and (w >= 0).all()):
            raise ValueError("budget weights w must be finite and >= 0")
        if not math.isfinite(rhs):
            raise ValueError(f"the budget rhs must be finite, got {rhs!r}")
        unknown = set(restrictions) - {"include", "exclude", "forbid_pairs"}
        if unknown:
            raise ValueError(
                f"unknown restriction(s) {sorted(unknown)}: the restrictions are include, exclude, forbid_pairs"
            )
        given = [tuple(restrictions.get(key, ())) for key in ("include", "exclude", "forbid_pairs")]
        query_restrictions = make_restrictions(d, *given, self.space)
        if query_restrictions.trivially_infeasible():
            return None
        query = LinearQuery(mu, query_restrictions, mu.tolist() if d <= 256 else None)
        model, formulation = self._engine()
        self._set_budget_row(model, formulation, _budget_row(w, rhs))
        rows: list[Row] = []
        for _ in range(MAX_NOGOODS + 1):
            found = self._solve(model, query, formulation, rows)
            if found is None:
                return None
            action = found[0]
            if budget_sum(w, action) >= rhs:
                return action
            self.nogoods += 1  # within HiGHS's tolerance of the row, not on it: cut off this action only
            rows.append(_nogood_row(action))
        raise OracleError(
            f"HiGHS returned {MAX_NOGOODS + 1} actions in a row that miss the budget row w . a >= {rhs!r} by less"
            " than its feasibility tolerance; no answer is certified"
        )

    def _solve(
        self, model: Engine, query: LinearQuery, formulation: Formulation, rows: list[Row]
    ) -> tuple[np.ndarray, float | None] | None:
        """The certified solve; a HiGHS run that fails (its presolve meets a 'Solve error' on some path
        models with a budget row) is run again once without presolve (counted in ``presolve_retries``)."""
        try:
            return certified_solve(model, query, formulation, rows=rows, root_cuts=add_root_cuts)
        except LimitReached:
            raise
        except OracleError:
            self.presolve_retries += 1
            model.set_query_options({"presolve": "off"})  # this query only: undo restores it
            return certified_solve(model, query, formulation, rows=rows, root_cuts=add_root_cuts)


def _budget_row(w: np.ndarray, rhs: float) -> Row:
    """``w . a >= rhs`` on the arms with ``w > 0``, scaled by a power of 2 (exact) to a largest coefficient in
    ``[1, 2)``."""
    top = float(w.max(initial=0.0))
    shift = -(math.frexp(top)[1] - 1) if top > 0 else 0
    cols = np.flatnonzero(w > 0)
    coefs = np.ldexp(w[cols], shift)
    return Row(tuple(cols.tolist()), tuple(coefs.tolist()), math.ldexp(rhs, shift), math.inf)


def _nogood_row(action: np.ndarray) -> Row:
    """The row that removes ``action`` alone: ``sum_{i not in a} x_i - sum_{i in a} x_i >= 1 - |a|``."""
    coefs = np.where(action, -1.0, 1.0)
    return Row(tuple(range(len(action))), tuple(coefs.tolist()), 1.0 - float(action.sum()), math.inf)
