"""The LP branch and bounds on s-t paths of graphs with cycles, as norm methods (:mod:`..method`).

:data:`PLUS_PATHS` (sign +1, :class:`~.plus.ConcavePathBranch`, ``tuning.norm.plus_paths``): any ``M`` (bounded on
its PSD majorant; ``tuning.norm.plus_branch.definite``: a definite one only). :data:`MINUS_PATHS` (sign -1,
:class:`~.minus.PathBranch`, ``tuning.norm.minus_paths``, and only with ``tuning.norm.minus_branch.enabled``): a
positive definite ``M``, with no longest-path MILP first. Both on well scaled queries
(:func:`~..gradient.well_scaled`); the searches' own steps are ``tuning.norm.paths``.

Example
-------
>>> import networkx as nx
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.STPaths(nx.cycle_graph(5), 0, 2), "highs")  # 0-1-2 or 0-4-3-2
>>> mu, M = np.array([0.5, 0.1, 0.5, 0.6, 0.6]), np.eye(5)
>>> for f, sign in [(1.0, 1), (0.1, -1)]:
...     print(oracle.argmax_norm(mu, M, f, sign).astype(int).tolist(), oracle.last_norm_stats.method)
[0, 1, 0, 1, 1] branch-path-concave
[0, 1, 0, 1, 1] branch-path-lp
"""

from __future__ import annotations

import numpy as np

from ..branch.method import run_search
from ..gradient import positive_definite, well_scaled
from ..method import Answer, NormContext
from ..starts.incumbents import best_hint
from .minus import PathBranch, applies
from .plus import ConcavePathBranch

__all__ = ["MINUS_PATHS", "PLUS_PATHS", "MinusPaths", "PlusPaths"]


def _search(context: NormContext, kind: type[PathBranch]) -> Answer:
    """Run ``kind`` from the best hint."""
    best, best_value = best_hint(context, None, -np.inf)
    search = kind(
        context.oracle.space, context.query, context.arms, context.l_hi, context.deadline, context.clock, context.tuning
    )
    return run_search(context, search, best, best_value)


class PlusPaths:
    """Sign +1 on s-t paths of a cyclic graph (module docstring)."""

    name = "branch-path-concave"

    def applies(self, context: NormContext) -> bool:
        q, tuning = context.query, context.tuning
        definite = not tuning.norm.plus_branch.definite or positive_definite(q.M, context.arms)
        return bool(tuning.norm.plus_paths.enabled and applies(context.oracle.space) and well_scaled(q) and definite)

    def run(self, context: NormContext) -> Answer:
        return _search(context, ConcavePathBranch)


class MinusPaths:
    """Sign -1 on s-t paths of a cyclic graph (module docstring)."""

    name = "branch-path-lp"

    def applies(self, context: NormContext) -> bool:
        q, options = context.query, context.tuning.norm
        paths = options.minus_branch.enabled and options.minus_paths.enabled and applies(context.oracle.space)
        return bool(paths and well_scaled(q)) and positive_definite(q.M, context.arms)

    def run(self, context: NormContext) -> Answer:
        return _search(context, PathBranch)


PLUS_PATHS = PlusPaths()
MINUS_PATHS = MinusPaths()
