"""The distribution-index backends, as the oracle registry sees them.

Each way of answering the general-reward index (:data:`~cmab_milp.nonlinear.oracles.BACKENDS`)
is a registered backend named ``"dist_<backend>"`` (declared in
:mod:`cmab_milp._registrations` with ``Capabilities(distribution=True)``),
so :func:`~cmab_milp.make_oracle` is the one validator: it refuses a space the
backend does not take before any work, and :func:`build` refuses an unfit
reward or grid before any enumeration or model. A distribution backend also
answers linear and norm queries, through its inner ``linear`` oracle.

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

from functools import partial
from typing import Any

from ..oracles import Oracle
from ..spaces import Cardinality, GraphicMatroid, PartitionMatroid
from ..spaces.base import ActionSpace
from .grid import OutcomeGrid
from .oracles import BACKENDS, ENUMERATION_CAP, DistributionOracle

__all__ = ["OPTIONS", "PREFIX", "build", "distribution_backend", "registered_names"]

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


# the factories the registry names ("cmab_milp.nonlinear.backends:dist_auto", ...), one per backend
dist_auto, dist_enumerate, dist_branch_bound, dist_milp, dist_greedy = (partial(build, backend=b) for b in BACKENDS)


def accepts_branch_bound(space: ActionSpace) -> bool:
    """Spaces the branch-and-bound searches: Cardinality and PartitionMatroid (no side rules)."""
    return isinstance(space, (Cardinality, PartitionMatroid))


def accepts_greedy(space: ActionSpace) -> bool:
    """Spaces where the greedy has a proven ratio: Cardinality, PartitionMatroid, GraphicMatroid."""
    return isinstance(space, (Cardinality, PartitionMatroid, GraphicMatroid))
