"""Action spaces declared as constraint models (contract section 1)."""

from .base import MAX_ENUMERATE, ActionSpace, EmptySpaceError, Intersection, as_action
from .formulation import Formulation, Row
from .graphs import GraphicMatroid, Matchings, SpanningTrees, STPaths
from .labels import ArmLabels
from .rules import ConflictSpace, ConstrainedSpace, RuleSpace
from .sets import Cardinality, ExplicitActions, PartitionMatroid

__all__ = [
    "MAX_ENUMERATE",
    "ActionSpace",
    "ArmLabels",
    "Cardinality",
    "ConflictSpace",
    "ConstrainedSpace",
    "EmptySpaceError",
    "ExplicitActions",
    "Formulation",
    "GraphicMatroid",
    "Intersection",
    "Matchings",
    "PartitionMatroid",
    "Row",
    "RuleSpace",
    "STPaths",
    "SpanningTrees",
    "as_action",
]
