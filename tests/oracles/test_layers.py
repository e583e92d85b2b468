"""The folders of ``oracles/`` import downward only: core <- mip, norm <- backends (issue 41).

Imports are read from the source with ``ast`` (function-level and ``TYPE_CHECKING`` imports included), so a
lazy import inside a function counts as much as one at the top. The engine the MIP and norm code need is the
protocol :class:`~cmab_milp.oracles.core.engine.Engine`; the HiGHS, Gurobi and SCIP models implement it.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import cmab_milp
from cmab_milp.oracles.core.engine import ENGINE_MEMBERS, Engine

ORACLES = pathlib.Path(cmab_milp.__file__).parent / "oracles"
#: The folders a folder of ``oracles/`` may not import (the ones above it).
ABOVE = {"core": {"mip", "norm", "backends"}, "mip": {"norm", "backends"}, "norm": {"backends"}, "backends": set()}


def package_of(path: pathlib.Path) -> str:
    return ".".join(("cmab_milp", *path.parent.relative_to(ORACLES.parent).parts))


def imported_folders(source: str, package: str) -> set[str]:
    """The other folders of ``cmab_milp.oracles`` that a module of ``package`` with ``source`` imports."""
    own = package.split(".")[2] if package.count(".") >= 2 else None
    found = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["cmab_milp", "oracles"] and len(parts) > 2 and parts[2] in ABOVE and parts[2] != own:
                found.add(parts[2])
    return found


def upward_arrows() -> list[str]:
    arrows = []
    for folder, above in ABOVE.items():
        for path in sorted((ORACLES / folder).rglob("*.py")):
            for target in imported_folders(path.read_text(encoding="utf-8"), package_of(path)) & above:
                arrows.append(f"{path.relative_to(ORACLES)} -> {target}/")
    return arrows


def test_the_reader_sees_relative_absolute_and_function_level_imports():
    source = "from ...backends.highs import HighsOracle\ndef f():\n    import cmab_milp.oracles.mip.tuning\n"
    assert imported_folders(source, "cmab_milp.oracles.norm.branch") == {"backends", "mip"}
    assert imported_folders("from ..core.base import Oracle\n", "cmab_milp.oracles.norm") == {"core"}
    assert imported_folders("from . import carry\n", "cmab_milp.oracles.norm") == set()


def test_no_folder_of_oracles_imports_one_above_it():
    arrows = upward_arrows()
    assert not arrows, "imports running up inside oracles/: " + "; ".join(arrows)


def test_no_module_of_mip_or_norm_imports_a_backend():
    for folder in ("mip", "norm"):
        for path in (ORACLES / folder).rglob("*.py"):
            assert "backends" not in imported_folders(path.read_text(encoding="utf-8"), package_of(path)), path


def test_the_highs_model_is_an_engine_with_every_member():
    pytest.importorskip("highspy")
    import cmab_milp as cm
    from cmab_milp.oracles.backends.highs_model import CompiledModel

    model = CompiledModel(cm.Cardinality(3, 1).formulation())
    assert isinstance(model, Engine)
    missing = [name for name in ENGINE_MEMBERS if not hasattr(model, name)]
    assert not missing
    declared = {name for name in dir(Engine) if not name.startswith("_")} | set(Engine.__annotations__)
    assert declared - {"new_model"} <= set(ENGINE_MEMBERS) and set(ENGINE_MEMBERS) <= declared
    lp = model.new_model(cm.Cardinality(3, 1).formulation(), integer=False)
    assert isinstance(lp, CompiledModel) and not lp.integer


@pytest.mark.parametrize(("engine", "package"), [("gurobi", "gurobipy"), ("scip", "pyscipopt")])
def test_the_gurobi_and_scip_models_are_engines_with_every_member(engine, package):
    pytest.importorskip(package)
    import cmab_milp as cm
    from cmab_milp.oracles.core.engine import ENGINES, new_engine

    model = new_engine(cm.Cardinality(3, 1).formulation(), engine=engine)
    assert f"{type(model).__module__}:{type(model).__name__}" == ENGINES[engine] and isinstance(model, Engine)
    assert not [name for name in ENGINE_MEMBERS if not hasattr(model, name)]
    lp = model.new_model(cm.Cardinality(3, 1).formulation(), integer=False)
    assert type(lp) is type(model) and not lp.integer


def test_a_model_missing_a_member_is_no_engine():
    class Partial:
        name, d, integer = "partial", 3, True

        def solve(self):  # pragma: no cover - never called
            return None

    assert not isinstance(Partial(), Engine)
