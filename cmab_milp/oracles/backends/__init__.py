"""One module per solver backend (``highs``, ``scip``, ``gurobi``, ``pulp``, ``ortools``) and the solver-free
ones (``enumerate``, ``combinatorial``); ``highs_model`` is the HiGHS model every HiGHS-based part shares.

A backend imports :mod:`~cmab_milp.oracles.core` and its solver only, never another backend's oracle.
"""
