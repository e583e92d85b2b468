"""The ``combinatorial`` backend: specialised exact algorithms per family.

==================  ===============================================  ======================
space               algorithm                                        restrictions
==================  ===============================================  ======================
Cardinality         top-m selection (``argpartition``)               include, exclude
PartitionMatroid    top-capacity per block                           include, exclude
GraphicMatroid      matroid greedy (Kruskal); include = contract,    include, exclude
                    exclude = delete
SpanningTrees       maximum spanning tree (Kruskal)                  include, exclude
STPaths (DAG)       longest-path dynamic programme over a            include, exclude
                    topological order, through included edges
STPaths (cyclic)    shortest path (Dijkstra) when no allowed edge    exclude; one include
                    has positive weight (else NP-hard: declined);    (undirected)
                    through one edge: two disjoint paths
Matchings           ``scipy.optimize.linear_sum_assignment``         include, exclude
                    (bipartite), blossom (general graphs)
ExplicitActions     vectorised scan                                  all
==================  ===============================================  ======================

Anything else (``forbid_pairs`` on a structured space, side constraints,
intersections, norm queries) raises :class:`~cmab_milp.oracles.core.base.UnsupportedQuery`.

Example
-------
>>> import cmab_milp as cm
>>> greedy = cm.make_oracle(cm.Cardinality(4, 2), "combinatorial")
>>> greedy.argmax([0.3, -0.2, 0.9, 0.4], include=[1]).nonzero()[0].tolist()
[1, 2]
"""

from __future__ import annotations

import numpy as np

from ...spaces import ActionSpace, ExplicitActions, STPaths
from ..core.base import Oracle, UnsupportedQuery
from ..core.capabilities import Capabilities
from ..core.exact import ALGORITHMS as _SOLVERS
from ..core.exact import prepare_fractional_matching, prepare_kruskal, prepare_linear
from ..core.queries import LinearQuery
from .combinatorial_ruled import RULED

__all__ = [
    "CombinatorialOracle",
    "accepts_space",
    "declines_space",
    "prepare_fractional_matching",
    "prepare_kruskal",
    "prepare_linear",
    "supports",
]


def accepts_space(space: ActionSpace) -> bool:
    """The spaces this backend takes (its registry line's ``accepts``): the families it has an algorithm for."""
    return type(space) in _SOLVERS


def declines_space(space: ActionSpace) -> bool:
    """Whether it may decline declared queries on ``space``: longest simple paths of a cyclic graph are NP-hard."""
    return type(space) is STPaths and not space.acyclic


def supports(space: ActionSpace, query: LinearQuery) -> bool:
    """Whether the combinatorial backend answers ``query`` exactly without trying it."""
    solver = _SOLVERS.get(type(space))
    if solver is None:
        return False
    if query.restrictions.forbid_pairs and type(space) is not ExplicitActions:
        return False
    if type(space) is STPaths and not space.acyclic:
        include = query.restrictions.include
        if len(include) > 1 or (include and space.directed):
            return False
        allowed = np.ones(space.d, bool)
        allowed[list(query.restrictions.exclude)] = False
        allowed[list(include)] = False  # one edge in (undirected): its own weight may have any sign
        return not (query.weights[allowed] > 0).any()
    return True


class CombinatorialOracle(Oracle):
    """Exact specialised algorithms; declines what it cannot answer exactly."""

    # ---- declaration (read by the registry, ``auto`` and the kits)
    #: Linear queries on the families it has an algorithm for (:func:`accepts_space`). It answers
    #: ``forbid_pairs`` on ExplicitActions only (a scan): declared as not answered, which is what holds for
    #: every structured family; it may decline NP-hard cases (:func:`declines_space`).
    CAPABILITIES = Capabilities(
        norm=False,
        forbid_pairs=False,
        accepts=accepts_space,
        spaces="Cardinality, PartitionMatroid, GraphicMatroid, SpanningTrees, STPaths, Matchings and"
        " ExplicitActions (no side constraints, conflicts or intersections); include and exclude"
        " restrictions (forbid_pairs only on ExplicitActions); on cyclic s-t paths only exclude (and one"
        " include on undirected graphs) and weights <= 0 (longest simple path is NP-hard)",
        may_decline=declines_space,
        cost="cmab_milp.oracles.core.auto_costs:combinatorial_cost",
    )
    DESCRIPTION = "specialised exact algorithms"

    name = "combinatorial"

    def __init__(self, space: ActionSpace):
        super().__init__(space)
        self._solver = _SOLVERS.get(type(space))
        # a subclass with its own ``_linear`` proves nothing
        self._ruled = RULED.get(type(space)) if type(self)._linear is CombinatorialOracle._linear else None

    def _linear(self, query: LinearQuery) -> np.ndarray | None:
        if self._solver is None:
            raise UnsupportedQuery(f"no combinatorial algorithm for {type(self.space).__name__}")
        if query.restrictions.forbid_pairs and type(self.space) is not ExplicitActions:
            raise UnsupportedQuery("forbid_pairs breaks the combinatorial structure; use a MILP backend")
        return self._solver(self.space, query)

    def _linear_ruled(self, query: LinearQuery) -> tuple[np.ndarray | None, bool]:
        """:meth:`_linear` and whether its answer is the tie rule's action (:mod:`.combinatorial_ruled`)."""
        if self._ruled is None or query.restrictions.forbid_pairs:
            return self._linear(query), False
        return self._ruled(self.space, query)
