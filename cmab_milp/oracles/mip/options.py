"""The solver option tables every backend starts from, and a configured HiGHS instance.

:data:`HIGHS_OPTIONS` is set on every HiGHS model (the ``highs`` backend, the norm
index, the K-MAX MILP, PuLP's ``HiGHS`` solver takes the tolerances);
:data:`SCIP_PARAMS` on every SCIP model (the ``scip`` backend, PuLP's ``SCIP_PY``).
Both make a solver prove optimality to about ``1e-11``, tighter than the contract's
``1e-9 * (1 + |optimum|)``.

>>> HIGHS_OPTIONS["threads"], SCIP_PARAMS["parallel/maxnthreads"]
(1, 1)
"""

from __future__ import annotations

from typing import Any

__all__ = ["HIGHS_OPTIONS", "SCIP_PARAMS"]

#: Options applied to every HiGHS instance: silent, single-threaded (the
#: scheduler is per OS thread; batches run one instance per thread), gaps and
#: tolerances tight enough to separate indices that differ by ~1e-9, and the
#: feasibility-jump heuristic off (it slows small MILPs 2-4x).
HIGHS_OPTIONS: dict[str, object] = {
    "output_flag": False,
    "threads": 1,
    "mip_rel_gap": 1e-12,
    "mip_abs_gap": 1e-11,
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-10,
    "mip_heuristic_run_feasibility_jump": False,
}

#: Parameters set on every SCIP model: zero gaps, tight feasibility, one
#: thread per model (batches run one model per worker thread).
SCIP_PARAMS: dict[str, Any] = {
    "limits/gap": 0.0,
    "limits/absgap": 1e-11,
    "numerics/epsilon": 1e-12,
    "numerics/sumepsilon": 1e-10,
    "numerics/feastol": 1e-9,
    "numerics/dualfeastol": 1e-10,
    "parallel/maxnthreads": 1,
}
