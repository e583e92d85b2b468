"""The covariance-norm index ``mu @ a + sign * f * sqrt(max(a @ M @ a, 0))`` on HiGHS, exactly.

Layout (each module one job; its docstring holds its part of the exactness proof):

* :mod:`.method`: what a norm method is (``name``, ``applies``, ``run``) and the query's context it reads;
* :mod:`.solver`: :func:`solve_norm`, the ordered tuple of methods per sign (``PLUS_METHODS``, ``MINUS_METHODS``)
  that it walks, and the query's context (its model, the MILP loop, the approximate mode);
* :mod:`.scaling`: exact rescalings of a query (the tolerance test is :func:`~cmab_milp.oracles.core.certify.proven`);
* :mod:`.lifting`: columns and rows for ``L = a @ M @ a`` (Glover's rows, on the side each sign needs);
* :mod:`.cuts`: convex-reformulation tangents on ``L``, no-good rows (solver noise), the LP-relaxation rounds;
* :mod:`.linear`: the methods of the linear argmax alone (the norm term vanishes; sign -1's bound ``top``);
* :mod:`.starts` (:mod:`.starts.incumbents`, :mod:`.starts.local_search`): first incumbents (swaps, linear-oracle
  ascents, restarts);
* :mod:`.outer`: outer approximation, sign +1 in the quadratic form (:mod:`.outer.plus`) and sign -1 on
  disaggregated tangents (:mod:`.outer.minus`);
* :mod:`.secants` (:mod:`.secants.minus`, :mod:`.secants.pieces`): sign -1's piecewise secants of ``-f sqrt(L)``;
* :mod:`.branch` (:mod:`.branch.method`; :mod:`.branch.plus`, :mod:`.branch.minus`, :mod:`.branch.overestimator`,
  with :mod:`.shifts`): branch and bound on a combinatorial linear oracle;
* :mod:`.paths` (:mod:`.paths.method`; :mod:`.paths.plus`, :mod:`.paths.minus`, :mod:`.paths.lp`,
  :mod:`.paths.cuts`, :mod:`.paths.chord`, :mod:`.paths.local_search`): LP branch and bound on s-t paths of graphs
  with cycles;
* :mod:`.carry`: a sequence's last answer reused under a drift bound (the certified approximate mode).

Every tuning choice is an option of the ``highs`` backend (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`;
``tuning.norm.<method>`` shows them grouped by the method that reads them); measured figures:
``docs/performance.md``, "Norm queries".

A query's ``hints`` (:class:`~cmab_milp.oracles.core.base.NormQuery`) that are actions
admitted by its restrictions are candidate first incumbents: they may speed a query
up, never change the optimal value, and, being part of the query, keep the tie rule.

Every solver call goes through the model protocol :class:`~cmab_milp.oracles.core.engine.Engine` (on HiGHS:
:class:`~cmab_milp.oracles.backends.highs_model.CompiledModel`); nothing here imports a backend.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> oracle = cm.make_oracle(cm.Cardinality(3, 2), "highs")
>>> solve_norm(oracle, oracle.norm_query(np.zeros(3), np.eye(3), 1.0)).sum()
np.int64(2)
"""

from ..core.certify import proven
from .lifting import quadratic_form_bounds
from .secants.pieces import window_top
from .solver import NormStats, last_stats, solve_norm

__all__ = ["NormStats", "last_stats", "proven", "quadratic_form_bounds", "solve_norm", "window_top"]
