"""A problem-file policy without ``oracle`` gets its kind's Python default (issue 39, item 2).

Found: in Python ``CTS`` and ``ESCB`` default to ``oracle="auto"``, but from a problem file every policy
defaulted to ``"highs"``, so a user's CTS and ESCB ran on HiGHS although the README said ``auto``.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import cmab_milp as cm
from cmab_milp.experiments import load_problem
from cmab_milp.experiments.problem.policy_specs import default_oracle

KINDS = ["CUCB", "AROQ", "SROQ", "OLSUCBC", "AROQCov", "SROQCov", "SDCB", "AROQGR", "SROQGR", "CTS", "ESCB", "AROQESCB"]


def problem(tmp_path: Path, kinds: list[str], oracle: str | None = None) -> Path:
    text = '[space]\nkind = "Cardinality"\nd = 4\nm = 2\n[environment]\nkind = "BernoulliArms"\n'
    text += "means = [0.1, 0.2, 0.3, 0.4]\n"
    for kind in kinds:
        text += f'[[policies]]\nname = "{kind}"\nkind = "{kind}"\n'
        if oracle is not None:
            text += f'oracle = "{oracle}"\n'
    text += "[run]\nhorizon = 20\nseeds = 1\n"
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


def test_a_file_s_policy_gets_the_oracle_its_class_defaults_to_in_python(tmp_path: Path) -> None:
    specs = {spec.kind: spec.oracle for spec in load_problem(problem(tmp_path, KINDS)).policies}
    for kind in KINDS:
        python_default = inspect.signature(getattr(cm, kind)).parameters["oracle"].default
        assert specs[kind] == python_default, kind
    assert specs["CTS"] == specs["ESCB"] == specs["AROQESCB"] == "auto"
    assert specs["CUCB"] == "highs"  # contract section 4 lists oracle="highs" for the paper's nine


def test_a_named_oracle_still_wins(tmp_path: Path) -> None:
    specs = load_problem(problem(tmp_path, ["CTS", "CUCB"], oracle="enumerate")).policies
    assert [s.oracle for s in specs] == ["enumerate", "enumerate"]


def test_the_built_policy_asks_the_default_backend(tmp_path: Path) -> None:
    loaded = load_problem(problem(tmp_path, ["CTS", "CUCB"]))
    space = loaded.build_space()
    assert loaded.build_policy("CTS", space).oracle.name == "auto"
    assert loaded.build_policy("CUCB", space).oracle.name == "highs"


def test_default_oracle_of_unknown_or_odd_classes_is_highs() -> None:
    class NoOracle:
        def __init__(self, space, T): ...

    assert default_oracle(None) == default_oracle(NoOracle) == "highs"
