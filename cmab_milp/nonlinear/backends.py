"""The distribution-index backends, as the oracle registry sees them.

Each way of answering the general-reward index (:data:`~cmab_milp.nonlinear.oracles.BACKENDS`)
is a registered backend named ``"dist_<backend>"``: its factory (``dist_greedy``, ...), named by the
registry's lazy path, declares its own ``Capabilities(distribution=True, ...)`` here, so
:func:`~cmab_milp.make_oracle` is the one validator: it refuses a space the backend does not take
before any work, and :func:`build` refuses an unfit reward or grid before any enumeration or model. A
distribution backend also answers linear and norm queries, through its inner ``linear`` oracle.

Options: ``reward`` (default ``"max"``), ``grid`` (default the outcomes
``{0, 1}``), ``linear`` (the inner backend) and ``max_actions``.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> from cmab_milp.nonlinear import OutcomeGrid
>>> oracle = cm.make_oracle(cm.Cardinality(3, 1), "dist_enumerate", reward="max", grid=OutcomeGrid([0.0, 1.0]))
>>> pmf = np.array([[0.5, 0.5], [0.1, 0.9], [0.8, 0.2]])
>>> np.flatnonzero(oracle.argmax_index(pmf)).tolist(), cm.oracles.capabilities("dist_greedy").exact
([1], False)
"""

from __future__ import annotations

from typing import Any

from ..oracles import Oracle
from ..oracles.core.capabilities import Capabilities
from ..spaces import Cardinality, GraphicMatroid, PartitionMatroid
from ..spaces.base import ActionSpace
from .grid import OutcomeGrid
from .oracles import BACKENDS, ENUMERATION_CAP, DistributionOracle

__all__ = ["OPTIONS", "PREFIX", "DistributionFactory", "build", "distribution_backend", "registered_names"]

#: Registered names are ``PREFIX + backend`` (a ``":"`` would read as a solver suffix).
PREFIX = "dist_"

#: Options every distribution backend takes (``make_oracle(space, name, **options)``).
OPTIONS = ("reward", "grid", "linear", "max_actions")


def registered_names() -> list[str]:
    """The registry names of the distribution backends.

    >>> registered_names()
    ['dist_auto', 'dist_enumerate', 'dist_branch_bound', 'dist_milp', 'dist_greedy']
    """
    return [PREFIX + name for name in BACKENDS]


def distribution_backend(name: Any) -> str | None:
    """The distribution backend a registry name stands for (``"dist_greedy"`` -> ``"greedy"``), else None.

    >>> distribution_backend("dist_milp"), distribution_backend("highs")
    ('milp', None)
    """
    if isinstance(name, str) and name.startswith(PREFIX) and name[len(PREFIX) :] in BACKENDS:
        return name[len(PREFIX) :]
    return None


def build(
    space: ActionSpace,
    reward: Any = "max",
    grid: OutcomeGrid | None = None,
    linear: str | Oracle | None = None,
    max_actions: int = ENUMERATION_CAP,
    *,
    backend: str,
) -> DistributionOracle:
    """A :class:`~cmab_milp.nonlinear.oracles.DistributionOracle` using ``backend`` (the registry's factory)."""
    grid = OutcomeGrid([0.0, 1.0]) if grid is None else grid
    return DistributionOracle(space, reward, grid, backend, linear=linear, max_actions=max_actions)


def accepts_branch_bound(space: ActionSpace) -> bool:
    """Spaces the branch-and-bound searches: Cardinality and PartitionMatroid (no side rules)."""
    return isinstance(space, (Cardinality, PartitionMatroid))


def accepts_greedy(space: ActionSpace) -> bool:
    """Spaces where the greedy has a proven ratio: Cardinality, PartitionMatroid, GraphicMatroid."""
    return isinstance(space, (Cardinality, PartitionMatroid, GraphicMatroid))


class DistributionFactory:
    """The registry's factory of one distribution backend, carrying its declaration.

    ``factory(space, reward, grid, linear, max_actions)`` is :func:`build` with this backend;
    ``CAPABILITIES`` and ``DESCRIPTION`` are what the registry reads (as for an adapter class).

    >>> dist_greedy.CAPABILITIES.exact, dist_greedy.backend
    (False, 'greedy')
    """

    def __init__(self, backend: str, capabilities: Capabilities):
        if backend not in BACKENDS:
            raise ValueError(f"unknown distribution backend {backend!r}; known: {BACKENDS}")
        self.backend = backend
        self.CAPABILITIES = capabilities
        self.DESCRIPTION = (
            f"general-reward index by {backend.replace('_', ' ')} (linear and norm queries: its inner oracle)"
        )

    def __repr__(self) -> str:
        return f"DistributionFactory({self.backend!r})"

    def __call__(
        self,
        space: ActionSpace,
        reward: Any = "max",
        grid: OutcomeGrid | None = None,
        linear: str | Oracle | None = None,
        max_actions: int = ENUMERATION_CAP,
    ) -> DistributionOracle:
        return build(space, reward, grid, linear, max_actions, backend=self.backend)


def _declared(
    backend: str, exact: bool, spaces: str, accepts: Any = None, requires: tuple[str, ...] = ()
) -> DistributionFactory:
    caps = Capabilities(
        distribution=True, exact=exact, accepts=accepts, spaces=spaces, requires=requires, options=OPTIONS
    )
    return DistributionFactory(backend, caps)


# ---- declarations: the factories the registry names ("cmab_milp.nonlinear.backends:dist_auto", ...)
#: Enumeration, branch and bound or the K-MAX MILP, as fits (the MILP needs highspy).
dist_auto = _declared(
    "auto", True, "every space (enumeration, branch-and-bound or the K-MAX MILP, as fits)", requires=("highspy",)
)
dist_enumerate = _declared("enumerate", True, "spaces small enough to enumerate")
#: Its bounds are written for one or several cardinality blocks, nothing else.
dist_branch_bound = _declared("branch_bound", True, "Cardinality and PartitionMatroid", accepts=accepts_branch_bound)
#: The MILP linearises the K-MAX reward only (build refuses other rewards before any model).
dist_milp = _declared("milp", True, "every space with a MILP formulation (K-MAX reward only)", requires=("highspy",))
#: Not exact: a proven ratio on matroids only, hence the families it accepts.
dist_greedy = _declared("greedy", False, "Cardinality, PartitionMatroid and GraphicMatroid", accepts=accepts_greedy)
