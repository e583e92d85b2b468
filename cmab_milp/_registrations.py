"""The registry lines of the backends defined above the oracle layer: the general-reward index.

The oracle registry (:mod:`cmab_milp.oracles.core.registry`) knows nothing above it; the
distribution-index backends of :mod:`cmab_milp.nonlinear.backends` are declared here, by
``"module:attr"`` strings (imported on first use, so ``import cmab_milp`` loads no solver), when
:mod:`cmab_milp` is imported.

>>> import cmab_milp as cm
>>> cm.oracles.capabilities("dist_greedy").exact
False
"""

from __future__ import annotations

from .oracles.core.registry import Capabilities, register_backend

__all__: list[str] = []

_GEN = "cmab_milp.nonlinear.backends"
#: The options of every distribution backend (:data:`cmab_milp.nonlinear.backends.OPTIONS`).
_OPTIONS = ("reward", "grid", "linear", "max_actions")
for _name, _exact, _accepts, _spaces, _requires in (
    ("auto", True, None, "every space (enumeration, branch-and-bound or the K-MAX MILP, as fits)", ("highspy",)),
    ("enumerate", True, None, "spaces small enough to enumerate", ()),
    ("branch_bound", True, "accepts_branch_bound", "Cardinality and PartitionMatroid", ()),
    ("milp", True, None, "every space with a MILP formulation (K-MAX reward only)", ("highspy",)),
    ("greedy", False, "accepts_greedy", "Cardinality, PartitionMatroid and GraphicMatroid", ()),
):
    register_backend(
        f"dist_{_name}",
        f"{_GEN}:dist_{_name}",
        description=f"general-reward index by {_name.replace('_', ' ')} (linear and norm queries: its inner oracle)",
        capabilities=Capabilities(
            distribution=True,
            exact=_exact,
            accepts=None if _accepts is None else f"{_GEN}:{_accepts}",
            spaces=_spaces,
            requires=_requires,
            options=_OPTIONS,
        ),
    )
