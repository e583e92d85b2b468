"""The branch-and-bound methods on a combinatorial linear oracle, as norm methods (:mod:`..method`).

:data:`PLUS_BRANCH` (sign +1, :class:`~.plus.ConcaveBranch`, ``tuning.norm.plus_branch``): spaces with a
combinatorial linear oracle whose MILP needs lazy cuts (trees, forests) and matchings (an assignment a linear
query; general ones on the fractional matching polytope, ``tuning.norm.branch.fractional_matchings``); every such
space with ``plus_branch = "always"``; any symmetric ``M`` (``definite``: a definite one only).

:data:`PLUS_BRANCH_TRY` (sign +1): the same search with a node budget (``tuning.norm.plus_branch.budget``) where
the outer approximation serves (any other space with a combinatorial linear oracle). Easy queries end in a few
nodes, before the outer approximation's first MILP; the others pass on, the search's incumbent kept for the next
method (:attr:`~..method.NormContext.carried`).

:data:`MINUS_BRANCH` (sign -1, :class:`~.minus.LinearOracleBranch`, ``tuning.norm.minus_branch``): a positive
definite ``M`` on a space with a combinatorial linear oracle, after :data:`~..linear.LINEAR_BOUND`.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(4, 2), "highs")
>>> mu, M = np.array([0.5, 0.0, 0.6, 0.55]), np.diag([1.0, 4.0, 0.25, 0.5])
>>> oracle.argmax_norm(mu, M, 1.0, sign=-1).astype(int).tolist(), oracle.last_norm_stats.method
([0, 0, 1, 1], 'branch-linear-oracle')
"""

from __future__ import annotations

import numpy as np

from ....spaces import Matchings
from ..gradient import positive_definite
from ..method import Answer, NormContext
from ..starts.incumbents import best_hint, first_incumbent_plus
from .minus import LinearOracleBranch, NodeBudget, applies
from .plus import ConcaveBranch

__all__ = ["MINUS_BRANCH", "PLUS_BRANCH", "PLUS_BRANCH_TRY", "MinusBranch", "PlusBranch", "PlusBranchTry", "run_search"]


def run_search(context: NormContext, search, best: np.ndarray | None, best_value: float) -> Answer:
    """Run a branch and bound from the incumbent ``best``; its statistics go to the context's."""
    try:
        best, best_value, bound = search.run(best, best_value, None if context.gap is None else context.settled)
    finally:
        context.stats.extra["nodes"] = search.nodes
        context.stats.extra["linear_queries"] = getattr(search, "queries", 0) or getattr(search, "lps", 0)
    return best, bound


class PlusBranch:
    """Sign +1 by the concave branch where its spaces need it (module docstring)."""

    name = "branch-concave"

    def applies(self, context: NormContext) -> bool:
        if not self._may_run(context):
            return False
        space = context.oracle.space
        if context.tuning.norm.plus_branch.enabled == "always" or context.oracle.formulation.separators:
            return True
        return type(space) is Matchings and (space.bipartite or context.tuning.norm.branch.fractional_matchings)

    @staticmethod
    def _may_run(context: NormContext) -> bool:
        """On and given a combinatorial linear oracle and (``definite``) a positive definite ``M``."""
        options = context.tuning.norm.plus_branch
        definite = not options.definite or positive_definite(context.query.M, context.arms)
        return bool(options.enabled) and applies(context.oracle.space) and definite

    def run(self, context: NormContext, max_nodes: int | None = None) -> Answer:
        """The search (``max_nodes``: raise :class:`~.minus.NodeBudget` beyond that many nodes, the search's
        incumbent kept in :attr:`~..method.NormContext.carried`)."""
        stats = context.stats
        best, best_value = first_incumbent_plus(context, light=context.tuning.norm.plus_branch.light_start)
        search = ConcaveBranch(
            context.oracle.space, context.query, context.arms, context.deadline, context.clock, context.tuning
        )
        if max_nodes is not None:
            search.max_nodes = max_nodes
        search.keep = context.keep
        try:
            best, best_value, bound = search.run(best, best_value, None if context.gap is None else context.settled)
        except NodeBudget:
            context.carried = (search.best, search.best_value)
            raise
        finally:
            stats.extra["nodes"] = search.nodes
            stats.extra["linear_queries"] = search.queries
            if search.tuned_at is not None:
                stats.extra["tuned_at"] = search.tuned_at
        context.runners_up = search.runners_up() if context.keep else []
        return best, bound


class PlusBranchTry(PlusBranch):
    """Sign +1: the concave branch with a node budget before the outer approximation (module docstring)."""

    def applies(self, context: NormContext) -> bool:
        return bool(context.tuning.norm.plus_branch.budget) and self._may_run(context)

    def run(self, context: NormContext, max_nodes: int | None = None) -> Answer | None:
        try:
            return super().run(context, max_nodes=context.tuning.norm.plus_branch.budget)
        except NodeBudget:
            context.stats.extra["tried_nodes"] = context.stats.extra.pop("nodes")
            return None


class MinusBranch:
    """Sign -1 by :class:`~.minus.LinearOracleBranch` (``M`` definite, a combinatorial space)."""

    name = "branch-linear-oracle"

    def applies(self, context: NormContext) -> bool:
        enabled = context.tuning.norm.minus_branch.enabled and applies(context.oracle.space)
        return bool(enabled) and positive_definite(context.query.M, context.arms)

    def run(self, context: NormContext) -> Answer:
        # no local search first: the branch's vertices are incumbents too
        lin = context.linear.action
        best, best_value = best_hint(context, lin, context.query.value(lin))
        search = LinearOracleBranch(
            context.oracle.space, context.query, context.arms, context.deadline, context.clock, context.tuning
        )
        return run_search(context, search, best, best_value)


PLUS_BRANCH = PlusBranch()
PLUS_BRANCH_TRY = PlusBranchTry()
MINUS_BRANCH = MinusBranch()
