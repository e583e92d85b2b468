"""Each backend declares itself in its own module; the registry holds names and lazy paths only.

Truth: the adapter classes' own ``CAPABILITIES`` (what the registry must hand out unchanged), and
fresh interpreters in which the solver packages cannot be imported (reading every declaration must
not need them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cmab_milp as cm
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.core import registry
from cmab_milp.oracles.core.registry import BACKENDS, BUILT_IN, Capabilities, capabilities, check_backend_name

SOLVERS = ("highspy", "gurobipy", "pyscipopt", "ortools", "pulp")


@pytest.fixture
def scratch_backends():
    before = dict(BACKENDS)
    yield
    BACKENDS.clear()
    BACKENDS.update(before)


def _run(code: str) -> str:
    root = str(Path(cm.__file__).resolve().parents[1])  # the cmab_milp under test, in the fresh interpreter too
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-c", textwrap.dedent(code)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_registry_holds_lazy_paths_and_hands_out_each_backends_own_declaration() -> None:
    assert all(isinstance(path, str) and ":" in path for path in BUILT_IN.values())
    assert not any(isinstance(v, Capabilities) for v in vars(registry).values())  # no table of declarations
    for name, path in BUILT_IN.items():
        factory = BACKENDS[name].factory()
        assert BACKENDS[name].target == path
        assert capabilities(name) == factory.CAPABILITIES, name
        assert BACKENDS[name].description == factory.DESCRIPTION and factory.DESCRIPTION, name


def test_import_cmab_milp_imports_no_backend_module_and_no_solver() -> None:
    out = _run(
        f"""
        import sys
        import cmab_milp
        prefixes = ("cmab_milp.oracles.backends.", "cmab_milp.nonlinear.backends")
        print(sorted(m for m in sys.modules if m.startswith(prefixes) or m in {SOLVERS!r}))
        """
    )
    assert out == "[]"


def test_every_declaration_is_read_without_its_solver_package() -> None:
    """With the solver packages unimportable, every backend still describes itself; those needing one are missing."""
    out = _run(
        f"""
        import sys
        for name in {SOLVERS!r}:
            sys.modules[name] = None  # import fails, find_spec says absent
        import cmab_milp as cm
        from cmab_milp.oracles import BACKENDS
        caps = {{name: entry.capabilities for name, entry in BACKENDS.items()}}
        print(sorted(cm.available_backends()))
        print(sorted(m for m in {SOLVERS!r} if sys.modules.get(m) is not None))
        """
    )
    available, imported = out.splitlines()
    assert available == str(
        sorted(["combinatorial", "enumerate", "auto", "dist_enumerate", "dist_branch_bound", "dist_greedy"])
    )
    assert imported == "[]"


def test_a_subclass_registered_under_a_new_name_gets_the_default_not_its_bases_declaration(scratch_backends) -> None:
    class Renamed(EnumerateOracle):
        pass

    cm.register_backend("renamed", Renamed)
    assert capabilities("renamed") == Capabilities()  # full exact, no cost: auto never routes to it unasked
    assert capabilities("enumerate").cost is not None


def test_a_lazy_path_whose_module_needs_a_missing_package_is_listed_as_missing(scratch_backends, tmp_path) -> None:
    (tmp_path / "needs_pkg_backend.py").write_text("import no_such_solver_pkg_cmab\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        cm.register_backend("needs_pkg", "needs_pkg_backend:Oracle")
        assert "needs_pkg" not in cm.available_backends()
        with pytest.raises(ValueError, match="no_such_solver_pkg_cmab"):
            check_backend_name("needs_pkg")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_lazy_path_to_no_module_is_refused_naming_it(scratch_backends) -> None:
    cm.register_backend("typo", "no_such_backend_module_cmab:Oracle")
    with pytest.raises(ValueError, match="backend 'typo': no module 'no_such_backend_module_cmab'"):
        capabilities("typo")


def test_given_capabilities_win_over_the_declared_ones_and_are_checked(scratch_backends) -> None:
    cm.register_backend(
        "enum_no_pairs", EnumerateOracle, capabilities=Capabilities(forbid_pairs=False), requires=["json"]
    )
    assert not capabilities("enum_no_pairs").forbid_pairs and capabilities("enum_no_pairs").requires == ("json",)
    with pytest.raises(ValueError, match="Capabilities record"):
        cm.register_backend("bad", EnumerateOracle, capabilities={"norm": False})
