"""Oracles: exact restricted argmax over an action space (contract section 2).

Layout (imports point down this list only; ``tests/project/test_import_layers.py`` holds it):

* :mod:`.core`: queries and their validation, the :class:`Oracle` base and its ledger, the certified
  solve, its certificate (:mod:`~.core.certify`) and the model protocols (:class:`~.core.model.SolverModel`,
  :class:`~.core.engine.Engine`), the exact combinatorial algorithms (:mod:`~.core.exact`), the backend
  registry, ``auto``;
* :mod:`.mip`: MIP tuning on any :class:`~.core.engine.Engine` (option tables, MIP starts, root and cover cuts,
  side-row starts, s-t path starts);
* :mod:`.norm`: the covariance-norm index on an :class:`~.core.engine.Engine` (imports the core and ``mip``);
* :mod:`.backends`: one module per solver (``highs``, ``scip``, ``gurobi``, ``pulp``, ``ortools``) and the
  solver-free ``enumerate`` and ``combinatorial``; ``highs_model`` is the compiled HiGHS model (the engine);
  the ``highs`` oracle answers norm queries through :mod:`.norm`. No module of ``mip`` or ``norm`` imports a
  backend (``tests/oracles/test_layers.py``).
"""

from .core.base import Ledger, LimitReached, Oracle, OracleError, UnsupportedQuery
from .core.queries import norm_objective
from .core.registry import (
    BACKENDS,
    Capabilities,
    available_backends,
    capabilities,
    check_backend_name,
    make_oracle,
    register_backend,
)

__all__ = [
    "BACKENDS",
    "Capabilities",
    "Ledger",
    "LimitReached",
    "Oracle",
    "OracleError",
    "UnsupportedQuery",
    "available_backends",
    "capabilities",
    "check_backend_name",
    "make_oracle",
    "norm_objective",
    "register_backend",
]
