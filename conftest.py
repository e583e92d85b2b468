"""Doctests of the optional solver backends skip, with a reason, where their solver is not installed.

With only ``pip install -e ".[test]"`` the SCIP, Gurobi and OR-Tools modules cannot run their examples;
the registry's declared ``requires`` of each backend says which module each needs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

#: Modules whose examples call an optional solver -> the Python module that solver needs.
OPTIONAL = {
    Path("cmab_milp/oracles/backends/scip.py"): "pyscipopt",
    Path("cmab_milp/oracles/backends/gurobi.py"): "gurobipy",
    Path("cmab_milp/oracles/backends/ortools.py"): "ortools",
    Path("cmab_milp/oracles/backends/scip_tree.py"): "pyscipopt",
    Path("cmab_milp/oracles/backends/cpsat_circuit.py"): "ortools",
    Path("cmab_milp/logged/reading.py"): "pandas",  # the [data] extra: log files are read with pandas
    Path("cmab_milp/datasets/open_bandit.py"): "pandas",
    Path("cmab_milp/experiments/problem/logged_env.py"): "pandas",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        if not isinstance(item, pytest.DoctestItem):
            continue
        needs = OPTIONAL.get(
            Path(str(item.path)).relative_to(root) if Path(str(item.path)).is_relative_to(root) else None
        )
        if needs is not None and importlib.util.find_spec(needs) is None:
            item.add_marker(pytest.mark.skip(reason=f"needs the optional module {needs!r} (an extra of cmab_milp)"))
