"""Action spaces declared as constraint models (contract section 1)."""

from .base import MAX_ENUMERATE, ActionSpace, ConstrainedSpace, Intersection, as_action
from .formulation import Formulation, Row
from .graphs import GraphicMatroid, Matchings, SpanningTrees, STPaths
from .sets import Cardinality, ExplicitActions, PartitionMatroid

__all__ = [
    "MAX_ENUMERATE",
    "ActionSpace",
    "Cardinality",
    "ConstrainedSpace",
    "ExplicitActions",
    "Formulation",
    "GraphicMatroid",
    "Intersection",
    "Matchings",
    "PartitionMatroid",
    "Row",
    "STPaths",
    "SpanningTrees",
    "as_action",
]
