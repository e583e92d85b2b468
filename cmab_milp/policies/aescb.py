"""AESCB: approximate ESCB through budgeted linear maximisations (Cuvelier, Combes and Gourdin, SIGMETRICS 2021).

ESCB-1's index ``F(a) = y(a) + g sqrt(s(a))`` (``y = mu_hat . a``, ``s = (1 / n) . a``,
``g = sqrt(f(t) / 2)``, :mod:`cmab_milp.policies.escb`) is maximised only
approximately, by linear maximisations under **one linear budget row** over a
geometric grid of budget levels::

    x_0 = argmax_a  y(a)                         (one plain linear query)
    x_k = argmax_a { y(a) : s(a) >= s_k },  s_k = s(x_0) (1 + eps)^k,  k = 1, ..., K,

the last level capped at ``s_max = max_a s(a)`` (one linear query), and the
action played is the ``x_k`` of largest index. **Approximation level**: let
``a*`` maximise ``F``. If ``s(a*) <= s(x_0)``, ``x_0`` is at least as good on
both terms, so optimal. Else some level has ``s_k <= s(a*) < (1 + eps) s_k``;
``a*`` is feasible there, so ``y(x_k) >= y(a*)`` and ``s(x_k) >= s_k > s(a*) /
(1 + eps)``: the index of the action played is at least ``y(a*) + g sqrt(s(a*)
/ (1 + eps))``, ESCB's index with its confidence width scaled by ``(1 +
eps)^(-1/2)`` (default ``eps = 0.1``: within 4.7 % of the width). The regret
analysis of ESCB goes through with the width scaled by a constant (the
constant enters the bound squared), which is the authors' argument for an
approximate index with ESCB's regret order; the number of levels is
``O(log(m n_max / n_min) / eps) = O(log(m T) / eps)`` per round, each a
budgeted linear maximisation: polynomial wherever those are (matroids and
paths with small integer budgets in the paper; here every space, exactly).

Two shortcuts keep it exact to that guarantee and cheaper: a level whose
constraint the previous level's answer already meets has the same answer
(its feasible set is smaller and still holds that answer), and the grid stops
once ``y(x_k) + g sqrt(s_max)`` (a bound on every later level's index, since
``y(x_k)`` does not increase with ``k``) is no better than the best index found.

**Budget rows.** With ``budget_oracle="auto"`` (the default), on a plain
:class:`~cmab_milp.Cardinality` space the levels of a round are answered together by
one exact search (:class:`~.aescb_levels.LevelAnswers`, built at the first level
that needs a query; it also stops the grid at the first level whose best ``y`` is below
``index(x_0) - g sqrt(s_max)``, where the grid would go on without changing the action:
proof in :mod:`.aescb_levels`; past :data:`~.aescb_levels.MAX_NODES` sets that search
gives up and the round goes on as ``"cardinality"``); ``budget_oracle="cardinality"`` asks
one exact combinatorial search per level (:func:`~.aescb_cardinality.budgeted_top`). Elsewhere a
space of at most :data:`~.escb.TABLE_UP_TO` actions answers each budgeted query on its
action table (``"table"`` takes this route on Cardinality too); a larger one on the
space's formulation compiled once per learner and re-solved per query with the one
budget row added and removed again (:class:`~.aescb_budget.BudgetModel`: HiGHS,
certified as every linear answer, the row checked exactly; ``budget_oracle="model"``
takes this route on every space). The table and the combinatorial routes return the
same maximiser, ties included (the first in the table's order); the model, the same up
to ties. A backend name (``budget_oracle="highs"``, ...) asks each query on
``space.with_constraint(1 / n, ">=", s_k)`` with a new oracle of that backend (the
constrained space compiled per query: slower, kept to compare). Each budgeted query is counted in
the policy's oracle ledger (one query and one round, with its time). Unobserved
arms are played first, as for CUCB. The authors' text was not reachable from this machine: the grid and the
guarantee above follow the paper's abstract (an approximate ESCB computed by
repeatedly maximising a linear function under a linear budget constraint)
and are proved here, not transcribed.

Example
-------
>>> import cmab_milp as cm
>>> space = cm.Cardinality(5, 2)
>>> env = cm.UniformNoise([0.1, 0.2, 0.3, 0.8, 0.9], seed=0)
>>> result = cm.simulate(AESCB(space, 300, oracle="enumerate"), env, 300, seed=1)
>>> bool(result.regret[-1] < 0.2 * 300)
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..described import ParameterError
from ..oracles import Oracle, available_backends, make_oracle
from ..spaces.base import ActionSpace
from ..spaces.sets import Cardinality
from .aescb_budget import BudgetModel
from .aescb_cardinality import MAX_STATES, SearchTooLarge, budgeted_top
from .aescb_levels import LevelAnswers
from .base import check_positive
from .escb import TABLE_UP_TO, ESCBIndex, _ESCBFamily
from .escb_search import index_value
from .schedules import EveryRound

__all__ = ["AESCB", "BUDGET_ROUTES", "AESCBIndex", "budget_levels"]

#: AESCB's own budget routes (``budget_oracle``; any backend name is also accepted): ``"auto"`` (on plain
#: Cardinality spaces every level of a round from one search, :mod:`.aescb_levels`, or per level as
#: ``"cardinality"`` if it gives up; else the action table of a small space, else the compiled model),
#: ``"cardinality"`` (one exact combinatorial search per query, :mod:`.aescb_cardinality`, where it applies;
#: else the compiled model), ``"table"`` (the action table where it fits, else the compiled model),
#: ``"model"`` (the compiled model, :mod:`.aescb_budget`).
BUDGET_ROUTES = ("auto", "cardinality", "table", "model")


def budget_levels(start: float, stop: float, eps: float) -> list[float]:
    """``start (1 + eps)^k`` for ``k = 1, 2, ...`` below ``stop``, then ``stop`` itself (empty if ``stop <= start``).

    >>> [round(x, 3) for x in budget_levels(1.0, 1.5, 0.2)]
    [1.2, 1.44, 1.5]
    """
    levels: list[float] = []
    level = start
    while stop > start:
        level *= 1.0 + eps
        if level >= stop:
            levels.append(stop)
            break
        levels.append(level)
    return levels


class AESCBIndex(ESCBIndex):
    """ESCB-1's index, its UCB queries answered by the budget grid of the module docstring."""

    #: Under ``budget_oracle="auto"``: partial sets one depth of a per-level search may keep before the query goes
    #: to the compiled model (:data:`~.aescb_cardinality.MAX_STATES`; the answers are exact either way).
    max_states: int = MAX_STATES

    def __init__(self, d: int, m: int, space: ActionSpace, eps: float, budget_oracle: str, **options: Any):
        self.space = space
        self.eps = float(eps)
        self.budget_oracle = budget_oracle
        super().__init__(d, m, **options)

    def reset(self) -> None:
        super().reset()
        #: Totals: budgeted queries asked, levels skipped (answered by the level before), grids stopped early,
        #: searches past their limit answered by the compiled model.
        self.grid = {"budgeted": 0, "reused": 0, "stopped": 0, "rounds": 0, "to_model": 0}
        self._hints: list[np.ndarray] = []  # last round's level answers: incumbents of the next search
        self._budget_table: np.ndarray | None = None
        self._budget_dense: np.ndarray | None = None
        self._budget_too_big = False
        if getattr(self, "budget_model", None) is None:  # no learner state in it: kept across resets
            #: The budget route of large spaces (``budget_oracle="auto"``): one model, compiled at its first query.
            self.budget_model = BudgetModel(self.space)

    def ask(self, oracle: Oracle, queries: list[Mapping[str, Any]]) -> list[np.ndarray | None]:
        if not all(q.get("kind") == "norm" and q.get("sign") == 1 for q in queries):
            return super().ask(oracle, queries)
        return [self._approximate(oracle, q) for q in queries]

    def _approximate(self, oracle: Oracle, query: Mapping[str, Any]) -> np.ndarray | None:
        mu, w, g = np.asarray(query["mu"], float), np.diag(query["M"]).copy(), float(query["f"])
        restrictions = {k: tuple(query.get(k, ())) for k in ("include", "exclude", "forbid_pairs")}
        first = oracle.argmax(mu, **restrictions)
        self.grid["rounds"] += 1
        if first is None or g <= 0.0:
            return first
        widest = oracle.argmax(w, **restrictions)
        s_max = float(w[widest].sum())
        best, best_value = first, index_value(mu, w, g, first)
        answer, s_answer = first, float(w[first].sum())
        positive = w[w > 0]
        floor = float(positive.min()) if len(positive) else s_max
        levels = budget_levels(max(s_answer, floor), s_max, self.eps)
        together = self._together(restrictions)
        found: LevelAnswers | None = None
        for j, level in enumerate(levels):
            if s_answer >= level:  # the previous level's answer meets this level too: the same answer
                self.grid["reused"] += 1
                continue
            if float(mu[answer].sum()) + g * math.sqrt(s_max) <= best_value:
                self.grid["stopped"] += 1  # no later level can beat the best (y only falls, s <= s_max)
                break
            if together:
                start = time.perf_counter()
                if found is None:  # every level at once, the first time one is needed
                    found = self._all_levels(mu, w, levels, restrictions, best_value - g * math.sqrt(s_max))
                    together = found.complete  # a search past its node limit: each level asked on its own
            if together:
                answer = found.answer(j)  # type: ignore[union-attr]
                oracle.ledger.record(1, time.perf_counter() - start)
                self.grid["budgeted"] += 1
            else:  # after a level search past its node limit: one combinatorial search per level ("cardinality")
                answer = self._budgeted(oracle, mu, w, level, restrictions, per_level=found is not None)
            if answer is None:
                break
            s_answer = float(w[answer].sum())
            value = index_value(mu, w, g, answer)
            if value > best_value:
                best, best_value = answer, value
        if found is not None and found.complete:
            self._hints = found.answered()
        return best

    def _together(self, restrictions: Mapping[str, tuple]) -> bool:
        """Whether the round's levels are answered together (:class:`~.aescb_levels.LevelAnswers`): ``"auto"`` where
        the combinatorial routes apply."""
        return self.budget_oracle == "auto" and self._on_cardinality(restrictions)

    def _on_cardinality(self, restrictions: Mapping[str, tuple]) -> bool:
        """Whether the combinatorial routes apply: a plain :class:`~cmab_milp.Cardinality` space, no forbidden pairs."""
        return type(self.space) is Cardinality and not restrictions["forbid_pairs"]

    def _all_levels(
        self, mu: np.ndarray, w: np.ndarray, levels: list[float], restrictions: Mapping[str, tuple], cutoff: float
    ) -> LevelAnswers:
        """The answers of every level, each row relaxed as :meth:`_budgeted` relaxes it, hinted with last round's;
        past :data:`~.aescb_levels.MAX_NODES` sets the search gives up and each level is asked on its own
        (:meth:`_budgeted`, one combinatorial search per level, as ``"cardinality"``).

        ``cutoff = index(x_0) - g sqrt(s_max)``: a level whose best ``y`` is below it answers ``None``, and the grid
        stops there with the same action (:mod:`.aescb_levels`: no later answer's index can reach ``index(x_0)``).
        """
        space = self.space
        found = LevelAnswers(
            mu,
            w,
            [level - 1e-9 * (1.0 + level) for level in levels],
            space.m,
            space.exact,
            restrictions["include"],
            restrictions["exclude"],
            cutoff=cutoff,
            hints=self._hints,
        )
        return found

    def _budgeted(
        self,
        oracle: Oracle,
        mu: np.ndarray,
        w: np.ndarray,
        level: float,
        restrictions: Mapping[str, tuple],
        per_level: bool = False,
    ) -> np.ndarray | None:
        """``argmax {mu . a : w . a >= level}`` under the restrictions, counted in the ledger as one query.

        ``per_level``: the route ``"cardinality"`` whatever ``budget_oracle`` (``"auto"`` after a level search
        that gave up).

        With ``budget_oracle = "cardinality"`` on a Cardinality space: :func:`~.aescb_cardinality.budgeted_top`;
        ``"auto"`` or ``"table"``: on the action table when the space has at most :data:`~.escb.TABLE_UP_TO`
        actions, else on the compiled model (:class:`~.aescb_budget.BudgetModel`); ``"model"``: on the compiled
        model whatever the space's size; with a backend name, on
        ``space.with_constraint(w, ">=", level)`` with a new oracle of that backend.
        """
        start = time.perf_counter()
        # the row is relaxed by the oracle's tolerance so that the level's own answer (s = level) stays feasible
        rhs = level - 1e-9 * (1.0 + level)
        if (per_level or self.budget_oracle == "cardinality") and self._on_cardinality(restrictions):
            space, include, exclude = self.space, restrictions["include"], restrictions["exclude"]
            limit = self.max_states if self.budget_oracle == "auto" else None  # "cardinality" asked: that search, whole
            try:
                answer = budgeted_top(mu, w, rhs, space.m, space.exact, include, exclude, limit)
            except SearchTooLarge:  # a search past its limit: the compiled model (exact; ties its own way)
                self.grid["to_model"] += 1
                answer = self.budget_model.argmax(mu, w, rhs, **restrictions)
        elif self.budget_oracle in ("auto", "table") and self._has_budget_table():
            answer = self._budgeted_on_table(mu, w, rhs, restrictions)
        elif self.budget_oracle in BUDGET_ROUTES:
            answer = self.budget_model.argmax(mu, w, rhs, **restrictions)
        else:
            constrained = self.space.with_constraint(w, ">=", rhs)
            answer = make_oracle(constrained, self.budget_oracle).argmax(mu, **restrictions)
        oracle.ledger.record(1, time.perf_counter() - start)
        self.grid["budgeted"] += 1
        return answer

    def _has_budget_table(self) -> bool:
        if self._budget_table is None and not self._budget_too_big:
            try:
                self._budget_table = self.space.enumerate(max_actions=TABLE_UP_TO)
                self._budget_dense = self._budget_table.astype(float)
            except ValueError:
                self._budget_too_big = True
        return self._budget_table is not None

    def _budgeted_on_table(
        self, mu: np.ndarray, w: np.ndarray, rhs: float, restrictions: Mapping[str, tuple]
    ) -> np.ndarray | None:
        table, dense = self._budget_table, self._budget_dense
        allowed = (dense * w).sum(axis=1) >= rhs  # elementwise products summed: no BLAS
        if restrictions["include"]:
            allowed &= table[:, list(restrictions["include"])].all(axis=1)
        if restrictions["exclude"]:
            allowed &= ~table[:, list(restrictions["exclude"])].any(axis=1)
        for i, j in restrictions["forbid_pairs"]:
            allowed &= ~(table[:, i] & table[:, j])
        if not allowed.any():
            return None
        values = np.where(allowed, (dense * mu).sum(axis=1), -np.inf)
        return table[int(np.argmax(values))].copy()


