"""One branch-and-bound tree on SCIP: the formulation's separators in a PySCIPOpt constraint handler.

A formulation with lazy separators (s-t paths, spanning trees, forests, with
side rows) was answered by re-solving: every integer answer that broke a
subtour or connectivity row added the row and SCIP started again (13-19
solves per longest-path query on a 6x6 grid digraph). Here the rows enter the
one tree where they are found:

* ``conscheck``: a solution (from any heuristic, or the LP) is feasible only
  when its arm vector is an action (``formulation.violated_rows`` is empty);
* ``consenfolp``: an integral LP point that is no action gets its violated
  rows as global cuts (``SEPARATED``); ``consenfops`` (no LP) adds them as
  constraints (``CONSADDED``);
* ``conssepalp``: fractional LP points are cut with the formulation's
  ``fractional_separators`` (the max-flow connectivity and subtour rows), at
  every ``sepa_freq``-th depth of the tree (``0``: the root only, ``-1``: never);
* ``conslock``: every column is locked both ways, so presolving and dual
  reductions never fix a column the lazy rows would need.

Every row is valid for every action, and the rows live in the transformed
problem only: ``freeTransform`` (each query's first edit) drops them, so each
query starts from the formulation's rows (the tie rule). The answer's value is
certified against SCIP's dual bound by the pipeline as before; a solution SCIP
returns is checked by ``conscheck`` when SCIP accepts it, and again by the
pipeline's cut loop (one round, finding nothing).

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
>>> scip = cm.make_oracle(cm.STPaths(g, 0, 8), "scip")
>>> int(scip.argmax(np.ones(12)).sum()), scip.one_tree  # the longest path visits all 9 nodes
(8, True)
"""

from __future__ import annotations

import atexit
import gc
import weakref
from typing import Any

import numpy as np

from ...spaces.formulation import Formulation, Row
from ..mip.graph_cuts import fractional_cuts

__all__ = ["LazyRowsHandler", "attach", "register"]


