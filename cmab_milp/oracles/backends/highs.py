"""The ``highs`` backend: the space compiled once, re-solved per query.

A query changes only the arm costs, the arm bounds (``include`` fixes an arm
to 1, ``exclude`` to 0) and temporary rows ``a_i + a_j <= 1`` for
``forbid_pairs``. Lazy cuts from the formulation's separators (subtour
elimination for forests, trees and paths on cyclic graphs) are added until the
answer is feasible, and removed with the query's other rows when it is
answered.

Tie rule: the answer depends on the query and the space only. Every query
starts from the formulation's rows (the cuts of earlier queries are not kept:
a pool shared by all queries made the answer depend on the history, and on the
measured families it also made solves slower: ``docs/performance.md``, "Oracles"),
a MILP is solved from a cold start, and an LP is
re-solved from a cold start whenever its optimum may be tied (see
:meth:`~cmab_milp.oracles.backends.highs_model.CompiledModel.solve`). Among tied optima
the answer is thus the one HiGHS reaches from a cold start: the same from a
fresh oracle or one with a long history, on any thread and with any number of
workers. (Other backends break ties their own way; their answers agree in value
only.)

A query whose weights are all >= 0 solves with the rows of the formulation's
``aux_optional`` columns relaxed (the orientation of undirected paths: they
tighten LPs that like dead ends, and slowed longest-path queries 1.7x); the
model is then a function of the query alone, and the rows are restored after.

Each answer goes through the one certified solve of every model backend
(:func:`~cmab_milp.oracles.core.pipeline.certified_solve`; the compiled model is its
HiGHS adapter): the solution must be integral, obey the restrictions, and its
value recomputed in numpy must match the solver's bound within the contract's
tolerance. Otherwise :class:`~cmab_milp.oracles.core.base.OracleError`. With
``gap=`` (the certified approximate mode) an answer the bound does not prove
optimal is returned with its proven ratio (:attr:`~cmab_milp.Oracle.proven_ratio`).

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> w = np.array([0.3, -0.2, 0.9, 0.4])
>>> highs = cm.make_oracle(cm.Cardinality(4, 2), "highs")
>>> np.flatnonzero(highs.argmax(w, exclude=[2])).tolist()
[0, 3]
>>> highs.proven_ratio  # every answer exact (no gap)
1.0
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...spaces.base import ActionSpace
from ..core.base import LimitReached, OracleError, check_gap
from ..core.capabilities import Capabilities
from ..core.model_oracle import ModelOracle
from ..core.pipeline import FractionalAnswer, certified_solve
from ..core.pipeline import chosen_arms as _chosen
from ..core.queries import LinearQuery, NormQuery
from ..mip.root_cuts import add_root_cuts
from ..mip.tuning import HighsTuning
from ..norm.solver import solve_norm
from .enumerate import EnumerateOracle
from .highs_model import CompiledModel

__all__ = ["HighsOracle"]


class HighsOracle(ModelOracle):
    """Exact MILP oracle on HiGHS (``highspy``), built once per thread.

    Parameters
    ----------
    space:
        The action space.
    lp_when_integral:
        Solve as an LP when the formulation is integral (totally unimodular
        structures, DAG paths) and the query has no ``forbid_pairs``: exact
        (simplex returns a vertex, which is integral there) and several times
        cheaper. On by default; should an LP answer ever be fractional, the
        query is re-solved as a MILP. ``False`` always solves the MILP.
    time_limit:
        Seconds per solve, a positive finite number (``None``: no limit); hitting
        it raises :class:`~cmab_milp.oracles.core.base.LimitReached` (an ``OracleError``).
    verify:
        Also check every answer with ``space.contains`` (slower; for tests).
    gap:
        The certified approximate mode for linear queries: the MILP may stop at
        this relative gap (in ``[0, 1)``), and with ``time_limit`` a stopped solve
        returns its incumbent; each answer not proven optimal carries a proven
        ratio ``value / bound`` (see :mod:`~cmab_milp.oracles.core.pipeline`), recorded
        in the ledger and in :attr:`proven_ratio`. Norm queries stay exact (see ``norm_gap``).
        ``None`` (default): exact answers only.
    norm_gap:
        The same mode for norm queries (``argmax_norm``): a query stops once its best
        action is proven within this relative gap of the optimum (``value >= (1 - norm_gap)
        * bound``, both positive), and with ``time_limit`` a query past its limit returns its
        best action with the ratio its bound proves (instead of raising). Each answer not
        proven optimal is recorded in the ledger with its ratio. The linear sub-queries of
        the norm index stay exact. ``None`` (default): exact norm answers only. A gap
        alone is deterministic; an answer stopped by the time limit depends on timing.
    tuning:
        The speed-ups used (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`, or a mapping of its
        fields, e.g. ``{"side_starts": False}``); each is exact either way. ``None``: the defaults.
    """

    # ---- declaration (read by the registry, ``auto`` and the kits, without importing highspy)
    #: Linear and norm queries on every space; ``gap=`` and ``time_limit`` (HiGHS reports a dual bound, so a
    #: stopped solve's incumbent carries a proven ratio); its ``tuning=`` record is :class:`HighsTuning`.
    CAPABILITIES = Capabilities(
        time_limit=True,
        approximate=True,
        requires=("highspy",),
        cost="cmab_milp.oracles.core.auto_costs:highs_cost",
        tuning=HighsTuning,
    )
    DESCRIPTION = "MILP compiled once on HiGHS"

    name = "highs"
    #: Tighten MILPs with the formulation's fractional separators before branching (:mod:`.root_cuts`).
    root_cuts = True

    def __init__(
        self,
        space: ActionSpace,
        lp_when_integral: bool = True,
        time_limit: float | None = None,
        verify: bool = False,
        gap: float | None = None,
        norm_gap: float | None = None,
        tuning: HighsTuning | Mapping[str, Any] | None = None,
    ):
        super().__init__(space, time_limit, verify, gap)
        #: The tuning choices (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`; a mapping of its fields is read).
        self.tuning = HighsTuning.of(tuning)
        self.lp_when_integral = bool(lp_when_integral) and self.formulation.integral_lp
        self.norm_gap = check_gap(norm_gap, "norm_gap")
        #: How often each recovery answered a norm query whose first solve failed.
        self.norm_recoveries: dict[str, int] = {}
        #: Rows on ``aux_optional`` columns (the orientation of paths), relaxed for queries with weights >= 0.
        optional = np.flatnonzero(self.formulation._optional_sized()) + self.formulation.d
        used = set(optional.tolist())
        self._optional_rows = np.array(
            [k for k, r in enumerate(self.formulation.rows) if used.intersection(r.cols)], dtype=np.int32
        )

    # -------------------------------------------------------------- models
    def model(self, integer: bool = True, exact: bool = False) -> CompiledModel:
        """This thread's compiled model (MILP, or LP when ``integer=False``): the formulation's rows only.

        With a ``gap``, ``exact=True`` gives a second model that closes every gap (for
        the exact linear sub-queries of the norm index).
        """
        key = ("exact", integer) if exact and self.gap is not None else integer
        try:
            return self._local.models[key]
        except (AttributeError, KeyError):
            model = self._new_model(None if exact else self.gap, integer)
            self._local.__dict__.setdefault("models", {})[key] = model
            return model

    def _new_model(self, gap: float | None, integer: bool = True) -> CompiledModel:
        """A compiled model of the formulation (``gap``: the certified approximate mode)."""
        model = CompiledModel(self.formulation, integer=integer, time_limit=self.time_limit)
        model.tuning = self.tuning
        if gap is not None:
            model.approximate(gap)
        return model

    # ------------------------------------------------------------- queries
    def _linear(self, query: LinearQuery, exact: bool = False) -> np.ndarray | None:
        if self.lp_when_integral and not query.restrictions.forbid_pairs:
            try:
                return self.solve_restricted(self.model(False, exact), query.restrictions, query)
            except FractionalAnswer:
                pass  # a degenerate LP optimum off the vertices: fall back to the MILP
        return self.solve_restricted(self.model(True, exact), query.restrictions, query)

    def solve_restricted(self, model: CompiledModel, res, query: LinearQuery) -> np.ndarray | None:
        """The certified solve (:func:`~cmab_milp.oracles.core.pipeline.certified_solve`) of ``query`` on ``model``."""
        # The optional rows only tighten LPs whose optimum likes dead ends (some weight < 0); with weights
        # >= 0 they only slow the solve (docs/performance.md), so such a query solves without them.
        # The model is then a function of the query alone (the tie rule holds).
        relax = len(self._optional_rows) > 0 and model.integer and float(np.min(query.weights)) >= 0.0
        if relax:
            n = len(self._optional_rows)
            model.set_row_bounds(self._optional_rows, np.full(n, -np.inf), np.full(n, np.inf))
        try:
            found = certified_solve(
                model,
                query,
                self.formulation,
                gap=self.gap if model.incumbent_on_limit else None,
                ledger=self.ledger,
                contains=self.space._contains if self.verify else None,
                root_cuts=add_root_cuts if self.root_cuts else None,
                time_limit=self.time_limit,
            )
        finally:
            if relax:
                rows = [self.formulation.rows[k] for k in self._optional_rows]
                lb = np.array([r.lb for r in rows])
                ub = np.array([r.ub for r in rows])
                model.set_row_bounds(self._optional_rows, lb, ub)
        return None if found is None else found[0]

    def chosen_arms(self, values: list[float], integer: bool) -> list[bool]:
        """Which arms a solution's column ``values`` choose; raise if they are not integral."""
        return _chosen(values, self.d, "HiGHS", integer)

    def integral_action(self, values: list[float], integer: bool) -> np.ndarray:
        """The bool arm vector of a solution's column ``values``; raise if it is not integral."""
        return np.array(self.chosen_arms(values, integer), dtype=bool)

    def solve_linear(self, query: LinearQuery) -> np.ndarray | None:
        """Answer a linear query exactly (even with a ``gap``) without counting it (the norm index's sub-queries)."""
        return self._linear(query, exact=True)

    # ------------------------------------------------------------ norm queries
    def norm_model(self) -> CompiledModel:
        """This thread's norm model: the formulation's MILP, to which each norm query
        appends its own columns and rows and removes them after it."""
        model = self._local.__dict__.get("norm_model")
        if model is None:
            model = CompiledModel(self.formulation, integer=True, time_limit=self.time_limit)
            model.tuning = self.tuning
            # norm_gap: a MILP stopped by the time limit returns its incumbent and bound
            model.incumbent_on_limit = self.norm_gap is not None
            self._local.norm_model = model
        return model

    @property
    def last_norm_stats(self):  # -> NormStats | None
        """What the last norm query answered on the calling thread cost (:class:`~.norm.NormStats`)."""
        return self._local.__dict__.get("norm_stats")

    @last_norm_stats.setter
    def last_norm_stats(self, stats) -> None:
        self._local.norm_stats = stats

    def _norm(self, query: NormQuery) -> np.ndarray | None:
        try:
            return solve_norm(self, query)
        except LimitReached:
            raise
        except OracleError as exc:
            return self._recover_norm(query, exc)

    def _recover_norm(self, query: NormQuery, error: OracleError) -> np.ndarray | None:
        """Answer a norm query whose solve failed (a HiGHS error status, an unproven bound), or raise.

        In turn: the same solve on new models of this thread (a cold restart), the
        query with every value times ``2^-3`` and ``2^3`` (exact; HiGHS sees other
        numbers), then enumeration when the space has at most
        ``tuning.recovery_enumeration`` actions. Each step is deterministic, so the
        tie rule holds; ``norm_recoveries`` counts the steps that answered.
        """
        failures = [f"solve: {error}"]
        attempts: list[tuple[str, NormQuery]] = [("cold restart", query)]
        for k in (-3, 3):
            c = 2.0**k
            attempts.append(
                (
                    f"values times 2^{k}",
                    NormQuery(query.mu * c, query.M, query.f * c, query.sign, query.restrictions, query.hints),
                )
            )
        for name, attempt in attempts:
            self._local.__dict__.pop("norm_model", None)
            self._local.__dict__.pop("models", None)
            try:
                answer = solve_norm(self, attempt)
            except LimitReached:
                raise
            except OracleError as exc:
                failures.append(f"{name}: {exc}")
                continue
            self.norm_recoveries[name] = self.norm_recoveries.get(name, 0) + 1
            return answer
        try:
            enumeration = EnumerateOracle(self.space, max_actions=self.tuning.recovery_enumeration)
        except ValueError:
            failures.append(f"enumeration: more than {self.tuning.recovery_enumeration} actions")
        else:
            self.norm_recoveries["enumeration"] = self.norm_recoveries.get("enumeration", 0) + 1
            return enumeration._norm(query)
        raise OracleError("HiGHS could not answer the norm query; " + "; ".join(failures))

    # ---------------------------------------------------------- inspection
    def write_model(self, path: str | Path) -> Path:
        """Write the compiled MILP (the formulation's rows, no query's cuts) as LP or MPS."""
        return self.model(integer=True).write(path)

    def model_text(self) -> str:
        """The compiled MILP in LP format, for printing."""
        return self.model(integer=True).text()
