"""The norm index's former module, kept so that old imports keep working.

The code lives in the package :mod:`cmab_milp.oracles.norm`; the ``highs``
backend calls :func:`solve_norm` through this module (so it can be replaced in
tests).

>>> from cmab_milp.oracles.norm import solve_norm as moved
>>> solve_norm is moved
True
"""

from __future__ import annotations

from .norm.cuts import ConvexCuts as _ConvexCuts
from .norm.cuts import Exclusions as _Exclusions
from .norm.lifting import Lifted as _Lifted
from .norm.lifting import quadratic_form_bounds
from .norm.local_search import local_moves as _local_moves
from .norm.scaling import proven
from .norm.scaling import unit_objective as _unit_objective
from .norm.scaling import unit_scale as _unit_scale
from .norm.secants import PiecewiseSqrt as _PiecewiseSqrt
from .norm.secants import sqrt_grid as _sqrt_grid
from .norm.secants import window_top
from .norm.solver import NormSolver as _NormSolver
from .norm.solver import NormStats, last_stats, solve_norm

__all__ = ["NormStats", "last_stats", "proven", "quadratic_form_bounds", "solve_norm", "window_top"]
# the former private names, for code written against the single module
_ALIASES = (_ConvexCuts, _Exclusions, _Lifted, _NormSolver, _PiecewiseSqrt, _local_moves, _sqrt_grid)
_ALIASES += (_unit_objective, _unit_scale)