def _handler_class():
    from pyscipopt import SCIP_RESULT, Conshdlr

    class _LazyRows(Conshdlr):
        """The formulation's separators as SCIP callbacks (see the module docstring)."""

        def __init__(self, formulation: Formulation, cols: list, min_violation: float) -> None:
            super().__init__()
            self.formulation = formulation
            self.cols = cols
            self.d = formulation.d
            self.min_violation = min_violation
            self.fractional = bool(formulation.fractional_separators)
            self.tvars: list | None = None
            self.rows_added = 0
            self.separate = True
            self.target = None

        # ------------------------------------------------------------ helpers
        def _vars(self) -> list:
            if self.tvars is None:
                self.tvars = [self.model.getTransformedVar(v) for v in self.cols]
            return self.tvars

        def _arm_values(self, solution) -> np.ndarray:
            # a solution reads the original columns; the LP point (None) the transformed ones
            get = self.model.getSolVal
            cols = self.cols if solution is not None else self._vars()
            return np.array([get(solution, v) for v in cols[: self.d]])

        def _violated(self, solution) -> list[Row]:
            return self.formulation.violated_rows(self._arm_values(solution) > 0.5)

        def _add_cuts(self, rows: list[Row]) -> bool:
            model, tvars = self.model, self._vars()
            cutoff = False
            for row in rows:
                lhs = None if not np.isfinite(row.lb) else float(row.lb)
                rhs = None if not np.isfinite(row.ub) else float(row.ub)
                cut = model.createEmptyRowUnspec(name="lazy", lhs=lhs, rhs=rhs, local=False, removable=True)
                model.cacheRowExtensions(cut)
                for c, v in zip(row.cols, row.coefs, strict=True):
                    model.addVarToRow(cut, tvars[c], float(v))
                model.flushRowExtensions(cut)
                infeasible = model.addCut(cut, forcecut=True)
                model.releaseRow(cut)
                self.rows_added += 1
                cutoff = cutoff or bool(infeasible)
            return cutoff

        def _add_conss(self, rows: list[Row]) -> None:
            quicksum = self.model_quicksum
            for row in rows:
                expr = quicksum(float(v) * self.cols[c] for c, v in zip(row.cols, row.coefs, strict=True))
                lb, ub = float(row.lb), float(row.ub)
                if not np.isfinite(lb):
                    cons = expr <= ub
                elif not np.isfinite(ub):
                    cons = expr >= lb
                else:
                    cons = (lb <= expr) <= ub
                self.model.addCons(cons, removable=True)
                self.rows_added += 1

        # ---------------------------------------------------------- callbacks
        def consinitsol(self, constraints):
            self.tvars = None  # a new transformed problem

        def consexit(self, constraints):
            self.tvars = None

        def constrans(self, sourceconstraint):
            # a fresh transformed constraint per solve: PySCIPOpt 6.3's default copy shares the source's
            # Python object without a reference, and deleting the transformed one (freeTransform) freed it
            self.target = self.model.createCons(
                self, "lazy_rows_t", initial=True, separate=self.separate, enforce=True, check=True
            )
            return {"targetcons": self.target}

        def conscheck(self, constraints, solution, checkintegrality, checklprows, printreason, completely):
            return {"result": SCIP_RESULT.INFEASIBLE if self._violated(solution) else SCIP_RESULT.FEASIBLE}

        def consenfolp(self, constraints, nusefulconss, solinfeasible):
            rows = self._violated(None)
            if not rows:
                return {"result": SCIP_RESULT.FEASIBLE}
            return {"result": SCIP_RESULT.CUTOFF if self._add_cuts(rows) else SCIP_RESULT.SEPARATED}

        def consenfops(self, constraints, nusefulconss, solinfeasible, objinfeasible):
            rows = self._violated(None)
            if not rows:
                return {"result": SCIP_RESULT.FEASIBLE}
            self._add_conss(rows)
            return {"result": SCIP_RESULT.CONSADDED}

        def conssepalp(self, constraints, nusefulconss):
            if not self.fractional:
                return {"result": SCIP_RESULT.DIDNOTRUN}
            rows = fractional_cuts(self.formulation, self._arm_values(None), self.min_violation)
            if not rows:
                return {"result": SCIP_RESULT.DIDNOTFIND}
            return {"result": SCIP_RESULT.CUTOFF if self._add_cuts(rows) else SCIP_RESULT.SEPARATED}

        def conslock(self, constraint, locktype, nlockspos, nlocksneg):
            both = nlockspos + nlocksneg
            for v in self.cols:
                self.model.addVarLocksType(v, locktype, both, both)

    return _LazyRows


LazyRowsHandler: Any = None  # the class, built on first use (pyscipopt is an optional extra)

#: Models holding a handler: freed before the interpreter shuts down (SCIP calls the handler's Python
#: methods while it frees a model, which fails once the interpreter is finalising).
_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _free_open_models() -> None:
    for owner in list(_OPEN):
        owner.free_scip()
    gc.collect()


def register(owner: Any) -> None:
    """Free ``owner``'s SCIP model (``owner.free_scip()``) at exit."""
    _OPEN.add(owner)


def attach(model: Any, formulation: Formulation, cols: list, *, sepa_freq: int = 1, min_violation: float = 1e-3):
    """Include the handler in the PySCIPOpt ``model`` over its columns ``cols`` (arms first); return it.

    ``sepa_freq``: separate fractional LP points at every ``sepa_freq``-th depth
    (``0``: the root only; ``-1``: never, integral points only).
    """
    global LazyRowsHandler
    if LazyRowsHandler is None:
        LazyRowsHandler = _handler_class()
    import pyscipopt

    handler = LazyRowsHandler(formulation, cols, min_violation)
    handler.separate = sepa_freq >= 0
    handler.model_quicksum = pyscipopt.quicksum
    model.includeConshdlr(
        handler,
        "cmab_lazy_rows",
        "the formulation's separators (subtour and connectivity rows)",
        sepapriority=100,
        enfopriority=-100,  # after integrality: enforce on integral LP points
        chckpriority=-100,
        sepafreq=sepa_freq,
        eagerfreq=-1,
        needscons=True,
    )
    cons = model.createCons(handler, "lazy_rows", initial=True, separate=sepa_freq >= 0, enforce=True, check=True)
    model.addPyCons(cons)
    handler.cons = cons  # SCIP keeps a raw pointer to it as the constraint data: it must stay alive
    return handler
