"""The package's imports point one way: no cycle between modules, function-level imports included.

The graph is built from the source (``ast``): every ``import`` / ``from ... import`` anywhere in a
module (inside functions and ``if TYPE_CHECKING:`` blocks too) is an edge to the module it names;
importing a package's face (its ``__init__``) is an edge to that ``__init__`` (stricter than ignoring it),
a module's own parent packages are not (Python imports them first in any case). Cycles are
found as strongly connected components (networkx).
"""

from __future__ import annotations

import ast
import pathlib

import networkx as nx

import cmab_milp

ROOT = pathlib.Path(cmab_milp.__file__).parent


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(("cmab_milp", *path.relative_to(ROOT).with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = path
    return mods


def import_graph() -> nx.DiGraph:
    """Module -> module it imports (function-level and TYPE_CHECKING imports included)."""
    mods = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                # a module's own parent packages are imported before it in any case: no edge
                if target and target != name and not name.startswith(target + "."):
                    graph.add_edge(name, target)
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert graph.has_edge("cmab_milp.oracles.core.pipeline", "cmab_milp.oracles.core.base")  # relative, top level
    assert graph.has_edge("cmab_milp.cli", "cmab_milp.experiments")  # inside a function


def test_a_cycle_is_found():
    graph = import_graph()
    graph.add_edge("cmab_milp.oracles.core.base", "cmab_milp.oracles.backends.highs")  # the kind of import refused
    assert any("cmab_milp.oracles.core.base" in c for c in cycles(graph))


def test_no_import_cycle_between_modules():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_core_imports_no_backend_and_spaces_import_no_oracle():
    graph = import_graph()
    for name in graph:
        for target in graph.successors(name):
            if name.startswith("cmab_milp.oracles.core"):
                assert not target.startswith(
                    ("cmab_milp.oracles.backends", "cmab_milp.oracles.mip", "cmab_milp.oracles.norm")
                ), f"{name} imports {target}"
            if name.startswith("cmab_milp.spaces"):
                assert not target.startswith("cmab_milp.oracles"), f"{name} imports {target}"


def test_the_distribution_backends_are_declared_with_their_options():
    from cmab_milp.nonlinear import backends
    from cmab_milp.oracles import BACKENDS
    from cmab_milp.oracles.core.registry import COMMON_OPTIONS

    for name in backends.registered_names():  # each resolves to its factory in cmab_milp.nonlinear.backends
        assert BACKENDS[name].options() == (*backends.OPTIONS, *COMMON_OPTIONS) and callable(BACKENDS[name].factory())
        factory = BACKENDS[name].factory()  # it declares itself there, beside the code that honours it
        assert BACKENDS[name].capabilities == factory.CAPABILITIES and factory.CAPABILITIES.distribution