class AESCB(_ESCBFamily, EveryRound):
    """AESCB: ESCB-1's index maximised within the width factor ``(1 + eps)^(-1/2)`` every round (module docstring).

    Parameters: ``space``, ``T``, ``oracle`` (default ``"auto"``: the plain linear
    queries), ``C`` and ``loglog`` of ``f(t)`` (as :class:`~.escb.ESCB`), ``eps``
    (> 0, default 0.1: the grid ratio), ``budget_oracle`` (the route of the
    budgeted queries, :data:`BUDGET_ROUTES`: ``"auto"``, the default, every level at
    once on Cardinality spaces, else the action table of a small space or else one
    compiled model; ``"cardinality"``, one combinatorial search per query;
    ``"table"``; ``"model"``, the compiled model on every space; or a backend name, a
    constrained model compiled per query). Attribute ``index.grid``: totals.

    >>> import cmab_milp as cm
    >>> AESCB(cm.Cardinality(3, 1), None, oracle="enumerate").params["eps"]
    0.1
    """

    name = "AESCB"

    _own_defaults: ClassVar[dict[str, Any]] = {"eps": 0.1, "budget_oracle": "auto"}

    def _check_own(self, own: dict[str, Any]) -> dict[str, Any]:
        eps, budget_oracle = check_positive("eps", own["eps"]), own["budget_oracle"]
        if not isinstance(budget_oracle, str):
            raise ParameterError(
                "budget_oracle", f"budget_oracle must be a backend name, got {type(budget_oracle).__name__}"
            )
        known = available_backends()
        if budget_oracle not in BUDGET_ROUTES and budget_oracle.split(":")[0] not in known:
            raise ParameterError(
                "budget_oracle",
                f"budget_oracle {budget_oracle!r} is not one of {', '.join(map(repr, BUDGET_ROUTES))} nor an"
                f" available backend; available: {', '.join(known)}",
            )
        return {"eps": eps, "budget_oracle": budget_oracle}

    def make_index(self) -> AESCBIndex:
        options = self.index_options()
        return AESCBIndex(self.d, self.m, self.space, self.params["eps"], self.params["budget_oracle"], **options)
