"""What the conformance suites run on (:func:`cmab_milp.testing.registered_kinds`), read from the registries.

Truth: the registries themselves (``BACKENDS``, the problem-file kinds), and conformance runs in a fresh
pytest process after a plugin registered a backend or a policy: what was registered is checked there
without editing the suites, and what cannot run is skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cmab_milp as cm
from cmab_milp.experiments import register_kind
from cmab_milp.experiments.problem.kinds import policy_kinds, space_kinds
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.core.registry import BACKENDS
from cmab_milp.testing import policy_setup, registered_kinds


@pytest.fixture
def scratch_backends():
    before = dict(BACKENDS)
    yield
    BACKENDS.clear()
    BACKENDS.update(before)


def test_every_registered_backend_is_listed_once_per_usable_solver():
    names = [kind.name for kind in registered_kinds("backend")]
    assert len(names) == len(set(names))
    for name, entry in BACKENDS.items():
        if entry.takes_solver and entry.available() and entry.solvers():
            assert {n for n in names if n.split(":")[0] == name} == {f"{name}:{s}" for s in entry.solvers()}
        else:
            assert name in names
    for kind in registered_kinds("backend"):
        assert kind.family == "backend" and (kind.obj == kind.name) == kind.available


def test_a_backend_whose_module_is_missing_is_listed_with_the_reason(scratch_backends):
    cm.register_backend("needs_nothing", EnumerateOracle)
    cm.register_backend("needs_more", EnumerateOracle, requires=["no_such_solver_module", "json"])
    kinds = {kind.name: kind for kind in registered_kinds("backend")}
    assert kinds["needs_nothing"].available and kinds["needs_nothing"].obj == "needs_nothing"
    missing = kinds["needs_more"]
    assert not missing.available and missing.obj is None
    assert missing.unavailable == "backend 'needs_more' needs no_such_solver_module, not installed"


def test_an_optional_extra_is_named_in_the_reason(scratch_backends):
    """A backend needing a module of one of the package's extras says which extra installs it."""
    cm.register_backend("wants_scip", EnumerateOracle, requires=["pyscipopt"])
    kind = {kind.name: kind for kind in registered_kinds("backend")}["wants_scip"]
    if kind.available:
        pytest.skip("pyscipopt is installed here")
    assert kind.unavailable.endswith("not installed (pip install 'cmab_milp[scip]')"), kind.unavailable


def test_space_and_policy_kinds_are_the_problem_file_kinds_plus_registered_ones():
    assert [kind.name for kind in registered_kinds("space")] == sorted(space_kinds())
    assert [kind.name for kind in registered_kinds("policy")] == sorted(policy_kinds())
    assert all(kind.available and kind.obj.__name__ == kind.name for kind in registered_kinds("space"))

    class MyCUCB(cm.CUCB):
        pass

    register_kind("policy", "MyCUCB", MyCUCB)  # tests/conftest.py restores the registry afterwards
    assert {kind.name: kind.obj for kind in registered_kinds("policy")}["MyCUCB"] is MyCUCB
    with pytest.raises(ValueError, match="unknown family 'oracle'"):
        registered_kinds("oracle")


@pytest.mark.parametrize(
    ("cls", "env"), [(cm.CUCB, "UniformNoise"), (cm.OLSUCBC, "GaussianNoise"), (cm.SROQGR, "DiscreteArms")]
)
def test_policy_setup_fits_the_environment_to_the_family(cls, env):
    make_env, constants = policy_setup(cls)
    assert type(make_env()).__name__ == env
    result = cm.simulate(cls(cm.Cardinality(6, 2), 50, oracle="enumerate", **constants), make_env(), seed=0)
    assert result.t[-1] == 50


def test_every_space_kind_has_a_checked_instance():
    """The space conformance (check_space in tests/testing/test_testing_kit.py) runs on instances: each
    registered kind must have one there, so a new kind without an example fails here, naming it."""
    from test_testing_kit import ALL_SPACES

    checked = {type(build()).__name__ for build in ALL_SPACES.values()}
    missing = [kind.name for kind in registered_kinds("space") if kind.name not in checked]
    assert not missing, f"space kinds with no instance in the conformance run: {missing}"


# ------------------------------------------------------------------ a policy joins by being registered
_PLUGIN = """
from dataclasses import replace

import numpy as np

import cmab_milp as cm
from cmab_milp.experiments import register_kind


class PluginCUCB(cm.CUCB):
    \"\"\"CUCB under another name: a well-behaved policy from outside the library.\"\"\"


class PluginInfeasible(cm.CUCB):
    \"\"\"Plays every arm at round 5: not an action of the space.\"\"\"

    def _plan(self):
        stretch = super()._plan()
        return replace(stretch, actions=np.ones_like(stretch.actions)) if self.t == 5 else stretch


register_kind("policy", "PluginCUCB", PluginCUCB)
register_kind("policy", "PluginInfeasible", PluginInfeasible)
"""


def test_a_newly_registered_policy_joins_the_conformance_run(tmp_path):
    """Registered from a plugin before collection (no case written for it): it runs on the environment
    ``policy_setup`` fits; the infeasible one fails, the saved-learner case skips saying why."""
    (tmp_path / "policy_plugin.py").write_text(_PLUGIN, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    conformance = root / "tests" / "policies" / "test_policy_conformance.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(root), os.environ.get("PYTHONPATH", "")]))
    select = "Plugin and (test_every_played_action_is_feasible or test_a_saved_learner_continues_exactly)"
    command = [sys.executable, "-m", "pytest", str(conformance), "-p", "policy_plugin", "-p", "no:cacheprovider"]
    command += ["-k", select]
    command += ["-n", "0"] if "xdist" in sys.modules else []
    done = subprocess.run([*command, "-rA"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    out, test = done.stdout, conformance.relative_to(root).as_posix()
    assert f"PASSED {test}::test_every_played_action_is_feasible[PluginCUCB[]-UniformNoise]" in out, out
    assert f"FAILED {test}::test_every_played_action_is_feasible[PluginInfeasible[]-UniformNoise]" in out, out
    assert "PluginCUCB: only the library's policies can be saved" in out, out
    assert "1 failed, 1 passed, 2 skipped" in out and done.returncode == 1, out
