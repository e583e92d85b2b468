"""cmab_milp: combinatorial semi-bandits whose oracles are exact optimisation models.

Implements "Oracle-Efficient Combinatorial Semi-Bandits": action spaces declared
as constraint models, exact oracles compiled to HiGHS (and other backends), the
rare-oracle policies (AROQ / SROQ families) and their every-round baselines.

>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(5, 2), "auto")
>>> oracle.argmax(np.array([0.1, 0.5, 0.2, 0.9, 0.0])).nonzero()[0].tolist()
[1, 3]
"""

from ._lazy import lazy_names as _lazy_names
from .oracles import (
    Ledger,
    LimitReached,
    Oracle,
    OracleError,
    UnsupportedQuery,
    available_backends,
    make_oracle,
    register_backend,
)
from .spaces.base import ActionSpace, Intersection
from .spaces.graphs import GraphicMatroid, Matchings, SpanningTrees, STPaths
from .spaces.sets import Cardinality, ExplicitActions, PartitionMatroid

__version__ = "0.2.0.dev0"

# Names implemented in modules above the oracle layer are imported lazily, so
# ``import cmab_milp`` stays cheap and the layers keep importing downward only.
_LAZY = {
    "UniformNoise": "cmab_milp.environments",
    "BernoulliArms": "cmab_milp.environments",
    "BernoulliCosts": "cmab_milp.environments",
    "GaussianNoise": "cmab_milp.environments",
    "DiscreteArms": "cmab_milp.environments",
    "BetaArms": "cmab_milp.environments",
    "CopulaNoise": "cmab_milp.environments",
    "PaperGaussianNoise": "cmab_milp.environments",
    "paper_covariance": "cmab_milp.environments",
    "CUCB": "cmab_milp.policies",
    "AROQ": "cmab_milp.policies",
    "SROQ": "cmab_milp.policies",
    "OLSUCBC": "cmab_milp.policies",
    "AROQCov": "cmab_milp.policies",
    "SROQCov": "cmab_milp.policies",
    "SDCB": "cmab_milp.policies",
    "AROQGR": "cmab_milp.policies",
    "SROQGR": "cmab_milp.policies",
    "CTS": "cmab_milp.policies",
    "ESCB": "cmab_milp.policies",
    "AROQESCB": "cmab_milp.policies",
    "EpochESCB": "cmab_milp.policies",
    "AESCB": "cmab_milp.policies",
    "load_policy": "cmab_milp.policies",
    "NormCarry": "cmab_milp.oracles.norm.carry",
    "simulate": "cmab_milp.simulation",
    "SimulationResult": "cmab_milp.simulation",
    "verify": "cmab_milp.experiments.run.verify",
    "LoggedFeedback": "cmab_milp.logged",
    "offline_value": "cmab_milp.logged",
    "OfflineValue": "cmab_milp.logged",
    "replay": "cmab_milp.logged",
    "ReplayResult": "cmab_milp.logged",
    "LoggedEnvironment": "cmab_milp.logged",
    "datasets": "cmab_milp.datasets",
    "plot_results": "cmab_milp.figures",
}


__getattr__, __dir__ = _lazy_names(globals(), __name__, _LAZY)


__all__ = [
    "ActionSpace",
    "Cardinality",
    "ExplicitActions",
    "GraphicMatroid",
    "Intersection",
    "Ledger",
    "LimitReached",
    "Matchings",
    "Oracle",
    "OracleError",
    "PartitionMatroid",
    "STPaths",
    "SpanningTrees",
    "UnsupportedQuery",
    "available_backends",
    "make_oracle",
    "register_backend",
]
